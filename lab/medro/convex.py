r"""The convex case: frozen features, linear logistic heads, Eq. 6 solved two ways.

With the featurizer frozen (here: the standardised inputs themselves) and one binary logistic
head ``(v_i, b_i)`` per group, every ``R_ij(V) = mean_{P_j} log(1 + exp(-s (x·v_i + b_i)))
+ (l2/2)‖v_i‖²`` (``s = 2y - 1``) is convex, so Eq. 6,

.. math::  F(V) = \sum_k R_{kk}(V) + \gamma \max_{ij} R_{ij}(V),

is a convex problem. :func:`solve_cvxpy` solves its epigraph form with cvxpy (the peer);
:func:`online_convex` runs Algorithm 1 (exponentiated gradient on the ``m × m`` weights,
gradient descent on ``V``) and returns the value of the averaged iterate, whose gap to the
optimum shrinks like ``O(\sqrt{\log(m^2)/T})`` in the convex–concave case.

See: book/medro/01-official-algorithm.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.runtime import smoke_steps

from .data import GroupSplit

__all__ = ["convex_risks", "convex_value", "frozen_features", "online_convex", "solve_cvxpy"]


def _check_split(split: Any) -> GroupSplit:
    if not isinstance(split, GroupSplit):
        raise TypeError(
            f"split must be a GroupSplit (water_digits().train), got {type(split).__name__}"
        )
    if len(split.y) == 0:
        raise ValueError("split must not be empty")
    return split


def frozen_features(split: Any, dim: int = 16, *, seed: int = 0) -> GroupSplit:
    """The split with its inputs replaced by fixed random ReLU features ``relu(x P / sqrt(d))``
    (``P`` Gaussian, ``dim`` columns): the frozen featurizer of the convex case.

    See: book/medro/01-official-algorithm.ipynb
    """
    split = _check_split(split)
    dim = check_int("dim", dim, 1, 4096)
    seed = check_int("seed", seed, 0)
    P = np.random.default_rng(seed).standard_normal((split.x.shape[1], dim))
    z = np.maximum(split.x.astype(np.float64) @ P / np.sqrt(split.x.shape[1]), 0.0)
    return GroupSplit(z, split.y, split.a, split.g)


def convex_risks(V: Any, b: Any, split: Any, l2: float = 1e-2) -> np.ndarray:
    """``R[i, j]`` of head ``(V[i], b[i])`` on group ``j`` (float64, numpy).

    Parameters
    ----------
    V : array (m, d)
    b : array (m,)
    split : GroupSplit
    l2 : float (>= 0)

    See: book/medro/01-official-algorithm.ipynb
    """
    split = _check_split(split)
    l2 = check_positive("l2", l2, allow_zero=True)
    groups = np.unique(split.g)
    try:
        V = np.asarray(V, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"V and b must be arrays of numbers ({err})") from None
    if V.ndim != 2 or V.shape[1] != split.x.shape[1] or b.shape != (V.shape[0],):
        raise ValueError(f"V must have shape (m, {split.x.shape[1]}) and b shape (m,)")
    if V.shape[0] != len(groups):
        raise ValueError(f"V must have one row per group ({len(groups)}), got {V.shape[0]}")
    s = 2.0 * split.y - 1.0
    margins = s[None, :] * (V @ split.x.T + b[:, None])  # [m, n]
    losses = np.logaddexp(0.0, -margins)
    R = np.stack([losses[:, split.g == j].mean(1) for j in groups], axis=1)
    return R + 0.5 * l2 * (V**2).sum(1)[:, None]


def convex_value(R: Any, gamma: float = 0.5) -> float:
    """Eq. 6's value ``Σ_k R_kk + γ max_ij R_ij`` for a risk matrix."""
    gamma = check_positive("gamma", gamma, allow_zero=True)
    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError(f"R must be a square matrix, got shape {R.shape}")
    return float(np.trace(R) + gamma * R.max())


def solve_cvxpy(split: Any, *, gamma: float = 0.5, l2: float = 1e-2) -> dict:
    """Eq. 6 on frozen features by cvxpy (epigraph ``t >= R_ij``). Returns ``{"value", "V", "b"}``.

    See: book/medro/01-official-algorithm.ipynb
    """
    import cvxpy as cp

    split = _check_split(split)
    gamma = check_positive("gamma", gamma, allow_zero=True)
    l2 = check_positive("l2", l2, allow_zero=True)
    groups = np.unique(split.g)
    m, d = len(groups), split.x.shape[1]
    x = split.x.astype(np.float64)
    s = 2.0 * split.y - 1.0
    V, b, t = cp.Variable((m, d)), cp.Variable(m), cp.Variable()
    R = {}
    for i in range(m):
        for j, gj in enumerate(groups):
            rows = split.g == gj
            margin = cp.multiply(s[rows], x[rows] @ V[i] + b[i])
            R[i, j] = cp.sum(cp.logistic(-margin)) / rows.sum() + 0.5 * l2 * cp.sum_squares(V[i])
    objective = sum(R[k, k] for k in range(m)) + gamma * t
    constraints = [R[i, j] <= t for i in range(m) for j in range(m)]
    prob = cp.Problem(cp.Minimize(objective), constraints)
    try:
        prob.solve()  # CLARABEL, the interior-point default
    except cp.error.SolverError:
        # CLARABEL can stop on numerical trouble under some BLAS kernels (the baseline numerics
        # mode); SCS at a tight tolerance agrees with it to 6e-9 relative on this problem
        prob.solve(solver="SCS", eps=1e-9, max_iters=200_000)
    return {
        "value": float(prob.value),
        "V": V.value,
        "b": b.value,
        "solver": prob.solver_stats.solver_name,
    }


def online_convex(
    split: Any,
    *,
    gamma: float = 0.5,
    l2: float = 1e-2,
    steps: int = 2000,
    lr: float = 0.5,
    eta: float = 0.5,
) -> dict:
    """Algorithm 1 on the convex problem: full-batch gradient steps on ``V`` (step ``lr``) and
    exponentiated gradient on the ``m × m`` weights (step ``eta``), both from uniform / zero starts.

    Returns ``{"value_avg", "value_last", "V_avg", "b_avg", "weights"}`` where the values are
    Eq. 6 at the averaged and the last iterate.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    from .fast import group_risks_unchecked
    from .reference import eg_update_unchecked

    split = _check_split(split)
    gamma = check_positive("gamma", gamma, allow_zero=True)
    l2 = check_positive("l2", l2, allow_zero=True)
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    eta = check_positive("eta", eta, allow_zero=True)
    groups = np.unique(split.g)
    m = len(groups)
    x = torch.as_tensor(split.x, dtype=torch.float64)
    y = torch.as_tensor(split.y, dtype=torch.int64)
    g = torch.as_tensor(np.searchsorted(groups, split.g), dtype=torch.int64)
    V = torch.zeros(m, x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(m, dtype=torch.float64, requires_grad=True)
    W = torch.full((m, m), 1.0 / m**2, dtype=torch.float64)
    V_sum, b_sum = torch.zeros_like(V), torch.zeros_like(b)
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for _ in range(steps):
        f = x @ V.T + b  # [n, m]: margin of the "class 1" logit
        logits = torch.stack([torch.zeros_like(f), f], dim=-1).permute(1, 0, 2)  # [m, n, 2]
        R = group_risks_unchecked(logits, y, g, m)[0] + 0.5 * l2 * (V**2).sum(1)[:, None]
        W = eg_update_unchecked(W, R, eta)
        loss = torch.diagonal(R).sum() + gamma * (W * R).sum()
        gV, gb = torch.autograd.grad(loss, (V, b))
        with torch.no_grad():
            V -= lr * gV
            b -= lr * gb
            V_sum += V
            b_sum += b
    V_avg, b_avg = (V_sum / steps).numpy(), (b_sum / steps).numpy()
    value_avg = convex_value(convex_risks(V_avg, b_avg, split, l2), gamma)
    value_last = convex_value(
        convex_risks(V.detach().numpy(), b.detach().numpy(), split, l2), gamma
    )
    return {
        "value_avg": value_avg,
        "value_last": value_last,
        "V_avg": V_avg,
        "b_avg": b_avg,
        "weights": W.numpy(),
    }
