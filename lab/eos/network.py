"""The real-network contrast of notebook 3: full-batch GD on a small MLP with sharpness tracking.

See: book/eos/03-real-network.ipynb
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from lab.core.checks import check_instance
from lab.core.memo import memo
from lab.core.runtime import resolve_device
from lab.eos.fast import sharpness_hvp
from lab.eos.results import MLPRun
from lab.eos.settings import NetworkSettings

__all__ = ["mlp_digits_gd"]


def _digits_data(settings: NetworkSettings, dev: Any):
    """The first ``n_samples`` images of the two classes, pixels in ``[0, 1]``, one-hot
    targets (torch, float64 on ``dev``), and the integer labels (numpy)."""
    import torch

    from lab.core.data import digits

    c0, c1 = settings.classes
    split = digits(
        (c0, c1), test_size=0, shuffle=False, standardize=False, dtype="float64"
    )  # lab.core.data: pixels / 16 in [0, 1], scikit-learn's order, label 1 = classes[1]
    n = settings.n_samples
    if n > split.y_train.size:
        raise ValueError(
            f"n_samples must be <= {split.y_train.size} for classes {settings.classes!r} (got {n})"
        )
    x = torch.as_tensor(split.X_train[:n], dtype=torch.float64, device=dev)
    yi = split.y_train[:n]
    y = torch.nn.functional.one_hot(torch.as_tensor(yi), 2).to(torch.float64).to(dev)
    return x, y, yi


def _init_params(width: int, seed: int, dev: Any) -> tuple:
    """PyTorch-default uniform initialisation of the 64-``width``-2 MLP, from ``seed``."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def layer(fan_in: int, fan_out: int):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        return w.to(dev), b.to(dev)

    return (*layer(64, width), *layer(width, 2))


def _train(loss_fn: Any, params: tuple, settings: NetworkSettings):
    """The GD loop: loss every step, sharpness every ``track_every`` steps; stops on
    divergence. Returns ``(params, losses, sharpness, sharpness_steps, diverged)``."""
    from torch.func import grad

    g = grad(loss_fn)
    losses, sharp, sharp_steps = [], [], []
    eta, every = settings.eta, settings.track_every
    for k in range(settings.steps + 1):
        lv = float(loss_fn(params))
        if not math.isfinite(lv) or lv > 1e6:
            return params, losses, sharp, sharp_steps, True
        losses.append(lv)
        if every and k % every == 0:
            sharp.append(
                sharpness_hvp(loss_fn, params, iters=settings.hvp_iters, seed=settings.seed)
            )
            sharp_steps.append(k)
        if k == settings.steps:
            break
        grads = g(params)
        params = tuple(p - eta * gp for p, gp in zip(params, grads, strict=True))  # eq: GD
    return params, losses, sharp, sharp_steps, False


@memo(maxsize=32)
def mlp_digits_gd(settings: NetworkSettings, device: Any = None) -> MLPRun:
    """Full-batch GD with MSE on a 64-``width``-2 tanh MLP, two digit classes from sklearn.

    The data are scikit-learn's bundled digits through ``lab.core.data.digits`` (no download):
    the first ``n_samples`` images of the two ``classes`` (default 3 vs 8) in scikit-learn's
    order, pixels scaled to ``[0, 1]`` (not standardised),
    one-hot targets, PyTorch-default uniform initialisation. Runs in float64 with one torch
    thread on CPU (per-op overhead dominates at this size).

    Measured at the defaults (2146 parameters, seed 0): with ``eta = 0.2`` the sharpness
    rises from 7.2 past ``2/eta = 10`` within ~150 steps and then oscillates around it
    (between 9.4 and 10.9 up to step 1000: the edge of stability of Cohen et al. 2021);
    with ``eta = 0.1`` it is still sharpening (15.4 < 20 at step 1000). Unlike the scalar models, the network never settles on a
    flatter minimiser in this budget.

    Parameters
    ----------
    settings : NetworkSettings
        Step size, steps, width, samples, tracking, seed, classes (validated there).
    device : str or torch.device, optional
        Defaults to ``lab.device()``.

    Returns
    -------
    MLPRun

    See: book/eos/03-real-network.ipynb
    """
    import torch

    from lab.core.runtime import small_problem_threads

    check_instance("settings", settings, NetworkSettings)
    dev = resolve_device(device)
    x, y, yi = _digits_data(settings, dev)
    params = _init_params(settings.width, settings.seed, dev)
    n_params = sum(p.numel() for p in params)

    def loss_fn(ps):
        w1, b1, w2, b2 = ps
        out = torch.tanh(x @ w1 + b1) @ w2 + b2
        return 0.5 * ((out - y) ** 2).sum() / x.shape[0]  # eq: L = 1/(2n) sum ||f(x) - y||^2

    ctx = small_problem_threads(1) if dev.type == "cpu" else contextlib.nullcontext()
    with ctx:
        params, losses, sharp, sharp_steps, diverged = _train(loss_fn, params, settings)
        w1, b1, w2, b2 = params
        pred = (torch.tanh(x @ w1 + b1) @ w2 + b2).argmax(1).cpu().numpy()
    return MLPRun(
        loss=np.array(losses),
        sharpness=np.array(sharp),
        sharpness_steps=np.array(sharp_steps, dtype=np.int64),
        accuracy=float(np.mean(pred == yi)),
        diverged=diverged,
        eta=settings.eta,
        n_params=int(n_params),
    )
