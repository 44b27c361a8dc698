"""Tiny POMO (``lab.cvrp``): fast path vs reference, gap to PyVRP across capacities, and the
PyVRP time needed for the same gap.

Cases:

0. greedy POMO rollouts, ``n = 20``: the batched torch fast path (all starts of a batch in one
   call) vs ``reference.greedy_rollout`` (numpy float64, one rollout at a time); time per rollout.
1. the shipped models' gap (%) to PyVRP at each capacity, mean over training seeds (rows named
   by checkpoint; fields ``gap_C<c>``, ``average``, ``seeds``), greedy POMO with 20 starts,
   against the cached PyVRP reference (0.2 s per instance, 32 instances per capacity).
2.. one case per capacity: time per instance of the VCT + MEM model (seed 0; batched greedy
   POMO with x8 augmentation) and its gap, vs the PyVRP time needed for the same gap (the
   smallest of a ladder of time budgets whose mean gap is no larger; its measured wall time
   per instance).

    python benchmarks/bench_cvrp.py            # CPU: every model, C = 10, 50, 200
    python benchmarks/bench_cvrp.py --quick    # CPU, < 20 s: seed-0 models, C = 50 only
    python benchmarks/bench_cvrp.py --gpu      # adds a CUDA row for the batched rollouts
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.tooling.bench import Benchmark  # noqa: E402

#: PyVRP time budgets tried (seconds per instance) when matching the model's gap
LADDER = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


def main() -> None:
    import torch

    from lab import cvrp
    from lab.cvrp import reference

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
            reference.greedy_rollout(
                sd, model.config, b.xy[i].numpy(), b.demand[i].numpy(), 50.0, 1
            )[1]
            for i in range(k)
        ]
        t_ref = (time.perf_counter() - t0) / k * (B * n)
        case.record(
            "reference",
            f"reference.greedy_rollout (numpy, {k} rollouts, scaled to {B * n})",
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

    # 1. gap across capacities, per model (mean over training seeds)
    caps = (10, 200) if quick else cvrp.CAPACITIES
    inst = cvrp.REFERENCE_SETTINGS["instances"]
    ref = cvrp.reference_lengths(cvrp.GapSettings(caps, instances=inst))
    keys = [k for k in cvrp.checkpoint_keys(available=True) if not quick or k[1] == 0]
    models = {f"{k}-seed{s}": cvrp.load_checkpoint(k, s) for k, s in keys}
    with bench.case(
        f"gap to PyVRP across capacities, n = {n}, {inst} instances per C",
        target="the paper's Table 2 / Table 4 curves at our size (mean over training seeds)",
        n=n,
        instances=inst,
        capacities=list(caps),
    ) as case:
        t0 = time.perf_counter()
        gt = cvrp.gap_table(models, cvrp.GapSettings(caps, instances=inst), reference=ref)
        t_all = time.perf_counter() - t0
        for name in dict.fromkeys(k for k, _ in keys):
            g = cvrp.seed_gaps(gt, name)
            m = g.mean(axis=0)
            case.record(
                "fast",
                name,
                seeds=len(g),
                average=float(m.mean()),
                **{f"gap_C{c:g}": float(x) for c, x in zip(caps, m, strict=True)},
            )
        case.metric("seconds_all_models", t_all)
        case.metric("feasible", bool(gt["feasible"]))

    # 2.. the PyVRP time needed for the model's gap
    mem = cvrp.load_checkpoint("cvrp20_vct_mem3", 0)
    inst2 = 8 if quick else inst
    for c in (50,) if quick else (10, 50, 200):
        bc = cvrp.generate_cvrp(inst, n, c, seed=1234).subset(list(range(inst2)))
        best = cvrp.reference_lengths(cvrp.GapSettings((c,), instances=inst))[0][:inst2]
        with bench.case(
            f"PyVRP time for the same gap, n = {n}, C = {c}, {inst2} instances",
            target="time per instance: batched greedy + x8 augmentation vs PyVRP at the same gap",
            n=n,
            capacity=c,
            instances=inst2,
        ) as case:
            cvrp.evaluate(mem, bc.subset([0]), augment=True)  # warm-up
            t0 = time.perf_counter()
            L = cvrp.evaluate(mem, bc, augment=True).double().numpy()
            t_model = (time.perf_counter() - t0) / inst2
            gap = float(100 * (L / best - 1).mean())
            case.record("fast", "VCT + MEM seed 0, POMO x8 aug (batched)", t_model, gap_pct=gap)
            matched = None
            for s in LADDER:
                t0 = time.perf_counter()
                P = cvrp.reference_costs(bc, s)
                wall = (time.perf_counter() - t0) / inst2
                g = float(100 * (P / best - 1).mean())
                if g <= gap:
                    matched = (s, wall, g)
                    break
            if matched is not None:
                case.record(
                    "peer",
                    "PyVRP, least budget reaching the model's gap",
                    matched[1],
                    gap_pct=matched[2],
                    budget_s=matched[0],
                )
            case.metric("matched", matched is not None)
            case.metric("reference", "cached PyVRP, 0.2 s per instance")
    bench.finish()


if __name__ == "__main__":
    main()
