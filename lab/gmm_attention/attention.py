"""The chapter's two layers as ``torch.nn.Module``s, to drop into a user's own model.

* :class:`HeadAttention`: the (reconstructed) multi-head layer (M1)-(M2), one trainable vector
  per head serving as its key and its value; ``module.risk(x)`` is the empirical risk (M3).
* :class:`IdentityAttention`: the parameter-free layer (M6), query = key = value = identity,
  through ``scaled_dot_product_attention`` (fused kernels on a GPU).

They compute what :func:`lab.gmm_attention.head_attention` and
:func:`lab.gmm_attention.identity_attention` compute (tests/test_gmm_attention.py checks it);
train a :class:`HeadAttention` with any ``torch.optim`` optimizer.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lab.core.checks import check_array, check_choice, check_int, check_positive

from .reference import SCORES

__all__ = ["HeadAttention", "IdentityAttention"]


def _check_input(x: Any, d: int | None, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (got {type(x).__name__})")
    if x.ndim < 1 or x.shape[-1] < 1 or (d is not None and x.shape[-1] != d):
        want = f"(..., {d})" if d is not None else "(..., d)"
        raise ValueError(f"{name} must have shape {want} (got {tuple(x.shape)})")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor (got {x.dtype})")
    return x


class HeadAttention(nn.Module):
    """The reconstructed head layer ``A(x) = sum_h softmax_h(s_h(x)) theta_h`` (M1)-(M2).

    Parameters
    ----------
    heads : int
        Number of heads ``H >= 2``.
    dim : int
        Token dimension ``d >= 1``.
    lam : float
        Inverse temperature (> 0), a fixed hyper-parameter (not trained).
    score : {"dot", "distance"}
        The score (M1).
    init_scale : float
        ``theta = init_scale * N(0, I)`` (>= 0); independent heads break the symmetry.
    seed : int, optional
        Seeds the initialisation (a local generator).
    Theta : array-like, shape (H, d), optional
        Explicit initial heads (overrides ``heads``, ``dim`` and ``init_scale``).
    dtype : torch.dtype, optional
        Default ``torch.get_default_dtype()``.

    Attributes
    ----------
    theta : torch.nn.Parameter, shape (H, d)

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """

    def __init__(
        self,
        heads: int = 2,
        dim: int = 10,
        lam: float = 1.0,
        score: str = "dot",
        *,
        init_scale: float = 0.1,
        seed: int | None = None,
        Theta: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        heads = check_int("heads", heads, 2)
        dim = check_int("dim", dim, 1)
        self.lam = check_positive("lam", lam)
        self.score = check_choice("score", score, SCORES)
        init_scale = check_positive("init_scale", init_scale, allow_zero=True)
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype (got {dtype!r})")
        if Theta is not None:
            T = check_array("Theta", Theta, ndim=2)
            if T.shape[0] < 2:
                raise ValueError(f"Theta must have at least 2 rows (heads) (got shape {T.shape})")
            init = torch.as_tensor(T, dtype=dtype)
        else:
            gen = torch.Generator().manual_seed(
                int(np.random.SeedSequence().entropy % 2**63)
                if seed is None
                else check_int("seed", seed, 0, 2**63 - 1)
            )
            init = init_scale * torch.randn(heads, dim, generator=gen, dtype=dtype)
        self.theta = nn.Parameter(init)

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        """Head weights ``w_h(x)`` (M2), shape ``(..., H)``."""
        x = _check_input(x, self.theta.shape[1])
        logits = x @ self.theta.T  # (M1) dot: <x, theta_h>
        if self.score == "distance":
            logits = logits - 0.5 * (self.theta**2).sum(-1)  # (M1) distance: key bias
        return torch.softmax(self.lam * logits, dim=-1)  # (M2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Layer output ``A(x)`` (M2), same shape as ``x``."""
        return self.weights(x) @ self.theta  # (M2): sum_h w_h theta_h

    def risk(self, x: torch.Tensor) -> torch.Tensor:
        """Empirical risk ``mean ||x - A(x)||^2`` (M3), a differentiable scalar."""
        return ((x - self(x)) ** 2).sum(-1).mean()  # (M3)


class IdentityAttention(nn.Module):
    """Parameter-free attention (M6): ``T(X)_i = sum_j softmax_j(beta <x_i, x_j>) x_j``.

    Parameters
    ----------
    beta : float
        Inverse temperature (>= 0).
    n_layers : int
        Number of applications (>= 0).

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """

    def __init__(self, beta: float = 0.2, n_layers: int = 1) -> None:
        super().__init__()
        self.beta = check_positive("beta", beta, allow_zero=True)
        self.n_layers = check_int("n_layers", n_layers, 0, 10_000)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Apply the layer to tokens ``X`` of shape ``(..., L, d)``."""
        X = _check_input(X, None, "X")
        if X.ndim < 2:
            raise ValueError(f"X must have shape (..., L, d) (got {tuple(X.shape)})")
        for _ in range(self.n_layers):
            X = F.scaled_dot_product_attention(X, X, X, scale=self.beta)  # (M6)
        return X
