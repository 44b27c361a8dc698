"""Argument conversions of ``lab.ot_dro``'s fast path: numpy/torch in, the same kind out.

Helpers of the chapter's modules, not API (``__all__`` is empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_positive

__all__: list[str] = []


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
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be array-like of numbers (got {type(x).__name__}): {exc}"
        ) from None
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return torch.as_tensor(arr, dtype=dtype or torch.float64, device=device), True


def as_output(t, was_numpy: bool):
    return t.detach().cpu().numpy() if was_numpy else t


def check_cost(C, name: str = "C"):
    if C.ndim < 2:
        raise ValueError(f"{name} must have shape [..., N, M] (got shape {tuple(C.shape)})")
    if C.shape[-1] == 0 or C.shape[-2] == 0:
        raise ValueError(f"{name} must be non-empty (got shape {tuple(C.shape)})")


def check_lam_eps(lam, eps):
    return check_positive("lam", lam), check_positive("eps", eps)


def prep_loss_cost(loss_q, C):
    Ct, was_np = to_torch("C", C)
    check_cost(Ct)
    lt, _ = to_torch("loss_q", loss_q, dtype=Ct.dtype, device=Ct.device)
    if lt.shape[-1] != Ct.shape[-1]:
        raise ValueError(
            f"loss_q must have last axis M = {Ct.shape[-1]} to match C (got {tuple(lt.shape)})"
        )
    return lt, Ct, was_np
