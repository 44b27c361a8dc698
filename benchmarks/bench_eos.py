"""GD at the edge of stability: batched torch fast path vs the numpy reference loop.

Runs the xy model from the chapter's default start (lambda0 = 2.6, r0 = 1e-3) over a grid of
B step sizes covering every regime (0.5 to 1.6: stable ... divergent), float64, recording the
iterates every 100 steps. Roles:

* reference: ``lab.eos.gd``, the numpy/Python loop, one trajectory at a time (timed once on a
  subset of the grid and extrapolated to the whole batch; its rate does not depend on B);
* peer: ``numpy vectorised``, the same update over the whole batch in numpy arrays (with the
  same freeze-on-divergence rule), the code a user would write;
* fast: ``lab.eos.fast.gd`` (torch, CPU; a CUDA case at B = 1e6 with ``--gpu``).

Checks: max |fast - gd| and |peer - gd| at the recorded steps of the reference trajectories
that did not diverge.

    python benchmarks/bench_eos.py            # CPU: B = 1e4, 1e4 steps
    python benchmarks/bench_eos.py --quick    # CPU, < 20 s: B = 2e3, 2e3 steps
    python benchmarks/bench_eos.py --gpu      # adds CUDA: B = 1e6, 1e4 steps
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import eos  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

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


def rec_steps(steps: int, every: int) -> list[int]:
    out = list(range(0, steps + 1, every))
    if out[-1] != steps:
        out.append(steps)
    return out


def main() -> None:
    bench = Benchmark("eos", __doc__)
    model = eos.XYModel()
    w0 = eos.point_on_manifold(model, 2.6, 1e-3)
    B, steps, every, n_ref = (2_000, 2_000, 100, 10) if bench.quick else (10_000, 10_000, 100, 40)
    etas = np.linspace(0.5, 1.6, B)
    ref_idx = np.linspace(0, B - 1, n_ref).astype(int)
    size = {"B": B, "steps": steps, "record_every": every, "dtype": "float64"}

    with bench.case(f"xy model, eta in [0.5, 1.6], B = {B:,}, {steps:,} steps", **size) as case:
        t0 = time.perf_counter()
        ref = [eos.gd(model, w0, float(etas[i]), steps) for i in ref_idx]
        t_ref = time.perf_counter() - t0
        ref_rate = sum(tr.steps_run for tr in ref) / t_ref  # trajectory-steps per second
        case.record(
            "reference",
            "lab.eos.gd (numpy loop)",
            seconds=B * steps / ref_rate,
            traj_steps_per_s=ref_rate,
            timed_trajectories=n_ref,
            note=f"extrapolated from {n_ref} trajectories timed once",
        )

        def check(W_rec: np.ndarray) -> float:
            rs, worst = rec_steps(steps, every), 0.0
            for j, i in enumerate(ref_idx):
                if not ref[j].diverged:
                    worst = max(worst, float(np.max(np.abs(W_rec[:, i] - ref[j].w[rs]))))
            return worst

        eos.fast.gd(model, w0, etas[:8], 10, device="cpu")  # warm-up (first call)
        bt = case.time(
            "fast",
            "lab.eos.fast.gd (torch)",
            lambda: eos.fast.gd(model, w0, etas, steps, record_every=every, device="cpu"),
        )
        W_np = case.time(
            "peer", "numpy vectorised", lambda: numpy_vectorised(w0, etas, steps, every)
        )
        case.metric("fast_max_abs_diff_vs_gd", check(bt.w.numpy()))
        case.metric("peer_max_abs_diff_vs_gd", check(W_np))

    if bench.gpu:
        Bg, steps_g, every_g = 1_000_000, 10_000, 100
        with bench.case(
            f"xy model, eta in [0.5, 1.6], B = {Bg:,}, {steps_g:,} steps (CUDA)",
            B=Bg,
            steps=steps_g,
            record_every=every_g,
            dtype="float64",
        ) as case:
            case.record(
                "reference",
                "lab.eos.gd (numpy loop)",
                seconds=Bg * steps_g / ref_rate,
                note="extrapolated from the CPU case's reference rate",
            )
            etas_g = torch.linspace(0.5, 1.6, Bg, dtype=torch.float64, device="cuda")
            bg = case.time(
                "fast",
                "lab.eos.fast.gd (torch)",
                lambda: eos.fast.gd(
                    model, w0, etas_g, steps_g, record_every=every_g, device="cuda"
                ),
                reps=3,
                device="cuda",
            )
            fast_s = case.rows[-1]["seconds"]
            case.metric("gflops_fp64", Bg * steps_g * FLOPS_PER_STEP / fast_s / 1e9)
            worst = 0.0
            for i in torch.linspace(0, Bg - 1, 16).long().tolist():
                tr = eos.gd(model, w0, float(etas_g[i]), steps_g)
                if not tr.diverged:
                    rs = rec_steps(steps_g, every_g)
                    worst = max(worst, float(np.max(np.abs(bg.w[:, i].cpu().numpy() - tr.w[rs]))))
            case.metric("fast_max_abs_diff_vs_gd", worst)
            del bg
    bench.finish()


if __name__ == "__main__":
    main()
