"""Drivers of the chapter's notebooks, returning small result dataclasses.

See: book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.rates import power_law_fit
from lab.wflows.distances import fisher_grid, kl_grid
from lab.wflows.flows import fokker_planck_1d, sgd_flow_density
from lab.wflows.reference import run_sampler
from lab.wflows.targets import (
    GaussianMixture1D,
    gaussian_mixture_1d,
    quadratic_finite_sum,
    shifted_quadratic_1d,
)

__all__ = ["FisherRate", "fisher_rate_1d", "flow_1d_data"]


@dataclass
class FisherRate:
    """The SGD flow's time-averaged relative Fisher information against the horizon ``T``.

    Attributes
    ----------
    horizons : ndarray (K,)
        The horizons ``T``.
    eta : ndarray (K,)
        The step of the SGD flow at each horizon, ``eta0 / sqrt(T)``.
    mean_fisher : ndarray (K,)
        ``(1/T) int_0^T I(mu_t || pi) dt`` (trapezoid rule on the output times).
    min_fisher : ndarray (K,)
        ``min_{t <= T} I(mu_t || pi)``.
    final_kl : ndarray (K,)
        ``KL(mu_T || pi)``.
    exponent : float
        Log-log slope of ``mean_fisher`` against ``T`` (``lab.core.rates.power_law_fit``).
    curves : dict
        ``T -> (t, I(mu_t || pi))`` for plotting.
    """

    horizons: np.ndarray
    eta: np.ndarray
    mean_fisher: np.ndarray
    min_fisher: np.ndarray
    final_kl: np.ndarray
    exponent: float
    target: GaussianMixture1D
    curves: dict = field(default_factory=dict, repr=False)


def fisher_rate_1d(
    target: GaussianMixture1D | None = None,
    horizons: Any = (4.0, 8.0, 16.0, 32.0, 64.0),
    *,
    eta0: float = 1.0,
    eta_power: float = 0.5,
    batch_size: int = 1,
    start: float = 3.5,
    start_sd: float = 0.3,
    x_max: float = 8.0,
    n_grid: int = 641,
    dt: float = 0.01,
    outputs_per_unit: int = 8,
) -> FisherRate:
    r"""The nonconvex rate of the SGD flow, by the 1-D PDE: for each horizon ``T`` run the SGD
    flow (eq. 3) with the step ``eta = eta0 / T^eta_power`` (``eta_power = 1/2``: the schedule
    of the $O(1/\sqrt T)$ bound; 0: a fixed step, the rival) from $\mathcal N(\text{start}, \text{start\_sd}^2)$ towards a Gaussian-mixture
    target, and average the relative Fisher information $I(\mu_t\|\pi)$ over $[0, T]$.

    With the constant minibatch noise of :class:`GaussianMixture1D` the SGD flow is the
    Fokker-Planck equation with $D = 1 + \frac{\eta}{2} s^2/b$ (``fokker_planck_1d``).

    Parameters
    ----------
    target : GaussianMixture1D, optional
        Defaults to ``gaussian_mixture_1d()`` (modes at ±2, sigma 0.7, s = 2).
    horizons : sequence of float
        At least two increasing horizons ``T > 0``.
    eta0, batch_size : float, int
        Step constant and minibatch size.
    eta_power : float
        Exponent of the step schedule in ``[0, 1]`` (default 1/2).
    start, start_sd : float
        The initial Gaussian.
    x_max, n_grid, dt : float, int, float
        Grid ``[-x_max, x_max]`` with ``n_grid`` cells; largest PDE time step.
    outputs_per_unit : int
        Output times per unit of flow time (for the time average).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    if target is None:
        target = gaussian_mixture_1d()
    if not isinstance(target, GaussianMixture1D):
        raise TypeError(f"target must be a GaussianMixture1D (got {type(target).__name__})")
    T = check_array("horizons", horizons, ndim=1, min_size=2)
    if np.any(T <= 0) or np.any(np.diff(T) <= 0):
        raise ValueError(f"horizons must be positive and increasing (got {T})")
    eta0 = check_positive("eta0", eta0)
    eta_power = check_range("eta_power", eta_power, 0.0, 1.0)
    b = check_int("batch_size", batch_size, 1, target.N)
    start = float(check_array("start", start, ndim=0))
    start_sd = check_positive("start_sd", start_sd)
    x_max = check_positive("x_max", x_max)
    n = check_int("n_grid", n_grid, 21)
    dt = check_positive("dt", dt)
    k = check_int("outputs_per_unit", outputs_per_unit, 1)

    x = np.linspace(-x_max, x_max, n)
    dx = x[1] - x[0]
    pi = target.density(x)
    mu0 = np.exp(-0.5 * ((x - start) / start_sd) ** 2)
    vp = target.grad(x)
    etas, mean_I, min_I, kls, curves = [], [], [], [], {}
    for horizon in T:
        eta = eta0 / horizon**eta_power
        D = 1.0 + 0.5 * eta * target.noise_var(b)  # eq. (3) with Sigma = s^2 / b
        t = np.linspace(0.0, horizon, int(np.ceil(k * horizon)) + 1)
        mus = fokker_planck_1d(vp, D, x, mu0, t, dt=dt)
        info = np.array([fisher_grid(mu, pi, dx) for mu in mus])
        etas.append(eta)
        mean_I.append(np.trapezoid(info, t) / horizon)
        min_I.append(info.min())
        kls.append(kl_grid(mus[-1], pi, dx))
        curves[float(horizon)] = (t, info)
    mean_I = np.array(mean_I)
    fit = power_law_fit(T, mean_I, nonpositive="raise")
    return FisherRate(
        horizons=T,
        eta=np.array(etas),
        mean_fisher=mean_I,
        min_fisher=np.array(min_I),
        final_kl=np.array(kls),
        exponent=float(fit.exponent),
        target=target,
        curves=curves,
    )


@memo(maxsize=16)
def flow_1d_data(
    eta: float = 0.1,
    batch_size: int = 1,
    particles: int = 20_000,
    t_end: float = 3.0,
    frames: int = 31,
    seed: int = 0,
):
    """The 1-D demo: the GD flow and the SGD flow (eq. 3) solved on a grid, and ULA / SGLD
    particles with step ``h = eta``, at ``frames`` times in ``[0, t_end]``.

    Target: ``quadratic_finite_sum(N=50, d=1, seed=3, eig_range=(0.3, 2.0), spread=3.0)``
    (so the minibatch noise depends on x). Cached (``flow_1d_data.clear()``).

    See: book/wflows/01-three-samplers.ipynb
    """
    eta = check_positive("eta", eta)
    pot = quadratic_finite_sum(50, 1, 3, eig_range=(0.3, 2.0), spread=3.0)
    x = np.linspace(-7, 7, 281)
    dx = x[1] - x[0]
    m0, s0 = 4.0, 0.5
    steps = int(round(t_end / eta))
    t = eta * np.round(np.linspace(0, steps, frames)).astype(int)
    mu0 = np.exp(-0.5 * ((x - m0) / s0) ** 2)
    gd = sgd_flow_density(pot, 0.0, batch_size, x, mu0, t, dt=min(eta, 0.02))
    sgd = sgd_flow_density(pot, eta, batch_size, x, mu0, t, dt=min(eta, 0.02))
    rng = np.random.default_rng(seed)
    X0 = m0 + s0 * rng.standard_normal((particles, 1))
    every = max(1, steps // (frames - 1))
    ula = run_sampler("langevin", pot, X0, eta, steps, seed=seed + 1, record_every=every, keep=0)
    sgld = run_sampler(
        "sgld", pot, X0, eta, steps, batch_size, seed=seed + 2, record_every=every, keep=0
    )
    pi = np.exp(-0.5 * (x - pot.mean[0]) ** 2 / pot.cov[0, 0])
    pi /= pi.sum() * dx
    return {"pot": pot, "x": x, "t": t, "gd": gd, "sgd": sgd, "pi": pi, "ula": ula, "sgld": sgld}


@memo(maxsize=64)
def sgld_1d_run(h: float, s: float, batch_size: int, particles: int, seed: int):
    """SGLD particles (1-D) after flow time 8 on ``shifted_quadratic_1d(100, s, seed)`` from
    N(0, 1) starts, step ``h``; the sample behind ``figures.sgld_variance_frame``. Cached.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    pot = shifted_quadratic_1d(100, s, seed)
    X0 = np.random.default_rng(seed).standard_normal((particles, 1))
    steps = int(np.ceil(8.0 / h))
    H = run_sampler(
        "sgld", pot, X0, h, steps, batch_size, seed=seed + 1, record_every=steps, keep=0
    )
    return H.X[:, 0]
