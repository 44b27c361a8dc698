"""Reference kernels (numpy float64): gradient descent and the geometry of the solution manifold.

One function per equation block of the paper, each statement beside what it implements
(``# eq. (n)`` for the paper's displayed equations, ``# Thm``/``# Prop``/``# App.`` for
statements, ``# deviation:`` where we differ). Equation numbers follow the camera-ready text:
(5) the least-squares problem ``l(θ) = ½ (f(θ) - y)²``, (6) gradient descent
``θ_{t+1} = θ_t - η ∇l(θ_t)``; Sec. 3.2 the sharpness ``λ = ‖∇f‖²`` and normal
``n = ∇f / ‖∇f‖`` on ``M``; App. B the deep scalar factorisation; App. F the projection onto
``M`` by KKT conditions and bisection.

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive, check_range
from lab.eos.models import (
    DIVERGENCE_THRESHOLD,
    ProductModel,
    ScalarModel,
    check_model,
    check_point,
    check_target,
    model_for_target,
)

__all__ = [
    "Trajectory",
    "gd",
    "sharpness_on_manifold",
    "hessian_sharpness",
    "lambda_min",
    "point_on_manifold",
    "distance_to_flattest",
    "imbalance",
    "tangential_normal_split",
    "project_to_manifold",
    "manifold_coordinates",
    "sharpness_gradient_on_manifold",
]


def gd_loop(model: ScalarModel, w0: np.ndarray, eta: float, steps: int):
    """The one GD loop of the chapter (numpy reference), on Python floats for speed.

    Returns ``(W, r, diverged)``: every stored iterate, its residual, and whether ``|r|``
    crossed ``DIVERGENCE_THRESHOLD`` (the crossing state is stored) or became non-finite (that
    state is not stored).
    """
    state = [s.item() if np.ndim(s) == 0 else np.array(s) for s in model._split(w0)]
    step, residual = model._step, model._residual  # bound once: the loop is call-bound
    r = residual(state)  # eq. (5): r = f(θ) - y
    states, rs = [state], [r]
    append_state, append_r = states.append, rs.append
    diverged = False
    for _ in range(steps):
        state = step(state, eta * r)  # eq. (6): θ' = θ - η r ∇f(θ)
        r = residual(state)
        if not abs(r) <= DIVERGENCE_THRESHOLD:  # also catches NaN / inf
            diverged = True
            if not math.isfinite(r):
                break
        append_state(state)
        append_r(r)
        if diverged:
            break
    W = np.asarray(states, dtype=np.float64).reshape(len(states), -1)
    return W, np.asarray(rs, dtype=np.float64), diverged


@dataclass
class Trajectory:
    """One GD run. Arrays have ``steps_run + 1`` rows; no NaN is ever stored.

    Attributes
    ----------
    w : ndarray, shape (steps_run + 1, D)
        Iterates ``w_0 .. w_{steps_run}``.
    residual : ndarray, shape (steps_run + 1,)
        ``r_k = f(w_k) - y`` (signed; oscillates in sign at the edge of stability).
    loss : ndarray, shape (steps_run + 1,)
        ``L(w_k) = r_k^2 / 2``.
    sharpness : ndarray, shape (steps_run + 1,)
        Sharpness of the *projected minimiser*: ``||grad f(p_k)||^2`` with ``p_k`` the
        projection of ``w_k`` onto ``M`` along the gradient-flow line (for xy:
        ``sqrt(d_k^2 + 4)``). Not the Hessian eigenvalue at ``w_k`` itself, which oscillates
        with ``r_k`` (see ``hessian_sharpness``).
    diverged : bool
        ``|r|`` exceeded ``DIVERGENCE_THRESHOLD`` (the last stored row is that state) or
        became non-finite (the run stops before that state).
    steps_run : int
        Number of GD steps stored.
    eta, target : float
        Step size and target of the run.

    See: book/eos/01-three-regimes.ipynb
    """

    w: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    sharpness: np.ndarray
    diverged: bool
    steps_run: int
    eta: float
    target: float
    model: ScalarModel = field(repr=False)

    @property
    def k(self) -> np.ndarray:
        """Step indices ``0 .. steps_run``."""
        return np.arange(self.steps_run + 1)


def gd(
    model: ScalarModel,
    w0: Any,
    eta: float,
    steps: int,
    target: float | None = None,
) -> Trajectory:
    """Plain full-batch gradient descent on ``L(w) = 1/2 (f(w) - y)^2`` (numpy float64).

    ``w_{k+1} = w_k - eta * (f(w_k) - y) * grad f(w_k)``. Stops early and sets
    ``diverged=True`` when ``|r| > 1e6`` or ``r`` becomes non-finite; arrays are truncated to
    the steps actually run, so no NaN is returned.

    Parameters
    ----------
    model : ScalarModel
        ``XYModel()``, ``ProductModel(q)`` or ``InnerProductModel(m, y)``.
    w0 : array_like, shape (D,)
        Finite initial point (use ``point_on_manifold`` for an EoS start, not a far point: far
        starts with large steps are catapults).
    eta : float
        Step size, ``> 0``.
    steps : int
        Number of steps, ``>= 1``.
    target : float, optional
        Nonzero target ``y``; defaults to ``model.target`` (1.0 for xy/product).

    Returns
    -------
    Trajectory
        ``.w``, ``.residual``, ``.loss``, ``.sharpness`` (sharpness of the projected
        minimiser, i.e. ``||grad f||^2`` at the projection of ``w_k`` onto ``M``),
        ``.diverged``, ``.steps_run``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = model_for_target(check_model(model), target)
    w0 = check_point(model, "w0", w0)
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1, 100_000_000)
    return run_gd(model, w0, eta, steps)


def run_gd(model: ScalarModel, w0: np.ndarray, eta: float, steps: int) -> Trajectory:
    """``gd`` on arguments its caller has validated (a driver validates once, where they
    enter): ``model`` with its target, ``w0`` a finite point, ``eta > 0``, ``steps >= 1``."""
    W, r, diverged = gd_loop(model, w0, eta, steps)
    with np.errstate(all="ignore"):
        lam = model.manifold_sharpness(W)
    return Trajectory(
        w=W,
        residual=r,
        loss=0.5 * r * r,  # eq: L = r^2 / 2
        sharpness=lam,
        diverged=bool(diverged),
        steps_run=int(W.shape[0] - 1),
        eta=eta,
        target=model.target,
        model=model,
    )


# ---------------------------------------------------------------------------------------------
# Geometry of M (Sec. 3.2): sharpness, flattest minimiser, the gradient-flow projection
# ---------------------------------------------------------------------------------------------


def sharpness_on_manifold(model: ScalarModel, w: Any) -> float | np.ndarray:
    """Sharpness of the minimiser reached from ``w`` along the gradient-flow line.

    ``lambda_M(w) = ||grad f(p)||^2`` with ``p`` the projection of ``w`` onto ``M`` along the
    gradient-flow invariants (closed form ``sqrt(d^2 + 4 y^2)`` for xy, ``sqrt(4 y^2 +
    |u+v|^2 |u-v|^2)`` for ``<u, v>``, a 1-D Newton solve for the product model). This is the
    quantity the rate fits use; it does not oscillate with ``r``.

    Parameters
    ----------
    model : ScalarModel
    w : array_like, shape (D,) or (N, D)

    Returns
    -------
    float or ndarray of shape (N,)

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    arr = check_point(model, "w", w, batch=True)
    lam = model.manifold_sharpness(arr)
    return float(lam) if arr.ndim == 1 else lam


def hessian_sharpness(model: ScalarModel, w: Any) -> float:
    """Top eigenvalue of the full Hessian of ``L = 1/2 (f - y)^2`` at ``w`` (numpy eigvalsh).

    Off ``M`` this is ``lambda_max(grad f grad f^T + r hess f)`` and oscillates with ``r``;
    on ``M`` it equals ``sharpness_on_manifold``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    w = check_point(model, "w", w)
    return float(np.linalg.eigvalsh(model.loss_hessian(w))[-1])


def lambda_min(model: ScalarModel) -> tuple[float, np.ndarray]:
    """The optimal flatness ``lambda_min = min_{p in M} lambda(p)`` and one flattest minimiser.

    Closed forms: xy ``(2|y|, (sqrt|y|, sign(y) sqrt|y|))``; product ``q |y|^(2-2/q)`` at
    ``|w_i| = |y|^(1/q)``; ``<u, v>`` ``2|y|`` at ``u = sign(y) v``, ``||u||^2 = |y|``.
    The flattest minimiser is not unique (e.g. ``+-(1, 1)`` for xy); any one is returned.

    See: book/eos/01-three-regimes.ipynb
    """
    value, w = check_model(model).flattest()
    return float(value), w


def point_on_manifold(model: ScalarModel, sharpness: float, offset: float = 0.0) -> np.ndarray:
    """A start point whose projected minimiser has the prescribed sharpness, off ``M`` by ``offset``.

    Picks a canonical minimiser ``p`` with ``lambda(p) = sharpness`` (xy: ``x >= y > 0``;
    product: ``(a, b, ..., b)`` with ``a >= b``; ``<u, v>``: ``u, v`` along ``(1, ..., 1)``)
    and moves along the gradient-flow line through ``p`` (which crosses ``M`` orthogonally)
    until ``f - y = offset``. Hence ``sharpness_on_manifold(model, w0) == sharpness`` and
    ``f(w0) - y == offset`` up to round-off.

    Parameters
    ----------
    model : ScalarModel
    sharpness : float
        ``>= lambda_min``.
    offset : float
        The residual of the returned point, ``|offset| < |y|``.

    Raises
    ------
    ValueError
        ``"no minimiser has sharpness below lambda_min = ..."`` when ``sharpness <
        lambda_min``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    sharpness = check_positive("sharpness", sharpness)
    lam_min, _ = model.flattest()
    if sharpness < lam_min * (1.0 - 1e-12):
        raise ValueError(
            f"no minimiser has sharpness below lambda_min = {lam_min:g} "
            f"(got sharpness={sharpness:g}) for {model!r}"
        )
    y = model.target
    offset = check_range(
        "offset", offset, -abs(y), abs(y), low_inclusive=False, high_inclusive=False
    )
    return start_point(model, sharpness, offset)


def start_point(model: ScalarModel, sharpness: float, offset: float) -> np.ndarray:
    """``point_on_manifold`` on arguments its caller has validated (a settings object)."""
    lam_min, _ = model.flattest()
    p = model.sharpness_point(max(sharpness, lam_min))  # the canonical minimiser of this λ
    return p if offset == 0.0 else model.with_value(p, model.target + offset)


def distance_to_flattest(model: ScalarModel, w: Any) -> float | np.ndarray:
    """Euclidean distance from ``w`` to the nearest flattest minimiser (all symmetric copies).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    arr = check_point(model, "w", w, batch=True)
    d = model.distance_to_flattest(arr)
    return float(d) if arr.ndim == 1 else d


def imbalance(model: ScalarModel, w: Any) -> float | np.ndarray:
    """The balancedness coordinate across the valley of minimisers.

    * xy: ``d = x^2 - y^2`` (signed). Exactly ``d' = d (1 - eta^2 r^2)`` under GD, conserved
      by gradient flow, and ``lambda_M = sqrt(d^2 + 4 y^2)``.
    * ``<u, v>``: ``sign(<u+v, u-v>) |u+v| |u-v|``; it obeys the same identity and formula
      and equals ``||u||^2 - ||v||^2`` when ``u+v`` and ``u-v`` are parallel (always for
      ``m = 1``). Zero iff the projected minimiser is flattest.
    * product: the spread ``max_i w_i^2 - min_i w_i^2 >= 0`` (``|x^2 - y^2|`` for depth 2);
      zero iff balanced. Pairwise, ``w_i^2 - w_j^2`` is multiplied by
      ``1 - eta^2 r^2 f^2 / (w_i^2 w_j^2)`` per step.

    See: book/eos/01-three-regimes.ipynb
    """
    model = check_model(model)
    arr = check_point(model, "w", w, batch=True)
    d = model.imbalance(arr)
    return float(d) if arr.ndim == 1 else d


def tangential_normal_split(
    model: ScalarModel, w_k: Any, w_k1: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Split the GD step ``w_k1 - w_k`` into parts tangent and normal to ``M``.

    The normal is ``n = grad f(p) / ||grad f(p)||`` at ``p``, the projection of ``w_k`` onto
    ``M``; ``dnorm = <dw, n> n`` and ``dpar = dw - dnorm``. Near ``M`` the normal part is the
    oscillation (size ``~ eta |r|``) and the tangential part the sharpness-reducing drift
    (size ``~ eta^2 r^2``).

    Returns
    -------
    (dpar, dnorm) : tuple of ndarray, shape (D,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    w_k = check_point(model, "w_k", w_k)
    w_k1 = check_point(model, "w_k1", w_k1)
    p = model.project(w_k)
    n = model.grad(p)
    n = n / np.linalg.norm(n)  # eq: normal space of M at p = span(grad f(p))
    dw = w_k1 - w_k
    dnorm = float(np.dot(dw, n)) * n
    return dw - dnorm, dnorm


# ---------------------------------------------------------------------------------------------
# The nearest-point projection onto M and the coordinates (θ∥, θ⊥) of Sec. 4
# ---------------------------------------------------------------------------------------------

_BISECTIONS = 200  # halvings of the multiplier's bracket: far below one ulp of any multiplier


def _project_product(theta: np.ndarray, y: float) -> np.ndarray:
    """Nearest point of ``M = {∏ z_i = y, z > 0}`` to each row of ``theta`` (all ``> 0``).

    App. F: minimise ``½‖z - θ‖²`` subject to ``∏ z_i = y``. Stationarity
    ``z_i - θ_i + α ∏_{j≠i} z_j = 0`` with ``∏_{j≠i} z_j = y / z_i`` makes each ``z_i`` a root of
    ``z² - θ_i z + α y = 0``, so ``z_i(α) = (θ_i ± √(θ_i² - 4αy)) / 2``.
    """
    log_y = math.log(y)
    alpha_max = theta.min(-1) ** 2 / (4.0 * y)  # largest α with every root real

    def plus(th, alpha):  # App. F: the "+" root of every coordinate
        return 0.5 * (th + np.sqrt(np.maximum(th**2 - 4.0 * alpha[:, None] * y, 0.0)))

    def g(th, alpha):  # App. F: Σ log z_i(α) - log y, strictly decreasing in α
        return np.sum(np.log(plus(th, alpha)), -1) - log_y

    out = np.empty_like(theta)
    on_plus = g(theta, alpha_max) <= 0.0  # the "+" branch reaches ∏ z = y (always near M)
    if on_plus.any():
        th = theta[on_plus]
        hi = alpha_max[on_plus]
        lo = np.minimum(0.0, hi)
        for _ in range(2100):  # widen down to a bracket: g(lo) >= 0
            short = g(th, lo) < 0.0
            if not short.any():
                break
            lo = np.where(short, 2.0 * lo - 1.0, lo)
        for _ in range(_BISECTIONS):  # App. F: bisection on the monotone scalar equation
            mid = 0.5 * (lo + hi)
            above = g(th, mid) > 0.0
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        out[on_plus] = plus(th, 0.5 * (lo + hi))
    for i in np.nonzero(~on_plus)[0]:
        out[i] = _project_product_minus(theta[i], y)
    return out


def _project_product_minus(theta: np.ndarray, y: float) -> np.ndarray:
    """Far above ``M`` (the "+" branch overshoots): the smallest coordinate takes the "-" root.

    At most one coordinate can take the "-" root at a minimiser (two would give the
    Lagrangian's Hessian two negative directions, one of them tangent). Parametrise by that
    coordinate ``s = z_j ∈ (0, θ_j/2]``, ``α = s (θ_j - s) / y``; the scalar equation need not be
    monotone here, so every sign change on a grid is bisected and the nearest root is kept.
    """
    j = int(np.argmin(theta))
    others = np.arange(theta.size) != j
    th_o = theta[others]

    def z_of(s):  # s: (K,) -> the other coordinates, (K, D - 1), on their "+" roots
        alpha = s * (theta[j] - s) / y
        return 0.5 * (th_o + np.sqrt(np.maximum(th_o**2 - 4 * alpha[:, None] * y, 0)))

    def h(s):  # log ∏ z(s) - log y for a vector of s
        return np.log(s) + np.sum(np.log(z_of(s)), -1) - math.log(y)

    grid = np.geomspace(theta[j] * 1e-12, theta[j] / 2, 4000)
    vals = h(grid)
    ks = np.nonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))[0]
    if ks.size == 0:  # pragma: no cover - h runs from -inf to g(alpha_max) > 0
        raise ValueError(f"no point of M found for theta = {theta}")
    lo, hi, up = grid[ks], grid[ks + 1], vals[ks + 1] > 0
    for _ in range(_BISECTIONS):  # every sign change bisected at once
        mid = 0.5 * (lo + hi)
        right = (h(mid) > 0) == up
        lo, hi = np.where(right, lo, mid), np.where(right, mid, hi)
    s = 0.5 * (lo + hi)
    z = np.empty((s.size, theta.size))
    z[:, j], z[:, others] = s, z_of(s)
    return z[int(np.argmin(np.linalg.norm(z - theta, axis=1)))]


def _project_bilinear(theta: np.ndarray, m: int, y: float) -> np.ndarray:
    """Nearest point of ``M = {<u, v> = y}`` (any signs) to each row of ``theta = (u, v)``.

    KKT: ``u' - u + α v' = 0``, ``v' - v + α u' = 0``, so ``a = u + v`` and ``b = u - v`` scale
    as ``a' = a / (1 + α)``, ``b' = b / (1 - α)``; the minimiser has ``|α| < 1`` (positive
    definite Lagrangian Hessian) and ``F(α) = (|a'|² - |b'|²) / 4`` is strictly decreasing
    there, so bisection on ``F(α) = y`` over ``(-1, 1)`` finds it.
    """
    a = theta[:, :m] + theta[:, m:]
    b = theta[:, :m] - theta[:, m:]
    A, B = np.sum(a * a, -1), np.sum(b * b, -1)
    if np.any((A == 0) & (y > 0)) or np.any((B == 0) & (y < 0)):
        raise ValueError(
            "theta has u + v = 0 (target > 0) or u - v = 0 (target < 0): its nearest point on "
            "M is not unique"
        )
    lo, hi = np.full(A.shape, -1.0), np.full(A.shape, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            F = 0.25 * (A / (1 + mid) ** 2 - B / (1 - mid) ** 2)  # f(z(α)) = <u', v'>
            above = F > y
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    alpha = (0.5 * (lo + hi))[:, None]
    a2, b2 = a / (1 + alpha), b / (1 - alpha)
    return np.concatenate([(a2 + b2) / 2, (a2 - b2) / 2], -1)


def _as_model(model_or_p: Any, y: Any) -> ScalarModel:
    if isinstance(model_or_p, bool):
        raise TypeError("model_or_p must be a model or a depth p >= 2 (got a bool)")
    if isinstance(model_or_p, int | np.integer):
        target = 1.0 if y is None else check_target(y)
        return ProductModel(int(model_or_p), target)
    return model_for_target(check_model(model_or_p), y)


def project_to_manifold(model_or_p: Any, theta: Any, y: float | None = None) -> np.ndarray:
    """The nearest point ``θ∥`` of the solution manifold ``M = {f = y}`` (App. F).

    Minimises ``½‖z - θ‖²`` subject to ``f(z) = y`` through its KKT conditions:

    * depth-``p`` product ``f = θ_p ⋯ θ_1`` (the paper's example; ``M`` is the positive-orthant
      component, so ``y > 0`` and ``θ > 0``): each coordinate is a root of
      ``z² - θ_i z + α y = 0`` and the multiplier ``α`` solves the monotone scalar equation
      ``∏ z_i(α) = y``, by bisection;
    * ``x y`` and ``<u, v>`` (any signs): ``u ± v`` scale by ``1 / (1 ± α)``, ``|α| < 1``, and
      ``<u', v'>(α) = y`` is again monotone.

    This is the orthogonal projection of Sec. 4 (``θ - θ∥`` is normal to ``M``), not the
    gradient-flow projection behind ``sharpness_on_manifold``; the two agree to first order.

    Parameters
    ----------
    model_or_p : ScalarModel or int
        A model, or a depth ``p >= 2`` (``ProductModel(p, y)``).
    theta : array_like, shape (D,) or (N, D)
        Points to project (finite; positive entries for a product model).
    y : float, optional
        Target; defaults to the model's (1.0 for a depth).

    Returns
    -------
    ndarray, same shape as ``theta``
        ``θ∥`` with ``f(θ∥) = y`` to round-off.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = _as_model(model_or_p, y)
    arr = check_point(model, "theta", theta, batch=True)
    rows = np.atleast_2d(arr)
    if isinstance(model, ProductModel):
        if model.target <= 0 or np.any(rows <= 0):
            raise ValueError(
                "project_to_manifold for a product model covers the paper's M, the "
                f"positive-orthant component: it needs y > 0 and theta > 0 (got y = "
                f"{model.target:g}, min theta = {float(rows.min()):g})"
            )
        out = _project_product(rows, model.target)
    else:
        out = _project_bilinear(rows, model.dim // 2, model.target)
    return out[0] if arr.ndim == 1 else out


def manifold_coordinates(model: ScalarModel, theta: Any) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates ``(θ∥, θ⊥)`` of Sec. 4: ``θ = θ∥ + θ⊥ n(θ∥)``.

    ``θ∥ = project_to_manifold(model, θ)`` and ``θ⊥ = <θ - θ∥, n(θ∥)>`` with the unit normal
    ``n = ∇f / ‖∇f‖`` (signed: it alternates at the edge of stability).

    Returns
    -------
    (theta_par, theta_perp) : ndarray of shape (..., D) and (...)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    arr = check_point(model, "theta", theta, batch=True)
    par = project_to_manifold(model, arr)
    g = model.grad(par)
    n = g / np.linalg.norm(g, axis=-1, keepdims=True)  # Sec. 3.2: n = ∇f / ‖∇f‖
    perp = np.sum((arr - par) * n, -1)
    return par, (float(perp) if arr.ndim == 1 else perp)


def sharpness_of(model: ScalarModel, par: np.ndarray) -> np.ndarray:
    g = model.grad(par)
    return np.sum(g * g, -1)  # Sec. 3.2: λ = ‖∇f‖² on M


def sharpness_gradient_on_manifold(model: ScalarModel, theta_par: Any) -> np.ndarray:
    """The Riemannian gradient ``∇_M λ`` of the sharpness at a point of ``M``.

    ``λ = ‖∇f‖²`` extends off ``M`` with Euclidean gradient ``2 ∇²f ∇f``; its tangential part
    ``(I - n nᵀ) 2 ∇²f ∇f`` is the Riemannian gradient (the metric is inherited). Thm 4.1 moves
    ``θ∥`` by ``-η (θ⊥)² / (2c) · ∇_M λ`` per step.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    p = check_point(model, "theta_par", theta_par)
    g = model.grad(p)
    n = g / np.linalg.norm(g)
    euclid = 2.0 * model.hessian(p) @ g  # ∇(‖∇f‖²) = 2 ∇²f ∇f
    return euclid - float(n @ euclid) * n  # P_TM: drop the normal part
