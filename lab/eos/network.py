"""The real-network contrast of notebook 3: full-batch GD on a small MLP with sharpness tracking.

See: book/eos/03-real-network.ipynb
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.runtime import resolve_device
from lab.eos.fast import sharpness_hvp

__all__ = ["MLPRun", "mlp_digits_gd"]


# ---------------------------------------------------------------------------------------------
# The real-network contrast (notebook 3)
# ---------------------------------------------------------------------------------------------


@dataclass
class MLPRun:
    """History of ``mlp_digits_gd``.

    Attributes
    ----------
    loss : ndarray, shape (steps_run + 1,)
        Full-batch MSE loss ``1/(2n) sum_i ||f(x_i) - y_i||^2``.
    sharpness : ndarray
        Top Hessian eigenvalue of the loss (HVP power iteration) at ``sharpness_steps``.
    sharpness_steps : ndarray of int
    accuracy : float
        Final training accuracy.
    diverged : bool
    eta : float
    n_params : int

    See: book/eos/03-real-network.ipynb
    """

    loss: np.ndarray
    sharpness: np.ndarray
    sharpness_steps: np.ndarray
    accuracy: float
    diverged: bool
    eta: float
    n_params: int


def mlp_digits_gd(
    eta: float,
    steps: int = 500,
    width: int = 32,
    n_samples: int = 200,
    track_every: int = 25,
    seed: int = 0,
    device: Any = None,
    *,
    classes: tuple[int, int] = (3, 8),
    hvp_iters: int = 20,
) -> MLPRun:
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
    eta : float
        Step size ``> 0``.
    steps : int
        GD steps ``>= 1``.
    width : int
        Hidden width ``>= 1``.
    n_samples : int
        Number of images, ``>= 2`` and at most the number of images of the two classes
        (357 for 3 and 8).
    track_every : int
        Sharpness every this many steps (``0``: never).
    seed : int
        Initialisation seed.
    device : str or torch.device, optional
        Defaults to ``lab.device()``.
    classes : (int, int)
        The two digit classes.
    hvp_iters : int
        Power-iteration steps per sharpness estimate.

    Returns
    -------
    MLPRun

    See: book/eos/03-real-network.ipynb
    """
    import torch
    from torch.func import grad

    from lab.core.data import digits
    from lab.core.runtime import small_problem_threads

    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1, 10_000_000)
    width = check_int("width", width, 1, 100_000)
    n_samples = check_int("n_samples", n_samples, 2, 1797)
    track_every = check_int("track_every", track_every, 0, 10_000_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    hvp_iters = check_int("hvp_iters", hvp_iters, 1, 10_000)
    if not (isinstance(classes, tuple | list) and len(classes) == 2):
        raise TypeError(f"classes must be a pair of digits (got {classes!r})")
    c0 = check_int("classes[0]", classes[0], 0, 9)
    c1 = check_int("classes[1]", classes[1], 0, 9)
    if c0 == c1:
        raise ValueError(f"classes must be two different digits (got {classes!r})")
    dev = resolve_device(device)

    split = digits(
        (c0, c1), test_size=0, shuffle=False, standardize=False, dtype="float64"
    )  # lab.core.data: pixels / 16 in [0, 1], scikit-learn's order, label 1 = classes[1]
    if n_samples > split.y_train.size:
        raise ValueError(
            f"n_samples must be <= {split.y_train.size} for classes {classes!r} (got {n_samples})"
        )
    x = torch.as_tensor(split.X_train[:n_samples], dtype=torch.float64, device=dev)
    yi = split.y_train[:n_samples]
    y = torch.nn.functional.one_hot(torch.as_tensor(yi), 2).to(torch.float64).to(dev)

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def init(fan_in: int, fan_out: int):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        return w.to(dev), b.to(dev)

    params = (*init(64, width), *init(width, 2))
    n_params = sum(p.numel() for p in params)

    def loss_fn(ps):
        w1, b1, w2, b2 = ps
        out = torch.tanh(x @ w1 + b1) @ w2 + b2
        return 0.5 * ((out - y) ** 2).sum() / x.shape[0]  # eq: L = 1/(2n) sum ||f(x) - y||^2

    g = grad(loss_fn)
    losses, sharp, sharp_steps = [], [], []
    diverged = False
    ctx = small_problem_threads(1) if dev.type == "cpu" else contextlib.nullcontext()
    with ctx:
        for k in range(steps + 1):
            lv = float(loss_fn(params))
            if not math.isfinite(lv) or lv > 1e6:
                diverged = True
                break
            losses.append(lv)
            if track_every and k % track_every == 0:
                sharp.append(sharpness_hvp(loss_fn, params, iters=hvp_iters, seed=seed))
                sharp_steps.append(k)
            if k == steps:
                break
            grads = g(params)
            params = tuple(p - eta * gp for p, gp in zip(params, grads, strict=True))  # eq: GD
        w1, b1, w2, b2 = params
        pred = (torch.tanh(x @ w1 + b1) @ w2 + b2).argmax(1).cpu().numpy()
    return MLPRun(
        loss=np.array(losses),
        sharpness=np.array(sharp),
        sharpness_steps=np.array(sharp_steps, dtype=np.int64),
        accuracy=float(np.mean(pred == yi)),
        diverged=diverged,
        eta=eta,
        n_params=int(n_params),
    )
