"""Wasserstein SGD/SVRG flows: batched torch sampler vs the numpy reference, and POT.

Part 1, samplers: particle-steps per second of ``lab.wflows.run_sampler`` (numpy, particles
vectorised) and ``lab.wflows.run_sampler_torch`` (torch, CPU with one thread; CUDA with
``--gpu``) for ULA, SGLD and SVRG-LD on the chapter's target (N = 200, d = 2, b = 5, m = 40).
Before timing, both are fed the same pre-drawn randomness and their final particles compared.

Part 2, distances (the peer a user would reach for): exact W2 between two particle clouds with
POT (``ot.emd2``), sliced W2 (``ot.sliced_wasserstein_distance``) and the Gaussian-fit W2 of
``lab.wflows.w2_gaussian``, timed and compared with the exact Gaussian value.

    python benchmarks/bench_wflows.py            # CPU: P = 1e4, 500 steps; clouds of 2000
    python benchmarks/bench_wflows.py --quick    # CPU, < 20 s: P = 2000, 100 steps; clouds of 1000
    python benchmarks/bench_wflows.py --gpu      # adds CUDA at P = 1e6

A markdown table is printed and the numbers go to ``benchmarks/results/wflows-<cpu|gpu>.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import wflows as wf  # noqa: E402

KW = {
    "langevin": {},
    "sgld": {"batch_size": 5},
    "svrg": {"batch_size": 5, "epoch_length": 40},
}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu", action="store_true", help="also time the torch path on CUDA")
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu given but torch sees no CUDA device")
    torch.set_num_threads(args.threads)

    pot = wf.quadratic_finite_sum(200, 2, 0)
    P, steps, P_ot = (2000, 100, 1000) if args.quick else (10_000, 500, 2000)
    rng = np.random.default_rng(0)
    X0 = pot.mean + np.array([3.0, -2.0]) + 0.5 * rng.standard_normal((P, 2))

    # cross-check with shared draws (small)
    worst = {}
    dr = wf.draw_noise(50, 300, 2, pot.N, 5, seed=1)
    for method, kw in KW.items():
        d = dr if method != "langevin" else wf.SamplerDraws(dr.indices[:, :, :0], dr.normals)
        a = wf.run_sampler(method, pot, X0[:300], 0.05, 50, draws=d, **kw)
        b = wf.run_sampler_torch(method, pot, X0[:300], 0.05, 50, draws=d, device="cpu", **kw)
        worst[method] = float(np.abs(a.X - b.X).max())

    rows = []
    for method, kw in KW.items():
        rec = {"record_every": steps, "keep": 0}
        ref, t_ref = timed(
            lambda m=method, k=kw, r=rec: wf.run_sampler(m, pot, X0, 0.05, steps, **k, **r)
        )
        wf.run_sampler_torch(method, pot, X0[:64], 0.05, 5, device="cpu", **kw)  # warm-up
        fast, t_fast = timed(
            lambda m=method, k=kw, r=rec: wf.run_sampler_torch(
                m, pot, X0, 0.05, steps, device="cpu", **k, **r
            )
        )
        base = P * steps / t_ref
        rows.append(
            {
                "method": method,
                "impl": "lab.wflows.run_sampler (numpy reference)",
                "device": "cpu",
                "P": P,
                "steps": steps,
                "seconds": t_ref,
                "particle_steps_per_s": base,
                "speedup": 1.0,
                "final_kl": float(ref.kl[-1]),
                "max_abs_diff_shared_draws": 0.0,
            }
        )
        rows.append(
            {
                "method": method,
                "impl": "lab.wflows.run_sampler_torch",
                "device": f"cpu ({args.threads} thread)",
                "P": P,
                "steps": steps,
                "seconds": t_fast,
                "particle_steps_per_s": P * steps / t_fast,
                "speedup": (P * steps / t_fast) / base,
                "final_kl": float(fast.kl[-1]),
                "max_abs_diff_shared_draws": worst[method],
            }
        )
        if args.gpu:
            Pg, steps_g = 1_000_000, 1000
            Xg = pot.mean + 0.5 * np.random.default_rng(1).standard_normal((Pg, 2))
            Xg = torch.as_tensor(Xg, device="cuda")
            wf.run_sampler_torch(method, pot, Xg[:1024], 0.05, 5, **kw)  # warm-up
            g, t_g = timed(
                lambda m=method, k=kw, X=Xg, n=steps_g: wf.run_sampler_torch(
                    m, pot, X, 0.05, n, **k, record_every=n, keep=0
                )
            )
            rows.append(
                {
                    "method": method,
                    "impl": "lab.wflows.run_sampler_torch",
                    "device": f"cuda ({torch.cuda.get_device_name(0)})",
                    "P": Pg,
                    "steps": steps_g,
                    "seconds": t_g,
                    "particle_steps_per_s": Pg * steps_g / t_g,
                    "speedup": (Pg * steps_g / t_g) / base,
                    "final_kl": float(g.kl[-1]),
                    "max_abs_diff_shared_draws": float("nan"),
                }
            )

    print("\nSamplers on quadratic_finite_sum(200, 2), h = 0.05, b = 5, m = 40, float64\n")
    print(
        "| method | implementation | device | P | steps | time (s) | particle-steps/s | vs numpy | max diff (shared draws) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['method']} | {r['impl']} | {r['device']} | {r['P']:,} | {r['steps']} | "
            f"{r['seconds']:.3f} | {r['particle_steps_per_s']:.3g} | {r['speedup']:.2f}x | "
            f"{r['max_abs_diff_shared_draws']:.1e} |"
        )

    # distances between clouds
    S1 = np.array([[1.0, 0.3], [0.3, 0.5]])
    m1 = np.array([2.0, 0.0])
    Xa = np.random.default_rng(2).multivariate_normal(m1, S1, P_ot)
    Xb = np.random.default_rng(3).multivariate_normal(pot.mean, pot.cov, P_ot)
    exact = wf.w2_gaussian(m1, S1, pot.mean, pot.cov)
    dist_rows = []
    for name, fn in [
        ("POT ot.emd2 (exact OT)", lambda: wf.empirical_w2(Xa, Xb)),
        (
            "POT sliced (200 projections)",
            lambda: wf.empirical_w2(Xa, Xb, sliced=True, n_projections=200),
        ),
        (
            "lab w2_gaussian of the fits",
            lambda: wf.w2_gaussian(Xa.mean(0), np.cov(Xa.T), Xb.mean(0), np.cov(Xb.T)),
        ),
    ]:
        val, sec = timed(fn)
        dist_rows.append({"method": name, "P": P_ot, "seconds": sec, "value": val, "exact": exact})
    print(f"\nW2 between two clouds of {P_ot} points (exact Gaussian W2 = {exact:.4f})\n")
    print("| method | time (s) | value |")
    print("|---|---|---|")
    for r in dist_rows:
        print(f"| {r['method']} | {r['seconds']:.4f} | {r['value']:.4f} |")

    out = (
        Path(__file__).resolve().parent / "results" / f"wflows-{'gpu' if args.gpu else 'cpu'}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "wflows: run_sampler_torch vs run_sampler; POT distances",
        "quick": args.quick,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_threads": args.threads,
        "rows": [
            {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows
        ],
        "distances": [
            {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}
            for r in dist_rows
        ],
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
