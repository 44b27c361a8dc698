"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py``; the
driver trusts it. Each field is checked in ``__post_init__`` with ``lab.core.checks``, so a bad
value fails where it is typed.

* ``FisherRateSettings``: the SGD flow's PDE on a 1-D mixture over horizons ``T`` (notebook 2);
* ``Flow1DSettings``: the GD and SGD flows in 1-D with their ULA / SGLD particles (notebook 1);
* ``VarianceSettings``: SGLD particles on a 1-D shifted quadratic after flow time 8 (notebook 2);
* ``WindowSettings``: the equal-budget KL window of the three samplers over seeds (notebook 1).

See: book/wflows/01-three-samplers.ipynb, book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
    check_range,
    check_real,
    set_field,
)

__all__ = ["FisherRateSettings", "Flow1DSettings", "VarianceSettings", "WindowSettings"]


@dataclass(frozen=True)
class FisherRateSettings:
    """The nonconvex rate by the 1-D PDE: for each horizon ``T`` the SGD flow (eq. 3) with step
    ``eta = eta0 / T^eta_power`` from ``N(start, start_sd^2)``.

    Parameters
    ----------
    horizons : tuple of float
        At least two increasing horizons ``T > 0``.
    eta0 : float
        Step constant (> 0).
    eta_power : float
        Exponent of the step schedule in ``[0, 1]`` (1/2: the schedule of the ``O(1/sqrt T)``
        bound; 0: a fixed step).
    batch_size : int
        Minibatch size ``b`` (>= 1; at most the target's ``N``, checked by the driver).
    start, start_sd : float
        The initial Gaussian (``start_sd > 0``).
    x_max, n_grid, dt : float, int, float
        Grid ``[-x_max, x_max]`` with ``n_grid >= 21`` cells; largest PDE time step.
    outputs_per_unit : int
        Output times per unit of flow time (>= 1; for the time average).

    See: book/wflows/02-rates-and-variance.ipynb
    """

    horizons: tuple[float, ...] = (4.0, 8.0, 16.0, 32.0, 64.0)
    eta0: float = 1.0
    eta_power: float = 0.5
    batch_size: int = 1
    start: float = 3.5
    start_sd: float = 0.3
    x_max: float = 8.0
    n_grid: int = 641
    dt: float = 0.01
    outputs_per_unit: int = 8

    def __post_init__(self) -> None:
        T = check_array("horizons", self.horizons, ndim=1, min_size=2)
        if np.any(T <= 0) or np.any(np.diff(T) <= 0):
            raise ValueError(f"horizons must be positive and increasing (got {T})")
        set_field(self, "horizons", tuple(float(v) for v in T))
        set_field(self, "eta0", check_positive("eta0", self.eta0))
        set_field(self, "eta_power", check_range("eta_power", self.eta_power, 0.0, 1.0))
        set_field(self, "batch_size", check_int("batch_size", self.batch_size, 1))
        set_field(self, "start", check_real("start", self.start))
        set_field(self, "start_sd", check_positive("start_sd", self.start_sd))
        set_field(self, "x_max", check_positive("x_max", self.x_max))
        set_field(self, "n_grid", check_int("n_grid", self.n_grid, 21))
        set_field(self, "dt", check_positive("dt", self.dt))
        set_field(self, "outputs_per_unit", check_int("outputs_per_unit", self.outputs_per_unit, 1))


@dataclass(frozen=True)
class Flow1DSettings:
    """The 1-D demo: GD and SGD flows (PDE) and ULA / SGLD particles with step ``h = eta``.

    Parameters
    ----------
    eta : float
        Step ``eta = h`` (> 0).
    batch_size : int
        Minibatch size ``b`` in ``[1, 50]`` (the target has 50 components).
    particles : int
        Particles of each sampler (>= 2).
    t_end : float
        Last flow time (> 0).
    frames : int
        Stored times in ``[0, t_end]`` (>= 2).
    seed : int
        Seed of the start and of the samplers' noise (>= 0).

    See: book/wflows/01-three-samplers.ipynb
    """

    eta: float = 0.1
    batch_size: int = 1
    particles: int = 20_000
    t_end: float = 3.0
    frames: int = 31
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "eta", check_positive("eta", self.eta))
        set_field(self, "batch_size", check_int("batch_size", self.batch_size, 1, 50))
        set_field(self, "particles", check_int("particles", self.particles, 2))
        set_field(self, "t_end", check_positive("t_end", self.t_end))
        set_field(self, "frames", check_int("frames", self.frames, 2))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class VarianceSettings:
    """SGLD particles (1-D) after flow time 8 on ``shifted_quadratic_1d(100, s, seed)`` from
    ``N(0, 1)`` starts.

    Parameters
    ----------
    h : float
        Step (> 0).
    s : float
        Spread of the component centres (> 0).
    batch_size : int
        Minibatch size ``b`` in ``[1, 100]``.
    particles : int
        Particles (>= 2).
    seed : int
        Seed of the target, the start and the noise (>= 0).

    See: book/wflows/02-rates-and-variance.ipynb
    """

    h: float = 0.1
    s: float = 3.0
    batch_size: int = 2
    particles: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "h", check_positive("h", self.h))
        set_field(self, "s", check_positive("s", self.s))
        set_field(self, "batch_size", check_int("batch_size", self.batch_size, 1, 100))
        set_field(self, "particles", check_int("particles", self.particles, 2))
        set_field(self, "seed", check_int("seed", self.seed, 0))


@dataclass(frozen=True)
class WindowSettings:
    """The equal-budget comparison: each sampler run from a common start as far as the budget
    window ``[lo, hi]`` (component-gradient evaluations per particle) needs, its Gaussian-fit KL
    averaged over the window.

    Parameters
    ----------
    h : float
        Step (> 0).
    batch_size, epoch_length : int
        Minibatch size ``b`` and SVRG snapshot period ``m`` (>= 1).
    window : tuple of float
        ``(lo, hi)``, ``0 <= lo < hi``.
    steps : tuple of int
        Steps of ULA, SGLD and SVRG-LD (each >= 1).
    record_every : tuple of int
        Record period of ULA, SGLD and SVRG-LD (each >= 1).

    See: book/wflows/01-three-samplers.ipynb
    """

    h: float = 0.05
    batch_size: int = 5
    epoch_length: int = 40
    window: tuple[float, float] = (6000.0, 10_000.0)
    steps: tuple[int, int, int] = (50, 2000, 667)
    record_every: tuple[int, int, int] = (1, 20, 20)

    def __post_init__(self) -> None:
        set_field(self, "h", check_positive("h", self.h))
        set_field(self, "batch_size", check_int("batch_size", self.batch_size, 1))
        set_field(self, "epoch_length", check_int("epoch_length", self.epoch_length, 1))
        w = check_array("window", self.window, ndim=1, min_size=2)
        if w.size != 2 or not 0 <= w[0] < w[1]:
            raise ValueError(f"window must be (lo, hi) with 0 <= lo < hi (got {self.window})")
        set_field(self, "window", (float(w[0]), float(w[1])))
        for name in ("steps", "record_every"):
            v = tuple(getattr(self, name))
            if len(v) != 3:
                raise ValueError(f"{name} must hold 3 integers (ULA, SGLD, SVRG-LD), got {v}")
            set_field(self, name, tuple(check_int(name, k, 1) for k in v))
