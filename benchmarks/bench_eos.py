"""GD at the edge of stability: batched torch fast path vs the numpy reference loop.

Runs the xy model from the chapter's default start (lambda0 = 2.6, r0 = 1e-3) over a grid of
step sizes covering every regime (0.5 to 1.6: stable ... divergent) and reports
trajectory-steps per second for

* ``lab.eos.gd``: the numpy/Python reference loop, one trajectory at a time (timed on a
  subset of the grid and extrapolated; its rate does not depend on the batch);
* ``numpy vectorised``: the peer a user would write, the same update over the whole batch in
  numpy arrays (with the same freeze-on-divergence rule);
* ``lab.eos.gd_batched``: torch, on CPU (and on CUDA with ``--gpu``).

Every fast path is checked against ``gd`` at the recorded steps. A markdown table is printed
and the numbers go to ``benchmarks/results/eos-<cpu|gpu>.json``.

    python benchmarks/bench_eos.py            # CPU: B = 1e4, 1e4 steps, record every 100
    python benchmarks/bench_eos.py --quick    # CPU, < 20 s: B = 2e3, 2e3 steps
    python benchmarks/bench_eos.py --gpu      # adds CUDA: B = 1e6, 1e4 steps, record every 100
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

from lab import eos  # noqa: E402

FLOPS_PER_STEP = 7  # r = xy - 1 (2), eta r (1), x - er y (2), y - er x (2)


def numpy_vectorised(w0: np.ndarray, etas: np.ndarray, steps: int, record_every: int):
    """The obvious numpy peer: one array op per term, the whole batch at once."""
    B = etas.size
    x, y = np.full(B, w0[0]), np.full(B, w0[1])
    r = x * y - 1.0
    alive = np.ones(B, bool)
    rec = [np.stack([x, y], 1)]
    with np.errstate(all="ignore"):
        for k in range(1, steps + 1):
            er = etas * r
            xn, yn = x - er * y, y - er * x
            rn = xn * yn - 1.0
            ok = alive & np.isfinite(rn)
            x, y, r = np.where(ok, xn, x), np.where(ok, yn, y), np.where(ok, rn, r)
            alive = ok & (np.abs(rn) <= eos.DIVERGENCE_THRESHOLD)
            if k % record_every == 0 or k == steps:
                rec.append(np.stack([x, y], 1))
    return np.stack(rec)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--gpu", action="store_true", help="also time gd_batched on CUDA at B = 1e6"
    )
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (default 1: lab's policy)"
    )
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu given but torch sees no CUDA device")
    torch.set_num_threads(args.threads)

    model = eos.XYModel()
    w0 = eos.point_on_manifold(model, 2.6, 1e-3)
    B, steps, every, n_ref = (2_000, 2_000, 100, 10) if args.quick else (10_000, 10_000, 100, 40)
    etas = np.linspace(0.5, 1.6, B)
    ref_idx = np.linspace(0, B - 1, n_ref).astype(int)

    rows = []

    # reference loop on a subset of the grid
    ref, t_ref = timed(lambda: [eos.gd(model, w0, float(etas[i]), steps) for i in ref_idx])
    ref_steps = sum(tr.steps_run for tr in ref)
    ref_rate = ref_steps / t_ref
    rows.append(
        {
            "method": "lab.eos.gd (numpy loop)",
            "device": "cpu",
            "B": n_ref,
            "steps": steps,
            "seconds": t_ref,
            "traj_steps_per_s": ref_rate,
            "max_abs_diff_vs_gd": 0.0,
        }
    )

    def check(W_rec: np.ndarray) -> float:
        """Max |fast - gd| at the recorded steps of the reference rows (runs that did not diverge)."""
        rec_steps = list(range(0, steps + 1, every))
        if rec_steps[-1] != steps:
            rec_steps.append(steps)
        worst = 0.0
        for j, i in enumerate(ref_idx):
            tr = ref[j]
            if tr.diverged:
                continue
            worst = max(worst, float(np.max(np.abs(W_rec[:, i] - tr.w[rec_steps]))))
        return worst

    W_np, t_np = timed(lambda: numpy_vectorised(w0, etas, steps, every))
    rows.append(
        {
            "method": "numpy vectorised (peer)",
            "device": "cpu",
            "B": B,
            "steps": steps,
            "seconds": t_np,
            "traj_steps_per_s": B * steps / t_np,
            "max_abs_diff_vs_gd": check(W_np),
        }
    )

    eos.gd_batched(model, w0, etas[:8], 10, device="cpu")  # warm-up
    bt, t_cpu = timed(
        lambda: eos.gd_batched(model, w0, etas, steps, record_every=every, device="cpu")
    )
    rows.append(
        {
            "method": "lab.eos.gd_batched (torch)",
            "device": f"cpu ({args.threads} thread)",
            "B": B,
            "steps": steps,
            "seconds": t_cpu,
            "traj_steps_per_s": B * steps / t_cpu,
            "max_abs_diff_vs_gd": check(bt.w.numpy()),
        }
    )

    gpu_name = None
    if args.gpu:
        gpu_name = torch.cuda.get_device_name(0)
        Bg, steps_g, every_g = 1_000_000, 10_000, 100
        etas_g = torch.linspace(0.5, 1.6, Bg, dtype=torch.float64, device="cuda")
        eos.gd_batched(model, w0, etas_g[:1024], 10, device="cuda")  # warm-up
        torch.cuda.synchronize()

        def run_gpu():
            out = eos.gd_batched(model, w0, etas_g, steps_g, record_every=every_g, device="cuda")
            torch.cuda.synchronize()
            return out

        bg, t_gpu = timed(run_gpu)
        # check the rows whose step size equals a reference row's (the grids differ; recompute)
        sub = torch.linspace(0, Bg - 1, 16).long()
        worst = 0.0
        for i in sub.tolist():
            tr = eos.gd(model, w0, float(etas_g[i]), steps_g)
            if not tr.diverged:
                rs = list(range(0, steps_g + 1, every_g))
                worst = max(worst, float(np.max(np.abs(bg.w[:, i].cpu().numpy() - tr.w[rs]))))
        rows.append(
            {
                "method": "lab.eos.gd_batched (torch)",
                "device": f"cuda ({gpu_name})",
                "B": Bg,
                "steps": steps_g,
                "seconds": t_gpu,
                "traj_steps_per_s": Bg * steps_g / t_gpu,
                "max_abs_diff_vs_gd": worst,
                "gflops_fp64": Bg * steps_g * FLOPS_PER_STEP / t_gpu / 1e9,
            }
        )
        del bg

    for r in rows:
        r["speedup_vs_gd"] = r["traj_steps_per_s"] / ref_rate
    print(
        f"\nxy model, eta grid [0.5, 1.6], lambda0 = 2.6, r0 = 1e-3, record every {every}, float64\n"
    )
    print(
        "| method | device | B | steps | time (s) | traj-steps/s | vs gd loop | max abs diff vs gd |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['method']} | {r['device']} | {r['B']:,} | {r['steps']:,} | {r['seconds']:.3f} | "
            f"{r['traj_steps_per_s']:.3g} | {r['speedup_vs_gd']:.1f}x | {r['max_abs_diff_vs_gd']:.1e} |"
        )
    if args.gpu:
        print(
            f"\nCUDA achieved {rows[-1]['gflops_fp64']:.1f} GFLOP/s fp64 (counting {FLOPS_PER_STEP} flops per "
            "trajectory-step); the torch path is bound by memory traffic, not arithmetic."
        )

    out = Path(__file__).resolve().parent / "results" / f"eos-{'gpu' if args.gpu else 'cpu'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "eos: gd_batched vs gd",
        "quick": args.quick,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_threads": args.threads,
        "gpu": gpu_name,
        "rows": [
            {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows
        ],
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
