"""Drivers for the notebooks and the benchmark: each returns a small result dataclass.

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int
from lab.lp_sufficiency.problems import BoxSet, Polytope, check_pair, transportation_problem
from lab.lp_sufficiency.reference import is_sufficient, minimal_sdd

__all__ = [
    "ScalingSweep",
    "InterviewSearch",
    "DecoderCheck",
    "transportation_sweep",
    "smallest_interview_set",
    "random_hiring_instance",
    "decoder_check",
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


def transportation_sweep(supply, demand, radii, seed: int = 0) -> ScalingSweep:
    """Minimal dataset size of a transportation LP for cost boxes of growing half-width.

    The box is centred at a cost with entries ``U(0, 10)`` (seeded); each radius runs
    :func:`~lab.lp_sufficiency.minimal_sdd` (random probes, seed ``seed``).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """
    supply = check_array("supply", supply, ndim=1, min_size=2)
    demand = check_array("demand", demand, ndim=1, min_size=2)
    radii = check_array("radii", radii, ndim=1, min_size=1)
    seed = check_int("seed", seed, 0)
    center = np.random.default_rng(seed).uniform(0, 10, supply.size * demand.size)
    out = ScalingSweep([], [], [], [], [], (supply.size - 1) * (demand.size - 1))
    for r in radii:
        X, C = transportation_problem(supply, demand, center, float(r))
        t0 = time.perf_counter()
        D, n, info = minimal_sdd(X, C, rng=seed, return_info=True)
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


def decoder_check(D, X: Polytope, C: BoxSet, draws: int = 1000, seed: int = 0, device=None):
    """Draw true costs in ``C``, observe ``D c``, decode (batched) and compare with the optimum.

    The optimum is ``min_v c^T v`` over the vertex list of ``X`` (exact for a polytope).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    from lab.lp_sufficiency import fast
    from lab.lp_sufficiency.problems import check_dataset

    check_pair(X, C)
    D = check_dataset(D, X.dim)
    draws = check_int("draws", draws, 1)
    seed = check_int("seed", seed, 0)
    c = C.sample(draws, rng=np.random.default_rng(seed))
    t0 = time.perf_counter()
    x, _ = fast.decode(D, c @ D.T, X, C, device=device)
    seconds = time.perf_counter() - t0
    gap = np.einsum("ij,ij->i", c, x) - (c @ X.vertices().T).min(axis=1)
    return DecoderCheck(draws, float(gap.max()), int(np.sum(gap > 1e-8)), seconds)
