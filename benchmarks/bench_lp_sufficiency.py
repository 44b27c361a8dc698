"""Sufficient decision datasets: MILP construction cost, brute force, and the Monte Carlo fast path.

Three tables:

* **construction**: ``lab.lp_sufficiency.minimal_sdd`` (one HiGHS MILP per new direction) on
  random hiring instances of growing size: MILP solves, seconds, and agreement with the
  closed form ``topk_sdd`` (which is the O(n^2 T) peer for this special case);
* **brute force**: the smallest interview set found by enumerating subsets of interviews in
  order of size, each checked exactly with ``is_sufficient`` (MILPs), against the construction
  plus the support rule;
* **Monte Carlo**: violation rate of observationally equivalent pairs, numpy reference (one
  HiGHS LP per cost) vs numpy vectorised vertex argmin (the peer) vs the batched torch path
  (CPU, and CUDA with ``--gpu``); all must return the same rate on the same pairs.

    python benchmarks/bench_lp_sufficiency.py            # CPU
    python benchmarks/bench_lp_sufficiency.py --quick    # CPU, < 20 s
    python benchmarks/bench_lp_sufficiency.py --gpu      # adds CUDA for the Monte Carlo table
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import lp_sufficiency as lps  # noqa: E402


def instance(n: int, seed: int, width=(1.5, 4.0)):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 10, n)
    w = rng.uniform(*width, n)
    return c - w / 2, c + w / 2


def construction(sizes, seeds):
    rows = []
    for n in sizes:
        for seed in seeds:
            lo, hi = instance(n, seed)
            k = max(1, n // 4)
            X, C = lps.topk_problem(lo, hi, k)
            t0 = time.perf_counter()
            D, n_milp = lps.minimal_sdd(X, C, rng=seed)
            t_milp = time.perf_counter() - t0
            t0 = time.perf_counter()
            B = lps.topk_sdd(lo, hi, k)
            t_closed = time.perf_counter() - t0
            rows.append(
                {
                    "n": n,
                    "k": k,
                    "seed": seed,
                    "d_star": int(D.shape[0]),
                    "milp_solves": n_milp,
                    "milp_s": t_milp,
                    "closed_form_s": t_closed,
                    "agree": bool(lps.same_span(D, B)),
                }  # fmt: skip
            )
    return rows


def brute_force(sizes, seed=0):
    rows = []
    for n in sizes:
        lo, hi = instance(n, seed, width=(2.0, 5.0))
        k = max(1, n // 3)
        X, C = lps.topk_problem(lo, hi, k)
        t0 = time.perf_counter()
        checks, best = 0, None
        for size in range(n + 1):
            for S in itertools.combinations(range(n), size):
                checks += 1
                if lps.is_sufficient(np.eye(n)[list(S)], X, C)[0]:
                    best = size
                    break
            if best is not None:
                break
        t_brute = time.perf_counter() - t0
        t0 = time.perf_counter()
        D, n_milp = lps.minimal_sdd(X, C, rng=seed)
        support = int(np.sum(np.any(np.abs(D) > 1e-6, axis=0)))
        t_con = time.perf_counter() - t0
        rows.append(
            {
                "n": n,
                "k": k,
                "min_interviews_brute": best,
                "subsets_checked": checks,
                "brute_s": t_brute,
                "min_interviews_construction": support,
                "construction_milps": n_milp,
                "construction_s": t_con,
            }  # fmt: skip
        )
    return rows


def monte_carlo(trials_ref, trials_fast, gpu):
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
    rows = []
    t0 = time.perf_counter()
    r_ref = lps.violation_rate_mc(D, X, C, trials_ref, rng=0, backend="numpy")
    rows.append({"path": "numpy reference (LP per cost)", "trials": trials_ref, "rate": r_ref,
                 "pairs_per_s": trials_ref / (time.perf_counter() - t0)})  # fmt: skip
    for trials in (trials_ref, trials_fast):
        c1, c2 = lps.sample_equivalent_pairs(D, C, trials, rng=0)
        t0 = time.perf_counter()
        rate = float(np.mean(np.argmin(c1 @ V.T, 1) != np.argmin(c2 @ V.T, 1)))
        rows.append({"path": "numpy vectorised argmin (peer)", "trials": trials, "rate": rate,
                     "pairs_per_s": trials / (time.perf_counter() - t0)})  # fmt: skip
    devices = ["cpu"] + (["cuda"] if gpu else [])
    for dev in devices:
        for trials in (trials_ref, trials_fast):
            lps.violation_rate_mc(D, X, C, 100, rng=1, backend="torch", device=dev)  # warm-up
            t0 = time.perf_counter()
            rate = lps.violation_rate_mc(D, X, C, trials, rng=0, backend="torch", device=dev)
            rows.append({"path": f"torch batched ({dev})", "trials": trials, "rate": rate,
                         "pairs_per_s": trials / (time.perf_counter() - t0)})  # fmt: skip
    same = [r["rate"] for r in rows if r["trials"] == trials_ref]
    assert len(set(same)) == 1, f"fast paths disagree with the reference: {same}"
    fast = [r["rate"] for r in rows if r["trials"] == trials_fast]
    assert len(set(fast)) == 1, f"fast paths disagree: {fast}"
    return rows


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--gpu", action="store_true", help="add CUDA to the Monte Carlo table")
    args = parser.parse_args()
    if args.gpu:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--gpu given but torch.cuda.is_available() is False")
    sizes = [8, 12] if args.quick else [8, 12, 16, 20, 24]
    seeds = [0, 1] if args.quick else [0, 1, 2]
    t_all = time.perf_counter()
    cons = construction(sizes, seeds)
    brute = brute_force([5] if args.quick else [5, 6, 7])
    mc = monte_carlo(100 if args.quick else 400, 20_000 if args.quick else 200_000, args.gpu)
    print("\n### Construction (one MILP per new direction) vs closed form\n")
    print(
        "| n | k | seed | d* | MILPs | MILP s | closed form s | same span |\n|---|---|---|---|---|---|---|---|"
    )
    for r in cons:
        print(f"| {r['n']} | {r['k']} | {r['seed']} | {r['d_star']} | {r['milp_solves']} | {r['milp_s']:.2f} | "
              f"{r['closed_form_s']:.4f} | {r['agree']} |")  # fmt: skip
    print(
        "\n### Smallest interview set: brute force (exact MILP check per subset) vs construction\n"
    )
    print(
        "| n | k | brute min | subsets | brute s | construction min | MILPs | construction s |\n|---|---|---|---|---|---|---|---|"
    )
    for r in brute:
        print(f"| {r['n']} | {r['k']} | {r['min_interviews_brute']} | {r['subsets_checked']} | {r['brute_s']:.2f} | "
              f"{r['min_interviews_construction']} | {r['construction_milps']} | {r['construction_s']:.2f} |")  # fmt: skip
    print("\n### Monte Carlo violation rate (n = 12, k = 4, one direction dropped)\n")
    print("| path | pairs | rate | pairs/s |\n|---|---|---|---|")
    for r in mc:
        print(f"| {r['path']} | {r['trials']} | {r['rate']:.4f} | {r['pairs_per_s']:.3g} |")
    assert all(r["agree"] for r in cons)
    assert all(r["min_interviews_brute"] == r["min_interviews_construction"] for r in brute)
    payload = {
        "chapter": "lp_sufficiency", "quick": args.quick, "gpu": args.gpu, "machine": platform.platform(),
        "total_s": time.perf_counter() - t_all, "construction": cons, "brute_force": brute, "monte_carlo": mc,
    }  # fmt: skip
    out = (
        Path(__file__).resolve().parent
        / "results"
        / f"lp_sufficiency-{'gpu' if args.gpu else 'cpu'}.json"
    )
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {out} ({payload['total_s']:.1f} s)")


if __name__ == "__main__":
    main()
