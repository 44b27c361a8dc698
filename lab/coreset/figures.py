"""Figures of the coreset chapter (plotly for ``lab.core.explore``, matplotlib for static panels).

Kept out of the notebooks so that each notebook cell stays a sentence of code.

See: book/coreset/01-facility-location.ipynb, book/coreset/02-label-noise.ipynb,
book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from lab.core.checks import check_int, check_positive, check_range
from lab.coreset import (
    METHODS,
    alignment_study,
    corrupt_labels,
    digits_run,
    digits_split,
    greedy_facility_location,
    logreg_posterior_features,
    noisy_share,
    pairwise_distances,
    random_coreset,
    softmax_regression_fit,
)

__all__ = [
    "COLOURS",
    "toy_problem",
    "toy_selection",
    "toy_selection_figure",
    "ALIGNMENT_CHOICES",
    "alignment_figure",
    "precompute_alignment",
    "TRAINING_CHOICES",
    "training_figure",
    "precompute_training",
    "proxy_plane",
]

COLOURS = {
    "random": "#999999",
    "craig": "#0072B2",
    "posterior": "#D55E00",
    "full": "#009E73",
    "clean": "#56B4E9",
    "flipped": "#E69F00",
}


@functools.lru_cache(maxsize=64)
def toy_problem(noise: float, n: int = 300, seed: int = 0):
    """Three Gaussian blobs in 2-D, symmetric label noise, and ``w_bar`` from 30 GD steps.

    Returns ``X, y_clean, y_noisy, flipped, W``.

    See: book/coreset/01-facility-location.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    n = check_int("n", n, 3)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    centres = np.array([[0.0, 2.0], [-1.8, -1.0], [1.8, -1.0]])
    y = np.arange(n) % 3
    X = centres[y] + rng.standard_normal((n, 2))
    yn, fl = corrupt_labels(y, noise, 3, seed)
    W = softmax_regression_fit(X, yn, 3, steps=30, lr=0.5)
    return X, y, yn, fl, W


def proxy_plane(R: np.ndarray) -> np.ndarray:
    """2-D coordinates of 3-class proxies ``p - e_y`` (they lie in the plane sum = 0)."""
    basis = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]])
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)
    return np.asarray(R)[:, :3] @ basis.T


def toy_selection(noise: float, budget: int = 15, K: int = 8, sigma: float = 0.5, seed: int = 0):
    """Random, CRAIG and posterior coresets on the toy problem.

    Returns ``(R, flipped, {method: (idx, weights)})`` with ``R`` the unperturbed proxies.

    See: book/coreset/01-facility-location.ipynb
    """
    X, _, yn, fl, W = toy_problem(noise, seed=seed)
    R = logreg_posterior_features(W, X, yn, 1, 0.0, kind="proxy")
    Gp = logreg_posterior_features(W, X, yn, K, sigma, seed + 1, kind="proxy")
    sel = {
        "random": random_coreset(len(yn), budget, seed),
        "craig": greedy_facility_location(pairwise_distances(R), budget),
        "posterior": greedy_facility_location(pairwise_distances(Gp), budget),
    }
    return R, fl, sel


def toy_selection_figure(noise: float, budget: int = 15, K: int = 8, sigma: float = 0.5):
    """Proxy space with the CRAIG and posterior medoids, and the noisy share of each method.

    Always 6 traces (for the static twin).

    See: book/coreset/01-facility-location.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    budget = check_int("budget", budget, 1)
    R, fl, sel = toy_selection(noise, budget, K, sigma)
    Z = proxy_plane(R)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.68, 0.32],
        subplot_titles=("gradient proxies p − e_y (2-D plane)", "weighted share mislabeled"),
    )
    for name, mask in (("clean label", ~fl), ("flipped label", fl)):
        key = "clean" if name == "clean label" else "flipped"
        fig.add_trace(
            go.Scatter(
                x=Z[mask, 0],
                y=Z[mask, 1],
                mode="markers",
                name=name,
                marker={"size": 5, "color": COLOURS[key], "opacity": 0.6},
            ),
            1,
            1,
        )
    for m, symbol in (("craig", "star"), ("posterior", "diamond-open")):
        idx, w = sel[m]
        size = 8 + 22 * np.sqrt(w / max(w.max(), 1))
        fig.add_trace(
            go.Scatter(
                x=Z[idx, 0],
                y=Z[idx, 1],
                mode="markers",
                name=f"{m} medoids (size ∝ γ)",
                marker={"size": size, "symbol": symbol, "color": COLOURS[m], "line": {"width": 2}},
            ),
            1,
            1,
        )
    shares = [noisy_share(fl, *sel[m]) for m in METHODS]
    fig.add_trace(
        go.Bar(
            x=list(METHODS),
            y=shares,
            marker_color=[COLOURS[m] for m in METHODS],
            showlegend=False,
            text=[f"{s:.2f}" for s in shares],
            textposition="outside",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=list(METHODS),
            y=[fl.mean()] * 3,
            mode="lines",
            name="pool noise",
            line={"dash": "dot", "color": "black"},
        ),
        1,
        2,
    )
    fig.update_xaxes(title_text="proxy coordinate 1", range=[-1.3, 1.3], row=1, col=1)
    fig.update_yaxes(title_text="proxy coordinate 2", range=[-1.3, 1.3], row=1, col=1)
    fig.update_yaxes(title_text="Σγ·[flipped] / Σγ", range=[0, 0.75], row=1, col=2)
    fig.update_layout(
        title_text=f"noise {noise:.0%}, B = {budget}, K = {K}, σ = {sigma:g}",
        height=430,
        legend={"orientation": "h", "y": -0.18},
    )
    return fig


@functools.lru_cache(maxsize=128)
def _study(noise, budget, K, sigma, trials, seed):
    X, y, _, _ = digits_split(seed=seed)
    return alignment_study(
        X, y, noise=noise, budget=budget, K=K, sigma=sigma, trials=trials, seed=seed
    )


# The live values of the notebook-2 widget's budget, K and σ controls (a slider whose step is
# its grid spacing, and dropdowns): ``precompute_alignment`` runs every one-control move.
ALIGNMENT_CHOICES = {
    "budget": (10, 30, 50, 70, 90),
    "K": (1, 2, 4, 8, 16),
    "sigma": (0.0, 0.01, 0.05, 0.2, 1.0),
}


def precompute_alignment(
    noise: float = 0.4, budget: int = 30, K: int = 8, sigma: float = 0.2, trials: int = 2
) -> int:
    """Run (once, memoised) the studies of ``alignment_figure`` for every value of
    ``ALIGNMENT_CHOICES`` with the other settings at the given defaults, so that moving one
    control of the live widget only redraws. Returns the number of settings.

    See: book/coreset/02-label-noise.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    base = {
        "budget": check_int("budget", budget, 1, 300),
        "K": check_int("K", K, 1),
        "sigma": float(check_positive("sigma", sigma, allow_zero=True)),
    }
    trials = check_int("trials", trials, 1)
    settings = {tuple(base.values())}
    for key, values in ALIGNMENT_CHOICES.items():
        settings |= {tuple({**base, key: v}.values()) for v in values}
    for b, k, s in sorted(settings):
        _study(round(noise, 6), int(b), int(k), float(s), trials, 0)
    return len(settings)


def alignment_figure(
    noise: float, budget: int = 30, K: int = 8, sigma: float = 0.2, trials: int = 2
):
    """Gradient error, Hessian error and noisy share of the three methods (9 bar traces).

    See: book/coreset/02-label-noise.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    noise = check_range("noise", noise, 0.0, 1.0)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    st = _study(round(noise, 6), int(budget), int(K), float(sigma), int(trials), 0)
    panels = (
        ("grad", "gradient error E‖∇ℓ_S − ∇ℓ‖² / E‖∇ℓ‖²"),
        ("hess", "Hessian error ‖H_S − H‖_F / ‖H‖_F"),
        ("share", "weighted share mislabeled"),
    )
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in panels])
    for c, (key, _) in enumerate(panels, start=1):
        table = getattr(st, key)
        for m in METHODS:
            v = table[m]
            fig.add_trace(
                go.Bar(
                    x=[m],
                    y=[v.mean()],
                    error_y={"type": "data", "array": [v.std()]},
                    marker_color=COLOURS[m],
                    name=m,
                    showlegend=c == 1,
                ),
                1,
                c,
            )
    fig.update_yaxes(range=[0, 0.75], row=1, col=3)
    fig.update_layout(
        title_text=f"digits logistic regression, noise {noise:.0%}, B = {budget}, K = {K}, "
        f"σ = {sigma:g} ({trials} pools)",
        height=400,
        barmode="group",
    )
    return fig


# The live values of the notebook-3 widget's K and σ menus: ``precompute_training`` runs the
# posterior run of every one-control move (the other methods do not depend on K or σ).
TRAINING_CHOICES = {"K": (1, 4, 8), "sigma": (0.005, 0.05, 0.5)}


@contextlib.contextmanager
def _one_thread():
    """Tiny matrices: one torch / BLAS thread (threads only contend, badly under load)."""
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(threads)


def precompute_training(
    noise: float = 0.5, K: int = 4, sigma: float = 0.05, steps: int = 200
) -> int:
    """Run (once, memoised by ``digits_run``) the seed-0 posterior runs of ``training_figure``
    for every value of ``TRAINING_CHOICES`` with the other settings at the given defaults, so
    that moving one control of the live widget only redraws. Returns the number of settings.

    See: book/coreset/03-training-under-noise.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    K = check_int("K", K, 1)
    sigma = float(check_positive("sigma", sigma, allow_zero=True))
    steps = check_int("steps", steps, 1)
    settings = {(K, sigma)} | {(k, sigma) for k in TRAINING_CHOICES["K"]}
    settings |= {(K, s) for s in TRAINING_CHOICES["sigma"]}
    with _one_thread():
        for k, s in sorted(settings):
            digits_run("posterior", noise, 0, steps=steps, K=k, sigma=s)
    return len(settings)


def training_figure(noise: float, K: int = 4, sigma: float = 0.05, steps: int = 200):
    """Clean test accuracy and coreset noisy share against step, seed 0 (7 traces).

    See: book/coreset/03-training-under-noise.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("clean test accuracy", "weighted share mislabeled")
    )
    with _one_thread():
        runs = {
            m: digits_run(m, noise, 0, steps=steps, K=K, sigma=sigma) for m in (*METHODS, "full")
        }
    for m, h in runs.items():
        fig.add_trace(go.Scatter(x=h.steps, y=h.test_acc, name=m, line={"color": COLOURS[m]}), 1, 1)
        if m != "full":
            fig.add_trace(
                go.Scatter(
                    x=h.steps,
                    y=h.noisy_share,
                    name=m,
                    line={"color": COLOURS[m]},
                    showlegend=False,
                ),
                1,
                2,
            )
    fig.update_xaxes(title_text="SGD step")
    fig.update_yaxes(range=[0.3, 1.0], row=1, col=1)
    fig.update_yaxes(range=[0.0, 0.7], row=1, col=2)
    fig.update_layout(
        title_text=f"digits MLP with BatchNorm, noise {noise:.0%}, K = {K}, σ = {sigma:g}",
        height=400,
    )
    return fig
