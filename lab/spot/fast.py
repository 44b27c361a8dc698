"""The batched bound of the branch-and-bound (torch; runs on CUDA).

All children of a node share one frontier, so their bounds are one batched computation:
``einsum('kn,cfna->cfka', B, G * mask)`` then max-reductions. :func:`bound_children` is the
fast path of ``reference.bound_children`` (same name, same meaning, plus ``device=``);
``tests/test_spot.py::test_pair_bound_children`` checks that they agree. The search picks
one of them in ``search.bound_frontier``.

See: book/spot/02-reduced-space-bnb.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .reference import check_bound_inputs

__all__ = ["bound_children"]


def bound_children(
    G: np.ndarray, right: np.ndarray, masks: np.ndarray, exact: np.ndarray, device: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Fast path of ``reference.bound_children``: all children and frontier nodes at once.

    Parameters
    ----------
    G : array (n, m)
    right : bool array (K, n)
    masks : bool array (C, Fn, n)
    exact : bool array (Fn,)
    device : torch device (default CPU)

    Returns
    -------
    bound, incumbent : arrays (C,)

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    return bound_children_unchecked(*check_bound_inputs(G, right, masks, exact), device)


def bound_children_unchecked(
    G: np.ndarray, right: np.ndarray, masks: np.ndarray, exact: np.ndarray, device: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Unchecked ``bound_children`` (``search.bound_frontier`` validates once)."""
    import torch

    dev = torch.device(device) if device is not None else torch.device("cpu")
    Gt = torch.as_tensor(G, dtype=torch.float64, device=dev)
    Bt = torch.as_tensor(right, dtype=torch.float64, device=dev)
    Mt = torch.as_tensor(masks, device=dev).to(torch.float64)  # (C, Fn, n)
    Gm = Mt[..., None] * Gt  # G 1_M for every child and frontier node, (C, Fn, n, m)
    tot = Gm.sum(2)  # (C, Fn, m)
    parse = tot.max(-1).values  # leaf(M)
    if Bt.shape[0]:
        Rsum = torch.einsum("kn,cfna->cfka", Bt, Gm)
        Lsum = tot[:, :, None, :] - Rsum
        split = (Lsum.max(-1).values + Rsum.max(-1).values).max(-1).values
        parse = torch.maximum(parse, split)
    relax = Mt @ Gt.max(1).values  # (C, Fn): state-wise relaxation
    ex = torch.as_tensor(np.asarray(exact, dtype=bool), device=dev)
    bound = torch.where(ex, parse, relax).sum(1)
    return bound.cpu().numpy(), parse.sum(1).cpu().numpy()
