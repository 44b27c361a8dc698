"""MU-SplitFed on ``torch.distributed``: rank 0 is the split + fed server, ranks ``1..M`` clients.

Only point-to-point messages are used (``dist.send`` / ``dist.recv`` with a tag per round and
kind), never a collective: a collective with a dead peer blocks every rank, whereas a
point-to-point receive from a killed process fails at once with "connection closed by peer".
The roles themselves (the client loop and the split server, with the message table) are in
:mod:`lab.splitfed.ranks`; this module launches them and records runs.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

import datetime
import os
import queue as _queue
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any

from lab.core.checks import check_choice, check_instance, check_int, check_positive

from .history import History
from .hyperparams import MUSplitFedConfig
from .models import load_digits_clients
from .ranks import client_loop, server_loop

# record_runs / build_runs are the command `lab artifacts build splitfed/gloo-runs`: not API
__all__ = ["GlooSettings", "run_rank", "launch_local", "free_port", "load_runs"]


@dataclass(frozen=True)
class GlooSettings:
    """How the gloo engine runs (validated once, here).

    Parameters
    ----------
    widths : tuple of int
        The digits MLP's widths (every rank builds the same model).
    cut : int
        Where the MLP is split (blocks on the client).
    split : {"iid", "dirichlet"}
        The data split over the clients.
    order : {"completion", "rank"}
        Serve clients as their embeddings arrive, or strictly in rank order.
    time_unit : float
        Seconds per clock unit for the emulated delays (``cfg.delay_mean`` is in clock units).
    timeout : float
        Process-group timeout, the longest the server waits for a client message and (in
        :func:`launch_local`) the bound on the whole run (s).
    faults : dict, optional
        Fault injection for tests: ``{"kill": {rank: round}}`` (the client SIGKILLs itself
        after receiving ``x_c`` of that round), ``{"bad_shape": {rank: round}}`` (it announces
        a wrong embedding shape).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """

    widths: tuple[int, ...] = (64, 32, 32, 10)
    cut: int = 1
    split: str = "iid"
    order: str = "completion"
    time_unit: float = 0.01
    timeout: float = 60.0
    faults: dict | None = None

    def __post_init__(self) -> None:
        widths = tuple(check_int("widths", w, 1) for w in self.widths)
        if len(widths) < 3:
            raise ValueError(f"widths must name at least 3 layer sizes (got {self.widths!r})")
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "cut", check_int("cut", self.cut, 1, len(widths) - 2))
        check_choice("split", self.split, ["iid", "dirichlet"])
        check_choice("order", self.order, ["completion", "rank"])
        t = check_positive("time_unit", self.time_unit, allow_zero=True)
        object.__setattr__(self, "time_unit", t)
        object.__setattr__(self, "timeout", check_positive("timeout", self.timeout))
        if self.faults is not None and not isinstance(self.faults, dict):
            raise TypeError(f"faults must be a dict or None (got {type(self.faults).__name__})")


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound and released; loopback only).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check_world(cfg: Any, world_size: int, high: int = 64) -> int:
    check_instance("cfg", cfg, MUSplitFedConfig)
    world_size = check_int("world_size", world_size, 2, high)
    if cfg.clients != world_size - 1:
        raise ValueError(
            f"cfg.clients must equal world_size - 1 = {world_size - 1} (got {cfg.clients})"
        )
    return world_size


def _gloo(gloo: Any) -> GlooSettings:
    if gloo is None:
        return GlooSettings()
    check_instance("gloo", gloo, GlooSettings)
    return gloo


def run_rank(
    rank: int,
    world_size: int,
    cfg: MUSplitFedConfig,
    init_method: str = "tcp://127.0.0.1:29500",
    gloo: GlooSettings | None = None,
    *,
    report: Any = None,
    data: dict | None = None,
) -> History | None:
    """Run one rank of MU-SplitFed over gloo (rank 0: server; ranks ``1..M``: clients).

    Parameters
    ----------
    rank, world_size : int
        This process and the group size (``world_size = cfg.clients + 1``).
    cfg : MUSplitFedConfig
        Hyper-parameters; ``cfg.delay_mean`` (clock units) times ``gloo.time_unit`` seconds is
        the mean real sleep of a client per round.
    init_method : str
        Rendezvous address; use ``127.0.0.1`` (loopback only).
    gloo : GlooSettings, optional
        The model, split, serving order, time unit, timeout and faults (default: defaults).
    report : multiprocessing queue, optional
        Where rank 0 puts its :class:`History` and every rank its timeline events.
    data : dict, optional
        The output of :func:`load_digits_clients` (default: loaded here, with ``cfg.seed``).

    Returns
    -------
    History or None
        Rank 0's history (clients return ``None``).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import torch.distributed as dist

    world_size = _check_world(cfg, world_size, 1 << 16)
    rank = check_int("rank", rank, 0, world_size - 1)
    gloo = _gloo(gloo)
    if "lo" in {name for _, name in socket.if_nameindex()}:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    timeout = datetime.timedelta(seconds=gloo.timeout)
    dist.init_process_group(
        "gloo", init_method=init_method, rank=rank, world_size=world_size, timeout=timeout
    )
    try:
        if rank == 0:
            return server_loop(cfg, gloo, report, data)
        client_loop(rank, cfg, gloo, report, data)
        return None
    except Exception:
        if report is not None:
            report.put(("error", rank, traceback.format_exc()))
        raise
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # pragma: no cover - a dead peer may make teardown fail
            pass


def _entry(rank, world_size, cfg, init_method, gloo, report, data):
    try:
        run_rank(rank, world_size, cfg, init_method, gloo, report=report, data=data)
    except Exception:
        report.close()
        report.join_thread()  # flush the error report before dying
        os._exit(1)


def _collect(report, procs, deadline, timeout):
    """Rank 0's history (or an error) and every rank's timeline events from ``report``."""
    import torch

    hist, error, events = None, None, []
    rank0_gone = None  # when rank 0 was first seen dead: its last report may still be in the pipe
    while hist is None and error is None:
        left = deadline - time.perf_counter()
        if left <= 0:
            error = f"the run exceeded {timeout:g} s (+30 s start-up)"
            break
        try:
            kind, rank, payload = report.get(timeout=min(left, 0.5))
        except _queue.Empty:
            if procs[0].exitcode is not None:
                rank0_gone = rank0_gone or time.perf_counter()
                if time.perf_counter() - rank0_gone > 2.0:
                    error = f"rank 0 exited with code {procs[0].exitcode} without a result"
            continue
        if kind == "history":
            hist = payload
            hist.xc, hist.xs = torch.from_numpy(hist.xc), torch.from_numpy(hist.xs)
        elif kind == "error" and rank == 0:
            error = payload
        elif kind == "events":
            events += payload
    # clients report their timeline after the stop message
    end = time.perf_counter() + 5.0
    while hist is not None and time.perf_counter() < end:
        if all(p.exitcode is not None for p in procs[1:]) and report.empty():
            break
        try:
            kind, rank, payload = report.get(timeout=0.2)
            if kind == "events":
                events += payload
        except _queue.Empty:
            pass
    return hist, error, events


def launch_local(
    cfg: MUSplitFedConfig,
    world_size: int,
    gloo: GlooSettings | None = None,
    *,
    port: int | None = None,
) -> History:
    """Spawn ``world_size`` processes on this machine (gloo over 127.0.0.1) and run MU-SplitFed.

    Parameters
    ----------
    cfg : MUSplitFedConfig
        Hyper-parameters; ``cfg.clients`` must be ``world_size - 1``.
    world_size : int
        One server plus the clients (``2`` to ``64``).
    gloo : GlooSettings, optional
        As in :func:`run_rank`; ``gloo.timeout`` also bounds the whole run (s): processes
        still alive at the end are terminated, so a run never hangs.
    port : int, optional
        Rendezvous port (default: a free one).

    Returns
    -------
    History
        Rank 0's history; ``events`` merges every rank's timeline (times in seconds from the
        first event), ``lost`` the clients that died, ``info["exitcodes"]`` the processes'
        exit codes.

    Raises
    ------
    RuntimeError
        If rank 0 fails (its traceback is in the message) or the run exceeds the timeout.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import torch.multiprocessing as mp

    world_size = _check_world(cfg, world_size)
    gloo = _gloo(gloo)
    port = free_port() if port is None else check_int("port", port, 1024, 65535)
    ctx = mp.get_context("spawn")
    report = ctx.Queue()
    data = load_digits_clients(cfg.clients, split=gloo.split, seed=cfg.seed, dtype=cfg.dtype)
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        ctx.Process(
            target=_entry, args=(r, world_size, cfg, address, gloo, report, data), daemon=True
        )
        for r in range(world_size)
    ]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    deadline = t0 + gloo.timeout + 30.0  # start-up (torch import) comes on top of the run
    try:
        hist, error, events = _collect(report, procs, deadline, gloo.timeout)
    finally:
        for p in procs:
            p.join(timeout=max(0.1, min(2.0, deadline - time.perf_counter())))
        for p in procs:
            if p.exitcode is None:
                p.kill()
                p.join(timeout=2.0)
    if error is not None:
        raise RuntimeError(f"launch_local failed: {error}")
    events = sorted(hist.events + events, key=lambda e: e[4])
    if events:
        e0 = min(e[4] for e in events)
        events = [(*e[:4], e[4] - e0, e[5] - e0) for e in events]
    hist.events = events
    hist.info["exitcodes"] = {r: p.exitcode for r, p in enumerate(procs)}
    hist.info["launch_seconds"] = time.perf_counter() - t0
    return hist


RUNS_PATH = os.path.join(os.path.dirname(__file__), "data", "gloo_runs.json")


def record_runs(
    path: str | None = None,
    *,
    rounds: int = 30,
    world_size: int = 4,
    delay_mean: float = 3.0,
    time_unit: float = 0.01,
    keep_rounds: int = 6,
    coupling: str = "sqrt",
) -> dict:
    """Run the gloo engine for ``tau in {1, 4}`` x ``order in {completion, rank}`` and save timelines.

    The notebook loads this file by default (train-or-load): starting four Python processes
    with torch takes seconds to minutes on a loaded 2-core machine. Regenerate with
    ``lab artifacts build splitfed/gloo-runs`` (about 20 s on an idle machine).

    Parameters
    ----------
    path : str, optional
        Output JSON (default ``lab/splitfed/data/gloo_runs.json``).
    rounds, world_size, delay_mean, time_unit
        Run sizes; ``delay_mean`` in units of ``time_unit`` seconds.
    keep_rounds : int
        Rounds of timeline events kept in the file (the per-round records are all kept).
    coupling : {"sqrt", "fixed"}
        The server step's coupling to ``tau`` (:class:`MUSplitFedConfig`), stored in the file
        (the committed runs were recorded with ``"fixed"``, before the coupling existed).

    Returns
    -------
    dict

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import json

    out = {
        "world_size": world_size, "delay_mean": delay_mean, "time_unit": time_unit,
        "coupling": coupling, "runs": [],
    }  # fmt: skip
    for tau in (1, 4):
        for order in ("completion", "rank"):
            cfg = MUSplitFedConfig(
                tau=tau, rounds=rounds, clients=world_size - 1, participation=1.0, eta_g=1.0,
                eta_s=0.02, eta_c=0.01, coupling=coupling,
                delay_mean=delay_mean, eval_every=max(1, rounds // 6),
            )  # fmt: skip
            gloo = GlooSettings(time_unit=time_unit, order=order, timeout=120)
            h = launch_local(cfg, world_size, gloo)
            ev = [list(e) for e in h.events if e[3] < keep_rounds]
            busy = sum(e[5] - e[4] for e in h.events if e[0] == "server" and e[2] != "idle")
            out["runs"].append(
                {
                    "tau": tau, "order": order, "rounds": rounds, "clock": h.clock,
                    "server_steps": h.server_steps, "eval_round": h.eval_round,
                    "loss": h.loss, "acc": h.acc, "bytes_up": h.bytes_up,
                    "bytes_down": h.bytes_down, "seconds": h.info["seconds"],
                    "launch_seconds": h.info["launch_seconds"],
                    "server_busy_fraction": busy / max(h.info["seconds"], 1e-9),
                    "events": ev,
                }
            )  # fmt: skip
    path = path or RUNS_PATH
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    return out


def load_runs(path: str | None = None) -> dict:
    """Load the recorded gloo timelines (see :func:`record_runs`).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import json

    with open(path or RUNS_PATH) as f:
        return json.load(f)


def build_runs(argv: list[str] | None = None) -> int:  # pragma: no cover - starts processes
    """``lab artifacts build splitfed/gloo-runs``: record the timelines notebook 3 loads."""
    import argparse

    argparse.ArgumentParser(prog="lab artifacts build splitfed/gloo-runs").parse_args(argv)
    res = record_runs()
    for r in res["runs"]:
        print(
            r["tau"], r["order"], f"{r['seconds']:.2f} s", f"busy {r['server_busy_fraction']:.2f}"
        )
    return 0
