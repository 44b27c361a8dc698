"""The SO(2) vector-field toy: vector-neuron layers, an MLP branch, the swirl data, training.

Inputs are points :math:`x \\in \\mathbb{R}^2`, outputs are vectors :math:`y \\in \\mathbb{R}^2`,
and the group acts on both by the same rotation :math:`R(\\theta)`. A hidden feature is a
stack of ``C`` planar vectors, shape ``(B, C, 2)``, rotated channel by channel.

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ..core.checks import check_bool, check_choice, check_int, check_positive, check_range
from ..core.progress import progress
from .constrained import ACE, HomotopyLayer, equivariance_error, homotopy

__all__ = [
    "METHODS",
    "NeqBranch",
    "VNLayer2D",
    "layer_constants",
    "make_toy_model",
    "rotation_matrices",
    "so2_equivariance_error",
    "swirl_dataset",
    "swirl_field",
    "train_toy",
    "truncation_gap",
    "violation_gap",
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
    theta = torch.as_tensor(theta)
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
    x = np.asarray(x, dtype=float)
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


def so2_equivariance_error(model, x, n: int = 16, seed: int = 0) -> float:
    """:func:`equivariance_error` of a ``(B, 2) -> (B, 2)`` map under ``n`` random rotations.

    See: book/ace/02-partial-symmetry.ipynb
    """
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))

    def sampler(k):
        return 2 * math.pi * torch.rand(k, generator=gen, dtype=torch.float64)

    return equivariance_error(model, x, sampler, rotation_matrices, rotation_matrices, n=n)


# ----------------------------------------------------------------------------------------
# Bounds: plug-in constants and measured gaps
# ----------------------------------------------------------------------------------------
def layer_constants(model, x) -> dict[str, float]:
    """Plug-in constants for Theorems 4.1/4.2 on the inputs ``x`` (data-dependent).

    ``M``: max over layers of the spectral norm of the equivariant linear map times the
    largest slope of its norm gate over the observed pre-activations (at least 1).
    ``B``: max over layers and samples of ``||f_neq,i(h_{i-1})|| / ||x||`` along the
    homotopy model's forward pass. These are estimates on the data, not certified global
    constants.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    M, B = 1.0, 0.0
    with torch.no_grad():
        hs = model.hidden(x)
        xn = x.norm(dim=-1).clamp_min(1e-12)
        for i, layer in enumerate(model.layers):
            eq = layer.eq if isinstance(layer, HomotopyLayer) else layer
            # real matrix of V -> W1 V + W2 J V on R^{2 cin}
            J = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=eq.W1.dtype)
            I2 = torch.eye(2, dtype=eq.W1.dtype)
            A = torch.kron(eq.W1, I2) + torch.kron(eq.W2, J)
            s = float(torch.linalg.matrix_norm(A, ord=2))
            slope = 1.0
            if eq.gate:
                z = eq.linear(hs[i]).norm(dim=-1)  # (B, cout)
                sg = torch.sigmoid(eq.a * z + eq.b)
                slope = float((sg + eq.a.abs() * z * sg * (1 - sg)).max())
            M = max(M, s * slope)
            if isinstance(layer, HomotopyLayer):
                nb = layer.neq(hs[i]).flatten(1).norm(dim=-1) / xn
                B = max(B, float(nb.max()))
    return {"M": M, "B": B}


def truncation_gap(model, truncated, x) -> np.ndarray:
    """Per-sample ``||f_gamma(x) - f_0(x)||`` (what Theorem 4.1 bounds).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    with torch.no_grad():
        return (model(x) - truncated(x)).norm(dim=-1).cpu().numpy()


def violation_gap(model, x, n: int = 16, seed: int = 0) -> np.ndarray:
    """Per-sample ``max_g ||R f(x) - f(R x)||`` over ``n`` random rotations (Theorem 4.2).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    gen = torch.Generator().manual_seed(seed)
    th = 2 * math.pi * torch.rand(n, generator=gen, dtype=torch.float64)
    R = rotation_matrices(th).to(x.dtype)
    B = x.shape[0]
    with torch.no_grad():
        fx = model(x)
        fgx = model(torch.einsum("gij,bj->gbi", R, x).reshape(n * B, 2)).reshape(n, B, 2)
        gfx = torch.einsum("gij,bj->gbi", R, fx)
        return (fgx - gfx).norm(dim=-1).amax(0).cpu().numpy()


# ----------------------------------------------------------------------------------------
# Training (full batch) for the four methods
# ----------------------------------------------------------------------------------------
def train_toy(
    method: str = "equality",
    N: int = 64,
    eps: float = 0.0,
    steps: int = 600,
    seed: int = 0,
    lr: float = 1e-2,
    dual_lr: float = 1e-2,
    aug: float = 0.0,
    rho: float = 1.0,
    gamma_opt: str = "adam",
    gamma_lr: float | None = None,
    dual_opt: str = "sgd",
    noise: float = 0.05,
    C: int = 16,
    layers: int = 3,
    hidden: int = 32,
    test_N: int = 1000,
    record_every: int = 10,
    dtype=torch.float32,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Train one toy model on ``swirl_dataset(N, eps, seed)`` and record the dynamics.

    Methods: ``strict`` (equivariant layers only), ``unconstrained`` (homotopy model, gamma
    trained freely), ``equality`` (ACE, Algorithm 1), ``resilient`` (ACE, Algorithm 2).
    Adam on the weights; gamma on Adam (same ``lr``) or on SGD (``gamma_lr``, default
    ``100 * lr``).

    Returns
    -------
    dict with ``step``, ``gamma``, ``lam``, ``u`` (recorded histories), ``test_mse``,
    ``eq_error`` (histories), ``final`` (test MSE and equivariance error of the deployed and
    the truncated model), ``model``, ``truncated`` and ``ace`` (or None).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    method = check_choice("method", method, METHODS)
    N = check_int("N", N, 1)
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    gamma_opt = check_choice("gamma_opt", gamma_opt, ("adam", "sgd"))
    gamma_lr = 100 * lr if gamma_lr is None else check_positive("gamma_lr", gamma_lr)
    record_every = check_int("record_every", record_every, 1)
    x, y = swirl_dataset(N, eps, seed, noise=noise)
    xt, yt = swirl_dataset(test_N, eps, seed + 1_000_003, noise=0.0)
    X, Y = torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype)
    Xt, Yt = torch.tensor(xt, dtype=dtype), torch.tensor(yt, dtype=dtype)
    torch.manual_seed(seed)
    model = make_toy_model(C, layers, homotopy=method != "strict", hidden=hidden, seed=seed)
    model = model.to(dtype)
    gammas = homotopy(model)
    gids = {id(g) for g in gammas}
    weights = [p for p in model.parameters() if id(p) not in gids]
    if not gammas or gamma_opt == "adam":
        opts = [torch.optim.Adam(list(model.parameters()), lr=lr)]
    else:
        opts = [torch.optim.Adam(weights, lr=lr), torch.optim.SGD(gammas, lr=gamma_lr)]
    ace = None
    if method in ("equality", "resilient"):
        ace = ACE(model, opts, mode=method, dual_lr=dual_lr, rho=rho, aug=aug, dual_opt=dual_opt)
    L = len(gammas)
    hist: dict[str, list] = {k: [] for k in ("step", "gamma", "lam", "u", "test_mse", "eq_error")}

    def record(k):
        with torch.no_grad():
            hist["step"].append(k)
            hist["gamma"].append([float(g) for g in gammas] if L else [])
            hist["lam"].append(ace.lam.tolist() if ace is not None else [0.0] * L)
            u = ace.u.detach().tolist() if ace is not None and ace.u is not None else [0.0] * L
            hist["u"].append(u)
            hist["test_mse"].append(float(((model(Xt) - Yt) ** 2).sum(-1).mean()))
            hist["eq_error"].append(so2_equivariance_error(model, Xt[:200], n=8))

    record(0)
    it = progress(range(1, steps + 1), desc=method, disable=None if show_progress else True)
    for k in it:
        loss = ((model(X) - Y) ** 2).sum(-1).mean()
        if ace is not None:
            ace.step(loss)
        else:
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            for o in opts:
                o.step()
        if k % record_every == 0 or k == steps:
            record(k)
    out: dict[str, Any] = {k: np.asarray(v, dtype=float) for k, v in hist.items()}
    if ace is not None:
        truncated = ace.truncate()
    elif L:
        truncated = ACE(model, [torch.optim.SGD(list(model.parameters()), lr=0.0)]).truncate()
    else:
        truncated = model
    with torch.no_grad():
        mse = float(((model(Xt) - Yt) ** 2).sum(-1).mean())
        mse_t = float(((truncated(Xt) - Yt) ** 2).sum(-1).mean())
    out["final"] = {
        "test_mse": mse,
        "test_mse_truncated": mse_t,
        "eq_error": so2_equivariance_error(model, Xt[:200], n=8),
        "eq_error_truncated": so2_equivariance_error(truncated, Xt[:200], n=8),
        "gamma": [float(g.detach()) for g in gammas],
    }
    out.update(model=model, truncated=truncated, ace=ace, x_test=Xt, y_test=Yt)
    return out
