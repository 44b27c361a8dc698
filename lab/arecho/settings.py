"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py`` (or
to :func:`lab.arecho.models.train`); the driver trusts it. Each field is checked in
``__post_init__`` with ``lab.core.checks``, so a bad value fails where it is typed.

* ``TrainSettings``: one training run of a chain or a parallel head (budget, optimiser, the
  chain's label dropout and smoothing);
* ``HeadSettings``: the five short parallel heads of notebook 1 (raw MSE, raw L1, standardised
  L1, 500-bin and 32-bin tokens);
* ``StudySettings``: the committed (or, with ``full``, retrained) chains and baselines of
  notebook 2, decoded in every mode over the seeds.

See: book/arecho/01-degraded-speech-and-tokens.ipynb, book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_ints,
    check_positive,
    check_range,
    set_field,
)

__all__ = ["HeadSettings", "StudySettings", "TrainSettings"]

#: the decoding modes of :func:`lab.arecho.reference.decode` (kept here so that settings do not
#: import the kernels)
_MODES = ("fixed", "random", "meta", "confidence")


@dataclass(frozen=True)
class TrainSettings:
    """One training run of a :class:`~lab.arecho.models.TinyARECHO` or a
    :class:`~lab.arecho.models.ParallelBaseline`.

    Parameters
    ----------
    seconds : float
        Time budget (> 0; the compute-matched comparisons give every model the same).
    steps : int, optional
        Stop after this many optimiser steps instead (>= 1; ``seconds`` still caps).
    batch : int
        Mini-batch size (>= 1).
    lr : float
        AdamW learning rate (> 0; cosine decay over the budget).
    label_dropout : float
        Probability of dropping each label from a training sequence, in ``[0, 0.95]``.
    label_smoothing : float
        Cross-entropy label smoothing of the token models, in ``[0, 0.5]``.
    seed : int
        Seed of the batches, orders and dropout (>= 0).
    clock : str
        ``"wall"`` (``time.perf_counter``) or ``"cpu"`` (``time.process_time``: the compute
        this process used, the fair budget of a compute-matched comparison).
    progress : bool
        A progress bar over steps (when ``steps`` is given).

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    seconds: float = 10.0
    steps: int | None = None
    batch: int = 64
    lr: float = 2e-3
    label_dropout: float = 0.15
    label_smoothing: float = 0.05
    seed: int = 0
    clock: str = "wall"
    progress: bool = False

    def __post_init__(self) -> None:
        set_field(self, "seconds", check_positive("seconds", self.seconds))
        if self.steps is not None:
            set_field(self, "steps", check_int("steps", self.steps, 1))
        set_field(self, "batch", check_int("batch", self.batch, 1))
        set_field(self, "lr", check_positive("lr", self.lr))
        set_field(
            self, "label_dropout", check_range("label_dropout", self.label_dropout, 0.0, 0.95)
        )
        smoothing = check_range("label_smoothing", self.label_smoothing, 0.0, 0.5)
        set_field(self, "label_smoothing", smoothing)
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "clock", check_choice("clock", self.clock, ("wall", "cpu")))
        set_field(self, "progress", check_bool("progress", self.progress))


@dataclass(frozen=True)
class HeadSettings:
    """The five parallel heads of notebook 1, each trained for ``steps`` steps.

    Parameters
    ----------
    steps : int
        Optimiser steps per head (>= 1).
    seconds : float
        A time cap per head (> 0; the step count decides at the defaults).
    seed : int
        Seed of every head's weights and batches (>= 0).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """

    steps: int = 200
    seconds: float = 120.0
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "steps", check_int("steps", self.steps, 1))
        set_field(self, "seconds", check_positive("seconds", self.seconds))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class StudySettings:
    """The study over seeds of notebook 2: chains, UniVERSA and UniVERSA-T per seed.

    Parameters
    ----------
    seeds : tuple of int
        Training seeds (distinct, >= 0; the committed files exist for 0, 1, 2).
    modes : tuple of str
        Decoding modes, a non-empty subset of ``("fixed", "random", "meta", "confidence")``.
    full : bool
        Retrain every chain for ``steps`` steps and its baselines for its CPU time instead of
        loading the committed files.
    steps : int
        The chain's optimiser steps when ``full`` (>= 1).

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    modes: tuple[str, ...] = _MODES
    full: bool = False
    steps: int = 6000

    def __post_init__(self) -> None:
        set_field(self, "seeds", check_ints("seeds", self.seeds, 0))
        if isinstance(self.modes, (str, bytes)) or not hasattr(self.modes, "__iter__"):
            raise TypeError(f"modes must be a sequence of str, got {type(self.modes).__name__}")
        modes = tuple(check_choice("modes", m, _MODES) for m in self.modes)
        if not modes:
            raise ValueError(f"modes must be a non-empty subset of {_MODES}")
        set_field(self, "modes", modes)
        set_field(self, "full", check_bool("full", self.full))
        set_field(self, "steps", check_int("steps", self.steps, 1))
