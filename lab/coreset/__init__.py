r"""
# Stable coresets: gradient matching averaged over posterior weight samples

Wei-Kai Chang, Rajiv Khanna. *Stable Coresets via Posterior Sampling: Aligning Induced and
Full Loss Landscapes.* NeurIPS 2025. [arXiv:2511.17399](https://arxiv.org/abs/2511.17399)

**Read this first: what is reconstructed.** Only the abstract, a summary of the paper
(definitions, theorem statements, tables) and the official code's trainer were read. The
selection objective below, facility location on *posterior-averaged* gradient distances, is
**reconstructed** from the stability definition; it agrees with the code, which concatenates
the last-layer gradient proxies of K noisy copies of the model before running facility
location. Everything numerical in the chapter is measured by this module, not read from the
paper.

## Coresets by facility location (CRAIG)

A pool $V$ of $n$ examples with per-example gradients $g_i(w)$. Assign every $i$ to a medoid
$\varphi(i) \in S$ and give each medoid the weight $\gamma_j = |\varphi^{-1}(j)|$. Then

$$\Big\lVert \tfrac1n \sum_{j \in S} \gamma_j g_j - \tfrac1n \sum_{i \in V} g_i \Big\rVert
  \le \tfrac1n \sum_{i \in V} \lVert g_{\varphi(i)} - g_i \rVert, \tag{1}$$

so a good coreset minimises the right-hand side: a $k$-medoids problem, written as the
monotone submodular **facility-location** maximisation

$$F(S) = \sum_{i \in V} \max_{j \in S} s_{ij}, \qquad s_{ij} = d_{\max} - d_{ij},
  \qquad d_{ij} = \lVert G_i - G_j \rVert, \tag{2}$$

solved greedily, which is within $1 - 1/e$ of the optimum:

$$j_t = \arg\max_{j \notin S_{t-1}} F(S_{t-1} \cup \{j\}) - F(S_{t-1}), \qquad
  \gamma_j = \big|\{i : \arg\max_{j' \in S} s_{ij'} = j\}\big|. \tag{3}$$

For networks, $G_i$ is CRAIG's last-layer proxy $g_i = \mathrm{softmax}(z_i) - e_{y_i}$ (4).

## Posterior sampling (the paper)

A subset is $(\sigma, \varepsilon, \bar w)$-stable if
$\mathbb{E}_{w \sim N(\bar w, \sigma^2 I)} \lVert \nabla\ell_S(w) - \nabla\ell(w)\rVert^2 \le
\varepsilon$ (5). By Jensen, as in (1), it suffices to make
$d_\sigma(i, j)^2 = \mathbb{E}_w \lVert g_i(w) - g_j(w) \rVert^2$ small; with $K$ draws
$w_1, \dots, w_K$,

$$d_\sigma(i, j)^2 \approx \tfrac1K \sum_{k=1}^K \lVert g_i(w_k) - g_j(w_k) \rVert^2
  = \tfrac1K \lVert G_i - G_j \rVert^2, \quad G_i = [g_i(w_1), \dots, g_i(w_K)], \tag{6}$$

so posterior selection is facility location (2) on the **concatenated** features $G_i$. With
$K = 1$, $\sigma = 0$ it is CRAIG. In networks the noise goes on the normalisation layers'
affine parameters only (the paper's default), the passes run in eval mode, and the
parameters are restored afterwards. Training uses the unperturbed model and the weighted
loss $\tfrac1B \sum_j \hat\gamma_j \ell_j$ with $\hat\gamma$ normalised to mean 1 (7).

Theorem 3.2 of the paper: stability forces the Hessians to align too,
$\lVert H_S - H \rVert = O(\varepsilon^{1/2})$. ``alignment_errors`` measures the gradient,
Hessian and Newton-step gaps exactly on multinomial logistic regression, where the
per-example gradient is $(p_i - e_{y_i}) \otimes \tilde x_i$ and the per-example Hessian is
$(\mathrm{diag}\,p_i - p_i p_i^\top) \otimes \tilde x_i \tilde x_i^\top$ (8).

The reference kernel ``greedy_facility_location`` is numpy float64 and reads like (2)-(3);
the fast path ``facility_location_torch`` runs the same greedy on a batch of pools at once
(CPU or CUDA), breaking ties the same way (lowest index first).

See: book/coreset/01-facility-location.ipynb
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from ..core.progress import progress

__all__ = [
    "pairwise_distances",
    "facility_location_objective",
    "greedy_facility_location",
    "facility_location_torch",
    "brute_force_facility_location",
    "corrupt_labels",
    "gradient_proxy",
    "posterior_features",
    "coreset_loss",
    "noisy_share",
    "random_coreset",
    "softmax_regression_fit",
    "logreg_example_gradients",
    "logreg_posterior_features",
    "logreg_hessian",
    "alignment_errors",
    "alignment_study",
    "select_minibatch_coresets",
    "make_mlp",
    "digits_split",
    "History",
    "CoresetTrainer",
    "noise_sweep",
    "digits_run",
    "AlignmentStudy",
]

NB1 = "book/coreset/01-facility-location.ipynb"
NB2 = "book/coreset/02-label-noise.ipynb"
METHODS = ("random", "craig", "posterior")
WHERE = ("norm", "all", "last", "norm_out")


# ---------------------------------------------------------------------------------------------
# Facility location: reference kernel (numpy) and fast path (torch)
# ---------------------------------------------------------------------------------------------
def pairwise_distances(G: Any) -> np.ndarray:
    """Euclidean distances ``d_ij = ||G_i - G_j||`` between the rows of ``G`` (float64).

    Parameters
    ----------
    G : array-like, shape (n, m)
        One feature vector (gradient or gradient proxy) per row.

    Returns
    -------
    ndarray, shape (n, n)
        Symmetric, zero diagonal, non-negative.

    See: book/coreset/01-facility-location.ipynb
    """
    G = check_array("G", G, ndim=2, min_size=1)
    sq = np.einsum("ij,ij->i", G, G)
    # ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b, clipped at 0 against round-off
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (G @ G.T), 0.0)
    np.fill_diagonal(d2, 0.0)
    return np.sqrt(d2)


def _check_distances(D: Any) -> np.ndarray:
    D = check_array("D", D, ndim=2, min_size=1)
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"D must be a square (n, n) distance matrix (got shape {D.shape})")
    if np.any(D < 0):
        raise ValueError("D must be non-negative (got a negative distance)")
    return D


def facility_location_objective(D: Any, idx: Any) -> float:
    """The facility-location value ``F(S) = sum_i max_{j in S} (d_max - d_ij)``, eq. (2).

    Parameters
    ----------
    D : array-like, shape (n, n)
        Distances (row ``i`` = the point to cover, column ``j`` = the candidate medoid).
    idx : array-like of int
        The selected columns ``S`` (empty gives 0).

    See: book/coreset/01-facility-location.ipynb
    """
    D = _check_distances(D)
    idx = np.asarray(idx, dtype=int).ravel()
    if idx.size == 0:
        return 0.0
    if idx.min() < 0 or idx.max() >= D.shape[0]:
        raise ValueError(f"idx must lie in [0, {D.shape[0] - 1}] (got {idx.min()}..{idx.max()})")
    S = D.max() - D  # eq. (2): s_ij = d_max - d_ij
    return float(S[:, idx].max(axis=1).sum())


def greedy_facility_location(
    D: Any, budget: int, *, lazy: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy facility location (CRAIG's coreset), the numpy reference kernel.

    Parameters
    ----------
    D : array-like, shape (n, n)
        Pairwise distances between the pool's feature vectors (``pairwise_distances``).
    budget : int
        Coreset size ``B >= 1``. ``B >= n`` returns the whole pool with weights 1.
    lazy : bool
        Use the lazy-greedy priority queue (Minoux). It reaches the same objective value on
        generic inputs but may break exact ties differently; the plain greedy (default)
        always takes the lowest index among equal gains.

    Returns
    -------
    idx : ndarray of int, shape (B,)
        The medoids in the order greedy picked them.
    weights : ndarray of int, shape (B,)
        ``gamma_j``: how many pool points have medoid ``j`` as their nearest selected point
        (ties go to the earliest pick). Positive, sums to ``n``.

    See: book/coreset/01-facility-location.ipynb
    """
    D = _check_distances(D)
    budget = check_int("budget", budget, 1)
    lazy = check_bool("lazy", lazy)
    n = D.shape[0]
    if budget >= n:
        return np.arange(n), np.ones(n, dtype=int)
    S = D.max() - D  # eq. (2): similarity s_ij = d_max - d_ij >= 0
    cover = np.zeros(n)  # max_{j in S} s_ij, 0 for the empty set
    chosen: list[int] = []
    if not lazy:
        taken = np.zeros(n, dtype=bool)
        for _ in range(budget):
            # eq. (3): marginal gain of every candidate j, sum_i max(s_ij - cover_i, 0)
            gain = np.maximum(S - cover[:, None], 0.0).sum(axis=0)
            gain[taken] = -np.inf
            j = int(np.argmax(gain))  # lowest index among ties
            chosen.append(j)
            taken[j] = True
            cover = np.maximum(cover, S[:, j])
    else:
        # lazy greedy: gains only shrink (submodularity), so stale gains are upper bounds
        gain0 = S.sum(axis=0)
        heap = [(-gain0[j], j) for j in range(n)]
        heapq.heapify(heap)
        while len(chosen) < budget:
            _, j = heapq.heappop(heap)
            fresh = float(np.maximum(S[:, j] - cover, 0.0).sum())
            if not heap or fresh >= -heap[0][0]:
                chosen.append(j)
                cover = np.maximum(cover, S[:, j])
            else:
                heapq.heappush(heap, (-fresh, j))
    idx = np.asarray(chosen, dtype=int)
    # eq. (3): gamma_j = number of points whose most similar medoid is j
    nearest = np.argmax(S[:, idx], axis=1)
    weights = np.bincount(nearest, minlength=budget)
    return idx, weights


def brute_force_facility_location(D: Any, budget: int) -> tuple[np.ndarray, float]:
    """The optimal subset of size ``budget`` by enumeration (for pools of <= 16 points).

    Returns
    -------
    idx : ndarray of int
        An optimal subset (sorted).
    value : float
        Its objective ``F(S*)``.

    See: book/coreset/01-facility-location.ipynb
    """
    import itertools

    D = _check_distances(D)
    n = D.shape[0]
    if n > 16:
        raise ValueError(f"D must have at most 16 points for brute force (got {n})")
    budget = check_int("budget", budget, 1, n)
    S = D.max() - D
    best, best_idx = -np.inf, None
    for comb in itertools.combinations(range(n), budget):
        v = S[:, comb].max(axis=1).sum()
        if v > best:
            best, best_idx = v, comb
    return np.asarray(best_idx, dtype=int), float(best)


def facility_location_torch(
    G: Any,
    budget: int,
    *,
    metric: str = "euclidean",
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy facility location, the batched torch fast path.

    Same algorithm and tie-breaking as ``greedy_facility_location`` (lowest index among equal
    gains; each point goes to its earliest-picked nearest medoid), but all gains of a step come
    from one masked reduction on the device, and a leading batch axis selects a coreset in
    many pools at once.

    Parameters
    ----------
    G : array-like or Tensor, shape (n, m) or (P, n, m)
        Feature vectors of one pool (or ``P`` pools of the same size). With
        ``metric="precomputed"``: distance matrices of shape (n, n) or (P, n, n).
    budget : int
        Coreset size ``B >= 1`` (``B >= n`` returns the whole pool with weights 1).
    metric : {"euclidean", "precomputed"}
        How to get distances from ``G``.
    device : str or torch.device, optional
        Where to compute; ``None`` follows a tensor input, else ``lab.device()``.

    Returns
    -------
    idx, weights : ndarray of int, shape (B,) or (P, B)
        As in ``greedy_facility_location``.

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    from ..core.runtime import device as lab_device

    budget = check_int("budget", budget, 1)
    metric = check_choice("metric", metric, ("euclidean", "precomputed"))
    if isinstance(G, torch.Tensor):
        dev = G.device if device is None else torch.device(device)
        X = G.detach().to(dev)
        if not X.is_floating_point():
            X = X.double()
    else:
        dev = lab_device() if device is None else torch.device(device)
        X = torch.as_tensor(check_array("G", G, ndim=(2, 3), min_size=1), device=dev)
    if X.ndim not in (2, 3):
        raise ValueError(f"G must have ndim in (2, 3) (got shape {tuple(X.shape)})")
    if not torch.isfinite(X).all():
        raise ValueError("G must contain only finite values (got NaN or inf)")
    single = X.ndim == 2
    if single:
        X = X.unsqueeze(0)
    if metric == "precomputed":
        if X.shape[-1] != X.shape[-2]:
            raise ValueError(f"G must be square distance matrices (got shape {tuple(X.shape)})")
        if (X < 0).any():
            raise ValueError("G must be non-negative distances (got a negative value)")
        D = X
    else:
        sq = (X * X).sum(-1)
        d2 = (sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2.0 * X @ X.transpose(-1, -2)).clamp_min(0)
        d2.diagonal(dim1=-2, dim2=-1).zero_()
        D = d2.sqrt()
    P, n = D.shape[0], D.shape[1]
    if budget >= n:
        idx = torch.arange(n).expand(P, n).numpy().copy()
        w = np.ones((P, n), dtype=int)
        return (idx[0], w[0]) if single else (idx, w)
    S = D.amax(dim=(-2, -1), keepdim=True) - D  # eq. (2), per pool
    cover = torch.zeros(P, n, dtype=S.dtype, device=S.device)
    taken = torch.zeros(P, n, dtype=torch.bool, device=S.device)
    rows = torch.arange(P, device=S.device)
    chosen = torch.empty(P, budget, dtype=torch.long, device=S.device)
    for t in range(budget):
        gain = (S - cover.unsqueeze(-1)).clamp_min(0).sum(dim=1)  # eq. (3), all j at once
        gain = gain.masked_fill(taken, -math.inf)
        j = gain.argmax(dim=1)  # first maximal index
        chosen[:, t] = j
        taken[rows, j] = True
        cover = torch.maximum(cover, S[rows, :, j])
    Ssel = torch.gather(S, 2, chosen.unsqueeze(1).expand(P, n, budget))
    nearest = Ssel.argmax(dim=2)
    weights = torch.zeros(P, budget, dtype=torch.long, device=S.device)
    weights.scatter_add_(1, nearest, torch.ones_like(nearest))
    idx, w = chosen.cpu().numpy(), weights.cpu().numpy()
    return (idx[0], w[0]) if single else (idx, w)


def random_coreset(n: int, budget: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random subset of size ``budget`` with equal weights ``n / budget``.

    See: book/coreset/01-facility-location.ipynb
    """
    n = check_int("n", n, 1)
    budget = check_int("budget", budget, 1)
    seed = check_int("seed", seed, 0)
    b = min(budget, n)
    idx = np.random.default_rng(seed).choice(n, size=b, replace=False)
    return idx, np.full(b, n / b)


# ---------------------------------------------------------------------------------------------
# Labels, proxies and the posterior features
# ---------------------------------------------------------------------------------------------
def corrupt_labels(
    y: Any, ratio: float, num_classes: int, seed: int = 0, *, mode: str = "symmetric"
) -> tuple[np.ndarray, np.ndarray]:
    """Inject label noise.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Clean labels in ``0 .. num_classes - 1``.
    ratio : float in [0, 1]
        Fraction of examples whose label is redrawn.
    num_classes : int
        Number of classes ``C >= 2``.
    seed : int
        Seed of the numpy generator (deterministic).
    mode : {"symmetric", "exclusive"}
        ``"symmetric"``: each picked example gets a uniform label over all ``C`` classes (it
        may keep its own, so the flipped fraction is ``ratio (C-1)/C`` on average; the
        convention of the paper's experiments). ``"exclusive"``: a uniform *other* class.

    Returns
    -------
    y_noisy : ndarray of int
    flipped : ndarray of bool
        ``y_noisy != y``.

    See: book/coreset/02-label-noise.ipynb
    """
    num_classes = check_int("num_classes", num_classes, 2)
    y = check_array("y", y, ndim=1, dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y)):
            y = y.astype(int)
        else:
            raise TypeError(f"y must hold integer labels (got dtype {y.dtype})")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"y must lie in [0, {num_classes - 1}] (got {y.min()}..{y.max()})")
    ratio = check_range("ratio", ratio, 0.0, 1.0)
    seed = check_int("seed", seed, 0)
    mode = check_choice("mode", mode, ("symmetric", "exclusive"))
    rng = np.random.default_rng(seed)
    pick = rng.random(y.size) < ratio
    y_noisy = y.astype(int).copy()
    if mode == "symmetric":
        y_noisy[pick] = rng.integers(0, num_classes, size=int(pick.sum()))
    else:
        shift = rng.integers(1, num_classes, size=int(pick.sum()))
        y_noisy[pick] = (y_noisy[pick] + shift) % num_classes
    return y_noisy, y_noisy != y


def gradient_proxy(logits: Any, y: Any):
    """CRAIG's last-layer gradient proxy ``softmax(z_i) - onehot(y_i)``, eq. (4).

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    y : Tensor or array of int, shape (n,)

    Returns
    -------
    Tensor, shape (n, C)

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    z = logits if isinstance(logits, torch.Tensor) else torch.as_tensor(np.asarray(logits))
    if z.ndim != 2:
        raise ValueError(f"logits must have shape (n, C) (got {tuple(z.shape)})")
    if not torch.isfinite(z).all():
        raise ValueError("logits must contain only finite values (got NaN or inf)")
    yy = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y, device=z.device)
    if yy.shape != (z.shape[0],):
        raise ValueError(f"y must have shape ({z.shape[0]},) (got {tuple(yy.shape)})")
    yy = yy.long()
    if yy.numel() and (yy.min() < 0 or yy.max() >= z.shape[1]):
        raise ValueError(f"y must lie in [0, {z.shape[1] - 1}]")
    onehot = torch.nn.functional.one_hot(yy, z.shape[1]).to(z.dtype)
    return torch.softmax(z, dim=1) - onehot  # eq. (4)


def _norm_modules(model):
    import torch.nn as nn

    kinds = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)
    return [m for m in model.modules() if isinstance(m, kinds)]


def _perturbed_params(model, where: str) -> list:
    import torch.nn as nn

    if where == "all":
        return [p for p in model.parameters()]
    if where == "last":
        lin = [m for m in model.modules() if isinstance(m, nn.Linear)]
        if not lin:
            raise ValueError('where="last" needs an nn.Linear layer in the model')
        return [p for p in lin[-1].parameters()]
    norms = [m for m in _norm_modules(model) if getattr(m, "weight", None) is not None]
    if not norms:
        raise ValueError(
            f'where="{where}" needs normalization layers with affine parameters '
            '(BatchNorm/LayerNorm/GroupNorm); use where="last" or where="all" for this model'
        )
    return [p for m in norms for p in (m.weight, m.bias) if p is not None]


def posterior_features(
    model: Any,
    X: Any,
    y: Any,
    K: int = 4,
    sigma: float = 0.01,
    *,
    where: str = "norm",
    generator: Any = None,
):
    """Concatenated gradient proxies of ``K`` posterior samples of the model, eq. (6).

    Each sample adds ``N(0, sigma^2)`` noise to the chosen parameters, runs the model in eval
    mode without gradients, and records ``softmax - onehot``. The exact parameters and the
    train/eval mode are restored afterwards (bit for bit).

    Parameters
    ----------
    model : torch.nn.Module
        Maps ``X`` to logits of shape (n, C).
    X : Tensor, shape (n, ...)
    y : Tensor or array of int, shape (n,)
    K : int
        Number of posterior samples (``>= 1``).
    sigma : float
        Noise scale (``>= 0``; ``0`` with any ``K`` repeats CRAIG's features).
    where : {"norm", "all", "last", "norm_out"}
        ``"norm"`` (the paper's default): the affine parameters of the BatchNorm/LayerNorm/
        GroupNorm layers; ``"all"``: every parameter; ``"last"``: the last linear layer;
        ``"norm_out"``: noise added to the outputs of the normalization layers (as the
        official code does for transformers).
    generator : torch.Generator, optional
        Source of the noise (a fixed one gives deterministic features).

    Returns
    -------
    Tensor, shape (n, K * C)

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    where = check_choice("where", where, WHERE)
    if where == "norm_out":
        norms = _norm_modules(model)
        if not norms:
            raise ValueError(
                'where="norm_out" needs normalization layers in the model; use where="last"'
            )
        params = []
    else:
        params = _perturbed_params(model, where)
    was_training = model.training
    saved = [p.detach().clone() for p in params]
    feats = []
    hooks = []

    def _noise_like(t):
        return torch.randn(t.shape, generator=generator, dtype=t.dtype, device="cpu").to(t.device)

    try:
        model.eval()
        if where == "norm_out" and sigma > 0:
            hooks = [
                m.register_forward_hook(lambda _m, _i, out: out + sigma * _noise_like(out))
                for m in norms
            ]
        with torch.no_grad():
            for _ in range(K):
                if sigma > 0:
                    for p, p0 in zip(params, saved, strict=True):
                        p.copy_(p0 + sigma * _noise_like(p0))  # w_k ~ N(w_bar, sigma^2 I)
                feats.append(gradient_proxy(model(X), y))  # g_i(w_k), eq. (4)
    finally:
        for h in hooks:
            h.remove()
        with torch.no_grad():
            for p, p0 in zip(params, saved, strict=True):
                p.copy_(p0)
        model.train(was_training)
    return torch.cat(feats, dim=1)  # eq. (6): G_i = [g_i(w_1), ..., g_i(w_K)]


def coreset_loss(logits: Any, y: Any, gamma: Any):
    """Weighted cross-entropy of a mini-batch coreset, weights normalised to mean 1, eq. (7).

    ``coreset_loss(z, y, ones) == F.cross_entropy(z, y)``; duplicating a row and splitting its
    weight leaves the loss and its gradient unchanged.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch
    import torch.nn.functional as F

    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor (got {type(logits).__name__})")
    g = torch.as_tensor(gamma, dtype=logits.dtype, device=logits.device)
    if g.shape != (logits.shape[0],):
        raise ValueError(f"gamma must have shape ({logits.shape[0]},) (got {tuple(g.shape)})")
    if (g < 0).any() or g.sum() <= 0:
        raise ValueError("gamma must be non-negative with a positive sum")
    yy = torch.as_tensor(y, device=logits.device).long()
    ce = F.cross_entropy(logits, yy, reduction="none")
    return (g * ce).sum() / g.sum()  # = mean_j (gamma_j / mean gamma) * ce_j


def noisy_share(flipped: Any, idx: Any, weights: Any) -> float:
    """Weighted share of mislabeled points in a coreset, ``sum_j gamma_j [flipped_j] / sum gamma``.

    See: book/coreset/01-facility-location.ipynb
    """
    flipped = np.asarray(flipped, dtype=bool)
    idx = np.asarray(idx, dtype=int)
    w = np.asarray(weights, dtype=float)
    if w.shape != idx.shape:
        raise ValueError(f"weights must have the shape of idx {idx.shape} (got {w.shape})")
    return float((w * flipped[idx]).sum() / w.sum())


# ---------------------------------------------------------------------------------------------
# Multinomial logistic regression with exact Hessians (the theorem's playground)
# ---------------------------------------------------------------------------------------------
def _augment(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _check_lr(W, X, y):
    X = check_array("X", X, ndim=2, min_size=1)
    W = check_array("W", W, ndim=2)
    if W.shape[1] != X.shape[1] + 1:
        raise ValueError(f"W must have shape (C, {X.shape[1] + 1}) (got {W.shape})")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) (got {y.shape})")
    if y.min() < 0 or y.max() >= W.shape[0]:
        raise ValueError(f"y must lie in [0, {W.shape[0] - 1}]")
    return W, X, y.astype(int)


def softmax_regression_fit(
    X: Any, y: Any, num_classes: int, *, steps: int = 100, lr: float = 0.5, l2: float = 1e-3
) -> np.ndarray:
    """Full-batch gradient descent on multinomial logistic regression (with a bias column).

    Returns ``W`` of shape ``(C, d + 1)``: the "current weights" ``w_bar`` around which the
    coresets are selected.

    See: book/coreset/02-label-noise.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    num_classes = check_int("num_classes", num_classes, 2)
    steps = check_int("steps", steps, 0)
    lr = check_positive("lr", lr)
    l2 = check_positive("l2", l2, allow_zero=True)
    W = np.zeros((num_classes, X.shape[1] + 1))
    W, X, y = _check_lr(W, X, y)
    Xa = _augment(X)
    Y = np.eye(num_classes)[y]
    for _ in range(steps):
        P = _softmax(Xa @ W.T)
        W = W - lr * ((P - Y).T @ Xa / X.shape[0] + l2 * W)
    return W


def logreg_example_gradients(W: Any, X: Any, y: Any) -> np.ndarray:
    """Per-example cross-entropy gradients ``(p_i - e_{y_i}) x~_i^T``, eq. (8), shape (n, C, d+1).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    Xa = _augment(X)
    R = _softmax(Xa @ W.T)
    R[np.arange(len(y)), y] -= 1.0
    return np.einsum("ic,ia->ica", R, Xa)


def logreg_posterior_features(
    W: Any,
    X: Any,
    y: Any,
    K: int = 8,
    sigma: float = 0.05,
    seed: int = 0,
    *,
    kind: str = "gradient",
) -> np.ndarray:
    """Concatenated per-example features at ``K`` posterior samples of ``W``, eq. (6).

    ``kind="gradient"``: the exact gradients (shape ``(n, K C (d + 1))``);
    ``kind="proxy"``: CRAIG's proxy ``p_i - e_{y_i}`` (shape ``(n, K C)``). ``sigma = 0``
    repeats the CRAIG features ``K`` times (distances scale by ``sqrt(K)``, the selection is
    unchanged).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    kind = check_choice("kind", kind, ("gradient", "proxy"))
    rng = np.random.default_rng(seed)
    Xa = _augment(X)
    blocks = []
    for _ in range(K):
        Wk = W + sigma * rng.standard_normal(W.shape)  # w_k ~ N(w_bar, sigma^2 I)
        if kind == "proxy":
            R = _softmax(Xa @ Wk.T)
            R[np.arange(len(y)), y] -= 1.0  # eq. (4)
            blocks.append(R)
        else:
            blocks.append(logreg_example_gradients(Wk, X, y).reshape(len(y), -1))
    return np.concatenate(blocks, axis=1)


def logreg_hessian(W: Any, X: Any, y: Any, weights: Any = None) -> np.ndarray:
    """Exact Hessian of the weighted mean cross-entropy, eq. (8), shape (C(d+1), C(d+1)).

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, _ = _check_lr(W, X, y)
    n = X.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, float) / np.sum(weights)
    Xa = _augment(X)
    P = _softmax(Xa @ W.T)
    A = np.einsum("ic,cd->icd", P, np.eye(P.shape[1])) - np.einsum("ic,id->icd", P, P)
    C, d1 = W.shape
    # H[(c, a), (e, b)] = sum_i w_i A_i[c, e] x_ia x_ib, as one matmul over i
    M = (w[:, None] * A.reshape(n, C * C))[:, :, None] * Xa[:, None, :]  # (n, C*C, d1)
    H = (M.reshape(n, -1).T @ Xa).reshape(C, C, d1, d1)
    return H.transpose(0, 2, 1, 3).reshape(C * d1, C * d1)


def alignment_errors(
    W: Any,
    X: Any,
    y: Any,
    idx: Any,
    weights: Any,
    *,
    sigma: float = 0.05,
    draws: int = 16,
    l2: float = 1e-2,
    seed: int = 0,
) -> dict[str, float]:
    """How well the weighted subset ``(idx, weights)`` stands in for the pool ``(X, y)``.

    Parameters
    ----------
    W : array, shape (C, d + 1)
        The current weights ``w_bar``.
    X, y : the pool (the ground set ``V``).
    idx, weights : the coreset.
    sigma, draws, seed : the fresh posterior draws ``w ~ N(w_bar, sigma^2 I)`` on which the
        gradient error is averaged.
    l2 : ridge added to both Hessians for the Newton step.

    Returns
    -------
    dict with
        ``grad``: ``E_w ||grad l_S(w) - grad l(w)||^2 / E_w ||grad l(w)||^2``, eq. (5);
        ``hess``: ``||H_S - H||_F / ||H||_F`` at ``w_bar``;
        ``newton``: ``||N_S - N|| / ||N||`` with ``N = (H + l2 I)^{-1} grad l`` at ``w_bar``.

    See: book/coreset/02-label-noise.ipynb
    """
    W, X, y = _check_lr(W, X, y)
    idx = np.asarray(idx, dtype=int)
    gam = np.asarray(weights, dtype=float)
    if gam.shape != idx.shape or np.any(gam < 0) or gam.sum() <= 0:
        raise ValueError("weights must be non-negative, of the shape of idx, with a positive sum")
    sigma = check_positive("sigma", sigma, allow_zero=True)
    draws = check_int("draws", draws, 1)
    l2 = check_positive("l2", l2)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    gam = gam / gam.sum()
    num = den = 0.0
    for _ in range(draws):
        Wk = W + sigma * rng.standard_normal(W.shape)
        Gk = logreg_example_gradients(Wk, X, y).reshape(len(y), -1)
        full = Gk.mean(axis=0)
        sub = gam @ Gk[idx]
        num += np.sum((sub - full) ** 2)  # eq. (5)
        den += np.sum(full**2)
    H = logreg_hessian(W, X, y)
    HS = logreg_hessian(W, X[idx], y[idx], gam)
    g = logreg_example_gradients(W, X, y).reshape(len(y), -1)
    gfull, gsub = g.mean(axis=0), gam @ g[idx]
    eye = l2 * np.eye(H.shape[0])
    N = np.linalg.solve(H + eye, gfull)
    NS = np.linalg.solve(HS + eye, gsub)
    return {
        "grad": float(num / den),
        "hess": float(np.linalg.norm(HS - H) / np.linalg.norm(H)),
        "newton": float(np.linalg.norm(NS - N) / np.linalg.norm(N)),
    }


def _balanced_pool(y: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """A class-balanced random pool (per-class quota, remainder filled at random)."""
    classes, counts = np.unique(y, return_counts=True)
    per = size // len(classes)
    order = np.argsort(y, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    parts = []
    for start, count in zip(starts, counts, strict=True):
        take = min(per, int(count))
        parts.append(order[start + rng.choice(int(count), size=take, replace=False)])
    pool = np.concatenate(parts)
    extra = size - pool.size
    if extra > 0:
        free = np.ones(y.size, dtype=bool)
        free[pool] = False
        rest = np.flatnonzero(free)
        pool = np.concatenate([pool, rng.choice(rest, size=min(extra, rest.size), replace=False)])
    return np.sort(pool)


def _alignment_trial(
    t, X, y, flipped, W, rng, pool_size, budget, K, sigma, eval_draws, seed, out, pool_noise
):
    pool = _balanced_pool(y, pool_size, rng)
    Xp, yp, fp = X[pool], y[pool], flipped[pool]
    pool_noise.append(fp.mean())
    sel = {
        "random": random_coreset(pool_size, budget, seed + 100 + t),
        "craig": greedy_facility_location(
            pairwise_distances(logreg_example_gradients(W, Xp, yp).reshape(pool_size, -1)),
            budget,
        ),
        "posterior": greedy_facility_location(
            pairwise_distances(logreg_posterior_features(W, Xp, yp, K, sigma, seed + 200 + t)),
            budget,
        ),
    }
    for m, (idx, w) in sel.items():
        err = alignment_errors(
            W, Xp, yp, idx, w, sigma=sigma, draws=eval_draws, seed=seed + 300 + t
        )
        for k in ("grad", "hess", "newton"):
            out[k][m].append(err[k])
        out["share"][m].append(noisy_share(fp, idx, w))


@dataclass
class AlignmentStudy:
    """Per-trial alignment errors and noisy shares of each method (``alignment_study``).

    See: book/coreset/02-label-noise.ipynb
    """

    methods: tuple[str, ...]
    grad: dict[str, np.ndarray]
    hess: dict[str, np.ndarray]
    newton: dict[str, np.ndarray]
    share: dict[str, np.ndarray]
    pool_noise: np.ndarray

    def mean(self, what: str) -> dict[str, float]:
        """Mean over trials of ``what`` in {"grad", "hess", "newton", "share"}.

        See: book/coreset/02-label-noise.ipynb
        """
        table = getattr(self, check_choice("what", what, ("grad", "hess", "newton", "share")))
        return {m: float(np.mean(v)) for m, v in table.items()}


def alignment_study(
    X: Any,
    y_clean: Any,
    *,
    noise: float = 0.4,
    pool_size: int = 300,
    budget: int = 30,
    K: int = 8,
    sigma: float = 0.05,
    trials: int = 5,
    fit_steps: int = 30,
    eval_draws: int = 8,
    seed: int = 0,
) -> AlignmentStudy:
    """Random vs CRAIG vs posterior coresets on logistic regression with exact Hessians.

    Labels are corrupted (symmetric noise), ``w_bar`` is ``fit_steps`` of full-batch GD on the
    noisy data, and each trial draws a class-balanced pool, selects three coresets of size
    ``budget`` and scores them with ``alignment_errors`` (fresh posterior draws).

    See: book/coreset/02-label-noise.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    y_clean = np.asarray(y_clean, dtype=int)
    C = int(y_clean.max()) + 1
    noise = check_range("noise", noise, 0.0, 1.0)
    pool_size = check_int("pool_size", pool_size, 2, X.shape[0])
    budget = check_int("budget", budget, 1, pool_size)
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    y, flipped = corrupt_labels(y_clean, noise, C, seed)
    W = softmax_regression_fit(X, y, C, steps=check_int("fit_steps", fit_steps, 0))
    out = {k: {m: [] for m in METHODS} for k in ("grad", "hess", "newton", "share")}
    pool_noise = []
    rng = np.random.default_rng(seed + 1)
    with threadpool_limits(1):  # small dense algebra: one BLAS thread is faster on 2 cores
        for t in progress(range(trials), desc="trials"):
            _alignment_trial(
                t,
                X,
                y,
                flipped,
                W,
                rng,
                pool_size,
                budget,
                K,
                sigma,
                eval_draws,
                seed,
                out,
                pool_noise,
            )
    arr = {k: {m: np.asarray(v) for m, v in d.items()} for k, d in out.items()}
    return AlignmentStudy(
        METHODS, arr["grad"], arr["hess"], arr["newton"], arr["share"], np.asarray(pool_noise)
    )


# ---------------------------------------------------------------------------------------------
# Mini-batch coresets for a network (CREST-style) and training
# ---------------------------------------------------------------------------------------------
def make_mlp(d_in: int = 64, hidden: int = 128, num_classes: int = 10, seed: int = 0):
    """The chapter's network: ``Linear - BatchNorm - ReLU - Linear``.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch
    import torch.nn as nn

    d_in = check_int("d_in", d_in, 1)
    hidden = check_int("hidden", hidden, 1)
    num_classes = check_int("num_classes", num_classes, 2)
    torch.manual_seed(check_int("seed", seed, 0))
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, num_classes)
    )


def digits_split(test_size: int = 597, seed: int = 0):
    """sklearn's bundled digits, scaled to [0, 1], split into train and (clean) test.

    Returns ``X_train, y_train, X_test, y_test`` as numpy arrays.

    See: book/coreset/02-label-noise.ipynb
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    test_size = check_int("test_size", test_size, 1, len(y) - 1)
    perm = np.random.default_rng(check_int("seed", seed, 0)).permutation(len(y))
    X = X / 16.0
    te, tr = perm[:test_size], perm[test_size:]
    return X[tr], y[tr].astype(int), X[te], y[te].astype(int)


def select_minibatch_coresets(
    model: Any,
    X: Any,
    y: Any,
    *,
    pool_size: int = 128,
    budget: int = 32,
    steps: int = 4,
    method: str = "posterior",
    K: int = 4,
    sigma: float = 0.05,
    where: str = "norm",
    seed: int = 0,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One coreset per upcoming training step, each from its own class-balanced random pool.

    Parameters
    ----------
    model : torch.nn.Module
        The current (unperturbed) network; it is left exactly as it was.
    X, y : Tensor, array
        The training set (noisy labels).
    pool_size, budget, steps : int
        Pool size, coreset size ``B`` and how many coresets to select.
    method : {"posterior", "craig", "random"}
        Features for facility location: ``K`` posterior samples, the plain proxy, or none.
    K, sigma, where : as in ``posterior_features``.
    seed : int

    Returns
    -------
    list of (idx, weights)
        Indices into the training set and integer weights (``random``: all ones).

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch

    pool_size = check_int("pool_size", pool_size, 1)
    budget = check_int("budget", budget, 1)
    steps = check_int("steps", steps, 1)
    method = check_choice("method", method, METHODS)
    seed = check_int("seed", seed, 0)
    y_np = np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y, dtype=int)
    rng = np.random.default_rng(seed)
    pools = np.stack([_balanced_pool(y_np, min(pool_size, y_np.size), rng) for _ in range(steps)])
    if method == "random":
        b = min(budget, pools.shape[1])
        return [(p[rng.choice(p.size, b, replace=False)], np.ones(b, dtype=int)) for p in pools]
    Xt = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(y_np, device=Xt.device)
    flat = torch.as_tensor(pools.ravel(), device=Xt.device)
    if method == "craig":
        F = posterior_features(model, Xt[flat], yt[flat], K=1, sigma=0.0, where="all")
    else:
        gen = torch.Generator().manual_seed(seed)
        F = posterior_features(
            model, Xt[flat], yt[flat], K=K, sigma=sigma, where=where, generator=gen
        )
    F = F.double().reshape(steps, pools.shape[1], -1)
    idx, w = facility_location_torch(F, budget)
    return [(pools[s][idx[s]], w[s]) for s in range(steps)]


@dataclass
class History:
    """What ``CoresetTrainer.fit`` records: clean test accuracy and the coresets' noisy share.

    See: book/coreset/03-training-under-noise.ipynb
    """

    method: str
    steps: list[int] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    noisy_share: list[float] = field(default_factory=list)
    select_seconds: float = 0.0

    @property
    def final_acc(self) -> float:
        return self.test_acc[-1] if self.test_acc else float("nan")


class CoresetTrainer:
    """Train a network on mini-batch coresets (CREST-style loop, posterior selection).

    Every ``select_every`` steps the trainer selects the next ``select_every`` mini-batch
    coresets at once (``select_minibatch_coresets``; pools drawn class-balanced from the
    training set), then takes one SGD step per coreset with the weighted loss (7). The noise
    of the posterior samples is used for selection only; training steps see the unperturbed
    model. ``method="full"`` is full-data (full-batch) training with the same step budget.

    Parameters
    ----------
    method : {"posterior", "craig", "random", "full"}
    budget : int
        Mini-batch coreset size ``B``.
    pool_size : int
        Candidate pool per step.
    K, sigma, where : posterior samples (see ``posterior_features``).
    lr, momentum, weight_decay : SGD (CREST's defaults for momentum and weight decay).
    select_every : int
        Steps between selection rounds.
    seed : int

    See: book/coreset/03-training-under-noise.ipynb
    """

    def __init__(
        self,
        method: str = "posterior",
        *,
        budget: int = 32,
        pool_size: int = 128,
        K: int = 4,
        sigma: float = 0.05,
        where: str = "norm",
        lr: float = 0.05,
        momentum: float = 0.9,
        weight_decay: float = 5e-4,
        select_every: int = 10,
        seed: int = 0,
    ):
        self.method = check_choice("method", method, (*METHODS, "full"))
        self.budget = check_int("budget", budget, 1)
        self.pool_size = check_int("pool_size", pool_size, self.budget)
        self.K = check_int("K", K, 1)
        self.sigma = check_positive("sigma", sigma, allow_zero=True)
        self.where = check_choice("where", where, WHERE)
        self.lr = check_positive("lr", lr)
        self.momentum = check_range("momentum", momentum, 0.0, 1.0, high_inclusive=False)
        self.weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
        self.select_every = check_int("select_every", select_every, 1)
        self.seed = check_int("seed", seed, 0)

    def fit(
        self,
        model: Any,
        X: Any,
        y: Any,
        X_test: Any,
        y_test: Any,
        *,
        steps: int = 300,
        flipped: Any = None,
        eval_every: int = 50,
    ) -> History:
        """Run ``steps`` SGD steps; record clean test accuracy every ``eval_every`` steps.

        ``flipped`` (bool mask over the training set) lets the history record the weighted
        share of mislabeled examples the coresets picked.
        """
        import time

        import torch

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
        steps = check_int("steps", steps, 1)
        eval_every = check_int("eval_every", eval_every, 1)
        dev = next(model.parameters()).device
        Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32, device=dev)
        yt = torch.as_tensor(np.asarray(y), dtype=torch.long, device=dev)
        Xv = torch.as_tensor(np.asarray(X_test), dtype=torch.float32, device=dev)
        yv = torch.as_tensor(np.asarray(y_test), dtype=torch.long, device=dev)
        fl = None if flipped is None else np.asarray(flipped, dtype=bool)
        torch.manual_seed(self.seed)
        opt = torch.optim.SGD(
            model.parameters(),
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
        )
        hist = History(self.method)
        queue: list[tuple[np.ndarray, np.ndarray]] = []
        shares = []
        for s in progress(range(1, steps + 1), desc=self.method):
            model.train()
            if self.method == "full":
                logits, target = model(Xt), yt
                loss = torch.nn.functional.cross_entropy(logits, target)
            else:
                if not queue:
                    t0 = time.perf_counter()
                    queue = select_minibatch_coresets(
                        model,
                        Xt,
                        yt.cpu().numpy(),
                        pool_size=self.pool_size,
                        budget=self.budget,
                        steps=self.select_every,
                        method=self.method,
                        K=self.K,
                        sigma=self.sigma,
                        where=self.where,
                        seed=self.seed * 100003 + s,
                    )
                    hist.select_seconds += time.perf_counter() - t0
                idx, w = queue.pop(0)
                if fl is not None:
                    shares.append(noisy_share(fl, idx, w))
                it = torch.as_tensor(idx, device=dev)
                loss = coreset_loss(model(Xt[it]), yt[it], torch.as_tensor(w, device=dev))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if s % eval_every == 0 or s == steps:
                model.eval()
                with torch.no_grad():
                    acc = (model(Xv).argmax(1) == yv).float().mean().item()
                hist.steps.append(s)
                hist.test_acc.append(acc)
                hist.noisy_share.append(float(np.mean(shares)) if shares else float("nan"))
                shares = []
        return hist


@functools.lru_cache(maxsize=512)
def _cached_run(method, noise, seed, steps, K, sigma, eval_every, budget, select_every):
    Xtr, ytr, Xte, yte = digits_split(seed=seed)
    yn, fl = corrupt_labels(ytr, noise, 10, seed)
    trainer = CoresetTrainer(
        method, seed=seed, K=K, sigma=sigma, budget=budget, select_every=select_every
    )
    return trainer.fit(
        make_mlp(seed=seed), Xtr, yn, Xte, yte, steps=steps, flipped=fl, eval_every=eval_every
    )


def digits_run(
    method: str,
    noise: float,
    seed: int = 0,
    *,
    steps: int = 200,
    K: int = 4,
    sigma: float = 0.05,
    budget: int = 32,
    select_every: int = 10,
    eval_every: int = 20,
) -> History:
    """One training run on digits with symmetric label noise (memoised: same inputs, same run).

    The digits split and the noise depend on ``seed``; the test labels stay clean.

    See: book/coreset/03-training-under-noise.ipynb
    """
    method = check_choice("method", method, (*METHODS, "full"))
    noise = check_range("noise", noise, 0.0, 1.0)
    return _cached_run(
        method,
        round(noise, 6),
        check_int("seed", seed, 0),
        check_int("steps", steps, 1),
        check_int("K", K, 1),
        round(check_positive("sigma", sigma, allow_zero=True), 9),
        check_int("eval_every", eval_every, 1),
        check_int("budget", budget, 1),
        check_int("select_every", select_every, 1),
    )


def noise_sweep(
    noises: Any = (0.0, 0.25, 0.5),
    methods: Any = ("random", "craig", "posterior", "full"),
    seeds: Any = (0, 1, 2),
    *,
    steps: int = 200,
    K: int = 4,
    sigma: float = 0.05,
) -> dict[str, np.ndarray]:
    """Final clean test accuracy on digits for every (method, noise, seed).

    Returns ``{method: array (len(noises), len(seeds))}`` and ``{"share/" + method: ...}``,
    the weighted share of mislabeled examples in the coresets over the last evaluation window
    (NaN for ``"full"``).

    See: book/coreset/03-training-under-noise.ipynb
    """
    noises = [check_range("noise", v, 0.0, 1.0) for v in noises]
    methods = [check_choice("method", m, (*METHODS, "full")) for m in methods]
    seeds = [check_int("seed", s, 0) for s in seeds]
    out: dict[str, np.ndarray] = {}
    for m in methods:
        out[m] = np.zeros((len(noises), len(seeds)))
        out[f"share/{m}"] = np.full((len(noises), len(seeds)), np.nan)
    jobs = [(m, b, c) for m in methods for b in range(len(noises)) for c in range(len(seeds))]
    for m, b, c in progress(jobs, desc="runs"):
        h = digits_run(m, noises[b], seeds[c], steps=steps, K=K, sigma=sigma)
        out[m][b, c] = h.final_acc
        out[f"share/{m}"][b, c] = np.nanmean(h.noisy_share) if m != "full" else np.nan
    return out
