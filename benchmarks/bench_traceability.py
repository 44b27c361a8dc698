"""Traceability: the batched torch tracer vs the numpy reference, and the sweep end to end.

Scores L learners (noise levels) against the same instance; one score is one length-d dot
product, ``L * (2n + R)`` per sweep. Cases:

* tracing: reference = ``lab.traceability.trace`` (numpy, one learner at a time), fast =
  ``lab.traceability.fast.trace`` (torch, all learners in one batched matmul, on CPU and
  on CUDA with ``--gpu``). Check: the fast path's masks equal the reference's;
* ``tradeoff_curve`` end to end (data generation included, timed once): reference = numpy
  backend, fast = torch backend. Check: identical traced sets.

Peer: none. The chapter asked for a DP library's Gaussian mechanism, but diffprivlib 0.6.6
does not import with scikit-learn 1.9 and opacus is not installed, so the calibration is
cross-checked against closed forms in the tests instead. Exits with status 1 if a check fails.

    python benchmarks/bench_traceability.py            # CPU: n = 100, d = 5000, L = 16
    python benchmarks/bench_traceability.py --quick    # CPU, < 20 s: n = 50, d = 2500, L = 8
    python benchmarks/bench_traceability.py --gpu      # CPU and CUDA at d = 50000, L = 32
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import traceability as tr  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

PEER = "none (no DP library imports here; see the docstring)"


def main() -> int:
    bench = Benchmark("traceability", __doc__)
    if bench.gpu:
        n, d, L, R = 100, 50_000, 32, 2000
    elif bench.quick:
        n, d, L, R = 50, 2500, 8, 1000
    else:
        n, d, L, R = 100, 5000, 16, 1000
    inst = tr.l2_hard_instance(n, d, seed=0, n_ref=R, n_fresh=R)
    sig = np.geomspace(0.01, 10, L)
    W = np.stack([tr.noisy_erm_l2(inst["Z"], s, seed=1) for s in sig])
    cand = np.concatenate([inst["Z"], inst["Z_fresh"]])
    scores = L * (cand.shape[0] + R)  # dot products per sweep (candidates + calibration half)
    ok = True

    def fast(dev):
        Wt = torch.as_tensor(W, device=dev)
        C = torch.as_tensor(cand, device=dev).expand(L, -1, -1)
        Zr = torch.as_tensor(inst["Z_ref"], device=dev).expand(L, -1, -1)
        return tr.fast.trace(Wt, C, Zr, 0.05, device=dev)

    size = {"n": n, "d": d, "L": L, "R": R}
    with bench.case(f"trace L = {L} learners, n = {n}, d = {d}, R = {R}", **size) as case:
        case.metric("peer", PEER)
        ref = case.time(
            "reference",
            "lab.traceability.trace (numpy, one learner at a time)",
            lambda: np.stack([tr.trace(w, cand, inst["Z_ref"], 0.05) for w in W]),
        )
        for dev in ["cpu"] + (["cuda"] if bench.gpu else []):
            m = case.time(
                "fast",
                "lab.traceability.fast.trace (torch)",
                lambda dev=dev: fast(dev),
                device=dev if dev == "cuda" else None,
            )
            same = bool(np.array_equal(m.cpu().numpy(), ref))
            case.metric(f"matches_reference_{dev}", same)
            ok = ok and same
        for r in case.rows:
            r["scores_per_s"] = scores / r["seconds"]

    settings = tr.TradeoffSettings(n=n, d=d, sigmas=tuple(sig), n_ref=R, n_fresh=R)
    with bench.case("tradeoff_curve end to end (2 reps per sigma)", **size) as case:
        case.metric("peer", PEER)
        a = case.time(
            "reference",
            "tradeoff_curve (numpy backend)",
            lambda: tr.tradeoff_curve(settings, reps=2, backend="numpy"),
            reps=1,
            warmup=0,
        )
        b = case.time(
            "fast",
            "tradeoff_curve (torch backend)",
            lambda: tr.tradeoff_curve(settings, reps=2, backend="torch", device="cpu"),
            reps=1,
            warmup=0,
        )
        same = bool(np.array_equal(a["traced_all"], b["traced_all"]))
        case.metric("matches_reference", same)
        ok = ok and same
    bench.finish()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
