"""Fast paths: all heads by one einsum, all groups' mean losses by one scatter-add.

:func:`group_risks` gives the same ``R[h, g]`` as :func:`lab.medro.reference.group_risks_reference`
without a Python loop over heads or groups; :func:`risk_matrix` does the same for a list of
environment batches (one featurizer pass over the concatenated batches).

See: book/medro/01-official-algorithm.ipynb
"""

from __future__ import annotations

from typing import Any

from ..core.checks import check_int
from .models import check_model
from .reference import check_env_batches, check_groups

__all__ = ["group_risks", "risk_matrix"]


def group_risks(logits: Any, y: Any, g: Any, n_groups: int):
    """``R[h, j]``: mean cross-entropy of head ``h`` on group ``j`` (0 if absent), batched.

    Parameters
    ----------
    logits : Tensor[m, n, C]
    y, g : LongTensor[n]
        Labels and group ids in ``[0, n_groups)``.
    n_groups : int

    Returns
    -------
    (Tensor[m, n_groups], BoolTensor[n_groups])

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch
    import torch.nn.functional as F

    if not torch.is_tensor(logits) or logits.ndim != 3:
        raise ValueError("logits must be a tensor of shape (m, n, C)")
    n_groups = check_int("n_groups", n_groups, 1)
    m, n, c = logits.shape
    check_groups(y, g, n, n_groups)
    losses = F.cross_entropy(logits.reshape(m * n, c), y.repeat(m), reduction="none")
    losses = losses.reshape(m, n)
    sums = losses.new_zeros(m, n_groups).index_add(1, g, losses)
    counts = torch.bincount(g, minlength=n_groups).to(losses.dtype)
    present = counts > 0
    return sums / counts.clamp_min(1.0), present


def risk_matrix(model: Any, env_batches: Any):
    """``R[k, e]``: head ``k`` on environment batch ``e``; one featurizer pass, one einsum.

    Parameters
    ----------
    model : MultiHeadNet
    env_batches : list of (Tensor, LongTensor)
        One ``(x, y)`` minibatch per environment.

    Returns
    -------
    Tensor[m_heads, n_envs]
        Differentiable per-environment mean losses.

    See: book/medro/exercises.ipynb
    """
    import torch

    model = check_model(model)
    batches = check_env_batches(env_batches, model)
    sizes = torch.as_tensor([x.shape[0] for x, _ in batches])
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    env = torch.repeat_interleave(torch.arange(len(batches)), sizes).to(y.device)
    return group_risks(model(x), y, env, len(batches))[0]
