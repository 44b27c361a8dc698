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
        Best candidate, ``-1`` when no split beats the leaf by more than round-off; ties
        within round-off go to the lowest index (``parse_node``).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G = check_G(G)
    mask = check_array("mask", mask, shape=(G.shape[0],), dtype=bool)
    right = check_array("right", right, ndim=2, dtype=bool)
    if right.shape[1] != G.shape[0]:
        raise ValueError(f"right must have shape (K, {G.shape[0]}) (got {right.shape})")
    return parse_node(G, mask, right)[:2]


def sum_tolerance(G: np.ndarray) -> float:
    """Tie tolerance for the values the tree search compares: sums of entries of ``G``.

    Every value of the search (a leaf ``sum_{s in M} G[s, a]``, a split ``max_a Lsum[k] +
    max_a Rsum[k]``, a bound or incumbent adding up to ``2^(D-1) <= 32`` frontier nodes, a
    tree's ``sum_s G[s, pi_T(s)]``) sums at most ``n`` entries of ``G`` (the states routed to
    disjoint nodes), whatever the order: numpy's pairwise sums, BLAS's blocked products and
    the torch batch add them differently on each CPU. With ``u = eps / 2`` and ``S = sum_s
    max_a |G[s, a]|`` (the largest magnitude of any such sum), a recursive sum of ``n`` terms
    errs by at most ``(n - 1) u S``; ``Lsum = colsum - Rsum`` adds two of those and a rounding,
    the split value one more, the frontier sum ``2^(D-1) u S``: at most ``(3 n + 32) u S`` per
    computed value, twice that between two of them: ``(3 n + 32) eps S``. The tolerance doubles
    it, ``2 (3 n + 32) eps S`` (``sysadmin(6)``'s warm-start step: 3.7e-11; measured: trees of
    the same policy, equal in exact arithmetic, differ by up to 1.2e-12). ``G`` itself is taken
    as exact: ties of the MDP's values are decided where they are computed
    (``mdp.value_tolerance``).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    if not isinstance(G, np.ndarray) or G.ndim != 2 or G.size == 0:
        raise TypeError(f"G must be a non-empty 2-D numpy array (states x actions), got {G!r:.60}")
    n = G.shape[0]
    scale = float(np.abs(G).max(1).sum())
    return 2.0 * (3 * n + 32) * float(np.finfo(float).eps) * scale


def _first(values: np.ndarray, tol: float) -> int:
    """The lowest index whose entry is within ``tol`` of the maximum (a deterministic argmax)."""
    return int(np.argmax(values >= values.max() - tol))


def _parse_sums(G: np.ndarray, mask: np.ndarray, right: np.ndarray):
    """``tot``, ``Lsum``, ``Rsum`` and the split values ``val`` of a node (``None`` without
    candidates): the sums of ``depth1_parse``."""
    Gm = G * mask[:, None]  # eq. (spot-parse): G 1_M
    tot = Gm.sum(0)  # colsum(G 1_M), (m,)
    if not right.shape[0]:
        return tot, None, None, None
    Rsum = right.astype(G.dtype) @ Gm  # Rsum = B (G 1_M), (K, m)
    Lsum = tot[None, :] - Rsum  # Lsum = colsum(G 1_M) - Rsum
    return tot, Lsum, Rsum, Lsum.max(1) + Rsum.max(1)  # max_a Lsum[k] + max_a Rsum[k]


def _parse_value(G: np.ndarray, mask: np.ndarray, right: np.ndarray, tol: float) -> float:
    """The value of ``parse_node`` alone (what the bounds need: no index to pick)."""
    tot, _, _, val = _parse_sums(G, mask, right)
    best = float(tot.max())  # leaf(M) = max_a sum_{s in M} G[s, a]
    if val is not None and val.max() > best + tol:  # a split must beat the leaf beyond round-off
        best = float(val.max())
    return best


def parse_node(
    G: np.ndarray, mask: np.ndarray, right: np.ndarray, tol: float | None = None
) -> tuple[float, int, int, int]:
    """Unchecked depth-1 parse: ``(value, k, left action, right action)`` (see ``depth1_parse``).

    Ties are broken by index up to ``tol`` (default ``sum_tolerance(G)``): the leaf unless a
    split beats it by more than ``tol``, else the lowest split within ``tol`` of the best, and
    the lowest action within ``tol`` of the best; so every CPU's rounding makes the same tree.
    """
    tol = sum_tolerance(G) if tol is None else tol
    tot, Lsum, Rsum, val = _parse_sums(G, mask, right)
    best, k_best = float(tot.max()), -1  # leaf(M) = max_a sum_{s in M} G[s, a]
    a_left = a_right = _first(tot, tol)
    if val is not None and val.max() > best + tol:  # a split must beat the leaf beyond round-off
        best, k_best = float(val.max()), _first(val, tol)
        a_left, a_right = _first(Lsum[k_best], tol), _first(Rsum[k_best], tol)
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
    relax = G.max(1)  # eq. (spot-bound), state-wise term: each state its own best action
    tol = sum_tolerance(G)
    for c in range(C):
        for f in range(Fn):
            v = _parse_value(G, masks[c, f], right, tol)  # eq. (spot-parse): exact depth-1 parse
            inc[c] += v  # incumbent: unfixed nodes "no split", level D-1 parsed
            bound[c] += v if exact[f] else float(relax[masks[c, f]].sum())  # eq. (spot-bound)
    return bound, inc
