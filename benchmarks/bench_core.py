"""The CPU thread policy of lab.core.runtime, measured.

Times a small full-batch MLP training loop (the size of the book's CPU defaults) and a
medium matrix product with 1 torch thread and with all cores. ``lab.setup`` uses one
thread on CPU because of the first row; the second row shows where that stops paying.

    python benchmarks/bench_core.py            # CPU
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch


def tiny_mlp_steps(steps: int = 300) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 64, generator=g)
    y = torch.randn(200, 2, generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


def matmul(n: int = 1024, reps: int = 10) -> None:
    a = torch.randn(n, n)
    for _ in range(reps):
        a @ a


def timed(fn, threads: int) -> float:
    torch.set_num_threads(threads)
    fn()  # warm-up
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--gpu", action="store_true", help="(no GPU part: the thread policy is CPU-only)"
    )
    parser.parse_args()
    cores = os.cpu_count() or 1
    rows = []
    for name, fn in (
        ("MLP 64-32-2, 200 samples, 300 steps", tiny_mlp_steps),
        ("matmul 1024^2 x10", matmul),
    ):
        t1, tn = timed(fn, 1), timed(fn, cores)
        rows.append(
            {
                "workload": name,
                "threads_1_s": round(t1, 4),
                f"threads_{cores}_s": round(tn, 4),
                "speedup_of_1_thread": round(tn / t1, 2),
            }
        )
    print(f"| workload | 1 thread (s) | {cores} threads (s) | 1-thread speed-up |")
    print("|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['workload']} | {r['threads_1_s']} | {r[f'threads_{cores}_s']} | {r['speedup_of_1_thread']}x |"
        )
    out = Path(__file__).parent / "results" / "core-cpu.json"
    out.write_text(
        json.dumps({"cores": cores, "torch": torch.__version__, "rows": rows}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
