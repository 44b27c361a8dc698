"""The paper's objects: bilevel problems with exact hyper-objective oracles (Toy P / Toy O) and
the generic projected-ascent inner oracle.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.bilevel.fast import psi_star as psi_star_t
from lab.bilevel.reference import psi_star
from lab.core.checks import (
    check_array,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "MODES",
    "BilevelProblem",
    "toy_pessimistic",
    "toy_optimistic",
    "toy_curved",
    "rotating_line",
    "constrained_counterexample",
    "set_maps",
    "ProjectedAscentOracle",
]

MODES = ("optimistic", "pessimistic")


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
        return sign * psi_star_t(X)[0].sum(-1) + sp

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
        check_instance("problem", problem, BilevelProblem)
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
# set smoothness with curvature, the error bound of Theorem 2, a constrained counterexample
# ------------------------------------------------------------------------------------------
def toy_curved(s: float = 2.0) -> BilevelProblem:
    """A pessimistic problem whose solution set is curved (set smooth with ``L_S = 1 > 0``).

    ``x`` in R, ``y`` in R^2, lower level ``f = (y_2 - sin x)^2 / 2`` (an error bound with
    ``tau = 1``), so ``S(x) = {(t, sin x) : t in R}``; upper level
    ``F = x sin(y_1) + s y_2`` (Lipschitz and smooth on bounded ``x``). Then

    ``phi_p(x) = max_t x sin t + s sin x = |x| + s sin x``,

    a convex kink at 0 plus the curvature ``-s sin x`` inherited from the curved set: on
    ``[-2, 2]`` the exact weak-convexity modulus is ``s`` (attained at ``x = pi/2``). With the
    affine map ``y_2 = x`` instead, ``phi_p = |x| + s x`` is convex. The minimiser is
    ``x* = -arccos(1/s)`` for ``s > 1``.

    Parameters
    ----------
    s : float
        Weight of the curved coordinate (> 0).

    Returns
    -------
    BilevelProblem

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    s = check_positive("s", s)

    def phi_batch(X):
        X = np.asarray(X, dtype=np.float64)[..., 0]
        return np.abs(X) + s * np.sin(X)

    def phi_torch(X):
        import torch

        return X[..., 0].abs() + s * torch.sin(X[..., 0])

    def f(x, y):
        return 0.5 * (y[..., 1] - np.sin(x[0])) ** 2

    def grad_y_f(x, y):
        g = np.zeros_like(y)
        g[..., 1] = y[..., 1] - np.sin(x[0])
        return g

    def F(x, y):
        return x[0] * np.sin(y[..., 0]) + s * y[..., 1]

    def grad_y_F(x, y):
        return np.stack([x[0] * np.cos(y[..., 0]), np.full(y.shape[:-1], s)], axis=-1)

    x_star = np.array([-math.acos(1.0 / s)]) if s > 1 else np.zeros(1)
    return BilevelProblem(
        f, F, grad_y_f, grad_y_F, 1, 2, "pessimistic", phi_batch, phi_torch, x_star,
        rho=s, name=f"curved S(x), s = {s:g}", params={"s": s},
    )  # fmt: skip


def rotating_line() -> dict[str, Callable]:
    """An error-bound lower level whose solution set rotates (Theorem 2's setting).

    ``f(x, y) = (a(x) . y)^2 / 2`` with ``a(x) = (cos x, sin x)``: ``S(x)`` is the line through
    0 orthogonal to ``a(x)``, ``{t d(x)}`` with ``d(x) = (-sin x, cos x)``; no strong convexity
    (the Hessian ``a a^T`` is singular) but the error bound
    ``dist(y, S(x)) = |a . y| <= tau ||grad_y f||`` holds with ``tau = 1``. On the piece
    ``|t| <= 1`` both constants of Definition 3 equal 1 (the curvature of ``d`` times
    ``max |t|``), approached from below.

    Returns a dict with ``select_branch(x, t)``, ``sample_x(rng, n)`` (for
    :func:`estimate_set_smoothness`; ``x`` in ``[-4, 4]``, ``t`` uniform on ``[-1, 1]``),
    ``f``, ``grad_y_f`` and ``dist`` (the distance of ``y`` to ``S(x)``), vectorised over rows.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    def a(x):
        return np.stack([np.cos(x), np.sin(x)], axis=-1)

    def select_branch(x, t):
        x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)[:, 0]
        t = np.asarray(t, dtype=np.float64)
        return t[:, None] * np.stack([-np.sin(x), np.cos(x)], axis=1)

    def sample_x(rng, n):
        x1 = rng.uniform(-4.0, 4.0, size=n)
        gap = 10.0 ** rng.uniform(-3.0, math.log10(2.0), size=n) * rng.choice([-1.0, 1.0], n)
        return x1[:, None], (x1 + gap)[:, None], rng.uniform(-1.0, 1.0, size=n)

    def f(x, y):
        return 0.5 * np.sum(a(x) * y, axis=-1) ** 2

    def grad_y_f(x, y):
        return np.sum(a(x) * y, axis=-1, keepdims=True) * a(x)

    def dist(x, y):
        return np.abs(np.sum(a(x) * y, axis=-1))

    return {
        "select_branch": select_branch,
        "sample_x": sample_x,
        "f": f,
        "grad_y_f": grad_y_f,
        "dist": dist,
    }


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


def constrained_counterexample(constrained: bool = True) -> BilevelProblem:
    """The paper's Example 3 (eq. 7): a lower-level constraint destroys weak convexity.

    ``x`` in R, ``y`` in R^2, lower level ``min_{y in [0, 1]^2} ||y - (x, 2)||^2``, upper level
    ``F = -1^T y`` (pessimistic). The follower answers the projection of ``(x, 2)`` onto the box,
    ``S(x) = {(clip(x, 0, 1), 1)}``, so ``phi_p(x) = -1 - clip(x, 0, 1)``: one-sided slopes 0
    and -1 at ``x = 0``, a *concave* kink that no quadratic makes convex. Unconstrained
    (``constrained=False``) the answer is ``(x, 2)`` and ``phi_p(x) = -x - 2`` is convex. ``F``
    and ``f`` are smooth in both cases: only the constraint differs.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    check_instance("constrained", constrained, bool)
    lo, hi = (0.0, 1.0) if constrained else (-np.inf, np.inf)

    def answer(X):
        return np.clip(np.asarray(X, dtype=np.float64)[..., 0], lo, hi)

    def phi_batch(X):
        return -answer(X) - (1.0 if constrained else 2.0)

    def phi_torch(X):
        return -X[..., 0].clamp(lo, hi) - (1.0 if constrained else 2.0)

    def f(x, y):
        return (y[..., 0] - x[0]) ** 2 + (y[..., 1] - 2.0) ** 2

    def grad_y_f(x, y):
        return 2.0 * (y - np.array([x[0], 2.0]))

    def F(x, y):
        return -y.sum(-1)

    def grad_y_F(x, y):
        return -np.ones_like(y)

    return BilevelProblem(
        f, F, grad_y_f, grad_y_F, 1, 2, "pessimistic", phi_batch, phi_torch,
        np.array([1.0 if constrained else 0.0]), rho=None,
        name="constrained follower (Example 3)" if constrained else "unconstrained follower",
        params={"constrained": constrained},
    )  # fmt: skip
