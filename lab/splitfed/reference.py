"""MU-SplitFed in one process, client by client: the **reference kernel** (Algorithm 1).

One global round ``t`` (Algorithm 1 of the paper, restated):

1. sample ``P`` of the ``M`` clients; each participant pulls ``x_c``;
2. client ``m`` draws a batch and a direction ``u_c`` and sends ``h, h+, h-`` (eq. C);
3. the split server takes ``tau`` ZO steps on its replica ``x_{s,m}`` using the *clean* ``h``
   (eq. S);
4. it scores ``h+`` and ``h-`` with the *updated* replica and returns the scalar ``delta_c``
   (eq. D);
5. the client steps ``x_{c,m} = x_c - eta_c delta_c / (2 lam) u_c`` (eq. U);
6. both sides aggregate with the global step ``eta_g`` (eq. A).

The helpers (``FlatParams``, ``ce_loss``, the seeded draws: not API) are re-exported here so
that a notebook can redo a round by hand: ``from lab.splitfed import reference as alg``.

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from lab.core.checks import check_real

from .draws import (  # noqa: F401  (re-exported for notebooks and tests)
    client_direction,
    draw_batch,
    draw_participants,
    server_directions,
    sphere_rows,
)
from .history import History, round_bytes
from .hyperparams import MUSplitFedConfig
from .models import FlatParams, ce_loss, check_inputs, plain_mlp  # noqa: F401
from .stragglers import StragglerModel, TauSchedule

__all__ = ["simulate"]


def client_forward(fc: FlatParams, xc: Any, X: Any, u: Any, lam: float):
    """eq. (C): ``h = h(x_c), h+ = h(x_c + lam u_c), h- = h(x_c - lam u_c)``."""
    return fc(xc, X), fc(xc + lam * u, X), fc(xc - lam * u, X)


def server_zo_steps(fs, xs, h, y, cfg, t, m, tau, eta_s, on_step=None):
    """eq. (S): ``tau`` ZO steps on the replica ``x_{s,m}`` with the clean ``h``."""
    lam = cfg.lam
    us = server_directions(cfg, t, m, tau, fs.dim, xs.dtype).to(xs.device)
    for i in range(tau):
        u = us[i]
        delta = ce_loss(fs(xs + lam * u, h), y) - ce_loss(fs(xs - lam * u, h), y)
        xs = xs - eta_s * (delta / (2 * lam)) * u  # x_s^{i+1} = x_s^i - eta_s delta/(2 lam) u_s
        if on_step is not None:
            on_step(i)
    return xs


def client_delta(fs, xs_tau, hp, hm, y):
    """eq. (D): ``delta_c = F(x_s^tau; h+, y) - F(x_s^tau; h-, y)`` with the updated server."""
    return ce_loss(fs(xs_tau, hp), y) - ce_loss(fs(xs_tau, hm), y)


def aggregate(x, updates, eta_g):
    """eq. (A): ``x <- x + eta_g sum_m w_m (x_m - x)``, ``w_m = 1 / |updates|``."""
    if not updates:
        return x
    w = 1.0 / len(updates)
    step = sum(w * (xm - x) for xm in updates)
    return x + eta_g * step


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

    check_inputs(client_net, server_net, client_datasets, cfg)
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
    dt = getattr(torch, cfg.dtype)
    fc, fs = FlatParams(client_net), FlatParams(server_net)
    xc, xs = fc.init(dt), fs.init(dt)
    data = [(X.to(dt), y) for X, y in client_datasets[: cfg.clients]]
    straggler = straggler or StragglerModel(
        cfg.delay_mean or 0.0, seed=cfg.seed, t_client=cfg.t_client, t_server=cfg.t_server
    )
    failures = dict(failures or {})
    sched = TauSchedule(cfg, straggler.t_server)
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
            part = draw_participants(cfg, t, None if pool is None else sorted(pool))
            new_c, new_s, losses, hdim = [], [], [], 0
            for m in part:
                if m in dead_now:  # the process dies before sending anything
                    continue
                X, y = data[m]
                idx = torch.as_tensor(draw_batch(cfg, t, m, len(y)))
                Xb, yb = X[idx], y[idx]
                u_c = client_direction(cfg, t, m, fc.dim, dt)
                h, hp, hm = client_forward(fc, xc, Xb, u_c, cfg.lam)  # eq. (C)
                hdim = h.shape[1]
                xs_m = server_zo_steps(fs, xs, h, yb, cfg, t, m, tau, eta_s)  # eq. (S)
                delta_c = client_delta(fs, xs_m, hp, hm, yb)  # eq. (D)
                new_c.append(xc - eta_c * (delta_c / (2 * cfg.lam)) * u_c)  # eq. (U)
                new_s.append(xs_m)
                losses.append(float(ce_loss(fs(xs, h), yb)))
            xc = aggregate(xc, new_c, eta_g)  # eq. (A), fed server
            xs = aggregate(xs, new_s, eta_g)  # eq. (A), split server
            delays = straggler.sample(t, cfg.clients)[[m for m in part if m not in dead_now]]
            rt = straggler.round_time(delays if len(delays) else np.zeros(1), tau)
            clock += rt["time"]
            up, down = round_bytes(cfg, fc.dim, hdim, xc.element_size(), len(new_c))
            record_round(hist, tau, clock, losses, up, down, tau * len(new_c), part, dead_now)
            sched.update(rt["wait"])
            maybe_eval(hist, eval_fn, cfg, t, xc, xs)
            if stop_loss is not None and hist.loss and hist.loss[-1] <= stop_loss:
                break
    hist.xc, hist.xs = xc, xs
    hist.lost = sorted(failures)
    hist.info["seconds"] = time.perf_counter() - t0
    return hist


def record_round(hist, tau, clock, losses, up, down, steps, part, dead):
    hist.tau.append(tau)
    hist.clock.append(clock)
    hist.batch_loss.append(float(np.mean(losses)) if losses else float("nan"))
    hist.bytes_up.append(up)
    hist.bytes_down.append(down)
    hist.server_steps.append(steps)
    hist.participants.append([m for m in part if m not in dead])


def maybe_eval(hist, eval_fn, cfg, t, xc, xs):
    if eval_fn is None or not ((t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds):
        return
    res = eval_fn(xc, xs)
    hist.eval_round.append(t + 1)
    hist.loss.append(float(res.get("loss", float("nan"))))
    hist.acc.append(float(res.get("acc", float("nan"))))
