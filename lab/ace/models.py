"""The SO(2) vector-field toy: vector-neuron layers, an MLP branch, the swirl data, training.

Inputs are points :math:`x \\in \\mathbb{R}^2`, outputs are vectors :math:`y \\in \\mathbb{R}^2`,
and the group acts on both by the same rotation :math:`R(\\theta)`. A hidden feature is a
stack of ``C`` planar vectors, shape ``(B, C, 2)``, rotated channel by channel.

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn

from lab.ace.layer import HomotopyLayer
from lab.core.checks import (
    check_array,
    check_bool,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "METHODS",
    "NeqBranch",
    "VNLayer2D",
    "make_toy_model",
    "rotation_matrices",
    "swirl_dataset",
    "swirl_field",
]

METHODS = ("strict", "unconstrained", "equality", "resilient")
WIND_CENTRE = (1.0, 0.0)


# J: the 90-degree rotation; it commutes with every R(theta), which makes W1 V + W2 J V equivariant
def _apply_J(v):
    return torch.stack([-v[..., 1], v[..., 0]], dim=-1)


def rotation_matrices(theta) -> torch.Tensor:
    """``(n, 2, 2)`` rotation matrices :math:`R(\\theta)` for a 1-d tensor of angles.

    See: book/ace/02-partial-symmetry.ipynb
    """
    if isinstance(theta, torch.Tensor):  # keeps its dtype and device
        if theta.ndim > 1 or theta.numel() == 0 or not bool(torch.isfinite(theta).all()):
            raise ValueError(f"theta must be a finite 0-d or 1-d tensor (got {tuple(theta.shape)})")
    else:
        theta = torch.as_tensor(check_array("theta", theta, ndim=(0, 1), min_size=1))
    c, s = torch.cos(theta), torch.sin(theta)
    return torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)


class VNLayer2D(nn.Module):
    """SO(2)-equivariant vector-neuron layer on ``(B, C, 2)`` features.

    :math:`z_o = \\sum_c W_1[o,c] v_c + W_2[o,c] J v_c`, then optionally the norm gate
    :math:`z_o \\leftarrow z_o\\,\\sigma(a_o \\lVert z_o\\rVert + b_o)`. No vector bias (it would
    break equivariance); the gate depends on norms only.

    See: book/ace/02-partial-symmetry.ipynb
    """

    def __init__(self, cin: int, cout: int, gate: bool = True):
        super().__init__()
        cin, cout = check_int("cin", cin, 1), check_int("cout", cout, 1)
        self.gate = check_bool("gate", gate)
        self.cin, self.cout = cin, cout
        self.W1 = nn.Parameter(torch.randn(cout, cin) / math.sqrt(cin))
        self.W2 = nn.Parameter(torch.randn(cout, cin) / math.sqrt(cin))
        if self.gate:
            self.a = nn.Parameter(torch.ones(cout))
            self.b = nn.Parameter(torch.zeros(cout))

    def linear(self, v):
        # W1 V + W2 J V
        return torch.einsum("oc,bcd->bod", self.W1, v) + torch.einsum(
            "oc,bcd->bod", self.W2, _apply_J(v)
        )

    def forward(self, v):
        if v.ndim != 3 or v.shape[1:] != (self.cin, 2):
            raise ValueError(f"VNLayer2D expects (B, {self.cin}, 2) (got {tuple(v.shape)})")
        z = self.linear(v)
        if self.gate:
            nrm = z.norm(dim=-1, keepdim=True)
            z = z * torch.sigmoid(self.a[:, None] * nrm + self.b[:, None])  # norm gate
        return z


class NeqBranch(nn.Module):
    """Unconstrained branch: a 3-layer GELU MLP on the flattened ``(B, cin*2)`` features.

    See: book/ace/02-partial-symmetry.ipynb
    """

    def __init__(self, cin: int, cout: int, hidden: int = 32):
        super().__init__()
        cin, cout = check_int("cin", cin, 1), check_int("cout", cout, 1)
        hidden = check_int("hidden", hidden, 1)
        self.cout = cout
        self.net = nn.Sequential(
            nn.Linear(2 * cin, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, 2 * cout),
        )

    def forward(self, v):
        return self.net(v.flatten(1)).reshape(v.shape[0], self.cout, 2)


class _ToyModel(nn.Module):
    """``(B, 2) -> (B, 2)`` stack of layers on ``(B, C, 2)`` features."""

    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def hidden(self, x) -> list:
        """Input to every layer (``h_0 = x`` reshaped) and the output."""
        h = x.reshape(x.shape[0], 1, 2)
        hs = [h]
        for layer in self.layers:
            h = layer(h)
            hs.append(h)
        return hs

    def forward(self, x):
        if x.ndim != 2 or x.shape[1] != 2:
            raise ValueError(f"the toy model expects x of shape (B, 2) (got {tuple(x.shape)})")
        return self.hidden(x)[-1].reshape(x.shape[0], 2)


def make_toy_model(
    C: int = 16,
    layers: int = 3,
    homotopy: bool = True,
    gamma0: float = 1.0,
    hidden: int = 32,
    seed: int = 0,
    dtype=None,
) -> nn.Module:
    """The SO(2) toy network: ``layers`` vector-neuron layers of width ``C``.

    With ``homotopy=True`` each layer is a :class:`HomotopyLayer` with an MLP branch
    (:class:`NeqBranch`); with ``False`` it is the strictly equivariant network (same
    equivariant weights for the same ``seed``).

    See: book/ace/02-partial-symmetry.ipynb
    """
    C = check_int("C", C, 1)
    layers = check_int("layers", layers, 1)
    homotopy = check_bool("homotopy", homotopy)
    hidden = check_int("hidden", hidden, 1)
    seed = check_int("seed", seed, 0)
    widths = [1] + [C] * (layers - 1) + [1]
    mods: list[nn.Module] = []
    with torch.random.fork_rng(devices=[]):
        for i in range(layers):
            torch.manual_seed(1000 * seed + i)  # equivariant weights: same with or without neq
            eq = VNLayer2D(widths[i], widths[i + 1], gate=i < layers - 1)
            if homotopy:
                torch.manual_seed(1000 * seed + 500 + i)
                neq = NeqBranch(widths[i], widths[i + 1], hidden)
                mods.append(HomotopyLayer(eq, neq, gamma0))
            else:
                mods.append(eq)
    model = _ToyModel(mods)
    if dtype is not None:
        model = model.to(dtype)
    return model


# ----------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------
def swirl_field(x, eps: float = 0.0) -> np.ndarray:
    """Target field: :math:`F(x) = 2e^{-|x|^2/4} R(1.5|x|)\\,x + \\varepsilon e_1 e^{-|x-c|^2}`.

    The first term is SO(2)-equivariant; the wind term (centre ``c = (1, 0)``) is not.

    See: book/ace/02-partial-symmetry.ipynb
    """
    x = check_array("x", x, shape=(None, 2), min_size=1)
    eps = check_real("eps", eps)
    r = np.linalg.norm(x, axis=-1)
    c, s = np.cos(1.5 * r), np.sin(1.5 * r)
    rot = np.stack([c * x[..., 0] - s * x[..., 1], s * x[..., 0] + c * x[..., 1]], -1)
    out = 2.0 * np.exp(-(r**2) / 4)[..., None] * rot
    d2 = ((x - np.asarray(WIND_CENTRE)) ** 2).sum(-1)
    out[..., 0] += eps * np.exp(-d2)  # symmetry-breaking wind along e1
    return out


def swirl_dataset(
    N: int, eps: float = 0.0, seed: int = 0, noise: float = 0.0, radius: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """``N`` points uniform in the disc of ``radius`` and their (noisy) swirl targets.

    Parameters
    ----------
    N : int
        Number of samples.
    eps : float
        Symmetry-breaking strength (0: fully SO(2)-symmetric data).
    seed : int
    noise : float
        Standard deviation of Gaussian label noise.

    Returns
    -------
    x, y : ndarray of shape ``(N, 2)`` (float64)

    See: book/ace/02-partial-symmetry.ipynb
    """
    N = check_int("N", N, 1)
    eps = check_range("eps", eps, 0.0, 10.0)
    seed = check_int("seed", seed, 0)
    noise = check_positive("noise", noise, allow_zero=True)
    radius = check_positive("radius", radius)
    rng = np.random.default_rng(seed)
    r = radius * np.sqrt(rng.uniform(size=N))
    t = rng.uniform(0, 2 * np.pi, size=N)
    x = np.stack([r * np.cos(t), r * np.sin(t)], -1)
    y = swirl_field(x, eps) + noise * rng.standard_normal((N, 2))
    return x, y
