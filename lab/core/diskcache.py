"""The disk tier of the one cache: expensive results (a training run, a long simulation) kept
between sessions, keyed so that a stale result never answers.

:func:`lab.core.memo.memo` keeps results for the life of a kernel; :func:`disk_memo` keeps them
on disk with ``joblib.Memory`` under the user's cache folder (``LAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/optlab``, else ``~/.cache/optlab``: never inside the package). joblib keys an
entry on the decorated function's own code and its arguments; this adds what joblib cannot see:

* the **source of the function's chapter** (every ``.py`` of its package: a change in a kernel
  the function calls invalidates it) and of ``lab.core`` (the sweeps, rates, checks and models
  every chapter computes with: a change there invalidates every entry),
* ``lab``'s version,
* the **numerics fingerprint** (:func:`lab.core.numerics.fingerprint`'s key: CPU flags, BLAS
  kernels, dispatcher settings, seed shift), so a result computed under one numerics mode never
  answers for another::

    from lab.core.diskcache import disk_memo

    @disk_memo
    def train(width: int, seed: int) -> dict: ...

``LAB_DISK_CACHE=0`` turns the disk tier off (every call computes); ``train.clear()`` forgets
this function's entries; :func:`cache_dir` says where they are.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["cache_dir", "context_key", "disk_memo"]

F = TypeVar("F", bound=Callable[..., Any])


def cache_dir() -> Path:
    """Where the disk tier keeps its entries (created on first use, not here)."""
    explicit = os.environ.get("LAB_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser() / "optlab"


def _enabled() -> bool:
    """The disk tier is on unless ``LAB_DISK_CACHE=0``, and never in smoke mode (``LAB_SMOKE``:
    loops cut short, numbers meaningless: they must neither be stored under a real run's key nor
    read in place of a smoke run's)."""
    from lab.core.runtime import smoke

    off = os.environ.get("LAB_DISK_CACHE", "1").strip().lower() in ("0", "false", "no", "off")
    return not off and not smoke()


@functools.cache
def _package_digest(package: str) -> str:
    """SHA-256 (16 hex) of every ``.py`` file of ``package`` (a chapter, or the module's own
    folder), in path order."""
    module = sys.modules.get(package)
    paths = getattr(module, "__path__", None)
    if paths:
        root = Path(list(paths)[0])
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    else:
        files = [Path(module.__file__)] if module is not None and module.__file__ else []
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def _fingerprint_key(shift: str) -> str:
    from lab.core.numerics import fingerprint

    return fingerprint()["key"]


def context_key(fn: Callable[..., Any]) -> tuple[str, str, str]:
    """``(source digest of fn's chapter + lab.core's, lab version, numerics key)``: what a disk
    entry of ``fn`` is keyed on beyond joblib's own key (``fn``'s code and arguments)."""
    import lab

    module = getattr(fn, "__module__", "") or ""
    parts = module.split(".")
    package = ".".join(parts[:2]) if parts[0] == "lab" and len(parts) > 2 else module
    if package not in sys.modules:
        __import__(package)
    # the fingerprint depends on the dispatcher settings and the seed shift, read per process
    # (a test may set LAB_SEED_SHIFT): keyed on the shift so a changed shift recomputes
    shift = os.environ.get("LAB_SEED_SHIFT", "0")
    source = f"{_package_digest(package)}+{_package_digest('lab.core')}"
    return source, lab.__version__, _fingerprint_key(shift)


def disk_memo(fn: F | None = None, *, verbose: int = 0) -> Any:
    """Cache ``fn``'s results on disk (see the module). Arguments must be what joblib can hash
    (numbers, strings, tuples, numpy arrays, dataclasses); results what pickle can store.

    Raises
    ------
    TypeError
        If ``fn`` is not callable.
    """
    if fn is None:
        return lambda f: disk_memo(f, verbose=verbose)
    if not callable(fn):
        raise TypeError(f"disk_memo decorates a function, got {type(fn).__name__}")

    def keyed(_context: tuple, call: tuple) -> Any:
        args, kwargs = call
        return fn(*args, **kwargs)

    # joblib names the entry after the function it caches: give the wrapper fn's identity
    keyed.__module__ = fn.__module__
    keyed.__name__ = keyed.__qualname__ = f"{fn.__qualname__}"
    state: dict[str, Any] = {}

    def cached() -> Any:
        location = str(cache_dir())
        if state.get("location") != location:
            import joblib

            state["location"] = location
            state["fn"] = joblib.Memory(location, verbose=verbose).cache(keyed)
        return state["fn"]

    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _enabled():
            return fn(*args, **kwargs)
        # one key per call whatever its spelling: f(3) and f(n=3) share an entry (as memo's)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return cached()(context_key(fn), (bound.args, bound.kwargs))

    def clear() -> None:
        """Forget this function's entries on disk."""
        cached().clear(warn=False)

    wrapper.clear = clear  # type: ignore[attr-defined]
    wrapper.uncached = fn  # type: ignore[attr-defined]
    return wrapper
