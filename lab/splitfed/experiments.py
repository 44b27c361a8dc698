"""Drivers the notebooks call: rounds/time to a target, re-timing, client memory.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_real

from .history import History
from .stragglers import StragglerModel

__all__ = ["rounds_to_target", "retime", "client_memory", "fedavg_first_order"]


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


class _PeakTensorMemory:
    """Peak bytes of live tensor storages created inside the block (CPU or CUDA).

    A ``TorchDispatchMode`` sees every tensor an operator returns; storages are tracked with
    weak references, so a storage counts from its creation until it is freed. ``baseline``
    bytes (tensors that exist before the block) are added to every reading.
    """

    def __init__(self, baseline: int = 0):
        self.baseline, self.live, self.peak = int(baseline), {}, int(baseline)

    def __enter__(self):
        from torch.multiprocessing.reductions import StorageWeakRef
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        tracker = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in tree_flatten(out)[0]:
                    if hasattr(t, "untyped_storage"):
                        st = t.untyped_storage()
                        key = st.data_ptr()
                        if key not in tracker.live:
                            tracker.live[key] = (StorageWeakRef(st), st.nbytes())
                tracker._update()
                return out

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def _update(self) -> None:
        for k in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            del self.live[k]
        self.peak = max(self.peak, self.baseline + sum(n for _, n in self.live.values()))

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        return False


def client_memory(
    client_net: Any,
    X: Any,
    *,
    mode: str = "zo",
    lam: float = 5e-3,
    y: Any = None,
    device: Any = None,
) -> dict[str, Any]:
    """Peak memory of one client update: zeroth-order (MU-SplitFed) or first-order (backprop).

    ``"zo"``: the client computes ``h, h+, h-`` under ``no_grad`` at ``x_c`` and
    ``x_c +- lam u_c`` and steps along ``u_c`` with the scalar ``delta_c`` (eqs. C and U): no
    activation is kept for a backward pass. ``"fo"``: the client's forward is recorded by
    autograd and ``h.backward(dL/dh)`` fills the parameter gradients (first-order SplitFed's
    client step); with labels ``y`` the client backpropagates its own cross-entropy instead,
    which, for ``client_net`` the **whole model**, is FedAvg's client (the paper's Fig. 4
    baseline). The peak counts the parameters, the batch and every tensor alive during the
    update: on CUDA ``torch.cuda.max_memory_allocated``, on CPU a dispatch-mode tracker of tensor
    storages (the same quantity; RSS would mostly measure the interpreter and torch itself).

    Parameters
    ----------
    client_net : torch.nn.Module
        The client half.
    X : torch.Tensor
        A batch of inputs.
    mode : {"zo", "fo"}
        Zeroth- or first-order client update.
    lam : float
        ZO perturbation size.
    y : torch.Tensor, optional
        Labels of ``X`` (``"fo"`` only): backpropagate the mean cross-entropy of the output.
    device : str or torch.device, optional
        Where to measure (default: ``lab.device()``).

    Returns
    -------
    dict
        ``peak_bytes``, ``param_bytes``, ``input_bytes``, ``mode``, ``device``, ``method``.

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import torch
    from torch import nn

    from lab.core.runtime import resolve_device

    from .draws import sphere_rows
    from .models import FlatParams, ce_loss

    if not isinstance(client_net, nn.Module):
        raise TypeError(f"client_net must be a torch.nn.Module (got {type(client_net).__name__})")
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.numel() == 0:
        raise TypeError("X must be a non-empty torch.Tensor batch of shape [B, features]")
    check_choice("mode", mode, ["zo", "fo"])
    lam = check_real("lam", lam)
    if not lam > 0:
        raise ValueError(f"lam must be > 0 (got {lam})")
    if y is not None:
        if mode != "fo":
            raise ValueError("y (labels) is only used with mode='fo'")
        if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or y.shape != X.shape[:1]:
            raise TypeError("y must be an int64 torch.Tensor of labels, one per row of X")
    dev = resolve_device(device)
    fc = FlatParams(client_net)
    xc = fc.init(X.dtype).to(dev)
    Xd = X.to(dev)
    u = sphere_rows(np.random.default_rng(0), (fc.dim,), X.dtype).to(dev)
    base = xc.numel() * xc.element_size() + Xd.numel() * Xd.element_size()

    def zo():
        with torch.no_grad():
            _h, hp, hm = fc(xc, Xd), fc(xc + lam * u, Xd), fc(xc - lam * u, Xd)  # eq. (C)
            delta = (hp - hm).square().mean()  # stands in for the server's scalar delta_c
            return xc - 1e-3 * (delta / (2 * lam)) * u  # eq. (U)

    yd = None if y is None else y.to(dev)

    def fo():
        w = xc.clone().requires_grad_(True)
        h = fc(w, Xd)
        if yd is None:
            h.backward(torch.ones_like(h))  # dL/dh from the server
        else:
            ce_loss(h, yd).backward()  # the whole model on the client (FedAvg)
        with torch.no_grad():
            return w - 1e-3 * w.grad

    fn = zo if mode == "zo" else fo
    fn()  # warm-up: autograd sets up its first-call state outside the measured peak
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        start = torch.cuda.memory_allocated(dev)
        out = fn()
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev) - start + base
        method = "torch.cuda.max_memory_allocated"
    else:
        with _PeakTensorMemory(baseline=base) as tr:
            out = fn()
        peak, method = tr.peak, "dispatch-mode tensor tracker"
    del out
    return {
        "peak_bytes": int(peak),
        "param_bytes": int(xc.numel() * xc.element_size()),
        "input_bytes": int(Xd.numel() * Xd.element_size()),
        "mode": mode,
        "device": str(dev),
        "method": method,
    }


def fedavg_first_order(
    data: dict[str, Any],
    cfg: Any,
    *,
    widths: tuple[int, ...] = (64, 32, 32, 10),
    lr: float = 0.1,
    stop_loss: float | None = None,
) -> tuple[list[int], list[float]]:
    """First-order FedAvg peer: each participant takes one SGD step on its batch; average.

    Same participants and batches as MU-SplitFed (seeds of ``cfg``), full MLP, backprop.

    Parameters
    ----------
    data : dict
        From :func:`load_digits_clients`.
    cfg : MUSplitFedConfig
        Rounds, seeds, clients, batch and ``eval_every``.
    widths : tuple of int
        MLP widths.
    lr : float
        SGD step.
    stop_loss : float, optional
        Stop after the first evaluation whose training loss is ``<= stop_loss``.

    Returns
    -------
    (list of int, list of float)
        Evaluation rounds and the training loss there.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import torch

    from .draws import draw_batch, draw_participants
    from .hyperparams import MUSplitFedConfig
    from .models import FlatParams, ce_loss, make_mlp

    if not isinstance(cfg, MUSplitFedConfig):
        raise TypeError(f"cfg must be a MUSplitFedConfig (got {type(cfg).__name__})")
    if not isinstance(data, dict) or "clients" not in data or "train" not in data:
        raise TypeError("data must be the dict returned by load_digits_clients")
    lr = check_real("lr", lr)
    if not lr > 0:
        raise ValueError(f"lr must be > 0 (got {lr})")
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
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
            if stop_loss is not None and losses[-1] <= stop_loss:
                break
    return rounds, losses
