"""OMiSO closed-loop sessions: batched torch vs the numpy reference, FA vs scikit-learn, and
the controllers' quality against the MiSO-like and random peers.

Three cases:

* **sessions**: ``S`` seeds x 4 methods (600 calibration, ``n_train`` training and ``n_test``
  closed-loop trials each); reference = ``lab.omiso.run_session`` one session at a time
  (numpy, timed once), fast = one ``lab.omiso.fast.run_sessions`` call (timed as ``simulate_batch``; torch; shares the
  calibration and training blocks of sessions on the same seed). The per-trial errors of the two
  must agree (``max_error_gap``).
* **factor analysis** on 600 x 96 counts: ``lab.omiso.fit_fa`` vs scikit-learn
  ``FactorAnalysis`` (peer), at the same log-likelihood (reported).
* **quality**: mean distance to target of OMiSO vs the MiSO-like and random peers, default
  drift (0.002) and drift 0.02 (rows recorded with ``record``; time = the batched run).

    python benchmarks/bench_omiso.py            # CPU: S = 4, n_train = 1500, n_test = 400
    python benchmarks/bench_omiso.py --quick    # CPU, < 20 s: S = 1, n_train = 300, n_test = 100
    python benchmarks/bench_omiso.py --gpu      # adds 1024 sessions batched on CUDA
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import torch
    from sklearn.decomposition import FactorAnalysis

    from lab import omiso
    from lab.omiso.fast import run_sessions
    from lab.omiso.settings import SessionBatch, SessionSettings
    from lab.tooling.bench import Benchmark

    bench = Benchmark("omiso", __doc__)
    S, n_train, n_test = (1, 300, 100) if bench.quick else (4, 1500, 400)
    seeds = [s for s in range(S) for _ in omiso.METHODS]
    methods = list(omiso.METHODS) * S
    kw = dict(n_cal=600, n_train=n_train, n_test=n_test)
    settings = SessionSettings(**kw)

    with bench.case(
        f"{len(seeds)} sessions ({S} seeds x 4 methods), n_train = {n_train}, n_test = {n_test}",
        target="equal per-trial errors; batched faster than one session at a time",
        sessions=len(seeds),
        **kw,
    ) as case:
        ref = case.time(
            "reference",
            "run_session loop (numpy)",
            lambda: [
                omiso.run_session(omiso.UtahArraySim(seed=s), m, settings).errors
                for s, m in zip(seeds, methods, strict=True)
            ],
            reps=1,
            warmup=0,
        )
        fast = case.time(
            "fast",
            "simulate_batch (torch, cpu)",
            lambda: run_sessions(SessionBatch(seeds, methods), settings, device="cpu"),
            reps=1 if not bench.quick else 2,
            warmup=0,
        )
        case.metric("max_error_gap", float(np.abs(np.stack(ref) - fast["errors"]).max()))
        if bench.gpu and torch.cuda.is_available():
            big = [s for s in range(256) for _ in omiso.METHODS]
            case.time(
                "fast",
                "simulate_batch (torch, cuda), 1024 sessions",
                lambda: run_sessions(
                    SessionBatch(big, list(omiso.METHODS) * 256), settings, device="cuda"
                ),
                reps=1,
                warmup=0,
                device="cuda",
            )

    sim = omiso.UtahArraySim(seed=0)
    Y = np.stack([sim.pre()[1] for _ in range(600)])
    with bench.case(
        "factor analysis, 600 x 96 counts, q = 4", target="same likelihood as sklearn"
    ) as case:
        fa = case.time("fast", "lab.omiso.fit_fa", lambda: omiso.fit_fa(Y, 4))
        sk = case.time(
            "peer",
            "sklearn FactorAnalysis (tol 1e-8)",
            lambda: FactorAnalysis(4, tol=1e-8, max_iter=10_000).fit(Y),
        )
        case.metric("loglik_lab", fa.loglik(Y))
        case.metric("loglik_sklearn", float(sk.score(Y)))

    for drift in (0.002, 0.02):
        with bench.case(
            f"closed-loop quality, drift {drift}, {S} seeds",
            target="OMiSO below the MiSO-like and random peers",
            drift=drift,
        ) as case:
            t0 = time.perf_counter()
            out = run_sessions(SessionBatch(seeds, methods, drift=drift), settings, device="cpu")
            secs = time.perf_counter() - t0
            err = out["errors"].mean(1)
            for m in omiso.METHODS:
                role = "fast" if m == "omiso" else "peer"
                vals = [e for e, mm in zip(err, methods, strict=True) if mm == m]
                case.record(role, m, seconds=secs, mean_error=float(np.mean(vals)))
    bench.finish()


if __name__ == "__main__":
    main()
