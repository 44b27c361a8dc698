"""The batched torch path (CPU or CUDA): same draws, same answers as ``reference.run_sampler``.

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_int,
)
from lab.wflows.distances import particle_moments
from lab.wflows.reference import (
    SamplerDraws,
    SamplerHistory,
    SamplerRun,
    make_history,
    record_steps,
    validate_run,
)
from lab.wflows.targets import FiniteSumQuadratic

__all__ = [
    "run_sampler",
]


def run_sampler(
    method: str,
    potential: FiniteSumQuadratic,
    X0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
    epoch_length: int | None = None,
    seed: int = 0,
    *,
    record_every: int | None = None,
    keep: int = 300,
    draws: SamplerDraws | None = None,
    device: Any = None,
    dtype: Any = None,
) -> SamplerHistory:
    """Batched torch fast path of ``reference.run_sampler`` (same arguments, CPU or CUDA).

    Each step gathers the per-particle minibatch curvatures ``A[idx]`` (P, b, d, d) on the
    device. ``device=None`` follows ``X0`` when it is a tensor, else ``lab.device()``;
    ``dtype`` defaults to float64. With ``draws`` the run follows the reference path exactly
    (agreement to round-off); without, it uses a seeded ``torch.Generator`` (a different
    stream from numpy's).

    See: book/wflows/01-three-samplers.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    device = resolve_device(device, X0)
    dtype = torch.float64 if dtype is None else dtype
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64 (got {dtype})")
    run = validate_run(
        method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws
    )
    run = run._replace(rec=record_steps(steps, record_every), keep=check_int("keep", keep, 0))
    return _sample_torch(run, device, dtype)


def _sample_torch(run: SamplerRun, device: Any, dtype: Any) -> SamplerHistory:
    """The loop of ``run_sampler`` on a checked run, batched in torch."""
    import time as _time

    import torch

    method, potential, h, b, m, draws = run.method, run.potential, run.h, run.b, run.m, run.draws
    keep, steps = run.keep, run.h.size
    rec_set = set(run.rec.tolist())
    P, d = run.X0.shape
    N = potential.N
    A = torch.as_tensor(potential.A, dtype=dtype, device=device)
    c = torch.as_tensor(potential.c, dtype=dtype, device=device)
    Abar = torch.as_tensor(potential.Abar, dtype=dtype, device=device)
    cbar = torch.as_tensor(potential.cbar, dtype=dtype, device=device)
    X = torch.as_tensor(run.X0, dtype=dtype, device=device).clone()
    gen = torch.Generator(device=device)
    gen.manual_seed(run.seed)
    sq = torch.as_tensor(np.sqrt(2 * h), dtype=dtype)
    hh = torch.as_tensor(h, dtype=dtype)

    def to_np(T):
        return T.detach().to("cpu", torch.float64).numpy()

    def batch_grad(Y, A_B, c_B):
        return torch.einsum("pij,pj->pi", A_B, Y) - c_B

    Xs = Gs = None
    moments, parts = [particle_moments(to_np(X))], [to_np(X[:keep])]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = _time.perf_counter()
    for k in range(steps):
        if draws is not None:
            xi = torch.as_tensor(draws.normals[k], dtype=dtype, device=device)
            if method != "langevin":
                idx = torch.as_tensor(draws.indices[k], device=device)
        else:
            xi = torch.randn(P, d, generator=gen, dtype=dtype, device=device)
            if method != "langevin":
                idx = torch.randint(0, N, (P, b), generator=gen, device=device)
        if method == "langevin":
            g = X @ Abar.T - cbar
        else:
            A_B = A[idx].mean(1)  # (P, d, d)
            c_B = c[idx].mean(1)
            if method == "sgld":
                g = batch_grad(X, A_B, c_B)
            else:
                if k % m == 0:
                    Xs, Gs = X.clone(), X @ Abar.T - cbar
                # g_B(X) - g_B(X~) + G~ = A_B (X - X~) + G~ (the c_B terms cancel)
                g = torch.einsum("pij,pj->pi", A_B, X - Xs) + Gs
        X = X - hh[k].item() * g + sq[k].item() * xi
        if k + 1 in rec_set:
            Xn = to_np(X)
            if not np.all(np.isfinite(Xn)):
                raise ValueError(f"particles became non-finite by step {k + 1} of {method}")
            moments.append(particle_moments(Xn))
            parts.append(Xn[:keep].copy())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = _time.perf_counter() - t0
    hist = make_history(run, to_np(X), moments, parts, seconds)
    hist.extra["device"] = str(device)
    return hist
