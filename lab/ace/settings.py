"""The settings of the chapter's training runs: one frozen dataclass, validated once.

A notebook builds a :class:`ToySettings` and passes it whole to
:func:`lab.ace.experiments.train_toy` (or to the sweep and the stored long runs); the drivers
trust it. Every field is checked in ``__post_init__`` with :mod:`lab.core.checks`, so a bad
value fails where it is typed. :func:`sweep_settings` gives the settings every stored run
shares (``SWEEP_SETTINGS`` with the method's ``METHOD_SETTINGS``).

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lab.ace.models import METHODS
from lab.core.checks import (
    check_choice,
    check_int,
    check_positive,
    check_range,
    replace_fields,
    set_field,
)

__all__ = ["METHOD_SETTINGS", "SWEEP_SETTINGS", "ToySettings", "sweep_settings"]

# the settings every sweep run shares (also notebook 2's live runs)
SWEEP_SETTINGS: dict[str, Any] = {"steps": 600, "lr": 1e-2, "noise": 0.05, "C": 16, "layers": 3}
# per-method settings: equality ACE is damped (augmented term c = 1, Adam on gamma); SGD on
# gamma (notebook 1's fastest-settling regime) diverged in most sweep runs at this step size
METHOD_SETTINGS: dict[str, dict[str, Any]] = {
    "strict": {},
    "unconstrained": {},
    "equality": {"dual_lr": 0.05, "aug": 1.0},
    "resilient": {"dual_lr": 0.05, "rho": 10.0},
}


@dataclass(frozen=True)
class ToySettings:
    """One training run of the SO(2) toy on ``swirl_dataset(N, eps, seed)``.

    Parameters
    ----------
    method : {"strict", "unconstrained", "equality", "resilient"}
        ``strict``: equivariant layers only; ``unconstrained``: the homotopy model with γ
        trained freely; ``equality``: ACE, Algorithm 1; ``resilient``: ACE, Algorithm 2.
    N : int (>= 1)
        Training points.
    eps : float in [0, 10]
        Symmetry-breaking strength of the data (0: fully symmetric).
    steps : int (>= 1)
        Full-batch steps (the cap when ``stop_gamma`` is set).
    seed : int (>= 0)
        Seeds the data, the initial weights and torch's generator (inside a fork).
    lr : float (> 0)
        Adam step on the weights η_p (and on γ with ``gamma_opt="adam"``).
    dual_lr : float (>= 0)
        Dual step η_d.
    aug : float (>= 0)
        Augmented term ``c γ_i²`` of Algorithm 1.
    rho : float (> 0)
        Price ρ of the slacks of Algorithm 2.
    gamma_opt : {"adam", "sgd"}
        Optimiser of γ; ``gamma_lr`` (> 0, default ``100 * lr``) is its SGD step.
    dual_opt : {"sgd", "adam"}
        Optimiser of the multipliers.
    noise : float (>= 0)
        Standard deviation of the label noise of the training points.
    C, layers, hidden : int (>= 1)
        Channels, layers and the width of the non-equivariant branches.
    test_N : int (>= 2)
        Held-out points (noise-free targets).
    record_every : int (>= 1)
        Steps between two recorded points of the histories.
    stop_gamma : float (> 0) or None
        Stop at the first multiple of 100 steps where ``max_i |γ_i| < stop_gamma``.
    dtype : torch.float32 or torch.float64

    See: book/ace/01-homotopy-and-duals.ipynb
    """

    method: str = "equality"
    N: int = 64
    eps: float = 0.0
    steps: int = 600
    seed: int = 0
    lr: float = 1e-2
    dual_lr: float = 1e-2
    aug: float = 0.0
    rho: float = 1.0
    gamma_opt: str = "adam"
    gamma_lr: float | None = None
    dual_opt: str = "sgd"
    noise: float = 0.05
    C: int = 16
    layers: int = 3
    hidden: int = 32
    test_N: int = 1000
    record_every: int = 10
    stop_gamma: float | None = None
    dtype: Any = torch.float32

    def __post_init__(self) -> None:
        set_field(self, "method", check_choice("method", self.method, METHODS))
        for name in ("N", "steps", "C", "layers", "hidden", "record_every"):
            set_field(self, name, check_int(name, getattr(self, name), 1))
        set_field(self, "test_N", check_int("test_N", self.test_N, 2))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "eps", float(check_range("eps", self.eps, 0.0, 10.0)))
        set_field(self, "lr", float(check_positive("lr", self.lr)))
        set_field(self, "rho", float(check_positive("rho", self.rho)))
        for name in ("dual_lr", "aug", "noise"):
            set_field(self, name, float(check_positive(name, getattr(self, name), allow_zero=True)))
        set_field(self, "gamma_opt", check_choice("gamma_opt", self.gamma_opt, ("adam", "sgd")))
        set_field(self, "dual_opt", check_choice("dual_opt", self.dual_opt, ("sgd", "adam")))
        if self.gamma_lr is not None:
            set_field(self, "gamma_lr", float(check_positive("gamma_lr", self.gamma_lr)))
        if self.stop_gamma is not None:
            set_field(self, "stop_gamma", float(check_positive("stop_gamma", self.stop_gamma)))
        set_field(self, "dtype", check_choice("dtype", self.dtype, (torch.float32, torch.float64)))

    @property
    def sgd_gamma_lr(self) -> float:
        """The SGD step of γ: ``gamma_lr``, or ``100 * lr`` when unset."""
        return 100 * self.lr if self.gamma_lr is None else self.gamma_lr

    def replace(self, **changes: Any) -> ToySettings:
        """A copy with ``changes`` (validated again); an unknown name is a ``TypeError``."""
        return replace_fields(self, changes)


def sweep_settings(method: str, **changes: Any) -> ToySettings:
    """The settings of a stored run of ``method`` (``SWEEP_SETTINGS`` and the method's
    ``METHOD_SETTINGS``, histories off) with ``changes`` (``N``, ``eps``, ``seed``, ...).

    See: book/ace/02-partial-symmetry.ipynb
    """
    method = check_choice("method", method, METHODS)
    base = {**SWEEP_SETTINGS, **METHOD_SETTINGS[method], "record_every": 10**9}
    return ToySettings(method=method, **{**base, **changes})
