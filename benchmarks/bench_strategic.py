"""Strategic Massart: the 0-1 ERM halfspace scan, batched torch vs the numpy reference.

The inner loop of the explore-fit-shift learner is an exact 0-1 threshold scan over K = 720
directions on n clean samples, one case per n:

* reference: ``lab.strategic.erm01_halfspace`` numpy (one [n, K] sort + cumulative sums);
* fast: ``lab.strategic.erm01_halfspace(backend="torch")`` on CPU (and CUDA with ``--gpu``);
* peer (n <= 2000): the per-direction loop a user would write, ``lab.strategic.erm01_1d``
  called once per direction.

Checks: the torch path returns the reference's direction and offset (to 1e-12); the loop
peer reaches the same number of errors. Last case: ``explore_fit_shift`` end to end
(T = 2^15, default instance), timed once.

    python benchmarks/bench_strategic.py            # n up to 2e4
    python benchmarks/bench_strategic.py --quick    # < 20 s
    python benchmarks/bench_strategic.py --gpu      # adds CUDA and n = 2e5
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import strategic as st  # noqa: E402
from lab.core.bench import Benchmark  # noqa: E402


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


def main() -> None:
    bench = Benchmark("strategic", __doc__)
    K = 720
    sizes = [500, 2000] if bench.quick else [500, 2000, 20_000]
    if bench.gpu:
        sizes.append(200_000)
    env = st.StrategicEnv(n_mc=1000)
    if bench.gpu:
        Xw, yw = env.sample(100, np.random.default_rng(0))
        st.erm01_halfspace(Xw, yw, n_dirs=8, backend="torch", device="cuda")  # warm-up
    for n in sizes:
        X, y = env.sample(n, np.random.default_rng(n))
        big = n > 2000
        kw = {"reps": bench.args.reps or (1 if big else 3), "warmup": 0 if big else 1}
        with bench.case(f"0-1 ERM scan, n = {n:,}, K = {K}", n=n, K=K) as case:
            w_ref, b_ref = case.time(
                "reference",
                "lab erm01_halfspace (numpy)",
                lambda X=X, y=y: st.erm01_halfspace(X, y, n_dirs=K, refine=False),
                **kw,
            )
            w_c, b_c = case.time(
                "fast",
                "lab erm01_halfspace (torch)",
                lambda X=X, y=y: st.erm01_halfspace(
                    X, y, n_dirs=K, refine=False, backend="torch", device="cpu"
                ),
                **kw,
            )
            case.metric(
                "torch_cpu_match",
                bool(np.allclose(w_c, w_ref, atol=1e-12) and abs(b_c - b_ref) < 1e-12),
            )
            if bench.gpu:
                w_g, b_g = case.time(
                    "fast",
                    "lab erm01_halfspace (torch)",
                    lambda X=X, y=y: st.erm01_halfspace(
                        X, y, n_dirs=K, refine=False, backend="torch", device="cuda"
                    ),
                    reps=3,
                    device="cuda",
                )
                case.metric(
                    "torch_cuda_match",
                    bool(np.allclose(w_g, w_ref, atol=1e-12) and abs(b_g - b_ref) < 1e-12),
                )
            if n <= 2000:
                w_l, b_l = case.time(
                    "peer",
                    "per-direction loop of erm01_1d",
                    lambda X=X, y=y: loop_peer(X, y, K),
                    **kw,
                )
                case.metric(
                    "loop_same_errors", errors(X, y, w_l, b_l) == errors(X, y, w_ref, b_ref)
                )
            for r in case.rows:
                r["agent_directions_per_s"] = n * K / r["seconds"]
    with bench.case("explore_fit_shift end to end, T = 2^15, default instance", T=2**15) as case:
        case.time(
            "fast",
            "lab explore_fit_shift",
            lambda: st.explore_fit_shift(st.StrategicEnv(), 2**15, seed=0),
            reps=1,
            warmup=0,
        )
    bench.finish()


if __name__ == "__main__":
    main()
