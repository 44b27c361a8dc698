"""The two roles of the gloo engine: a client rank's loop and the split server (rank 0).

Messages of client ``m`` in round ``t`` (``tag = 8 t + kind``)::

    0 -> m   control [t, participates, stop]            (every live client)
    0 -> m   x_c                                         (participants)
    m -> 0   header [t, B, H], h, y, then [h+; h-]       (eq. 4)
    0 -> m   delta_c (one number)                        (eq. 6)
    m -> 0   x_{c,m}                                     (eq. 6), aggregated by eq. (7)

The server runs one receiver thread per participating client and serves clients in
**completion order**, so the ``tau`` server steps for early clients overlap the wait for the
stragglers. Measured on torch 2.13 CPU (gloo): ``Work.is_completed()`` of a gloo ``irecv`` never
turns true before ``wait()``, and ``wait(timeout)`` that expires closes the pair, so neither
polling scheme works; blocking receives in threads do.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

import os
import queue as _queue
import signal
import threading
import time

import numpy as np

from .draws import client_direction, draw_batch, draw_participants, server_directions
from .history import History
from .models import FlatParams, ce_loss, evaluator, load_digits_clients, make_mlp, split_model
from .reference import aggregate, client_delta, client_forward, client_update, server_zo_steps
from .stragglers import StragglerModel, TauSchedule

__all__: list[str] = []

CTRL, XC, HEAD, H, Y, HPM, XNEW, DELTA = range(8)


def tag(t: int, kind: int) -> int:
    """The message tag of ``kind`` in round ``t``."""
    return 8 * t + kind


def setup(cfg, gloo, data=None):
    """Every rank builds the same data split and the same halves of the MLP."""
    import torch

    torch.set_num_threads(1)
    if data is None:
        data = load_digits_clients(cfg.clients, split=gloo.split, seed=cfg.seed, dtype=cfg.dtype)
    client_net, server_net = split_model(make_mlp(gloo.widths, seed=cfg.seed), gloo.cut)
    return data, client_net, server_net


def client_loop(rank, cfg, gloo, report, data):
    """Client ``rank``: receive ``x_c``, sleep its delay, send ``h, y, h+-``, step (eq. 6)."""
    import torch
    import torch.distributed as dist

    m, faults = rank - 1, gloo.faults or {}
    data, client_net, _ = setup(cfg, gloo, data)
    fc, dt = FlatParams(client_net), getattr(torch, cfg.dtype)
    X, y = data["clients"][m]
    straggler = StragglerModel(cfg.delay_mean or 0.0, seed=cfg.seed)
    events, t = [], 0
    while True:
        ctrl = torch.zeros(3, dtype=torch.int64)
        dist.recv(ctrl, src=0, tag=tag(t, CTRL))
        if int(ctrl[2]):  # stop
            break
        if int(ctrl[1]):
            xc = torch.zeros(fc.dim, dtype=dt)
            dist.recv(xc, src=0, tag=tag(t, XC))
            if faults.get("kill", {}).get(rank) == t:
                os.kill(os.getpid(), signal.SIGKILL)  # a crash: no cleanup, sockets drop
            s0 = time.time()
            time.sleep(float(straggler.draw(t, cfg.clients)[m]) * gloo.time_unit)  # straggling
            s1 = time.time()
            idx = torch.as_tensor(draw_batch(cfg, t, m, len(y)))
            Xb, yb = X[idx], y[idx]
            u_c = client_direction(cfg, t, m, fc.dim, dt)
            with torch.no_grad():
                h, hp, hm = client_forward(fc, xc, Xb, u_c, lam=cfg.lam)  # eq. (4)
            cols = h.shape[1] + (1 if faults.get("bad_shape", {}).get(rank) == t else 0)
            dist.send(torch.tensor([t, h.shape[0], cols]), dst=0, tag=tag(t, HEAD))
            dist.send(h.contiguous(), dst=0, tag=tag(t, H))
            dist.send(yb.contiguous(), dst=0, tag=tag(t, Y))
            dist.send(torch.cat([hp, hm]).contiguous(), dst=0, tag=tag(t, HPM))
            s2 = time.time()
            delta = torch.zeros(1, dtype=dt)
            dist.recv(delta, src=0, tag=tag(t, DELTA))
            s3 = time.time()
            xc = client_update(
                xc, delta[0], u_c, lam=cfg.lam, eta_c=cfg.eta_c
            )  # eq. (6), client step
            dist.send(xc.contiguous(), dst=0, tag=tag(t, XNEW))
            events += [
                ("client", m, "delay", t, s0, s1),
                ("client", m, "compute", t, s1, s2),
                ("client", m, "wait δ", t, s2, s3),
            ]
        t += 1
    if report is not None:
        report.put(("events", rank, events))


class SplitServer:
    """Rank 0: the split server and the fed server, one round at a time."""

    def __init__(self, cfg, gloo, data=None):
        import torch

        data, client_net, server_net = setup(cfg, gloo, data)
        self.cfg, self.gloo = cfg, gloo
        self.fc, self.fs = FlatParams(client_net), FlatParams(server_net)
        self.dt = getattr(torch, cfg.dtype)
        self.xc, self.xs = self.fc.init(self.dt), self.fs.init(self.dt)
        with torch.no_grad():
            self.hdim = int(self.fc(self.xc, data["train"][0][:1]).shape[1])
        self.eval_fn = evaluator(client_net, server_net, data["train"], data["test"])
        self.live = set(range(cfg.clients))
        self.hist = History()
        self.hist.info.update(engine="gloo", world_size=cfg.clients + 1, order=gloo.order)
        self.sched = TauSchedule(cfg, 1e-3)
        self.t_step, self.events, self.lost_at = None, [], {}
        self.inbox: _queue.Queue = _queue.Queue()
        self.item_bytes = torch.zeros(0, dtype=self.dt).element_size()
        self.t_start = time.perf_counter()

    def receive(self, m, t):
        """Receiver thread of client ``m`` in round ``t``: its messages go to the inbox."""
        import torch
        import torch.distributed as dist

        cfg, src, hdim, dt = self.cfg, m + 1, self.hdim, self.dt
        try:
            head = torch.zeros(3, dtype=torch.int64)
            dist.recv(head, src=src, tag=tag(t, HEAD))
            if head.tolist() != [t, cfg.batch, hdim]:
                self.inbox.put(("bad", m, head.tolist()))
                return
            h = torch.zeros(cfg.batch, hdim, dtype=dt)
            y = torch.zeros(cfg.batch, dtype=torch.int64)
            dist.recv(h, src=src, tag=tag(t, H))
            dist.recv(y, src=src, tag=tag(t, Y))
            self.inbox.put(("h", m, (h, y), time.time()))
            hpm = torch.zeros(2 * cfg.batch, hdim, dtype=dt)
            dist.recv(hpm, src=src, tag=tag(t, HPM))
            self.inbox.put(("hpm", m, hpm, time.time()))
            xnew = torch.zeros(self.fc.dim, dtype=dt)
            dist.recv(xnew, src=src, tag=tag(t, XNEW))
            self.inbox.put(("xc", m, xnew, time.time()))
        except Exception as exc:  # a dead peer: "connection closed by peer"
            self.inbox.put(("lost", m, str(exc).splitlines()[0][:200], time.time()))

    def lose(self, m, t, why):
        if m in self.live:
            self.live.discard(m)
            self.lost_at[m] = (t, why)

    def open_round(self, t):
        """Tell every live client whether it participates; send ``x_c`` to the participants."""
        import torch
        import torch.distributed as dist

        cfg = self.cfg
        pool = None if len(self.live) == cfg.clients else sorted(self.live)
        part = draw_participants(cfg, t, pool)
        for m in sorted(self.live):
            try:
                flag = 1 if m in part else 0
                dist.send(torch.tensor([t, flag, 0]), dst=m + 1, tag=tag(t, CTRL))
                if flag:
                    dist.send(self.xc, dst=m + 1, tag=tag(t, XC))
            except Exception as exc:
                self.lose(m, t, str(exc).splitlines()[0][:200])
        part = [m for m in part if m in self.live]
        for m in part:
            threading.Thread(target=self.receive, args=(m, t), daemon=True).start()
        return part

    def send_deltas(self, r):
        """eq. (6) for every client whose ``tau`` steps are done and whose ``h+-`` is here."""
        import torch
        import torch.distributed as dist

        B = self.cfg.batch
        for m in [m for m in r["stepped"] if m in r["hpm"] and m in r["waiting"]]:
            if m in r["new_s"]:
                continue
            s0 = time.time()
            with torch.no_grad():
                hpm, y = r["hpm"][m], r["arrived"][m][1]
                d = client_delta(self.fs, r["stepped"][m], hpm[:B], hpm[B:], y)
            try:
                dist.send(d.reshape(1).to(self.dt), dst=m + 1, tag=tag(r["t"], DELTA))
            except Exception as exc:
                self.lose(m, r["t"], str(exc).splitlines()[0][:200])
                r["waiting"].discard(m)
                continue
            r["new_s"][m] = r["stepped"][m]
            self.events.append(("server", m, "δ", r["t"], s0, time.time()))

    def step_next(self, r, tau, eta_s):
        """eq. (5) for the next client whose ``h`` is here (completion or rank order)."""
        import torch

        if self.gloo.order == "completion":
            queue_order = sorted(r["arrived"], key=r["arrival_time"].get)
        else:
            queue_order = sorted(r["part"])
        nxt = [m for m in queue_order if m not in r["served"] and m in r["waiting"]]
        if not nxt or nxt[0] not in r["arrived"]:
            return False
        m, t, cfg = nxt[0], r["t"], self.cfg
        r["served"].append(m)
        h, y = r["arrived"][m]
        s0 = time.time()
        with torch.no_grad():
            r["losses"][m] = float(ce_loss(self.fs(self.xs, h), y))
            u_s = server_directions(cfg, t, m, tau, self.fs.dim, self.xs.dtype)
            r["stepped"][m] = server_zo_steps(
                self.fs, self.xs, h, y, u_s, lam=cfg.lam, eta_s=eta_s
            )  # eq. (5)
        s1 = time.time()
        if self.t_step is None:
            self.t_step = (s1 - s0) / tau
        else:
            self.t_step = 0.8 * self.t_step + 0.2 * (s1 - s0) / tau
        r["steps_done"] += tau
        self.events.append(("server", m, "τ steps", t, s0, s1))
        return True

    def wait_message(self, r, deadline):
        """Block for the next inbox message; ``False`` when the round timed out."""
        t, s0 = r["t"], time.time()
        try:
            item = self.inbox.get(timeout=max(1e-3, deadline - time.perf_counter()))
        except _queue.Empty:
            for m in list(r["waiting"]):
                self.lose(m, t, f"no message within {self.gloo.timeout:g} s")
            r["waiting"].clear()
            return False
        self.events.append(("server", -1, "idle", t, s0, time.time()))
        kind, m = item[0], item[1]
        if kind == "bad":
            raise RuntimeError(
                f"client rank {m + 1} sent an embedding header {item[2]} in round {t}; "
                f"expected [round, batch, H] = {[t, self.cfg.batch, self.hdim]}"
            )
        if kind == "lost":
            self.lose(m, t, item[2])
            r["waiting"].discard(m)
        elif kind == "h":
            r["arrived"][m], r["arrival_time"][m] = item[2], item[3]
        elif kind == "hpm":
            r["hpm"][m] = item[2]
        elif kind == "xc":
            r["new_c"][m] = item[2]
            r["waiting"].discard(m)
        return True

    def serve(self, t, part, tau, eta_s):
        """Serve round ``t``'s participants until every one has sent its ``x_{c,m}``."""
        r = {
            "t": t, "part": part, "arrived": {}, "hpm": {}, "new_c": {}, "new_s": {},
            "served": [], "stepped": {}, "arrival_time": {}, "losses": {}, "steps_done": 0,
            "waiting": set(part),
        }  # fmt: skip
        deadline = time.perf_counter() + self.gloo.timeout
        while r["waiting"]:
            self.send_deltas(r)  # 1. any delta_c ready to go back?
            if self.step_next(r, tau, eta_s):  # 2. serve the next client whose h is here
                continue
            if not self.wait_message(r, deadline):  # 3. nothing to do: wait
                break
        return r

    def close_round(self, r, tau, eta_g):
        """eq. (7) on both sides, the adaptive ``tau`` and the round's record."""
        cfg, t, hist = self.cfg, r["t"], self.hist
        done = sorted(m for m in r["new_c"] if m in self.live)
        self.xc = aggregate(self.xc, [r["new_c"][m] for m in done], eta_g)  # eq. (7), fed
        self.xs = aggregate(self.xs, [r["new_s"][m] for m in done], eta_g)  # eq. (7), split
        times = sorted(r["arrival_time"][m] for m in done if m in r["arrival_time"])
        self.sched.update(times[-1] - times[0] if len(times) > 1 else 0.0, self.t_step)
        n, ib, dc = len(done), self.item_bytes, self.fc.dim
        hist.tau.append(tau)
        hist.clock.append(time.perf_counter() - self.t_start)
        losses = [r["losses"][m] for m in done]
        hist.batch_loss.append(float(np.mean(losses)) if done else float("nan"))
        hist.bytes_up.append(n * (3 * cfg.batch * self.hdim * ib + cfg.batch * 8 + dc * ib))
        hist.bytes_down.append(n * (dc * ib + ib))
        hist.server_steps.append(r["steps_done"])
        hist.participants.append(done)
        if (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds:
            res = self.eval_fn(self.xc, self.xs)
            hist.eval_round.append(t + 1)
            hist.loss.append(res["loss"])
            hist.acc.append(res["acc"])

    def finish(self, report):
        """Stop the clients, close the record and report it."""
        import torch
        import torch.distributed as dist

        cfg, hist = self.cfg, self.hist
        for m in sorted(self.live):
            try:
                dist.send(torch.tensor([cfg.rounds, 0, 1]), dst=m + 1, tag=tag(cfg.rounds, CTRL))
            except Exception:
                self.lose(m, cfg.rounds, "lost at shutdown")
        hist.xc, hist.xs = self.xc, self.xs
        hist.lost = sorted(self.lost_at)
        hist.info["lost"] = {m + 1: {"round": r, "why": w} for m, (r, w) in self.lost_at.items()}
        hist.info["seconds"] = time.perf_counter() - self.t_start
        hist.events = self.events
        if report is not None:
            # tensors would travel as shared-memory handles that die with this process: copies
            xc, xs = self.xc.numpy().copy(), self.xs.numpy().copy()
            report.put(("history", 0, History(**{**hist.__dict__, "xc": xc, "xs": xs})))
        return hist


def server_loop(cfg, gloo, report, data) -> History:
    """Rank 0 over the whole run (Algorithm 1, one round after another)."""
    server = SplitServer(cfg, gloo, data)
    for t in range(cfg.rounds):
        tau = server.sched.tau
        eta_s, _eta_c, eta_g = cfg.steps(tau)
        part = server.open_round(t)
        r = server.serve(t, part, tau, eta_s)
        server.close_round(r, tau, eta_g)
    return server.finish(report)
