"""Numpy reference kernels of the coreset chapter: facility location (eqs. 1-3), label noise,
and multinomial logistic regression with exact per-example gradients and Hessians (eqs. 5, 6, 8).

Each statement sits beside the equation it implements; ``lab.coreset.fast`` runs the same
greedy in batched torch and is tested against ``greedy_facility_location``.

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "pairwise_distances",
    "facility_location_objective",
    "greedy_facility_location",
    "SIMILARITIES",
    "similarity_matrix",
    "per_class_budget",
    "per_class_facility_location",
    "brute_force_facility_location",
    "softmax_regression_fit",
    "logreg_example_gradients",
    "logreg_posterior_features",
    "logreg_hessian",
    "alignment_errors",
    "newton_steps",
]


def pairwise_distances(G: Any) -> np.ndarray:
    """Euclidean distances ``d_ij = ||G_i - G_j||`` between the rows of ``G`` (float64).

    Parameters
    ----------
    G : array-like, shape (n, m)
        One feature vector (gradient or gradient proxy) per row.

    Returns
    -------
    ndarray, shape (n, n)
        Symmetric, zero diagonal, non-negative.

    See: book/coreset/01-facility-location.ipynb
    """
    return _distances(check_array("G", G, ndim=2, min_size=1))


def _distances(G: np.ndarray) -> np.ndarray:
    sq = np.einsum("ij,ij->i", G, G)
    # ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b, clipped at 0 against round-off
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (G @ G.T), 0.0)
    np.fill_diagonal(d2, 0.0)
    return np.sqrt(d2)


def _check_distances(D: Any) -> np.ndarray:
    D = check_array("D", D, ndim=2, min_size=1)
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"D must be a square (n, n) distance matrix (got shape {D.shape})")
    if np.any(D < 0):
        raise ValueError("D must be non-negative (got a negative distance)")
    return D


def facility_location_objective(D: Any, idx: Any) -> float:
    """The facility-location value ``F(S) = sum_i max_{j in S} (d_max - d_ij)``, eq. (2).

    Parameters
    ----------
    D : array-like, shape (n, n)
        Distances (row ``i`` = the point to cover, column ``j`` = the candidate medoid).
    idx : array-like of int
        The selected columns ``S`` (empty gives 0).

    See: book/coreset/01-facility-location.ipynb
    """
    D = _check_distances(D)
    idx = np.asarray(idx, dtype=int).ravel()
    if idx.size == 0:
        return 0.0
    if idx.min() < 0 or idx.max() >= D.shape[0]:
        raise ValueError(f"idx must lie in [0, {D.shape[0] - 1}] (got {idx.min()}..{idx.max()})")
    S = D.max() - D  # eq. (2): s_ij = d_max - d_ij
    return float(S[:, idx].max(axis=1).sum())


SIMILARITIES = ("max-minus", "exp")


def similarity_matrix(D: Any, similarity: str = "max-minus", scale: float | None = None):
    """Similarities from distances: ``"max-minus"``, eq. (2), ``d_max - d_ij`` (CRAIG); ``"exp"``,
    ``exp(-d_ij / scale)``, submodlib's kernel in CREST's selection (scale = feature dimension).

    See: book/coreset/01-facility-location.ipynb
    """
    D = _check_distances(D)
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    if similarity == "max-minus":
        return D.max() - D  # eq. (2): s_ij = d_max - d_ij
    if scale is None:
        raise ValueError('scale must be given for similarity="exp" (got None)')
    return np.exp(-D / check_positive("scale", scale))  # deviation: submodlib's kernel


def greedy_facility_location(
    D: Any,
    budget: int,
    *,
    lazy: bool = False,
    similarity: str = "max-minus",
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy facility location (CRAIG's coreset), the numpy reference kernel.

    Parameters
    ----------
    D : array-like, shape (n, n)
        Pairwise distances between the pool's feature vectors (``pairwise_distances``).
    budget : int
        Coreset size ``B >= 1``. ``B >= n`` returns the whole pool with weights 1.
    lazy : bool
        Use the lazy-greedy priority queue (Minoux). It reaches the same objective value on
        generic inputs but may break exact ties differently; the plain greedy (default)
        always takes the lowest index among equal gains.
    similarity, scale : str, float
        Eq. (2) by default; ``"exp"`` with ``scale``: the official kernel (``similarity_matrix``).

    Returns
    -------
    idx : ndarray of int, shape (B,)
        The medoids in the order greedy picked them.
    weights : ndarray of int, shape (B,)
        ``gamma_j``: how many pool points have medoid ``j`` as their nearest selected point
        (ties go to the earliest pick). Positive, sums to ``n``.

    See: book/coreset/01-facility-location.ipynb
    """
    D = _check_distances(D)
    budget = check_int("budget", budget, 1)
    lazy = check_bool("lazy", lazy)
    S = similarity_matrix(D, similarity, scale)  # eq. (2): similarity s_ij = d_max - d_ij >= 0
    return greedy_unchecked(S, budget, lazy)


def greedy_unchecked(S: np.ndarray, budget: int, lazy: bool = False):
    """``greedy_facility_location`` on similarities ``S`` (eq. 2), without the checks."""
    n = S.shape[0]
    if budget >= n:
        return np.arange(n), np.ones(n, dtype=int)
    chosen = _lazy_greedy(S, budget) if lazy else _greedy(S, budget)
    idx = np.asarray(chosen, dtype=int)
    # eq. (3): gamma_j = number of points whose most similar medoid is j
    nearest = np.argmax(S[:, idx], axis=1)
    weights = np.bincount(nearest, minlength=budget)
    return idx, weights


def _greedy(S: np.ndarray, budget: int) -> list[int]:
    n = S.shape[0]
    cover = np.zeros(n)  # max_{j in S} s_ij, 0 for the empty set
    chosen: list[int] = []
    taken = np.zeros(n, dtype=bool)
    for _ in range(budget):
        # eq. (3): marginal gain of every candidate j, sum_i max(s_ij - cover_i, 0)
        gain = np.maximum(S - cover[:, None], 0.0).sum(axis=0)
        gain[taken] = -np.inf
        j = int(np.argmax(gain))  # lowest index among ties
        chosen.append(j)
        taken[j] = True
        cover = np.maximum(cover, S[:, j])
    return chosen


def _lazy_greedy(S: np.ndarray, budget: int) -> list[int]:
    # lazy greedy: gains only shrink (submodularity), so stale gains are upper bounds
    n = S.shape[0]
    cover = np.zeros(n)
    chosen: list[int] = []
    gain0 = S.sum(axis=0)
    heap = [(-gain0[j], j) for j in range(n)]
    heapq.heapify(heap)
    while len(chosen) < budget:
        _, j = heapq.heappop(heap)
        fresh = float(np.maximum(S[:, j] - cover, 0.0).sum())
        if not heap or fresh >= -heap[0][0]:
            chosen.append(j)
            cover = np.maximum(cover, S[:, j])
        else:
            heapq.heappush(heap, (-fresh, j))
    return chosen


def per_class_budget(budget: int, num_classes: int) -> int:
    """Points selected per class, ``ceil(B / C)``: CREST's ``equal_num=True`` split.

    See: book/coreset/01-facility-location.ipynb
    """
    budget = check_int("budget", budget, 1)
    return -(-budget // check_int("num_classes", num_classes, 1))


def per_class_facility_location(
    G: Any,
    y: Any,
    budget: int,
    *,
    similarity: str = "max-minus",
) -> tuple[np.ndarray, np.ndarray]:
    """Facility location run separately in every class, the budget split equally (the paper's
    protocol: CREST's ``get_orders_and_weights(B, G, "euclidean", y=y, equal_num=True)``).

    Every class present in ``y`` gets ``ceil(B / C)`` medoids (``B`` in all when ``C``
    divides ``B``), chosen by greedy facility location (3) on its own members' distances; a
    medoid's weight counts the members of its class it stands for. A class smaller than its
    share is taken whole (weights 1; the official code moves the shortfall elsewhere).

    Parameters
    ----------
    G : array-like, shape (n, m)
        Feature vectors of the pool.
    y : array-like of int, shape (n,)
        The pool's (possibly noisy) labels.
    budget : int
        ``B >= 1``.
    similarity : {"max-minus", "exp"}
        Eq. (2) (default), or the official ``exp(-d / m)``, ``m`` = feature dimension.

    Returns
    -------
    idx, weights : ndarray of int
        Indices into ``G`` class by class (in increasing class order, each in greedy order, as
        the official code returns them) and their weights (summing to ``n``).

    See: book/coreset/01-facility-location.ipynb
    """
    G = check_array("G", G, ndim=2, min_size=1)
    y = check_array("y", y, ndim=1, dtype=None)
    if y.shape != (G.shape[0],):
        raise ValueError(f"y must have shape ({G.shape[0]},) (got {y.shape})")
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer labels (got dtype {y.dtype})")
    budget = check_int("budget", budget, 1)
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    return per_class_unchecked(G, y, budget, similarity)


def per_class_unchecked(G: np.ndarray, y: np.ndarray, budget: int, similarity: str = "max-minus"):
    """``per_class_facility_location`` without the checks (its callers validated them)."""
    per = -(-budget // np.unique(y).size)  # ceil(B / C), per_class_budget
    idx, weights = [], []
    for members in (np.flatnonzero(y == c) for c in np.unique(y)):  # classes in increasing order
        D = _distances(G[members])
        if similarity == "max-minus":
            S = D.max() - D  # eq. (2)
        else:
            S = np.exp(-D / G.shape[1])  # deviation: submodlib's kernel, scale = m
        i, w = greedy_unchecked(S, per)
        idx, weights = idx + [members[i]], weights + [w]
    return np.concatenate(idx), np.concatenate(weights)


def brute_force_facility_location(D: Any, budget: int) -> tuple[np.ndarray, float]:
    """The optimal subset of size ``budget`` by enumeration (for pools of <= 16 points).

    Returns
    -------
    idx : ndarray of int
        An optimal subset (sorted).
    value : float
        Its objective ``F(S*)``.

    See: book/coreset/01-facility-location.ipynb
    """
    import itertools

    D = _check_distances(D)
    n = D.shape[0]
    if n > 16:
        raise ValueError(f"D must have at most 16 points for brute force (got {n})")
    budget = check_int("budget", budget, 1, n)
    S = D.max() - D
    best, best_idx = -np.inf, None
    for comb in itertools.combinations(range(n), budget):
        v = S[:, comb].max(axis=1).sum()
        if v > best:
            best, best_idx = v, comb
    return np.asarray(best_idx, dtype=int), float(best)


# ---------------------------------------------------------------------------------------------
# Multinomial logistic regression with exact Hessians (the theorem's playground)
# ---------------------------------------------------------------------------------------------
def _augment(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _check_lr(W, X, y):
    X = check_array("X", X, ndim=2, min_size=1)
    W = check_array("W", W, ndim=2)
    if W.shape[1] != X.shape[1] + 1:
        raise ValueError(f"W must have shape (C, {X.shape[1] + 1}) (got {W.shape})")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) (got {y.shape})")
    if y.min() < 0 or y.max() >= W.shape[0]:
        raise ValueError(f"y must lie in [0, {W.shape[0] - 1}]")
    return W, X, y.astype(int)


def softmax_regression_fit(
    X: Any, y: Any, num_classes: int, *, steps: int = 100, lr: float = 0.5, l2: float = 1e-3
) -> np.ndarray:
    """Full-batch gradient descent on multinomial logistic regression (with a bias column).

    Returns ``W`` of shape ``(C, d + 1)``: the "current weights" ``w_bar`` around which the
    coresets are selected.

    See: book/coreset/02-label-noise.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    num_classes = check_int("num_classes", num_classes, 2)
    steps = check_int("steps", steps, 0)
    lr = check_positive("lr", lr)
    l2 = check_positive("l2", l2, allow_zero=True)
    W = np.zeros((num_classes, X.shape[1] + 1))
    W, X, y = _check_lr(W, X, y)
    Xa = _augment(X)
    Y = np.eye(num_classes)[y]
    for _ in range(steps):
        P = _softmax(Xa @ W.T)
        W = W - lr * ((P - Y).T @ Xa / X.shape[0] + l2 * W)
    return W


def logreg_example_gradients(W: Any, X: Any, y: Any) -> np.ndarray:
    """Per-example cross-entropy gradients ``(p_i - e_{y_i}) x~_i^T``, eq. (8), shape (n, C, d+1).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    Xa = _augment(X)
    R = _softmax(Xa @ W.T)
    R[np.arange(len(y)), y] -= 1.0
    return np.einsum("ic,ia->ica", R, Xa)


def logreg_posterior_features(
    W: Any,
    X: Any,
    y: Any,
    K: int = 8,
    sigma: float = 0.05,
    seed: int = 0,
    *,
    kind: str = "gradient",
) -> np.ndarray:
    """Concatenated per-example features at ``K`` posterior samples of ``W``, eq. (6).

    ``kind="gradient"``: the exact gradients (shape ``(n, K C (d + 1))``);
    ``kind="proxy"``: CRAIG's proxy ``p_i - e_{y_i}`` (shape ``(n, K C)``). ``sigma = 0``
    repeats the CRAIG features ``K`` times (distances scale by ``sqrt(K)``, the selection is
    unchanged).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    kind = check_choice("kind", kind, ("gradient", "proxy"))
    rng = np.random.default_rng(seed)
    Xa = _augment(X)
    blocks = []
    for _ in range(K):
        Wk = W + sigma * rng.standard_normal(W.shape)  # w_k ~ N(w_bar, sigma^2 I)
        if kind == "proxy":
            R = _softmax(Xa @ Wk.T)
            R[np.arange(len(y)), y] -= 1.0  # eq. (4)
            blocks.append(R)
        else:
            blocks.append(logreg_example_gradients(Wk, X, y).reshape(len(y), -1))
    return np.concatenate(blocks, axis=1)


def logreg_hessian(W: Any, X: Any, y: Any, weights: Any = None) -> np.ndarray:
    """Exact Hessian of the weighted mean cross-entropy, eq. (8), shape (C(d+1), C(d+1)).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, _ = _check_lr(W, X, y)
    n = X.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, float) / np.sum(weights)
    Xa = _augment(X)
    P = _softmax(Xa @ W.T)
    A = np.einsum("ic,cd->icd", P, np.eye(P.shape[1])) - np.einsum("ic,id->icd", P, P)
    C, d1 = W.shape
    # H[(c, a), (e, b)] = sum_i w_i A_i[c, e] x_ia x_ib, as one matmul over i
    M = (w[:, None] * A.reshape(n, C * C))[:, :, None] * Xa[:, None, :]  # (n, C*C, d1)
    H = (M.reshape(n, -1).T @ Xa).reshape(C, C, d1, d1)
    return H.transpose(0, 2, 1, 3).reshape(C * d1, C * d1)


def alignment_errors(
    W: Any,
    X: Any,
    y: Any,
    idx: Any,
    weights: Any,
    *,
    sigma: float = 0.05,
    draws: int = 16,
    newton: str = "range",
    seed: int = 0,
) -> dict[str, float]:
    """How well the weighted subset ``(idx, weights)`` stands in for the pool ``(X, y)``.

    Parameters
    ----------
    W : array, shape (C, d + 1)
        The current weights ``w_bar``.
    X, y : the pool (the ground set ``V``).
    idx, weights : the coreset.
    sigma, draws, seed : the fresh posterior draws ``w ~ N(w_bar, sigma^2 I)`` on which the
        gradient error is averaged.
    newton : {"range", "ridge"}
        How the Newton steps are compared (``newton_steps``). ``"range"`` (default): inside
        the range of the coreset Hessian ``H_S`` (eigenvalues above ``1e-6 lambda_max``), no
        ridge; ``"ridge"``: ``N = (H + 0.01 I)^{-1} grad l`` (and likewise ``N_S``); with
        ``B (C - 1) < C (d + 1)`` the ridge dominates ``N_S``.

    Returns
    -------
    dict with
        ``grad``: ``E_w ||grad l_S(w) - grad l(w)||^2 / E_w ||grad l(w)||^2``, eq. (5);
        ``hess``: ``||H_S - H||_F / ||H||_F`` at ``w_bar``;
        ``newton``: ``||N_S - N|| / ||N||`` at ``w_bar`` (see ``newton``);
        ``rank``: the dimension of the subspace (``newton="range"``; else the full dimension).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    idx = np.asarray(idx, dtype=int)
    gam = np.asarray(weights, dtype=float)
    if gam.shape != idx.shape or np.any(gam < 0) or gam.sum() <= 0:
        raise ValueError("weights must be non-negative, of the shape of idx, with a positive sum")
    sigma = check_positive("sigma", sigma, allow_zero=True)
    draws = check_int("draws", draws, 1)
    newton = check_choice("newton", newton, ("range", "ridge"))
    rng = np.random.default_rng(check_int("seed", seed, 0))
    gam = gam / gam.sum()
    num = den = 0.0
    for _ in range(draws):
        Wk = W + sigma * rng.standard_normal(W.shape)
        Gk = logreg_example_gradients(Wk, X, y).reshape(len(y), -1)
        full = Gk.mean(axis=0)
        num += np.sum((gam @ Gk[idx] - full) ** 2)  # eq. (5)
        den += np.sum(full**2)
    return {"grad": float(num / den), **curvature_errors(W, X, y, idx, gam, newton)}


def curvature_errors(W, X, y, idx, gam, newton: str = "range") -> dict[str, float]:
    """The Hessian and Newton-step errors of the coreset ``(idx, gam)`` (``gam`` summing to 1)
    at ``w_bar`` (Theorem 3.2), without the checks of ``alignment_errors``."""
    H = logreg_hessian(W, X, y)
    HS = logreg_hessian(W, X[idx], y[idx], gam)
    g = logreg_example_gradients(W, X, y).reshape(len(y), -1)
    N, NS, rank = newton_steps(H, g.mean(axis=0), HS, gam @ g[idx], newton=newton)
    return {
        "hess": float(np.linalg.norm(HS - H) / np.linalg.norm(H)),
        "newton": float(np.linalg.norm(NS - N) / np.linalg.norm(N)),
        "rank": rank,
    }


def newton_steps(
    H: Any,
    g: Any,
    HS: Any,
    gS: Any,
    *,
    newton: str = "range",
    l2: float = 1e-2,
    rcond: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Full and coreset Newton steps ``(N, N_S, dimension)`` (Theorem 3.2), as
    ``alignment_errors`` compares them: ``newton="range"`` inside the range of ``HS``
    (eigenvalues above ``rcond * lambda_max``), ``"ridge"`` with ``+ l2 I`` on both.

    See: book/coreset/02-label-noise.ipynb
    """
    H = check_array("H", H, ndim=2, min_size=1)
    HS = check_array("HS", HS, ndim=2, min_size=1)
    g = check_array("g", g, ndim=1, min_size=1)
    gS = check_array("gS", gS, ndim=1, min_size=1)
    n = H.shape[0]
    if H.shape != (n, n) or HS.shape != (n, n) or g.shape != (n,) or gS.shape != (n,):
        raise ValueError(f"H, HS must be ({n}, {n}) and g, gS ({n},) (got {HS.shape}, {gS.shape})")
    newton = check_choice("newton", newton, ("range", "ridge"))
    if newton == "ridge":
        eye = check_positive("l2", l2) * np.eye(n)
        return np.linalg.solve(H + eye, g), np.linalg.solve(HS + eye, gS), n
    rcond = check_range("rcond", rcond, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    lam, V = np.linalg.eigh((HS + HS.T) / 2)
    keep = lam > rcond * lam.max()
    U, lam = V[:, keep], lam[keep]
    NS = U @ ((U.T @ gS) / lam)  # H_S^+ g_S on its range
    N = U @ np.linalg.solve(U.T @ H @ U, U.T @ g)  # the full Newton step inside that range
    return N, NS, int(keep.sum())
