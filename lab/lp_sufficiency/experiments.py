"""Drivers for the notebooks and the benchmark: each takes a settings object (``settings.py``)
and returns a small result dataclass that ``figures.py`` draws.

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int
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
from lab.lp_sufficiency.reference import is_sufficient, minimal_sdd, same_span
from lab.lp_sufficiency.settings import (
    DecoderSettings,
    GeometrySettings,
    HiringSettings,
    SpanSettings,
    TransportSettings,
)

__all__ = [
    "ScalingSweep",
    "InterviewSearch",
    "DecoderCheck",
    "GeometryView",
    "HiringView",
    "SpanAgreement",
    "transportation_sweep",
    "smallest_interview_set",
    "random_hiring_instance",
    "decoder_check",
    "geometry_view",
    "hiring_view",
    "span_agreement",
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
    st = _settings("settings", settings, TransportSettings)
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
    st = _settings("settings", settings, DecoderSettings)
    c = C.sample(st.draws, rng=np.random.default_rng(st.seed))
    t0 = time.perf_counter()
    x, _ = fast.decode(D, c @ D.T, X, C, device=device)
    seconds = time.perf_counter() - t0
    gap = np.einsum("ij,ij->i", c, x) - (c @ X.vertices().T).min(axis=1)
    return DecoderCheck(st.draws, float(gap.max()), int(np.sum(gap > 1e-8)), seconds)


def _settings(name: str, value, kind: type):
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__} (got {type(value).__name__})")
    return value


def _polygon_order(V: np.ndarray) -> np.ndarray:
    ang = np.arctan2(V[:, 1] - V[:, 1].mean(), V[:, 0] - V[:, 0].mean())
    return V[np.argsort(ang)]


@memo
def geometry_view(settings: GeometrySettings) -> GeometryView:
    """The hexagon ``X``, the box ``C`` of ``settings`` and the construction's dataset ``D``.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    st = _settings("settings", settings, GeometrySettings)
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
    st = _settings("settings", settings, HiringSettings)
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
    st = _settings("settings", settings, SpanSettings)
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
