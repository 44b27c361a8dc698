"""The regimes of Sec. 5 and what lies beyond them: the period-2 orbit, its window, chaos.

* ``period_two_orbit``: the stable 2-cycle of the supercritical regime (Thm 5.3) on the
  GD-invariant balanced line (the paper's line ``L`` of A3.2, Prop B.2);
* ``classify_regime`` / ``regime_thresholds``: stable, subcritical (Thm 5.1), critical
  (Thm 5.2), supercritical (Thm 5.3) or divergent, from the step and the start;
* ``attractor``: the period and the largest Lyapunov exponent of where GD ends up, for step
  sizes past the supercritical window (period 4, then chaos: Sec. 6 "higher-order periodicity
  and chaos", which the paper leaves open).

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.optimize import brentq

from lab.core.checks import check_bool, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.eos.models import ScalarModel, check_model, check_point
from lab.eos.reference import gd_loop

__all__ = [
    "RegimeThresholds",
    "Attractor",
    "period_two_orbit",
    "classify_regime",
    "regime_thresholds",
    "attractor",
]

Regime = Literal["stable", "subcritical", "critical", "supercritical", "divergent"]


# ---------------------------------------------------------------------------------------------
# The period-2 orbit (Thm 5.3) and the end of the supercritical window
# ---------------------------------------------------------------------------------------------


def _balanced_fixed_point(model: ScalarModel) -> float:
    return float(model.balanced_fixed_point())


def _balanced_two_cycle(model: ScalarModel, eta: float) -> tuple[float, float] | None:
    """Solve F(F(a)) = a, a != a*, on the balanced line; None when there is no such root."""
    a_star = _balanced_fixed_point(model)

    def G(a: float) -> float:  # eq: G(a) = F(F(a)) - a
        with np.errstate(all="ignore"):
            return float(model.balanced_map(model.balanced_map(np.float64(a), eta), eta) - a)

    # scan outward from a* on a log grid of offsets; the outer cycle point is the first
    # + -> - sign change of G (G > 0 just above a* when the fixed point is a flip-unstable)
    grid = a_star * (1.0 + np.geomspace(1e-9, 2.0, 3000))
    with np.errstate(all="ignore"):
        g = model.balanced_map(model.balanced_map(grid, eta), eta) - grid
    idx = np.nonzero((g[:-1] > 0) & (g[1:] <= 0) & np.isfinite(g[1:]))[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    a1 = brentq(G, grid[i], grid[i + 1], xtol=1e-16, rtol=4 * np.finfo(float).eps, maxiter=200)
    a2 = float(model.balanced_map(np.float64(a1), eta))
    return float(a1), a2


def _two_cycle_multiplier(model: ScalarModel, eta: float, a1: float, a2: float) -> float:
    """Spectral radius of the Jacobian of the two-step GD map at the 2-cycle."""
    eye = np.eye(model.dim)
    j1 = eye - eta * model.loss_hessian(model.balanced(a1))  # eq: D(GD) = I - eta H
    j2 = eye - eta * model.loss_hessian(model.balanced(a2))
    return float(np.max(np.abs(np.linalg.eigvals(j2 @ j1))))


@memo(maxsize=64)
def _period_doubling_eta(model: ScalarModel) -> float:
    """Upper end of the supercritical window: where the 2-cycle's multiplier reaches -1.

    Measured by root finding on the spectral radius of the two-step Jacobian (xy: exactly
    sqrt(5) - 1; the transverse multiplier 3 - 2 eta stays inside the unit disk there).
    """
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min

    def rho(eta: float) -> float:
        cyc = _balanced_two_cycle(model, eta)
        if cyc is None:
            return 2.0
        # the margin ignores neutral multipliers (exactly 1): for <u, v> with m > 1 the
        # directions of u + v and u - v are conserved, so the 2-cycles form a family
        return _two_cycle_multiplier(model, eta, *cyc) - 1.0 - 1e-9

    etas = eta_c * (1.0 + np.linspace(1e-3, 1.0, 101))
    prev = etas[0]
    for e in etas[1:]:
        if rho(e) >= 0:
            return float(brentq(rho, prev, e, xtol=1e-13))
        prev = e
    return float(etas[-1])


def period_two_orbit(
    model: ScalarModel, eta: float, *, allow_unstable: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The period-2 orbit of GD on the balanced set, centred on the flattest minimiser.

    On the balanced line (xy: ``x = y = a``; product: all ``|w_i| = a``) GD reduces to a
    1-D map ``F`` (xy: ``a' = a (1 + eta - eta a^2)``). The 2-cycle solves
    ``F(F(a)) = a``, ``a != a*``; it is found by a sign scan and ``scipy.optimize.brentq``.
    For xy it is also explicit: ``r_+- = (1 - u_-+) / eta`` with
    ``u_+- = (1 + eta +- sqrt((1 + eta)^2 - 4)) / 2`` (e.g. ``{4/21, -5/21}`` at
    ``eta = 1.05``), amplitude ``sqrt((eta - 1)(eta + 3)) / (2 eta)``.

    Parameters
    ----------
    model : ScalarModel
    eta : float
        Must lie in the supercritical window ``2/lambda_min < eta < eta_max``
        (``eta_max = sqrt(5) - 1`` for xy; see ``regime_thresholds``).
    allow_unstable : bool
        Return the (unstable) cycle for ``eta >= eta_max`` as well.

    Returns
    -------
    (w_plus, w_minus) : tuple of ndarray, shape (D,)
        The two points; ``w_plus`` is the one with positive residual.

    Raises
    ------
    ValueError
        For ``eta <= 2/lambda_min`` (the flattest minimiser is stable, no 2-cycle) or
        ``eta >= eta_max`` (the cycle has period-doubled; GD does not converge to it).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    eta = check_positive("eta", eta)
    allow_unstable = check_bool("allow_unstable", allow_unstable)
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    if eta <= eta_c:
        raise ValueError(
            f"no period-2 orbit for eta = {eta:g} <= 2/lambda_min = {eta_c:g}: the flattest "
            "minimiser is stable (subcritical or critical regime)"
        )
    eta_max = _period_doubling_eta(model)
    if eta >= eta_max and not allow_unstable:
        raise ValueError(
            f"eta = {eta:g} is outside the supercritical window ({eta_c:g}, {eta_max:.6g}): "
            "the 2-cycle has period-doubled and GD does not converge to it "
            "(pass allow_unstable=True to get it anyway)"
        )
    cyc = _balanced_two_cycle(model, eta)
    if cyc is None:
        raise ValueError(f"no period-2 orbit found on the balanced set for eta = {eta:g}")
    a1, a2 = cyc
    w1, w2 = model.balanced(a1), model.balanced(a2)
    if model.residual(w1) < model.residual(w2):
        w1, w2 = w2, w1
    return w1, w2


# ---------------------------------------------------------------------------------------------
# Regimes (Sec. 5): thresholds and the label of a run
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegimeThresholds:
    """Step-size boundaries of the regimes for one model and start point.

    Attributes
    ----------
    lambda0, lambda_min : float
        Sharpness of the start's projected minimiser and the optimal flatness.
    eta_stable : float
        ``2 / lambda0``: below it the start is stable (no EoS phase).
    eta_critical : float
        ``2 / lambda_min``.
    critical_band : (float, float)
        Steps labelled "critical": ``|eta lambda_min / 2 - 1| <= critical_rtol``.
    eta_period_doubling : float
        End of the supercritical window: the balanced 2-cycle period-doubles
        (``sqrt(5) - 1 = 1.2361`` for xy).
    eta_blowup : float
        Smallest step at which GD from ``w0`` blows up (``|r| > 1e6``) within
        ``probe_steps``, by bisection (``inf`` if none up to ``2 * eta_period_doubling``).
        For xy started near ``M`` this is ``4 / lambda0`` (measured to 1e-6).
    eta_divergent : float
        ``min(eta_period_doubling, eta_blowup)``: the badge says "divergent" from here.

    See: book/eos/01-three-regimes.ipynb
    """

    lambda0: float
    lambda_min: float
    eta_stable: float
    eta_critical: float
    critical_band: tuple[float, float]
    eta_period_doubling: float
    eta_blowup: float
    eta_divergent: float


def _blows_up(model: ScalarModel, w0: np.ndarray, eta: float, probe_steps: int) -> bool:
    _, _, diverged = gd_loop(model, w0, eta, probe_steps)
    return bool(diverged)


def classify_regime(
    model: ScalarModel,
    eta: float,
    w0: Any,
    *,
    critical_rtol: float = 1e-3,
    probe_steps: int = 2000,
) -> Regime:
    """Which regime GD from ``w0`` with step ``eta`` is in.

    With ``lambda0 = sharpness_on_manifold(model, w0)``, ``eta_c = 2 / lambda_min`` and
    ``eta_max`` the period-doubling step of the balanced 2-cycle (``sqrt(5) - 1`` for xy):

    * ``"divergent"``: ``eta >= eta_max`` (beyond the theorem: period-4, chaos, then
      blow-up), or GD from ``w0`` actually blows up (``|r| > 1e6``) within ``probe_steps``
      steps (a catapult from a sharp start). Measured for xy started near ``M``: GD blows
      up iff ``eta > 4 / lambda0`` (to 1e-6, for ``lambda0`` in ``[2.05, 5]``, ``r0`` =
      1e-3 or 1e-6), the catapult bound of Lewkowycz et al. 2020; so from ``lambda0 = 3.5``
      it blows up for ``eta > 1.143``, inside the supercritical window;
    * ``"critical"``: ``|eta / eta_c - 1| <= critical_rtol`` (default 1e-3, i.e. a band of
      +-0.001 around ``eta_c = 1`` for xy);
    * ``"stable"``: ``eta < 2 / lambda0``;
    * ``"subcritical"``: ``2 / lambda0 <= eta < eta_c``;
    * ``"supercritical"``: ``eta_c < eta < eta_max``.

    ``probe_steps=0`` disables the blow-up probe.

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    eta = check_positive("eta", eta)
    w0 = check_point(model, "w0", w0)
    critical_rtol = check_range("critical_rtol", critical_rtol, 0.0, 0.5)
    probe_steps = check_int("probe_steps", probe_steps, 0, 10_000_000)
    return regime_of(model, eta, w0, critical_rtol, probe_steps)


def regime_of(
    model: ScalarModel,
    eta: float,
    w0: np.ndarray,
    critical_rtol: float = 1e-3,
    probe_steps: int = 2000,
    run: Any = None,
) -> Regime:
    """``classify_regime`` on validated arguments. ``run``, a ``Trajectory`` of GD from the
    same ``w0`` and ``eta``, stands in for the blow-up probe when it reaches ``probe_steps``
    or diverged before (the loop is deterministic: the probe would retrace its first steps)."""
    lam0 = float(model.manifold_sharpness(w0))
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    if eta >= _period_doubling_eta(model):
        return "divergent"
    if probe_steps:
        if run is not None and (run.diverged or run.steps_run >= probe_steps):
            blown = bool(run.diverged and run.steps_run <= probe_steps)
        else:
            blown = _blows_up(model, w0, eta, probe_steps)
        if blown:
            return "divergent"
    if abs(eta / eta_c - 1.0) <= critical_rtol:
        return "critical"
    if eta * lam0 < 2.0:
        return "stable"
    if eta < eta_c:
        return "subcritical"
    return "supercritical"


def regime_thresholds(
    model: ScalarModel,
    w0: Any,
    *,
    critical_rtol: float = 1e-3,
    probe_steps: int = 2000,
) -> RegimeThresholds:
    """The step-size boundaries used by ``classify_regime`` (for a widget badge).

    ``eta_blowup`` is found by bisection on ``[eta_stable / 2, 2 eta_period_doubling]``,
    assuming the blow-up set is an interval ``[eta_blowup, inf)`` (checked for xy on a 0.005
    grid of ``eta`` for ``lambda0`` in ``[2.05, 4]``). ``probe_steps=0`` skips it (``inf``).

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    w0 = check_point(model, "w0", w0)
    critical_rtol = check_range("critical_rtol", critical_rtol, 0.0, 0.5)
    probe_steps = check_int("probe_steps", probe_steps, 0, 10_000_000)
    lam0 = float(model.manifold_sharpness(w0))
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    eta_pd = _period_doubling_eta(model)
    eta_blow = math.inf
    if probe_steps:
        lo, hi = 0.5 * 2.0 / lam0, 2.0 * eta_pd
        if _blows_up(model, w0, hi, probe_steps):
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                if _blows_up(model, w0, mid, probe_steps):
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-6 * hi:
                    break
            eta_blow = hi
    return RegimeThresholds(
        lambda0=lam0,
        lambda_min=lam_min,
        eta_stable=2.0 / lam0,
        eta_critical=eta_c,
        critical_band=(eta_c * (1.0 - critical_rtol), eta_c * (1.0 + critical_rtol)),
        eta_period_doubling=eta_pd,
        eta_blowup=eta_blow,
        eta_divergent=min(eta_pd, eta_blow),
    )


# ---------------------------------------------------------------------------------------------
# Beyond the window: the attractor's period and its Lyapunov exponent
# ---------------------------------------------------------------------------------------------


@dataclass
class Attractor:
    """Where GD from one start ends up (``attractor``).

    Attributes
    ----------
    period : int
        Smallest ``P <= max_period`` with ``‖θ_{t+P} - θ_t‖ <= tol`` over the last
        ``2 max_period`` steps; ``0`` when there is none (chaos, a longer period, or not yet
        converged) or the run diverged.
    lyapunov : float
        Largest Lyapunov exponent of the GD map along the orbit (per step), from the tangent
        dynamics ``v <- (I - η ∇²l(θ_t)) v``: ``< 0`` on a stable periodic orbit, ``> 0`` on a
        chaotic attractor; ``nan`` if the run diverged.
    diverged : bool
    late : ndarray, shape (2 max_period, D)
        The last iterates.
    returns : ndarray, shape (max_period,)
        ``returns[P - 1] = max_t ‖θ_{t+P} - θ_t‖_∞`` over ``late``: the closure residual that
        ``period`` compares with ``tol`` (the period is the first ``P`` whose residual is
        ``<= tol``), so how far each sits from ``tol`` says how firmly the period is decided;
        NaN if the run diverged.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    period: int
    lyapunov: float
    diverged: bool
    late: np.ndarray = field(repr=False)
    returns: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)


def attractor(
    model: ScalarModel,
    eta: float,
    w0: Any = None,
    *,
    steps: int = 20_000,
    lyapunov_steps: int = 5_000,
    max_period: int = 64,
    tol: float = 1e-9,
) -> Attractor:
    """Period and largest Lyapunov exponent of the attractor GD reaches from ``w0``.

    Parameters
    ----------
    model : ScalarModel
    eta : float
        Step size ``> 0``.
    w0 : array_like, optional
        Start; default the balanced point ``1.1 a*`` (the bifurcation diagram's start).
    steps : int
        Transient steps before the period test (``>= 4 max_period``).
    lyapunov_steps : int
        Steps over which the exponent is averaged (after ``steps``).
    max_period : int
        Longest period looked for.
    tol : float
        Closure tolerance of a period (absolute, ``> 0``).

    Returns
    -------
    Attractor

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    eta = check_positive("eta", eta)
    max_period = check_int("max_period", max_period, 1, 4096)
    steps = check_int("steps", steps, 4 * max_period, 100_000_000)
    lyapunov_steps = check_int("lyapunov_steps", lyapunov_steps, 1, 100_000_000)
    tol = check_positive("tol", tol)
    if w0 is None:
        w0 = model.balanced(1.1 * model.balanced_fixed_point())
    w0 = check_point(model, "w0", w0)
    W, _, diverged = gd_loop(model, w0, eta, steps + lyapunov_steps)
    late = W[-2 * max_period :]
    if diverged:
        return Attractor(0, math.nan, True, late, np.full(max_period, math.nan))
    returns = np.array([np.max(np.abs(late[P:] - late[:-P])) for P in range(1, max_period + 1)])
    closed = np.nonzero(returns <= tol)[0]
    period = int(closed[0]) + 1 if closed.size else 0
    # largest Lyapunov exponent: tangent vector through D(GD) = I - η ∇²l (renormalised)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(model.dim)
    v /= np.linalg.norm(v)
    eye, total = np.eye(model.dim), 0.0
    for w in W[steps : steps + lyapunov_steps]:
        v = (eye - eta * model.loss_hessian(w)) @ v  # eq. (6) differentiated: I - η ∇²l(θ)
        nv = float(np.linalg.norm(v))
        if nv == 0.0:
            return Attractor(period, -math.inf, False, late, returns)
        total += math.log(nv)
        v /= nv
    return Attractor(period, total / lyapunov_steps, False, late, returns)
