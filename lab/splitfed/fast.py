"""MU-SplitFed batched over clients and perturbations: the **fast path** (CPU or CUDA).

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import time
from typing import Any

from lab.core.checks import check_choice, check_real

from .draws import client_direction, draw_batch, draw_participants, server_directions
from .history import History, round_bytes
from .hyperparams import MUSplitFedConfig
from .models import FlatParams, bmm_forward, ce_loss, ce_loss_rows, check_inputs, plain_mlp
from .reference import maybe_eval, record_round
from .stragglers import StragglerModel, TauSchedule

__all__ = ["simulate"]


def simulate(
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

    from lab.core.runtime import resolve_device

    check_inputs(client_net, server_net, client_datasets, cfg)
    check_choice("backend", backend, ["auto", "vmap", "bmm"])
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
    dev = resolve_device(device)
    dt = getattr(torch, cfg.dtype)
    fc, fs = FlatParams(client_net), FlatParams(server_net)
    lc, ls = plain_mlp(client_net), plain_mlp(server_net)
    if backend == "bmm" and (lc is None or ls is None):
        raise ValueError("backend='bmm' needs both halves to be stacks of Linear/ReLU blocks")
    if backend == "auto":
        backend = "bmm" if lc is not None and ls is not None else "vmap"
    if backend == "bmm":

        def client_fwd(W, X):  # [N, d_c], [N, B, in] -> [N, B, H]
            return bmm_forward(lc, W, X)

        def server_loss(W, H, y):  # [N, d_s], [N, B, H], [N, B] -> [N]
            return ce_loss_rows(bmm_forward(ls, W, H), y)

    else:
        client_fwd = vmap(fc)
        server_loss = vmap(lambda w, h, y: ce_loss(fs(w, h), y))
    xc, xs = fc.init(dt).to(dev), fs.init(dt).to(dev)
    data = [(X.to(dev, dt), y.to(dev)) for X, y in client_datasets[: cfg.clients]]
    straggler = straggler or StragglerModel(
        cfg.delay_mean or 0.0, seed=cfg.seed, t_client=cfg.t_client, t_server=cfg.t_server
    )
    sched = TauSchedule(cfg, straggler.t_server)
    lam = cfg.lam
    sign = torch.tensor([0.0, 1.0, -1.0], dtype=dt, device=dev)
    pm = sign[1:]
    hist, clock = History(), 0.0
    hist.info["engine"] = f"fast.simulate[{backend}]"
    from lab.core.progress import progress as _progress

    t0 = time.perf_counter()
    with torch.no_grad():
        for t in _progress(range(cfg.rounds), desc=f"tau={cfg.tau}", disable=not progress):
            tau = sched.tau
            eta_s, eta_c, eta_g = cfg.steps(tau)
            part = draw_participants(cfg, t)
            P = len(part)
            idx = [
                torch.as_tensor(draw_batch(cfg, t, m, len(data[m][1])), device=dev) for m in part
            ]
            Xb = torch.stack([data[m][0][i] for m, i in zip(part, idx, strict=True)])
            yb = torch.stack([data[m][1][i] for m, i in zip(part, idx, strict=True)])
            y2 = yb.repeat_interleave(2, 0)
            U = torch.stack([client_direction(cfg, t, m, fc.dim, dt) for m in part]).to(dev)
            W = (xc[None, None] + lam * sign[None, :, None] * U[:, None]).reshape(3 * P, -1)
            H = client_fwd(W, Xb.repeat_interleave(3, 0)).view(P, 3, cfg.batch, -1)  # eq. (C)
            h = H[:, 0]
            losses = server_loss(xs.expand(P, -1), h, yb).tolist()
            h2 = h.repeat_interleave(2, 0)
            xs_rep = xs.expand(P, -1)
            Uall = torch.stack([server_directions(cfg, t, m, tau, fs.dim, dt) for m in part])
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
            up, down = round_bytes(cfg, fc.dim, h.shape[2], xc.element_size(), P)
            record_round(hist, tau, clock, losses, up, down, tau * P, part, [])
            sched.update(rt["wait"])
            maybe_eval(hist, eval_fn, cfg, t, xc, xs)
            if stop_loss is not None and hist.loss and hist.loss[-1] <= stop_loss:
                break
    hist.xc, hist.xs = xc, xs
    hist.info["seconds"] = time.perf_counter() - t0
    return hist
