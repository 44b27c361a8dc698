"""Drivers: the comparison of the four controllers on identical sessions, and the memoised
simulations behind the widgets (``figures.py`` only draws them). The numpy closed loop itself,
:func:`~lab.omiso.reference.run_session`, is in ``reference.py``; the batched one,
:func:`~lab.omiso.fast.run_sessions`, in ``fast.py``.

See: book/omiso/03-closing-the-loop.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_choice,
    check_int,
    check_positive,
)
from lab.core.memo import memo
from lab.omiso.array import UtahArraySim
from lab.omiso.fast import run_sessions
from lab.omiso.models import METHODS
from lab.omiso.reference import run_session

__all__ = [
    "compare_methods",
    "state_dependence",
    "target_sessions",
    "TARGET_ANGLES",
    "DRIFTS",
    "DRIFT_Q",
    "DRIFT_SEEDS",
    "Q_VALUES",
    "drift_sessions",
    "omiso_drift_errors",
    "precompute_drift_figure",
]


def compare_methods(
    seeds: Any,
    methods: Any = METHODS,
    n_cal: int = 600,
    n_train: int = 1500,
    n_test: int = 400,
    target: Any = None,
    epsilon: float = 0.05,
    backend: str = "torch",
    device: Any = None,
    **sim_kwargs: Any,
):
    """Mean closed-loop error of each method on identical simulated sessions.

    Parameters
    ----------
    seeds : sequence of int
        One simulated session per seed; every method sees the same sessions.
    methods : sequence of str
        Names from ``METHODS``.
    backend : str
        ``"torch"`` (all sessions batched, :func:`lab.omiso.fast.run_sessions`) or
        ``"numpy"`` (the reference :func:`run_session`, one at a time).
    device : torch device, optional
        For the torch backend (default :func:`lab.device`).
    **sim_kwargs
        Passed to :class:`UtahArraySim` (``kappa``, ``drift``, ``ramp``...).

    Returns
    -------
    pandas.DataFrame
        Columns ``seed``, ``method``, ``mean_error`` plus the simulator settings.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import pandas as pd

    seeds = [check_int("seeds[i]", s, 0, 2**32 - 1) for s in np.atleast_1d(seeds).tolist()]
    methods = [check_choice("methods[i]", m, METHODS) for m in methods]
    backend = check_choice("backend", backend, ("torch", "numpy"))
    rows = []
    if backend == "numpy":
        for s in seeds:
            for m in methods:
                log = run_session(
                    UtahArraySim(seed=s, **sim_kwargs),
                    m,
                    n_cal,
                    n_train,
                    n_test,
                    target,
                    epsilon=epsilon,
                )
                rows.append({"seed": s, "method": m, "mean_error": log.mean_error})
    else:
        S = [s for s in seeds for _ in methods]
        Ms = [m for _ in seeds for m in methods]
        out = run_sessions(
            S,
            Ms,
            n_cal=n_cal,
            n_train=n_train,
            n_test=n_test,
            target=target,
            epsilon=epsilon,
            device=device,
            **sim_kwargs,
        )
        err = out["errors"].mean(1)
        rows = [
            {"seed": s, "method": m, "mean_error": float(e)}
            for s, m, e in zip(S, Ms, err, strict=True)
        ]
    df = pd.DataFrame(rows)
    for k, v in sim_kwargs.items():
        df[k] = v
    return df


# ------------------------------------------------------------------------------------------
# the memoised sessions behind the widgets (figures.py draws them)
# ------------------------------------------------------------------------------------------
@memo(maxsize=64)
def state_dependence(
    kappa: float, seed: int = 0, patterns: tuple = (0, 30, 60), n_trials: int = 120
) -> dict:
    """Repeated stimulation of a few patterns in the simulator (true latent states).

    Returns ``z_pre``, ``z_post`` (len(patterns), n_trials, q) and the true slope matrices
    ``a I + kappa (G_a + G_b)`` of each pattern.

    See: book/omiso/01-simulated-array.ipynb
    """
    sim = UtahArraySim(kappa=kappa, drift=0.0, seed=seed)
    zp = np.empty((len(patterns), n_trials, sim.q))
    zq = np.empty_like(zp)
    for i, u in enumerate(patterns):
        for t in range(n_trials):
            zp[i, t] = sim.pre(record=False)[0]
            zq[i, t] = sim.stim(u, record=False)[0]
    slopes = np.stack(
        [
            sim.a_auto * np.eye(sim.q) + kappa * (sim.gamma[a] + sim.gamma[b])
            for a, b in sim.patterns[list(patterns)]
        ]
    )
    return {"z_pre": zp, "z_post": zq, "slopes": slopes, "patterns": patterns}


@memo(maxsize=16)
def target_sessions(
    radius: float,
    angles: tuple,
    seed: int = 0,
    n_train: int = 1000,
    n_test: int = 200,
    device: str | None = None,
) -> dict:
    """Closed-loop sessions of OMiSO and MiSO for targets on a circle (one batched run).

    See: book/omiso/02-inverting-the-model.ipynb
    """
    th = np.radians(np.asarray(angles, dtype=float))
    tg = radius * np.stack([np.cos(th), np.sin(th)], 1)
    methods = ["omiso", "miso"]
    targets = np.repeat(tg, len(methods), 0)
    out = run_sessions(
        [seed] * len(targets),
        methods * len(tg),
        n_train=n_train,
        n_test=n_test,
        target=targets,
        device=device,
        return_states=True,
    )
    return {"targets": tg, "methods": methods, **out}


TARGET_ANGLES = tuple(range(0, 360, 30))


DRIFTS = (0.0, 0.01, 0.02, 0.03)


DRIFT_Q = 0.002  # the process noise the notebook's drift sessions use (drift_figure's default)
#: the drift sessions' seeds (notebook 3's default ``SEEDS``), before the registered seed shift:
#: the widget reads the notebook's run, under the seed shift too (``drift_seeds()``)
DRIFT_SEEDS = tuple(range(8))
#: the process noises the drift widget offers (a ``Dropdown``: all precomputed)
Q_VALUES = (1e-5, 1e-4, 1e-3, DRIFT_Q, 0.01, 0.1)


def drift_seeds() -> tuple[int, ...]:
    """``DRIFT_SEEDS`` as registered (``lab.seeds``: shifted under ``LAB_SEED_SHIFT``), the
    default seeds of the drift sessions and of the drift widget."""
    from lab.core.numerics import seeds

    return seeds(*DRIFT_SEEDS)


def _seed_tuple(seeds: Any) -> tuple[int, ...]:
    if seeds is None:
        return drift_seeds()
    return tuple(int(check_int("seeds[i]", s, 0)) for s in np.atleast_1d(seeds).tolist())


def precompute_drift_figure(
    q_values: tuple = Q_VALUES, drifts: tuple = (0.02,), seeds: tuple | None = None
) -> int:
    """Simulate OMiSO at the ``drifts`` (levels of ``DRIFTS``; default: the widget's default)
    for every process noise of ``q_values`` (but ``DRIFT_Q``, which :func:`drift_sessions` has)
    in one batched run, stored as :func:`omiso_drift_errors`' results, so that
    :func:`~lab.omiso.figures.drift_figure` only redraws for them. Each session is
    simulated exactly as in :func:`drift_sessions` (rows of a batch are independent). Returns
    the number of sessions run. ``seeds`` default: ``drift_seeds()``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    if isinstance(q_values, (str, bytes)) or not hasattr(q_values, "__iter__"):
        raise TypeError(f"q_values must be a sequence of numbers >= 0 (got {q_values!r})")
    qs = [check_positive("q_values[i]", q, allow_zero=True) for q in q_values]
    seeds = _seed_tuple(seeds)
    levels = []
    for dr in np.atleast_1d(drifts).tolist():
        level = next((x for x in DRIFTS if np.isclose(x, dr)), None)
        if level is None:
            raise ValueError(f"drifts must be levels of DRIFTS = {DRIFTS} (got {dr!r})")
        levels.append(level)
    rows = [
        (dr, q, s)
        for dr in dict.fromkeys(levels)
        for q in dict.fromkeys(qs)
        if q != DRIFT_Q and ((dr, q, seeds), {}) not in omiso_drift_errors
        for s in seeds
    ]
    if rows:
        out = run_sessions(
            [r[2] for r in rows],
            "omiso",
            n_test=400,
            drift=[r[0] for r in rows],
            q_proc=[r[1] for r in rows],
        )
        n = len(seeds)
        for i in range(0, len(rows), n):
            omiso_drift_errors.put(out["errors"][i : i + n], rows[i][0], rows[i][1], seeds)
    return len(rows)


def drift_sessions(
    q_proc: float, seeds: tuple | None = None, n_test: int = 400, device: str | None = None
) -> dict:
    """All four methods at every drift level of ``DRIFTS`` on the same sessions (batched).

    Memoised on the normalised arguments (``drift_sessions(0.002, lab.seeds(*range(8)))`` and
    ``drift_sessions(0.002)`` are one run: ``seeds`` default ``drift_seeds()``).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    q_proc = check_positive("q_proc", q_proc, allow_zero=True)
    seeds = _seed_tuple(seeds)
    return _drift_run(q_proc, seeds, check_int("n_test", n_test, 1), device)


@memo(maxsize=8)
def _drift_run(q_proc: float, seeds: tuple, n_test: int, device: str | None) -> dict:
    rows = [(dr, s, m) for dr in DRIFTS for s in seeds for m in METHODS]
    out = run_sessions(
        [r[1] for r in rows],
        [r[2] for r in rows],
        n_test=n_test,
        drift=[r[0] for r in rows],
        q_proc=q_proc,
        device=device,
    )
    return {"rows": rows, **out}


@memo(maxsize=64)
def omiso_drift_errors(drift: float, q_proc: float, seeds: tuple | None = None) -> np.ndarray:
    """OMiSO's closed-loop errors (seeds, 400) at one drift level: the only method that uses
    ``q_proc`` (the sessions are independent, so these rows equal those of
    ``drift_sessions(q_proc)``); :func:`precompute_drift_figure` fills it in one batched run.
    ``seeds`` default: ``drift_seeds()`` (``DRIFT_SEEDS`` as registered).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    seeds = _seed_tuple(seeds)
    out = run_sessions(list(seeds), "omiso", n_test=400, drift=[drift] * len(seeds), q_proc=q_proc)
    return out["errors"]
