"""Device, seeds and the CPU thread policy.

``device()`` answers the question every chapter asks ("where do I compute?") the same way:
``LAB_DEVICE`` if set, else ``cuda`` when a GPU is present, else ``cpu``.

Thread policy, measured on the project's 2-core machines (``benchmarks/bench_core.py``,
torch 2.13 CPU): a small full-batch MLP (64-32-2, 200 samples) runs as fast with one torch
thread as with two when it has the machine to itself (0.09 s vs 0.08 s for 300 steps), and
3x faster with one thread when two processes compute at once (0.08 s vs 0.24 s), which is
what ``pytest -n 2`` and parallel notebook execution do; a 1024^2 matmul loses 2x alone with
one thread but still gains 1.5x under that contention. ``setup`` therefore uses one thread on
CPU (every notebook default is a small problem); ``small_problem_threads`` scopes the same
policy to one block; ``setup(threads=n)`` overrides it.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import numpy as np

__all__ = ["device", "seed", "small_problem_threads", "setup", "cuda_available"]

_VALID_DEVICES = ("cpu", "cuda")


def cuda_available() -> bool:
    """True when torch sees a CUDA device."""
    import torch

    return bool(torch.cuda.is_available())


def device(prefer: str | None = None):
    """The torch device lab computes on.

    Order: ``prefer`` argument, the ``LAB_DEVICE`` environment variable, ``cuda`` when
    available, ``cpu``. ``"cuda:1"`` style indices are accepted.

    Raises
    ------
    ValueError
        If the requested device is not ``cpu``/``cuda[:i]``, or ``cuda`` is requested
        without a GPU.
    """
    import torch

    choice = prefer if prefer is not None else os.environ.get("LAB_DEVICE")
    if choice is None or choice == "":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = str(choice).strip().lower()
    if name.split(":")[0] not in _VALID_DEVICES:
        src = "prefer" if prefer is not None else "LAB_DEVICE"
        raise ValueError(f"{src} must be 'cpu' or 'cuda[:index]' (got {choice!r})")
    if name.startswith("cuda") and not torch.cuda.is_available():
        src = "prefer" if prefer is not None else "LAB_DEVICE"
        raise ValueError(f"{src}={choice!r} but torch sees no CUDA device; use 'cpu'")
    return torch.device(name)


def seed(n: int = 0) -> int:
    """Seed python's ``random``, numpy's legacy global RNG and torch (CPU and CUDA).

    Returns the seed so a parameters cell can write ``SEED = lab.seed(0)``. Code inside ``lab``
    takes explicit ``rng``/``generator`` arguments; this seeds whatever a notebook does itself.
    """
    from .checks import check_int

    n = check_int("seed", n, 0, 2**32 - 1)
    random.seed(n)
    np.random.seed(n)
    import torch

    torch.manual_seed(n)
    return n


@contextlib.contextmanager
def small_problem_threads(n: int = 1) -> Iterator[None]:
    """Run a block with ``n`` torch intra-op threads, restoring the old count afterwards."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def setup(seed_value: int = 0, *, threads: int | str = "auto", verbose: bool = True):
    """The parameters cell's one call: seed everything, pick the device, set CPU threads,
    apply the book's figure style (matplotlib style, plotly template ``optlab``).

    ``threads="auto"`` uses one torch thread and one BLAS thread on CPU (the measured policy
    for small problems) and leaves CUDA runs alone. Returns the device.
    """
    import torch

    from .style import register_plotly_template, use_style

    seed(seed_value)
    use_style()
    register_plotly_template()
    dev = device()
    if threads == "auto":
        n = 1 if dev.type == "cpu" else None
    else:
        from .checks import check_int

        n = check_int("threads", threads, 1, os.cpu_count() or 1)
    if n is not None:
        torch.set_num_threads(n)
        # numpy's BLAS (OpenBLAS) follows the same policy: its threads contend the same way
        # (two 650x650 solves in parallel processes ran 3-8x slower with 2 BLAS threads each).
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=n, user_api="blas")
    if verbose:
        print(f"lab: device={dev.type}, torch threads={torch.get_num_threads()}, seed={seed_value}")
    return dev
