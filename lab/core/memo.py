"""One memo for the drivers: results cached on the arguments that produced them.

A chapter's ``experiments.py`` computes (trains, solves, simulates) and caches; its
``figures.py`` only draws. The cache is this decorator, keyed on the call's arguments after
defaults are applied (so ``f(3)`` and ``f(n=3)`` share an entry), with ``clear()`` on every
memoised function and :func:`clear_all` for all of them::

    from lab.core.memo import memo

    @memo
    def sweep(eta: float, steps: int = 200) -> SweepResult: ...

    sweep(0.1)          # computes
    sweep(eta=0.1)      # the stored result
    sweep.put(r, 0.2)   # store a result computed elsewhere (a batch of settings at once)
    sweep.clear()       # forget this driver's results

Arguments must be hashable, or numpy arrays / torch tensors (keyed on dtype, shape and bytes).
A result is returned as stored: drivers return frozen dataclasses or arrays the caller does not
mutate. ``maxsize`` bounds the entries (least recently used out first).

See: CONTRIBUTING.md ("lab/<slug>": experiments compute and cache, figures draw)
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["memo", "clear_all", "Memo"]

F = TypeVar("F", bound=Callable[..., Any])
_REGISTRY: list[Memo] = []


def _key_of(value: Any) -> Any:
    """A hashable stand-in for one argument value."""
    module = type(value).__module__
    if module == "numpy" and hasattr(value, "tobytes"):
        return ("ndarray", str(value.dtype), value.shape, value.tobytes())
    if module == "torch" and hasattr(value, "detach"):
        t = value.detach().cpu().contiguous()
        return ("tensor", str(t.dtype), tuple(t.shape), t.numpy().tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key_of(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _key_of(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"memo: argument of type {type(value).__name__} cannot key a cache; pass a hashable "
            "value, a numpy array or a torch tensor"
        ) from None
    return value


class Memo:
    """A memoised function (made by :func:`memo`); call it as the function itself."""

    def __init__(self, fn: Callable[..., Any], maxsize: int | None = None):
        if maxsize is not None and (not isinstance(maxsize, int) or maxsize < 1):
            raise ValueError(f"maxsize must be a positive int or None, got {maxsize!r}")
        self.fn = fn
        self.maxsize = maxsize
        self.signature = inspect.signature(fn)
        self.store: OrderedDict[Any, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0
        functools.update_wrapper(self, fn)
        _REGISTRY.append(self)

    def key(self, *args: Any, **kwargs: Any) -> Any:
        """The cache key of a call (raises ``TypeError`` as the function would on bad names)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple((name, _key_of(v)) for name, v in bound.arguments.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = self.key(*args, **kwargs)
        if key in self.store:
            self.hits += 1
            self.store.move_to_end(key)
            return self.store[key]
        self.misses += 1
        value = self.fn(*args, **kwargs)
        self.store[key] = value
        if self.maxsize is not None and len(self.store) > self.maxsize:
            self.store.popitem(last=False)
        return value

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def put(self, value: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Store ``value`` as the result of the call ``f(*args, **kwargs)`` (a driver that
        computes many settings in one batch stores each); returns ``value``."""
        self.store[self.key(*args, **kwargs)] = value
        if self.maxsize is not None and len(self.store) > self.maxsize:
            self.store.popitem(last=False)
        return value

    def __contains__(self, key_args: tuple) -> bool:
        """``(args, kwargs) in f``: whether that call's result is stored."""
        args, kwargs = key_args
        return self.key(*args, **kwargs) in self.store

    def clear(self) -> None:
        """Forget every stored result of this function."""
        self.store.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self.store)

    def __repr__(self) -> str:
        return f"<memo {self.fn.__module__}.{self.fn.__qualname__}: {len(self.store)} stored>"


def memo(fn: F | None = None, *, maxsize: int | None = None) -> Any:
    """Cache a driver's results on its arguments (``@memo`` or ``@memo(maxsize=32)``)."""
    if fn is None:
        return lambda f: Memo(f, maxsize=maxsize)
    if not callable(fn):
        raise TypeError(f"memo: fn must be callable, got {type(fn).__name__}")
    return Memo(fn, maxsize=maxsize)


def clear_all() -> int:
    """Clear every memoised function in this process; returns how many there were."""
    for m in _REGISTRY:
        m.clear()
    return len(_REGISTRY)
