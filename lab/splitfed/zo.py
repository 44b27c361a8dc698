"""Two-point zeroth-order (SPSA) gradient estimates with sphere directions.

``u`` is uniform on the sphere of radius ``sqrt(d)`` and, for a function ``phi``,

    ghat = [phi(x + lam u) - phi(x - lam u)] / (2 lam) * u,

an unbiased estimate of the gradient of the sphere-smoothed ``phi``. Only the scalar
``delta = phi(x + lam u) - phi(x - lam u)`` has to travel between machines: the direction is
regenerated from a shared seed.

See: book/splitfed/01-zeroth-order-split.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.runtime import smoke_steps

__all__ = ["sphere_direction", "spsa", "spsa_error"]


def sphere_direction(d: int, generator: Any = None, *, dtype: Any = None, device: Any = None):
    """A direction uniform on the sphere of radius ``sqrt(d)`` in ``R^d`` (torch).

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    generator : torch.Generator, optional
        Source of randomness (the seed is what client and server share).
    dtype, device : optional
        Of the returned tensor (default float64 on CPU). The draw itself is always made in
        float64 on the CPU, so that every dtype and device sees the same direction.

    Returns
    -------
    torch.Tensor
        Shape ``[d]``, with ``||u||^2 = d`` up to rounding.

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import torch

    d = check_int("d", d, 1)
    g = torch.randn(d, generator=generator, dtype=torch.float64)
    u = g * (np.sqrt(d) / torch.linalg.vector_norm(g))  # uniform on the sqrt(d)-sphere
    return u.to(dtype=dtype or torch.float64, device=device)


def spsa(f: Callable[[Any], Any], x: Any, lam: float, u: Any) -> tuple[Any, Any]:
    """Two-point SPSA estimate ``ghat = (f(x + lam u) - f(x - lam u)) / (2 lam) * u``.

    Parameters
    ----------
    f : callable
        Scalar function of ``x`` (numpy or torch).
    x, u : array or tensor
        Point and direction of the same shape.
    lam : float
        Perturbation size ``> 0``.

    Returns
    -------
    ghat, delta
        The gradient estimate (shape of ``x``) and the scalar difference
        ``delta = f(x + lam u) - f(x - lam u)``: the only number a split server sends back.

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    lam = check_positive("lam", lam)
    if getattr(x, "shape", None) != getattr(u, "shape", None):
        raise ValueError(
            f"u must have the shape of x (got {getattr(u, 'shape', None)} vs {getattr(x, 'shape', None)})"
        )
    delta = f(x + lam * u) - f(x - lam * u)  # the scalar that crosses the cut
    return delta / (2 * lam) * u, delta


def spsa_error(
    d: int,
    lam: float,
    *,
    directions: int = 1,
    draws: int = 400,
    curvature: float = 1.0,
    dtype: str = "float64",
    seed: int = 0,
) -> dict[str, float]:
    """Monte-Carlo error of SPSA on ``f(x) = 0.5 sum(a_i x_i^2) + 0.1 sum(x_i^3)`` (torch).

    The cubic term makes the estimator biased (``O(lam^2)``); for a pure quadratic it is
    unbiased. ``directions`` estimates are averaged per draw.

    Parameters
    ----------
    d : int
        Dimension.
    lam : float
        Perturbation size.
    directions : int
        Directions averaged in one estimate.
    draws : int
        Independent estimates.
    curvature : float
        Scale of the diagonal ``a`` (drawn in ``[0.5, 1.5] * curvature``).
    dtype : {"float32", "float64"}
        Precision of the function evaluations (float32 shows round-off at small ``lam``).
    seed : int
        Seed.

    Returns
    -------
    dict
        ``cos`` (mean cosine between estimate and gradient), ``rel_mse``
        (``E||ghat - g||^2 / ||g||^2``; ``(d - 1) / directions`` for a linear ``f``),
        ``rel_bias`` (``||mean ghat - g|| / ||g||``, which contains the Monte-Carlo noise),
        ``bias_floor`` (that noise level, ``sqrt(rel_mse / draws)``) and ``fd_error``: the RMS
        of ``ghat - (g . u) u`` relative to ``||g||``, the finite-difference error with the
        sampling noise removed (``O(lam^2)``, plus round-off ``~ eps / lam`` in float32).

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import torch

    d = check_int("d", d, 1)
    lam = check_positive("lam", lam)
    directions = check_int("directions", directions, 1)
    draws = smoke_steps(check_int("draws", draws, 2), small=10)  # LAB_SMOKE=1: ten draws
    curvature = check_positive("curvature", curvature)
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be one of ['float32', 'float64'] (got {dtype!r})")
    seed = check_int("seed", seed, 0)
    return _spsa_error(d, lam, directions, draws, curvature, getattr(torch, dtype), seed)


def _spsa_error(d, lam, directions, draws, curvature, dt, seed):
    import torch

    gen = torch.Generator().manual_seed(int(seed))
    a = (0.5 + torch.rand(d, generator=gen, dtype=torch.float64)) * curvature
    x = torch.randn(d, generator=gen, dtype=torch.float64)
    grad = a * x + 0.3 * x**2
    n = draws * directions
    g = torch.randn(n, d, generator=gen, dtype=torch.float64)
    u = g * (np.sqrt(d) / torch.linalg.vector_norm(g, dim=1, keepdim=True))
    a_, x_, u_ = a.to(dt), x.to(dt), u.to(dt)

    def f(z):
        return 0.5 * (a_ * z * z).sum(-1) + 0.1 * (z**3).sum(-1)

    delta = (f(x_ + lam * u_) - f(x_ - lam * u_)).double()
    ghat = (delta / (2 * lam))[:, None] * u
    exact = (u @ grad)[:, None] * u  # the lam -> 0 limit with the same directions
    fd = float(((ghat - exact) ** 2).sum(1).mean().sqrt())
    ghat = ghat.view(draws, directions, d).mean(1)
    err = ((ghat - grad) ** 2).sum(1)
    gn2 = float((grad**2).sum())
    cos = torch.nn.functional.cosine_similarity(ghat, grad[None], dim=1)
    rel_mse = float(err.mean()) / gn2
    return {
        "cos": float(cos.mean()),
        "rel_mse": rel_mse,
        "rel_bias": float(torch.linalg.vector_norm(ghat.mean(0) - grad)) / np.sqrt(gn2),
        "bias_floor": float(np.sqrt(rel_mse / draws)),
        "fd_error": fd / np.sqrt(gn2),
    }
