"""Drivers the notebooks call: the exponent study (single timescale beside the prior-art
schedules, many MDPs, intervals over seeds) and memoised single runs for the widgets.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_positive, check_range
from lab.core.memo import memo
from lab.core.rates import ExponentCI, exponent_ci
from lab.core.rules import paired

from .fast import BatchHistory, exact_pg_many, single_timescale_ac_many
from .mdp import random_mdp
from .reference import (
    ACHistory,
    ACLoop,
    PGHistory,
    StepSchedule,
    exact_pg_ascent,
    fit_rate,
    run_ac,
)
from .schedule_batch import ac_many_schedules, pg_many_schedules
from .settings import RunSettings, StudySettings

__all__ = [
    "SCHEDULES",
    "ExponentStudy",
    "exponent_study",
    "ScheduleRun",
    "schedule_run",
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


def _check_schedules(schedules: Any) -> dict:
    if schedules is None:
        return SCHEDULES
    if not isinstance(schedules, dict) or not schedules:
        raise TypeError(
            f"schedules must be a non-empty dict name -> (actor, critic) (got {schedules!r})"
        )
    for name, pair in schedules.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"schedules[{name!r}] must be a pair (actor, critic) (got {pair!r})")
    return schedules


def _fits(h: BatchHistory, exact: np.ndarray, window: tuple, level: float) -> dict:
    """The fitted exponents of one schedule's batched run beside its exact-gradient baseline."""
    mid = math.sqrt(window[0] * window[1])
    ci = exponent_ci(h.k, h.mdp_gap, level=level, window=window)
    ex = exponent_ci(h.k, exact, level=level, window=window)
    return dict(
        gap_ci=ci,
        eps_exponent=(_eps(ci.mean), _eps(ci.low), _eps(ci.high)),
        early_slope=float(exponent_ci(h.k, h.mdp_gap, level=level, window=(window[0], mid)).mean),
        late_slope=float(exponent_ci(h.k, h.mdp_gap, level=level, window=(mid, window[1])).mean),
        critic_ci=exponent_ci(h.k, h.mdp_critic_error, level=level, window=window),
        exact_gap=exact,
        exact_ci=ex,
        exact_eps_exponent=(_eps(ex.mean), _eps(ex.low), _eps(ex.high)),
        rate_gap=paired(ci.exponents, ex.exponents, level=level),
    )


def exponent_study(
    settings: StudySettings = StudySettings(),  # noqa: B008
    schedules: dict[str, tuple[Any, Any]] | None = None,
    *,
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
    settings : StudySettings
        The MDPs, runs, samples, fit window and level (validated when built).
    schedules : dict name -> (actor, critic), optional
        Default :data:`SCHEDULES`.
    device, show_progress
        As in :func:`single_timescale_ac_many`.

    Returns
    -------
    ExponentStudy

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if not isinstance(settings, StudySettings):
        raise TypeError(f"settings must be a StudySettings (got {type(settings).__name__})")
    schedules = _check_schedules(schedules)
    st = settings
    mdps = [random_mdp(st.n_states, st.n_actions, st.gamma, st.seed + i) for i in range(st.n_mdps)]
    window = (st.window_start * st.K, float(st.K))
    hist, fits, by_actor = {}, {}, {}
    for name, (actor, critic) in schedules.items():
        h = single_timescale_ac_many(
            mdps, st.K, actor, critic, st.runs, st.seed, eval_points=st.eval_points,
            backend=st.backend, device=device, show_progress=show_progress,
        )  # fmt: skip
        hist[name] = h
        actor = h.config["actor"]
        if actor not in by_actor:  # the baseline depends on the actor's steps only
            by_actor[actor] = exact_pg_many(mdps, st.K, actor, eval_points=st.eval_points)[1]
        fits[name] = _fits(h, by_actor[actor], window, st.level)
    field_of = {f: {name: fit[f] for name, fit in fits.items()} for f in next(iter(fits.values()))}
    return ExponentStudy(
        k=next(iter(hist.values())).k, histories=hist, window=window, **field_of,
        config=dict(n_mdps=st.n_mdps, runs=st.runs, K=st.K, n_states=st.n_states,
                    n_actions=st.n_actions, gamma=st.gamma, seed=st.seed, level=st.level),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# One MDP, many step-size schedules (the widgets' runs and notebook 2's sweeps)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScheduleRun:
    """The runs of one pair of schedules on ``random_mdp(n_states, 3, gamma, seed)``.

    Attributes
    ----------
    config : (p_actor, p_critic, c_actor, c_critic)
        The schedules ``eta_k = c_actor (k+1)^-p_actor``, ``beta_k = c_critic (k+1)^-p_critic``.
    settings : RunSettings
    history : ACHistory
        The actor-critic runs.
    pg : PGHistory or None
        Exact policy-gradient ascent with the same actor steps (``settings.with_pg``).
    slope : float
        Fitted log-log slope of the mean gap on ``k`` in ``[K / 10, K]``.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    config: tuple
    settings: RunSettings
    history: ACHistory
    pg: PGHistory | None
    slope: float


def _config(i: int | None, c: Any) -> tuple:
    """``(p_actor, p_critic, c_actor, c_critic)``, checked; exponents rounded to 6 digits."""
    at = "" if i is None else f"configs[{i}] "
    if isinstance(c, (str, bytes)) or not hasattr(c, "__iter__") or len(tuple(c)) != 4:
        raise ValueError(f"{at}must be (p_actor, p_critic, c_actor, c_critic) (got {c!r})")
    c = tuple(c)
    p_a = round(check_range(f"{at}p_actor", c[0], 0.0, 1.0), 6)
    p_c = round(check_range(f"{at}p_critic", c[1], 0.0, 1.0), 6)
    for j, name in ((2, "c_actor"), (3, "c_critic")):
        if not (isinstance(c[j], (int, float)) and math.isfinite(c[j]) and c[j] > 0):
            raise ValueError(f"{at}{name} must be a finite number > 0 (got {c[j]!r})")
    return (p_a, p_c, float(c[2]), float(c[3]))


def _finish(config: tuple, settings: RunSettings, hist: ACHistory, pg: Any) -> ScheduleRun:
    K = hist.config["K"]
    slope = fit_rate(hist.samples, hist.gap, (K / 10, K))
    return ScheduleRun(config, settings, hist, pg, float(slope))


@memo
def _pg_run(p_actor: float, c_actor: float, K: int, seed: int, n_states: int, gamma: float):
    """Exact policy-gradient ascent with the actor's schedule: it does not depend on the critic,
    so a widget that moves a critic setting reuses it."""
    mdp = random_mdp(n_states, 3, gamma, seed)
    return exact_pg_ascent(mdp, K, StepSchedule(c_actor, p_actor), eval_points=60)


@memo
def _schedule_run(config: tuple, settings: RunSettings) -> ScheduleRun:
    p_actor, p_critic, c_actor, c_critic = config
    st = settings
    mdp = random_mdp(st.n_states, 3, st.gamma, st.seed)
    actor = StepSchedule(c_actor, p_actor)
    critic = StepSchedule(c_critic, p_critic, cap=st.critic_cap)
    loop = ACLoop(eval_points=60, disable=True)  # settings are checked: the unchecked loop
    hist = run_ac(mdp, st.K, actor, critic, st.runs, st.draws, loop)
    pg = _pg_run(p_actor, c_actor, st.K, st.seed, st.n_states, st.gamma) if st.with_pg else None
    return _finish(config, settings, hist, pg)


def schedule_run(
    p_actor: float,
    p_critic: float,
    c_actor: float,
    c_critic: float,
    settings: RunSettings = RunSettings(),  # noqa: B008
) -> ScheduleRun:
    """One (memoised) pair of schedules on ``random_mdp(n_states, 3, gamma, seed)``, and (with
    ``settings.with_pg``) exact policy-gradient ascent with the same actor schedule. A run that
    :func:`run_grid` computed in a batch is read, not recomputed.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    if not isinstance(settings, RunSettings):
        raise TypeError(f"settings must be a RunSettings (got {type(settings).__name__})")
    return _schedule_run(_config(None, (p_actor, p_critic, c_actor, c_critic)), settings)


def _grid_batch(todo: list[tuple], settings: RunSettings) -> None:
    """Run the schedules ``todo`` in one batch and store each as :func:`schedule_run`'s result."""
    st = settings
    mdp = random_mdp(st.n_states, 3, st.gamma, st.seed)
    actors = [StepSchedule(c[2], c[0]) for c in todo]
    critics = [StepSchedule(c[3], c[1], cap=st.critic_cap) for c in todo]
    hists = ac_many_schedules(mdp, st.K, actors, critics, st.runs, st.draws, eval_points=60)
    pgs = [None] * len(todo)
    if st.with_pg:  # the exact ascent depends on the actor's schedule only
        pg_keys = list(dict.fromkeys((c[0], c[2]) for c in todo))
        pg_runs = pg_many_schedules(
            mdp, st.K, [StepSchedule(c, p) for p, c in pg_keys], eval_points=60
        )
        pg_of = dict(zip(pg_keys, pg_runs, strict=True))
        pgs = [pg_of[(c[0], c[2])] for c in todo]
    for config, h, pg in zip(todo, hists, pgs, strict=True):
        _schedule_run.put(_finish(config, settings, h, pg), config, settings)


def run_grid(
    configs: Any,
    settings: RunSettings = RunSettings(),  # noqa: B008
) -> list[ScheduleRun]:
    """:func:`schedule_run` for many schedules in one batched computation (what a widget reads).

    ``configs`` is a sequence of ``(p_actor, p_critic, c_actor, c_critic)``. Every schedule runs
    the reference steps of :func:`single_timescale_ac` on the same uniforms (those of
    ``settings.draws``), its ``runs`` rows stacked with those of the other schedules in one
    array, so one Python loop over the ``K`` samples serves them all; the exact policy-gradient
    ascents (with ``with_pg``) are batched the same way. Each run is stored, so that a later
    ``schedule_run(*config, settings)`` returns it without computing; schedules already stored
    are not recomputed. Returns the runs in the order of ``configs``.

    ``settings.seed`` draws the MDP and, unless ``settings.run_seed`` is given, the runs' random
    numbers too; ``run_seed`` draws the runs alone, so that the runs of one MDP can be repeated
    on another seed set (the registered seed shift, ``lab.seeds``).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if isinstance(configs, (str, bytes)) or not hasattr(configs, "__iter__"):
        raise TypeError(f"configs must be a sequence of (p_actor, p_critic, c_actor, c_critic) "
                        f"(got {configs!r})")  # fmt: skip
    if not isinstance(settings, RunSettings):
        raise TypeError(f"settings must be a RunSettings (got {type(settings).__name__})")
    configs = [_config(i, c) for i, c in enumerate(configs)]
    todo = [c for c in dict.fromkeys(configs) if ((c, settings), {}) not in _schedule_run]
    if todo:
        _grid_batch(todo, settings)
    return [_schedule_run(c, settings) for c in configs]


# ---------------------------------------------------------------------------------------------
# The widgets' grids: every value a control offers, run ahead in one batch
# ---------------------------------------------------------------------------------------------
#: The values the widgets offer (``Dropdown`` controls: every reachable value is precomputed
#: by :func:`precompute_schedules` / :func:`precompute_stall`, so a move only redraws).
#: Exponents are rounded to 6 digits, as :func:`schedule_run` keys them.
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
def precompute_schedules(settings: RunSettings = RunSettings(3000)) -> int:  # noqa: B008
    """Run, in one batched computation, every schedule the widget of
    :func:`lab.actor_critic.figures.schedule_figure` reaches by moving one control from its
    defaults (``EXPONENTS`` x ``CRITIC_EXPONENTS`` x ``ACTOR_CONSTANTS`` x ``CRITIC_CONSTANTS``
    around ``(2/3, 2/3, 0.1, 1)``), with the exact policy-gradient ascents. Returns the number
    of schedules (a later :func:`schedule_run` of any of them reads the stored run; other
    combinations are computed when asked).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if not isinstance(settings, RunSettings):
        raise TypeError(f"settings must be a RunSettings (got {type(settings).__name__})")
    grids = (EXPONENTS, CRITIC_EXPONENTS, ACTOR_CONSTANTS, CRITIC_CONSTANTS)
    configs = _cross((0.666667, 0.666667, 0.1, 1.0), grids)
    run_grid(configs, settings)
    return len(configs)


@memo
def precompute_stall(
    constants: tuple = _STALL_CONSTANTS,
    settings: RunSettings = RunSettings(with_pg=False),  # noqa: B008
) -> int:
    """Run, in one batched computation, every schedule
    :func:`lab.actor_critic.figures.stall_figure`'s widget reaches: each actor constant of
    ``constants`` with each actor exponent of ``EXPONENTS`` (the critic ``beta_k = k^-2/3``).
    Returns the number of schedules.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    if not isinstance(settings, RunSettings):
        raise TypeError(f"settings must be a RunSettings (got {type(settings).__name__})")
    if isinstance(constants, (str, bytes)) or not hasattr(constants, "__iter__"):
        raise TypeError(f"constants must be a sequence of numbers > 0 (got {constants!r})")
    constants = [check_positive("constants[i]", c) for c in constants]
    configs = [(p, 0.666667, c, 1.0) for c in dict.fromkeys(constants) for p in EXPONENTS]
    run_grid(configs, settings)
    return len(configs)
