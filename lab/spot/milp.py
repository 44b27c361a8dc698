"""The exact reference: OMDT's monolithic MILP and the improvement-step MILP, in HiGHS.

Both are built as sparse matrices and solved by ``scipy.optimize.milp`` (HiGHS) with a time
limit. A time-limited solve returns an incumbent (``status 1``): ``TreeResult.optimal`` is then
False and ``bound`` holds HiGHS's dual bound.

See: book/spot/01-tree-policies.ipynb
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int, check_positive
from lab.core.runtime import smoke

from .mdp import TabularMDP, check_mdp, evaluate
from .tree import Tree, candidate_splits, split_matrix

__all__ = ["TreeResult", "omdt_milp", "improvement_milp", "quiet_highs"]


@dataclass
class TreeResult:
    """Outcome of a MILP solve over depth-``D`` trees.

    Attributes
    ----------
    value : float
        Objective of the returned tree, recomputed exactly (``evaluate`` for ``omdt_milp``,
        ``sum_s G[s, pi(s)]`` for ``improvement_milp``); ``nan`` when HiGHS found no tree.
    bound : float
        HiGHS's upper (dual) bound on the optimum.
    optimal : bool
        True when HiGHS proved optimality (``status == 0``).
    seconds : float
        Wall time of the solve.
    tree : Tree or None
    objective : float
        The MILP objective at the returned point (equals ``value`` when the model is right).
    status : int
        ``scipy.optimize.milp`` status (0 optimal, 1 time limit, ...).
    n_vars, n_rows : int
        Size of the model.

    See: book/spot/01-tree-policies.ipynb
    """

    value: float
    bound: float
    optimal: bool
    seconds: float
    tree: Tree | None
    objective: float
    status: int
    n_vars: int
    n_rows: int


@contextlib.contextmanager
def quiet_highs() -> Iterator[None]:
    """Silence HiGHS at the file-descriptor level (its banner bypasses ``sys.stdout``).

    See: book/spot/01-tree-policies.ipynb
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
    except (OSError, ValueError):  # no real descriptors (some embedded consoles)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    sink = io.StringIO()
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _leaf_paths(depth: int) -> list[tuple[list[int], list[int]]]:
    """For each leaf: its left-ancestors AL and right-ancestors AR (0-based node index)."""
    out = []
    for leaf in range(2**depth, 2 ** (depth + 1)):
        AL, AR, t = [], [], leaf
        while t > 1:
            (AR if t % 2 else AL).append(t // 2 - 1)
            t //= 2
        out.append((AL, AR))
    return out


def _tree_model(X: np.ndarray, depth: int, m: int, offset: int):
    """Rows of the tree part shared by both MILPs. Variables after ``offset``:
    ``u[t, k]`` (k = 0 is "no split"), ``c[l, a]``, ``g[s, t]``, ``z[s, a]``."""
    from scipy import sparse

    splits = candidate_splits(X)
    B = split_matrix(X, splits).astype(float)  # (K, n)
    K1 = len(splits) + 1  # + "no split"
    B1 = np.vstack([np.zeros((1, X.shape[0])), B])  # no split routes every state left
    n, T, L = X.shape[0], 2**depth - 1, 2**depth
    iu = offset
    ic = iu + T * K1
    ig = ic + L * m
    iz = ig + n * T
    nv = iz + n * m
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(cs, vs, lb, ub):
        nonlocal r
        rows.extend([r] * len(cs))
        cols.extend(cs)
        vals.extend(vs)
        lo.append(lb)
        hi.append(ub)
        r += 1

    for t in range(T):  # sum_k u[t, k] = 1
        add([iu + t * K1 + k for k in range(K1)], [1.0] * K1, 1, 1)
    for leaf in range(L):  # sum_a c[l, a] = 1
        add([ic + leaf * m + a for a in range(m)], [1.0] * m, 1, 1)
    for s in range(n):  # g[s, t] = sum_k 1[x_s[j_k] > theta_k] u[t, k]
        ks = np.flatnonzero(B1[:, s])
        for t in range(T):
            add([ig + s * T + t] + [iu + t * K1 + k for k in ks], [1.0] + [-1.0] * len(ks), 0, 0)
    for s in range(n):  # sum_a z[s, a] = 1
        add([iz + s * m + a for a in range(m)], [1.0] * m, 1, 1)
    for leaf, (AL, AR) in enumerate(_leaf_paths(depth)):
        for s in range(n):
            for a in range(m):
                # sum_AL (1 - g) + sum_AR g + c[l, a] - D <= z[s, a]
                cs = [ig + s * T + t for t in AL] + [ig + s * T + t for t in AR]
                vs = [-1.0] * len(AL) + [1.0] * len(AR)
                add(
                    cs + [ic + leaf * m + a, iz + s * m + a],
                    vs + [1.0, -1.0],
                    -np.inf,
                    depth - len(AL),
                )
    A = sparse.csr_matrix((vals, (rows, cols)), shape=(r, nv))
    index = {"u": iu, "c": ic, "g": ig, "z": iz, "K1": K1, "T": T, "L": L, "nv": nv}
    return A, np.array(lo), np.array(hi), index, splits


def _extract_tree(x: np.ndarray, index: dict, splits, depth: int, m: int) -> Tree:
    T, L, K1 = index["T"], index["L"], index["K1"]
    u = x[index["u"] : index["u"] + T * K1].reshape(T, K1)
    c = x[index["c"] : index["c"] + L * m].reshape(L, m)
    ks = u.argmax(1)
    feats = [-1 if k == 0 else splits[k - 1][0] for k in ks]
    ths = [0.0 if k == 0 else splits[k - 1][1] for k in ks]
    return Tree(depth, feats, ths, c.argmax(1), n_actions=m)


def _solve(cost, A, lo, hi, integrality, ub, time_limit):
    from scipy.optimize import Bounds, LinearConstraint, milp

    if smoke():  # LAB_SMOKE=1: HiGHS stops after 2 s (an incumbent, FULL's code paths on a CPU)
        time_limit = min(time_limit, 2.0)
    t0 = time.perf_counter()
    with quiet_highs():
        res = milp(
            cost,
            constraints=LinearConstraint(A, lo, hi),
            integrality=integrality,
            bounds=Bounds(np.zeros_like(ub), ub),
            options={"disp": False, "time_limit": float(time_limit)},
        )
    return res, time.perf_counter() - t0


def omdt_milp(mdp: TabularMDP, depth: int, time_limit: float = 60.0) -> TreeResult:
    """OMDT (Vos & Verwer 2023): the best depth-``D`` tree policy as one MILP, solved by HiGHS.

    Occupancy variables ``y[s, a]``, flow rows
    ``sum_a y[s, a] - gamma sum_{s', a} P[s', a, s] y[s', a] = p0(s)``, big-M rows
    ``y[s, a] <= z[s, a] / (1 - gamma)`` and the tree rows (split choice ``u``, leaf action
    ``c``, routing ``g``, state action ``z``); objective ``max sum R[s, a] y[s, a] = J(pi_T)``.

    Parameters
    ----------
    mdp : TabularMDP
    depth : int, ``>= 0``
    time_limit : float, seconds
        HiGHS time limit; on hitting it the incumbent is returned with ``optimal=False``.

    See: book/spot/01-tree-policies.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    time_limit = check_positive("time_limit", time_limit)
    from scipy import sparse

    n, m, g = mdp.n_states, mdp.n_actions, mdp.gamma
    A_tree, lo_t, hi_t, idx, splits = _tree_model(mdp.X, depth, m, offset=n * m)
    nv = idx["nv"]
    iz = idx["z"]
    # eq. (spot-milp), flow: sum_a y[s,a] - gamma sum_{s',a} P[s',a,s] y[s',a] = p0(s)
    E = sparse.kron(sparse.eye(n), np.ones((1, m)))  # (n, n m): sum over a
    Pf = mdp.P.reshape(n * m, n).T  # (n, n m): P[s', a, s] at column s' m + a
    flow = sparse.hstack([sparse.csr_matrix(E - g * Pf), sparse.csr_matrix((n, nv - n * m))])
    # eq. (spot-milp), big-M: y[s,a] - z[s,a] / (1 - gamma) <= 0
    # (the tight M; M = 1 would cut off occupancies)
    big = sparse.hstack(
        [
            sparse.eye(n * m),
            sparse.csr_matrix((n * m, iz - n * m)),
            -sparse.eye(n * m) / (1 - g),
        ]
    )
    A = sparse.vstack([A_tree, flow, big]).tocsr()
    lo = np.concatenate([lo_t, mdp.p0, np.full(n * m, -np.inf)])
    hi = np.concatenate([hi_t, mdp.p0, np.zeros(n * m)])
    cost = np.zeros(nv)
    cost[: n * m] = -mdp.R.reshape(-1)  # milp minimises
    integrality = np.ones(nv)
    integrality[: n * m] = 0
    ub = np.ones(nv)
    ub[: n * m] = 1 / (1 - g)
    res, secs = _solve(cost, A, lo, hi, integrality, ub, time_limit)
    return _result(res, secs, idx, splits, depth, m, A.shape, lambda tree: evaluate(mdp, tree)[0])


def improvement_milp(
    G: np.ndarray, X: np.ndarray, depth: int, time_limit: float = 60.0
) -> TreeResult:
    """The improvement subproblem ``max_T sum_s G[s, pi_T(s)]`` as a MILP (HiGHS).

    The OMDT model without occupancies, flow and big-M rows; objective ``sum G[s, a] z[s, a]``.
    The trusted check of ``rsbb``.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G = check_array("G", G, ndim=2, min_size=1)
    X = check_array("X", X, ndim=2)
    if X.shape[0] != G.shape[0]:
        raise ValueError(f"X must have {G.shape[0]} rows like G (got {X.shape[0]})")
    depth = check_int("depth", depth, 0, 6)
    time_limit = check_positive("time_limit", time_limit)
    n, m = G.shape
    A, lo, hi, idx, splits = _tree_model(X, depth, m, offset=0)
    nv = idx["nv"]
    cost = np.zeros(nv)
    cost[idx["z"] :] = -G.reshape(-1)
    res, secs = _solve(cost, A, lo, hi, np.ones(nv), np.ones(nv), time_limit)
    return _result(
        res,
        secs,
        idx,
        splits,
        depth,
        m,
        A.shape,
        lambda tree: float(G[np.arange(n), tree.act(X)].sum()),
    )


def _result(res, secs, idx, splits, depth, m, shape, value_of) -> TreeResult:
    bound = getattr(res, "mip_dual_bound", None)
    bound = float(-bound) if bound is not None and np.isfinite(bound) else float("nan")
    if res.x is None:
        return TreeResult(
            float("nan"),
            bound,
            False,
            secs,
            None,
            float("nan"),
            int(res.status),
            shape[1],
            shape[0],
        )
    tree = _extract_tree(np.round(res.x, 6), idx, splits, depth, m)
    optimal = res.status == 0
    if optimal and not np.isfinite(bound):
        bound = float(-res.fun)
    return TreeResult(
        value_of(tree),
        bound,
        bool(optimal),
        secs,
        tree,
        float(-res.fun),
        int(res.status),
        shape[1],
        shape[0],
    )
