"""Drivers for the notebooks: per-sequence k-means (the in-context oracle) and the scikit-learn
baselines on the same data.

See: book/gmm_attention/02-temperature-and-baselines.ipynb
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_bool, check_int, check_positive
from lab.core.memo import memo

from .mixture import (
    alignment,
    centroid_error,
    check_means,
    sample_gmm,
    sample_in_context,
    symmetric_means,
)
from .reference import (
    TrainHistory,
    identity_attention,
    in_context_error,
    own_cluster_means,
    train_heads,
)

__all__ = [
    "chapter_means",
    "cached_run",
    "temperature_curve",
    "temperature_curves",
    "CURVE_BETAS",
    "LayerSweep",
    "layer_sweep",
    "kmeans_batched",
    "in_context_kmeans_error",
    "fit_baselines",
]


@dataclass
class LayerSweep:
    """In-context errors of stacked identity-attention layers over a temperature grid.

    Attributes
    ----------
    betas : numpy.ndarray, shape (B,)
        The inverse temperatures.
    layers : tuple of int
        The depths.
    errors : dict
        ``depth -> numpy.ndarray (B,)`` of :func:`in_context_error`.
    raw_error : float
        The error of the raw tokens (no layer).

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """

    betas: np.ndarray
    layers: tuple[int, ...]
    errors: dict[int, np.ndarray]
    raw_error: float

    def best(self, n_layers: int) -> tuple[float, float]:
        """``(best beta, its error)`` for a depth of the sweep."""
        if n_layers not in self.errors:
            raise ValueError(f"n_layers must be one of {self.layers} (got {n_layers!r})")
        e = self.errors[n_layers]
        i = int(np.argmin(e))
        return float(self.betas[i]), float(e[i])


def layer_sweep(X: Any, z: Any, betas: Any, layers: Any = (1, 2, 5)) -> LayerSweep:
    """:func:`in_context_error` for every depth in ``layers`` and every ``beta`` in ``betas``.

    Parameters
    ----------
    X : array-like, shape (B, L, d)
    z : array-like of int, shape (B, L)
    betas : array-like, shape (G,)
        Inverse temperatures (>= 0).
    layers : sequence of int
        Depths (>= 1).

    Returns
    -------
    LayerSweep

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X = check_array("X", X, ndim=3)
    betas = check_array("betas", betas, ndim=1)
    if betas.size == 0 or np.any(betas < 0):
        raise ValueError(f"betas must be a non-empty array of values >= 0 (got {betas!r})")
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
        raise TypeError(f"layers must be a sequence of ints (got {type(layers).__name__})")
    depths = tuple(check_int("layers", n, 1, 10_000) for n in layers)
    if not depths:
        raise ValueError("layers must not be empty")
    errors = {
        n: np.array(
            [in_context_error(X, z, check_positive("beta", b, allow_zero=True), n) for b in betas]
        )
        for n in depths
    }
    raw = in_context_error(X, z, 0.0, n_layers=0)
    return LayerSweep(betas=betas, layers=depths, errors=errors, raw_error=raw)


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
    target = own_cluster_means(X, z)
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

    means = check_means(means)
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


def chapter_means(d: int = 10, separation: float = 3.0, symmetric: bool = True) -> np.ndarray:
    """The chapter's centroids: ``+-mu`` (``||mu|| = separation``, fixed direction, seed 0)
    or, with ``symmetric=False``, two random directions of norm ``separation`` shifted by
    ``+1`` in every coordinate (not symmetric about the origin).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    d = check_int("d", d, 2)
    separation = check_positive("separation", separation)
    symmetric = check_bool("symmetric", symmetric)
    if symmetric:
        return symmetric_means(d, separation, seed=0)
    rng = np.random.default_rng(1)
    U = rng.standard_normal((2, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return separation * U + 1.0


@memo(maxsize=64)
def cached_run(
    d: int = 10,
    separation: float = 3.0,
    lam: float = 1.0,
    score: str = "dot",
    symmetric: bool = True,
    steps: int = 300,
    seed: int = 0,
) -> TrainHistory:
    """:func:`lab.gmm_attention.train_heads` on :func:`chapter_means`, memoised (so a slider
    over the training step costs one run).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = chapter_means(d, separation, symmetric)
    return train_heads(means, 1.0, steps, 0.1, 1024, seed, lam=lam, score=score)


@memo(maxsize=32)
def context_data(n_seq: int, L: int, K: int, separation: float, seed: int):
    """``sample_in_context(n_seq, L, 5, separation, K, 1.0, seed)``, memoised: the fixed
    sequences of the temperature figure and its curves.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    return sample_in_context(n_seq, L, 5, separation, K, 1.0, seed)


def temperature_curve(
    betas, L: int = 64, K: int = 2, separation: float = 3.0, n_layers: int = 1, n_seq: int = 200
):
    """In-context error ((M7), ours) over a grid of ``beta`` on fixed sequences, plus the raw-token
    error.

    Returns ``(errors, raw_error)``.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    X, z = context_data(int(n_seq), int(L), int(K), float(separation), 0)
    errs = np.array([in_context_error(X, z, float(b), int(n_layers)) for b in betas])
    return errs, in_context_error(X, z, 0.0, 0)


CURVE_BETAS = np.geomspace(0.01, 10, 25)  # the beta grid of the live figure's error curve
CURVE_SEQUENCES = 100  # sequences behind the live figure's error curve


class _LayerStack:
    """The outputs of 0, 1, 2, ... identity layers at every beta of :data:`CURVE_BETAS` on the
    live figure's fixed sequences, grown one layer at a time (so the curve of ``n`` layers costs
    only the layers not yet applied). Layer ``n`` is ``identity_attention(previous, beta, 1)``,
    the same operations as ``identity_attention(X, beta, n)``: the errors equal
    :func:`temperature_curve`'s exactly."""

    def __init__(self, L: int, K: int, separation: float):
        X, z = context_data(CURVE_SEQUENCES, L, K, separation, 0)
        self.X, self.z = X, z
        self.target = own_cluster_means(X, z.astype(int))
        self.raw = in_context_error(X, z, 0.0, 0)
        self.states = [X for _ in CURVE_BETAS]
        self.errors: dict[int, np.ndarray] = {}

    def curve(self, n_layers: int) -> np.ndarray:
        while len(self.errors) < n_layers:
            self.states = [
                identity_attention(Y, float(b), 1)
                for Y, b in zip(self.states, CURVE_BETAS, strict=True)
            ]
            self.errors[len(self.errors) + 1] = np.array(
                [float(np.mean(np.sum((Y - self.target) ** 2, axis=-1))) for Y in self.states]
            )
        return self.errors[n_layers]


@memo(maxsize=16)
def _layer_stack(L: int, K: int, separation: float) -> _LayerStack:
    return _LayerStack(L, K, separation)


def temperature_curves(L: int = 64, K: int = 2, separation: float = 3.0, n_layers: int = 1):
    """The error curve of :func:`temperature_figure` (memoised): in-context error of
    ``n_layers`` identity layers at every beta of :data:`CURVE_BETAS` on its 100 fixed sequences,
    plus the raw-token error. Asking for ``n_layers`` also stores the curves of fewer layers.
    A notebook calls it ahead of a widget so that the widget's moves redraw without computing.

    Returns ``(betas, errors, raw_error)``.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    L = check_int("L", L, 8, 2048)
    K = check_int("K", K, 2, 5)
    separation = check_positive("separation", separation)
    n_layers = check_int("n_layers", n_layers, 1, 50)
    stack = _layer_stack(L, K, float(separation))
    return CURVE_BETAS, stack.curve(n_layers), stack.raw
