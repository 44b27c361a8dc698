"""Drivers the notebooks call: runs on the digits MLP, rounds/time to a target, re-timing,
the straggler study and the first-order FedAvg peer.

Every driver takes a frozen settings object (validated once, where it is built) and caches its
runs on disk (:func:`lab.core.diskcache.disk_memo`); seed loops go through
:func:`lab.core.sweep.sweep`.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_real,
)
from lab.core.diskcache import disk_memo

from .history import History
from .hyperparams import MUSplitFedConfig
from .stragglers import StragglerModel

__all__ = [
    "DigitsRun",
    "StragglerStudy",
    "simulate_digits",
    "simulate_digits_seeds",
    "straggler_runs",
    "paired_times",
    "fedavg_rounds",
    "rounds_to_target",
    "retime",
    "fedavg_first_order",
]


@dataclass(frozen=True)
class DigitsRun:
    """One simulated MU-SplitFed run on the chapter's digits MLP (validated once, here).

    Parameters
    ----------
    cfg : MUSplitFedConfig
        The algorithm's hyper-parameters (its ``seed`` seeds the run's draws).
    widths : tuple of int
        The MLP's layer sizes.
    cut : int
        Blocks on the client.
    model_seed, data_seed : int
        Seeds of the initial model and of the data split over 10 clients.
    standardize : bool
        Standardise the digits' features (:func:`load_digits_clients`).
    backend : {"auto", "vmap", "bmm"}
        The fast path's batched forward.

    See: book/splitfed/02-unbalanced-updates.ipynb
    """

    cfg: MUSplitFedConfig = field(default_factory=MUSplitFedConfig)
    widths: tuple[int, ...] = (64, 32, 32, 10)
    cut: int = 1
    model_seed: int = 0
    data_seed: int = 0
    standardize: bool = False
    backend: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.cfg, MUSplitFedConfig):
            raise TypeError(f"cfg must be a MUSplitFedConfig (got {type(self.cfg).__name__})")
        widths = tuple(check_int("widths", w, 1) for w in self.widths)
        if len(widths) < 3:
            raise ValueError(f"widths must name at least 3 layer sizes (got {self.widths!r})")
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "cut", check_int("cut", self.cut, 1, len(widths) - 2))
        object.__setattr__(self, "model_seed", check_int("model_seed", self.model_seed, 0))
        object.__setattr__(self, "data_seed", check_int("data_seed", self.data_seed, 0))
        check_bool("standardize", self.standardize)
        check_choice("backend", self.backend, ["auto", "vmap", "bmm"])

    def replace(self, **changes: Any) -> DigitsRun:
        """A copy with some fields changed; ``cfg``'s own fields may be named too."""
        own = {k: v for k, v in changes.items() if k in self.__dataclass_fields__}
        cfg = self.cfg.replace(**{k: v for k, v in changes.items() if k not in own})
        return DigitsRun(**{**self.__dict__, "cfg": cfg, **own})


def _digits(settings: DigitsRun):
    from .models import evaluator, load_digits_clients, make_mlp, split_model

    data = load_digits_clients(10, seed=settings.data_seed, standardize=settings.standardize)
    client_net, server_net = split_model(
        make_mlp(settings.widths, seed=settings.model_seed), settings.cut
    )
    eval_fn = evaluator(client_net, server_net, data["train"], data["test"])
    return data, client_net, server_net, eval_fn


@disk_memo
def _simulate_digits(settings: DigitsRun, device: str) -> History:
    from . import fast

    data, client_net, server_net, eval_fn = _digits(settings)
    return fast.simulate(
        client_net, server_net, data["clients"], settings.cfg, eval_fn,
        device=device, backend=settings.backend,
    )  # fmt: skip


def simulate_digits(settings: DigitsRun, device: Any = None) -> History:
    """The fast path's run of ``settings`` (cached on disk).

    Parameters
    ----------
    settings : DigitsRun
        The run.
    device : str or torch.device, optional
        Where to run (default: ``lab.device()``).

    Returns
    -------
    History

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    from lab.core.runtime import resolve_device

    check_instance("settings", settings, DigitsRun)
    return _simulate_digits(settings, str(resolve_device(device)))


def _seeded(settings: DigitsRun, seed: int) -> DigitsRun:
    return settings.replace(seed=seed, model_seed=seed, data_seed=seed)


@disk_memo
def _simulate_digits_seeds(settings: DigitsRun, seeds: tuple, device: str) -> list:
    from . import fast

    runs = []
    for seed in seeds:
        one = _seeded(settings, seed)
        data, client_net, server_net, eval_fn = _digits(one)
        runs.append((client_net, server_net, data["clients"], one.cfg, eval_fn))
    return fast.simulate_seeds(runs, device=device, backend=settings.backend)


def simulate_digits_seeds(settings: DigitsRun, seeds: Any, device: Any = None) -> dict:
    """``settings`` run once per seed, all seeds in the same tensor operations (cached on disk).

    Seed ``s`` sets the run's draws, the initial model and the data split (``cfg.seed``,
    ``model_seed`` and ``data_seed`` all ``s``), so seed ``s``'s run is the one
    :func:`simulate_digits` computes for those settings, to rounding.

    Parameters
    ----------
    settings : DigitsRun
        The run (a fixed ``tau``: no adaptive ``tau``, delays or ``stop_loss``).
    seeds : sequence of int
        Distinct seeds (the notebook's ``lab.seeds(...)``).
    device : str or torch.device, optional
        Where to run (default: ``lab.device()``).

    Returns
    -------
    dict
        ``{seed: History}`` in the order of ``seeds``.

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    from lab.core.runtime import resolve_device

    check_instance("settings", settings, DigitsRun)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers (got {type(seeds).__name__})")
    seeds = tuple(check_int("seeds", s, 0) for s in seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct integers >= 0, at least one (got {seeds})")
    hists = _simulate_digits_seeds(settings, seeds, str(resolve_device(device)))
    return dict(zip(seeds, hists, strict=True))


@dataclass(frozen=True)
class StragglerStudy:
    """Notebook 3's straggler study: fixed ``tau`` against adaptive ``tau`` under delays.

    Parameters
    ----------
    run : DigitsRun
        The base run (its ``cfg`` gives the steps, rounds, ``eval_every``, seed and clock).
    delays : tuple of float
        Mean exponential delays per client and round (client forwards).
    target : float
        Training loss of the time-to-target.
    tau_max : int
        Upper clip of the adaptive ``tau``.
    vanilla_factor : int
        Vanilla (``tau = 1``) runs up to ``vanilla_factor`` times the rounds, until the target.
    paired_delay : float
        The mean delay of the seed-paired comparison.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """

    run: DigitsRun = field(default_factory=DigitsRun)
    delays: tuple[float, ...] = (1.0, 2.0, 4.0)
    target: float = 2.0
    tau_max: int = 16
    vanilla_factor: int = 5
    paired_delay: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.run, DigitsRun):
            raise TypeError(f"run must be a DigitsRun (got {type(self.run).__name__})")
        delays = tuple(check_positive("delays", d, allow_zero=True) for d in self.delays)
        if not delays:
            raise ValueError("delays must hold at least one mean delay")
        object.__setattr__(self, "delays", delays)
        object.__setattr__(self, "target", check_real("target", self.target))
        object.__setattr__(self, "tau_max", check_int("tau_max", self.tau_max, 1))
        object.__setattr__(
            self, "vanilla_factor", check_int("vanilla_factor", self.vanilla_factor, 1)
        )
        p = check_positive("paired_delay", self.paired_delay, allow_zero=True)
        object.__setattr__(self, "paired_delay", p)

    def fixed(self, tau: int, seed: int) -> DigitsRun:
        """A fixed-``tau`` run without delays (re-timed for any delay); vanilla to the target."""
        rounds = self.run.cfg.rounds * (self.vanilla_factor if tau == 1 else 1)
        stop = self.target if tau == 1 else None
        return self.run.replace(tau=tau, rounds=rounds, stop_loss=stop, seed=seed)

    def adaptive(self, delay: float, seed: int, stop: bool = False) -> DigitsRun:
        """An adaptive-``tau`` run under mean delay ``delay`` (to the target with ``stop``)."""
        return self.run.replace(
            tau=1, adaptive_tau=True, tau_max=self.tau_max, delay_mean=delay, seed=seed,
            stop_loss=self.target if stop else None,
        )  # fmt: skip

    def clock(self, delay: float, seed: int) -> StragglerModel:
        cfg = self.run.cfg
        return StragglerModel(delay, seed=seed, t_client=cfg.t_client, t_server=cfg.t_server)


def _time_to_target(hist: History, clock: np.ndarray, target: float):
    r = np.asarray(hist.eval_round)
    hit = np.nonzero(np.asarray(hist.loss) <= target)[0]
    return (float(clock[r[hit[0]] - 1]) if len(hit) else float("nan")), clock[r - 1]


def straggler_runs(study: StragglerStudy, device: Any = None) -> dict[str, Any]:
    """Fixed ``tau = 1, 4`` and adaptive ``tau`` at every delay, on the study's first seed.

    Returns
    -------
    dict
        ``fixed`` and ``adaptive`` (``{tau or delay: History}``), and per delay ``curves``
        (``{label: (clock, loss)}``), ``ttt`` (time to the target, NaN if never) and ``ends``
        (the clock at the end of each run).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    check_instance("study", study, StragglerStudy)
    seed = study.run.cfg.seed
    fixed = {tau: simulate_digits(study.fixed(tau, seed), device) for tau in (1, 4)}
    out = {"fixed": fixed, "adaptive": {}, "curves": {}, "ttt": {}, "ends": {}}
    for D in study.delays:
        out["adaptive"][D] = h = simulate_digits(study.adaptive(D, seed), device)
        sm = study.clock(D, seed)
        out["curves"][D], out["ttt"][D], out["ends"][D] = {}, {}, {}
        for label, run in [("τ = 1 (vanilla)", fixed[1]), ("τ = 4", fixed[4]), ("adaptive τ", h)]:
            clock = retime(run, sm, 10) if run is not h else np.asarray(h.clock)
            out["ttt"][D][label], at_evals = _time_to_target(run, clock, study.target)
            out["curves"][D][label] = (at_evals, np.asarray(run.loss))
            out["ends"][D][label] = float(clock[-1])
    return out


def paired_times(study: StragglerStudy, seeds: Any, device: Any = None):
    """Time to the target at ``study.paired_delay``: adaptive ``tau`` and vanilla, per seed.

    The first seed's adaptive run goes the whole way (notebook 3 draws it); the others stop at
    the target. Vanilla's (and a fixed ``tau = 4``'s) time is its delay-free run re-timed (a
    lower bound, its last clock, where it never gets there).

    Returns
    -------
    lab.core.sweep.Sweep
        ``t_adaptive``, ``t_vanilla``, ``t_fixed4`` (a fixed ``tau = 4``, re-timed like vanilla)
        and ``zo_rounds`` (adaptive's rounds to the target).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    from lab.core.sweep import sweep

    check_instance("study", study, StragglerStudy)
    seeds = list(seeds)
    D, rounds = study.paired_delay, study.run.cfg.rounds

    def one(seed: int) -> dict[str, float]:
        h = simulate_digits(study.adaptive(D, seed, stop=seed != seeds[0]), device)
        r, t_adaptive = rounds_to_target(h, study.target)
        out = {
            "t_adaptive": t_adaptive if r is not None else float(h.clock[-1]),
            "zo_rounds": r if r is not None else rounds,
        }
        for tau, key in ((1, "t_vanilla"), (4, "t_fixed4")):  # delay-free runs, re-timed
            run = simulate_digits(study.fixed(tau, seed), device)
            clock = retime(run, study.clock(D, seed), 10)
            t, _ = _time_to_target(run, clock, study.target)
            out[key] = t if np.isfinite(t) else float(clock[-1])
        return out

    return sweep(one, None, seeds, desc="paired seeds")


def fedavg_rounds(study: StragglerStudy, seeds: Any, *, lr: float = 0.1):
    """First-order FedAvg's rounds to the target per seed (the first seed runs the whole way).

    Returns
    -------
    lab.core.sweep.Sweep
        ``rounds`` (to the target; the run's length if never) and ``last_loss``.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    from lab.core.sweep import sweep

    check_instance("study", study, StragglerStudy)
    seeds = list(seeds)
    cfg = study.run.cfg

    def one(seed: int) -> dict[str, float]:
        stop = None if seed == seeds[0] else study.target
        run = cfg.replace(seed=seed, stop_loss=stop, delay_mean=None)
        r, losses = _fedavg(run, study.run.data_seed, study.run.widths, lr)
        hit = next((x for x, v in zip(r, losses, strict=True) if v <= study.target), cfg.rounds)
        return {"rounds": hit, "last_loss": losses[-1]}

    return sweep(one, None, seeds, desc="FedAvg seeds")


@disk_memo
def _fedavg(cfg: MUSplitFedConfig, data_seed: int, widths: tuple, lr: float):
    from .models import load_digits_clients

    return _fedavg_first_order(load_digits_clients(10, seed=data_seed), cfg, widths, lr)


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
    check_instance("hist", hist, History)
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
    check_instance("hist", hist, History)
    check_instance("straggler", straggler, StragglerModel)
    clients = check_int("clients", clients, 1)
    if straggler.mean_delays.size not in (1, clients):
        raise ValueError(f"straggler has {straggler.mean_delays.size} delays, not {clients}")
    out, clock = [], 0.0
    for t, (tau, part) in enumerate(zip(hist.tau, hist.participants, strict=True)):
        d = straggler.draw(t, clients)[list(part)] if part else np.zeros(1)
        clock += straggler.clock(d, int(tau))["time"]
        out.append(clock)
    return np.asarray(out)


def fedavg_first_order(
    data: dict[str, Any],
    cfg: Any,
    *,
    widths: tuple[int, ...] = (64, 32, 32, 10),
    lr: float = 0.1,
) -> tuple[list[int], list[float]]:
    """First-order FedAvg peer: each participant takes one SGD step on its batch; average.

    Same participants and batches as MU-SplitFed (seeds of ``cfg``), full MLP, backprop.

    Parameters
    ----------
    data : dict
        From :func:`load_digits_clients`.
    cfg : MUSplitFedConfig
        Rounds, seeds, clients, batch, ``eval_every`` and ``stop_loss`` (stop after the first
        evaluation whose training loss is ``<= stop_loss``).
    widths : tuple of int
        MLP widths.
    lr : float
        SGD step.

    Returns
    -------
    (list of int, list of float)
        Evaluation rounds and the training loss there.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    check_instance("cfg", cfg, MUSplitFedConfig)
    if not isinstance(data, dict) or "clients" not in data or "train" not in data:
        raise TypeError("data must be the dict returned by load_digits_clients")
    lr = check_positive("lr", lr)
    widths = tuple(check_int("widths", w, 1) for w in widths)
    return _fedavg_first_order(data, cfg, widths, lr)


def _fedavg_first_order(data, cfg, widths, lr):
    import torch

    from .draws import draw_batch, draw_participants
    from .models import FlatParams, ce_loss, make_mlp

    flat = FlatParams(make_mlp(widths, seed=cfg.seed))
    x = flat.init(torch.float32)
    Xtr, ytr = data["train"]
    rounds, losses = [], []
    for t in range(cfg.rounds):
        new = []
        for m in draw_participants(cfg, t):
            X, y = data["clients"][m]
            idx = torch.as_tensor(draw_batch(cfg, t, m, len(y)))
            w = x.clone().requires_grad_(True)
            (g,) = torch.autograd.grad(ce_loss(flat(w, X[idx]), y[idx]), w)
            new.append(x - lr * g)
        x = torch.stack(new).mean(0)
        if (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds:
            with torch.no_grad():
                losses.append(float(ce_loss(flat(x, Xtr), ytr)))
            rounds.append(t + 1)
            if cfg.stop_loss is not None and losses[-1] <= cfg.stop_loss:
                break
    return rounds, losses
