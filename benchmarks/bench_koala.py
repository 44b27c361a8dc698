"""KOALA++: optimizer step time against torch's Adam and SGD, and time to accuracy on digits.

For a few model shapes, the gradients are fixed and only ``optimizer.step`` is timed (median
of repeats after a warm-up):

* ``torch.optim.SGD`` (momentum 0.9) and ``torch.optim.Adam`` (default, and ``foreach=True``):
  the peers a user would pick instead;
* ``lab.koala.KoalaV`` (scalar covariance);
* ``lab.koala.KoalaPP``: the flat multi-tensor fast path (``koalapp_foreach_``) and the
  per-tensor loop.

Correctness is checked on the way: the fast path against ``koalapp_reference`` (float64, one
tensor, 100 steps) and against the loop (float64, the model). Then the digits MLP of notebook 2
is trained with SGD-momentum, Adam and KOALA++ to 95% test accuracy (time to accuracy).
A markdown table is printed and the numbers go to ``benchmarks/results/koala-<cpu|gpu>.json``.

    python benchmarks/bench_koala.py            # CPU: digits MLP, 1M-parameter MLP, 64 tensors
    python benchmarks/bench_koala.py --quick    # CPU, < 20 s
    python benchmarks/bench_koala.py --gpu      # CUDA, adds a 25M-parameter, 160-tensor model
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import koala  # noqa: E402


def make_params(shapes, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = []
    for s in shapes:
        p = torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype).to(device) * 0.05)
        p.grad = torch.randn(s, generator=g, dtype=dtype).to(device) * 0.01
        params.append(p)
    return params


MODELS = {
    "digits MLP (4 tensors, 4.8k)": [(64, 64), (64,), (10, 64), (10,)],
    "MLP 784-1024-1024-10 (6 tensors, 1.9M)": [
        (1024, 784),
        (1024,),
        (1024, 1024),
        (1024,),
        (10, 1024),
        (10,),
    ],
    "32 blocks of 256x256 + bias (64 tensors, 2.1M)": [(256, 256), (256,)] * 32,
    "ResNet-50-like (160 tensors, 25M)": [(512, 512, 3, 3)] * 10
    + [(256, 256, 3, 3)] * 20
    + [(1024,)] * 130,
}


def step_fn(name, params):
    if name == "SGD-momentum":
        opt = torch.optim.SGD(params, lr=1e-6, momentum=0.9)
        return opt.step
    if name == "Adam":
        opt = torch.optim.Adam(params, lr=1e-6)
        return opt.step
    if name == "Adam (foreach)":
        opt = torch.optim.Adam(params, lr=1e-6, foreach=True)
        return opt.step
    loss = torch.tensor(0.5, device=params[0].device)
    lsq = torch.tensor(0.4, device=params[0].device)
    if name == "KOALA-V":
        opt = koala.KoalaV(params, lr=1e-6)
    elif name == "KOALA++ (fast path)":
        opt = koala.KoalaPP(params, lr=1e-6, foreach=True)
    else:
        opt = koala.KoalaPP(params, lr=1e-6, foreach=False)
    return lambda: opt.step_with_loss(loss, lsq)


def time_step(fn, device, repeats, inner):
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(5):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times), min(times)


def check_reference():
    prob = koala.NoisyQuadratic(n=50, kappa=100.0, seed=0)
    th0 = prob.start()
    ref = koala.koalapp_reference(
        th0, prob.loss, prob.grad, steps=100, r=0.5, weight_decay=1e-3, lr=0.8
    )
    p = torch.nn.Parameter(torch.tensor(th0))
    opt = koala.KoalaPP([p], r=0.5, weight_decay=1e-3, lr=0.8, foreach=True)
    for k in range(1, 101):
        th = p.detach().numpy().copy()
        p.grad = torch.tensor(prob.grad(th, k))
        opt.step_with_loss(prob.loss(th, k))
    return float(np.max(np.abs(p.detach().numpy() - ref["theta"][-1])))


def check_fast_vs_loop(shapes, device):
    outs = []
    for foreach in (True, False):
        params = make_params(shapes, device, torch.float64)
        opt = koala.KoalaPP(params, foreach=foreach, weight_decay=5e-4, r=0.5)
        for k in range(20):
            g = torch.Generator().manual_seed(100 + k)
            for p in params:
                p.grad = torch.randn(p.shape, generator=g, dtype=torch.float64).to(device) * 0.01
            opt.step_with_loss(0.5 / (1 + k))
        outs.append(torch.cat([p.detach().reshape(-1) for p in params]))
    return float((outs[0] - outs[1]).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--gpu", action="store_true", help="run on CUDA with larger models")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.gpu and not torch.cuda.is_available():
        sys.exit("--gpu: no CUDA device")
    device = torch.device("cuda" if args.gpu else "cpu")
    gpu_name = torch.cuda.get_device_name() if args.gpu else None
    names = list(MODELS)
    if args.quick:
        names = names[:1] + names[2:3]
    elif not args.gpu:
        names = names[:3]
    repeats, inner = (5, 20) if args.quick else (7, 50)
    methods = (
        "SGD-momentum",
        "Adam",
        "Adam (foreach)",
        "KOALA-V",
        "KOALA++ (fast path)",
        "KOALA++ (loop)",
    )

    print("checks:")
    ref_err = check_reference()
    print(f"  fast path vs koalapp_reference (float64, n = 50, 100 steps): {ref_err:.1e}")
    loop_err = check_fast_vs_loop(MODELS[names[-1]][:8], device)
    print(
        f"  fast path vs per-tensor loop (float64, 8 tensors, 20 steps, {device.type}): {loop_err:.1e}"
    )

    rows = []
    for mname in names:
        shapes = MODELS[mname]
        for meth in methods:
            params = make_params(shapes, device)
            n_par = sum(p.numel() for p in params)
            reps = inner if n_par < 1e5 else (3 if args.quick else 5)
            med, best = time_step(step_fn(meth, params), device, repeats, reps)
            rows.append(
                {"model": mname, "method": meth, "step_us": med * 1e6, "best_us": best * 1e6}
            )
        adam = next(r for r in rows if r["model"] == mname and r["method"] == "Adam")["step_us"]
        for r in rows:
            if r["model"] == mname:
                r["vs_adam"] = r["step_us"] / adam

    print("\n| model | optimizer | step (µs, median) | best (µs) | × Adam |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['method']} | {r['step_us']:.0f} | {r['best_us']:.0f} | "
            f"{r['vs_adam']:.2f} |"
        )

    tta = []
    if not args.gpu:
        epochs = 6 if args.quick else 10
        print(f"\ntime to 95% test accuracy, digits MLP, {epochs} epochs, batch 64 (CPU):")
        print("| optimizer | epochs to 95% | s to 95% (iterations) | final acc | iter (µs) |")
        print("|---|---|---|---|---|")
        for name in ("sgd", "adam", "koalapp"):
            run = koala.train_digits(name, epochs=epochs, seed=0, device="cpu")
            e, t = run.epochs_to(0.95), run.time_to(0.95)
            tta.append(
                {
                    "optimizer": name,
                    "epochs_to_95": e,
                    "seconds_to_95": t,
                    "final_acc": float(run.test_acc[-1]),
                    "iter_us": run.iter_time * 1e6,
                }
            )
            print(
                f"| {name} | {e} | {'–' if t is None else f'{t:.2f}'} | {run.test_acc[-1]:.3f} | "
                f"{run.iter_time * 1e6:.0f} |"
            )

    out = Path(__file__).resolve().parent / "results" / f"koala-{'gpu' if args.gpu else 'cpu'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "koala: KoalaPP step vs Adam/SGD; time to accuracy on digits",
        "quick": args.quick,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_threads": args.threads,
        "gpu": gpu_name,
        "check_fast_vs_reference": ref_err,
        "check_fast_vs_loop": loop_err,
        "rows": [
            {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in rows
        ],
        "time_to_accuracy": tta,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
