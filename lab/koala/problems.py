"""The test problem of notebook 1: a noisy quadratic small enough to keep the full covariance.

See: book/koala/01-kalman-view.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import check_bool, check_int, check_positive, check_range

__all__ = ["NoisyQuadratic"]


@dataclass
class NoisyQuadratic:
    """``L_k(theta) = 1/2 (theta - xi_k)^T A (theta - xi_k)``, ``xi_k ~ N(0, noise^2 I)``.

    ``A`` has eigenvalues geometrically spaced in ``[1/kappa, 1]`` (condition number
    ``kappa``) in a random orthonormal basis (``rotate=True``) or the coordinate axes. The
    minimum of the mean loss is at 0 with value ``noise^2 tr(A) / 2``; every method sees the
    same ``xi_k`` sequence (seeded). The loss is non-negative, as the Kalman view needs (target 0).

    See: book/koala/01-kalman-view.ipynb
    """

    n: int = 10
    kappa: float = 100.0
    noise: float = 0.0
    seed: int = 0
    rotate: bool = True
    max_steps: int = 2000
    A: np.ndarray = field(init=False, repr=False)
    xi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.n = check_int("n", self.n, 1, 2000)
        self.kappa = check_range("kappa", self.kappa, 1.0, 1e8)
        self.noise = check_positive("noise", self.noise, allow_zero=True)
        self.seed = check_int("seed", self.seed, 0)
        self.rotate = check_bool("rotate", self.rotate)
        self.max_steps = check_int("max_steps", self.max_steps, 1, 10_000_000)
        rng = np.random.default_rng(self.seed)
        eig = np.geomspace(1.0 / self.kappa, 1.0, self.n) if self.n > 1 else np.ones(1)
        if self.rotate and self.n > 1:
            U, _ = np.linalg.qr(rng.standard_normal((self.n, self.n)))
        else:
            U = np.eye(self.n)
        self.A = (U * eig) @ U.T
        self.A = 0.5 * (self.A + self.A.T)
        self.xi = self.noise * rng.standard_normal((self.max_steps + 2, self.n))

    def loss(self, theta: np.ndarray, k: int = 0) -> float:
        """Measured loss of step ``k`` (``k = 0``: the noise-free loss)."""
        d = np.asarray(theta, dtype=np.float64) - self.xi[k]
        return 0.5 * float(d @ self.A @ d)

    def grad(self, theta: np.ndarray, k: int = 0) -> np.ndarray:
        """Gradient of the measured loss of step ``k``."""
        return self.A @ (np.asarray(theta, dtype=np.float64) - self.xi[k])

    def mean_loss(self, theta: np.ndarray) -> np.ndarray:
        """Noise-free loss ``1/2 theta^T A theta`` for a point or a trajectory (rows)."""
        t = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        out = 0.5 * np.einsum("ij,jk,ik->i", t, self.A, t)
        return out if np.ndim(theta) > 1 else float(out[0])

    def start(self, scale: float = 3.0) -> np.ndarray:
        """A fixed starting point of norm ``scale`` (seeded, spread over all eigen-directions)."""
        rng = np.random.default_rng(self.seed + 1)
        t = rng.standard_normal(self.n)
        return scale * t / np.linalg.norm(t)
