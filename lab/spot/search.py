"""SPOT-style search (reconstructed): reduced-space branch-and-bound and the policy loop.

The bound kernels live in ``reference.py`` (numpy) and ``fast.py`` (batched torch).

See: book/spot/02-reduced-space-bnb.ipynb
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_range

from . import fast, reference
from .mdp import (
    TabularMDP,
    check_mdp,
    evaluate,
    first_max,
    state_weights,
    value_iteration,
    value_tolerance,
)
from .reference import check_bound_inputs, check_tree_inputs, sum_tolerance
from .reference import parse_node as _parse
from .tree import Tree, candidate_splits, split_matrix

__all__ = ["rsbb", "RSBBStats", "bound_frontier", "spot", "SpotResult", "WEIGHTINGS"]

WEIGHTINGS = ("optimal", "occupancy", "mix", "uniform", "portfolio")
PRUNE_TOL = 1e-9


# ----------------------------------------------------------------------------------------
# Reduced-space branch-and-bound
# ----------------------------------------------------------------------------------------
@dataclass
class RSBBStats:
    """Search log of ``rsbb``.

    Attributes
    ----------
    nodes : int
        Partial trees expanded.
    evaluated : int
        Children whose bound was computed.
    pruned : int
        Children discarded by bound.
    trace : array (steps, 3)
        ``(nodes expanded, best open bound, incumbent)`` after each expansion; the bound is
        non-increasing, the incumbent non-decreasing, and they meet at the certificate.
    seconds : float
    full_space : int
        Partial trees a plain enumeration of the branched nodes would visit.

    See: book/spot/02-reduced-space-bnb.ipynb
    """

    nodes: int = 0
    evaluated: int = 0
    pruned: int = 0
    trace: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    seconds: float = 0.0
    full_space: int = 0


def _route(right, n, choices, n_internal):
    """State masks of internal nodes 1..n_internal given the fixed choices (None = unfixed)."""
    masks: dict[int, np.ndarray] = {1: np.ones(n, dtype=bool)}
    for t in range(1, n_internal + 1):
        if t not in masks:
            continue
        k = choices[t - 1] if t - 1 < len(choices) else None
        if k is None:
            continue
        M = masks[t]
        if 2 * t <= n_internal:
            if k < 0:
                masks[2 * t], masks[2 * t + 1] = M, np.zeros(n, dtype=bool)
            else:
                masks[2 * t], masks[2 * t + 1] = M & ~right[k], M & right[k]
    return masks


def _frontier(r: int, depth: int) -> tuple[list[int], np.ndarray]:
    """Frontier nodes after fixing nodes 1..r: unfixed nodes whose parent is fixed."""
    n_int = 2**depth - 1
    nodes = [t for t in range(1, n_int + 1) if t > r and (t == 1 or t // 2 <= r)]
    exact = np.array([t >= 2 ** (depth - 1) for t in nodes], dtype=bool)
    return nodes, exact


def _options(right, M):
    """Children of a node with states ``M``: "no split" + candidates giving distinct partitions."""
    opts = [-1]
    if M.sum() < 2:
        return opts
    seen = set()
    for k in range(right.shape[0]):
        part = right[k] & M
        cnt = int(part.sum())
        if cnt == 0 or cnt == int(M.sum()):
            continue  # does not separate the node's states: a duplicate of "no split"
        key = min(part[M].tobytes(), (~part[M]).tobytes())
        if key in seen:
            continue  # same partition as an earlier candidate: a duplicate subtree
        seen.add(key)
        opts.append(k)
    return opts


def _build_tree(G, right, splits, choices, depth, m, tol) -> Tree:
    n = G.shape[0]
    n_int = 2**depth - 1
    n_branch = 2 ** (depth - 1) - 1 if depth >= 1 else 0
    full = list(choices) + [-1] * (n_branch - len(choices))
    masks = _route(right, n, full, n_int)
    feats = np.full(n_int, -1)
    ths = np.zeros(n_int)
    leaves = np.zeros(2**depth, dtype=np.int64)
    if depth == 0:
        leaves[0] = int(first_max(G.sum(0), tol))
        return Tree(0, [], [], leaves, n_actions=m)
    for t in range(1, n_branch + 1):
        if full[t - 1] >= 0:
            feats[t - 1], ths[t - 1] = splits[full[t - 1]]
    for t in range(2 ** (depth - 1), n_int + 1):
        M = masks.get(t, np.zeros(n, dtype=bool))
        _, k, aL, aR = _parse(G, M, right, tol)
        if k >= 0:
            feats[t - 1], ths[t - 1] = splits[k]
        leaves[2 * t - 2**depth] = aL
        leaves[2 * t + 1 - 2**depth] = aR
    return Tree(depth, feats, ths, leaves, n_actions=m)


def bound_frontier(
    G: np.ndarray,
    right: np.ndarray,
    masks: np.ndarray,
    exact: np.ndarray,
    backend: str = "numpy",
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Upper bound and incumbent value of a batch of partial trees from their frontier masks.

    For each partial tree ``c`` and frontier node ``f`` (a reached node whose split is not
    fixed), ``masks[c, f]`` holds the states routed there. The bound adds the exact depth-1
    parse of the node when ``exact[f]`` (it sits on level ``D - 1``) and the state-wise
    relaxation ``sum_{s in M} max_a G[s, a]`` otherwise; the incumbent sets unfixed nodes to
    "no split" and parses every frontier node exactly. The search's choice of kernel:
    ``reference.bound_children`` (numpy) or ``fast.bound_children`` (batched torch).

    Parameters
    ----------
    G : array (n, m)
    right : bool array (K, n)
    masks : bool array (C, Fn, n)
    exact : bool array (Fn,)
    backend : ``"numpy"`` (reference) or ``"torch"`` (batched fast path)
    device : torch device for ``backend="torch"`` (default CPU)

    Returns
    -------
    bound, incumbent : arrays (C,)

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G, right, masks, exact = check_bound_inputs(G, right, masks, exact)
    check_choice("backend", backend, ["numpy", "torch"])
    if backend == "numpy":
        return reference.bound_children(G, right, masks, exact)
    return fast.bound_children_unchecked(G, right, masks, exact, device)


def _pop_first(heap: list, tol: float) -> tuple:
    """Pop the open partial tree to expand: the best bound, ties within ``tol`` (round-off,
    ``sum_tolerance``) going to the first tree in index order (its choices tuple), not to
    whichever of two equal bounds the CPU's rounding made larger. The popped bound is within
    ``tol`` of the best open one, so the stop test and the trace's bound move by at most
    ``tol``, far below ``PRUNE_TOL``."""
    top = [heapq.heappop(heap)]
    while heap and heap[0][0] <= top[0][0] + tol:
        top.append(heapq.heappop(heap))
    first = min(top, key=lambda e: e[2])
    for e in top:
        if e is not first:
            heapq.heappush(heap, e)
    return first


def rsbb(
    G: np.ndarray,
    X: np.ndarray,
    depth: int,
    backend: str = "numpy",
    device: Any = None,
    exact_parse: bool = True,
    max_nodes: int = 1_000_000,
) -> tuple[float, Tree, RSBBStats]:
    """Reduced-space branch-and-bound for ``max_T sum_s G[s, pi_T(s)]`` (certified optimum).

    Branches only on the split choice of internal nodes on levels ``0 .. D-2`` (best-first on
    the bound); nodes on level ``D-1`` are parsed exactly (``depth1_parse``), leaves are closed
    form. Bounds add per-state or per-node terms (``bound_frontier``), batched over the
    children of a node. Prunes when ``bound <= incumbent + 1e-9``; stops when the best open
    bound is not above the incumbent, which certifies optimality.

    Parameters
    ----------
    G : array (n, m)
        Weighted action values ``w[:, None] * Q``.
    X : array (n, F)
        State features.
    depth : int in ``[0, 6]``
    backend : ``"numpy"`` or ``"torch"``
        Kernel that bounds the children (the search is the same).
    device : torch device for the torch backend (``None``: ``lab.device()``)
    exact_parse : bool
        With False, level ``D-1`` nodes are bounded by the state-wise relaxation too
        (the weaker bound, for comparison; the result is still optimal).
    max_nodes : int
        Safety cap on expansions (the result is then not certified: ``stats.trace`` shows
        the gap).

    Returns
    -------
    value : float
    tree : Tree
    stats : RSBBStats

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    G, X, depth = check_tree_inputs(G, X, depth)
    check_choice("backend", backend, ["numpy", "torch"])
    exact_parse = check_bool("exact_parse", exact_parse)
    max_nodes = check_int("max_nodes", max_nodes, 1)
    if backend == "torch":
        from lab.core.runtime import resolve_device

        device = resolve_device(device)
    return _rsbb(G, X, depth, backend, device, exact_parse, max_nodes)


def _rsbb(G, X, depth, backend="numpy", device=None, exact_parse=True, max_nodes=1_000_000):
    """``rsbb`` on checked inputs (the loop's improvement steps call this)."""
    t0 = time.perf_counter()
    n, m = G.shape
    splits = candidate_splits(X)
    right = split_matrix(X, splits)
    stats = RSBBStats()
    # ties between partial trees (equal values up to round-off, e.g. two trees of the same
    # policy) go to the first in index order: the error analysis is in ``sum_tolerance``
    tol = sum_tolerance(G)
    if depth <= 1:
        val = float(G.sum(0).max()) if depth == 0 else _parse(G, np.ones(n, bool), right, tol)[0]
        tree = _build_tree(G, right, splits, (), depth, m, tol)
        stats.trace = np.array([[0, val, val]])
        stats.seconds = time.perf_counter() - t0
        return val, tree, stats
    search = _Search(G, right, depth, exact_parse, backend, device, stats)
    best_choices = search.run(max_nodes, tol)
    tree = _build_tree(G, right, splits, best_choices, depth, m, tol)
    value = float(G[np.arange(n), tree.act(X)].sum())
    stats.seconds = time.perf_counter() - t0
    return value, tree, stats


class _Search:
    """The best-first search over the split choices of levels ``0 .. D-2`` (one ``rsbb`` call)."""

    def __init__(self, G, right, depth, exact_parse, backend, device, stats):
        self.G, self.right, self.depth = G, right, depth
        self.exact_parse, self.backend, self.device, self.stats = (
            exact_parse,
            backend,
            device,
            stats,
        )
        self.n = G.shape[0]
        self.n_int = 2**depth - 1
        self.n_branch = 2 ** (depth - 1) - 1

    def bound(self, children):
        """Bounds and completed incumbents of partial trees sharing one frontier."""
        r = len(children[0])
        nodes, exact = _frontier(r, self.depth)
        if not self.exact_parse:
            exact = np.zeros_like(exact)
        masks = np.zeros((len(children), len(nodes), self.n), dtype=bool)
        for c, ch in enumerate(children):
            rm = _route(self.right, self.n, list(ch), self.n_int)
            for f, t in enumerate(nodes):
                if t in rm:
                    masks[c, f] = rm[t]
        self.stats.evaluated += len(children)
        return bound_frontier(self.G, self.right, masks, exact, self.backend, self.device)

    def run(self, max_nodes, tol):
        """Expand best-first until the best open bound is not above the incumbent."""
        stats, right, n = self.stats, self.right, self.n
        root = ()
        b0, i0 = self.bound([root])
        best_val, best_choices = float(i0[0]), root
        counter = itertools.count()
        heap = [(-float(b0[0]), next(counter), root)]
        trace = [(0, float(b0[0]), best_val)]
        # full space: product of option counts is data dependent; report the plain K+1 power
        stats.full_space = (right.shape[0] + 1) ** self.n_branch
        upper = float(b0[0])
        while heap and stats.nodes < max_nodes:
            negb, _, ch = _pop_first(heap, tol)
            upper = min(upper, -negb)
            if -negb <= best_val + PRUNE_TOL:
                upper = best_val
                break
            stats.nodes += 1
            t = len(ch) + 1
            M = _route(right, n, list(ch), self.n_int).get(t, np.zeros(n, dtype=bool))
            kids = [ch + (k,) for k in _options(right, M)]
            b, inc = self.bound(kids)
            j = int(first_max(inc, tol))  # the first child within round-off of the best
            if inc[j] > best_val + tol:  # a new incumbent must beat the old beyond round-off
                best_val, best_choices = float(inc[j]), kids[j]
            complete = len(kids[0]) == self.n_branch
            for kid, bk in zip(kids, b, strict=True):
                if complete or bk <= best_val + PRUNE_TOL:
                    stats.pruned += int(not complete)
                    continue
                heapq.heappush(heap, (-float(bk), next(counter), kid))
            top = -heap[0][0] if heap else best_val
            upper = min(upper, max(top, best_val))
            trace.append((stats.nodes, upper, best_val))
        if not heap:
            upper = best_val
        trace.append((stats.nodes, max(upper, best_val), best_val))
        stats.trace = np.array(trace, dtype=float)
        return best_choices


# ----------------------------------------------------------------------------------------
# The SPOT-style loop
# ----------------------------------------------------------------------------------------
@dataclass
class SpotResult:
    """Outcome of ``spot``.

    Attributes
    ----------
    tree : Tree
        The best tree evaluated.
    J : float
        Its value ``p0 . V`` (exact).
    seconds : float
        Wall time (value iteration included).
    history : list of float
        ``J(pi_k)`` per iteration (the warm-start tree first).
    nodes : int
        B&B nodes expanded over all improvement steps.
    iterations : int
    weights : str
        The weighting used (the winner for ``"portfolio"``).
    stop : str
        ``"converged"``, ``"cycle"`` or ``"max_iter"``.

    See: book/spot/03-spot-loop.ipynb
    """

    tree: Tree
    J: float
    seconds: float
    history: list[float]
    nodes: int
    iterations: int
    weights: str
    stop: str

    @property
    def value(self) -> float:
        """Alias of ``J``."""
        return self.J


def spot(
    mdp: TabularMDP,
    depth: int,
    weights: str = "optimal",
    warm_start: bool = True,
    max_iter: int = 50,
    eps: float = 1e-3,
    backend: str = "numpy",
    device: Any = None,
) -> SpotResult:
    """SPOT-style policy iteration with a certified-optimal tree at every improvement step.

    Reconstructed (the paper's code is not public): evaluate the tree policy
    (``V_k``, ``Q_k = R + gamma P V_k``), weight the states (``w_k``), solve
    ``T_{k+1} = argmax_T sum_s w_k(s) Q_k[s, pi_T(s)]`` with ``rsbb``; stop on a repeated
    policy or after ``max_iter``; return the best tree evaluated. Each step is globally
    optimal, the loop is not.

    Parameters
    ----------
    mdp : TabularMDP
    depth : int in ``[0, 6]``
    weights : ``"optimal"``, ``"occupancy"``, ``"mix"``, ``"uniform"`` or ``"portfolio"``
        State weighting; ``"portfolio"`` runs the other four and keeps the best.
    warm_start : bool
        Start from the best tree for ``Q*`` (else from the best constant action).
    max_iter : int
    eps : float
        Floor weight ``eps / n`` added to occupancy weights.
    backend, device
        Passed to ``rsbb``.

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    check_choice("weights", weights, list(WEIGHTINGS))
    warm_start = check_bool("warm_start", warm_start)
    max_iter = check_int("max_iter", max_iter, 1)
    eps = check_range("eps", eps, 0.0, 1.0)
    check_choice("backend", backend, ["numpy", "torch"])
    if backend == "torch":
        from lab.core.runtime import resolve_device

        device = resolve_device(device)
    return _spot(mdp, depth, weights, warm_start, max_iter, eps, backend, device)


def _spot(mdp, depth, weights, warm_start, max_iter, eps, backend, device) -> SpotResult:
    """``spot`` on checked inputs."""
    t0 = time.perf_counter()
    if weights == "portfolio":
        runs = [
            _spot(mdp, depth, w, warm_start, max_iter, eps, backend, device)
            for w in WEIGHTINGS[:-1]
        ]
        tie = value_tolerance(mdp)  # equal values up to round-off: the first weighting
        best = runs[int(first_max(np.array([r.J for r in runs]), tie))]
        return SpotResult(
            best.tree,
            best.J,
            time.perf_counter() - t0,
            best.history,
            sum(r.nodes for r in runs),
            sum(r.iterations for r in runs),
            best.weights,
            best.stop,
        )
    V_star, pi_star = value_iteration(mdp)
    tie = value_tolerance(mdp)  # policy values equal up to round-off are ties (mdp.py)
    tree, nodes = _first_tree(mdp, depth, warm_start, eps, V_star, pi_star, backend, device)
    best_J, best_tree, history, seen = -np.inf, tree, [], set()
    stop = "max_iter"
    prev: np.ndarray | None = None
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        pi = tree.act(mdp.X)
        J, V = evaluate(mdp, pi)  # step 1: V_k, Q_k, eq. (spot-value)
        history.append(J)
        if J > best_J + tie:  # the first tree of the best value (a tie is not a gain)
            best_J, best_tree = J, tree
        key = pi.tobytes()
        if key in seen:
            stop = "converged" if prev is not None and np.array_equal(pi, prev) else "cycle"
            break
        seen.add(key)
        prev = pi
        Q = mdp.R + mdp.gamma * mdp.P @ V
        w = state_weights(mdp, weights, pi, eps=eps, optimal_policy=pi_star)  # step 2
        # step 3, eq. (spot-improve): the best tree for the weighted table
        _, tree, st = _rsbb(w[:, None] * Q, mdp.X, depth, backend, device)
        nodes += st.nodes
    return SpotResult(
        best_tree,
        float(best_J),
        time.perf_counter() - t0,
        history,
        nodes,
        iterations,
        weights,
        stop,
    )


def _first_tree(mdp, depth, warm_start, eps, V_star, pi_star, backend, device):
    """The loop's start: the best tree for ``Q*`` (warm start) or the best constant action."""
    n, m = mdp.n_states, mdp.n_actions
    if warm_start:
        Q_star = mdp.R + mdp.gamma * mdp.P @ V_star
        w = state_weights(mdp, "optimal", eps=eps, optimal_policy=pi_star)
        _, tree, st = _rsbb(w[:, None] * Q_star, mdp.X, depth, backend, device)
        return tree, st.nodes
    tie = value_tolerance(mdp)
    consts = [evaluate(mdp, np.full(n, a))[0] for a in range(m)]
    a0 = int(first_max(np.array(consts), tie))
    tree = Tree(depth, [-1] * (2**depth - 1), [0.0] * (2**depth - 1), [a0] * 2**depth, n_actions=m)
    return tree, 0
