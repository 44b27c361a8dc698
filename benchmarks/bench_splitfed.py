"""MU-SplitFed: the batched fast path vs the reference loop, time to a target, stability, memory.

Cases:

0. ``lab.splitfed.fast.simulate`` (timed as ``simulate_vectorized``; batched matmul backend, and
   the ``torch.func.vmap`` backend) against
   the reference loop ``simulate``: the same rounds (digits MLP 64-32-32-10 cut after block 1,
   M = 10, P = 5, B = 32), timed per run; the max parameter difference in float64 is reported.
1. Whole runs of 800 rounds with exponential straggler delays (mean 2 client forwards; server
   step = 0.1): rounds and simulated time to training loss 1.0, final loss and accuracy, for
   vanilla ZO SplitFed (tau = 1), MU-SplitFed (tau = 4; adaptive tau with the server step
   coupled as ``eta_s / sqrt(tau)``, the default; adaptive tau at a fixed server step, the
   configuration of issue 17 that diverged), and a first-order FedAvg peer (one local SGD step of the full MLP per round,
   lr 0.1, same participants and batches; its clock counts a forward+backward as 2 client
   forwards).
2. Peak memory of one client update (``client_memory``): the zeroth-order split client, a
   first-order client of the same half, and FedAvg's client (the whole model, its own loss; the
   paper's Fig. 4 baseline), for the chapter's model and a 64-256-256-256-10 model cut after
   block 1 and block 3 (CPU tensor tracker; CUDA memory stats with ``--gpu``).
3. (not with ``--quick``) The same configuration as case 1 for 2000 rounds: adaptive tau and
   tau = 4, each coupled and at a fixed server step (issue 29: fixed tau = 4 degrades late).
4. ``--gpu``: the fast path on CUDA with 100 clients.

    python benchmarks/bench_splitfed.py            # CPU
    python benchmarks/bench_splitfed.py --quick    # CPU, < 30 s
    python benchmarks/bench_splitfed.py --gpu
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = dict(eta_s=0.02, eta_c=0.01, eta_g=1.0, lam=5e-3, batch=32)
TARGET = 1.0


def main() -> None:
    import torch

    from lab import splitfed as sf
    from lab.tooling.bench import Benchmark

    bench = Benchmark("splitfed", __doc__)
    quick = bench.quick
    data = sf.load_digits_clients(10, seed=0)
    c, s = sf.split_model(sf.make_mlp((64, 32, 32, 10), seed=0), 1)

    rounds = 20 if quick else 100
    with bench.case(
        f"{rounds} rounds, tau = 4, M = 10, P = 5", target="fast path >= 3x the reference loop",
        rounds=rounds, tau=4, clients=10, participants=5,
    ) as case:  # fmt: skip
        cfg = sf.MUSplitFedConfig(tau=4, rounds=rounds, **STEPS)
        ref = case.time(
            "reference", "simulate (loop)", lambda: sf.simulate(c, s, data["clients"], cfg), reps=1
        )
        fast = case.time(
            "fast", "simulate_vectorized (bmm)",
            lambda: sf.fast.simulate(c, s, data["clients"], cfg, device="cpu", backend="bmm"),
        )  # fmt: skip
        case.time(
            "fast", "simulate_vectorized (vmap)",
            lambda: sf.fast.simulate(c, s, data["clients"], cfg, device="cpu", backend="vmap"),
            reps=1,
        )  # fmt: skip
        case.metric("max_abs_diff_float32", float((ref.xc - fast.xc).abs().max()))
        c64 = cfg.replace(dtype="float64", rounds=10)
        a = sf.simulate(c, s, data["clients"], c64)
        b = sf.fast.simulate(c, s, data["clients"], c64, device="cpu")
        case.metric("max_abs_diff_float64_10_rounds", float((a.xc - b.xc).abs().max()))

    T = 300 if quick else 800
    delay = 2.0
    ev = sf.evaluator(c, s, data["train"], data["test"])

    def whole_run(case, role, name, **kw):
        t0 = time.perf_counter()
        cfg = sf.MUSplitFedConfig(**{**base, **kw})
        h = sf.fast.simulate(c, s, data["clients"], cfg, ev, device="cpu")
        r, clock = sf.rounds_to_target(h, TARGET)
        case.record(
            role, name, seconds=time.perf_counter() - t0, rounds_to_target=r,
            sim_time_to_target=clock, final_loss=h.loss[-1], final_acc=h.acc[-1],
            best_loss=float(np.nanmin(h.loss)), mean_tau=float(np.mean(h.tau)),
        )  # fmt: skip

    base = dict(rounds=T, eval_every=10, delay_mean=delay, **STEPS)
    with bench.case(
        f"{T} rounds, delay mean {delay}: time to loss {TARGET} and final loss",
        target="adaptive tau stable and sooner than vanilla", rounds=T,
        delay_mean=delay,
    ) as case:  # fmt: skip
        whole_run(case, "reference", "vanilla ZO SplitFed (tau = 1)", tau=1)
        whole_run(case, "fast", "MU-SplitFed tau = 4", tau=4)
        whole_run(case, "fast", "MU-SplitFed adaptive tau", tau=1, adaptive_tau=True)
        whole_run(
            case, "fast", "adaptive tau at a fixed step", tau=1, adaptive_tau=True, coupling="fixed"
        )
        t0 = time.perf_counter()
        r_fo, l_fo = sf.fedavg_first_order(data, sf.MUSplitFedConfig(**base))
        hit = [r for r, v in zip(r_fo, l_fo, strict=True) if v <= TARGET]
        sm = sf.StragglerModel(delay, seed=0, t_client=2.0, t_server=1e-9)
        clock = np.cumsum([sm.round_time(sm.sample(t, 10)[:5], 1)["time"] for t in range(T)])
        case.record(
            "peer", "first-order FedAvg (1 SGD step, lr 0.1)", seconds=time.perf_counter() - t0,
            rounds_to_target=hit[0] if hit else None,
            sim_time_to_target=float(clock[hit[0] - 1]) if hit else None, final_loss=l_fo[-1],
        )  # fmt: skip

    with bench.case(
        "peak client memory of one update: zeroth-order split client vs FedAvg",
        target="zeroth-order peak <= 0.5x FedAvg's (paper Fig. 4: 0.13)", batch=32,
    ) as case:  # fmt: skip
        X, y = data["train"][0][:32], data["train"][1][:32]
        models = {
            "chapter model 64-32-32-10, cut 1": (sf.make_mlp((64, 32, 32, 10), seed=0), 1),
            "64-256-256-256-10, cut 1": (sf.make_mlp((64, 256, 256, 256, 10), seed=0), 1),
            "64-256-256-256-10, cut 3": (sf.make_mlp((64, 256, 256, 256, 10), seed=0), 3),
        }
        devices = ["cpu"] + (["cuda"] if bench.gpu and torch.cuda.is_available() else [])
        for dev in devices:
            for label, (whole, cut) in models.items():
                half, _ = sf.split_model(whole, cut)
                zo = sf.client_memory(half, X, mode="zo", device=dev)
                fo = sf.client_memory(half, X, mode="fo", device=dev)
                fedavg = sf.client_memory(whole, X, mode="fo", y=y, device=dev)
                case.record(
                    "fast", f"{label} ({dev})", device=dev, zo_peak_bytes=zo["peak_bytes"],
                    fo_peak_bytes=fo["peak_bytes"], fedavg_peak_bytes=fedavg["peak_bytes"],
                    param_bytes=zo["param_bytes"],
                    zo_over_fedavg=zo["peak_bytes"] / fedavg["peak_bytes"],
                    fo_over_fedavg=fo["peak_bytes"] / fedavg["peak_bytes"], method=zo["method"],
                )  # fmt: skip

    if not quick:
        base = dict(rounds=2000, eval_every=50, delay_mean=delay, **STEPS)
        with bench.case(
            f"2000 rounds, delay mean {delay}", target="adaptive tau stable over 2000 rounds",
            rounds=2000, delay_mean=delay,
        ) as case:  # fmt: skip
            whole_run(case, "fast", "MU-SplitFed adaptive tau", tau=1, adaptive_tau=True)
            whole_run(
                case, "reference", "adaptive tau at a fixed step", tau=1, adaptive_tau=True,
                coupling="fixed",
            )  # fmt: skip
            whole_run(case, "peer", "MU-SplitFed tau = 4", tau=4)
            whole_run(case, "peer", "tau = 4 at a fixed step", tau=4, coupling="fixed")

    if bench.gpu and torch.cuda.is_available():
        many = sf.load_digits_clients(100, seed=0)
        with bench.case("GPU: 100 clients, P = 50, tau = 8, 200 rounds", clients=100) as case:
            cfg = sf.MUSplitFedConfig(tau=8, rounds=200, clients=100, **STEPS)
            case.time(
                "fast", "simulate_vectorized (cuda)",
                lambda: sf.fast.simulate(c, s, many["clients"], cfg, device="cuda"),
                device="cuda", reps=1,
            )  # fmt: skip
            small = cfg.replace(rounds=20)
            case.time(
                "reference",
                "simulate (cpu loop, 20 rounds)",
                lambda: sf.simulate(c, s, many["clients"], small),
                reps=1,
            )
    bench.finish()


if __name__ == "__main__":
    main()
