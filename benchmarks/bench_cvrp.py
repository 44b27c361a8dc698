"""Tiny POMO (``lab.cvrp``) vs the numpy reference rollout and vs PyVRP at equal time.

Cases:

* greedy POMO rollouts, ``n = 20``: the batched torch fast path (all starts of a batch in one
  call) vs ``greedy_rollout_ref`` (numpy float64, one rollout at a time); time per rollout.
* quality at equal time: the shipped VCT checkpoint (greedy POMO with x8 augmentation) vs
  PyVRP given the same wall time per instance, and PyVRP at 0.1 s; gaps measured against
  PyVRP with 1 s per instance, at C = 10, 50 and 200.

    python benchmarks/bench_cvrp.py            # CPU: 32 instances per capacity
    python benchmarks/bench_cvrp.py --quick    # CPU, < 20 s: 6 instances, C = 50 only
    python benchmarks/bench_cvrp.py --gpu      # adds a CUDA row for the batched rollouts
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.tooling.bench import Benchmark  # noqa: E402


def main() -> None:
    import torch

    from lab import cvrp

    bench = Benchmark("cvrp", __doc__)
    quick = bench.quick
    n = 20
    B = 8 if quick else 64
    model = cvrp.load_checkpoint("cvrp20_vct")
    b = cvrp.generate_cvrp(B, n, 50, seed=0)
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    with bench.case(
        f"greedy POMO rollouts, n = {n}, {B} instances x {n} starts",
        target=">= 50x per rollout vs numpy reference",
        n=n,
        batch=B,
    ) as case:

        def fast():
            with torch.no_grad():
                return model(b, greedy=True)[0]

        L = case.time("fast", "TinyPOMO batched (torch, all starts)", fast, reps=3)
        k = 4 if quick else 16
        t0 = time.perf_counter()
        ref = [
            cvrp.greedy_rollout_ref(
                sd, model.config, b.xy[i].numpy(), b.demand[i].numpy(), 50.0, 1
            )[1]
            for i in range(k)
        ]
        t_ref = (time.perf_counter() - t0) / k * (B * n)
        case.record(
            "reference",
            f"greedy_rollout_ref (numpy, {k} rollouts, scaled to {B * n})",
            seconds=t_ref,
        )
        case.metric(
            "max_abs_length_diff", float(np.max(np.abs(np.array(ref) - L[:k, 0].double().numpy())))
        )
        if bench.gpu:
            mg, bg = model.to("cuda"), b.to("cuda")

            def gpu():
                with torch.no_grad():
                    return mg(bg, greedy=True)[0]

            case.time("fast", "TinyPOMO batched (torch, CUDA)", gpu, device="cuda", reps=3)
            model.to("cpu")

    caps = (50,) if quick else (10, 50, 200)
    inst = 6 if quick else 32
    long_s = 0.2 if quick else 1.0
    for c in caps:
        bc = cvrp.generate_cvrp(inst, n, c, seed=1)
        with bench.case(
            f"quality at equal time, n = {n}, C = {c}, {inst} instances",
            target="gap vs PyVRP at equal time per instance",
            n=n,
            capacity=c,
            instances=inst,
        ) as case:
            best = cvrp.reference_costs(bc, long_s)
            t0 = time.perf_counter()
            L = cvrp.evaluate(model, bc, augment=True).double().numpy()
            t_model = (time.perf_counter() - t0) / inst
            case.record(
                "fast",
                "TinyPOMO VCT, POMO x8 aug",
                seconds=t_model,
                gap_pct=float(100 * (L / best - 1).mean()),
            )
            for s, label in ((t_model, "PyVRP, same time"), (0.1, "PyVRP 0.1 s")):
                t0 = time.perf_counter()
                P = cvrp.reference_costs(bc, max(s, 1e-3))
                wall = (time.perf_counter() - t0) / inst
                case.record(
                    "peer",
                    label,
                    seconds=wall,
                    gap_pct=float(100 * (P / best - 1).mean()),
                    budget_s=s,
                )
            case.metric("reference", f"PyVRP {long_s:g} s per instance")
    bench.finish()


if __name__ == "__main__":
    main()
