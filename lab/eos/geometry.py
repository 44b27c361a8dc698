"""The geometry of App. B: the Riemannian Hessian of the sharpness and its convexity on ``M``.

The paper's convergence theorems assume (A3.4) that the sharpness ``λ = ‖∇f‖²`` is geodesically
strongly convex on a geodesic ball around the flattest minimiser ``θ∥*``, with Riemannian Hessian
``ν I`` at ``θ∥*``. For deep scalar factorisation App. B proves it with explicit constants
(``FlattestConstants``); this module measures them: ``riemannian_hessian`` by finite
differences through the projection of App. F, and ``geodesic_ball_points`` to sample the ball.

See: book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive, check_range
from lab.eos.models import ProductModel, ScalarModel, check_model, check_point
from lab.eos.reference import project_to_manifold, sharpness_of

__all__ = [
    "FlattestConstants",
    "flattest_constants",
    "convexity_modulus",
    "riemannian_hessian",
    "geodesic_ball_points",
    "euclidean_tangent_hessian",
]


def tangent_basis(model: ScalarModel, p: np.ndarray) -> np.ndarray:
    """An orthonormal basis of ``T_p M = ∇f(p)^⊥`` as the columns of a ``(D, D-1)`` matrix."""
    g = model.grad(p)
    q, _ = np.linalg.qr(np.column_stack([g, np.eye(p.size)]))
    return q[:, 1:]


def _tangent_frame(model: Any, theta_par: Any, h: Any) -> tuple:
    """The checked inputs of a finite-difference Hessian on ``T M``: model, point, step, basis."""
    model = check_model(model)
    p = check_point(model, "theta_par", theta_par)
    return model, p, check_range("h", h, 1e-6, 0.1), tangent_basis(model, p)


def riemannian_hessian(model: ScalarModel, theta_par: Any, h: float = 1e-3) -> np.ndarray:
    """Riemannian Hessian of the sharpness at a point of ``M``, by finite differences.

    The metric projection ``R(v) = P_M(θ∥ + v)`` is a second-order retraction, so the Hessian
    of the pull-back ``φ(c) = λ(R(B c))`` at ``c = 0`` (``B`` an orthonormal tangent basis) is
    the Riemannian Hessian ``∇²_M λ(θ∥)`` in that basis; central second differences with step
    ``h`` (error ``O(h²)``). At ``θ∥* = y^{1/p} 1_p`` of the depth-``p`` product it is
    ``ν I`` with ``ν = 4 y^{2-4/p}`` (Prop B.7).

    Returns
    -------
    ndarray, shape (D-1, D-1)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model, p, h, B = _tangent_frame(model, theta_par, h)
    k = B.shape[1]
    E = np.eye(k) * h
    pts = [np.zeros(k)]
    for i in range(k):
        pts += [E[i], -E[i]]
        for j in range(i + 1, k):
            pts += [E[i] + E[j], E[i] - E[j], -E[i] + E[j], -E[i] - E[j]]
    phi = iter(sharpness_of(model, project_to_manifold(model, p + np.asarray(pts) @ B.T)))
    f0 = next(phi)
    H = np.empty((k, k))
    for i in range(k):
        fp, fm = next(phi), next(phi)
        H[i, i] = (fp - 2 * f0 + fm) / h**2  # second difference along a tangent direction
        for j in range(i + 1, k):
            fpp, fpm, fmp, fmm = next(phi), next(phi), next(phi), next(phi)
            H[i, j] = H[j, i] = (fpp - fpm - fmp + fmm) / (4 * h * h)
    return H


@dataclass(frozen=True)
class FlattestConstants:
    """The paper's constants for depth-``p`` scalar factorisation with target ``y > 0`` (App. B).

    Attributes
    ----------
    p, y : int, float
    theta_star : ndarray
        The flattest minimiser ``θ∥* = y^{1/p} 1_p``.
    sharpness : float
        ``λ* = p y^{2-2/p}`` (5 for ``p = 5``, ``y = 1``).
    eta_critical : float
        ``2 / λ*`` (0.4 for the paper's example).
    nu : float
        Riemannian Hessian of ``λ`` at ``θ∥*``: ``ν I``, ``ν = 4 y^{2-4/p}`` (Prop B.7).
    ball_radius : float
        Radius ``0.15 y^{1/p}`` of the geodesic ball of Prop B.6 (``inf`` for ``p = 2``).
    modulus : float
        Strong-convexity modulus of ``λ`` on that ball: ``1.33 y^{2-4/p}`` for ``p >= 3``
        (Prop B.6), ``2`` on all of ``M`` for ``p = 2``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    p: int
    y: float
    theta_star: np.ndarray = field(repr=False)
    sharpness: float
    eta_critical: float
    nu: float
    ball_radius: float
    modulus: float


def convexity_modulus(p: int, y: float = 1.0, delta: float = 0.15) -> float:
    """Lemma B.5: strong-convexity modulus of ``λ`` on the geodesic ball of radius ``δ y^{1/p}``.

    ``2 y^{2-4/p} (1+δ)^{-4} (1-δ)^{-2} (3(1-δ)² - (1+δ)²)`` for ``p >= 3`` and
    ``δ ∈ [0, 2 - √3)`` (``≈ 1.3375 y^{2-4/p}`` at ``δ = 0.15``, stated as 1.33 in Prop B.6);
    ``2`` for ``p = 2`` (on all of ``M``).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    p = check_int("p", p, 2, 64)
    y = check_positive("y", y)
    delta = check_range("delta", delta, 0.0, 2.0 - math.sqrt(3.0), high_inclusive=False)
    if p == 2:
        return 2.0  # Prop B.6: modulus 2 on all of M
    # Lemma B.5
    return (
        2.0
        * y ** (2.0 - 4.0 / p)
        * (1 + delta) ** -4
        * (1 - delta) ** -2
        * (3 * (1 - delta) ** 2 - (1 + delta) ** 2)
    )


def flattest_constants(p: int, y: float = 1.0) -> FlattestConstants:
    """The closed forms of App. B for depth-``p`` scalar factorisation (see ``FlattestConstants``).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    p = check_int("p", p, 2, 64)
    y = check_positive("y", y)
    lam = p * y ** (2.0 - 2.0 / p)  # App. B: λ* = p y^{2-2/p}
    return FlattestConstants(
        p=p,
        y=y,
        theta_star=np.full(p, y ** (1.0 / p)),  # App. B: θ∥* = y^{1/p} 1_p
        sharpness=lam,
        eta_critical=2.0 / lam,
        nu=4.0 * y ** (2.0 - 4.0 / p),  # Prop B.7: ∇²_M λ(θ∥*) = ν I
        ball_radius=math.inf if p == 2 else 0.15 * y ** (1.0 / p),  # Prop B.6
        modulus=convexity_modulus(p, y, 0.15) if p > 2 else 2.0,
    )


def geodesic_ball_points(
    model: ScalarModel, radius: float, n: int = 100, seed: int = 0
) -> np.ndarray:
    """``n`` random points of ``M`` inside the geodesic ball ``B_M(θ∥*, radius)``.

    Each point ends a curve ``s ↦ P_M(θ∥* + s v)`` (``v`` a random unit tangent vector) whose
    polygonal length, an upper bound of the geodesic distance, is at most a random fraction of
    ``radius``: so every point is certainly inside the ball.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = check_model(model)
    radius = check_positive("radius", radius)
    n = check_int("n", n, 1, 100_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    rng = np.random.default_rng(seed)
    _, star = model.flattest()
    if isinstance(model, ProductModel):
        star = np.abs(star)
    B = tangent_basis(model, star)
    s = np.linspace(0.0, 1.5 * radius, 301)
    out = np.empty((n, model.dim))
    for i in range(n):
        v = B @ rng.standard_normal(B.shape[1])
        v /= np.linalg.norm(v)
        curve = project_to_manifold(model, star + s[:, None] * v)
        length = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(curve, axis=0), axis=1))])
        target = radius * rng.uniform() ** (1.0 / B.shape[1])  # uniform in the ball's volume
        out[i] = curve[np.searchsorted(length, target, side="right") - 1]
    return out


def euclidean_tangent_hessian(model: ScalarModel, theta_par: Any, h: float = 1e-3) -> np.ndarray:
    """The Euclidean Hessian of ``λ(θ) = ‖∇f(θ)‖²`` restricted to ``T M``, by finite differences.

    The same second differences as ``riemannian_hessian`` but along straight tangent lines
    ``θ∥ + B c``, without projecting back onto ``M``: it misses the curvature term
    ``-<∇λ, n> II`` of the Riemannian Hessian (the rival that the ``ν`` claim's control measures).

    Returns
    -------
    ndarray, shape (D-1, D-1)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model, p, h, B = _tangent_frame(model, theta_par, h)

    def lam(c: np.ndarray) -> float:
        g = model.grad(p + B @ c)
        return float(g @ g)  # λ = ‖∇f‖², extended off M

    k = B.shape[1]
    E = np.eye(k) * h
    H = np.empty((k, k))
    for i in range(k):
        for j in range(i, k):
            H[i, j] = H[j, i] = (
                lam(E[i] + E[j]) - lam(E[i] - E[j]) - lam(E[j] - E[i]) + lam(-E[i] - E[j])
            ) / (4 * h * h)
    return H
