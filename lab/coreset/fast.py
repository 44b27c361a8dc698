"""Batched torch fast path of greedy facility location (CPU or CUDA), tested against
``lab.coreset.reference.greedy_facility_location``.

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_positive

__all__ = [
    "facility_location",
    "per_class_facility_location_many",
]


def facility_location(
    G: Any,
    budget: int,
    *,
    metric: str = "euclidean",
    similarity: str = "max-minus",
    scale: float | None = None,
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy facility location, the batched torch fast path.

    Same algorithm and tie-breaking as ``greedy_facility_location`` (lowest index among equal
    gains; each point goes to its earliest-picked nearest medoid), but all gains of a step come
    from one masked reduction on the device, and a leading batch axis selects a coreset in
    many pools at once.

    Parameters
    ----------
    G : array-like or Tensor, shape (n, m) or (P, n, m)
        Feature vectors of one pool (or ``P`` pools of the same size). With
        ``metric="precomputed"``: distance matrices of shape (n, n) or (P, n, n).
    budget : int
        Coreset size ``B >= 1`` (``B >= n`` returns the whole pool with weights 1).
    metric : {"euclidean", "precomputed"}
        How to get distances from ``G``.
    similarity, scale : str, float
        ``"max-minus"``: eq. (2), ``d_max - d`` per pool; ``"exp"``: ``exp(-d / scale)``, the
        kernel of the official (CREST/submodlib) selection (``similarity_matrix``).
    device : str or torch.device, optional
        Where to compute; ``None`` follows a tensor input, else ``lab.device()``.

    Returns
    -------
    idx, weights : ndarray of int, shape (B,) or (P, B)
        As in ``greedy_facility_location``.

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    budget = check_int("budget", budget, 1)
    metric = check_choice("metric", metric, ("euclidean", "precomputed"))
    similarity = check_choice("similarity", similarity, ("max-minus", "exp"))
    if similarity == "exp":
        if scale is None:
            raise ValueError('scale must be given for similarity="exp" (got None)')
        scale = check_positive("scale", scale)
    dev = resolve_device(device, G)
    if isinstance(G, torch.Tensor):
        X = G.detach().to(dev)
        if not X.is_floating_point():
            X = X.double()
    else:
        X = torch.as_tensor(check_array("G", G, ndim=(2, 3), min_size=1), device=dev)
    if X.ndim not in (2, 3):
        raise ValueError(f"G must have ndim in (2, 3) (got shape {tuple(X.shape)})")
    if not torch.isfinite(X).all():
        raise ValueError("G must contain only finite values (got NaN or inf)")
    single = X.ndim == 2
    if single:
        X = X.unsqueeze(0)
    if metric == "precomputed":
        if X.shape[-1] != X.shape[-2]:
            raise ValueError(f"G must be square distance matrices (got shape {tuple(X.shape)})")
        if (X < 0).any():
            raise ValueError("G must be non-negative distances (got a negative value)")
    idx, w = facility_location_unchecked(X, budget, metric, similarity, scale)
    return (idx[0], w[0]) if single else (idx, w)


def facility_location_unchecked(X, budget: int, metric: str, similarity: str, scale):
    """``facility_location`` on a batch ``X`` of shape (P, n, m) (or (P, n, n) distances),
    without the checks; returns ``(idx, weights)`` of shape (P, B)."""
    import torch

    if metric == "precomputed":
        D = X
    else:
        sq = (X * X).sum(-1)
        d2 = (sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2.0 * X @ X.transpose(-1, -2)).clamp_min(0)
        d2.diagonal(dim1=-2, dim2=-1).zero_()
        D = d2.sqrt()
    P, n = D.shape[0], D.shape[1]
    if budget >= n:
        return torch.arange(n).expand(P, n).numpy().copy(), np.ones((P, n), dtype=int)
    if similarity == "exp":
        S = torch.exp(-D / scale)  # deviation: submodlib's kernel (the official selection)
    else:
        S = D.amax(dim=(-2, -1), keepdim=True) - D  # eq. (2), per pool
    cover = torch.zeros(P, n, dtype=S.dtype, device=S.device)
    taken = torch.zeros(P, n, dtype=torch.bool, device=S.device)
    rows = torch.arange(P, device=S.device)
    chosen = torch.empty(P, budget, dtype=torch.long, device=S.device)
    for t in range(budget):
        gain = (S - cover.unsqueeze(-1)).clamp_min(0).sum(dim=1)  # eq. (3), all j at once
        gain = gain.masked_fill(taken, -math.inf)
        j = gain.argmax(dim=1)  # first maximal index
        chosen[:, t] = j
        taken[rows, j] = True
        cover = torch.maximum(cover, S[rows, :, j])
    Ssel = torch.gather(S, 2, chosen.unsqueeze(1).expand(P, n, budget))
    nearest = Ssel.argmax(dim=2)
    weights = torch.zeros(P, budget, dtype=torch.long, device=S.device)
    weights.scatter_add_(1, nearest, torch.ones_like(nearest))
    return chosen.cpu().numpy(), weights.cpu().numpy()


def per_class_facility_location_many(
    G: Any,
    y: Any,
    budget: int,
    *,
    similarity: str = "max-minus",
    device: Any = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``per_class_facility_location`` for many pools at once (the batched fast path).

    Every (pool, class) group is a facility-location problem of its own; groups of equal size
    are stacked and solved in one ``facility_location`` call, so a batch of class-balanced
    pools costs one call.

    Parameters
    ----------
    G : array-like or Tensor, shape (P, n, m)
        Feature vectors of ``P`` pools of ``n`` points.
    y : array-like of int, shape (P, n)
        The pools' labels.
    budget : int
        ``B >= 1``; each class of a pool gets ``ceil(B / C)`` medoids (``C`` = the classes
        present in that pool).
    similarity : {"max-minus", "exp"}
        As in ``per_class_facility_location``.
    device : str or torch.device, optional

    Returns
    -------
    list of (idx, weights), one per pool
        As ``per_class_facility_location`` returns for that pool.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch

    budget = check_int("budget", budget, 1)
    similarity = check_choice("similarity", similarity, ("max-minus", "exp"))
    if isinstance(G, torch.Tensor):
        X = G.detach()
    else:
        X = torch.as_tensor(check_array("G", G, ndim=3, min_size=1))
    if X.ndim != 3:
        raise ValueError(f"G must have shape (P, n, m) (got {tuple(X.shape)})")
    yy = np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y)
    if yy.shape != tuple(X.shape[:2]):
        raise ValueError(f"y must have shape {tuple(X.shape[:2])} (got {yy.shape})")
    if not np.issubdtype(yy.dtype, np.integer):
        raise TypeError(f"y must hold integer labels (got dtype {yy.dtype})")
    if device is not None:
        from lab.core.runtime import resolve_device

        X = X.to(resolve_device(device, X))
    return per_class_many_unchecked(X, yy, budget, similarity)


def per_class_many_unchecked(X, yy: np.ndarray, budget: int, similarity: str = "max-minus"):
    """``per_class_facility_location_many`` on a tensor ``X`` (P, n, m) and labels ``yy``
    (P, n), without the checks."""
    classes = np.unique(yy)
    counts = (yy[:, :, None] == classes).sum(axis=1)  # (P, classes)
    present = counts[0] > 0
    sizes = counts[0][present]
    if (counts == counts[0]).all() and (sizes == sizes[0]).all():
        # every pool holds the same classes, each with the same number of points (the
        # class-balanced pools of the trainer): one gather, one call
        return _balanced_pools(X, yy, budget, similarity, sizes)
    return _uneven_pools(X, yy, budget, similarity)


def _balanced_pools(X, yy, budget, similarity, sizes):
    import torch

    P, per, size = X.shape[0], -(-budget // sizes.size), int(sizes[0])  # ceil(B / C)
    order = np.argsort(yy, axis=1, kind="stable")  # class by class, stable inside
    members = order.reshape(P * sizes.size, size)
    pools = np.repeat(np.arange(P), sizes.size)
    rows = X[torch.as_tensor(pools).unsqueeze(1), torch.as_tensor(members)]
    idx, w = facility_location_unchecked(rows, per, "euclidean", similarity, X.shape[2])
    sel = np.take_along_axis(members, idx, axis=1).reshape(P, -1)
    return [(sel[p], w.reshape(P, -1)[p]) for p in range(P)]


def _uneven_pools(X, yy, budget, similarity):
    import torch

    groups: dict[tuple[int, int], list[tuple[int, int, np.ndarray]]] = {}
    for p in range(X.shape[0]):
        classes = np.unique(yy[p])
        per = -(-budget // classes.size)  # ceil(B / C)
        for c in classes:
            members = np.flatnonzero(yy[p] == c)
            groups.setdefault((members.size, per), []).append((p, int(c), members))
    picks: list[list[tuple[int, np.ndarray, np.ndarray]]] = [[] for _ in range(X.shape[0])]
    for (_, per), items in groups.items():
        pools = torch.as_tensor([p for p, _, _ in items], device=X.device)
        members = torch.as_tensor(np.stack([m for _, _, m in items]), device=X.device)
        rows = X[pools.unsqueeze(1), members]  # (groups, size, m), one gather
        idx, w = facility_location_unchecked(rows, per, "euclidean", similarity, X.shape[2])
        for k, (p, c, members) in enumerate(items):
            picks[p].append((c, members[idx[k]], w[k]))
    out = []
    for pool in picks:
        pool.sort(key=lambda t: t[0])  # classes in increasing order, as the official code
        out.append((np.concatenate([t[1] for t in pool]), np.concatenate([t[2] for t in pool])))
    return out
