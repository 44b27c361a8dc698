"""Facility-location coresets: the torch fast path vs the numpy reference vs apricot.

Selects ``B = n / 10`` medoids from ``n`` random points in 16 dimensions (Euclidean distances,
similarity ``d_max - d``), one case per ``n``, distances included in every time:

* reference: ``lab.coreset.greedy_facility_location`` (numpy, plain greedy; timed once), and
  its lazy priority-queue variant (``lazy=True``, full size only);
* fast: ``lab.coreset.facility_location`` on CPU (float64), one pool; also a batch of 8
  pools in one call (the way ``CoresetTrainer`` selects the coresets of several steps at
  once), timed once and reported per pool; CUDA (float32) with ``--gpu``;
* peer: ``apricot.FacilityLocationSelection`` (``apricot-select``, numba), the library a user
  would pick instead, on the same precomputed similarity, ``naive`` and ``lazy`` (full size
  only) optimizers, timed once after a warm-up call that compiles its kernels (full size
  only: a call takes seconds whatever n).

Every selection is checked against the reference: identical indices for the torch path on
CPU (float64), the objective ratio ``F(S) / F(S_ref)`` for the others (stored with the rows).

    python benchmarks/bench_coreset.py            # CPU: n = 500, 1000, 2000
    python benchmarks/bench_coreset.py --quick    # CPU, < 20 s: n = 300, 600; no apricot, no lazy
    python benchmarks/bench_coreset.py --gpu      # adds CUDA (float32), n up to 8000
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import coreset as cs  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

ONCE = {"reps": 1, "warmup": 0}
# apricot's numba kernels, like torch, get one thread (lab's policy; two spin on a shared machine)
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def one_size(bench, apricot, n: int, on_cpu: bool) -> None:
    b = n // 10
    G = np.random.default_rng(n).standard_normal((n, 16))
    D = cs.pairwise_distances(G)
    with bench.case(f"facility location, n = {n}, B = {b}, d = 16", n=n, B=b, d=16) as case:
        idx_ref = f_ref = None

        def check(idx, row=None):
            row = case.rows[-1] if row is None else row
            if f_ref is not None:
                row["objective_ratio"] = cs.facility_location_objective(D, idx) / f_ref
                row["same_indices"] = bool(np.array_equal(idx, idx_ref))

        if on_cpu:
            idx_ref, _ = case.time(
                "reference",
                "lab greedy_facility_location (numpy)",
                lambda: cs.greedy_facility_location(cs.pairwise_distances(G), b),
                **ONCE,
            )
            f_ref = cs.facility_location_objective(D, idx_ref)
            Gt = torch.as_tensor(G)
            idx, _ = case.time(
                "fast",
                "lab facility_location_torch (float64)",
                lambda: cs.facility_location(Gt, b),
                reps=bench.args.reps or 2,
            )
            check(idx)
            Gb = torch.as_tensor(np.stack([G] * 8))
            idxb, _ = case.time(
                "fast",
                "lab facility_location_torch, 8 pools in one call (per pool)",
                lambda: cs.facility_location(Gb, b),
                **ONCE,
            )
            row = case.rows[-1]
            row["seconds"] /= 8
            row["seconds_min"] /= 8
            row["pools"] = 8
            check(idxb[0])
            if not bench.quick:
                idx, _ = case.time(
                    "reference",
                    "lab greedy_facility_location lazy=True",
                    lambda: cs.greedy_facility_location(cs.pairwise_distances(G), b, lazy=True),
                    **ONCE,
                )
                check(idx)
            if apricot is not None and not bench.quick:
                S = D.max() - D
                for opt in ("naive", "lazy"):
                    sel = apricot.FacilityLocationSelection(b, metric="precomputed", optimizer=opt)
                    res = case.time(
                        "peer",
                        f"apricot FacilityLocationSelection ({opt})",
                        lambda sel=sel, S=S: sel.fit(S),
                        **ONCE,
                    )
                    check(res.ranking)
        if bench.gpu:
            Gc = torch.as_tensor(G, dtype=torch.float32, device="cuda")
            cs.facility_location(Gc[:50], 5)  # warm-up
            idx, _ = case.time(
                "fast",
                "lab facility_location_torch (float32)",
                lambda: cs.facility_location(Gc, b),
                reps=3,
                device="cuda",
            )
            check(idx)
            Gcb = Gc.unsqueeze(0).repeat(8, 1, 1)
            idxb, _ = case.time(
                "fast",
                "lab facility_location_torch, 8 pools (float32, per pool)",
                lambda: cs.facility_location(Gcb, b),
                reps=2,
                device="cuda",
            )
            row = case.rows[-1]
            row["seconds"] /= 8
            row["seconds_min"] /= 8
            row["pools"] = 8
            check(idxb[0])


def main() -> None:
    bench = Benchmark("coreset", __doc__)
    bench.add_argument("--no-apricot", action="store_true", help="skip the apricot peer")
    sizes = [300, 600] if bench.quick else [500, 1000, 2000]
    apricot = None
    if not bench.args.no_apricot and not bench.quick:
        try:
            import apricot

            warm = np.random.default_rng(9).random((20, 20))
            for opt in ("naive", "lazy"):
                apricot.FacilityLocationSelection(3, metric="precomputed", optimizer=opt).fit(warm)
        except ImportError:  # pragma: no cover - optional peer
            apricot = None
    gpu_sizes = sizes + [4000, 8000] if bench.gpu else []

    for n in sorted(set(sizes + gpu_sizes)):
        one_size(bench, apricot, n, n in sizes)
    bench.finish()


if __name__ == "__main__":
    main()
