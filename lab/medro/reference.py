r"""Reference implementation of MEDRO's pieces, written for reading (loops, one cell at a time).

* :func:`eg_update` — Algorithm 1's exponentiated-gradient step on the ``m × m`` weights,
  normalised over all ``m²`` cells;
* :func:`group_risks` — the risk matrix ``R[h, g]`` of head ``h`` on group ``g`` of a
  minibatch, one cell at a time (its batched twin: :func:`lab.medro.fast.group_risks`);
* :func:`medro_objective` — Eq. 6 (paper: ``Σ_k R_kk + γ Σ λ ⊙ R``) or the official code's loss
  (``trace(R) / groups present + Σ λ ⊙ R``);
* :func:`gated_predict` — a gate's mixture of the experts' class probabilities (exercise);
* :func:`risk_matrix` and :func:`update_pair_weights` — the environment-batch form used by the
  exercises (batched twin: :func:`lab.medro.fast.risk_matrix`).

See: book/medro/01-official-algorithm.ipynb
"""

from __future__ import annotations

from typing import Any

from lab.core.checks import check_choice, check_int, check_positive

from .models import check_model

__all__ = [
    "VARIANTS",
    "check_env_batches",
    "eg_update",
    "gated_predict",
    "group_risks",
    "medro_objective",
    "risk_matrix",
    "update_pair_weights",
]

VARIANTS = ("paper", "code")


def _tensor(name: str, value: Any):
    import numpy as np
    import torch

    if isinstance(value, bool) or value is None:
        raise TypeError(f"{name} must be a tensor or array of numbers, got {type(value).__name__}")
    try:
        t = torch.as_tensor(np.asarray(value) if not torch.is_tensor(value) else value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be a tensor or array of numbers ({err})") from None
    if not (t.is_floating_point() or t.dtype in (torch.int32, torch.int64)):
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    return t


def eg_update(weights: Any, risks: Any, step: float):
    r"""One exponentiated-gradient step of Algorithm 1 on the ``m × m`` weights.

    ``λ_ij ← λ_ij · exp(step · R_ij)``, then divided by the sum over **all** ``m²`` cells (not
    per row or column). Computed in log space, so a large ``step · R`` does not overflow; the
    risks are detached (the adversary gets no gradient).

    Parameters
    ----------
    weights : Tensor or array, shape (m, m)
        Current weights: finite, non-negative, summing to a positive number.
    risks : Tensor or array, shape (m, m)
        Current risks ``R[i, j]`` (head ``i`` on group ``j``), finite.
    step : float
        ``η_Λ >= 0``.

    Returns
    -------
    Tensor, shape (m, m)
        The new weights, non-negative, summing to 1 (float64 unless ``weights`` is a float tensor).

    Examples
    --------
    >>> eg_update([[0.25, 0.25], [0.25, 0.25]], [[0.0, 1.0], [0.0, 0.0]], 1.0).sum()
    tensor(1., dtype=torch.float64)

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    w = _tensor("weights", weights)
    r = _tensor("risks", risks)
    step = check_positive("step", step, allow_zero=True)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 1:
        raise ValueError(f"weights must be a square (m, m) matrix, got shape {tuple(w.shape)}")
    if r.shape != w.shape:
        raise ValueError(
            f"risks must have the shape of weights {tuple(w.shape)}, got {tuple(r.shape)}"
        )
    dtype = w.dtype if w.is_floating_point() else torch.float64
    w = w.detach().to(dtype)
    r = r.detach().to(dtype=dtype, device=w.device)
    if not torch.isfinite(w).all() or (w < 0).any() or float(w.sum()) <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    if not torch.isfinite(r).all():
        raise ValueError("risks must be finite")
    return eg_update_unchecked(w, r, step)


def eg_update_unchecked(w: Any, r: Any, step: float):
    """:func:`eg_update` without the checks, for loops whose inputs are known good: ``w`` a
    float tensor of weights (any shape), ``r`` risks of its shape, ``step >= 0``.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    r = r.detach().to(dtype=w.dtype, device=w.device)
    # eq. (Algorithm 1): λ_ij ← λ_ij exp(η R_ij), in log space (log 0 = -inf stays a zero weight)
    logw = torch.log(w) + step * r
    # eq. (Algorithm 1): / Σ over all m² cells
    return torch.softmax(logw.reshape(-1), dim=0).reshape(w.shape)


def update_pair_weights(q: Any, R: Any, eta: float):
    """Exponentiated gradient on any weight shape (``(m,)`` for GroupDRO, ``(m, m)`` for MEDRO).

    ``q_new ∝ q · exp(η R)`` normalised over all entries; the exercise's target.

    See: book/medro/exercises.ipynb
    """
    import torch

    eta = check_positive("eta", eta, allow_zero=True)
    q = _tensor("q", q)
    R = _tensor("R", R)
    if q.shape != R.shape or q.ndim not in (1, 2) or q.numel() == 0:
        raise ValueError(
            f"q and R must have the same shape (m,) or (m, m), got {tuple(q.shape)}, "
            f"{tuple(R.shape)}"
        )
    dtype = q.dtype if q.is_floating_point() else torch.float64
    q = q.detach().to(dtype)
    if (q < 0).any() or not torch.isfinite(q).all():
        raise ValueError("q must be finite and non-negative")
    return eg_update_unchecked(q, R, eta)


def check_groups(y: Any, g: Any, n: int, n_groups: int):
    import torch

    if not (torch.is_tensor(y) and torch.is_tensor(g)):
        raise TypeError("y and g must be torch tensors")
    if y.shape != (n,) or g.shape != (n,):
        raise ValueError(f"y and g must have shape ({n},), got {tuple(y.shape)}, {tuple(g.shape)}")
    if n and (int(g.min()) < 0 or int(g.max()) >= n_groups):
        raise ValueError(f"g must lie in [0, {n_groups}), got [{int(g.min())}, {int(g.max())}]")


def group_risks(logits: Any, y: Any, g: Any, n_groups: int):
    """``R[h, j]`` = mean cross-entropy of head ``h`` on the samples of group ``j`` (0 if absent).

    Parameters
    ----------
    logits : Tensor[m, n, C]
    y, g : LongTensor[n]
        Labels and group ids in ``[0, n_groups)``.
    n_groups : int

    Returns
    -------
    (Tensor[m, n_groups], BoolTensor[n_groups])
        The risks (differentiable) and which groups are present in the batch.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch
    import torch.nn.functional as F

    if not torch.is_tensor(logits) or logits.ndim != 3:
        raise ValueError("logits must be a tensor of shape (m, n, C)")
    n_groups = check_int("n_groups", n_groups, 1)
    m, n, _ = logits.shape
    check_groups(y, g, n, n_groups)
    rows = []
    for h in range(m):
        row = []
        for j in range(n_groups):
            mask = g == j
            if mask.any():  # eq. (R_ij, Sec. 3.5): mean loss of head i on group j's samples
                row.append(F.cross_entropy(logits[h][mask], y[mask]))
            else:
                row.append(logits.new_zeros(()))
        rows.append(torch.stack(row))
    present = torch.stack([(g == j).any() for j in range(n_groups)])
    return torch.stack(rows), present


def medro_objective(
    R: Any, weights: Any, *, gamma: float = 0.5, variant: str = "paper", present: Any = None
):
    r"""The loss the featurizer and heads descend at one step of Algorithm 1.

    ``variant="paper"`` (Eq. 6): ``Σ_k R_kk + γ Σ_ij λ_ij R_ij``.
    ``variant="code"`` (the official code): ``Σ_k R_kk / (groups present) + Σ_ij λ_ij R_ij``
    (``γ`` is fixed at 1 there and ignored here).

    Parameters
    ----------
    R : Tensor[m, m]
    weights : Tensor[m, m]
        The current ``λ`` (treated as constants).
    gamma : float
        ``>= 0``, the weight of the worst-cell term (paper variant).
    variant : {"paper", "code"}
    present : BoolTensor[m], optional
        Groups present in the batch (code variant); default all.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    variant = check_choice("variant", variant, VARIANTS)
    gamma = check_positive("gamma", gamma, allow_zero=True)
    if not torch.is_tensor(R) or R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError("R must be a square (m, m) tensor")
    w = _tensor("weights", weights).to(dtype=R.dtype, device=R.device).detach()
    if w.shape != R.shape:
        raise ValueError(f"weights must have shape {tuple(R.shape)}, got {tuple(w.shape)}")
    return medro_objective_unchecked(R, w, gamma, variant, present)


def medro_objective_unchecked(R: Any, w: Any, gamma: float, variant: str, present: Any = None):
    """:func:`medro_objective` without the checks (``R`` and ``w`` square tensors of one shape,
    ``variant`` in :data:`VARIANTS`), for the training loops.

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    w = w.to(dtype=R.dtype, device=R.device).detach()
    diag = torch.diagonal(R).sum()  # eq. (6): Σ_k R_kk
    robust = (w * R).sum()  # eq. (6): Σ_ij λ_ij R_ij at the current λ
    if variant == "paper":
        return diag + gamma * robust  # eq. (6)
    n_present = R.shape[0] if present is None else max(int(torch.as_tensor(present).sum()), 1)
    return diag / n_present + robust


def check_env_batches(env_batches: Any, model: Any = None, *, need_heads: bool = False):
    import torch

    if not isinstance(env_batches, list | tuple) or len(env_batches) == 0:
        raise ValueError("env_batches must be a non-empty list of (x, y) pairs")
    out = []
    for e, pair in enumerate(env_batches):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ValueError(f"env_batches[{e}] must be an (x, y) pair")
        x, y = pair
        if not (torch.is_tensor(x) and torch.is_tensor(y)):
            raise TypeError(f"env_batches[{e}] must hold torch tensors")
        if x.shape[0] == 0:
            raise ValueError(f"env_batches[{e}] is empty (0 samples)")
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(f"env_batches[{e}]: y must have shape ({x.shape[0]},)")
        if model is not None and (int(y.min()) < 0 or int(y.max()) >= model.n_classes):
            raise ValueError(f"env_batches[{e}]: labels must lie in [0, {model.n_classes})")
        out.append((x, y))
    if need_heads and model is not None and len(out) != model.n_heads:
        raise ValueError(f"env_batches must have one batch per head ({model.n_heads})")
    return out


def risk_matrix(model: Any, env_batches: Any):
    """``R[k, e]``: head ``k`` on environment batch ``e``, one featurizer pass per environment.

    See: book/medro/exercises.ipynb
    """
    import torch
    import torch.nn.functional as F

    model = check_model(model)
    batches = check_env_batches(env_batches, model)
    cols = []
    for x_e, y_e in batches:
        logits = model.head_logits_reference(model.features(x_e))
        cols.append(torch.stack([F.cross_entropy(logits[k], y_e) for k in range(model.n_heads)]))
    return torch.stack(cols, dim=1)


def gated_predict(head_logits: Any, gate_probs: Any):
    """A gate's mixture of the experts' probabilities: ``Σ_k g_k(x) softmax(h_k(x))``.

    Parameters
    ----------
    head_logits : Tensor[m, n, C]
    gate_probs : Tensor[n, m]
        Rows on the simplex.

    Returns
    -------
    Tensor[n, C]

    See: book/medro/exercises.ipynb
    """
    import torch

    if not torch.is_tensor(head_logits) or not torch.is_tensor(gate_probs):
        raise TypeError("head_logits and gate_probs must be torch tensors")
    if head_logits.ndim != 3:
        raise ValueError(f"head_logits must have shape (m, n, C), got {tuple(head_logits.shape)}")
    m, n, _ = head_logits.shape
    if tuple(gate_probs.shape) != (n, m):
        raise ValueError(f"gate_probs must have shape ({n}, {m}), got {tuple(gate_probs.shape)}")
    gate_probs = gate_probs.to(head_logits.dtype)
    return torch.einsum("nm,mnc->nc", gate_probs, torch.softmax(head_logits, dim=-1))
