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
from lab.core.sweep import sweep

from .mixture import (
    alignment,
    centroid_error,
    check_means,
    sample_gmm,
    sample_in_context,
    symmetric_means,
)
from .reference import (
    TRAIN,
    TrainHistory,
    identity_attention,
    in_context_error,
    monte_carlo_risk,
    own_cluster_means,
    population_risk_symmetric,
    train_heads,
)
from .settings import TrainSettings, check_settings

__all__ = [
    "chapter_means",
    "training_run",
    "training_view",
    "seed_runs",
    "landscape",
    "temperature_view",
    "score_errors",
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
    settings: TrainSettings = TRAIN,
    seed: int = 0,
    *,
    n: int = 10_000,
    lam: float = 1.0,
    score: str = "dot",
) -> dict[str, dict[str, Any]]:
    """Estimate the centroids three ways and time them.

    * ``"attention"``: :func:`train_heads` (``settings.steps`` x ``settings.batch`` fresh
      samples);
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
    settings = check_settings(settings)
    K = means.shape[0]
    n = check_int("n", n, K)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    X, _ = sample_gmm(n, means, settings.sigma, seed + 1)
    out: dict[str, dict[str, Any]] = {}

    t0 = time.perf_counter()
    hist = train_heads(means, settings, seed, lam=lam, score=score)
    out["attention"] = {"centers": hist.Theta, "seconds": time.perf_counter() - t0}
    out["attention"]["samples"] = settings.steps * settings.batch

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
def training_run(
    d: int = 10,
    separation: float = 3.0,
    lam: float = 1.0,
    score: str = "dot",
    symmetric: bool = True,
    steps: int = 300,
    seed: int = 0,
) -> TrainHistory:
    """:func:`lab.gmm_attention.train_heads` on :func:`chapter_means` with the chapter's
    protocol (σ = 1, step 0.1, batches of 1024), memoised (so a slider over the training step
    costs one run).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = chapter_means(d, separation, symmetric)
    settings = TRAIN.replace(steps=check_int("steps", steps, 0, 10_000_000))
    return train_heads(means, settings, seed, lam=lam, score=score)


#: unlabeled samples drawn under the training figure (seed 7, never seen by the heads)
VIEW_SAMPLES, VIEW_SEED = 300, 7


def training_view(
    separation: float = 3.0,
    lam: float = 1.0,
    d: int = 10,
    score: str = "dot",
    symmetric: bool = True,
    seed: int = 0,
) -> tuple[TrainHistory, np.ndarray, np.ndarray]:
    """What :func:`lab.gmm_attention.figures.training_figure` draws: the 300-step
    :func:`training_run` and 300 unlabeled samples of its mixture ``(run, X, z)``.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    run = training_run(
        int(d), float(separation), float(lam), score, bool(symmetric), 300, int(seed)
    )
    X, z = sample_gmm(VIEW_SAMPLES, run.means, 1.0, VIEW_SEED)
    return run, X, z


def seed_runs(
    means: Any, settings: TrainSettings, seeds: Any, *, lam: float = 1.0, n_mc: int = 100_000
) -> tuple[dict[int, TrainHistory], Any]:
    """One training run per seed through :func:`lab.core.sweep.sweep`: the runs and a
    :class:`~lab.core.sweep.Sweep` of ``alignment`` (final), ``norm_error`` (worst
    ``| ||θ_h|| / mean ||μ|| − 1 |``) and ``risk`` (:func:`monte_carlo_risk` of the final heads
    on ``n_mc`` samples, seed 2).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = check_means(means)
    settings = check_settings(settings)
    n_mc = check_int("n_mc", n_mc, 2)
    mu_norm = float(np.mean(np.linalg.norm(means, axis=1)))
    runs: dict[int, TrainHistory] = {}

    def one(seed: int) -> dict[str, float]:
        run = runs[seed] = train_heads(means, settings, seed, lam=lam)
        norms = np.linalg.norm(run.Theta, axis=1)
        return {
            "alignment": float(run.alignment[-1]),
            "norm_error": float(np.max(np.abs(norms / mu_norm - 1))),
            "risk": monte_carlo_risk(run.Theta, means, settings.sigma, lam, n=n_mc, seed=2)[0],
        }

    return runs, sweep(one, None, seeds=tuple(seeds), desc="seeds")


def landscape(mu_norm: float = 3.0, d: int = 10, lam: float = 1.0, t_max: float = 5.0):
    """The exact symmetric risk ``R(t, φ)`` (eq. M5) on a 200 × 100 grid of ``t`` in
    ``[0, t_max]`` and ``φ`` in ``[0, π/2]`` (σ = 1): ``(t, phi, R)`` with ``R`` of shape
    ``(100, 200)``.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    t = np.linspace(0.0, check_positive("t_max", t_max), 200)
    phi = np.linspace(0.0, np.pi / 2, 100)
    R = population_risk_symmetric(t[None, :], phi[:, None], mu_norm, 1.0, d, lam)
    return t, phi, R


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


def temperature_view(
    beta: float = 0.2, n_layers: int = 1, L: int = 64, K: int = 2, separation: float = 3.0
) -> dict[str, Any]:
    """What :func:`lab.gmm_attention.figures.temperature_figure` draws: sequence 0 of the
    curve's fixed sequences before (``X0``, labels ``z0``) and after ``n_layers`` identity
    layers (``Y0``), the error curve (``betas``, ``errors``, ``raw``) of
    :func:`temperature_curves` and the error at ``beta`` (``error``); plus the settings.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    beta = check_positive("beta", beta, allow_zero=True)
    n_layers = check_int("n_layers", n_layers, 1, 50)
    L = check_int("L", L, 8, 2048)
    K = check_int("K", K, 2, 5)
    X, z = context_data(CURVE_SEQUENCES, L, K, float(separation), 0)
    betas, errs, raw = temperature_curves(L, K, float(separation), n_layers)
    return {
        "beta": beta,
        "n_layers": n_layers,
        "K": K,
        "X0": X[0],
        "z0": z[0],
        "Y0": identity_attention(X[0], beta, n_layers),
        "betas": betas,
        "errors": errs,
        "raw": raw,
        "error": in_context_error(X, z, beta, n_layers),
    }


def score_errors(means: Any, settings: TrainSettings, seeds: Any, *, lam: float = 1.0):
    """:func:`centroid_error` of heads trained with each score of eq. (M1), over ``seeds``
    (:func:`lab.core.sweep.sweep`, output ``"error"``, grid ``score`` in ``("dot",
    "distance")``).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    means = check_means(means)
    settings = check_settings(settings)

    def one(score: str, seed: int) -> dict[str, float]:
        heads = train_heads(means, settings, seed, lam=lam, score=score).Theta
        return {"error": centroid_error(heads, means)}

    return sweep(one, {"score": ["dot", "distance"]}, seeds=tuple(seeds), desc="scores")
