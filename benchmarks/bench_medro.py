"""MEDRO: the risk matrix fast path vs the reference vs the careless peer, and step cost.

For m environments with one batch each, times (forward + backward)

* ``risk_matrix``: one featurizer pass over all environments concatenated, all heads with one
  ``einsum`` (lab's fast path);
* ``risk_matrix_reference``: one featurizer pass per environment, a loop over heads;
* ``naive pairs``: the peer a user writes first, one featurizer pass per (head, environment)
  pair (m² passes);

and the cost of one ``medro_step`` relative to one single-head ``groupdro_step`` at equal
batch (the spec's anchor: < 10% extra for m <= 8). Every path is checked against the
reference. A markdown table is printed; numbers go to ``benchmarks/results/medro-<cpu|gpu>.json``.

    python benchmarks/bench_medro.py            # CPU: featurizer 8→256→64, 256 per env
    python benchmarks/bench_medro.py --quick    # CPU, < 20 s: 8→64→16, 128 per env
    python benchmarks/bench_medro.py --gpu      # adds CUDA: 8→1024→256, 4096 per env
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import medro  # noqa: E402


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


def timed(fn, model, batches, reps: int, device) -> float:
    for _ in range(2):
        fn(model, batches).sum().backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        model.zero_grad(set_to_none=True)
        fn(model, batches).sum().backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def step_cost(m, hidden, feat, batch, reps, device) -> tuple[float, float]:
    envs = medro.make_rotated_spurious_envs(batch, [0.8] * m, [0.0] * m, seed=0)
    envs = [(x.to(device), y.to(device)) for x, y in envs]
    out = []
    for heads, step in [(1, "groupdro"), (m, "medro")]:
        torch.manual_seed(0)
        net = medro.MultiHeadNet(medro.make_featurizer(8, hidden, feat), feat, 2, heads).to(device)
        opt = torch.optim.Adam(net.parameters(), 1e-3)
        q = torch.full(
            (m,) if heads == 1 else (m, m), 1.0 / (m if heads == 1 else m * m), device=device
        )
        fn = medro.groupdro_step if step == "groupdro" else medro.medro_step
        for _ in range(2):
            q, _ = fn(net, envs, q, opt, 0.01)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            q, _ = fn(net, envs, q, opt, 0.01)
        if device.type == "cuda":
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / reps)
    return out[0], out[1]


def run(device, ms, hidden, feat, batch, reps):
    rows = []
    for m in ms:
        torch.manual_seed(0)
        model = medro.MultiHeadNet(medro.make_featurizer(8, hidden, feat), feat, 2, m).to(device)
        envs = medro.make_rotated_spurious_envs(batch, [0.8] * m, [0.0] * m, seed=1)
        batches = [(x.to(device), y.to(device)) for x, y in envs]
        ref = medro.risk_matrix_reference(model, batches).detach()
        for fn in (medro.risk_matrix, naive_pairs):
            err = float((fn(model, batches).detach() - ref).abs().max())
            assert err < 1e-4, f"{fn.__name__} disagrees with the reference by {err}"
        t_fast = timed(medro.risk_matrix, model, batches, reps, device)
        t_ref = timed(medro.risk_matrix_reference, model, batches, reps, device)
        t_naive = timed(naive_pairs, model, batches, reps, device)
        t_gdro, t_medro = step_cost(m, hidden, feat, batch, reps, device)
        rows.append(
            {
                "device": device.type,
                "m": m,
                "fast_ms": 1e3 * t_fast,
                "reference_ms": 1e3 * t_ref,
                "naive_pairs_ms": 1e3 * t_naive,
                "speedup_vs_reference": t_ref / t_fast,
                "speedup_vs_naive": t_naive / t_fast,
                "groupdro_step_ms": 1e3 * t_gdro,
                "medro_step_ms": 1e3 * t_medro,
                "medro_over_groupdro": t_medro / t_gdro,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu", action="store_true", help="also time on CUDA at larger sizes")
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu given but torch sees no CUDA device")
    torch.set_num_threads(args.threads)
    ms = [2, 4, 8]
    if args.quick:
        rows = run(torch.device("cpu"), ms, 64, 16, 128, 10)
    else:
        rows = run(torch.device("cpu"), ms, 256, 64, 256, 30)
    if args.gpu:
        rows += run(torch.device("cuda"), ms, 1024, 256, 4096, 50)
    print(
        "| device | m | fast (ms) | reference (ms) | naive m² passes (ms) | fast vs ref | fast vs naive | MEDRO / GroupDRO step |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['device']} | {r['m']} | {r['fast_ms']:.2f} | {r['reference_ms']:.2f} | "
            f"{r['naive_pairs_ms']:.2f} | {r['speedup_vs_reference']:.2f}x | "
            f"{r['speedup_vs_naive']:.2f}x | {r['medro_over_groupdro']:.2f} |"
        )
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "platform": platform.platform(),
        "torch": torch.__version__,
        "threads": args.threads,
        "quick": args.quick,
    }
    for dev in sorted({r["device"] for r in rows}):
        name = "cpu" if dev == "cpu" else "gpu"
        payload = {"meta": meta, "rows": [r for r in rows if r["device"] == dev]}
        (out / f"medro-{name}.json").write_text(json.dumps(payload, indent=2))
        print(f"wrote {out / f'medro-{name}.json'}")


if __name__ == "__main__":
    main()
