"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of
:mod:`lab.strategic.experiments`; the driver trusts it and calls the unchecked kernels. Every
field is checked in ``__post_init__`` with :mod:`lab.core.checks`, so a bad value fails where
it is typed.

* :class:`Instance`: the paper's instance (``d``, ``gamma``, ``eta``, the noise, ``w*``), the
  part every family shares;
* :class:`RaiseSettings`: the loss of the raised boundary on a grid of raises, several radii
  (notebook 1);
* :class:`ScatterSettings`: one picture of the agents' best responses (notebook 1's widget);
* :class:`ComparisonSettings`: the paper's algorithm and the baselines on the same seeds
  (notebook 2);
* :class:`HorizonSettings`: the paper's algorithm at several horizons (notebook 2);
* :class:`SweepSettings`: one parameter of the instance or one constant varied (notebook 3).

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb,
book/strategic/03-sweeps.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lab.core.checks import check_choice, check_int, check_range, set_field
from lab.strategic.model import StrategicMassart
from lab.strategic.offset_game import NOISE_PROFILES
from lab.strategic.reference import Constants

__all__ = [
    "LEARNERS",
    "ComparisonSettings",
    "HorizonSettings",
    "Instance",
    "RaiseSettings",
    "ScatterSettings",
    "SweepSettings",
]

#: the learners :func:`lab.strategic.experiments.compare_learners` runs
LEARNERS = (
    "ours",
    "zhang-partial",
    "zhang-full",
    "perceptron-partial",
    "perceptron-full",
    "explore-fit-shift",
)
#: the names :class:`SweepSettings` may vary: the instance's or a constant's
SWEEPABLE = ("gamma", "d", "eta", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7")


def _seeds(name: str, values: object) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    out = tuple(check_int(name, v, 0) for v in values)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"{name} must be distinct integers >= 0, at least one, got {out}")
    return out


def _floats(name: str, values: object, low: float, high: float) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    out = tuple(check_range(name, v, low, high) for v in values)
    if not out:
        raise ValueError(f"{name} must hold at least one value")
    return out


def _constants(value: object) -> Constants:
    if value is None:
        return Constants()
    if not isinstance(value, Constants):
        raise TypeError(f"constants must be a Constants, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Instance:
    """The paper's instance: ``x ~ N(0, I_d)``, ``y = sgn(<w*, x>)`` flipped with probability
    ``eta(x) <= eta``, agents who move at most ``gamma`` (:class:`~lab.strategic.model.StrategicMassart`).

    Parameters
    ----------
    d : int
        Dimension, in ``[2, 1000]``.
    gamma : float
        Largest manipulation distance, in ``(0, 10]``.
    eta : float
        Massart bound, in ``[0, 1/2)``.
    noise : {"uniform", "boundary"}
        The flip probability ``eta(x)``.
    w_star : tuple of float, optional
        True direction (normalised by the model); default ``e_1``, the paper's experiments.

    See: book/strategic/02-regret.ipynb
    """

    d: int = 2
    gamma: float = 0.2
    eta: float = 0.2
    noise: str = "uniform"
    w_star: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        env = StrategicMassart(self.d, self.gamma, self.eta, self.noise, self.w_star)
        set_field(self, "d", env.d)
        set_field(self, "gamma", env.gamma)
        set_field(self, "eta", env.eta)
        set_field(self, "noise", env.noise)
        set_field(self, "w_star", tuple(float(v) for v in env.w_star))

    @property
    def env(self) -> StrategicMassart:
        """The model object of this instance."""
        return StrategicMassart(self.d, self.gamma, self.eta, self.noise, list(self.w_star))


@dataclass(frozen=True)
class RaiseSettings:
    """The expected loss of posting ``(w*, b* + s)`` for a grid of raises ``s`` and several radii, on
    the offset game's Monte Carlo pool (notebook 1).

    Parameters
    ----------
    radii : tuple of float
        Largest manipulation distances ``gamma`` (the simulator's ``r``), each in ``[0, 5]``.
    shifts : tuple of float
        The grid of raises ``s`` (the posted threshold is ``b* + s``), each in ``[-5, 5]``.
    n_mc : int
        Size of the Monte Carlo pool, in ``[1000, 10_000_000]``.
    seed : int
        Seed of the pool (``>= 0``).

    See: book/strategic/01-best-responses.ipynb
    """

    radii: tuple[float, ...] = (0.25, 0.5, 1.0)
    shifts: tuple[float, ...] = tuple(round(-0.5 + 0.05 * i, 2) for i in range(41))
    n_mc: int = 100_000
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "radii", _floats("radii", self.radii, 0.0, 5.0))
        set_field(self, "shifts", _floats("shifts", self.shifts, -5.0, 5.0))
        set_field(self, "n_mc", check_int("n_mc", self.n_mc, 1000, 10_000_000))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class ScatterSettings:
    """One picture of the agents' best responses to the rule ``<w*, x> >= shift`` (``b* = 0``).

    Parameters
    ----------
    shift : float
        The posted threshold, in ``[-2, 3]`` (``shift = r`` is the clairvoyant rule).
    r : float
        Largest manipulation distance (the paper's ``gamma``), in ``[0, 5]``.
    noise : str
        A noise profile of the offset game (:data:`lab.strategic.offset_game.NOISE_PROFILES`).
    n : int
        Agents drawn, in ``[1, 300]``.
    seed : int
        Seed of the agents (``>= 0``).

    See: book/strategic/01-best-responses.ipynb
    """

    shift: float = 0.5
    r: float = 0.5
    noise: str = "asymmetric"
    n: int = 300
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "shift", check_range("shift", self.shift, -2.0, 3.0))
        set_field(self, "r", check_range("r", self.r, 0.0, 5.0))
        set_field(self, "noise", check_choice("noise", self.noise, NOISE_PROFILES))
        set_field(self, "n", check_int("n", self.n, 1, 300))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class ComparisonSettings:
    """The paper's algorithm and the baselines on one instance, horizon and set of seeds.

    Parameters
    ----------
    instance : Instance
    T : int
        Horizon (cycles), in ``[64, 10_000_000]``.
    seeds : tuple of int
        One run per seed (distinct, ``>= 0``); all learners see the same agents.
    learners : tuple of str
        From :data:`LEARNERS`; ``"explore-fit-shift"`` (an extra baseline) runs in ``d = 2``
        only, one seed at a time.
    constants : Constants, optional
        The constants ``c0 .. c7`` of the paper's algorithm.

    See: book/strategic/02-regret.ipynb
    """

    instance: Instance = field(default_factory=Instance)
    T: int = 6000
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    learners: tuple[str, ...] = LEARNERS
    constants: Constants = field(default_factory=Constants)

    def __post_init__(self) -> None:
        if not isinstance(self.instance, Instance):
            raise TypeError(f"instance must be an Instance, got {type(self.instance).__name__}")
        set_field(self, "T", check_int("T", self.T, 64, 10_000_000))
        set_field(self, "seeds", _seeds("seeds", self.seeds))
        if isinstance(self.learners, str):
            raise TypeError("learners must be a sequence of learner names, not one string")
        names = tuple(check_choice("learners", k, LEARNERS) for k in self.learners)
        if not names:
            raise ValueError(f"learners must name at least one of {list(LEARNERS)}")
        set_field(self, "learners", names)
        set_field(self, "constants", _constants(self.constants))


@dataclass(frozen=True)
class HorizonSettings:
    """The paper's algorithm run once per horizon (it uses ``ln T``, so each horizon is its own
    run), on the same seeds.

    Parameters
    ----------
    instance : Instance
    T_grid : tuple of int
        Horizons, each in ``[4, 10_000_000]``, at least one.
    seeds : tuple of int
        Distinct, ``>= 0``.
    constants : Constants, optional

    See: book/strategic/02-regret.ipynb
    """

    instance: Instance = field(default_factory=Instance)
    T_grid: tuple[int, ...] = (1000, 2000, 4000)
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    constants: Constants = field(default_factory=Constants)

    def __post_init__(self) -> None:
        if not isinstance(self.instance, Instance):
            raise TypeError(f"instance must be an Instance, got {type(self.instance).__name__}")
        if isinstance(self.T_grid, (str, bytes)) or not hasattr(self.T_grid, "__iter__"):
            raise TypeError(f"T_grid must be a sequence of integers, got {self.T_grid!r}")
        grid = tuple(check_int("T_grid", T, 4, 10_000_000) for T in self.T_grid)
        if not grid:
            raise ValueError("T_grid must hold at least one horizon")
        set_field(self, "T_grid", grid)
        set_field(self, "seeds", _seeds("seeds", self.seeds))
        set_field(self, "constants", _constants(self.constants))


@dataclass(frozen=True)
class SweepSettings:
    """One parameter varied, the rest of the instance and the constants fixed (notebook 3).

    Parameters
    ----------
    name : str
        ``"gamma"``, ``"d"``, ``"eta"`` (of the instance; a new instance has ``w* = e_1``, as in
        the paper's ``d`` sweep) or a constant ``"c0"`` .. ``"c7"``.
    values : tuple
        The values, at least one (integers for ``d``).
    T : int
        Horizon, in ``[4, 10_000_000]``.
    seeds : tuple of int
        Distinct, ``>= 0``; every value runs on the same seeds.
    base : Instance
    constants : Constants, optional
    variant : {"ours", "zhang-partial", "zhang-full"}
        The paper's algorithm or Zhang et al.'s learner.

    See: book/strategic/03-sweeps.ipynb
    """

    name: str = "gamma"
    values: tuple = (0.1, 0.2, 0.5)
    T: int = 2000
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    base: Instance = field(default_factory=Instance)
    constants: Constants = field(default_factory=Constants)
    variant: str = "ours"

    def __post_init__(self) -> None:
        set_field(self, "name", check_choice("name", self.name, SWEEPABLE))
        if isinstance(self.values, (str, bytes)) or not hasattr(self.values, "__iter__"):
            raise TypeError(f"values must be a sequence of numbers, got {self.values!r}")
        if self.name == "d":
            values = tuple(check_int("values", v, 2, 1000) for v in self.values)
        else:
            values = tuple(check_range("values", v, 0.0, math.inf) for v in self.values)
        if not values:
            raise ValueError("values must hold at least one value")
        set_field(self, "values", values)
        set_field(self, "T", check_int("T", self.T, 4, 10_000_000))
        set_field(self, "seeds", _seeds("seeds", self.seeds))
        if not isinstance(self.base, Instance):
            raise TypeError(f"base must be an Instance, got {type(self.base).__name__}")
        set_field(self, "constants", _constants(self.constants))
        check_choice("variant", self.variant, ("ours", "zhang-partial", "zhang-full"))
