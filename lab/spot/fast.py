"""The batched bound of the branch-and-bound (torch; runs on CUDA), and its dispatcher.

All children of a node share one frontier, so their bounds are one batched computation:
``einsum('kn,cfna->cfka', B, G * mask)`` then max-reductions. ``bound_children`` picks the
numpy reference (:mod:`lab.spot.reference`) or this path; ``tests/test_spot.py`` checks
that they agree.

See: book/spot/02-reduced-space-bnb.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice

from .reference import bound_children_numpy, check_G

__all__ = ["bound_children", "bound_children_torch"]


def bound_children_torch(
    G: np.ndarray, right: np.ndarray, masks: np.ndarray, exact: np.ndarray, device: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Fast path of ``bound_children_numpy``: all children and frontier nodes at once.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
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


def bound_children(
    G: np.ndarray,
    right: np.ndarray,
    masks: np.ndarray,
    exact: np.ndarray,
    backend: str = "numpy",
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Upper bound and incumbent value of a batch of partial trees from their frontier masks.

    For each partial tree ``c`` and frontier node ``f`` (a reached node whose split is not
    fixed), ``masks[c, f]`` holds the states routed there. The bound adds the exact depth-1
    parse of the node when ``exact[f]`` (it sits on level ``D - 1``) and the state-wise
    relaxation ``sum_{s in M} max_a G[s, a]`` otherwise; the incumbent sets unfixed nodes to
    "no split" and parses every frontier node exactly.

    Parameters
    ----------
    G : array (n, m)
    right : bool array (K, n)
    masks : bool array (C, Fn, n)
    exact : bool array (Fn,)
    backend : ``"numpy"`` (reference) or ``"torch"`` (batched fast path)
    device : torch device for ``backend="torch"`` (default CPU)

    Returns
    -------
    bound, incumbent : arrays (C,)

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G = check_G(G)
    right = check_array("right", right, ndim=2, dtype=bool)
    masks = check_array("masks", masks, ndim=3, dtype=bool)
    exact = check_array("exact", exact, ndim=1, dtype=bool)
    check_choice("backend", backend, ["numpy", "torch"])
    if right.shape[1] != G.shape[0] or masks.shape[2] != G.shape[0]:
        raise ValueError(
            f"right and masks must have {G.shape[0]} states on their last axis "
            f"(got {right.shape} and {masks.shape})"
        )
    if exact.shape[0] != masks.shape[1]:
        raise ValueError(f"exact must have {masks.shape[1]} entries (got {exact.shape[0]})")
    if backend == "numpy":
        return bound_children_numpy(G, right, masks, exact)
    return bound_children_torch(G, right, masks, exact, device)
