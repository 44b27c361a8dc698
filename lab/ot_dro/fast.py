"""Batched torch (CPU or CUDA): entropic OT plans, worst-case weights, the Sinkhorn-DRO dual.

The same names as :mod:`lab.ot_dro.reference` (eqs. 2-5), batched over leading axes: numpy in
gives float64 numpy out, a tensor in gives a tensor out on its device. Each public function
validates once and calls its ``*_unchecked`` kernel (what the chapter's training step calls).

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

import math
from typing import Any

from lab.core.checks import check_bool, check_choice, check_int, check_positive

from .reference import finite_float64

__all__ = ["entropic_plan", "worst_case_weights", "sinkhorn_dro_objective", "implied_radius"]

#: Sinkhorn sweeps between two convergence checks
CHECK_EVERY = 10


def to_torch(name: str, x: Any, dtype=None, device=None):
    """Return ``(tensor, was_numpy)``; numpy becomes float64 on ``device`` (default CPU)."""
    import torch

    if isinstance(x, torch.Tensor):
        if not torch.is_floating_point(x):
            x = x.to(torch.get_default_dtype())
        if dtype is not None:
            x = x.to(dtype)
        if device is not None:
            x = x.to(device)
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite (found NaN or inf)")
        return x, False
    arr = finite_float64(name, x)
    return torch.as_tensor(arr, dtype=dtype or torch.float64, device=device), True


def _as_output(t, was_numpy: bool):
    return t.detach().cpu().numpy() if was_numpy else t


def _cost(C):
    Ct, was_np = to_torch("C", C)
    if Ct.ndim < 2:
        raise ValueError(f"C must have shape [..., N, M] (got shape {tuple(Ct.shape)})")
    if Ct.shape[-1] == 0 or Ct.shape[-2] == 0:
        raise ValueError(f"C must be non-empty (got shape {tuple(Ct.shape)})")
    return Ct, was_np


def _dro_inputs(loss_q, C, lam, eps):
    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    Ct, was_np = _cost(C)
    lt, _ = to_torch("loss_q", loss_q, dtype=Ct.dtype, device=Ct.device)
    if lt.shape[-1] != Ct.shape[-1]:
        raise ValueError(
            f"loss_q must have last axis M = {Ct.shape[-1]} to match C (got {tuple(lt.shape)})"
        )
    return lt, Ct, lam, eps, was_np


def _log_marginal(name, x, shape, like):
    import torch

    if x is None:
        return torch.full(shape, -math.log(shape[-1]), dtype=like.dtype, device=like.device)
    xt, _ = to_torch(name, x, dtype=like.dtype, device=like.device)
    if xt.shape[-1] != shape[-1] or bool((xt <= 0).any()):
        raise ValueError(
            f"{name} must be positive with last axis {shape[-1]} (got shape {tuple(xt.shape)})"
        )
    return xt.log().expand(shape)


def entropic_plan(
    C,
    eps: float,
    a=None,
    b=None,
    n_iter: int = 1000,
    tol: float = 1e-9,
    semi_relaxed: bool = False,
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
        below ``tol`` (checked every :data:`CHECK_EVERY` sweeps).
    semi_relaxed : bool
        Impose only the row marginal.
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
    semi_relaxed = check_bool("semi_relaxed", semi_relaxed)
    return_iters = check_bool("return_iters", return_iters)
    method = check_choice("method", method, ["auto", "log", "kernel"])
    Ct, was_np = _cost(C)
    log_a = _log_marginal("a", a, Ct.shape[:-1], Ct)
    log_b = _log_marginal("b", b, Ct.shape[:-2] + (Ct.shape[-1],), Ct)
    K = -Ct / eps  # log-kernel
    it = 0
    if semi_relaxed:
        P = torch.exp(log_a[..., :, None] + torch.log_softmax(K + log_b[..., None, :], dim=-1))
    else:
        if method == "auto":
            spread = float((Ct.amax(dim=(-2, -1)) - Ct.amin(dim=(-2, -1))).max()) / eps
            method = "kernel" if spread < (200.0 if Ct.dtype == torch.float64 else 30.0) else "log"
        sinkhorn = _sinkhorn_scaling if method == "kernel" else _sinkhorn_log
        P, it = sinkhorn(K, log_a, log_b, n_iter, tol)
    return (_as_output(P, was_np), it) if return_iters else _as_output(P, was_np)


def _sinkhorn_scaling(K, log_a, log_b, n_iter, tol):
    """Scaling form ``P = diag(u) Kmat diag(v)``, ``Kmat = exp(-(C - min C)/eps)``."""
    import torch

    Kmat = torch.exp(K - K.amax(dim=(-2, -1), keepdim=True))
    a_, b_ = log_a.exp(), log_b.exp()
    u, v = torch.ones_like(a_), torch.ones_like(b_)
    it = 0
    for it in range(1, n_iter + 1):
        u = a_ / (Kmat @ v[..., None])[..., 0]  # rows match a
        v = b_ / (Kmat.transpose(-2, -1) @ u[..., None])[..., 0]  # columns match b
        if it % CHECK_EVERY == 0 or it == n_iter:
            row = u * (Kmat @ v[..., None])[..., 0]
            if float((row - a_).abs().sum(-1).max()) < tol:
                break
    return u[..., :, None] * Kmat * v[..., None, :], it


def _sinkhorn_log(K, log_a, log_b, n_iter, tol):
    """Log-domain updates on ``u = f / eps``, ``v = g / eps`` (stable for any ``eps``)."""
    import torch

    u = torch.zeros_like(log_a)
    v = torch.zeros_like(log_b)
    it = 0
    for it in range(1, n_iter + 1):
        # rows: u_i = log a_i - LSE_j (K_ij + v_j)
        u = log_a - torch.logsumexp(K + v[..., None, :], dim=-1)
        # columns: v_j = log b_j - LSE_i (K_ij + u_i)
        v = log_b - torch.logsumexp(K + u[..., :, None], dim=-2)
        if it % CHECK_EVERY == 0 or it == n_iter:
            row = torch.logsumexp(K + v[..., None, :] + u[..., :, None], dim=-1).exp()
            if float((row - log_a.exp()).abs().sum(-1).max()) < tol:
                break
    return torch.exp(K + u[..., :, None] + v[..., None, :]), it


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
    lt, Ct, lam, eps, was_np = _dro_inputs(loss_q, C, lam, eps)
    pi, Q = worst_case_weights_unchecked(lt, Ct, lam, eps)
    return _as_output(pi, was_np), _as_output(Q, was_np)


def worst_case_weights_unchecked(loss_q, C, lam, eps):
    """Eqs. (2)-(3) on tensors of one dtype and device."""
    import torch

    pi = torch.softmax((loss_q[..., None, :] - lam * C) / (lam * eps), dim=-1)  # eq. (2)
    return pi, pi.mean(dim=-2)  # eq. (3)


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
    lt, Ct, lam, eps, was_np = _dro_inputs(loss_q, C, lam, eps)
    return _as_output(sinkhorn_dro_objective_unchecked(lt, Ct, lam, eps), was_np)


def sinkhorn_dro_objective_unchecked(loss_q, C, lam, eps):
    """Eq. (4) on tensors of one dtype and device."""
    import torch

    m = C.shape[-1]
    lse = torch.logsumexp((loss_q[..., None, :] - lam * C) / (lam * eps), dim=-1) - math.log(m)
    return lam * eps * lse.mean(dim=-1)


def implied_radius(pi, C):
    """Transport budget spent by the worst case, ``rho = (1/N) sum_ij pi_ij C_ij`` (eq. 5).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    pt, was_np = to_torch("pi", pi)
    Ct, _ = to_torch("C", C, dtype=pt.dtype, device=pt.device)
    if pt.shape != Ct.shape:
        raise ValueError(f"pi and C must have the same shape (got {pt.shape} and {Ct.shape})")
    return _as_output(implied_radius_unchecked(pt, Ct), was_np)


def implied_radius_unchecked(pi, C):
    """Eq. (5) on tensors of one dtype and device."""
    return (pi * C).sum(-1).mean(-1)
