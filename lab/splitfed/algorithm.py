"""MU-SplitFed in process: the reference loop and the vectorised fast path.

The model ``x = (x_c, x_s)`` is split after block ``cut``; parameters travel as flat vectors
and the halves are evaluated with ``torch.func.functional_call``. One global round ``t``
(Algorithm 1 of the paper, restated):

1. sample ``P`` of the ``M`` clients; each participant pulls ``x_c``;
2. client ``m`` draws a batch and a direction ``u_c`` and sends ``h, h+, h-`` (eq. C);
3. the split server takes ``tau`` ZO steps on its replica ``x_{s,m}`` using the *clean* ``h``
   (eq. S);
4. it scores ``h+`` and ``h-`` with the *updated* replica and returns the scalar ``delta_c``
   (eq. D);
5. the client steps ``x_{c,m} = x_c - eta_c delta_c / (2 lam) u_c`` (eq. U);
6. both sides aggregate with the global step ``eta_g`` (eq. A).

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "MUSplitFedConfig",
    "History",
    "StragglerModel",
    "choose_tau",
    "split_model",
    "make_mlp",
    "load_digits_clients",
    "evaluator",
    "simulate",
    "simulate_vectorized",
    "rounds_to_target",
    "retime",
]


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
        """``(eta_s, eta_c, eta_g)`` used in a round with ``tau`` server steps."""
        if self.theory_steps:
            return self.eta_c / tau, self.eta_c, math.sqrt(tau * self.participants)
        return self.eta_s, self.eta_c, self.eta_g

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


# ----------------------------------------------------------------------------------------
# models and data
# ----------------------------------------------------------------------------------------
def make_mlp(widths: tuple[int, ...] = (64, 32, 32, 10), seed: int = 0):
    """An MLP as ``nn.Sequential`` of blocks (``Linear + ReLU``, last block ``Linear``).

    Parameters
    ----------
    widths : tuple of int
        Layer widths, input first; ``len(widths) - 1`` blocks.
    seed : int
        Initialisation seed.

    Returns
    -------
    torch.nn.Sequential

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import torch
    from torch import nn

    widths = tuple(check_int(f"widths[{i}]", w, 1) for i, w in enumerate(widths))
    if len(widths) < 3:
        raise ValueError(f"widths needs at least 3 entries (2 blocks) (got {widths})")
    torch.manual_seed(check_int("seed", seed, 0))
    blocks = []
    for i in range(len(widths) - 1):
        lin = nn.Linear(widths[i], widths[i + 1])
        blocks.append(lin if i == len(widths) - 2 else nn.Sequential(lin, nn.ReLU()))
    return nn.Sequential(*blocks)


def split_model(model: Any, cut: int) -> tuple[Any, Any]:
    """Split an ``nn.Sequential`` after ``cut`` blocks: ``(client half, server half)``.

    Parameters
    ----------
    model : torch.nn.Sequential
        The full model.
    cut : int
        Blocks kept on the client, in ``[1, len(model) - 1]``.

    Returns
    -------
    (torch.nn.Sequential, torch.nn.Sequential)

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    from torch import nn

    if not isinstance(model, nn.Sequential):
        raise TypeError(f"model must be a torch.nn.Sequential (got {type(model).__name__})")
    cut = check_int("cut", cut, 1, len(model) - 1)
    return nn.Sequential(*list(model)[:cut]), nn.Sequential(*list(model)[cut:])


def load_digits_clients(
    clients: int = 10,
    *,
    split: str = "iid",
    alpha: float = 0.3,
    test_size: float = 0.25,
    seed: int = 0,
    dtype: str = "float32",
) -> dict[str, Any]:
    """scikit-learn's digits (bundled, no download), split over ``clients``.

    Parameters
    ----------
    clients : int
        Number of clients.
    split : {"iid", "dirichlet"}
        Uniform shuffle, or label proportions per client from ``Dirichlet(alpha)``.
    alpha : float
        Dirichlet concentration (only for ``split="dirichlet"``).
    test_size : float
        Held-out fraction.
    seed : int
        Seed of the split.
    dtype : {"float32", "float64"}
        Of the features (scaled to ``[0, 1]``).

    Returns
    -------
    dict
        ``clients`` (list of ``(X, y)`` tensors), ``train`` and ``test`` (``(X, y)``).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch
    from sklearn.datasets import load_digits

    clients = check_int("clients", clients, 1)
    check_choice("split", split, ["iid", "dirichlet"])
    alpha = check_positive("alpha", alpha)
    test_size = check_range(
        "test_size", test_size, 0.0, 1.0, low_inclusive=False, high_inclusive=False
    )
    seed = check_int("seed", seed, 0)
    check_choice("dtype", dtype, ["float32", "float64"])
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_test = int(round(test_size * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    if clients > len(tr):
        raise ValueError(f"clients must be <= {len(tr)} training points (got {clients})")
    if split == "iid":
        parts = np.array_split(tr, clients)
    else:
        for _ in range(100):
            parts = [[] for _ in range(clients)]
            for k in range(10):
                idx = tr[y[tr] == k]
                p = rng.dirichlet(alpha * np.ones(clients))
                cuts = (np.cumsum(p)[:-1] * len(idx)).astype(int)
                for m, chunk in enumerate(np.split(idx, cuts)):
                    parts[m].extend(chunk.tolist())
            if min(len(p) for p in parts) >= 8:
                break
        parts = [np.array(sorted(p)) for p in parts]
    dt = getattr(torch, dtype)

    def pair(idx):
        return torch.tensor(X[idx] / 16.0, dtype=dt), torch.tensor(y[idx], dtype=torch.int64)

    return {"clients": [pair(p) for p in parts], "train": pair(tr), "test": pair(te)}


# ----------------------------------------------------------------------------------------
# flat-parameter plumbing shared by the simulator, the fast path and the gloo engine
# ----------------------------------------------------------------------------------------
class _Flat:
    """Evaluate a module at a flat parameter vector (``torch.func.functional_call``)."""

    def __init__(self, module: Any):
        self.module = module
        self.names = [n for n, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        self.sizes = [p.numel() for _, p in module.named_parameters()]
        self.dim = int(sum(self.sizes))

    def init(self, dtype: Any):
        import torch

        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters()]).to(dtype)

    def __call__(self, flat: Any, x: Any):
        from torch.func import functional_call

        params, o = {}, 0
        for n, s, k in zip(self.names, self.shapes, self.sizes, strict=True):
            params[n] = flat[o : o + k].view(s)
            o += k
        return functional_call(self.module, params, (x,))


def _plain_mlp(module: Any) -> list | None:
    """``[(in, out, relu), ...]`` if ``module`` is a stack of Linear(+ReLU) blocks, else None."""
    from torch import nn

    layers = []
    for blk in module:
        mods = list(blk) if isinstance(blk, nn.Sequential) else [blk]
        for mod in mods:
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                layers.append([mod.in_features, mod.out_features, False])
            elif isinstance(mod, nn.ReLU) and layers and not layers[-1][2]:
                layers[-1][2] = True
            else:
                return None
    return layers


def _bmm_forward(layers: list, W: Any, X: Any):
    """Batched MLP: flat parameters ``W [N, d]`` on inputs ``X [N, B, in]`` -> ``[N, B, out]``.

    Parameter order as ``nn.Linear`` stores it (weight ``[out, in]`` row-major, then bias).
    """
    import torch

    o, z = 0, X
    for n_in, n_out, relu in layers:
        w = W[:, o : o + n_in * n_out].view(-1, n_out, n_in)
        o += n_in * n_out
        b = W[:, o : o + n_out]
        o += n_out
        z = torch.baddbmm(b[:, None, :], z, w.transpose(1, 2))
        if relu:
            z = z.clamp_min(0)
    return z


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


def _client_forward(fc: _Flat, xc: Any, X: Any, u: Any, lam: float):
    """eq. (C): ``h = h(x_c), h+ = h(x_c + lam u_c), h- = h(x_c - lam u_c)``."""
    return fc(xc, X), fc(xc + lam * u, X), fc(xc - lam * u, X)


def _server_steps(fs, xs, h, y, cfg, t, m, tau, eta_s, on_step=None):
    """eq. (S): ``tau`` ZO steps on the replica ``x_{s,m}`` with the clean ``h``."""
    lam = cfg.lam
    us = _server_directions(cfg, t, m, tau, fs.dim, xs.dtype).to(xs.device)
    for i in range(tau):
        u = us[i]
        delta = _loss(fs(xs + lam * u, h), y) - _loss(fs(xs - lam * u, h), y)
        xs = xs - eta_s * (delta / (2 * lam)) * u  # x_s^{i+1} = x_s^i - eta_s delta/(2 lam) u_s
        if on_step is not None:
            on_step(i)
    return xs


def _client_delta(fs, xs_tau, hp, hm, y):
    """eq. (D): ``delta_c = F(x_s^tau; h+, y) - F(x_s^tau; h-, y)`` with the updated server."""
    return _loss(fs(xs_tau, hp), y) - _loss(fs(xs_tau, hm), y)


def _aggregate(x, updates, eta_g):
    """eq. (A): ``x <- x + eta_g sum_m w_m (x_m - x)``, ``w_m = 1 / |updates|``."""
    if not updates:
        return x
    w = 1.0 / len(updates)
    step = sum(w * (xm - x) for xm in updates)
    return x + eta_g * step


def _bytes(cfg, dc, hdim, itemsize, n):
    up = n * (3 * cfg.batch * hdim * itemsize + cfg.batch * 8 + dc * itemsize)
    down = n * (dc * itemsize + itemsize)
    return up, down


def evaluator(client_net: Any, server_net: Any, train: Any, test: Any):
    """``eval_fn(xc, xs) -> {"loss": train loss, "acc": test accuracy}`` for the split model.

    Parameters
    ----------
    client_net, server_net : torch.nn.Module
        The two halves (their own parameters are ignored; flat vectors are passed in).
    train, test : tuple of tensors
        ``(X, y)`` pairs.

    Returns
    -------
    callable

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch

    fc, fs = _Flat(client_net), _Flat(server_net)

    def eval_fn(xc, xs):
        with torch.no_grad():
            Xtr, ytr = train[0].to(xc.dtype), train[1]
            Xte, yte = test[0].to(xc.dtype), test[1]
            loss = float(_loss(fs(xs, fc(xc, Xtr)), ytr))
            acc = float((fs(xs, fc(xc, Xte)).argmax(1) == yte).double().mean())
        return {"loss": loss, "acc": acc}

    return eval_fn


def _check_inputs(client_net, server_net, client_datasets, cfg):
    from torch import nn

    if not isinstance(cfg, MUSplitFedConfig):
        raise TypeError(f"cfg must be a MUSplitFedConfig (got {type(cfg).__name__})")
    for name, net in (("client_net", client_net), ("server_net", server_net)):
        if not isinstance(net, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module (got {type(net).__name__})")
    if not isinstance(client_datasets, list | tuple) or len(client_datasets) < cfg.clients:
        n = len(client_datasets) if isinstance(client_datasets, list | tuple) else None
        raise ValueError(
            f"client_datasets must hold at least cfg.clients = {cfg.clients} (X, y) pairs (got {n})"
        )


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


# ----------------------------------------------------------------------------------------
# the reference loop
# ----------------------------------------------------------------------------------------
def simulate(
    client_net: Any,
    server_net: Any,
    client_datasets: Any,
    cfg: MUSplitFedConfig,
    eval_fn: Any = None,
    *,
    straggler: StragglerModel | None = None,
    failures: dict[int, int] | None = None,
    stop_loss: float | None = None,
    progress: bool = False,
) -> History:
    """MU-SplitFed in one process, client by client: the **reference kernel**.

    Parameters
    ----------
    client_net, server_net : torch.nn.Module
        The halves from :func:`split_model` (their parameters are the initial point).
    client_datasets : list of ``(X, y)``
        At least ``cfg.clients`` tensor pairs.
    cfg : MUSplitFedConfig
        Hyper-parameters.
    eval_fn : callable, optional
        ``eval_fn(xc, xs) -> dict`` with ``loss`` and/or ``acc`` (see :func:`evaluator`), run
        every ``cfg.eval_every`` rounds and after the last.
    straggler : StragglerModel, optional
        Delay model of the simulated clock (default: from ``cfg.delay_mean``).
    failures : dict, optional
        ``{client: round}``: the client disappears from that round on (its update of that
        round is lost, the others are kept); mirrors a killed process in :func:`launch_local`.
    progress : bool
        Show a progress bar.

    Returns
    -------
    History

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch

    _check_inputs(client_net, server_net, client_datasets, cfg)
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
    dt = getattr(torch, cfg.dtype)
    fc, fs = _Flat(client_net), _Flat(server_net)
    xc, xs = fc.init(dt), fs.init(dt)
    data = [(X.to(dt), y) for X, y in client_datasets[: cfg.clients]]
    straggler = straggler or StragglerModel(
        cfg.delay_mean or 0.0, seed=cfg.seed, t_client=cfg.t_client, t_server=cfg.t_server
    )
    failures = dict(failures or {})
    sched = _Tau(cfg, straggler.t_server)
    hist, clock = History(), 0.0
    hist.info["engine"] = "simulate"
    from lab.core.progress import progress as _progress

    t0 = time.perf_counter()
    with torch.no_grad():
        for t in _progress(range(cfg.rounds), desc=f"tau={cfg.tau}", disable=not progress):
            tau = sched.tau
            eta_s, eta_c, eta_g = cfg.steps(tau)
            alive = [m for m in range(cfg.clients) if failures.get(m, cfg.rounds + 1) > t]
            dead_now = [m for m, r in failures.items() if r == t]
            pool = None if len(alive) + len(dead_now) == cfg.clients else alive + dead_now
            part = _participants(cfg, t, None if pool is None else sorted(pool))
            new_c, new_s, losses, hdim = [], [], [], 0
            for m in part:
                if m in dead_now:  # the process dies before sending anything
                    continue
                X, y = data[m]
                idx = torch.as_tensor(_batch(cfg, t, m, len(y)))
                Xb, yb = X[idx], y[idx]
                u_c = _client_direction(cfg, t, m, fc.dim, dt)
                h, hp, hm = _client_forward(fc, xc, Xb, u_c, cfg.lam)  # eq. (C)
                hdim = h.shape[1]
                xs_m = _server_steps(fs, xs, h, yb, cfg, t, m, tau, eta_s)  # eq. (S)
                delta_c = _client_delta(fs, xs_m, hp, hm, yb)  # eq. (D)
                new_c.append(xc - eta_c * (delta_c / (2 * cfg.lam)) * u_c)  # eq. (U)
                new_s.append(xs_m)
                losses.append(float(_loss(fs(xs, h), yb)))
            xc = _aggregate(xc, new_c, eta_g)  # eq. (A), fed server
            xs = _aggregate(xs, new_s, eta_g)  # eq. (A), split server
            delays = straggler.sample(t, cfg.clients)[[m for m in part if m not in dead_now]]
            rt = straggler.round_time(delays if len(delays) else np.zeros(1), tau)
            clock += rt["time"]
            up, down = _bytes(cfg, fc.dim, hdim, xc.element_size(), len(new_c))
            _record(hist, tau, clock, losses, up, down, tau * len(new_c), part, dead_now)
            sched.update(rt["wait"])
            _maybe_eval(hist, eval_fn, cfg, t, xc, xs)
            if stop_loss is not None and hist.loss and hist.loss[-1] <= stop_loss:
                break
    hist.xc, hist.xs = xc, xs
    hist.lost = sorted(failures)
    hist.info["seconds"] = time.perf_counter() - t0
    return hist


def _record(hist, tau, clock, losses, up, down, steps, part, dead):
    hist.tau.append(tau)
    hist.clock.append(clock)
    hist.batch_loss.append(float(np.mean(losses)) if losses else float("nan"))
    hist.bytes_up.append(up)
    hist.bytes_down.append(down)
    hist.server_steps.append(steps)
    hist.participants.append([m for m in part if m not in dead])


def _maybe_eval(hist, eval_fn, cfg, t, xc, xs):
    if eval_fn is None or not ((t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds):
        return
    res = eval_fn(xc, xs)
    hist.eval_round.append(t + 1)
    hist.loss.append(float(res.get("loss", float("nan"))))
    hist.acc.append(float(res.get("acc", float("nan"))))


# ----------------------------------------------------------------------------------------
# the fast path: all participants and all +/- perturbations in one batched call
# ----------------------------------------------------------------------------------------
def simulate_vectorized(
    client_net: Any,
    server_net: Any,
    client_datasets: Any,
    cfg: MUSplitFedConfig,
    eval_fn: Any = None,
    *,
    straggler: StragglerModel | None = None,
    device: Any = None,
    backend: str = "auto",
    stop_loss: float | None = None,
    progress: bool = False,
) -> History:
    """The same rounds as :func:`simulate`, batched over clients and perturbations: the **fast path**.

    Per round, one batched call evaluates the ``3P`` client forwards (participants x
    ``{0, +, -}``), each of the ``tau`` server steps evaluates the ``2P`` perturbed losses of
    all replicas at once, and one call scores all ``h+`` / ``h-``. Directions and batches come
    from the same seeds as the reference, so the two agree to rounding.

    Parameters
    ----------
    client_net, server_net, client_datasets, cfg, eval_fn, straggler
        As in :func:`simulate`.
    device : str or torch.device, optional
        Where to run (default: ``lab.device()``, so CUDA when available).
    stop_loss : float, optional
        Stop after the first evaluation whose ``loss`` is ``<= stop_loss``.
    backend : {"auto", "vmap", "bmm"}
        ``vmap``: ``torch.func.vmap`` of ``functional_call`` (any module); ``bmm``: a batched
        matmul forward for stacks of ``Linear``/``ReLU`` blocks (faster on CPU); ``auto``:
        ``bmm`` when both halves are such stacks.
    progress : bool
        Show a progress bar.

    Returns
    -------
    History

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch
    from torch.func import vmap

    import lab

    _check_inputs(client_net, server_net, client_datasets, cfg)
    check_choice("backend", backend, ["auto", "vmap", "bmm"])
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
    dev = torch.device(device) if device is not None else lab.device()
    dt = getattr(torch, cfg.dtype)
    fc, fs = _Flat(client_net), _Flat(server_net)
    lc, ls = _plain_mlp(client_net), _plain_mlp(server_net)
    if backend == "bmm" and (lc is None or ls is None):
        raise ValueError("backend='bmm' needs both halves to be stacks of Linear/ReLU blocks")
    if backend == "auto":
        backend = "bmm" if lc is not None and ls is not None else "vmap"
    if backend == "bmm":

        def client_fwd(W, X):  # [N, d_c], [N, B, in] -> [N, B, H]
            return _bmm_forward(lc, W, X)

        def server_loss(W, H, y):  # [N, d_s], [N, B, H], [N, B] -> [N]
            return _loss_b(_bmm_forward(ls, W, H), y)

    else:
        client_fwd = vmap(fc)
        server_loss = vmap(lambda w, h, y: _loss(fs(w, h), y))
    xc, xs = fc.init(dt).to(dev), fs.init(dt).to(dev)
    data = [(X.to(dev, dt), y.to(dev)) for X, y in client_datasets[: cfg.clients]]
    straggler = straggler or StragglerModel(
        cfg.delay_mean or 0.0, seed=cfg.seed, t_client=cfg.t_client, t_server=cfg.t_server
    )
    sched = _Tau(cfg, straggler.t_server)
    lam = cfg.lam
    sign = torch.tensor([0.0, 1.0, -1.0], dtype=dt, device=dev)
    pm = sign[1:]
    hist, clock = History(), 0.0
    hist.info["engine"] = f"simulate_vectorized[{backend}]"
    from lab.core.progress import progress as _progress

    t0 = time.perf_counter()
    with torch.no_grad():
        for t in _progress(range(cfg.rounds), desc=f"tau={cfg.tau}", disable=not progress):
            tau = sched.tau
            eta_s, eta_c, eta_g = cfg.steps(tau)
            part = _participants(cfg, t)
            P = len(part)
            idx = [torch.as_tensor(_batch(cfg, t, m, len(data[m][1])), device=dev) for m in part]
            Xb = torch.stack([data[m][0][i] for m, i in zip(part, idx, strict=True)])
            yb = torch.stack([data[m][1][i] for m, i in zip(part, idx, strict=True)])
            y2 = yb.repeat_interleave(2, 0)
            U = torch.stack([_client_direction(cfg, t, m, fc.dim, dt) for m in part]).to(dev)
            W = (xc[None, None] + lam * sign[None, :, None] * U[:, None]).reshape(3 * P, -1)
            H = client_fwd(W, Xb.repeat_interleave(3, 0)).view(P, 3, cfg.batch, -1)  # eq. (C)
            h = H[:, 0]
            losses = server_loss(xs.expand(P, -1), h, yb).tolist()
            h2 = h.repeat_interleave(2, 0)
            xs_rep = xs.expand(P, -1)
            Uall = torch.stack([_server_directions(cfg, t, m, tau, fs.dim, dt) for m in part])
            Uall = Uall.to(dev)
            for i in range(tau):  # eq. (S), all replicas at once, clean h
                Us = Uall[:, i]
                Ws = (xs_rep[:, None] + lam * pm[None, :, None] * Us[:, None]).reshape(2 * P, -1)
                L = server_loss(Ws, h2, y2).view(P, 2)
                xs_rep = xs_rep - eta_s * ((L[:, 0] - L[:, 1]) / (2 * lam))[:, None] * Us
            Ws = xs_rep.repeat_interleave(2, 0)
            L = server_loss(Ws, H[:, 1:].reshape(2 * P, cfg.batch, -1), y2).view(P, 2)  # eq. (D)
            delta_c = L[:, 0] - L[:, 1]
            xc_new = xc[None] - eta_c * (delta_c / (2 * lam))[:, None] * U  # eq. (U)
            xc = xc + eta_g * (xc_new - xc[None]).mean(0)  # eq. (A)
            xs = xs + eta_g * (xs_rep - xs[None]).mean(0)
            delays = straggler.sample(t, cfg.clients)[part]
            rt = straggler.round_time(delays, tau)
            clock += rt["time"]
            up, down = _bytes(cfg, fc.dim, h.shape[2], xc.element_size(), P)
            _record(hist, tau, clock, losses, up, down, tau * P, part, [])
            sched.update(rt["wait"])
            _maybe_eval(hist, eval_fn, cfg, t, xc, xs)
            if stop_loss is not None and hist.loss and hist.loss[-1] <= stop_loss:
                break
    hist.xc, hist.xs = xc, xs
    hist.info["seconds"] = time.perf_counter() - t0
    return hist


def _loss_b(logits: Any, y: Any):
    """Per-row mean cross-entropy: ``[N, B, C]``, ``[N, B]`` -> ``[N]``."""
    return -logits.log_softmax(-1).gather(-1, y[..., None]).squeeze(-1).mean(-1)


def rounds_to_target(hist: History, target: float, *, key: str = "loss", below: bool = True):
    """First evaluation round (and clock) at which ``key`` reaches ``target``.

    Parameters
    ----------
    hist : History
        A run with evaluations.
    target : float
        Threshold.
    key : {"loss", "acc"}
        Which evaluation.
    below : bool
        ``True``: first ``value <= target`` (loss); ``False``: first ``value >= target``.

    Returns
    -------
    (int or None, float or None)
        Round and simulated time; ``None`` when never reached.

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    if not isinstance(hist, History):
        raise TypeError(f"hist must be a History (got {type(hist).__name__})")
    check_choice("key", key, ["loss", "acc"])
    target = check_real("target", target)
    vals = np.asarray(getattr(hist, key), dtype=float)
    hit = vals <= target if below else vals >= target
    if not hit.any():
        return None, None
    r = int(hist.eval_round[int(np.argmax(hit))])
    return r, float(hist.clock[r - 1])


def retime(hist: History, straggler: StragglerModel, clients: int) -> np.ndarray:
    """The simulated clock of a run's rounds under another delay model.

    With a fixed ``tau`` the parameters do not depend on the delays, only the clock does, so
    one run can be re-timed for any straggler model (not valid for adaptive ``tau``).

    Parameters
    ----------
    hist : History
        A run (uses ``hist.tau`` and ``hist.participants``).
    straggler : StragglerModel
        The delay model.
    clients : int
        ``M`` (delays are drawn for all clients, then the participants picked).

    Returns
    -------
    numpy.ndarray
        Cumulative time at the end of each round.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    if not isinstance(hist, History):
        raise TypeError(f"hist must be a History (got {type(hist).__name__})")
    if not isinstance(straggler, StragglerModel):
        raise TypeError(f"straggler must be a StragglerModel (got {type(straggler).__name__})")
    clients = check_int("clients", clients, 1)
    out, clock = [], 0.0
    for t, (tau, part) in enumerate(zip(hist.tau, hist.participants, strict=True)):
        d = straggler.sample(t, clients)[list(part)] if part else np.zeros(1)
        clock += straggler.round_time(d, int(tau))["time"]
        out.append(clock)
    return np.asarray(out)
