"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py``; the
driver trusts it and calls the unchecked kernels. Each field is checked in ``__post_init__``
with ``lab.core.checks``, so a bad value fails where it is typed.

* ``ToyRunSettings``: one IZOM run on Toy P / Toy O from ``x0`` (notebook 1, sections 4 and 6);
* ``RateSettings``: IZOM over seeds and horizons, the rate at the random output (section 5);
* ``CurvedSettings``: Theorem 1 on the curved solution set (section 8);
* ``SmoothnessSettings``: random triples for the set-smoothness estimates (sections 2 and 9);
* ``ConstraintSettings``: shrinking windows around the constrained follower's kink (section 9);
* ``KinkSettings``: the optimistic certificate at a kink of Toy O (section 7);
* ``CleaningSettings``: one hyper-cleaning instance and its IZOM run (notebook 2).

See: book/bilevel/01-kinks-and-stationarity.ipynb, book/bilevel/02-hyper-cleaning.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_ints,
    check_positive,
    check_range,
    set_field,
)

__all__ = [
    "CleaningSettings",
    "ConstraintSettings",
    "CurvedSettings",
    "KinkSettings",
    "RateSettings",
    "SmoothnessSettings",
    "ToyRunSettings",
]


@dataclass(frozen=True)
class ToyRunSettings:
    """One IZOM run on a toy problem: ``T`` steps of size ``eta_scale / sqrt(m T)``, smoothing
    radius ``delta``, from ``x0``.

    Parameters
    ----------
    T : int
        Steps, in ``[1, 10_000_000]``.
    eta_scale : float
        The constant ``c`` of the step ``eta = c / sqrt(m T)`` (> 0).
    delta : float
        Smoothing radius of the two-point estimator (> 0).
    x0 : tuple of float
        Start (1 to 50 coordinates).
    seed : int
        Seed of the directions and of the output index (>= 0).
    ball : float, optional
        Radius of the optimistic certificate's ball (> 0; default ``delta``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    T: int = 4000
    eta_scale: float = 0.5
    delta: float = 1e-3
    x0: tuple[float, ...] = (1.5, -1.2)
    seed: int = 0
    ball: float | None = None

    def __post_init__(self) -> None:
        set_field(self, "T", check_int("T", self.T, 1, 10_000_000))
        set_field(self, "eta_scale", check_positive("eta_scale", self.eta_scale))
        set_field(self, "delta", check_positive("delta", self.delta))
        x0 = check_array("x0", self.x0, ndim=1, min_size=1)
        if x0.size > 50:
            raise ValueError(f"x0 must have 1 to 50 coordinates, got {x0.size}")
        set_field(self, "x0", tuple(float(v) for v in x0))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        if self.ball is not None:
            set_field(self, "ball", check_positive("ball", self.ball))

    @property
    def eta(self) -> float:
        """The step ``eta_scale / sqrt(m T)``."""
        return self.eta_scale / np.sqrt(len(self.x0) * self.T)


@dataclass(frozen=True)
class RateSettings:
    """IZOM on Toy P for every horizon and seed; the squared Moreau gradient at ``x_R``.

    Parameters
    ----------
    horizons : tuple of int
        Distinct horizons ``T`` (>= 1), at least two.
    seeds : tuple of int
        Distinct seeds (>= 0), at least two.
    eta_scale, delta, x0
        As :class:`ToyRunSettings`.
    gamma : float
        Moreau parameter (> 0).
    rival_radius : float
        The fixed, coarse smoothing radius of the rival run (> 0): the gradient-free Goldstein
        method of Lin, Zheng & Jordan (2022) under the same protocol.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    horizons: tuple[int, ...] = (250, 1000, 4000)
    seeds: tuple[int, ...] = tuple(range(8))
    eta_scale: float = 0.5
    delta: float = 1e-3
    x0: tuple[float, ...] = (1.5, -1.2)
    gamma: float = 0.5
    rival_radius: float = 0.3

    def __post_init__(self) -> None:
        set_field(self, "horizons", check_ints("horizons", self.horizons, 1))
        set_field(self, "seeds", check_ints("seeds", self.seeds, 0))
        if len(self.horizons) < 2 or len(self.seeds) < 2:
            raise ValueError("horizons and seeds need at least two values each (a slope, a spread)")
        set_field(self, "eta_scale", check_positive("eta_scale", self.eta_scale))
        set_field(self, "delta", check_positive("delta", self.delta))
        set_field(
            self, "x0", tuple(float(v) for v in check_array("x0", self.x0, ndim=1, min_size=1))
        )
        set_field(self, "gamma", check_positive("gamma", self.gamma))
        set_field(self, "rival_radius", check_positive("rival_radius", self.rival_radius))


@dataclass(frozen=True)
class CurvedSettings:
    """Theorem 1 on ``phi_p = |x| + s sin x`` (the curved solution set of ``toy_curved``).

    Parameters
    ----------
    s : float
        Weight of the curved coordinate (> 0).
    box : float
        Half-width of the sampled interval (> 0).
    n : int
        Random segments and set-smoothness triples (>= 100).
    seed : int
        Seed (>= 0).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    s: float = 2.0
    box: float = 2.0
    n: int = 20_000
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "s", check_positive("s", self.s))
        set_field(self, "box", check_positive("box", self.box))
        set_field(self, "n", check_int("n", self.n, 100))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class SmoothnessSettings:
    """Random triples ``(x1, x2, theta)`` for the set-smoothness estimates.

    Parameters
    ----------
    n : int
        Number of triples (>= 100).
    seed : int
        Seed (>= 0).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    n: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "n", check_int("n", self.n, 100))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class ConstraintSettings:
    """Shrinking windows around the constrained follower's kink.

    Parameters
    ----------
    widths : tuple of float
        Window half-widths (> 0), at least two.
    n : int
        Random segments per window (>= 1).
    seed : int
        Seed (>= 0).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    widths: tuple[float, ...] = (1e-1, 1e-2, 1e-3)
    n: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        w = check_array("widths", self.widths, ndim=1, min_size=2)
        if np.any(w <= 0):
            raise ValueError(f"widths must be > 0, got {w}")
        set_field(self, "widths", tuple(float(v) for v in w))
        set_field(self, "n", check_int("n", self.n, 1))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class KinkSettings:
    """The optimistic certificate at the Clarke-stationary kink point of Toy O, and IZOM from it.

    Parameters
    ----------
    delta : float
        Radius of the certificate's ball (> 0).
    T : int
        IZOM steps from the kink (>= 1).
    n_samples : int
        Random points of the ball (>= 1).
    seed : int
        Seed (>= 0).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    delta: float = 0.15
    T: int = 2000
    n_samples: int = 400
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "delta", check_positive("delta", self.delta))
        set_field(self, "T", check_int("T", self.T, 1, 10_000_000))
        set_field(self, "n_samples", check_int("n_samples", self.n_samples, 1))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class CleaningSettings:
    """One hyper-cleaning instance and its IZOM run.

    Parameters
    ----------
    n_train, p, n_val : int
        Training points, features (``p >= n_train``: an interpolating follower) and validation
        points (>= 1).
    corruption : float
        Fraction of corrupted training labels, in ``[0, 1]``.
    T : int
        IZOM steps (>= 1).
    eta : float
        Step size (> 0).
    delta : float
        Smoothing radius (> 0).
    seed : int
        Seed of the instance and of the run (>= 0).

    See: book/bilevel/02-hyper-cleaning.ipynb
    """

    n_train: int = 20
    p: int = 40
    n_val: int = 100
    corruption: float = 0.3
    T: int = 3000
    eta: float = 0.05
    delta: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "n_train", check_int("n_train", self.n_train, 1))
        set_field(self, "p", check_int("p", self.p, self.n_train))
        set_field(self, "n_val", check_int("n_val", self.n_val, 1))
        set_field(self, "corruption", check_range("corruption", self.corruption, 0.0, 1.0))
        set_field(self, "T", check_int("T", self.T, 1, 10_000_000))
        set_field(self, "eta", check_positive("eta", self.eta))
        set_field(self, "delta", check_positive("delta", self.delta))
        set_field(self, "seed", check_int("seed", self.seed, 0))
