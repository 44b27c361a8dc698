"""The settings of the chapter's experiments: one frozen dataclass per family, validated once.

A notebook builds a settings object and passes it whole to a driver of ``experiments.py``; the
driver trusts it and calls the kernels' unchecked implementations. Each field is checked in
``__post_init__`` with ``lab.core.checks``, so a bad value fails where it is typed.

* ``StudySettings``: the exponent study (many random MDPs x runs, intervals over the MDPs;
  notebook 1);
* ``RunSettings``: the runs of one random MDP under a grid of step-size schedules (the widgets
  of both notebooks, notebook 2's sweeps).

See: book/actor_critic/01-gap-vs-samples.ipynb, book/actor_critic/02-schedules-and-critic-lag.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    set_field,
)
from lab.core.runtime import smoke_steps

__all__ = ["StudySettings", "RunSettings"]


@dataclass(frozen=True)
class StudySettings:
    """The exponent study: each schedule on ``random_mdp(n_states, n_actions, gamma, seed + i)``,
    ``i < n_mdps``, ``runs`` runs each, the decay exponents fitted on ``k`` in
    ``[window_start * K, K]``.

    Parameters
    ----------
    n_mdps : int
        MDPs, in ``[2, 100_000]`` (the interval needs two seeds).
    runs : int
        Runs per MDP (averaged before fitting), in ``[1, 100_000]``.
    K : int
        Samples per run, ``>= 100`` (``LAB_SMOKE=1``: 2,000).
    n_states, n_actions : int
        The random MDPs' sizes, ``>= 1`` and ``>= 2``.
    gamma : float
        Discount, in ``(0, 1)``.
    window_start : float
        The fit window starts at ``window_start * K``, in ``(0, 0.5]``.
    level : float
        Confidence level, in ``(0, 1)``.
    seed : int
        First MDP seed and the seed of the runs' random numbers, in ``[0, 2**31]``.
    eval_points : int
        About this many log-spaced evaluation points, in ``[2, 10_000]``.
    backend : {"auto", "numpy", "torch"}
        As in :func:`lab.actor_critic.fast.single_timescale_ac_many`.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    n_mdps: int = 16
    runs: int = 4
    K: int = 20_000
    n_states: int = 6
    n_actions: int = 3
    gamma: float = 0.9
    window_start: float = 1 / 30
    level: float = 0.95
    seed: int = 0
    eval_points: int = 40
    backend: str = "auto"

    def __post_init__(self) -> None:
        set_field(self, "n_mdps", check_int("n_mdps", self.n_mdps, 2, 100_000))
        set_field(self, "runs", check_int("runs", self.runs, 1, 100_000))
        set_field(self, "K", smoke_steps(check_int("K", self.K, 100, 10**9), small=2000))
        set_field(self, "n_states", check_int("n_states", self.n_states, 1, 10**4))
        set_field(self, "n_actions", check_int("n_actions", self.n_actions, 2, 10**4))
        gamma = check_range("gamma", self.gamma, 0.0, 1.0, low_inclusive=False)
        set_field(self, "gamma", check_range("gamma", gamma, 0.0, 1.0, high_inclusive=False))
        ws = check_range("window_start", self.window_start, 0.0, 0.5, low_inclusive=False)
        set_field(self, "window_start", ws)
        level = check_range(
            "level", self.level, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        set_field(self, "level", level)
        set_field(self, "seed", check_int("seed", self.seed, 0, 2**31))
        set_field(self, "eval_points", check_int("eval_points", self.eval_points, 2, 10_000))
        set_field(
            self, "backend", check_choice("backend", self.backend, ["auto", "numpy", "torch"])
        )


@dataclass(frozen=True)
class RunSettings:
    """The runs of one schedule (or a grid of schedules) on ``random_mdp(n_states, 3, gamma,
    seed)``: ``runs`` runs of ``K`` samples each.

    Parameters
    ----------
    K : int
        Samples per run, ``>= 10`` (``LAB_SMOKE=1``: 2,000).
    runs : int
        Runs, in ``[1, 1024]``.
    seed : int
        Seed of the MDP and, unless ``run_seed`` is given, of the runs' random numbers, in
        ``[0, 2**32 - 1]``.
    n_states : int
        States of the random MDP, in ``[1, 10_000]``.
    gamma : float
        Discount, in ``(0, 1)``.
    with_pg : bool
        Also run exact policy-gradient ascent with each schedule's actor steps.
    critic_cap : float, optional
        Cap on the critic step (``None``: no cap), ``> 0``.
    run_seed : int, optional
        Seed of the runs alone (the MDP stays ``seed``'s), in ``[0, 2**32 - 1]``.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """

    K: int = 5000
    runs: int = 4
    seed: int = 0
    n_states: int = 6
    gamma: float = 0.9
    with_pg: bool = True
    critic_cap: float | None = None
    run_seed: int | None = None

    def __post_init__(self) -> None:
        set_field(self, "K", smoke_steps(check_int("K", self.K, 10, 10**9), small=2000))
        set_field(self, "runs", check_int("runs", self.runs, 1, 1024))
        set_field(self, "seed", check_int("seed", self.seed, 0, 2**32 - 1))
        set_field(self, "n_states", check_int("n_states", self.n_states, 1, 10**4))
        gamma = check_range("gamma", self.gamma, 0.0, 1.0, low_inclusive=False)
        set_field(self, "gamma", check_range("gamma", gamma, 0.0, 1.0, high_inclusive=False))
        set_field(self, "with_pg", check_bool("with_pg", self.with_pg))
        if self.critic_cap is not None:
            set_field(self, "critic_cap", check_positive("critic_cap", self.critic_cap))
        if self.run_seed is not None:
            set_field(self, "run_seed", check_int("run_seed", self.run_seed, 0, 2**32 - 1))

    @property
    def draws(self) -> int:
        """The seed of the runs' random numbers."""
        return self.seed if self.run_seed is None else self.run_seed
