"""Distances to the target: Gaussian KL and W2 (closed forms), POT's empirical W2, and
KL / relative Fisher information of densities on a grid.

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
)
from lab.core.runtime import smoke
from lab.wflows.targets import FiniteSumQuadratic, check_particles, check_potential

__all__ = [
    "kl_gaussian",
    "w2_gaussian",
    "gaussian_fit_kl",
    "empirical_w2",
    "kl_grid",
    "fisher_grid",
]


def particle_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(0)
    D = X - mean
    return mean, D.T @ D / max(X.shape[0] - 1, 1)


# ---------------------------------------------------------------------------------------------
# Gaussian distances
# ---------------------------------------------------------------------------------------------


def _gauss_args(m1, S1, m2, S2):
    m1 = np.atleast_1d(check_array("m1", m1, ndim=(0, 1)))
    d = m1.shape[0]
    m2 = np.atleast_1d(check_array("m2", m2, shape=(d,)) if np.ndim(m2) else check_array("m2", m2))
    S1 = np.atleast_2d(check_array("S1", S1))
    S2 = np.atleast_2d(check_array("S2", S2))
    for name, S in (("S1", S1), ("S2", S2)):
        if S.shape != (d, d):
            raise ValueError(f"{name} must have shape ({d}, {d}) (got {S.shape})")
    if m2.shape != (d,):
        raise ValueError(f"m2 must have shape ({d},) (got {m2.shape})")
    return m1, S1, m2, S2, d


def kl_gaussian(m1: Any, S1: Any, m2: Any, S2: Any) -> float:
    r"""$\mathrm{KL}(\mathcal N(m_1, S_1) \,\|\, \mathcal N(m_2, S_2)) = \frac12[\mathrm{tr}(S_2^{-1}S_1)
    + (m_2 - m_1)^\top S_2^{-1}(m_2 - m_1) - d + \log\det S_2 - \log\det S_1]$.

    Scalars are accepted for 1-D (variances, not standard deviations).

    See: book/wflows/01-three-samplers.ipynb
    """
    m1, S1, m2, S2, d = _gauss_args(m1, S1, m2, S2)
    s1, ld1 = np.linalg.slogdet(S1)
    s2, ld2 = np.linalg.slogdet(S2)
    if s1 <= 0 or s2 <= 0:
        raise ValueError("S1 and S2 must be positive definite covariances")
    dm = m2 - m1
    val = np.trace(np.linalg.solve(S2, S1)) + dm @ np.linalg.solve(S2, dm) - d + ld2 - ld1
    return float(max(0.5 * val, 0.0))


def _sqrtm_psd(S: np.ndarray) -> np.ndarray:
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    return (U * np.sqrt(np.clip(w, 0.0, None))) @ U.T


def w2_gaussian(m1: Any, S1: Any, m2: Any, S2: Any) -> float:
    r"""Wasserstein-2 distance between Gaussians (Bures):
    $W_2^2 = \lVert m_1 - m_2\rVert^2 + \mathrm{tr}(S_1 + S_2 - 2 (S_2^{1/2} S_1 S_2^{1/2})^{1/2})$.

    See: book/wflows/01-three-samplers.ipynb
    """
    m1, S1, m2, S2, d = _gauss_args(m1, S1, m2, S2)
    R = _sqrtm_psd(S2)
    cross = _sqrtm_psd(R @ S1 @ R)
    val = np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * cross)
    return float(math.sqrt(max(val, 0.0)))


def gaussian_fit_kl(X: Any, potential: FiniteSumQuadratic) -> float:
    """KL of the Gaussian fitted to the particles ``X`` against the target.

    A finite-sample floor of about ``d (d + 3) / (4 P)`` remains at equilibrium.

    See: book/wflows/01-three-samplers.ipynb
    """
    potential = check_potential(potential)
    X = check_particles(X, potential.d, "X")
    mean, cov = particle_moments(X)
    return kl_gaussian(mean, cov, potential.mean, potential.cov)


def empirical_w2(X: Any, Y: Any, *, sliced: bool = False, n_projections: int = 200, seed: int = 0):
    """W2 between two particle clouds with POT: exact (``ot.emd2``, squared Euclidean cost)
    or sliced (``ot.sliced_wasserstein_distance``).

    See: book/wflows/01-three-samplers.ipynb
    """
    import ot

    X = check_array("X", X, ndim=2, min_size=1)
    Y = check_array("Y", Y, ndim=2, min_size=1)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same dimension (got {X.shape}, {Y.shape})")
    n_projections = check_int("n_projections", n_projections, 1)
    if sliced:
        return float(
            ot.sliced_wasserstein_distance(X, Y, n_projections=n_projections, seed=seed, p=2)
        )
    if smoke():  # LAB_SMOKE=1: the exact solver on the first 500 particles (seconds on a CPU)
        X, Y = X[:500], Y[:500]
    M = ot.dist(X, Y)  # squared Euclidean
    # POT's default cap of 100,000 simplex iterations stopped short of the optimum at FULL's
    # 10,000 particles ("numItermax reached", W2(X, Y) != W2(Y, X)); a converged solve is the same
    cap = max(100_000, 10 * len(X) * len(Y))
    return float(math.sqrt(max(ot.emd2(ot.unif(len(X)), ot.unif(len(Y)), M, numItermax=cap), 0.0)))


def kl_grid(mu: Any, pi: Any, dx: float) -> float:
    r"""$\mathrm{KL}(\mu\|\pi) = \sum_j \mu_j \log(\mu_j/\pi_j)\,\Delta x$ for densities on a grid
    (``pi`` renormalised on the grid; cells where ``mu = 0`` contribute 0).

    See: book/wflows/01-three-samplers.ipynb
    """
    mu = check_array("mu", mu, ndim=1)
    pi = check_array("pi", pi, shape=mu.shape)
    dx = check_positive("dx", dx)
    pi = pi / (pi.sum() * dx)
    mu = mu / (mu.sum() * dx)
    m = mu > 0
    if np.any(pi[m] <= 0):
        raise ValueError("pi must be > 0 wherever mu > 0")
    return float(max(np.sum(mu[m] * np.log(mu[m] / pi[m])) * dx, 0.0))


def fisher_grid(mu: Any, pi: Any, dx: float) -> float:
    r"""Relative Fisher information ``I(mu || pi) = int mu * ((log mu/pi)')^2`` on a grid
    (central differences; cells with ``mu <= 1e-300`` skipped).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    mu = check_array("mu", mu, ndim=1, min_size=3)
    pi = check_array("pi", pi, shape=mu.shape)
    dx = check_positive("dx", dx)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(np.clip(mu, 1e-300, None)) - np.log(np.clip(pi, 1e-300, None))
    g = np.gradient(r, dx)
    m = mu > 1e-300
    return float(np.sum(mu[m] * g[m] ** 2) * dx)
