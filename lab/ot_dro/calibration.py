"""The paper's calibration objects: semantic cost (eq. 1), inverse-OT loss (eq. 6), filter (eq. 7),
and one phase-1 (semantic calibration) step.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

import math

from lab.core.checks import check_bool, check_choice, check_int, check_positive, check_range

__all__ = ["semantic_cost", "iot_loss", "refine_reference", "calibration_step"]


def _check_labels(y, K, name):
    import torch

    if y.ndim == 1 and not torch.is_floating_point(y):
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= K):
            raise ValueError(f"{name} must hold class indices in [0, {K - 1}]")
        return
    if y.ndim == 2 and y.shape[1] == K:
        return
    raise ValueError(f"{name} must be class indices [n] or soft labels [n, {K}]")


def _label_embed(y, W):
    if y.ndim == 1:
        return W[y]
    return y.to(W.dtype) @ W  # soft labels: label-weighted mixture of class rows


def semantic_cost(zp, yp, zq, yq, W, alpha_x: float = 1.0, alpha_y: float = 1.0):
    """Semantic transport cost, eq. (1): feature cosine distance + label-embedding distance.

    Parameters
    ----------
    zp : Tensor [N, k]
        Features of the training points.
    yp : Tensor [N] (int) or [N, K]
        Labels (indices or soft labels).
    zq : Tensor [M, k]
        Features of the reference candidates.
    yq : Tensor [M] (int) or [M, K]
        Candidate labels.
    W : Tensor [K, k]
        Classifier rows (class embeddings).
    alpha_x, alpha_y : float
        Weights of the two terms (>= 0).

    Returns
    -------
    Tensor [N, M]
        Cost in ``[0, 2 (alpha_x + alpha_y)]`` (one normalised matmul per term).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    alpha_x = check_positive("alpha_x", alpha_x, allow_zero=True)
    alpha_y = check_positive("alpha_y", alpha_y, allow_zero=True)
    for name, t in (("zp", zp), ("zq", zq), ("W", W)):
        if not isinstance(t, torch.Tensor) or t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D torch tensor")
    yp = torch.as_tensor(yp, device=zp.device)
    yq = torch.as_tensor(yq, device=zq.device)
    if yp.shape[0] != zp.shape[0]:
        raise ValueError(f"yp must have N = {zp.shape[0]} rows (got {yp.shape[0]})")
    if yq.shape[0] != zq.shape[0]:
        raise ValueError(f"yq must have M = {zq.shape[0]} rows (got {yq.shape[0]})")
    if zq.shape[0] == 0:
        raise ValueError("zq must be non-empty (empty reference set)")
    _check_labels(yp, W.shape[0], "yp")
    _check_labels(yq, W.shape[0], "yq")
    return semantic_cost_unchecked(zp, yp, zq, yq, W, alpha_x, alpha_y)


def semantic_cost_unchecked(zp, yp, zq, yq, W, alpha_x, alpha_y):
    """Eq. (1) on validated tensors (labels as indices or soft labels)."""
    import torch.nn.functional as F

    # eq. (1), feature term: 1 - cos(phi(x_i), phi(x'_j)), one normalised matmul
    cx = 1.0 - F.normalize(zp, dim=1) @ F.normalize(zq, dim=1).T
    # eq. (1), label term: 1 - cos(W_{y_i}, W_{y'_j}) (soft labels: mixtures of class rows)
    ep = F.normalize(_label_embed(yp, W), dim=1)
    eq_ = F.normalize(_label_embed(yq, W), dim=1)
    cy = 1.0 - ep @ eq_.T
    return alpha_x * cx + alpha_y * cy


def iot_loss(za, zb, tau: float = 0.1, balanced: bool = False, n_iter: int = 200):
    """Inverse-OT calibration loss between two views (eq. 6).

    The observed coupling pairs ``a_i`` with ``b_i``; the model's plan is entropic OT on the
    cost ``1 - cos(za_i, zb_j)`` at temperature ``tau``. Semi-relaxed (row marginal only) it is
    the row softmax and the loss ``-(1/N) sum_i log(N gamma_ii)`` is InfoNCE; ``balanced=True``
    uses the Sinkhorn plan with both marginals uniform (reconstructed option).

    Parameters
    ----------
    za, zb : Tensor [N, k]
        Features of the two views.
    tau : float
        Temperature (> 0).
    balanced : bool
        Balanced Sinkhorn plan instead of the row softmax.
    n_iter : int
        Sinkhorn sweeps for the balanced plan (differentiated by unrolling).

    Returns
    -------
    Tensor (scalar)

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    tau = check_positive("tau", tau)
    balanced = check_bool("balanced", balanced)
    n_iter = check_int("n_iter", n_iter, 1)
    if not isinstance(za, torch.Tensor) or not isinstance(zb, torch.Tensor):
        raise TypeError("za and zb must be torch tensors")
    if za.ndim != 2 or za.shape != zb.shape or za.shape[0] == 0:
        raise ValueError(
            f"za and zb must be non-empty [N, k] of equal shape ({za.shape}, {zb.shape})"
        )
    return iot_loss_unchecked(za, zb, tau, balanced, n_iter)


def iot_loss_unchecked(za, zb, tau, balanced=False, n_iter=200):
    """Eq. (6) on validated tensors."""
    import torch
    import torch.nn.functional as F

    n = za.shape[0]
    sim = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T
    K = sim / tau  # log-kernel of cost 1 - sim, up to a constant
    if not balanced:
        log_gamma = torch.log_softmax(K, dim=1) - math.log(n)
    else:
        u = torch.zeros(n, dtype=K.dtype, device=K.device)
        v = torch.zeros_like(u)
        log_m = -math.log(n)
        for _ in range(n_iter):
            u = log_m - torch.logsumexp(K + v[None, :], dim=1)
            v = log_m - torch.logsumexp(K + u[:, None], dim=0)
        log_gamma = K + u[:, None] + v[None, :]
    # eq. (6): KL(I/N || gamma) = -(1/N) sum_i log(N gamma_ii) (+ const 0)
    return -(torch.diagonal(log_gamma) + math.log(n)).mean()


def refine_reference(
    zp, zq, omega: float = 0.6, eps_f: float = 0.1, rule: str = "paired", min_keep: float = 0.1
):
    """Adaptive filter of the reference set (eq. 7): which candidates still mean the same thing.

    ``rule="paired"`` (``zq[j]`` is the augmentation of ``zp[j]``): the semi-relaxed plan
    ``g = row-softmax(cos(zp, zq) / eps_f) / N``; keep ``j`` iff
    ``g_jj >= omega mean_l g_ll + (1 - omega) max_{i != j} g_ij``. ``rule="unpaired"``: keep ``q``
    iff ``max_p cos(p, q) >= mean(max-cos) * capacity(q) / max capacity``, with
    ``capacity(q) = sum_p cos(p, q)``. At least ``ceil(min_keep M)`` candidates are kept (the
    best matched ones).

    Parameters
    ----------
    zp : Tensor [N, k]
    zq : Tensor [M, k] (M = N for ``paired``)
    omega : float in [0, 1]
    eps_f : float > 0
    rule : {"paired", "unpaired"}
    min_keep : float in [0, 1]

    Returns
    -------
    BoolTensor [M]

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    omega = check_range("omega", omega, 0.0, 1.0)
    eps_f = check_positive("eps_f", eps_f)
    rule = check_choice("rule", rule, ["paired", "unpaired"])
    min_keep = check_range("min_keep", min_keep, 0.0, 1.0)
    if not isinstance(zp, torch.Tensor) or not isinstance(zq, torch.Tensor):
        raise TypeError(
            f"zp and zq must be torch tensors (got {type(zp).__name__}, {type(zq).__name__})"
        )
    if zq.ndim != 2 or zq.shape[0] == 0:
        raise ValueError(f"zq must be a non-empty [M, k] tensor (got {tuple(zq.shape)})")
    if zp.ndim != 2 or zp.shape[1] != zq.shape[1]:
        raise ValueError(f"zp must be [N, {zq.shape[1]}] like zq (got {tuple(zp.shape)})")
    if rule == "paired" and zp.shape[0] != zq.shape[0]:
        raise ValueError(f"paired rule needs N = M (got {zp.shape[0]} and {zq.shape[0]})")
    return refine_reference_unchecked(zp, zq, omega, eps_f, rule, min_keep)


def refine_reference_unchecked(zp, zq, omega, eps_f, rule, min_keep=0.1):
    """Eq. (7) on validated tensors."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        sim = F.normalize(zp, dim=1) @ F.normalize(zq, dim=1).T
        m = zq.shape[0]
        if rule == "paired":
            # eq. (7): the semi-relaxed plan g on the feature cosine at temperature eps_f
            g = torch.softmax(sim / eps_f, dim=1) / m
            self_ = torch.diagonal(g)
            off = g.masked_fill(torch.eye(m, dtype=torch.bool, device=g.device), -1.0)
            comp = off.max(dim=0).values if m > 1 else torch.zeros_like(self_)
            # eq. (7): keep j iff g_jj >= omega mean_l g_ll + (1 - omega) max_{i != j} g_ij
            thr = omega * self_.mean() + (1 - omega) * comp
            keep = self_ >= thr
            score = self_
        else:
            mx = sim.max(dim=0).values
            cap = sim.sum(dim=0)
            keep = mx >= mx.mean() * cap / cap.max()
            score = mx
        k_min = math.ceil(min_keep * m)
        if int(keep.sum()) < k_min:
            keep = torch.zeros_like(keep)
            keep[torch.topk(score, k_min).indices] = True
    return keep


def calibration_step(model, x_a, x_b, y, opt, tau: float = 0.1, ce_weight: float = 1.0) -> dict:
    """One phase-1 step: feature IOT (InfoNCE) between two views + label IOT (cross-entropy).

    Parameters
    ----------
    model : torch.nn.Module
        ``model(x) -> (features, logits)``.
    x_a, x_b : Tensor [N, d]
        The two views (``x_b[i]`` the augmentation of ``x_a[i]``).
    y : LongTensor [N]
    opt : torch.optim.Optimizer
    tau, ce_weight : float
        InfoNCE temperature (> 0) and weight of the CE term (>= 0).

    Returns
    -------
    dict with ``iot`` and ``ce``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    tau = check_positive("tau", tau)
    ce_weight = check_positive("ce_weight", ce_weight, allow_zero=True)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"opt must be a torch optimizer (got {type(opt).__name__})")
    for name, t in (("x_a", x_a), ("x_b", x_b), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (got {type(t).__name__})")
    return calibration_step_unchecked(model, x_a, x_b, y, opt, tau, ce_weight)


def calibration_step_unchecked(model, x_a, x_b, y, opt, tau, ce_weight) -> dict:
    """:func:`calibration_step` on validated arguments (the training loops' step)."""
    import torch.nn.functional as F

    za, logits = model(x_a)
    zb, _ = model(x_b)
    iot = iot_loss_unchecked(za, zb, tau)
    ce = F.cross_entropy(logits, y)
    opt.zero_grad()
    (iot + ce_weight * ce).backward()
    opt.step()
    return {"iot": float(iot.detach()), "ce": float(ce.detach())}
