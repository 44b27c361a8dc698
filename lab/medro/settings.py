"""The settings of the chapter's training runs: one frozen dataclass, validated once.

A notebook builds a :class:`TrainSettings` and passes it whole to a driver of
:mod:`lab.medro.experiments` (``train``, ``train_runs``, ``compare``, ``gamma_sweep``) or to
:func:`lab.medro.fast.train_stacked`; the drivers trust it and call the unchecked kernels.
Every field is checked in ``__post_init__`` with :mod:`lab.core.checks`, so a bad value fails
where it is typed. What differs from run to run (the method, MEDRO's loss variant, ``γ``, the
seed) stays an argument of the driver.

See: book/medro/01-official-algorithm.ipynb, book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.core.checks import check_int, check_positive, replace_fields, set_field

__all__ = ["TrainSettings", "as_settings"]


@dataclass(frozen=True)
class TrainSettings:
    """How every run of a comparison is trained: full-batch Adam on the training split.

    Parameters
    ----------
    eta : float (>= 0)
        ``η_Λ``, the adversary's exponentiated-gradient step (GroupDRO's and MEDRO's).
    steps : int (>= 1)
        Full-batch Adam steps.
    lr, weight_decay : float (> 0, >= 0)
        Adam's step and L2 weight decay.
    hidden, feat_dim : int (>= 1)
        The featurizer ``d -> hidden -> feat_dim`` (ReLU after each layer).
    record_every : int (>= 1)
        Keep the adversary's weights and the risk matrix every this many steps (and at the last).

    See: book/medro/02-water-digits.ipynb
    """

    eta: float = 0.05
    steps: int = 300
    lr: float = 1e-3
    weight_decay: float = 1e-3
    hidden: int = 64
    feat_dim: int = 32
    record_every: int = 10

    def __post_init__(self) -> None:
        set_field(self, "eta", check_positive("eta", self.eta, allow_zero=True))
        set_field(self, "steps", check_int("steps", self.steps, 1))
        set_field(self, "lr", check_positive("lr", self.lr))
        wd = check_positive("weight_decay", self.weight_decay, allow_zero=True)
        set_field(self, "weight_decay", wd)
        set_field(self, "hidden", check_int("hidden", self.hidden, 1))
        set_field(self, "feat_dim", check_int("feat_dim", self.feat_dim, 1))
        set_field(self, "record_every", check_int("record_every", self.record_every, 1))

    def replace(self, **changes: Any) -> TrainSettings:
        """A copy with some fields changed (validated again, once)."""
        return as_settings(self, changes)


def as_settings(settings: Any = None, changes: Any = None) -> TrainSettings:
    """``settings`` (a :class:`TrainSettings`, or ``None`` for the defaults) with ``changes``
    (a dict of field names to values) applied: the one place a driver's settings are checked.

    See: book/medro/02-water-digits.ipynb
    """
    if settings is None:
        settings = TrainSettings()
    if not isinstance(settings, TrainSettings):
        raise TypeError(
            f"settings must be a lab.medro.TrainSettings or None, got {type(settings).__name__}"
        )
    changes = dict(changes or {})
    return replace_fields(settings, changes) if changes else settings
