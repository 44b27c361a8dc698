"""The book-wide bad-input probe: every public callable answers junk clearly.

For ``lab.core`` (the package and its modules) and every chapter of ``_toc.yml``
(``lab.<slug>``), each public callable (``__all__``, else the public names defined in ``lab``; a
class counts through its constructor) is called once per junk value: ``None``, ``NaN``, ``-1``,
a string, an empty array, an array holding a NaN. The junk goes into every required argument;
a callable without one gets it in its first named parameter. A call may return normally or raise
``ValueError``/``TypeError`` (or a subclass; ``FileNotFoundError`` for a path): that is a clear
answer. Anything else (``AttributeError``, ``IndexError``, ``RuntimeError``,
``ZeroDivisionError``, ``KeyError``...) or a call that runs past ``TIMEOUT_S`` is an
*offender*. Two silent shapes are offenders too: a **number** (or an array of numbers) returned
for ``None`` in a required argument (junk read as NaN or as an empty input), and a **generator**
that refuses its junk only when iterated (the check must come when the function is called).

Exempt by type: result containers (dataclasses without ``__post_init__``, NamedTuples, enums: they
hold what they are given), exception types, modules, and objects re-exported from outside ``lab``
(torch, numpy...). A dataclass with ``__post_init__`` computes on its fields and is probed.
The build tooling (``lab.tooling``) is not probed: notebooks and users do not call it.

``lab.core`` and every chapter of ``_toc.yml`` must have no offender; a failure lists the offending calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib
import inspect
import math
import pkgutil
import random
import signal
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


#: CPU seconds one call may take before it counts as an offender (junk should fail fast):
#: CPU time (the process's, ITIMER_PROF), so that a loaded laptop is not an offence
TIMEOUT_S = 5
#: wall-clock backstop for a call that waits without computing (a lock, a child process)
WALL_TIMEOUT_S = 60

#: lab.core modules that are not probed (none: lab.core is what notebooks and users import)
CORE_SKIP: set[str] = set()

#: clear answers; FileNotFoundError is Python's own answer to a path that names no file
ACCEPTED = (ValueError, TypeError, FileNotFoundError)


def _junk() -> list[tuple[str, object]]:
    """Fresh junk values (arrays are rebuilt per call: a callee may write into them)."""
    return [
        ("None", None),
        ("NaN", math.nan),
        ("-1", -1),
        ("str", "junk"),
        ("empty array", np.array([])),
        ("array with NaN", np.array([1.0, math.nan, 0.5])),
    ]


JUNK_NAMES = [name for name, _ in _junk()]


def _chapters() -> list[str]:
    from lab.tooling.chapters import chapters

    return chapters(ROOT)


def _core_modules() -> list[str]:
    import lab.core

    names = ["lab.core"]
    for info in pkgutil.iter_modules(lab.core.__path__):
        if not info.name.startswith("_") and info.name not in CORE_SKIP:
            names.append(f"lab.core.{info.name}")
    return names


def _is_exempt(obj: object) -> bool:
    """Result containers, exceptions, modules and objects from outside ``lab``."""
    if isinstance(obj, types.ModuleType) or not callable(obj):
        return True
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith("lab.") or module.startswith("lab.tooling"):
        return True
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj) and not hasattr(obj, "__post_init__"):
            return True  # a container; one with __post_init__ computes on its fields
        if issubclass(obj, BaseException | enum.Enum):
            return True
        if issubclass(obj, tuple) and hasattr(obj, "_fields"):  # NamedTuple
            return True
    return False


def public_callables(module_name: str) -> dict[str, Callable]:
    """The probed callables of a module, by public name."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = {}
    for name in names:
        obj = getattr(module, name, None)
        if obj is not None and not _is_exempt(obj):
            out[name] = obj
    return out


def _plan(func: Callable) -> tuple[int, list[str]] | None:
    """Where the junk goes: (number of leading positionals, keyword names); None: not called.

    Every required argument gets the junk (positionals by position, keyword-only by name). A
    callable without a required argument gets it in its first named parameter instead (its
    default is what a user overrides first: ``device(prefer)``, ``seed(n)``, ``load(path)``).
    """
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    named = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    n_pos, kwonly = 0, []
    for p in named:
        if p.default is not inspect.Parameter.empty:
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n_pos += 1
        else:
            kwonly.append(p.name)
    if n_pos or kwonly:
        return n_pos, kwonly
    if named and named[0].kind is not named[0].POSITIONAL_ONLY:
        return 0, [named[0].name]
    return (1, []) if named else None


def _required(func: Callable) -> bool:
    """Whether the junk went into required arguments (not into a parameter with a default,
    where ``None`` may mean "the default")."""
    params = inspect.signature(func).parameters.values()
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return any(p.default is inspect.Parameter.empty and p.kind not in kinds for p in params)


class _Timeout(BaseException):
    """Raised by the alarm: a BaseException so that a callee's ``except Exception`` misses it."""


def _on_alarm(signum, frame):
    raise _Timeout


def probe_call(
    func: Callable, n_pos: int, kwonly: list[str], junk_index: int, required: bool = True
) -> str | None:
    """Call ``func`` with junk number ``junk_index`` in ``n_pos`` leading positionals and in the
    keyword arguments ``kwonly``; return the offence, or None for a clear answer.

    A call that runs past ``TIMEOUT_S`` of CPU time (or ``WALL_TIMEOUT_S`` of wall time) is
    tried once more (a first call may pay for imports and caches); a second timeout is an
    offence.
    """
    for _ in range(2):
        offence = _call_once(func, n_pos, kwonly, junk_index, required)
        if offence is not _TIMED_OUT:
            return offence
    return f"no answer within {TIMEOUT_S} CPU s / {WALL_TIMEOUT_S} s (twice)"


_TIMED_OUT = "timed out"


def _is_number(result: object) -> bool:
    """A number or an array of numbers (bools excluded: a yes/no answer is not a value read
    from the junk)."""
    if isinstance(result, bool | np.bool_):
        return False
    if isinstance(result, int | float | complex | np.number):
        return True
    dtype = getattr(result, "dtype", None)  # numpy arrays and torch tensors
    if dtype is None:
        return False
    if isinstance(result, np.ndarray):
        return result.dtype.kind in "iufc"
    return bool(getattr(dtype, "is_floating_point", False)) or "int" in str(dtype)


def _call_once(
    func: Callable, n_pos: int, kwonly: list[str], junk_index: int, required: bool = True
) -> str | None:
    args = [_junk()[junk_index][1] for _ in range(n_pos)]
    kwargs = {k: _junk()[junk_index][1] for k in kwonly}
    alarm = threading.current_thread() is threading.main_thread()  # signals need the main thread
    if alarm:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        old_prof = signal.signal(signal.SIGPROF, _on_alarm)
        signal.setitimer(signal.ITIMER_PROF, TIMEOUT_S)
        signal.alarm(WALL_TIMEOUT_S)
    try:
        result = func(*args, **kwargs)
        if required and _junk()[junk_index][0] == "None" and _is_number(result):
            return f"returns {type(result).__name__} for None (no check)"
        if inspect.isgenerator(result):  # a lazy function: run it a little
            try:
                next(result, None)
            except ACCEPTED:
                return "a generator that checks its arguments only when iterated"
        elif isinstance(result, contextlib.AbstractContextManager):  # its work is in __enter__
            with result:
                pass
    except ACCEPTED:
        return None
    except _Timeout:
        return _TIMED_OUT
    except Exception as exc:  # noqa: BLE001 - any other exception is what the probe reports
        msg = str(exc).splitlines()[0][:70] if str(exc) else ""
        return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    finally:
        if alarm:
            signal.alarm(0)
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGALRM, old)
            signal.signal(signal.SIGPROF, old_prof)
    return None


def _global_state():
    import torch

    return (
        random.getstate(),
        np.random.get_state(),
        torch.random.get_rng_state(),
        torch.get_num_threads(),
        torch.get_default_dtype(),
    )


def _restore(state) -> None:
    import torch

    random.setstate(state[0])
    np.random.set_state(state[1])
    torch.random.set_rng_state(state[2])
    torch.set_num_threads(state[3])
    torch.set_default_dtype(state[4])


def probe_module(module_name: str) -> Iterator[tuple[str, str, str | None]]:
    """(callable name, junk name, offence or None) for every probed call of a module."""
    for name, func in public_callables(module_name).items():
        plan = _plan(func)
        if plan is None:
            continue
        required = _required(func)
        for i, junk_name in enumerate(JUNK_NAMES):
            yield name, junk_name, probe_call(func, plan[0], plan[1], i, required)


def run_probe(module_names: list[str], tmp_path: Path, monkeypatch) -> tuple[int, list[str]]:
    """Probe modules in a scratch directory, restoring global RNG/thread state afterwards."""
    monkeypatch.chdir(tmp_path)  # a junk string used as a path lands here
    monkeypatch.setenv("LAB_PROGRESS", "0")
    state = _global_state()
    calls, offenders = 0, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for module_name in module_names:
                for name, junk_name, offence in probe_module(module_name):
                    calls += 1
                    if offence is not None:
                        offenders.append(f"{module_name}.{name}({junk_name}) -> {offence}")
    finally:
        _restore(state)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return calls, offenders


def _report(label: str, calls: int, offenders: list[str]) -> str:
    return f"{label}: {len(offenders)} offenders in {calls} calls:\n  " + "\n  ".join(offenders)


# -- the probe itself ----------------------------------------------------------------------
def test_probe_classifies_answers(tmp_path, monkeypatch):
    """The probe accepts clear errors and returns, and reports the rest (it can fail)."""

    def clear(x):
        raise ValueError("x must be finite")

    def silent(x, *, y):
        return x

    def unclear(x):
        return x[0]  # IndexError on an empty array, TypeError on None

    def slow(x):  # computes: CPU time runs out
        while True:
            sum(range(1000))

    def waits(x):  # waits without computing: the wall-clock backstop ends it
        import time

        time.sleep(WALL_TIMEOUT_S + 5)

    assert probe_call(clear, 1, [], 0) is None
    assert probe_call(silent, 1, ["y"], 1) is None
    assert probe_call(unclear, 1, [], JUNK_NAMES.index("None")) is None
    assert probe_call(unclear, 1, [], JUNK_NAMES.index("empty array")).startswith("IndexError")
    monkeypatch.setattr(sys.modules[__name__], "TIMEOUT_S", 1)
    monkeypatch.setattr(sys.modules[__name__], "WALL_TIMEOUT_S", 2)
    assert probe_call(slow, 1, [], 0) == "no answer within 1 CPU s / 2 s (twice)"
    assert probe_call(waits, 1, [], 0) == "no answer within 1 CPU s / 2 s (twice)"


def test_probe_reports_silent_shapes():
    """A number returned for None in a required argument, and a generator that checks its
    arguments only when iterated, are offences; the same shapes done right are not."""
    none = JUNK_NAMES.index("None")

    def reads_none_as_nan(x):
        return int(np.isnan(np.asarray(x, dtype=float)).sum())  # 1 for None, no error

    def checks_first(x):
        if x is None:
            raise TypeError("x must be an array")
        return 0

    def defaulted(x=None):  # None is the default: a number back is an answer
        return 0.0

    assert probe_call(reads_none_as_nan, 1, [], none).startswith("returns int for None")
    assert probe_call(checks_first, 1, [], none) is None
    assert probe_call(defaulted, 0, ["x"], none, required=False) is None
    assert probe_call(lambda x: x is None, 1, [], none) is None  # a yes/no answer

    def late(x):
        if x is None:
            raise ValueError("x must be an array")
        yield x

    def early(x):
        if x is None:
            raise ValueError("x must be an array")
        return late(x)

    assert "only when iterated" in probe_call(late, 1, [], none)
    assert probe_call(early, 1, [], none) is None


def test_exemptions_by_type():
    from typing import NamedTuple

    @dataclasses.dataclass
    class Result:
        x: float

    class Pair(NamedTuple):
        a: int

    @dataclasses.dataclass
    class Computes:  # __post_init__ works on the fields: probed like any constructor
        x: float

        def __post_init__(self):
            self.y = 1 / self.x

    for obj in (Result, Pair, ValueError, np.mean, math.sqrt, np):
        assert _is_exempt(obj), obj
    Result.__module__ = Computes.__module__ = "lab.example"  # as if defined in lab
    assert _is_exempt(Result) and not _is_exempt(Computes)
    assert probe_call(Computes, 1, [], JUNK_NAMES.index("str")) is None  # 1 / "junk": TypeError
    assert probe_call(Computes, 1, [], JUNK_NAMES.index("empty array")) is None
    import lab.eos

    assert not _is_exempt(lab.eos.gd)


def test_core_answers_junk_clearly(tmp_path, monkeypatch):
    calls, offenders = run_probe(_core_modules(), tmp_path, monkeypatch)
    assert calls > 0
    assert not offenders, _report("lab.core", calls, offenders)


@pytest.mark.parametrize("slug", _chapters())
def test_chapter_answers_junk_clearly(slug, tmp_path, monkeypatch):
    calls, offenders = run_probe([f"lab.{slug}"], tmp_path, monkeypatch)
    assert calls > 0, f"lab.{slug} has no public callable to probe"
    assert not offenders, _report(f"lab.{slug}", calls, offenders)
