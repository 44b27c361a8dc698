"""The closed loop (numpy reference): calibration, training block, closed-loop trials, and
the comparison of the four controllers on identical sessions.

See: book/omiso/03-closing-the-loop.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_range,
)
from lab.omiso.array import UtahArraySim, session_plan
from lab.omiso.models import METHODS, RandomChoice, _check_dims, make_method
from lab.omiso.reference import FAParams, fit_fa


@dataclass
class SessionLog:
    """One closed-loop session: per-trial ``errors`` (n_test,), ``choices`` (n_test,),
    estimated states ``z_pre``, ``z_post`` (n_test, q), the ``target``, the FA fit ``fa``.

    See: book/omiso/03-closing-the-loop.ipynb
    """

    errors: np.ndarray
    choices: np.ndarray
    z_pre: np.ndarray
    z_post: np.ndarray
    target: np.ndarray
    fa: FAParams | None = None
    train: dict = field(default_factory=dict)

    @property
    def mean_error(self) -> float:
        return float(self.errors.mean())


def default_target(dims: Any = (0, 1)) -> np.ndarray:
    """The book's default target in the estimated latent space: ``1.0`` in each of ``dims``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    return np.full(len(np.atleast_1d(dims)), 1.0)


def run_session(
    sim: UtahArraySim,
    method: Any,
    n_cal: int = 600,
    n_train: int = 1500,
    n_test: int = 400,
    target: Any = None,
    dims: Any = (0, 1),
    epsilon: float = 0.05,
    q_fa: int | None = None,
    **method_kw: Any,
) -> SessionLog:
    """One closed-loop session (reference, numpy): calibrate FA on no-stimulation windows,
    train on random patterns, then choose a pattern on each of ``n_test`` trials.

    Parameters
    ----------
    sim : UtahArraySim
        The simulated array (reset to trial 0 first).
    method : str or model
        ``"omiso"``, ``"static"``, ``"miso"``, ``"random"`` (see :func:`make_method`), or an
        object with ``fit``, ``choose`` and ``update``.
    n_cal, n_train, n_test : int
        Calibration (no stimulation), training (random patterns) and closed-loop trials.
    target : array (len(dims),), optional
        Target in the *estimated* latent space (default :func:`default_target`).
    dims : sequence of int
        Latent dimensions ``K`` the target constrains.
    epsilon : float
        Epsilon-greedy exploration probability (ignored by ``"random"``).
    q_fa : int, optional
        FA dimensions (default ``sim.q``).

    Returns
    -------
    SessionLog

    See: book/omiso/03-closing-the-loop.ipynb
    """
    if not isinstance(sim, UtahArraySim):
        raise TypeError(f"sim must be a UtahArraySim (got {type(sim).__name__})")
    n_cal = check_int("n_cal", n_cal, 10)
    n_train = check_int("n_train", n_train, 1)
    n_test = check_int("n_test", n_test, 1)
    epsilon = check_range("epsilon", epsilon, 0.0, 1.0)
    q = sim.q if q_fa is None else check_int("q_fa", q_fa, 1, sim.n_channels - 1)
    dims = _check_dims(dims, q)
    target = default_target(dims) if target is None else target
    target = check_array("target", target, shape=(len(dims),))
    is_random = False
    if isinstance(method, str):
        is_random = method == "random"
        model = make_method(method, sim.n_patterns, q, **method_kw)
    else:
        model = method
        is_random = isinstance(model, RandomChoice)
        for attr in ("fit", "choose", "update"):
            if not callable(getattr(model, attr, None)):
                raise TypeError(f"method must have a callable .{attr} (got {type(model).__name__})")
    plan = session_plan(sim.seed, n_train, n_test, sim.n_patterns)
    sim.reset()
    # calibration: no-stimulation windows only -> FA
    Ycal = np.stack([sim.pre()[1] for _ in range(n_cal)])
    fa = fit_fa(Ycal, q)
    M = fa.posterior_matrix
    # training block: random patterns, store (z_pre, u, z_post) triples
    Zpre = np.empty((n_train, q))
    Zpost = np.empty((n_train, q))
    for t in range(n_train):
        Zpre[t] = M @ (sim.pre()[1] - fa.mu)  # eq. (1)
        Zpost[t] = M @ (sim.stim(int(plan["train_u"][t]))[1] - fa.mu)
    model.fit(Zpre, plan["train_u"], Zpost)
    # closed loop
    errors = np.empty(n_test)
    choices = np.empty(n_test, dtype=int)
    zp = np.empty((n_test, q))
    zq = np.empty((n_test, q))
    for t in range(n_test):
        z_pre = M @ (sim.pre()[1] - fa.mu)
        if is_random or plan["explore_draw"][t] < epsilon:
            u = int(plan["explore_u"][t])
        else:
            u = int(model.choose(z_pre, target, dims))  # eq. (3)
        z_post = M @ (sim.stim(u)[1] - fa.mu)
        errors[t] = np.linalg.norm(z_post[dims] - target)
        model.update(u, z_pre, z_post)  # eq. (4) / (5), the tried pattern only
        choices[t], zp[t], zq[t] = u, z_pre, z_post
    return SessionLog(
        errors,
        choices,
        zp,
        zq,
        target,
        fa,
        {"z_pre": Zpre, "u": plan["train_u"], "z_post": Zpost, "Y_cal": Ycal},
    )


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
        ``"torch"`` (all sessions batched, :func:`lab.omiso.fast.simulate_batch`) or
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
        from .fast import simulate_batch

        S = [s for s in seeds for _ in methods]
        Ms = [m for _ in seeds for m in methods]
        out = simulate_batch(
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
