"""Data hyper-cleaning with an overparametrised (interpolating) follower: affine S(x), KKT and
cvxpy inner solves, the min-norm selection.

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
    check_range,
)

__all__ = [
    "HyperCleaning",
    "MinNormSelection",
    "hyper_cleaning",
    "cvxpy_inner_solve",
]


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
        self.A = check_array("A", self.A, ndim=2, min_size=1)
        n, p = self.A.shape
        if p < n:
            raise ValueError(f"A must have at least as many columns as rows, got shape {(n, p)}")
        self.ytr = check_array("ytr", self.ytr, shape=(n,))
        self.G = check_array("G", self.G, ndim=2, shape=(None, p), min_size=1)
        self.yval = check_array("yval", self.yval, shape=(self.G.shape[0],))
        self.y_clean = check_array("y_clean", self.y_clean, shape=(n,))
        self.errors = check_array("errors", self.errors, shape=(n,))
        self.corrupted = check_array("corrupted", self.corrupted, shape=(n,), dtype=bool)
        self.w_true = check_array("w_true", self.w_true, shape=(p,))
        self.mode = check_choice("mode", self.mode, ("optimistic",))
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

    def torch_oracle(self, device: Any = None, dtype: Any = None) -> Callable:
        """The batched torch oracle :func:`~lab.bilevel.fast.kkt_oracle` on ``device`` (one
        factorisation of the KKT matrix; build it once per run).

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        from lab.bilevel.fast import kkt_oracle

        return kkt_oracle(self.A, self.G, self.ytr, self.yval, device=device, dtype=dtype)

    def phi_torch(self, X):
        """Torch hyper-objective of a tensor ``(..., m)`` (builds :meth:`torch_oracle`; for
        many calls build that once).

        See: book/bilevel/02-hyper-cleaning.ipynb
        """
        return self.torch_oracle(X.device, X.dtype)(X)


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
        check_instance("problem", problem, HyperCleaning)
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

    check_instance("problem", problem, HyperCleaning)
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
