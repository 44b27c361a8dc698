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

__all__ = ["simulate", "simulate_seeds"]


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

    check_inputs(client_net, server_net, client_datasets, cfg, straggler)
    check_choice("backend", backend, ["auto", "vmap", "bmm"])
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


def _stacked_directions(runs, t, parts, tau, dt):
    """Every seed's server directions of round ``t``: ``[S * P, tau, d_s]``."""
    import torch

    rows = [
        server_directions(r["cfg"], t, m, tau, r["fs"].dim, dt)
        for r, part in zip(runs, parts, strict=True)
        for m in part
    ]
    return torch.stack(rows).to(runs[0]["xc"].device)


def seeds_round(runs, fwd, t, parts, tau, steps):
    """One round of ``S`` independent runs at once (``S * P`` rows): eqs. (4)-(7).

    Each run keeps its own draws (its ``cfg.seed``), data and parameters; only the tensor
    operations are shared, so run ``k`` computes what :func:`batched_round` computes for it.
    """
    import torch

    cfg, (client_fwd, server_loss), (eta_s, eta_c, eta_g) = runs[0]["cfg"], fwd, steps
    lam, dt, S, P = cfg.lam, runs[0]["dtype"], len(runs), len(parts[0])
    xc = torch.stack([r["xc"] for r in runs])
    xs = torch.stack([r["xs"] for r in runs])
    sign = torch.tensor([0.0, 1.0, -1.0], dtype=dt, device=xc.device)
    drawn = [round_batches(r, t, part) for r, part in zip(runs, parts, strict=True)]
    Xb, yb, U = (torch.cat(z) for z in zip(*drawn, strict=True))
    xc_rows, xs_rep = xc.repeat_interleave(P, 0), xs.repeat_interleave(P, 0)
    y2 = yb.repeat_interleave(2, 0)
    W = (xc_rows[:, None] + lam * sign[None, :, None] * U[:, None]).reshape(3 * S * P, -1)
    H = client_fwd(W, Xb.repeat_interleave(3, 0)).view(S * P, 3, cfg.batch, -1)  # eq. (4)
    h = H[:, 0]
    losses = server_loss(xs_rep, h, yb).view(S, P).tolist()
    h2 = h.repeat_interleave(2, 0)
    Uall = _stacked_directions(runs, t, parts, tau, dt)
    for i in range(tau):  # eq. (5), every replica of every run at once, clean h
        Us = Uall[:, i]
        Ws = (xs_rep[:, None] + lam * sign[None, 1:, None] * Us[:, None]).reshape(2 * S * P, -1)
        L = server_loss(Ws, h2, y2).view(S * P, 2)
        xs_rep = xs_rep - eta_s * ((L[:, 0] - L[:, 1]) / (2 * lam))[:, None] * Us
    Ws = xs_rep.repeat_interleave(2, 0)
    L = server_loss(Ws, H[:, 1:].reshape(2 * S * P, cfg.batch, -1), y2).view(S * P, 2)  # eq. (6)
    xc_new = xc_rows - eta_c * ((L[:, 0] - L[:, 1]) / (2 * lam))[:, None] * U  # eq. (6)
    xc = xc + eta_g * (xc_new.view(S, P, -1) - xc[:, None]).mean(1)  # eq. (7)
    xs = xs + eta_g * (xs_rep.view(S, P, -1) - xs[:, None]).mean(1)
    for k, r in enumerate(runs):
        r["xc"], r["xs"] = xc[k], xs[k]
    return losses, h.shape[2]


def _check_seed_runs(runs: Any) -> None:
    if not isinstance(runs, (list, tuple)) or not runs:
        raise TypeError("runs must be a non-empty list of (client_net, server_net, "
                        "client_datasets, cfg, eval_fn) tuples, one per seed")  # fmt: skip
    for k, run in enumerate(runs):
        if not isinstance(run, tuple) or len(run) != 5:
            raise TypeError(f"runs[{k}] must be a (client_net, server_net, client_datasets, "
                            "cfg, eval_fn) tuple")  # fmt: skip
        check_inputs(*run[:4])
        cfg = run[3]
        if cfg.adaptive_tau or cfg.stop_loss is not None or cfg.delay_mean:
            raise ValueError(f"runs[{k}]: simulate_seeds runs a fixed tau without delays or "
                             "stop_loss (use simulate for adaptive or early-stopped runs)")  # fmt: skip
        first = runs[0][3]
        same = ("tau", "rounds", "participants", "batch", "lam", "dtype", "eval_every")
        if any(getattr(cfg, f) != getattr(first, f) for f in same) or cfg.steps(
            cfg.tau
        ) != first.steps(first.tau):
            raise ValueError(f"runs[{k}]: every run must share {same} and the step sizes")


def simulate_seeds(runs: Any, *, device: Any = None, backend: str = "auto") -> list[History]:
    """Several seeds of one fixed-``tau`` run in the same tensor operations: the fast path
    batched over seeds as well as clients and perturbations.

    Parameters
    ----------
    runs : list of tuple
        One ``(client_net, server_net, client_datasets, cfg, eval_fn)`` per seed, as the
        arguments of :func:`simulate`; the configs differ only in ``seed`` (same ``tau``,
        rounds, participants, batch, ``lam``, dtype, ``eval_every`` and steps; no adaptive
        ``tau``, delays or ``stop_loss``) and the halves share one architecture.
    device : str or torch.device, optional
        Where to run (default: ``lab.device()``).
    backend : {"auto", "vmap", "bmm"}
        As in :func:`simulate`.

    Returns
    -------
    list of History
        One per run, each what :func:`simulate` returns for it (to rounding).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    _check_seed_runs(runs)
    check_choice("backend", backend, ["auto", "vmap", "bmm"])
    dev = resolve_device(device)
    state = [start_run(c, s, d, cfg, None, dev) for c, s, d, cfg, _ in runs]
    backend, *fwd = batched_forwards(
        state[0]["fc"], state[0]["fs"], runs[0][0], runs[0][1], backend
    )
    hists = [History() for _ in runs]
    t0 = time.perf_counter()
    cfg = runs[0][3]
    with torch.no_grad():
        for t in range(cfg.rounds):
            parts = [draw_participants(r["cfg"], t) for r in state]
            losses, hdim = seeds_round(state, fwd, t, parts, cfg.tau, cfg.steps(cfg.tau))
            for r, h, part, loss, run in zip(state, hists, parts, losses, runs, strict=True):
                close_round(r, h, t, cfg.tau, (part, [], loss, hdim))
                maybe_eval(h, run[4], r["cfg"], t, r["xc"], r["xs"])
    for r, h in zip(state, hists, strict=True):
        h.xc, h.xs = r["xc"], r["xs"]
        h.info.update(engine=f"fast.simulate_seeds[{backend}]", seeds=len(runs))
        h.info["seconds"] = time.perf_counter() - t0
    return hists
