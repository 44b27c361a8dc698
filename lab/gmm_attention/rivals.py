"""The claims' nearest rivals, measured on the claims' own data and seeds.

* :func:`kmeans_seed_runs`: scikit-learn's k-means on the mixture of notebook 1, one fit per
  seed (the standard estimator of the centroids, the one the layer becomes at low temperature);
* :func:`own_mean_heads_errors`: two heads placed on each sequence's own cluster means (the
  in-context ideal a layer trained on one fixed mixture is compared with);
* :func:`lloyd_error`: a few Lloyd steps from random tokens per sequence (k-means stopped
  after the one step the identity layer takes, or after as many steps as layers are stacked).

See: book/gmm_attention/01-heads-find-centroids.ipynb,
book/gmm_attention/02-temperature-and-baselines.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_int, check_positive
from lab.core.sweep import sweep

from .experiments import kmeans_batched
from .mixture import alignment, check_means, sample_gmm
from .reference import head_attention, monte_carlo_risk, own_cluster_means

__all__ = ["kmeans_seed_runs", "own_mean_heads_errors", "lloyd_error"]


def kmeans_seed_runs(
    means: Any, sigma: float, seeds: Any, *, n: int = 10_000, lam: float = 1.0, n_mc: int = 100_000
):
    """``sklearn.cluster.KMeans(K, n_init=3)`` on ``n`` fresh samples per seed (data seed
    ``seed + 1``, as :func:`~lab.gmm_attention.experiments.fit_baselines`), through
    :func:`lab.core.sweep.sweep`: outputs ``alignment``, ``norm_error`` (worst
    ``| ||c_k|| / mean ||μ|| − 1 |``) and ``risk`` (:func:`monte_carlo_risk` of the centres used
    as heads at ``lam``, on the same ``n_mc`` samples, seed 2, as
    :func:`~lab.gmm_attention.experiments.seed_runs`).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    from sklearn.cluster import KMeans

    means = check_means(means)
    sigma = check_positive("sigma", sigma)
    n = check_int("n", n, means.shape[0])
    n_mc = check_int("n_mc", n_mc, 2)
    lam = check_positive("lam", lam)
    mu_norm = float(np.mean(np.linalg.norm(means, axis=1)))

    def one(seed: int) -> dict[str, float]:
        X, _ = sample_gmm(n, means, sigma, seed + 1)
        C = KMeans(n_clusters=means.shape[0], n_init=3, random_state=seed).fit(X).cluster_centers_
        return {
            "alignment": alignment(C, means),
            "norm_error": float(np.max(np.abs(np.linalg.norm(C, axis=1) / mu_norm - 1))),
            "risk": monte_carlo_risk(C, means, sigma, lam, n=n_mc, seed=2)[0],
        }

    return sweep(one, None, seeds=tuple(seeds), desc="k-means")


def own_mean_heads_errors(X: Any, z: Any, lam: float = 1.0) -> np.ndarray:
    """Per-sequence in-context error (M7) of the two-head layer (M1)-(M2) whose heads are that
    sequence's own two cluster means: shape ``(B,)``.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=3)
    z = check_array("z", z, shape=X.shape[:-1], dtype=None).astype(int)
    lam = check_positive("lam", lam)
    target = own_cluster_means(X, z)
    out = np.empty(X.shape[0])
    for b in range(X.shape[0]):
        heads = np.stack([X[b][z[b] == k].mean(0) for k in range(int(z[b].max()) + 1)])
        A, _ = head_attention(X[b], heads, lam)
        out[b] = float(np.mean(np.sum((A - target[b]) ** 2, axis=-1)))
    return out


def lloyd_error(X: Any, z: Any, K: int = 2, seed: int = 0, steps: int = 1) -> float:
    """In-context error (M7) of ``steps`` Lloyd steps per sequence: ``K`` random tokens as
    centres, ``steps`` assignments and mean updates, each token replaced by its centre (no
    restarts).

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=3)
    z = check_array("z", z, shape=X.shape[:-1], dtype=None).astype(int)
    steps = check_int("steps", steps, 1, 10_000)
    C, lab, _ = kmeans_batched(X, K, n_init=1, iters=steps, seed=seed)
    out = np.take_along_axis(C, lab[..., None], axis=1)
    return float(np.mean(np.sum((out - own_cluster_means(X, z)) ** 2, axis=-1)))
