"""Drivers of the chapter's notebooks: learners compared, horizons, parameter sweeps.

See: book/strategic/02-regret.ipynb, book/strategic/03-sweeps.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lab.core.checks import check_array, check_choice, check_int
from lab.core.runtime import smoke_steps
from lab.strategic.fast import strategic_massart_many, strategic_perceptron
from lab.strategic.model import StrategicMassart
from lab.strategic.reference import Constants

__all__ = [
    "Comparison",
    "Prop4",
    "Sweep",
    "compare_learners",
    "horizon_study",
    "parameter_sweep",
    "prop4_outcomes",
]

LEARNERS = (
    "ours",
    "zhang-partial",
    "zhang-full",
    "perceptron-partial",
    "perceptron-full",
    "explore-fit-shift",
)


def _seeds(seeds) -> list[int]:
    seeds = [check_int("seed", s, 0) for s in np.atleast_1d(np.asarray(seeds)).tolist()]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return seeds


@dataclass
class Comparison:
    """Cumulative expected regret per learner: ``mean`` curves ``[T]`` and ``final`` ``[S]``
    (``angles`` ``[S, batches]`` for ours); ``batch_angles`` and ``phases`` per learner of
    :func:`strategic_massart_many` (ours and Zhang et al.'s); ``cumulative`` ``[S, T]`` per
    learner."""

    T: int
    mean: dict
    final: dict
    angles: np.ndarray
    batch_angles: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)
    cumulative: dict = field(default_factory=dict)


def compare_learners(
    env: StrategicMassart,
    T: int,
    seeds=range(4),
    learners=LEARNERS,
    constants: Constants | None = None,
    device=None,
) -> Comparison:
    """Run the paper's algorithm and the baselines on the same instance and seeds.

    ``learners`` from ``("ours", "zhang-partial", "zhang-full", "perceptron-partial",
    "perceptron-full", "explore-fit-shift")``; the last (our first reconstruction, an extra
    baseline) runs in ``d = 2`` only, one seed at a time, with a Monte Carlo regret.

    See: book/strategic/02-regret.ipynb
    """
    if not isinstance(env, StrategicMassart):
        raise TypeError(f"env must be a StrategicMassart (got {type(env).__name__})")
    T, seeds = check_int("T", T, 64), _seeds(seeds)
    learners = [check_choice("learners", name, LEARNERS) for name in learners]
    mean, final, angles, batch_angles, phases = {}, {}, np.zeros((len(seeds), 0)), {}, {}
    cumulative = {}
    for name in learners:
        if name.startswith("perceptron"):
            reg = strategic_perceptron(env, T, seeds, feedback=name.split("-")[1]).regret
        elif name == "explore-fit-shift":
            if env.d != 2:
                continue
            from lab.strategic import legacy

            old = legacy.StrategicEnv(
                w_star=env.w_star,
                b_star=0.0,
                r=env.gamma,
                noise="uniform",
                eta_max=env.eta,
                n_mc=50_000,
            )
            reg = np.stack(
                [legacy.explore_fit_shift(old, T, seed=s, n_dirs=180)["regret"] for s in seeds]
            )
        else:
            run = strategic_massart_many(env, T, seeds, constants, variant=name, device=device)
            reg = run.regret
            batch_angles[name], phases[name] = run.angles, run.phases
            if name == "ours":
                angles = run.angles
        cum = np.cumsum(reg, axis=1)
        mean[name], final[name], cumulative[name] = cum.mean(0), cum[:, -1], cum
    return Comparison(T, mean, final, angles, batch_angles, phases, cumulative)


@dataclass
class Prop4:
    """Proposition 4 read on the complete enhancement batches of a run (``[S, K]`` arrays over
    seeds and complete batches ``k = 1..K``): the angle to ``w*`` at the batch's start and at its
    output, the cone angle ``theta_k = pi / 2^(k+1)``, whether the precondition
    ``angle(w*, w_k) <= theta_k`` holds and whether the output meets ``theta_k / 2``."""

    k: np.ndarray
    start: np.ndarray
    output: np.ndarray
    theta: np.ndarray
    precondition: np.ndarray
    within: np.ndarray

    @property
    def conditional_share(self) -> float:
        """Share of (seed, batch) pairs meeting the precondition whose output meets the bound."""
        n = int(self.precondition.sum())
        return float(self.within[self.precondition].mean()) if n else float("nan")

    @property
    def chain_share(self) -> float:
        """Share of seeds whose every complete batch ends within its bound ``pi / 2^(k+2)``."""
        return float(np.all(self.within, axis=1).mean())


def prop4_outcomes(angles, phases) -> Prop4:
    """Score Proposition 4 on the complete enhancement batches of a batched run.

    Parameters
    ----------
    angles : ndarray [S, n_outputs]
        Angles to ``w*`` of ``w~0``, of the refinement's output and of each batch's output
        (:class:`~lab.strategic.fast.BatchRun`), so batch ``k`` starts at output ``k`` and ends
        at output ``k + 1``.
    phases : list of Phase
        The run's schedule (:func:`lab.strategic.reference.schedule`); a batch cut by the
        horizon (``complete=False``) is left out.

    See: book/strategic/02-regret.ipynb
    """
    angles = check_array("angles", angles, ndim=2)
    if not isinstance(phases, list):
        raise TypeError(f"phases must be a list of Phase (got {type(phases).__name__})")
    batches = [p for p in phases if p.kind == "enhance" and p.complete]
    ks = np.array([p.k for p in batches], dtype=int)
    if ks.size and angles.shape[1] < ks.max() + 2:
        raise ValueError(f"angles must hold {ks.max() + 2} outputs (got {angles.shape[1]})")
    theta = np.array([p.theta for p in batches])[None, :] * np.ones((angles.shape[0], 1))
    start, out = angles[:, ks], angles[:, ks + 1]
    return Prop4(ks, start, out, theta, start <= theta, out <= theta / 2)


def horizon_study(
    env: StrategicMassart,
    T_grid,
    seeds=range(4),
    constants: Constants | None = None,
    device=None,
    *,
    curves: bool = False,
):
    """Final regret of the paper's algorithm run with each horizon ``T`` (the algorithm uses
    ``ln T``, so each horizon is its own run): ``[S, len(T_grid)]``; with ``curves=True``, also
    the mean cumulative regret curve of each horizon (a list of ``[T]`` arrays).

    See: book/strategic/02-regret.ipynb
    """
    T_grid = check_array("T_grid", T_grid, ndim=1, min_size=1)
    if not isinstance(curves, bool):
        raise TypeError(f"curves must be a bool (got {type(curves).__name__})")
    finals, means = [], []
    for T in T_grid:
        reg = strategic_massart_many(env, int(T), seeds, constants, device=device).regret
        finals.append(reg.sum(1))
        means.append(np.cumsum(reg, axis=1).mean(0))
    final = np.stack(finals, 1)
    return (final, means) if curves else final


@dataclass
class Sweep:
    """Final regret ``[S, len(values)]`` of the paper's algorithm as ``name`` varies."""

    name: str
    values: list
    final: np.ndarray


def parameter_sweep(
    name: str,
    values,
    T: int,
    seeds=range(4),
    base: StrategicMassart | None = None,
    constants: Constants | None = None,
    device=None,
    variant: str = "ours",
) -> Sweep:
    """Vary one parameter (``"gamma"``, ``"d"``, ``"eta"`` of the instance or a constant
    ``"c0"`` .. ``"c7"``) and record the final regret per seed, of the paper's algorithm or
    (``variant``) of Zhang et al.'s learner (:func:`strategic_massart_many`). In smoke mode
    (``LAB_SMOKE=1``) each run stops after 200 cycles (the shapes are unchanged: one final
    regret per seed and value).

    See: book/strategic/03-sweeps.ipynb
    """
    consts = ("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7")
    name = check_choice("name", name, ("gamma", "d", "eta", *consts))
    values = list(np.atleast_1d(np.asarray(values)).tolist())
    if not values:
        raise ValueError("values must hold at least one value")
    base = base if base is not None else StrategicMassart()
    if not isinstance(base, StrategicMassart):
        raise TypeError(f"base must be a StrategicMassart (got {type(base).__name__})")
    c = constants if constants is not None else Constants()
    cols = []
    for v in values:
        env, cc = base, c
        if name in consts:
            cc = replace(c, **{name: float(v)})
        else:
            kw = dict(d=base.d, gamma=base.gamma, eta=base.eta, noise=base.noise)
            kw[name] = int(v) if name == "d" else float(v)
            env = StrategicMassart(**kw)  # w* = e_1, as in the paper's d sweep
        run = strategic_massart_many(
            env, smoke_steps(T, 200), seeds, cc, variant=variant, device=device
        )
        cols.append(run.regret.sum(1))
    return Sweep(name, values, np.stack(cols, 1))
