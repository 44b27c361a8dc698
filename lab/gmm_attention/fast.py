"""Fast paths (torch, CPU or CUDA): many training runs at once with autograd gradients, and the
identity-attention layer through ``scaled_dot_product_attention`` (fused kernels on a GPU).

Both are tested against :mod:`lab.gmm_attention.reference` (tests/test_gmm_attention.py).

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_positive
from lab.core.runtime import resolve_device

from .mixture import check_means
from .reference import SCORES, TRAIN
from .settings import TrainSettings, check_settings

__all__ = ["train_heads", "identity_attention"]


def train_heads(
    means: Any,
    settings: TrainSettings = TRAIN,
    runs: int = 8,
    *,
    lam: Any = 1.0,
    score: str = "dot",
    seed: int = 0,
    Theta0: Any = None,
    samples: Any = None,
    device: Any = None,
):
    """Train many independent head layers at once (torch, autograd; CPU or CUDA).

    Runs are stacked along a leading batch axis of size ``runs``; ``lam`` may be a scalar or
    one value per run (a sweep over temperatures). Gradients come from ``torch.autograd`` of
    the same risk as :func:`~lab.gmm_attention.reference.risk`; the tests check that, fed the
    same minibatches, this path reproduces :func:`~lab.gmm_attention.reference.train_heads` to
    1e-8 in float64.

    Parameters
    ----------
    means : array-like or torch.Tensor, shape (K, d)
    settings : TrainSettings
        As in :func:`~lab.gmm_attention.reference.train_heads` (``record_every`` and
        ``show_progress`` are not used: only the final heads are returned).
    runs : int
        Number of runs ``R``.
    lam : float or array-like of shape (R,)
        Inverse temperature(s) λ (> 0).
    score : {"dot", "distance"}
        Eq. (M1).
    seed : int
        Seeds the torch generator (initialisation and samples).
    Theta0 : array-like, shape (R, H, d), optional
        Explicit initialisations.
    samples : array-like, shape (R, steps, batch, d), optional
        Use these minibatches instead of drawing on the device.
    device : str or torch.device, optional
        ``None`` follows tensor inputs, else ``lab.device()``.

    Returns
    -------
    torch.Tensor, shape (R, H, d)
        Final heads: float64 when ``samples``/``Theta0`` are numpy arrays, else float32.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    import torch

    dev = resolve_device(device, means, samples, Theta0)
    means_np = check_means(means)
    settings = check_settings(settings)
    R = check_int("runs", runs, 1)
    score = check_choice("score", score, SCORES)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    lam_arr = check_array("lam", np.array(np.broadcast_to(np.asarray(lam, dtype=np.float64), (R,))))
    if np.any(lam_arr <= 0):
        raise ValueError(f"lam must be > 0 (got min {lam_arr.min():g})")
    exact = (samples is not None and not isinstance(samples, torch.Tensor)) or (
        Theta0 is not None and not isinstance(Theta0, torch.Tensor)
    )
    dtype = torch.float64 if exact else torch.float32
    d = means_np.shape[1]
    if Theta0 is not None:
        Theta0 = check_array("Theta0", Theta0, ndim=3)
        if Theta0.shape[0] != R or Theta0.shape[2] != d or Theta0.shape[1] < 2:
            raise ValueError(f"Theta0 must have shape ({R}, H>=2, {d}) (got {Theta0.shape})")
    if samples is not None:
        samples = check_array("samples", samples, shape=(R, settings.steps, settings.batch, d))
    gen = torch.Generator(device=dev).manual_seed(seed)
    M = torch.as_tensor(means_np, dtype=dtype, device=dev)
    lam_t = torch.as_tensor(lam_arr, dtype=dtype, device=dev)[:, None, None]
    if Theta0 is None:
        H = M.shape[0] if settings.heads is None else settings.heads
        Theta = settings.init_scale * torch.randn(R, H, d, generator=gen, device=dev, dtype=dtype)
    else:
        Theta = torch.as_tensor(Theta0, dtype=dtype, device=dev)
    S = None if samples is None else torch.as_tensor(samples, dtype=dtype, device=dev)
    return _sgd(M, settings, lam_t, score, Theta, S, gen)


def _sgd(M, settings, lam_t, score, Theta, S, gen):
    """The batched SGD loop of :func:`train_heads` (unchecked)."""
    import torch

    R, K, dev, dtype = Theta.shape[0], M.shape[0], Theta.device, Theta.dtype
    Theta = Theta.clone().requires_grad_(True)
    for k in range(settings.steps):
        if S is not None:
            X = S[:, k]
        else:
            z = torch.randint(0, K, (R, settings.batch), generator=gen, device=dev)
            noise = torch.randn(
                R, settings.batch, M.shape[1], generator=gen, device=dev, dtype=dtype
            )
            X = M[z] + settings.sigma * noise
        logits = torch.bmm(X, Theta.transpose(1, 2))  # <x, theta_h>
        if score == "distance":
            logits = logits - 0.5 * (Theta**2).sum(-1)[:, None, :]
        Wt = torch.softmax(lam_t * logits, dim=-1)  # eq. (M2)
        A = torch.bmm(Wt, Theta)
        loss = ((X - A) ** 2).sum(-1).mean(-1).sum()  # eq. (M3), summed over runs
        (g,) = torch.autograd.grad(loss, Theta)
        with torch.no_grad():
            Theta -= settings.lr * g
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
