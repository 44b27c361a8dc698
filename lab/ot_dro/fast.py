"""Batched torch (CPU or CUDA): entropic OT plans, worst-case weights, the Sinkhorn-DRO dual.

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

import math

from lab.core.checks import check_bool, check_choice, check_int, check_positive
from lab.ot_dro.conversions import (
    as_output,
    check_cost,
    check_lam_eps,
    prep_loss_cost,
    to_torch,
)

__all__ = ["entropic_plan", "worst_case_weights", "sinkhorn_dro_objective", "implied_radius"]


def entropic_plan(
    C,
    eps: float,
    a=None,
    b=None,
    n_iter: int = 1000,
    tol: float = 1e-9,
    semi_relaxed: bool = False,
    check_every: int = 10,
    return_iters: bool = False,
    method: str = "auto",
):
    """Entropic OT plan by log-domain Sinkhorn, batched over leading axes, CPU or CUDA.

    Solves ``min_P <P, C> - eps H(P)`` subject to ``P 1 = a`` and ``P^T 1 = b``. With
    ``semi_relaxed=True`` only the row marginal is imposed and the plan is the closed form
    ``a_i softmax_j(log b_j - C_ij / eps)``.

    Parameters
    ----------
    C : array or Tensor [..., N, M]
        Cost; a torch tensor keeps its device and dtype, numpy is computed in float64 on CPU.
    eps : float
        Entropic regularisation (> 0).
    a, b : array or Tensor [..., N] / [..., M], optional
        Positive marginals (uniform by default); each must sum to the same mass.
    n_iter : int
        Maximum number of sweeps (>= 1).
    tol : float
        Stop once the L1 violation of the row marginal (every problem of the batch) is
        below ``tol`` (checked every ``check_every`` sweeps).
    semi_relaxed : bool
        Impose only the row marginal.
    check_every : int
        Sweeps between convergence checks.
    return_iters : bool
        Also return the number of sweeps run.
    method : {"auto", "log", "kernel"}
        ``"log"``: log-domain updates (stable for any ``eps``); ``"kernel"``: the classical
        scaling updates on ``exp(-C/eps)`` (matrix-vector products, much faster, but they
        underflow when ``(max C - min C) / eps`` is large); ``"auto"`` picks ``"kernel"`` when
        that ratio is below 30 (float32) or 200 (float64), else ``"log"``.

    Returns
    -------
    array or Tensor [..., N, M]
        The plan (and the sweep count with ``return_iters``).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    eps = check_positive("eps", eps)
    n_iter = check_int("n_iter", n_iter, 1)
    tol = check_positive("tol", tol, allow_zero=True)
    check_every = check_int("check_every", check_every, 1)
    semi_relaxed = check_bool("semi_relaxed", semi_relaxed)
    method = check_choice("method", method, ["auto", "log", "kernel"])
    Ct, was_np = to_torch("C", C)
    check_cost(Ct)
    n, m = Ct.shape[-2], Ct.shape[-1]
    dt, dev = Ct.dtype, Ct.device
    if a is None:
        log_a = torch.full(Ct.shape[:-1], -math.log(n), dtype=dt, device=dev)
    else:
        at, _ = to_torch("a", a, dtype=dt, device=dev)
        if at.shape[-1] != n or bool((at <= 0).any()):
            raise ValueError(f"a must be positive with last axis {n} (got shape {tuple(at.shape)})")
        log_a = at.log().expand(Ct.shape[:-1])
    if b is None:
        log_b = torch.full(Ct.shape[:-2] + (m,), -math.log(m), dtype=dt, device=dev)
    else:
        bt, _ = to_torch("b", b, dtype=dt, device=dev)
        if bt.shape[-1] != m or bool((bt <= 0).any()):
            raise ValueError(f"b must be positive with last axis {m} (got shape {tuple(bt.shape)})")
        log_b = bt.log().expand(Ct.shape[:-2] + (m,))
    K = -Ct / eps  # log-kernel
    if semi_relaxed:
        P = torch.exp(log_a[..., :, None] + torch.log_softmax(K + log_b[..., None, :], dim=-1))
        return (as_output(P, was_np), 0) if return_iters else as_output(P, was_np)
    if method == "auto":
        spread = float((Ct.amax(dim=(-2, -1)) - Ct.amin(dim=(-2, -1))).max()) / eps
        method = "kernel" if spread < (200.0 if dt == torch.float64 else 30.0) else "log"
    if method == "kernel":
        # scaling form: P = diag(u) Kmat diag(v), Kmat = exp(-(C - min C)/eps)
        Kmat = torch.exp(K - K.amax(dim=(-2, -1), keepdim=True))
        a_, b_ = log_a.exp(), log_b.exp()
        u, v = torch.ones_like(a_), torch.ones_like(b_)
        it = 0
        for it in range(1, n_iter + 1):
            u = a_ / (Kmat @ v[..., None])[..., 0]  # rows match a
            v = b_ / (Kmat.transpose(-2, -1) @ u[..., None])[..., 0]  # columns match b
            if it % check_every == 0 or it == n_iter:
                row = u * (Kmat @ v[..., None])[..., 0]
                if float((row - a_).abs().sum(-1).max()) < tol:
                    break
        P = u[..., :, None] * Kmat * v[..., None, :]
        return (as_output(P, was_np), it) if return_iters else as_output(P, was_np)
    u = torch.zeros_like(log_a)  # u = f / eps
    v = torch.zeros_like(log_b)  # v = g / eps
    it = 0
    for it in range(1, n_iter + 1):
        # rows: u_i = log a_i - LSE_j (K_ij + v_j)
        u = log_a - torch.logsumexp(K + v[..., None, :], dim=-1)
        # columns: v_j = log b_j - LSE_i (K_ij + u_i)
        v = log_b - torch.logsumexp(K + u[..., :, None], dim=-2)
        if it % check_every == 0 or it == n_iter:
            row = torch.logsumexp(K + v[..., None, :] + u[..., :, None], dim=-1).exp()
            if float((row - log_a.exp()).abs().sum(-1).max()) < tol:
                break
    P = torch.exp(K + u[..., :, None] + v[..., None, :])
    return (as_output(P, was_np), it) if return_iters else as_output(P, was_np)


def worst_case_weights(loss_q, C, lam: float, eps: float):
    """Worst-case plan ``pi`` and distribution ``Q`` of entropic (Sinkhorn) Wasserstein DRO.

    Each training point ``i`` spreads its mass over the reference candidates ``j`` with
    ``pi_ij = softmax_j((loss_q_j - lam C_ij) / (lam eps))``; ``Q_j = mean_i pi_ij``.
    Computed in log space (stable for tiny ``eps``); batched over leading axes.

    Parameters
    ----------
    loss_q : array or Tensor [..., M]
        Loss of each candidate.
    C : array or Tensor [..., N, M]
        Transport cost from training point ``i`` to candidate ``j``.
    lam : float
        Transport price (> 0), the dual multiplier of the Wasserstein radius.
    eps : float
        Entropic regularisation (> 0).

    Returns
    -------
    (pi, Q) : ([..., N, M], [..., M])
        Row-stochastic plan and worst-case weights (sum to 1).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    lam, eps = check_lam_eps(lam, eps)
    lt, Ct, was_np = prep_loss_cost(loss_q, C)
    logits = (lt[..., None, :] - lam * Ct) / (lam * eps)  # eq. (2)
    pi = torch.softmax(logits, dim=-1)
    Q = pi.mean(dim=-2)  # eq. (3)
    return as_output(pi, was_np), as_output(Q, was_np)


def sinkhorn_dro_objective(loss_q, C, lam: float, eps: float):
    """Fixed-``lam`` Sinkhorn-DRO dual value ``R`` (eq. 4); its gradient in ``loss_q`` is ``Q``.

    Parameters
    ----------
    loss_q : array or Tensor [..., M]
    C : array or Tensor [..., N, M]
    lam, eps : float
        Transport price and entropic regularisation (> 0).

    Returns
    -------
    float array or Tensor [...]
        ``lam eps mean_i log mean_j exp((loss_q_j - lam C_ij) / (lam eps))``.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    lam, eps = check_lam_eps(lam, eps)
    lt, Ct, was_np = prep_loss_cost(loss_q, C)
    m = Ct.shape[-1]
    lse = torch.logsumexp((lt[..., None, :] - lam * Ct) / (lam * eps), dim=-1) - math.log(m)
    return as_output(lam * eps * lse.mean(dim=-1), was_np)


def implied_radius(pi, C):
    """Transport budget spent by the worst case, ``rho = (1/N) sum_ij pi_ij C_ij`` (eq. 5).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    pt, was_np = to_torch("pi", pi)
    Ct, _ = to_torch("C", C, dtype=pt.dtype, device=pt.device)
    if pt.shape != Ct.shape:
        raise ValueError(f"pi and C must have the same shape (got {pt.shape} and {Ct.shape})")
    return as_output((pt * Ct).sum(-1).mean(-1), was_np)
