r"""
# Set smoothness and Clarke hyper-stationarity in bilevel optimisation

He Chen, Jiajin Li, Anthony Man-Cho So. *Set Smoothness Unlocks Clarke Hyper-stationarity in
Bilevel Optimization.* NeurIPS 2025. [arXiv:2506.04587](https://arxiv.org/abs/2506.04587)

**Read this first: what is reconstructed.** The paper is theoretical, has no experiments and no
code, and its full text was not available when this module was written. The definitions and
theorem statements follow a detailed secondary summary (Definition 3, Theorems 1-4,
Algorithm 1). The step sizes, the smoothing radius, the inexactness condition and the
stationarity certificates below are **reconstructed** from the zeroth-order / weakly convex
literature (Nesterov & Spokoiny 2017; Davis & Drusvyatskiy 2019; Lin, Zheng & Jordan 2022).
The toy problems and the hyper-cleaning instance are this chapter's own.

## Problem

Leader $x \in \mathbb{R}^m$, follower $y \in \mathbb{R}^n$ (unconstrained lower level):

$$S(x) = \arg\min_y f(x, y), \qquad
\varphi_o(x) = \min_{y \in S(x)} F(x, y), \qquad
\varphi_p(x) = \max_{y \in S(x)} F(x, y).$$

**Set smoothness** (Definition 3). $Y$ is $L$-smooth if for all $x_1, x_2$, $\theta\in[0,1]$
and every $y \in Y(\theta x_1 + (1-\theta)x_2)$ there are $y_i \in Y(x_i)$ with

$$\lVert \theta y_1 + (1-\theta) y_2 - y\rVert \le \tfrac L2 \theta(1-\theta)\lVert x_1-x_2\rVert^2
\quad (\text{S1}), \qquad \lVert y_1 - y_2\rVert^2 \le L \lVert x_1 - x_2\rVert^2 \quad (\text{S2}).$$

**Theorems 1-3** (as summarised). $S$ set smooth and $F$ smooth $\Rightarrow$ $\varphi_p$ is
$\rho$-weakly convex ($\varphi_p + \tfrac\rho2\lVert x\rVert^2$ convex) and $\varphi_o$ is
$\rho$-weakly concave, $\rho = M_F L_S + L_F(1 + L_S)$. An error bound on $f$ implies set
smoothness.

**Stationarity.** Pessimistic: the Moreau-envelope gradient
$\nabla\varphi_\gamma(x) = (x - \operatorname{prox}_{\gamma\varphi}(x))/\gamma$, $\gamma<1/\rho$
(small $\Rightarrow$ $x$ is close to a point with a small Clarke subgradient). Optimistic:
$(\varepsilon,\delta)$-Clarke, $\operatorname{dist}(0, \cup_{z\in B(x,\delta)}\partial_C
\varphi_o(z)) \le \varepsilon$.

**IZOM** (Algorithm 1, details reconstructed). With $u_k$ uniform on the unit sphere,

$$g_k = \frac{m}{2\delta}\big(\hat\varphi(x_k + \delta u_k) - \hat\varphi(x_k - \delta u_k)\big)u_k
\quad (\text{eq. ZO}), \qquad x_{k+1} = x_k - \eta g_k \quad (\text{eq. step}),$$

output $x_R$ with $R$ uniform in $\{0, \dots, T-1\}$; $\eta = c/\sqrt{mT}$.

## The chapter's problems (ours, exact)

*Toy P* (pessimistic): $f = \tfrac12 (y_{m+1} - \sum_i x_i)^2$, so
$S(x) = \{y : y_{m+1} = \sum_i x_i\}$ is an affine set moving linearly ($L_S = 0$), and
$F = \sum_i [x_i y_i - (y_i^2-1)^2/4] + \tfrac12\lVert x-a\rVert^2 + \tfrac c2 y_{m+1}^2
- \tfrac\kappa2\lVert x\rVert^2$, hence

$$\varphi_p(x) = \sum_i \psi^*(x_i) + \tfrac12\lVert x - a\rVert^2 + \tfrac c2 (\textstyle\sum_i x_i)^2
- \tfrac\kappa2 \lVert x\rVert^2,\qquad \psi^*(u) = \max_t\, ut - (t^2-1)^2/4,$$

with a convex kink of $\psi^*$ at $u=0$ (slopes $\mp1$). Defaults $a = (0.5, -0.3)$, $c = 0.2$,
$\kappa = 0$: the minimiser (Clarke stationary point) is $x^\star = 0$, on both kinks.
*Toy O* flips the double-well sign and takes the min: $\varphi_o = -\sum_i\psi^*(x_i) + \dots$,
concave kinks. *Hyper-cleaning*: an overparametrised least-squares follower
($S(x) = \{w : A w = y_{tr} + x\}$, affine, non-singleton) and a validation loss leader.

Reference kernels are numpy float64; ``izom_batched`` and ``kkt_oracle_torch`` are the torch
fast path (CPU or CUDA), checked against them in ``tests/test_bilevel.py``.

See: book/bilevel/01-kinks-and-stationarity.ipynb, book/bilevel/02-hyper-cleaning.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "BatchedIZOM",
    "BilevelProblem",
    "HyperCleaning",
    "IZOMHistory",
    "MinNormSelection",
    "ProjectedAscentOracle",
    "clarke_ball_certificate",
    "cvxpy_inner_solve",
    "estimate_set_smoothness",
    "fd_gradient_descent",
    "gradient_free_goldstein",
    "hyper_cleaning",
    "izom",
    "izom_batched",
    "kkt_oracle_torch",
    "moreau_gradient",
    "psi_star",
    "psi_star_torch",
    "set_maps",
    "sphere_directions",
    "toy_optimistic",
    "toy_pessimistic",
    "weak_convexity_modulus",
    "zo_two_point",
]

MODES = ("optimistic", "pessimistic")


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


def psi_star_torch(u):
    """Torch version of :func:`psi_star` (value only), any device and floating dtype.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import torch

    s = torch.where(u >= 0, 1.0, -1.0).to(u.dtype)
    a = u.abs()
    t = 1.0 + a.pow(1.0 / 3.0)
    for i in range(40):
        step = (t**3 - t - a) / (3.0 * t**2 - 1.0)
        t = t - step
        if i % 4 == 3 and not bool((step.abs() > 1e-15 * t).any()):
            break
    t = s * t
    return u * t - (t**2 - 1.0) ** 2 / 4.0


# ------------------------------------------------------------------------------------------
# problems
# ------------------------------------------------------------------------------------------
@dataclass
class BilevelProblem:
    """A bilevel problem with an exact hyper-objective oracle.

    Calling the problem, ``problem(x)``, evaluates the hyper-objective :math:`\\varphi(x)` in
    closed form (the *closed-form oracle*); ``phi_batch`` evaluates rows of a 2-D array and
    ``phi_torch`` a torch tensor of shape ``(..., m)``.

    Attributes
    ----------
    f, F : callable
        Lower and upper objectives ``f(x, y)``, ``F(x, y)`` (numpy, one point).
    grad_y_f, grad_y_F : callable
        Their gradients in ``y``; vectorised over leading axes of ``y``.
    m, n : int
        Upper and lower dimensions.
    mode : {"optimistic", "pessimistic"}
        Which hyper-objective.
    phi_batch, phi_torch : callable
        Closed-form hyper-objective on ``(B, m)`` arrays / tensors.
    x_star : ndarray
        A Clarke stationary point (the minimiser for the defaults).
    rho : float or None
        A weak-convexity modulus of the hyper-objective (pessimistic) when known.
    name : str
        Label for plots.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    f: Callable
    F: Callable
    grad_y_f: Callable
    grad_y_F: Callable
    m: int
    n: int
    mode: str
    phi_batch: Callable
    phi_torch: Callable
    x_star: np.ndarray
    rho: float | None = None
    name: str = ""
    params: dict = field(default_factory=dict)
    prox: Callable | None = None

    def __post_init__(self):
        check_choice("mode", self.mode, MODES)

    def __call__(self, x: Any) -> float:
        x = check_array("x", x, shape=(self.m,))
        return float(self.phi_batch(x[None, :])[0])


def _toy(m, a, c, kappa, sign):
    m = check_int("m", m, 1)
    if a is None:
        a = np.zeros(m)
        a[:2] = [0.5, -0.3][:m]
    a = check_array("a", a, shape=(m,))
    c = check_positive("c", c, allow_zero=True)
    kappa = check_positive("kappa", kappa, allow_zero=True)

    def smooth_part(X):
        # (1/2)||x - a||^2 + (c/2)(sum x)^2 - (kappa/2)||x||^2, rows of X
        return (
            0.5 * ((X - a) ** 2).sum(-1) + 0.5 * c * X.sum(-1) ** 2 - 0.5 * kappa * (X**2).sum(-1)
        )

    def phi_batch(X):
        X = np.asarray(X, dtype=np.float64)
        return sign * psi_star(X)[0].sum(-1) + smooth_part(X)

    def phi_torch(X):
        import torch

        at = torch.as_tensor(a, dtype=X.dtype, device=X.device)
        sp = 0.5 * ((X - at) ** 2).sum(-1) + 0.5 * c * X.sum(-1) ** 2 - 0.5 * kappa * (X**2).sum(-1)
        return sign * psi_star_torch(X).sum(-1) + sp

    def f(x, y):
        return 0.5 * (y[..., m] - np.sum(x)) ** 2

    def grad_y_f(x, y):
        g = np.zeros_like(y)
        g[..., m] = y[..., m] - np.sum(x)
        return g

    def F(x, y):
        t = y[..., :m]
        # sign=+1 (pessimistic): x.t - W(t); sign=-1 (optimistic): x.t + W(t), W = (t^2-1)^2/4
        return (
            (x * t).sum(-1)
            - sign * ((t**2 - 1.0) ** 2 / 4.0).sum(-1)
            + 0.5 * np.sum((x - a) ** 2)
            + 0.5 * c * y[..., m] ** 2
            - 0.5 * kappa * np.sum(x**2)
        )

    def grad_y_F(x, y):
        g = np.zeros_like(y)
        t = y[..., :m]
        g[..., :m] = x - sign * t * (t**2 - 1.0)
        g[..., m] = c * y[..., m]
        return g

    return m, a, c, kappa, phi_batch, phi_torch, f, F, grad_y_f, grad_y_F


def toy_pessimistic(
    m: int = 2, a: Any = None, c: float = 0.2, kappa: float = 0.0
) -> BilevelProblem:
    """Toy P: a pessimistic problem whose hyper-objective has convex kinks at ``x_i = 0``.

    :math:`\\varphi_p(x) = \\sum_i\\psi^*(x_i) + \\tfrac12\\lVert x-a\\rVert^2 +
    \\tfrac c2(\\sum_i x_i)^2 - \\tfrac\\kappa2\\lVert x\\rVert^2`; the follower's solution set
    ``{y : y_{m+1} = sum x}`` is an affine plane (set-smooth with L = 0), and the leader's worst
    case picks ``y_i = +-1``-like branches that swap at ``x_i = 0``.

    Parameters
    ----------
    m : int
        Leader dimension (>= 1).
    a : array_like, optional
        Linear tilt, default ``(0.5, -0.3, 0, ...)``; for ``|a_i| < 1`` and ``kappa = 0`` the
        minimiser is ``x* = 0``.
    c : float
        Coupling weight (>= 0) on ``y_{m+1}^2 = (sum x)^2``.
    kappa : float
        Concave quadratic (>= 0): ``kappa > 1`` makes the problem nonconvex, still
        ``max(kappa - 1, 0)``-weakly convex.

    Returns
    -------
    BilevelProblem

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    m, a, c, kappa, phi_b, phi_t, f, F, gyf, gyF = _toy(m, a, c, kappa, +1.0)

    def prox(x, gamma):
        return _toy_p_prox(x, gamma, a, c, kappa)

    # psi* is convex, the rest has Hessian (1 - kappa) I + c 11^T: rho = max(kappa - 1, 0)
    return BilevelProblem(
        f, F, gyf, gyF, m, m + 1, "pessimistic", phi_b, phi_t,
        x_star=np.zeros(m), rho=max(kappa - 1.0, 0.0), name="Toy P",
        params={"a": a, "c": c, "kappa": kappa}, prox=prox,
    )  # fmt: skip


def _toy_p_prox(x, gamma, a, c, kappa, sweeps=500, tol=1e-15):
    """Exact proximal point of Toy P by coordinate minimisation (smooth coupling + separable
    kinks: Gauss-Seidel converges linearly). Each 1-D problem
    ``min_z psi*(z) + (q/2) z^2 - b z`` with ``q = 1 - kappa + c + 1/gamma > 0`` is solved in the
    maximiser ``t`` of psi*: ``z = 0`` if ``|b| <= 1`` (the kink's subdifferential [-1, 1]),
    else ``z = t^3 - t`` with ``q t^3 + (1 - q) t = b``, ``|t| > 1`` (Newton from the right)."""
    q = 1.0 - kappa + c + 1.0 / gamma
    z = np.array(x, dtype=np.float64)
    for _ in range(sweeps):
        z_old = z.copy()
        for i in range(z.size):
            b = x[i] / gamma + a[i] - c * (z.sum() - z[i])
            if abs(b) <= 1.0:
                z[i] = 0.0
                continue
            s, bb = math.copysign(1.0, b), abs(b)
            t = 1.0 + bb
            for _ in range(100):
                t_new = t - (q * t**3 + (1.0 - q) * t - bb) / (3.0 * q * t**2 + 1.0 - q)
                if abs(t_new - t) < 1e-16 * t:
                    t = t_new
                    break
                t = t_new
            z[i] = s * (t**3 - t)
        if np.abs(z - z_old).max() < tol:
            break
    return z


def toy_optimistic(m: int = 2, a: Any = None, c: float = 0.2, kappa: float = 0.0) -> BilevelProblem:
    """Toy O: the optimistic twin of Toy P, with concave kinks at ``x_i = 0``.

    :math:`\\varphi_o(x) = -\\sum_i\\psi^*(x_i) + \\tfrac12\\lVert x-a\\rVert^2 +
    \\tfrac c2(\\sum_i x_i)^2 - \\tfrac\\kappa2\\lVert x\\rVert^2` (the follower's best case
    minimises :math:`x_i t + (t^2-1)^2/4`). The minimiser sits at a smooth point on one side of
    each kink; ``x_star`` is the global minimiser, found by a 1-D search per coordinate when
    ``c = 0`` and by a local polish otherwise.

    Parameters
    ----------
    m, a, c
        As in :func:`toy_pessimistic`.
    kappa : float
        In ``[0, 1)``: for ``kappa >= 1`` the optimistic hyper-objective is unbounded below.

    Returns
    -------
    BilevelProblem

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    check_range("kappa", kappa, 0.0, 1.0, high_inclusive=False)  # kappa >= 1: unbounded below
    m, a, c, kappa, phi_b, phi_t, f, F, gyf, gyF = _toy(m, a, c, kappa, -1.0)
    from scipy.optimize import minimize

    # global minimiser: try every sign pattern of the smooth pieces (m small) or a grid start
    best, best_val = None, np.inf
    starts = [np.sign(a + 1e-12) * 1.5 + 0.0 * a]
    if m <= 6:
        import itertools

        starts = [np.array(s, dtype=float) for s in itertools.product([-1.5, 1.5], repeat=m)]
    for s0 in starts:
        res = minimize(
            lambda z: float(phi_b(z[None])[0]), s0, method="Nelder-Mead",
            options={"xatol": 1e-11, "fatol": 1e-14, "maxiter": 20000},
        )  # fmt: skip
        if res.fun < best_val:
            best, best_val = res.x, res.fun
    return BilevelProblem(
        f, F, gyf, gyF, m, m + 1, "optimistic", phi_b, phi_t,
        x_star=best, rho=None, name="Toy O", params={"a": a, "c": c, "kappa": kappa},
    )  # fmt: skip


# ------------------------------------------------------------------------------------------
# a generic inner solver (slow): projection onto S(x) by GD on f, multi-start ascent on F
# ------------------------------------------------------------------------------------------
class ProjectedAscentOracle:
    """Evaluate the hyper-objective by solving the inner problems numerically.

    For each start: ``proj_steps`` gradient steps on ``f(x, .)`` (for least-squares lower levels
    GD from ``y`` converges to the projection of ``y`` onto ``S(x)``), then ``n_steps`` of
    projected gradient ascent (pessimistic) or descent (optimistic) of ``F(x, .)``; the best
    value over ``n_starts`` random starts is returned. Raises ``ValueError`` when the ascent
    diverges (``F`` unbounded above on ``S(x)``).

    Parameters
    ----------
    problem : BilevelProblem
        Supplies ``grad_y_f``, ``grad_y_F``, ``F``, ``n`` and ``mode``.
    n_starts, n_steps, proj_steps : int
        Multi-start width and iteration counts.
    lr : float
        Step size of both inner loops.
    seed : int
        Seed of the random starts (uniform on ``[-2, 2]^n``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    def __init__(
        self,
        problem: BilevelProblem,
        n_starts: int = 20,
        n_steps: int = 400,
        proj_steps: int = 50,
        lr: float = 0.1,
        seed: int = 0,
    ):
        if not isinstance(problem, BilevelProblem):
            raise TypeError(f"problem must be a BilevelProblem (got {type(problem).__name__})")
        self.problem = problem
        self.n_starts = check_int("n_starts", n_starts, 1)
        self.n_steps = check_int("n_steps", n_steps, 1)
        self.proj_steps = check_int("proj_steps", proj_steps, 1)
        self.lr = check_positive("lr", lr)
        self.seed = check_int("seed", seed, 0)

    def _project(self, x, Y):
        for _ in range(self.proj_steps):
            Y = Y - 1.0 * self.problem.grad_y_f(x, Y)  # unit step: exact for unit-curvature f
        return Y

    def __call__(self, x: Any) -> float:
        p = self.problem
        x = check_array("x", x, shape=(p.m,))
        rng = np.random.default_rng(self.seed)
        Y = self._project(x, rng.uniform(-2.0, 2.0, size=(self.n_starts, p.n)))
        sign = 1.0 if p.mode == "pessimistic" else -1.0
        for _ in range(self.n_steps):
            Y = self._project(x, Y + sign * self.lr * p.grad_y_F(x, Y))
            if not np.all(np.isfinite(Y)) or np.abs(Y).max() > 1e8:
                raise ValueError(
                    f"inner {'ascent' if sign > 0 else 'descent'} diverged at x = {x}: F must be "
                    f"bounded {'above' if sign > 0 else 'below'} on S(x) for the "
                    f"{p.mode} hyper-objective to be finite"
                )
        vals = p.F(x, Y)
        return float(vals.max() if sign > 0 else vals.min())


# ------------------------------------------------------------------------------------------
# set smoothness and weak convexity, estimated numerically
# ------------------------------------------------------------------------------------------
def estimate_set_smoothness(
    select_branch: Callable, sample_x: Callable, n: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Estimate the two constants of Definition 3 for a branch selection of a set-valued map.

    ``select_branch(x, s)`` returns the point of ``Y(x)`` on branch ``s`` (rows of ``x`` and
    ``s`` are paired; a consistent labelling of the branches is part of the definition), and
    ``sample_x(rng, n)`` returns ``(x1, x2, s)``. For ``theta ~ U(0, 1)``, ``x = theta x1 +
    (1 - theta) x2`` and ``y = select_branch(x, s)``, ``y_i = select_branch(x_i, s)``:

    * ``L_comb = max 2 ||theta y1 + (1 - theta) y2 - y|| / (theta (1 - theta) ||x1 - x2||^2)``
      (condition S1),
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
    n = check_int("n", n, 1)
    seed = check_int("seed", seed, 0)
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
    # (S1): ||theta y1 + (1 - theta) y2 - y|| <= (L/2) theta (1 - theta) ||x1 - x2||^2
    comb = np.linalg.norm(theta * y1 + (1.0 - theta) * y2 - y, axis=1)
    L_comb = 2.0 * comb[ok] / (theta[ok, 0] * (1.0 - theta[ok, 0]) * gap2[ok])
    # (S2): ||y1 - y2||^2 <= L ||x1 - x2||^2
    L_branch = ((y1 - y2) ** 2).sum(1)[ok] / gap2[ok]
    return float(L_comb.max()), float(L_branch.max())


def set_maps() -> dict[str, tuple[Callable, Callable]]:
    """Three set-valued maps ``R => R^2`` with a branch labelling, for
    :func:`estimate_set_smoothness`: ``(select_branch, sample_x)`` pairs.

    * ``"affine"``: ``Y(x) = {(t, x/2) : t in R}`` (a line moving linearly): ``L_comb = 0``,
      ``L_branch = 1/4``.
    * ``"sine"``: ``Y(x) = {(t, sin x)}``: both constants equal 1 (approached, not exceeded).
    * ``"jumping"``: ``Y(x) = {(t, 1[x > 0])}``: the line jumps at ``x = 0`` and no finite
      constant works.

    ``sample_x`` draws ``x1`` uniform on ``[-4, 4]`` and ``x2 = x1 + g`` with a log-uniform gap
    ``|g|`` in ``[1e-3, 2]`` and a random sign; the branch label is ``t`` uniform on ``[-2, 2]``.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    def sample_x(rng, n):
        x1 = rng.uniform(-4.0, 4.0, size=n)
        gap = 10.0 ** rng.uniform(-3.0, math.log10(2.0), size=n) * rng.choice([-1.0, 1.0], n)
        return x1[:, None], (x1 + gap)[:, None], rng.uniform(-2.0, 2.0, size=n)

    def make(h):
        def select(x, s):
            x = np.asarray(x, dtype=np.float64)[:, 0]
            return np.stack([np.asarray(s, dtype=np.float64) + 0.0 * x, h(x)], axis=1)

        return select

    return {
        "affine": (make(lambda x: 0.5 * x), sample_x),
        "sine": (make(np.sin), sample_x),
        "jumping": (make(lambda x: (x > 0).astype(np.float64)), sample_x),
    }


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
    m = check_int("m", m, 1)
    box = check_positive("box", box)
    n = check_int("n", n, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    x1 = rng.uniform(-box, box, size=(n, m))
    x2 = rng.uniform(-box, box, size=(n, m))
    ev = _batched(phi)
    gap = ev(0.5 * (x1 + x2)) - 0.5 * (ev(x1) + ev(x2))
    return float(np.max(8.0 * gap / ((x1 - x2) ** 2).sum(1)))


def _batched(phi: Callable) -> Callable:
    if isinstance(phi, BilevelProblem):
        return phi.phi_batch
    if isinstance(phi, HyperCleaning | MinNormSelection):
        return phi.phi_batch
    return lambda X: np.array([float(phi(x)) for x in X])


# ------------------------------------------------------------------------------------------
# stationarity certificates
# ------------------------------------------------------------------------------------------
def moreau_gradient(phi: Callable, x: Any, gamma: float = 0.5, rho: float | None = None):
    """Gradient of the Moreau envelope :math:`\\nabla\\varphi_\\gamma(x) = (x - z^\\star)/\\gamma`,
    :math:`z^\\star = \\arg\\min_z \\varphi(z) + \\lVert z - x\\rVert^2/(2\\gamma)`.

    The proximal subproblem is strongly convex when :math:`\\gamma < 1/\\rho`; it is solved by
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
    from scipy.optimize import minimize

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

    prox = getattr(phi, "prox", None)
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
    """Optimistic stationarity: the smallest gradient norm at points sampled in ``B(x, delta)``.

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
    rng = np.random.default_rng(check_int("seed", seed, 0))
    m = x.size
    u = sphere_directions(rng, n_samples, m) * rng.uniform(0, 1, (n_samples, 1)) ** (1.0 / m)
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
    u = rng.standard_normal((n, m))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _eval(oracle: Callable, x: np.ndarray) -> float:
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
        rng = np.random.default_rng(rng)
        u = sphere_directions(rng, 1, x.size)[0]
    else:
        u = check_array("u", u, shape=(x.size,))
    m = x.size
    # eq. ZO: g = (m / 2 delta) (phi(x + delta u) - phi(x - delta u)) u
    return m / (2.0 * delta) * (_eval(phi, x + delta * u) - _eval(phi, x - delta * u)) * u


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


def _measure(phi, x, measure, gamma, delta, seed):
    if measure == "moreau":
        return float(np.linalg.norm(moreau_gradient(phi, x, gamma)))
    if measure == "clarke":
        return clarke_ball_certificate(phi, x, delta, n_samples=100, seed=seed)
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
    gamma: float = 0.5,
    clarke_delta: float | None = None,
    n_measure: int = 20,
    directions: Any = None,
    proj: Callable | None = None,
) -> IZOMHistory:
    """IZOM: the inexact zeroth-order method (Algorithm 1, reference kernel).

    Each step draws ``u_k`` uniform on the sphere, forms the two-point estimate (eq. ZO) from two
    oracle calls and moves ``x_{k+1} = Proj(x_k - eta g_k)`` (eq. step); the output is ``x_R``
    with ``R`` uniform in ``{0, ..., T-1}``. The stationarity measure is recorded on
    ``n_measure`` log-spaced iterates and at ``x_R``.

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
        Step size (> 0); the reconstructed default is ``c / sqrt(m T)``.
    delta : float
        Smoothing radius (> 0).
    seed : int
        Seed of the directions and of ``R``.
    measure : {"moreau", "clarke", "none"}, optional
        Default: ``"clarke"`` for optimistic problems, ``"moreau"`` otherwise.
    gamma : float
        Moreau parameter (> 0) of the pessimistic measure.
    clarke_delta : float, optional
        Ball radius of the optimistic certificate (default ``delta``).
    n_measure : int
        Number of iterates at which the measure is recorded (>= 1).
    directions : array_like, shape (T, m), optional
        Given unit directions (to replay a run; ``seed`` then only draws ``R``).
    proj : callable, optional
        Projection onto the leader's feasible set (identity by default).

    Returns
    -------
    IZOMHistory

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not callable(oracle):
        raise TypeError(f"oracle must be callable x -> float (got {type(oracle).__name__})")
    x = check_array("x0", x0, ndim=1, min_size=1).copy()
    m = x.size
    T = check_int("T", T, 1)
    eta = check_positive("eta", eta)
    delta = check_positive("delta", delta)
    seed = check_int("seed", seed, 0)
    gamma = check_positive("gamma", gamma)
    n_measure = check_int("n_measure", n_measure, 1)
    if measure is None:
        measure = "clarke" if getattr(oracle, "mode", "") == "optimistic" else "moreau"
    check_choice("measure", measure, ("moreau", "clarke", "none"))
    clarke_delta = delta if clarke_delta is None else check_positive("clarke_delta", clarke_delta)
    rng = np.random.default_rng(seed)
    if directions is None:
        U = sphere_directions(rng, T, m)
    else:
        U = check_array("directions", directions, shape=(T, m))
    R = int(rng.integers(T))
    X = np.empty((T + 1, m))
    X[0] = x
    batch = getattr(oracle, "phi_batch", None)
    for k in range(T):
        # eq. ZO: two oracle calls along u_k
        if batch is not None:  # closed-form oracle: both calls in one array evaluation
            pm = batch(np.stack([x + delta * U[k], x - delta * U[k]]))
            if not np.all(np.isfinite(pm)):
                raise ValueError(f"oracle returned a non-finite value {pm} near x = {x}")
            diff = float(pm[0] - pm[1])
        else:
            diff = _eval(oracle, x + delta * U[k]) - _eval(oracle, x - delta * U[k])
        g = m / (2.0 * delta) * diff
        # eq. step: x_{k+1} = Proj_X(x_k - eta g_k u_k)
        x = x - eta * g * U[k]
        if proj is not None:
            x = np.asarray(proj(x), dtype=np.float64)
        X[k + 1] = x
    steps = np.unique(np.r_[0, np.geomspace(1, T, n_measure).astype(int), T])
    if measure == "none":
        stat = np.full(steps.size, np.nan)
        out = float("nan")
    else:
        stat = np.array([_measure(oracle, X[k], measure, gamma, clarke_delta, seed) for k in steps])
        out = _measure(oracle, X[R], measure, gamma, clarke_delta, seed)
    return IZOMHistory(X, R, X[R].copy(), steps, stat, out, measure, 2 * T)


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
        g = np.array([(_eval(phi, x + e) - _eval(phi, x - e)) / (2 * h) for e in E])
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


# ------------------------------------------------------------------------------------------
# application: data hyper-cleaning with an interpolating follower
# ------------------------------------------------------------------------------------------
@dataclass
class HyperCleaning:
    """Data hyper-cleaning with an overparametrised least-squares follower (optimistic).

    Lower level :math:`f(x, w) = \\tfrac12\\lVert A w - (y_{tr} + x)\\rVert^2` with ``p >
    n_train`` features, so :math:`S(x) = \\{w : A w = y_{tr} + x\\}` is an affine subspace of
    dimension ``p - n_train`` (the lower-level Hessian :math:`A^\\top A` is singular); upper
    level the validation loss :math:`F(w) = \\tfrac1{2 n_{val}}\\lVert G w - y_{val}\\rVert^2`.
    The leader's variable ``x`` is a correction of every training label. The optimistic
    hyper-objective is a KKT solve:

    .. math:: \\begin{pmatrix} G^\\top G/n_{val} & A^\\top\\\\ A & 0\\end{pmatrix}
              \\begin{pmatrix} w\\\\ \\lambda\\end{pmatrix} =
              \\begin{pmatrix} G^\\top y_{val}/n_{val}\\\\ y_{tr} + x\\end{pmatrix}.

    Attributes
    ----------
    A, ytr, G, yval : ndarray
        Training features / (corrupted) labels, validation features / clean labels.
    y_clean : ndarray
        The uncorrupted training labels.
    errors : ndarray
        ``ytr - y_clean`` (zero on clean points).
    corrupted : ndarray of bool
    w_true : ndarray
    m : int
        ``n_train`` (the leader's dimension).
    mode : str
        ``"optimistic"``.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """

    A: np.ndarray
    ytr: np.ndarray
    G: np.ndarray
    yval: np.ndarray
    y_clean: np.ndarray
    errors: np.ndarray
    corrupted: np.ndarray
    w_true: np.ndarray
    mode: str = "optimistic"
    rho: float | None = None

    def __post_init__(self):
        n, p = self.A.shape
        self.m = n
        nv = self.G.shape[0]
        K = np.zeros((p + n, p + n))
        K[:p, :p] = self.G.T @ self.G / nv
        K[:p, p:] = self.A.T
        K[p:, :p] = self.A
        self.K = K
        rhs0 = np.r_[self.G.T @ self.yval / nv, self.ytr]
        # the KKT solution is affine in x: w(x) = w0 + W x (one factorisation, used by phi_batch)
        sol0 = np.linalg.solve(K, rhs0)
        E = np.zeros((p + n, n))
        E[p:] = np.eye(n)
        Wx = np.linalg.solve(K, E)
        self.w0, self.Wx = sol0[:p], Wx[:p]

    def inner_solution(self, x: Any) -> np.ndarray:
        """The optimistic follower's answer: the KKT solve (reference, one linear solve).

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        x = check_array("x", x, shape=(self.m,))
        p = self.A.shape[1]
        rhs = np.r_[self.G.T @ self.yval / self.G.shape[0], self.ytr + x]
        return np.linalg.solve(self.K, rhs)[:p]

    def min_norm_solution(self, x: Any) -> np.ndarray:
        """The minimum-norm interpolant :math:`A^+ (y_{tr} + x)` (what GD from 0 on the lower
        level returns): a heuristic selection that ignores the leader.

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        x = check_array("x", x, shape=(self.m,))
        return np.linalg.lstsq(self.A, self.ytr + x, rcond=None)[0]

    def validation_loss(self, w: Any) -> float:
        """:math:`F(w) = \\lVert G w - y_{val}\\rVert^2 / (2 n_{val})`.

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        w = check_array("w", w, shape=(self.A.shape[1],))
        r = self.G @ w - self.yval
        return float(r @ r) / (2 * self.G.shape[0])

    def __call__(self, x: Any) -> float:
        return self.validation_loss(self.inner_solution(x))

    def phi_batch(self, X: Any) -> np.ndarray:
        """Hyper-objective on rows of ``X`` via the precomputed affine map ``w0 + W x``.

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        X = np.asarray(X, dtype=np.float64)
        R = (self.w0 + X @ self.Wx.T) @ self.G.T - self.yval
        return (R**2).sum(-1) / (2 * self.G.shape[0])

    def phi_torch(self, X):
        """Torch hyper-objective through :func:`kkt_oracle_torch` (cached per device/dtype).

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        key = (str(X.device), X.dtype)
        cache = self.__dict__.setdefault("_torch_cache", {})
        if key not in cache:
            cache[key] = kkt_oracle_torch(
                self.A, self.G, self.ytr, self.yval, device=X.device, dtype=X.dtype
            )
        return cache[key](X)


class MinNormSelection:
    r"""The hyper-cleaning leader's objective when the follower answers with the minimum-norm
    interpolant :math:`w = A^+(y_{tr} + x)` (what gradient descent from zero on the lower level
    returns) instead of the optimistic selection: :math:`x \mapsto F(A^+(y_{tr}+x))`.

    Parameters
    ----------
    problem : HyperCleaning

    See: book/bilevel/02-hyper-cleaning.ipynb
    """

    mode = "optimistic"
    rho = None

    def __init__(self, problem: HyperCleaning):
        if not isinstance(problem, HyperCleaning):
            raise TypeError(f"problem must be a HyperCleaning (got {type(problem).__name__})")
        self.problem = problem
        self.m = problem.m
        self.pinv = np.linalg.pinv(problem.A)

    def phi_batch(self, X: Any) -> np.ndarray:
        H = self.problem
        W = (H.ytr + np.asarray(X, dtype=np.float64)) @ self.pinv.T
        R = W @ H.G.T - H.yval
        return (R**2).sum(-1) / (2 * H.G.shape[0])

    def __call__(self, x: Any) -> float:
        x = check_array("x", x, shape=(self.m,))
        return float(self.phi_batch(x[None])[0])


def hyper_cleaning(
    n_train: int = 20, p: int = 40, n_val: int = 100, corruption: float = 0.3, seed: int = 0
) -> HyperCleaning:
    """Generate a hyper-cleaning instance: Gaussian features, a linear teacher, label noise.

    Features ``N(0, 1)``, teacher ``w_true ~ N(0, I/p)`` (labels of unit scale), validation
    labels with ``N(0, 0.01^2)`` noise, and a fraction ``corruption`` of the training labels
    shifted by ``N(0, 5^2)`` errors.

    Parameters
    ----------
    n_train : int
        Training points (>= 1), the leader's dimension.
    p : int
        Features (>= n_train; ``p > n_train`` makes the follower's solution set non-singleton).
    n_val : int
        Validation points (>= p, so the validation loss is strongly convex in ``w``).
    corruption : float
        Fraction of corrupted training labels, in [0, 1].
    seed : int

    Returns
    -------
    HyperCleaning

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    n_train = check_int("n_train", n_train, 1)
    p = check_int("p", p, n_train)
    n_val = check_int("n_val", n_val, p)
    corruption = check_range("corruption", corruption, 0.0, 1.0)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    A = rng.standard_normal((n_train, p))
    G = rng.standard_normal((n_val, p))
    w_true = rng.standard_normal(p) / math.sqrt(p)
    y_clean = A @ w_true
    yval = G @ w_true + 0.01 * rng.standard_normal(n_val)
    n_bad = int(round(corruption * n_train))
    corrupted = np.zeros(n_train, bool)
    corrupted[rng.permutation(n_train)[:n_bad]] = True
    errors = np.where(corrupted, 5.0 * rng.standard_normal(n_train), 0.0)
    return HyperCleaning(A, y_clean + errors, G, yval, y_clean, errors, corrupted, w_true)


def cvxpy_inner_solve(problem: HyperCleaning, x: Any, solver: str = "CLARABEL") -> np.ndarray:
    """The peer: the optimistic inner problem as a cvxpy QP,
    ``minimize ||G w - yval||^2 s.t. A w == ytr + x``.

    Parameters
    ----------
    problem : HyperCleaning
    x : array_like, shape (n_train,)
    solver : str
        An installed cvxpy solver (``"CLARABEL"``, ``"SCS"``, ``"OSQP"``, ...).

    Returns
    -------
    ndarray, shape (p,)

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    import cvxpy as cp

    if not isinstance(problem, HyperCleaning):
        raise TypeError(f"problem must be a HyperCleaning (got {type(problem).__name__})")
    x = check_array("x", x, shape=(problem.m,))
    check_choice("solver", solver, cp.installed_solvers())
    w = cp.Variable(problem.A.shape[1])
    prob = cp.Problem(
        cp.Minimize(cp.sum_squares(problem.G @ w - problem.yval)),
        [problem.A @ w == problem.ytr + x],
    )
    kw = (
        {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
        if solver == "CLARABEL"
        else {}
    )
    prob.solve(solver=solver, **kw)
    return np.asarray(w.value, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# fast path (torch, CPU or CUDA)
# ------------------------------------------------------------------------------------------
def _resolve_device(device):
    import torch

    from ..core.runtime import device as lab_device

    return lab_device() if device is None else torch.device(device)


def kkt_oracle_torch(
    A: Any, G: Any, ytr: Any, yval: Any, device: Any = None, dtype: Any = None
) -> Callable:
    """Batched optimistic hyper-cleaning oracle: factorise the KKT matrix once, then solve for
    any batch of label corrections with one LU solve.

    The KKT matrix does not depend on ``x``, so each evaluation costs two triangular solves
    with ``B`` right-hand sides instead of a fresh factorisation.

    Parameters
    ----------
    A, G, ytr, yval : array_like or tensor
        Training / validation features and labels.
    device : str or torch.device, optional
        Follows ``A`` when it is a tensor, else ``lab.device()``.
    dtype : torch dtype, optional
        Default float64.

    Returns
    -------
    callable
        ``X (B, n_train) tensor -> phi (B,) tensor``.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    import torch

    if device is None and isinstance(A, torch.Tensor):
        device = A.device
    dev = _resolve_device(device)
    dtype = torch.float64 if dtype is None else dtype
    At = torch.as_tensor(check_array("A", A, ndim=2), dtype=dtype, device=dev)
    Gt = torch.as_tensor(check_array("G", G, ndim=2), dtype=dtype, device=dev)
    n, p = At.shape
    if Gt.shape[1] != p:
        raise ValueError(f"G must have {p} columns like A (got shape {tuple(Gt.shape)})")
    yt = torch.as_tensor(check_array("ytr", ytr, shape=(n,)), dtype=dtype, device=dev)
    yv = torch.as_tensor(check_array("yval", yval, shape=(Gt.shape[0],)), dtype=dtype, device=dev)
    nv = Gt.shape[0]
    K = torch.zeros(p + n, p + n, dtype=dtype, device=dev)
    K[:p, :p] = Gt.T @ Gt / nv
    K[:p, p:] = At.T
    K[p:, :p] = At
    LU, piv = torch.linalg.lu_factor(K)
    top = Gt.T @ yv / nv

    def oracle(X):
        X = X.to(device=dev, dtype=dtype)
        shape = X.shape[:-1]
        Xf = X.reshape(-1, n)
        rhs = torch.cat([top.expand(Xf.shape[0], p), yt + Xf], dim=1).T
        w = torch.linalg.lu_solve(LU, piv, rhs)[:p].T
        r = w @ Gt.T - yv
        return ((r**2).sum(-1) / (2 * nv)).reshape(shape)

    return oracle


@dataclass
class BatchedIZOM:
    """What :func:`izom_batched` returns: iterates of every run at the recorded steps.

    Attributes
    ----------
    x : tensor, shape (len(steps), runs, m)
    steps : ndarray of int
    x_last : tensor, shape (runs, m)
    output_index : ndarray of int, shape (runs,)
    x_out : tensor, shape (runs, m)

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    x: Any
    steps: np.ndarray
    x_last: Any
    output_index: np.ndarray
    x_out: Any


def izom_batched(
    problem: Any,
    x0: Any,
    T: int,
    eta: float,
    delta: float,
    n_dirs: int = 1,
    runs: int = 1,
    seed: int = 0,
    *,
    directions: Any = None,
    record_every: int = 1,
    device: Any = None,
    dtype: Any = None,
) -> BatchedIZOM:
    """IZOM for many independent runs at once, averaging ``n_dirs`` two-point estimates per step
    (fast path, torch, CPU or CUDA).

    Each step evaluates the oracle on all ``2 * n_dirs * runs`` perturbed points in one batch.
    With ``n_dirs = runs = 1`` and the same directions it reproduces :func:`izom`.

    Parameters
    ----------
    problem : BilevelProblem or HyperCleaning or callable
        Needs ``phi_torch`` (tensor ``(..., m) -> (...)``) or is itself such a callable.
    x0 : array_like, shape (m,) or (runs, m)
    T : int
        Steps (>= 1).
    eta, delta : float
        Step and radius (> 0).
    n_dirs : int
        Directions averaged per step (>= 1).
    runs : int
        Independent runs (>= 1).
    seed : int
        Seeds the torch generator of the directions and the output indices.
    directions : array_like, shape (T, runs, n_dirs, m), optional
        Given unit directions (replay).
    record_every : int
        Keep every ``record_every``-th iterate (>= 1), plus the last.
    device : optional
        Follows ``x0`` if it is a tensor, else ``lab.device()``.
    dtype : torch dtype, optional
        Default float64.

    Returns
    -------
    BatchedIZOM

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import torch

    phi = getattr(problem, "phi_torch", problem)
    if not callable(phi):
        raise TypeError("problem must have phi_torch or be a callable on tensors")
    if device is None and isinstance(x0, torch.Tensor):
        device = x0.device
    dev = _resolve_device(device)
    dtype = torch.float64 if dtype is None else dtype
    T = check_int("T", T, 1)
    eta = check_positive("eta", eta)
    delta = check_positive("delta", delta)
    n_dirs = check_int("n_dirs", n_dirs, 1)
    runs = check_int("runs", runs, 1)
    seed = check_int("seed", seed, 0)
    record_every = check_int("record_every", record_every, 1)
    x0 = check_array("x0", x0, ndim=(1, 2), min_size=1)
    m = x0.shape[-1]
    x = torch.as_tensor(np.broadcast_to(x0, (runs, m)).copy(), dtype=dtype, device=dev)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if directions is not None:
        U_all = torch.as_tensor(
            check_array("directions", directions, shape=(T, runs, n_dirs, m)), dtype=dtype
        ).to(dev)
    R = torch.randint(0, T, (runs,), generator=gen).numpy()
    x_out = x.clone()
    rec, steps = [x.clone()], [0]
    chunk = 256
    idx = torch.arange(runs, device=dev)
    for k0 in range(0, T, chunk):
        kk = min(chunk, T - k0)
        if directions is None:
            U = torch.randn(kk, runs, n_dirs, m, generator=gen, dtype=dtype).to(dev)
            U = U / U.norm(dim=-1, keepdim=True)
        else:
            U = U_all[k0 : k0 + kk]
        for j in range(kk):
            k = k0 + j
            sel = torch.as_tensor(R == k, device=dev)
            if bool(sel.any()):
                x_out[idx[sel]] = x[sel]
            u = U[j]  # (runs, n_dirs, m)
            P = torch.cat([x[:, None] + delta * u, x[:, None] - delta * u], dim=1)
            vals = phi(P)  # (runs, 2 n_dirs): one batch of 2 n_dirs runs oracle calls
            if not bool(torch.isfinite(vals).all()):
                raise ValueError(f"oracle returned a non-finite value near x = {x[0].tolist()}")
            diff = vals[:, :n_dirs] - vals[:, n_dirs:]
            # eq. ZO averaged over directions
            g = (m / (2.0 * delta) * diff[..., None] * u).mean(1)
            x = x - eta * g  # eq. step
            if (k + 1) % record_every == 0 or k + 1 == T:
                rec.append(x.clone())
                steps.append(k + 1)
    return BatchedIZOM(torch.stack(rec), np.array(steps), x, R, x_out)
