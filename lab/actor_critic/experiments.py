"""Drivers the notebooks call: the exponent study (single timescale beside the prior-art
schedules, many MDPs, intervals over seeds) and memoised single runs for the widgets.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.rates import ExponentCI, exponent_ci
from lab.core.rules import paired
from lab.core.runtime import smoke_steps

from .fast import (
    BatchHistory,
    ac_many_schedules,
    exact_pg_many,
    pg_many_schedules,
    single_timescale_ac_many,
)
from .mdp import random_mdp
from .reference import (
    ACHistory,
    PGHistory,
    StepSchedule,
    exact_pg_ascent,
    single_timescale_ac,
)

__all__ = [
    "SCHEDULES",
    "ExponentStudy",
    "exponent_study",
    "cached_run",
    "run_grid",
    "EXPONENTS",
    "CRITIC_EXPONENTS",
    "ACTOR_CONSTANTS",
    "CRITIC_CONSTANTS",
    "precompute_schedules",
    "precompute_stall",
]

#: the runs of the exponent study: (actor, critic). The paper's schedule, the classical
#: k^-1/2 schedule with the same constants (its step sum grows faster), and the paper's actor
#: with the spec's stale critic (constant 1: the critic barely learns), the control of the
#: rate claim. The chapter's critic constant is the fast, capped one (see the deviations).
SCHEDULES: dict[str, tuple[StepSchedule, StepSchedule]] = {
    "single-timescale k^-2/3 (paper)": (
        StepSchedule(0.1, 2 / 3),
        StepSchedule(20.0, 2 / 3, cap=1.0),
    ),
    "single-timescale k^-1/2": (
        StepSchedule(0.1, 1 / 2),
        StepSchedule(20.0, 1 / 2, cap=1.0),
    ),
    "stale critic β_k = k^-2/3 (paper's actor)": (
        StepSchedule(0.1, 2 / 3),
        StepSchedule(1.0, 2 / 3),
    ),
}


@dataclass
class ExponentStudy:
    """Gap and critic-error decay of several schedules on the same MDPs, with intervals.

    Attributes
    ----------
    k : ndarray (n_eval,)
        Samples at the evaluation points.
    histories : dict[str, BatchHistory]
        One batched run per schedule (same MDPs, same seed).
    window : (float, float)
        The range of ``k`` the power laws are fitted on.
    gap_ci : dict[str, ExponentCI]
        Log-log slope of each MDP's mean gap against ``k`` (negative), interval over the MDPs.
    eps_exponent : dict[str, tuple[float, float, float]]
        ``(estimate, low, high)`` of the sample-complexity exponent ``q`` in
        ``samples ~ eps^-q``: ``q = -1 / slope``, the interval is the slope interval mapped
        through that monotone map (``inf`` where the slope interval reaches 0).
    early_slope, late_slope : dict[str, float]
        Mean slope on the first and the second half (in ``log k``) of the window: close values
        mean the run has left the pre-asymptotic region.
    critic_ci : dict[str, ExponentCI]
        Log-log slope of each MDP's mean critic error, interval over the MDPs.
    exact_gap : dict[str, ndarray (M, n_eval)]
        The baseline: exact policy-gradient ascent with the same actor steps as the schedule
        (no critic, no sampling noise; :func:`exact_pg_many`), one curve per MDP.
    exact_ci : dict[str, ExponentCI]
        Log-log slope of the baseline's gap, interval over the MDPs (same window).
    exact_eps_exponent : dict[str, tuple[float, float, float]]
        The baseline's ``q``, as ``eps_exponent``.
    rate_gap : dict[str, dict]
        :func:`lab.core.claims.paired` interval over the MDPs of the actor-critic slope minus
        the baseline's slope (same MDP, same window): 0 when the critic costs no rate.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    k: np.ndarray
    histories: dict[str, BatchHistory]
    window: tuple[float, float]
    gap_ci: dict[str, ExponentCI]
    eps_exponent: dict[str, tuple[float, float, float]]
    early_slope: dict[str, float]
    late_slope: dict[str, float]
    critic_ci: dict[str, ExponentCI]
    exact_gap: dict[str, np.ndarray] = field(default_factory=dict)
    exact_ci: dict[str, ExponentCI] = field(default_factory=dict)
    exact_eps_exponent: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    rate_gap: dict[str, dict] = field(default_factory=dict)
    config: dict = field(default_factory=dict)


def _eps(slope: float) -> float:
    return -1.0 / slope if slope < 0 else math.inf


def exponent_study(
    n_mdps: int = 16,
    runs: int = 4,
    K: int = 20_000,
    *,
    schedules: dict[str, tuple[Any, Any]] | None = None,
    n_states: int = 6,
    n_actions: int = 3,
    gamma: float = 0.9,
    window_start: float = 1 / 30,
    level: float = 0.95,
    seed: int = 0,
    eval_points: int = 40,
    backend: str = "auto",
    device: Any = None,
    show_progress: bool | None = None,
) -> ExponentStudy:
    """Run each schedule on ``random_mdp(n_states, n_actions, gamma, seed + i)``, ``i < n_mdps``,
    and fit the decay exponents of the gap and of the critic error, with intervals over MDPs;
    beside each schedule, run the exact-gradient baseline with the same actor steps
    (:func:`exact_pg_many`) and compare the two slopes MDP by MDP (``rate_gap``).

    Each MDP is one seed of the interval: its ``runs`` runs are averaged, the log-log slope of
    that mean gap over ``k`` in ``[window_start * K, K]`` is fitted, and
    :func:`lab.core.rates.exponent_ci` gives a Student-t interval over the MDPs.

    Parameters
    ----------
    n_mdps : int
        MDPs (>= 2: the interval needs two seeds).
    runs : int
        Runs per MDP (averaged before fitting).
    K : int
        Samples per run (>= 100).
    schedules : dict name -> (actor, critic), optional
        Default :data:`SCHEDULES`.
    n_states, n_actions, gamma
        The random MDPs.
    window_start : float
        The fit window starts at ``window_start * K``, in (0, 0.5].
    level : float
        Confidence level in (0, 1).
    seed : int
        First MDP seed, and the seed of the runs' random numbers.
    eval_points, backend, device, show_progress
        As in :func:`single_timescale_ac_many`.

    Returns
    -------
    ExponentStudy

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    n_mdps = check_int("n_mdps", n_mdps, 2, 100_000)
    runs = check_int("runs", runs, 1, 100_000)
    K = smoke_steps(check_int("K", K, 100, 10**9), small=2000)  # LAB_SMOKE=1: 2,000
    window_start = check_range("window_start", window_start, 0.0, 0.5, low_inclusive=False)
    level = check_range("level", level, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    seed = check_int("seed", seed, 0, 2**31)
    if schedules is None:
        schedules = SCHEDULES
    if not isinstance(schedules, dict) or not schedules:
        raise TypeError(
            f"schedules must be a non-empty dict name -> (actor, critic) (got {schedules!r})"
        )
    mdps = [random_mdp(n_states, n_actions, gamma, seed + i) for i in range(n_mdps)]
    window = (window_start * K, float(K))
    mid = math.sqrt(window[0] * window[1])
    hist, gap_ci, eps, early, late, crit = {}, {}, {}, {}, {}, {}
    ex_gap, ex_ci, ex_eps, rate_gap, by_actor = {}, {}, {}, {}, {}
    for name, pair in schedules.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"schedules[{name!r}] must be a pair (actor, critic) (got {pair!r})")
        h = single_timescale_ac_many(
            mdps, K, pair[0], pair[1], runs, seed, eval_points=eval_points, backend=backend,
            device=device, show_progress=show_progress,
        )  # fmt: skip
        hist[name] = h
        ci = exponent_ci(h.k, h.mdp_gap, level=level, window=window)
        gap_ci[name] = ci
        eps[name] = (_eps(ci.mean), _eps(ci.low), _eps(ci.high))
        early[name] = float(exponent_ci(h.k, h.mdp_gap, level=level, window=(window[0], mid)).mean)
        late[name] = float(exponent_ci(h.k, h.mdp_gap, level=level, window=(mid, window[1])).mean)
        crit[name] = exponent_ci(h.k, h.mdp_critic_error, level=level, window=window)
        actor = h.config["actor"]
        if actor not in by_actor:  # the baseline depends on the actor's steps only
            by_actor[actor] = exact_pg_many(mdps, K, actor, eval_points=eval_points)[1]
        ex_gap[name] = by_actor[actor]
        ex_ci[name] = exponent_ci(h.k, ex_gap[name], level=level, window=window)
        ex_eps[name] = (_eps(ex_ci[name].mean), _eps(ex_ci[name].low), _eps(ex_ci[name].high))
        rate_gap[name] = paired(ci.exponents, ex_ci[name].exponents, level=level)
    k = next(iter(hist.values())).k
    return ExponentStudy(
        k=k, histories=hist, window=window, gap_ci=gap_ci, eps_exponent=eps, early_slope=early,
        late_slope=late, critic_ci=crit, exact_gap=ex_gap, exact_ci=ex_ci,
        exact_eps_exponent=ex_eps, rate_gap=rate_gap,
        config=dict(n_mdps=n_mdps, runs=runs, K=K, n_states=n_states, n_actions=n_actions,
                    gamma=gamma, seed=seed, level=level),
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def cached_run(
    p_actor: float,
    p_critic: float,
    c_actor: float,
    c_critic: float,
    K: int = 5000,
    runs: int = 4,
    seed: int = 0,
    n_states: int = 6,
    gamma: float = 0.9,
    with_pg: bool = True,
    critic_cap: float | None = None,
):
    """One (memoised) actor-critic run on ``random_mdp(n_states, 3, gamma, seed)``, and (with
    ``with_pg``) exact policy-gradient ascent with the same actor schedule.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    key = _grid_key(p_actor, p_critic, c_actor, c_critic, K, runs, seed, n_states, gamma, with_pg,
                    critic_cap)  # fmt: skip
    if key in _GRID:  # computed (in one batch with others) by :func:`run_grid`
        return _GRID[key]
    mdp = random_mdp(n_states, 3, gamma, seed)
    hist = single_timescale_ac(
        mdp,
        K,
        StepSchedule(c_actor, p_actor),
        StepSchedule(c_critic, p_critic, cap=critic_cap),
        runs,
        seed,
        eval_points=60,
        show_progress=False,
    )
    pg = _cached_pg(p_actor, c_actor, K, seed, n_states, gamma) if with_pg else None
    return hist, pg


@functools.lru_cache(maxsize=256)
def _cached_pg(p_actor: float, c_actor: float, K: int, seed: int, n_states: int, gamma: float):
    """Exact policy-gradient ascent with the actor's schedule: it does not depend on the critic,
    so a widget that moves a critic setting reuses it."""
    mdp = random_mdp(n_states, 3, gamma, seed)
    return exact_pg_ascent(mdp, K, StepSchedule(c_actor, p_actor), eval_points=60)


# ---------------------------------------------------------------------------------------------
# Many schedules at once (the widgets' precomputed runs)
# ---------------------------------------------------------------------------------------------
_GRID: dict[tuple, tuple] = {}  # the runs run_grid made, keyed like cached_run's arguments


def _grid_key(p_actor, p_critic, c_actor, c_critic, K, runs, seed, n_states, gamma, with_pg,
              critic_cap, run_seed=None) -> tuple:  # fmt: skip
    cap = None if critic_cap is None else float(critic_cap)
    draws = int(seed) if run_seed is None else int(run_seed)  # the runs' random numbers
    return (float(p_actor), float(p_critic), float(c_actor), float(c_critic), int(K), int(runs),
            int(seed), int(n_states), float(gamma), bool(with_pg), cap, draws)  # fmt: skip


def run_grid(
    configs: Any,
    K: int = 5000,
    runs: int = 4,
    seed: int = 0,
    n_states: int = 6,
    gamma: float = 0.9,
    with_pg: bool = True,
    critic_cap: float | None = None,
    run_seed: int | None = None,
) -> list[tuple[ACHistory, PGHistory | None]]:
    """:func:`cached_run` for many schedules in one batched computation (what a widget reads).

    ``configs`` is a sequence of ``(p_actor, p_critic, c_actor, c_critic)``. Every schedule runs
    the reference steps of :func:`single_timescale_ac` on the same uniforms (those of
    ``seed``), its ``runs`` rows stacked with those of the other schedules in one array, so one
    Python loop over the ``K`` samples serves them all; the exact policy-gradient ascents (with
    ``with_pg``) are batched the same way. Each run is stored, so that a later
    ``cached_run(*config, K, runs, seed, ...)`` returns it without computing; schedules already
    stored are not recomputed. Returns the ``(history, pg)`` pairs in the order of ``configs``.

    ``seed`` draws the MDP (``random_mdp(n_states, 3, gamma, seed)``) and, unless ``run_seed``
    is given, the runs' random numbers too; ``run_seed`` draws the runs alone, so that the runs
    of one MDP can be repeated on another seed set (the registered seed shift, ``lab.seeds``).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if isinstance(configs, (str, bytes)) or not hasattr(configs, "__iter__"):
        raise TypeError(f"configs must be a sequence of (p_actor, p_critic, c_actor, c_critic) "
                        f"(got {configs!r})")  # fmt: skip
    configs = [tuple(c) for c in configs]
    for i, c in enumerate(configs):
        if len(c) != 4:
            raise ValueError(f"configs[{i}] must be (p_actor, p_critic, c_actor, c_critic) "
                             f"(got {c!r})")  # fmt: skip
        check_range(f"configs[{i}] p_actor", c[0], 0.0, 1.0)
        check_range(f"configs[{i}] p_critic", c[1], 0.0, 1.0)
        for j, name in ((2, "c_actor"), (3, "c_critic")):
            if not (isinstance(c[j], (int, float)) and math.isfinite(c[j]) and c[j] > 0):
                raise ValueError(f"configs[{i}] {name} must be a finite number > 0 (got {c[j]!r})")
    K = smoke_steps(check_int("K", K, 1, 10**9), small=2000)  # LAB_SMOKE=1: 2,000
    runs = check_int("runs", runs, 1, 10**7)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    n_states = check_int("n_states", n_states, 1, 10**4)
    with_pg = bool(with_pg)
    if run_seed is not None:
        run_seed = check_int("run_seed", run_seed, 0, 2**32 - 1)
    keys = [_grid_key(*c, K, runs, seed, n_states, gamma, with_pg, critic_cap, run_seed)
            for c in configs]  # fmt: skip
    todo = list(dict.fromkeys(k for k in keys if k not in _GRID))
    if todo:
        mdp = random_mdp(n_states, 3, gamma, seed)
        actors = [StepSchedule(k[2], k[0]) for k in todo]
        critics = [StepSchedule(k[3], k[1], cap=critic_cap) for k in todo]
        draws = seed if run_seed is None else run_seed
        hists = ac_many_schedules(mdp, K, actors, critics, runs, draws, eval_points=60)
        pgs = [None] * len(todo)
        if with_pg:  # the exact ascent depends on the actor's schedule only
            pg_keys = list(dict.fromkeys((k[0], k[2]) for k in todo))
            pg_runs = pg_many_schedules(
                mdp, K, [StepSchedule(c, p) for p, c in pg_keys], eval_points=60
            )
            pg_of = dict(zip(pg_keys, pg_runs, strict=True))
            pgs = [pg_of[(k[0], k[2])] for k in todo]
        for key, h, pg in zip(todo, hists, pgs, strict=True):
            _GRID[key] = (h, pg)
    return [_GRID[k] for k in keys]


# ---------------------------------------------------------------------------------------------
# The widgets' grids: every value a control offers, run ahead in one batch
# ---------------------------------------------------------------------------------------------
#: The values the widgets offer (``Dropdown`` controls: every reachable value is precomputed
#: by :func:`precompute_schedules` / :func:`precompute_stall`, so a move only redraws).
#: Exponents are rounded to 6 digits, as :func:`cached_run` keys them.
EXPONENTS = (0.333333, 0.4, 0.5, 0.6, 0.666667, 0.8, 1.0)
CRITIC_EXPONENTS = (0.0, 0.333333, 0.4, 0.5, 0.6, 0.666667, 0.8, 1.0)
ACTOR_CONSTANTS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
CRITIC_CONSTANTS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
_STALL_CONSTANTS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)  # the notebook's C_GRID


def _cross(default: tuple, grids: tuple) -> list[tuple]:
    """``default`` and every point that differs from it in one coordinate, taken from ``grids``."""
    out = {tuple(default)}
    for i, grid in enumerate(grids):
        for v in grid:
            out.add(tuple(default[:i]) + (float(v),) + tuple(default[i + 1 :]))
    return sorted(out)


@memo
def precompute_schedules(K: int = 3000, runs: int = 4, seed: int = 0) -> int:
    """Run, in one batched computation, every schedule the widget of
    :func:`lab.actor_critic.figures.schedule_figure` reaches by moving one control from its defaults (``EXPONENTS`` x ``CRITIC_EXPONENTS`` x
    ``ACTOR_CONSTANTS`` x ``CRITIC_CONSTANTS`` around ``(2/3, 2/3, 0.1, 1)``), with the exact
    policy-gradient ascents. Returns the number of schedules (a later :func:`cached_run` of any
    of them reads the stored run; other combinations are computed when asked).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    K = check_int("K", K, 10)
    runs = check_int("runs", runs, 1, 1024)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    grids = (EXPONENTS, CRITIC_EXPONENTS, ACTOR_CONSTANTS, CRITIC_CONSTANTS)
    configs = _cross((0.666667, 0.666667, 0.1, 1.0), grids)
    run_grid(configs, K, runs, seed, with_pg=True)
    return len(configs)


@memo
def precompute_stall(
    constants: tuple = _STALL_CONSTANTS, K: int = 5000, runs: int = 4, seed: int = 0
) -> int:
    """Run, in one batched computation, every schedule :func:`lab.actor_critic.figures.stall_figure`'s widget reaches:
    each actor constant of ``constants`` with each actor exponent of ``EXPONENTS`` (the critic
    of :func:`lab.actor_critic.figures.stall_figure`, ``beta_k = k^-2/3``). Returns the number of schedules.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    K = check_int("K", K, 10)
    runs = check_int("runs", runs, 1, 1024)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    if isinstance(constants, (str, bytes)) or not hasattr(constants, "__iter__"):
        raise TypeError(f"constants must be a sequence of numbers > 0 (got {constants!r})")
    constants = [check_positive("constants[i]", c) for c in constants]
    configs = [(p, 0.666667, c, 1.0) for c in dict.fromkeys(constants) for p in EXPONENTS]
    run_grid(configs, K, runs, seed, with_pg=False)
    return len(configs)
