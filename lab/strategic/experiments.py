"""Drivers of the chapter's notebooks: learners compared, horizons, parameter sweeps.

See: book/strategic/02-regret.ipynb, book/strategic/03-sweeps.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lab.core.checks import check_array, check_choice, check_int
from lab.strategic.fast import strategic_massart_batch, strategic_perceptron_batch
from lab.strategic.model import StrategicMassart
from lab.strategic.reference import Constants

__all__ = ["Comparison", "Sweep", "compare_learners", "horizon_study", "parameter_sweep"]

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
    (``angles`` ``[S, batches]`` for ours)."""

    T: int
    mean: dict
    final: dict
    angles: np.ndarray


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
    mean, final, angles = {}, {}, np.zeros((len(seeds), 0))
    for name in learners:
        if name.startswith("perceptron"):
            reg = strategic_perceptron_batch(env, T, seeds, feedback=name.split("-")[1]).regret
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
            run = strategic_massart_batch(env, T, seeds, constants, variant=name, device=device)
            reg = run.regret
            if name == "ours":
                angles = run.angles
        cum = np.cumsum(reg, axis=1)
        mean[name], final[name] = cum.mean(0), cum[:, -1]
    return Comparison(T, mean, final, angles)


def horizon_study(
    env: StrategicMassart, T_grid, seeds=range(4), constants: Constants | None = None, device=None
) -> np.ndarray:
    """Final regret of the paper's algorithm run with each horizon ``T`` (the algorithm uses
    ``ln T``, so each horizon is its own run): ``[S, len(T_grid)]``.

    See: book/strategic/02-regret.ipynb
    """
    T_grid = check_array("T_grid", T_grid, ndim=1, min_size=1)
    out = [
        strategic_massart_batch(env, int(T), seeds, constants, device=device).regret.sum(1)
        for T in T_grid
    ]
    return np.stack(out, 1)


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
) -> Sweep:
    """Vary one parameter (``"gamma"``, ``"d"``, ``"eta"`` of the instance or a constant
    ``"c0"`` .. ``"c7"``) and record the final regret per seed.

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
        cols.append(strategic_massart_batch(env, T, seeds, cc, device=device).regret.sum(1))
    return Sweep(name, values, np.stack(cols, 1))
