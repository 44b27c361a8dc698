"""MU-SplitFed: the batched fast path vs the reference loop, and rounds/time to a target loss.

Cases:

* ``simulate_vectorized`` (batched matmul backend, and the ``torch.func.vmap`` backend) against
  the reference loop ``simulate``: the same rounds (digits MLP 64-32-32-10 cut after block 1,
  M = 10, P = 5, B = 32), timed per run; the max parameter difference in float64 is reported.
* Rounds and simulated time (exponential straggler delays, mean 2 client forwards; server
  step = 0.1) to training loss 2.1: MU-SplitFed (tau = 4, and adaptive tau) against vanilla
  ZO SplitFed (tau = 1) and a first-order FedAvg peer (one local SGD step of the full MLP per
  round, lr 0.1, same participants and batches; its clock counts a forward+backward as 2
  client forwards).
* ``--gpu``: the fast path on CUDA with 100 clients.

    python benchmarks/bench_splitfed.py            # CPU
    python benchmarks/bench_splitfed.py --quick    # CPU, < 20 s
    python benchmarks/bench_splitfed.py --gpu
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = dict(eta_s=0.02, eta_c=0.01, eta_g=1.0, lam=5e-3, batch=32)
TARGET = 2.1


def fedavg_first_order(data, cfg, lr=0.1, seed=0):
    """First-order FedAvg peer: each participant takes one SGD step on its batch; average."""
    import torch

    from lab import splitfed as sf
    from lab.splitfed import algorithm as alg

    model = sf.make_mlp((64, 32, 32, 10), seed=seed)
    flat = alg._Flat(model)
    x = flat.init(torch.float32)
    Xtr, ytr = data["train"]
    rounds, losses = [], []
    for t in range(cfg.rounds):
        part = alg._participants(cfg, t)
        new = []
        for m in part:
            X, y = data["clients"][m]
            idx = torch.as_tensor(alg._batch(cfg, t, m, len(y)))
            w = x.clone().requires_grad_(True)
            loss = alg._loss(flat(w, X[idx]), y[idx])
            (g,) = torch.autograd.grad(loss, w)
            new.append(x - lr * g)
        x = torch.stack(new).mean(0)
        if (t + 1) % cfg.eval_every == 0:
            with torch.no_grad():
                losses.append(float(alg._loss(flat(x, Xtr), ytr)))
            rounds.append(t + 1)
    return rounds, losses


def main() -> None:
    import torch

    from lab import splitfed as sf
    from lab.core.bench import Benchmark

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
            lambda: sf.simulate_vectorized(c, s, data["clients"], cfg, device="cpu", backend="bmm"),
        )  # fmt: skip
        case.time(
            "fast", "simulate_vectorized (vmap)",
            lambda: sf.simulate_vectorized(c, s, data["clients"], cfg, device="cpu", backend="vmap"),
            reps=1,
        )  # fmt: skip
        case.metric("max_abs_diff_float32", float((ref.xc - fast.xc).abs().max()))
        c64 = cfg.replace(dtype="float64", rounds=10)
        a = sf.simulate(c, s, data["clients"], c64)
        b = sf.simulate_vectorized(c, s, data["clients"], c64, device="cpu")
        case.metric("max_abs_diff_float64_10_rounds", float((a.xc - b.xc).abs().max()))

    T = 300 if quick else 800
    delay = 2.0
    with bench.case(
        f"rounds / simulated time to loss {TARGET}, delay mean {delay}",
        target="tau = 4 needs <= 0.6x the rounds of tau = 1", rounds=T, delay_mean=delay,
    ) as case:  # fmt: skip
        ev = sf.evaluator(c, s, data["train"], data["test"])
        base = dict(rounds=T, eval_every=10, delay_mean=delay, **STEPS)
        for role, name, kw in [
            ("reference", "vanilla ZO SplitFed (tau = 1)", dict(tau=1)),
            ("fast", "MU-SplitFed tau = 4", dict(tau=4)),
            ("fast", "MU-SplitFed adaptive tau", dict(tau=1, adaptive_tau=True)),
        ]:
            t0 = time.perf_counter()
            h = sf.simulate_vectorized(
                c, s, data["clients"], sf.MUSplitFedConfig(**base, **kw), ev, device="cpu"
            )
            r, clock = sf.rounds_to_target(h, TARGET)
            case.record(
                role, name, seconds=time.perf_counter() - t0, rounds_to_target=r,
                sim_time_to_target=clock, final_loss=h.loss[-1], final_acc=h.acc[-1],
            )  # fmt: skip
        cfg = sf.MUSplitFedConfig(**base)
        t0 = time.perf_counter()
        r_fo, l_fo = fedavg_first_order(data, cfg)
        hit = [r for r, v in zip(r_fo, l_fo, strict=True) if v <= TARGET]
        sm = sf.StragglerModel(delay, seed=0, t_client=2.0, t_server=1e-9)
        clock = np.cumsum([sm.round_time(sm.sample(t, 10)[:5], 1)["time"] for t in range(T)])
        case.record(
            "peer", "first-order FedAvg (1 SGD step, lr 0.1)", seconds=time.perf_counter() - t0,
            rounds_to_target=hit[0] if hit else None,
            sim_time_to_target=float(clock[hit[0] - 1]) if hit else None, final_loss=l_fo[-1],
        )  # fmt: skip

    if bench.gpu and torch.cuda.is_available():
        many = sf.load_digits_clients(100, seed=0)
        with bench.case("GPU: 100 clients, P = 50, tau = 8, 200 rounds", clients=100) as case:
            cfg = sf.MUSplitFedConfig(tau=8, rounds=200, clients=100, **STEPS)
            case.time(
                "fast", "simulate_vectorized (cuda)",
                lambda: sf.simulate_vectorized(c, s, many["clients"], cfg, device="cuda"),
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
