"""The training protocol of the chapter's head layers: one frozen dataclass, validated once.

A notebook builds a :class:`TrainSettings` and passes it whole to
:func:`lab.gmm_attention.train_heads` (numpy reference), :func:`lab.gmm_attention.fast.train_heads`
(torch, many runs) or a driver of :mod:`lab.gmm_attention.experiments`. Every field is checked in
``__post_init__`` with :mod:`lab.core.checks`, so a bad value fails where it is typed; the
kernels keep the model's symbols (``lam`` = λ, ``score``) as their own keyword arguments.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.core.checks import check_bool, check_int, check_positive, replace_fields, set_field

__all__ = ["TrainSettings"]


@dataclass(frozen=True)
class TrainSettings:
    """SGD on fresh unlabeled mixture samples, eq. (M3): the data stream and the optimiser.

    Parameters
    ----------
    sigma : float (> 0)
        Noise level of the mixture ``x = μ_z + σ ε``.
    steps : int (>= 0)
        SGD steps.
    lr : float (> 0)
        Step size.
    batch : int (>= 1)
        Fresh samples per step.
    heads : int (>= 2), optional
        Number of heads ``H`` (default: the number of centroids ``K``).
    init_scale : float (>= 0)
        ``Θ₀ = init_scale · N(0, I)``: small independent heads break the symmetry.
    record_every : int (>= 1)
        Record the heads every this many steps (the last step is always recorded).
    show_progress : bool
        Show a progress bar.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """

    sigma: float = 1.0
    steps: int = 300
    lr: float = 0.1
    batch: int = 1024
    heads: int | None = None
    init_scale: float = 0.1
    record_every: int = 1
    show_progress: bool = False

    def __post_init__(self) -> None:
        set_field(self, "sigma", check_positive("sigma", self.sigma))
        set_field(self, "steps", check_int("steps", self.steps, 0, 10_000_000))
        set_field(self, "lr", check_positive("lr", self.lr))
        set_field(self, "batch", check_int("batch", self.batch, 1))
        if self.heads is not None:
            set_field(self, "heads", check_int("heads", self.heads, 2))
        set_field(
            self, "init_scale", check_positive("init_scale", self.init_scale, allow_zero=True)
        )
        set_field(self, "record_every", check_int("record_every", self.record_every, 1))
        set_field(self, "show_progress", check_bool("show_progress", self.show_progress))

    def replace(self, **changes: Any) -> TrainSettings:
        """A copy with some fields changed (validated again)."""
        return replace_fields(self, changes)


def check_settings(settings: Any) -> TrainSettings:
    """``settings`` itself if it is a :class:`TrainSettings` (validated when built)."""
    if not isinstance(settings, TrainSettings):
        raise TypeError(f"settings must be a TrainSettings (got {type(settings).__name__})")
    return settings
