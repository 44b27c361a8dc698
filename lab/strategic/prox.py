"""The solver of the paper's proximal step (Alg. 3 l.6 / Alg. 4 l.8): the Euclidean projection
onto the feasible set ``W = {||w|| <= 1, <w, u> >= c}`` and Newton's method on the step's KKT
conditions, with a general solver as a fallback. The step itself, as the paper writes it, is
:func:`lab.strategic.reference.prox_step`.

See: book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["project_cone_ball"]


def project_cone_ball(w, center, cos_min) -> np.ndarray:
    """Euclidean projection onto ``W = {||w|| <= 1, <w, center> >= cos_min}`` (unit ``center``).

    Exact: ``W`` is a circular segment in the plane of ``(<w, u>, ||w - <w, u> u||)``; try the
    ball, then the half-space, else the corner.
    """
    w = np.asarray(w, dtype=float)
    a = float(w @ center)
    v = w - a * center
    n = float(np.linalg.norm(v))
    c = float(cos_min)
    rad = math.hypot(a, n)
    if a >= c and rad <= 1.0:
        return w
    if rad > 1.0 and a / rad >= c:  # the ball's projection is feasible
        return w / rad
    if a < c and c * c + n * n <= 1.0:  # the half-space's projection is feasible
        return c * center + v
    s = math.sqrt(max(1.0 - c * c, 0.0))  # the corner
    return c * center + (s * v / n if n > 0 else 0.0 * v)


def grad_half_sq_norm(v, r):
    """Gradient of ``||v||_r^2 / 2``: ``sign(v) |v|^(r-1) ||v||_r^(2-r)``."""
    nrm = float(np.sum(np.abs(v) ** r) ** (1.0 / r))
    if nrm == 0.0:
        return np.zeros_like(v)
    return np.sign(v) * np.abs(v) ** (r - 1) * nrm ** (2 - r)


def _hess_half_sq_norm(y, r):
    """Hessian of ``||y||_r^2 / 2`` (``r >= 2``: bounded, zero at ``y = 0``)."""
    n = float(np.sum(np.abs(y) ** r) ** (1.0 / r))
    if n == 0.0:
        return np.zeros((y.size, y.size))
    s = np.sign(y) * np.abs(y) ** (r - 1)
    return (r - 1) * n ** (2 - r) * np.diag(np.abs(y) ** (r - 2)) + (2 - r) * n ** (
        2 - 2 * r
    ) * np.outer(s, s)


class _ProxProblem(NamedTuple):
    """The data of one proximal step: start ``w_i``, gradient ``g``, cone axis ``u`` and bound
    ``c``, the dual exponent ``q = p / (p - 1)`` and ``scale = (p - 1) alpha``."""

    w_i: np.ndarray
    g: np.ndarray
    u: np.ndarray
    c: float
    q: float
    scale: float


def _prox_kkt(pr: _ProxProblem, y, lam, mu, active):
    w = pr.w_i + pr.scale * grad_half_sq_norm(y, pr.q)  # v = grad phi*(y): the primal point
    res = np.concatenate(
        [
            y + pr.g + lam * w - mu * pr.u,  # stationarity: grad phi(w - w_i) = -g - lam w + mu u
            [0.5 * (w @ w - 1.0) if active[0] else lam],  # ||w|| <= 1, or lam = 0
            [pr.c - pr.u @ w if active[1] else mu],  # <w, u> >= c, or mu = 0
        ]
    )
    return w, res


def _newton_jacobian(pr: _ProxProblem, y, lam, w, active) -> np.ndarray:
    """The Jacobian of :func:`_prox_kkt`'s residual in ``(y, lam, mu)``."""
    d = y.size
    H = pr.scale * _hess_half_sq_norm(y, pr.q)
    J = np.zeros((d + 2, d + 2))
    J[:d, :d], J[:d, d], J[:d, d + 1] = np.eye(d) + lam * H, w, -pr.u
    if active[0]:
        J[d, :d] = H @ w
    else:
        J[d, d] = 1.0
    if active[1]:
        J[d + 1, :d] = -(H @ pr.u)
    else:
        J[d + 1, d + 1] = 1.0
    return J


def _newton(pr: _ProxProblem, y, lam, mu, active, tol):
    """Damped Newton on the KKT residual for one active set; returns ``(y, lam, mu)``."""
    d = y.size
    for _ in range(60):
        w, res = _prox_kkt(pr, y, lam, mu, active)
        n_res = float(np.max(np.abs(res)))
        if n_res < tol:
            break
        J = _newton_jacobian(pr, y, lam, w, active)
        step, t = np.linalg.lstsq(J, -res, rcond=None)[0], 1.0
        while t > 1e-6:  # backtracking on the residual
            y2, lam2, mu2 = y + t * step[:d], lam + t * step[d], mu + t * step[d + 1]
            _, res2 = _prox_kkt(pr, y2, lam2, mu2, active)
            if np.max(np.abs(res2)) < (1.0 - 1e-4 * t) * n_res:
                break
            t /= 2.0
        y, lam, mu = y2, lam2, mu2
    return y, lam, mu


def _prox_newton(w_i, g, alpha, u, c, p, tol=1e-12):
    """Newton on the KKT system of the proximal step, in ``y = grad phi(w - w_i)`` (where
    ``phi*`` is smooth: ``q >= 2``), with an active set over the two constraints of ``W``.
    Returns ``(w, converged)``."""
    q = p / (p - 1.0)
    # phi(v) = ||v||_p^2 / (2 scale); phi*(y) = scale ||y||_q^2 / 2
    pr = _ProxProblem(w_i, g, u, c, q, (p - 1.0) * alpha)
    y, lam, mu = -g.astype(float), 0.0, 0.0
    w = w_i + pr.scale * grad_half_sq_norm(y, q)  # the unconstrained minimiser
    active = [w @ w > 1.0 + 1e-14, w @ u < c - 1e-14]
    if not any(active):
        return w, True
    for _ in range(5):  # active-set rounds
        y, lam, mu = _newton(pr, y, lam, mu, active, tol)
        w, res = _prox_kkt(pr, y, lam, mu, active)
        new = [
            (active[0] and lam > 0) or (not active[0] and w @ w > 1.0 + 1e-12),
            (active[1] and mu > 0) or (not active[1] and u @ w < c - 1e-12),
        ]
        if new == active:
            return w, bool(np.max(np.abs(res)) < 1e-10)
        active = new
        lam, mu = max(lam, 0.0) * active[0], max(mu, 0.0) * active[1]
    return w, False


def prox_argmin(w_i, g, alpha, u, c, p) -> np.ndarray:
    """``argmin_{w in W} <g, w> + ||w - w_i||_p^2 / (2 (p - 1) alpha)`` (no validation)."""
    if not np.any(g):
        return np.asarray(w_i, dtype=float).copy()  # the prox of 0 is w_i (w_i is in W)
    w, ok = _prox_newton(w_i, g, alpha, u, c, p)
    if ok:
        return w
    # rare (a thin cone with both constraints active): a general solver from Newton's point
    from scipy.optimize import minimize

    scale = (p - 1.0) * alpha
    res = minimize(
        lambda x: g @ x + float(np.sum(np.abs(x - w_i) ** p)) ** (2.0 / p) / (2.0 * scale),
        project_cone_ball(w, u, c),
        jac=lambda x: g + grad_half_sq_norm(x - w_i, p) / scale,
        constraints=[
            {"type": "ineq", "fun": lambda x: 1.0 - x @ x, "jac": lambda x: -2.0 * x},
            {"type": "ineq", "fun": lambda x: u @ x - c, "jac": lambda x: u},
        ],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return project_cone_ball(res.x, u, c)
