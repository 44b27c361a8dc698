"""Torch fast path (CPU or CUDA): the batched KKT oracle and batched IZOM, tested against
``reference.py`` / ``cleaning.py``.

See: book/bilevel/01-kinks-and-stationarity.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_instance,
    check_int,
    check_positive,
)
from lab.core.runtime import resolve_device

__all__ = [
    "psi_star",
    "kkt_oracle",
    "BatchedIZOM",
    "IZOMBatch",
    "izom_many",
]


# ------------------------------------------------------------------------------------------
# fast path (torch, CPU or CUDA)
# ------------------------------------------------------------------------------------------
def psi_star(u: Any) -> tuple[Any, Any]:
    """:func:`lab.bilevel.reference.psi_star` in torch: any device and floating dtype.

    Parameters
    ----------
    u : tensor
        Points (any shape).

    Returns
    -------
    value, t : tensor
        ``psi*(u)`` and the maximiser ``t`` (the same Newton steps as the reference, with the
        convergence test every fourth step).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import torch

    s = torch.where(u >= 0, 1.0, -1.0).to(u.dtype)
    a = u.abs()
    t = 1.0 + a.pow(1.0 / 3.0)
    for i in range(40):
        step = (t**3 - t - a) / (3.0 * t**2 - 1.0)
        t = t - step
        if i % 4 == 3 and not bool((step.abs() > 1e-15 * t).any()):
            break
    t = s * t
    return u * t - (t**2 - 1.0) ** 2 / 4.0, t


def kkt_oracle(
    A: Any, G: Any, ytr: Any, yval: Any, device: Any = None, dtype: Any = None
) -> Callable:
    """Batched optimistic hyper-cleaning oracle: factorise the KKT matrix once, then solve for
    any batch of label corrections with one LU solve.

    The KKT matrix does not depend on ``x``, so each evaluation costs two triangular solves
    with ``B`` right-hand sides instead of a fresh factorisation.

    Parameters
    ----------
    A, G, ytr, yval : array_like or tensor
        Training / validation features and labels.
    device : str or torch.device, optional
        Follows ``A`` when it is a tensor, else ``lab.device()``.
    dtype : torch dtype, optional
        Default float64.

    Returns
    -------
    callable
        ``X (B, n_train) tensor -> phi (B,) tensor``.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    import torch

    dev = resolve_device(device, A)
    dtype = torch.float64 if dtype is None else dtype
    At = torch.as_tensor(check_array("A", A, ndim=2), dtype=dtype, device=dev)
    Gt = torch.as_tensor(check_array("G", G, ndim=2), dtype=dtype, device=dev)
    n, p = At.shape
    if Gt.shape[1] != p:
        raise ValueError(f"G must have {p} columns like A (got shape {tuple(Gt.shape)})")
    yt = torch.as_tensor(check_array("ytr", ytr, shape=(n,)), dtype=dtype, device=dev)
    yv = torch.as_tensor(check_array("yval", yval, shape=(Gt.shape[0],)), dtype=dtype, device=dev)
    nv = Gt.shape[0]
    K = torch.zeros(p + n, p + n, dtype=dtype, device=dev)
    K[:p, :p] = Gt.T @ Gt / nv
    K[:p, p:] = At.T
    K[p:, :p] = At
    LU, piv = torch.linalg.lu_factor(K)
    top = Gt.T @ yv / nv

    def oracle(X):
        X = X.to(device=dev, dtype=dtype)
        shape = X.shape[:-1]
        Xf = X.reshape(-1, n)
        rhs = torch.cat([top.expand(Xf.shape[0], p), yt + Xf], dim=1).T
        w = torch.linalg.lu_solve(LU, piv, rhs)[:p].T
        r = w @ Gt.T - yv
        return ((r**2).sum(-1) / (2 * nv)).reshape(shape)

    return oracle


@dataclass
class BatchedIZOM:
    """What :func:`izom_many` returns: iterates of every run at the recorded steps.

    Attributes
    ----------
    x : tensor, shape (len(steps), runs, m)
    steps : ndarray of int
    x_last : tensor, shape (runs, m)
    output_index : ndarray of int, shape (runs,)
    x_out : tensor, shape (runs, m)

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """

    x: Any
    steps: np.ndarray
    x_last: Any
    output_index: np.ndarray
    x_out: Any


@dataclass(frozen=True)
class IZOMBatch:
    """How :func:`izom_many` batches: directions averaged per step, independent runs, which
    iterates it keeps and the dtype.

    Parameters
    ----------
    n_dirs : int
        Directions averaged per step (>= 1).
    runs : int
        Independent runs (>= 1).
    record_every : int
        Keep every ``record_every``-th iterate (>= 1), plus the last.
    dtype : torch dtype, optional
        Default float64.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """

    n_dirs: int = 1
    runs: int = 1
    record_every: int = 1
    dtype: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_dirs", check_int("n_dirs", self.n_dirs, 1))
        object.__setattr__(self, "runs", check_int("runs", self.runs, 1))
        object.__setattr__(self, "record_every", check_int("record_every", self.record_every, 1))


def izom_many(
    problem: Any,
    x0: Any,
    T: int,
    eta: float,
    delta: float,
    seed: int = 0,
    *,
    batch: IZOMBatch | None = None,
    directions: Any = None,
    device: Any = None,
) -> BatchedIZOM:
    """IZOM for many independent runs at once, averaging ``batch.n_dirs`` two-point estimates
    per step (fast path, torch, CPU or CUDA).

    Each step evaluates the oracle on all ``2 * n_dirs * runs`` perturbed points in one batch.
    With ``n_dirs = runs = 1`` and the same directions it reproduces :func:`izom`.

    Parameters
    ----------
    problem : BilevelProblem or HyperCleaning or callable
        Needs ``torch_oracle(device, dtype)`` or ``phi_torch`` (tensor ``(..., m) -> (...)``),
        or is itself such a callable.
    x0 : array_like, shape (m,) or (runs, m)
    T : int
        Steps (>= 1).
    eta, delta : float
        Step and radius (> 0).
    seed : int
        Seeds the torch generator of the directions and the output indices.
    batch : IZOMBatch, optional
        Directions per step, runs, recording and dtype (default :class:`IZOMBatch`).
    directions : array_like, shape (T, runs, n_dirs, m), optional
        Given unit directions (replay).
    device : optional
        Follows ``x0`` if it is a tensor, else ``lab.device()``.

    Returns
    -------
    BatchedIZOM

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import torch

    batch = IZOMBatch() if batch is None else batch
    check_instance("batch", batch, IZOMBatch)
    dev = resolve_device(device, x0)
    dtype = torch.float64 if batch.dtype is None else batch.dtype
    if callable(getattr(problem, "torch_oracle", None)):
        phi = problem.torch_oracle(dev, dtype)  # built once for this run (a factorisation)
    else:
        phi = getattr(problem, "phi_torch", problem)
    if not callable(phi):
        raise TypeError("problem must have phi_torch or be a callable on tensors")
    T = check_int("T", T, 1)
    eta = check_positive("eta", eta)
    delta = check_positive("delta", delta)
    seed = check_int("seed", seed, 0)
    x0 = check_array("x0", x0, ndim=(1, 2), min_size=1)
    runs, n_dirs, m = batch.runs, batch.n_dirs, x0.shape[-1]
    x = torch.as_tensor(np.broadcast_to(x0, (runs, m)).copy(), dtype=dtype, device=dev)
    U_all = None
    if directions is not None:
        U_all = torch.as_tensor(
            check_array("directions", directions, shape=(T, runs, n_dirs, m)), dtype=dtype
        ).to(dev)
    return _izom_many(phi, x, T, eta, delta, seed, batch, U_all)


def _izom_many(phi, x, T, eta, delta, seed, batch, U_all):
    import torch

    runs, m = x.shape
    n_dirs, dev, dtype = batch.n_dirs, x.device, x.dtype
    gen = torch.Generator(device="cpu").manual_seed(seed)
    R = torch.randint(0, T, (runs,), generator=gen).numpy()
    x_out = x.clone()
    rec, steps = [x.clone()], [0]
    chunk = 256
    idx = torch.arange(runs, device=dev)
    for k0 in range(0, T, chunk):
        kk = min(chunk, T - k0)
        if U_all is None:
            U = torch.randn(kk, runs, n_dirs, m, generator=gen, dtype=dtype).to(dev)
            U = U / U.norm(dim=-1, keepdim=True)
        else:
            U = U_all[k0 : k0 + kk]
        for j in range(kk):
            k = k0 + j
            sel = torch.as_tensor(R == k, device=dev)
            if bool(sel.any()):
                x_out[idx[sel]] = x[sel]
            u = U[j]  # (runs, n_dirs, m)
            P = torch.cat([x[:, None] + delta * u, x[:, None] - delta * u], dim=1)
            vals = phi(P)  # (runs, 2 n_dirs): one batch of 2 n_dirs runs oracle calls
            if not bool(torch.isfinite(vals).all()):
                raise ValueError(f"oracle returned a non-finite value near x = {x[0].tolist()}")
            diff = vals[:, :n_dirs] - vals[:, n_dirs:]
            # eq. ZO averaged over directions
            g = (m / (2.0 * delta) * diff[..., None] * u).mean(1)
            x = x - eta * g  # eq. step
            if (k + 1) % batch.record_every == 0 or k + 1 == T:
                rec.append(x.clone())
                steps.append(k + 1)
    return BatchedIZOM(torch.stack(rec), np.array(steps), x, R, x_out)
