"""The 2-D toy problem of notebook 1: three noisy-label blobs, a softmax regression fitted on
them, and the random, CRAIG and posterior coresets of its gradient proxies (memoised).

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_instance, check_int, check_range
from lab.core.memo import memo
from lab.coreset.labels import corrupt_labels, noisy_share, random_coreset
from lab.coreset.reference import (
    greedy_facility_location,
    logreg_posterior_features,
    pairwise_distances,
    softmax_regression_fit,
)
from lab.coreset.settings import ToySettings

__all__ = ["toy_problem", "ToySelection", "toy_selection"]


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


@dataclass(frozen=True)
class ToySelection:
    """The toy problem's proxies ``p - e_y`` at ``w̄`` (``proxies``, shape (n, 3)), which labels
    were flipped, the three coresets ``{method: (idx, weights)}`` and their weighted noisy
    shares.

    See: book/coreset/01-facility-location.ipynb
    """

    settings: ToySettings
    proxies: np.ndarray
    flipped: np.ndarray
    coresets: dict
    shares: dict


@memo(maxsize=256)
def toy_selection(settings: ToySettings) -> ToySelection:
    """Random, CRAIG and posterior coresets on the toy problem (memoised).

    See: book/coreset/01-facility-location.ipynb
    """
    check_instance("settings", settings, ToySettings)
    s = settings
    X, _, yn, fl, W = toy_problem(s.noise, seed=s.seed)
    R = logreg_posterior_features(W, X, yn, 1, 0.0, kind="proxy")
    Gp = logreg_posterior_features(W, X, yn, s.K, s.sigma, s.seed + 1, kind="proxy")
    sel = {
        "random": random_coreset(len(yn), s.budget, s.seed),
        "craig": greedy_facility_location(pairwise_distances(R), s.budget),
        "posterior": greedy_facility_location(pairwise_distances(Gp), s.budget),
    }
    shares = {m: noisy_share(fl, *c) for m, c in sel.items()}
    return ToySelection(s, R, fl, sel, shares)
