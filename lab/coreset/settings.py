"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of
:mod:`lab.coreset.experiments` (or to the trainers of :mod:`lab.coreset.models` and
:mod:`lab.coreset.stacked`); the drivers trust it and call the unchecked kernels. Every field
is checked in ``__post_init__`` with :mod:`lab.core.checks`, so a bad value fails where it is
typed.

* :class:`PosteriorSettings`: the posterior samples of a network (``K``, ``σ``, which
  parameters carry the noise);
* :class:`TrainSettings`: how a network is trained on mini-batch coresets (steps, budget, pools,
  SGD, selection rounds, evaluation points);
* :class:`RunSettings`: one training run on digits under label noise (notebook 3);
* :class:`AlignmentSettings`: the logistic-regression alignment study (notebook 2);
* :class:`ToySettings`: the 2-D toy selection (notebook 1).

See: book/coreset/02-label-noise.ipynb, book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from lab.core.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
    replace_fields,
    set_field,
)

__all__ = [
    "METHODS",
    "WHERE",
    "PosteriorSettings",
    "TrainSettings",
    "RunSettings",
    "AlignmentSettings",
    "ToySettings",
    "SweepSettings",
    "AblationSettings",
]

#: the three selectors of a pool: uniform, CRAIG (eq. 2-4 at w̄), posterior (eq. 6)
METHODS = ("random", "craig", "posterior")
#: the parameters the posterior samples of a network perturb (``posterior_features``)
WHERE = ("norm", "all", "last", "norm_out")


@dataclass(frozen=True)
class PosteriorSettings:
    """The posterior samples ``w_k ~ N(w̄, σ² I)`` of a network, eq. (6).

    Parameters
    ----------
    K : int (>= 1)
        Number of posterior samples.
    sigma : float (>= 0)
        Noise scale ``σ`` (``0`` with any ``K`` repeats CRAIG's features).
    where : {"norm", "all", "last", "norm_out"}
        The parameters that carry the noise (``posterior_features``).

    See: book/coreset/03-training-under-noise.ipynb
    """

    K: int = 4
    sigma: float = 0.05
    where: str = "norm"

    def __post_init__(self) -> None:
        set_field(self, "K", check_int("K", self.K, 1))
        set_field(self, "sigma", float(check_positive("sigma", self.sigma, allow_zero=True)))
        set_field(self, "where", check_choice("where", self.where, WHERE))


@dataclass(frozen=True)
class TrainSettings:
    """How a network is trained on mini-batch coresets (``CoresetTrainer``, ``train_stacked``).

    Parameters
    ----------
    steps : int (>= 1)
        SGD steps.
    budget : int (>= 1)
        Mini-batch coreset size ``B`` (per class ``ceil(B / C)``: make ``C`` divide ``B``).
    pool_size : int (>= budget)
        Candidate pool per step (class-balanced).
    select_every : int (>= 1)
        Steps between selection rounds (a round selects the next ``select_every`` coresets).
    eval_every : int (>= 1)
        Clean test accuracy every this many steps (and at the last).
    lr, momentum, weight_decay : float
        SGD (CREST's momentum and weight decay).
    per_class : bool
        Per-class selection (the paper's protocol) or over the whole pool.

    See: book/coreset/03-training-under-noise.ipynb
    """

    steps: int = 200
    budget: int = 30
    pool_size: int = 130
    select_every: int = 10
    eval_every: int = 20
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 5e-4
    per_class: bool = True

    def __post_init__(self) -> None:
        set_field(self, "steps", check_int("steps", self.steps, 1))
        set_field(self, "budget", check_int("budget", self.budget, 1))
        set_field(self, "pool_size", check_int("pool_size", self.pool_size, self.budget))
        set_field(self, "select_every", check_int("select_every", self.select_every, 1))
        set_field(self, "eval_every", check_int("eval_every", self.eval_every, 1))
        set_field(self, "lr", float(check_positive("lr", self.lr)))
        m = check_range("momentum", self.momentum, 0.0, 1.0, high_inclusive=False)
        set_field(self, "momentum", float(m))
        wd = check_positive("weight_decay", self.weight_decay, allow_zero=True)
        set_field(self, "weight_decay", float(wd))
        set_field(self, "per_class", check_bool("per_class", self.per_class))

    def replace(self, **changes: Any) -> TrainSettings:
        """A copy with some fields changed (validated again, once)."""
        return replace_fields(self, changes)


@dataclass(frozen=True)
class RunSettings:
    """One training run of the chapter's BatchNorm MLP on digits under symmetric label noise.

    The digits split, the noise and the initialisation depend on ``seed``; the test labels stay
    clean. ``posterior`` shapes the posterior selector's samples only: the other methods share
    one run whatever it holds (:meth:`canonical`).

    Parameters
    ----------
    method : {"random", "craig", "posterior", "full"}
    noise : float in [0, 1]
        Share of the training labels redrawn.
    seed : int (>= 0)
    posterior : PosteriorSettings
    train : TrainSettings

    See: book/coreset/03-training-under-noise.ipynb
    """

    method: str
    noise: float
    seed: int = 0
    posterior: PosteriorSettings = field(default_factory=PosteriorSettings)
    train: TrainSettings = field(default_factory=TrainSettings)

    def __post_init__(self) -> None:
        set_field(self, "method", check_choice("method", self.method, (*METHODS, "full")))
        set_field(self, "noise", round(float(check_range("noise", self.noise, 0.0, 1.0)), 6))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        _check_types(self)

    def canonical(self) -> RunSettings:
        """The run that answers for this one: a method other than posterior ignores
        ``posterior``, so those runs share the default samples' key."""
        if self.method == "posterior" or self.posterior == PosteriorSettings():
            return self
        return dataclasses.replace(self, posterior=PosteriorSettings())

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with some fields changed (validated again, once)."""
        return replace_fields(self, changes)


@dataclass(frozen=True)
class AlignmentSettings:
    """Random vs CRAIG vs posterior coresets on logistic regression with exact Hessians.

    Parameters
    ----------
    noise : float in [0, 1]
        Share of the labels redrawn.
    pool_size : int (>= 2)
        Class-balanced pool per trial.
    budget : int in [1, pool_size]
        Coreset size ``B`` (per class ``ceil(B / C)``).
    K : int (>= 1)
        Posterior samples of the selection.
    sigma : float (>= 0)
        ``σ`` of the posterior samples (selection and scoring).
    trials : int (>= 1)
        Pools.
    fit_steps : int (>= 0)
        Full-batch GD steps that give ``w̄`` on the noisy data.
    eval_draws : int (>= 1)
        Fresh posterior draws the gradient error is averaged on.
    seed : int (>= 0)
    hessians : bool
        Score the Hessian and Newton-step errors too (``False``: the gradient error only).
    newton : bool
        With ``hessians``, score the Newton-step error too (``False``: the Hessian error
        without the eigendecompositions the Newton steps need, a third of the cost).

    See: book/coreset/02-label-noise.ipynb
    """

    noise: float = 0.4
    pool_size: int = 300
    budget: int = 30
    K: int = 8
    sigma: float = 0.05
    trials: int = 5
    fit_steps: int = 30
    eval_draws: int = 8
    seed: int = 0
    hessians: bool = True
    newton: bool = True

    def __post_init__(self) -> None:
        set_field(self, "noise", float(check_range("noise", self.noise, 0.0, 1.0)))
        set_field(self, "pool_size", check_int("pool_size", self.pool_size, 2))
        set_field(self, "budget", check_int("budget", self.budget, 1, self.pool_size))
        set_field(self, "K", check_int("K", self.K, 1))
        set_field(self, "sigma", float(check_positive("sigma", self.sigma, allow_zero=True)))
        set_field(self, "trials", check_int("trials", self.trials, 1))
        set_field(self, "fit_steps", check_int("fit_steps", self.fit_steps, 0))
        set_field(self, "eval_draws", check_int("eval_draws", self.eval_draws, 1))
        set_field(self, "seed", check_int("seed", self.seed, 0))
        set_field(self, "hessians", check_bool("hessians", self.hessians))
        set_field(self, "newton", check_bool("newton", self.newton))

    def replace(self, **changes: Any) -> AlignmentSettings:
        """A copy with some fields changed (validated again, once)."""
        return replace_fields(self, changes)


@dataclass(frozen=True)
class ToySettings:
    """The 2-D toy problem of notebook 1 and its three coresets.

    Parameters
    ----------
    noise : float in [0, 1]
        Share of the labels redrawn.
    budget : int (>= 1)
        Coreset size ``B``.
    K : int (>= 1)
        Posterior samples.
    sigma : float (>= 0)
    seed : int (>= 0)
        The blobs, the noise, the random coreset and the posterior draws.

    See: book/coreset/01-facility-location.ipynb
    """

    noise: float = 0.3
    budget: int = 15
    K: int = 8
    sigma: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        set_field(self, "noise", float(check_range("noise", self.noise, 0.0, 1.0)))
        set_field(self, "budget", check_int("budget", self.budget, 1))
        set_field(self, "K", check_int("K", self.K, 1))
        set_field(self, "sigma", float(check_positive("sigma", self.sigma, allow_zero=True)))
        set_field(self, "seed", check_int("seed", self.seed, 0))


def _distinct(name: str, values: Any, check: Any) -> tuple:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence (got {type(values).__name__})")
    out = tuple(check(v) for v in values)
    if not out:
        raise ValueError(f"{name} must not be empty")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must hold distinct values (got {out})")
    return out


def _seed(v: Any) -> int:
    return check_int("seed", v, 0)


@dataclass(frozen=True)
class SweepSettings:
    """Final clean test accuracy of every (method, noise, seed) on digits (notebook 3).

    Parameters
    ----------
    noises : sequence of float in [0, 1]
    methods : sequence of {"random", "craig", "posterior", "full"}
    seeds : sequence of int (>= 0, distinct)
    posterior : PosteriorSettings
        The posterior selector's samples.
    train : TrainSettings

    See: book/coreset/03-training-under-noise.ipynb
    """

    noises: tuple[float, ...] = (0.0, 0.25, 0.5)
    methods: tuple[str, ...] = (*METHODS, "full")
    seeds: tuple[int, ...] = (0, 1, 2)
    posterior: PosteriorSettings = field(default_factory=PosteriorSettings)
    train: TrainSettings = field(default_factory=TrainSettings)

    def __post_init__(self) -> None:
        noise = lambda v: float(check_range("noise", v, 0.0, 1.0))  # noqa: E731
        set_field(self, "noises", _distinct("noises", self.noises, noise))
        method = lambda m: check_choice("method", m, (*METHODS, "full"))  # noqa: E731
        set_field(self, "methods", _distinct("methods", self.methods, method))
        set_field(self, "seeds", _distinct("seeds", self.seeds, _seed))
        _check_types(self)


@dataclass(frozen=True)
class AblationSettings:
    """The paper's Table 2 at our size: which parameters the posterior samples perturb.

    Parameters
    ----------
    wheres : sequence of {"norm", "all", "last", "norm_out"} (distinct)
    sigmas : sequence of float (>= 0, distinct)
        The paper validates over {0.1, 0.01, 0.001}.
    seeds : sequence of int (>= 0, distinct)
    noise : float in [0, 1]
        Label-noise ratio (the paper's Table 2 uses 0.5).
    K : int (>= 1)
        Posterior samples.
    train : TrainSettings

    See: book/coreset/02-label-noise.ipynb
    """

    wheres: tuple[str, ...] = ("norm", "all", "last")
    sigmas: tuple[float, ...] = (0.1, 0.01, 0.001)
    seeds: tuple[int, ...] = (0, 1, 2)
    noise: float = 0.5
    K: int = 4
    train: TrainSettings = field(default_factory=TrainSettings)

    def __post_init__(self) -> None:
        where = lambda w: check_choice("where", w, WHERE)  # noqa: E731
        set_field(self, "wheres", _distinct("wheres", self.wheres, where))
        sigma = lambda s: float(check_positive("sigma", s, allow_zero=True))  # noqa: E731
        set_field(self, "sigmas", _distinct("sigmas", self.sigmas, sigma))
        set_field(self, "seeds", _distinct("seeds", self.seeds, _seed))
        set_field(self, "noise", float(check_range("noise", self.noise, 0.0, 1.0)))
        set_field(self, "K", check_int("K", self.K, 1))
        _check_types(self)


def _check_types(obj: Any) -> None:
    for name, kind in (("posterior", PosteriorSettings), ("train", TrainSettings)):
        if hasattr(obj, name):
            check_instance(name, getattr(obj, name), kind)
