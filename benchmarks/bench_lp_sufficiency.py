"""Sufficient decision datasets: MILP construction cost, brute force, and the Monte Carlo fast path.

Three kinds of cases (every long path timed once):

* **construction**, one case per n (random hiring instances, k = n/4, mean over 3 seeds):
  fast = ``lab.lp_sufficiency.minimal_sdd`` (the chapter's general construction, one HiGHS
  MILP per new direction), peer = the closed form ``topk_sdd`` (O(n^2 T), valid only for this
  special case). Check: the two datasets span the same space;
* **smallest interview set**, one case per n: reference = brute force (subsets of
  interviews in order of size, each checked exactly with ``is_sufficient``, MILPs), fast =
  the construction plus the support rule. Check: the same minimum;
* **Monte Carlo** violation rate of observationally equivalent pairs (n = 12, k = 4, one
  direction dropped): reference = numpy, one HiGHS LP per cost (small number of pairs only),
  peer = numpy vectorised vertex argmin, fast = the batched torch path (CPU, and CUDA with
  ``--gpu``). Check: every path returns the same rate on the same pairs.

    python benchmarks/bench_lp_sufficiency.py            # CPU
    python benchmarks/bench_lp_sufficiency.py --quick    # CPU, < 20 s
    python benchmarks/bench_lp_sufficiency.py --gpu      # adds CUDA to the Monte Carlo cases
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import lp_sufficiency as lps  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

ONCE = {"reps": 1, "warmup": 0}


def instance(n: int, seed: int, width=(1.5, 4.0)):
    return lps.random_hiring_instance(n, seed, width=width)


def construction(bench, sizes, seeds) -> None:
    for n in sizes:
        k = max(1, n // 4)
        with bench.case(
            f"construction, n = {n}, k = {k} (mean over {len(seeds)} seeds)", n=n, k=k
        ) as case:
            t_milp, t_closed, d_star, solves, agree = [], [], [], [], []
            for seed in seeds:
                lo, hi = instance(n, seed)
                X, C = lps.topk_problem(lo, hi, k)
                t0 = time.perf_counter()
                D, n_milp = lps.minimal_sdd(X, C, rng=seed)
                t_milp.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                B = lps.topk_sdd(lo, hi, k)
                t_closed.append(time.perf_counter() - t0)
                d_star.append(int(D.shape[0]))
                solves.append(n_milp)
                agree.append(bool(lps.same_span(D, B)))
            case.record(
                "fast",
                "lab minimal_sdd (one MILP per new direction)",
                seconds=float(np.mean(t_milp)),
                milp_solves=solves,
                d_star=d_star,
            )
            case.record("peer", "closed form topk_sdd", seconds=float(np.mean(t_closed)))
            case.metric("same_span", all(agree))
            assert all(agree), f"construction and closed form disagree at n = {n}"


def brute_force(bench, sizes, seed=0) -> None:
    for n in sizes:
        lo, hi = instance(n, seed, width=(2.0, 5.0))
        k = max(1, n // 3)
        X, C = lps.topk_problem(lo, hi, k)
        with bench.case(f"smallest interview set, n = {n}, k = {k}", n=n, k=k) as case:

            def brute(X=X, C=C):
                found = lps.smallest_interview_set(X, C)  # the same search notebook 2 runs
                return found.size, found.checks

            best, checks = case.time(
                "reference", "brute force (exact MILP check per subset)", brute, **ONCE
            )
            case.rows[-1]["subsets_checked"] = checks

            def construct(X=X, C=C):
                D, n_milp = lps.minimal_sdd(X, C, rng=seed)
                return int(np.sum(np.any(np.abs(D) > 1e-6, axis=0))), n_milp

            support, n_milp = case.time("fast", "lab minimal_sdd + support rule", construct, **ONCE)
            case.rows[-1]["milp_solves"] = n_milp
            case.metric("min_interviews_brute", best)
            case.metric("min_interviews_construction", support)
            assert best == support, f"brute force {best} != construction {support} at n = {n}"


def monte_carlo(bench, trials_ref, trials_fast) -> None:
    lo, hi = instance(12, 3, width=(2.0, 4.0))
    X, C = lps.topk_problem(lo, hi, 4)
    B = lps.topk_sdd(lo, hi, 4)
    # drop the direction whose loss hurts most (measured on 2000 pairs)
    worst = max(
        range(B.shape[0]),
        key=lambda i: lps.violation_rate_mc(np.delete(B, i, 0), X, C, 2000, rng=9),
    )
    D = np.delete(B, worst, axis=0)
    V = X.vertices()
    devices = ["cpu"] + (["cuda"] if bench.gpu else [])
    for trials in (trials_ref, trials_fast):
        with bench.case(
            f"Monte Carlo violation rate, {trials:,} pairs (n = 12, k = 4)", trials=trials
        ) as case:
            rates = {}
            if trials == trials_ref:
                rates["reference"] = case.time(
                    "reference",
                    "numpy, one HiGHS LP per cost",
                    lambda trials=trials: lps.violation_rate_mc(
                        D, X, C, trials, rng=0, backend="numpy"
                    ),
                    **ONCE,
                )
            for dev in devices:
                lps.violation_rate_mc(D, X, C, 100, rng=1, backend="torch", device=dev)  # warm-up
                rates[f"fast_{dev}"] = case.time(
                    "fast",
                    "lab violation_rate_mc, batched torch",
                    lambda dev=dev, trials=trials: lps.violation_rate_mc(
                        D, X, C, trials, rng=0, backend="torch", device=dev
                    ),
                    device=dev if dev == "cuda" else None,
                    **ONCE,
                )
            c1, c2 = lps.sample_equivalent_pairs(D, C, trials, rng=0)
            rates["peer"] = case.time(
                "peer",
                "numpy vectorised vertex argmin",
                lambda c1=c1, c2=c2: float(
                    np.mean(np.argmin(c1 @ V.T, 1) != np.argmin(c2 @ V.T, 1))
                ),
                reps=1 if trials > 10_000 else (bench.args.reps or 3),
            )
            for r in case.rows:
                r["pairs_per_s"] = trials / r["seconds"]
            case.metric("rates", rates)
            case.metric("same_rate", len(set(rates.values())) == 1)
            assert len(set(rates.values())) == 1, f"paths disagree: {rates}"


def main() -> None:
    bench = Benchmark("lp_sufficiency", __doc__)
    construction(
        bench, [8, 12] if bench.quick else [8, 12, 16, 20, 24], [0, 1] if bench.quick else [0, 1, 2]
    )
    brute_force(bench, [5] if bench.quick else [5, 6, 7])
    monte_carlo(bench, 100 if bench.quick else 400, 20_000 if bench.quick else 200_000)
    bench.finish()


if __name__ == "__main__":
    main()
