"""Notebook 1's drivers on the 2-D toy (:mod:`lab.ot_dro.toy`): its worst case and radius
curve (eqs. 2-5), gradient descent on the convex fixed-cost objective, and the bias of the
nested (mini-batch) objective.

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.memo import memo
from lab.core.runtime import small_problem_threads
from lab.ot_dro.toy import toy_2d, toy_cost, toy_losses

__all__ = [
    "LAMS",
    "lam_curve",
    "ToyPlan",
    "toy_plan",
    "DescentRun",
    "dro_descent",
    "NestedBias",
    "nested_bias",
]

LAMS = np.geomspace(0.05, 20, 30)  # the lambda grid of the radius panel


@memo
def lam_curve(lams, eps: float, seed: int = 0):
    """Implied radius rho(lam) (eq. 5) and robust objective R(lam) (eq. 4) on the 2-D toy.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    from lab.ot_dro.fast import (
        implied_radius_unchecked,
        sinkhorn_dro_objective_unchecked,
        worst_case_weights_unchecked,
    )

    eps = check_positive("eps", eps)
    lams = [check_positive("lams", lam) for lam in np.atleast_1d(lams)]
    P, _, Q, yQ = toy_2d(seed=seed)
    loss = torch.as_tensor(toy_losses(Q, yQ))
    C = torch.as_tensor(toy_cost(P, Q))
    rho = [float(implied_radius_unchecked(worst_case_weights_unchecked(loss, C, lam, eps)[0], C))
           for lam in lams]  # fmt: skip
    R = [float(sinkhorn_dro_objective_unchecked(loss, C, lam, eps)) for lam in lams]
    return np.array(rho), np.array(R)


@dataclass(frozen=True)
class ToyPlan:
    """The 2-D toy's worst case at one ``(lam, eps)``: points, losses, cost, plan ``pi``,
    weights ``Q`` and implied radius ``rho``; ``rho_curve``/``R_curve`` over ``lams``."""

    lam: float
    eps: float
    P: np.ndarray
    yP: np.ndarray
    Q: np.ndarray
    yQ: np.ndarray
    loss: np.ndarray
    C: np.ndarray
    pi: np.ndarray
    Qw: np.ndarray
    rho: float
    lams: np.ndarray
    rho_curve: np.ndarray
    R_curve: np.ndarray


@memo
def toy_plan(lam: float = 1.0, eps: float = 0.1, seed: int = 0) -> ToyPlan:
    """The worst-case plan of the 2-D toy at ``(lam, eps)`` and the radius curve of ``eps``
    (cached: the widget of notebook 1 draws it).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    from lab.ot_dro.fast import implied_radius, worst_case_weights

    P, yP, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    pi, Qw = worst_case_weights(loss, C, lam, eps)
    rho_curve, R_curve = lam_curve(LAMS, float(eps), seed)
    rho = float(implied_radius(pi, C))
    return ToyPlan(lam, eps, P, yP, Q, yQ, loss, C, pi, Qw, rho, LAMS, rho_curve, R_curve)


@dataclass
class DescentRun:
    """Full-batch gradient descent on a Sinkhorn-DRO objective: ``grad_norm[t]``, ``objective[t]``."""

    grad_norm: np.ndarray
    objective: np.ndarray
    lr: float
    smoothness: float
    mu: float


def dro_descent(X, y, C, lam: float = 1.0, eps: float = 0.1, mu: float = 0.5, steps: int = 3000):
    """Gradient descent on ``F(w) = R(w) + mu/2 |w|^2``, ``R`` the Sinkhorn-DRO dual (eq. 4).

    ``R(w) = lam eps mean_i log mean_j exp((l_j(w) - lam C_ij) / (lam eps))`` with the logistic
    loss ``l_j(w) = log(1 + exp(-y_j <w, x_j>))`` of the candidates ``(X, y)`` (labels +-1) and
    a fixed cost ``C [N, M]``. ``F`` is convex and ``mu``-strongly convex; the step is ``1/L``
    with the bound ``L = max_j |x_j|^2 (1/4 + 1/(lam eps)) + mu``, so the gradient norm should
    fall geometrically. ``grad R = sum_j Q_j grad l_j`` with ``Q`` of eq. (3).

    Returns
    -------
    DescentRun

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    from lab.ot_dro.reference import (
        sinkhorn_dro_objective_unchecked,
        worst_case_weights_unchecked,
    )

    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    mu = check_positive("mu", mu)
    steps = check_int("steps", steps, 1)
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X and y must be array-like of numbers: {exc}") from None
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],) or not np.isfinite(X).all():
        raise ValueError(f"X must be a finite [M, d] array and y [M] (got {X.shape}, {y.shape})")
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[1] != X.shape[0] or not np.isfinite(C).all():
        raise ValueError(f"C must be a finite [N, M = {X.shape[0]}] array (got {C.shape})")
    L = float((X**2).sum(1).max()) * (0.25 + 1.0 / (lam * eps)) + mu
    lr = 1.0 / L
    w = np.zeros(X.shape[1])
    gn, obj = np.empty(steps + 1), np.empty(steps + 1)
    for t in range(steps + 1):
        margin = y * (X @ w)
        loss = np.logaddexp(0.0, -margin)
        _, Q = worst_case_weights_unchecked(loss, C, lam, eps)
        R = sinkhorn_dro_objective_unchecked(loss, C, lam, eps)
        dl = -(y / (1.0 + np.exp(margin)))[:, None] * X  # grad l_j
        g = Q @ dl + mu * w
        gn[t], obj[t] = np.linalg.norm(g), R + 0.5 * mu * float(w @ w)
        if t < steps:
            w = w - lr * g
    return DescentRun(gn, obj, lr, L, mu)


@dataclass
class NestedBias:
    """Bias of the mini-batch Sinkhorn-DRO objective against the full reference pool."""

    M: np.ndarray
    bias: np.ndarray
    stderr: np.ndarray
    full: float


def nested_bias(
    loss_pool, C_pool, Ms, lam: float = 1.0, eps: float = 0.1, reps: int = 400, seed: int = 0
):
    """``E[R_M] - R_full`` for inner batches of ``M`` candidates drawn from the pool.

    ``R`` is a mean over training points of a log of an inner mean (eq. 4), so a plug-in inner
    mean over ``M`` samples is biased downwards by about ``Var / (2 M)`` (Jensen): the reason
    why the authors' rate needs an MLMC estimator. ``Ms`` are the inner batch sizes.

    Returns
    -------
    NestedBias

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    from lab.ot_dro.fast import sinkhorn_dro_objective_unchecked as objective

    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    reps = check_int("reps", reps, 2)
    seed = check_int("seed", seed, 0)
    loss_pool = torch.as_tensor(np.asarray(loss_pool, dtype=np.float64))
    C_pool = torch.as_tensor(np.asarray(C_pool, dtype=np.float64))
    if C_pool.ndim != 2 or loss_pool.shape != (C_pool.shape[1],):
        raise ValueError(f"C_pool must be [N, P] and loss_pool [P] (got {tuple(C_pool.shape)})")
    if not bool(torch.isfinite(C_pool).all() and torch.isfinite(loss_pool).all()):
        raise ValueError("loss_pool and C_pool must be finite (found NaN or inf)")
    Ms = np.asarray([check_int("M", int(m), 1) for m in np.atleast_1d(Ms)])
    full = float(objective(loss_pool, C_pool, lam, eps))
    gen = torch.Generator().manual_seed(seed)
    bias, se = [], []
    with small_problem_threads(1):
        for m in Ms:
            idx = torch.randint(0, C_pool.shape[1], (reps, int(m)), generator=gen)
            vals = objective(loss_pool[idx], C_pool[:, idx].permute(1, 0, 2), lam, eps)
            bias.append(float(vals.mean()) - full)
            se.append(float(vals.std()) / np.sqrt(reps))
    return NestedBias(Ms, np.array(bias), np.array(se), full)
