"""The data of the chapter: Gaussian mixtures, sequences with their own centroids, and the
permutation-invariant scores that compare heads with centroids.

Validation helpers shared by the other modules of ``lab.gmm_attention`` live here too.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_int, check_positive

__all__ = [
    "symmetric_means",
    "sample_gmm",
    "sample_in_context",
    "alignment",
    "centroid_error",
]


# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------


def check_means(means: Any) -> np.ndarray:
    means = check_array("means", means, ndim=2)
    if means.shape[0] < 2:
        raise ValueError(f"means must have at least 2 rows (centroids) (got shape {means.shape})")
    if means.shape[1] < 1:
        raise ValueError(f"means must have at least 1 column (got shape {means.shape})")
    return means


def check_theta(Theta: Any, d: int | None = None) -> np.ndarray:
    Theta = check_array("Theta", Theta, ndim=2)
    if Theta.shape[0] < 2:
        raise ValueError(f"Theta must have at least 2 rows (heads) (got shape {Theta.shape})")
    if d is not None and Theta.shape[1] != d:
        raise ValueError(
            f"Theta has dimension {Theta.shape[1]} but the data have dimension {d} "
            f"(Theta shape {Theta.shape})"
        )
    return Theta


def check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    return check_int("seed", seed, 0, 2**63 - 1)


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_seed(seed))


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def symmetric_means(d: int = 10, norm: float = 3.0, seed: int | None = 0) -> np.ndarray:
    """The symmetric two-component centroids ``(mu, -mu)`` with ``||mu|| = norm``.

    ``seed=None`` puts ``mu`` along the first axis; otherwise its direction is uniform.

    Returns
    -------
    numpy.ndarray, shape (2, d)

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    d = check_int("d", d, 1)
    norm = check_positive("norm", norm)
    if seed is None:
        u = np.zeros(d)
        u[0] = 1.0
    else:
        u = np.random.default_rng(check_seed(seed)).normal(size=d)
        u /= np.linalg.norm(u)
    return np.stack([norm * u, -norm * u])


def sample_gmm(
    n: int,
    means: Any,
    sigma: float,
    seed: int | np.random.Generator | None = None,
    *,
    weights: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` points of the Gaussian mixture ``x = mu_z + sigma * eps``.

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    means : array-like, shape (K, d)
        Centroids, ``K >= 2``.
    sigma : float
        Noise standard deviation (> 0), isotropic.
    seed : int or numpy.random.Generator, optional
        Seed (or a generator, which is advanced).
    weights : array-like, shape (K,), optional
        Mixture weights (non-negative, summing to 1); uniform by default.

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
    z : numpy.ndarray of int, shape (n,)
        Component labels (for evaluation only; training never sees them).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    n = check_int("n", n, 1)
    means = check_means(means)
    sigma = check_positive("sigma", sigma)
    K, d = means.shape
    if weights is None:
        p = np.full(K, 1.0 / K)
    else:
        p = check_array("weights", weights, shape=(K,))
        if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(
                f"weights must be non-negative and sum to 1 (got {np.round(p, 6).tolist()}, "
                f"sum {p.sum():.6g})"
            )
    rng = _rng(seed)
    z = rng.choice(K, size=n, p=p)  # z ~ Cat(p)
    X = means[z] + sigma * rng.standard_normal((n, d))  # x = mu_z + sigma eps
    return X, z


# ---------------------------------------------------------------------------------------------
# the two-head layer (reconstructed) and its risk
# ---------------------------------------------------------------------------------------------


def sample_in_context(
    n_seq: int,
    L: int = 64,
    d: int = 5,
    separation: float = 3.0,
    K: int = 2,
    sigma: float = 1.0,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Sequences whose centroids change from one sequence to the next.

    For ``K = 2`` each sequence has centroids ``+-mu_seq`` with ``mu_seq = separation * u``,
    ``u`` uniform on the sphere; for ``K > 2`` the ``K`` centroids are ``separation`` times
    independent uniform directions. Tokens are ``mu_z + sigma eps`` with ``z`` uniform.

    Returns
    -------
    X : numpy.ndarray, shape (n_seq, L, d)
    z : numpy.ndarray of int, shape (n_seq, L)

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    n_seq = check_int("n_seq", n_seq, 1)
    L = check_int("L", L, 2)
    d = check_int("d", d, 1)
    separation = check_positive("separation", separation, allow_zero=True)
    K = check_int("K", K, 2, L)
    sigma = check_positive("sigma", sigma)
    rng = _rng(seed)
    U = rng.standard_normal((n_seq, K, d))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    if K == 2:
        U[:, 1] = -U[:, 0]
    mu = separation * U  # (n_seq, K, d)
    z = rng.integers(0, K, size=(n_seq, L))
    X = np.take_along_axis(mu, z[..., None], axis=1) + sigma * rng.standard_normal((n_seq, L, d))
    return X, z


# ---------------------------------------------------------------------------------------------
# matching heads to centroids
# ---------------------------------------------------------------------------------------------


def _matching(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment(cost)


def alignment(Theta: Any, means: Any) -> float:
    """Mean cosine similarity between heads and centroids under the best matching.

    Permutation-invariant (label switching) and sign-aware (a head on ``-mu`` has cosine -1
    with ``mu``). The matching maximises the total cosine (Hungarian algorithm); with more
    heads than centroids the extra heads are ignored, and vice versa.

    Parameters
    ----------
    Theta : array-like, shape (H, d)
    means : array-like, shape (K, d)

    Returns
    -------
    float in [-1, 1]

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = check_means(means)
    Theta = check_theta(Theta, means.shape[1])
    tn = np.linalg.norm(Theta, axis=1, keepdims=True)
    mn = np.linalg.norm(means, axis=1, keepdims=True)
    cos = (Theta / np.maximum(tn, 1e-300)) @ (means / np.maximum(mn, 1e-300)).T
    rows, cols = _matching(-cos)
    return float(cos[rows, cols].mean())


def centroid_error(estimate: Any, means: Any) -> float:
    """Mean Euclidean distance between estimated and true centroids under the best matching.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    means = check_means(means)
    estimate = check_array("estimate", estimate, ndim=2)
    if estimate.shape[1] != means.shape[1]:
        raise ValueError(
            f"estimate has dimension {estimate.shape[1]} but means have {means.shape[1]}"
        )
    dist = np.linalg.norm(estimate[:, None, :] - means[None, :, :], axis=-1)
    rows, cols = _matching(dist)
    return float(dist[rows, cols].mean())
