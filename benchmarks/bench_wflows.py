"""Wasserstein SGD/SVRG flows: batched torch sampler vs the numpy reference, and POT.

Samplers (one case per method: ULA, SGLD, SVRG-LD) on the chapter's target
``quadratic_finite_sum(200, 2)`` (h = 0.05, b = 5, m = 40, float64), P particles:

* reference: ``lab.wflows.run_sampler`` (numpy, particles vectorised), timed once;
* fast: ``lab.wflows.fast.run_sampler`` (torch, CPU; CUDA at P = 1e6 with ``--gpu``).

Checks: with the same pre-drawn randomness (``draw_noise``, 300 particles, 50 steps) both
follow the same path (max abs diff of the final particles); final KL of both timed runs.

Distances (the peer a user would reach for): W2 between two clouds of 2000 points, fast =
``lab.wflows.w2_gaussian`` of the Gaussian fits, peers = POT exact ``ot.emd2`` (timed once)
and sliced W2 (200 projections); the values are compared with the exact Gaussian W2.

    python benchmarks/bench_wflows.py            # CPU: P = 1e4, 500 steps; clouds of 2000
    python benchmarks/bench_wflows.py --quick    # CPU, < 20 s: P = 2000, 100 steps; clouds of 1000
    python benchmarks/bench_wflows.py --gpu      # adds CUDA at P = 1e6, 1000 steps
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import wflows as wf  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

KW = {
    "langevin": {},
    "sgld": {"batch_size": 5},
    "svrg": {"batch_size": 5, "epoch_length": 40},
}
NAMES = {"langevin": "ULA", "sgld": "SGLD", "svrg": "SVRG-LD"}


def main() -> None:
    bench = Benchmark("wflows", __doc__)
    pot = wf.quadratic_finite_sum(200, 2, 0)
    P, steps, P_ot = (2000, 100, 1000) if bench.quick else (10_000, 500, 2000)
    rng = np.random.default_rng(0)
    X0 = pot.mean + np.array([3.0, -2.0]) + 0.5 * rng.standard_normal((P, 2))
    dr = wf.draw_noise(50, 300, 2, pot.N, 5, seed=1)

    for method, kw in KW.items():
        with bench.case(
            f"{NAMES[method]} sampler, P = {P:,}, {steps} steps",
            method=method,
            P=P,
            steps=steps,
            N=200,
            d=2,
            h=0.05,
        ) as case:
            d = dr if method != "langevin" else wf.SamplerDraws(dr.indices[:, :, :0], dr.normals)
            a = wf.run_sampler(method, pot, X0[:300], 0.05, 50, draws=d, **kw)
            b = wf.fast.run_sampler(method, pot, X0[:300], 0.05, 50, draws=d, device="cpu", **kw)
            case.metric("max_abs_diff_shared_draws", float(np.abs(a.X - b.X).max()))
            rec = {"record_every": steps, "keep": 0}
            ref = case.time(
                "reference",
                "lab.wflows.run_sampler (numpy)",
                lambda m=method, k=kw, r=rec: wf.run_sampler(m, pot, X0, 0.05, steps, **k, **r),
                reps=1,
                warmup=0,
            )
            wf.fast.run_sampler(method, pot, X0[:64], 0.05, 5, device="cpu", **kw)  # warm-up
            fast = case.time(
                "fast",
                "lab.wflows.fast.run_sampler",
                lambda m=method, k=kw, r=rec: wf.fast.run_sampler(
                    m, pot, X0, 0.05, steps, device="cpu", **k, **r
                ),
                reps=min(bench.reps, 3),
                warmup=0,
            )
            case.metric("reference_final_kl", float(ref.kl[-1]))
            case.metric("fast_final_kl", float(fast.kl[-1]))

    if bench.gpu:
        Pg, steps_g = 1_000_000, 1000
        Xg = pot.mean + 0.5 * np.random.default_rng(1).standard_normal((Pg, 2))
        Xg = torch.as_tensor(Xg, device="cuda")
        for method, kw in KW.items():
            with bench.case(
                f"{NAMES[method]} sampler, P = {Pg:,}, {steps_g} steps (CUDA)",
                method=method,
                P=Pg,
                steps=steps_g,
            ) as case:
                wf.fast.run_sampler(method, pot, Xg[:1024], 0.05, 5, **kw)  # warm-up
                g = case.time(
                    "fast",
                    "lab.wflows.fast.run_sampler",
                    lambda m=method, k=kw: wf.fast.run_sampler(
                        m, pot, Xg, 0.05, steps_g, **k, record_every=steps_g, keep=0
                    ),
                    reps=3,
                    warmup=0,
                    device="cuda",
                )
                case.metric("fast_final_kl", float(g.kl[-1]))

    S1 = np.array([[1.0, 0.3], [0.3, 0.5]])
    m1 = np.array([2.0, 0.0])
    Xa = np.random.default_rng(2).multivariate_normal(m1, S1, P_ot)
    Xb = np.random.default_rng(3).multivariate_normal(pot.mean, pot.cov, P_ot)
    with bench.case(f"W2 between two clouds of {P_ot} points", P=P_ot, d=2) as case:
        v_fast = case.time(
            "fast",
            "lab.wflows.w2_gaussian of the fits",
            lambda: wf.w2_gaussian(Xa.mean(0), np.cov(Xa.T), Xb.mean(0), np.cov(Xb.T)),
        )
        v_emd = case.time(
            "peer",
            "POT ot.emd2 (exact OT)",
            lambda: wf.empirical_w2(Xa, Xb),
            reps=1,
            warmup=0,
        )
        v_sl = case.time(
            "peer",
            "POT sliced (200 projections)",
            lambda: wf.empirical_w2(Xa, Xb, sliced=True, n_projections=200),
            reps=min(bench.reps, 3),
        )
        case.metric("exact_gaussian_w2", wf.w2_gaussian(m1, S1, pot.mean, pot.cov))
        case.metric("w2_gaussian_fits", float(v_fast))
        case.metric("pot_emd2", float(v_emd))
        case.metric("pot_sliced", float(v_sl))
    bench.finish()


if __name__ == "__main__":
    main()
