"""Entropic OT for AdaDRO: ``lab.ot_dro.entropic_plan`` vs the numpy reference and POT.

Three comparisons, each at equal accuracy (the same marginal tolerance 1e-9; the achieved
marginal error and the max plan difference to POT ``sinkhorn_log`` are reported):

* one balanced problem N x N, eps = 0.05: fast = ``entropic_plan`` (torch,
  ``method="auto"``), reference = ``reference.entropic_plan`` (numpy log domain, timed once), peers
  = POT ``ot.bregman.sinkhorn_log`` and ``ot.sinkhorn``;
* a batch of B problems 64 x 64: fast = one batched ``entropic_plan`` call, peers = POT loops
  (timed once on 64 problems, 16 with ``--quick``, and scaled to B);
* ``worst_case_weights`` (torch, fast) vs ``reference.worst_case_weights`` (numpy) at
  N = M = 256.

The chapter's target: agree with POT to 1e-6 and be at least as fast on CPU.

    python benchmarks/bench_ot_dro.py            # CPU: N in (200, 500), B = 256
    python benchmarks/bench_ot_dro.py --quick    # CPU, < 20 s: N = 200, B = 32
    python benchmarks/bench_ot_dro.py --gpu      # adds a CUDA batch (B = 4096)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = "agrees with POT to 1e-6, at least as fast on CPU"


def main() -> None:
    import ot
    import torch

    from lab import ot_dro
    from lab.tooling.bench import Benchmark

    bench = Benchmark("ot_dro", __doc__)
    tol, eps = 1e-9, 0.05
    rng = np.random.default_rng(0)
    for n in (200,) if bench.quick else (200, 500):
        C = rng.uniform(size=(n, n))
        a = rng.uniform(0.5, 1.5, n)
        a /= a.sum()
        b = np.full(n, 1.0 / n)
        with bench.case(
            f"single {n}x{n}, eps = {eps}", target=TARGET, n=n, eps=eps, tol=tol
        ) as case:
            P = case.time(
                "fast",
                "lab.ot_dro.entropic_plan (torch)",
                lambda C=C, a=a, b=b: ot_dro.fast.entropic_plan(
                    C, eps, a, b, n_iter=10000, tol=tol
                ),
                reps=bench.args.reps or 3,
            )
            Pr = case.time(
                "reference",
                "entropic_plan_ref (numpy)",
                lambda C=C, a=a, b=b: ot_dro.reference.entropic_plan(C, eps, a, b, 10000, tol),
                reps=1,
                warmup=0,
            )
            Pl = case.time(
                "peer",
                "POT sinkhorn_log",
                lambda C=C, a=a, b=b: ot.bregman.sinkhorn_log(
                    a, b, C, eps, numItermax=10000, stopThr=tol
                ),
                reps=bench.args.reps or 3,
            )
            Ps = case.time(
                "peer",
                "POT sinkhorn",
                lambda C=C, a=a, b=b: ot.sinkhorn(a, b, C, eps, numItermax=10000, stopThr=tol),
                reps=bench.args.reps or 3,
            )
            for row, Pm in zip(case.rows, (P, Pr, Pl, Ps), strict=True):
                Pm = np.asarray(Pm)
                row["marginal_err"] = float(
                    np.abs(Pm.sum(1) - a).sum() + np.abs(Pm.sum(0) - b).sum()
                )
                row["max_diff_to_pot_log"] = float(np.abs(Pm - Pl).max())
            case.metric("fast_max_diff_to_pot_sinkhorn_log", float(np.abs(P - Pl).max()))

    devices = ["cpu"] + (["cuda"] if bench.gpu else [])
    for dev in devices:
        B = (32 if bench.quick else 256) if dev == "cpu" else 4096
        Cb = torch.tensor(rng.uniform(size=(B, 64, 64)), device=dev)
        u = np.full(64, 1 / 64)
        with bench.case(
            f"batched {B}x64x64, eps = {eps} ({dev})", target=TARGET, B=B, n=64, device=dev
        ) as case:
            Pb = case.time(
                "fast",
                "lab.ot_dro.entropic_plan, one batched call",
                lambda Cb=Cb: ot_dro.fast.entropic_plan(Cb, eps, n_iter=10000, tol=tol),
                reps=bench.args.reps or 3,
                device=dev if dev == "cuda" else None,
            )
            Cn = Cb.cpu().numpy()
            nb = min(B, 16 if bench.quick else 64)
            for name, solve in (
                ("POT sinkhorn_log loop", ot.bregman.sinkhorn_log),
                ("POT sinkhorn loop", ot.sinkhorn),
            ):
                t0 = time.perf_counter()
                Pp = [solve(u, u, Cn[k], eps, numItermax=10000, stopThr=tol) for k in range(nb)]
                t = time.perf_counter() - t0
                case.record(
                    "peer",
                    name,
                    seconds=t * B / nb,
                    note=f"timed once on {nb} problems, scaled to {B}",
                )
                if "log" in name:
                    diff = max(float(np.abs(Pb[k].cpu().numpy() - Pp[k]).max()) for k in range(nb))
                    case.metric("fast_max_diff_to_pot_sinkhorn_log", diff)

    L, Cw = rng.normal(size=256), rng.uniform(size=(256, 256))
    with bench.case("worst_case_weights 256x256", N=256, M=256) as case:
        _, Q = case.time(
            "fast",
            "worst_case_weights (torch)",
            lambda: ot_dro.fast.worst_case_weights(L, Cw, 1.0, 0.1),
        )
        _, Qr = case.time(
            "reference",
            "worst_case_weights_ref (numpy)",
            lambda: ot_dro.reference.worst_case_weights(L, Cw, 1.0, 0.1),
        )
        case.metric("max_abs_diff", float(np.abs(np.asarray(Q) - np.asarray(Qr)).max()))
    bench.finish()


if __name__ == "__main__":
    main()
