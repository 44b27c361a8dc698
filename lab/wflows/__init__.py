r"""
# SGD and SVRG flows in Wasserstein space, and their Langevin samplers

Mingyang Yi, Bohan Wang. *Continuous-time Riemannian SGD and SVRG Flows on Wasserstein
Probabilistic Space.* NeurIPS 2025. [arXiv:2401.13530](https://arxiv.org/abs/2401.13530)

**Read this first: what is reconstructed.** Only the abstract and a summary of the rates could
be read. The SDEs below are the standard stochastic-modified-equation construction that the
abstract points to (Jordan-Kinderlehrer-Otto 1998; Li, Tai & E 2017; Welling & Teh 2011;
Dubey et al. 2016); the paper's exact definitions, constants and schedules may differ. Every
number in the chapter is measured with this module, not read from the paper.

## Problem

A finite-sum potential $V(x) = \frac1N \sum_{i=1}^N V_i(x)$ on $\mathbb{R}^d$ and its target
$\pi \propto e^{-V}$. Sampling is the minimisation of $F(\mu) = \mathrm{KL}(\mu \,\|\, \pi)$ over
probability measures with the Wasserstein-2 geometry; the Wasserstein gradient of $F$ at $\mu$
is the vector field $\nabla \log(\mu / \pi) = \nabla \log \mu + \nabla V$.

* **GD flow** (Fokker-Planck of Langevin), eq. (1):
  $\partial_t \mu = \nabla\cdot(\mu \nabla V) + \Delta \mu$; particles
  $dX = -\nabla V(X)\,dt + \sqrt2\,dW$; Euler-Maruyama = ULA, eq. (2):
  $X_{k+1} = X_k - h \nabla V(X_k) + \sqrt{2h}\,\xi_k$.
* **SGD flow** (reconstructed), eq. (3): the minibatch gradient
  $g_B(x) = \frac1b \sum_{i\in B} \nabla V_i(x)$ has covariance
  $\Sigma(x) = \mathrm{Cov}_i[\nabla V_i(x)] / b$; matching one step over time $\eta$ gives
  $dX = -\nabla V\,dt + \sqrt2\,dW + \sqrt{\eta}\,\Sigma(X)^{1/2} dB$, i.e.
  $\partial_t \mu = \nabla\cdot(\mu\nabla V) + \Delta\mu + \frac{\eta}{2}\sum_{jl}\partial_j\partial_l(\Sigma_{jl}\mu)$.
  Its discretisation with $h = \eta$ is SGLD, eq. (4):
  $X_{k+1} = X_k - h\, g_{B_k}(X_k) + \sqrt{2h}\,\xi_k$, one minibatch per particle.
* **SVRG flow** (reconstructed), eq. (5): each particle keeps a snapshot $\tilde X$ and
  $\tilde G = \nabla V(\tilde X)$, refreshed every $m$ steps; the direction
  $g(x) = g_B(x) - g_B(\tilde X) + \tilde G$ is unbiased with covariance
  $\mathrm{Cov}_i[\nabla V_i(x) - \nabla V_i(\tilde X)]/b \le L^2 \lVert x - \tilde X\rVert^2 / b$.
  Discretisation: SVRG-Langevin (SVRG-LD), eq. (6):
  $X_{k+1} = X_k - h\, g(X_k) + \sqrt{2h}\,\xi_k$.

Cost model (component-gradient evaluations per particle): ULA $N$ per step, SGLD $b$,
SVRG-LD $2b$ per step plus $N$ at each snapshot refresh.

Rates as the paper states them (reconstructed summary): SGD flow $O(1/\sqrt T)$ in relative
Fisher information (nonconvex), $O(1/T)$ in KL under a log-Sobolev inequality with a decreasing
step; SVRG flow $O(N^{2/3}/\varepsilon)$ gradient complexity (nonconvex) and exponential KL
decay under LSI.

## The chapter's target (exact, chosen by us)

Quadratic components $V_i(x) = \frac12 (x - a_i)^\top A_i (x - a_i)$ with random SPD $A_i$, so
$\pi = \mathcal N(m_*, \bar A^{-1})$ with $\bar A = \frac1N\sum A_i$,
$m_* = \bar A^{-1} \frac1N \sum A_i a_i$ (``.mean``, ``.cov``). Closed forms shipped here:
ULA's stationary covariance $(\bar A - h\bar A^2/2)^{-1}$, SGLD's exact moment recursion and
stationary covariance (a $d^2 \times d^2$ linear solve), and in 1-D with $A_i = 1$,
$\operatorname{Var}(a_i) = s^2$: SGD flow $1 + \eta s^2/(2b)$, SGLD
$(1 + h s^2/(2b)) / (1 - h/2)$.

The numpy kernels are the reference (float64, particles vectorised, one statement per
equation); ``run_sampler_torch`` is the batched torch fast path (CPU or CUDA) and agrees with
the reference to round-off when both are fed the same draws (``draw_noise``).

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "METHODS",
    "FiniteSumQuadratic",
    "SamplerDraws",
    "SamplerHistory",
    "quadratic_finite_sum",
    "shifted_quadratic_1d",
    "draw_noise",
    "ula_step",
    "sgld_step",
    "svrg_direction",
    "svrg_step",
    "step_schedule",
    "run_sampler",
    "run_sampler_torch",
    "sgd_flow_sde",
    "grad_evals_per_step",
    "fokker_planck_1d",
    "sgd_flow_density",
    "kl_gaussian",
    "w2_gaussian",
    "gaussian_fit_kl",
    "kl_grid",
    "fisher_grid",
    "ula_stationary_cov",
    "sgld_stationary_cov",
    "sgld_stationary_var_1d",
    "sgd_flow_stationary_var_1d",
    "sgld_moments",
    "empirical_w2",
    "fit_log_slope",
]

NB1 = "book/wflows/01-three-samplers.ipynb"
NB2 = "book/wflows/02-rates-and-variance.ipynb"

METHODS = ("langevin", "sgld", "svrg")


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


def _check_potential(potential: Any) -> FiniteSumQuadratic:
    if not isinstance(potential, FiniteSumQuadratic):
        raise TypeError(
            "potential must be a FiniteSumQuadratic (from quadratic_finite_sum or "
            f"shifted_quadratic_1d) (got {type(potential).__name__})"
        )
    return potential


def _check_particles(X0: Any, d: int, name: str = "X0") -> np.ndarray:
    X0 = check_array(name, X0, ndim=2, min_size=1)
    if X0.shape[1] != d:
        raise ValueError(f"{name} must have shape (P, {d}) to match the potential (got {X0.shape})")
    return X0


# ---------------------------------------------------------------------------------------------
# One step of each sampler (reference kernels)
# ---------------------------------------------------------------------------------------------


def ula_step(X: np.ndarray, potential: FiniteSumQuadratic, h: float, xi: np.ndarray) -> np.ndarray:
    r"""One ULA step, eq. (2): $X - h\nabla V(X) + \sqrt{2h}\,\xi$ (``xi`` standard normal).

    See: book/wflows/01-three-samplers.ipynb
    """
    return X - h * potential.grad(X) + math.sqrt(2 * h) * xi  # eq. (2)


def sgld_step(
    X: np.ndarray, potential: FiniteSumQuadratic, h: float, idx: np.ndarray, xi: np.ndarray
) -> np.ndarray:
    r"""One SGLD step, eq. (4): $X - h\,g_B(X) + \sqrt{2h}\,\xi$, minibatch ``idx[p]`` for
    particle ``p`` (independent minibatches per particle: the cloud then follows the SGD flow).

    See: book/wflows/01-three-samplers.ipynb
    """
    return X - h * potential.grad_batch(X, idx) + math.sqrt(2 * h) * xi  # eq. (4)


def svrg_direction(
    X: np.ndarray, Xs: np.ndarray, Gs: np.ndarray, potential: FiniteSumQuadratic, idx: np.ndarray
) -> np.ndarray:
    r"""The SVRG direction, eq. (5): $g_B(X) - g_B(\tilde X) + \tilde G$, per particle.

    Unbiased for $\nabla V(X)$ over the draw of ``idx``; exact when all ``A_i`` are equal.

    See: book/wflows/01-three-samplers.ipynb
    """
    return potential.grad_batch(X, idx) - potential.grad_batch(Xs, idx) + Gs  # eq. (5)


def svrg_step(
    X: np.ndarray,
    Xs: np.ndarray,
    Gs: np.ndarray,
    potential: FiniteSumQuadratic,
    h: float,
    idx: np.ndarray,
    xi: np.ndarray,
) -> np.ndarray:
    r"""One SVRG-LD step, eq. (6): $X - h\,(g_B(X) - g_B(\tilde X) + \tilde G) + \sqrt{2h}\,\xi$.

    See: book/wflows/01-three-samplers.ipynb
    """
    return X - h * svrg_direction(X, Xs, Gs, potential, idx) + math.sqrt(2 * h) * xi  # eq. (6)


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


class SamplerDraws(NamedTuple):
    """Pre-drawn randomness: ``indices`` (steps, P, b) and ``normals`` (steps, P, d).

    See: book/wflows/01-three-samplers.ipynb
    """

    indices: np.ndarray
    normals: np.ndarray


def draw_noise(
    steps: int, P: int, d: int, N: int, batch_size: int = 1, seed: int = 0
) -> SamplerDraws:
    """Draw all minibatch indices and Gaussian increments of a run in advance.

    Passing the same draws to ``run_sampler`` and ``run_sampler_torch`` makes them follow the
    same path (the cross-check of the fast path). Memory: ``steps * P * (b + d)`` numbers.

    See: book/wflows/01-three-samplers.ipynb
    """
    steps = check_int("steps", steps, 1)
    P = check_int("P", P, 1)
    d = check_int("d", d, 1)
    N = check_int("N", N, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**32 - 1))
    return SamplerDraws(
        rng.integers(0, N, size=(steps, P, batch_size)), rng.standard_normal((steps, P, d))
    )


@dataclass
class SamplerHistory:
    """What ``run_sampler`` records.

    Attributes
    ----------
    method : str
    X : ndarray (P, d)
        The final particles.
    step : ndarray (R,)
        Recorded step indices (0 = the start).
    time : ndarray (R,)
        Flow time ``t = sum of step sizes`` at the recorded steps.
    grad_evals : ndarray (R,)
        Component-gradient evaluations per particle up to each recorded step.
    mean, cov : ndarray (R, d), (R, d, d)
        Empirical moments of the cloud.
    kl, w2 : ndarray (R,)
        Gaussian-fit ``KL(N(mean, cov) || pi)`` and ``W2(N(mean, cov), pi)``.
    particles : ndarray (R, K, d)
        The first ``K`` particles at each recorded step (for plots and animations).
    batch_size, epoch_length : int or None
    seconds : float
        Wall time of the run.

    See: book/wflows/01-three-samplers.ipynb
    """

    method: str
    X: np.ndarray
    step: np.ndarray
    time: np.ndarray
    grad_evals: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    kl: np.ndarray
    w2: np.ndarray
    particles: np.ndarray
    batch_size: int | None = None
    epoch_length: int | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def at_budget(self, evals: float) -> int:
        """Index of the last record whose gradient count is ``<= evals`` (0 if none)."""
        return max(int(np.searchsorted(self.grad_evals, evals, side="right")) - 1, 0)


def grad_evals_per_step(
    method: str, N: int, batch_size: int | None = None, epoch_length: int | None = None
) -> float:
    """Amortised component-gradient evaluations per particle and step: ULA ``N``, SGLD ``b``,
    SVRG-LD ``2b + N/m``.

    See: book/wflows/01-three-samplers.ipynb
    """
    method = check_choice("method", method, METHODS)
    if method == "langevin":
        return float(N)
    if method == "sgld":
        return float(batch_size)
    return 2.0 * batch_size + N / epoch_length


def step_schedule(h0: float, steps: int, k0: float = 100.0, power: float = 1.0) -> np.ndarray:
    r"""Decreasing steps $h_k = h_0 / (1 + k/k_0)^{p}$, $k = 0..steps-1$ ($p = 1$ under LSI,
    $p = 1/2$ for the nonconvex rate).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    h0 = check_positive("h0", h0)
    steps = check_int("steps", steps, 1)
    k0 = check_positive("k0", k0)
    power = check_range("power", power, 0.0, 2.0)
    return h0 / (1.0 + np.arange(steps) / k0) ** power


def _validate_run(method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws):
    method = check_choice("method", method, METHODS)
    potential = _check_potential(potential)
    X0 = _check_particles(X0, potential.d)
    steps = check_int("steps", steps, 1, 100_000_000)
    if np.ndim(step_size) == 0:
        h = np.full(steps, check_positive("step_size", step_size))
    else:
        h = check_array("step_size", step_size, shape=(steps,))
        if h.min() <= 0:
            raise ValueError(f"step_size must be > 0 at every step (got min {h.min():g})")
    if h.max() * potential.L >= 2.0:
        raise ValueError(
            f"step_size must be < 2/L = {2 / potential.L:.4g} for this potential "
            f"(got {h.max():g}); larger steps diverge"
        )
    if method == "langevin":
        if batch_size is not None or epoch_length is not None:
            raise ValueError("batch_size and epoch_length must be None for method='langevin'")
        b = m = None
    else:
        if batch_size is None:
            raise ValueError(f"batch_size is required for method={method!r} (an int in [1, N])")
        b = check_int("batch_size", batch_size, 1, potential.N)
        if method == "svrg":
            if epoch_length is None:
                raise ValueError("epoch_length is required for method='svrg' (an int >= 1)")
            m = check_int("epoch_length", epoch_length, 1)
        else:
            if epoch_length is not None:
                raise ValueError("epoch_length must be None for method='sgld'")
            m = None
    seed = check_int("seed", seed, 0, 2**32 - 1)
    if draws is not None:
        P, d = X0.shape
        if not isinstance(draws, SamplerDraws):
            raise TypeError(f"draws must be a SamplerDraws (got {type(draws).__name__})")
        if draws.normals.shape != (steps, P, d):
            raise ValueError(
                f"draws.normals must have shape {(steps, P, d)} (got {draws.normals.shape})"
            )
        if method != "langevin" and draws.indices.shape != (steps, P, b):
            raise ValueError(
                f"draws.indices must have shape {(steps, P, b)} (got {draws.indices.shape})"
            )
    return method, potential, X0, h, steps, b, m, seed


def _record_steps(steps: int, record_every: int | None) -> np.ndarray:
    if record_every is None:
        record_every = max(1, steps // 100)
    record_every = check_int("record_every", record_every, 1)
    rec = np.arange(0, steps + 1, record_every)
    return rec if rec[-1] == steps else np.append(rec, steps)


def _history(method, potential, X, rec, h, b, m, moments, parts, seconds) -> SamplerHistory:
    N = potential.N
    time = np.concatenate([[0.0], np.cumsum(h)])[rec]
    if method == "langevin":
        evals = N * rec.astype(float)
    elif method == "sgld":
        evals = b * rec.astype(float)
    else:  # snapshots at steps 0, m, 2m, ... (each costs N), plus 2b per step
        evals = 2.0 * b * rec + N * np.ceil(rec / m)
    means = np.array([mm for mm, _ in moments])
    covs = np.array([cc for _, cc in moments])
    kl = np.array([kl_gaussian(mm, cc, potential.mean, potential.cov) for mm, cc in moments])
    w2 = np.array([w2_gaussian(mm, cc, potential.mean, potential.cov) for mm, cc in moments])
    return SamplerHistory(
        method=method,
        X=X,
        step=rec,
        time=time,
        grad_evals=evals,
        mean=means,
        cov=covs,
        kl=kl,
        w2=w2,
        particles=np.array(parts),
        batch_size=b,
        epoch_length=m,
        seconds=seconds,
    )


def _moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(0)
    D = X - mean
    return mean, D.T @ D / max(X.shape[0] - 1, 1)


def run_sampler(
    method: str,
    potential: FiniteSumQuadratic,
    X0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
    epoch_length: int | None = None,
    seed: int = 0,
    *,
    record_every: int | None = None,
    keep: int = 300,
    draws: SamplerDraws | None = None,
) -> SamplerHistory:
    r"""Run ULA (``"langevin"``), SGLD (``"sgld"``) or SVRG-LD (``"svrg"``) on a cloud of
    particles (numpy reference, float64).

    Parameters
    ----------
    method : {"langevin", "sgld", "svrg"}
        Discretisation of the GD flow (eq. 2), the SGD flow (eq. 4) or the SVRG flow (eq. 6).
    potential : FiniteSumQuadratic
    X0 : array (P, d)
        Initial particles.
    step_size : float or array of shape (steps,)
        Step ``h`` (a schedule when an array); must be below ``2 / potential.L``.
    steps : int
        Number of steps.
    batch_size : int, optional
        Minibatch size ``b`` in ``[1, N]`` (SGLD and SVRG-LD; drawn with replacement,
        independently for every particle and step).
    epoch_length : int, optional
        SVRG snapshot period ``m`` in steps (SVRG-LD only).
    seed : int
        Seed of the numpy generator (ignored when ``draws`` is given).
    record_every : int, optional
        Record moments every this many steps (default ``steps // 100``); the last step is
        always recorded.
    keep : int
        Number of particles stored at each record (``history.particles``).
    draws : SamplerDraws, optional
        Pre-drawn indices and normals (see ``draw_noise``), for cross-checks.

    Returns
    -------
    SamplerHistory
        ``.X`` final particles; ``.grad_evals`` component-gradient evaluations per particle
        (ULA ``N`` per step, SGLD ``b``, SVRG-LD ``2b`` plus ``N`` per snapshot); ``.kl``,
        ``.w2`` Gaussian-fit distances to the target.

    Raises
    ------
    ValueError
        On bad arguments, or if the particles stop being finite (the step index is named).

    See: book/wflows/01-three-samplers.ipynb
    """
    import time as _time

    method, potential, X, h, steps, b, m, seed = _validate_run(
        method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws
    )
    keep = check_int("keep", keep, 0)
    rec = _record_steps(steps, record_every)
    rec_set = set(rec.tolist())
    rng = np.random.default_rng(seed)
    P, d = X.shape
    N = potential.N
    X = X.copy()
    Xs = Gs = None
    moments, parts = [_moments(X)], [X[:keep].copy()]
    t0 = _time.perf_counter()
    for k in range(steps):
        if draws is not None:
            idx = draws.indices[k] if method != "langevin" else None
            xi = draws.normals[k]
        else:
            idx = rng.integers(0, N, size=(P, b)) if method != "langevin" else None
            xi = rng.standard_normal((P, d))
        if method == "langevin":
            X = ula_step(X, potential, h[k], xi)  # eq. (2)
        elif method == "sgld":
            X = sgld_step(X, potential, h[k], idx, xi)  # eq. (4)
        else:
            if k % m == 0:  # snapshot refresh: every particle stores X~ and grad V(X~)
                Xs, Gs = X.copy(), potential.grad(X)
            X = svrg_step(X, Xs, Gs, potential, h[k], idx, xi)  # eq. (6)
        if k + 1 in rec_set:
            if not np.all(np.isfinite(X)):
                raise ValueError(f"particles became non-finite by step {k + 1} of {method}")
            moments.append(_moments(X))
            parts.append(X[:keep].copy())
    seconds = _time.perf_counter() - t0
    return _history(method, potential, X, rec, h, b, m, moments, parts, seconds)


def run_sampler_torch(
    method: str,
    potential: FiniteSumQuadratic,
    X0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
    epoch_length: int | None = None,
    seed: int = 0,
    *,
    record_every: int | None = None,
    keep: int = 300,
    draws: SamplerDraws | None = None,
    device: Any = None,
    dtype: Any = None,
) -> SamplerHistory:
    """Batched torch fast path of ``run_sampler`` (same arguments, CPU or CUDA).

    Each step gathers the per-particle minibatch curvatures ``A[idx]`` (P, b, d, d) on the
    device. ``device=None`` follows ``X0`` when it is a tensor, else ``lab.device()``;
    ``dtype`` defaults to float64. With ``draws`` the run follows the reference path exactly
    (agreement to round-off); without, it uses a seeded ``torch.Generator`` (a different
    stream from numpy's).

    See: book/wflows/01-three-samplers.ipynb
    """
    import time as _time

    import torch

    from ..core.runtime import device as _device

    if device is None:
        device = X0.device if isinstance(X0, torch.Tensor) else _device()
    device = torch.device(device)
    dtype = torch.float64 if dtype is None else dtype
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64 (got {dtype})")
    method, potential, X_np, h, steps, b, m, seed = _validate_run(
        method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws
    )
    keep = check_int("keep", keep, 0)
    rec = _record_steps(steps, record_every)
    rec_set = set(rec.tolist())
    P, d = X_np.shape
    N = potential.N
    A = torch.as_tensor(potential.A, dtype=dtype, device=device)
    c = torch.as_tensor(potential.c, dtype=dtype, device=device)
    Abar = torch.as_tensor(potential.Abar, dtype=dtype, device=device)
    cbar = torch.as_tensor(potential.cbar, dtype=dtype, device=device)
    X = torch.as_tensor(X_np, dtype=dtype, device=device).clone()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    sq = torch.as_tensor(np.sqrt(2 * h), dtype=dtype)
    hh = torch.as_tensor(h, dtype=dtype)

    def to_np(T):
        return T.detach().to("cpu", torch.float64).numpy()

    def batch_grad(Y, A_B, c_B):
        return torch.einsum("pij,pj->pi", A_B, Y) - c_B

    Xs = Gs = None
    moments, parts = [_moments(to_np(X))], [to_np(X[:keep])]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = _time.perf_counter()
    for k in range(steps):
        if draws is not None:
            xi = torch.as_tensor(draws.normals[k], dtype=dtype, device=device)
            if method != "langevin":
                idx = torch.as_tensor(draws.indices[k], device=device)
        else:
            xi = torch.randn(P, d, generator=gen, dtype=dtype, device=device)
            if method != "langevin":
                idx = torch.randint(0, N, (P, b), generator=gen, device=device)
        if method == "langevin":
            g = X @ Abar.T - cbar
        else:
            A_B = A[idx].mean(1)  # (P, d, d)
            c_B = c[idx].mean(1)
            if method == "sgld":
                g = batch_grad(X, A_B, c_B)
            else:
                if k % m == 0:
                    Xs, Gs = X.clone(), X @ Abar.T - cbar
                # g_B(X) - g_B(X~) + G~ = A_B (X - X~) + G~ (the c_B terms cancel)
                g = torch.einsum("pij,pj->pi", A_B, X - Xs) + Gs
        X = X - hh[k].item() * g + sq[k].item() * xi
        if k + 1 in rec_set:
            Xn = to_np(X)
            if not np.all(np.isfinite(Xn)):
                raise ValueError(f"particles became non-finite by step {k + 1} of {method}")
            moments.append(_moments(Xn))
            parts.append(Xn[:keep].copy())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = _time.perf_counter() - t0
    hist = _history(method, potential, to_np(X), rec, h, b, m, moments, parts, seconds)
    hist.extra["device"] = str(device)
    return hist


def sgd_flow_sde(
    potential: FiniteSumQuadratic,
    X0: Any,
    eta: float,
    batch_size: int,
    t_end: float,
    dt: float,
    seed: int = 0,
) -> np.ndarray:
    r"""Euler-Maruyama of the SGD-flow SDE (eq. 3) with its noise written out:
    $dX = -\nabla V\,dt + \sqrt2\,dW + \sqrt{\eta}\,\Sigma(X)^{1/2} dB$,
    $\Sigma(x) = \mathrm{Cov}_i[\nabla V_i(x)]/b$.

    Reference only: $\Sigma$ is built from all $N$ component gradients (O(N) per particle and
    step). With ``dt`` much smaller than ``eta`` it approximates the flow itself, which SGLD
    with step ``h = eta`` discretises. Returns the particles at ``t_end``.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = _check_potential(potential)
    X = _check_particles(X0, potential.d).copy()
    eta = check_positive("eta", eta, allow_zero=True)
    b = check_int("batch_size", batch_size, 1, potential.N)
    t_end = check_positive("t_end", t_end)
    dt = check_positive("dt", dt)
    if dt * potential.L >= 1.0:
        raise ValueError(f"dt must be < 1/L = {1 / potential.L:.4g} (got {dt:g})")
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**32 - 1))
    P, d = X.shape
    for _ in range(int(math.ceil(t_end / dt))):
        Sig = potential.noise_cov(X, b)  # (P, d, d)
        w, U = np.linalg.eigh(Sig)
        root = np.einsum("pij,pj,pkj->pik", U, np.sqrt(np.clip(w, 0.0, None)), U)  # Sigma^1/2
        dW = rng.standard_normal((P, d))
        dB = rng.standard_normal((P, d))
        X = (
            X
            - dt * potential.grad(X)  # drift -grad V
            + math.sqrt(2 * dt) * dW  # Brownian part (replaces -grad log mu)
            + math.sqrt(eta * dt) * np.einsum("pij,pj->pi", root, dB)  # eq. (3): minibatch noise
        )
    return X


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
    potential = _check_potential(potential)
    X = _check_particles(X, potential.d, "X")
    mean, cov = _moments(X)
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
    M = ot.dist(X, Y)  # squared Euclidean
    return float(math.sqrt(max(ot.emd2(ot.unif(len(X)), ot.unif(len(Y)), M), 0.0)))


# ---------------------------------------------------------------------------------------------
# Closed forms and exact moment recursions for quadratic targets
# ---------------------------------------------------------------------------------------------


def ula_stationary_cov(Abar: Any, h: float) -> np.ndarray:
    r"""Stationary covariance of ULA on a quadratic $V$: $(\bar A - h \bar A^2/2)^{-1}$.

    (From $S = (I - h\bar A) S (I - h\bar A) + 2h I$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    Abar = np.atleast_2d(check_array("Abar", Abar))
    h = check_positive("h", h)
    return np.linalg.inv(Abar - 0.5 * h * Abar @ Abar)


def sgd_flow_stationary_var_1d(eta: float, s: float, batch_size: int) -> float:
    r"""SGD flow on ``shifted_quadratic_1d``: stationary variance $1 + \eta s^2 / (2b)$.

    (Constant diffusion $D = 1 + \frac{\eta}{2} s^2/b$, drift $-x$: $\mu_\infty = \mathcal N(0, D)$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    eta = check_positive("eta", eta, allow_zero=True)
    s = check_positive("s", s, allow_zero=True)
    b = check_int("batch_size", batch_size, 1)
    return 1.0 + eta * s * s / (2 * b)


def sgld_stationary_var_1d(h: float, s: float, batch_size: int) -> float:
    r"""SGLD on ``shifted_quadratic_1d``: stationary variance $(1 + h s^2/(2b)) / (1 - h/2)$.

    (From $v = (1-h)^2 v + h^2 s^2 / b + 2h$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    h = check_range("h", h, 0.0, 2.0, low_inclusive=False, high_inclusive=False)
    s = check_positive("s", s, allow_zero=True)
    b = check_int("batch_size", batch_size, 1)
    return (1.0 + h * s * s / (2 * b)) / (1.0 - h / 2)


def sgld_moments(
    potential: FiniteSumQuadratic,
    mean0: Any,
    cov0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact mean and covariance of the SGLD (or, with ``batch_size=None``, ULA) law on a
    quadratic finite sum, by the moment recursion of eq. (4) (no particles, no sampling error).

    With $X' = (I - hA_B)X + h c_B + \sqrt{2h}\xi$ and $Q = E[XX^\top]$:
    $Q' = E[(I-hA_B)Q(I-hA_B)] + h E[(I-hA_B)\mu c_B^\top] + h E[c_B\mu^\top(I-hA_B)]
    + h^2 E[c_B c_B^\top] + 2hI$, where for minibatch means with replacement
    $E[f_B g_B^\top] = \bar f \bar g^\top + (E_i[f_i g_i^\top] - \bar f\bar g^\top)/b$.

    Returns
    -------
    means : ndarray (steps + 1, d)
    covs : ndarray (steps + 1, d, d)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = _check_potential(potential)
    d = potential.d
    mu = np.atleast_1d(check_array("mean0", mean0)).reshape(d)
    S = np.atleast_2d(check_array("cov0", cov0)).reshape(d, d)
    steps = check_int("steps", steps, 1, 10_000_000)
    if np.ndim(step_size) == 0:
        h = np.full(steps, check_positive("step_size", step_size))
    else:
        h = check_array("step_size", step_size, shape=(steps,))
    inv_b = 0.0 if batch_size is None else 1.0 / check_int("batch_size", batch_size, 1, None)
    A, c, Abar, cbar = potential.A, potential.c, potential.Abar, potential.cbar
    N = potential.N
    I = np.eye(d)
    Ecc = cbar[:, None] * cbar[None] + inv_b * (c.T @ c / N - np.outer(cbar, cbar))
    # precomputed averages: E_i[A_i kron A_i] (acts on vec Q) and E_i[A_i[j, l] c_i[k]]
    EAA = np.einsum("nij,nkl->ikjl", A, A).reshape(d * d, d * d) / N
    EAc = np.einsum("njl,nk->jlk", A, c) / N
    means, covs = [mu.copy()], [S.copy()]
    Q = S + np.outer(mu, mu)
    for k in range(steps):
        hk = h[k]
        # E[A_B Q A_B] and E[A_B mu c_B^T] for minibatch means with replacement
        AQA = Abar @ Q @ Abar
        EAQA = AQA + inv_b * ((EAA @ Q.reshape(-1)).reshape(d, d) - AQA)
        Amc = np.outer(Abar @ mu, cbar)
        EAmc = Amc + inv_b * (np.einsum("jlk,l->jk", EAc, mu) - Amc)
        cross = np.outer(mu, cbar) - hk * EAmc  # E[(I - h A_B) mu c_B^T]
        Q = Q - hk * (Abar @ Q + Q @ Abar) + hk**2 * EAQA  # E[(I-hA_B) Q (I-hA_B)]
        Q = Q + hk * (cross + cross.T) + hk**2 * Ecc + 2 * hk * I
        mu = mu - hk * (Abar @ mu - cbar)  # eq. (4) in mean: E[g_B] = grad V
        means.append(mu.copy())
        covs.append(Q - np.outer(mu, mu))
    return np.array(means), np.array(covs)


def sgld_stationary_cov(
    potential: FiniteSumQuadratic, h: float, batch_size: int | None = None
) -> np.ndarray:
    r"""Exact stationary covariance of SGLD (ULA with ``batch_size=None``) on a quadratic
    finite sum. The stationary mean is the target mean $m_*$ (SGLD is unbiased in the mean
    here); with $e_i = \nabla V_i(m_*)$ and $C = \mathrm{Cov}_i(e_i)$ the covariance solves
    $h(\bar A S + S\bar A) - h^2 E[A_B S A_B] = h^2 C/b + 2h I$, a $d^2 \times d^2$ linear
    system. In 1-D with $A_i = 1$ it is $(1 + h s^2/(2b))/(1 - h/2)$.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = _check_potential(potential)
    h = check_positive("h", h)
    if h * potential.L >= 2.0:
        raise ValueError(f"h must be < 2/L = {2 / potential.L:.4g} (got {h:g})")
    inv_b = 0.0 if batch_size is None else 1.0 / check_int("batch_size", batch_size, 1, None)
    A, Abar, d, N = potential.A, potential.Abar, potential.d, potential.N
    I = np.eye(d)
    e = potential.grad_components(potential.mean[None])[0]  # (N, d), mean zero
    C = e.T @ e / N
    # vec(A S B) = (B^T kron A) vec(S); A_i symmetric
    EAA = np.einsum("nij,nkl->ikjl", A, A).reshape(d * d, d * d) / N
    AA = np.kron(Abar, Abar)
    lhs = h * (np.kron(I, Abar) + np.kron(Abar, I)) - h * h * (AA + inv_b * (EAA - AA))
    rhs = (h * h * inv_b * C + 2 * h * I).reshape(-1)
    S = np.linalg.solve(lhs, rhs).reshape(d, d)
    return 0.5 * (S + S.T)


def fit_log_slope(x: Any, y: Any, *, loglog: bool = False) -> float:
    """Least-squares slope of ``log y`` against ``x`` (or ``log x`` with ``loglog``).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    x = check_array("x", x, ndim=1, min_size=2)
    y = check_array("y", y, shape=(x.shape[0],))
    if np.any(y <= 0) or (loglog and np.any(x <= 0)):
        raise ValueError("y (and x with loglog) must be > 0 to take logs")
    xx = np.log(x) if loglog else x
    return float(np.polyfit(xx, np.log(y), 1)[0])


# ---------------------------------------------------------------------------------------------
# The 1-D Fokker-Planck flow
# ---------------------------------------------------------------------------------------------


def _on_grid(name: str, f: Any, x: np.ndarray) -> np.ndarray:
    vals = f(x) if callable(f) else f
    vals = np.broadcast_to(check_array(name, vals), x.shape).astype(float)
    return vals


def fokker_planck_1d(
    Vprime: Any,
    D: Any,
    x_grid: Any,
    mu0: Any,
    t_grid: Any,
    *,
    dt: float = 5e-3,
) -> np.ndarray:
    r"""Solve $\partial_t \mu = \partial_x(\mu V') + \partial_x^2(D\mu)$ on a uniform grid
    (conservative finite volumes, zero-flux boundaries, backward Euler).

    The flux through the face between cells $j$ and $j+1$ is
    $J_{j+\frac12} = -V'_{j+\frac12}\frac{\mu_j+\mu_{j+1}}{2} - \frac{D_{j+1}\mu_{j+1} - D_j\mu_j}{\Delta x}$
    and $\partial_t\mu_j = -(J_{j+\frac12} - J_{j-\frac12})/\Delta x$, so total mass is
    conserved exactly. With $D = 1$ this is the GD flow (eq. 1); with
    $D = 1 + \frac{\eta}{2}\Sigma(x)$ the SGD flow (eq. 3).

    Parameters
    ----------
    Vprime, D : callable or array
        Drift potential derivative and diffusion coefficient at the cell centres (``D > 0``).
    x_grid : array (n,)
        Uniformly spaced cell centres, ``n >= 3``.
    mu0 : array (n,)
        Initial density (normalised to mass one on the grid).
    t_grid : array (T,)
        Increasing output times starting at 0 or later.
    dt : float
        Largest internal time step.

    Returns
    -------
    ndarray (T, n)
        Densities at the output times.

    See: book/wflows/01-three-samplers.ipynb
    """
    from scipy.linalg import solve_banded

    x = check_array("x_grid", x_grid, ndim=1, min_size=3)
    dx = x[1] - x[0]
    if dx <= 0 or not np.allclose(np.diff(x), dx, rtol=1e-8, atol=0):
        raise ValueError("x_grid must be increasing and uniformly spaced")
    n = x.size
    vp = _on_grid("Vprime", Vprime, x)
    Dv = _on_grid("D", D, x)
    if Dv.min() <= 0:
        raise ValueError(f"D must be > 0 on the grid (got min {Dv.min():g})")
    mu = check_array("mu0", mu0, shape=(n,)).copy()
    if mu.min() < 0 or mu.sum() <= 0:
        raise ValueError("mu0 must be nonnegative with positive mass")
    mu /= mu.sum() * dx
    t = check_array("t_grid", t_grid, ndim=1, min_size=1)
    if t[0] < 0 or np.any(np.diff(t) < 0):
        raise ValueError("t_grid must be nonnegative and nondecreasing")
    dt = check_positive("dt", dt)
    vf = 0.5 * (vp[:-1] + vp[1:])  # V' at the faces
    # flux J_{j+1/2} = a_j mu_j + c_j mu_{j+1}; d mu_j/dt = -(J_{j+1/2} - J_{j-1/2}) / dx
    a = -0.5 * vf + Dv[:-1] / dx
    c = -0.5 * vf - Dv[1:] / dx

    def operator_bands(tau: float) -> np.ndarray:
        # (I - tau * Lop) in banded form, Lop mu_j = -(J_{j+1/2} - J_{j-1/2}) / dx
        ab = np.zeros((3, n))
        diag = np.ones(n)
        diag[:-1] += tau * a / dx  # -(-a_j mu_j)... contribution of J_{j+1/2} to cell j
        diag[1:] -= tau * c / dx  # contribution of J_{j-1/2} to cell j
        ab[1] = diag
        ab[0, 1:] = tau * c / dx  # coefficient of mu_{j+1} in row j
        ab[2, :-1] = -tau * a / dx  # coefficient of mu_{j-1} in row j
        return ab

    out = np.empty((t.size, n))
    now = 0.0
    cache: dict[float, np.ndarray] = {}
    for i, target in enumerate(t):
        while now < target - 1e-14:
            tau = min(dt, target - now)
            key = round(tau, 14)
            if key not in cache:
                cache[key] = operator_bands(tau)
            mu = solve_banded((1, 1), cache[key], mu)
            now += tau
        out[i] = mu
    return out


def sgd_flow_density(
    potential: FiniteSumQuadratic,
    eta: float,
    batch_size: int,
    x_grid: Any,
    mu0: Any,
    t_grid: Any,
    *,
    dt: float = 5e-3,
) -> np.ndarray:
    r"""The SGD flow (eq. 3) of a 1-D finite sum: ``fokker_planck_1d`` with $V'$ of the
    potential and $D(x) = 1 + \frac{\eta}{2}\Sigma(x)$, $\Sigma(x) = \mathrm{Var}_i[V_i'(x)]/b$.
    ``eta = 0`` is the GD flow.

    See: book/wflows/01-three-samplers.ipynb
    """
    potential = _check_potential(potential)
    if potential.d != 1:
        raise ValueError(f"potential must be 1-D for sgd_flow_density (got d={potential.d})")
    eta = check_positive("eta", eta, allow_zero=True)
    b = check_int("batch_size", batch_size, 1, potential.N)
    x = check_array("x_grid", x_grid, ndim=1, min_size=3)
    vp = potential.grad(x[:, None])[:, 0]
    sigma = potential.noise_cov(x[:, None], b)[:, 0, 0]
    return fokker_planck_1d(vp, 1.0 + 0.5 * eta * sigma, x, mu0, t_grid, dt=dt)


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
