"""Traceability: the batched torch tracer vs the numpy reference, and the sweep end to end.

Scores L learners (noise levels) against the same instance and reports candidate scores per
second (one score = one length-d dot product) for

* ``lab.traceability.trace``: the numpy reference, one learner at a time;
* ``lab.traceability.trace_batched``: torch, all learners in one batched matmul, on CPU (and
  on CUDA with ``--gpu``);
* ``tradeoff_curve`` end to end (data generation included) with both backends.

Peer: none. The chapter asked for a DP library's Gaussian mechanism, but diffprivlib 0.6.6
does not import with scikit-learn 1.9 and opacus is not installed, so the calibration is
cross-checked against closed forms in the tests instead. Every fast-path mask is checked
against the reference. A markdown table is printed and the numbers go to
``benchmarks/results/traceability-<cpu|gpu>.json``.

    python benchmarks/bench_traceability.py            # CPU: n = 100, d = 5000, L = 16
    python benchmarks/bench_traceability.py --quick    # CPU, < 20 s: n = 50, d = 2500, L = 8
    python benchmarks/bench_traceability.py --gpu      # adds CUDA: d = 50000, L = 32
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

from lab import traceability as tr  # noqa: E402


def timed(fn, repeat=3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--gpu", action="store_true", help="also time CUDA")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.gpu:
        n, d, L, R = 100, 50_000, 32, 2000
    elif args.quick:
        n, d, L, R = 50, 2500, 8, 1000
    else:
        n, d, L, R = 100, 5000, 16, 1000
    inst = tr.l2_hard_instance(n, d, seed=0, n_ref=R, n_fresh=R)
    sig = np.geomspace(0.01, 10, L)
    W = np.stack([tr.noisy_erm_l2(inst["Z"], s, seed=1) for s in sig])
    cand = np.concatenate([inst["Z"], inst["Z_fresh"]])
    scores = L * (cand.shape[0] + R)  # dot products per sweep (candidates + calibration half)

    t_ref, ref = timed(lambda: np.stack([tr.trace(w, cand, inst["Z_ref"], 0.05) for w in W]))
    rows = [("lab.traceability.trace (numpy reference)", "cpu", t_ref, True)]

    def fast(dev):
        Wt = torch.as_tensor(W, device=dev)
        C = torch.as_tensor(cand, device=dev).expand(L, -1, -1)
        Zr = torch.as_tensor(inst["Z_ref"], device=dev).expand(L, -1, -1)
        out = tr.trace_batched(Wt, C, Zr, 0.05, device=dev)
        if dev != "cpu":
            torch.cuda.synchronize()
        return out.cpu().numpy()

    devs = ["cpu"] + (["cuda"] if args.gpu and torch.cuda.is_available() else [])
    for dev in devs:
        fast(dev)  # warm-up
        t, m = timed(lambda dev=dev: fast(dev))
        rows.append(
            (f"lab.traceability.trace_batched (torch {dev})", dev, t, bool(np.array_equal(m, ref)))
        )

    kw = dict(n=n, d=d, sigmas=list(sig), reps=2, n_ref=R, n_fresh=R, show_progress=False)
    t_np, a = timed(lambda: tr.tradeoff_curve(backend="numpy", **kw), repeat=1)
    t_t, b = timed(lambda: tr.tradeoff_curve(backend="torch", device="cpu", **kw), repeat=1)
    same = bool(np.array_equal(a["traced_all"], b["traced_all"]))
    rows.append(("tradeoff_curve end to end (numpy)", "cpu", t_np, True))
    rows.append(("tradeoff_curve end to end (torch)", "cpu", t_t, same))

    print(f"\nn = {n}, d = {d}, learners L = {L}, reference R = {R}; peer: none (see docstring)\n")
    print(
        "| implementation | device | time (s) | scores / s | speed-up vs reference | matches reference |"
    )
    print("|---|---|---|---|---|---|")
    res = []
    for name, dev, t, ok in rows:
        end_to_end = name.startswith("tradeoff")
        rate = "" if end_to_end else f"{scores / t:.3g}"
        base = t_np if end_to_end else t_ref
        print(f"| {name} | {dev} | {t:.4f} | {rate} | {base / t:.2f}x | {ok} |")
        res.append({"name": name, "device": dev, "seconds": t, "speedup": base / t, "matches": ok})
    out = (
        Path(__file__).resolve().parent
        / "results"
        / f"traceability-{'gpu' if args.gpu else 'cpu'}.json"
    )
    payload = {
        "benchmark": "traceability",
        "sizes": {"n": n, "d": d, "L": L, "R": R},
        "quick": args.quick,
        "machine": platform.platform(),
        "torch": torch.__version__,
        "peer": "none: diffprivlib 0.6.6 fails to import with scikit-learn 1.9; opacus not installed",
        "results": res,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
