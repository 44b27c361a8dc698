"""What the koala drivers return and the figures draw: `TrainRun` (one digits training run),
`QuadraticPaths` (the filters' paths on one 2-D quadratic) and `PATH_METHODS`.

See: book/koala/01-kalman-view.ipynb, book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from lab.koala.problems import NoisyQuadratic

__all__ = ["PATH_METHODS", "QuadraticPaths", "TrainRun"]

#: the methods whose paths the quadratic widget draws
PATH_METHODS = ("ekf", "koalapp", "koalav", "adam")


@dataclass(frozen=True)
class QuadraticPaths:
    """The paths of `PATH_METHODS` on one 2-D noisy quadratic (`quadratic_paths`).

    ``runs[m]`` is `run_quadratic`'s dict, or ``None`` where KOALA++'s closure lost positivity
    (``FloatingPointError``) and there is no path to show.
    """

    problem: NoisyQuadratic
    runs: Mapping[str, dict[str, np.ndarray] | None]
    kappa: float
    noise: float
    steps: int


@dataclass
class TrainRun:
    """One training run on digits: per-epoch curves and timings.

    ``train_loss`` and ``test_acc`` have one entry per epoch (index 0 is before training);
    ``step_time`` is the mean seconds of ``optimizer.step`` alone, ``iter_time`` of the whole
    iteration (forward, backward, step); ``step_size`` the mean per-layer ``||dtheta|| / ||H||``
    per epoch (one row per epoch, one column per parameter tensor).

    See: book/koala/02-training-digits.ipynb
    """

    optimizer: str
    lr: float
    train_loss: np.ndarray
    test_acc: np.ndarray
    step_time: float
    iter_time: float
    step_size: np.ndarray
    steps: int
    wall: float
    finite: bool = True

    def epochs_to(self, accuracy: float) -> int | None:
        """First epoch whose test accuracy reaches ``accuracy`` (None if never)."""
        hit = np.nonzero(self.test_acc >= accuracy)[0]
        return int(hit[0]) if hit.size else None

    def time_to(self, accuracy: float) -> float | None:
        """Seconds of training (iterations only) until ``accuracy`` is first reached."""
        e = self.epochs_to(accuracy)
        if e is None:
            return None
        return e * (self.steps / max(len(self.test_acc) - 1, 1)) * self.iter_time
