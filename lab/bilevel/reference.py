"""Reference kernels (numpy float64): the kink psi*, the set-smoothness estimator (Definition 3,
eqs. 4-5), the weak-convexity estimator (Sec. 2, characterisation (ii)), the stationarity
certificates (Lemma 4 and eq. 3: the Moreau envelope; Definition 1: the Clarke ball), the
two-point estimator and IZOM (Algorithm 1, eqs. izom-estimate and izom-step of the lesson page).
Equation numbers are the paper's (Chen, Li & So, NeurIPS 2025); labels in parentheses are those
of book/bilevel/index.md.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_real,
)

__all__ = [
    "psi_star",
    "estimate_set_smoothness",
    "weak_convexity_modulus",
    "moreau_gradient",
    "clarke_ball_certificate",
    "sphere_directions",
    "zo_two_point",
    "Certificate",
    "IZOMHistory",
    "izom",
]


# ------------------------------------------------------------------------------------------
# the kink: psi*(u) = max_t u t - (t^2 - 1)^2 / 4
# ------------------------------------------------------------------------------------------
def psi_star(u: Any) -> tuple[np.ndarray, np.ndarray]:
    """The double-well conjugate :math:`\\psi^*(u) = \\max_t\\, ut - (t^2-1)^2/4` and its maximiser.

    The maximiser solves :math:`t^3 - t = u` on the branch with the sign of ``u`` (``t = +1``
    at ``u = 0``, where both ``t = \\pm 1`` are optimal: the kink). Newton's method from
    ``t0 = sign(u) (1 + |u|^(1/3))``, to the right of the root, converges monotonically.

    Parameters
    ----------
    u : array_like
        Points (any shape).

    Returns
    -------
    value, t : ndarray
        :math:`\\psi^*(u)` and the maximiser (also the derivative of :math:`\\psi^*` at
        ``u != 0``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    u = check_array("u", u, dtype=np.float64)
    s = np.where(u >= 0, 1.0, -1.0)
    a = np.abs(u)
    t = 1.0 + np.cbrt(a)  # start right of the root of t^3 - t = |u|
    for _ in range(40):  # Newton on g(t) = t^3 - t - |u|, convex and increasing for t >= 1
        step = (t**3 - t - a) / (3.0 * t**2 - 1.0)
        t = t - step
        if not np.any(np.abs(step) > 1e-15 * t):  # monotone convergence from the right
            break
    t = s * t
    return u * t - (t**2 - 1.0) ** 2 / 4.0, t


# ------------------------------------------------------------------------------------------
# set smoothness and weak convexity, estimated numerically
# ------------------------------------------------------------------------------------------
def estimate_set_smoothness(
    select_branch: Callable, sample_x: Callable, n: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Estimate the two constants of Definition 3 (eqs. 4-5) for a branch selection of a set-valued map.

    ``select_branch(x, s)`` returns the point of ``Y(x)`` on branch ``s`` (rows of ``x`` and
    ``s`` are paired; a consistent labelling of the branches is part of the definition), and
    ``sample_x(rng, n)`` returns ``(x1, x2, s)``. For ``theta ~ U(0, 1)``, ``x = theta x1 +
    (1 - theta) x2`` and ``y = select_branch(x, s)``, ``y_i = select_branch(x_i, s)``:

    * ``L_comb = max 2 ||theta y1 + (1 - theta) y2 - y|| / (theta (1 - theta) ||x1 - x2||^2)``
      (Definition 3, eq. 4),
    * ``L_branch = max ||y1 - y2||^2 / ||x1 - x2||^2`` (condition S2).

    Both are lower bounds on the smallest valid constants *for this selection*; a map is set
    smooth when they stay bounded as ``n`` grows.

    Parameters
    ----------
    select_branch : callable
        ``(x (n, m), s (n, ...)) -> y (n, d)``.
    sample_x : callable
        ``rng, n -> (x1 (n, m), x2 (n, m), s)``.
    n : int
        Number of random triples (>= 1).
    seed : int
        Seed of the generator passed to ``sample_x`` and of ``theta``.

    Returns
    -------
    (L_comb, L_branch) : tuple of float

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(select_branch):
        raise TypeError("select_branch must be callable (x, s) -> y")
    if not callable(sample_x):
        raise TypeError("sample_x must be callable (rng, n) -> (x1, x2, s)")
    return set_smoothness_of(
        select_branch, sample_x, check_int("n", n, 1), check_int("seed", seed, 0)
    )


def set_smoothness_of(select_branch, sample_x, n, seed):
    """:func:`estimate_set_smoothness` on validated arguments (drivers call this; it checks nothing)."""

    rng = np.random.default_rng(seed)
    x1, x2, s = sample_x(rng, n)
    x1 = np.asarray(x1, dtype=np.float64).reshape(n, -1)
    x2 = np.asarray(x2, dtype=np.float64).reshape(n, -1)
    theta = rng.uniform(0.0, 1.0, size=(n, 1))
    gap2 = ((x1 - x2) ** 2).sum(1)
    ok = (gap2 > 0) & (theta[:, 0] * (1 - theta[:, 0]) > 1e-6)
    xt = theta * x1 + (1.0 - theta) * x2
    y1 = np.asarray(select_branch(x1, s), dtype=np.float64).reshape(n, -1)
    y2 = np.asarray(select_branch(x2, s), dtype=np.float64).reshape(n, -1)
    y = np.asarray(select_branch(xt, s), dtype=np.float64).reshape(n, -1)
    # Def. 3, eq. (4) (set-smooth-comb):
    #   ||theta y1 + (1 - theta) y2 - y|| <= (L/2) theta (1 - theta) ||x1 - x2||^2
    comb = np.linalg.norm(theta * y1 + (1.0 - theta) * y2 - y, axis=1)
    L_comb = 2.0 * comb[ok] / (theta[ok, 0] * (1.0 - theta[ok, 0]) * gap2[ok])
    # Def. 3, eq. (5) (set-smooth-branch): ||y1 - y2||^2 <= L ||x1 - x2||^2
    L_branch = ((y1 - y2) ** 2).sum(1)[ok] / gap2[ok]
    return float(L_comb.max()), float(L_branch.max())


def weak_convexity_modulus(
    phi: Callable, m: int, box: float = 2.0, n: int = 2000, seed: int = 0
) -> float:
    """Smallest ``rho`` for which the midpoint inequality of ``phi + (rho/2)||x||^2`` holds on
    ``n`` random segments of the box ``[-box, box]^m``.

    Midpoint convexity of :math:`\\varphi + \\tfrac\\rho2\\lVert x\\rVert^2` on ``[x1, x2]`` reads
    :math:`\\varphi(\\bar x) - \\tfrac12(\\varphi(x_1) + \\varphi(x_2)) \\le
    \\tfrac\\rho8\\lVert x_1 - x_2\\rVert^2`; the estimate is the largest left-hand side times
    ``8 / ||x1 - x2||^2``. A negative value means strongly convex on the samples; it is a lower
    bound on the true modulus over the box.

    Parameters
    ----------
    phi : callable
        Hyper-objective; a :class:`BilevelProblem` (batched) or any ``x -> float``.
    m : int
        Dimension.
    box : float
        Half-width of the sampling box (> 0).
    n : int
        Number of segments (>= 1).
    seed : int
        Seed.

    Returns
    -------
    float

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(phi):
        raise TypeError("phi must be callable")
    return modulus_of(
        phi, check_int("m", m, 1), check_positive("box", box), check_int("n", n, 1),
        check_int("seed", seed, 0),
    )  # fmt: skip


def modulus_of(phi, m, box, n, seed):
    """:func:`weak_convexity_modulus` on validated arguments (drivers call this; it checks nothing)."""

    rng = np.random.default_rng(seed)
    x1 = rng.uniform(-box, box, size=(n, m))
    x2 = rng.uniform(-box, box, size=(n, m))
    ev = _batched(phi)
    gap = ev(0.5 * (x1 + x2)) - 0.5 * (ev(x1) + ev(x2))
    return float(np.max(8.0 * gap / ((x1 - x2) ** 2).sum(1)))


def _batched(phi: Callable) -> Callable:
    if callable(getattr(phi, "phi_batch", None)):  # problems with a batched closed form
        return phi.phi_batch
    return lambda X: np.array([float(phi(x)) for x in X])


# ------------------------------------------------------------------------------------------
# stationarity certificates
# ------------------------------------------------------------------------------------------
def moreau_gradient(phi: Callable, x: Any, gamma: float = 0.5, rho: float | None = None):
    """Gradient of the Moreau envelope :math:`\\nabla\\varphi_\\gamma(x) = (x - z^\\star)/\\gamma`,
    :math:`z^\\star = \\arg\\min_z \\varphi(z) + \\lVert z - x\\rVert^2/(2\\gamma)`.

    The proximal subproblem is strongly convex when :math:`\\gamma < 1/\\rho` (Lemma 4; Theorem 4
    (ii) asks :math:`\\gamma < 1/(\\rho + 1)`); it is solved by
    Nelder-Mead (derivative free, robust at kinks) from ``x`` and polished by a restart. The
    norm is the pessimistic stationarity measure: a small value certifies that ``x`` is within
    :math:`\\gamma\\lVert\\nabla\\varphi_\\gamma\\rVert` of a point whose Clarke subdifferential
    contains a vector of that norm.

    Parameters
    ----------
    phi : callable
        ``x -> float`` (e.g. a :class:`BilevelProblem`).
    x : array_like, shape (m,)
        Base point.
    gamma : float
        Envelope parameter (> 0, < 1/rho).
    rho : float, optional
        Weak-convexity modulus; taken from ``phi.rho`` when ``phi`` carries one.

    Returns
    -------
    ndarray, shape (m,)

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    if not callable(phi):
        raise TypeError("phi must be callable")
    x = check_array("x", x, ndim=1, min_size=1)
    gamma = check_positive("gamma", gamma)
    if rho is None:
        rho = getattr(phi, "rho", None)
    if rho is not None:
        rho = check_real("rho", rho)
        if rho > 0 and gamma >= 1.0 / rho:
            raise ValueError(
                f"gamma must be < 1/rho = {1.0 / rho:g} (got {gamma:g}): the Moreau subproblem is "
                "not strongly convex"
            )

    return moreau_gradient_of(phi, x, gamma)


def moreau_gradient_of(phi, x, gamma):
    """:func:`moreau_gradient` on validated arguments (drivers call this; it checks nothing)."""

    from scipy.optimize import minimize

    prox = getattr(phi, "prox", None)  # Lemma 4 (iv): grad phi_gamma(x) = (x - prox(x)) / gamma
    if prox is not None:  # exact proximal point shipped with the problem
        return (x - prox(x, gamma)) / gamma

    def h(z):
        return float(phi(z)) + float(((z - x) ** 2).sum()) / (2.0 * gamma)

    z = x.copy()
    scale = 0.1
    for _ in range(3):  # restarts with shrinking simplices
        simplex = np.vstack([z, z + scale * np.eye(x.size)])
        res = minimize(
            h, z, method="Nelder-Mead",
            options={"xatol": 1e-11, "fatol": 1e-15, "maxiter": 4000 * x.size,
                     "initial_simplex": simplex},
        )  # fmt: skip
        z = res.x
        scale *= 0.01
    return (x - z) / gamma


def clarke_ball_certificate(
    phi: Callable, x: Any, delta: float, n_samples: int = 200, seed: int = 0, h: float = 1e-7
) -> float:
    """Optimistic stationarity (Definition 1, (eps, delta)-Clarke): the smallest gradient norm at
    points sampled in ``B(x, delta)``.

    An upper bound (up to finite-difference error) on
    :math:`\\operatorname{dist}(0, \\cup_{z\\in B(x,\\delta)}\\partial_C\\varphi(z))` restricted to
    the points where :math:`\\varphi` is differentiable; ``x`` itself is always included.
    Gradients are central differences with step ``h``.

    Parameters
    ----------
    phi : callable
        ``x -> float``; a :class:`BilevelProblem` is evaluated in one batch.
    x : array_like, shape (m,)
    delta : float
        Ball radius (> 0).
    n_samples : int
        Random points in the ball (>= 0).
    seed : int
    h : float
        Finite-difference step (> 0).

    Returns
    -------
    float

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(phi):
        raise TypeError("phi must be callable")
    x = check_array("x", x, ndim=1, min_size=1)
    delta = check_positive("delta", delta)
    n_samples = check_int("n_samples", n_samples, 0)
    h = check_positive("h", h)
    return ball_certificate_of(phi, x, delta, n_samples, check_int("seed", seed, 0), h)


def ball_certificate_of(phi, x, delta, n_samples, seed, h=1e-7):
    """:func:`clarke_ball_certificate` on validated arguments (drivers call this; it checks nothing)."""

    rng = np.random.default_rng(seed)
    m = x.size
    u = unit_directions(rng, n_samples, m) * rng.uniform(0, 1, (n_samples, 1)) ** (1.0 / m)
    Z = np.vstack([x, x + delta * u])
    E = np.eye(m) * h
    ev = _batched(phi)
    P = ev((Z[:, None, :] + E[None]).reshape(-1, m)).reshape(-1, m)
    M = ev((Z[:, None, :] - E[None]).reshape(-1, m)).reshape(-1, m)
    G = (P - M) / (2 * h)
    return float(np.linalg.norm(G, axis=1).min())


# ------------------------------------------------------------------------------------------
# the zeroth-order method (reference)
# ------------------------------------------------------------------------------------------
def sphere_directions(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """``n`` directions uniform on the unit sphere of ``R^m`` (normalised Gaussians).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy Generator (np.random.default_rng), got {type(rng).__name__}"
        )
    return unit_directions(rng, check_int("n", n, 0), check_int("m", m, 1))


def unit_directions(rng, n, m):
    """:func:`sphere_directions` on validated arguments (drivers call this; it checks nothing)."""

    u = rng.standard_normal((n, m))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def eval_oracle(oracle: Callable, x: np.ndarray) -> float:
    v = oracle(x)
    if isinstance(v, tuple):  # (phi_hat, info) oracles
        v = v[0]
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"oracle returned a non-finite value {v} at x = {x}")
    return v


def zo_two_point(phi: Callable, x: Any, delta: float, rng: Any = None, u: Any = None) -> np.ndarray:
    """The two-point random-direction gradient estimator (eq. ZO).

    :math:`g = \\frac{m}{2\\delta}(\\varphi(x+\\delta u) - \\varphi(x-\\delta u))\\,u` with ``u``
    uniform on the unit sphere: an unbiased estimate of the gradient of the uniform-ball
    smoothing :math:`\\varphi_\\delta(x) = \\mathbb E_{v\\sim B}\\varphi(x + \\delta v)`.

    Parameters
    ----------
    phi : callable
        Oracle ``x -> float``.
    x : array_like, shape (m,)
    delta : float
        Smoothing radius (> 0).
    rng : numpy Generator or int, optional
        Source of the direction (ignored when ``u`` is given).
    u : array_like, shape (m,), optional
        A given unit direction.

    Returns
    -------
    ndarray, shape (m,)

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    x = check_array("x", x, ndim=1, min_size=1)
    delta = check_positive("delta", delta)
    if u is None:
        u = unit_directions(np.random.default_rng(rng), 1, x.size)[0]
    else:
        u = check_array("u", u, shape=(x.size,))
    m = x.size
    # eq. (izom-estimate): G = (m / 2 eps) (phi(x + eps u) - phi(x - eps u)) u
    return (
        m / (2.0 * delta) * (eval_oracle(phi, x + delta * u) - eval_oracle(phi, x - delta * u)) * u
    )


@dataclass
class IZOMHistory:
    """What :func:`izom` returns.

    Attributes
    ----------
    x : ndarray, shape (T + 1, m)
        All iterates ``x_0 .. x_T``.
    output_index : int
        ``R``, uniform in ``{0, ..., T-1}``.
    x_out : ndarray, shape (m,)
        The randomly selected output ``x_R`` (the point the theorem certifies).
    measure_steps : ndarray of int
        Iterations at which the stationarity measure was evaluated (log-spaced, with ``T``).
    stationarity : ndarray
        The measure at those iterates: Moreau-gradient norm (``measure="moreau"``) or Clarke
        ball certificate (``measure="clarke"``).
    stationarity_out : float
        The measure at ``x_out``.
    measure : str
        ``"moreau"``, ``"clarke"`` or ``"none"``.
    evaluations : int
        Oracle calls (``2 T``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    x: np.ndarray
    output_index: int
    x_out: np.ndarray
    measure_steps: np.ndarray
    stationarity: np.ndarray
    stationarity_out: float
    measure: str
    evaluations: int


@dataclass(frozen=True)
class Certificate:
    """Which stationarity measure :func:`izom` records, and where.

    Parameters
    ----------
    measure : {"moreau", "clarke", "none"}, optional
        Default: ``"clarke"`` for optimistic problems, ``"moreau"`` otherwise.
    gamma : float
        Moreau parameter (> 0) of the pessimistic measure.
    ball : float, optional
        Ball radius of the optimistic certificate (default: the smoothing radius).
    n_measure : int
        Number of log-spaced iterates at which the measure is recorded (>= 1).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    measure: str | None = None
    gamma: float = 0.5
    ball: float | None = None
    n_measure: int = 20

    def __post_init__(self) -> None:
        if self.measure is not None:
            check_choice("measure", self.measure, ("moreau", "clarke", "none"))
        object.__setattr__(self, "gamma", check_positive("gamma", self.gamma))
        if self.ball is not None:
            object.__setattr__(self, "ball", check_positive("ball", self.ball))
        object.__setattr__(self, "n_measure", check_int("n_measure", self.n_measure, 1))


def _measure(phi, x, measure, gamma, delta, seed):
    if measure == "moreau":
        return float(np.linalg.norm(moreau_gradient_of(phi, x, gamma)))
    if measure == "clarke":
        return ball_certificate_of(phi, x, delta, 100, seed)
    return float("nan")


def izom(
    oracle: Callable,
    x0: Any,
    T: int,
    eta: float,
    delta: float,
    seed: int = 0,
    *,
    measure: str | None = None,
    certificate: Certificate | None = None,
    directions: Any = None,
) -> IZOMHistory:
    """IZOM: the inexact zeroth-order method (Algorithm 1, reference kernel).

    Theorem 4 sets ``eta = Theta(m^(-1/2) T^(-1/2))``, the smoothing radius (here ``delta``, the
    paper's eps) ``O(T^(-1/2))`` and the oracle accuracy ``w = O(m^(-3/4) T^(-3/4))``; the
    certificate's ball (``Certificate.ball``) is ``O(T^(-1/4))`` in the optimistic case.

    Each step draws ``u_k`` uniform on the sphere, forms the two-point estimate (eq. ZO) from two
    oracle calls and moves ``x_{k+1} = x_k - eta g_k`` (eq. step); the output is ``x_R`` with
    ``R`` uniform in ``{0, ..., T-1}``. The stationarity measure is recorded on
    ``certificate.n_measure`` log-spaced iterates and at ``x_R``.

    Parameters
    ----------
    oracle : callable
        Inexact hyper-objective ``x -> float`` (or ``-> (float, info)``); a
        :class:`BilevelProblem` is its own closed-form oracle.
    x0 : array_like, shape (m,)
        Start.
    T : int
        Number of steps (>= 1).
    eta : float
        Step size (> 0); the chapter's default is ``c / sqrt(m T)``.
    delta : float
        Smoothing radius (> 0).
    seed : int
        Seed of the directions and of ``R``.
    measure : {"moreau", "clarke", "none"}, optional
        Shorthand for ``certificate.measure``.
    certificate : Certificate, optional
        The stationarity measure and its parameters (default :class:`Certificate`).
    directions : array_like, shape (T, m), optional
        Given unit directions (to replay a run; ``seed`` then only draws ``R``).

    Returns
    -------
    IZOMHistory

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(oracle):
        raise TypeError(f"oracle must be callable x -> float (got {type(oracle).__name__})")
    x = check_array("x0", x0, ndim=1, min_size=1).copy()
    T = check_int("T", T, 1)
    eta = check_positive("eta", eta)
    delta = check_positive("delta", delta)
    seed = check_int("seed", seed, 0)
    certificate = Certificate() if certificate is None else certificate
    check_instance("certificate", certificate, Certificate)
    measure = certificate.measure if measure is None else Certificate(measure).measure
    if measure is None:
        measure = "clarke" if getattr(oracle, "mode", "") == "optimistic" else "moreau"
    rng = np.random.default_rng(seed)
    if directions is None:
        U = unit_directions(rng, T, x.size)
    else:
        U = check_array("directions", directions, shape=(T, x.size))
    R = int(rng.integers(T))
    X = izom_steps(oracle, x, U, eta, delta)
    ball = delta if certificate.ball is None else certificate.ball
    steps = np.unique(np.r_[0, np.geomspace(1, T, certificate.n_measure).astype(int), T])
    if measure == "none":
        stat = np.full(steps.size, np.nan)
        out = float("nan")
    else:
        g = certificate.gamma
        stat = np.array([_measure(oracle, X[k], measure, g, ball, seed) for k in steps])
        out = _measure(oracle, X[R], measure, g, ball, seed)
    return IZOMHistory(X, R, X[R].copy(), steps, stat, out, measure, 2 * T)


def izom_steps(oracle, x, U, eta, delta):
    """Algorithm 1's loop on given directions ``U`` (T, m): the iterates ``x_0 .. x_T``
    (:func:`izom` on validated arguments; ``delta`` is the paper's smoothing radius eps)."""
    T, m = U.shape
    X = np.empty((T + 1, m))
    X[0] = x
    batch = getattr(oracle, "phi_batch", None)
    for k in range(T):
        # eq. (izom-estimate), Algorithm 1: two oracle calls along u_t
        if batch is not None:  # closed-form oracle: both calls in one array evaluation
            pm = batch(np.stack([x + delta * U[k], x - delta * U[k]]))
            if not np.all(np.isfinite(pm)):
                raise ValueError(f"oracle returned a non-finite value {pm} near x = {x}")
            diff = float(pm[0] - pm[1])
        else:
            diff = eval_oracle(oracle, x + delta * U[k]) - eval_oracle(oracle, x - delta * U[k])
        g = m / (2.0 * delta) * diff
        # eq. (izom-step): x_{t+1} = x_t - eta G(x_t)
        x = x - eta * g * U[k]
        X[k + 1] = x
    return X
