"""Strategic Massart: Algorithm 1 batched over seeds (torch) vs the numpy reference loop.

The paper's algorithm is sequential in the cycles, so the fast path batches the independent
runs (seeds): one case per (T, S), the default instance (d = 2, gamma = 0.2, eta = 0.2).

* reference: ``lab.strategic.strategic_massart_learner``, numpy, one run cycle by cycle, run for
  every seed in a Python loop (at most three seeds timed; the time scales with S and is
  extrapolated, recorded as ``seeds_timed``);
* fast: ``lab.strategic.strategic_massart_many`` (torch, CPU; CUDA with ``--gpu``), all seeds
  at once;
* no peer: no library implements strategic classification with this feedback model.

Check: the fast path's per-cycle regret equals the reference's on the same draws (max abs
difference over the timed seeds).

    python benchmarks/bench_strategic.py            # T = 5,000, S = 30
    python benchmarks/bench_strategic.py --quick    # < 20 s: T = 2,000, S = 8
    python benchmarks/bench_strategic.py --gpu      # adds CUDA and the paper's T = 50,000 x 30
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import strategic as st  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def main() -> None:
    bench = Benchmark("strategic", __doc__)
    env = st.StrategicMassart(d=2, gamma=0.2, eta=0.2)
    sizes = [(2_000, 8)] if bench.quick else [(2_000, 8), (5_000, 30)]
    if bench.gpu:
        sizes.append((50_000, 30))
    for T, S in sizes:
        draws = st.draw_streams(T, env.d, range(S))
        timed = min(S, 3)
        with bench.case(f"Algorithm 1, T = {T:,}, S = {S} seeds", T=T, S=S) as case:
            refs = case.time(
                "reference",
                f"lab strategic_massart_learner (numpy), {timed} seeds",
                lambda draws=draws, T=T, timed=timed: [
                    st.strategic_massart_learner(env, T, draws=tuple(a[i] for a in draws))
                    for i in range(timed)
                ],
                reps=1,
                warmup=0,
                seeds_timed=timed,
            )
            case.rows[-1]["seconds"] *= S / timed  # the loop over all S seeds
            fast = case.time(
                "fast",
                "lab strategic_massart_many (torch)",
                lambda draws=draws, T=T: st.strategic_massart_many(
                    env, T, draws=draws, device="cpu"
                ),
                reps=1,
                warmup=0,
            )
            case.metric(
                "max_abs_regret_diff",
                float(max(np.abs(fast.regret[i] - r.regret).max() for i, r in enumerate(refs))),
            )
            if bench.gpu:
                gpu = case.time(
                    "fast",
                    "lab strategic_massart_many (torch)",
                    lambda draws=draws, T=T: st.strategic_massart_many(
                        env, T, draws=draws, device="cuda"
                    ),
                    reps=1,
                    warmup=1,
                    device="cuda",
                )
                case.metric(
                    "cuda_max_abs_regret_diff", float(np.abs(gpu.regret - fast.regret).max())
                )
            for r in case.rows:
                r["cycles_per_s"] = T * S / r["seconds"]
    bench.finish()


if __name__ == "__main__":
    main()
