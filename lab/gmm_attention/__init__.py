r"""
# Attention-based clustering: attention heads find the centroids of a Gaussian mixture

Maulen-Soto, Boyer, Marion. *Attention-based clustering.* NeurIPS 2025.
[arXiv:2505.13112](https://arxiv.org/abs/2505.13112)

**Read this first: what is reconstructed.** Only the abstract of the paper could be read when
this module was written. Two of its statements are implemented here:

1. a two-head attention layer trained *without labels* on data from a Gaussian mixture puts its
   head parameters on the mixture's centroids (population-risk minimisers align with them);
2. an attention layer whose key, query and value matrices are the identity performs
   *in-context quantisation*: each token moves towards the mean of its own cluster in the
   sequence, even when the centroids change from one sequence to the next.

The **trainable two-head layer below is a reconstruction**: the smallest attention form that
matches every statement of the abstract (two heads with one parameter vector each, an
unsupervised population risk, minimisers on the centroids). It lives behind
:func:`head_attention` / :func:`train_heads`; if the paper's layer differs, only those change.
The identity-attention layer is fully determined by the abstract.

## The data

A mixture of :math:`K` Gaussians, :math:`z \sim \mathrm{Cat}(p)`,
:math:`x = \mu_z + \sigma \varepsilon`, :math:`\varepsilon \sim N(0, I_d)`.

## The two-head layer (reconstructed)

Heads :math:`\Theta = (\theta_1, \dots, \theta_H)`, :math:`\theta_h \in \mathbb{R}^d`, inverse
temperature :math:`\lambda > 0`. The input token :math:`x` is the query; head :math:`h` has key
and value :math:`\theta_h`; the softmax runs across the heads:

.. math::
    s_h(x) = \lambda \langle x, \theta_h\rangle \;\text{(dot)} \quad\text{or}\quad
    s_h(x) = -\tfrac{\lambda}{2}\lVert x - \theta_h\rVert^2 \;\text{(distance)}      \qquad (1)

    w_h(x) = \frac{e^{s_h(x)}}{\sum_g e^{s_g(x)}}, \qquad
    A_\Theta(x) = \sum_h w_h(x)\, \theta_h                                          \qquad (2)

Population risk (no labels): :math:`R(\Theta) = \mathbb{E}\,\lVert x - A_\Theta(x)\rVert^2`
(3), minimised by SGD on fresh samples. With :math:`r = x - A_\Theta(x)`:

.. math::
    \nabla_{\theta_h} \lVert r\rVert^2 = -2 w_h r
        - 2\lambda w_h \big(\langle r, \theta_h\rangle - \langle r, A_\Theta(x)\rangle\big)\,
        \partial_\theta s \qquad (4)

with :math:`\partial_\theta s = x` (dot) or :math:`x - \theta_h` (distance).

Symmetric case :math:`\mu_{1,2} = \pm\mu`, :math:`\theta_{1,2} = \pm t u`, angle :math:`\phi`
between :math:`u` and :math:`\mu`, dot score: :math:`A = \tanh(\lambda t s)\, t u` with
:math:`s = \langle x, u\rangle`, and

.. math::
    R(t, \phi) = \lVert\mu\rVert^2 + d\sigma^2 +
        \mathbb{E}_{s \sim N(\lVert\mu\rVert\cos\phi, \sigma^2)}
        \big[-2 t s \tanh(\lambda t s) + t^2 \tanh^2(\lambda t s)\big]            \qquad (5)

(the even integrand makes the two mixture components give the same expectation), computed by
Gauss-Hermite quadrature. As :math:`\lambda \to \infty` the stationarity condition of (3)
becomes Lloyd's fixed point :math:`\theta_h = \mathbb{E}[x \mid x \text{ assigned to } h]`.

## The identity-attention layer (from the abstract)

For one sequence :math:`X = (x_1, \dots, x_L)` and inverse temperature :math:`\beta \ge 0`:

.. math::
    T(X)_i = \sum_j \operatorname{softmax}_j\big(\beta \langle x_i, x_j\rangle\big)\, x_j  \qquad (6)

applied ``n_layers`` times (one mean-shift-like step each). Quality: the mean squared distance
of :math:`T(X)_i` to the empirical mean of token :math:`i`'s own cluster in that sequence (7).

Reference kernels are numpy float64; the fast paths (:func:`train_heads_batched`,
:func:`identity_attention_sdpa`) are batched torch on CPU or CUDA, tested against them.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
)
from ..core.progress import progress

__all__ = [
    "SCORES",
    "TrainHistory",
    "sample_gmm",
    "symmetric_means",
    "head_attention",
    "risk",
    "risk_grad",
    "population_risk_symmetric",
    "monte_carlo_risk",
    "train_heads",
    "train_heads_batched",
    "alignment",
    "centroid_error",
    "lloyd_fixed_point_residual",
    "identity_attention",
    "identity_attention_sdpa",
    "sample_in_context",
    "in_context_error",
    "in_context_kmeans_error",
    "kmeans_batched",
    "fit_baselines",
]

NB1 = "book/gmm_attention/01-heads-find-centroids.ipynb"
NB2 = "book/gmm_attention/02-temperature-and-baselines.ipynb"

#: The two score functions of eq. (1).
SCORES = ("dot", "distance")


# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------


def _check_means(means: Any) -> np.ndarray:
    means = check_array("means", means, ndim=2)
    if means.shape[0] < 2:
        raise ValueError(f"means must have at least 2 rows (centroids) (got shape {means.shape})")
    if means.shape[1] < 1:
        raise ValueError(f"means must have at least 1 column (got shape {means.shape})")
    return means


def _check_theta(Theta: Any, d: int | None = None) -> np.ndarray:
    Theta = check_array("Theta", Theta, ndim=2)
    if Theta.shape[0] < 2:
        raise ValueError(f"Theta must have at least 2 rows (heads) (got shape {Theta.shape})")
    if d is not None and Theta.shape[1] != d:
        raise ValueError(
            f"Theta has dimension {Theta.shape[1]} but the data have dimension {d} "
            f"(Theta shape {Theta.shape})"
        )
    return Theta


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    return check_int("seed", seed, 0, 2**63 - 1)


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(_check_seed(seed))


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def symmetric_means(d: int = 10, norm: float = 3.0, seed: int | None = 0) -> np.ndarray:
    """The symmetric two-component centroids ``(mu, -mu)`` with ``||mu|| = norm``.

    ``seed=None`` puts ``mu`` along the first axis; otherwise its direction is uniform.

    Returns
    -------
    numpy.ndarray, shape (2, d)

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    d = check_int("d", d, 1)
    norm = check_positive("norm", norm)
    if seed is None:
        u = np.zeros(d)
        u[0] = 1.0
    else:
        u = np.random.default_rng(_check_seed(seed)).normal(size=d)
        u /= np.linalg.norm(u)
    return np.stack([norm * u, -norm * u])


def sample_gmm(
    n: int,
    means: Any,
    sigma: float,
    seed: int | np.random.Generator | None = None,
    *,
    weights: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` points of the Gaussian mixture ``x = mu_z + sigma * eps``.

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    means : array-like, shape (K, d)
        Centroids, ``K >= 2``.
    sigma : float
        Noise standard deviation (> 0), isotropic.
    seed : int or numpy.random.Generator, optional
        Seed (or a generator, which is advanced).
    weights : array-like, shape (K,), optional
        Mixture weights (non-negative, summing to 1); uniform by default.

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
    z : numpy.ndarray of int, shape (n,)
        Component labels (for evaluation only; training never sees them).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    n = check_int("n", n, 1)
    means = _check_means(means)
    sigma = check_positive("sigma", sigma)
    K, d = means.shape
    if weights is None:
        p = np.full(K, 1.0 / K)
    else:
        p = check_array("weights", weights, shape=(K,))
        if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(
                f"weights must be non-negative and sum to 1 (got {np.round(p, 6).tolist()}, "
                f"sum {p.sum():.6g})"
            )
    rng = _rng(seed)
    z = rng.choice(K, size=n, p=p)  # z ~ Cat(p)
    X = means[z] + sigma * rng.standard_normal((n, d))  # x = mu_z + sigma eps
    return X, z


# ---------------------------------------------------------------------------------------------
# the two-head layer (reconstructed) and its risk
# ---------------------------------------------------------------------------------------------


def _scores(X: np.ndarray, Theta: np.ndarray, lam: float, score: str) -> np.ndarray:
    if score == "dot":
        return lam * X @ Theta.T  # eq. (1), dot: s_h = lam <x, theta_h>
    # eq. (1), distance: s_h = -lam/2 ||x - theta_h||^2 (the ||x||^2 term cancels in softmax)
    return lam * (X @ Theta.T - 0.5 * np.sum(Theta**2, axis=1))


def _softmax(S: np.ndarray) -> np.ndarray:
    S = S - S.max(axis=-1, keepdims=True)  # max-subtraction: finite for any scale
    E = np.exp(S)
    return E / E.sum(axis=-1, keepdims=True)


def head_attention(
    X: Any, Theta: Any, lam: float = 1.0, score: str = "dot"
) -> tuple[np.ndarray, np.ndarray]:
    """The (reconstructed) multi-head layer: ``A(x) = sum_h w_h(x) theta_h``.

    Parameters
    ----------
    X : array-like, shape (n, d)
        Input tokens (the queries).
    Theta : array-like, shape (H, d)
        Head parameters (key = value = ``theta_h``), ``H >= 2``.
    lam : float
        Inverse temperature (> 0).
    score : {"dot", "distance"}
        Eq. (1). ``"distance"`` is the dot score with key bias ``-lam ||theta_h||^2 / 2``.

    Returns
    -------
    A : numpy.ndarray, shape (n, d)
        Layer outputs, eq. (2).
    W : numpy.ndarray, shape (n, H)
        Head weights (rows sum to 1).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = _check_theta(Theta, X.shape[1])
    lam = check_positive("lam", lam)
    score = check_choice("score", score, SCORES)
    W = _softmax(_scores(X, Theta, lam, score))  # eq. (2): w_h = softmax_h(s_h)
    A = W @ Theta  # eq. (2): A = sum_h w_h theta_h
    return A, W


def risk(Theta: Any, X: Any, lam: float = 1.0, score: str = "dot") -> float:
    """Empirical risk ``(1/n) sum_j ||x_j - A_Theta(x_j)||^2`` (eq. 3 on a sample).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    A, _ = head_attention(X, Theta, lam, score)
    X = np.asarray(X, dtype=np.float64)
    return float(np.mean(np.sum((X - A) ** 2, axis=1)))


def risk_grad(Theta: Any, X: Any, lam: float = 1.0, score: str = "dot") -> np.ndarray:
    """Analytic gradient of :func:`risk` with respect to ``Theta`` (eq. 4).

    Returns
    -------
    numpy.ndarray, shape (H, d)

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = _check_theta(Theta, X.shape[1])
    A, W = head_attention(X, Theta, lam, score)
    n = X.shape[0]
    Rres = X - A  # r = x - A(x)
    rt = Rres @ Theta.T  # <r, theta_h>, shape (n, H)
    ry = np.sum(Rres * A, axis=1, keepdims=True)  # <r, A(x)>
    C = lam * W * (rt - ry)  # lam w_h (<r, theta_h> - <r, A>)
    # eq. (4), first term: -2 w_h r (theta_h enters A as a value)
    G = -2.0 * W.T @ Rres
    # eq. (4), second term: -2 lam w_h (<r,theta_h> - <r,A>) ds_h/dtheta_h
    G -= 2.0 * C.T @ X  # dot: ds_h/dtheta_h = x
    if score == "distance":
        G += 2.0 * C.sum(axis=0)[:, None] * Theta  # distance: x - theta_h
    return G / n


def population_risk_symmetric(
    t: Any,
    phi: Any,
    mu_norm: float = 3.0,
    sigma: float = 1.0,
    d: int = 10,
    lam: float = 1.0,
    n_nodes: int = 80,
) -> np.ndarray:
    """Exact population risk (eq. 5) of the heads ``(t u, -t u)`` on the symmetric mixture.

    Parameters
    ----------
    t : float or array-like
        Head norm(s) (>= 0). Broadcast against ``phi``.
    phi : float or array-like
        Angle(s) between ``u`` and ``mu`` in radians.
    mu_norm, sigma : float
        ``||mu||`` (>= 0) and the noise level (> 0).
    d : int
        Dimension (enters only through the noise floor ``d sigma^2``).
    lam : float
        Inverse temperature (> 0).
    n_nodes : int
        Gauss-Hermite nodes (>= 2).

    Returns
    -------
    numpy.ndarray
        ``R(t, phi)``, broadcast shape of ``t`` and ``phi``.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    t = check_array("t", t)
    phi = check_array("phi", phi)
    if np.any(t < 0):
        raise ValueError(f"t must be >= 0 (got min {t.min():g})")
    mu_norm = check_positive("mu_norm", mu_norm, allow_zero=True)
    sigma = check_positive("sigma", sigma)
    d = check_int("d", d, 1)
    lam = check_positive("lam", lam)
    n_nodes = check_int("n_nodes", n_nodes, 2, 500)
    nodes, wts = np.polynomial.hermite_e.hermegauss(n_nodes)  # E f(N(0,1)) = sum w f / sqrt(2pi)
    wts = wts / math.sqrt(2.0 * math.pi)
    t, phi = np.broadcast_arrays(t, phi)
    m = mu_norm * np.cos(phi)[..., None]  # s ~ N(||mu|| cos phi, sigma^2) (either component)
    s = m + sigma * nodes
    tt = t[..., None]
    th = np.tanh(lam * tt * s)
    integrand = -2.0 * tt * s * th + tt**2 * th**2  # eq. (5)
    return mu_norm**2 + d * sigma**2 + np.sum(wts * integrand, axis=-1)


def monte_carlo_risk(
    Theta: Any,
    means: Any,
    sigma: float,
    lam: float = 1.0,
    score: str = "dot",
    n: int = 100_000,
    seed: int = 12345,
) -> tuple[float, float]:
    """Monte Carlo estimate of the population risk (eq. 3) and its standard error.

    Returns
    -------
    (risk, standard_error) : tuple of float

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = _check_means(means)
    X, _ = sample_gmm(n, means, sigma, seed)
    A, _ = head_attention(X, Theta, lam, score)
    losses = np.sum((X - A) ** 2, axis=1)
    return float(losses.mean()), float(losses.std(ddof=1) / math.sqrt(losses.size))


# ---------------------------------------------------------------------------------------------
# matching heads to centroids
# ---------------------------------------------------------------------------------------------


def _matching(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment(cost)


def alignment(Theta: Any, means: Any) -> float:
    """Mean cosine similarity between heads and centroids under the best matching.

    Permutation-invariant (label switching) and sign-aware (a head on ``-mu`` has cosine -1
    with ``mu``). The matching maximises the total cosine (Hungarian algorithm); with more
    heads than centroids the extra heads are ignored, and vice versa.

    Parameters
    ----------
    Theta : array-like, shape (H, d)
    means : array-like, shape (K, d)

    Returns
    -------
    float in [-1, 1]

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = _check_means(means)
    Theta = _check_theta(Theta, means.shape[1])
    tn = np.linalg.norm(Theta, axis=1, keepdims=True)
    mn = np.linalg.norm(means, axis=1, keepdims=True)
    cos = (Theta / np.maximum(tn, 1e-300)) @ (means / np.maximum(mn, 1e-300)).T
    rows, cols = _matching(-cos)
    return float(cos[rows, cols].mean())


def centroid_error(estimate: Any, means: Any) -> float:
    """Mean Euclidean distance between estimated and true centroids under the best matching.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    means = _check_means(means)
    estimate = check_array("estimate", estimate, ndim=2)
    if estimate.shape[1] != means.shape[1]:
        raise ValueError(
            f"estimate has dimension {estimate.shape[1]} but means have {means.shape[1]}"
        )
    dist = np.linalg.norm(estimate[:, None, :] - means[None, :, :], axis=-1)
    rows, cols = _matching(dist)
    return float(dist[rows, cols].mean())


def lloyd_fixed_point_residual(Theta: Any, X: Any) -> float:
    """Largest ``||theta_h - mean of the points nearest to theta_h||`` (hard assignment).

    Zero at a fixed point of Lloyd's algorithm (k-means); the large-``lam`` limit of the
    stationarity condition of eq. (3).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = _check_theta(Theta, X.shape[1])
    d2 = np.sum((X[:, None, :] - Theta[None, :, :]) ** 2, axis=-1)
    assign = np.argmin(d2, axis=1)
    worst = 0.0
    for h in range(Theta.shape[0]):
        pts = X[assign == h]
        if len(pts) == 0:
            return float("inf")
        worst = max(worst, float(np.linalg.norm(Theta[h] - pts.mean(axis=0))))
    return worst


# ---------------------------------------------------------------------------------------------
# training (reference: numpy SGD with the analytic gradient)
# ---------------------------------------------------------------------------------------------


@dataclass
class TrainHistory:
    """What :func:`train_heads` recorded.

    Attributes
    ----------
    Theta : numpy.ndarray, shape (H, d)
        Final head parameters.
    path : numpy.ndarray, shape (R, H, d)
        Heads at the recorded steps (``path[0]`` is the initialisation).
    steps : numpy.ndarray of int, shape (R,)
        The recorded step indices.
    risk : numpy.ndarray, shape (R,)
        Minibatch risk at the recorded steps (noisy; use :func:`monte_carlo_risk` for the
        population risk of the final heads).
    alignment : numpy.ndarray, shape (R,)
        :func:`alignment` of the heads with the true centroids.
    norms : numpy.ndarray, shape (R, H)
        Head norms.
    means, sigma, lam, score, lr, batch, seed :
        The run's settings.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """

    Theta: np.ndarray
    path: np.ndarray
    steps: np.ndarray
    risk: np.ndarray
    alignment: np.ndarray
    norms: np.ndarray
    means: np.ndarray
    sigma: float
    lam: float
    score: str
    lr: float
    batch: int
    seed: int | None


def train_heads(
    means: Any,
    sigma: float = 1.0,
    steps: int = 300,
    lr: float = 0.1,
    batch: int = 1024,
    seed: int | None = 0,
    *,
    lam: float = 1.0,
    score: str = "dot",
    heads: int | None = None,
    init_scale: float = 0.1,
    Theta0: Any = None,
    record_every: int = 1,
    samples: Any = None,
    show_progress: bool = False,
) -> TrainHistory:
    """Train the (reconstructed) head layer by SGD on fresh unlabeled mixture samples.

    ``Theta <- Theta - lr * grad (1/batch) sum_j ||x_j - A_Theta(x_j)||^2``, with a fresh
    minibatch every step (so this is SGD on the population risk, eq. 3).

    Parameters
    ----------
    means : array-like, shape (K, d)
        True centroids (used to draw data and to measure alignment, never as labels).
    sigma : float
        Noise level (> 0).
    steps : int
        SGD steps (>= 0).
    lr : float
        Step size (> 0).
    batch : int
        Fresh samples per step (>= 1).
    seed : int, optional
        Seeds the initialisation and the sample stream.
    lam : float
        Inverse temperature of the heads (> 0).
    score : {"dot", "distance"}
        Eq. (1). Use ``"distance"`` when the centroids are not symmetric about the origin.
    heads : int, optional
        Number of heads ``H >= 2`` (default: ``K``).
    init_scale : float
        ``Theta0 = init_scale * N(0, I)`` (>= 0); independent heads break the symmetry.
    Theta0 : array-like, shape (H, d), optional
        Explicit initialisation (overrides ``init_scale``).
    record_every : int
        Record the heads every this many steps (the last step is always recorded).
    samples : array-like, shape (steps, batch, d), optional
        Use these minibatches instead of drawing (for cross-checks with the fast path).
    show_progress : bool
        Show a progress bar.

    Returns
    -------
    TrainHistory
        ``.Theta`` holds the final heads, shape ``(H, d)``.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = _check_means(means)
    K, d = means.shape
    sigma = check_positive("sigma", sigma)
    steps = check_int("steps", steps, 0, 10_000_000)
    lr = check_positive("lr", lr)
    batch = check_int("batch", batch, 1)
    seed = _check_seed(seed)
    lam = check_positive("lam", lam)
    score = check_choice("score", score, SCORES)
    H = K if heads is None else check_int("heads", heads, 2)
    init_scale = check_positive("init_scale", init_scale, allow_zero=True)
    record_every = check_int("record_every", record_every, 1)
    rng = np.random.default_rng(seed)
    if Theta0 is None:
        Theta = init_scale * rng.standard_normal((H, d))  # small independent random heads
    else:
        Theta = _check_theta(Theta0, d).copy()
        H = Theta.shape[0]
    if samples is not None:
        samples = check_array("samples", samples, shape=(steps, batch, d))

    rec_steps, path, risks = [0], [Theta.copy()], [np.nan]
    for k in progress(range(1, steps + 1), desc="SGD", disable=not show_progress or None):
        X = samples[k - 1] if samples is not None else sample_gmm(batch, means, sigma, rng)[0]
        G = risk_grad(Theta, X, lam, score)
        if k % record_every == 0 or k == steps:
            rec_steps.append(k)
            risks.append(risk(Theta, X, lam, score))  # risk at the iterate the batch saw
        Theta = Theta - lr * G  # SGD step on eq. (3)
        if k % record_every == 0 or k == steps:
            path.append(Theta.copy())
    path_arr = np.stack(path)
    return TrainHistory(
        Theta=Theta,
        path=path_arr,
        steps=np.asarray(rec_steps),
        risk=np.asarray(risks),
        alignment=np.array([alignment(P, means) for P in path_arr]),
        norms=np.linalg.norm(path_arr, axis=2),
        means=means,
        sigma=sigma,
        lam=lam,
        score=score,
        lr=lr,
        batch=batch,
        seed=seed,
    )


# ---------------------------------------------------------------------------------------------
# fast path: many runs at once in torch (CPU or CUDA), autograd gradients
# ---------------------------------------------------------------------------------------------


def _resolve_device(device: Any, *tensors: Any):
    import torch

    from ..core.runtime import device as lab_device

    if device is not None:
        return torch.device(device) if not isinstance(device, torch.device) else device
    for t in tensors:
        if isinstance(t, torch.Tensor):
            return t.device
    return lab_device()


def train_heads_batched(
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
    the same risk as :func:`risk`; the tests check that, fed the same minibatches, this path
    reproduces :func:`train_heads` to 1e-8 in float64.

    Parameters
    ----------
    means : array-like or torch.Tensor, shape (K, d)
    sigma, steps, lr, batch :
        As in :func:`train_heads`.
    seeds : int
        Number of runs ``R``.
    lam : float or array-like of shape (R,)
        Inverse temperature(s) (> 0).
    score, heads, init_scale :
        As in :func:`train_heads`.
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

    dev = _resolve_device(device, means, samples, Theta0)
    means_np = _check_means(means)
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
        Wt = torch.softmax(lam_t * logits, dim=-1)  # eq. (2)
        A = torch.bmm(Wt, Theta)
        loss = ((X - A) ** 2).sum(-1).mean(-1).sum()  # eq. (3), summed over runs
        (g,) = torch.autograd.grad(loss, Theta)
        with torch.no_grad():
            Theta -= lr * g
    return Theta.detach()


# ---------------------------------------------------------------------------------------------
# identity attention (parameter-free) and in-context quantisation
# ---------------------------------------------------------------------------------------------


def identity_attention(X: Any, beta: float, n_layers: int = 1) -> np.ndarray:
    """Parameter-free attention (query = key = value = identity), eq. (6), numpy reference.

    Parameters
    ----------
    X : array-like, shape (L, d) or (B, L, d)
        One sequence or a batch of sequences (tokens as rows).
    beta : float
        Inverse temperature (>= 0). ``beta = 0`` maps every token to the sequence mean.
    n_layers : int
        Number of applications (>= 0); each is one mean-shift-like step.

    Returns
    -------
    numpy.ndarray, same shape as ``X``

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=(2, 3))
    beta = check_positive("beta", beta, allow_zero=True)
    n_layers = check_int("n_layers", n_layers, 0, 10_000)
    Y = X
    for _ in range(n_layers):
        S = beta * Y @ np.swapaxes(Y, -1, -2)  # beta <x_i, x_j>
        P = _softmax(S)  # softmax over j (max-subtracted)
        Y = P @ Y  # eq. (6): T(X)_i = sum_j P_ij x_j
    return Y


def identity_attention_sdpa(X: Any, beta: float, n_layers: int = 1, *, device: Any = None):
    """Fast path of :func:`identity_attention` with ``torch.nn.functional.scaled_dot_product_attention``.

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
    dev = _resolve_device(device, X)
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
        Y = F.scaled_dot_product_attention(Y, Y, Y, scale=beta)  # eq. (6)
    return Y


def sample_in_context(
    n_seq: int,
    L: int = 64,
    d: int = 5,
    separation: float = 3.0,
    K: int = 2,
    sigma: float = 1.0,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Sequences whose centroids change from one sequence to the next.

    For ``K = 2`` each sequence has centroids ``+-mu_seq`` with ``mu_seq = separation * u``,
    ``u`` uniform on the sphere; for ``K > 2`` the ``K`` centroids are ``separation`` times
    independent uniform directions. Tokens are ``mu_z + sigma eps`` with ``z`` uniform.

    Returns
    -------
    X : numpy.ndarray, shape (n_seq, L, d)
    z : numpy.ndarray of int, shape (n_seq, L)

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    n_seq = check_int("n_seq", n_seq, 1)
    L = check_int("L", L, 2)
    d = check_int("d", d, 1)
    separation = check_positive("separation", separation, allow_zero=True)
    K = check_int("K", K, 2, L)
    sigma = check_positive("sigma", sigma)
    rng = _rng(seed)
    U = rng.standard_normal((n_seq, K, d))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    if K == 2:
        U[:, 1] = -U[:, 0]
    mu = separation * U  # (n_seq, K, d)
    z = rng.integers(0, K, size=(n_seq, L))
    X = np.take_along_axis(mu, z[..., None], axis=1) + sigma * rng.standard_normal((n_seq, L, d))
    return X, z


def _own_cluster_means(X: np.ndarray, z: np.ndarray) -> np.ndarray:
    K = int(z.max()) + 1
    onehot = (z[..., None] == np.arange(K)).astype(np.float64)  # (B, L, K)
    counts = onehot.sum(axis=-2)  # (B, K)
    sums = np.swapaxes(onehot, -1, -2) @ X  # (B, K, d)
    cm = sums / np.maximum(counts, 1)[..., None]
    return np.take_along_axis(cm, z[..., None], axis=-2)  # (B, L, d)


def in_context_error(X: Any, z: Any, beta: float, n_layers: int = 1) -> float:
    """Mean squared distance of each output token to its own in-context cluster mean (eq. 7).

    ``n_layers = 0`` gives the error of the raw tokens (the "do nothing" baseline).

    Parameters
    ----------
    X : array-like, shape (B, L, d) or (L, d)
    z : array-like of int, shape (B, L) or (L,)
        True cluster of every token (evaluation only).
    beta : float
        Inverse temperature (>= 0).
    n_layers : int
        Identity-attention layers (>= 0).

    Returns
    -------
    float

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=(2, 3))
    z = check_array("z", z, ndim=X.ndim - 1, dtype=None)
    if z.shape != X.shape[:-1]:
        raise ValueError(f"z must have shape {X.shape[:-1]} (got {z.shape})")
    if X.ndim == 2:
        X, z = X[None], z[None]
    z = z.astype(int)
    target = _own_cluster_means(X, z)  # empirical mean of token i's own cluster
    Y = identity_attention(X, beta, n_layers)
    return float(np.mean(np.sum((Y - target) ** 2, axis=-1)))  # eq. (7)


def kmeans_batched(
    X: Any, K: int, n_init: int = 5, iters: int = 30, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lloyd's algorithm on every sequence of a batch at once (numpy).

    Random distinct tokens as initial centres, ``iters`` Lloyd steps, the best of ``n_init``
    restarts per sequence (lowest inertia). An empty cluster keeps its previous centre. The
    tests check its inertia against ``sklearn.cluster.KMeans`` sequence by sequence.

    Parameters
    ----------
    X : array-like, shape (B, L, d)
    K : int
        Clusters per sequence (``1 <= K <= L``).
    n_init, iters : int
        Restarts and Lloyd iterations.
    seed : int
        Seeds the initialisations.

    Returns
    -------
    centers : numpy.ndarray, shape (B, K, d)
    labels : numpy.ndarray of int, shape (B, L)
    inertia : numpy.ndarray, shape (B,)

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=3)
    B, L, d = X.shape
    K = check_int("K", K, 1, L)
    n_init = check_int("n_init", n_init, 1)
    iters = check_int("iters", iters, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**32 - 1))
    best_c = np.zeros((B, K, d))
    best_lab = np.zeros((B, L), dtype=int)
    best_in = np.full(B, np.inf)
    for _ in range(n_init):
        idx = np.argsort(rng.random((B, L)), axis=1)[:, :K]  # K distinct tokens per sequence
        C = np.take_along_axis(X, idx[..., None], axis=1)
        for _ in range(iters):
            d2 = np.sum((X[:, :, None, :] - C[:, None, :, :]) ** 2, axis=-1)  # (B, L, K)
            lab = np.argmin(d2, axis=-1)  # assignment step
            onehot = (lab[..., None] == np.arange(K)).astype(np.float64)
            cnt = onehot.sum(axis=1)  # (B, K)
            sums = np.swapaxes(onehot, 1, 2) @ X
            C = np.where(cnt[..., None] > 0, sums / np.maximum(cnt, 1)[..., None], C)  # update
        d2 = np.sum((X[:, :, None, :] - C[:, None, :, :]) ** 2, axis=-1)
        lab = np.argmin(d2, axis=-1)
        inertia = np.take_along_axis(d2, lab[..., None], axis=-1)[..., 0].sum(axis=1)
        better = inertia < best_in
        best_c[better], best_lab[better], best_in[better] = C[better], lab[better], inertia[better]
    return best_c, best_lab, best_in


def in_context_kmeans_error(X: Any, z: Any, K: int | None = None, seed: int = 0) -> float:
    """The "oracle" baseline: k-means on every sequence (knowing ``K``, :func:`kmeans_batched`);
    each token is replaced by its k-means centre. Same error measure as
    :func:`in_context_error`.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=3)
    z = check_array("z", z, shape=X.shape[:-1], dtype=None).astype(int)
    K = int(z.max()) + 1 if K is None else check_int("K", K, 1)
    target = _own_cluster_means(X, z)
    C, lab, _ = kmeans_batched(X, K, seed=seed)
    out = np.take_along_axis(C, lab[..., None], axis=1)
    return float(np.mean(np.sum((out - target) ** 2, axis=-1)))


# ---------------------------------------------------------------------------------------------
# scikit-learn baselines on the same data
# ---------------------------------------------------------------------------------------------


def fit_baselines(
    means: Any,
    sigma: float = 1.0,
    n: int = 10_000,
    seed: int = 0,
    *,
    lam: float = 1.0,
    score: str = "dot",
    steps: int = 300,
    lr: float = 0.1,
    batch: int = 1024,
) -> dict[str, dict[str, Any]]:
    """Estimate the centroids three ways and time them.

    * ``"attention"``: :func:`train_heads` (``steps`` x ``batch`` fresh samples);
    * ``"k-means"``: ``sklearn.cluster.KMeans(K, n_init=3)`` on ``n`` samples;
    * ``"EM"``: ``sklearn.mixture.GaussianMixture(K, covariance_type="spherical")`` on the
      same ``n`` samples.

    Returns
    -------
    dict
        ``name -> {"centers", "error" (centroid_error), "alignment", "seconds", "samples"}``.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture

    means = _check_means(means)
    K = means.shape[0]
    n = check_int("n", n, K)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    X, _ = sample_gmm(n, means, sigma, seed + 1)
    out: dict[str, dict[str, Any]] = {}

    t0 = time.perf_counter()
    hist = train_heads(means, sigma, steps, lr, batch, seed, lam=lam, score=score)
    out["attention"] = {"centers": hist.Theta, "seconds": time.perf_counter() - t0}
    out["attention"]["samples"] = steps * batch

    t0 = time.perf_counter()
    km = KMeans(n_clusters=K, n_init=3, random_state=seed).fit(X)
    out["k-means"] = {"centers": km.cluster_centers_, "seconds": time.perf_counter() - t0}
    out["k-means"]["samples"] = n

    t0 = time.perf_counter()
    gm = GaussianMixture(K, covariance_type="spherical", random_state=seed).fit(X)
    out["EM"] = {"centers": gm.means_, "seconds": time.perf_counter() - t0, "samples": n}

    for rec in out.values():
        rec["error"] = centroid_error(rec["centers"], means)
        rec["alignment"] = alignment(rec["centers"], means)
    return out
