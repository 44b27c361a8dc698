"""Peak memory of one client update: zeroth-order (MU-SplitFed) against first-order (backprop).

See: book/splitfed/01-zeroth-order-split.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_positive

__all__ = ["client_memory"]


class PeakTensorMemory:
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
    ``x_c +- lam u_c`` and steps along ``u_c`` with the scalar ``delta_c`` (eqs. 4 and 6): no
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

    from lab.core.runtime import resolve_device

    _check_memory_args(client_net, X, mode, y)
    lam = check_positive("lam", lam)
    dev = resolve_device(device)
    update, xc, Xd = _client_update(client_net, X, mode, lam, y, dev)
    base = xc.numel() * xc.element_size() + Xd.numel() * Xd.element_size()
    update()  # warm-up: autograd sets up its first-call state outside the measured peak
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        start = torch.cuda.memory_allocated(dev)
        out = update()
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev) - start + base
        method = "torch.cuda.max_memory_allocated"
    else:
        with PeakTensorMemory(baseline=base) as tr:
            out = update()
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


def _check_memory_args(client_net, X, mode, y):
    import torch
    from torch import nn

    if not isinstance(client_net, nn.Module):
        raise TypeError(f"client_net must be a torch.nn.Module (got {type(client_net).__name__})")
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.numel() == 0:
        raise TypeError("X must be a non-empty torch.Tensor batch of shape [B, features]")
    check_choice("mode", mode, ["zo", "fo"])
    if y is not None:
        if mode != "fo":
            raise ValueError("y (labels) is only used with mode='fo'")
        if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or y.shape != X.shape[:1]:
            raise TypeError("y must be an int64 torch.Tensor of labels, one per row of X")


def _client_update(client_net, X, mode, lam, y, dev):
    """The update to measure (eqs. 4 and 6, or backprop), its parameters and batch."""
    import torch

    from .draws import sphere_rows
    from .models import FlatParams, ce_loss

    fc = FlatParams(client_net)
    xc = fc.init(X.dtype).to(dev)
    Xd = X.to(dev)
    u = sphere_rows(np.random.default_rng(0), (fc.dim,), X.dtype).to(dev)

    def zo():
        with torch.no_grad():
            _h, hp, hm = fc(xc, Xd), fc(xc + lam * u, Xd), fc(xc - lam * u, Xd)  # eq. (4)
            delta = (hp - hm).square().mean()  # stands in for the server's scalar delta_c
            return xc - 1e-3 * (delta / (2 * lam)) * u  # eq. (6), client step

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

    return (zo if mode == "zo" else fo), xc, Xd
