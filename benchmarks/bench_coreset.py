"""Facility-location coresets: the torch fast path vs the numpy reference vs apricot.

Selects ``B = n / 10`` medoids from ``n`` random points in 16 dimensions (Euclidean distances,
similarity ``d_max - d``) and reports the wall-clock time and pool points per second of

* ``lab.coreset.greedy_facility_location``: the numpy reference (plain greedy, and the lazy
  priority-queue variant), distances included;
* ``lab.coreset.facility_location_torch``: torch on CPU, one pool, and a batch of 8 pools in
  one call (the way ``CoresetTrainer`` selects the coresets of several steps at once), and on
  CUDA with ``--gpu``;
* ``apricot.FacilityLocationSelection`` (``apricot-select``, numba): the library a user would
  pick instead, on the same precomputed similarity, ``naive`` and ``lazy`` optimizers, timed
  after a warm-up call that compiles its kernels.

Every selection is checked against the reference: identical indices for the torch path on
CPU (float64), the objective ratio ``F(S) / F(S_ref)`` for the others. A markdown table is
printed and the numbers go to ``benchmarks/results/coreset-<cpu|gpu>.json``.

    python benchmarks/bench_coreset.py            # CPU: n = 500, 1000, 2000
    python benchmarks/bench_coreset.py --quick    # CPU, < 20 s idle: n = 300, 600; no apricot lazy
    python benchmarks/bench_coreset.py --gpu      # adds CUDA (float32), n up to 8000
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import coreset as cs  # noqa: E402


def timed(fn, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--gpu", action="store_true", help="add CUDA rows")
    parser.add_argument("--no-apricot", action="store_true", help="skip the apricot peer")
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu needs a CUDA device")
    torch.set_num_threads(1)
    sizes = [300, 600] if args.quick else [500, 1000, 2000]
    if args.gpu:
        sizes = sizes + [4000, 8000]
    apricot = None
    if not args.no_apricot:
        try:
            import apricot

            warm = np.random.default_rng(9).random((20, 20))
            for opt in ("naive", "lazy"):
                apricot.FacilityLocationSelection(3, metric="precomputed", optimizer=opt).fit(warm)
        except ImportError:  # pragma: no cover - optional peer
            apricot = None
    rows = []
    for n in sizes:
        b = n // 10
        G = np.random.default_rng(n).standard_normal((n, 16))
        cpu_ok = n <= 2000
        D = cs.pairwise_distances(G)
        ref = None
        if cpu_ok:
            t_ref, (idx_ref, _) = timed(
                lambda G=G, b=b: cs.greedy_facility_location(cs.pairwise_distances(G), b)
            )
            ref = (t_ref, idx_ref, cs.facility_location_objective(D, idx_ref))

        def add(method, device, seconds, idx, pools=1, n=n, b=b, D=D, ref=ref):
            row = {
                "method": method,
                "device": device,
                "n": n,
                "B": b,
                "pools": pools,
                "seconds": round(seconds, 6),
                "points_per_s": round(pools * n / seconds, 1),
            }
            if ref is not None:
                row["objective_ratio"] = round(cs.facility_location_objective(D, idx) / ref[2], 9)
                row["same_indices"] = bool(np.array_equal(idx, ref[1]))
                row["speedup_vs_reference"] = round(ref[0] / (seconds / pools), 3)
            rows.append(row)

        if cpu_ok:
            add("lab greedy_facility_location (numpy reference)", "cpu", t_ref, idx_ref)
            if not args.quick:
                t, (idx, _) = timed(
                    lambda G=G, b=b: cs.greedy_facility_location(
                        cs.pairwise_distances(G), b, lazy=True
                    )
                )
                add("lab greedy_facility_location lazy=True", "cpu", t, idx)
            Gt = torch.as_tensor(G)
            t, (idx, _) = timed(lambda Gt=Gt, b=b: cs.facility_location_torch(Gt, b), repeat=2)
            add("lab facility_location_torch (float64)", "cpu", t, idx)
            Gb = torch.as_tensor(np.stack([G] * 8))
            t, (idxb, _) = timed(lambda Gb=Gb, b=b: cs.facility_location_torch(Gb, b))
            add("lab facility_location_torch, 8 pools batched", "cpu", t, idxb[0], pools=8)
            if apricot is not None:
                S = D.max() - D
                for opt in ("naive",) if args.quick else ("naive", "lazy"):
                    sel = apricot.FacilityLocationSelection(b, metric="precomputed", optimizer=opt)
                    t, res = timed(lambda sel=sel, S=S: sel.fit(S))
                    add(f"apricot FacilityLocationSelection ({opt})", "cpu", t, res.ranking)
        if args.gpu:
            Gc = torch.as_tensor(G, dtype=torch.float32, device="cuda")
            cs.facility_location_torch(Gc[:50], 5)  # warm-up
            t, (idx, _) = timed(lambda Gc=Gc, b=b: cs.facility_location_torch(Gc, b), repeat=3)
            add("lab facility_location_torch (float32)", "cuda", t, idx)
            Gb = Gc.unsqueeze(0).repeat(8, 1, 1)
            t, (idxb, _) = timed(lambda Gb=Gb, b=b: cs.facility_location_torch(Gb, b), repeat=2)
            add("lab facility_location_torch, 8 pools batched (float32)", "cuda", t, idxb[0], 8)

    cols = [
        "method",
        "device",
        "n",
        "B",
        "pools",
        "seconds",
        "points_per_s",
        "speedup_vs_reference",
        "objective_ratio",
        "same_indices",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    payload = {
        "benchmark": "coreset: facility_location_torch vs greedy_facility_location vs apricot",
        "quick": args.quick,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if args.gpu else None,
        "note": "shared 2-core machine; wall-clock times are inflated by other processes' load",
        "rows": rows,
    }
    name = f"coreset-{'gpu' if args.gpu else 'cpu'}.json"
    out = Path(__file__).resolve().parent / "results" / name
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
