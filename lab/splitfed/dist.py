"""MU-SplitFed on ``torch.distributed``: rank 0 is the split + fed server, ranks ``1..M`` clients.

Only point-to-point messages are used (``dist.send`` / ``dist.recv`` with a tag per round and
kind), never a collective: a collective with a dead peer blocks every rank, whereas a
point-to-point receive from a killed process fails at once with "connection closed by peer".
Rank 0 runs one receiver thread per participating client and serves clients in
**completion order**, so the ``tau`` server steps for early clients overlap the wait for the
stragglers. Measured on torch 2.13 CPU (gloo): ``Work.is_completed()`` of a gloo ``irecv`` never
turns true before ``wait()``, and ``wait(timeout)`` that expires closes the pair, so neither
polling scheme works; blocking receives in threads do.

Messages of client ``m`` in round ``t`` (``tag = 8 t + kind``)::

    0 -> m   control [t, participates, stop]            (every live client)
    0 -> m   x_c                                         (participants)
    m -> 0   header [t, B, H], h, y, then [h+; h-]       (eq. C)
    0 -> m   delta_c (one number)                        (eq. D)
    m -> 0   x_{c,m}                                     (eq. U), aggregated by eq. (A)

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

import datetime
import os
import queue as _queue
import signal
import socket
import threading
import time
import traceback
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive

from .draws import client_direction, draw_batch, draw_participants
from .history import History
from .hyperparams import MUSplitFedConfig
from .models import FlatParams, ce_loss, evaluator, load_digits_clients, make_mlp, split_model
from .reference import aggregate, client_delta, client_forward, server_zo_steps
from .stragglers import StragglerModel, TauSchedule

# record_runs is the command `python -m lab.splitfed` (it runs the engine for a minute): not API
__all__ = ["run_rank", "launch_local", "free_port", "load_runs"]

CTRL, XC, HEAD, H, Y, HPM, XNEW, DELTA = range(8)


def _tag(t: int, kind: int) -> int:
    return 8 * t + kind


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound and released; loopback only).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(cfg, widths, cut, split, data=None):
    import torch

    torch.set_num_threads(1)
    if data is None:
        data = load_digits_clients(cfg.clients, split=split, seed=cfg.seed, dtype=cfg.dtype)
    client_net, server_net = split_model(make_mlp(widths, seed=cfg.seed), cut)
    return data, client_net, server_net


def run_rank(
    rank: int,
    world_size: int,
    cfg: MUSplitFedConfig,
    init_method: str = "tcp://127.0.0.1:29500",
    *,
    widths: tuple[int, ...] = (64, 32, 32, 10),
    cut: int = 1,
    split: str = "iid",
    order: str = "completion",
    time_unit: float = 0.01,
    timeout: float = 30.0,
    faults: dict | None = None,
    report: Any = None,
    data: dict | None = None,
) -> History | None:
    """Run one rank of MU-SplitFed over gloo (rank 0: server; ranks ``1..M``: clients).

    Parameters
    ----------
    rank, world_size : int
        This process and the group size (``world_size = cfg.clients + 1``).
    cfg : MUSplitFedConfig
        Hyper-parameters; ``cfg.delay_mean`` (clock units) times ``time_unit`` seconds is the
        mean real sleep of a client per round.
    init_method : str
        Rendezvous address; use ``127.0.0.1`` (loopback only).
    widths, cut, split
        The digits MLP, where it is split, and the data split (every rank builds the same ones).
    order : {"completion", "rank"}
        Serve clients as their embeddings arrive, or strictly in rank order.
    time_unit : float
        Seconds per clock unit for the emulated delays.
    timeout : float
        Process-group timeout and the longest the server waits for a client message (s).
    faults : dict, optional
        Fault injection for tests: ``{"kill": {rank: round}}`` (the client SIGKILLs itself
        after receiving ``x_c`` of that round), ``{"bad_shape": {rank: round}}`` (it announces
        a wrong embedding shape).
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

    world_size = check_int("world_size", world_size, 2)
    rank = check_int("rank", rank, 0, world_size - 1)
    if cfg.clients != world_size - 1:
        raise ValueError(
            f"cfg.clients must equal world_size - 1 = {world_size - 1} (got {cfg.clients})"
        )
    check_choice("order", order, ["completion", "rank"])
    if "lo" in {name for _, name in socket.if_nameindex()}:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(
        "gloo",
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout),
    )
    try:
        if rank == 0:
            hist = _server(cfg, widths, cut, split, order, timeout, report, data)
        else:
            hist = None
            _client(rank, cfg, widths, cut, split, time_unit, faults or {}, report, data)
    except Exception:
        if report is not None:
            report.put(("error", rank, traceback.format_exc()))
        raise
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # pragma: no cover - a dead peer may make teardown fail
            pass
    return hist


def _client(rank, cfg, widths, cut, split, time_unit, faults, report, data):
    import torch
    import torch.distributed as dist

    m = rank - 1
    data, client_net, _ = _setup(cfg, widths, cut, split, data)
    fc = FlatParams(client_net)
    dt = getattr(torch, cfg.dtype)
    X, y = data["clients"][m]
    straggler = StragglerModel(cfg.delay_mean or 0.0, seed=cfg.seed)
    events = []
    t = 0
    while True:
        ctrl = torch.zeros(3, dtype=torch.int64)
        dist.recv(ctrl, src=0, tag=_tag(t, CTRL))
        if int(ctrl[2]):  # stop
            break
        if int(ctrl[1]):
            xc = torch.zeros(fc.dim, dtype=dt)
            dist.recv(xc, src=0, tag=_tag(t, XC))
            if faults.get("kill", {}).get(rank) == t:
                os.kill(os.getpid(), signal.SIGKILL)  # a crash: no cleanup, sockets drop
            s0 = time.time()
            time.sleep(float(straggler.sample(t, cfg.clients)[m]) * time_unit)  # straggling
            s1 = time.time()
            idx = torch.as_tensor(draw_batch(cfg, t, m, len(y)))
            Xb, yb = X[idx], y[idx]
            u_c = client_direction(cfg, t, m, fc.dim, dt)
            with torch.no_grad():
                h, hp, hm = client_forward(fc, xc, Xb, u_c, cfg.lam)  # eq. (C)
            cols = h.shape[1] + (1 if faults.get("bad_shape", {}).get(rank) == t else 0)
            dist.send(torch.tensor([t, h.shape[0], cols]), dst=0, tag=_tag(t, HEAD))
            dist.send(h.contiguous(), dst=0, tag=_tag(t, H))
            dist.send(yb.contiguous(), dst=0, tag=_tag(t, Y))
            dist.send(torch.cat([hp, hm]).contiguous(), dst=0, tag=_tag(t, HPM))
            s2 = time.time()
            delta = torch.zeros(1, dtype=dt)
            dist.recv(delta, src=0, tag=_tag(t, DELTA))
            s3 = time.time()
            xc = xc - cfg.eta_c * (delta[0] / (2 * cfg.lam)) * u_c  # eq. (U)
            dist.send(xc.contiguous(), dst=0, tag=_tag(t, XNEW))
            events += [
                ("client", m, "delay", t, s0, s1),
                ("client", m, "compute", t, s1, s2),
                ("client", m, "wait δ", t, s2, s3),
            ]
        t += 1
    if report is not None:
        report.put(("events", rank, events))


def _server(cfg, widths, cut, split, order, timeout, report, data):
    import torch
    import torch.distributed as dist

    data, client_net, server_net = _setup(cfg, widths, cut, split, data)
    fc, fs = FlatParams(client_net), FlatParams(server_net)
    dt = getattr(torch, cfg.dtype)
    xc, xs = fc.init(dt), fs.init(dt)
    with torch.no_grad():
        hdim = int(fc(xc, data["train"][0][:1]).shape[1])
    eval_fn = evaluator(client_net, server_net, data["train"], data["test"])
    live = set(range(cfg.clients))
    hist = History()
    hist.info.update(engine="gloo", world_size=cfg.clients + 1, order=order)
    sched = TauSchedule(cfg, 1e-3)
    t_step = None
    events, lost_at = [], {}
    t_start = time.perf_counter()
    inbox: _queue.Queue = _queue.Queue()
    item_bytes = torch.zeros(0, dtype=dt).element_size()

    def receive(m, t):
        src = m + 1
        try:
            head = torch.zeros(3, dtype=torch.int64)
            dist.recv(head, src=src, tag=_tag(t, HEAD))
            if head.tolist() != [t, cfg.batch, hdim]:
                inbox.put(("bad", m, head.tolist()))
                return
            h = torch.zeros(cfg.batch, hdim, dtype=dt)
            y = torch.zeros(cfg.batch, dtype=torch.int64)
            dist.recv(h, src=src, tag=_tag(t, H))
            dist.recv(y, src=src, tag=_tag(t, Y))
            inbox.put(("h", m, (h, y), time.time()))
            hpm = torch.zeros(2 * cfg.batch, hdim, dtype=dt)
            dist.recv(hpm, src=src, tag=_tag(t, HPM))
            inbox.put(("hpm", m, hpm, time.time()))
            xnew = torch.zeros(fc.dim, dtype=dt)
            dist.recv(xnew, src=src, tag=_tag(t, XNEW))
            inbox.put(("xc", m, xnew, time.time()))
        except Exception as exc:  # a dead peer: "connection closed by peer"
            inbox.put(("lost", m, str(exc).splitlines()[0][:200], time.time()))

    def lose(m, t, why):
        if m in live:
            live.discard(m)
            lost_at[m] = (t, why)

    for t in range(cfg.rounds):
        tau = sched.tau
        eta_s, eta_c, eta_g = cfg.steps(tau)
        part = draw_participants(cfg, t, None if len(live) == cfg.clients else sorted(live))
        for m in sorted(live):
            try:
                flag = 1 if m in part else 0
                dist.send(torch.tensor([t, flag, 0]), dst=m + 1, tag=_tag(t, CTRL))
                if flag:
                    dist.send(xc, dst=m + 1, tag=_tag(t, XC))
            except Exception as exc:
                lose(m, t, str(exc).splitlines()[0][:200])
        part = [m for m in part if m in live]
        threads = [threading.Thread(target=receive, args=(m, t), daemon=True) for m in part]
        for th in threads:
            th.start()
        arrived, hpm, new_c, new_s, served, stepped = {}, {}, {}, {}, [], {}
        arrival_time, losses, steps_done = {}, {}, 0
        waiting = set(part)
        deadline = time.perf_counter() + timeout
        while waiting:
            # 1. any delta_c ready to go back?
            for m in [m for m in stepped if m in hpm and m in waiting and m not in new_s]:
                s0 = time.time()
                with torch.no_grad():
                    d = client_delta(
                        fs, stepped[m], hpm[m][: cfg.batch], hpm[m][cfg.batch :], arrived[m][1]
                    )
                try:
                    dist.send(d.reshape(1).to(dt), dst=m + 1, tag=_tag(t, DELTA))
                except Exception as exc:
                    lose(m, t, str(exc).splitlines()[0][:200])
                    waiting.discard(m)
                    continue
                new_s[m] = stepped[m]
                events.append(("server", m, "δ", t, s0, time.time()))
            # 2. serve the next client whose h is here (completion or rank order)
            queue_order = (
                sorted(arrived, key=arrival_time.get) if order == "completion" else sorted(part)
            )
            nxt = [m for m in queue_order if m not in served and m in waiting]
            if nxt and nxt[0] in arrived:
                m = nxt[0]
                served.append(m)
                h, y = arrived[m]
                s0 = time.time()
                with torch.no_grad():
                    losses[m] = float(ce_loss(fs(xs, h), y))
                    stepped[m] = server_zo_steps(fs, xs, h, y, cfg, t, m, tau, eta_s)  # eq. (S)
                s1 = time.time()
                t_step = (s1 - s0) / tau if t_step is None else 0.8 * t_step + 0.2 * (s1 - s0) / tau
                steps_done += tau
                events.append(("server", m, "τ steps", t, s0, s1))
                continue
            # 3. nothing to do: wait for the next message
            s0 = time.time()
            try:
                item = inbox.get(timeout=max(1e-3, deadline - time.perf_counter()))
            except _queue.Empty:
                for m in list(waiting):
                    lose(m, t, f"no message within {timeout:g} s")
                waiting.clear()
                break
            events.append(("server", -1, "idle", t, s0, time.time()))
            kind, m = item[0], item[1]
            if kind == "bad":
                raise RuntimeError(
                    f"client rank {m + 1} sent an embedding header {item[2]} in round {t}; "
                    f"expected [round, batch, H] = {[t, cfg.batch, hdim]}"
                )
            if kind == "lost":
                lose(m, t, item[2])
                waiting.discard(m)
            elif kind == "h":
                arrived[m], arrival_time[m] = item[2], item[3]
            elif kind == "hpm":
                hpm[m] = item[2]
            elif kind == "xc":
                new_c[m] = item[2]
                waiting.discard(m)
        done = sorted(m for m in new_c if m in live)
        xc = aggregate(xc, [new_c[m] for m in done], eta_g)  # eq. (A), fed server
        xs = aggregate(xs, [new_s[m] for m in done], eta_g)  # eq. (A), split server
        times = sorted(arrival_time[m] for m in done if m in arrival_time)
        wait = times[-1] - times[0] if len(times) > 1 else 0.0
        sched.update(wait, t_step)
        n = len(done)
        up = n * (3 * cfg.batch * hdim * item_bytes + cfg.batch * 8 + fc.dim * item_bytes)
        down = n * (fc.dim * item_bytes + item_bytes)
        hist.tau.append(tau)
        hist.clock.append(time.perf_counter() - t_start)
        hist.batch_loss.append(float(np.mean([losses[m] for m in done])) if done else float("nan"))
        hist.bytes_up.append(up)
        hist.bytes_down.append(down)
        hist.server_steps.append(steps_done)
        hist.participants.append(done)
        if (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds:
            res = eval_fn(xc, xs)
            hist.eval_round.append(t + 1)
            hist.loss.append(res["loss"])
            hist.acc.append(res["acc"])
    for m in sorted(live):
        try:
            dist.send(torch.tensor([cfg.rounds, 0, 1]), dst=m + 1, tag=_tag(cfg.rounds, CTRL))
        except Exception:
            lose(m, cfg.rounds, "lost at shutdown")
    hist.xc, hist.xs = xc, xs
    hist.lost = sorted(lost_at)
    hist.info["lost"] = {m + 1: {"round": r, "why": why} for m, (r, why) in lost_at.items()}
    hist.info["seconds"] = time.perf_counter() - t_start
    hist.events = events
    if report is not None:
        # tensors would travel as shared-memory handles that die with this process: send copies
        sent = History(**{**hist.__dict__, "xc": xc.numpy().copy(), "xs": xs.numpy().copy()})
        report.put(("history", 0, sent))
    return hist


def _entry(rank, world_size, cfg, init_method, report, kwargs):
    try:
        run_rank(rank, world_size, cfg, init_method, report=report, **kwargs)
    except Exception:
        report.close()
        report.join_thread()  # flush the error report before dying
        os._exit(1)


def launch_local(
    cfg: MUSplitFedConfig,
    world_size: int,
    *,
    widths: tuple[int, ...] = (64, 32, 32, 10),
    cut: int = 1,
    split: str = "iid",
    order: str = "completion",
    time_unit: float = 0.01,
    timeout: float = 60.0,
    faults: dict | None = None,
    port: int | None = None,
) -> History:
    """Spawn ``world_size`` processes on this machine (gloo over 127.0.0.1) and run MU-SplitFed.

    Parameters
    ----------
    cfg : MUSplitFedConfig
        Hyper-parameters; ``cfg.clients`` must be ``world_size - 1``.
    world_size : int
        One server plus the clients (``>= 2``).
    widths, cut, split, order, time_unit, faults
        As in :func:`run_rank`.
    timeout : float
        Wall-clock bound (s) for the whole run; also the process-group timeout. Processes
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
        If rank 0 fails (its traceback is in the message) or the run exceeds ``timeout``.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import torch
    import torch.multiprocessing as mp

    if not isinstance(cfg, MUSplitFedConfig):
        raise TypeError(f"cfg must be a MUSplitFedConfig (got {type(cfg).__name__})")
    world_size = check_int("world_size", world_size, 2, 64)
    if cfg.clients != world_size - 1:
        raise ValueError(
            f"cfg.clients must equal world_size - 1 = {world_size - 1} (got {cfg.clients})"
        )
    check_choice("order", order, ["completion", "rank"])
    check_choice("split", split, ["iid", "dirichlet"])
    time_unit = check_positive("time_unit", time_unit, allow_zero=True)
    timeout = check_positive("timeout", timeout)
    port = free_port() if port is None else check_int("port", port, 1024, 65535)
    ctx = mp.get_context("spawn")
    report = ctx.Queue()
    data = load_digits_clients(cfg.clients, split=split, seed=cfg.seed, dtype=cfg.dtype)
    kwargs = dict(
        widths=widths, cut=cut, split=split, order=order, time_unit=time_unit,
        timeout=timeout, faults=faults, data=data,
    )  # fmt: skip
    procs = [
        ctx.Process(
            target=_entry,
            args=(r, world_size, cfg, f"tcp://127.0.0.1:{port}", report, kwargs),
            daemon=True,
        )
        for r in range(world_size)
    ]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    hist, error, events = None, None, []
    deadline = t0 + timeout + 30.0  # start-up (torch import) comes on top of the run
    rank0_gone = None  # when rank 0 was first seen dead: its last report may still be in the pipe
    try:
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
    ``python -m lab.splitfed`` (about 20 s on an idle machine).

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
            h = launch_local(cfg, world_size, time_unit=time_unit, order=order, timeout=120)
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
