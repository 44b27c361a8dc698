"""The outcomes that the claims judge, measured the same way for a run and for its control.

* ``tail_rates``: the linear rate of ``|θ⊥_t|`` after the exit time (Thm 5.1), against the
  rate ``|1 - η λ|`` predicted at any curvature (the limit's, the exit's, the start's);
* ``subcritical_outcome`` / ``supercritical_outcome``: what notebook 1 checks of Thms 5.1 and
  5.3 on one xy run (a critical or past-the-window run is its control).

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_instance, check_int, check_positive, check_range
from lab.core.rates import exponential_fit
from lab.eos.models import ScalarModel, check_model
from lab.eos.results import ManifoldRuns

__all__ = ["TailRates", "tail_rates", "subcritical_outcome", "supercritical_outcome"]


@dataclass
class TailRates:
    """Linear rates of ``|θ⊥_t|`` after the exit time, one per start (``tail_rates``).

    Attributes
    ----------
    eta : float
    rate : ndarray, shape (n,)
        Fitted ``ρ`` of ``|θ⊥_t| ~ C ρ^t`` on each start's window (NaN without a window).
    window : ndarray of int, shape (n, 2)
        First and last step of each fit.
    sharpness_start, sharpness_exit, sharpness_end : ndarray, shape (n,)
        ``λ(θ∥_0)``, ``λ(θ∥_τ)`` and ``λ(θ∥_T)`` at the last recorded step (``λ_∞``).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    eta: float
    rate: np.ndarray
    window: np.ndarray
    sharpness_start: np.ndarray
    sharpness_exit: np.ndarray
    sharpness_end: np.ndarray

    def predicted(self, sharpness: Any) -> np.ndarray:
        """The linear rate ``|1 - η λ|`` of the normal coordinate at curvature ``λ``."""
        return np.abs(1.0 - self.eta * np.asarray(sharpness, dtype=np.float64))


def tail_rates(runs: ManifoldRuns, below: float = 1e-3, floor: float = 1e-12) -> TailRates:
    """Fit the linear rate of ``|θ⊥_t|`` where it is small: from the step after which
    ``|θ⊥_t| < below`` for good (after the exit time ``τ``) up to the last step before
    ``|θ⊥_t| <= floor`` (the window is fixed by these bounds, not by the result; ``below`` keeps
    the nonlinear corrections small, ``floor`` stays above round-off).

    Parameters
    ----------
    runs : ManifoldRuns
        Runs recorded densely (``dense`` = ``steps``) in the subcritical regime.
    below, floor : float
        Bounds on ``|θ⊥_t|`` that define the window, ``0 < floor < below``.

    Returns
    -------
    TailRates

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    check_instance("runs", runs, ManifoldRuns)
    below = check_range("below", below, 1e-300, 1.0)
    floor = check_range("floor", floor, 0.0, below)
    if not floor < below:
        raise ValueError(f"floor must be < below (got floor={floor:g}, below={below:g})")
    tau = runs.exit_times()
    n = runs.perp.shape[0]
    rate, window = np.full(n, np.nan), np.full((n, 2), -1)
    lam_exit = np.full(n, np.nan)
    for i in range(n):
        if tau[i] < 0:
            continue
        lam_exit[i] = runs.sharpness[i, int(np.searchsorted(runs.t, tau[i]))]
        a = np.abs(runs.perp[i])
        after = runs.t > tau[i]
        high = np.nonzero(after & ~(a < below))[0]  # |θ⊥| >= below (or NaN) after τ
        first = (high.max() + 1) if high.size else int(np.argmax(after))
        low = np.nonzero((np.arange(a.size) >= first) & (a <= floor))[0]
        last = (low.min() - 1) if low.size else a.size - 1
        if last - first < 2:
            continue
        sel = slice(first, last + 1)
        window[i] = runs.t[first], runs.t[last]
        rate[i] = exponential_fit(runs.t[sel].astype(float), a[sel]).factor  # |θ⊥| ~ C ρ^t
    return TailRates(
        runs.eta, rate, window, runs.sharpness[:, 0].copy(), lam_exit, runs.sharpness[:, -1].copy()
    )


def subcritical_outcome(run: Any, r0: float, below: float = 1e-5, floor: float = 1e-12) -> dict:
    """What notebook 1 measures on one xy run for Thm 5.1: the exit step (after which
    ``|r_k| < r0`` for good; ``None`` if never), the final sharpness, the tail rate of ``|r_k|``
    on the steps after the exit with ``floor < |r_k| < below``, and ``|1 - η λ_∞|``.

    See: book/eos/01-three-regimes.ipynb
    """
    from lab.eos.reference import Trajectory

    if not isinstance(run, Trajectory):
        raise TypeError(f"run must be a Trajectory from gd (got {type(run).__name__})")
    r0 = check_positive("r0", r0)
    a = np.abs(run.residual)
    high = np.nonzero(a >= r0)[0]
    exit_step = int(high.max()) + 1 if high.size else 0
    if exit_step >= a.size:
        exit_step = None
    lam = float(run.sharpness[-1])
    rate = math.nan
    if exit_step is not None:
        k = np.arange(a.size)
        ok = (k > exit_step) & (a < below) & (a > floor)
        if ok.sum() >= 2:
            rate = exponential_fit(k[ok].astype(float), a[ok]).factor
    return {
        "exit_step": exit_step,
        "sharpness": lam,
        "rate": rate,
        "predicted": abs(1.0 - run.eta * lam),
    }


def supercritical_outcome(model: ScalarModel, run: Any, at: int = 3000) -> dict:
    """What notebook 1 measures on one xy run for Thm 5.3: the imbalance at step ``at``, the gap
    between the last two iterates and the root-found 2-cycle (``inf`` where there is none), and
    the 2-cycle's midpoint.

    See: book/eos/01-three-regimes.ipynb
    """
    from lab.eos.reference import Trajectory
    from lab.eos.regimes import period_two_orbit

    model = check_model(model)
    if not isinstance(run, Trajectory):
        raise TypeError(f"run must be a Trajectory from gd (got {type(run).__name__})")
    at = check_int("at", at, 0, run.steps_run)
    try:
        orbit = np.array(period_two_orbit(model, run.eta))
    except ValueError:
        orbit = None
    late = run.w[-2:]
    if orbit is None:
        gap, mid = math.inf, math.nan
    else:
        gap = float(min(np.abs(late - orbit).max(), np.abs(late - orbit[::-1]).max()))
        mid = float(orbit[:, 0].mean())
    return {"imbalance": float(abs(model.imbalance(run.w[at]))), "gap": gap, "midpoint": mid}
