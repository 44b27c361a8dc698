"""The paper's objects: the decision polytope ``X``, the cost box ``C``, the hiring (top-k) and
transportation instances, and the top-k closed form (eq. (5)).

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import check_array, check_choice, check_instance, check_int, check_positive

__all__ = [
    "Polytope",
    "BoxSet",
    "topk_problem",
    "transportation_problem",
    "topk_relevant_pairs",
    "topk_sdd",
    "topk_least_cost",
    "regular_polygon",
    "relevant_edges_2d",
    "hiring_instance",
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


def transportation_problem(supply, demand, center, radius: float) -> tuple[Polytope, BoxSet]:
    """An ``r x s`` transportation LP with a box of costs of half-width ``radius``.

    ``X = {x in R^{r x s} : x >= 0, sum_j x_ij = supply_i, sum_i x_ij = demand_j}`` (flattened
    row-major, ``d = r s``), balanced (``sum supply = sum demand``); its dimension is
    ``(r - 1)(s - 1)``, the minimal dataset size when ``C = R^d`` (Prop. 4 of the paper).
    ``C = prod_i (center_i - radius, center_i + radius)``.

    Parameters
    ----------
    supply : array_like, shape (r,)
        Positive supplies.
    demand : array_like, shape (s,)
        Positive demands with the same total.
    center : array_like, shape (r s,)
        Centre of the cost box.
    radius : float
        Half-width of the cost box (> 0).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    supply = check_array("supply", supply, ndim=1, min_size=2)
    demand = check_array("demand", demand, ndim=1, min_size=2)
    if np.any(supply <= 0) or np.any(demand <= 0):
        raise ValueError("supply and demand must be > 0")
    if not np.isclose(supply.sum(), demand.sum()):
        raise ValueError(
            f"supply and demand must have the same total (got {supply.sum():g} and {demand.sum():g})"
        )
    r, s = supply.size, demand.size
    center = check_array("center", center, shape=(r * s,))
    radius = check_positive("radius", radius)
    A = np.vstack([np.kron(np.eye(r), np.ones((1, s))), np.kron(np.ones((1, r)), np.eye(s))])
    X = Polytope(-np.eye(r * s), np.zeros(r * s), A, np.r_[supply, demand])
    return X, BoxSet(center - radius, center + radius)


def regular_polygon(n_sides: int = 6, radius: float = 1.0) -> Polytope:
    """The polygon ``{x : g_i^T x <= radius}`` with outward normals at angles ``2 pi i / n``.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    n_sides = check_int("n_sides", n_sides, 3)
    radius = check_positive("radius", radius)
    ang = 2 * np.pi * np.arange(n_sides) / n_sides
    return Polytope(np.c_[np.cos(ang), np.sin(ang)], radius * np.ones(n_sides))


def _ray_meets_box(g: np.ndarray, C: BoxSet) -> bool:
    """Does the ray ``{-t g : t > 0}`` (costs making the face with normal g optimal) meet C?"""
    t_lo, t_hi = 0.0, np.inf
    for j in range(2):
        if abs(g[j]) < 1e-12:
            if not (C.lo[j] < 0 < C.hi[j]):
                return False
            continue
        a, b = sorted((C.lo[j] / -g[j], C.hi[j] / -g[j]))
        t_lo, t_hi = max(t_lo, a), min(t_hi, b)
    return t_lo < t_hi


def relevant_edges_2d(X: Polytope, C: BoxSet) -> list[int]:
    """Indices of a polygon's facets (edges) that are optimal for some cost in ``C`` (d = 2).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    check_pair(X, C)
    if X.dim != 2:
        raise ValueError(f"X must be a polygon (dimension 2, got {X.dim})")
    return [i for i, g in enumerate(X.G) if _ray_meets_box(g, C)]


def hiring_instance(n: int = 12, width: float = 1.5, seed: int = 0):
    """A reproducible hiring instance: centres U(0, 10) sorted downwards, widths
    ``width * U(0.5, 1.5)``; returns the intervals ``(lo, hi)``.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    n = check_int("n", n, 2)
    width = check_positive("width", width)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    centre = np.sort(rng.uniform(0, 10, n))[::-1]
    w = width * rng.uniform(0.5, 1.5, n)
    return centre - w / 2, centre + w / 2


def check_pair(X, C):
    check_instance("X", X, Polytope)
    check_instance("C", C, BoxSet)
    if X.dim != C.dim:
        raise ValueError(f"X and C must have the same dimension (got {X.dim} and {C.dim})")


def check_dataset(D, d: int) -> np.ndarray:
    D = check_array("D", D if np.size(D) else np.zeros((0, d)), ndim=(1, 2))
    D = D.reshape(-1, d) if D.size else np.zeros((0, d))
    if D.shape[1] != d:
        raise ValueError(f"D must have {d} columns (got shape {D.shape})")
    return D


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
    rows = []
    for i, j in _spanning_forest(n, pairs)[0]:
        e = np.zeros(n)
        e[i], e[j] = 1.0, -1.0
        rows.append(e)
    return np.array(rows) if rows else np.zeros((0, n))


def _spanning_forest(n: int, pairs) -> tuple[list[tuple[int, int]], list[int]]:
    """Union-find over ``range(n)``: the edges of ``pairs`` (in their order) that join two
    components (a spanning forest), and each node's component root."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    tree = []
    for i, j in pairs:
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[ri] = rj
            tree.append((i, j))
    return tree, [root(i) for i in range(n)]


def _components(n: int, pairs) -> list[list[int]]:
    """Connected components (with at least one edge) of the graph on ``range(n)``."""
    roots = _spanning_forest(n, pairs)[1]
    comps: dict[int, list[int]] = {}
    for i in sorted({i for p in pairs for i in p}):
        comps.setdefault(roots[i], []).append(i)
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
