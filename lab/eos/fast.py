"""The fast path: many GD trajectories at once in torch (CPU or CUDA), and Hessian-vector products.

``gd`` runs the same per-model kernel as the reference loop of ``reference.gd``
(``ScalarModel._step`` / ``_residual``), on ``(B,)``-shaped tensors instead of Python floats, so
float64 runs agree with ``reference.gd`` to round-off (bit for bit on CPU; ``tests/test_eos.py``).
``sharpness_hvp`` estimates the top Hessian eigenvalue of any torch loss without forming the
Hessian (for the network of notebook 3).

See: book/eos/02-rates-and-bifurcation.ipynb, book/eos/03-real-network.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int
from lab.core.runtime import resolve_device
from lab.eos.models import DIVERGENCE_THRESHOLD, ScalarModel, check_model, check_point

__all__ = ["BatchedTrajectory", "gd", "sharpness_hvp"]


@dataclass
class BatchedTrajectory:
    """Result of ``fast.gd`` (torch tensors on the run's device).

    Attributes
    ----------
    w : Tensor, shape (n_rec, B, D)
        Recorded iterates at steps ``steps_recorded``.
    residual, loss : Tensor, shape (n_rec, B)
    steps_recorded : Tensor, shape (n_rec,)
        ``0, record_every, 2 record_every, ...`` and the last step.
    diverged : Tensor, shape (B,), bool
        Rows whose ``|r|`` exceeded ``1e6`` or became non-finite. Such rows are frozen at
        their last finite state (never NaN), exactly where ``reference.gd`` stops.
    steps_run : Tensor, shape (B,), int64
        Steps each row actually took (``reference.gd``'s ``steps_run``).
    eta : Tensor, shape (B,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    w: Any
    residual: Any
    loss: Any
    steps_recorded: Any
    diverged: Any
    steps_run: Any
    eta: Any
    model: ScalarModel = field(repr=False)

    def sharpness(self):
        """Sharpness of the projected minimiser for every recorded state (numpy, (n_rec, B))."""
        import torch

        W = self.w.detach().cpu().to(dtype=torch.float64).numpy()
        with np.errstate(all="ignore"):
            return self.model.manifold_sharpness(W)


def _gd_exact(model, state, r, E, steps_run, n):
    """n GD steps with ``reference.gd``'s exact stopping rule, row by row in lockstep.

    A step is accepted iff the new residual is finite; after a step with ``|r| > 1e6`` the
    row is frozen. Returns the final state, residual, alive mask, step counts and the
    states after every local step ``i = 1..n`` (for patching the records).
    """
    import torch

    alive = torch.ones(r.shape[0], dtype=torch.bool, device=r.device)
    recs = {}
    for i in range(1, n + 1):
        er = E * r
        new = model._step(state, er)  # eq: w' = w - eta r grad f
        rn = model._residual(new)
        ok = alive & torch.isfinite(rn)  # accept a step iff it stays finite (gd's rule)
        okc = ok[:, None] if new[0].ndim == 2 else ok
        state = [torch.where(okc, a, b) for a, b in zip(new, state, strict=True)]
        r = torch.where(ok, rn, r)
        steps_run = steps_run + ok
        alive = ok & (rn.abs() <= DIVERGENCE_THRESHOLD)  # freeze after |r| > 1e6
        recs[i] = (model._join(state), r)
    return state, r, alive, steps_run, recs


def gd(
    model: ScalarModel,
    w0: Any,
    eta: Any,
    steps: int,
    record_every: int = 1,
    device: Any = None,
    dtype: Any = None,
) -> BatchedTrajectory:
    """GD for a whole batch of starts and step sizes at once (torch, CPU or CUDA).

    The batched ``reference.gd`` (one name per method): the same update and the same operation
    order, so float64 runs agree with it to round-off (bitwise on CPU for xy and product models). Diverged rows (``|r| > 1e6`` or
    non-finite) are frozen at their last finite state, so nothing is NaN.

    The update is the models' own kernel (``_step``/``_residual``), the same code that the
    numpy loop of ``reference.gd`` runs on Python floats.

    Implementation: steps run in chunks of ``>= 32`` steps with the bare update (9 tensor
    ops per step for xy) while tracking ``max |r|``; rows that crossed the divergence
    threshold inside a chunk are replayed from the chunk start with ``reference.gd``'s exact
    per-step stopping rule, and frozen rows step with ``eta = 0`` (which leaves them unchanged). This
    halves the per-step work against freezing at every step. On CPU the numpy vectorised
    loop is faster still (per-op overhead); this path is for CUDA
    (``benchmarks/bench_eos.py``).

    Parameters
    ----------
    model : ScalarModel
    w0 : array_like or Tensor, shape (B, D) or (D,)
        Starts (a single start is broadcast over ``eta``).
    eta : float or array_like or Tensor, shape (B,)
        Step sizes, ``> 0``.
    steps : int
        ``>= 1``.
    record_every : int
        Record every this many steps (the last step is always recorded).
    device : str or torch.device, optional
        Defaults to the device of ``w0``/``eta`` if a tensor, else ``lab.device()``.
    dtype : torch.dtype, optional
        ``torch.float64`` (default) or ``torch.float32`` (not for the critical regime).

    Returns
    -------
    BatchedTrajectory

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    import torch

    model = check_model(model)
    dtype = torch.float64 if dtype is None else dtype
    check_choice("dtype", dtype, [torch.float64, torch.float32])
    steps = check_int("steps", steps, 1, 100_000_000)
    record_every = check_int("record_every", record_every, 1, steps)
    dev = resolve_device(device, w0, eta)
    W, E = _batch_inputs(model, w0, eta, dtype, dev)
    return _gd_batched(model, W, E, steps, record_every)


def _batch_inputs(model: ScalarModel, w0: Any, eta: Any, dtype: Any, dev: Any):
    """``w0`` and ``eta`` checked and broadcast to ``(B, D)`` and ``(B,)`` tensors."""
    import torch

    if isinstance(w0, torch.Tensor):
        W = w0.detach().to(device=dev, dtype=dtype)
        if W.ndim not in (1, 2) or W.shape[-1] != model.dim:
            raise ValueError(
                f"w0 must have shape (B, {model.dim}) or ({model.dim},) (got {tuple(W.shape)})"
            )
        if not bool(torch.isfinite(W).all()):
            raise ValueError("w0 must contain only finite values (got NaN or inf)")
    else:
        W = torch.as_tensor(check_point(model, "w0", w0, batch=True), dtype=dtype, device=dev)
    if isinstance(eta, torch.Tensor):
        E = eta.detach().to(device=dev, dtype=dtype).reshape(-1)
        if not bool(torch.isfinite(E).all()) or not bool((E > 0).all()):
            raise ValueError("eta must be finite and > 0 everywhere")
    else:
        e = check_array("eta", eta, ndim=(0, 1))
        if np.any(e <= 0):
            raise ValueError(f"eta must be > 0 (got min {float(np.min(e)):g})")
        E = torch.as_tensor(e.reshape(-1), dtype=dtype, device=dev)
    if W.ndim == 1:
        W = W.expand(E.shape[0], -1)
    B = W.shape[0]
    if E.shape[0] == 1:
        E = E.expand(B)
    if E.shape[0] != B:
        raise ValueError(
            f"eta must be a scalar or have shape ({B},) to match w0 (got {tuple(E.shape)})"
        )
    return W.contiguous().clone(), E


@dataclass
class _Run:
    """The mutable state of a batched run: the iterate's components, residual, which rows are
    still stepping, their step counts, the effective step (0 for frozen rows), the records."""

    state: list
    r: Any
    alive: Any
    steps_run: Any
    eta_eff: Any
    w_rec: Any
    r_rec: Any
    rec_index: dict


def _gd_batched(model: ScalarModel, W: Any, E: Any, steps: int, record_every: int):
    """``gd`` on validated tensors ``W`` (B, D) and ``E`` (B,).

    Chunked fast path. Inside a chunk every row takes the plain update (9 tensor ops per step
    for xy instead of ~18 with per-step freezing) and only the running max of ``|r|`` is
    tracked. Rows frozen in an earlier chunk step with eta = 0, which leaves them unchanged.
    Rows that crossed ``|r| > 1e6`` (or went non-finite) inside the chunk are rolled back to the
    chunk start and replayed with the exact per-step rule of ``reference.gd`` (``_gd_exact``).
    """
    import torch

    B, dtype, dev = W.shape[0], W.dtype, W.device
    rec_steps = list(range(0, steps + 1, record_every))
    if rec_steps[-1] != steps:
        rec_steps.append(steps)
    state = [s.contiguous() for s in model._split(W)]
    r = model._residual(state)  # eq. (5): r = f(θ) - y
    run = _Run(
        state=state,
        r=r,
        alive=torch.ones(B, dtype=torch.bool, device=dev),  # like gd, w0 is not checked
        steps_run=torch.zeros(B, dtype=torch.int64, device=dev),
        eta_eff=E.clone(),
        w_rec=torch.empty((len(rec_steps), B, model.dim), dtype=dtype, device=dev),
        r_rec=torch.empty((len(rec_steps), B), dtype=dtype, device=dev),
        rec_index={k: j for j, k in enumerate(rec_steps)},
    )
    run.w_rec[0] = W
    run.r_rec[0] = r
    chunk = record_every * max(1, math.ceil(32 / record_every))
    k0 = 0
    while k0 < steps:
        n = min(chunk, steps - k0)
        _chunk(model, run, E, k0, n)
        k0 += n
    return BatchedTrajectory(
        w=run.w_rec,
        residual=run.r_rec,
        loss=0.5 * run.r_rec * run.r_rec,
        steps_recorded=torch.tensor(rec_steps, dtype=torch.int64, device=dev),
        diverged=~run.alive,
        steps_run=run.steps_run,
        eta=E,
        model=model,
    )


def _chunk(model: ScalarModel, run: _Run, E: Any, k0: int, n: int) -> None:
    """Steps ``k0 + 1 .. k0 + n`` of every row, then the exact replay of the rows that crossed
    the divergence threshold inside the chunk."""
    import torch

    snap_state = [t.clone() for t in run.state]
    snap_r, snap_run = run.r.clone(), run.steps_run.clone()
    state, r = run.state, run.r
    r_max = torch.zeros_like(r)
    for i in range(1, n + 1):
        er = run.eta_eff * r
        state = model._step(state, er)  # eq. (6): θ' = θ - η r ∇f(θ)
        r = model._residual(state)  # eq. (5): r' = f(θ') - y
        r_max = torch.maximum(r_max, r.abs())  # NaN propagates, so NaN rows count as bad
        j = run.rec_index.get(k0 + i)
        if j is not None:
            run.w_rec[j] = model._join(state)
            run.r_rec[j] = r
    bad = run.alive & ~(r_max <= DIVERGENCE_THRESHOLD)
    run.steps_run = torch.where(run.alive, snap_run + n, snap_run)
    run.state, run.r = state, r
    if not bool(bad.any()):
        return
    idx = torch.nonzero(bad).squeeze(1)
    sub = _gd_exact(model, [t[idx] for t in snap_state], snap_r[idx], E[idx], snap_run[idx], n)
    sub_state, sub_r, sub_alive, sub_run, sub_recs = sub
    for t, st in zip(run.state, sub_state, strict=True):
        t[idx] = st
    run.r[idx] = sub_r
    run.steps_run[idx] = sub_run
    run.alive[idx] = sub_alive
    run.eta_eff[idx] = torch.where(sub_alive, E[idx], torch.zeros_like(sub_r))
    for i, (w_i, r_i) in sub_recs.items():
        j = run.rec_index.get(k0 + i)
        if j is not None:
            run.w_rec[j, idx] = w_i
            run.r_rec[j, idx] = r_i


def sharpness_hvp(loss_fn: Any, params: Any, iters: int = 50, *, seed: int = 0) -> float:
    """Top Hessian eigenvalue of ``loss_fn`` at ``params`` by power iteration on HVPs.

    Hessian-vector products are forward-over-reverse (``torch.func.jvp`` of
    ``torch.func.grad``); the Hessian is never formed. Power iteration finds the
    eigenvalue of largest magnitude; if that is negative, a second run on ``H - mu I``
    returns the top (algebraic) eigenvalue instead.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(params) -> scalar tensor``.
    params : Tensor or tuple of Tensors
        Where to evaluate (a pytree of tensors; not modified).
    iters : int
        Power-iteration steps (``>= 1``).
    seed : int
        Seed of the random start vector.

    Returns
    -------
    float

    See: book/eos/03-real-network.ipynb
    """
    import torch
    from torch.func import grad, jvp

    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable (got {type(loss_fn).__name__})")
    iters = check_int("iters", iters, 1, 100_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    single = isinstance(params, torch.Tensor)
    leaves = (params,) if single else tuple(params)
    if not leaves or not all(isinstance(p, torch.Tensor) for p in leaves):
        raise TypeError("params must be a torch.Tensor or a tuple of torch.Tensors")
    leaves = tuple(p.detach() for p in leaves)

    def f(ps):
        return loss_fn(ps[0] if single else ps)

    g = grad(f)

    def hvp(vs):
        return jvp(g, (leaves,), (vs,))[1]  # eq: H v = d/dt grad L(w + t v) at t = 0

    def dot(a, b):
        return sum(torch.sum(x * y) for x, y in zip(a, b, strict=True))

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def power(shift: float) -> float:
        v = tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device) for p in leaves)
        nv = torch.sqrt(dot(v, v))
        v = tuple(x / nv for x in v)
        lam = 0.0
        for _ in range(iters):
            hv = hvp(v)
            if shift:
                hv = tuple(h - shift * x for h, x in zip(hv, v, strict=True))
            lam = float(dot(v, hv))  # eq: Rayleigh quotient v^T H v
            n = torch.sqrt(dot(hv, hv))
            if float(n) == 0.0:
                return lam
            v = tuple(h / n for h in hv)  # eq: v <- H v / ||H v||
        return lam

    mu = power(0.0)
    if mu < 0:
        return power(mu) + mu
    return mu
