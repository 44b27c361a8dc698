"""Baselines that assume smoothness or certify only Goldstein stationarity.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lab.bilevel.reference import eval_oracle, izom
from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
)

__all__ = [
    "fd_gradient_descent",
    "gradient_free_goldstein",
]


# ------------------------------------------------------------------------------------------
# baselines
# ------------------------------------------------------------------------------------------
def fd_gradient_descent(
    phi: Callable, x0: Any, h: float = 1e-6, eta: float = 0.05, T: int = 1000
) -> np.ndarray:
    """Naive baseline: fixed-step gradient descent on central finite-difference gradients
    (``2 m`` oracle calls per step), as if the hyper-objective were smooth.

    At a kink the finite-difference gradient jumps between the one-sided slopes, so the
    iterates chatter across the kink at a distance of order ``eta`` instead of converging.

    Parameters
    ----------
    phi : callable
        ``x -> float``.
    x0 : array_like, shape (m,)
    h : float
        Difference step (> 0).
    eta : float
        Step size (> 0).
    T : int
        Steps (>= 1).

    Returns
    -------
    ndarray, shape (T + 1, m)
        The iterates.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(phi):
        raise TypeError("phi must be callable")
    x = check_array("x0", x0, ndim=1, min_size=1).copy()
    h = check_positive("h", h)
    eta = check_positive("eta", eta)
    T = check_int("T", T, 1)
    E = np.eye(x.size) * h
    X = [x.copy()]
    for _ in range(T):
        g = np.array([(eval_oracle(phi, x + e) - eval_oracle(phi, x - e)) / (2 * h) for e in E])
        x = x - eta * g
        X.append(x.copy())
    return np.array(X)


def gradient_free_goldstein(
    phi: Callable, x0: Any, delta: float = 0.1, eta: float = 0.01, T: int = 1000, seed: int = 0
) -> np.ndarray:
    """Baseline: the gradient-free method of Lin, Zheng & Jordan (2022) for Goldstein
    stationarity: the same two-point estimator with a *fixed, coarse* radius ``delta`` (their
    target Goldstein radius) instead of a vanishing one.

    It minimises the ball-smoothed function :math:`\\varphi_\\delta`, whose minimiser is a
    :math:`(\\delta, \\varepsilon)`-Goldstein point but can sit at distance ``O(delta)`` from
    the Clarke stationary point when the kink is asymmetric.

    Parameters
    ----------
    phi : callable
    x0 : array_like, shape (m,)
    delta : float
        Goldstein radius (> 0).
    eta : float
        Step size (> 0).
    T : int
        Steps (>= 1).
    seed : int

    Returns
    -------
    ndarray, shape (T + 1, m)

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    hist = izom(phi, x0, T, eta, delta, seed, measure="none")
    return hist.x
