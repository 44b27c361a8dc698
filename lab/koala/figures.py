"""Figures of the koala chapter (plotly for ``lab.core.explore``).

See: book/koala/01-kalman-view.ipynb, book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.style import PALETTE
from lab.koala.results import PATH_METHODS, QuadraticPaths, TrainRun

__all__ = [
    "COLOURS",
    "LABELS",
    "covariance_figure",
    "digits_figure",
    "quadratic_figure",
    "tracking_figure",
    "training_figure",
]

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


# ---------------------------------------------------------------------------------------------
# static (matplotlib) figures of the notebooks
# ---------------------------------------------------------------------------------------------
def _ellipse(center: np.ndarray, cov: np.ndarray, scale: float) -> np.ndarray:
    """Points of the ellipse ``{center + scale * cov^(1/2) u : |u| = 1}`` (2 x 80)."""
    w, U = np.linalg.eigh(cov)
    t = np.linspace(0, 2 * np.pi, 80)
    circle = np.stack([np.cos(t), np.sin(t)])
    return center[:, None] + scale * U @ (np.sqrt(np.maximum(w, 0))[:, None] * circle)


def covariance_figure(problem, ekf: dict, koalav: dict, q: float, every: int = 5, upto: int = 30):
    """The EKF's and KOALA-V's paths on a 2-D quadratic (``problem``) with their predicted
    covariance ``P_hat_k`` drawn as an ellipse every ``every`` steps up to ``upto``: the EKF's
    ``P_k + Q I`` (``ekf``, `run_quadratic`'s "ekf" dict) and KOALA-V's ``(sigma_k + Q) I``.

    See: book/koala/01-kalman-view.ipynb
    """
    import matplotlib.pyplot as plt

    for name, run in (("ekf", ekf), ("koalav", koalav)):
        if not isinstance(run, dict) or "theta" not in run:
            raise TypeError(f"{name} must be run_quadratic's dict, got {type(run).__name__}")
    g = np.linspace(-3.3, 3.3, 121)
    X, Y = np.meshgrid(g, g)
    Z = problem.mean_loss(np.stack([X.ravel(), Y.ravel()], 1)).reshape(X.shape)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    eye = np.eye(2)
    panels = (
        (axes[0], ekf, "ekf", lambda k: ekf["P"][k] + q * eye),
        (axes[1], koalav, "koalav", lambda k: (koalav["sigma"][k] + q) * eye),
    )
    for ax, run, m, p_hat in panels:
        ax.contour(X, Y, np.log10(Z + 1e-6), levels=14, colors="0.75", linewidths=0.7)
        th = run["theta"]
        ax.plot(th[:, 0], th[:, 1], ".-", color=COLOURS[m], ms=3, label=LABELS[m])
        for k in range(0, upto + 1, every):
            e = _ellipse(th[k], p_hat(k), scale=0.6)
            ax.plot(e[0], e[1], color=COLOURS[m], lw=0.8, alpha=0.7)
        ax.set(title=f"{LABELS[m]}: path and P̂ₖ every {every} steps", xlabel="θ₁", ylabel="θ₂")
        ax.set(aspect="equal", xlim=(-3.3, 3.3), ylim=(-3.3, 3.3))
    fig.tight_layout()
    return fig


def tracking_figure(track: dict, replay: dict, methods=("koalapp", "koalav")):
    """Left: each method's distance from the EKF path over ``||theta_0||`` (``track[n][m]``,
    `tracking_error`); right: its angle to the EKF's ``P_hat_k H_k^T`` with the EKF's gradients
    replayed (``replay[n]``, `covariance_replay`); one line style per dimension ``n``.

    See: book/koala/01-kalman-view.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(track, dict) or not isinstance(replay, dict):
        raise TypeError("track and replay must be dicts keyed by the dimension n")
    styles = dict(zip(sorted(track), (":", "-", "--", "-."), strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for n in sorted(track):
        for m in methods:
            kw = dict(color=COLOURS[m], label=f"{LABELS[m]}, n = {n}")
            axes[0].plot(track[n][m], styles[n], **kw)
            axes[1].plot(replay[n]["angle_" + m], styles[n], **kw)
    axes[0].set(xlabel="step k", ylabel="‖θₖ − θₖ(EKF)‖ / ‖θ₀‖")
    axes[0].set_title("distance from the EKF path (κ = 100)")
    axes[1].set(xlabel="step k", ylabel="degrees")
    axes[1].set_title("angle to the EKF's P̂ₖHₖᵀ (replayed gradients)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def digits_figure(runs: dict[str, TrainRun], fixed_r: TrainRun, layers=(0, 2)):
    """Training loss, test accuracy and the effective step ``||dtheta|| / ||grad L||`` of the
    layers ``layers`` per epoch (KOALA++ with the online R and with R = 1, KOALA-V).

    See: book/koala/02-training-digits.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not isinstance(fixed_r, TrainRun):
        raise TypeError("runs must be a dict name -> TrainRun and fixed_r a TrainRun")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name, run in runs.items():
        axes[0].semilogy(run.train_loss, color=COLOURS[name], label=LABELS[name])
        axes[1].plot(run.test_acc, color=COLOURS[name], label=LABELS[name])
    names = ("W₁", "b₁", "W₂", "b₂")
    curves = (
        (runs["koalapp"], COLOURS["koalapp"], "KOALA++, EMA R"),
        (fixed_r, "0.4", "KOALA++, R = 1"),
        (runs["koalav"], COLOURS["koalav"], "KOALA-V, EMA R"),
    )
    for j, ls in zip(layers, ("-", "--"), strict=False):
        for run, colour, label in curves:
            ep = np.arange(1, len(run.step_size) + 1)
            axes[2].semilogy(
                ep, run.step_size[:, j], ls, color=colour, label=f"{label}, {names[j]}"
            )
    axes[0].set(xlabel="epoch", ylabel="cross-entropy (train)", title="training loss")
    axes[1].set(xlabel="epoch", ylabel="accuracy", title="test accuracy", ylim=(0.6, 1.0))
    axes[2].set(xlabel="epoch", ylabel="‖Δθ‖ / ‖∇L‖ per layer", title="effective step size")
    axes[0].legend()
    axes[2].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
