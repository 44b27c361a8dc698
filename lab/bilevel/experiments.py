"""Drivers of the bilevel chapter's claims: each returns a small result dataclass.

* :func:`curved_weak_convexity` - Theorem 1 on a curved solution set (``L_S = 1 > 0``):
  the measured weak-convexity modulus against ``rho = M_g L_Y + L_g (1 + L_Y)``.
* :func:`error_bound_set_smoothness` - Theorem 2 on the rotating-line lower level.
* :func:`constraint_counterexample` - a lower-level constraint breaks weak convexity.
* :func:`clarke_distance_toy` and :func:`kink_certificate` - the optimistic
  ``(eps, delta)``-Clarke measure at a kink of Toy O, with the kink's whole subdifferential.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.bilevel.problems import (
    BilevelProblem,
    constrained_counterexample,
    rotating_line,
    toy_curved,
    toy_optimistic,
)
from lab.bilevel.reference import (
    clarke_ball_certificate,
    estimate_set_smoothness,
    izom,
    psi_star,
    set_maps,
    sphere_directions,
    weak_convexity_modulus,
)
from lab.core.checks import check_array, check_int, check_positive
from lab.core.rates import power_law_fit

__all__ = [
    "ConstraintBreak",
    "CurvedWeakConvexity",
    "ErrorBoundSmoothness",
    "KinkCertificate",
    "clarke_distance_toy",
    "constraint_counterexample",
    "curved_weak_convexity",
    "error_bound_set_smoothness",
    "kink_certificate",
]


@dataclass
class CurvedWeakConvexity:
    """Theorem 1 measured on :func:`~lab.bilevel.problems.toy_curved`."""

    s: float
    box: float
    L_Y: float  # max of the two set-smoothness estimates of x -> {(t, sin x)}
    M_g: float  # Lipschitz constant of F in y on the box
    L_g: float  # smoothness (Hessian norm) of F in (x, y) on the box
    rho_bound: float  # M_g L_Y + L_g (1 + L_Y)
    modulus: float  # sampled weak-convexity modulus of phi_p on [-box, box]
    modulus_affine: float  # the same with the affine map y_2 = x (L_S = 0)
    modulus_exact: float  # s * max sin on the box


def curved_weak_convexity(
    s: float = 2.0, box: float = 2.0, n: int = 20_000, seed: int = 0
) -> CurvedWeakConvexity:
    """Measure the weak-convexity modulus of ``phi_p = |x| + s sin x`` and the bound of
    Theorem 1, ``rho = M_g L_Y + L_g (1 + L_Y)``, with ``L_Y`` estimated from samples and
    ``M_g``, ``L_g`` maximised on a grid of ``|x| <= box``, ``y_1`` in ``[0, 2 pi]``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    s = check_positive("s", s)
    box = check_positive("box", box)
    n = check_int("n", n, 100)
    seed = check_int("seed", seed, 0)
    select, sample = set_maps()["sine"]
    L_Y = max(estimate_set_smoothness(select, sample, n=n, seed=seed))
    xg, yg = np.meshgrid(np.linspace(-box, box, 401), np.linspace(0, 2 * np.pi, 401))
    # grad_y F = (x cos y_1, s); Hessian of F in (x, y_1, y_2): [[0, cos, 0], [cos, -x sin, 0], 0]
    M_g = float(np.sqrt((xg * np.cos(yg)) ** 2 + s**2).max())
    H = np.zeros(xg.shape + (2, 2))
    H[..., 0, 1] = H[..., 1, 0] = np.cos(yg)
    H[..., 1, 1] = -xg * np.sin(yg)
    L_g = float(np.abs(np.linalg.eigvalsh(H)).max())
    problem = toy_curved(s)
    modulus = weak_convexity_modulus(problem, 1, box=box, n=n, seed=seed)
    modulus_affine = weak_convexity_modulus(
        lambda x: float(abs(x[0]) + s * x[0]), 1, box=box, n=min(n, 2000), seed=seed
    )
    return CurvedWeakConvexity(
        s, box, L_Y, M_g, L_g, M_g * L_Y + L_g * (1 + L_Y), modulus, modulus_affine,
        s * math.sin(min(box, math.pi / 2)),
    )  # fmt: skip


@dataclass
class ErrorBoundSmoothness:
    """Theorem 2 measured on :func:`~lab.bilevel.problems.rotating_line`."""

    tau: float  # largest dist(y, S(x)) / ||grad_y f|| over the samples
    hessian_rank: int  # rank of the lower-level Hessian a a^T (1 < n = 2: no strong convexity)
    L_comb: float
    L_branch: float


def error_bound_set_smoothness(n: int = 10_000, seed: int = 0) -> ErrorBoundSmoothness:
    """Check the error bound of the rotating-line lower level on random points and estimate
    the set-smoothness constants of its solution map on ``|t| <= 1``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    n = check_int("n", n, 100)
    seed = check_int("seed", seed, 0)
    ll = rotating_line()
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, n)
    y = rng.normal(size=(n, 2)) * 10.0 ** rng.uniform(-3, 1, (n, 1))
    g = np.linalg.norm(ll["grad_y_f"](x, y), axis=1)
    ok = g > 1e-300
    tau = float((ll["dist"](x, y)[ok] / g[ok]).max())
    a = np.array([math.cos(0.3), math.sin(0.3)])
    L_comb, L_branch = estimate_set_smoothness(ll["select_branch"], ll["sample_x"], n, seed)
    return ErrorBoundSmoothness(tau, int(np.linalg.matrix_rank(np.outer(a, a))), L_comb, L_branch)


@dataclass
class ConstraintBreak:
    """Weak-convexity moduli around the concave kink of the constrained follower."""

    widths: np.ndarray
    moduli: np.ndarray  # constrained, on [1 - w, 1 + w]
    exponent: float  # fitted slope of log modulus against log width
    modulus_unconstrained: float


def constraint_counterexample(
    widths: Any = (1e-1, 1e-2, 1e-3), n: int = 2000, seed: int = 0
) -> ConstraintBreak:
    """Sampled weak-convexity moduli of ``clip(x, -1, 1)`` on shrinking windows around the
    kink ``x = 1`` (a weakly convex function has a bounded modulus; here it grows like
    ``1 / width``), and of the unconstrained ``phi(x) = x`` on the same windows.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    widths = check_array("widths", widths, ndim=1, min_size=2)
    if np.any(widths <= 0):
        raise ValueError(f"widths must be > 0, got {widths}")
    n = check_int("n", n, 1)
    seed = check_int("seed", seed, 0)
    con, free = constrained_counterexample(True), constrained_counterexample(False)
    moduli = np.array(
        [
            weak_convexity_modulus(lambda X: con.phi_batch(1.0 + X), 1, box=w, n=n, seed=seed)
            for w in widths
        ]
    )
    free_mod = max(
        weak_convexity_modulus(lambda X: free.phi_batch(1.0 + X), 1, box=w, n=n, seed=seed)
        for w in widths
    )
    slope = power_law_fit(widths, moduli, nonpositive="raise").exponent
    return ConstraintBreak(widths, moduli, slope, float(free_mod))


def _with_batch(fun):
    class _B:
        phi_batch = staticmethod(fun)

        def __call__(self, x):
            return float(fun(np.asarray(x, dtype=np.float64)[None, :])[0])

    return _B()


def clarke_distance_toy(
    problem: BilevelProblem, x: Any, delta: float, n_samples: int = 2000, seed: int = 0
) -> float:
    """``dist(0, U_{z in B(x, delta)} d_C phi(z))`` for Toy P / Toy O, kinks included.

    Away from the kinks ``phi`` is differentiable with ``d phi / d x_i = sign t(x_i) +
    (x - a)_i + c sum(x) - kappa x_i`` (``t`` the maximiser of ``psi*``). On a kink
    ``z_i = 0`` the Clarke subdifferential's ``i``-th component is the interval
    ``[-1, 1] + (smooth part)_i``. The minimum is taken over ``x``, ``n_samples`` random
    points of the ball and, for every kink plane ``z_i = 0`` that meets the ball, the
    projection of ``x`` onto it and ``n_samples`` random points of the ball on the plane.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not isinstance(problem, BilevelProblem) or "kappa" not in problem.params:
        raise TypeError("problem must be a Toy P or Toy O problem (toy_pessimistic/optimistic)")
    m = problem.m
    x = check_array("x", x, shape=(m,))
    delta = check_positive("delta", delta)
    n_samples = check_int("n_samples", n_samples, 0)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    a, c, kappa = (problem.params[k] for k in ("a", "c", "kappa"))
    sign = 1.0 if problem.mode == "pessimistic" else -1.0

    def ball(k, center):
        u = sphere_directions(rng, k, m) * rng.uniform(0, 1, (k, 1)) ** (1.0 / m)
        return center + delta * u

    def dist(Z, kink=None):
        smooth = (Z - a) + c * Z.sum(1, keepdims=True) - kappa * Z
        G = sign * psi_star(Z)[1] + smooth
        if kink is not None:  # interval sign * [-1, 1] + smooth on the kink coordinate
            G[:, kink] = np.maximum(np.abs(smooth[:, kink]) - 1.0, 0.0)
        return np.linalg.norm(G, axis=1).min()

    best = dist(np.vstack([x, ball(n_samples, x)]))
    for i in range(m):
        if abs(x[i]) <= delta:
            p = x.copy()
            p[i] = 0.0
            Z = ball(n_samples, x)
            Z[:, i] = 0.0
            Z = Z[np.linalg.norm(Z - x, axis=1) <= delta]
            best = min(best, dist(np.vstack([p, Z]), kink=i))
    return float(best)


@dataclass
class KinkCertificate:
    """The optimistic certificate at a Clarke-stationary kink point of Toy O."""

    x_kink: np.ndarray
    slopes: tuple[float, float]  # one-sided partial derivatives in x_1 at the kink
    exact: float  # clarke_distance_toy at x_kink (kinks included)
    sampled: float  # clarke_ball_certificate at x_kink (finite differences, kinks missed)
    izom_end: np.ndarray  # IZOM started at the kink
    izom_distance: float  # distance of its last iterate to the minimiser x*


def kink_certificate(
    delta: float = 0.15, T: int = 2000, n_samples: int = 400, seed: int = 0
) -> KinkCertificate:
    """Find the Clarke-stationary kink point ``(0, x_2)`` of Toy O (``x_2`` solves the smooth
    coordinate's equation), evaluate both certificates there, and run IZOM from it.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    from scipy.optimize import brentq

    delta = check_positive("delta", delta)
    T = check_int("T", T, 1)
    n_samples = check_int("n_samples", n_samples, 1)
    seed = check_int("seed", seed, 0)
    toy = toy_optimistic()
    a, c = toy.params["a"], toy.params["c"]

    def d2(v):  # partial derivative in x_2 at (0, v) (kappa = 0)
        return -float(psi_star(np.array([v]))[1][0]) + (v - a[1]) + c * v

    x2 = brentq(d2, -3.0, -1e-9)
    xk = np.array([0.0, x2])
    base = (0.0 - a[0]) + c * x2
    slopes = (1.0 + base, -1.0 + base)  # left (t = -1 branch), right (t = +1 branch)
    exact = clarke_distance_toy(toy, xk, delta, n_samples, seed)
    sampled = clarke_ball_certificate(toy, xk, delta, n_samples=n_samples, seed=seed)
    run = izom(toy, xk, T, 0.5 / math.sqrt(2 * T), T**-0.25, seed, measure="none")
    end = run.x[-1]
    return KinkCertificate(xk, slopes, exact, sampled, end, float(np.linalg.norm(end - toy.x_star)))
