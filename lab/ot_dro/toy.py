"""Notebook 1's 2-D toy (ours): labelled points, jittered candidates, a fixed linear model.

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_array

__all__ = ["W_FIXED", "toy_2d", "toy_losses", "toy_cost"]

W_FIXED = np.array([1.5, 0.3])  # the fixed linear model of notebook 1 (mostly uses x1)


def toy_2d(n: int = 40, m_per: int = 4, seed: int = 0):
    """Notebook 1's toy: P = n labelled 2-D points; nu = m_per candidates per point.

    Candidates are Gaussian jitters of their source, half of them with the second coordinate
    flipped (an augmentation the model should not care about). Returns
    ``(P [n, 2], yP [n], Q [n m_per, 2], yQ [n m_per])`` with labels in {-1, +1}.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    P = np.stack([y * 1.0, rng.normal(0, 1.0, n)], 1) + 0.5 * rng.standard_normal((n, 2))
    src = np.repeat(np.arange(n), m_per)
    Q = P[src] + 0.35 * rng.standard_normal((n * m_per, 2))
    flip = np.tile(np.arange(m_per) % 2 == 1, n)
    Q[flip, 1] = -Q[flip, 1]
    return P, y, Q, y[src]


def toy_losses(Q, yQ):
    """Logistic loss ``log(1 + exp(-y w.x))`` of each candidate under the fixed model.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return np.logaddexp(0.0, -yQ * (Q @ W_FIXED))


def toy_cost(P, Q):
    """Squared Euclidean cost between the training points and the candidates.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    P = check_array("P", P, ndim=2, min_size=1)
    Q = check_array("Q", Q, ndim=2, shape=(None, P.shape[1]), min_size=1)
    return ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)
