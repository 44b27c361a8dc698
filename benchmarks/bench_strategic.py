"""Strategic Massart: the 0-1 ERM halfspace scan, batched torch vs the numpy reference.

The inner loop of the explore-fit-shift learner is an exact 0-1 threshold scan over K
directions on n clean samples. Reported: agent-directions per second for

* ``per-direction loop`` (the peer a user would write): ``lab.strategic.erm01_1d`` called once
  per direction;
* ``lab.strategic.erm01_halfspace`` numpy: one [n, K] sort + cumulative sums;
* ``lab.strategic.erm01_halfspace(backend="torch")`` on CPU (and CUDA with ``--gpu``).

Every fast path is checked against the numpy reference (same direction, same offset). A
markdown table is printed and the numbers go to ``benchmarks/results/strategic-<cpu|gpu>.json``.

    python benchmarks/bench_strategic.py            # n up to 2e4, K = 720
    python benchmarks/bench_strategic.py --quick    # < 20 s
    python benchmarks/bench_strategic.py --gpu      # adds CUDA and n up to 2e5
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

from lab import strategic as st  # noqa: E402


def _time(fn, repeat: int = 1) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def errors(X, y, w, b) -> int:
    return int(np.sum(np.where(X @ w >= b, 1, -1) != y))


def loop_peer(X, y, n_dirs):
    phi = 2 * np.pi * np.arange(n_dirs) / n_dirs
    best = (np.inf, None, None)
    for p in phi:
        w = np.array([np.cos(p), np.sin(p)])
        theta, err = st.erm01_1d(X @ w, y)
        if err < best[0]:
            best = (err, w, theta)
    return best[1], best[2]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    K = 720
    sizes = [500, 2000] if args.quick else [500, 2000, 20_000]
    if args.gpu:
        sizes.append(200_000)
    env = st.StrategicEnv(n_mc=1000)
    rows = []
    for n in sizes:
        X, y = env.sample(n, np.random.default_rng(n))
        t_ref, (w_ref, b_ref) = _time(
            lambda X=X, y=y: st.erm01_halfspace(X, y, n_dirs=K, refine=False)
        )
        row = {"n": n, "K": K, "numpy_s": t_ref}
        if n <= 2000:
            t_loop, (w_l, b_l) = _time(lambda X=X, y=y: loop_peer(X, y, K))
            row["loop_s"] = t_loop
            row["loop_same_errors"] = bool(errors(X, y, w_l, b_l) == errors(X, y, w_ref, b_ref))
        t_cpu, (w_c, b_c) = _time(
            lambda X=X, y=y: st.erm01_halfspace(
                X, y, n_dirs=K, refine=False, backend="torch", device="cpu"
            )
        )
        row["torch_cpu_s"] = t_cpu
        row["torch_cpu_match"] = bool(
            np.allclose(w_c, w_ref, atol=1e-12) and abs(b_c - b_ref) < 1e-12
        )
        if args.gpu and torch.cuda.is_available():
            st.erm01_halfspace(
                X[:100], y[:100], n_dirs=8, backend="torch", device="cuda"
            )  # warm-up
            t_gpu, (w_g, b_g) = _time(
                lambda X=X, y=y: st.erm01_halfspace(
                    X, y, n_dirs=K, refine=False, backend="torch", device="cuda"
                ),
                repeat=3,
            )
            row["torch_cuda_s"] = t_gpu
            row["torch_cuda_match"] = bool(
                np.allclose(w_g, w_ref, atol=1e-12) and abs(b_g - b_ref) < 1e-12
            )
        rows.append(row)
    t_run, _ = _time(lambda: st.explore_fit_shift(st.StrategicEnv(), 2**15, seed=0))
    print("| n | K | loop peer (M/s) | numpy (M/s) | torch CPU (M/s) | torch CUDA (M/s) | match |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        rate = lambda t, r=r: f"{r['n'] * r['K'] / t / 1e6:.2f}" if t else "—"  # noqa: E731
        print(
            f"| {r['n']} | {r['K']} | {rate(r.get('loop_s'))} | {rate(r['numpy_s'])} | "
            f"{rate(r['torch_cpu_s'])} | {rate(r.get('torch_cuda_s'))} | "
            f"{r['torch_cpu_match'] and r.get('torch_cuda_match', True) and r.get('loop_same_errors', True)} |"
        )
    print(f"explore_fit_shift, T = 2^15, default instance: {t_run:.2f} s")
    tag = "gpu" if args.gpu else "cpu"
    out = {
        "chapter": "strategic",
        "machine": platform.platform(),
        "torch": torch.__version__,
        "quick": args.quick,
        "erm_scan": rows,
        "explore_fit_shift_T32768_s": t_run,
    }
    path = Path(__file__).resolve().parent / "results" / f"strategic-{tag}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
