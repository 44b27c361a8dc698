"""Drivers of the chapter's notebooks, returning small result dataclasses.

See: book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import check_int
from lab.core.memo import memo
from lab.core.rates import power_law_fit
from lab.core.sweep import Sweep, sweep
from lab.wflows.distances import empirical_w2, fisher_grid, kl_grid
from lab.wflows.flows import fokker_planck_1d, sgd_flow_density
from lab.wflows.reference import SamplerHistory, run_sampler
from lab.wflows.settings import FisherRateSettings, Flow1DSettings, VarianceSettings, WindowSettings
from lab.wflows.stationary import sgd_flow_stationary_var_1d, sgld_stationary_var_1d
from lab.wflows.targets import (
    FiniteSumQuadratic,
    GaussianMixture1D,
    gaussian_mixture_1d,
    quadratic_finite_sum,
    shifted_quadratic_1d,
)

__all__ = [
    "FisherRate",
    "VarianceSample",
    "equal_budget_window",
    "fisher_rate_1d",
    "flow_1d_data",
    "sgld_variance_sample",
    "sliced_separation",
]


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


@memo(maxsize=8)
def fisher_rate_1d(
    settings: FisherRateSettings | None = None, target: GaussianMixture1D | None = None
) -> FisherRate:
    r"""The nonconvex rate of the SGD flow, by the 1-D PDE: for each horizon ``T`` run the SGD
    flow (eq. 3) with the step ``eta = eta0 / T^eta_power`` (``eta_power = 1/2``: the schedule
    of the $O(1/\sqrt T)$ bound; 0: a fixed step, the rival) from $\mathcal N(\text{start}, \text{start\_sd}^2)$ towards a Gaussian-mixture
    target, and average the relative Fisher information $I(\mu_t\|\pi)$ over $[0, T]$.

    With the constant minibatch noise of :class:`GaussianMixture1D` the SGD flow is the
    Fokker-Planck equation with $D = 1 + \frac{\eta}{2} s^2/b$ (``fokker_planck_1d``).

    Parameters
    ----------
    settings : FisherRateSettings, optional
        Horizons, step schedule, start and grid (defaults: ``FisherRateSettings()``).
    target : GaussianMixture1D, optional
        Defaults to ``gaussian_mixture_1d()`` (modes at ±2, sigma 0.7, s = 2).

    Cached on the settings and target (``fisher_rate_1d.clear()``).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    st = FisherRateSettings() if settings is None else settings
    if not isinstance(st, FisherRateSettings):
        raise TypeError(f"settings must be a FisherRateSettings (got {type(st).__name__})")
    if target is None:
        target = gaussian_mixture_1d()
    if not isinstance(target, GaussianMixture1D):
        raise TypeError(f"target must be a GaussianMixture1D (got {type(target).__name__})")
    check_int("settings.batch_size", st.batch_size, 1, target.N)
    return _fisher_rate(st, target)


def _fisher_rate(st: FisherRateSettings, target: GaussianMixture1D) -> FisherRate:
    T = np.asarray(st.horizons, dtype=float)
    x = np.linspace(-st.x_max, st.x_max, st.n_grid)
    dx = x[1] - x[0]
    pi = target.density(x)
    mu0 = np.exp(-0.5 * ((x - st.start) / st.start_sd) ** 2)
    vp = target.grad(x)
    etas, mean_I, min_I, kls, curves = [], [], [], [], {}
    for horizon in T:
        eta = st.eta0 / horizon**st.eta_power
        D = 1.0 + 0.5 * eta * target.noise_var(st.batch_size)  # eq. (3) with Sigma = s^2 / b
        t = np.linspace(0.0, horizon, int(np.ceil(st.outputs_per_unit * horizon)) + 1)
        mus = fokker_planck_1d(vp, D, x, mu0, t, dt=st.dt)
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
def flow_1d_data(settings: Flow1DSettings | None = None) -> dict:
    """The 1-D demo: the GD flow and the SGD flow (eq. 3) solved on a grid, and ULA / SGLD
    particles with step ``h = eta``, at ``frames`` times in ``[0, t_end]``.

    Target: ``quadratic_finite_sum(N=50, d=1, seed=3, eig_range=(0.3, 2.0), spread=3.0)``
    (so the minibatch noise depends on x). Cached (``flow_1d_data.clear()``). Returns a dict
    with ``pot, x, t, gd, sgd, pi, ula, sgld`` and the ``settings``.

    See: book/wflows/01-three-samplers.ipynb
    """
    st = Flow1DSettings() if settings is None else settings
    if not isinstance(st, Flow1DSettings):
        raise TypeError(f"settings must be a Flow1DSettings (got {type(st).__name__})")
    eta, b, seed = st.eta, st.batch_size, st.seed
    pot = quadratic_finite_sum(50, 1, 3, eig_range=(0.3, 2.0), spread=3.0)
    x = np.linspace(-7, 7, 281)
    dx = x[1] - x[0]
    m0, s0 = 4.0, 0.5
    steps = int(round(st.t_end / eta))
    t = eta * np.round(np.linspace(0, steps, st.frames)).astype(int)
    mu0 = np.exp(-0.5 * ((x - m0) / s0) ** 2)
    gd = sgd_flow_density(pot, 0.0, b, x, mu0, t, dt=min(eta, 0.02))
    sgd = sgd_flow_density(pot, eta, b, x, mu0, t, dt=min(eta, 0.02))
    rng = np.random.default_rng(seed)
    X0 = m0 + s0 * rng.standard_normal((st.particles, 1))
    every = max(1, steps // (st.frames - 1))
    ula = run_sampler("langevin", pot, X0, eta, steps, seed=seed + 1, record_every=every, keep=0)
    sgld = run_sampler("sgld", pot, X0, eta, steps, b, seed=seed + 2, record_every=every, keep=0)
    pi = np.exp(-0.5 * (x - pot.mean[0]) ** 2 / pot.cov[0, 0])
    pi /= pi.sum() * dx
    return {
        "pot": pot, "x": x, "t": t, "gd": gd, "sgd": sgd, "pi": pi, "ula": ula, "sgld": sgld,
        "settings": st,
    }  # fmt: skip


@dataclass(frozen=True)
class VarianceSample:
    """SGLD particles after flow time 8 and the two stationary variances they are read against.

    Attributes
    ----------
    X : ndarray (particles,)
        The particles.
    var_sgld : float
        SGLD's discrete stationary variance ``(1 + h s^2/2b) / (1 - h/2)``.
    var_flow : float
        The SGD flow's stationary variance ``1 + eta s^2/2b``.
    settings : VarianceSettings
    """

    X: np.ndarray
    var_sgld: float
    var_flow: float
    settings: VarianceSettings


@memo(maxsize=64)
def sgld_variance_sample(settings: VarianceSettings | None = None) -> VarianceSample:
    """SGLD particles (1-D) after flow time 8 on ``shifted_quadratic_1d(100, s, seed)`` from
    N(0, 1) starts, step ``h``; the sample behind ``figures.sgld_variance_frame``. Cached.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    st = VarianceSettings() if settings is None else settings
    if not isinstance(st, VarianceSettings):
        raise TypeError(f"settings must be a VarianceSettings (got {type(st).__name__})")
    pot = shifted_quadratic_1d(100, st.s, st.seed)
    X0 = np.random.default_rng(st.seed).standard_normal((st.particles, 1))
    steps = int(np.ceil(8.0 / st.h))
    H = run_sampler(
        "sgld", pot, X0, st.h, steps, st.batch_size, seed=st.seed + 1, record_every=steps, keep=0
    )
    return VarianceSample(
        X=H.X[:, 0],
        var_sgld=sgld_stationary_var_1d(st.h, st.s, st.batch_size),
        var_flow=sgd_flow_stationary_var_1d(st.h, st.s, st.batch_size),
        settings=st,
    )


def _window_kl(run: SamplerHistory, window: tuple[float, float]) -> float:
    w = (run.grad_evals >= window[0]) & (run.grad_evals <= window[1])
    return float(run.kl[w].mean())


@memo(maxsize=8)
def equal_budget_window(
    potential: FiniteSumQuadratic, X0: np.ndarray, settings: WindowSettings, seeds: tuple
) -> Sweep:
    """The mean Gaussian-fit KL of ULA, SGLD and SVRG-LD over the budget window, one run of
    each per seed from the common start ``X0`` (each only as far as the window needs), through
    ``lab.core.sweep``. Outputs ``langevin``, ``sgld``, ``svrg``. Cached.

    See: book/wflows/01-three-samplers.ipynb
    """
    if not isinstance(settings, WindowSettings):
        raise TypeError(f"settings must be a WindowSettings (got {type(settings).__name__})")
    st = settings
    b, m, h = st.batch_size, st.epoch_length, st.h
    (n_ula, n_sgld, n_svrg), (r_ula, r_sgld, r_svrg) = st.steps, st.record_every

    def one(seed: int) -> dict:
        sgld = run_sampler("sgld", potential, X0, h, n_sgld, b, seed=seed, record_every=r_sgld)
        svrg = run_sampler("svrg", potential, X0, h, n_svrg, b, m, seed=seed, record_every=r_svrg)
        ula = run_sampler("langevin", potential, X0, h, n_ula, seed=seed, record_every=r_ula)
        runs = {"langevin": ula, "sgld": sgld, "svrg": svrg}
        return {name: _window_kl(run, st.window) for name, run in runs.items()}

    return sweep(one, None, seeds=seeds, desc="equal-budget window")


def sliced_separation(
    X_a: np.ndarray, X_b: np.ndarray, potential: FiniteSumQuadratic, n: int, *, seed: int = 0
) -> dict:
    """How far POT's sliced W2 tells two clouds apart, in units of its two-sample noise: over 8
    independent pairs of exact target samples of size ``n`` (seeds ``seed + 100 + k``), the mean
    of ``SW2(X_a[:n], ref) - SW2(X_b[:n], ref)`` divided by the standard deviation of
    ``SW2(ref, ref')`` (100 projections, projection seed ``k``).

    Returns ``separation``, ``diffs`` (8,) and ``pairs`` (8,).

    See: book/wflows/01-three-samplers.ipynb
    """
    n = check_int("n", n, 2, min(len(X_a), len(X_b)))
    pairs, diffs = [], []
    for k in range(8):
        g = np.random.default_rng(seed + 100 + k)
        ref_a = g.multivariate_normal(potential.mean, potential.cov, n)
        ref_b = g.multivariate_normal(potential.mean, potential.cov, n)
        pairs.append(empirical_w2(ref_a, ref_b, sliced=True, n_projections=100, seed=k))
        diffs.append(
            empirical_w2(X_a[:n], ref_a, sliced=True, n_projections=100, seed=k)
            - empirical_w2(X_b[:n], ref_a, sliced=True, n_projections=100, seed=k)
        )
    pairs, diffs = np.array(pairs), np.array(diffs)
    return {"separation": diffs.mean() / pairs.std(ddof=1), "diffs": diffs, "pairs": pairs}
