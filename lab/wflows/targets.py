"""The chapter's targets: finite sums of quadratics (exact Gaussian targets).

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "FiniteSumQuadratic",
    "GaussianMixture1D",
    "quadratic_finite_sum",
    "shifted_quadratic_1d",
    "gaussian_mixture_1d",
]

# ---------------------------------------------------------------------------------------------
# The finite-sum target
# ---------------------------------------------------------------------------------------------


class FiniteSumQuadratic:
    r"""Finite-sum quadratic potential $V = \frac1N\sum_i \frac12 (x-a_i)^\top A_i (x-a_i)$.

    Parameters
    ----------
    A : array of shape (N, d, d)
        Symmetric positive definite curvatures.
    a : array of shape (N, d)
        Centres of the components.

    Attributes
    ----------
    N, d : int
    A, a, c : ndarray
        ``c[i] = A[i] @ a[i]``, so ``grad V_i(x) = A_i x - c_i``.
    Abar, cbar : ndarray
        Averages; ``grad V(x) = Abar x - cbar``.
    mean, cov : ndarray
        The target Gaussian ``N(mean, cov)`` with ``cov = Abar^-1``, ``mean = Abar^-1 cbar``.
    L, lam_min : float
        Largest eigenvalue over the ``A_i`` (smoothness) and smallest eigenvalue of ``Abar``
        (the log-Sobolev constant of the target).

    See: book/wflows/01-three-samplers.ipynb
    """

    def __init__(self, A: Any, a: Any):
        A = check_array("A", A, ndim=3, min_size=1)
        N, d, d2 = A.shape
        if d != d2:
            raise ValueError(f"A must have shape (N, d, d) (got {A.shape})")
        a = check_array("a", a, shape=(N, d))
        if not np.allclose(A, np.swapaxes(A, 1, 2), atol=1e-12 * max(1.0, np.abs(A).max())):
            raise ValueError("A must hold symmetric matrices (A[i] != A[i].T for some i)")
        eig = np.linalg.eigvalsh(A)
        if eig.min() <= 0:
            i = int(np.argmin(eig.min(axis=1)))
            raise ValueError(
                f"A must hold positive definite matrices (A[{i}] has eigenvalue {eig.min():.3g})"
            )
        self.A, self.a, self.N, self.d = A, a, N, d
        self.c = np.einsum("nij,nj->ni", A, a)  # grad V_i(x) = A_i x - c_i
        self.Abar = A.mean(0)
        self.cbar = self.c.mean(0)
        self.cov = np.linalg.inv(self.Abar)  # pi = N(Abar^-1 cbar, Abar^-1)
        self.mean = self.cov @ self.cbar
        self.L = float(eig.max())
        self.lam_min = float(np.linalg.eigvalsh(self.Abar).min())

    # -- gradients --------------------------------------------------------------------------
    def grad(self, X: np.ndarray) -> np.ndarray:
        """Full gradient ``grad V(X) = Abar X - cbar`` for particles ``X`` of shape (P, d)."""
        return X @ self.Abar.T - self.cbar

    def grad_components(self, X: np.ndarray) -> np.ndarray:
        """All ``N`` component gradients, shape (P, N, d) (O(N) per particle)."""
        return np.einsum("nij,pj->pni", self.A, X) - self.c[None]

    def grad_batch(self, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Per-particle minibatch gradient ``g_B(X_p) = mean_{i in B_p} (A_i X_p - c_i)``.

        ``idx`` has shape (P, b): particle ``p`` uses components ``idx[p]``.
        """
        A_B = self.A[idx].mean(1)  # (P, d, d): minibatch curvature
        c_B = self.c[idx].mean(1)  # (P, d)
        return np.einsum("pij,pj->pi", A_B, X) - c_B

    def noise_cov(self, X: np.ndarray, batch_size: int) -> np.ndarray:
        r"""$\Sigma(x) = \mathrm{Cov}_i[\nabla V_i(x)] / b$ at each particle, shape (P, d, d)."""
        G = self.grad_components(np.atleast_2d(X))
        D = G - G.mean(1, keepdims=True)
        return np.einsum("pni,pnj->pij", D, D) / self.N / batch_size

    def value(self, X: np.ndarray) -> np.ndarray:
        """``V(X)`` for particles of shape (P, d)."""
        D = X[:, None, :] - self.a[None]
        return 0.5 * np.einsum("pni,nij,pnj->p", D, self.A, D) / self.N

    def __repr__(self) -> str:
        return f"FiniteSumQuadratic(N={self.N}, d={self.d}, L={self.L:.3g}, lam_min={self.lam_min:.3g})"


def quadratic_finite_sum(
    N: int = 200,
    d: int = 2,
    seed: int = 0,
    *,
    eig_range: tuple[float, float] = (0.2, 3.0),
    spread: float = 2.0,
) -> FiniteSumQuadratic:
    r"""The chapter's Gaussian finite-sum target: ``N`` random quadratics in ``R^d``.

    ``a_i ~ N(0, spread^2 I)``, ``A_i = Q_i diag(lambda_i) Q_i^T`` with a random rotation
    ``Q_i`` and eigenvalues uniform in ``eig_range``. The target ``N(.mean, .cov)`` is exact.

    Parameters
    ----------
    N : int
        Number of components (>= 2).
    d : int
        Dimension (1 to 1000).
    seed : int
        Seed of the numpy generator.
    eig_range : (float, float)
        Range of the component eigenvalues, ``0 < low <= high``.
    spread : float
        Standard deviation of the centres ``a_i``.

    Returns
    -------
    FiniteSumQuadratic

    See: book/wflows/01-three-samplers.ipynb
    """
    N = check_int("N", N, 2, 10_000_000)
    d = check_int("d", d, 1, 1000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    spread = check_positive("spread", spread, allow_zero=True)
    if len(eig_range) != 2:
        raise ValueError(f"eig_range must be a (low, high) pair (got {eig_range!r})")
    lo = check_positive("eig_range[0]", eig_range[0])
    hi = check_range("eig_range[1]", eig_range[1], lo)
    rng = np.random.default_rng(seed)
    a = spread * rng.standard_normal((N, d))
    lam = rng.uniform(lo, hi, size=(N, d))
    Q, R = np.linalg.qr(rng.standard_normal((N, d, d)))
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]  # a Haar rotation
    A = np.einsum("nij,nj,nkj->nik", Q, lam, Q)
    A = 0.5 * (A + np.swapaxes(A, 1, 2))
    return FiniteSumQuadratic(A, a)


def shifted_quadratic_1d(N: int = 100, s: float = 2.0, seed: int = 0) -> FiniteSumQuadratic:
    r"""1-D components $V_i(x) = (x - a_i)^2/2$ with $\mathrm{mean}(a_i) = 0$ and
    $\mathrm{var}(a_i) = s^2$ exactly, so $\pi = \mathcal N(0, 1)$ and $\Sigma = s^2/b$.

    The closed forms ``sgd_flow_stationary_var_1d`` and ``sgld_stationary_var_1d`` hold.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    N = check_int("N", N, 2, 10_000_000)
    s = check_positive("s", s)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    a = np.random.default_rng(seed).standard_normal(N)
    a = s * (a - a.mean()) / a.std()  # population variance exactly s^2
    return FiniteSumQuadratic(np.ones((N, 1, 1)), a[:, None])


def check_potential(potential: Any) -> FiniteSumQuadratic:
    if not isinstance(potential, FiniteSumQuadratic):
        raise TypeError(
            "potential must be a FiniteSumQuadratic (from quadratic_finite_sum or "
            f"shifted_quadratic_1d) (got {type(potential).__name__})"
        )
    return potential


def check_particles(X0: Any, d: int, name: str = "X0") -> np.ndarray:
    X0 = check_array(name, X0, ndim=2, min_size=1)
    if X0.shape[1] != d:
        raise ValueError(f"{name} must have shape (P, {d}) to match the potential (got {X0.shape})")
    return X0


class GaussianMixture1D:
    r"""A non-log-concave 1-D finite sum: $V(x) = -\log \sum_k w_k \mathcal N(x; c_k, \sigma^2)$
    and components $V_i(x) = V(x) + z_i x$ with centred shifts $z_i$ ($\frac1N\sum z_i = 0$,
    $\frac1N\sum z_i^2 = s^2$), so $\frac1N\sum_i V_i = V$, $\pi \propto e^{-V}$ is the mixture
    and the minibatch noise $\Sigma(x) = s^2/b$ is constant.

    Parameters
    ----------
    centres : sequence of float
        Mode centres $c_k$ (at least two).
    sigma : float
        Common standard deviation of the modes.
    weights : sequence of float, optional
        Mixture weights (normalised; equal by default).
    N : int
        Number of components of the finite sum.
    spread : float
        Standard deviation $s$ of the shifts $z_i$.
    seed : int
        Seed of the shifts.

    See: book/wflows/02-rates-and-variance.ipynb
    """

    def __init__(
        self,
        centres: Any = (-2.0, 2.0),
        sigma: float = 0.7,
        weights: Any = None,
        N: int = 100,
        spread: float = 2.0,
        seed: int = 0,
    ):
        c = check_array("centres", centres, ndim=1, min_size=2)
        self.centres = c
        self.sigma = check_positive("sigma", sigma)
        if weights is None:
            w = np.full(c.size, 1.0 / c.size)
        else:
            w = check_array("weights", weights, shape=c.shape)
            if np.any(w <= 0):
                raise ValueError(f"weights must be > 0 (got {w})")
            w = w / w.sum()
        self.weights = w
        self.N = check_int("N", N, 2)
        self.spread = check_positive("spread", spread, allow_zero=True)
        z = np.random.default_rng(check_int("seed", seed, 0)).standard_normal(self.N)
        z -= z.mean()
        sd = z.std()
        self.z = z * (self.spread / sd) if sd > 0 else z  # exact mean 0, exact variance s^2

    def __repr__(self) -> str:
        return (
            f"GaussianMixture1D(centres={np.round(self.centres, 3).tolist()}, "
            f"sigma={self.sigma:g}, N={self.N}, spread={self.spread:g})"
        )

    def _resp(self, x: np.ndarray) -> np.ndarray:
        # posterior weights of the modes at x (stable softmax of the log terms)
        logs = np.log(self.weights) - 0.5 * ((x[..., None] - self.centres) / self.sigma) ** 2
        logs -= logs.max(-1, keepdims=True)
        r = np.exp(logs)
        return r / r.sum(-1, keepdims=True)

    def density(self, x: Any) -> np.ndarray:
        """The target density $\\pi(x)$ (normalised on the real line)."""
        x = check_array("x", x)
        g = np.exp(-0.5 * ((x[..., None] - self.centres) / self.sigma) ** 2)
        return (g * self.weights).sum(-1) / (self.sigma * np.sqrt(2 * np.pi))

    def grad(self, x: Any) -> np.ndarray:
        """$V'(x) = \\sum_k r_k(x)(x - c_k)/\\sigma^2$ (``r_k`` the mode responsibilities)."""
        x = check_array("x", x)
        return (self._resp(x) * (x[..., None] - self.centres)).sum(-1) / self.sigma**2

    def noise_var(self, batch_size: int) -> float:
        """$\\Sigma = \\mathrm{Var}_i[V_i'] / b = s^2/b$ (constant in x)."""
        b = check_int("batch_size", batch_size, 1, self.N)
        return self.spread**2 / b


def gaussian_mixture_1d(
    separation: float = 4.0, sigma: float = 0.7, N: int = 100, spread: float = 2.0, seed: int = 0
) -> GaussianMixture1D:
    """Two equal modes at ``±separation/2`` with standard deviation ``sigma``: non-log-concave
    as soon as ``separation > 2 sigma``.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    separation = check_positive("separation", separation)
    return GaussianMixture1D((-separation / 2, separation / 2), sigma, None, N, spread, seed)
