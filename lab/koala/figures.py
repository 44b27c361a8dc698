"""Figures of the koala chapter (plotly for ``lab.core.explore``).

See: book/koala/01-kalman-view.ipynb, book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.style import PALETTE
from lab.koala.results import PATH_METHODS, QuadraticPaths, TrainRun

__all__ = ["COLOURS", "LABELS", "quadratic_figure", "training_figure"]

BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, YELLOW, BLACK = PALETTE
COLOURS = {
    "ekf": BLACK,
    "koalapp": VERMILLION,
    "koalapp_vanilla": ORANGE,
    "koalav": BLUE,
    "adam": GREEN,
    "sgd": PURPLE,
}
LABELS = {
    "ekf": "full EKF",
    "koalapp": "KOALA++",
    "koalapp_vanilla": "KOALA++ (vanilla)",
    "koalav": "KOALA-V",
    "adam": "Adam",
    "sgd": "SGD-momentum",
}


def quadratic_figure(paths: QuadraticPaths):
    """Two panels: the paths of EKF / KOALA++ / KOALA-V / Adam over the loss contours of a
    2-D noisy quadratic (``paths``, from `lab.koala.experiments.quadratic_paths`), and the
    noise-free loss per step.

    Always 9 traces (a contour, four paths, four loss curves), as the explore twin needs.

    See: book/koala/01-kalman-view.ipynb
    """
    from plotly.subplots import make_subplots

    if not isinstance(paths, QuadraticPaths):
        raise TypeError(
            f"paths must be a QuadraticPaths (experiments.quadratic_paths), got "
            f"{type(paths).__name__}"
        )
    lim = 3.3
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("paths over the loss contours", "noise-free loss (log)")
    )
    fig.add_trace(_contour(paths.problem, lim), row=1, col=1)
    for trace in _path_traces(paths):
        fig.add_trace(trace, row=1, col=1)
    for trace in _loss_traces(paths):
        fig.add_trace(trace, row=1, col=2)
    fig.update_xaxes(title_text="θ₁", range=[-lim, lim], row=1, col=1)
    fig.update_yaxes(title_text="θ₂", range=[-lim, lim], row=1, col=1)
    fig.update_xaxes(title_text="step k", row=1, col=2)
    fig.update_yaxes(title_text="½ θᵀAθ", type="log", row=1, col=2)
    fig.update_layout(
        title_text=f"condition number κ = {paths.kappa:.3g}, gradient noise = {paths.noise:.3g}",
        height=420,
        legend=dict(orientation="h", y=-0.18),
    )
    return fig


def _contour(prob, lim: float):
    import plotly.graph_objects as go

    grid = np.linspace(-lim, lim, 41)
    X, Y = np.meshgrid(grid, grid)
    Z = prob.mean_loss(np.stack([X.ravel(), Y.ravel()], 1)).reshape(X.shape)
    return go.Contour(
        x=grid,
        y=grid,
        z=np.log10(Z + 1e-6),
        showscale=False,
        contours_coloring="lines",
        ncontours=14,
        line_width=0.8,
        colorscale="Greys",
        hoverinfo="skip",
        name="log₁₀ loss",
    )


def _path_traces(paths: QuadraticPaths) -> list:
    import plotly.graph_objects as go

    out = []
    for m in PATH_METHODS:
        run = paths.runs[m]
        th = run["theta"] if run is not None else np.full((1, 2), np.nan)
        out.append(
            go.Scatter(
                x=th[:, 0],
                y=th[:, 1],
                mode="lines+markers",
                marker_size=4,
                line_color=COLOURS[m],
                name=LABELS[m],
                legendgroup=m,
            )
        )
    return out


def _loss_traces(paths: QuadraticPaths) -> list:
    import plotly.graph_objects as go

    k = np.arange(paths.steps + 1)
    out = []
    for m in PATH_METHODS:
        run = paths.runs[m]
        ml = run["mean_loss"] if run is not None else np.full(k.size, np.nan)
        out.append(
            go.Scatter(
                x=k,
                y=ml,
                mode="lines",
                line_color=COLOURS[m],
                name=LABELS[m],
                legendgroup=m,
                showlegend=False,
            )
        )
    return out


def training_figure(runs: dict[str, TrainRun], title: str = ""):
    """Train loss (log) and test accuracy per epoch for a dict ``name -> TrainRun``.

    Always ``2 * len(runs)`` traces.

    See: book/koala/02-training-digits.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not isinstance(runs, dict) or not all(isinstance(r, TrainRun) for r in runs.values()):
        raise TypeError(f"runs must be a dict name -> TrainRun (got {type(runs).__name__})")
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss (log)", "test accuracy"))
    for name, run in runs.items():
        ep = np.arange(len(run.train_loss))
        label = LABELS.get(name, name)
        colour = COLOURS.get(name, None)
        fig.add_trace(
            go.Scatter(x=ep, y=run.train_loss, name=label, line_color=colour, legendgroup=name),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=ep,
                y=run.test_acc,
                name=label,
                line_color=colour,
                legendgroup=name,
                showlegend=False,
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text="cross-entropy", type="log", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0.5, 1.0], row=1, col=2)
    fig.update_layout(title_text=title, height=400, legend=dict(orientation="h", y=-0.2))
    return fig
