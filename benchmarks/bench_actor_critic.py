"""Single-timescale actor-critic: torch fast path vs the numpy reference, and the peers.

Runs the chapter's default random MDP (6 states, 3 actions, gamma = 0.9) with the paper's
schedule (eta_k = 0.1 k^-2/3, beta_k = k^-2/3) and reports run-iterations per second for

* ``lab.actor_critic.single_timescale_ac``: the numpy reference, vectorised over runs;
* ``lab.actor_critic.single_timescale_ac_torch``: batched torch (CPU, and CUDA with ``--gpu``),
  checked against the reference on the same injected uniforms;
* the peers: exact policy-gradient ascent (the perfect critic, same actor schedule) and value
  iteration against scipy's LP solver (HiGHS) for J*.

A markdown table is printed and the numbers go to ``benchmarks/results/actor_critic-<cpu|gpu>.json``.

    python benchmarks/bench_actor_critic.py            # CPU: K = 2e4
    python benchmarks/bench_actor_critic.py --quick    # CPU, < 20 s: K = 2000
    python benchmarks/bench_actor_critic.py --gpu      # adds CUDA with 4096 runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LAB_PROGRESS", "0")

from lab import actor_critic as ac  # noqa: E402

ACTOR, CRITIC = ac.StepSchedule(0.1, 2 / 3), ac.StepSchedule(1.0, 2 / 3)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def lp_optimum(mdp: ac.TabularMDP) -> np.ndarray:
    """The peer for J*: the primal LP min sum V s.t. V >= r + gamma P V (HiGHS)."""
    S, A = mdp.n_states, mdp.n_actions
    A_ub = mdp.gamma * mdp.P.reshape(S * A, S) - np.repeat(np.eye(S), A, axis=0)
    res = linprog(np.ones(S), A_ub=A_ub, b_ub=-mdp.R.reshape(-1), bounds=[(None, None)] * S)
    return res.x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--gpu", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    K = 2000 if args.quick else 20_000
    runs = 8
    mdp = ac.random_mdp(6, 3, 0.9, 0)
    u = np.random.default_rng(0).random((K, runs, 4))
    rows = []

    ref, t_ref = timed(lambda: ac.single_timescale_ac(mdp, K, ACTOR, CRITIC, runs, uniforms=u))
    rows.append(
        dict(
            method="single_timescale_ac (numpy reference)",
            device="cpu",
            runs=runs,
            K=K,
            seconds=t_ref,
            run_steps_per_s=runs * K / t_ref,
            final_gap=float(ref.gap[-1]),
            max_abs_diff_vs_ref=0.0,
        )
    )
    fast, t_fast = timed(
        lambda: ac.single_timescale_ac_torch(mdp, K, ACTOR, CRITIC, runs, uniforms=u, device="cpu")
    )
    rows.append(
        dict(
            method="single_timescale_ac_torch",
            device="cpu",
            runs=runs,
            K=K,
            seconds=t_fast,
            run_steps_per_s=runs * K / t_fast,
            final_gap=float(fast.gap[-1]),
            max_abs_diff_vs_ref=float(np.abs(fast.theta - ref.theta).max()),
        )
    )
    big = 64 if args.quick else 256
    wide, t_wide = timed(lambda: ac.single_timescale_ac(mdp, K, ACTOR, CRITIC, big, eval_points=20))
    rows.append(
        dict(
            method="single_timescale_ac (numpy reference)",
            device="cpu",
            runs=big,
            K=K,
            seconds=t_wide,
            run_steps_per_s=big * K / t_wide,
            final_gap=float(wide.gap[-1]),
            max_abs_diff_vs_ref=None,
        )
    )
    wide_t, t_wide_t = timed(
        lambda: ac.single_timescale_ac_torch(
            mdp, K, ACTOR, CRITIC, big, eval_points=20, device="cpu"
        )
    )
    rows.append(
        dict(
            method="single_timescale_ac_torch",
            device="cpu",
            runs=big,
            K=K,
            seconds=t_wide_t,
            run_steps_per_s=big * K / t_wide_t,
            final_gap=float(wide_t.gap[-1]),
            max_abs_diff_vs_ref=None,
        )
    )
    if args.gpu:
        if not torch.cuda.is_available():
            raise SystemExit("--gpu given but torch sees no CUDA device")
        uc = torch.as_tensor(u, device="cuda")
        gpu_small, _ = timed(
            lambda: ac.single_timescale_ac_torch(mdp, K, ACTOR, CRITIC, runs, uniforms=uc)
        )
        n = 4096
        gpu, t_gpu = timed(
            lambda: ac.single_timescale_ac_torch(
                mdp, K, ACTOR, CRITIC, n, eval_points=20, device="cuda"
            )
        )
        rows.append(
            dict(
                method="single_timescale_ac_torch",
                device=torch.cuda.get_device_name(),
                runs=n,
                K=K,
                seconds=t_gpu,
                run_steps_per_s=n * K / t_gpu,
                final_gap=float(gpu.gap[-1]),
                max_abs_diff_vs_ref=float(np.abs(gpu_small.theta - ref.theta).max()),
            )
        )
    pg, t_pg = timed(lambda: ac.exact_pg_ascent(mdp, K, ACTOR))
    rows.append(
        dict(
            method="exact_pg_ascent (perfect critic, peer)",
            device="cpu",
            runs=1,
            K=K,
            seconds=t_pg,
            run_steps_per_s=K / t_pg,
            final_gap=float(pg.gap[-1]),
            max_abs_diff_vs_ref=None,
        )
    )
    (V, _, _), t_vi = timed(lambda: ac.optimal_values(mdp))
    V_lp, t_lp = timed(lambda: lp_optimum(mdp))
    rows.append(
        dict(
            method="optimal_values (value iteration) vs scipy linprog",
            device="cpu",
            runs=1,
            K=None,
            seconds=t_vi,
            run_steps_per_s=None,
            final_gap=None,
            max_abs_diff_vs_ref=float(np.abs(V - V_lp).max()),
            lp_seconds=t_lp,
        )
    )

    print("| method | device | runs | K | seconds | run-steps/s | final gap | max diff |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = "" if r["run_steps_per_s"] is None else f"{r['run_steps_per_s']:.3g}"
        gap = "" if r["final_gap"] is None else f"{r['final_gap']:.3f}"
        diff = "" if r["max_abs_diff_vs_ref"] is None else f"{r['max_abs_diff_vs_ref']:.1e}"
        print(
            f"| {r['method']} | {r['device']} | {r['runs']} | {r['K']} | {r['seconds']:.3f} "
            f"| {rate} | {gap} | {diff} |"
        )
    out = {
        "benchmark": "actor_critic: single_timescale_ac_torch vs single_timescale_ac",
        "quick": args.quick,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name() if args.gpu else None,
        "rows": rows,
    }
    path = Path(__file__).parent / "results" / f"actor_critic-{'gpu' if args.gpu else 'cpu'}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
