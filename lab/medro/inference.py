r"""Inference without group labels, and the gate (App. A.2).

* :func:`predict`: the mean of the heads' logits (``"ensemble"``, the paper's default), a gate's
  mixture of the heads' logits (``"gate"``), or one head;
* :func:`fit_gate` fits the zero-initialised linear gate on a labelled validation split
  (featurizer and heads frozen); :func:`choose_inference` picks gate or ensemble on validation
  data; :func:`group_accuracy` scores a model per group.

See: book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive

from .data import GroupSplit
from .models import check_model
from .training import TrainResult

__all__ = ["MODES", "choose_inference", "fit_gate", "group_accuracy", "predict"]

MODES = ("ensemble", "gate", "head")


def model_of(model: Any):
    return check_model(model.model if isinstance(model, TrainResult) else model)


def predict(model: Any, x: Any, mode: str = "ensemble", *, gate: Any = None, head: int = 0):
    """Logits ``[n, C]`` without group labels.

    ``"ensemble"``: the mean of the heads' logits (the paper's default); ``"gate"``:
    ``Σ_k softmax(gate(φ(x)))_k · logits_k`` with a gate from :func:`fit_gate`; ``"head"``: one head.

    See: book/medro/02-water-digits.ipynb
    """
    import torch

    net = model_of(model)
    mode = check_choice("mode", mode, MODES)
    if not torch.is_tensor(x) or x.ndim != 2:
        raise ValueError("x must be a 2-D tensor of inputs")
    with torch.no_grad():
        z = net.features(x)
        logits = net.head_logits(z)
        if mode == "ensemble":
            return logits.mean(0)
        if mode == "head":
            head = check_int("head", head, 0, net.n_heads - 1)
            return logits[head]
        if not isinstance(gate, torch.nn.Linear) or gate.out_features != net.n_heads:
            raise ValueError(f"mode='gate' needs gate=fit_gate(...) with {net.n_heads} outputs")
        p = torch.softmax(gate(z), dim=1)  # [n, m]
        return torch.einsum("nm,mnc->nc", p, logits)


def fit_gate(model: Any, split: Any, *, steps: int = 200, lr: float = 0.5):
    """The gate: one zero-initialised linear layer features → heads, fitted with SGD (no weight
    decay) to predict the group of a labelled split, featurizer and heads frozen.

    See: book/medro/02-water-digits.ipynb
    """
    net = model_of(model)
    if not isinstance(split, GroupSplit):
        raise TypeError(f"split must be a GroupSplit, got {type(split).__name__}")
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    return fit_gates_unchecked([net], [split], steps=steps, lr=lr)[0]


def fit_gates_unchecked(nets: list, splits: list, *, steps: int = 200, lr: float = 0.5) -> list:
    """:func:`fit_gate` for many models at once (``splits[b]`` for ``nets[b]``, all splits of one
    size): the gates stacked ``[B, m, k]``, one batched product per step. The gradient of the
    mean cross-entropy is written out, ``(softmax - onehot) / n`` (what autograd computes for a
    linear layer), and plain SGD steps on it."""
    import torch
    import torch.nn.functional as F

    m = nets[0].n_heads
    dev = nets[0].weight.device
    if any(net.n_heads != m for net in nets) or len({len(s.g) for s in splits}) != 1:
        raise ValueError("the gates fitted together need one head count and one split size")
    zs, gs = [], []
    for net, split in zip(nets, splits, strict=True):
        x, _, g = split.tensors(dev)
        if int(g.max()) >= m:
            raise ValueError("the gate needs one head per group")
        with torch.no_grad():
            zs.append(net.features(x))
        gs.append(g)
    z = torch.stack(zs)  # [B, n, k]
    onehot = F.one_hot(torch.stack(gs), m).to(z.dtype)  # [B, n, m]
    B, n, k = z.shape
    w = z.new_zeros(B, m, k)
    b = z.new_zeros(B, m)
    with torch.no_grad():
        for _ in range(steps):
            err = torch.softmax(torch.baddbmm(b[:, None, :], z, w.transpose(1, 2)), -1) - onehot
            err /= n  # d(mean cross-entropy) / d(logits)
            w.sub_(torch.bmm(err.transpose(1, 2), z), alpha=lr)
            b.sub_(err.sum(1), alpha=lr)
    gates = []
    for i in range(B):
        gate = torch.nn.Linear(k, m).to(dev)
        with torch.no_grad():
            gate.weight.copy_(w[i])
            gate.bias.copy_(b[i])
        gates.append(gate)
    return gates


def group_accuracy(
    model: Any, split: Any, mode: str = "ensemble", *, gate: Any = None, head: int = 0
) -> dict:
    """Accuracy per group, the worst group and the average (over the split's rows).

    See: book/medro/02-water-digits.ipynb
    """
    if not isinstance(split, GroupSplit):
        raise TypeError(f"split must be a GroupSplit, got {type(split).__name__}")
    net = model_of(model)
    x, y, g = split.tensors(net.weight.device)
    pred = predict(net, x, mode, gate=gate, head=head).argmax(1)
    ok = (pred == y).cpu().numpy()
    gs = g.cpu().numpy()
    per = np.array([ok[gs == j].mean() if (gs == j).any() else np.nan for j in range(4)])
    return {"groups": per, "worst": float(np.nanmin(per)), "average": float(ok.mean())}


def validation_halves(val: GroupSplit, seed: int) -> tuple[GroupSplit, GroupSplit]:
    """:func:`choose_inference`'s split of ``val``: per group, a random half to fit the gate on
    and the rest to score gate and ensemble on (drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    fit_idx, score_idx = [], []
    for j in np.unique(val.g):
        rows = rng.permutation(np.flatnonzero(val.g == j))
        fit_idx.append(rows[: len(rows) // 2])
        score_idx.append(rows[len(rows) // 2 :])

    def take(idx):
        i = np.concatenate(idx)
        return GroupSplit(val.x[i], val.y[i], val.a[i], val.g[i])

    return take(fit_idx), take(score_idx)


def choose_on(model: Any, gate: Any, held: GroupSplit) -> dict:
    scores = {
        "ensemble": group_accuracy(model, held)["worst"],
        "gate": group_accuracy(model, held, "gate", gate=gate)["worst"],
    }
    mode = "gate" if scores["gate"] > scores["ensemble"] else "ensemble"
    return {"mode": mode, "gate": gate, "val_worst": scores}


def choose_inference(model: Any, val: Any, *, seed: int = 0) -> dict:
    """Gate or ensemble, chosen on validation data: the gate is fitted on one half of ``val``,
    both are scored (worst-group accuracy) on the other half, the better one wins (ties: ensemble).

    Returns ``{"mode", "gate", "val_worst": {mode: accuracy}}``.

    See: book/medro/02-water-digits.ipynb
    """
    if not isinstance(val, GroupSplit):
        raise TypeError(f"val must be a GroupSplit, got {type(val).__name__}")
    seed = check_int("seed", seed, 0)
    fit, held = validation_halves(val, seed)
    return choose_on(model, fit_gate(model, fit), held)
