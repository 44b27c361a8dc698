r"""Training on grouped data: ERM, GroupDRO, multi-head GroupDRO and MEDRO (Algorithm 1).

* :func:`train` runs one method on the training split with full-batch Adam
  (``method="medro"``: ``variant="paper"`` Eq. 6 with ``γ``, or ``variant="code"`` as in the
  official code);
* :func:`train_runs` runs many at once, batched over seeds (and ``γ``, methods, variants) by
  :func:`lab.medro.fast.train_stacked`: one tensor operation per step for all of them.

Both take a :class:`~lab.medro.settings.TrainSettings` (validated once, when it is made).
Our choices where the paper leaves freedom at this size: full-batch Adam steps on the 720
training rows, an MLP featurizer, the same ``η`` for GroupDRO and MEDRO; multi-head GroupDRO
trains every head with the GroupDRO loss under one group adversary (fed the heads' mean risks).

See: book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive
from lab.core.runtime import resolve_device, smoke_steps

from .data import WaterDigits
from .fast import group_risks_unchecked, per_run, train_stacked_unchecked
from .models import MultiHeadNet, make_featurizer
from .reference import VARIANTS, eg_update_unchecked, medro_objective_unchecked
from .settings import as_settings

__all__ = ["METHODS", "TrainResult", "check_data", "train", "train_runs"]

METHODS = ("erm", "groupdro", "groupdro_heads", "medro", "medro_groups")


@dataclass
class TrainResult:
    """A trained model with its adversary's history (``weights[t]`` every ``record_every`` steps)."""

    model: Any
    method: str
    variant: str
    gamma: float
    weights: np.ndarray
    risks: np.ndarray
    seconds: float
    info: dict = field(default_factory=dict)


def check_data(data: Any) -> WaterDigits:
    """``data`` if it is a :class:`~lab.medro.data.WaterDigits`, else a ``TypeError``.

    See: book/medro/02-water-digits.ipynb
    """
    if not isinstance(data, WaterDigits):
        raise TypeError(
            f"data must be a WaterDigits (lab.medro.water_digits), got {type(data).__name__}"
        )
    return data


def train(
    data: Any,
    method: str = "medro",
    settings: Any = None,
    *,
    variant: str = "paper",
    gamma: float = 0.5,
    seed: int = 0,
    device: Any = "cpu",
    **changes: Any,
) -> TrainResult:
    """Train one method on ``data.train`` with full-batch Adam steps.

    Parameters
    ----------
    data : WaterDigits
    method : {"erm", "groupdro", "groupdro_heads", "medro", "medro_groups"}
        ``"medro_groups"``: Eq. 6 with the cell weights tied to group weights,
        ``λ_ij = q_j / m`` (the heads, the diagonal term and the cross risks kept, the adversary
        over the ``m`` groups instead of the ``m²`` cells): MEDRO without its key ingredient.
    settings : TrainSettings, optional
        ``η_Λ``, steps, Adam's step and weight decay, the featurizer's widths, ``record_every``
        (default ``TrainSettings()``); ``**changes`` replace some of its fields.
    variant : {"paper", "code"}
        MEDRO's loss: Eq. 6 with ``gamma`` (paper) or the official code's (γ = 1, averaged diagonal).
    gamma : float (>= 0)
    seed : int (>= 0)
    device : str or torch.device

    Returns
    -------
    TrainResult

    See: book/medro/02-water-digits.ipynb
    """
    data = check_data(data)
    method = check_choice("method", method, METHODS)
    variant = check_choice("variant", variant, VARIANTS)
    gamma = check_positive("gamma", gamma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    s = as_settings(settings, changes)
    return _train(data, method, s, variant, gamma, seed, resolve_device(device))


def _step_loss(method, variant, gamma, logits, y, R, present, adv, eta):
    """One step's adversary update and loss: ``(loss, new adversary)``."""
    import torch
    import torch.nn.functional as F

    if method == "erm":
        return F.cross_entropy(logits[0], y), adv
    if method == "groupdro":
        q = eg_update_unchecked(adv, R[0], eta)
        return (q.to(R.dtype) * R[0]).sum(), q
    if method == "groupdro_heads":
        q = eg_update_unchecked(adv, R.mean(0), eta)
        return (q.to(R.dtype)[None, :] * R).sum(1).mean(), q
    if method == "medro_groups":  # Eq. 6 with λ_ij = q_j / m: an adversary over groups
        q = eg_update_unchecked(adv, R.mean(0), eta)
        return torch.diagonal(R).sum() + gamma * (q.to(R.dtype) * R.mean(0)).sum(), q
    W = eg_update_unchecked(adv, R, eta)  # λ ← λ exp(η R̂), / Σ over m² cells
    return medro_objective_unchecked(R, W, gamma, variant, present), W


def _train(data: WaterDigits, method: str, s, variant: str, gamma: float, seed: int, dev):
    """:func:`train`'s loop, on checked arguments."""
    import torch

    x, y, g = data.train.tensors(dev)
    G = data.n_groups
    m = 1 if method in ("erm", "groupdro") else G
    model = init_model(data, m, s.hidden, s.feat_dim, seed, dev)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    if method == "medro":
        adv = torch.full((m, G), 1.0 / (m * G), dtype=torch.float64, device=dev)  # Λ_0 = 1/m²
    else:
        adv = torch.full((G,), 1.0 / G, dtype=torch.float64, device=dev)
    hist_w, hist_r = [], []
    t0 = time.perf_counter()
    steps = smoke_steps(s.steps)  # LAB_SMOKE=1: a few iterations
    for t in range(steps):
        logits = model(x)
        R, present = group_risks_unchecked(logits, y, g, G)
        loss, adv = _step_loss(method, variant, gamma, logits, y, R, present, adv, s.eta)
        if t % s.record_every == 0 or t == steps - 1:
            hist_w.append(adv.detach().cpu().numpy().copy())
            hist_r.append(R.detach().cpu().numpy().copy())
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    info = {"eta": s.eta, "steps": steps, "seed": seed, "record_every": s.record_every}
    seconds = time.perf_counter() - t0
    return TrainResult(
        model, method, variant, float(gamma), np.array(hist_w), np.array(hist_r), seconds, info
    )


def init_model(data: WaterDigits, m: int, hidden: int, feat_dim: int, seed: int, dev: Any):
    """The model :func:`train` starts from: drawn on the CPU right after ``manual_seed(seed)``.

    See: book/medro/02-water-digits.ipynb
    """
    import torch

    torch.manual_seed(seed)
    in_dim = data.train.x.shape[1]
    return MultiHeadNet(make_featurizer(in_dim, hidden, feat_dim), feat_dim, data.n_classes, m).to(
        dev
    )


#: the most runs :func:`train_runs` stacks in one loop: per run and step, a stack of about eight
#: cost the least on one CPU thread (fewer pay the per-op overhead, more leave the cache);
#: timings in benchmarks/bench_medro.py and benchmarks/results/medro-cpu.json
BATCH = 8


def train_runs(
    data: Any,
    method: Any = "medro",
    settings: Any = None,
    *,
    seeds: Any = (0, 1, 2),
    gamma: Any = 0.5,
    variant: Any = "paper",
    device: Any = "cpu",
    **changes: Any,
) -> list:
    """Many :func:`train` runs at once, batched (:func:`lab.medro.fast.train_stacked`):
    ``[train(data, method_i, settings, seed=seed_i, gamma=γ_i, variant=variant_i) for each i]``,
    the same runs up to rounding (the test checks the parameters within 2e-3; 3.3e-4 measured).

    Parameters
    ----------
    seeds : sequence of int (>= 0)
        One run per entry (repeats allowed, e.g. one per ``γ``).
    method, variant, gamma : one value, or a sequence with one entry per seed
        As in :func:`train`. Runs with one head (``"erm"``, ``"groupdro"``) and runs with one
        head per group are stacked in separate loops, at most 8 runs each.
    data, settings, device, **changes
        As in :func:`train`, shared by the runs.

    Returns
    -------
    list of TrainResult
        In the order of ``seeds``; ``seconds`` is each loop's time divided among its runs.

    See: book/medro/02-water-digits.ipynb
    """
    data = check_data(data)
    if isinstance(seeds, str | bytes) or not hasattr(seeds, "__len__"):
        raise TypeError("seeds must be a sequence of integers")
    seeds = [check_int("seeds", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    B = len(seeds)
    methods = per_run("method", method, B, lambda k, v: check_choice(k, v, METHODS), "seed")
    variants = per_run("variant", variant, B, lambda k, v: check_choice(k, v, VARIANTS), "seed")
    gammas = per_run("gamma", gamma, B, lambda k, v: check_positive(k, v, allow_zero=True), "seed")
    s = as_settings(settings, changes)
    return _train_runs(data, s, seeds, methods, variants, gammas, resolve_device(device))


def _chunks(heads: list) -> list:
    """Runs of one head count, at most :data:`BATCH` per loop (larger ones gain nothing), in
    contiguous near-equal pieces (methods stay in blocks): ``[(m, [run indices]), ...]``."""
    chunks = []
    for m in dict.fromkeys(heads):
        same = [i for i in range(len(heads)) if heads[i] == m]
        k = -(-len(same) // BATCH)
        cuts = [round(j * len(same) / k) for j in range(k + 1)]
        chunks += [(m, same[cuts[j] : cuts[j + 1]]) for j in range(k)]
    return chunks


def _train_runs(data, s, seeds, methods, variants, gammas, dev) -> list:
    """:func:`train_runs` on checked arguments."""
    x, y, g = data.train.tensors(dev)
    G = data.n_groups
    heads = [1 if mth in ("erm", "groupdro") else G for mth in methods]
    results: list = [None] * len(seeds)
    for m, idx in _chunks(heads):
        models = [init_model(data, m, s.hidden, s.feat_dim, seeds[i], dev) for i in idx]
        out = train_stacked_unchecked(
            models,
            x,
            y,
            g,
            G,
            s,
            [methods[i] for i in idx],
            [variants[i] for i in idx],
            [gammas[i] for i in idx],
        )
        for b, (i, model) in enumerate(zip(idx, models, strict=True)):
            model.eval()
            info = {"eta": s.eta, "steps": s.steps, "seed": seeds[i], "batched": len(idx)}
            results[i] = TrainResult(
                model,
                methods[i],
                variants[i],
                float(gammas[i]),
                out["weights"][b],
                out["risks"][:, b],
                out["seconds"] / len(idx),
                {**info, "record_every": s.record_every},
            )
    return results
