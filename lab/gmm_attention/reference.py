"""Reference kernels (numpy, float64): the two-head layer, its risk and gradient, SGD on fresh
samples, and the parameter-free identity-attention layer.

One function per equation block; ``# eq. (Mn)`` refers to the equations (M1)-(M7) of the
package docstring (:mod:`lab.gmm_attention`), which are **this module's numbering**: the paper's
text was not read, so no equation number of the paper is cited. (M1)-(M5) are the reconstructed
two-head layer; (M6) is the identity-attention layer of the abstract; (M7) is our error measure.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
)
from lab.core.progress import progress

from .mixture import alignment, check_means, check_seed, check_theta, sample_gmm
from .settings import TrainSettings, check_settings

TRAIN = TrainSettings()  # the chapter's default protocol

__all__ = [
    "SCORES",
    "TrainHistory",
    "head_attention",
    "risk",
    "risk_grad",
    "population_risk_symmetric",
    "monte_carlo_risk",
    "lloyd_fixed_point_residual",
    "train_heads",
    "identity_attention",
    "in_context_error",
]

#: The two score functions of eq. (M1).
SCORES = ("dot", "distance")


def _scores(X: np.ndarray, Theta: np.ndarray, lam: float, score: str) -> np.ndarray:
    if score == "dot":
        return lam * X @ Theta.T  # eq. (M1), dot: s_h = lam <x, theta_h>
    # eq. (M1), distance: s_h = -lam/2 ||x - theta_h||^2 (the ||x||^2 term cancels in softmax)
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
        Eq. (M1). ``"distance"`` is the dot score with key bias ``-lam ||theta_h||^2 / 2``.

    Returns
    -------
    A : numpy.ndarray, shape (n, d)
        Layer outputs, eq. (M2).
    W : numpy.ndarray, shape (n, H)
        Head weights (rows sum to 1).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = check_theta(Theta, X.shape[1])
    lam = check_positive("lam", lam)
    score = check_choice("score", score, SCORES)
    W = _softmax(_scores(X, Theta, lam, score))  # eq. (M2): w_h = softmax_h(s_h)
    A = W @ Theta  # eq. (M2): A = sum_h w_h theta_h
    return A, W


def risk(Theta: Any, X: Any, lam: float = 1.0, score: str = "dot") -> float:
    """Empirical risk ``(1/n) sum_j ||x_j - A_Theta(x_j)||^2`` (eq. M3 on a sample).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    A, _ = head_attention(X, Theta, lam, score)
    X = np.asarray(X, dtype=np.float64)
    return float(np.mean(np.sum((X - A) ** 2, axis=1)))


def risk_grad(Theta: Any, X: Any, lam: float = 1.0, score: str = "dot") -> np.ndarray:
    """Analytic gradient of :func:`risk` with respect to ``Theta`` (eq. M4).

    Returns
    -------
    numpy.ndarray, shape (H, d)

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = check_theta(Theta, X.shape[1])
    A, W = head_attention(X, Theta, lam, score)
    n = X.shape[0]
    Rres = X - A  # r = x - A(x)
    rt = Rres @ Theta.T  # <r, theta_h>, shape (n, H)
    ry = np.sum(Rres * A, axis=1, keepdims=True)  # <r, A(x)>
    C = lam * W * (rt - ry)  # lam w_h (<r, theta_h> - <r, A>)
    # eq. (M4), first term: -2 w_h r (theta_h enters A as a value)
    G = -2.0 * W.T @ Rres
    # eq. (M4), second term: -2 lam w_h (<r,theta_h> - <r,A>) ds_h/dtheta_h
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
    """Exact population risk (eq. M5) of the heads ``(t u, -t u)`` on the symmetric mixture.

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
    integrand = -2.0 * tt * s * th + tt**2 * th**2  # eq. (M5)
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
    """Monte Carlo estimate of the population risk (eq. M3) and its standard error.

    Returns
    -------
    (risk, standard_error) : tuple of float

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = check_means(means)
    X, _ = sample_gmm(n, means, sigma, seed)
    A, _ = head_attention(X, Theta, lam, score)
    losses = np.sum((X - A) ** 2, axis=1)
    return float(losses.mean()), float(losses.std(ddof=1) / math.sqrt(losses.size))


def lloyd_fixed_point_residual(Theta: Any, X: Any) -> float:
    """Largest ``||theta_h - mean of the points nearest to theta_h||`` (hard assignment).

    Zero at a fixed point of Lloyd's algorithm (k-means); the large-``lam`` limit of the
    stationarity condition of eq. (M3).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    X = check_array("X", X, ndim=2)
    Theta = check_theta(Theta, X.shape[1])
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
    settings: TrainSettings = TRAIN,
    seed: int | None = 0,
    *,
    lam: float = 1.0,
    score: str = "dot",
    Theta0: Any = None,
    samples: Any = None,
) -> TrainHistory:
    """Train the (reconstructed) head layer by SGD on fresh unlabeled mixture samples.

    ``Theta <- Theta - lr * grad (1/batch) sum_j ||x_j - A_Theta(x_j)||^2``, with a fresh
    minibatch every step (so this is SGD on the population risk, eq. M3).

    Parameters
    ----------
    means : array-like, shape (K, d)
        True centroids (used to draw data and to measure alignment, never as labels).
    settings : TrainSettings
        The data stream and SGD (σ, steps, step size, batch, heads, initial scale, recording).
    seed : int, optional
        Seeds the initialisation and the sample stream.
    lam : float
        Inverse temperature λ of the heads (> 0), eq. (M1).
    score : {"dot", "distance"}
        Eq. (M1). Use ``"distance"`` when the centroids are not symmetric about the origin.
    Theta0 : array-like, shape (H, d), optional
        Explicit initialisation (overrides ``settings.init_scale``).
    samples : array-like, shape (steps, batch, d), optional
        Use these minibatches instead of drawing (for cross-checks with the fast path).

    Returns
    -------
    TrainHistory
        ``.Theta`` holds the final heads, shape ``(H, d)``.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = check_means(means)
    settings = check_settings(settings)
    d = means.shape[1]
    seed = check_seed(seed)
    lam = check_positive("lam", lam)
    score = check_choice("score", score, SCORES)
    if Theta0 is not None:
        Theta0 = check_theta(Theta0, d)
    if samples is not None:
        samples = check_array("samples", samples, shape=(settings.steps, settings.batch, d))
    return _train_heads(means, settings, seed, lam, score, Theta0, samples)


def _sgd(means, settings, rng, lam, score, Theta, samples):
    """The SGD loop of :func:`train_heads` (unchecked): ``(steps, path, risks)``."""
    rec_steps, path, risks = [0], [Theta.copy()], [np.nan]
    s = settings
    for k in progress(range(1, s.steps + 1), desc="SGD", disable=not s.show_progress or None):
        X = samples[k - 1] if samples is not None else sample_gmm(s.batch, means, s.sigma, rng)[0]
        G = risk_grad(Theta, X, lam, score)
        if k % s.record_every == 0 or k == s.steps:
            rec_steps.append(k)
            risks.append(risk(Theta, X, lam, score))  # risk at the iterate the batch saw
        Theta = Theta - s.lr * G  # SGD step on eq. (M3)
        if k % s.record_every == 0 or k == s.steps:
            path.append(Theta.copy())
    return rec_steps, path, risks


def _train_heads(means, settings, seed, lam, score, Theta0, samples) -> TrainHistory:
    """:func:`train_heads` on validated arguments."""
    K, d = means.shape
    H = K if settings.heads is None else settings.heads
    rng = np.random.default_rng(seed)
    if Theta0 is None:
        Theta = settings.init_scale * rng.standard_normal((H, d))  # small independent heads
    else:
        Theta = Theta0.copy()
    rec_steps, path, risks = _sgd(means, settings, rng, lam, score, Theta, samples)
    path_arr = np.stack(path)
    return TrainHistory(
        Theta=path_arr[-1].copy(),
        path=path_arr,
        steps=np.asarray(rec_steps),
        risk=np.asarray(risks),
        alignment=np.array([alignment(P, means) for P in path_arr]),
        norms=np.linalg.norm(path_arr, axis=2),
        means=means,
        sigma=settings.sigma,
        lam=lam,
        score=score,
        lr=settings.lr,
        batch=settings.batch,
        seed=seed,
    )


# ---------------------------------------------------------------------------------------------

# identity attention (parameter-free) and in-context quantisation
# ---------------------------------------------------------------------------------------------


def identity_attention(X: Any, beta: float, n_layers: int = 1) -> np.ndarray:
    """Parameter-free attention (query = key = value = identity), eq. (M6), numpy reference.

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
        Y = P @ Y  # eq. (M6): T(X)_i = sum_j P_ij x_j
    return Y


def own_cluster_means(X: np.ndarray, z: np.ndarray) -> np.ndarray:
    K = int(z.max()) + 1
    onehot = (z[..., None] == np.arange(K)).astype(np.float64)  # (B, L, K)
    counts = onehot.sum(axis=-2)  # (B, K)
    sums = np.swapaxes(onehot, -1, -2) @ X  # (B, K, d)
    cm = sums / np.maximum(counts, 1)[..., None]
    return np.take_along_axis(cm, z[..., None], axis=-2)  # (B, L, d)


def in_context_error(X: Any, z: Any, beta: float, n_layers: int = 1) -> float:
    """Mean squared distance of each output token to its own in-context cluster mean.

    This error measure is **ours** (labelled (M7) in this package's docstring): the abstract of
    the paper, the only part that was read, states in-context quantisation but defines no
    measure, so no equation of the paper is cited here.

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
    target = own_cluster_means(X, z)  # empirical mean of token i's own cluster
    Y = identity_attention(X, beta, n_layers)
    return float(np.mean(np.sum((Y - target) ** 2, axis=-1)))  # (M7), ours
