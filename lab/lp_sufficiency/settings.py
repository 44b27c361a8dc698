"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py``; each
field is checked in ``__post_init__`` with ``lab.core.checks``, so a bad value fails where it
is typed.

* ``GeometrySettings``: the hexagon in the plane and a cost box around a direction (notebook 1);
* ``TransportSettings``: a transportation LP and the half-widths of its cost boxes (notebook 1);
* ``SpanSettings``: random hiring instances, construction against the closed form (notebook 1);
* ``HiringSettings``: one hiring instance, its hires and the price of a comparison (notebook 2);
* ``WidthSettings``: one hiring instance at a grid of interval width scales (notebook 2);
* ``DecoderSettings``: draws of the true cost for the decoder check (notebook 2).

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int, check_positive, check_range, set_field

__all__ = [
    "DecoderSettings",
    "GeometrySettings",
    "HiringSettings",
    "SpanSettings",
    "TransportSettings",
    "WidthSettings",
]


def _floats(name: str, values: object, ndim_min: int = 1) -> tuple[float, ...]:
    arr = check_array(name, values, ndim=1, min_size=ndim_min)
    return tuple(float(v) for v in arr)


@dataclass(frozen=True)
class GeometrySettings:
    """The regular polygon ``X`` with ``n_sides`` facets and the cost box ``C`` of half-width
    ``radius`` centred at distance 1 in direction ``angle_deg``.

    Parameters
    ----------
    radius : float
        Half-width of the box (> 0).
    angle_deg : float
        Direction of the box centre, degrees in ``[0, 360]``.
    n_sides : int
        Facets of the polygon, in ``[3, 64]``.
    seed : int
        Seed of the construction's random probes (>= 0).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """

    radius: float = 0.5
    angle_deg: float = 200.0
    n_sides: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "radius", check_positive("radius", self.radius))
        set_field(self, "angle_deg", check_range("angle_deg", self.angle_deg, 0.0, 360.0))
        set_field(self, "n_sides", check_int("n_sides", self.n_sides, 3, 64))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class TransportSettings:
    """An ``r x s`` transportation LP (``supply``, ``demand``, equal totals), its cost-box centre
    drawn ``U(0, 10)`` from ``seed``, and the half-widths ``radii`` of the boxes.

    Parameters
    ----------
    supply, demand : sequence of float
        At least two positive entries each, with the same total.
    radii : sequence of float
        Half-widths of the cost boxes (each > 0, at least one).
    seed : int
        Seed of the box centre and of the construction's probes (>= 0).

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """

    supply: tuple[float, ...] = (3.0, 5.0, 4.0, 6.0)
    demand: tuple[float, ...] = (2.0, 4.0, 3.0, 5.0, 4.0)
    radii: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 50.0)
    seed: int = 0

    def __post_init__(self) -> None:
        supply = _floats("supply", self.supply, 2)
        demand = _floats("demand", self.demand, 2)
        if min(supply + demand) <= 0:
            raise ValueError("supply and demand must be positive")
        if not np.isclose(sum(supply), sum(demand)):
            raise ValueError(f"supply and demand must have the same total ({supply}, {demand})")
        radii = _floats("radii", self.radii)
        for r in radii:
            check_positive("radii", r)
        set_field(self, "supply", supply)
        set_field(self, "demand", demand)
        set_field(self, "radii", radii)
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class SpanSettings:
    """``trials`` random hiring instances (``n`` in 6..12, ``k`` in 1..n-1, centres ``U(0, 10)``,
    widths ``U(1.5, 4)``), all drawn in order from one generator seeded with ``seed``.

    Parameters
    ----------
    trials : int
        Instances, in ``[1, 1000]``.
    seed : int
        Seed of the instance generator (>= 0); instance ``t`` probes with seed ``t``.

    See: book/lp_sufficiency/01-geometry-and-construction.ipynb
    """

    trials: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "trials", check_int("trials", self.trials, 1, 1000))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class HiringSettings:
    """A hiring instance of ``n`` candidates (``lps.hiring_instance``), ``k`` hires, interviews
    at price 1 and comparisons at ``comparison_cost``.

    Parameters
    ----------
    n : int
        Candidates, in ``[2, 200]``.
    k : int
        Hires, in ``[1, n - 1]``.
    width : float
        Interval width scale (> 0).
    seed : int
        Seed of the instance (>= 0).
    comparison_cost : float
        Price of a comparison ``e_i - e_j`` (> 0).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """

    n: int = 12
    k: int = 4
    width: float = 2.5
    seed: int = 0
    comparison_cost: float = 0.8

    def __post_init__(self) -> None:
        set_field(self, "n", check_int("n", self.n, 2, 200))
        set_field(self, "k", check_int("k", self.k, 1, self.n - 1))
        set_field(self, "width", check_positive("width", self.width))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "comparison_cost", check_positive("comparison_cost", self.comparison_cost))


@dataclass(frozen=True)
class DecoderSettings:
    """``draws`` true costs sampled in ``C`` from ``seed`` for the decoder check.

    Parameters
    ----------
    draws : int
        True cost vectors, in ``[1, 10_000_000]``.
    seed : int
        Seed of the draws (>= 0).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """

    draws: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "draws", check_int("draws", self.draws, 1, 10_000_000))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class WidthSettings:
    """The hiring instance ``lps.hiring_instance(n, width, seed)`` at every width scale of
    ``widths``, ``k`` hires; the MILP construction runs on every ``milp_every``-th width.

    Parameters
    ----------
    n : int
        Candidates, in ``[2, 200]``.
    k : int
        Hires, in ``[1, n - 1]``.
    widths : sequence of float
        Interval width scales (each > 0, at least two).
    seed : int
        Seed of the instance and of the construction's probes (>= 0).
    milp_every : int
        Stride of the widths that also run the MILP construction, in ``[1, len(widths)]``.

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """

    n: int = 12
    k: int = 4
    widths: tuple[float, ...] = tuple(np.geomspace(0.25, 30.0, 24))
    seed: int = 0
    milp_every: int = 4

    def __post_init__(self) -> None:
        set_field(self, "n", check_int("n", self.n, 2, 200))
        set_field(self, "k", check_int("k", self.k, 1, self.n - 1))
        widths = _floats("widths", self.widths, 2)
        for w in widths:
            check_positive("widths", w)
        set_field(self, "widths", widths)
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "milp_every", check_int("milp_every", self.milp_every, 1, len(widths)))
