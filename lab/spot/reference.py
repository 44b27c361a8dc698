"""Reference kernels of the improvement step (numpy, float64), beside the equations they implement.

The improvement step of the SPOT-style loop is ``max_T sum_s G[s, pi_T(s)]`` with
``G = w[:, None] * Q`` (notation of ``lab.spot``). Two kernels carry its branch-and-bound:

* the exact **depth-1 parse** of a node holding the states ``M`` (one split or a leaf);
* the **bound of a partial tree**: a sum over its frontier nodes of either the exact parse
  (nodes on the last level of splits) or the state-wise relaxation ``sum_{s in M} max_a G[s, a]``.

The batched torch version of the bound is :mod:`lab.spot.fast` (tested against this file).
The equation labels refer to the reconstruction in ``lab.spot`` (the paper's own numbering
could not be read: only its abstract was available).

See: book/spot/02-reduced-space-bnb.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_int

__all__ = ["depth1_parse", "bound_children", "parse_node", "check_G"]


def check_G(G: Any) -> np.ndarray:
    """``G`` as a 2-d float array (states x actions), validated."""
    return check_array("G", G, ndim=2, min_size=1)


def check_tree_inputs(G: Any, X: Any, depth: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """``G`` (n, m) finite, ``X`` (n, d) with one row per state of ``G``, ``depth`` in 0..6: the
    arguments every tree search takes (validated once, where they enter)."""
    G = check_G(G)
    X = check_array("X", X, ndim=2)
    if X.shape[0] != G.shape[0]:
        raise ValueError(f"X must have {G.shape[0]} rows like G (got {X.shape[0]})")
    return G, X, check_int("depth", depth, 0, 6)


def depth1_parse(G: np.ndarray, mask: np.ndarray, right: np.ndarray) -> tuple[float, int]:
    """Exact best depth-1 subtree (one split or a leaf) for the states in ``mask``.

    ``leaf(M) = max_a sum_{s in M} G[s, a]``; with ``Rsum = right @ (G 1_M)`` (``K x m``) and
    ``Lsum = colsum(G 1_M) - Rsum``, the value is
    ``max(leaf(M), max_k [max_a Lsum[k] + max_a Rsum[k]])``.

    Parameters
    ----------
    G : array (n, m)
    mask : bool array (n,)
    right : bool array (K, n)
        ``right[k, s]``: state ``s`` goes right under candidate ``k`` (``split_matrix``).

    Returns
    -------
    value : float
    k : int
        Best candidate, ``-1`` when the leaf (no split) is at least as good.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G = check_G(G)
    mask = check_array("mask", mask, shape=(G.shape[0],), dtype=bool)
    right = check_array("right", right, ndim=2, dtype=bool)
    if right.shape[1] != G.shape[0]:
        raise ValueError(f"right must have shape (K, {G.shape[0]}) (got {right.shape})")
    return parse_node(G, mask, right)[:2]


def parse_node(G: np.ndarray, mask: np.ndarray, right: np.ndarray) -> tuple[float, int, int, int]:
    """Unchecked depth-1 parse: ``(value, k, left action, right action)`` (see ``depth1_parse``)."""
    Gm = G * mask[:, None]  # eq. (parse): G 1_M
    tot = Gm.sum(0)  # colsum(G 1_M), (m,)
    best, k_best = float(tot.max()), -1  # leaf(M) = max_a sum_{s in M} G[s, a]
    a_left = a_right = int(tot.argmax())
    if right.shape[0]:
        Rsum = right.astype(G.dtype) @ Gm  # Rsum = B (G 1_M), (K, m)
        Lsum = tot[None, :] - Rsum  # Lsum = colsum(G 1_M) - Rsum
        val = Lsum.max(1) + Rsum.max(1)  # max_a Lsum[k] + max_a Rsum[k]
        k = int(val.argmax())
        if val[k] > best + 1e-12:  # a split must beat the leaf strictly
            best, k_best = float(val[k]), k
            a_left, a_right = int(Lsum[k].argmax()), int(Rsum[k].argmax())
    return best, k_best, a_left, a_right


def check_bound_inputs(
    G: Any, right: Any, masks: Any, exact: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate the arguments of ``bound_children``: shapes ``(n, m)``, ``(K, n)``,
    ``(C, Fn, n)`` and ``(Fn,)``, boolean except ``G`` (finite).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G = check_G(G)
    right = check_array("right", right, ndim=2, dtype=bool)
    masks = check_array("masks", masks, ndim=3, dtype=bool)
    exact = check_array("exact", exact, ndim=1, dtype=bool)
    if right.shape[1] != G.shape[0] or masks.shape[2] != G.shape[0]:
        raise ValueError(
            f"right and masks must have {G.shape[0]} states on their last axis "
            f"(got {right.shape} and {masks.shape})"
        )
    if exact.shape[0] != masks.shape[1]:
        raise ValueError(f"exact must have {masks.shape[1]} entries (got {exact.shape[0]})")
    return G, right, masks, exact


def bound_children(
    G: np.ndarray, right: np.ndarray, masks: np.ndarray, exact: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Reference bound and incumbent of each partial tree, one frontier node at a time.

    ``bound[c] = sum_f (parse(M_cf) if exact[f] else sum_{s in M_cf} max_a G[s, a])`` and
    ``incumbent[c] = sum_f parse(M_cf)`` (unfixed nodes set to "no split").

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G, right, masks, exact = check_bound_inputs(G, right, masks, exact)
    C, Fn, _ = masks.shape
    bound = np.zeros(C)
    inc = np.zeros(C)
    relax = G.max(1)  # eq. (relaxation): each state takes its own best action
    for c in range(C):
        for f in range(Fn):
            v = parse_node(G, masks[c, f], right)[0]  # eq. (parse): exact depth-1 parse
            inc[c] += v  # incumbent: unfixed nodes "no split", level D-1 parsed
            bound[c] += v if exact[f] else float(relax[masks[c, f]].sum())  # eq. (bound)
    return bound, inc
