r"""
# Sufficient decision datasets for linear programs

Omar Bennouna, Amine Bennouna, Saurabh Amin, Asuman Ozdaglar. *What Data Enables Optimal
Decisions? An Exact Characterization for Linear Optimization.* NeurIPS 2025.
[arXiv:2505.21692](https://arxiv.org/abs/2505.21692)

**Read this first: what is reconstructed.** Only the abstract, the opening of the
introduction and secondary summaries could be read. The definition of a sufficient decision
dataset and the statement "sufficient iff the span of the data contains the relevant
directions" come from them. The MILP that finds one relevant direction, the iterative
construction, the least-cost MILP, the decoder and the top-k closed form are
**reconstructed** by us and checked numerically against each other; equation numbers below
are ours, not the paper's.

## Problem

A linear program $\min_{x \in X} c^\top x$ over a known polytope
$X = \{x : Gx \le h,\ Ax = b\}$ with an unknown cost $c$ in an open convex set $C$
(here a box). A dataset $D = \{q_1, \dots, q_N\}$ reveals $s = (q_i^\top c)_i$. $D$ is
*sufficient* when the observations determine the optimal set $X^*(c)$ for every $c \in C$:

$$\text{(1)}\quad c, c' \in C,\ c - c' \perp \operatorname{span} D
\;\Rightarrow\; X^*(c) = X^*(c').$$

## Characterisation

$$\text{(2)}\quad \Delta(X, C) = \{x - x' : x, x' \in X^*(c) \text{ for some } c \in C\},
\qquad S^* = \operatorname{span} \Delta(X, C),$$
$$\text{(3)}\quad D \text{ sufficient} \iff S^* \subseteq \operatorname{span} D,
\qquad d^* = \dim S^* \text{ is the size of a minimal sufficient dataset.}$$

## One relevant direction by MILP (reconstructed)

For a direction $w$ maximise $w^\top (x - x')$ over $c \in C$ (closed inner box, margin
$10^{-6}$), $x, x' \in X$ and one dual certificate shared by both:

$$\text{(4)}\quad c + G^\top \lambda + A^\top \mu = 0,\ \lambda \ge 0,\quad
\lambda_i \le M^\lambda z_i,\quad h_i - G_i x \le M^s_i (1 - z_i),\quad
h_i - G_i x' \le M^s_i (1 - z_i),\quad z \in \{0, 1\}^m,$$

with $M^s_i = \max_{x \in X} (h_i - G_i x)$ (one LP per row). The optimum is positive iff
some reachable optimal face has width along $w$. Repeating with $w \perp \operatorname{span} D$
and adding $\delta = x - x'$ to $D$ builds a basis of $S^*$ in $d^* + 1$ MILPs.

## Hiring (top-k, closed form, ours)

$X = \{x \in [0, 1]^n : \sum x = k\}$, values $v \in \prod (l_i, u_i)$, cost $c = -v$.
Candidates $i, j$ are a *relevant pair* iff some $t \in (\max(l_i, l_j), \min(u_i, u_j))$ has

$$\text{(5)}\quad F(t) \le k - 1 \le F(t) + U(t),\quad
F(t) = \#\{\ell \ne i, j : l_\ell \ge t\},\quad U(t) = \#\{\ell \ne i, j : l_\ell < t < u_\ell\}.$$

$S^* = \operatorname{span}\{e_i - e_j : (i, j) \text{ relevant}\}$ and $d^*$ = #vertices
$-$ #components of the relevant graph.

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..core.checks import check_array, check_choice, check_int, check_positive

__all__ = [
    "Polytope",
    "BoxSet",
    "topk_problem",
    "find_direction",
    "minimal_sdd",
    "is_sufficient",
    "least_cost_sdd",
    "decode",
    "sample_equivalent_pairs",
    "violation_rate_mc",
    "topk_relevant_pairs",
    "topk_sdd",
    "topk_least_cost",
    "span_rank",
    "same_span",
]

_MARGIN = 1e-6


# ----------------------------------------------------------------------------------------
# The two sets: a polytope X of decisions and a box C of costs.
# ----------------------------------------------------------------------------------------
@dataclass
class Polytope:
    """A bounded, nonempty polytope ``X = {x : G x <= h, A x = b}``.

    Parameters
    ----------
    G, h : array_like
        Inequalities, shapes ``(m, d)`` and ``(m,)``.
    A, b : array_like, optional
        Equalities, shapes ``(p, d)`` and ``(p,)``.

    Raises ``ValueError`` when ``X`` is empty or unbounded (checked with ``2 d`` LPs).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """

    G: np.ndarray
    h: np.ndarray
    A: np.ndarray | None = None
    b: np.ndarray | None = None
    _vertices: np.ndarray | None = field(default=None, repr=False)
    _slack: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.G = check_array("G", self.G, ndim=2, min_size=1)
        m, d = self.G.shape
        self.h = check_array("h", self.h, shape=(m,))
        if (self.A is None) != (self.b is None):
            raise ValueError("A and b must be given together (got only one of them)")
        if self.A is None:
            self.A = np.zeros((0, d))
            self.b = np.zeros(0)
        self.A = check_array("A", self.A, ndim=2)
        if self.A.shape[1] != d and self.A.shape[0] > 0:
            raise ValueError(f"A must have {d} columns like G (got shape {self.A.shape})")
        self.A = self.A.reshape(-1, d)
        self.b = check_array("b", self.b, shape=(self.A.shape[0],))
        # boundedness and nonemptiness: min and max of every coordinate
        for sign in (1.0, -1.0):
            for i in range(d):
                e = np.zeros(d)
                e[i] = sign
                res = self._lp(e)
                if res.status == 2:
                    raise ValueError("X is empty: G x <= h, A x = b has no solution")
                if res.status == 3:
                    raise ValueError(f"X is unbounded along coordinate {i}; X must be a polytope")

    @property
    def dim(self) -> int:
        """Ambient dimension ``d``."""
        return self.G.shape[1]

    def _lp(self, c):
        from scipy.optimize import linprog

        A = self.A if self.A.shape[0] else None
        b = self.b if self.A.shape[0] else None
        return linprog(c, A_ub=self.G, b_ub=self.h, A_eq=A, b_eq=b, bounds=(None, None))

    def solve(self, c) -> np.ndarray:
        """An optimal vertex of ``min c^T x`` over ``X`` (HiGHS simplex)."""
        c = check_array("c", c, shape=(self.dim,))
        res = self._lp(c)
        if res.status != 0:  # pragma: no cover - X is a validated polytope
            raise RuntimeError(f"LP failed: {res.message}")
        return res.x

    def value(self, c) -> float:
        """The optimal value ``min_{x in X} c^T x``."""
        return float(np.dot(c, self.solve(c)))

    def slack_bounds(self) -> np.ndarray:
        """``M^s_i = max_{x in X} (h_i - G_i x)``, exact, one LP per row (big-M of eq. (4))."""
        if self._slack is None:
            self._slack = np.array([self.h[i] - self.value(self.G[i]) for i in range(len(self.h))])
        return self._slack

    def vertices(self, max_bases: int = 200_000) -> np.ndarray:
        """All vertices, by enumerating sets of ``d - p`` active inequalities (small X only).

        Raises ``ValueError`` when more than ``max_bases`` candidate sets would be tried.
        """
        if self._vertices is not None:
            return self._vertices
        m, d = self.G.shape
        p = self.A.shape[0]
        r = d - np.linalg.matrix_rank(self.A) if p else d
        count = math.comb(m, r)
        if count > max_bases:
            raise ValueError(
                f"vertex enumeration would try {count} active sets (max_bases={max_bases})"
            )
        found = []
        for rows in itertools.combinations(range(m), r):
            M = np.vstack([self.G[list(rows)], self.A])
            if np.linalg.matrix_rank(M) < d:
                continue
            rhs = np.concatenate([self.h[list(rows)], self.b])
            x = np.linalg.lstsq(M, rhs, rcond=None)[0]
            if np.all(self.G @ x <= self.h + 1e-9) and np.allclose(M @ x, rhs, atol=1e-9):
                if not any(np.allclose(x, y, atol=1e-9) for y in found):
                    found.append(x)
        self._vertices = np.array(found)
        return self._vertices

    @classmethod
    def topk(cls, n: int, k: int) -> Polytope:
        """The hiring polytope ``{x in [0, 1]^n : sum x = k}`` (vertices: the k-subsets)."""
        n = check_int("n", n, 2)
        k = check_int("k", k, 1, n - 1)
        P = cls(np.vstack([np.eye(n), -np.eye(n)]), np.r_[np.ones(n), np.zeros(n)],
                np.ones((1, n)), np.array([float(k)]))  # fmt: skip
        if math.comb(n, k) <= 200_000:
            V = np.zeros((math.comb(n, k), n))
            for r, S in enumerate(itertools.combinations(range(n), k)):
                V[r, list(S)] = 1.0
            P._vertices = V
        return P


@dataclass
class BoxSet:
    """An open box of costs ``C = prod_i (lo_i, hi_i)``.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """

    lo: np.ndarray
    hi: np.ndarray

    def __post_init__(self):
        self.lo = check_array("lo", self.lo, ndim=1, min_size=1)
        self.hi = check_array("hi", self.hi, shape=self.lo.shape)
        bad = np.flatnonzero(self.lo >= self.hi)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"BoxSet needs lo < hi in every coordinate (coordinate {i}: "
                f"lo={self.lo[i]:g} >= hi={self.hi[i]:g})"
            )

    @property
    def dim(self) -> int:
        return self.lo.size

    @property
    def center(self) -> np.ndarray:
        return 0.5 * (self.lo + self.hi)

    def contains(self, c) -> np.ndarray:
        """Whether each row of ``c`` lies in the open box."""
        c = np.asarray(c, dtype=float)
        return np.all((c > self.lo) & (c < self.hi), axis=-1)

    def inner(self, margin: float = _MARGIN) -> tuple[np.ndarray, np.ndarray]:
        """The closed inner box ``[lo + margin, hi - margin]`` (the MILP's stand-in for open C)."""
        margin = min(check_positive("margin", margin), 0.25 * float(np.min(self.hi - self.lo)))
        return self.lo + margin, self.hi - margin

    def sample(self, n: int, rng=None) -> np.ndarray:
        """``n`` uniform samples, shape ``(n, d)``."""
        n = check_int("n", n, 1)
        rng = np.random.default_rng(rng)
        return self.lo + (self.hi - self.lo) * rng.random((n, self.dim))


def topk_problem(lo, hi, k: int) -> tuple[Polytope, BoxSet]:
    """Hiring: hire ``k`` of ``n`` candidates with values in ``(lo_i, hi_i)``.

    Returns ``(X, C)`` with ``X = Polytope.topk(n, k)`` and the cost box ``C = (-hi, -lo)``
    (minimising ``-v^T x`` hires the top-k values).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    lo = check_array("lo", lo, ndim=1, min_size=2)
    hi = check_array("hi", hi, shape=lo.shape)
    return Polytope.topk(lo.size, k), BoxSet(-hi, -lo)


def _check_pair(X, C):
    if not isinstance(X, Polytope):
        raise TypeError(f"X must be a Polytope (got {type(X).__name__})")
    if not isinstance(C, BoxSet):
        raise TypeError(f"C must be a BoxSet (got {type(C).__name__})")
    if X.dim != C.dim:
        raise ValueError(f"X and C must have the same dimension (got {X.dim} and {C.dim})")


def _check_dataset(D, d: int) -> np.ndarray:
    D = check_array("D", D if np.size(D) else np.zeros((0, d)), ndim=(1, 2))
    D = D.reshape(-1, d) if D.size else np.zeros((0, d))
    if D.shape[1] != d:
        raise ValueError(f"D must have {d} columns (got shape {D.shape})")
    return D


def _orth_complement(D: np.ndarray, d: int, tol: float = 1e-9) -> np.ndarray:
    """Orthonormal basis (columns) of ``span(D)^perp``."""
    if D.shape[0] == 0:
        return np.eye(d)
    U, s, _ = np.linalg.svd(D.T, full_matrices=True)
    r = int(np.sum(s > tol * max(1.0, s[0])))
    return U[:, r:]


def span_rank(D, tol: float = 1e-7) -> int:
    """Rank of the rows of ``D`` after normalising each row (robust to scale)."""
    D = np.atleast_2d(np.asarray(D, dtype=float))
    if D.size == 0:
        return 0
    norms = np.linalg.norm(D, axis=1)
    D = D[norms > tol] / norms[norms > tol, None]
    return int(np.linalg.matrix_rank(D, tol=tol)) if D.size else 0


def same_span(D1, D2, tol: float = 1e-7) -> bool:
    """Whether the rows of ``D1`` and ``D2`` span the same space (rank and joint rank agree)."""
    D1, D2 = np.atleast_2d(D1), np.atleast_2d(D2)
    parts = [M for M in (D1, D2) if np.size(M)]
    joint = span_rank(np.vstack(parts), tol) if parts else 0
    return span_rank(D1, tol) == span_rank(D2, tol) == joint


@contextlib.contextmanager
def _quiet_solver():
    """Silence HiGHS debug lines that bypass ``disp=False`` (printed at the C level, fd 1/2)."""
    fds = [1, 2]  # the process's stdout/stderr (in a kernel: the pipes ipykernel forwards)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        saved = [os.dup(fd) for fd in fds]
    except OSError:  # pragma: no cover - no such file descriptors
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
        yield
    finally:
        for fd, old in zip(fds, saved, strict=True):
            os.dup2(old, fd)
            os.close(old)
        os.close(null)


def _milp(*args, **kwargs):
    from scipy.optimize import milp

    with _quiet_solver():
        return milp(*args, **kwargs)


# ----------------------------------------------------------------------------------------
# eq. (4): one relevant direction by MILP (reconstructed formulation).
# ----------------------------------------------------------------------------------------
def find_direction(
    X: Polytope,
    C: BoxSet,
    w,
    M_dual: float | None = None,
    tol: float = 1e-6,
    *,
    return_cost: bool = False,
    time_limit: float = 60.0,
):
    """Maximise ``w^T (x - x')`` over costs ``c in C`` and two points optimal for ``c``.

    Parameters
    ----------
    X, C : Polytope, BoxSet
        Decisions and costs.
    w : array_like, shape (d,)
        Direction to probe (any scale; it is normalised).
    M_dual : float, optional
        Big-M on the dual variables; default ``10 (max|C| + 1) d``.
    tol : float
        Values ``<= tol`` count as zero (no relevant direction along ``w``).
    return_cost : bool
        Also return the cost ``c`` at which ``x`` and ``x'`` tie.

    Returns
    -------
    (delta, value) or (delta, value, c)
        ``delta = x - x'`` (``None`` when ``value <= tol``) and the optimal value.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    from scipy.optimize import Bounds, LinearConstraint

    _check_pair(X, C)
    d = X.dim
    w = check_array("w", w, shape=(d,))
    nw = np.linalg.norm(w)
    if nw == 0:
        raise ValueError("w must be nonzero")
    w = w / nw
    tol = check_positive("tol", tol)
    if M_dual is None:
        M_dual = 10.0 * (float(np.max(np.abs(np.r_[C.lo, C.hi]))) + 1.0) * d
    M_dual = check_positive("M_dual", M_dual)
    G, h, A, b = X.G, X.h, X.A, X.b
    m, p = G.shape[0], A.shape[0]
    Ms = np.maximum(X.slack_bounds(), 0.0) * (1 + 1e-9) + 1e-9
    # variable layout: c (d) | x (d) | x' (d) | lambda (m) | mu (p) | z (m)
    n_var = 3 * d + 2 * m + p
    ic, ix, ix2, il, imu, iz = 0, d, 2 * d, 3 * d, 3 * d + m, 3 * d + m + p
    rows, lo_b, hi_b = [], [], []

    def add(block_rows, lb, ub):
        rows.append(block_rows)
        lo_b.append(np.broadcast_to(lb, block_rows.shape[0]))
        hi_b.append(np.broadcast_to(ub, block_rows.shape[0]))

    for start in (ix, ix2):
        R = np.zeros((m, n_var))
        R[:, start : start + d] = G
        add(R, -np.inf, h)  # x in X: G x <= h
        if p:
            R = np.zeros((p, n_var))
            R[:, start : start + d] = A
            add(R, b, b)  # A x = b
        R = np.zeros((m, n_var))
        R[:, start : start + d] = -G
        R[:, iz : iz + m] = np.diag(Ms)
        add(R, -np.inf, Ms - h)  # eq. (4): h_i - G_i x <= M^s_i (1 - z_i)
    R = np.zeros((d, n_var))
    R[:, ic : ic + d] = np.eye(d)
    R[:, il : il + m] = G.T
    if p:
        R[:, imu : imu + p] = A.T
    add(R, 0.0, 0.0)  # eq. (4): c + G^T lambda + A^T mu = 0 (one dual for x and x')
    R = np.zeros((m, n_var))
    R[:, il : il + m] = np.eye(m)
    R[:, iz : iz + m] = -M_dual * np.eye(m)
    add(R, -np.inf, 0.0)  # eq. (4): lambda_i <= M^lambda z_i
    cons = LinearConstraint(np.vstack(rows), np.concatenate(lo_b), np.concatenate(hi_b))
    clo, chi = C.inner()
    lb = np.r_[clo, np.full(2 * d, -np.inf), np.zeros(m), np.full(p, -np.inf), np.zeros(m)]
    ub = np.r_[chi, np.full(2 * d, np.inf), np.full(m, M_dual), np.full(p, np.inf), np.ones(m)]
    obj = np.zeros(n_var)
    obj[ix : ix + d] = -w  # maximise w^T (x - x')
    obj[ix2 : ix2 + d] = w
    integrality = np.r_[np.zeros(3 * d + m + p), np.ones(m)]
    res = _milp(
        obj,
        constraints=cons,
        bounds=Bounds(lb, ub),
        integrality=integrality,
        options={"disp": False, "time_limit": float(time_limit), "mip_rel_gap": 1e-9},
    )
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"MILP (eq. 4) did not finish with a certificate: {res.message}")
    value = float(-res.fun)
    x, x2, c = res.x[ix : ix + d], res.x[ix2 : ix2 + d], res.x[ic : ic + d]
    delta = None
    if value > tol:
        delta = x - x2
        delta[np.abs(delta) < 1e-7 * np.max(np.abs(delta))] = 0.0  # solver noise
    return (delta, value, c) if return_cost else (delta, value)


def minimal_sdd(
    X: Polytope,
    C: BoxSet,
    rng=None,
    directions: str = "random",
    tol: float = 1e-6,
    M_dual: float | None = None,
    *,
    return_info: bool = False,
):
    """Iterative construction of a minimal sufficient decision dataset (one MILP per direction).

    Parameters
    ----------
    X, C : Polytope, BoxSet
    rng : int or numpy Generator, optional
        Seeds the random probe directions.
    directions : {"random", "basis"}
        ``"random"``: one Gaussian probe in ``span(D)^perp`` per MILP (stops at the first zero,
        exact almost surely). ``"basis"``: probe the basis of ``span(D)^perp`` in turn (stops
        when every basis vector gives zero, exact deterministically).
    return_info : bool
        Also return a dict with the MILP values, times and tie costs.

    Returns
    -------
    D : ndarray, shape (d*, d)
        Normalised directions ``x - x'`` spanning ``S*``.
    n_milp : int
        Number of MILP solves (``d* + 1`` for ``"random"``; ``d*`` when ``d* = d``, no certificate needed).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    _check_pair(X, C)
    check_choice("directions", directions, ["random", "basis"])
    rng = np.random.default_rng(rng)
    d = X.dim
    D = np.zeros((0, d))
    values, times, costs = [], [], []
    n_milp = 0
    while True:
        P = _orth_complement(D, d)
        if P.shape[1] == 0:
            break
        if directions == "random":
            probes = [P @ rng.standard_normal(P.shape[1])]  # random w in span(D)^perp
        else:
            probes = list(P.T)
        added = False
        for w in probes:
            t0 = time.perf_counter()
            delta, val, c = find_direction(X, C, w, M_dual, tol, return_cost=True)
            times.append(time.perf_counter() - t0)
            values.append(val)
            n_milp += 1
            if delta is not None:
                new = P @ (P.T @ delta)
                if np.linalg.norm(new) > 1e-6 * np.linalg.norm(delta):  # new direction
                    D = np.vstack([D, delta / np.linalg.norm(delta)])
                    costs.append(c)
                    added = True
                    break
        if not added:
            break  # certificate: no reachable optimal face has width along the probes
    if return_info:
        return D, n_milp, {"values": values, "times": times, "tie_costs": costs}
    return D, n_milp


def is_sufficient(D, X: Polytope, C: BoxSet, tol: float = 1e-6, M_dual: float | None = None):
    """Exact sufficiency test, eq. (3): probe every basis vector of ``span(D)^perp`` by MILP.

    Returns
    -------
    (bool, witness)
        ``witness`` is ``None`` when sufficient, else ``(delta, c)``: a relevant direction
        outside ``span D`` and a cost at which it is an optimal edge.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    _check_pair(X, C)
    D = _check_dataset(D, X.dim)
    P = _orth_complement(D, X.dim)
    for w in P.T:  # max w^T delta = max (-w)^T delta (swap x and x'), so +w suffices
        delta, _, c = find_direction(X, C, w, M_dual, tol, return_cost=True)
        if delta is not None:
            return False, (delta, c)
    return True, None


def least_cost_sdd(basis, queries, costs, *, bound: float = 100.0, time_limit: float = 60.0):
    """Cheapest set of candidate queries whose span contains ``span(basis)`` (reconstructed MILP).

    minimise ``sum_j costs_j y_j`` s.t. ``sum_j alpha_jl q_j = b_l`` for every basis vector
    ``b_l``, ``|alpha_jl| <= bound * y_j``, ``y in {0, 1}^K``.

    Parameters
    ----------
    basis : array_like, shape (r, d)
        A basis of ``S*`` (e.g. from :func:`minimal_sdd`); ``r = 0`` selects nothing.
    queries : array_like, shape (K, d)
        Candidate measurement vectors.
    costs : array_like, shape (K,)
        Nonnegative prices.

    Returns
    -------
    (selected, total_cost) : (ndarray of int, float)

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    from scipy.optimize import Bounds, LinearConstraint

    Q = check_array("queries", queries, ndim=2, min_size=1)
    K, d = Q.shape
    B = _check_dataset(basis, d)
    kappa = check_array("costs", costs, shape=(K,))
    if np.any(kappa < 0):
        raise ValueError("costs must be >= 0")
    bound = check_positive("bound", bound)
    r = B.shape[0]
    if r == 0:
        return np.zeros(0, dtype=int), 0.0
    # variables: alpha (K * r, column l at l*K:(l+1)*K) | y (K)
    n_var = K * r + K
    eq = np.zeros((d * r, n_var))
    for l_ in range(r):
        eq[l_ * d : (l_ + 1) * d, l_ * K : (l_ + 1) * K] = Q.T  # sum_j alpha_jl q_j = b_l
    ineq = np.zeros((2 * K * r, n_var))
    for l_ in range(r):
        for j in range(K):
            row = 2 * (l_ * K + j)
            ineq[row, l_ * K + j] = 1.0
            ineq[row + 1, l_ * K + j] = -1.0
            ineq[row : row + 2, K * r + j] = -bound  # |alpha_jl| <= M y_j
    cons = [
        LinearConstraint(eq, B.reshape(-1), B.reshape(-1)),
        LinearConstraint(ineq, -np.inf, 0.0),
    ]
    obj = np.r_[np.zeros(K * r), kappa]
    res = _milp(
        obj,
        constraints=cons,
        bounds=Bounds(
            np.r_[np.full(K * r, -bound), np.zeros(K)], np.r_[np.full(K * r, bound), np.ones(K)]
        ),
        integrality=np.r_[np.zeros(K * r), np.ones(K)],
        options={"disp": False, "time_limit": float(time_limit)},
    )
    if res.status != 0 or res.x is None:
        raise RuntimeError(
            f"least-cost MILP failed (is span(queries) ⊇ span(basis)?): {res.message}"
        )
    sel = np.flatnonzero(res.x[K * r :] > 0.5)
    return sel, float(kappa[sel].sum())


def decode(D, s, X: Polytope, C: BoxSet) -> np.ndarray:
    """Decision from observations: pick ``c~ in C`` with ``D c~ = s`` (cvxpy projection of the
    box centre, CLARABEL) and return an optimal vertex for ``c~``.

    Correct for every true cost in ``C`` when ``D`` is sufficient (observational equivalence,
    eq. (1)).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    import cvxpy as cp

    _check_pair(X, C)
    D = _check_dataset(D, X.dim)
    s = check_array("s", s, shape=(D.shape[0],))
    clo, chi = C.inner()
    if D.shape[0] == 0:
        return X.solve(C.center)
    c = cp.Variable(X.dim)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(c - C.center)), [D @ c == s, c >= clo, c <= chi])
    prob.solve(solver=cp.CLARABEL)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise ValueError(f"no cost in C matches the observations s (cvxpy status {prob.status})")
    return X.solve(np.asarray(c.value))


# ----------------------------------------------------------------------------------------
# Monte Carlo refutation, eq. (1): observationally equivalent pairs (c, c').
# ----------------------------------------------------------------------------------------
def sample_equivalent_pairs(D, C: BoxSet, trials: int, rng=None):
    """``trials`` pairs ``c, c' = c + t u`` in ``C`` with ``u ⊥ span D`` (same observations)."""
    d = C.dim
    D = _check_dataset(D, d)
    trials = check_int("trials", trials, 1)
    rng = np.random.default_rng(rng)
    clo, chi = C.inner()
    c = clo + (chi - clo) * rng.random((trials, d))
    P = _orth_complement(D, d)
    u = rng.standard_normal((trials, P.shape[1])) @ P.T  # u in span(D)^perp
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = (clo - c) / u, (chi - c) / u
    t_lo = np.where(u != 0, np.minimum(a, b), -np.inf).max(axis=1)
    t_hi = np.where(u != 0, np.maximum(a, b), np.inf).min(axis=1)
    t_lo, t_hi = np.nan_to_num(t_lo, neginf=0.0), np.nan_to_num(t_hi, posinf=0.0)
    t = t_lo + (t_hi - t_lo) * rng.random(trials)
    return c, c + t[:, None] * u


def violation_rate_mc(
    D,
    X: Polytope,
    C: BoxSet,
    trials: int = 2000,
    rng=None,
    backend: str = "auto",
    device=None,
    chunk: int = 4096,
) -> float:
    """Fraction of observationally equivalent pairs whose optimal decisions differ.

    A sufficient ``D`` gives exactly 0; a positive rate refutes sufficiency (sampling can
    refute, never certify).

    Parameters
    ----------
    backend : {"auto", "numpy", "torch"}
        ``"numpy"``: reference, one HiGHS LP per cost vector. ``"torch"``: batched
        ``argmin_v c^T v`` over the vertex list of ``X`` (many costs at once; needs
        ``X.vertices()``). ``"auto"``: torch when the vertices are available.
    device : torch device, optional
        For the torch path; default ``lab.device()``.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    _check_pair(X, C)
    check_choice("backend", backend, ["auto", "numpy", "torch"])
    chunk = check_int("chunk", chunk, 1)
    c1, c2 = sample_equivalent_pairs(D, C, trials, rng)
    if backend == "auto":
        try:
            X.vertices()
            backend = "torch"
        except ValueError:
            backend = "numpy"
    if backend == "numpy":
        wrong = 0
        for a, b in zip(c1, c2, strict=True):  # eq. (1): X*(c) = X*(c') ?
            xa, xb = X.solve(a), X.solve(b)
            wrong += int(not np.allclose(xa, xb, atol=1e-7))
        return wrong / trials
    return float(_violations_torch(X.vertices(), c1, c2, device, chunk).mean())


def _violations_torch(V, c1, c2, device=None, chunk: int = 4096):
    """Batched fast path: optimal vertex index for many costs at once, per pair compare."""
    import torch

    from .. import device as lab_device

    dev = torch.device(device) if device is not None else lab_device()
    Vt = torch.as_tensor(V, dtype=torch.float64, device=dev)
    out = []
    for s in range(0, c1.shape[0], chunk):
        a = torch.as_tensor(c1[s : s + chunk], dtype=torch.float64, device=dev)
        b = torch.as_tensor(c2[s : s + chunk], dtype=torch.float64, device=dev)
        ia = torch.argmin(a @ Vt.T, dim=1)  # X*(c): the best vertex
        ib = torch.argmin(b @ Vt.T, dim=1)
        out.append((ia != ib).cpu().numpy())
    return np.concatenate(out)


# ----------------------------------------------------------------------------------------
# eq. (5): the top-k closed form.
# ----------------------------------------------------------------------------------------
def topk_relevant_pairs(lo, hi, k: int) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, that can tie for the k-th place for some values in the box.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    lo = check_array("lo", lo, ndim=1, min_size=2)
    hi = check_array("hi", hi, shape=lo.shape)
    n = lo.size
    k = check_int("k", k, 1, n - 1)
    if np.any(lo >= hi):
        raise ValueError("intervals must satisfy lo < hi")
    ends = np.unique(np.r_[lo, hi])
    mids = 0.5 * (ends[1:] + ends[:-1])  # counts are constant between endpoints
    forced = lo[None, :] >= mids[:, None]  # (T, n): l_l >= t
    free = (lo[None, :] < mids[:, None]) & (mids[:, None] < hi[None, :])
    F_all, U_all = forced.sum(1), free.sum(1)
    pairs = set()
    for i in range(n):
        for j in range(i + 1, n):
            a, b = max(lo[i], lo[j]), min(hi[i], hi[j])
            inside = (mids > a) & (mids < b)
            if not inside.any():
                continue
            # i and j are free at these t, so remove them from U
            F, U = F_all[inside], U_all[inside] - 2
            if np.any((F <= k - 1) & (k - 1 <= F + U)):  # eq. (5)
                pairs.add((i, j))
    return pairs


def topk_sdd(lo, hi, k: int, queries: str = "comparisons") -> np.ndarray:
    """Closed-form minimal dataset for hiring.

    ``"comparisons"``: one ``e_i - e_j`` per edge of a spanning forest of the relevant graph
    (size ``d*`` = #vertices - #components). ``"interviews"``: ``e_i`` for every candidate in a
    relevant pair (the cheapest interview-only dataset).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    check_choice("queries", queries, ["comparisons", "interviews"])
    pairs = sorted(topk_relevant_pairs(lo, hi, k))
    n = np.asarray(lo).size
    if queries == "interviews":
        nodes = sorted({i for p in pairs for i in p})
        return np.eye(n)[nodes] if nodes else np.zeros((0, n))
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    rows = []
    for i, j in pairs:  # union-find spanning forest
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[ri] = rj
            e = np.zeros(n)
            e[i], e[j] = 1.0, -1.0
            rows.append(e)
    return np.array(rows) if rows else np.zeros((0, n))


def _components(n: int, pairs) -> list[list[int]]:
    """Connected components (with at least one edge) of the graph on ``range(n)``."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs:
        parent[root(i)] = root(j)
    nodes = sorted({i for p in pairs for i in p})
    comps: dict[int, list[int]] = {}
    for i in nodes:
        comps.setdefault(root(i), []).append(i)
    return list(comps.values())


def topk_least_cost(lo, hi, k: int, interview_cost: float = 1.0, comparison_cost: float = 1.0):
    """Closed-form cheapest sufficient dataset for hiring with priced interviews and comparisons.

    Each component of the relevant graph with ``m`` candidates needs its ``m - 1`` independent
    differences: either ``m - 1`` comparisons along a tree or ``m`` interviews (mixing is never
    cheaper: ``p + (m - 1) kappa >= min((m - 1) kappa, m p)``), so the cost is
    ``sum_components min((m - 1) kappa, m p)``. (Ours: a minimum spanning tree of the
    relevant graph augmented by a "known value" node; queries outside the relevant candidates
    never help at uniform prices.)

    Returns
    -------
    (Q, total) : the selected queries (rows) and their total price.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    lo = check_array("lo", lo, ndim=1, min_size=2)
    p = check_positive("interview_cost", interview_cost)
    kappa = check_positive("comparison_cost", comparison_cost)
    n = lo.size
    rows, total = [], 0.0
    for comp in _components(n, topk_relevant_pairs(lo, hi, k)):
        m = len(comp)
        if (m - 1) * kappa <= m * p:  # a star of comparisons
            for j in comp[1:]:
                e = np.zeros(n)
                e[comp[0]], e[j] = 1.0, -1.0
                rows.append(e)
            total += (m - 1) * kappa
        else:  # interview everyone in the component
            rows.extend(np.eye(n)[comp])
            total += m * p
    return (np.array(rows) if rows else np.zeros((0, n))), total
