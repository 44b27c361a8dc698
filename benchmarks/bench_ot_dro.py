"""Entropic OT for AdaDRO: ``lab.ot_dro.entropic_plan`` vs the numpy reference and POT.

Three comparisons, each at equal accuracy (the same marginal tolerance; the achieved
marginal error and the max plan difference to POT are reported):

* one balanced problem N x N, eps = 0.05: ``entropic_plan`` (torch, ``method="auto"``) vs
  ``entropic_plan_ref`` (numpy log domain) vs POT ``ot.bregman.sinkhorn_log`` and ``ot.sinkhorn``;
* a batch of B problems 64 x 64: one batched ``entropic_plan`` call vs POT loops;
* ``worst_case_weights`` (torch) vs ``worst_case_weights_ref`` (numpy) at N = M = 256.

    python benchmarks/bench_ot_dro.py            # CPU: N in (200, 500), B = 256
    python benchmarks/bench_ot_dro.py --quick    # CPU, < 20 s: N = 200, B = 64
    python benchmarks/bench_ot_dro.py --gpu      # adds CUDA rows (B = 4096 batched)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _time(fn, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    import ot
    import torch

    from lab import ot_dro

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    tol, eps = 1e-9, 0.05
    rows = []
    rng = np.random.default_rng(0)
    for n in (200,) if args.quick else (200, 500):
        C = rng.uniform(size=(n, n))
        a = rng.uniform(0.5, 1.5, n)
        a /= a.sum()
        b = np.full(n, 1.0 / n)
        t_lab, P = _time(
            lambda C=C, a=a, b=b: ot_dro.entropic_plan(C, eps, a, b, n_iter=10000, tol=tol)
        )
        t_ref, Pr = _time(
            lambda C=C, a=a, b=b: ot_dro.entropic_plan_ref(C, eps, a, b, 10000, tol), 1
        )
        t_log, Pl = _time(
            lambda C=C, a=a, b=b: ot.bregman.sinkhorn_log(
                a, b, C, eps, numItermax=10000, stopThr=tol
            )
        )
        t_sk, Ps = _time(
            lambda C=C, a=a, b=b: ot.sinkhorn(a, b, C, eps, numItermax=10000, stopThr=tol)
        )
        for name, t, Pm in (
            ("lab.entropic_plan (torch)", t_lab, P),
            ("entropic_plan_ref (numpy)", t_ref, Pr),
            ("POT sinkhorn_log", t_log, Pl),
            ("POT sinkhorn", t_sk, Ps),
        ):
            err = float(np.abs(Pm.sum(1) - a).sum() + np.abs(Pm.sum(0) - b).sum())
            rows.append(
                {
                    "case": f"single {n}x{n}",
                    "method": name,
                    "seconds": t,
                    "marginal_err": err,
                    "max_diff_to_pot_log": float(np.abs(Pm - Pl).max()),
                }
            )
    devices = ["cpu"] + (["cuda"] if args.gpu and torch.cuda.is_available() else [])
    for dev in devices:
        B = (32 if args.quick else 256) if dev == "cpu" else 4096
        Cb = torch.tensor(rng.uniform(size=(B, 64, 64)), device=dev)
        u = np.full(64, 1 / 64)

        def run_lab(Cb=Cb, dev=dev):
            P = ot_dro.entropic_plan(Cb, eps, n_iter=10000, tol=tol)
            if dev == "cuda":
                torch.cuda.synchronize()
            return P

        t_lab, Pb = _time(run_lab)
        Cn = Cb.cpu().numpy()
        nb = min(B, 16 if args.quick else 64)
        t_pot, Pp = _time(
            lambda Cn=Cn, nb=nb, u=u: [
                ot.bregman.sinkhorn_log(u, u, Cn[k], eps, numItermax=10000, stopThr=tol)
                for k in range(nb)
            ],
            1,
        )
        t_pot *= B / nb  # the POT loop is linear in B
        t_sk, _ = _time(
            lambda Cn=Cn, nb=nb, u=u: [
                ot.sinkhorn(u, u, Cn[k], eps, numItermax=10000, stopThr=tol) for k in range(nb)
            ],
            1,
        )
        t_sk *= B / nb
        diff = max(float(np.abs(Pb[k].cpu().numpy() - Pp[k]).max()) for k in range(nb))
        rows.append(
            {
                "case": f"batched {B}x64x64 ({dev})",
                "method": "lab.entropic_plan batched",
                "seconds": t_lab,
                "marginal_err": None,
                "max_diff_to_pot_log": diff,
            }
        )
        rows.append(
            {
                "case": f"batched {B}x64x64 ({dev})",
                "method": f"POT sinkhorn_log loop (timed on {nb}, scaled)",
                "seconds": t_pot,
                "marginal_err": None,
                "max_diff_to_pot_log": 0.0,
            }
        )
        rows.append(
            {
                "case": f"batched {B}x64x64 ({dev})",
                "method": f"POT sinkhorn loop (timed on {nb}, scaled)",
                "seconds": t_sk,
                "marginal_err": None,
                "max_diff_to_pot_log": 0.0,
            }
        )
    L, Cw = rng.normal(size=256), rng.uniform(size=(256, 256))
    t_f, (_, Q) = _time(lambda C=C, a=a, b=b: ot_dro.worst_case_weights(L, Cw, 1.0, 0.1), 5)
    t_r, (_, Qr) = _time(lambda C=C, a=a, b=b: ot_dro.worst_case_weights_ref(L, Cw, 1.0, 0.1), 5)
    rows.append(
        {
            "case": "worst_case_weights 256x256",
            "method": "torch",
            "seconds": t_f,
            "marginal_err": None,
            "max_diff_to_pot_log": float(np.abs(Q - Qr).max()),
        }
    )
    rows.append(
        {
            "case": "worst_case_weights 256x256",
            "method": "numpy reference",
            "seconds": t_r,
            "marginal_err": None,
            "max_diff_to_pot_log": 0.0,
        }
    )
    print("| case | method | time (ms) | marginal error | max diff |")
    print("|---|---|---|---|---|")
    for r in rows:
        me = "" if r["marginal_err"] is None else f"{r['marginal_err']:.1e}"
        print(
            f"| {r['case']} | {r['method']} | {1e3 * r['seconds']:.1f} | {me} | "
            f"{r['max_diff_to_pot_log']:.1e} |"
        )
    kind = "gpu" if len(devices) > 1 else "cpu"
    out = Path(__file__).resolve().parent / "results" / f"ot_dro-{kind}.json"
    meta = {"quick": args.quick, "python": platform.python_version(), "torch": torch.__version__}
    meta["pot"] = ot.__version__
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
