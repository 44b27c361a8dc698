"""SPOT-style tree policies: time to equal value against the OMDT MILP (HiGHS), and RSBB.

Two kinds of cases:

* **time to equal value** (the paper's "order of magnitude faster"): the SPOT-style loop
  (``lab.spot.spot``, default ``"optimal"`` weights; the ``"portfolio"`` of four weightings
  is a second row) against the monolithic OMDT
  MILP (``lab.spot.omdt_milp``, HiGHS via scipy) run with a ladder of time limits; the MILP's
  time is the first limit at which its incumbent reaches the loop's value (a lower bound, the
  largest limit, when it never does). 16-state lake (depth 2, 3) and 64-state lake 8x8 and
  sysadmin 6 (depth 2, 3). Target: >= 10x at 64 states.
* **improvement step**: ``rsbb`` (numpy reference kernel, and the batched torch bound as the
  fast path) against the subproblem MILP (``improvement_milp``) on ``G = w* Q*``.

    python benchmarks/bench_spot.py            # CPU, MILP ladder up to 32 s
    python benchmarks/bench_spot.py --quick    # CPU, < 20 s: ladder (0.5, 1) s, 16-state only
    python benchmarks/bench_spot.py --gpu      # adds the torch bound on CUDA
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import spot  # noqa: E402
from lab.spot import experiments  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def main() -> None:
    bench = Benchmark("spot", __doc__)
    ladder = (0.5, 1.0) if bench.quick else (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    instances = [("lake 4x4", 2), ("lake 4x4", 3)]
    if not bench.quick:
        instances += [("lake 8x8", 2), ("lake 8x8", 3), ("sysadmin 6", 2), ("sysadmin 6", 3)]
    for name, depth in instances:
        mdp = experiments.make_mdp(name)
        with bench.case(
            f"time to equal value, {name}, depth {depth}",
            target=">= 10x vs OMDT MILP at 64 states",
            states=mdp.n_states,
            actions=mdp.n_actions,
            depth=depth,
        ) as case:
            res = case.time(
                "fast",
                "SPOT-style loop (default weights, numpy)",
                lambda mdp=mdp, depth=depth: spot.spot(mdp, depth),
                reps=1,
            )
            case.rows[-1]["value"] = res.J
            port = spot.spot(mdp, depth, "portfolio")  # the four weightings, best kept
            case.metric("portfolio_value", port.J)
            case.metric("portfolio_seconds", port.seconds)
            reached, spent, best, proven = None, 0.0, -np.inf, False
            for limit in ladder:
                r = spot.omdt_milp(mdp, depth, time_limit=limit)
                spent += r.seconds
                val = r.value if np.isfinite(r.value) else -np.inf
                best = max(best, val)
                if val >= res.J - 1e-6 * max(1.0, abs(res.J)):
                    reached = r.seconds
                    proven = r.optimal
                    break
                if r.optimal:  # proven optimum below the loop's value: cannot happen
                    proven = True
                    break
            case.record(
                "peer",
                "OMDT MILP (HiGHS)",
                seconds=reached if reached is not None else max(ladder),
                value=None if not np.isfinite(best) else best,
                reached=reached is not None,
                proven_optimal=proven,
                ladder_seconds_spent=spent,
            )
            case.metric("spot_value", res.J)
            case.metric("milp_best_value", None if not np.isfinite(best) else best)
            case.metric("milp_reached_spot_value", reached is not None)
            case.metric("spot_iterations", res.iterations)

    if not bench.quick:
        admin = spot.sysadmin(6)
        with bench.case(
            "depth-2 stall, sysadmin 6: exhaustive certificate",
            target="(failure case)",
            states=64,
            depth=2,
        ) as case:
            J_opt, _ = case.time(
                "reference",
                "exhaustive_tree (batched enumeration)",
                lambda: spot.exhaustive_tree(admin, 2),
                reps=1,
                warmup=0,
            )
            loop = spot.spot(admin, 2, "portfolio")
            case.metric("optimal_depth2_value", J_opt)
            case.metric("spot_value", loop.J)

    sub = [("lake 4x4", 2), ("lake 4x4", 3), ("lake 6x6", 3), ("lake 8x8", 3), ("sysadmin 6", 3)]
    if bench.quick:
        sub = sub[:2]
    highs_limit = 5.0 if bench.quick else 30.0
    for name, depth in sub:
        G, X, _, _ = experiments.bnb_problem(name, depth)
        with bench.case(
            f"improvement step, {name}, depth {depth}",
            target="RSBB certifies in ms; HiGHS seconds or capped",
            states=G.shape[0],
            depth=depth,
        ) as case:
            v_ref, _, st = case.time(
                "reference", "rsbb (numpy bound)", lambda G=G, X=X, d=depth: spot.rsbb(G, X, d)
            )
            v_fast, _, _ = case.time(
                "fast",
                "rsbb (torch batched bound, cpu)",
                lambda G=G, X=X, d=depth: spot.rsbb(G, X, d, backend="torch", device="cpu"),
            )
            h = spot.improvement_milp(G, X, depth, time_limit=highs_limit)
            case.record(
                "peer",
                "improvement MILP (HiGHS)",
                seconds=h.seconds,
                value=h.value,
                proven_optimal=h.optimal,
            )
            case.metric("rsbb_value", v_ref)
            case.metric("torch_minus_numpy", abs(v_fast - v_ref))
            case.metric("rsbb_nodes", st.nodes)
            case.metric("highs_gap_to_rsbb", v_ref - h.value)
            if bench.gpu:
                case.time(
                    "fast",
                    "rsbb (torch batched bound, cuda)",
                    lambda G=G, X=X, d=depth: spot.rsbb(G, X, d, backend="torch", device="cuda"),
                    device="cuda",
                )
    bench.finish()


if __name__ == "__main__":
    main()
