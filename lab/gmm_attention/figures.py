"""Figures of the gmm_attention chapter (plotly for ``lab.core.explore``, matplotlib panels).

Kept out of the notebooks so each notebook cell stays a sentence of code, and out of the
reference kernels so those read like the model.

See: book/gmm_attention/01-heads-find-centroids.ipynb,
book/gmm_attention/02-temperature-and-baselines.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_array, check_int

__all__ = [
    "HEAD_COLOURS",
    "plane_basis",
    "training_figure",
    "landscape_axes",
    "symmetric_coordinates",
    "temperature_figure",
]

HEAD_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7")
CLUSTER_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#F0E442")


def plane_basis(means: np.ndarray, path: np.ndarray) -> np.ndarray:
    """An orthonormal pair ``(e1, e2)`` for drawing a run in the plane.

    ``e1`` points along ``mu_1 - mu_2``; ``e2`` along the part of the centroids' midpoint
    orthogonal to ``e1`` when the centroids are not centred, else along the largest
    off-axis excursion of the heads (so that the rotation onto the axis is visible).
    """
    means = check_array("means", means, ndim=2)
    if means.shape[0] < 2:
        raise ValueError(f"means must have at least 2 rows (got shape {means.shape})")
    path = check_array("path", path, min_size=1)
    if path.shape[-1] != means.shape[1]:
        raise ValueError(f"path must end in {means.shape[1]} coordinates (got {path.shape})")
    e1 = means[0] - means[1]
    e1 = e1 / np.linalg.norm(e1)
    mid = means.mean(axis=0)
    off = mid - (mid @ e1) * e1
    if np.linalg.norm(off) < 1e-8:
        P = path.reshape(-1, path.shape[-1])
        P = P - np.outer(P @ e1, e1)
        _, _, vt = np.linalg.svd(P, full_matrices=False)
        off = vt[0]
        if np.linalg.norm(off - (off @ e1) * e1) < 1e-8:  # degenerate: any orthogonal axis
            off = np.eye(len(e1))[np.argmin(np.abs(e1))]
            off = off - (off @ e1) * e1
    e2 = off / np.linalg.norm(off)
    return np.stack([e1, e2])


def training_figure(view, step: int = 300):
    """Two panels of one training run at ``step``: the heads' paths in the plane of the
    centroids (over unlabeled samples), and alignment / head norms against the step.

    ``view`` is ``(run, X, z)`` of :func:`lab.gmm_attention.experiments.training_view`. The
    number of traces never changes (for the static twin over ``step``).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    from plotly.subplots import make_subplots

    if not (isinstance(view, tuple) and len(view) == 3 and hasattr(view[0], "path")):
        raise TypeError(
            "view must be (run, X, z) of lab.gmm_attention.experiments.training_view "
            f"(got {type(view).__name__})"
        )
    run, X, z = view
    step = check_int("step", step, 0, int(run.steps[-1]))
    means = run.means
    B = plane_basis(means, run.path)
    Xp, Mp = X @ B.T, means @ B.T
    Pp = run.path @ B.T  # (R, H, 2)
    k = int(np.searchsorted(run.steps, step))

    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        subplot_titles=("heads in the plane of the centroids", "alignment and head norms"),
        horizontal_spacing=0.12,
    )
    _plane_panel(fig, Xp, z, Mp, Pp, k)
    _history_panel(fig, run, step)
    lim = 1.15 * max(np.abs(Xp).max(), np.abs(Pp).max())
    fig.update_xaxes(title_text="coordinate along μ₁ − μ₂", range=[-lim, lim], row=1, col=1)
    fig.update_yaxes(title_text="second coordinate", range=[-lim, lim], row=1, col=1)
    fig.update_xaxes(title_text="SGD step", range=[0, 300], row=1, col=2)
    fig.update_yaxes(title_text="cosine / norm ratio", range=[-1.05, 1.25], row=1, col=2)
    mu_norm = float(np.mean(np.linalg.norm(means, axis=1)))
    fig.update_layout(
        title_text=(
            f"step {step}: alignment {run.alignment[k]:.3f}, "
            f"head norms {', '.join(f'{v:.2f}' for v in run.norms[k])} (‖μ‖ = {mu_norm:.2f})"
        ),
        height=470,
        legend=dict(orientation="h", y=-0.2, font=dict(size=10)),
    )
    return fig


def _plane_panel(fig, Xp, z, Mp, Pp, k):
    """Left panel of :func:`training_figure`: samples, centroids, head paths up to record k."""
    import plotly.graph_objects as go

    for c in range(Mp.shape[0]):
        sel = z == c
        fig.add_trace(
            go.Scatter(
                x=Xp[sel, 0],
                y=Xp[sel, 1],
                mode="markers",
                marker=dict(size=4, color=CLUSTER_COLOURS[c], opacity=0.35),
                name=f"samples of component {c + 1} (labels not used)",
                hoverinfo="skip",
            ),
            1,
            1,
        )
    fig.add_trace(
        go.Scatter(
            x=Mp[:, 0],
            y=Mp[:, 1],
            mode="markers",
            marker=dict(symbol="star", size=16, color="black"),
            name="true centroids μ",
        ),
        1,
        1,
    )
    for h in range(Pp.shape[1]):
        col = HEAD_COLOURS[h % len(HEAD_COLOURS)]
        fig.add_trace(
            go.Scatter(
                x=Pp[: k + 1, h, 0],
                y=Pp[: k + 1, h, 1],
                mode="lines",
                line=dict(color=col, width=2),
                name=f"path of θ{h + 1}",
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=[Pp[k, h, 0]],
                y=[Pp[k, h, 1]],
                mode="markers",
                marker=dict(size=13, color=col, line=dict(color="white", width=1.5)),
                name=f"head θ{h + 1}",
            ),
            1,
            1,
        )


def _history_panel(fig, run, step):
    """Right panel of :func:`training_figure`: alignment and head norms against the step."""
    import plotly.graph_objects as go

    means = run.means
    s = run.steps
    fig.add_trace(
        go.Scatter(x=s, y=run.alignment, mode="lines", line=dict(color="black"), name="alignment"),
        1,
        2,
    )
    mu_norm = float(np.mean(np.linalg.norm(means, axis=1)))
    for h in range(run.norms.shape[1]):
        fig.add_trace(
            go.Scatter(
                x=s,
                y=run.norms[:, h] / mu_norm,
                mode="lines",
                line=dict(color=HEAD_COLOURS[h % len(HEAD_COLOURS)], dash="dot"),
                name=f"‖θ{h + 1}‖ / mean ‖μ‖",
            ),
            1,
            2,
        )
    fig.add_trace(
        go.Scatter(
            x=[step, step],
            y=[-1.05, 1.25],
            mode="lines",
            line=dict(color="#888888", width=1),
            name="current step",
            showlegend=False,
        ),
        1,
        2,
    )


def symmetric_coordinates(path: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(t, phi)`` of each recorded pair of heads: ``t = ||theta_1 - theta_2|| / 2`` and the
    angle between ``theta_1 - theta_2`` and ``mu`` folded into ``[0, pi/2]`` (head labels
    are interchangeable).

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    path = check_array("path", path, ndim=3)
    mu = check_array("mu", mu, shape=(path.shape[2],))
    if path.shape[1] < 2:
        raise ValueError(f"path must hold at least 2 heads per record (got shape {path.shape})")
    diff = 0.5 * (path[:, 0] - path[:, 1])
    t = np.linalg.norm(diff, axis=1)
    cos = np.abs(diff @ mu) / np.maximum(t * np.linalg.norm(mu), 1e-300)
    return t, np.arccos(np.clip(cos, 0.0, 1.0))


def landscape_axes(ax, t, phi, R):
    """Draw the exact risk ``R(t, phi)`` (eq. M5; :func:`lab.gmm_attention.experiments.landscape`)
    as a heatmap on a matplotlib axis.

    See: book/gmm_attention/01-heads-find-centroids.ipynb
    """
    if not hasattr(ax, "pcolormesh"):
        raise TypeError(f"ax must be a matplotlib Axes (got {type(ax).__name__})")
    im = ax.pcolormesh(t, np.degrees(phi), R, shading="auto", cmap="viridis")
    ax.contour(t, np.degrees(phi), R, levels=12, colors="white", linewidths=0.5, alpha=0.6)
    ax.grid(False)
    ax.figure.colorbar(im, ax=ax, label="population risk R(t, φ)")
    ax.set(xlabel="head norm t", ylabel="angle φ to μ (degrees)")
    return ax


def temperature_figure(view: dict):
    """Two panels: one sequence before and after ``n_layers`` identity-attention layers at
    inverse temperature ``beta`` (plane of its first two centroids), and the in-context error
    against ``beta`` with the current ``beta`` marked. ``view`` is
    :func:`lab.gmm_attention.experiments.temperature_view`.

    See: book/gmm_attention/02-temperature-and-baselines.ipynb
    """
    from plotly.subplots import make_subplots

    if not isinstance(view, dict) or "Y0" not in view:
        raise TypeError("view must be the dict of lab.gmm_attention.experiments.temperature_view")
    beta, n_layers, K = view["beta"], view["n_layers"], view["K"]
    X0, z0, Y0 = view["X0"], view["z0"], view["Y0"]
    # plane of the first two centroid directions of sequence 0
    c = np.stack([X0[z0 == k].mean(axis=0) for k in range(2)])
    e1 = c[0] - c[1]
    e1 /= np.linalg.norm(e1)
    e2 = c[0] + c[1] - ((c[0] + c[1]) @ e1) * e1
    if np.linalg.norm(e2) < 1e-6 or K == 2:
        _, _, vt = np.linalg.svd(X0 - np.outer(X0 @ e1, e1), full_matrices=False)
        e2 = vt[0]
    e2 /= np.linalg.norm(e2)
    Bm = np.stack([e1, e2])
    Xp, Yp = X0 @ Bm.T, Y0 @ Bm.T
    betas, errs, raw, err_now = view["betas"], view["errors"], view["raw"], view["error"]

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("one sequence: tokens → outputs", "error to own in-context centroid"),
        horizontal_spacing=0.12,
    )
    _sequence_panel(fig, Xp, Yp, z0, K)
    _curve_panel(fig, betas, errs, raw, beta, err_now)
    lim = 1.1 * np.abs(Xp).max()
    fig.update_xaxes(range=[-lim, lim], title_text="along c₁ − c₂", row=1, col=1)
    fig.update_yaxes(range=[-lim, lim], title_text="second direction", row=1, col=1)
    fig.update_xaxes(type="log", title_text="inverse temperature β", row=1, col=2)
    fig.update_yaxes(
        type="log",
        title_text="mean squared distance",
        range=[np.log10(0.8 * min(errs.min(), err_now)), np.log10(1.3 * max(errs.max(), raw))],
        row=1,
        col=2,
    )
    fig.update_layout(
        title_text=f"β = {beta:.3g}, {n_layers} layer(s): error {err_now:.2f} (raw tokens {raw:.2f})",
        height=450,
        legend=dict(orientation="h", y=-0.2, font=dict(size=10)),
    )
    return fig


def _sequence_panel(fig, Xp, Yp, z0, K):
    """Left panel of :func:`temperature_figure`: tokens and outputs of one sequence."""
    import plotly.graph_objects as go

    for k in range(5):
        sel = z0 == k
        col = CLUSTER_COLOURS[k]
        fig.add_trace(
            go.Scatter(
                x=Xp[sel, 0],
                y=Xp[sel, 1],
                mode="markers",
                marker=dict(size=5, color=col, opacity=0.3),
                name=f"tokens, cluster {k + 1}",
                showlegend=k < K,
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=Yp[sel, 0],
                y=Yp[sel, 1],
                mode="markers",
                marker=dict(size=7, color=col, symbol="x"),
                name=f"outputs, cluster {k + 1}",
                showlegend=k < K,
            ),
            1,
            1,
        )


def _curve_panel(fig, betas, errs, raw, beta, err_now):
    """Right panel of :func:`temperature_figure`: the error curve and the current β."""
    import plotly.graph_objects as go

    fig.add_trace(
        go.Scatter(
            x=betas, y=errs, mode="lines+markers", marker=dict(size=4), name="identity attention"
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=[betas[0], betas[-1]],
            y=[raw, raw],
            mode="lines",
            line=dict(dash="dash", color="#888888"),
            name="raw tokens",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=[max(beta, 0.01)],
            y=[err_now],
            mode="markers",
            marker=dict(size=13, color="#D55E00"),
            name="current β",
        ),
        1,
        2,
    )
