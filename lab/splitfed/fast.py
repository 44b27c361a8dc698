"""MU-SplitFed batched over clients and perturbations: the **fast path** (CPU or CUDA).

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import time
from typing import Any

from lab.core.checks import check_choice

from .draws import client_direction, draw_batch, draw_participants, server_directions
from .history import History, maybe_eval
from .hyperparams import MUSplitFedConfig
from .models import bmm_forward, ce_loss, ce_loss_rows, check_inputs, plain_mlp
from .reference import close_round, start_run
from .stragglers import StragglerModel

__all__ = ["simulate"]


def batched_forwards(fc, fs, client_net, server_net, backend):
    """The batched client forward and server loss of ``backend`` (``bmm`` or ``vmap``)."""
    from torch.func import vmap

    lc, ls = plain_mlp(client_net), plain_mlp(server_net)
    if backend == "bmm" and (lc is None or ls is None):
        raise ValueError("backend='bmm' needs both halves to be stacks of Linear/ReLU blocks")
    if backend == "auto":
        backend = "bmm" if lc is not None and ls is not None else "vmap"
    if backend == "vmap":
        return backend, vmap(fc), vmap(lambda w, h, y: ce_loss(fs(w, h), y))

    def client_fwd(W, X):  # [N, d_c], [N, B, in] -> [N, B, H]
        return bmm_forward(lc, W, X)

    def server_loss(W, H, y):  # [N, d_s], [N, B, H], [N, B] -> [N]
        return ce_loss_rows(bmm_forward(ls, W, H), y)

    return backend, client_fwd, server_loss


def round_batches(run, t, part):
    """The participants' batches ``[P, B, in]``, labels ``[P, B]`` and directions ``u_c``."""
    import torch

    cfg, data, dev = run["cfg"], run["data"], run["xc"].device
    idx = [torch.as_tensor(draw_batch(cfg, t, m, len(data[m][1])), device=dev) for m in part]
    Xb = torch.stack([data[m][0][i] for m, i in zip(part, idx, strict=True)])
    yb = torch.stack([data[m][1][i] for m, i in zip(part, idx, strict=True)])
    U = torch.stack([client_direction(cfg, t, m, run["fc"].dim, run["dtype"]) for m in part])
    return Xb, yb, U.to(dev)


def batched_round(run, fwd, t, part, tau, steps):
    """One round for all participants at once: eqs. (4)-(7)."""
    import torch

    cfg, (client_fwd, server_loss), (eta_s, eta_c, eta_g) = run["cfg"], fwd, steps
    lam, dt, xc, xs, P = cfg.lam, run["dtype"], run["xc"], run["xs"], len(part)
    sign = torch.tensor([0.0, 1.0, -1.0], dtype=dt, device=xc.device)
    pm = sign[1:]
    Xb, yb, U = round_batches(run, t, part)
    y2 = yb.repeat_interleave(2, 0)
    W = (xc[None, None] + lam * sign[None, :, None] * U[:, None]).reshape(3 * P, -1)
    H = client_fwd(W, Xb.repeat_interleave(3, 0)).view(P, 3, cfg.batch, -1)  # eq. (4)
    h = H[:, 0]
    losses = server_loss(xs.expand(P, -1), h, yb).tolist()
    h2 = h.repeat_interleave(2, 0)
    xs_rep = xs.expand(P, -1)
    Uall = torch.stack([server_directions(cfg, t, m, tau, run["fs"].dim, dt) for m in part])
    Uall = Uall.to(xc.device)
    for i in range(tau):  # eq. (5), all replicas at once, clean h
        Us = Uall[:, i]
        Ws = (xs_rep[:, None] + lam * pm[None, :, None] * Us[:, None]).reshape(2 * P, -1)
        L = server_loss(Ws, h2, y2).view(P, 2)
        xs_rep = xs_rep - eta_s * ((L[:, 0] - L[:, 1]) / (2 * lam))[:, None] * Us
    Ws = xs_rep.repeat_interleave(2, 0)
    L = server_loss(Ws, H[:, 1:].reshape(2 * P, cfg.batch, -1), y2).view(P, 2)  # eq. (6)
    delta_c = L[:, 0] - L[:, 1]
    xc_new = xc[None] - eta_c * (delta_c / (2 * lam))[:, None] * U  # eq. (6), client step
    run["xc"] = xc + eta_g * (xc_new - xc[None]).mean(0)  # eq. (7)
    run["xs"] = xs + eta_g * (xs_rep - xs[None]).mean(0)
    return losses, h.shape[2]


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
        As in :func:`simulate` (``cfg.stop_loss`` ends the run early).
    device : str or torch.device, optional
        Where to run (default: ``lab.device()``, so CUDA when available).
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

    from lab.core.progress import progress as _progress
    from lab.core.runtime import resolve_device

    check_inputs(client_net, server_net, client_datasets, cfg)
    check_choice("backend", backend, ["auto", "vmap", "bmm"])
    if straggler is not None and not isinstance(straggler, StragglerModel):
        raise TypeError(f"straggler must be a StragglerModel (got {type(straggler).__name__})")
    run = start_run(client_net, server_net, client_datasets, cfg, straggler, resolve_device(device))
    backend, *fwd = batched_forwards(run["fc"], run["fs"], client_net, server_net, backend)
    hist = History()
    hist.info["engine"] = f"fast.simulate[{backend}]"
    t0 = time.perf_counter()
    with torch.no_grad():
        for t in _progress(range(cfg.rounds), desc=f"tau={cfg.tau}", disable=not progress):
            tau = run["sched"].tau
            part = draw_participants(cfg, t)
            losses, hdim = batched_round(run, fwd, t, part, tau, cfg.steps(tau))
            close_round(run, hist, t, tau, (part, [], losses, hdim))
            if maybe_eval(hist, eval_fn, cfg, t, run["xc"], run["xs"]):
                break
    hist.xc, hist.xs = run["xc"], run["xs"]
    hist.info["seconds"] = time.perf_counter() - t0
    return hist
