"""MU-SplitFed's objects: the configuration, the run record, the straggler clock and the seeds.

The seeded draws (participants, batches, directions) are functions of ``(seed, round, client)``
only, so that the reference loop (:mod:`lab.splitfed.reference`), the batched fast path
(:mod:`lab.splitfed.fast`) and the gloo processes (:mod:`lab.splitfed.dist`) draw the same
numbers.

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = ["MUSplitFedConfig", "History", "StragglerModel", "choose_tau"]


# ----------------------------------------------------------------------------------------
# configuration and records
# ----------------------------------------------------------------------------------------
@dataclass
class MUSplitFedConfig:
    """Hyper-parameters of MU-SplitFed (defaults: the paper's Table 6 on the digits MLP).

    Parameters
    ----------
    tau : int
        Server steps per client round (``tau = 1`` is vanilla ZO SplitFed).
    lam : float
        ZO perturbation size ``lam > 0``.
    eta_s, eta_c, eta_g : float
        Server, client and global step sizes.
    batch : int
        Client batch size ``B``.
    clients : int
        Number of clients ``M``.
    participation : float
        Fraction in ``(0, 1]`` of clients sampled per round (``P = round(M * participation)``).
    rounds : int
        Global rounds ``T``.
    theory_steps : bool
        Use the theory's coupling ``eta_s = eta_c / tau`` and ``eta_g = sqrt(tau P)``
        (Corollary 4.4 with the ``P`` participants in place of ``M``) instead of the fixed values.
    adaptive_tau : bool
        Set ``tau`` each round from the measured straggler wait (:func:`choose_tau`).
    tau_max : int
        Upper clip of the adaptive ``tau``.
    tau_ref : int or None
        The server's step budget per round, in steps of ``eta_s``: a round with ``tau > tau_ref``
        server steps takes each step with ``eta_s * tau_ref / tau``, so that the server's
        movement per round, ``eta_s * tau``, never exceeds ``eta_s * tau_ref``. The paper ties
        the two together (Theorem 4.1: ``eta_s = eta_c / tau``; Theorem 4.3:
        ``eta <= 1/(L tau sqrt(d T))``); without the cap a large (adaptive) ``tau`` at a fixed
        ``eta_s`` inflates the server weights with zeroth-order noise and the run diverges
        after a few hundred rounds (the chapter's adaptive run: loss ``5.6e34`` at round 800).
        ``None``: every step uses ``eta_s`` (the old behaviour, kept to show the divergence).
        Ignored with ``theory_steps``, which couples the steps already.
    delay_mean : float or None
        Mean exponential straggler delay per client and round, in units of one client
        forward (``None``: no delays).
    seed : int
        Seeds every draw (batches, directions, participation, delays).
    eval_every : int
        Rounds between evaluations by ``eval_fn``.
    dtype : {"float32", "float64"}
        Precision of parameters and activations.
    t_client, t_server : float
        Simulated compute time of one client forward pass and of one server ZO step
        (the clock unit is one client forward).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """

    tau: int = 2
    lam: float = 5e-3
    eta_s: float = 0.01
    eta_c: float = 0.005
    eta_g: float = 0.3
    batch: int = 32
    clients: int = 10
    participation: float = 0.5
    rounds: int = 600
    theory_steps: bool = False
    adaptive_tau: bool = False
    tau_max: int = 16
    tau_ref: int | None = 4
    delay_mean: float | None = None
    seed: int = 0
    eval_every: int = 10
    dtype: str = "float32"
    t_client: float = 1.0
    t_server: float = 0.1

    def __post_init__(self) -> None:
        self.tau = check_int("tau", self.tau, 1)
        self.lam = check_positive("lam", self.lam)
        self.eta_s = check_positive("eta_s", self.eta_s, allow_zero=True)
        self.eta_c = check_positive("eta_c", self.eta_c, allow_zero=True)
        self.eta_g = check_positive("eta_g", self.eta_g, allow_zero=True)
        self.batch = check_int("batch", self.batch, 1)
        self.clients = check_int("clients", self.clients, 1)
        self.participation = check_range(
            "participation", self.participation, 0.0, 1.0, low_inclusive=False
        )
        self.rounds = check_int("rounds", self.rounds, 0)
        self.theory_steps = check_bool("theory_steps", self.theory_steps)
        self.adaptive_tau = check_bool("adaptive_tau", self.adaptive_tau)
        self.tau_max = check_int("tau_max", self.tau_max, 1)
        if self.tau_ref is not None:
            self.tau_ref = check_int("tau_ref", self.tau_ref, 1)
        if self.delay_mean is not None:
            self.delay_mean = check_positive("delay_mean", self.delay_mean, allow_zero=True)
        self.seed = check_int("seed", self.seed, 0)
        self.eval_every = check_int("eval_every", self.eval_every, 1)
        check_choice("dtype", self.dtype, ["float32", "float64"])
        self.t_client = check_positive("t_client", self.t_client, allow_zero=True)
        self.t_server = check_positive("t_server", self.t_server)

    @property
    def participants(self) -> int:
        """``P``: clients sampled per round (at least 1)."""
        return max(1, int(round(self.clients * self.participation)))

    def steps(self, tau: int) -> tuple[float, float, float]:
        """``(eta_s, eta_c, eta_g)`` used in a round with ``tau`` server steps.

        With ``theory_steps``: ``eta_s = eta_c / tau`` and ``eta_g = sqrt(tau P)``; otherwise
        ``eta_s * min(1, tau_ref / tau)`` (the per-round budget, see ``tau_ref``), ``eta_c``
        and ``eta_g``.
        """
        tau = check_int("tau", tau, 1)
        if self.theory_steps:
            return self.eta_c / tau, self.eta_c, math.sqrt(tau * self.participants)
        eta_s = self.eta_s
        if self.tau_ref is not None and tau > self.tau_ref:
            eta_s = (
                eta_s * self.tau_ref / tau
            )  # deviation: the budget eta_s * tau <= eta_s * tau_ref
        return eta_s, self.eta_c, self.eta_g

    def replace(self, **changes: Any) -> MUSplitFedConfig:
        """A copy with some fields changed (validated again)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"unknown MUSplitFedConfig fields: {sorted(unknown)}")
        values.update(changes)
        return MUSplitFedConfig(**values)


@dataclass
class History:
    """What a run recorded, one entry per round unless stated.

    Attributes
    ----------
    tau, clock, batch_loss, bytes_up, bytes_down, server_steps, participants : list
        Per round: the ``tau`` used, the (simulated or measured) time at the end of the round,
        the mean participant batch loss, bytes sent up / down, server ZO steps taken, and the
        client indices that were aggregated.
    eval_round, loss, acc : list
        Rounds at which ``eval_fn`` ran and its ``loss`` / ``acc`` values.
    xc, xs : torch.Tensor
        Final flat client and server parameters.
    lost : list
        Clients (0-based) that were lost during the run (distributed engine).
    events : list
        Timeline records ``(who, what, round, start, end)`` (distributed engine).
    info : dict
        Anything else (wall time, engine, world size).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """

    tau: list = field(default_factory=list)
    clock: list = field(default_factory=list)
    batch_loss: list = field(default_factory=list)
    bytes_up: list = field(default_factory=list)
    bytes_down: list = field(default_factory=list)
    server_steps: list = field(default_factory=list)
    participants: list = field(default_factory=list)
    eval_round: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    xc: Any = None
    xs: Any = None
    lost: list = field(default_factory=list)
    events: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The per-round and per-evaluation lists as numpy arrays."""
        keys = ["tau", "clock", "batch_loss", "bytes_up", "bytes_down", "server_steps"]
        keys += ["eval_round", "loss", "acc"]
        return {k: np.asarray(getattr(self, k), dtype=float) for k in keys}


# ----------------------------------------------------------------------------------------
# stragglers and the adaptive tau
# ----------------------------------------------------------------------------------------
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
        means = (
            np.broadcast_to(self.mean_delays, (clients,)) if self.mean_delays.size == 1 else None
        )
        if means is None:
            if self.mean_delays.size != clients:
                raise ValueError(
                    f"mean_delays has {self.mean_delays.size} entries, expected {clients} clients"
                )
            means = self.mean_delays
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
        tau = check_int("tau", tau, 1)
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


class _Tau:
    """The tau schedule: fixed, or adaptive from the measured straggler wait (EMA)."""

    def __init__(self, cfg: MUSplitFedConfig, t_server: float):
        self.cfg, self.tau, self.t_server, self.wait = cfg, cfg.tau, t_server, None

    def update(self, wait: float, t_server: float | None = None) -> int:
        if t_server is not None:
            self.t_server = t_server
        self.wait = wait if self.wait is None else 0.7 * self.wait + 0.3 * wait
        if self.cfg.adaptive_tau:
            # our reading: the window is shared by the P clients the server serves in it
            self.tau = choose_tau(
                self.wait / self.cfg.participants, self.t_server, self.cfg.tau_max
            )
        return self.tau


def _loss(logits: Any, y: Any):
    """Mean cross-entropy, written with ``log_softmax`` + ``gather`` (fast under vmap)."""
    return -logits.log_softmax(-1).gather(-1, y[..., None]).mean()


def _participants(cfg: MUSplitFedConfig, t: int, available: list[int] | None = None) -> list[int]:
    """Clients sampled in round ``t`` (sorted); ``available`` restricts the pool."""
    pool = list(range(cfg.clients)) if available is None else list(available)
    k = min(cfg.participants, len(pool))
    rng = np.random.default_rng([cfg.seed, t, 104729])
    return sorted(int(pool[i]) for i in rng.choice(len(pool), size=k, replace=False))


def _batch(cfg: MUSplitFedConfig, t: int, m: int, n: int) -> np.ndarray:
    rng = np.random.default_rng([cfg.seed, t, m, 1])
    return rng.choice(n, size=cfg.batch, replace=n < cfg.batch)


def _sphere_rows(rng: np.random.Generator, shape: tuple, dtype: Any):
    """Rows uniform on the ``sqrt(d)``-sphere, drawn in float64 by numpy (fast) -> torch."""
    import torch

    g = rng.standard_normal(shape)
    g *= np.sqrt(shape[-1]) / np.linalg.norm(g, axis=-1, keepdims=True)
    return torch.from_numpy(g).to(dtype)


def _client_direction(cfg: MUSplitFedConfig, t: int, m: int, d: int, dtype: Any):
    """``u_c`` of client ``m`` in round ``t``: seeded by ``(seed, t, m)``, never sent."""
    return _sphere_rows(np.random.default_rng([cfg.seed, t, m, 2]), (d,), dtype)


def _server_directions(cfg: MUSplitFedConfig, t: int, m: int, tau: int, d: int, dtype: Any):
    """``u_s^{t,0..tau-1}`` of replica ``m`` in round ``t`` (shape ``[tau, d]``)."""
    return _sphere_rows(np.random.default_rng([cfg.seed, t, m, 3]), (tau, d), dtype)


def _bytes(cfg, dc, hdim, itemsize, n):
    up = n * (3 * cfg.batch * hdim * itemsize + cfg.batch * 8 + dc * itemsize)
    down = n * (dc * itemsize + itemsize)
    return up, down
