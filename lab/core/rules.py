"""Verdict rules: conditions on a measured value, tiers of them, and paired intervals over seeds.

A claim's verdict (:mod:`lab.core.claims`) is decided by a :class:`Rule` written before the
measurement: the first tier whose :class:`Condition` the measured value satisfies gives the
verdict. The same rule also judges the claim's **control** (the nearest rival), so a rule that
cannot tell the method from its rival shows it.

Two stochastic methods are compared by a **paired interval over seeds** (:func:`paired`, read
by :func:`ci_above` / :func:`ci_below`), never by the sign of a mean or a threshold with no
margin: the point conditions refuse a paired interval, and a point condition whose threshold
is 0 or 1 (a sign test or a ratio at parity) marks its record with the flag ``sign-test``
unless it is declared ``deterministic=True`` (the compared values carry no seed noise).

Everything here is re-exported by :mod:`lab.core.claims` (``claims.within``, ``claims.rule``...).

See: CONTRIBUTING.md ("Claims") and ``book/eos/02-rates-and-bifurcation.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NOT_MEASURED",
    "NOT_REPRODUCED",
    "QUALITATIVE",
    "REPRODUCED",
    "VERDICTS",
    "Condition",
    "Rule",
    "at_least",
    "at_most",
    "between",
    "ci_above",
    "ci_below",
    "ci_outside",
    "ci_within",
    "format_value",
    "holds",
    "paired",
    "rule",
    "within",
]

REPRODUCED = "reproduced"
QUALITATIVE = "reproduced qualitatively"
NOT_REPRODUCED = "not reproduced at this size"
#: nothing was measured (``measured=None``: the hardware the claim needs is absent, e.g. no
#: GPU): no verdict about the paper, counted apart on the scorecard
NOT_MEASURED = "not measured on this hardware"
VERDICTS = (REPRODUCED, QUALITATIVE, NOT_REPRODUCED, NOT_MEASURED)

#: the kinds of measured value a condition reads
POINT, INTERVAL, BOOLEAN, CUSTOM = "point", "interval", "boolean", "custom"


def _is_bool(value: Any) -> bool:
    """A Python or numpy boolean (numpy 2 names its type ``bool``)."""
    return isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    )


def _real(value: Any, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        and not hasattr(value, "__float__")
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must be a number, got NaN")
    return out


def _num(x: Any) -> float:
    v = float(x)
    if math.isnan(v):
        raise ValueError("NaN")
    return v


def is_paired(value: Any) -> bool:
    """True for the interval :func:`paired` returns."""
    return isinstance(value, dict) and value.get("paired") is True


@dataclass(frozen=True)
class Condition:
    """A test on a measured value with the sentence that describes it.

    ``test`` returns True when the measured value satisfies the condition; a value of the wrong
    kind (a NaN, a missing interval) never satisfies it. ``kind`` says what the condition reads
    (``point``, ``interval``, ``boolean`` or ``custom``); ``sign`` marks a point condition whose
    threshold is 0 or 1 and that was not declared deterministic (see :func:`at_least`).
    """

    text: str
    test: Callable[[Any], bool] = field(repr=False, compare=False)
    kind: str = CUSTOM
    sign: bool = False
    distance: Callable[[Any], tuple[float, str]] | None = field(
        default=None, repr=False, compare=False
    )

    def margin(self, measured: Any) -> tuple[float, str] | None:
        """How far ``measured`` sits from this condition's boundary: ``(value, unit)``, positive
        inside (satisfied), negative outside; ``unit`` is ``"se"`` (standard errors of an
        interval) or ``"relative"`` (a point value against its threshold). None when the
        condition cannot say (a custom condition without ``distance``, a value of another kind).
        """
        if self.distance is None:
            return None
        try:
            value, unit = self.distance(measured)
            value = float(value)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
            return None
        return None if math.isnan(value) else (value, unit)

    def __call__(self, measured: Any) -> bool:
        if self.kind == POINT and is_paired(measured):
            raise TypeError(
                f"the condition '{self.text}' reads one number, but the measured value is a "
                "paired interval over seeds: decide it with ci_above / ci_below / ci_within"
            )
        try:
            return bool(self.test(measured))
        except (TypeError, ValueError, IndexError, KeyError):
            return False


def _relative(m: Any, threshold: float, above: bool) -> tuple[float, str]:
    """Signed distance of a point value from a threshold, relative to the larger magnitude."""
    v = _num(m)
    scale = max(math.fabs(threshold), math.fabs(v))
    d = (v - threshold) if above else (threshold - v)
    return (0.0 if scale == 0 else d / scale), "relative"


#: z for a 95% interval: the standard error of an interval given without one
_Z95 = 1.959963984540054


def _se(m: Any) -> float:
    """The standard error of a measured interval (its ``se``, else its width / (2 · 1.96))."""
    if isinstance(m, dict) and m.get("se") is not None:
        se = _num(m["se"])
    else:
        lo, hi = _ci(m)
        se = (hi - lo) / (2 * _Z95)
    if not se > 0:
        raise ValueError("no spread")
    return se


def _interval_distance(m: Any, d: float) -> tuple[float, str]:
    return d / _se(m), "se"


def _check_deterministic(deterministic: Any) -> bool:
    if not _is_bool(deterministic):
        raise TypeError(f"deterministic must be a bool, got {type(deterministic).__name__}")
    return bool(deterministic)


def _point(
    text: str,
    test: Callable[[Any], bool],
    thresholds,
    deterministic: bool,
    distance: Callable[[Any], tuple[float, str]] | None = None,
) -> Condition:
    sign = not deterministic and any(t in (0.0, 1.0) for t in thresholds)
    return Condition(text, test, POINT, sign, distance)


def within(
    target: float,
    *,
    rel: float | None = None,
    abs: float | None = None,  # noqa: A002
) -> Condition:
    """``|measured - target| <= tol``, with ``tol = max(abs, rel * |target|)``."""
    t = _real(target, "target")
    if rel is None and abs is None:
        raise ValueError("within() needs rel= or abs= (a tolerance >= 0)")
    r = 0.0 if rel is None else _real(rel, "rel")
    a = 0.0 if abs is None else _real(abs, "abs")
    if r < 0 or a < 0:
        raise ValueError(f"rel and abs must be >= 0, got rel={rel!r}, abs={abs!r}")
    tol = max(a, r * math.fabs(t))
    parts = []
    if abs is not None:
        parts.append(f"± {format_value(a)}")
    if rel is not None:
        parts.append(f"± {format_value(100 * r)}%")

    def distance(m: Any) -> tuple[float, str]:
        v = _num(m)
        lo, hi = t - tol, t + tol
        near = lo if math.fabs(v - lo) < math.fabs(v - hi) else hi
        inside = tol - math.fabs(v - t)
        scale = max(math.fabs(near), math.fabs(v))
        return (0.0 if scale == 0 else inside / scale), "relative"

    return Condition(
        f"within {' or '.join(parts)} of {format_value(t)}",
        lambda m: math.fabs(_num(m) - t) <= tol,
        POINT,
        distance=distance,
    )


def between(lo: float, hi: float, *, deterministic: bool = False) -> Condition:
    """``lo <= measured <= hi``.

    A one-sided interval at 0 or 1 (``between(0, inf)``) is a sign test: see :func:`at_least`.
    """
    a, b = _real(lo, "lo"), _real(hi, "hi")
    if a > b:
        raise ValueError(f"between() needs lo <= hi, got lo={lo!r}, hi={hi!r}")
    one_sided = [t for t, other in ((a, b), (b, a)) if math.isinf(other)]

    def distance(m: Any) -> tuple[float, str]:
        ends = [_relative(m, a, True)[0] if not math.isinf(a) else math.inf]
        ends.append(_relative(m, b, False)[0] if not math.isinf(b) else math.inf)
        return min(ends), "relative"

    return _point(
        f"in [{format_value(a)}, {format_value(b)}]",
        lambda m: a <= _num(m) <= b,
        one_sided,
        _check_deterministic(deterministic),
        distance,
    )


def at_least(x: float, *, deterministic: bool = False) -> Condition:
    """``measured >= x``.

    With ``x`` equal to 0 or 1 this is a sign test (a difference above zero, a ratio above
    parity). Its record carries the flag ``sign-test`` unless ``deterministic=True`` says the
    measured value has no seed noise (an exact count, a closed form, a deterministic solver):
    a comparison of two stochastic methods is decided by :func:`ci_above` on :func:`paired`.
    """
    a = _real(x, "x")
    return _point(
        f"≥ {format_value(a)}",
        lambda m: _num(m) >= a,
        [a],
        _check_deterministic(deterministic),
        lambda m: _relative(m, a, True),
    )


def at_most(x: float, *, deterministic: bool = False) -> Condition:
    """``measured <= x`` (a threshold at 0 or 1 is a sign test: see :func:`at_least`)."""
    a = _real(x, "x")
    return _point(
        f"≤ {format_value(a)}",
        lambda m: _num(m) <= a,
        [a],
        _check_deterministic(deterministic),
        lambda m: _relative(m, a, False),
    )


def holds(text: str = "the statement holds") -> Condition:
    """The measured value is the boolean ``True`` (a check that was run and passed)."""
    if not isinstance(text, str) or not text:
        raise TypeError("text must be a non-empty string")
    return Condition(text, lambda m: _is_bool(m) and bool(m), BOOLEAN)


def _ci(m: Any) -> tuple[float, float]:
    if isinstance(m, dict):
        lo, hi = m["lo"], m["hi"]
    else:
        lo, hi = m[-2], m[-1]
    return _num(lo), _num(hi)


def ci_within(lo: float, hi: float) -> Condition:
    """The measured confidence interval ``(lo_m, hi_m)`` (or ``(estimate, lo_m, hi_m)``, or a
    dict with ``lo``/``hi`` such as :func:`paired`'s) lies inside ``[lo, hi]``."""
    a, b = _real(lo, "lo"), _real(hi, "hi")
    if a > b:
        raise ValueError(f"ci_within() needs lo <= hi, got lo={lo!r}, hi={hi!r}")
    return Condition(
        f"confidence interval inside [{format_value(a)}, {format_value(b)}]",
        lambda m: a <= _ci(m)[0] and _ci(m)[1] <= b,
        INTERVAL,
        distance=lambda m: _interval_distance(m, min(_ci(m)[0] - a, b - _ci(m)[1])),
    )


def ci_above(x: float) -> Condition:
    """The whole measured confidence interval lies above ``x`` (excludes it)."""
    a = _real(x, "x")
    return Condition(
        f"confidence interval above {format_value(a)}",
        lambda m: _ci(m)[0] > a,
        INTERVAL,
        distance=lambda m: _interval_distance(m, _ci(m)[0] - a),
    )


def ci_below(x: float) -> Condition:
    """The whole measured confidence interval lies below ``x`` (excludes it)."""
    a = _real(x, "x")
    return Condition(
        f"confidence interval below {format_value(a)}",
        lambda m: _ci(m)[1] < a,
        INTERVAL,
        distance=lambda m: _interval_distance(m, a - _ci(m)[1]),
    )


def ci_outside(lo: float, hi: float) -> Condition:
    """The whole measured confidence interval lies outside ``[lo, hi]``, on either side: a
    two-sided effect at least as large as the band (``ci_outside(0, 0)``: the interval
    excludes 0; ``ci_outside(-d, d)``: the effect exceeds ``d`` in size, with confidence)."""
    a, b = _real(lo, "lo"), _real(hi, "hi")
    if a > b:
        raise ValueError(f"ci_outside() needs lo <= hi, got lo={lo!r}, hi={hi!r}")
    band = f"[{format_value(a)}, {format_value(b)}]" if a < b else format_value(a)
    return Condition(
        f"confidence interval outside {band}",
        lambda m: _ci(m)[0] > b or _ci(m)[1] < a,
        INTERVAL,
        distance=lambda m: _interval_distance(m, max(_ci(m)[0] - b, a - _ci(m)[1])),
    )


def paired(a: Any, b: Any, *, level: float = 0.95) -> dict:
    """The paired interval over seeds of ``a - b``: how two stochastic methods are compared.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        One value per seed for each method, seed ``i`` of ``a`` paired with seed ``i`` of
        ``b`` (same data, same initialisation where the methods allow); ``n >= 2``.
    level : float
        Confidence level in ``(0, 1)``.

    Returns
    -------
    dict
        ``{"estimate", "lo", "hi", "se", "n", "level", "paired": True}``: the mean difference
        and its Student-t interval (:func:`lab.core.rates.mean_ci` of the differences). Rules
        read it with :func:`ci_above` / :func:`ci_below` / :func:`ci_within`; the point
        conditions refuse it.
    """
    import numpy as np

    from lab.core.checks import check_array
    from lab.core.rates import mean_ci

    x = check_array("a", a, ndim=1, min_size=2)
    y = check_array("b", b, ndim=1, min_size=2)
    if x.shape != y.shape:
        raise ValueError(
            f"a and b must hold one value per seed each, paired: got {x.size} and {y.size}"
        )
    ci = mean_ci(np.asarray(x, float) - np.asarray(y, float), level=level)
    return {
        "estimate": ci.mean,
        "lo": ci.low,
        "hi": ci.high,
        "se": ci.se,
        "n": ci.n,
        "level": ci.level,
        "paired": True,
    }


@dataclass(frozen=True)
class Rule:
    """Tiers of conditions: the first that the measured value satisfies gives the verdict.

    ``reproduced`` and ``qualitatively`` are :class:`Condition` objects (or None: that tier is never
    awarded); a value that satisfies neither is "not reproduced at this size"; ``None`` (nothing
    was measured) is "not measured on this hardware", no verdict about the paper.
    """

    reproduced: Condition | None = None
    qualitatively: Condition | None = None

    def decide(self, measured: Any) -> str:
        """The verdict for ``measured`` (:data:`NOT_MEASURED` for ``None``: nothing measured)."""
        if measured is None:
            return NOT_MEASURED
        if self.reproduced is not None and self.reproduced(measured):
            return REPRODUCED
        if self.qualitatively is not None and self.qualitatively(measured):
            return QUALITATIVE
        return NOT_REPRODUCED

    def margin(self, measured: Any) -> dict | None:
        """How far the verdict sits from the nearest tier boundary: ``{"value", "unit"}``.

        The verdict changes when the tier that gives it stops holding or an earlier tier starts
        to: the margin is the smallest of those distances (:meth:`Condition.margin`), in
        standard errors for an interval (``unit`` ``"se"``) or relative for a point value. A
        statistic one standard error from a boundary flips under an independent seed set about
        24% of the time, two about 8%: the contract refuses an expected verdict under two.
        None when a tier cannot say (a custom condition without a distance); a boolean has
        ``{"value": None, "unit": "exact"}``.
        """
        if _is_bool(measured):
            return {"value": None, "unit": "exact"}
        if measured is None:
            return {"value": None, "unit": "unmeasured"}
        verdict = self.decide(measured)
        found: list[tuple[float, str]] = []
        for name, cond in ((REPRODUCED, self.reproduced), (QUALITATIVE, self.qualitatively)):
            if cond is None:
                continue
            m = cond.margin(measured)
            if m is None:
                return None
            found.append((math.fabs(m[0]), m[1]))
            if name == verdict:
                break
        if not found:
            return None
        value, unit = min(found, key=lambda vu: vu[0])
        return {"value": value, "unit": unit}

    def flags(self, measured: Any) -> list[str]:
        """What the record should say about how this rule read ``measured``: ``sign-test``
        when a tier is a threshold at 0 or 1 applied to one number (no interval)."""
        tiers = [c for c in (self.reproduced, self.qualitatively) if c is not None]
        if any(c.sign for c in tiers) and not is_paired(measured) and not _is_bool(measured):
            return ["sign-test"]
        return []

    @property
    def text(self) -> str:
        """The rule in words (shown beside the verdict)."""
        parts = []
        if self.reproduced is not None:
            parts.append(f"reproduced if {self.reproduced.text}")
        if self.qualitatively is not None:
            parts.append(f"qualitatively if {self.qualitatively.text}")
        parts.append("otherwise not reproduced")
        return "; ".join(parts)


def rule(reproduced: Condition | None = None, qualitatively: Condition | None = None) -> Rule:
    """A verdict rule (see :class:`Rule`); at least one tier must be given."""
    for name, cond in (("reproduced", reproduced), ("qualitatively", qualitatively)):
        if cond is not None and not isinstance(cond, Condition):
            raise TypeError(
                f"{name} must be a Condition (within, between, at_least, at_most, holds, "
                f"ci_within, ci_above, ci_below), got {type(cond).__name__}"
            )
    if reproduced is None and qualitatively is None:
        raise ValueError("rule() needs a reproduced= or qualitatively= condition")
    return Rule(reproduced, qualitatively)


def format_value(value: Any, digits: int = 4) -> str:
    """A short, stable text for a measured value (``digits`` significant digits)."""
    if _is_bool(value):
        return "yes" if bool(value) else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float) or hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v == 0:
            return "0"
        if 1e-3 <= abs(v) < 1e5:
            return f"{v:.{digits}g}"
        mant, exp = f"{v:.{max(digits - 2, 1)}e}".split("e")
        return f"{mant}×10^{int(exp)}"
    if is_paired(value):
        return (
            f"{format_value(value['estimate'], digits)} "
            f"[{format_value(value['lo'], digits)}, {format_value(value['hi'], digits)}]"
            f" (paired, n = {value['n']})"
        )
    if isinstance(value, dict):
        return ", ".join(f"{k} {format_value(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(format_value(v, digits) for v in value) + ")"
    return str(value)
