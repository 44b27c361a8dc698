"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver; the driver trusts it.
Each field is checked in ``__post_init__`` with ``lab.core.checks``, so a bad value fails
where it is typed.

* ``GapSettings``: the test instances of a gap table (capacities, count, size, instance seed),
  the PyVRP time per instance and the decoding (notebooks 2 and 3);
* ``TrainSettings``: one REINFORCE training run of a ``TinyPOMO`` (``fast.train_pomo``);
* ``ExpertSettings``: the forced-expert tables of the three-expert checkpoints (notebook 3).

See: book/cvrp/02-gap-vs-tightness.ipynb, book/cvrp/03-vct-and-experts.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import check_bool, check_choice, check_int, check_positive, set_field

from .problems import MAX_DEMAND

__all__ = ["CAPACITIES", "ExpertSettings", "GapSettings", "TrainSettings"]

#: The capacity grid of the chapter's gap-vs-tightness curves.
CAPACITIES = (10, 20, 30, 50, 100, 200)


def _capacities(name: str, values: object) -> tuple:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of capacities, got {type(values).__name__}")
    out = tuple(values)
    for c in out:
        check_positive(name, c)
    if not out:
        raise ValueError(f"{name} must hold at least one capacity (> 0), got ()")
    return out


@dataclass(frozen=True)
class GapSettings:
    """Test instances ``generate_cvrp(instances, n, C, seed)`` at every ``C`` of
    ``capacities`` (the same customers at every capacity), and how they are decoded.

    Parameters
    ----------
    capacities : tuple of float
        Capacities ``C > 0``.
    instances : int
        Instances per capacity (>= 1).
    n : int
        Customers per instance (>= 2).
    seed : int
        Instance seed (>= 0).
    seconds : float
        PyVRP time per instance (> 0), when the reference is solved rather than read.
    augment : bool
        x8 symmetry augmentation at inference.
    starts : {"all", "single"}
        POMO's rollouts from every customer, or one rollout from customer 1.
    check : bool
        Verify every decoded solution's feasibility and recompute its length.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """

    capacities: tuple = CAPACITIES
    instances: int = 32
    n: int = 20
    seed: int = 1234
    seconds: float = 0.2
    augment: bool = False
    starts: str = "all"
    check: bool = True

    def __post_init__(self) -> None:
        set_field(self, "capacities", _capacities("capacities", self.capacities))
        set_field(self, "instances", check_int("instances", self.instances, 1))
        set_field(self, "n", check_int("n", self.n, 2))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "seconds", check_positive("seconds", self.seconds))
        set_field(self, "augment", check_bool("augment", self.augment))
        set_field(self, "starts", check_choice("starts", self.starts, ["all", "single"]))
        set_field(self, "check", check_bool("check", self.check))


def _capacity_spec(capacity: object) -> object:
    if callable(capacity):
        return capacity
    if isinstance(capacity, (tuple, list)):
        if len(capacity) != 2:
            raise ValueError(f"capacity range must be (lo, hi), got {capacity!r}")
        lo = check_int("capacity[0]", capacity[0], MAX_DEMAND)
        return (lo, check_int("capacity[1]", capacity[1], lo))
    c = check_positive("capacity", capacity)
    if c < MAX_DEMAND:
        raise ValueError(f"capacity must be >= {MAX_DEMAND} (got {c:g})")
    return capacity


@dataclass(frozen=True)
class TrainSettings:
    """One REINFORCE run with the POMO shared baseline (``fast.train_pomo``).

    Parameters
    ----------
    n : int
        Customers per training instance, in ``[2, 500]``.
    capacity : float, (int, int) or callable
        A number (fixed-capacity training), an integer range ``(lo, hi)`` with
        ``MAX_DEMAND <= lo <= hi`` (VCT: one capacity per instance) or a callable
        ``(batch, generator) -> (batch,)``.
    steps : int, optional
        Gradient steps (>= 1).
    seconds : float, optional
        Wall-clock budget (> 0), instead of or as well as ``steps`` (one must be given).
    batch : int
        Instances per step (>= 1).
    lr : float
        Adam learning rate (> 0).
    seed : int
        Seed of the instance and sampling generators, in ``[0, 2**31 - 1]``.
    log_every : int
        Record the loss and mean length every ``log_every`` steps (>= 1).
    progress_bar : bool

    See: book/cvrp/03-vct-and-experts.ipynb
    """

    n: int = 20
    capacity: object = 30
    steps: int | None = 100
    seconds: float | None = None
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    log_every: int = 10
    progress_bar: bool = False

    def __post_init__(self) -> None:
        if self.steps is None and self.seconds is None:
            raise ValueError("give steps or seconds (got neither)")
        if self.steps is not None:
            set_field(self, "steps", check_int("steps", self.steps, 1))
        if self.seconds is not None:
            set_field(self, "seconds", check_positive("seconds", self.seconds))
        set_field(self, "n", check_int("n", self.n, 2, 500))
        set_field(self, "capacity", _capacity_spec(self.capacity))
        set_field(self, "batch", check_int("batch", self.batch, 1))
        set_field(self, "lr", check_positive("lr", self.lr))
        set_field(self, "seed", check_int("seed", self.seed, 0, 2**31 - 1))
        set_field(self, "log_every", check_int("log_every", self.log_every, 1))
        set_field(self, "progress_bar", check_bool("progress_bar", self.progress_bar))


@dataclass(frozen=True)
class ExpertSettings:
    """Forced-expert tables of a three-expert checkpoint: every expert on the same test
    instances ``generate_cvrp(instances, n, C, seed)`` at each ``C`` of ``capacities``.

    Parameters
    ----------
    capacities : tuple of float
        Capacities ``C > 0``.
    instances : int
        Instances per capacity (>= 1).
    n : int
        Customers per instance (>= 2).
    seed : int
        Instance seed (>= 0).

    See: book/cvrp/03-vct-and-experts.ipynb
    """

    capacities: tuple = (10, 20, 30, 50, 73, 100, 137, 150, 200)
    instances: int = 32
    n: int = 20
    seed: int = 4321

    def __post_init__(self) -> None:
        set_field(self, "capacities", _capacities("capacities", self.capacities))
        set_field(self, "instances", check_int("instances", self.instances, 1))
        set_field(self, "n", check_int("n", self.n, 2))
        set_field(self, "seed", check_int("seed", self.seed, 0))
