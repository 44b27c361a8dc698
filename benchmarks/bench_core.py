"""The CPU thread policy of lab.core.runtime, measured.

Times a small full-batch MLP training loop (the size of the book's CPU defaults) and a medium
matrix product with 1 torch thread (fast: lab's policy) and with all cores (peer: torch's
default), first alone and then with two copies running at once in separate processes (what
``pytest -n 2`` or two notebooks executing side by side do on a 2-core machine; each copy
reports its best of 3, the slowest copy is recorded; "alone" rows are the median of 3). The results decide ``lab.setup``'s
default (one thread on CPU). ``--threads`` is ignored (the script sets the threads itself)
and ``--gpu`` adds nothing (the policy is CPU-only).

    python benchmarks/bench_core.py            # MLP 300 steps, matmul 1024^2 x10
    python benchmarks/bench_core.py --quick    # < 20 s idle: MLP 30 steps, matmul 256^2 x10
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.tooling.bench import Benchmark  # noqa: E402


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


def workloads(quick: bool) -> dict[str, tuple]:
    if quick:
        return {
            "MLP 64-32-2, 200 samples, 30 steps": (tiny_mlp_steps, 30),
            "matmul 256^2 x10": (matmul, 256),
        }
    return {
        "MLP 64-32-2, 200 samples, 300 steps": (tiny_mlp_steps, 300),
        "matmul 1024^2 x10": (matmul, 1024),
    }


def warm_up(fn, size: int) -> None:
    """A short call of the workload (a long one costs minutes on a loaded machine)."""
    fn(10) if fn is tiny_mlp_steps else fn(size, 1)


def timed(args: tuple[str, int, bool]) -> float:
    """Best of 3 (1 if quick) after a warm-up, in this process, with ``threads`` torch threads."""
    name, threads, quick = args
    repeats = 1 if quick else 3
    torch.set_num_threads(threads)
    fn, size = workloads(quick)[name]
    warm_up(fn, size)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(size)
        best = min(best, time.perf_counter() - t0)
    return best


def concurrent(name: str, threads: int, quick: bool, copies: int = 2) -> float:
    """Wall time per copy when ``copies`` processes run the workload at the same time.

    Plain subprocesses (``--worker``), not a multiprocessing pool: a spawn pool's workers
    sometimes never exit after torch's autograd threads have started.
    """
    cmd = [sys.executable, __file__, "--worker", name, str(threads), str(int(quick))]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(copies)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a worker failed: {outs}")
    return max(float(o.strip().splitlines()[-1]) for o in outs)


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:  # one copy of concurrent()
        name, threads, quick = sys.argv[2], int(sys.argv[3]), bool(int(sys.argv[4]))
        print(timed((name, threads, quick)), flush=True)
        return
    bench = Benchmark("core", __doc__)
    cores = os.cpu_count() or 1
    for name, (fn, size) in workloads(bench.quick).items():
        with bench.case(f"{name}, alone", workload=name, processes=1, cores=cores) as case:
            for role, threads in (("fast", 1), ("peer", cores)):
                torch.set_num_threads(threads)
                warm_up(fn, size)
                case.time(
                    role,
                    f"{threads} torch thread(s)",
                    lambda fn=fn, size=size: fn(size),
                    threads=threads,
                )
            torch.set_num_threads(1)
        with bench.case(f"{name}, 2 at once", workload=name, processes=2, cores=cores) as case:
            for role, threads in (("fast", 1), ("peer", cores)):
                case.record(
                    role,
                    f"{threads} torch thread(s)",
                    seconds=concurrent(name, threads, bench.quick),
                    threads=threads,
                    note="2 processes at once; slowest copy's best of "
                    + ("1" if bench.quick else "3"),
                )
    bench.finish()


if __name__ == "__main__":
    main()
