"""Fast paths (torch, CPU or CUDA): many training runs at once with autograd gradients, and the
identity-attention layer through ``scaled_dot_product_attention`` (fused kernels on a GPU).

Both are tested against :mod:`lab.gmm_attention.reference` (tests/test_gmm_attention.py).

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
)
from lab.core.runtime import resolve_device

from .mixture import check_means
from .reference import SCORES

__all__ = ["train_heads", "identity_attention"]


def train_heads(
    means: Any,
    sigma: float = 1.0,
    steps: int = 300,
    lr: float = 0.1,
    batch: int = 1024,
    seeds: int = 8,
    *,
    lam: Any = 1.0,
    score: str = "dot",
    heads: int | None = None,
    init_scale: float = 0.1,
    Theta0: Any = None,
    samples: Any = None,
    dtype: Any = None,
    device: Any = None,
    seed: int = 0,
):
    """Train many independent head layers at once (torch, autograd; CPU or CUDA).

    Runs are stacked along a leading batch axis of size ``seeds``; ``lam`` may be a scalar or
    one value per run (a sweep over temperatures). Gradients come from ``torch.autograd`` of
    the same risk as :func:`~lab.gmm_attention.reference.risk`; the tests check that, fed the same minibatches, this path
    reproduces :func:`~lab.gmm_attention.reference.train_heads` to 1e-8 in float64.

    Parameters
    ----------
    means : array-like or torch.Tensor, shape (K, d)
    sigma, steps, lr, batch :
        As in :func:`~lab.gmm_attention.reference.train_heads`.
    seeds : int
        Number of runs ``R``.
    lam : float or array-like of shape (R,)
        Inverse temperature(s) (> 0).
    score, heads, init_scale :
        As in :func:`~lab.gmm_attention.reference.train_heads`.
    Theta0 : array-like, shape (R, H, d), optional
        Explicit initialisations.
    samples : array-like, shape (R, steps, batch, d), optional
        Use these minibatches instead of drawing on the device.
    dtype : torch.dtype, optional
        Default float32 (float64 when ``samples``/``Theta0`` are float64 numpy arrays).
    device : str or torch.device, optional
        ``None`` follows tensor inputs, else ``lab.device()``.
    seed : int
        Seeds the torch generator (initialisation and samples).

    Returns
    -------
    torch.Tensor, shape (R, H, d)
        Final heads of every run.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    import torch

    dev = resolve_device(device, means, samples, Theta0)
    means_np = check_means(means)
    K, d = means_np.shape
    sigma = check_positive("sigma", sigma)
    steps = check_int("steps", steps, 0, 10_000_000)
    lr = check_positive("lr", lr)
    batch = check_int("batch", batch, 1)
    R = check_int("seeds", seeds, 1)
    score = check_choice("score", score, SCORES)
    H = K if heads is None else check_int("heads", heads, 2)
    init_scale = check_positive("init_scale", init_scale, allow_zero=True)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    lam_arr = check_array("lam", np.array(np.broadcast_to(np.asarray(lam, dtype=np.float64), (R,))))
    if np.any(lam_arr <= 0):
        raise ValueError(f"lam must be > 0 (got min {lam_arr.min():g})")
    if dtype is None:
        exact = (samples is not None and not isinstance(samples, torch.Tensor)) or (
            Theta0 is not None and not isinstance(Theta0, torch.Tensor)
        )
        dtype = torch.float64 if exact else torch.float32
    gen = torch.Generator(device=dev).manual_seed(seed)
    M = torch.as_tensor(means_np, dtype=dtype, device=dev)
    lam_t = torch.as_tensor(lam_arr, dtype=dtype, device=dev)[:, None, None]
    if Theta0 is None:
        Theta = init_scale * torch.randn(R, H, d, generator=gen, device=dev, dtype=dtype)
    else:
        T0 = check_array("Theta0", Theta0, ndim=3)
        if T0.shape[0] != R or T0.shape[2] != d or T0.shape[1] < 2:
            raise ValueError(f"Theta0 must have shape ({R}, H>=2, {d}) (got {T0.shape})")
        Theta = torch.as_tensor(T0, dtype=dtype, device=dev)
    if samples is not None:
        S = check_array("samples", samples, shape=(R, steps, batch, d))
        S = torch.as_tensor(S, dtype=dtype, device=dev)
    Theta = Theta.clone().requires_grad_(True)
    for k in range(steps):
        if samples is not None:
            X = S[:, k]
        else:
            z = torch.randint(0, K, (R, batch), generator=gen, device=dev)
            X = M[z] + sigma * torch.randn(R, batch, d, generator=gen, device=dev, dtype=dtype)
        logits = torch.bmm(X, Theta.transpose(1, 2))  # <x, theta_h>
        if score == "distance":
            logits = logits - 0.5 * (Theta**2).sum(-1)[:, None, :]
        Wt = torch.softmax(lam_t * logits, dim=-1)  # eq. (M2)
        A = torch.bmm(Wt, Theta)
        loss = ((X - A) ** 2).sum(-1).mean(-1).sum()  # eq. (M3), summed over runs
        (g,) = torch.autograd.grad(loss, Theta)
        with torch.no_grad():
            Theta -= lr * g
    return Theta.detach()


# ---------------------------------------------------------------------------------------------


def identity_attention(X: Any, beta: float, n_layers: int = 1, *, device: Any = None):
    """Fast path of :func:`~lab.gmm_attention.reference.identity_attention` (same name) with
    ``torch.nn.functional.scaled_dot_product_attention``.

    On a GPU this uses the fused (flash / memory-efficient) kernels, which never build the
    ``L x L`` weight matrix. Accepts numpy arrays or tensors of shape ``(L, d)`` or
    ``(B, L, d)``; returns a tensor (dtype of a tensor input, else float64 on CPU and float32
    on CUDA).

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    import torch
    import torch.nn.functional as F

    beta = check_positive("beta", beta, allow_zero=True)
    n_layers = check_int("n_layers", n_layers, 0, 10_000)
    dev = resolve_device(device, X)
    if isinstance(X, torch.Tensor):
        if X.ndim not in (2, 3):
            raise ValueError(f"X must have ndim in (2, 3) (got shape {tuple(X.shape)})")
        Y = X.to(dev)
    else:
        arr = check_array("X", X, ndim=(2, 3))
        Y = torch.as_tensor(arr, device=dev)
        if dev.type == "cuda":
            Y = Y.float()
    for _ in range(n_layers):
        Y = F.scaled_dot_product_attention(Y, Y, Y, scale=beta)  # eq. (M6)
    return Y
