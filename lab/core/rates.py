"""Rate fitting, written once: power laws, exponential (linear-convergence) rates, and a
confidence interval for an exponent measured over several seeds.

Every fit is ordinary least squares in log space (``numpy.polyfit`` of degree 1, the fit the
chapters used before), so a chapter switching to these helpers gets the same numbers.

Sign convention: the fitted model is ``y = prefactor * x**exponent`` (power law) or
``y = prefactor * exp(rate * t)`` (exponential); a decaying signal has a **negative**
exponent or rate. An ``O(1/sqrt(T))`` error has exponent ``-0.5``, ``sqrt(T)`` regret
``+0.5``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .checks import check_array, check_choice, check_range

__all__ = [
    "PowerLawFit",
    "ExponentialFit",
    "ExponentCI",
    "power_law_fit",
    "exponential_fit",
    "exponent_ci",
    "MeanCI",
    "mean_ci",
]


@dataclass(frozen=True)
class PowerLawFit:
    """Least-squares fit of ``y = prefactor * x**exponent`` in log-log space.

    Attributes
    ----------
    exponent : float
        The log-log slope (negative for a decaying ``y``).
    prefactor : float
        ``exp`` of the intercept.
    r2 : float
        Coefficient of determination of the log-log fit (1 for an exact power law).
    n : int
        Number of points used (after the window and the positivity filter).
    """

    exponent: float
    prefactor: float
    r2: float
    n: int

    def __call__(self, x: Any) -> np.ndarray:
        """The fitted curve at ``x``."""
        return self.prefactor * np.asarray(x, dtype=np.float64) ** self.exponent


@dataclass(frozen=True)
class ExponentialFit:
    """Least-squares fit of ``y = prefactor * exp(rate * t)`` (a line in ``log y`` vs ``t``).

    Attributes
    ----------
    rate : float
        The slope of ``log y`` against ``t`` (negative for a decaying ``y``).
    prefactor : float
        ``exp`` of the intercept.
    r2 : float
        Coefficient of determination of the fit of ``log y``.
    n : int
        Number of points used.
    """

    rate: float
    prefactor: float
    r2: float
    n: int

    @property
    def factor(self) -> float:
        """``exp(rate)``: the contraction factor per unit of ``t`` (``rho`` of ``C rho^k``)."""
        return math.exp(self.rate)

    def __call__(self, t: Any) -> np.ndarray:
        """The fitted curve at ``t``."""
        return self.prefactor * np.exp(self.rate * np.asarray(t, dtype=np.float64))


@dataclass(frozen=True)
class ExponentCI:
    """An exponent measured once per seed, with a Student-t interval over the seeds.

    Attributes
    ----------
    mean : float
        Mean of the per-seed exponents.
    low, high : float
        The two-sided ``level`` t-interval ``mean -/+ t_{(1+level)/2, k-1} * sd / sqrt(k)``.
    level : float
        Confidence level.
    exponents : np.ndarray, shape (k,)
        The per-seed exponents.
    """

    mean: float
    low: float
    high: float
    level: float
    exponents: np.ndarray = field(repr=False)

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies in ``[low, high]``."""
        return bool(self.low <= value <= self.high)


def _window(name: str, window: Any) -> tuple[float, float]:
    if window is None:
        return -np.inf, np.inf
    if isinstance(window, str | bytes) or not hasattr(window, "__len__") or len(window) != 2:
        raise TypeError(f"{name} must be None or a pair (low, high) (got {window!r})")
    bounds = []
    for i, (b, default) in enumerate(zip(window, (-np.inf, np.inf), strict=True)):
        if b is None:
            bounds.append(default)
            continue
        try:
            bounds.append(check_range(f"{name}[{i}]", b))
        except ValueError:  # +-inf is a valid open end; NaN is not
            if not (isinstance(b, numbers.Real) and math.isinf(b)):
                raise
            bounds.append(float(b))
    lo, hi = bounds
    if lo > hi:
        raise ValueError(f"{name} must have low <= high (got {window!r})")
    return lo, hi


def _xy(x: Any, y: Any, xname: str, yname: str) -> tuple[np.ndarray, np.ndarray]:
    x = check_array(xname, x, ndim=1, min_size=2)
    y = check_array(yname, y, shape=(x.shape[0],))
    return x, y


def _line(u: np.ndarray, v: np.ndarray) -> tuple[float, float, float]:
    """Slope, intercept and R^2 of the least-squares line ``v ~ slope * u + intercept``."""
    slope, intercept = np.polyfit(u, v, 1)
    resid = v - (slope * u + intercept)
    ss_tot = float(np.sum((v - v.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return float(slope), float(intercept), r2


def _select(keep: np.ndarray, u: np.ndarray, what: str) -> None:
    if keep.sum() < 2 or np.unique(u[keep]).size < 2:
        raise ValueError(
            f"{what} needs at least 2 distinct usable points (got {int(keep.sum())} after the "
            "window and the positivity filter)"
        )


def power_law_fit(x: Any, y: Any, *, window: Any = None, nonpositive: str = "drop") -> PowerLawFit:
    """Fit ``y = prefactor * x**exponent`` by least squares on ``(log x, log y)``.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Finite values, ``n >= 2``.
    window : (low, high), optional
        Use only the points with ``low <= x <= high`` (either bound may be ``None``).
    nonpositive : {"drop", "raise"}
        What to do with points where ``x <= 0`` or ``y <= 0`` (no logarithm): skip them
        (a signal that reached exactly zero) or raise ``ValueError``.

    Returns
    -------
    PowerLawFit

    Raises
    ------
    TypeError, ValueError
        Bad shapes, non-finite values, a bad window, or fewer than two distinct usable points.

    Examples
    --------
    >>> k = np.arange(1.0, 100.0)
    >>> round(power_law_fit(k, 3 * k**-0.5).exponent, 12)
    -0.5
    """
    x, y = _xy(x, y, "x", "y")
    lo, hi = _window("window", window)
    check_choice("nonpositive", nonpositive, ["drop", "raise"])
    positive = (x > 0) & (y > 0)
    if nonpositive == "raise" and not positive.all():
        raise ValueError("x and y must be > 0 for a log-log fit (nonpositive='raise')")
    keep = positive & (x >= lo) & (x <= hi)
    _select(keep, x, "power_law_fit")
    slope, intercept, r2 = _line(np.log(x[keep]), np.log(y[keep]))
    return PowerLawFit(slope, math.exp(intercept), r2, int(keep.sum()))


def exponential_fit(
    t: Any, y: Any, *, window: Any = None, nonpositive: str = "drop"
) -> ExponentialFit:
    """Fit ``|y| = prefactor * exp(rate * t)`` by least squares on ``(t, log |y|)``.

    For a geometric sequence ``|err_k| = C rho^k`` sampled at ``t = k``, ``rate = log rho`` and
    ``.factor = rho``. Absolute values are taken, so a sign-alternating residual is fine.

    Parameters
    ----------
    t, y : array_like, shape (n,)
        Finite values, ``n >= 2``.
    window : (low, high), optional
        Use only the points with ``low <= t <= high``.
    nonpositive : {"drop", "raise"}
        What to do with points where ``y == 0``: skip them or raise ``ValueError``.

    Returns
    -------
    ExponentialFit

    Examples
    --------
    >>> k = np.arange(50.0)
    >>> round(exponential_fit(k, 2 * 0.9**k).factor, 12)
    0.9
    """
    t, y = _xy(t, y, "t", "y")
    y = np.abs(y)
    lo, hi = _window("window", window)
    check_choice("nonpositive", nonpositive, ["drop", "raise"])
    positive = y > 0
    if nonpositive == "raise" and not positive.all():
        raise ValueError("y must be nonzero to take logs (nonpositive='raise')")
    keep = positive & (t >= lo) & (t <= hi)
    _select(keep, t, "exponential_fit")
    slope, intercept, r2 = _line(t[keep], np.log(y[keep]))
    return ExponentialFit(slope, math.exp(intercept), r2, int(keep.sum()))


def exponent_ci(x: Any, ys_per_seed: Any, *, level: float = 0.95, window: Any = None) -> ExponentCI:
    """Power-law exponent per seed and a Student-t confidence interval over the seeds.

    Each row of ``ys_per_seed`` is fitted with :func:`power_law_fit` (same ``x`` and
    ``window``; nonpositive points dropped); the interval is
    ``mean -/+ t_{(1+level)/2, k-1} * sd / sqrt(k)`` over the ``k`` per-seed exponents, which
    treats the seeds as independent replications.

    Parameters
    ----------
    x : array_like, shape (n,)
    ys_per_seed : array_like, shape (k, n)
        One measured curve per seed, ``k >= 2``.
    level : float
        Confidence level in ``(0, 1)``.
    window : (low, high), optional
        As in :func:`power_law_fit`.

    Returns
    -------
    ExponentCI
    """

    x = check_array("x", x, ndim=1, min_size=2)
    ys = check_array("ys_per_seed", ys_per_seed, ndim=2)
    if ys.shape[1] != x.shape[0]:
        raise ValueError(
            f"ys_per_seed must have shape (seeds, {x.shape[0]}) to match x (got {ys.shape})"
        )
    if ys.shape[0] < 2:
        raise ValueError(f"ys_per_seed needs at least 2 seeds (rows) (got {ys.shape[0]})")
    level = check_range("level", level, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    p = np.array([power_law_fit(x, row, window=window).exponent for row in ys])
    ci = mean_ci(p, level=level)
    return ExponentCI(ci.mean, ci.low, ci.high, level, p)


@dataclass(frozen=True)
class MeanCI:
    """A mean over independent replications (seeds) with its two-sided Student-t interval
    ``mean -/+ t_{(1+level)/2, n-1} * sd / sqrt(n)`` (``se = sd / sqrt(n)``)."""

    mean: float
    low: float
    high: float
    se: float
    n: int
    level: float


def mean_ci(values: Any, *, level: float = 0.95) -> MeanCI:
    """The mean of ``values`` (one per seed, at least 2) and its Student-t interval.

    The interval every "over seeds" rule of the book reads (``lab.core.claims.ci_*``):
    :func:`exponent_ci` applies it to per-seed exponents; chapters apply it to per-seed
    errors or paired differences.

    Parameters
    ----------
    values : array_like, shape (n,)
        Finite, ``n >= 2``.
    level : float
        Confidence level in ``(0, 1)``.

    Returns
    -------
    MeanCI
    """
    from scipy import stats

    v = check_array("values", values, ndim=1, min_size=2)
    level = check_range("level", level, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    mean = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * se
    return MeanCI(mean, mean - half, mean + half, se, int(v.size), level)
