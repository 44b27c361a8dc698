"""Bilevel (IZOM): oracle throughput and batched zeroth-order steps.

1. **Hyper-cleaning oracle** (optimistic inner solve) for a batch of ``B`` label corrections;
   every time is for the whole batch:

   * reference: ``lab HyperCleaning.__call__``, one dense KKT solve per point (timed once on
     64 points, scaled to ``B``);
   * peer: ``cvxpy (CLARABEL)``, one QP per point, the solver a user would pick (timed once
     on a few points, scaled to ``B``);
   * fast: ``lab.bilevel.fast.kkt_oracle`` (timed as ``lab kkt_oracle_torch``): factorise once, one batched LU solve for all points (CPU,
     and CUDA with ``--gpu``).

   Checks: max abs difference to the reference (asserted < 1e-6 for cvxpy, < 1e-8 otherwise).

2. **IZOM on Toy P** (``R`` runs of ``T`` steps, 4 directions): reference ``izom`` (numpy,
   one run at a time, timed once on 3 runs and scaled to ``R``) vs fast ``izom_many`` (timed as ``lab izom_batched``)
   (all runs and directions of a step in one oracle batch). Check: with the same directions
   and one run the two agree on a 40-step horizon.

    python benchmarks/bench_bilevel.py            # CPU: n_train = 200, p = 400, B = 512; R = 256
    python benchmarks/bench_bilevel.py --quick    # CPU, < 20 s: n_train = 50, p = 100, B = 128
    python benchmarks/bench_bilevel.py --gpu      # adds CUDA: n_train = 2000, p = 4000, B = 4096
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import bilevel as bl  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def oracle_case(bench, n_train: int, p: int, B: int, dev: str, cvx_points: int) -> None:
    with bench.case(
        f"hyper-cleaning oracle, n_train = {n_train}, p = {p}, batch {B} ({dev})",
        n_train=n_train,
        p=p,
        B=B,
        device=dev,
    ) as case:
        H = bl.hyper_cleaning(n_train, p, 2 * p, 0.3, 0)
        X = np.random.default_rng(0).standard_normal((B, n_train))
        n_ref = min(B, 64)
        t0 = time.perf_counter()
        ref = np.array([H(x) for x in X[:n_ref]])
        t = time.perf_counter() - t0
        case.record(
            "reference",
            "lab HyperCleaning (numpy KKT solve per point)",
            seconds=t * B / n_ref,
            evals_per_s=n_ref / t,
            note=f"timed once on {n_ref} points, scaled to {B}",
        )
        t0 = time.perf_counter()
        vals = [H.validation_loss(bl.cvxpy_inner_solve(H, x)) for x in X[:cvx_points]]
        t = time.perf_counter() - t0
        err = float(np.abs(np.array(vals) - ref[:cvx_points]).max())
        assert err < 1e-6, f"cvxpy disagrees with the KKT reference by {err}"
        case.record(
            "peer",
            "cvxpy CLARABEL (QP per point)",
            seconds=t * B / cvx_points,
            evals_per_s=cvx_points / t,
            note=f"timed once on {cvx_points} points, scaled to {B}",
        )
        case.metric("cvxpy_max_abs_diff_vs_reference", err)
        oracle = bl.kkt_oracle(H.A, H.G, H.ytr, H.yval, device=dev)
        Xt = torch.tensor(X, device=dev)
        out = case.time(
            "fast",
            "lab kkt_oracle_torch (batched LU)",
            lambda: oracle(Xt),
            device=dev if dev != "cpu" else None,
        )
        case.rows[-1]["evals_per_s"] = B / case.rows[-1]["seconds"]
        err = float(np.abs(out[:n_ref].cpu().numpy() - ref).max())
        assert err < 1e-8, f"kkt_oracle ({dev}) disagrees by {err}"
        case.metric("fast_max_abs_diff_vs_reference", err)


def izom_case(bench, T: int, runs: int, n_dirs: int, dev: str) -> None:
    with bench.case(
        f"IZOM on Toy P, T = {T}, {runs} runs x {n_dirs} directions ({dev})",
        T=T,
        runs=runs,
        n_dirs=n_dirs,
        device=dev,
    ) as case:
        P = bl.toy_pessimistic()
        x0 = np.array([1.5, -1.2])
        eta = 0.5 / np.sqrt(2 * T)
        n_ref = 3
        t0 = time.perf_counter()
        for s in range(n_ref):
            bl.izom(P, x0, T, eta, 1e-3, s, measure="none")
        t = time.perf_counter() - t0
        case.record(
            "reference",
            "lab izom (numpy, one run at a time)",
            seconds=t * runs / n_ref,
            run_steps_per_s=n_ref * T / t,
            note=f"timed once on {n_ref} runs, scaled to {runs}",
        )
        U = bl.sphere_directions(np.random.default_rng(0), 40, 2)
        ref = bl.izom(P, x0, 40, 0.02, 1e-3, 0, measure="none", directions=U).x
        chk = bl.izom_many(P, x0, 40, 0.02, 1e-3, directions=U[:, None, None], device=dev)
        err = float(np.abs(chk.x[:, 0].cpu().numpy() - ref).max())
        assert err < 1e-9, f"izom_many ({dev}) disagrees with izom by {err}"
        case.metric("fast_max_abs_diff_vs_reference_40_steps", err)
        case.time(
            "fast",
            "lab izom_batched",
            lambda: bl.izom_many(
                P,
                x0,
                T,
                eta,
                1e-3,
                batch=bl.IZOMBatch(n_dirs=n_dirs, runs=runs, record_every=T),
                device=dev,
            ),
            reps=1,
            device=dev if dev != "cpu" else None,
        )
        s = case.rows[-1]["seconds"]
        case.rows[-1]["run_steps_per_s"] = runs * T / s
        case.rows[-1]["evals_per_s"] = 2 * n_dirs * runs * T / s


def main() -> None:
    bench = Benchmark("bilevel", __doc__)
    if bench.quick:
        sizes = {"n_train": 50, "p": 100, "B": 128, "T": 300, "runs": 64, "cvx": 5}
    else:
        sizes = {"n_train": 200, "p": 400, "B": 512, "T": 2000, "runs": 256, "cvx": 10}
    s = sizes
    oracle_case(bench, s["n_train"], s["p"], s["B"], "cpu", s["cvx"])
    izom_case(bench, s["T"], s["runs"], 4, "cpu")
    if bench.gpu:
        oracle_case(bench, 2000, 4000, 4096, "cuda", 3)
        izom_case(bench, 2000, 1024, 4, "cuda")
    bench.finish()


if __name__ == "__main__":
    main()
