"""Axis-aligned decision trees of fixed depth, read as policies.

See: book/spot/01-tree-policies.ipynb
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from lab.core.checks import check_array, check_int

__all__ = ["Tree", "candidate_splits", "split_matrix", "enumerate_trees"]


def candidate_splits(X: np.ndarray) -> list[tuple[int, float]]:
    """Candidate tests ``x[j] > theta``: every distinct value of ``X[:, j]`` but the largest.

    Because the state set is finite only the induced partition matters, so this
    discretisation is exact.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    out = []
    for j in range(X.shape[1]):
        for theta in np.unique(X[:, j])[:-1]:
            out.append((j, float(theta)))
    return out


def split_matrix(X: np.ndarray, splits: Sequence[tuple[int, float]] | None = None) -> np.ndarray:
    """``B[k, s] = 1`` iff state ``s`` goes right under candidate ``k`` (``x_s[j_k] > theta_k``).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    splits = candidate_splits(X) if splits is None else list(splits)
    B = np.zeros((len(splits), X.shape[0]), dtype=bool)
    for k, (j, theta) in enumerate(splits):
        B[k] = X[:, j] > theta
    return B


class Tree:
    """A depth-``D`` tree policy: internal nodes in heap order, then leaves.

    Internal node ``t = 1 .. 2^D - 1`` (children ``2t``, ``2t+1``) holds a test
    ``x[feature[t-1]] > threshold[t-1]`` (go right when true) or, with ``feature = -1``, no
    split (every state goes left). Leaf ``l = 2^D .. 2^(D+1) - 1`` plays ``leaves[l - 2^D]``.

    Parameters
    ----------
    depth : int
    features : sequence of int, length ``2^D - 1`` (``-1`` = no split)
    thresholds : sequence of float, length ``2^D - 1``
    leaves : sequence of int, length ``2^D``
    n_actions : int, optional
        When given, leaf actions must lie in ``[0, n_actions - 1]``.

    See: book/spot/01-tree-policies.ipynb
    """

    def __init__(
        self,
        depth: int,
        features: Sequence[int],
        thresholds: Sequence[float],
        leaves: Sequence[int],
        n_actions: int | None = None,
    ):
        self.depth = check_int("depth", depth, 0, 12)
        n_int = 2**self.depth - 1
        self.features = np.asarray(features, dtype=np.int64).reshape(-1)
        self.thresholds = np.asarray(thresholds, dtype=float).reshape(-1)
        self.leaves = np.asarray(leaves, dtype=np.int64).reshape(-1)
        if self.features.shape != (n_int,) or self.thresholds.shape != (n_int,):
            raise ValueError(
                f"a depth-{self.depth} tree needs {n_int} features and thresholds "
                f"(got {self.features.size} and {self.thresholds.size})"
            )
        if self.leaves.shape != (2**self.depth,):
            raise ValueError(
                f"a depth-{self.depth} tree needs {2**self.depth} leaf actions "
                f"(got {self.leaves.size})"
            )
        if self.features.size and self.features.min() < -1:
            raise ValueError(f"features must be >= -1 (got {self.features.min()})")
        if self.leaves.min() < 0 or (n_actions is not None and self.leaves.max() >= n_actions):
            hi = "inf" if n_actions is None else n_actions - 1
            raise ValueError(
                f"leaf actions must lie in [0, {hi}] (got {self.leaves.min()}..{self.leaves.max()})"
            )

    def __repr__(self) -> str:
        return f"Tree(depth={self.depth}, splits={self.n_splits}, leaves={self.leaves.tolist()})"

    @property
    def n_splits(self) -> int:
        """Number of internal nodes that test a feature."""
        return int((self.features >= 0).sum())

    def leaf_index(self, X: np.ndarray) -> np.ndarray:
        """Index (0-based, among the ``2^D`` leaves) of the leaf each row of ``X`` reaches."""
        X = check_array("X", X, ndim=2)
        if self.features.size and self.features.max() >= X.shape[1]:
            raise ValueError(
                f"the tree tests feature {self.features.max()} but X has {X.shape[1]} columns"
            )
        node = np.ones(X.shape[0], dtype=np.int64)
        for _ in range(self.depth):
            f = self.features[node - 1]
            th = self.thresholds[node - 1]
            go_right = (f >= 0) & (X[np.arange(X.shape[0]), np.maximum(f, 0)] > th)
            node = 2 * node + go_right
        return node - 2**self.depth

    def act(self, X: np.ndarray) -> np.ndarray:
        """The action of every row of ``X`` (shape ``(n, F)``)."""
        return self.leaves[self.leaf_index(X)]

    def to_text(
        self, feature_names: Sequence[str] | None = None, action_names: Sequence[str] | None = None
    ) -> str:
        """The tree as nested if/else text (no-split nodes are skipped)."""

        def fname(j):
            return feature_names[j] if feature_names is not None else f"x{j}"

        def aname(a):
            return action_names[a] if action_names is not None else f"a{a}"

        lines: list[str] = []

        def rec(t: int, ind: int) -> None:
            pad = "    " * ind
            if t >= 2**self.depth:
                lines.append(f"{pad}{aname(int(self.leaves[t - 2**self.depth]))}")
                return
            f = int(self.features[t - 1])
            if f < 0:
                rec(2 * t, ind)
                return
            lines.append(f"{pad}if {fname(f)} <= {self.thresholds[t - 1]:g}:")
            rec(2 * t, ind + 1)
            lines.append(f"{pad}else:")
            rec(2 * t + 1, ind + 1)

        rec(1, 0)
        return "\n".join(lines)


def enumerate_trees(X: np.ndarray, depth: int, n_actions: int) -> Iterator[Tree]:
    """Every depth-``D`` tree over the candidate splits (brute force; tiny problems only).

    Trees with "no split" nodes are included; duplicates of the same policy are not removed.

    See: book/spot/01-tree-policies.ipynb
    """
    X = check_array("X", X, ndim=2)
    depth = check_int("depth", depth, 0, 2)
    n_actions = check_int("n_actions", n_actions, 1)
    # the arguments are checked above, when the function is called; the trees come lazily
    return _trees(X, depth, n_actions)


def _trees(X: np.ndarray, depth: int, n_actions: int) -> Iterator[Tree]:
    splits = [(-1, 0.0)] + candidate_splits(X)
    for inner in itertools.product(splits, repeat=2**depth - 1):
        feats = [j for j, _ in inner]
        ths = [th for _, th in inner]
        for leaves in itertools.product(range(n_actions), repeat=2**depth):
            yield Tree(depth, feats, ths, leaves)
