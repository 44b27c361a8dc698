"""Reference kernels (numpy + scipy HiGHS): the MILP of eq. (4), the iterative construction, the
exact sufficiency test, the least-cost MILP, the decoder and the Monte Carlo check of eq. (1).

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np

from lab.core.checks import check_array, check_choice, check_instance, check_int, check_positive
from lab.lp_sufficiency.problems import BoxSet, Polytope, check_dataset, check_pair

__all__ = [
    "find_direction",
    "minimal_sdd",
    "is_sufficient",
    "least_cost_sdd",
    "decode",
    "sample_equivalent_pairs",
    "violation_rate_mc",
    "span_rank",
    "same_span",
]


def _orth_complement(D: np.ndarray, d: int, tol: float = 1e-9) -> np.ndarray:
    """Orthonormal basis (columns) of ``span(D)^perp``."""
    if D.shape[0] == 0:
        return np.eye(d)
    U, s, _ = np.linalg.svd(D.T, full_matrices=True)
    r = int(np.sum(s > tol * max(1.0, s[0])))
    return U[:, r:]


def span_rank(D, tol: float = 1e-7) -> int:
    """Rank of the rows of ``D`` after normalising each row (robust to scale).

    ``D`` is a finite 1-D or 2-D array (a 1-D array is one row); ``tol`` > 0.
    """
    D = np.atleast_2d(check_array("D", D, ndim=(1, 2)))
    tol = check_positive("tol", tol)
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


_TIME_LIMIT = 60.0  # seconds per MILP on the walked path (find_direction's default)


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
    check_pair(X, C)
    w = check_array("w", w, shape=(X.dim,))
    if np.linalg.norm(w) == 0:
        raise ValueError("w must be nonzero")
    tol = check_positive("tol", tol)
    M_dual = check_positive("M_dual", _default_M_dual(C, X.dim) if M_dual is None else M_dual)
    time_limit = check_positive("time_limit", time_limit)
    delta, value, c = _find_direction(X, C, w, M_dual, tol, time_limit)
    return (delta, value, c) if return_cost else (delta, value)


def _default_M_dual(C: BoxSet, d: int) -> float:
    return 10.0 * (float(np.max(np.abs(np.r_[C.lo, C.hi]))) + 1.0) * d


def _direction_constraints(X: Polytope, C: BoxSet, M_dual: float):
    """The constraints and bounds of eq. (4) on ``c | x | x' | lambda | mu | z``."""
    from scipy.optimize import Bounds, LinearConstraint

    d = X.dim
    G, h, A, b = X.G, X.h, X.A, X.b
    m, p = G.shape[0], A.shape[0]
    Ms = np.maximum(X.slack_bounds(), 0.0) * (1 + 1e-9) + 1e-9
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
    return cons, Bounds(lb, ub)


def _find_direction(X: Polytope, C: BoxSet, w, M_dual: float, tol: float, time_limit: float):
    """Unchecked eq. (4): ``(delta, value, c)`` for a direction ``w`` (any nonzero scale)."""
    d = X.dim
    w = w / np.linalg.norm(w)
    m, p = X.G.shape[0], X.A.shape[0]
    n_var = 3 * d + 2 * m + p
    cons, bounds = _direction_constraints(X, C, M_dual)
    obj = np.zeros(n_var)
    obj[d : 2 * d] = -w  # maximise w^T (x - x')
    obj[2 * d : 3 * d] = w
    integrality = np.r_[np.zeros(3 * d + m + p), np.ones(m)]
    res = _milp(
        obj,
        constraints=cons,
        bounds=bounds,
        integrality=integrality,
        options={"disp": False, "time_limit": float(time_limit), "mip_rel_gap": 1e-9},
    )
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"MILP (eq. 4) did not finish with a certificate: {res.message}")
    value = float(-res.fun)
    x, x2, c = res.x[d : 2 * d], res.x[2 * d : 3 * d], res.x[:d]
    delta = None
    if value > tol:
        delta = x - x2
        delta[np.abs(delta) < 1e-7 * np.max(np.abs(delta))] = 0.0  # solver noise
    return delta, value, c


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
    check_pair(X, C)
    check_choice("directions", directions, ["random", "basis"])
    tol = check_positive("tol", tol)
    M_dual = check_positive("M_dual", _default_M_dual(C, X.dim) if M_dual is None else M_dual)
    D, n_milp, info = _minimal_sdd(X, C, np.random.default_rng(rng), directions, tol, M_dual)
    return (D, n_milp, info) if return_info else (D, n_milp)


def _minimal_sdd(X: Polytope, C: BoxSet, rng, directions: str, tol: float, M_dual: float):
    """Unchecked construction: ``(D, n_milp, info)``, one eq. (4) MILP per probe."""
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
            delta, val, c = _find_direction(X, C, w, M_dual, tol, _TIME_LIMIT)
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
    return D, n_milp, {"values": values, "times": times, "tie_costs": costs}


def is_sufficient(D, X: Polytope, C: BoxSet, tol: float = 1e-6, M_dual: float | None = None):
    """Exact sufficiency test, eq. (3): probe every basis vector of ``span(D)^perp`` by MILP.

    Returns
    -------
    (bool, witness)
        ``witness`` is ``None`` when sufficient, else ``(delta, c)``: a relevant direction
        outside ``span D`` and a cost at which it is an optimal edge.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    check_pair(X, C)
    D = check_dataset(D, X.dim)
    tol = check_positive("tol", tol)
    M_dual = check_positive("M_dual", _default_M_dual(C, X.dim) if M_dual is None else M_dual)
    return _is_sufficient(D, X, C, tol, M_dual)


def _is_sufficient(D: np.ndarray, X: Polytope, C: BoxSet, tol: float, M_dual: float):
    """Unchecked eq. (3): probe the basis of ``span(D)^perp``; ``(bool, witness)``."""
    P = _orth_complement(D, X.dim)
    for w in P.T:  # max w^T delta = max (-w)^T delta (swap x and x'), so +w suffices
        delta, _, c = _find_direction(X, C, w, M_dual, tol, _TIME_LIMIT)
        if delta is not None:
            return False, (delta, c)
    return True, None


def least_cost_sdd(basis, queries, costs, *, bound: float = 100.0, time_limit: float = 60.0):
    """Cheapest set of candidate queries whose span contains ``span(basis)`` (eq. (6), ours).

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
    B = check_dataset(basis, d)
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
        eq[l_ * d : (l_ + 1) * d, l_ * K : (l_ + 1) * K] = Q.T  # eq. (6): sum_j alpha_jl q_j = b_l
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

    check_pair(X, C)
    D = check_dataset(D, X.dim)
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
    """``trials`` pairs ``c, c' = c + t u`` in ``C`` with ``u ⊥ span D`` (same observations).

    Returns
    -------
    (c, c') : two arrays of shape ``(trials, d)``.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    check_instance("C", C, BoxSet)
    d = C.dim
    D = check_dataset(D, d)
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
    check_pair(X, C)
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
        for a, b in zip(c1, c2, strict=True):  # eq. (7): count X*(c) != X*(c') (eq. (1))
            xa, xb = X.solve(a), X.solve(b)
            wrong += int(not np.allclose(xa, xb, atol=1e-7))
        return wrong / trials
    from lab.lp_sufficiency.fast import violation_flags

    return float(violation_flags(X.vertices(), c1, c2, device=device, chunk=chunk).mean())
