"""Baselines and certificates beside the SPOT-style loop: a CART (VIPER-style) tree and the
exhaustive depth-2 search.

See: book/spot/03-spot-loop.ipynb
"""

from __future__ import annotations

import itertools

import numpy as np

from lab.core.checks import check_int

from .mdp import TabularMDP, check_mdp, first_max, state_weights, value_iteration
from .reference import check_tree_inputs, parse_node, sum_tolerance
from .tree import Tree, candidate_splits, split_matrix

__all__ = ["greedy_tree", "greedy_split_tree", "exhaustive_tree"]


def greedy_tree(mdp: TabularMDP, depth: int, seed: int = 0) -> Tree:
    """VIPER-style baseline: a CART tree fit to the optimal action, weighted by ``d*``.

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    from sklearn.tree import DecisionTreeClassifier

    V, pi = value_iteration(mdp)
    w = state_weights(mdp, "optimal", optimal_policy=pi)
    if depth == 0:
        a = int(np.bincount(pi, weights=w, minlength=mdp.n_actions).argmax())
        return Tree(0, [], [], [a], n_actions=mdp.n_actions)
    clf = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(mdp.X, pi, sample_weight=w)
    t = clf.tree_
    feats = np.full(2**depth - 1, -1)
    ths = np.zeros(2**depth - 1)
    leaves = np.zeros(2**depth, dtype=np.int64)

    def fill(node, heap, level):
        if level == depth:
            leaves[heap - 2**depth] = clf.classes_[int(t.value[node][0].argmax())]
            return
        if t.children_left[node] == -1:  # sklearn leaf above full depth: no-split chain
            fill(node, 2 * heap, level + 1)
            leaves_right = clf.classes_[int(t.value[node][0].argmax())]
            _fill_const(2 * heap + 1, level + 1, leaves_right)
            return
        feats[heap - 1] = t.feature[node]
        # sklearn goes left iff x <= thr; thresholds are midpoints: use the largest value <= thr
        col = mdp.X[:, t.feature[node]]
        ths[heap - 1] = col[col <= t.threshold[node]].max()
        fill(t.children_left[node], 2 * heap, level + 1)
        fill(t.children_right[node], 2 * heap + 1, level + 1)

    def _fill_const(heap, level, a):
        if level == depth:
            leaves[heap - 2**depth] = a
            return
        _fill_const(2 * heap, level + 1, a)
        _fill_const(2 * heap + 1, level + 1, a)

    fill(0, 1, 0)
    return Tree(depth, feats, ths, leaves, n_actions=mdp.n_actions)


def exhaustive_tree(mdp: TabularMDP, depth: int, batch: int = 4096) -> tuple[float, Tree]:
    """The optimal depth-``D`` tree (``D <= 2``) by enumeration: a global certificate.

    Enumerates every distinct partition of the states that the tree structures induce, and
    for each partition every assignment of actions to its non-empty leaves, evaluating the
    policies exactly in batches (``J = p0 . (I - gamma P_pi)^(-1) R_pi``). Cost
    ``(#partitions) m^(2^D)`` linear solves: tiny MDPs, or depth 2 with 64 states (seconds).

    Returns
    -------
    J : float
    tree : Tree

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 2)
    batch = check_int("batch", batch, 1)
    n, m = mdp.n_states, mdp.n_actions
    splits = [(-1, 0.0)] + candidate_splits(mdp.X)
    L = 2**depth
    parts: dict[bytes, tuple] = {}
    for inner in itertools.product(splits, repeat=L - 1):
        t = Tree(depth, [j for j, _ in inner], [th for _, th in inner], np.arange(L))
        lab_ = t.leaf_index(mdp.X)
        used, canon = np.unique(lab_, return_inverse=True)
        parts.setdefault(canon.astype(np.int8).tobytes(), (inner, used, canon))
    eye = np.eye(n)
    idx = np.arange(n)
    best_J, best = -np.inf, None
    for inner, used, canon in parts.values():
        g = len(used)
        assigns = np.array(list(itertools.product(range(m), repeat=g)))  # (A, g)
        for lo in range(0, len(assigns), batch):
            A = assigns[lo : lo + batch]
            pis = A[:, canon]  # (B, n)
            P_pi = mdp.P[idx[None, :], pis]  # (B, n, n)
            R_pi = mdp.R[idx[None, :], pis]  # (B, n)
            V = np.linalg.solve(eye[None] - mdp.gamma * P_pi, R_pi[..., None])[..., 0]
            J = V @ mdp.p0
            j = int(np.argmax(J))
            if J[j] > best_J + 1e-12:
                best_J = float(J[j])
                leaves = np.zeros(L, dtype=np.int64)
                leaves[used] = A[j]
                best = Tree(
                    depth, [s for s, _ in inner], [th for _, th in inner], leaves, n_actions=m
                )
    return best_J, best


def greedy_split_tree(G: np.ndarray, X: np.ndarray, depth: int) -> tuple[float, Tree]:
    """Top-down greedy answer to the improvement step ``max_T sum_s G[s, pi_T(s)]`` (no search).

    Each node keeps the test that its own exact depth-1 parse picks (the best split or leaf
    for its states, as CART picks a split by its two children alone), and the children are
    grown the same way; the last level's parse is exact. It is the improvement step without
    RSBB's search: as fast as one parse per node, optimal only when the greedy choices are.

    Parameters
    ----------
    G : array (n, m)
        Weighted action values ``w[:, None] * Q``.
    X : array (n, F)
        State features.
    depth : int in ``[0, 6]``

    Returns
    -------
    value : float
        ``sum_s G[s, pi_T(s)]`` of the tree.
    tree : Tree

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G, X, depth = check_tree_inputs(G, X, depth)
    n, m = G.shape
    splits = candidate_splits(X)
    right = split_matrix(X, splits) if splits else np.zeros((0, n), dtype=bool)
    L = 2**depth
    feats = np.full(L - 1, -1, dtype=np.int64)
    ths = np.zeros(L - 1)
    leaves = np.zeros(L, dtype=np.int64)
    tol = sum_tolerance(G)  # ties up to round-off go to the lowest index (reference.py)

    def grow(heap: int, level: int, mask: np.ndarray) -> None:
        if level == depth:  # a leaf: the best single action for its states
            leaves[heap - L] = int(first_max((G * mask[:, None]).sum(0), tol))
            return
        k = parse_node(G, mask, right, tol)[1]  # the node's own best split (-1: no split)
        if k < 0:  # no split: every state goes left
            grow(2 * heap, level + 1, mask)
            grow(2 * heap + 1, level + 1, np.zeros(n, dtype=bool))
            return
        feats[heap - 1], ths[heap - 1] = splits[k]
        grow(2 * heap, level + 1, mask & ~right[k])
        grow(2 * heap + 1, level + 1, mask & right[k])

    grow(1, 0, np.ones(n, dtype=bool))
    tree = Tree(depth, feats, ths, leaves, n_actions=m)
    return float(G[np.arange(n), tree.act(X)].sum()), tree
