"""One AdaDRO phase-2 step and its configuration.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import check_bool, check_choice, check_instance, check_positive, check_range
from lab.ot_dro.calibration import (
    iot_loss_unchecked,
    refine_reference_unchecked,
    semantic_cost_unchecked,
)
from lab.ot_dro.fast import (
    implied_radius_unchecked,
    sinkhorn_dro_objective_unchecked,
    worst_case_weights_unchecked,
)

__all__ = ["AdaDROConfig", "adadro_step"]


@dataclass(frozen=True)
class AdaDROConfig:
    """Hyperparameters of one AdaDRO phase-2 step.

    ``lam`` transport price, ``eps`` entropic regularisation, ``kappa`` weight of the IOT
    calibration loss, ``tau`` its temperature, ``omega`` filter mixing, ``alpha_x``/``alpha_y``
    cost weights, ``detach_cost`` (default True: the cost gets no gradient from the DRO loss),
    ``filter_rule`` ("paired", "unpaired" or "none"), ``cost`` ("semantic" or "euclidean":
    squared input distance, the plain Sinkhorn-DRO baseline).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """

    lam: float = 1.0
    eps: float = 0.1
    kappa: float = 0.5
    tau: float = 0.1
    omega: float = 0.6
    alpha_x: float = 1.0
    alpha_y: float = 1.0
    detach_cost: bool = True
    filter_rule: str = "paired"
    cost: str = "semantic"

    def __post_init__(self):
        check_positive("lam", self.lam)
        check_positive("eps", self.eps)
        check_positive("kappa", self.kappa, allow_zero=True)
        check_positive("tau", self.tau)
        check_range("omega", self.omega, 0.0, 1.0)
        check_positive("alpha_x", self.alpha_x, allow_zero=True)
        check_positive("alpha_y", self.alpha_y, allow_zero=True)
        check_bool("detach_cost", self.detach_cost)
        check_choice("filter_rule", self.filter_rule, ["paired", "unpaired", "none"])
        check_choice("cost", self.cost, ["semantic", "euclidean"])


def adadro_step(model, batch_p, batch_nu, opt, cfg: AdaDROConfig | None = None) -> dict:
    """One phase-2 AdaDRO step: filter nu, worst-case weights, weighted loss + IOT term.

    Parameters
    ----------
    model : torch.nn.Module
        ``model(x) -> (features [n, k], logits [n, K])`` with the classifier in ``model.head``.
    batch_p : (Tensor [N, d], LongTensor [N])
        Training batch.
    batch_nu : (Tensor [N, d], LongTensor [N])
        Reference candidates, ``batch_nu[0][j]`` the augmentation of ``batch_p[0][j]``.
    opt : torch.optim.Optimizer
    cfg : AdaDROConfig

    Returns
    -------
    dict with ``loss`` (the weighted DRO loss), ``robust`` (R), ``iot``, ``keep`` (rate),
    ``keep_mask`` (BoolTensor [N]), ``rho`` (implied radius), ``Q`` (weights on the kept set).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    cfg = AdaDROConfig() if cfg is None else cfg
    check_instance("cfg", cfg, AdaDROConfig)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"opt must be a torch.optim.Optimizer, got {type(opt).__name__}")
    xp, yp = _check_batch("batch_p", batch_p)
    xq, yq = _check_batch("batch_nu", batch_nu)
    return adadro_step_unchecked(model, xp, yp, xq, yq, opt, cfg, check_labels=True)


def _check_batch(name, batch):
    import torch

    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(
            f"{name} must be a pair (features Tensor [N, d], labels LongTensor [N]), "
            f"got {type(batch).__name__}"
        )
    x, y = batch
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"{name} must hold two tensors, got {type(x).__name__}, {type(y).__name__}")
    if x.ndim != 2 or y.ndim != 1 or y.dtype.is_floating_point or y.dtype == torch.bool:
        raise ValueError(
            f"{name} must be (features [N, d], integer labels [N]), got shapes "
            f"{tuple(x.shape)}, {tuple(y.shape)} and labels of dtype {y.dtype}"
        )
    if x.shape[0] != y.shape[0]:
        raise ValueError("features and labels must have the same number of rows")
    if x.shape[0] == 0:
        raise ValueError(f"{name} must be non-empty (no rows)")
    return x, y


def adadro_step_unchecked(model, xp, yp, xq, yq, opt, cfg, check_labels=False) -> dict:
    """:func:`adadro_step` on validated arguments (the training loop's step)."""
    import torch
    import torch.nn.functional as F

    zp, _ = model(xp)
    zq, logits_q = model(xq)
    if check_labels:
        n_classes = logits_q.shape[-1]
        for name, y in (("batch_p", yp), ("batch_nu", yq)):
            if bool((y < 0).any()) or bool((y >= n_classes).any()):
                raise ValueError(
                    f"{name} labels must lie in 0..{n_classes - 1} (the model's classes)"
                )
    if cfg.filter_rule == "none":
        keep = torch.ones(xq.shape[0], dtype=torch.bool, device=xq.device)
    else:  # eq. (7)
        keep = refine_reference_unchecked(zp, zq, cfg.omega, cfg.tau, cfg.filter_rule)
    loss_q = F.cross_entropy(logits_q[keep], yq[keep], reduction="none")
    if not bool(torch.isfinite(loss_q).all()):
        raise ValueError("candidate losses are not finite (NaN loss)")
    if cfg.cost == "semantic":  # eq. (1)
        W = model.head.weight
        C = semantic_cost_unchecked(zp, yp, zq[keep], yq[keep], W, cfg.alpha_x, cfg.alpha_y)
    else:
        C = torch.cdist(xp, xq[keep]) ** 2
    if cfg.detach_cost:
        C = C.detach()
    pi, Q = worst_case_weights_unchecked(loss_q.detach(), C.detach(), cfg.lam, cfg.eps)
    if cfg.detach_cost:
        loss = (Q * loss_q).sum()  # stopgrad(Q) l: same gradient as R when C is detached
    else:  # the cost enters the objective: R's gradient (the official loss differentiates Q)
        loss = sinkhorn_dro_objective_unchecked(loss_q, C, cfg.lam, cfg.eps)
    zero = torch.zeros((), device=xp.device)
    iot = iot_loss_unchecked(zp, zq, cfg.tau) if cfg.kappa > 0 else zero  # eq. (6)
    opt.zero_grad()
    (loss + cfg.kappa * iot).backward()
    opt.step()
    with torch.no_grad():
        robust = sinkhorn_dro_objective_unchecked(loss_q.detach(), C.detach(), cfg.lam, cfg.eps)
    return {
        "loss": float(loss.detach()),
        "robust": float(robust),
        "iot": float(iot.detach()),
        "keep": float(keep.float().mean()),
        "keep_mask": keep,
        "rho": float(implied_radius_unchecked(pi, C.detach())),
        "Q": Q,
    }
