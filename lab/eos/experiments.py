"""Drivers that the notebooks call: rate fits, the paper's three curves per regime, the drift law,
and the critical runs of the model widget. Each returns a small result dataclass. The outcomes
that the claims judge are in ``outcomes.py``, the small network of notebook 3 in ``network.py``.

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import brentq

from lab.core.checks import check_array, check_instance, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.rates import exponential_fit, power_law_fit
from lab.eos.geometry import tangent_basis
from lab.eos.models import ProductModel, ScalarModel, XYModel, check_model, check_point
from lab.eos.reference import (
    manifold_coordinates,
    project_to_manifold,
    run_gd,
    sharpness_of,
    start_point,
)
from lab.eos.results import Cobweb, CriticalFit, DriftLaw, ManifoldRuns, RegimeRun
from lab.eos.settings import CRITICAL_MODELS, CobwebSettings, CriticalSettings, RegimeSettings

__all__ = [
    "envelope",
    "fit_power_law",
    "fit_linear_rate",
    "starts_on_manifold",
    "manifold_runs",
    "drift_law",
    "critical_run",
    "critical_fit",
    "regime_run",
    "cobweb",
]


# ---------------------------------------------------------------------------------------------
# Rate fits (thin wrappers over lab.core.rates, in the chapter's sign convention)
# ---------------------------------------------------------------------------------------------


def envelope(r: Any) -> np.ndarray:
    """Oscillation envelope ``e_k = max(|r_k|, |r_{k+1}|)`` (length ``len(r) - 1``).

    Fit rates on this (or on ``|x - y|``), never on the sign-alternating ``r_k``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    return _envelope(check_array("r", r, ndim=1, min_size=2))


def _envelope(r: np.ndarray) -> np.ndarray:
    a = np.abs(r)
    return np.maximum(a[:-1], a[1:])


# ---------------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------------


def _is_float32(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and str(dt).replace("torch.", "") == "float32"


def _window_mask(k: np.ndarray, window: Any, name: str = "window") -> np.ndarray:
    if window is None:
        return np.ones(k.shape, bool)
    win = check_array(name, window, shape=(2,))
    lo, hi = float(win[0]), float(win[1])
    if not lo <= hi:
        raise ValueError(f"{name} must be (low, high) with low <= high (got {tuple(win)})")
    return (k >= lo) & (k <= hi)


def fit_power_law(k: Any, err: Any, window: Any = None) -> tuple[float, float]:
    """Least-squares fit of ``err ~ c k^(-p)`` in log-log space.

    Parameters
    ----------
    k : array_like, shape (N,)
        Step indices (only ``k > 0`` are used).
    err : array_like, shape (N,)
        Error signal (only ``err > 0`` are used), e.g. ``|x_k - y_k|`` or
        ``lambda_k - lambda_min``. Warns when ``err`` is float32.
    window : (low, high), optional
        Restrict the fit to ``low <= k <= high``.

    Returns
    -------
    (exponent, prefactor) : tuple of float
        ``p`` (positive for decay) and ``c``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    if _is_float32(err):
        warnings.warn(
            "float32 cannot resolve the critical power law beyond ~1e4 steps; use float64",
            RuntimeWarning,
            stacklevel=2,
        )
    k = check_array("k", k, ndim=1)
    err = check_array("err", err, ndim=1)
    if k.shape != err.shape:
        raise ValueError(f"k and err must have the same shape (got {k.shape} and {err.shape})")
    mask = _window_mask(k, window) & (k > 0) & (err > 0)
    if mask.sum() < 2:
        raise ValueError(
            f"fit_power_law needs at least 2 points with k > 0 and err > 0 in the window (got {int(mask.sum())})"
        )
    fit = power_law_fit(k[mask], err[mask])  # lab.core.rates: log err = log c - p log k
    return -fit.exponent, fit.prefactor


def fit_linear_rate(err: Any, window: Any = None) -> float:
    """Linear (geometric) rate ``rho`` of ``|err_k| ~ C rho^k``, least squares on ``log|err_k|``.

    Parameters
    ----------
    err : array_like, shape (N,)
        Signal indexed by step ``k = 0..N-1`` (absolute values are used, so a sign-alternating
        residual is fine); zeros are skipped.
    window : (low, high), optional
        Restrict to steps ``low <= k <= high``; choose it above the round-off floor.

    Returns
    -------
    float
        ``rho`` (``< 1`` for convergence).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    err = np.abs(check_array("err", err, ndim=1))
    k = np.arange(err.size, dtype=np.float64)
    mask = _window_mask(k, window) & (err > 0)
    if mask.sum() < 2:
        raise ValueError(
            f"fit_linear_rate needs at least 2 nonzero points in the window (got {int(mask.sum())})"
        )
    return exponential_fit(k[mask], err[mask]).factor  # log|err_k| = log C + k log rho


# ---------------------------------------------------------------------------------------------
# The paper's experiment (Sec. 5, Figs 2-4): five starts, three curves per regime
# ---------------------------------------------------------------------------------------------


def _flattest_point(model: ScalarModel) -> np.ndarray:
    _, star = model.flattest()
    return np.abs(star) if isinstance(model, ProductModel) else star


def starts_on_manifold(
    model: ScalarModel, sharpness: float, n: int = 5, offset: float = 1e-3, seed: int = 0
) -> np.ndarray:
    """``n`` starts ``θ_0 = θ∥_0 + offset · n(θ∥_0)`` with ``λ(θ∥_0) = sharpness``.

    ``θ∥_0 = P_M(θ∥* + δ v)`` for a random unit tangent direction ``v`` at the flattest
    minimiser (seeded) and the ``δ > 0`` that gives the prescribed sharpness (``brentq``); the
    offset is the normal coordinate ``θ⊥_0`` of Sec. 4. The paper's own five initialisations are
    only in its code (App. F): these play their role.

    Returns
    -------
    ndarray, shape (n, D)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    lam_min, _ = model.flattest()
    sharpness = check_positive("sharpness", sharpness)
    if sharpness <= lam_min:
        raise ValueError(
            f"sharpness must exceed lambda_min = {lam_min:g} (got {sharpness:g}) for {model!r}"
        )
    n = check_int("n", n, 1, 10_000)
    offset = check_range("offset", offset, -0.1, 0.1)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    star = _flattest_point(model)
    B = tangent_basis(model, star)
    rng = np.random.default_rng(seed)
    out = np.empty((n, model.dim))
    for i in range(n):
        v = B @ rng.standard_normal(B.shape[1])
        v /= np.linalg.norm(v)

        def gap(delta, v=v):
            return float(sharpness_of(model, project_to_manifold(model, star + delta * v)))

        hi = 0.05
        while gap(hi) < sharpness:
            hi *= 1.5
            if hi > 0.9 * np.min(np.abs(star)) and isinstance(model, ProductModel):
                raise ValueError(
                    f"sharpness={sharpness:g} is too far from lambda_min along a random "
                    "direction (the ray leaves the positive orthant)"
                )
        delta = brentq(lambda d, v=v: gap(d, v) - sharpness, 0.0, hi, xtol=1e-14)
        par = project_to_manifold(model, star + delta * v)
        g = model.grad(par)
        out[i] = par + offset * g / np.linalg.norm(g)  # Sec. 4: θ = θ∥ + θ⊥ n(θ∥)
    return out


def manifold_runs(
    model: ScalarModel,
    eta: float,
    starts: Any,
    steps: int,
    *,
    dense: int = 2000,
    n_log: int = 300,
) -> ManifoldRuns:
    """GD (``gd``) from each start, then ``θ∥_t``, ``θ⊥_t`` and ``λ(θ∥_t)`` on a step grid.

    Parameters
    ----------
    model : ScalarModel
    eta : float
        Step size ``> 0``.
    starts : array_like, shape (n, D)
        E.g. ``starts_on_manifold(...)``.
    steps : int
        GD steps per start.
    dense : int
        Coordinates at every step up to ``dense`` (exit times and linear rates need them).
    n_log : int
        About this many log-spaced steps after ``dense``.

    Returns
    -------
    ManifoldRuns

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    eta = check_positive("eta", eta)
    starts = check_point(model, "starts", starts, batch=True)
    starts = np.atleast_2d(starts)
    steps = check_int("steps", steps, 1, 100_000_000)
    dense = check_int("dense", dense, 0, steps)
    n_log = check_int("n_log", n_log, 0, 100_000)
    t = np.arange(dense + 1)
    if steps > dense and n_log:
        t = np.unique(np.concatenate([t, np.geomspace(max(dense, 1), steps, n_log).astype(int)]))
    star = _flattest_point(model)
    n, K = starts.shape[0], t.size
    dist, perp, lam = (np.full((n, K), np.nan) for _ in range(3))
    res = np.full((n, steps + 1), np.nan)
    diverged = np.zeros(n, bool)
    for i, w0 in enumerate(starts):
        run = run_gd(model, w0, eta, steps)
        diverged[i] = run.diverged
        res[i, : run.residual.size] = run.residual
        ok = t <= run.steps_run
        par, pp = manifold_coordinates(model, run.w[t[ok]])
        dist[i, ok] = np.linalg.norm(par - star, axis=-1)
        perp[i, ok] = pp
        lam[i, ok] = sharpness_of(model, par)
    lam_star, _ = model.flattest()
    return ManifoldRuns(eta, t, dist, perp, lam, res, float(lam_star), star, diverged)


def _sharpness_gradients(model: ScalarModel, par: np.ndarray) -> np.ndarray:
    """``sharpness_gradient_on_manifold`` for every row of ``par`` at once.

    ``∇(‖∇f‖²) = 2 ∇²f ∇f``, with ``∇²f ∇f`` from central differences of ``∇f`` along each axis:
    exact up to round-off for the shipped models, whose ``∇f`` is affine in every coordinate
    (``f`` is multilinear); the tests compare it with the per-point function.
    """
    g = model.grad(par)
    h = 1e-3
    hg = np.zeros_like(par)
    for j in range(par.shape[-1]):
        e = np.zeros(par.shape[-1])
        e[j] = h
        hg += g[:, j : j + 1] * (model.grad(par + e) - model.grad(par - e)) / (2 * h)
    euclid = 2.0 * hg  # ∇(‖∇f‖²) = 2 ∇²f ∇f
    n = g / np.linalg.norm(g, axis=-1, keepdims=True)
    return euclid - np.sum(n * euclid, -1, keepdims=True) * n  # P_TM: drop the normal part


def drift_law(
    model: ScalarModel, w: Any, window: Any = None, *, period: int = 2, power: float = 2.0
) -> DriftLaw:
    """Measure the drift law of Thm 4.1 on consecutive GD iterates ``w`` (e.g. ``gd(...).w``).

    Parameters
    ----------
    model : ScalarModel
    w : array_like, shape (T + 1, D)
        Consecutive iterates.
    window : (first, last), optional
        Chords start at ``first, first + period, ...`` and end by ``last`` (default all).
    period : int
        Steps per chord (default 2, one period of the oscillation; 1 gives the one-step chords,
        whose ``O(θ⊥)`` term alternates in sign).
    power : float
        Exponent of ``|θ⊥|`` in the law (default 2, Thm 4.1's oscillation energy; 1 is the rival
        "drift proportional to the amplitude").

    Returns
    -------
    DriftLaw

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    W = check_point(model, "w", w, batch=True)
    period = check_int("period", period, 1, 1000)
    power = check_range("power", power, 0.25, 8.0)
    if W.ndim != 2 or W.shape[0] < period + 1:
        raise ValueError(
            f"w must hold at least period + 1 = {period + 1} consecutive iterates "
            f"(got shape {W.shape})"
        )
    lo, hi = 0, W.shape[0] - 1
    if window is not None:
        win = check_array("window", window, shape=(2,))
        lo, hi = int(win[0]), min(int(win[1]), W.shape[0] - 1)
        if not 0 <= lo < hi or hi - lo < period:
            raise ValueError(
                f"window must be (first, last) with 0 <= first < last and room for one chord "
                f"of {period} steps (got {window})"
            )
    par, perp = manifold_coordinates(model, W[lo : hi + 1])
    starts = np.arange(0, hi - lo - period + 1, period)
    step = par[starts + period] - par[starts]  # the chord (the exponential map to 2nd order)
    grad = _sharpness_gradients(model, par[starts])
    g2 = np.sum(grad * grad, -1)
    energy = sum(np.abs(perp[starts + s]) ** power for s in range(period))
    along = -np.sum(step * grad, -1)
    kappa = along / (energy * g2)  # Thm 4.1: Δθ∥ = -κ Σ (θ⊥)² ∇_M λ
    cosine = along / (np.linalg.norm(step, axis=-1) * np.sqrt(g2))
    return DriftLaw(lo + starts, kappa, cosine, perp[starts], period, float(power))


# ---------------------------------------------------------------------------------------------
# Critical runs on several models (notebook 2's widget and claim), the regime and cobweb widgets
# ---------------------------------------------------------------------------------------------


@memo(maxsize=16)
def critical_run(settings: CriticalSettings):
    """GD at ``settings.eta_factor`` times the critical step ``2 / lambda_min`` from a minimiser
    ``settings.start_ratio`` times sharper than the flattest one (cached: the fit-window widget
    refits without rerunning). Returns a ``Trajectory``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    check_instance("settings", settings, CriticalSettings)
    model = CRITICAL_MODELS[settings.model]()
    lam_min, _ = model.flattest()
    w0 = start_point(model, settings.start_ratio * lam_min, settings.r0)
    return run_gd(model, w0, settings.eta_factor * 2.0 / lam_min, settings.steps)


def critical_fit(settings: CriticalSettings, window: Any = (3.0, 5.0)) -> CriticalFit:
    """Power laws of the distance to the flattest minimiser and of ``lambda - lambda_min`` on
    the steps ``10**window[0] <= k <= 10**window[1]`` of ``critical_run(settings)``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    run = critical_run(settings)
    win = check_array("window", window, shape=(2,))
    m = run.model
    lam_min, _ = m.flattest()
    k = run.k[1:]
    lo, hi = 10 ** float(win[0]), min(10 ** float(win[1]), k[-1])
    if not hi > lo * 1.5:
        raise ValueError(
            f"window must span more than a factor 1.5 of steps inside [1, {k[-1]}] (got {window})"
        )
    dist = m.distance_to_flattest(run.w[1:])
    excess = run.sharpness[1:] - lam_min
    p_dist, c_dist = fit_power_law(k, dist, window=(lo, hi))
    p_exc, c_exc = fit_power_law(k, np.maximum(excess, 1e-300), window=(lo, hi))
    return CriticalFit(
        settings.model, run.eta, k, dist, excess, (lo, hi), (p_dist, c_dist), (p_exc, c_exc)
    )


@memo(maxsize=256)
def regime_run(settings: RegimeSettings) -> RegimeRun:
    """One xy-model run from the minimiser of sharpness ``settings.lambda0`` offset by
    ``settings.r0``, with ``classify_regime``'s verdict (cached: the step-size widget of
    notebook 1 redraws from it).

    See: book/eos/01-three-regimes.ipynb
    """
    from lab.eos.regimes import regime_of

    check_instance("settings", settings, RegimeSettings)
    model = XYModel()
    w0 = start_point(model, settings.lambda0, settings.r0)
    run = run_gd(model, w0, settings.eta, settings.steps)  # one run: the figure and the probe
    lam_min, _ = model.flattest()
    env = np.append(_envelope(run.residual), abs(run.residual[-1]))
    regime = regime_of(model, settings.eta, w0, run=run)
    return RegimeRun(settings.eta, regime, run, float(lam_min), env)


def cobweb(settings: CobwebSettings) -> Cobweb:
    """The balanced xy map ``F(a) = a (1 + eta - eta a^2)`` on ``[0.55, 1.45]``, its second
    iterate, and the cobweb of the orbit from ``settings.a0`` (stopped if it leaves
    ``|a| <= 10``).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    check_instance("settings", settings, CobwebSettings)
    model, eta = XYModel(), settings.eta

    def F(a):
        return model.balanced_map(a, eta)  # eq: a' = a (1 + eta - eta a^2)

    a = np.linspace(0.55, 1.45, 300)
    path_x, path_y = [settings.a0], [0.55]
    cur = settings.a0
    for _ in range(settings.iterations):
        nxt = F(cur)
        if not np.isfinite(nxt) or abs(nxt) > 10:
            break
        path_x += [cur, nxt]
        path_y += [nxt, nxt]
        cur = nxt
    mult = 1 - 2 * eta  # F'(1) = 1 - 2 eta
    if abs(mult) < 1:
        state = "stable fixed point"
    elif eta < np.sqrt(5) - 1:  # the 2-cycle's own multiplier reaches -1 at sqrt(5) - 1
        state = "fixed point unstable: stable 2-cycle"
    else:
        state = "2-cycle unstable too: period 4 and beyond"
    return Cobweb(eta, a, F(a), F(F(a)), np.array(path_x), np.array(path_y), mult, state)
