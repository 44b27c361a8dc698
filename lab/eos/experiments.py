"""Drivers that the notebooks call: rate fits, the paper's three curves per regime, the drift law,
and the small network of notebook 3. Each returns a small result dataclass.

See: book/eos/02-rates-and-bifurcation.ipynb, book/eos/03-real-network.ipynb
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq

from lab.core.checks import check_array, check_int, check_positive, check_range
from lab.core.rates import exponential_fit, power_law_fit
from lab.core.runtime import resolve_device
from lab.eos.fast import sharpness_hvp
from lab.eos.geometry import _tangent_basis
from lab.eos.models import ProductModel, ScalarModel, _check_model, _check_point
from lab.eos.reference import (
    _sharpness_of,
    gd,
    manifold_coordinates,
    project_to_manifold,
    sharpness_gradient_on_manifold,
)

__all__ = [
    "ManifoldRuns",
    "DriftLaw",
    "MLPRun",
    "envelope",
    "fit_power_law",
    "fit_linear_rate",
    "starts_on_manifold",
    "manifold_runs",
    "drift_law",
    "mlp_digits_gd",
]


# ---------------------------------------------------------------------------------------------
# Rate fits (thin wrappers over lab.core.rates, in the chapter's sign convention)
# ---------------------------------------------------------------------------------------------


def envelope(r: Any) -> np.ndarray:
    """Oscillation envelope ``e_k = max(|r_k|, |r_{k+1}|)`` (length ``len(r) - 1``).

    Fit rates on this (or on ``|x - y|``), never on the sign-alternating ``r_k``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    r = check_array("r", r, ndim=1, min_size=2)
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
    model = _check_model(model)
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
    B = _tangent_basis(model, star)
    rng = np.random.default_rng(seed)
    out = np.empty((n, model.dim))
    for i in range(n):
        v = B @ rng.standard_normal(B.shape[1])
        v /= np.linalg.norm(v)

        def gap(delta, v=v):
            return float(_sharpness_of(model, project_to_manifold(model, star + delta * v)))

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


@dataclass
class ManifoldRuns:
    """GD runs from several starts, in the coordinates of Sec. 4 (``manifold_runs``).

    Attributes
    ----------
    eta : float
    t : ndarray of int, shape (K,)
        Recorded steps: every step up to ``dense``, then about ``n_log`` log-spaced ones.
    distance : ndarray, shape (n, K)
        ``‖θ∥_t - θ∥*‖``, distance of the projection to the flattest minimiser (the paper's
        left panels; a chord, equal to the geodesic distance to first order).
    perp : ndarray, shape (n, K)
        Signed normal coordinate ``θ⊥_t`` (centre panels plot ``|θ⊥_t|``).
    sharpness : ndarray, shape (n, K)
        ``λ(θ∥_t)`` (right panels plot ``λ(θ∥_t) - λ*``).
    residual : ndarray, shape (n, steps + 1)
        ``f(θ_t) - y`` at every step.
    lambda_star : float
    theta_star : ndarray
    diverged : ndarray of bool, shape (n,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    eta: float
    t: np.ndarray
    distance: np.ndarray
    perp: np.ndarray
    sharpness: np.ndarray
    residual: np.ndarray
    lambda_star: float
    theta_star: np.ndarray = field(repr=False)
    diverged: np.ndarray = field(repr=False)

    @property
    def gap(self) -> np.ndarray:
        """Sharpness suboptimality ``λ(θ∥_t) - λ*``."""
        return self.sharpness - self.lambda_star

    def exit_times(self) -> np.ndarray:
        """Per start, the first recorded ``τ`` with ``η λ(θ∥_t) < 2`` for every later recorded
        ``t`` (Thm 5.1); ``-1`` when the run is still unstable at its end."""
        stable = self.eta * self.sharpness < 2.0
        out = np.full(stable.shape[0], -1)
        for i, row in enumerate(stable):
            if row[-1]:
                bad = np.nonzero(~row)[0]
                out[i] = self.t[bad[-1] + 1] if bad.size else self.t[0]
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
    model = _check_model(model)
    eta = check_positive("eta", eta)
    starts = _check_point(model, "starts", starts, batch=True)
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
        run = gd(model, w0, eta, steps)
        diverged[i] = run.diverged
        res[i, : run.residual.size] = run.residual
        ok = t <= run.steps_run
        par, pp = manifold_coordinates(model, run.w[t[ok]])
        dist[i, ok] = np.linalg.norm(par - star, axis=-1)
        perp[i, ok] = pp
        lam[i, ok] = _sharpness_of(model, par)
    lam_star, _ = model.flattest()
    return ManifoldRuns(eta, t, dist, perp, lam, res, float(lam_star), star, diverged)


@dataclass
class DriftLaw:
    """The drift along ``M`` against Thm 4.1's prediction, step by step (``drift_law``).

    Thm 4.1: ``θ∥_{t+1} ≈ exp_{θ∥_t}(-κ (θ⊥_t)² ∇_M λ(θ∥_t))`` with ``κ = η / (2 c(η, θ∥))``.

    Attributes
    ----------
    t : ndarray of int
        Steps of the window.
    kappa : ndarray
        Measured ``κ_t = -<Δθ∥_t, ∇_M λ> / ((θ⊥_t)² ‖∇_M λ‖²)``: constant if the drift is
        proportional to the oscillation energy ``(θ⊥)²`` and along ``-∇_M λ``.
    cosine : ndarray
        Cosine between ``Δθ∥_t`` and ``-∇_M λ(θ∥_t)`` (1: Riemannian gradient descent on λ).
    perp : ndarray
        ``θ⊥_t``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    t: np.ndarray
    kappa: np.ndarray
    cosine: np.ndarray
    perp: np.ndarray

    @property
    def spread(self) -> float:
        """``max κ / min κ - 1`` over the window (0 for an exact proportionality)."""
        return float(self.kappa.max() / self.kappa.min() - 1.0)


def drift_law(model: ScalarModel, w: Any, window: Any = None) -> DriftLaw:
    """Measure the drift law of Thm 4.1 on consecutive GD iterates ``w`` (e.g. ``gd(...).w``).

    Parameters
    ----------
    model : ScalarModel
    w : array_like, shape (T + 1, D)
        Consecutive iterates.
    window : (first, last), optional
        Steps ``first <= t < last`` to use (default all).

    Returns
    -------
    DriftLaw

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = _check_model(model)
    W = _check_point(model, "w", w, batch=True)
    if W.ndim != 2 or W.shape[0] < 2:
        raise ValueError(f"w must hold at least 2 consecutive iterates (got shape {W.shape})")
    lo, hi = 0, W.shape[0] - 1
    if window is not None:
        win = check_array("window", window, shape=(2,))
        lo, hi = int(win[0]), min(int(win[1]), W.shape[0] - 1)
        if not 0 <= lo < hi:
            raise ValueError(f"window must be (first, last) with 0 <= first < last (got {window})")
    par, perp = manifold_coordinates(model, W[lo : hi + 1])
    step = par[1:] - par[:-1]  # Δθ∥_t (a chord: the exponential map to second order)
    grad = np.array([sharpness_gradient_on_manifold(model, p) for p in par[:-1]])
    g2 = np.sum(grad * grad, -1)
    along = -np.sum(step * grad, -1)
    kappa = along / (perp[:-1] ** 2 * g2)  # Thm 4.1: Δθ∥ = -κ (θ⊥)² ∇_M λ
    cosine = along / (np.linalg.norm(step, axis=-1) * np.sqrt(g2))
    return DriftLaw(np.arange(lo, hi), kappa, cosine, perp[:-1])


# ---------------------------------------------------------------------------------------------
# The real-network contrast (notebook 3)
# ---------------------------------------------------------------------------------------------


@dataclass
class MLPRun:
    """History of ``mlp_digits_gd``.

    Attributes
    ----------
    loss : ndarray, shape (steps_run + 1,)
        Full-batch MSE loss ``1/(2n) sum_i ||f(x_i) - y_i||^2``.
    sharpness : ndarray
        Top Hessian eigenvalue of the loss (HVP power iteration) at ``sharpness_steps``.
    sharpness_steps : ndarray of int
    accuracy : float
        Final training accuracy.
    diverged : bool
    eta : float
    n_params : int

    See: book/eos/03-real-network.ipynb
    """

    loss: np.ndarray
    sharpness: np.ndarray
    sharpness_steps: np.ndarray
    accuracy: float
    diverged: bool
    eta: float
    n_params: int


def mlp_digits_gd(
    eta: float,
    steps: int = 500,
    width: int = 32,
    n_samples: int = 200,
    track_every: int = 25,
    seed: int = 0,
    device: Any = None,
    *,
    classes: tuple[int, int] = (3, 8),
    hvp_iters: int = 20,
) -> MLPRun:
    """Full-batch GD with MSE on a 64-``width``-2 tanh MLP, two digit classes from sklearn.

    The data are scikit-learn's bundled digits through ``lab.core.data.digits`` (no download):
    the first ``n_samples`` images of the two ``classes`` (default 3 vs 8) in scikit-learn's
    order, pixels scaled to ``[0, 1]`` (not standardised),
    one-hot targets, PyTorch-default uniform initialisation. Runs in float64 with one torch
    thread on CPU (per-op overhead dominates at this size).

    Measured at the defaults (2146 parameters, seed 0): with ``eta = 0.2`` the sharpness
    rises from 7.2 past ``2/eta = 10`` within ~150 steps and then oscillates around it
    (between 9.4 and 10.9 up to step 1000: the edge of stability of Cohen et al. 2021);
    with ``eta = 0.1`` it is still sharpening (15.4 < 20 at step 1000). Unlike the scalar models, the network never settles on a
    flatter minimiser in this budget.

    Parameters
    ----------
    eta : float
        Step size ``> 0``.
    steps : int
        GD steps ``>= 1``.
    width : int
        Hidden width ``>= 1``.
    n_samples : int
        Number of images, ``>= 2`` and at most the number of images of the two classes
        (357 for 3 and 8).
    track_every : int
        Sharpness every this many steps (``0``: never).
    seed : int
        Initialisation seed.
    device : str or torch.device, optional
        Defaults to ``lab.device()``.
    classes : (int, int)
        The two digit classes.
    hvp_iters : int
        Power-iteration steps per sharpness estimate.

    Returns
    -------
    MLPRun

    See: book/eos/03-real-network.ipynb
    """
    import torch
    from torch.func import grad

    from lab.core.data import digits
    from lab.core.runtime import small_problem_threads

    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1, 10_000_000)
    width = check_int("width", width, 1, 100_000)
    n_samples = check_int("n_samples", n_samples, 2, 1797)
    track_every = check_int("track_every", track_every, 0, 10_000_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    hvp_iters = check_int("hvp_iters", hvp_iters, 1, 10_000)
    if not (isinstance(classes, tuple | list) and len(classes) == 2):
        raise TypeError(f"classes must be a pair of digits (got {classes!r})")
    c0 = check_int("classes[0]", classes[0], 0, 9)
    c1 = check_int("classes[1]", classes[1], 0, 9)
    if c0 == c1:
        raise ValueError(f"classes must be two different digits (got {classes!r})")
    dev = resolve_device(device)

    split = digits(
        (c0, c1), test_size=0, shuffle=False, standardize=False, dtype="float64"
    )  # lab.core.data: pixels / 16 in [0, 1], scikit-learn's order, label 1 = classes[1]
    if n_samples > split.y_train.size:
        raise ValueError(
            f"n_samples must be <= {split.y_train.size} for classes {classes!r} (got {n_samples})"
        )
    x = torch.as_tensor(split.X_train[:n_samples], dtype=torch.float64, device=dev)
    yi = split.y_train[:n_samples]
    y = torch.nn.functional.one_hot(torch.as_tensor(yi), 2).to(torch.float64).to(dev)

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def init(fan_in: int, fan_out: int):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        return w.to(dev), b.to(dev)

    params = (*init(64, width), *init(width, 2))
    n_params = sum(p.numel() for p in params)

    def loss_fn(ps):
        w1, b1, w2, b2 = ps
        out = torch.tanh(x @ w1 + b1) @ w2 + b2
        return 0.5 * ((out - y) ** 2).sum() / x.shape[0]  # eq: L = 1/(2n) sum ||f(x) - y||^2

    g = grad(loss_fn)
    losses, sharp, sharp_steps = [], [], []
    diverged = False
    ctx = small_problem_threads(1) if dev.type == "cpu" else contextlib.nullcontext()
    with ctx:
        for k in range(steps + 1):
            lv = float(loss_fn(params))
            if not math.isfinite(lv) or lv > 1e6:
                diverged = True
                break
            losses.append(lv)
            if track_every and k % track_every == 0:
                sharp.append(sharpness_hvp(loss_fn, params, iters=hvp_iters, seed=seed))
                sharp_steps.append(k)
            if k == steps:
                break
            grads = g(params)
            params = tuple(p - eta * gp for p, gp in zip(params, grads, strict=True))  # eq: GD
        w1, b1, w2, b2 = params
        pred = (torch.tanh(x @ w1 + b1) @ w2 + b2).argmax(1).cpu().numpy()
    return MLPRun(
        loss=np.array(losses),
        sharpness=np.array(sharp),
        sharpness_steps=np.array(sharp_steps, dtype=np.int64),
        accuracy=float(np.mean(pred == yi)),
        diverged=diverged,
        eta=eta,
        n_params=int(n_params),
    )
