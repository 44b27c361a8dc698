"""Stragglers: the simulated clock of a round, the adaptive ``tau`` rule and its schedule.

The clock is **ours** (the paper states the rule ``tau = t_straggler / t_server`` for one
client): client ``m`` delivers its embedding after ``t_client + delay_m``, the server serves the
clients in completion order, and the early clients' ``tau`` steps overlap the straggler's delay.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive

__all__ = ["StragglerModel", "choose_tau"]


def choose_tau(t_straggler: float, t_server: float, tau_max: int) -> int:
    """The straggler-adaptive rule ``tau = clip(round(t_straggler / t_server), 1, tau_max)``.

    Parameters
    ----------
    t_straggler : float
        Time the server would otherwise wait (``>= 0``).
    t_server : float
        Time of one server ZO step (``> 0``).
    tau_max : int
        Upper clip.

    Returns
    -------
    int

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    t_straggler = check_positive("t_straggler", t_straggler, allow_zero=True)
    t_server = check_positive("t_server", t_server)
    tau_max = check_int("tau_max", tau_max, 1)
    return clip_tau(t_straggler, t_server, tau_max)


def clip_tau(t_straggler: float, t_server: float, tau_max: int) -> int:
    """:func:`choose_tau` without the checks (the schedule's per-round call)."""
    return int(min(max(round(t_straggler / t_server), 1), tau_max))


class StragglerModel:
    """Per-round client delays and the simulated round time with overlapped server steps.

    Parameters
    ----------
    mean_delays : float or array of shape ``[M]``
        Mean delay of each client (a scalar is shared by all), in clock units.
    dist : {"exp", "const"}
        Exponential delays (the paper's setting) or constant ones.
    seed : int
        Delays of round ``t`` depend only on ``(seed, t)``.
    t_client, t_server : float
        Compute time of a client forward (three embeddings) and of one server ZO step.

    Notes
    -----
    Round time: client ``m`` delivers ``h`` at ``a_m = t_client + delay_m``; the server
    takes the clients in completion order and spends ``(tau + 1) t_server`` on each (``tau``
    steps and the ``delta_c`` evaluation), starting when both it and the client's ``h`` are
    ready. The round ends when the last client's ``delta_c`` is out. The server's steps for
    early clients overlap the wait for the straggler.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """

    def __init__(
        self,
        mean_delays: Any = 0.0,
        dist: str = "exp",
        seed: int = 0,
        *,
        t_client: float = 1.0,
        t_server: float = 0.1,
    ):
        md = np.atleast_1d(np.asarray(mean_delays, dtype=float))
        if md.ndim != 1 or not np.all(np.isfinite(md)) or np.any(md < 0):
            raise ValueError(f"mean_delays must be finite and >= 0 (got {mean_delays!r})")
        self.mean_delays = md
        self.dist = check_choice("dist", dist, ["exp", "const"])
        self.seed = check_int("seed", seed, 0)
        self.t_client = check_positive("t_client", t_client, allow_zero=True)
        self.t_server = check_positive("t_server", t_server)

    def sample(self, round: int, clients: int) -> np.ndarray:
        """Delays of all ``clients`` in round ``round`` (shape ``[clients]``)."""
        round = check_int("round", round, 0)
        clients = check_int("clients", clients, 1)
        if self.mean_delays.size not in (1, clients):
            raise ValueError(
                f"mean_delays has {self.mean_delays.size} entries, expected {clients} clients"
            )
        return self.draw(round, clients)

    def draw(self, round: int, clients: int) -> np.ndarray:
        """:meth:`sample` without the checks: the engines' per-round call (arguments valid)."""
        means = self.mean_delays
        if means.size == 1:
            means = np.broadcast_to(means, (clients,))
        if self.dist == "const":
            return np.array(means, dtype=float)
        rng = np.random.default_rng([self.seed, round, 7919])
        return rng.exponential(1.0, size=clients) * means

    def round_time(self, delays: Any, tau: int) -> dict[str, float]:
        """Simulated duration of one round for the participants' ``delays``.

        Returns
        -------
        dict
            ``time`` (round duration), ``wait`` (last minus first arrival: the window the
            server can fill), ``busy`` (server compute time), ``idle`` (server idle time).
        """
        return self.clock(delays, check_int("tau", tau, 1))

    def clock(self, delays: Any, tau: int) -> dict[str, float]:
        """:meth:`round_time` without the checks: the engines' per-round call."""
        arr = np.sort(self.t_client + np.asarray(delays, dtype=float))
        finish = 0.0
        for a in arr:  # completion order; one server, (tau + 1) steps per client
            finish = max(finish, a) + (tau + 1) * self.t_server
        busy = len(arr) * (tau + 1) * self.t_server
        return {
            "time": float(finish),
            "wait": float(arr[-1] - arr[0]),
            "busy": float(busy),
            "idle": float(finish - busy),
        }


class TauSchedule:
    """The tau schedule: fixed, or adaptive from the measured straggler wait (EMA)."""

    def __init__(self, cfg: Any, t_server: float):
        self.cfg, self.tau, self.t_server, self.wait = cfg, cfg.tau, t_server, None

    def update(self, wait: float, t_server: float | None = None) -> int:
        if t_server is not None:
            self.t_server = t_server
        self.wait = wait if self.wait is None else 0.7 * self.wait + 0.3 * wait
        if self.cfg.adaptive_tau:
            # our reading: the window is shared by the P clients the server serves in it
            self.tau = clip_tau(self.wait / self.cfg.participants, self.t_server, self.cfg.tau_max)
        return self.tau
