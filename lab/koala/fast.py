"""The fast path of KOALA++'s step: torch kernels over a list of tensors (CPU or CUDA).

`KoalaPP` calls one of two kernels per parameter group, with the same state and the same
equations as `lab.koala.reference.koalapp` (the labels ``(koala-recursion)``,
``(koala-closure)``, ``(koala-update)``, ``(koala-init)`` are the lesson page's):

* `koalapp_foreach_`, the multi-tensor path, with two code paths: on CPU the state is updated in
  place by ``torch._foreach_*`` ops with the per-tensor scalars as vectors and the rare cases
  (first step, skipped tensors) sorted out on the host; on CUDA all tensors are concatenated
  into one flat buffer, the per-tensor dot products are ``segment_reduce`` kernels and the
  skip rule and first step are ``torch.where`` masks, so nothing is read on the host;
* ``koalapp_loop_``, the per-tensor loop (the readable twin, one tensor at a time).

Both are tested against the reference (``tests/test_koala.py``) and timed against
``torch.optim.Adam`` by ``benchmarks/bench_koala.py``.

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from lab.core.checks import check_bool, check_choice, check_positive

__all__ = ["koalapp_foreach_", "init_state"]

#: the per-tensor state of KOALA++ (`init_state` makes it; `koalapp_foreach_` updates it)
STATE_KEYS = ("v", "h_prev", "S", "initialized")


def as_scalar(name: str, value: Any, like: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a scalar (got shape {tuple(value.shape)})")
        return value.detach().reshape(()).to(device=like.device, dtype=like.dtype)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number or a 0-d tensor (got {type(value).__name__})")
    return torch.tensor(float(value), device=like.device, dtype=like.dtype)


def _scalar(name: str, value: Any, dev: torch.device, cd: torch.dtype) -> torch.Tensor:
    """`as_scalar` without a template tensor; a 0-d tensor already in place passes as it is."""
    if (
        type(value) is torch.Tensor
        and value.dim() == 0
        and value.dtype == cd
        and value.device == dev
        and not value.requires_grad
    ):
        return value
    return as_scalar(name, value, torch.empty((), device=dev, dtype=cd))


def compute_dtype(p: torch.Tensor) -> torch.dtype:
    """float64 parameters are filtered in float64, all others in float32 (the dot products
    underflow in half precision)."""
    return torch.float64 if p.dtype == torch.float64 else torch.float32


def init_state(p: torch.Tensor, state: dict | None = None) -> dict:
    """The KOALA++ state of one parameter tensor, created in ``state`` where it is missing.

    ``v`` and ``h_prev`` (flat, float32 or float64), ``S`` (0-d) and ``initialized`` (a 0-d
    float flag: ``load_state_dict`` casts floating state to the parameter dtype), all on the
    parameter's device; a state that already holds them is returned as it is.

    Parameters
    ----------
    p : torch.Tensor
        The parameter.
    state : dict, optional
        Where to put the state (default: a new dict).

    Returns
    -------
    dict
        ``state``, with the four entries of ``STATE_KEYS``.

    See: book/koala/02-training-digits.ipynb
    """
    if not isinstance(p, torch.Tensor):
        raise TypeError(f"p must be a torch.Tensor (got {type(p).__name__})")
    if state is None:
        state = {}
    elif not isinstance(state, dict):
        raise TypeError(f"state must be a dict (got {type(state).__name__})")
    if "v" not in state:
        cd = compute_dtype(p)
        state["v"] = torch.zeros(p.numel(), device=p.device, dtype=cd)
        state["h_prev"] = torch.zeros(p.numel(), device=p.device, dtype=cd)
        state["S"] = torch.ones((), device=p.device, dtype=cd)
        state["initialized"] = torch.zeros((), device=p.device, dtype=cd)
    return state


def _check_hyper(name: str, value: Any, allow_zero: bool) -> float:
    """A cheap check for the per-step hyperparameters (the fast path runs it every step)."""
    if type(value) is float and math.isfinite(value) and (value > 0 or allow_zero and value == 0):
        return value
    return check_positive(name, value, allow_zero=allow_zero)


def _check_lists(params, grads, states) -> None:
    """Types, lengths, shapes and devices of the tensor lists (cheap: it runs every step)."""
    for name, xs in (("params", params), ("grads", grads), ("states", states)):
        if type(xs) is not list and (not isinstance(xs, Sequence) or isinstance(xs, str | bytes)):
            raise TypeError(f"{name} must be a list (got {type(xs).__name__})")
    m = len(params)
    if m == 0 or len(grads) != m or len(states) != m:
        raise ValueError(
            "params, grads and states must be non-empty lists of equal length "
            f"(got {len(params)}, {len(grads)}, {len(states)})"
        )
    Tensor = torch.Tensor
    dev = None
    for i in range(m):
        p, g, st = params[i], grads[i], states[i]
        if not (isinstance(p, Tensor) and isinstance(g, Tensor)):
            raise TypeError(
                f"params[{i}] and grads[{i}] must be torch.Tensors "
                f"(got {type(p).__name__}, {type(g).__name__})"
            )
        if g.shape != p.shape:
            raise ValueError(f"grads[{i}] has shape {tuple(g.shape)}, params[{i}] {tuple(p.shape)}")
        if dev is None:
            dev = p.device
        if p.device != dev or g.device != dev:
            raise ValueError(f"params and grads must be on one device ({dev}); item {i} is not")
        if type(st) is not dict and not isinstance(st, Mapping):
            raise TypeError(f"states[{i}] must be a dict (got {type(st).__name__})")
        if "v" not in st:  # a fresh state: make it (as KoalaPP does on a tensor's first step)
            init_state(p, st)
        elif "initialized" not in st or "S" not in st or "h_prev" not in st:
            missing = [k for k in STATE_KEYS if k not in st]
            raise ValueError(f"states[{i}] lacks {missing} (make it with init_state)")


_LEN_CACHE: dict = {}


class KoalaStep(NamedTuple):
    """One step's measurement and hyperparameters, as `koalapp_foreach_` validated them: what
    its two code paths and ``koalapp_loop_`` take beside the tensors and their states."""

    loss: torch.Tensor
    R: torch.Tensor
    lr: float
    sigma0: float
    q: float
    weight_decay: float
    symmetric: bool
    init: str
    eps: float


def koalapp_foreach_(
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    states: Sequence[dict],
    *,
    loss: torch.Tensor,
    R: torch.Tensor,
    lr: float,
    sigma0: float,
    q: float,
    weight_decay: float = 0.0,
    symmetric: bool = True,
    init: str = "phantom",
    eps: float = 1e-9,
    host_checks: bool | None = None,
) -> torch.Tensor:
    """KOALA++ for a list of tensors at once, with multi-tensor (``torch._foreach_*``) ops.

    Two code paths, the same equations. With host checks (the default on CPU): the state is
    updated in place by multi-tensor ops (``_foreach_mul_``, ``_foreach_addcmul_``,
    ``_foreach_add_``, ``_foreach_copy_``) with the per-tensor scalars of the recursion, the
    closure and the update as vectors of length ``m`` (number of tensors), the dot products are
    one BLAS dot per tensor, and the rare cases (first step, skipped tensors) are sorted out by
    reading the per-tensor flags on the host; about 15 passes over the parameters per step, no
    temporaries. Without (the default on CUDA): all tensors are concatenated into one flat
    buffer, the per-tensor dot products are ``segment_reduce`` kernels, and the skip rule and
    the first-step initialisation are ``torch.where`` masks, so nothing reads a value on the
    host (no device-to-host sync; about 30 kernels per step whatever ``m`` is).

    Parameters
    ----------
    params, grads : sequence of tensors
        Same device, same shapes; updated in place (``params`` only).
    states : sequence of dict
        Per tensor ``v``, ``h_prev`` (flat, float32/64), ``S`` (0-d), ``initialized`` (0-d
        float flag), as made by `init_state` (an empty dict is filled on first use); updated
        in place.
    loss, R : 0-d tensors or floats
        Batch loss ``L_k`` and measurement noise ``R_k``.
    lr, sigma0, q, weight_decay, symmetric, init, eps
        As in `KoalaPP`.
    host_checks : bool, optional
        Read the "new / active" flags on the host and run the in-place multi-tensor path
        (default: on CPU only). ``False`` runs the sync-free flat CUDA code path on any device
        (the tests use it to check that path on CPU).

    Returns
    -------
    tensor (m,) bool or None
        Tensors whose ``S_k <= 0`` this step (a health flag, not read here); on the
        host-checks path only the active tensors are listed (``None`` when none is).

    See: book/koala/02-training-digits.ipynb
    """
    _check_lists(params, grads, states)
    lr = _check_hyper("lr", lr, allow_zero=False)
    sigma0 = _check_hyper("sigma0", sigma0, allow_zero=True)
    q = _check_hyper("q", q, allow_zero=True)
    weight_decay = _check_hyper("weight_decay", weight_decay, allow_zero=True)
    eps = _check_hyper("eps", eps, allow_zero=True)
    if type(symmetric) is not bool:
        symmetric = check_bool("symmetric", symmetric)
    if init != "phantom" and init != "prior":
        init = check_choice("init", init, ("phantom", "prior"))
    dev = params[0].device
    cd = compute_dtype(params[0])
    loss, R = _scalar("loss", loss, dev, cd), _scalar("R", R, dev, cd)
    on_cpu = (dev.type == "cpu") if host_checks is None else check_bool("host_checks", host_checks)
    # host reads are free on CPU: the multi-tensor path without masks; else the flat one
    kernel = _koalapp_multi_ if on_cpu else _koalapp_flat_
    hp = KoalaStep(loss, R, lr, sigma0, q, weight_decay, symmetric, init, eps)
    if torch.is_grad_enabled():  # the parameters are updated in place, outside autograd
        with torch.no_grad():
            return kernel(params, grads, states, hp)
    return kernel(params, grads, states, hp)


def _koalapp_flat_(params, grads, states, hp: KoalaStep):
    """The sync-free path of `koalapp_foreach_` (CUDA, or ``host_checks=False``): one flat
    buffer, ``segment_reduce`` dot products, ``torch.where`` masks; nothing is read on the host.
    """
    loss, R, lr, sigma0, q, weight_decay, symmetric, init, eps = hp
    dev = params[0].device
    cd = compute_dtype(params[0])
    sizes = [p.numel() for p in params]
    key = (tuple(sizes), str(dev))

    lengths = _LEN_CACHE.get(key)
    if lengths is None:
        lengths = _LEN_CACHE.setdefault(key, torch.tensor(sizes, device=dev))
    N = sum(sizes)

    def dot(u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # per-tensor <u, w>, shape (m,)
        return torch.segment_reduce(u * w, "sum", lengths=lengths)  # one kernel on CUDA

    def expand(s: torch.Tensor) -> torch.Tensor:  # per-tensor scalars -> flat (N,)
        return torch.repeat_interleave(s, lengths, output_size=N)

    def segmul_(s: torch.Tensor, X: torch.Tensor) -> torch.Tensor:  # X *= expand(s), in place
        return X.mul_(expand(s))

    G = torch.cat([g.reshape(-1) for g in grads]).to(cd)
    Pf = torch.cat([p.reshape(-1) for p in params]).to(cd)
    H = torch.add(G, Pf, alpha=weight_decay) if weight_decay else G  # H_k incl. wd * theta
    Vp_old = torch.cat([s["v"] for s in states]).to(cd)
    Hp_old = torch.cat([s["h_prev"] for s in states]).to(cd)
    Sp_old = torch.stack([s["S"] for s in states]).to(cd)
    new = torch.stack([s["initialized"] for s in states]) < 0.5  # (m,) not yet initialised
    new_e = expand(new)
    Vp = torch.where(new_e, sigma0 * H, Vp_old)  # (koala-init) v_0 = sigma0 H_1 where new
    Hp = torch.where(new_e, H, Hp_old)  # (koala-init) H_0 = H_1 where new
    x, y = dot(Hp, Hp), dot(Hp, Vp)  # x = ||H_{k-1}||^2, y = H_{k-1} v_{k-1}^T
    a, c = dot(H, Hp), dot(H, Vp)  # a = H_k H_{k-1}^T, c = H_k v_{k-1}^T
    gg, pp = dot(G, G), dot(Pf, Pf)  # ||grad||^2 (skip rule), ||theta||^2 (weight decay)
    Sp = torch.where(new, y + q * x + R, Sp_old)  # (koala-init) S_0 = H_1 (v_0 + Q H_1)^T + R
    lam = (c + q * a) / Sp  # (koala-recursion) lambda_k
    alpha = a / x  # (koala-closure) alpha_k
    w = (c / x - a * y / (x * x)) if symmetric else torch.zeros_like(x)  # (koala-closure) beta_k
    v = segmul_(alpha - lam, Vp.clone())  # (koala-recursion) (alpha_k - lambda_k) v_{k-1}
    v.add_(segmul_(w - q * lam, Hp.clone())).add_(H, alpha=q)  # + (w - Q lam) H_{k-1} + Q H_k
    if init == "prior":
        v = torch.where(new_e, sigma0 * H, v)  # v_1 = sigma0 H_1 where new
    g = torch.add(v, H, alpha=q)  # (koala-update) g_k = v_k + Q H_k = H_k P_hat_k
    S = dot(H, g) + R  # (koala-update) S_k = H_k g_k^T + R_k
    active = gg >= eps * eps  # skip rule ||grad|| < eps: keep the old state
    L_t = loss + 0.5 * weight_decay * pp  # (koala-update) per-tensor L~_k with weight decay
    scale = torch.where(active, -lr * L_t / S, torch.zeros_like(S))
    act_e = expand(active)
    v_new = torch.where(act_e, v, Vp_old)
    h_new = torch.where(act_e, H, Hp_old)
    S_new = torch.where(active, S, Sp_old)
    delta = segmul_(scale, g)  # (koala-update) -eta L~_k g_k / S_k (g is not needed afterwards)
    deltas = [d.view_as(p).to(p.dtype) for d, p in zip(delta.split(sizes), params, strict=True)]
    torch._foreach_add_(list(params), deltas)
    torch._foreach_copy_([s["v"] for s in states], list(v_new.split(sizes)))
    torch._foreach_copy_([s["h_prev"] for s in states], list(h_new.split(sizes)))
    init_new = (~new | active).to(cd)
    for i, s in enumerate(states):
        s["S"] = S_new[i]
        s["initialized"] = init_new[i]
    return active & (S <= 0)


def _dots(us: Sequence[torch.Tensor], ws: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-tensor ``<u_i, w_i>`` as a vector: one BLAS dot each (torch has no multi-tensor dot;
    ``torch._foreach_mm`` of ``(1, n) @ (n, 1)`` was measured 40x slower on CPU)."""
    return torch.stack([torch.dot(u, w) for u, w in zip(us, ws, strict=True)])


def _phantom_(H, st, q, sigma0, R):
    """First step of a tensor: ``v_0 = sigma0 H_1``, ``H_0 = H_1``, ``S_0 = H_1 (v_0 + Q H_1)^T + R``
    written into its state (the phantom update of the authors' initialisation)."""
    st["v"].copy_(H).mul_(sigma0)
    st["h_prev"].copy_(H)
    st["S"] = torch.dot(st["h_prev"], st["v"] + q * st["h_prev"]) + R


def _koalapp_multi_(params, grads, states, hp: KoalaStep):
    """The host-checks path of `koalapp_foreach_`: in-place multi-tensor ops on the state.

    The per-tensor scalars (length ``m``) are computed in numpy, in the compute dtype and in
    the loop's order of operations (so bit for bit as the loop's 0-d torch ops): on CPU a torch
    op on a 0-d tensor costs about 2 us of dispatch, a numpy op on a short vector a third of it.
    """
    loss, R, lr, sigma0, q, weight_decay, symmetric, init, eps = hp
    cd = compute_dtype(params[0])
    nd = np.float64 if cd == torch.float64 else np.float32
    Gs = [g.reshape(-1).to(cd) for g in grads]  # views when contiguous and already in cd
    gg = _dots(Gs, Gs).numpy()  # ||grad||^2 for the skip rule
    keep = gg >= eps * eps
    if not keep.all():  # skip rule ||grad|| < eps: those tensors keep their state
        idx = np.flatnonzero(keep).tolist()
        if not idx:
            return None
        params, Gs, states = ([xs[i] for i in idx] for xs in (params, Gs, states))
        gg = gg[idx]
    wd = weight_decay
    Ps = [p.reshape(-1).to(cd) for p in params] if wd else None
    Hs = list(torch._foreach_add(Gs, Ps, alpha=wd)) if wd else Gs  # H_k = grad + wd theta
    new = [float(st["initialized"]) < 0.5 for st in states]
    for H, st, first in zip(Hs, states, new, strict=True):
        if first:  # first step of this tensor only
            _phantom_(H, st, q, sigma0, R)
    Vs, Hps = [st["v"] for st in states], [st["h_prev"] for st in states]
    Sp = np.array([float(st["S"]) for st in states], dtype=nd)
    m = len(Vs)
    x, y, a, c = _dots(Hps + Hps + Hs + Hs, Hps + Vs + Hps + Vs).numpy().reshape(4, m)
    # x = ||H_{k-1}||^2, y = H_{k-1} v_{k-1}^T, a = H_k H_{k-1}^T, c = H_k v_{k-1}^T
    lam = (c + q * a) / Sp  # (koala-recursion) lambda_k
    alpha = a / x  # (koala-closure) alpha_k
    w = (c / x - a * y / (x * x)) if symmetric else np.zeros_like(x)  # (koala-closure) beta_k
    # (koala-recursion) in place: v_k = (alpha - lam) v_{k-1} + (w - Q lam) H_{k-1} + Q H_k
    torch._foreach_mul_(Vs, (alpha - lam).tolist())  # exact: float32 values held as doubles
    torch._foreach_addcmul_(Vs, Hps, list(torch.from_numpy(w - q * lam).unbind()))
    torch._foreach_add_(Vs, Hs, alpha=q)
    if init == "prior":
        for H, v, first in zip(Hs, Vs, new, strict=True):
            if first:  # v_1 = sigma0 H_1 (no phantom update)
                v.copy_(H).mul_(sigma0)
    # (koala-update) g_k = H_k P_hat_k = v_k + Q H_k, never formed: S_k = H_k v_k^T + Q ||H_k||^2 + R
    if wd:
        hv, hh, pp = _dots(Hs + Hs + Ps, Vs + Hs + Ps).numpy().reshape(3, m)
    else:
        hv, hh = _dots(Hs, Vs).numpy(), gg
    S = hv + q * hh + nd(R)
    L_t = nd(loss) + 0.5 * wd * pp if wd else nd(loss)  # (koala-update) L~_k
    step = torch.from_numpy(
        -lr * L_t / S
    )  # (koala-update) theta_k = theta_{k-1} - lr L~_k g_k / S_k
    shaped = [[t.view_as(p) for t, p in zip(ts, params, strict=True)] for ts in (Vs, Hs)]
    torch._foreach_addcmul_(params, shaped[0], list(step.unbind()))
    torch._foreach_addcmul_(params, shaped[1], list((q * step).unbind()))
    torch._foreach_copy_(Hps, Hs)  # store H_k
    S_prev = [st["S"] for st in states]
    torch._foreach_copy_(S_prev, list(torch.from_numpy(S).unbind()))  # store S_k
    for st, first in zip(states, new, strict=True):
        if first:
            st["initialized"] = torch.ones((), device=st["S"].device, dtype=cd)
    return torch.from_numpy(S <= 0)


def koalapp_loop_(params, grads, states, hp: KoalaStep):
    """Per-tensor loop: the readable twin of `koalapp_foreach_` (same state, same equations),
    with the step's measurement and hyperparameters in ``hp``."""
    loss, R, lr, sigma0, q, weight_decay, symmetric, init, eps = hp
    bad = []
    for p, grad, st in zip(params, grads, states, strict=True):
        cd = compute_dtype(p)
        G = grad.reshape(-1).to(cd)
        if float(torch.dot(G, G)) < eps * eps:  # skip rule ||grad|| < eps: keep the old state
            continue
        theta = p.reshape(-1).to(cd)
        H = G + weight_decay * theta if weight_decay else G  # H_k incl. weight decay
        first = float(st["initialized"]) < 0.5
        if (
            first
        ):  # (koala-init) phantom: v_0 = sigma0 H_1, H_0 = H_1, S_0 = H_1 (v_0 + Q H_1)^T + R
            _phantom_(H, st, q, sigma0, R)
        v, h_prev, S_prev = st["v"], st["h_prev"], st["S"]  # v is updated in place
        x, y = torch.dot(h_prev, h_prev), torch.dot(h_prev, v)
        a, c = torch.dot(H, h_prev), torch.dot(H, v)
        lam = (c + q * a) / S_prev  # (koala-recursion) lambda_k
        alpha = a / x  # (koala-closure) alpha_k
        w = c / x - a * y / (x * x) if symmetric else torch.zeros_like(x)  # (koala-closure) beta_k
        # (koala-recursion): v_k = (alpha - lam) v_{k-1} + (w - Q lam) H_{k-1} + Q H_k
        v.mul_(alpha - lam).addcmul_(h_prev, w - q * lam).add_(H, alpha=q)
        if first and init == "prior":
            v.copy_(H).mul_(sigma0)  # v_1 = sigma0 H_1
        # (koala-update) g_k = v_k + Q H_k (not formed), S_k = H_k g_k^T + R
        S = torch.dot(H, v) + q * torch.dot(H, H) + R
        L_t = loss + 0.5 * weight_decay * torch.dot(theta, theta) if weight_decay else loss
        step = -lr * L_t / S  # (koala-update) theta_k = theta_{k-1} - lr L~_k g_k / S_k
        p.addcmul_(v.view_as(p), step).addcmul_(H.view_as(p), q * step)
        h_prev.copy_(H)
        st["S"] = S
        st["initialized"] = torch.ones((), device=p.device, dtype=cd)
        bad.append(S <= 0)
    return torch.stack(bad) if bad else None
