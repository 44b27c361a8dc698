"""MEDRO: the risk matrix fast path vs the reference vs the careless peer, and step cost.

For m environments (m = 2, 4, 8) with one batch each, two cases per m:

* the m x m risk matrix, forward + backward (median of single calls): fast =
  ``lab.medro.fast.risk_matrix`` (one featurizer pass over all environments concatenated, all
  heads with one ``einsum``), reference = ``reference.risk_matrix`` (one featurizer pass per
  environment, a loop over heads), peer = ``naive pairs``, the code a user writes first (one
  featurizer pass per (head, environment) pair, m² passes). Every path is checked against
  the reference;
* one training step: fast = Algorithm 1 (``eg_update`` on the m x m weights, Eq. 6 with
  m heads), peer = a single-head GroupDRO step at equal batch (the spec's anchor: < 10% extra for m <= 8).

    python benchmarks/bench_medro.py            # CPU: featurizer 8→256→64, 256 per env
    python benchmarks/bench_medro.py --quick    # CPU, < 20 s: 8→64→16, 128 per env
    python benchmarks/bench_medro.py --gpu      # adds CUDA: 8→1024→256, 4096 per env
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import medro  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def naive_pairs(model, batches):
    """m² featurizer passes: head k on environment e recomputes φ(x_e) each time."""
    rows = []
    for k in range(model.n_heads):
        row = []
        for x, y in batches:
            z = model.features(x)
            row.append(F.cross_entropy(z @ model.weight[k].T + model.bias[k], y))
        rows.append(torch.stack(row))
    return torch.stack(rows)


def fwd_bwd(fn, model, batches):
    def run():
        model.zero_grad(set_to_none=True)
        fn(model, batches).sum().backward()

    return run


def stepper(m, heads, hidden, feat, envs, device):
    """One step of Algorithm 1 (heads = m: eg_update + Eq. 6) or of GroupDRO (heads = 1)."""
    torch.manual_seed(0)
    net = medro.MultiHeadNet(medro.make_featurizer(8, hidden, feat), feat, 2, heads).to(device)
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    x = torch.cat([e[0] for e in envs])
    y = torch.cat([e[1] for e in envs])
    g = torch.cat([torch.full_like(e[1], j) for j, e in enumerate(envs)])
    shape = (m,) if heads == 1 else (m, m)
    state = {"w": torch.full(shape, 1.0 / (m * heads), dtype=torch.float64, device=device)}

    def run():
        R = medro.fast.group_risks(net(x), y, g, m)[0]
        if heads == 1:
            state["w"] = medro.update_pair_weights(state["w"], R[0], 0.01)
            loss = (state["w"].to(R.dtype) * R[0]).sum()
        else:
            state["w"] = medro.eg_update(state["w"], R, 0.01)
            loss = medro.medro_objective(R, state["w"], gamma=0.5)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return run


def run(bench, device, ms, hidden, feat, batch, reps):
    sync = "cuda" if device.type == "cuda" else None
    for m in ms:
        size = {"m": m, "features": f"8-{hidden}-{feat}", "batch_per_env": batch}
        torch.manual_seed(0)
        model = medro.MultiHeadNet(medro.make_featurizer(8, hidden, feat), feat, 2, m).to(device)
        envs = medro.make_rotated_spurious_envs(batch, [0.8] * m, [0.0] * m, seed=1)
        batches = [(x.to(device), y.to(device)) for x, y in envs]
        with bench.case(f"risk matrix fwd+bwd, m = {m} ({device.type})", **size) as case:
            ref = medro.reference.risk_matrix(model, batches).detach()
            for name, fn in (("fast", medro.fast.risk_matrix), ("peer", naive_pairs)):
                err = float((fn(model, batches).detach() - ref).abs().max())
                assert err < 1e-4, f"{fn.__name__} disagrees with the reference by {err}"
                case.metric(f"{name}_max_abs_diff_vs_reference", err)
            for role, label, fn in (
                ("fast", "lab risk_matrix (one pass, einsum)", medro.fast.risk_matrix),
                ("reference", "lab risk_matrix_reference", medro.reference.risk_matrix),
                ("peer", "naive pairs (m² featurizer passes)", naive_pairs),
            ):
                case.time(
                    role, label, fwd_bwd(fn, model, batches), reps=reps, warmup=2, device=sync
                )
        envs = medro.make_rotated_spurious_envs(batch, [0.8] * m, [0.0] * m, seed=0)
        envs = [(x.to(device), y.to(device)) for x, y in envs]
        with bench.case(
            f"training step, m = {m} ({device.type})",
            target="MEDRO step < 1.1x GroupDRO step for m <= 8",
            **size,
        ) as case:
            case.time(
                "fast",
                "MEDRO step (m heads, eg_update)",
                stepper(m, m, hidden, feat, envs, device),
                reps=reps,
                warmup=2,
                device=sync,
            )
            case.time(
                "peer",
                "GroupDRO step (one head)",
                stepper(m, 1, hidden, feat, envs, device),
                reps=reps,
                warmup=2,
                device=sync,
            )
            fast, peer = case.rows[0]["seconds"], case.rows[1]["seconds"]
            case.metric("medro_over_groupdro", fast / peer)


def main() -> None:
    bench = Benchmark("medro", __doc__)
    ms = [2, 4, 8]
    if bench.quick:
        run(bench, torch.device("cpu"), ms, 64, 16, 128, bench.args.reps or 10)
    else:
        run(bench, torch.device("cpu"), ms, 256, 64, 256, bench.args.reps or 30)
    if bench.gpu:
        run(bench, torch.device("cuda"), ms, 1024, 256, 4096, bench.args.reps or 50)
    bench.finish()


if __name__ == "__main__":
    main()
