r"""MEDRO: multi-expert distributionally robust optimisation (GroupDRO with m expert heads).

*Multi-Expert Distributionally Robust Optimization for Out-of-Distribution Generalization*,
NeurIPS 2025, https://openreview.net/forum?id=Lz5BUjArK4 (authors not confirmed, no code).

Only the abstract and public reviews could be read. The objective below is our formalisation
of the abstract on top of GroupDRO (Sagawa et al., ICLR 2020); it is **reconstructed**.

Training environments :math:`e = 1..m`, a shared featurizer :math:`\phi_\theta`, one linear
head (expert) per environment :math:`h_k(z) = V_k z + c_k`, and the risk matrix

.. math::  R_{ke} = \mathbb E_{(x,y)\sim P_e}\, \ell(h_k(\phi_\theta(x)), y)          \quad (1)

.. math::  \min_{\theta, V}\ \max_{q \in \Delta_{m\times m}} \sum_{k,e} q_{ke} R_{ke}
           \;(+\ \alpha \tfrac1m \textstyle\sum_k R_{kk})                          \quad (2)

solved online by exponentiated-gradient ascent on :math:`q` (computed in log space),

.. math::  \log q \leftarrow \log q + \eta_q \hat R, \quad q \leftarrow q / \textstyle\sum q  \quad (3)

and a gradient step on :math:`(\theta, V)` for the weighted loss (2). With one head (and
:math:`q` over environments) this is GroupDRO. Inference without environment labels: the
ensemble :math:`\tfrac1m\sum_k \mathrm{softmax}(h_k)` (4), a gate :math:`g(\phi(x))\in\Delta_m`
trained on frozen features, :math:`\sum_k g_k \mathrm{softmax}(h_k)` (5), or the oracle head
of the test environment (diagnostic).

Reconstructed choices (ours): the specialisation weight :math:`\alpha` (default 0), the
toy benchmark :func:`make_rotated_spurious_envs`, the "GroupDRO-ensemble" baseline (m heads
on the shared featurizer, each with its own GroupDRO adversary), and the convex certificate
(frozen features, binary logistic heads with an :math:`\ell_2` term inside each risk).

See: book/medro/01-conflicting-environments.ipynb, book/medro/02-experts-and-inference.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from ..core.progress import progress

__all__ = [
    "FitResult",
    "MultiHeadNet",
    "convex_minmax_problem",
    "convex_risks",
    "fit",
    "gated_predict",
    "groupdro_step",
    "make_featurizer",
    "make_rotated_spurious_envs",
    "medro_step",
    "predict",
    "risk_matrix",
    "risk_matrix_reference",
    "solve_convex_minmax",
    "train_gate",
    "update_pair_weights",
]

METHODS = ("erm", "groupdro", "groupdro_ensemble", "medro")
MODES = ("ensemble", "gate", "oracle")


# ----------------------------------------------------------------------------- data
def make_rotated_spurious_envs(
    n_per_env: int,
    rho_list,
    theta_list,
    noise_dims: int = 5,
    seed: int = 0,
    *,
    style_scale: float = 6.0,
    label_noise: float = 0.05,
    dtype=None,
):
    """Synthetic environments whose decision directions conflict (the chapter's toy benchmark).

    Environment ``e`` draws a core signal ``c ~ N(0, I_2)`` and labels it by the direction at
    angle ``theta_e``: ``y = 1[c · (cos θ_e, sin θ_e) > 0]`` (flipped with probability
    ``label_noise``). A spurious coordinate equals ``±1`` (agreeing with ``y`` with probability
    ``rho_e``) plus ``N(0, 0.1²)`` noise. ``noise_dims`` Gaussian coordinates follow; the first
    is shifted by ``style_scale · θ_e`` (an environment "style" that a gate can read).
    Input dimension: ``3 + noise_dims``.

    Parameters
    ----------
    n_per_env : int
        Samples per environment (>= 1).
    rho_list, theta_list : sequence of float
        Spurious agreement in [0, 1] and rotation (rad, in [-π, π]) per environment; same length.
    noise_dims : int
        Extra Gaussian coordinates (>= 1).
    seed : int
        Seed of the generator (numpy).
    style_scale : float
        Mean shift of the first noise coordinate per radian of rotation (>= 0).
    label_noise : float
        Probability in [0, 0.5] of flipping a label.
    dtype : torch.dtype, optional
        Default ``torch.float32``.

    Returns
    -------
    list of (Tensor[n, d], LongTensor[n])
        One ``(x, y)`` pair per environment, on the CPU.

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch

    n = check_int("n_per_env", n_per_env, 1)
    rho = check_array("rho_list", rho_list, ndim=1, min_size=1)
    theta = check_array("theta_list", theta_list, ndim=1, min_size=1)
    if rho.shape != theta.shape:
        raise ValueError(
            f"rho_list and theta_list must have the same length (got {rho.size}, {theta.size})"
        )
    if np.any((rho < 0) | (rho > 1)):
        raise ValueError(f"rho_list must lie in [0, 1] (got {rho.tolist()})")
    if np.any(np.abs(theta) > math.pi):
        raise ValueError(f"theta_list must lie in [-pi, pi] (got {theta.tolist()})")
    noise_dims = check_int("noise_dims", noise_dims, 1)
    seed = check_int("seed", seed, 0)
    style_scale = check_positive("style_scale", style_scale, allow_zero=True)
    label_noise = check_range("label_noise", label_noise, 0.0, 0.5)
    dtype = torch.float32 if dtype is None else dtype
    rng = np.random.default_rng(seed)
    envs = []
    for r, t in zip(rho, theta, strict=True):
        core = rng.standard_normal((n, 2))
        y = (core @ np.array([math.cos(t), math.sin(t)]) > 0).astype(np.int64)
        flip = rng.random(n) < label_noise
        y = np.where(flip, 1 - y, y)
        sign = np.where(rng.random(n) < r, 2 * y - 1, 1 - 2 * y)
        spur = sign + 0.1 * rng.standard_normal(n)
        noise = rng.standard_normal((n, noise_dims))
        noise[:, 0] += style_scale * t
        x = np.column_stack([core, spur, noise])
        envs.append((torch.as_tensor(x, dtype=dtype), torch.as_tensor(y)))
    return envs


# ----------------------------------------------------------------------------- model
def make_featurizer(in_dim: int, hidden: int = 32, feat_dim: int = 16):
    """The toy featurizer: ``Linear(in_dim, hidden) → ReLU → Linear(hidden, feat_dim) → ReLU``.

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch.nn as nn

    in_dim = check_int("in_dim", in_dim, 1)
    hidden = check_int("hidden", hidden, 1)
    feat_dim = check_int("feat_dim", feat_dim, 1)
    return nn.Sequential(
        nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, feat_dim), nn.ReLU()
    )


def _module_base():
    import torch.nn as nn

    return nn.Module


class MultiHeadNet(_module_base()):
    """A shared featurizer followed by ``n_heads`` linear heads (experts).

    The heads are stored as one weight tensor ``[m, C, k]`` and one bias ``[m, C]`` and applied
    with a single ``einsum`` (the fast path); :meth:`head_logits_reference` loops over heads.

    Parameters
    ----------
    featurizer : nn.Module
        Maps ``[n, ...]`` inputs to ``[n, feat_dim]`` features.
    feat_dim : int
        Feature dimension ``k`` (>= 1).
    n_classes : int
        Number of classes ``C`` (>= 2).
    n_heads : int
        Number of experts ``m`` (>= 1); one per training environment for MEDRO.

    See: book/medro/01-conflicting-environments.ipynb
    """

    def __init__(self, featurizer, feat_dim: int, n_classes: int, n_heads: int):
        import torch
        import torch.nn as nn

        super().__init__()
        if not isinstance(featurizer, nn.Module):
            raise TypeError(
                f"featurizer must be a torch.nn.Module (got {type(featurizer).__name__})"
            )
        self.feat_dim = check_int("feat_dim", feat_dim, 1)
        self.n_classes = check_int("n_classes", n_classes, 2)
        self.n_heads = check_int("n_heads", n_heads, 1)
        self.featurizer = featurizer
        bound = 1.0 / math.sqrt(self.feat_dim)
        self.weight = nn.Parameter(
            torch.empty(self.n_heads, self.n_classes, self.feat_dim).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(self.n_heads, self.n_classes).uniform_(-bound, bound))

    def features(self, x):
        """``φ(x)``: ``[n, feat_dim]``."""
        return self.featurizer(x)

    def head_logits(self, z):
        """All heads on features ``z [n, k]`` → ``[m, n, C]`` with one einsum (fast path)."""
        import torch

        return torch.einsum("nk,mck->mnc", z, self.weight) + self.bias[:, None, :]

    def head_logits_reference(self, z):
        """Same as :meth:`head_logits`, one head at a time (reference)."""
        import torch

        return torch.stack(
            [
                z @ self.weight[k].T + self.bias[k] for k in range(self.n_heads)
            ]  # h_k(z) = V_k z + c_k
        )

    def forward(self, x):
        """``[m, n, C]`` logits of every head."""
        return self.head_logits(self.features(x))


def _check_model(model):
    if not isinstance(model, MultiHeadNet):
        raise TypeError(f"model must be a MultiHeadNet (got {type(model).__name__})")
    return model


def _check_env_batches(env_batches, model=None, *, need_heads: bool = False):
    import torch

    if not isinstance(env_batches, list | tuple) or len(env_batches) == 0:
        raise ValueError(
            "env_batches must be a non-empty list of (x, y) pairs, one per environment"
        )
    out = []
    for e, pair in enumerate(env_batches):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ValueError(f"env_batches[{e}] must be an (x, y) pair")
        x, y = pair
        if not (torch.is_tensor(x) and torch.is_tensor(y)):
            raise TypeError(f"env_batches[{e}] must hold torch tensors")
        if x.shape[0] == 0:
            raise ValueError(f"env_batches[{e}] is empty (0 samples)")
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(
                f"env_batches[{e}]: y must have shape ({x.shape[0]},) (got {tuple(y.shape)})"
            )
        if model is not None and (int(y.min()) < 0 or int(y.max()) >= model.n_classes):
            raise ValueError(
                f"env_batches[{e}]: labels must lie in [0, {model.n_classes}) "
                f"(got min {int(y.min())}, max {int(y.max())})"
            )
        out.append((x, y))
    if need_heads and model is not None and len(out) != model.n_heads:
        raise ValueError(
            f"env_batches must have one batch per head: {model.n_heads} heads, "
            f"{len(out)} environment batches"
        )
    return out


# ----------------------------------------------------------------------------- risks
def risk_matrix(model, env_batches, loss_fn=None):
    """The expert–environment risk matrix ``R[k, e]`` of eq. (1) (fast path).

    One featurizer pass over all environments concatenated, all heads by one einsum, and
    per-environment mean losses (so small environments weigh as much as large ones).

    Parameters
    ----------
    model : MultiHeadNet
    env_batches : list of (Tensor, LongTensor)
        One ``(x, y)`` minibatch per environment.
    loss_fn : callable, optional
        ``loss_fn(logits [n, C], y [n]) -> per-sample losses [n]``; default cross-entropy.

    Returns
    -------
    Tensor[m_heads, m_envs]
        Differentiable risks.

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch
    import torch.nn.functional as F

    model = _check_model(model)
    batches = _check_env_batches(env_batches, model)
    sizes = [x.shape[0] for x, _ in batches]
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    logits = model(x)  # [m, N, C], one featurizer pass
    m, n, c = logits.shape
    if loss_fn is None:
        losses = F.cross_entropy(logits.reshape(m * n, c), y.repeat(m), reduction="none")
    else:
        losses = loss_fn(logits.reshape(m * n, c), y.repeat(m))
    losses = losses.reshape(m, n)
    env = torch.repeat_interleave(
        torch.arange(len(sizes), device=losses.device), torch.as_tensor(sizes, device=losses.device)
    )
    sums = torch.zeros(m, len(sizes), dtype=losses.dtype, device=losses.device)
    sums = sums.index_add(1, env, losses)
    return sums / torch.as_tensor(sizes, dtype=losses.dtype, device=losses.device)


def risk_matrix_reference(model, env_batches, loss_fn=None):
    """Eq. (1) cell by cell: one featurizer pass per environment, a loop over heads (reference).

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch
    import torch.nn.functional as F

    model = _check_model(model)
    batches = _check_env_batches(env_batches, model)
    loss_fn = loss_fn or (lambda logits, y: F.cross_entropy(logits, y, reduction="none"))
    cols = []
    for x_e, y_e in batches:
        z_e = model.features(x_e)  # Z_e = φ_θ(X_e), once per environment
        logits = model.head_logits_reference(z_e)
        # eq. (1): R[k, e] = mean over B_e of ℓ(h_k(φ(x)), y)
        cols.append(torch.stack([loss_fn(logits[k], y_e).mean() for k in range(model.n_heads)]))
    return torch.stack(cols, dim=1)


def update_pair_weights(q, R, eta: float):
    """Exponentiated-gradient ascent of the adversary, eq. (3), computed in log space.

    ``q_new ∝ q · exp(η R)``, normalised over all cells of ``q``; ``R`` is detached, so the
    adversary never receives gradients.

    Parameters
    ----------
    q : Tensor or array, shape (m,) or (m, m)
        Current weights on the simplex (positive entries summing to 1).
    R : Tensor or array, same shape as ``q``
        Current risks.
    eta : float
        Step size ``η_q >= 0``.

    Returns
    -------
    Tensor
        New weights, same shape, summing to 1.

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch

    eta = check_positive("eta", eta, allow_zero=True)
    q = torch.as_tensor(q)
    R = torch.as_tensor(R, dtype=q.dtype if q.is_floating_point() else None, device=q.device)
    if q.shape != R.shape:
        raise ValueError(
            f"q and R must have the same shape (got {tuple(q.shape)}, {tuple(R.shape)})"
        )
    if torch.any(q < 0):
        raise ValueError("q must be non-negative")
    logq = torch.log(q.detach()) + eta * R.detach()  # eq. (3) in log space
    return torch.softmax(logq.reshape(-1), dim=0).reshape(q.shape)


# ----------------------------------------------------------------------------- training steps
def medro_step(model, env_batches, q, opt, eta_q: float = 0.01, alpha: float = 0.0):
    """One MEDRO step: risks (1), adversary update (3), descent on the weighted loss (2).

    Parameters
    ----------
    model : MultiHeadNet
        With ``n_heads`` equal to the number of environments.
    env_batches : list of (Tensor, LongTensor)
    q : Tensor[m, m]
        Adversary weights over (expert, environment) pairs.
    opt : torch.optim.Optimizer
        Over ``model.parameters()``.
    eta_q : float
        Adversary step size (>= 0).
    alpha : float
        Specialisation weight (>= 0, reconstructed), adds ``α · mean_k R[k, k]``.

    Returns
    -------
    (Tensor[m, m], dict)
        The new ``q`` and ``{"loss", "R", "worst"}`` (detached).

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch

    model = _check_model(model)
    batches = _check_env_batches(env_batches, model, need_heads=True)
    eta_q = check_positive("eta_q", eta_q, allow_zero=True)
    alpha = check_positive("alpha", alpha, allow_zero=True)
    m = model.n_heads
    if tuple(q.shape) != (m, m):
        raise ValueError(f"q must have shape ({m}, {m}) (got {tuple(q.shape)})")
    R = risk_matrix(model, batches)  # eq. (1)
    q = update_pair_weights(q, R, eta_q)  # eq. (3)
    loss = (q * R).sum()  # eq. (2)
    if alpha > 0:
        loss = loss + alpha * torch.diagonal(R).mean()  # reconstructed specialisation term
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    Rd = R.detach()
    return q, {"loss": float(loss.detach()), "R": Rd, "worst": float(Rd.max())}


def groupdro_step(model, env_batches, q, opt, eta_q: float = 0.01):
    """One GroupDRO step (the baseline); with several heads, one adversary per head.

    With ``model.n_heads == 1`` and ``q`` of shape ``[m]`` this is GroupDRO: the weighted
    loss ``Σ_e q_e R_e`` with ``q`` updated by eq. (3). With ``H`` heads and ``q`` of shape
    ``[H, m]`` each head ``k`` is trained by its own GroupDRO adversary ``q[k]`` (each row on
    the simplex): the "GroupDRO-ensemble" baseline, whose only difference from MEDRO is that no
    adversary couples experts and environments.

    Returns
    -------
    (Tensor, dict)
        The new ``q`` and ``{"loss", "R", "worst"}``.

    See: book/medro/02-experts-and-inference.ipynb
    """
    import torch

    model = _check_model(model)
    batches = _check_env_batches(env_batches, model)
    eta_q = check_positive("eta_q", eta_q, allow_zero=True)
    m, h = len(batches), model.n_heads
    want = (m,) if h == 1 and q.ndim == 1 else (h, m)
    if tuple(q.shape) != want:
        raise ValueError(
            f"q must have shape {want} for {h} head(s), {m} envs (got {tuple(q.shape)})"
        )
    R = risk_matrix(model, batches)  # [h, m]
    if q.ndim == 1:
        q = update_pair_weights(q, R[0], eta_q)
        loss = (q * R[0]).sum()
    else:
        q = torch.stack([update_pair_weights(q[k], R[k], eta_q) for k in range(h)])
        loss = (q * R).sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    Rd = R.detach()
    return q, {"loss": float(loss.detach()), "R": Rd, "worst": float(Rd.max())}


# ----------------------------------------------------------------------------- fitting
@dataclass
class FitResult:
    """Output of :func:`fit`: the model, and the recorded risks and adversary weights.

    See: book/medro/01-conflicting-environments.ipynb
    """

    model: Any
    method: str
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    q: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))


def fit(
    envs,
    method: str = "medro",
    *,
    steps: int = 300,
    batch: int = 64,
    lr: float = 5e-3,
    weight_decay: float = 1e-3,
    eta_q: float = 0.05,
    alpha: float = 0.0,
    hidden: int = 32,
    feat_dim: int = 16,
    seed: int = 0,
    record_every: int = 10,
    device=None,
    show_progress: bool = False,
) -> FitResult:
    """Train ERM, GroupDRO, GroupDRO-ensemble or MEDRO on a list of ``(x, y)`` environments.

    ``erm``: one head, mean of environment risks. ``groupdro``: one head, ``q`` over
    environments. ``groupdro_ensemble``: ``m`` heads, one GroupDRO adversary each.
    ``medro``: ``m`` heads, one adversary over the ``m × m`` pairs. Adam, minibatches of
    ``batch`` per environment, fixed seed. ``R`` and ``q`` are recorded every ``record_every``
    steps (``R`` as ``[T, H, m]``; ``q`` as ``[T, H, m]``, or ``[T, 1, m]``).

    Parameters
    ----------
    envs : list of (Tensor, LongTensor)
        Training environments (full data; minibatches are drawn from them).
    method : {"erm", "groupdro", "groupdro_ensemble", "medro"}
    steps, batch : int
        Optimiser steps (>= 1) and samples per environment per step (>= 1).
    lr, weight_decay : float
        Adam settings (lr > 0, weight decay >= 0).
    eta_q, alpha : float
        Adversary step (>= 0) and MEDRO specialisation weight (>= 0).
    hidden, feat_dim : int
        Featurizer sizes (:func:`make_featurizer`).
    seed, record_every : int
        Seed of initialisation and batches; recording period.
    device : str or torch.device, optional
        Default: the device of the inputs.
    show_progress : bool
        Show a progress bar.

    Returns
    -------
    FitResult

    See: book/medro/01-conflicting-environments.ipynb
    """
    import torch

    method = check_choice("method", method, METHODS)
    steps = check_int("steps", steps, 1)
    batch = check_int("batch", batch, 1)
    lr = check_positive("lr", lr)
    weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
    eta_q = check_positive("eta_q", eta_q, allow_zero=True)
    alpha = check_positive("alpha", alpha, allow_zero=True)
    seed = check_int("seed", seed, 0)
    record_every = check_int("record_every", record_every, 1)
    envs = _check_env_batches(envs)
    dev = torch.device(device) if device is not None else envs[0][0].device  # follow inputs
    envs = [(x.to(dev), y.to(dev)) for x, y in envs]
    m = len(envs)
    n_classes = int(max(int(y.max()) for _, y in envs)) + 1
    n_classes = max(n_classes, 2)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    heads = 1 if method in ("erm", "groupdro") else m
    model = MultiHeadNet(
        make_featurizer(envs[0][0].shape[1], hidden, feat_dim), feat_dim, n_classes, heads
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    if method == "medro":
        q = torch.full((m, m), 1.0 / m**2, device=dev)
    elif method == "groupdro":
        q = torch.full((m,), 1.0 / m, device=dev)
    elif method == "groupdro_ensemble":
        q = torch.full((m, m), 1.0 / m, device=dev)
    else:
        q = torch.full((m,), 1.0 / m, device=dev)
    rec_t, rec_R, rec_q = [], [], []
    for t in progress(range(steps), desc=method, disable=None if show_progress else True):
        idx = [torch.randint(0, x.shape[0], (batch,), generator=gen) for x, _ in envs]
        b = [(x[i.to(dev)], y[i.to(dev)]) for (x, y), i in zip(envs, idx, strict=True)]
        if method == "medro":
            q, info = medro_step(model, b, q, opt, eta_q, alpha)
        elif method in ("groupdro", "groupdro_ensemble"):
            q, info = groupdro_step(model, b, q, opt, eta_q)
        else:
            R = risk_matrix(model, b)
            loss = R.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            info = {"R": R.detach()}
        if t % record_every == 0 or t == steps - 1:
            rec_t.append(t)
            rec_R.append(info["R"].cpu().numpy())
            rec_q.append(q.detach().cpu().numpy().reshape(info["R"].shape[0], -1))
    model.eval()
    return FitResult(model, method, np.array(rec_t), np.array(rec_R), np.array(rec_q))


# ----------------------------------------------------------------------------- inference
def gated_predict(head_logits, gate_probs):
    """Mixture of experts, eq. (5): ``p(y|x) = Σ_k g_k(x) softmax(h_k(x))``.

    Parameters
    ----------
    head_logits : Tensor[m, n, C]
    gate_probs : Tensor[n, m]
        Rows on the simplex.

    Returns
    -------
    Tensor[n, C]

    See: book/medro/02-experts-and-inference.ipynb
    """
    import torch

    if head_logits.ndim != 3:
        raise ValueError(f"head_logits must have shape (m, n, C) (got {tuple(head_logits.shape)})")
    m, n, _ = head_logits.shape
    if tuple(gate_probs.shape) != (n, m):
        raise ValueError(f"gate_probs must have shape ({n}, {m}) (got {tuple(gate_probs.shape)})")
    return torch.einsum("nm,mnc->nc", gate_probs, torch.softmax(head_logits, dim=-1))


def train_gate(
    model, env_batches, hidden: int = 32, steps: int = 300, lr: float = 1e-2, seed: int = 0
):
    """A small environment classifier ``g(φ(x)) ∈ Δ_m`` trained on **frozen** features.

    Parameters
    ----------
    model : MultiHeadNet
    env_batches : list of (Tensor, LongTensor)
        Training data, one entry per environment (the environment index is the gate's label).
    hidden, steps : int
        Hidden width of the gate MLP and Adam steps (full batch).
    lr : float
    seed : int

    Returns
    -------
    nn.Module
        Maps inputs ``x`` to gate probabilities ``[n, m]`` (no gradient into the featurizer).

    See: book/medro/02-experts-and-inference.ipynb
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    model = _check_model(model)
    batches = _check_env_batches(env_batches, model)
    hidden = check_int("hidden", hidden, 1)
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    torch.manual_seed(check_int("seed", seed, 0))
    m = len(batches)
    with torch.no_grad():  # stop-gradient: the gate never shapes the features
        z = torch.cat([model.features(x) for x, _ in batches])
    e = torch.cat([torch.full((x.shape[0],), i) for i, (x, _) in enumerate(batches)]).to(z.device)
    net = nn.Sequential(nn.Linear(model.feat_dim, hidden), nn.ReLU(), nn.Linear(hidden, m)).to(
        z.device
    )
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(steps):
        loss = F.cross_entropy(net(z), e)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    net.eval()

    class _Gate(nn.Module):
        def __init__(self, featurizer, head):
            super().__init__()
            self.featurizer, self.head = featurizer, head

        def forward(self, x):
            with torch.no_grad():
                return torch.softmax(self.head(self.featurizer(x)), dim=-1)

    return _Gate(model.featurizer, net)


def predict(model, x, mode: str = "ensemble", gate=None, env: int | None = None):
    """Class probabilities ``[n, C]`` without (ensemble, gate) or with (oracle) the environment.

    ``ensemble``: eq. (4), the average of the heads' softmax. ``gate``: eq. (5) with
    ``gate(x)``. ``oracle``: head ``env`` alone (a diagnostic; needs the test environment).

    Parameters
    ----------
    model : MultiHeadNet
    x : Tensor[n, d]
    mode : {"ensemble", "gate", "oracle"}
    gate : nn.Module, optional
        From :func:`train_gate`; required for ``mode="gate"``.
    env : int, optional
        Head index in ``[0, n_heads)``; required for ``mode="oracle"``.

    Returns
    -------
    Tensor[n, C]
        Class probabilities (no gradient).

    See: book/medro/02-experts-and-inference.ipynb
    """
    import torch

    model = _check_model(model)
    mode = check_choice("mode", mode, MODES)
    with torch.no_grad():
        logits = model(x)
        if mode == "ensemble":
            return torch.softmax(logits, dim=-1).mean(0)  # eq. (4)
        if mode == "gate":
            if gate is None:
                raise ValueError('mode="gate" needs a gate (see train_gate)')
            return gated_predict(logits, gate(x))  # eq. (5)
        if env is None:
            raise ValueError('mode="oracle" needs env, the index of the head to use')
        env = check_int("env", env, 0, model.n_heads - 1)
        return torch.softmax(logits[env], dim=-1)


# ----------------------------------------------------------------------------- convex case
def _check_convex(features, labels, n_heads, l2):
    if not isinstance(features, list | tuple) or len(features) == 0:
        raise ValueError("features must be a non-empty list of [n_e, k] arrays")
    feats = [check_array(f"features[{e}]", f, ndim=2, min_size=1) for e, f in enumerate(features)]
    k = feats[0].shape[1]
    if any(f.shape[1] != k for f in feats):
        raise ValueError("features must all have the same number of columns")
    if not isinstance(labels, list | tuple) or len(labels) != len(feats):
        raise ValueError(f"labels must be a list of {len(feats)} arrays of ±1")
    labs = [
        check_array(f"labels[{e}]", y, shape=(f.shape[0],))
        for e, (y, f) in enumerate(zip(labels, feats, strict=True))
    ]
    for e, y in enumerate(labs):
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError(f"labels[{e}] must contain only -1 and +1")
    n_heads = check_int("n_heads", n_heads, 1)
    l2 = check_positive("l2", l2)
    return feats, labs, n_heads, l2


def convex_risks(w, features, labels, l2: float):
    """Risks ``R[k, e] = mean log(1 + exp(-y (z·v_k + c_k))) + (l2/2)|v_k|²`` (numpy float64).

    ``w`` is ``[m_heads, k + 1]`` (weights then bias). Returns ``[m_heads, m_envs]``.

    See: book/medro/01-conflicting-environments.ipynb
    """
    w = np.atleast_2d(np.asarray(w, dtype=np.float64))
    out = np.empty((w.shape[0], len(features)))
    for e, (z, y) in enumerate(zip(features, labels, strict=True)):
        margins = y[None, :] * (w[:, :-1] @ z.T + w[:, -1:])  # [m, n_e]
        out[:, e] = np.logaddexp(0.0, -margins).mean(1)  # eq. (1) with logistic ℓ
    return out + 0.5 * l2 * np.sum(w[:, :-1] ** 2, axis=1, keepdims=True)


def solve_convex_minmax(features, labels, n_heads: int, l2: float = 1e-2):
    """The convex case of eq. (2): frozen features, linear logistic heads, exact min–max value.

    With frozen features ``R[k, e]`` depends on head ``k`` only, so
    ``min_V max_{k,e} R[k, e] = max_k min_{v_k} max_e R[k, e]``: every head solves the same
    GroupDRO problem and the MEDRO value **equals** the GroupDRO value. We solve that problem
    once, ``min_{v, t} t`` subject to ``R[e](v) <= t`` (epigraph form), with scipy's SLSQP and
    analytic gradients in float64, and copy the head ``n_heads`` times. The cvxpy twin
    :func:`convex_minmax_problem` solves the coupled problem over all heads.

    Parameters
    ----------
    features : list of array [n_e, k]
    labels : list of array [n_e] in {-1, +1}
    n_heads : int
    l2 : float
        ``ℓ2`` weight inside each risk (> 0), which makes the problem bounded.

    Returns
    -------
    (float, ndarray[n_heads, k + 1])
        The min–max value and the heads.

    See: book/medro/01-conflicting-environments.ipynb
    """
    from scipy.optimize import minimize

    feats, labs, n_heads, l2 = _check_convex(features, labels, n_heads, l2)
    k = feats[0].shape[1]
    m = len(feats)
    shape = (1, k + 1)  # one head: the heads decouple (see above)

    def cons(u):
        w = u[:-1].reshape(shape)
        return u[-1] - convex_risks(w, feats, labs, l2).ravel()

    def cons_jac(u):
        w = u[:-1].reshape(shape)
        jac = np.zeros((m, u.size))
        for e, (z, y) in enumerate(zip(feats, labs, strict=True)):
            za = np.column_stack([z, np.ones(len(y))])
            margins = y[None, :] * (w @ za.T)
            s = -y[None, :] * (1.0 / (1.0 + np.exp(margins)))  # d ℓ / d (w·z)
            g = s @ za / len(y)  # [n_heads, k+1]
            g[:, :-1] += l2 * w[:, :-1]
            jac[e, : k + 1] = -g[0]
        jac[:, -1] = 1.0
        return jac

    u0 = np.zeros(k + 2)
    u0[-1] = math.log(2.0) + 1.0
    obj_grad = np.zeros_like(u0)
    obj_grad[-1] = 1.0
    res = minimize(
        lambda u: u[-1],
        u0,
        jac=lambda u: obj_grad,
        constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
        method="SLSQP",
        options={"maxiter": 1000, "ftol": 1e-13},
    )
    w = np.repeat(res.x[:-1].reshape(shape), n_heads, axis=0)
    return float(convex_risks(w, feats, labs, l2).max()), w


def convex_minmax_problem(features, labels, n_heads: int, l2: float = 1e-2):
    """The same min–max as a cvxpy problem (epigraph form with ``cp.logistic``).

    Returns ``(problem, v, c, t)``; ``problem.solve(solver="CLARABEL")`` gives the value.

    See: book/medro/01-conflicting-environments.ipynb
    """
    import cvxpy as cp

    feats, labs, n_heads, l2 = _check_convex(features, labels, n_heads, l2)
    k = feats[0].shape[1]
    v = cp.Variable((n_heads, k))
    c = cp.Variable(n_heads)
    t = cp.Variable()
    cons = []
    for h in range(n_heads):
        for z, y in zip(feats, labs, strict=True):
            risk = cp.sum(cp.logistic(-cp.multiply(y, z @ v[h] + c[h]))) / len(y)
            cons.append(risk + 0.5 * l2 * cp.sum_squares(v[h]) <= t)
    return cp.Problem(cp.Minimize(t), cons), v, c, t
