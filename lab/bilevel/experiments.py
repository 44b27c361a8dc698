"""Drivers of the bilevel chapter's notebooks: each takes a settings object
(:mod:`lab.bilevel.settings`) or a few plain values, computes, and returns a small result
dataclass that :mod:`lab.bilevel.figures` draws.

* :func:`toy_baselines` and :func:`izom_rate` - IZOM on Toy P against the two baselines, and
  its rate at the random output over seeds (through :func:`lab.core.sweep.sweep`);
* :func:`curved_weak_convexity` - Theorem 1 on a curved solution set (``L_S = 1 > 0``):
  the measured weak-convexity modulus against ``rho = M_g L_Y + L_g (1 + L_Y)``.
* :func:`error_bound_set_smoothness` - Theorem 2 on the rotating-line lower level.
* :func:`constraint_counterexample` - a lower-level constraint breaks weak convexity.
* :func:`clarke_distance_toy` and :func:`kink_certificate` - the optimistic
  ``(eps, delta)``-Clarke measure at a kink of Toy O, with the kink's whole subdifferential.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.bilevel.baselines import fd_gradient_descent, gradient_free_goldstein
from lab.bilevel.cleaning import HyperCleaning, MinNormSelection, hyper_cleaning
from lab.bilevel.problems import (
    BilevelProblem,
    constrained_counterexample,
    rotating_line,
    set_maps,
    toy_curved,
    toy_optimistic,
    toy_pessimistic,
)
from lab.bilevel.reference import (
    Certificate,
    IZOMHistory,
    ball_certificate_of,
    izom,
    modulus_of,
    moreau_gradient_of,
    psi_star,
    set_smoothness_of,
    unit_directions,
)
from lab.bilevel.settings import (
    CleaningSettings,
    ConstraintSettings,
    CurvedSettings,
    KinkSettings,
    RateSettings,
    SmoothnessSettings,
    ToyRunSettings,
)
from lab.core.checks import check_array, check_instance, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.rates import power_law_fit
from lab.core.sweep import sweep

__all__ = [
    "BaselineComparison",
    "CleaningRun",
    "ConstraintBreak",
    "ContourGrid",
    "CurvedWeakConvexity",
    "ErrorBoundSmoothness",
    "HyperobjectiveCurves",
    "KinkCertificate",
    "MoreauRivals",
    "OptimisticRun",
    "RateStudy",
    "branch_values",
    "clarke_distance_toy",
    "cleaning_run",
    "constraint_counterexample",
    "contour_grid",
    "curved_weak_convexity",
    "error_bound_set_smoothness",
    "hyperobjective_curves",
    "izom_rate",
    "kink_certificate",
    "min_norm_run",
    "moreau_rivals",
    "optimistic_run",
    "set_smoothness_constants",
    "toy_baselines",
    "window_moduli",
]


@dataclass(frozen=True)
class CurvedWeakConvexity:
    """Theorem 1 measured on :func:`~lab.bilevel.problems.toy_curved`."""

    s: float
    box: float
    L_Y: float  # max of the two set-smoothness estimates of x -> {(t, sin x)}
    M_g: float  # Lipschitz constant of F in y on the box
    L_g: float  # smoothness (Hessian norm) of F in (x, y) on the box
    rho_bound: float  # M_g L_Y + L_g (1 + L_Y)
    modulus: float  # sampled weak-convexity modulus of phi_p on [-box, box]
    modulus_affine: float  # the same with the affine map y_2 = x (L_S = 0)
    modulus_exact: float  # s * max sin on the box


@memo
def curved_weak_convexity(settings: CurvedSettings) -> CurvedWeakConvexity:
    """Measure the weak-convexity modulus of ``phi_p = |x| + s sin x`` and the bound of
    Theorem 1, ``rho = M_g L_Y + L_g (1 + L_Y)``, with ``L_Y`` estimated from samples and
    ``M_g``, ``L_g`` maximised on a grid of ``|x| <= box``, ``y_1`` in ``[0, 2 pi]``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, CurvedSettings)
    s, box, n, seed = st.s, st.box, st.n, st.seed
    select, sample = set_maps()["sine"]
    L_Y = max(set_smoothness_of(select, sample, n, seed))
    xg, yg = np.meshgrid(np.linspace(-box, box, 401), np.linspace(0, 2 * np.pi, 401))
    # grad_y F = (x cos y_1, s); Hessian of F in (x, y_1, y_2): [[0, cos, 0], [cos, -x sin, 0], 0]
    M_g = float(np.sqrt((xg * np.cos(yg)) ** 2 + s**2).max())
    H = np.zeros(xg.shape + (2, 2))
    H[..., 0, 1] = H[..., 1, 0] = np.cos(yg)
    H[..., 1, 1] = -xg * np.sin(yg)
    L_g = float(np.abs(np.linalg.eigvalsh(H)).max())
    modulus = modulus_of(toy_curved(s), 1, box, n, seed)
    modulus_affine = modulus_of(lambda x: float(abs(x[0]) + s * x[0]), 1, box, min(n, 2000), seed)
    return CurvedWeakConvexity(
        s, box, L_Y, M_g, L_g, M_g * L_Y + L_g * (1 + L_Y), modulus, modulus_affine,
        s * math.sin(min(box, math.pi / 2)),
    )  # fmt: skip


@dataclass(frozen=True)
class ErrorBoundSmoothness:
    """Theorem 2 measured on :func:`~lab.bilevel.problems.rotating_line`."""

    tau: float  # largest dist(y, S(x)) / ||grad_y f|| over the samples
    hessian_rank: int  # rank of the lower-level Hessian a a^T (1 < n = 2: no strong convexity)
    L_comb: float
    L_branch: float


@memo
def error_bound_set_smoothness(settings: SmoothnessSettings) -> ErrorBoundSmoothness:
    """Check the error bound of the rotating-line lower level on random points and estimate
    the set-smoothness constants of its solution map on ``|t| <= 1``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, SmoothnessSettings)
    ll = rotating_line()
    rng = np.random.default_rng(st.seed)
    x = rng.uniform(-4, 4, st.n)
    y = rng.normal(size=(st.n, 2)) * 10.0 ** rng.uniform(-3, 1, (st.n, 1))
    g = np.linalg.norm(ll["grad_y_f"](x, y), axis=1)
    ok = g > 1e-300
    tau = float((ll["dist"](x, y)[ok] / g[ok]).max())
    a = np.array([math.cos(0.3), math.sin(0.3)])
    L_comb, L_branch = set_smoothness_of(ll["select_branch"], ll["sample_x"], st.n, st.seed)
    return ErrorBoundSmoothness(tau, int(np.linalg.matrix_rank(np.outer(a, a))), L_comb, L_branch)


@memo
def set_smoothness_constants(settings: SmoothnessSettings) -> dict[str, tuple[float, float]]:
    """The two constants of Definition 3 for the three maps of :func:`set_maps`, by name.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, SmoothnessSettings)
    return {
        name: set_smoothness_of(select, sample, st.n, st.seed)
        for name, (select, sample) in set_maps().items()
    }


@dataclass(frozen=True)
class ConstraintBreak:
    """Weak-convexity moduli around the concave kink of the constrained follower."""

    widths: np.ndarray
    moduli: np.ndarray  # constrained, on [1 - w, 1 + w]
    exponent: float  # fitted slope of log modulus against log width
    modulus_unconstrained: float


@memo
def constraint_counterexample(settings: ConstraintSettings) -> ConstraintBreak:
    """Sampled weak-convexity moduli of the paper's Example 3, ``phi_p(x) = -1 - clip(x, 0, 1)``,
    on shrinking windows around its concave kink ``x = 0`` (a weakly convex function has a
    bounded modulus; here it grows like ``1 / width``), and of the unconstrained
    ``phi_p(x) = -x - 2`` on the same windows.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, ConstraintSettings)
    widths = np.asarray(st.widths)
    con, free = constrained_counterexample(True), constrained_counterexample(False)
    moduli = np.array([modulus_of(con.phi_batch, 1, w, st.n, st.seed) for w in widths])
    free_mod = max(modulus_of(free.phi_batch, 1, w, st.n, st.seed) for w in widths)
    slope = power_law_fit(widths, moduli, nonpositive="raise").exponent
    return ConstraintBreak(widths, moduli, slope, float(free_mod))


def window_moduli(problem: BilevelProblem, widths: Any, seed: int = 0) -> np.ndarray:
    """Sampled weak-convexity moduli of ``problem`` on the boxes ``[-w, w]^m`` (2000 segments
    each), for each width ``w``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    check_instance("problem", problem, BilevelProblem)
    widths = check_array("widths", widths, ndim=1, min_size=1)
    if np.any(widths <= 0):
        raise ValueError(f"widths must be > 0, got {widths}")
    seed = check_int("seed", seed, 0)
    return np.array([modulus_of(problem, problem.m, w, 2000, seed) for w in widths])


def clarke_distance_toy(
    problem: BilevelProblem, x: Any, delta: float, n_samples: int = 2000, seed: int = 0
) -> float:
    """``dist(0, U_{z in B(x, delta)} d_C phi(z))`` for Toy P / Toy O, kinks included.

    Away from the kinks ``phi`` is differentiable with ``d phi / d x_i = sign t(x_i) +
    (x - a)_i + c sum(x) - kappa x_i`` (``t`` the maximiser of ``psi*``). On a kink
    ``z_i = 0`` the Clarke subdifferential's ``i``-th component is the interval
    ``[-1, 1] + (smooth part)_i``. The minimum is taken over ``x``, ``n_samples`` random
    points of the ball and, for every kink plane ``z_i = 0`` that meets the ball, the
    projection of ``x`` onto it and ``n_samples`` random points of the ball on the plane.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not isinstance(problem, BilevelProblem) or "kappa" not in problem.params:
        raise TypeError("problem must be a Toy P or Toy O problem (toy_pessimistic/optimistic)")
    x = check_array("x", x, shape=(problem.m,))
    delta = check_positive("delta", delta)
    n_samples = check_int("n_samples", n_samples, 0)
    return _clarke_distance_toy(problem, x, delta, n_samples, check_int("seed", seed, 0))


def _clarke_distance_toy(problem, x, delta, n_samples, seed):
    m = problem.m
    rng = np.random.default_rng(seed)
    a, c, kappa = (problem.params[k] for k in ("a", "c", "kappa"))
    sign = 1.0 if problem.mode == "pessimistic" else -1.0

    def ball(k, center):
        u = unit_directions(rng, k, m) * rng.uniform(0, 1, (k, 1)) ** (1.0 / m)
        return center + delta * u

    def dist(Z, kink=None):
        smooth = (Z - a) + c * Z.sum(1, keepdims=True) - kappa * Z
        G = sign * psi_star(Z)[1] + smooth
        if kink is not None:  # interval sign * [-1, 1] + smooth on the kink coordinate
            G[:, kink] = np.maximum(np.abs(smooth[:, kink]) - 1.0, 0.0)
        return np.linalg.norm(G, axis=1).min()

    best = dist(np.vstack([x, ball(n_samples, x)]))
    for i in range(m):
        if abs(x[i]) <= delta:
            p = x.copy()
            p[i] = 0.0
            Z = ball(n_samples, x)
            Z[:, i] = 0.0
            Z = Z[np.linalg.norm(Z - x, axis=1) <= delta]
            best = min(best, dist(np.vstack([p, Z]), kink=i))
    return float(best)


@dataclass(frozen=True)
class KinkCertificate:
    """The optimistic certificate at a Clarke-stationary kink point of Toy O."""

    x_kink: np.ndarray
    slopes: tuple[float, float]  # one-sided partial derivatives in x_1 at the kink
    exact: float  # clarke_distance_toy at x_kink (kinks included)
    sampled: float  # clarke_ball_certificate at x_kink (finite differences, kinks missed)
    izom_end: np.ndarray  # IZOM started at the kink
    izom_distance: float  # distance of its last iterate to the minimiser x*


@memo
def kink_certificate(settings: KinkSettings) -> KinkCertificate:
    """Find the Clarke-stationary kink point ``(0, x_2)`` of Toy O (``x_2`` solves the smooth
    coordinate's equation), evaluate both certificates there, and run IZOM from it.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    from scipy.optimize import brentq

    st = check_instance("settings", settings, KinkSettings)
    toy = toy_optimistic()
    a, c = toy.params["a"], toy.params["c"]

    def d2(v):  # partial derivative in x_2 at (0, v) (kappa = 0)
        return -float(psi_star(np.array([v]))[1][0]) + (v - a[1]) + c * v

    x2 = brentq(d2, -3.0, -1e-9)
    xk = np.array([0.0, x2])
    base = (0.0 - a[0]) + c * x2
    slopes = (1.0 + base, -1.0 + base)  # left (t = -1 branch), right (t = +1 branch)
    exact = _clarke_distance_toy(toy, xk, st.delta, st.n_samples, st.seed)
    sampled = ball_certificate_of(toy, xk, st.delta, st.n_samples, st.seed)
    T = st.T
    # Thm 4: smoothing radius eps = O(T^-1/2) (the ball of the certificate is O(T^-1/4))
    run = izom(toy, xk, T, 0.5 / math.sqrt(2 * T), T**-0.5, st.seed, measure="none")
    end = run.x[-1]
    return KinkCertificate(xk, slopes, exact, sampled, end, float(np.linalg.norm(end - toy.x_star)))


# ------------------------------------------------------------------------------------------
# IZOM on the toys: against the baselines, its rate over seeds, the optimistic twin
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BaselineComparison:
    """IZOM on Toy P beside fixed-step finite-difference descent and the gradient-free
    Goldstein method (radius 0.3), all from the same start."""

    run: IZOMHistory
    fd_path: np.ndarray  # finite-difference GD iterates (eta = 0.2, 300 steps)
    gf_path: np.ndarray  # gradient-free Goldstein iterates (delta = 0.3, eta = 0.01, 3000 steps)
    fd_tail: float  # median Moreau-gradient norm over FD's last 20 iterates
    gf_end: float  # distance of the gradient-free method's settled point to x* = 0
    gf_moreau: float  # Moreau-gradient norm at that settled point


@memo
def toy_baselines(settings: ToyRunSettings, gamma: float = 0.5) -> BaselineComparison:
    """IZOM on Toy P with the Moreau measure on 25 log-spaced iterates, and the two baselines.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, ToyRunSettings)
    gamma = check_positive("gamma", gamma)
    toy = toy_pessimistic()
    x0 = np.array(st.x0)
    cert = Certificate(gamma=gamma, n_measure=25)
    run = izom(toy, x0, st.T, st.eta, st.delta, st.seed, certificate=cert)
    fd_path = fd_gradient_descent(toy, x0, h=1e-6, eta=0.2, T=300)
    gf_path = gradient_free_goldstein(toy, x0, delta=0.3, eta=0.01, T=3000, seed=st.seed)
    fd_tail = np.median([np.linalg.norm(moreau_gradient_of(toy, x, gamma)) for x in fd_path[-20:]])
    gf_point = gf_path[-200:].mean(0)
    gf_moreau = float(np.linalg.norm(moreau_gradient_of(toy, gf_point, gamma)))
    return BaselineComparison(
        run, fd_path, gf_path, float(fd_tail), float(np.linalg.norm(gf_point)), gf_moreau
    )


@dataclass(frozen=True)
class MoreauRivals:
    """IZOM's last-iterate Moreau-gradient norm and the gradient-free Goldstein method's at its
    settled point, per seed (the same seeds pair the two)."""

    seeds: tuple[int, ...]
    izom: np.ndarray
    goldstein: np.ndarray


def _moreau_pair(settings: ToyRunSettings, gamma: float, seed: int) -> dict:
    toy = toy_pessimistic()
    x0 = np.array(settings.x0)
    run = izom(toy, x0, settings.T, settings.eta, settings.delta, seed, measure="none")
    gf = gradient_free_goldstein(toy, x0, delta=0.3, eta=0.01, T=3000, seed=seed)
    return {
        "izom": float(np.linalg.norm(moreau_gradient_of(toy, run.x[-1], gamma))),
        "goldstein": float(np.linalg.norm(moreau_gradient_of(toy, gf[-200:].mean(0), gamma))),
    }


@memo
def moreau_rivals(settings: ToyRunSettings, seeds: tuple[int, ...], gamma: float = 0.5):
    """:class:`MoreauRivals` over ``seeds`` (:func:`lab.core.sweep.sweep`).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, ToyRunSettings)
    gamma = check_positive("gamma", gamma)
    table = sweep(lambda seed: _moreau_pair(st, gamma, seed), None, seeds=seeds, desc="rivals")
    return MoreauRivals(tuple(seeds), table.values("izom"), table.values("goldstein"))


@dataclass(frozen=True)
class RateStudy:
    """The squared Moreau gradient at the random output ``x_R`` over horizons and seeds, for
    IZOM and for the rival with a fixed coarse radius (the same seeds, steps and outputs)."""

    horizons: tuple[int, ...]
    sq: np.ndarray  # (horizons, seeds)
    median_sq: np.ndarray  # median over seeds, per horizon
    slope: float  # fitted slope of log median against log T
    slope_mean: float  # the same for the mean over seeds (the theorem's expectation)
    se_mean: float  # bootstrap standard error of slope_mean (1000 resamples of the seeds)
    seed_slopes: np.ndarray  # per seed: slope of log sq against log T
    rival_sq: np.ndarray  # (horizons, seeds), radius fixed at rival_radius
    rival_slope: float  # slope of the rival's median
    rival_seed_slopes: np.ndarray


def _rate_one(settings: RateSettings, T: int, radius: float, seed: int) -> float:
    x0 = np.array(settings.x0)
    eta = settings.eta_scale / np.sqrt(x0.size * T)
    cert = Certificate(gamma=settings.gamma, n_measure=1)
    run = izom(toy_pessimistic(), x0, T, eta, radius, seed, certificate=cert)
    return run.stationarity_out**2


def _slopes(logT: np.ndarray, sq: np.ndarray) -> np.ndarray:
    return np.polyfit(logT, np.log(sq), 1)[0]


@memo
def izom_rate(settings: RateSettings) -> RateStudy:
    """IZOM on Toy P for every horizon and seed (:func:`lab.core.sweep.sweep`), and the fitted
    slopes of the median and of the mean of ``||grad phi_gamma(x_R)||^2`` against ``T``; the
    same for the rival radius.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, RateSettings)
    table = sweep(
        lambda T, radius, seed: _rate_one(st, T, radius, seed),
        {"T": list(st.horizons), "radius": [st.delta, st.rival_radius]}, seeds=st.seeds,
        desc="IZOM over horizons and seeds",
    )  # fmt: skip
    sq = np.array([table.values("value", T=T, radius=st.delta) for T in st.horizons])
    rival = np.array([table.values("value", T=T, radius=st.rival_radius) for T in st.horizons])
    median_sq = np.median(sq, axis=1)
    logT = np.log(st.horizons)
    slope = float(np.polyfit(logT, np.log(median_sq), 1)[0])
    slope_mean = float(np.polyfit(logT, np.log(sq.mean(1)), 1)[0])
    n = sq.shape[1]  # the seeds that ran (two in smoke mode)
    boot = np.random.default_rng(0).integers(0, n, (1000, n))
    boot_slopes = [np.polyfit(logT, np.log(sq[:, b].mean(1)), 1)[0] for b in boot]
    se_mean = float(np.std(boot_slopes, ddof=1))
    rival_slope = float(np.polyfit(logT, np.log(np.median(rival, axis=1)), 1)[0])
    return RateStudy(
        st.horizons, sq, median_sq, slope, slope_mean, se_mean, _slopes(logT, sq), rival,
        rival_slope, _slopes(logT, rival),
    )  # fmt: skip


@dataclass(frozen=True)
class OptimisticRun:
    """IZOM on Toy O with the sampled Clarke-ball certificate, beside finite-difference GD."""

    run: IZOMHistory
    x_star: np.ndarray
    fd_certificate: float  # the certificate at finite-difference GD's last iterate


@memo
def optimistic_run(settings: ToyRunSettings) -> OptimisticRun:
    """IZOM on Toy O (certificate on 10 log-spaced iterates, ball radius ``settings.ball``,
    default the smoothing radius) and finite-difference GD (eta = 0.2, 300 steps) certified
    with the same ball.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    st = check_instance("settings", settings, ToyRunSettings)
    toy = toy_optimistic()
    x0 = np.array(st.x0)
    ball = st.delta if st.ball is None else st.ball
    cert = Certificate(ball=ball, n_measure=10)
    run = izom(toy, x0, st.T, st.eta, st.delta, st.seed, certificate=cert)
    fd = fd_gradient_descent(toy, x0, h=1e-6, eta=0.2, T=300)
    fd_cert = ball_certificate_of(toy, fd[-1], ball, 200, st.seed)
    return OptimisticRun(run, toy.x_star, fd_cert)


# ------------------------------------------------------------------------------------------
# what the figures draw
# ------------------------------------------------------------------------------------------
def branch_values(u: Any, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Values of the follower's two local branches ``t ~ +1`` and ``t ~ -1`` of
    ``u t - sign (t^2 - 1)^2 / 4`` (local maxima for ``sign = +1``, local minima for ``-1``);
    ``nan`` where a branch does not exist (``|u| > 2 / (3 sqrt 3)``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    u = check_array("u", u, ndim=1)
    if sign not in (1.0, -1.0):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    plus, minus = np.full(u.shape, np.nan), np.full(u.shape, np.nan)
    for i, ui in enumerate(u):
        # stationary points: sign (t^3 - t) = u
        r = np.roots([1.0, 0.0, -1.0, -sign * ui])
        r = r[np.abs(r.imag) < 1e-9].real
        r = r[np.abs(r) > 1 / np.sqrt(3)]  # the outer roots are the local extrema
        for t in r:
            v = ui * t - sign * (t**2 - 1) ** 2 / 4
            if t > 0:
                plus[i] = v
            else:
                minus[i] = v
    return plus, minus


@dataclass(frozen=True)
class HyperobjectiveCurves:
    """1-D hyper-objectives of Toy P / Toy O for one concavity ``kappa``."""

    kappa: float
    x: np.ndarray
    phi_p: np.ndarray
    phi_o: np.ndarray  # phi_p - 2 psi* (same smooth part)
    rho: float  # max(kappa - 1, 0), the convexifying modulus
    rho_hat: float  # sampled weak-convexity modulus of phi_p on [-2, 2]
    phi_at_kink: float


@memo
def hyperobjective_curves(kappa: float = 0.0, a: float = 0.3, c: float = 0.0):
    """The curves of notebook 1's widget (``m = 1``, ``x`` in ``[-2, 2]``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    kappa = check_range("kappa", kappa, 0.0, 10.0)
    P = toy_pessimistic(m=1, a=[a], c=c, kappa=kappa)
    x = np.linspace(-2.0, 2.0, 201)
    phi_p = P.phi_batch(x[:, None])
    phi_o = phi_p - 2.0 * psi_star(x)[0]  # Toy O itself needs kappa < 1 to be bounded
    rho_hat = modulus_of(P, 1, 2.0, 2000, 0)
    kink = float(P.phi_batch(np.zeros((1, 1)))[0])
    return HyperobjectiveCurves(kappa, x, phi_p, phi_o, max(kappa - 1.0, 0.0), rho_hat, kink)


@dataclass(frozen=True)
class ContourGrid:
    """A 2-D hyper-objective on a square grid, with its Clarke stationary point."""

    x1: np.ndarray
    x2: np.ndarray
    z: np.ndarray
    x_star: np.ndarray


def contour_grid(problem: BilevelProblem, lim: float = 1.8, n: int = 201) -> ContourGrid:
    """``problem``'s hyper-objective on ``[-lim, lim]^2`` (``n`` points a side).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not isinstance(problem, BilevelProblem) or problem.m != 2:
        raise TypeError("problem must be a BilevelProblem with m = 2")
    lim = check_positive("lim", lim)
    n = check_int("n", n, 2)
    g = np.linspace(-lim, lim, n)
    X1, X2 = np.meshgrid(g, g)
    Z = problem.phi_batch(np.stack([X1.ravel(), X2.ravel()], 1)).reshape(X1.shape)
    return ContourGrid(X1, X2, Z, np.asarray(problem.x_star))


@dataclass(frozen=True)
class CleaningRun:
    """One hyper-cleaning instance and IZOM on its optimistic hyper-objective."""

    problem: HyperCleaning
    run: IZOMHistory
    loss: np.ndarray  # validation loss along the iterates (one batch evaluation)
    start: float  # the objective at no correction, evaluated alone
    final: float  # the objective at the last iterate, evaluated alone


@memo
def cleaning_run(settings: CleaningSettings) -> CleaningRun:
    """Build the instance and run IZOM from no correction (notebook 2 and its widget).

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    st = check_instance("settings", settings, CleaningSettings)
    H = hyper_cleaning(st.n_train, st.p, st.n_val, st.corruption, st.seed)
    run = izom(H, np.zeros(H.m), st.T, st.eta, st.delta, st.seed, measure="none")
    return CleaningRun(H, run, H.phi_batch(run.x), H(np.zeros(H.m)), H(run.x[-1]))


@memo
def min_norm_run(settings: CleaningSettings) -> CleaningRun:
    """IZOM on the min-norm selection ``x -> F(A^+(y_tr + x))`` of the same instance.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    st = check_instance("settings", settings, CleaningSettings)
    H = hyper_cleaning(st.n_train, st.p, st.n_val, st.corruption, st.seed)
    mn = MinNormSelection(H)
    run = izom(mn, np.zeros(H.m), st.T, st.eta, st.delta, st.seed, measure="none")
    return CleaningRun(H, run, mn.phi_batch(run.x), mn(np.zeros(H.m)), mn(run.x[-1]))
