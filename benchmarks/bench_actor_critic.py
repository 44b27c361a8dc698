"""Single-timescale actor-critic: torch fast path vs the numpy reference, and the peers.

Runs the chapter's default random MDP (6 states, 3 actions, gamma = 0.9) with the paper's
schedule (eta_k = 0.1 k^-2/3, beta_k = k^-2/3) for K iterations. Cases (each path timed once,
the runs are long):

* 8 runs on the same injected uniforms: reference ``lab.actor_critic.single_timescale_ac``
  (numpy, vectorised over runs), fast ``lab.actor_critic.fast.single_timescale_ac`` (timed as
  ``single_timescale_ac_torch``), checked to agree (max
  abs diff of theta); peer: exact policy-gradient ascent (the perfect critic, same actor
  schedule; one run timed, scaled to 8 runs);
* 256 runs (64 with ``--quick``), 20 evaluation points: reference vs fast;
* J*: lab's value iteration ``optimal_values`` vs scipy's LP solver (HiGHS), the peer;
* with ``--gpu``: 4096 runs on CUDA (reference extrapolated from the 256-run numpy rate).

    python benchmarks/bench_actor_critic.py            # CPU: K = 2e4
    python benchmarks/bench_actor_critic.py --quick    # CPU, < 20 s: K = 2000
    python benchmarks/bench_actor_critic.py --gpu      # adds CUDA with 4096 runs
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LAB_PROGRESS", "0")

from lab import actor_critic as ac  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

ACTOR, CRITIC = ac.StepSchedule(0.1, 2 / 3), ac.StepSchedule(1.0, 2 / 3)
ONCE = {"reps": 1, "warmup": 0}


def lp_optimum(mdp: ac.TabularMDP) -> np.ndarray:
    """The peer for J*: the primal LP min sum V s.t. V >= r + gamma P V (HiGHS)."""
    S, A = mdp.n_states, mdp.n_actions
    A_ub = mdp.gamma * mdp.P.reshape(S * A, S) - np.repeat(np.eye(S), A, axis=0)
    res = linprog(np.ones(S), A_ub=A_ub, b_ub=-mdp.R.reshape(-1), bounds=[(None, None)] * S)
    return res.x


def main() -> None:
    bench = Benchmark("actor_critic", __doc__)
    K = 2000 if bench.quick else 20_000
    runs = 8
    mdp = ac.random_mdp(6, 3, 0.9, 0)
    u = np.random.default_rng(0).random((K, runs, 4))

    with bench.case(f"{runs} runs, K = {K:,}, shared uniforms", runs=runs, K=K) as case:
        ref = case.time(
            "reference",
            "single_timescale_ac (numpy)",
            lambda: ac.single_timescale_ac(mdp, K, ACTOR, CRITIC, runs, uniforms=u),
            **ONCE,
        )
        fast = case.time(
            "fast",
            "single_timescale_ac_torch",
            lambda: ac.fast.single_timescale_ac(
                mdp, K, ACTOR, CRITIC, runs, uniforms=u, device="cpu"
            ),
            **ONCE,
        )
        pg = case.time(
            "peer",
            "exact_pg_ascent (perfect critic)",
            lambda: ac.exact_pg_ascent(mdp, K, ACTOR),
            **ONCE,
        )
        # exact_pg_ascent is one run: scale its time to the case's runs
        case.rows[-1]["seconds"] *= runs
        case.rows[-1]["seconds_min"] *= runs
        case.rows[-1]["note"] = f"one run timed once, time x {runs}"
        case.metric(
            "max_abs_diff_theta_fast_vs_reference", float(np.abs(fast.theta - ref.theta).max())
        )
        case.metric("reference_final_gap", float(ref.gap[-1]))
        case.metric("fast_final_gap", float(fast.gap[-1]))
        case.metric("peer_final_gap", float(pg.gap[-1]))

    big = 64 if bench.quick else 256
    with bench.case(f"{big} runs, K = {K:,}", runs=big, K=K, eval_points=20) as case:
        wide = case.time(
            "reference",
            "single_timescale_ac (numpy)",
            lambda: ac.single_timescale_ac(mdp, K, ACTOR, CRITIC, big, eval_points=20),
            **ONCE,
        )
        t_wide = case.rows[-1]["seconds"]
        wide_t = case.time(
            "fast",
            "single_timescale_ac_torch",
            lambda: ac.fast.single_timescale_ac(
                mdp, K, ACTOR, CRITIC, big, eval_points=20, device="cpu"
            ),
            **ONCE,
        )
        case.metric("reference_final_gap", float(wide.gap[-1]))
        case.metric("fast_final_gap", float(wide_t.gap[-1]))

    with bench.case("J* of the MDP", states=6, actions=3) as case:
        V, _, _ = case.time(
            "fast", "optimal_values (value iteration)", lambda: ac.optimal_values(mdp)
        )
        V_lp = case.time("peer", "scipy linprog (HiGHS)", lambda: lp_optimum(mdp))
        case.metric("max_abs_diff", float(np.abs(V - V_lp).max()))

    if bench.gpu:
        n = 4096
        with bench.case(f"{n} runs, K = {K:,} (CUDA)", runs=n, K=K, eval_points=20) as case:
            case.record(
                "reference",
                "single_timescale_ac (numpy)",
                seconds=t_wide * n / big,
                note=f"extrapolated from the {big}-run CPU case",
            )
            uc = torch.as_tensor(u, device="cuda")
            small = ac.fast.single_timescale_ac(mdp, K, ACTOR, CRITIC, runs, uniforms=uc)
            gpu = case.time(
                "fast",
                "single_timescale_ac_torch",
                lambda: ac.fast.single_timescale_ac(
                    mdp, K, ACTOR, CRITIC, n, eval_points=20, device="cuda"
                ),
                device="cuda",
                **ONCE,
            )
            case.metric("fast_final_gap", float(gpu.gap[-1]))
            case.metric(
                "max_abs_diff_theta_vs_reference_8_runs",
                float(np.abs(np.asarray(small.theta) - ref.theta).max()),
            )
    bench.finish()


if __name__ == "__main__":
    main()
