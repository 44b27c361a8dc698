"""MU-SplitFed in one process, client by client: the **reference kernel** (Algorithm 1).

One global round ``t`` (Algorithm 1 of the paper, restated):

1. sample ``P`` of the ``M`` clients; each participant pulls ``x_c``;
2. client ``m`` draws a batch and a direction ``u_c`` and sends ``h, h+, h-`` (eq. 4);
3. the split server takes ``tau`` ZO steps on its replica ``x_{s,m}`` using the *clean* ``h``
   (eq. 5);
4. it scores ``h+`` and ``h-`` with the *updated* replica and returns the scalar ``delta_c``
   (eq. 6);
5. the client steps ``x_{c,m} = x_c - eta_c delta_c / (2 lam) u_c`` (eq. 6);
6. both sides aggregate with the global step ``eta_g`` (eq. 7).

The helpers (``FlatParams``, ``ce_loss``, the seeded draws: not API) are re-exported here so
that a notebook can redo a round by hand: ``from lab.splitfed import reference as alg``.

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .draws import (  # noqa: F401  (re-exported for notebooks and tests)
    client_direction,
    draw_batch,
    draw_participants,
    server_directions,
    sphere_rows,
)
from .history import History, maybe_eval, record_round, round_bytes
from .hyperparams import MUSplitFedConfig
from .models import FlatParams, ce_loss, check_inputs, plain_mlp  # noqa: F401
from .stragglers import StragglerModel, TauSchedule

__all__ = ["simulate"]


def client_forward(fc: FlatParams, xc: Any, X: Any, u_c: Any, *, lam: float):
    """eq. (4): ``h = h(x_c), h+ = h(x_c + lam u_c), h- = h(x_c - lam u_c)``."""
    return fc(xc, X), fc(xc + lam * u_c, X), fc(xc - lam * u_c, X)


def server_zo_steps(fs, xs, h, y, u_s, *, lam, eta_s, on_step=None):
    """eq. (5): ``tau = len(u_s)`` ZO steps on the replica ``x_{s,m}`` with the clean ``h``."""
    for i, u in enumerate(u_s):
        delta = ce_loss(fs(xs + lam * u, h), y) - ce_loss(fs(xs - lam * u, h), y)
        xs = xs - eta_s * (delta / (2 * lam)) * u  # x_s^{i+1} = x_s^i - eta_s delta/(2 lam) u_s
        if on_step is not None:
            on_step(i)
    return xs


def client_delta(fs, xs_tau, hp, hm, y):
    """eq. (6): ``delta_c = F(x_s^tau; h+, y) - F(x_s^tau; h-, y)`` with the updated server."""
    return ce_loss(fs(xs_tau, hp), y) - ce_loss(fs(xs_tau, hm), y)


def client_update(xc, delta_c, u_c, *, lam, eta_c):
    """eq. (6), client step: ``x_{c,m} = x_c - eta_c delta_c / (2 lam) u_c``."""
    return xc - eta_c * (delta_c / (2 * lam)) * u_c


def aggregate(x, updates, eta_g):
    """eq. (7): ``x <- x + eta_g sum_m w_m (x_m - x)``, ``w_m = 1 / |updates|``."""
    if not updates:
        return x
    w = 1.0 / len(updates)
    step = sum(w * (xm - x) for xm in updates)
    return x + eta_g * step


def client_round(run, t, m, tau, eta_s, eta_c):
    """Algorithm 1, steps 2-5, for participant ``m``: eqs. (4), (5), (6)."""
    import torch

    cfg, fc, fs = run["cfg"], run["fc"], run["fs"]
    X, y = run["data"][m]
    idx = torch.as_tensor(draw_batch(cfg, t, m, len(y)))
    Xb, yb = X[idx], y[idx]
    u_c = client_direction(cfg, t, m, fc.dim, run["dtype"])
    h, hp, hm = client_forward(fc, run["xc"], Xb, u_c, lam=cfg.lam)  # eq. (4)
    u_s = server_directions(cfg, t, m, tau, fs.dim, run["xs"].dtype).to(run["xs"].device)
    xs_m = server_zo_steps(fs, run["xs"], h, yb, u_s, lam=cfg.lam, eta_s=eta_s)  # eq. (5)
    delta_c = client_delta(fs, xs_m, hp, hm, yb)  # eq. (6)
    xc_m = client_update(run["xc"], delta_c, u_c, lam=cfg.lam, eta_c=eta_c)  # eq. (6), client step
    return xc_m, xs_m, float(ce_loss(fs(run["xs"], h), yb)), h.shape[1]


def start_run(client_net, server_net, client_datasets, cfg, straggler, device=None):
    """The state every engine starts from: flat parameters, data, the clock and ``tau``."""
    import torch

    dt = getattr(torch, cfg.dtype)
    fc, fs = FlatParams(client_net), FlatParams(server_net)
    straggler = straggler or StragglerModel(
        cfg.delay_mean or 0.0, seed=cfg.seed, t_client=cfg.t_client, t_server=cfg.t_server
    )
    if device is None:
        xc, xs = fc.init(dt), fs.init(dt)
        data = [(X.to(dt), y) for X, y in client_datasets[: cfg.clients]]
    else:
        xc, xs = fc.init(dt).to(device), fs.init(dt).to(device)
        data = [(X.to(device, dt), y.to(device)) for X, y in client_datasets[: cfg.clients]]
    return {
        "cfg": cfg, "fc": fc, "fs": fs, "xc": xc, "xs": xs, "data": data, "dtype": dt,
        "straggler": straggler, "sched": TauSchedule(cfg, straggler.t_server), "clock": 0.0,
    }  # fmt: skip


def round_participants(cfg, t, failures):
    """Who is sampled in round ``t`` and who of them dies before sending (``failures``)."""
    alive = [m for m in range(cfg.clients) if failures.get(m, cfg.rounds + 1) > t]
    dead_now = [m for m, r in failures.items() if r == t]
    pool = None if len(alive) + len(dead_now) == cfg.clients else alive + dead_now
    return draw_participants(cfg, t, None if pool is None else sorted(pool)), dead_now


def close_round(run, hist, t, tau, served):
    """Advance the simulated clock, record the round and update ``tau`` (after eq. 7)."""
    cfg, part, dead, losses, hdim = run["cfg"], *served
    kept = [m for m in part if m not in dead]
    delays = run["straggler"].draw(t, cfg.clients)[kept]
    rt = run["straggler"].clock(delays if len(delays) else np.zeros(1), tau)
    run["clock"] += rt["time"]
    up, down = round_bytes(cfg, run["fc"].dim, hdim, run["xc"].element_size(), len(kept))
    record_round(hist, tau, run["clock"], losses, up, down, tau * len(kept), part, dead)
    run["sched"].update(rt["wait"])


def simulate(
    client_net: Any,
    server_net: Any,
    client_datasets: Any,
    cfg: MUSplitFedConfig,
    eval_fn: Any = None,
    *,
    straggler: StragglerModel | None = None,
    failures: dict[int, int] | None = None,
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
        Hyper-parameters (``cfg.stop_loss`` ends the run early).
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

    from lab.core.progress import progress as _progress

    check_inputs(client_net, server_net, client_datasets, cfg, straggler)
    run = start_run(client_net, server_net, client_datasets, cfg, straggler)
    failures = dict(failures or {})
    hist = History()
    hist.info["engine"] = "simulate"
    t0 = time.perf_counter()
    with torch.no_grad():
        for t in _progress(range(cfg.rounds), desc=f"tau={cfg.tau}", disable=not progress):
            tau = run["sched"].tau
            eta_s, eta_c, eta_g = cfg.steps(tau)
            part, dead_now = round_participants(cfg, t, failures)
            new_c, new_s, losses, hdim = [], [], [], 0
            for m in part:
                if m in dead_now:  # the process dies before sending anything
                    continue
                xc_m, xs_m, loss, hdim = client_round(run, t, m, tau, eta_s, eta_c)
                new_c.append(xc_m)
                new_s.append(xs_m)
                losses.append(loss)
            run["xc"] = aggregate(run["xc"], new_c, eta_g)  # eq. (7), fed server
            run["xs"] = aggregate(run["xs"], new_s, eta_g)  # eq. (7), split server
            close_round(run, hist, t, tau, (part, dead_now, losses, hdim))
            if maybe_eval(hist, eval_fn, cfg, t, run["xc"], run["xs"]):
                break
    hist.xc, hist.xs = run["xc"], run["xs"]
    hist.lost = sorted(failures)
    hist.info["seconds"] = time.perf_counter() - t0
    return hist
