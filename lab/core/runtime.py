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

Smoke mode, ``LAB_SMOKE=1``: every loop of the chapters' experiment drivers stops after a few
iterations (``smoke_steps``, ``smoke_items``), so that ``FULL = True``'s code paths (shapes,
dtypes, device handling, the claims' recording) run in seconds on a CPU. The numbers it gives
are meaningless; ``tests/test_full_smoke.py`` uses it. Unset, nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "device",
    "resolve_device",
    "seed",
    "small_problem_threads",
    "setup",
    "cuda_available",
    "smoke",
    "smoke_steps",
    "smoke_items",
]

_VALID_DEVICES = ("cpu", "cuda")
_SMOKE_ON = ("1", "true", "yes", "on")


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


_default_device = device  # ``resolve_device``'s argument named ``device`` shadows the function


def resolve_device(device: Any = None, *tensors: Any):
    """The device a ``lab`` function computes on, from its ``device`` argument and its inputs.

    This is the one rule behind every ``device=None`` argument in ``lab``: an explicit
    ``device`` wins (validated like :func:`device`); otherwise the result follows the first
    of ``tensors`` that is a ``torch.Tensor``; otherwise :func:`device` (``LAB_DEVICE``, then
    ``cuda`` when available, then ``cpu``).

    Parameters
    ----------
    device : str or torch.device, optional
        ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"`` (or the matching ``torch.device``).
    *tensors : Any
        The function's inputs; non-tensors (numpy arrays, numbers, None) are skipped.

    Returns
    -------
    torch.device

    Raises
    ------
    TypeError
        If ``device`` is neither a string nor a ``torch.device``.
    ValueError
        If ``device`` is not ``cpu``/``cuda[:index]``, or names CUDA without a GPU.

    Examples
    --------
    >>> import torch
    >>> resolve_device("cpu").type
    'cpu'
    >>> resolve_device(None, None, torch.zeros(2)).type
    'cpu'
    """
    import torch

    if device is not None:
        if not isinstance(device, str | torch.device):
            raise TypeError(
                "device must be a str or torch.device such as 'cpu' or 'cuda:0' "
                f"(got {type(device).__name__}: {device!r})"
            )
        name = str(device).strip().lower()
        if name.split(":")[0] not in _VALID_DEVICES or (
            ":" in name and not name.split(":", 1)[1].isdigit()
        ):
            raise ValueError(f"device must be 'cpu' or 'cuda[:index]' (got {device!r})")
        if name.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but torch sees no CUDA device; use 'cpu'")
        return torch.device(name)
    for t in tensors:
        if isinstance(t, torch.Tensor):
            return t.device
    return _default_device()


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


def small_problem_threads(n: int = 1) -> contextlib.AbstractContextManager[None]:
    """Run a block with ``n`` torch intra-op threads, restoring the old count afterwards.

    ``n`` is checked when the context manager is made (an integer ``>= 1``), not on entry.
    """
    from .checks import check_int

    return _torch_threads(check_int("n", n, 1))


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
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


def smoke() -> bool:
    """True when ``LAB_SMOKE`` is ``1``/``true``/``yes``/``on`` (smoke mode; see the module).

    Read on every call, so a test can switch it with ``monkeypatch.setenv``.
    """
    return os.environ.get("LAB_SMOKE", "").strip().lower() in _SMOKE_ON


def smoke_steps(n: int, small: int = 3) -> int:
    """A loop count: ``n`` itself, or ``min(n, small)`` in smoke mode (``LAB_SMOKE=1``).

    Drivers wrap the counts that ``FULL`` makes long (steps, epochs, rounds, samples drawn in a
    loop) so that a smoke run walks the same code with the same shapes in seconds.

    Parameters
    ----------
    n : int
        The loop count (``>= 0``); returned unchanged (same object) outside smoke mode.
    small : int
        The count in smoke mode (``>= 1``).

    Raises
    ------
    TypeError
        If ``n`` or ``small`` is not an integer.
    ValueError
        If ``n < 0`` or ``small < 1``.

    Examples
    --------
    >>> smoke_steps(20_000)  # outside smoke mode
    20000
    """
    from .checks import check_int

    check_int("n", n, 0)
    small = check_int("small", small, 1)
    if not smoke():
        return n
    return min(int(n), small)


def smoke_items(items: Sequence[Any], small: int = 2) -> Sequence[Any]:
    """A sequence to loop over: ``items`` itself, or its first ``small`` items in smoke mode.

    For seeds, sweep grids and lists of settings (the slice keeps the type: a tuple stays a
    tuple, a numpy array an array). Two by default, so that a confidence interval over seeds
    still has two values.

    Raises
    ------
    TypeError
        If ``items`` cannot be sliced or ``small`` is not an integer.
    ValueError
        If ``small < 1``.
    """
    from .checks import check_int

    small = check_int("small", small, 1)
    if not hasattr(items, "__getitem__") or not hasattr(items, "__len__"):
        raise TypeError(
            f"items must be a sequence (list, tuple, range, array) (got {type(items).__name__})"
        )
    if not smoke():
        return items
    return items[:small]
