"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py`` (or
``network.py``); the driver trusts it and calls the unchecked kernels. Each field is checked in
``__post_init__`` with ``lab.core.checks``, so a bad value fails where it is typed.

* ``RegimeSettings``: one xy-model run from a start next to a sharp minimiser (notebook 1's
  step-size widget);
* ``CriticalSettings``: a long run at (a multiple of) the critical step on one of
  ``CRITICAL_MODELS`` (notebook 2's power laws);
* ``CobwebSettings``: the balanced map of the xy model iterated from one point (notebook 2);
* ``NetworkSettings``: full-batch GD on the small digits MLP (notebook 3).

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb,
book/eos/03-real-network.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import check_choice, check_int, check_positive, check_range, set_field
from lab.eos.models import ProductModel, XYModel

__all__ = [
    "CRITICAL_MODELS",
    "RegimeSettings",
    "CriticalSettings",
    "CobwebSettings",
    "NetworkSettings",
]

#: the models of the critical-rate widget: none is an isometry of another (``<u, v>`` is not
#: here: its GD is the xy model's after a rotation, so it would repeat the xy numbers)
CRITICAL_MODELS = {
    "xy": lambda: XYModel(),
    "depth-3 product": lambda: ProductModel(3),
    "depth-4 product, y = 2": lambda: ProductModel(4, 2.0),
}


@dataclass(frozen=True)
class RegimeSettings:
    """One GD run of the xy model from the minimiser of sharpness ``lambda0``, offset across
    ``M`` by the residual ``r0``.

    Parameters
    ----------
    eta : float
        Step size ``> 0``.
    lambda0 : float
        Sharpness of the start's minimiser, ``>= 2`` (the xy model's ``lambda_min``).
    r0 : float
        Residual of the start, ``0 < |r0| < 1``.
    steps : int
        GD steps, in ``[1, 10_000_000]``.

    See: book/eos/01-three-regimes.ipynb
    """

    eta: float
    lambda0: float = 2.6
    r0: float = 1e-3
    steps: int = 4000

    def __post_init__(self) -> None:
        set_field(self, "eta", check_positive("eta", self.eta))
        set_field(self, "lambda0", check_range("lambda0", self.lambda0, 2.0, 1e6))
        r0 = check_range("r0", self.r0, -1.0, 1.0, low_inclusive=False, high_inclusive=False)
        set_field(self, "r0", r0)
        set_field(self, "steps", check_int("steps", self.steps, 1, 10_000_000))


@dataclass(frozen=True)
class CriticalSettings:
    """GD at ``eta_factor`` times the critical step ``2 / lambda_min`` of a model of
    ``CRITICAL_MODELS``, from the minimiser ``start_ratio`` times sharper than the flattest one,
    offset across ``M`` by the residual ``r0``.

    Parameters
    ----------
    model : str
        A key of ``CRITICAL_MODELS``.
    steps : int
        GD steps, in ``[1, 100_000_000]``.
    start_ratio : float
        ``lambda(θ∥_0) / lambda_min``, in ``[1, 10]``.
    r0 : float
        Residual of the start, ``0 <= |r0| < 0.5``.
    eta_factor : float
        The step as a multiple of the critical one, in ``[0.5, 1.5]``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    model: str = "xy"
    steps: int = 100_000
    start_ratio: float = 1.15
    r0: float = 1e-3
    eta_factor: float = 1.0

    def __post_init__(self) -> None:
        check_choice("model", self.model, list(CRITICAL_MODELS))
        set_field(self, "steps", check_int("steps", self.steps, 1, 100_000_000))
        set_field(self, "start_ratio", check_range("start_ratio", self.start_ratio, 1.0, 10.0))
        r0 = check_range("r0", self.r0, -0.5, 0.5, low_inclusive=False, high_inclusive=False)
        set_field(self, "r0", r0)
        set_field(self, "eta_factor", check_range("eta_factor", self.eta_factor, 0.5, 1.5))


@dataclass(frozen=True)
class CobwebSettings:
    """The balanced xy map ``a' = a (1 + eta - eta a^2)`` iterated from ``a0``.

    Parameters
    ----------
    eta : float
        Step size ``> 0``.
    a0 : float
        The first iterate, in ``[0.55, 1.45]`` (the plotted window).
    iterations : int
        Map iterations, in ``[1, 10_000]``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    eta: float
    a0: float = 1.08
    iterations: int = 60

    def __post_init__(self) -> None:
        set_field(self, "eta", check_positive("eta", self.eta))
        set_field(self, "a0", check_range("a0", self.a0, 0.55, 1.45))
        set_field(self, "iterations", check_int("iterations", self.iterations, 1, 10_000))


@dataclass(frozen=True)
class NetworkSettings:
    """Full-batch GD with MSE on a 64-``width``-2 tanh MLP, two digit classes.

    Parameters
    ----------
    eta : float
        Step size ``> 0``.
    steps : int
        GD steps, in ``[1, 10_000_000]``.
    width : int
        Hidden width, in ``[1, 100_000]``.
    n_samples : int
        Number of images, in ``[2, 1797]`` and at most the images of the two classes (357 for
        3 and 8: checked when the data are loaded).
    track_every : int
        Sharpness every this many steps (``0``: never).
    seed : int
        Initialisation seed, in ``[0, 2**32 - 1]``.
    classes : (int, int)
        Two different digits.
    hvp_iters : int
        Power-iteration steps per sharpness estimate, in ``[1, 10_000]``.

    See: book/eos/03-real-network.ipynb
    """

    eta: float
    steps: int = 500
    width: int = 32
    n_samples: int = 200
    track_every: int = 25
    seed: int = 0
    classes: tuple[int, int] = (3, 8)
    hvp_iters: int = 20

    def __post_init__(self) -> None:
        set_field(self, "eta", check_positive("eta", self.eta))
        set_field(self, "steps", check_int("steps", self.steps, 1, 10_000_000))
        set_field(self, "width", check_int("width", self.width, 1, 100_000))
        set_field(self, "n_samples", check_int("n_samples", self.n_samples, 2, 1797))
        set_field(self, "track_every", check_int("track_every", self.track_every, 0, 10_000_000))
        set_field(self, "seed", check_int("seed", self.seed, 0, 2**32 - 1))
        set_field(self, "hvp_iters", check_int("hvp_iters", self.hvp_iters, 1, 10_000))
        classes = self.classes
        if not (isinstance(classes, tuple | list) and len(classes) == 2):
            raise TypeError(f"classes must be a pair of digits (got {classes!r})")
        pair = (
            check_int("classes[0]", classes[0], 0, 9),
            check_int("classes[1]", classes[1], 0, 9),
        )
        if pair[0] == pair[1]:
            raise ValueError(f"classes must be two different digits (got {classes!r})")
        set_field(self, "classes", pair)
