"""The notebook time budget, measured in CPU time against a reference workload.

Wall time depends on the machine's load (two notebooks at once, another ``make test`` beside
this one) and speed; the budget test must not. So each execution of a notebook stores, beside
its wall time, the **CPU time of its kernel** (user + system, with the kernel's finished
children) and the CPU time of a fixed **reference workload** (:func:`reference_cpu_seconds`:
the small numpy and torch operations notebooks are made of) timed in the same process. The
test (``tests/test_budget.py``) holds each notebook to ``cpu / reference`` at most twice what
a 30 s notebook would give on the CI machine (:data:`REFERENCE_CI_S`): a slower or busier
machine slows the reference too, and the ratio stays.

- :func:`reference_cpu_seconds`: the reference workload's CPU time here (memoised per process);
- :func:`kernel_cpu_seconds`: the CPU time of a running kernel, from its process id;
- :func:`ceiling_ratio`: the budget, in units of the reference workload.
"""

from __future__ import annotations

import time

__all__ = [
    "CEILING_S",
    "HEADROOM",
    "REFERENCE_CI_S",
    "ceiling_ratio",
    "kernel_cpu_seconds",
    "reference_cpu_seconds",
]

#: a notebook's defaults run in about 20 s on 2 CPU cores; 30 s is the ceiling on the CI machine
CEILING_S = 30.0
#: the reference workload's CPU time on the CI machine (Intel Xeon AVX-512, 2 cores, 10 runs
#: at load 3.7 on 2026-12-06: 0.19-0.24 s): the unit the ceiling is converted with
REFERENCE_CI_S = 0.21
#: the budget's headroom over the ceiling (CPU time still grows under load: shared caches, SMT)
HEADROOM = 2.0


def ceiling_ratio() -> float:
    """The most CPU time a notebook may take, in units of the reference workload."""
    return HEADROOM * CEILING_S / REFERENCE_CI_S


def reference_cpu_seconds() -> float:
    """CPU seconds of the reference workload, run now in this process (about 0.3 s idle).

    The workload: 400 steps of a 64-32-10 MLP on 512 rows in torch (one thread) and 240 numpy
    products of 128 x 128 matrices, the sizes notebooks compute at. The executors time it as a
    notebook starts and as it ends, and store the mean beside the notebook's CPU time.
    """
    import numpy as np
    import torch

    def once() -> float:
        t0 = time.process_time()
        with torch.random.fork_rng():
            torch.manual_seed(0)
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                x, y = torch.randn(512, 64), torch.randint(0, 10, (512,))
                net = torch.nn.Sequential(
                    torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
                )
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for _ in range(400):
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(net(x), y).backward()
                    opt.step()
            finally:
                torch.set_num_threads(threads)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # an idle second BLAS thread spins: CPU time, not work
            a = np.random.default_rng(0).standard_normal((128, 128)) / 12
            for _ in range(240):
                a = np.tanh(a @ a.T)
        return time.process_time() - t0

    once()  # warm: imports, allocations
    return once()


def kernel_cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds (user + system, with its finished children) of the process ``pid``."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
    except Exception:  # noqa: BLE001 - gone, or no psutil: no figure
        return None
    return float(t.user + t.system + t.children_user + t.children_system)
