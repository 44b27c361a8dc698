"""Fast paths: all heads by one einsum, all groups' mean losses by one scatter-add, many
training runs in one loop.

:func:`group_risks` gives the same ``R[h, g]`` as :func:`lab.medro.reference.group_risks`
without a Python loop over heads or groups; :func:`risk_matrix` does the same for a list of
environment batches (one featurizer pass over the concatenated batches).

:func:`train_stacked` trains ``B`` independent runs of :func:`lab.medro.training.train` (one
method and variant; own seed and ``γ`` each) in one loop: their parameters are stacked along a
leading dimension, the forward pass is batched matrix products, one backward goes through the sum
of the runs' losses (the runs share no parameter, so each gets its own gradient) and one Adam
steps the stacked parameters (Adam is elementwise: each run's Adam). ``B`` runs cost about one
run's ~40 small tensor operations per step instead of ``B`` times that.
The loop keeps rows last (feature-major products of contiguous blocks, no transpose) and
computes the two-class cross-entropy as one softplus: the same values as the one-run loop up to
rounding, at about half its cost per run.

See: book/medro/01-official-algorithm.ipynb, book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive
from lab.core.runtime import smoke_steps

from .models import check_model
from .reference import VARIANTS, check_env_batches, check_groups
from .settings import as_settings

__all__ = ["STACKED_METHODS", "group_risks", "risk_matrix", "stack_models", "train_stacked"]

STACKED_METHODS = ("erm", "groupdro", "groupdro_heads", "medro", "medro_groups")


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

    if not torch.is_tensor(logits) or logits.ndim != 3:
        raise ValueError("logits must be a tensor of shape (m, n, C)")
    n_groups = check_int("n_groups", n_groups, 1)
    check_groups(y, g, logits.shape[1], n_groups)
    return group_risks_unchecked(logits, y, g, n_groups)


def group_risks_unchecked(logits: Any, y: Any, g: Any, n_groups: int):
    """:func:`group_risks` without the checks (``logits [m, n, C]``, ``y`` and ``g`` of length
    ``n``, ``g`` in ``[0, n_groups)``), for the training loops.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch
    import torch.nn.functional as F

    m, n, c = logits.shape
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
    return group_risks_unchecked(model(x), y, env, len(batches))[0]


def _layers(model: Any):
    """The two ``Linear`` layers of a :func:`~lab.medro.models.make_featurizer` featurizer."""
    import torch.nn as nn

    f = model.featurizer
    kinds = (nn.Linear, nn.ReLU, nn.Linear, nn.ReLU)
    if not (
        isinstance(f, nn.Sequential)
        and len(f) == 4
        and all(isinstance(mod, k) for mod, k in zip(f, kinds, strict=True))
    ):
        raise ValueError("models must have make_featurizer's Linear-ReLU-Linear-ReLU featurizer")
    return f[0], f[2]


def stack_models(models: Any) -> list:
    """The parameters of ``B`` models of one shape, stacked along a new leading dimension:
    ``[W1 [B, h, d], b1 [B, h], W2 [B, k, h], b2 [B, k], heads [B, m, C, k], head_bias [B, m, C]]``
    (fresh leaf tensors).

    See: book/medro/02-water-digits.ipynb
    """
    import torch

    if not isinstance(models, list | tuple) or len(models) == 0:
        raise ValueError("models must be a non-empty list of MultiHeadNet")
    per_run = []
    for model in models:
        lin1, lin2 = _layers(check_model(model))
        per_run.append([lin1.weight, lin1.bias, lin2.weight, lin2.bias, model.weight, model.bias])
    shapes = [tuple(p.shape) for p in per_run[0]]
    for i, params in enumerate(per_run):
        if [tuple(p.shape) for p in params] != shapes:
            raise ValueError(f"models[{i}] differs in shape from models[0]")
    return [
        torch.stack([params[j].detach() for params in per_run]).clone().requires_grad_(True)
        for j in range(len(shapes))
    ]


def _flat_leaves(stacked: list):
    """The stacked parameters as leaf views of one flat buffer, their ``.grad`` views of another:
    one backward fills the flat gradient, one Adam update covers every run and tensor."""
    import torch

    flat = torch.cat([p.detach().reshape(-1) for p in stacked])
    grad = torch.zeros_like(flat)
    leaves, off = [], 0
    for p in stacked:
        k = p.numel()
        leaf = flat[off : off + k].view(p.shape).requires_grad_(True)
        leaf.grad = grad[off : off + k].view(p.shape)  # backward accumulates here, in place
        leaves.append(leaf)
        off += k
    return leaves, flat, grad


class _FlatAdam:
    """``torch.optim.Adam`` (L2 weight decay, no amsgrad) on one flat tensor: the same
    elementwise operations, in the same order, as its single-tensor path on each parameter."""

    def __init__(self, param, grad, *, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8):
        import torch

        self.param, self.grad = param, grad
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.t = 0

    def step(self):
        import torch

        beta1, beta2 = self.betas
        self.t += 1
        with torch.no_grad():
            g = self.grad
            if self.weight_decay != 0:
                g = g.add(self.param, alpha=self.weight_decay)
            self.exp_avg.lerp_(g, 1 - beta1)
            self.exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            step = float(self.t)
            step_size = self.lr / (1 - beta1**step)
            denom = (self.exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
            self.param.addcdiv_(self.exp_avg, denom, value=-step_size)


def _stacked_logits(params: list, x: Any):
    """``[B, m, C, n]``: each run's :meth:`MultiHeadNet.forward` on the same rows ``x``, laid out
    feature-major (rows last), so every layer is one product of contiguous blocks: no transpose
    and no copy in the forward or the backward pass."""
    import torch

    w1, b1, w2, b2, wh, bh = params
    B, H, D = w1.shape
    _, m, C, k = wh.shape
    # first layer: every run's weights stacked, one [B*H, D] x [D, n] product
    h = torch.relu(torch.addmm(b1.reshape(B * H, 1), w1.reshape(B * H, D), x.t()))
    z = torch.relu(torch.baddbmm(b2[:, :, None], w2, h.view(B, H, -1)))  # [B, k, n]
    heads = torch.baddbmm(bh.reshape(B, m * C, 1), wh.reshape(B, m * C, k), z)  # [B, m*C, n]
    return heads.view(B, m, C, -1)


def _row_losses(logits: Any, y: Any, sign: Any):
    """Cross-entropy of every row, ``[B, m, n]``, from class-major logits ``[B, m, C, n]``:
    the log-sum-exp over the class axis (a reduction across contiguous rows, not within each
    row as ``F.cross_entropy`` on ``[rows, C]`` does) minus the true class's logit; for two
    classes ``softplus(±(l_1 - l_0))`` (``sign = 1 - 2y``), the same value in two operations."""
    import torch
    import torch.nn.functional as F

    if logits.shape[2] == 2:
        return F.softplus((logits[:, :, 1] - logits[:, :, 0]) * sign)
    true = logits.gather(2, y.expand(*logits.shape[:2], 1, -1))[:, :, 0]
    return torch.logsumexp(logits, dim=2) - true


def _eg_rows(w: Any, r: Any, eta: float):
    """:func:`~lab.medro.reference.eg_update` on each run's weights (row ``b`` of ``w``)."""
    import torch

    logw = torch.log(w) + eta * r.detach().to(w.dtype)
    return torch.softmax(logw.reshape(w.shape[0], -1), dim=1).reshape(w.shape)


def per_run(name: str, value: Any, B: int, check, per: str = "model") -> list:
    """One value for every run, or one per run (a sequence of length ``B``, one per ``per``)."""
    if isinstance(value, str) or np.ndim(value) == 0:
        return [check(name, value)] * B
    if isinstance(value, bytes) or np.ndim(value) != 1:
        raise TypeError(f"{name} must be one value or a sequence of values, one per {per}")
    values = list(value)
    if len(values) != B:
        raise ValueError(f"{name} must have one value per {per} ({B}), got {len(values)}")
    return [check(name, v) for v in values]


def train_stacked(
    models: Any,
    x: Any,
    y: Any,
    g: Any,
    n_groups: int,
    settings: Any = None,
    *,
    method: Any = "medro",
    variant: Any = "paper",
    gamma: Any = 0.5,
) -> dict:
    """Train ``B`` models in one loop, each exactly as :func:`~lab.medro.training.train`'s
    loop would train it alone (same losses, adversaries and Adam); the models are updated in place.

    Parameters
    ----------
    models : list of MultiHeadNet
        ``B`` freshly initialised models of one shape: ``m = 1`` head (``"erm"``,
        ``"groupdro"``) or ``m = n_groups`` heads (``"groupdro_heads"``, ``"medro"``,
        ``"medro_groups"``).
    x : Tensor[n, d]
    y, g : LongTensor[n]
        Labels and group ids in ``[0, n_groups)``.
    n_groups : int
    settings : TrainSettings, optional
        ``η_Λ``, steps, Adam's step and weight decay, ``record_every``, shared by the runs
        (default ``TrainSettings()``; its ``hidden`` and ``feat_dim`` are the models').
    method : str or sequence of B str
        ``"erm"``, ``"groupdro"``, ``"groupdro_heads"``, ``"medro"`` or ``"medro_groups"``
        (Eq. 6 with the cell weights tied to group weights, ``λ_ij = q_j / m``), for all runs
        or per run.
    variant : str or sequence of B str
        ``"paper"`` or ``"code"`` (MEDRO's loss), for all runs or per run.
    gamma : float or sequence of B floats (>= 0)
        ``γ`` (MEDRO, paper variant), for all runs or per run.

    Returns
    -------
    dict
        ``weights``: one array ``[T, ...]`` per run (its adversary every ``record_every`` steps
        and at the last); ``risks [T, B, m, n_groups]``; ``seconds`` (the whole loop).

    See: book/medro/02-water-digits.ipynb
    """
    import torch

    settings = as_settings(settings)
    n_groups = check_int("n_groups", n_groups, 1)
    stacked = stack_models(models)
    B, m = stacked[4].shape[0], stacked[4].shape[1]
    methods = per_run("method", method, B, lambda k, v: check_choice(k, v, STACKED_METHODS))
    variants = per_run("variant", variant, B, lambda k, v: check_choice(k, v, VARIANTS))
    gammas = per_run("gamma", gamma, B, lambda k, v: check_positive(k, v, allow_zero=True))
    if not torch.is_tensor(x) or x.ndim != 2 or x.shape[1] != stacked[0].shape[2]:
        raise ValueError(f"x must be a 2-D tensor with {stacked[0].shape[2]} columns")
    check_groups(y, g, x.shape[0], n_groups)
    for b, mth in enumerate(methods):
        if m != (1 if mth in ("erm", "groupdro") else n_groups):
            raise ValueError(f"models[{b}] has {m} heads: method {mth!r} needs another count")
    return train_stacked_unchecked(models, x, y, g, n_groups, settings, methods, variants, gammas)


def _blocks(methods: list, variants: list) -> list:
    """Consecutive runs of one method and variant share a loss: ``[method, variant, lo, hi]``."""
    blocks: list = []
    for b in range(len(methods)):
        if blocks and [methods[b], variants[b]] == blocks[-1][:2]:
            blocks[-1][3] = b + 1
        else:
            blocks.append([methods[b], variants[b], b, b + 1])
    return blocks


def _start_adversaries(blocks: list, m: int, n_groups: int, dev: Any) -> list:
    """Each block's adversary at step 0: ``Λ_0 = 1/m²`` (MEDRO), ``q_0 = 1/G`` (the others)."""
    import torch

    adv = []
    for mth, _, lo, hi in blocks:
        shape = (hi - lo, m, n_groups) if mth == "medro" else (hi - lo, n_groups)
        cells = m * n_groups if mth == "medro" else n_groups
        adv.append(torch.full(shape, 1.0 / cells, dtype=torch.float64, device=dev))
    return adv


def _blocks_loss(blocks: list, adv: list, R: Any, losses: Any, gam: Any, n_present: int, eta):
    """One step of every block: its adversary's update (in ``adv``, in place of the list) and
    the sum of its runs' losses (the runs share no parameter: each gets its own gradient)."""
    import torch

    total = 0.0
    for k, (mth, var, lo, hi) in enumerate(blocks):
        r = R[lo:hi]
        if mth == "erm":  # the adversary stays uniform (recorded as GroupDRO's would be)
            loss = losses[lo:hi, 0].mean(1)
        elif mth == "groupdro":
            adv[k] = _eg_rows(adv[k], r[:, 0], eta)
            loss = (adv[k].to(r.dtype) * r[:, 0]).sum(1)
        elif mth == "groupdro_heads":
            adv[k] = _eg_rows(adv[k], r.mean(1), eta)
            loss = (adv[k].to(r.dtype)[:, None, :] * r).sum(2).mean(1)
        elif mth == "medro_groups":  # Eq. 6 with λ_ij = q_j / m: an adversary over groups
            diag = torch.diagonal(r, dim1=1, dim2=2).sum(1)
            adv[k] = _eg_rows(adv[k], r.mean(1), eta)
            loss = diag + gam[lo:hi] * (adv[k].to(r.dtype) * r.mean(1)).sum(1)
        else:
            adv[k] = _eg_rows(adv[k], r, eta)  # each run: λ ← λ exp(η R̂), / Σ its m² cells
            diag = torch.diagonal(r, dim1=1, dim2=2).sum(1)
            robust = (adv[k].to(r.dtype) * r).sum((1, 2))
            if var == "paper":
                loss = diag + gam[lo:hi] * robust
            else:
                loss = diag / max(n_present, 1) + robust
        total = total + loss.sum()
    return total


def _copy_back(models: list, params: list) -> None:
    """Each run's trained parameters, back into its model."""
    import torch

    with torch.no_grad():
        for b, model in enumerate(models):
            lin1, lin2 = _layers(model)
            mine = [lin1.weight, lin1.bias, lin2.weight, lin2.bias, model.weight, model.bias]
            for p, stacked in zip(mine, params, strict=True):
                p.copy_(stacked[b])


def train_stacked_unchecked(
    models: list, x, y, g, n_groups: int, settings, methods: list, variants: list, gammas: list
) -> dict:
    """:func:`train_stacked` without the checks: ``settings`` a :class:`TrainSettings`,
    ``methods``, ``variants`` and ``gammas`` one valid entry per model (the head counts match).

    See: book/medro/02-water-digits.ipynb
    """
    import torch
    import torch.nn.functional as F

    params, flat, grad = _flat_leaves(stack_models(models))
    B, m = params[4].shape[0], params[4].shape[1]
    dev, dtype = params[0].device, params[0].dtype
    x, y, g = x.to(dev), y.to(dev), g.to(dev)
    n = x.shape[0]
    adam = _FlatAdam(flat, grad, lr=settings.lr, weight_decay=settings.weight_decay)
    blocks = _blocks(methods, variants)
    adv = _start_adversaries(blocks, m, n_groups, dev)
    gam = torch.tensor(gammas, dtype=dtype, device=dev)
    counts = torch.bincount(g, minlength=n_groups)
    n_present = int((counts > 0).sum())
    # group means as one product: losses [B*m, n] @ onehot(g) / counts  [n, G]
    avg = F.one_hot(g, n_groups).to(dtype) / counts.clamp_min(1).to(dtype)
    sign = (1 - 2 * y).to(dtype)  # two classes: loss = softplus(sign * (l_1 - l_0))
    hist_w, hist_r = [], []
    every = settings.record_every
    t0 = time.perf_counter()
    steps = smoke_steps(settings.steps)  # LAB_SMOKE=1: a few iterations
    for t in range(steps):
        losses = _row_losses(_stacked_logits(params, x), y, sign)  # [B, m, n]
        R = (losses.reshape(B * m, n) @ avg).reshape(B, m, n_groups)
        total = _blocks_loss(blocks, adv, R, losses, gam, n_present, settings.eta)
        if t % every == 0 or t == steps - 1:
            hist_w.append([a.detach().cpu().numpy().copy() for a in adv])
            hist_r.append(R.detach().cpu().numpy().copy())
        grad.zero_()
        total.backward()
        adam.step()
    seconds = time.perf_counter() - t0
    _copy_back(models, params)
    weights = []
    for k, (_, _, lo, hi) in enumerate(blocks):
        block = np.array([h[k] for h in hist_w])  # [T, hi - lo, ...]
        weights.extend(block[:, b] for b in range(hi - lo))
    return {"weights": weights, "risks": np.array(hist_r), "seconds": seconds}
