"""The 2-D toy problem of notebook 1: three noisy-label blobs, a softmax regression fitted on
them, and the random, CRAIG and posterior coresets of its gradient proxies (memoised).

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_range
from lab.core.memo import memo
from lab.coreset.reference import (
    corrupt_labels,
    greedy_facility_location,
    logreg_posterior_features,
    pairwise_distances,
    random_coreset,
    softmax_regression_fit,
)

__all__ = ["toy_problem", "toy_selection"]


@memo(maxsize=64)
def toy_problem(noise: float, n: int = 300, seed: int = 0):
    """Three Gaussian blobs in 2-D, symmetric label noise, and ``w_bar`` from 30 GD steps.

    Returns ``X, y_clean, y_noisy, flipped, W`` (memoised: do not modify them).

    See: book/coreset/01-facility-location.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    n = check_int("n", n, 3)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    centres = np.array([[0.0, 2.0], [-1.8, -1.0], [1.8, -1.0]])
    y = np.arange(n) % 3
    X = centres[y] + rng.standard_normal((n, 2))
    yn, fl = corrupt_labels(y, noise, 3, seed)
    W = softmax_regression_fit(X, yn, 3, steps=30, lr=0.5)
    return X, y, yn, fl, W


def toy_selection(noise: float, budget: int = 15, K: int = 8, sigma: float = 0.5, seed: int = 0):
    """Random, CRAIG and posterior coresets on the toy problem.

    Returns ``(R, flipped, {method: (idx, weights)})`` with ``R`` the unperturbed proxies.

    See: book/coreset/01-facility-location.ipynb
    """
    X, _, yn, fl, W = toy_problem(noise, seed=seed)
    R = logreg_posterior_features(W, X, yn, 1, 0.0, kind="proxy")
    Gp = logreg_posterior_features(W, X, yn, K, sigma, seed + 1, kind="proxy")
    sel = {
        "random": random_coreset(len(yn), budget, seed),
        "craig": greedy_facility_location(pairwise_distances(R), budget),
        "posterior": greedy_facility_location(pairwise_distances(Gp), budget),
    }
    return R, fl, sel
