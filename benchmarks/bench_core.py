"""The CPU thread policy of lab.core.runtime, measured.

Times a small full-batch MLP training loop (the size of the book's CPU defaults) and a medium
matrix product with 1 torch thread and with all cores, first alone and then with two copies
running at once (what ``pytest -n 2`` or two notebooks executing side by side do on a 2-core
machine). The results decide ``lab.setup``'s default (one thread on CPU).

    python benchmarks/bench_core.py
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
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


WORKLOADS = {
    "MLP 64-32-2, 200 samples, 300 steps": tiny_mlp_steps,
    "matmul 1024^2 x10": matmul,
}


def timed(name: str, threads: int, repeats: int = 3) -> float:
    torch.set_num_threads(threads)
    fn = WORKLOADS[name]
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _worker(args: tuple[str, int]) -> float:
    return timed(*args)


def concurrent(name: str, threads: int, copies: int = 2) -> float:
    """Wall time per copy when ``copies`` processes run the workload at the same time."""
    with mp.get_context("spawn").Pool(copies) as pool:
        return max(pool.map(_worker, [(name, threads)] * copies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--gpu", action="store_true", help="accepted for make bench; the policy is CPU-only"
    )
    parser.parse_args()
    cores = os.cpu_count() or 1
    rows = []
    for name in WORKLOADS:
        for mode, fn in (("alone", lambda n, t: timed(n, t)), ("2 at once", concurrent)):
            t1, tn = fn(name, 1), fn(name, cores)
            rows.append(
                {
                    "workload": name,
                    "mode": mode,
                    "threads_1_s": round(t1, 4),
                    f"threads_{cores}_s": round(tn, 4),
                    "speedup_of_1_thread": round(tn / t1, 2),
                }
            )
    print(f"| workload | processes | 1 thread (s) | {cores} threads (s) | 1-thread speed-up |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['workload']} | {r['mode']} | {r['threads_1_s']} | {r[f'threads_{cores}_s']} "
            f"| {r['speedup_of_1_thread']}x |"
        )
    out = Path(__file__).parent / "results" / "core-cpu.json"
    out.write_text(
        json.dumps({"cores": cores, "torch": torch.__version__, "rows": rows}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
