"""Batched torch fast path of greedy facility location (CPU or CUDA), tested against
``lab.coreset.reference.greedy_facility_location``.

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int


def facility_location_torch(
    G: Any,
    budget: int,
    *,
    metric: str = "euclidean",
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
        D = X
    else:
        sq = (X * X).sum(-1)
        d2 = (sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2.0 * X @ X.transpose(-1, -2)).clamp_min(0)
        d2.diagonal(dim1=-2, dim2=-1).zero_()
        D = d2.sqrt()
    P, n = D.shape[0], D.shape[1]
    if budget >= n:
        idx = torch.arange(n).expand(P, n).numpy().copy()
        w = np.ones((P, n), dtype=int)
        return (idx[0], w[0]) if single else (idx, w)
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
    idx, w = chosen.cpu().numpy(), weights.cpu().numpy()
    return (idx[0], w[0]) if single else (idx, w)
