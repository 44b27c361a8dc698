"""Argument validation shared by every chapter.

Each helper checks one public argument and, on failure, raises a ``ValueError`` or
``TypeError`` whose message names the argument, shows the value it got and states the
accepted range, e.g.::

    ValueError: eta must be > 0 (got -0.1)

Chapters call these at the boundary of every public function so that bad input never
turns into a silent NaN or a deep stack trace.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "check_real",
    "check_positive",
    "check_range",
    "check_int",
    "check_ints",
    "set_field",
    "replace_fields",
    "check_choice",
    "check_fields",
    "check_instance",
    "check_array",
    "check_bool",
    "check_tensor",
]


def _fmt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a finite Python float, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.floating | np.integer):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        elif hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # 0-d tensor
            value = value.item()
        else:
            raise TypeError(
                f"{name} must be a real number (got {type(value).__name__}: {_fmt(value)})"
            )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite (got {value})")
    return value


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """A finite real number ``> 0`` (or ``>= 0`` with ``allow_zero``)."""
    value = check_real(name, value)
    if value < 0 or (value == 0 and not allow_zero):
        op = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {op} (got {value:g})")
    return value


def check_range(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """A finite real number inside ``[low, high]`` (bounds optional, inclusive by default)."""
    value = check_real(name, value)
    lo_ok = low is None or (value >= low if low_inclusive else value > low)
    hi_ok = high is None or (value <= high if high_inclusive else value < high)
    if not (lo_ok and hi_ok):
        lb = "-inf" if low is None else f"{low:g}"
        hb = "inf" if high is None else f"{high:g}"
        interval = ("[" if low_inclusive and low is not None else "(") + f"{lb}, {hb}"
        interval += "]" if high_inclusive and high is not None else ")"
        raise ValueError(f"{name} must lie in {interval} (got {value:g})")
    return value


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """An integer (bools rejected) inside ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | np.integer):
        raise TypeError(f"{name} must be an integer (got {type(value).__name__}: {_fmt(value)})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lb = "-inf" if low is None else str(low)
        hb = "inf" if high is None else str(high)
        raise ValueError(f"{name} must be an integer in [{lb}, {hb}] (got {value})")
    return value


def check_ints(
    name: str, values: Any, low: int | None = None, high: int | None = None
) -> tuple[int, ...]:
    """A non-empty sequence of distinct integers, each inside ``[low, high]`` (seeds, horizons)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    out = tuple(check_int(name, v, low, high) for v in values)
    if not out or len(set(out)) != len(out):
        lb = "" if low is None else f" >= {low}"
        raise ValueError(f"{name} must be distinct integers{lb}, at least one, got {out}")
    return out


def set_field(obj: Any, name: str, value: Any) -> None:
    """Store a validated, normalised field on a frozen dataclass (in its ``__post_init__``)."""
    import dataclasses

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"obj must be a dataclass instance, got {type(obj).__name__}")
    fields = {f.name for f in dataclasses.fields(obj)}
    if name not in fields:
        raise ValueError(
            f"name must be one of {type(obj).__name__}'s fields {sorted(fields)}, got {name!r}"
        )
    object.__setattr__(obj, name, value)


def replace_fields(obj: Any, changes: dict) -> Any:
    """A copy of the frozen dataclass ``obj`` with ``changes`` (field name -> value), validated
    again by its ``__post_init__``: what a settings class's ``replace(**changes)`` returns.

    Raises
    ------
    TypeError
        ``"unknown setting(s) [...]: <Class>'s fields are [...]"`` for a name that is not a field.
    """
    import dataclasses

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"obj must be a dataclass instance, got {type(obj).__name__}")
    names = {f.name for f in dataclasses.fields(obj)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(
            f"unknown setting(s) {unknown}: {type(obj).__name__}'s fields are {sorted(names)}"
        )
    return dataclasses.replace(obj, **changes)


def check_bool(name: str, value: Any) -> bool:
    """A real ``bool`` (not a truthy object)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False (got {type(value).__name__}: {_fmt(value)})")
    return bool(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """One of a fixed set of options."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices} (got {_fmt(value)})")
    return value


def _check_layout(
    name: str,
    got: tuple[int, ...],
    ndim: int | tuple[int, ...] | None,
    shape: tuple[int | None, ...] | None,
    min_size: int,
) -> None:
    """Rank, shape (``None`` a free axis) and size of an array or tensor of shape ``got``."""
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(got) not in allowed:
            raise ValueError(f"{name} must have ndim in {allowed} (got shape {got})")
    if shape is not None:
        ok = len(got) == len(shape) and all(
            s is None or s == a for s, a in zip(shape, got, strict=True)
        )
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want} (got {got})")
    size = int(np.prod(got)) if got else 1
    if size < min_size:
        raise ValueError(f"{name} must have at least {min_size} elements (got {size})")


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = np.float64,
    finite: bool = True,
    min_size: int = 0,
) -> np.ndarray:
    """Convert ``value`` to a numpy array and check its rank, shape and finiteness.

    ``shape`` may contain ``None`` for a free axis. ``dtype=None`` keeps the input dtype.
    Torch tensors are accepted (moved to CPU).
    """
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor without importing torch
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be array-like of numbers (got {type(value).__name__}): {exc}"
        ) from None
    _check_layout(name, tuple(arr.shape), ndim, shape, min_size)
    if finite and np.issubdtype(arr.dtype, np.number) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (got NaN or inf)")
    return arr


def check_tensor(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = None,
    device: Any = None,
    finite: bool = True,
    min_size: int = 0,
) -> Any:
    """Return ``value`` as a torch tensor (arrays and nested lists converted) and check it.

    ``dtype=None`` keeps a tensor's dtype (an array or list becomes ``torch.get_default_dtype()``
    when it holds floats); ``device=None`` keeps a tensor where it is (a converted value goes to
    the CPU). Rank, shape, size and finiteness are checked as :func:`check_array` checks them.
    """
    import torch

    if isinstance(value, torch.Tensor):
        t = value
    else:
        arr = check_array(name, value, dtype=None, finite=False)
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise TypeError(f"{name} must be a tensor or array of numbers (got dtype {arr.dtype})")
        t = torch.as_tensor(arr)
        if t.is_floating_point() and dtype is None:
            t = t.to(torch.get_default_dtype())
    if dtype is not None:
        t = t.to(dtype)
    if device is not None:
        t = t.to(device)
    _check_layout(name, tuple(t.shape), ndim, shape, min_size)
    if finite and (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must contain only finite values (got NaN or inf)")
    return t


def check_instance(name: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """Check that ``value`` is a ``kind`` (a settings dataclass, a driver's result, a model);
    return it unchanged.

    Raises
    ------
    TypeError
        ``"<name> must be a <kind> (got <type>)"`` (``an`` before a vowel).
    """
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(k.__name__ for k in kinds)
        article = "an" if expected[0].lower() in "aeiou" else "a"
        raise TypeError(f"{name} must be {article} {expected} (got {type(value).__name__})")
    return value


def check_fields(name: str, value: Any, *fields: str, kind: str = "a result") -> Any:
    """Check that ``value`` is an object holding ``fields`` (a driver's result passed on to a
    record builder or a figure); return it unchanged.

    Raises
    ------
    TypeError
        Naming the argument, the kind of object expected and the fields it lacks.
    """
    missing = [f for f in fields if not hasattr(value, f)]
    if value is None or missing:
        raise TypeError(
            f"{name} must be {kind} with fields {', '.join(fields) or '(any)'}; got "
            f"{type(value).__name__}" + (f" without {', '.join(missing)}" if missing else "")
        )
    return value
