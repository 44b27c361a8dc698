"""Drivers for the notebooks and the benchmark: each takes a settings object (``settings.py``)
and returns a small result dataclass that ``figures.py`` draws.

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_instance, check_int
from lab.core.memo import memo
from lab.core.sweep import sweep
from lab.lp_sufficiency.problems import (
    BoxSet,
    Polytope,
    check_dataset,
    check_pair,
    hiring_instance,
    regular_polygon,
    relevant_edges_2d,
    topk_least_cost,
    topk_problem,
    topk_relevant_pairs,
    topk_sdd,
    transportation_problem,
)
from lab.lp_sufficiency.reference import (
    is_sufficient,
    least_cost_sdd,
    minimal_sdd,
    same_span,
    sample_equivalent_pairs,
)
from lab.lp_sufficiency.settings import (
    DecoderSettings,
    GeometrySettings,
    HiringSettings,
    SpanSettings,
    TransportSettings,
    WidthSettings,
)

__all__ = [
    "ScalingSweep",
    "InterviewSearch",
    "DecoderCheck",
    "GeometryView",
    "HiringView",
    "SpanAgreement",
    "WidthCurve",
    "DeletionCheck",
    "PriceCheck",
    "transportation_sweep",
    "smallest_interview_set",
    "random_hiring_instance",
    "decoder_check",
    "geometry_view",
    "hiring_view",
    "span_agreement",
    "width_curve",
    "deletion_check",
    "price_check",
    "decision_margin",
]


@dataclass
class ScalingSweep:
    """``d*`` of a transportation LP as the cost box grows (one construction per radius)."""

    radii: list[float]
    d_star: list[int]
    n_milp: list[int]
    seconds: list[float]
    last_value: list[float]  # the certificate: the last MILP's value (0 unless d* = dim X)
    dim_X: int


@dataclass
class InterviewSearch:
    """The smallest interview (coordinate) dataset found by brute force."""

    size: int
    subset: tuple[int, ...]
    checks: int
    seconds: float


@dataclass
class DecoderCheck:
    """Decoded decisions against the true optimum over many draws of the true cost."""

    draws: int
    worst_gap: float
    wrong: int
    seconds: float


@dataclass(frozen=True)
class GeometryView:
    """The hexagon picture: the polygon, its relevant edges, the cost box and the dataset."""

    radius: float
    polygon: np.ndarray  # vertices in angular order, the first repeated at the end
    normals: np.ndarray  # outward facet normals g_i (rows)
    relevant: tuple[int, ...]  # facets optimal for some cost in C
    edges: tuple[np.ndarray, ...]  # the relevant facets' end points (2 x 2 each)
    lo: np.ndarray  # the cost box C = (lo, hi)
    hi: np.ndarray
    D: np.ndarray  # the constructed minimal dataset (d* x 2)
    n_milp: int


@dataclass(frozen=True)
class HiringView:
    """One hiring instance: intervals, relevant pairs, ``d*`` and the cheapest dataset."""

    settings: HiringSettings
    lo: np.ndarray
    hi: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    d_star: int
    interviews: tuple[int, ...]  # candidates interviewed by the cheapest dataset
    comparisons: tuple[tuple[int, int], ...]  # pairs compared by it
    total: float  # its price
    hired: tuple[int, ...]  # the top-k at the interval centres


@dataclass(frozen=True)
class SpanAgreement:
    """Random hiring instances: the construction's span against the closed form (eq. 5)."""

    n: tuple[int, ...]
    k: tuple[int, ...]
    d_milp: tuple[int, ...]
    d_closed: tuple[int, ...]
    n_milp: tuple[int, ...]
    seconds: tuple[float, ...]
    agree: tuple[bool, ...]  # span(construction) = span(closed form)
    everything: tuple[bool, ...]  # span(all n - 1 comparisons) = span(closed form)


def random_hiring_instance(n: int, seed: int, width=(1.5, 4.0)) -> tuple[np.ndarray, np.ndarray]:
    """Intervals ``(lo, hi)`` with centres ``U(0, 10)`` and widths ``U(width)`` (seeded).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    n = check_int("n", n, 2)
    seed = check_int("seed", seed, 0)
    w_lo, w_hi = check_array("width", width, shape=(2,))
    if not 0 < w_lo <= w_hi:
        raise ValueError(f"width must satisfy 0 < width[0] <= width[1], got {width!r}")
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 10, n)
    w = rng.uniform(w_lo, w_hi, n)
    return c - w / 2, c + w / 2


def transportation_sweep(settings: TransportSettings) -> ScalingSweep:
    """Minimal dataset size of a transportation LP for cost boxes of growing half-width.

    The box is centred at a cost with entries ``U(0, 10)`` (seed ``settings.seed``); each radius
    runs :func:`~lab.lp_sufficiency.minimal_sdd` (random probes, the same seed).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    st = check_instance("settings", settings, TransportSettings)
    supply, demand = np.array(st.supply), np.array(st.demand)
    center = np.random.default_rng(st.seed).uniform(0, 10, supply.size * demand.size)
    out = ScalingSweep([], [], [], [], [], (supply.size - 1) * (demand.size - 1))
    for r in st.radii:
        X, C = transportation_problem(supply, demand, center, r)
        t0 = time.perf_counter()
        D, n, info = minimal_sdd(X, C, rng=st.seed, return_info=True)
        out.radii.append(float(r))
        out.d_star.append(int(D.shape[0]))
        out.n_milp.append(int(n))
        out.seconds.append(time.perf_counter() - t0)
        out.last_value.append(float(info["values"][-1]))
    return out


def smallest_interview_set(X: Polytope, C: BoxSet, max_size: int | None = None) -> InterviewSearch:
    """Brute force: subsets of coordinate queries ``e_i`` in order of size, each checked exactly
    with :func:`~lab.lp_sufficiency.is_sufficient` (MILPs); the first sufficient one wins.

    Independent of the construction: it never looks at ``minimal_sdd``'s output.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    check_pair(X, C)
    d = X.dim
    max_size = d if max_size is None else check_int("max_size", max_size, 0, d)
    t0 = time.perf_counter()
    checks = 0
    for size in range(max_size + 1):
        for S in itertools.combinations(range(d), size):
            checks += 1
            if is_sufficient(np.eye(d)[list(S)], X, C)[0]:
                return InterviewSearch(size, S, checks, time.perf_counter() - t0)
    raise ValueError(f"no interview set of size <= {max_size} is sufficient")


def decoder_check(D, X: Polytope, C: BoxSet, settings: DecoderSettings, *, device=None):
    """Draw true costs in ``C``, observe ``D c``, decode (batched) and compare with the optimum.

    The optimum is ``min_v c^T v`` over the vertex list of ``X`` (exact for a polytope).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    from lab.lp_sufficiency import fast

    check_pair(X, C)
    D = check_dataset(D, X.dim)
    st = check_instance("settings", settings, DecoderSettings)
    c = C.sample(st.draws, rng=np.random.default_rng(st.seed))
    t0 = time.perf_counter()
    x, _ = fast.decode(D, c @ D.T, X, C, device=device)
    seconds = time.perf_counter() - t0
    gap = np.einsum("ij,ij->i", c, x) - (c @ X.vertices().T).min(axis=1)
    return DecoderCheck(st.draws, float(gap.max()), int(np.sum(gap > 1e-8)), seconds)


def _polygon_order(V: np.ndarray) -> np.ndarray:
    ang = np.arctan2(V[:, 1] - V[:, 1].mean(), V[:, 0] - V[:, 0].mean())
    return V[np.argsort(ang)]


@memo
def geometry_view(settings: GeometrySettings) -> GeometryView:
    """The hexagon ``X``, the box ``C`` of ``settings`` and the construction's dataset ``D``.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    st = check_instance("settings", settings, GeometrySettings)
    X = regular_polygon(st.n_sides)
    angle = np.radians(st.angle_deg)
    centre = np.array([np.cos(angle), np.sin(angle)])
    C = BoxSet(centre - st.radius, centre + st.radius)
    rel = relevant_edges_2d(X, C)
    D, n_milp = minimal_sdd(X, C, rng=st.seed)
    V = X.vertices()
    P = _polygon_order(V)
    edges = tuple(V[np.abs(V @ X.G[i] - X.h[i]) < 1e-9] for i in rel)
    return GeometryView(
        st.radius, np.vstack([P, P[:1]]), X.G, tuple(rel), edges, C.lo, C.hi, D, int(n_milp)
    )


@memo
def hiring_view(settings: HiringSettings) -> HiringView:
    """A hiring instance, its relevant pairs (eq. 5), ``d*`` and the cheapest sufficient dataset
    with interviews at price 1 and comparisons at ``settings.comparison_cost``.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    st = check_instance("settings", settings, HiringSettings)
    lo, hi = hiring_instance(st.n, st.width, st.seed)
    pairs = tuple(sorted(topk_relevant_pairs(lo, hi, st.k)))
    d_star = int(topk_sdd(lo, hi, st.k).shape[0])
    Q, total = topk_least_cost(lo, hi, st.k, 1.0, st.comparison_cost)
    inter = tuple(int(np.flatnonzero(q)[0]) for q in Q if np.count_nonzero(q) == 1)
    comp = tuple(tuple(int(i) for i in np.flatnonzero(q)) for q in Q if np.count_nonzero(q) == 2)
    hired = tuple(int(i) for i in np.argsort(-0.5 * (lo + hi))[: st.k])
    return HiringView(st, lo, hi, pairs, d_star, inter, comp, float(total), hired)


def _hiring_draws(trials: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The instances of :func:`span_agreement`, drawn in order from one generator."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(trials):
        n = int(rng.integers(6, 13))
        k = int(rng.integers(1, n))
        ctr = rng.uniform(0, 10, n)
        wid = rng.uniform(1.5, 4.0, n)
        out.append((ctr - wid / 2, ctr + wid / 2, k))
    return out


def _span_trial(trials: int, base_seed: int, seed: int) -> dict:
    """Instance ``seed`` of :func:`_hiring_draws`: the construction (probes seeded ``seed``)
    against the closed form."""
    lo, hi, k = _hiring_draws(trials, base_seed)[seed]
    n = lo.size
    X, C = topk_problem(lo, hi, k)
    t0 = time.perf_counter()
    D, n_milp = minimal_sdd(X, C, rng=seed)
    seconds = time.perf_counter() - t0
    B = topk_sdd(lo, hi, k)
    everything = same_span(np.eye(n)[1:] - np.eye(n)[0], B)  # all n - 1 comparisons
    return {
        "n": n,
        "k": k,
        "d_milp": D.shape[0],
        "d_closed": B.shape[0],
        "n_milp": n_milp,
        "seconds": seconds,
        "agree": float(same_span(D, B)),
        "everything": float(everything),
    }


def span_agreement(settings: SpanSettings) -> SpanAgreement:
    """Random hiring instances (one per seed ``0 .. trials - 1``): does the span of the MILP
    construction equal the closed form's, and does the span of every comparison?

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    st = check_instance("settings", settings, SpanSettings)
    grid = {"trials": [st.trials], "base_seed": [st.seed]}
    s = sweep(_span_trial, grid, seeds=range(st.trials), desc="hiring instances")
    where = {"trials": st.trials, "base_seed": st.seed}

    def col(key, kind):
        return tuple(kind(v) for v in s.values(key, **where))

    return SpanAgreement(
        col("n", int),
        col("k", int),
        col("d_milp", int),
        col("d_closed", int),
        col("n_milp", int),
        col("seconds", float),
        col("agree", bool),
        col("everything", bool),
    )


@dataclass(frozen=True)
class WidthCurve:
    """``d*`` and the interview count of one hiring instance along a grid of width scales."""

    settings: WidthSettings
    d_star: tuple[int, ...]  # closed form (comparisons), every width
    interviews: tuple[int, ...]  # closed form (interviews only), every width
    milp_widths: tuple[float, ...]  # every milp_every-th width
    d_milp: tuple[int, ...]  # the MILP construction's d* there


def width_curve(settings: WidthSettings) -> WidthCurve:
    """The closed form (eq. 5) at every width of ``settings``; the MILP construction at every
    ``milp_every``-th (probes seeded ``settings.seed``).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    st = check_instance("settings", settings, WidthSettings)
    dstar, interviews, d_milp = [], [], []
    for w in st.widths:
        lo, hi = hiring_instance(st.n, w, seed=st.seed)
        dstar.append(int(topk_sdd(lo, hi, st.k).shape[0]))
        interviews.append(int(topk_sdd(lo, hi, st.k, queries="interviews").shape[0]))
    milp_widths = st.widths[:: st.milp_every]
    for w in milp_widths:
        lo, hi = hiring_instance(st.n, w, seed=st.seed)
        D, _ = minimal_sdd(*topk_problem(lo, hi, st.k), rng=st.seed)
        d_milp.append(int(D.shape[0]))
    return WidthCurve(st, tuple(dstar), tuple(interviews), milp_widths, tuple(d_milp))


@dataclass(frozen=True)
class DeletionCheck:
    """The exact sufficiency test on a dataset, on each one-vector deletion of it, and on the
    dataset plus a redundant vector (the sum of its first two) and its deletions."""

    d_star: int
    full: bool
    drops: tuple[bool, ...]
    plus: bool
    plus_drops: tuple[bool, ...]


def deletion_check(D, X: Polytope, C: BoxSet) -> DeletionCheck:
    """:func:`~lab.lp_sufficiency.is_sufficient` on ``D``, on ``D`` without each of its rows,
    and on ``D`` plus the sum of its first two rows (``D`` needs at least two rows).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    check_pair(X, C)
    D = check_dataset(D, X.dim)
    if D.shape[0] < 2:
        raise ValueError(f"D must have at least two rows (got {D.shape[0]})")

    def drops(M):
        return tuple(bool(is_sufficient(np.delete(M, i, axis=0), X, C)[0]) for i in range(len(M)))

    D_plus = np.vstack([D, D[:2].sum(0)])
    full, plus = bool(is_sufficient(D, X, C)[0]), bool(is_sufficient(D_plus, X, C)[0])
    return DeletionCheck(int(D.shape[0]), full, drops(D), plus, drops(D_plus))


@dataclass(frozen=True)
class PriceCheck:
    """The least-cost MILP against the hiring closed form at several comparison prices."""

    kappas: tuple[float, ...]
    queries: int  # candidate queries: n interviews and n (n - 1) / 2 comparisons
    milp: tuple[float, ...]  # the MILP's least price at each kappa
    closed: tuple[float, ...]  # the closed form's
    interviews: tuple[int, ...]  # interviews chosen by the MILP
    comparisons: tuple[int, ...]  # comparisons chosen by the MILP
    seconds: tuple[float, ...]
    interviews_only: float  # the price of the interview-only dataset (1 per interview)


def price_check(lo, hi, k: int, kappas) -> PriceCheck:
    """Least-cost sufficient datasets of the hiring instance ``(lo, hi)``, ``k`` hires, with
    interviews at price 1 and comparisons at each price of ``kappas``: the MILP of
    :func:`~lab.lp_sufficiency.least_cost_sdd` over all ``n + n (n - 1) / 2`` candidate queries
    against :func:`~lab.lp_sufficiency.topk_least_cost`.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    kappas = check_array("kappas", kappas, ndim=1, min_size=1)
    if np.any(kappas <= 0):
        raise ValueError(f"kappas must be > 0 (got {kappas.tolist()})")
    B = topk_sdd(lo, hi, k)
    n = B.shape[1]
    eye = np.eye(n)
    Q = np.vstack([eye] + [eye[i] - eye[j] for i in range(n) for j in range(i + 1, n)])
    milp, closed, inter, comp, secs = [], [], [], [], []
    for kappa in kappas:
        t0 = time.perf_counter()
        sel, total = least_cost_sdd(B, Q, np.r_[np.ones(n), np.full(len(Q) - n, kappa)])
        secs.append(time.perf_counter() - t0)
        milp.append(float(total))
        closed.append(float(topk_least_cost(lo, hi, k, 1.0, kappa)[1]))
        inter.append(int(np.sum(sel < n)))
        comp.append(int(np.sum(sel >= n)))
    only = float(topk_sdd(lo, hi, k, queries="interviews").shape[0])
    return PriceCheck(
        tuple(float(x) for x in kappas), len(Q), tuple(milp), tuple(closed), tuple(inter),
        tuple(comp), tuple(secs), only,
    )  # fmt: skip


def decision_margin(D, X: Polytope, C: BoxSet, trials: int, seed: int) -> float:
    """The smallest decision margin over ``trials`` observationally equivalent pairs of
    :func:`~lab.lp_sufficiency.sample_equivalent_pairs` (the same pairs as
    :func:`~lab.lp_sufficiency.violation_rate_mc` with ``rng=seed``).

    For each pair ``(c, c')`` and each side, the optimal vertex for one cost is judged under the
    other: the gap to the best *other* vertex. Positive everywhere: every pair shares its unique
    optimum, by at least the returned amount (objective units); negative: some pair is decided
    wrongly.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    check_pair(X, C)
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    V = X.vertices()
    c1, c2 = sample_equivalent_pairs(D, C, trials, rng=seed)
    rows, gaps = np.arange(trials), []
    for a, b in ((c1, c2), (c2, c1)):  # a's optimal vertex, judged under b
        obj = b @ V.T
        best = np.argmin(a @ V.T, axis=1)
        own = obj[rows, best].copy()
        obj[rows, best] = np.inf
        gaps.append(obj.min(axis=1) - own)  # > 0: a's vertex is b's unique optimum by that much
    return float(np.min(np.minimum(*gaps)))
