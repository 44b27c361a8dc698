"""Figure builders for the OMiSO chapter (plotly for the widgets, matplotlib for static plots).

Each ``*_figure`` function draws a result of a driver of ``experiments.py`` (a widget is
``figures.f(experiments.g(...))``: the drivers are memoised, so moving a live control redraws
without re-simulating); it returns a plotly figure with the same number of traces for every
value of its static control. Nothing here simulates.
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_fields, check_int
from lab.omiso.settings import METHODS


def _check_result(name: str, d: object, kind: str, *keys: str) -> None:
    """``d`` is a driver's result: a dict holding ``keys``."""
    if not isinstance(d, dict) or any(k not in d for k in keys):
        raise TypeError(f"{name} must be {kind} (a dict with {', '.join(keys)}); got {d!r:.60}")


__all__ = [
    "COLORS",
    "LABELS",
    "array_map",
    "kappa_figure",
    "target_figure",
    "drift_figure",
]

COLORS = {"omiso": "#1f77b4", "static": "#2ca02c", "miso": "#ff7f0e", "random": "#7f7f7f"}
LABELS = {
    "omiso": "OMiSO (state-aware, online)",
    "static": "state-aware, static",
    "miso": "MiSO-like (state-agnostic, online)",
    "random": "random",
}


def array_map(ax, sim, dim: int = 0, pattern: int | None = None) -> None:
    """Draw the array (matplotlib): each electrode coloured by its effect ``beta_e[dim]``,
    candidate electrodes ringed, the electrodes of ``pattern`` starred.

    See: book/omiso/01-simulated-array.ipynb
    """
    check_fields(
        "sim", sim, "positions", "beta_field", "candidates", "patterns", kind="a UtahArraySim"
    )
    dim = check_int("dim", dim, 0, sim.beta_field.shape[1] - 1)
    pos = sim.positions
    m = float(np.abs(sim.beta_field[:, dim]).max())
    sc = ax.scatter(
        pos[:, 0], pos[:, 1], c=sim.beta_field[:, dim], cmap="RdBu_r", vmin=-m, vmax=m, s=60
    )
    cand = pos[sim.candidates]
    ax.scatter(cand[:, 0], cand[:, 1], facecolors="none", edgecolors="k", s=160, lw=1.5)
    if pattern is not None:
        e = sim.candidates[sim.patterns[pattern]]
        ax.scatter(pos[e, 0], pos[e, 1], marker="*", c="gold", edgecolors="k", s=260, zorder=3)
    ax.set(
        aspect="equal",
        xlabel="x (mm)",
        ylabel="y (mm)",
        title=f"effect on latent {dim} (true space)",
    )
    ax.figure.colorbar(sc, ax=ax, shrink=0.8, label=f"β[{dim}]")


def kappa_figure(d: dict, dim: int = 0):
    """Post- vs pre-stimulation state along latent ``dim`` for three patterns, with fitted
    lines, from :func:`lab.omiso.state_dependence`'s result ``d``: at ``kappa = 0`` every
    slope is the autonomous decay 0.6.

    See: book/omiso/01-simulated-array.ipynb
    """
    import plotly.graph_objects as go

    _check_result("d", d, "a state_dependence result", "z_pre", "z_post", "patterns", "kappa")
    kappa = d["kappa"]
    fig = go.Figure()
    cols = ["#1f77b4", "#d62728", "#2ca02c"]
    xs = np.linspace(-3, 3, 2)
    for i, u in enumerate(d["patterns"]):
        x, y = d["z_pre"][i, :, dim], d["z_post"][i, :, dim]
        slope, icpt = np.polyfit(x, y, 1)
        fig.add_scatter(
            x=x,
            y=y,
            mode="markers",
            marker=dict(color=cols[i], size=5, opacity=0.6),
            name=f"pattern {u}",
        )
        fig.add_scatter(
            x=xs,
            y=icpt + slope * xs,
            mode="lines",
            line=dict(color=cols[i]),
            name=f"fit, slope {slope:.2f}",
        )
    fig.update_layout(
        title=f"κ = {kappa:.2f}: the same stimulation lands differently from different states",
        xaxis_title=f"pre-stimulation z[{dim}] (true latent)",
        yaxis_title=f"post-stimulation z[{dim}]",
        xaxis_range=[-3.2, 3.2],
        yaxis_range=[-5, 5],
        height=430,
    )
    return fig


def target_figure(d: dict, n_show: int = 200):
    """The closed loop toward one target in the estimated latent plane, from
    :func:`lab.omiso.target_view`'s result ``d``: the first ``n_show`` post-stimulation states
    of OMiSO and MiSO and their running errors.

    See: book/omiso/02-inverting-the-model.ipynb
    """
    from plotly.subplots import make_subplots

    _check_result("d", d, "a target_view result", "targets", "methods", "z_post", "errors", "j")
    j, angle, radius = d["j"], d["angle"], d["radius"]
    tgt = d["targets"][j]
    n_show = int(max(1, min(n_show, d["errors"].shape[1])))
    fig = make_subplots(
        1, 2, column_widths=[0.5, 0.5], subplot_titles=("estimated latent plane", "running error")
    )
    for m_i, m in enumerate(d["methods"]):
        row = j * len(d["methods"]) + m_i
        z = d["z_post"][row, :n_show]
        fig.add_scatter(
            x=z[:, 0],
            y=z[:, 1],
            mode="markers",
            marker=dict(color=COLORS[m], size=5, opacity=0.55),
            name=LABELS[m],
            row=1,
            col=1,
        )
        e = d["errors"][row, :n_show]
        run = np.cumsum(e) / np.arange(1, n_show + 1)
        fig.add_scatter(
            x=np.arange(1, n_show + 1),
            y=run,
            mode="lines",
            line=dict(color=COLORS[m]),
            name=f"{m}: mean {run[-1]:.2f}",
            row=1,
            col=2,
        )
    fig.add_scatter(
        x=[tgt[0]],
        y=[tgt[1]],
        mode="markers",
        marker=dict(symbol="star", size=18, color="gold", line=dict(color="black", width=1)),
        name="target z*",
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text="ẑ₀", range=[-4, 4], row=1, col=1)
    fig.update_yaxes(title_text="ẑ₁", range=[-4, 4], row=1, col=1)
    fig.update_xaxes(title_text="closed-loop trial", row=1, col=2)
    fig.update_yaxes(title_text="mean ‖ẑ_post[K] − z*‖", range=[0, 3], row=1, col=2)
    fig.update_layout(title=f"target at {angle:.0f}°, radius {radius:.2f}", height=430)
    return fig


def drift_figure(d: dict):
    """Running mean error of the four methods at one drift level (mean over sessions), from
    :func:`lab.omiso.drift_curves`' result ``d``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import plotly.graph_objects as go

    _check_result("d", d, "a drift_curves result", "drift", "q_proc", "curves")
    fig = go.Figure()
    n = len(d["curves"][METHODS[0]])
    t = np.arange(1, n + 1)
    for m in METHODS:
        run = np.cumsum(d["curves"][m]) / t
        fig.add_scatter(
            x=t[::2],
            y=run[::2],
            mode="lines",
            line=dict(color=COLORS[m]),
            name=f"{LABELS[m]}: {run[-1]:.2f}",
        )
    fig.update_layout(
        title=f"drift {d['drift']:.3f} per trial, Q = {d['q_proc']:.0e}",
        xaxis_title="closed-loop trial",
        yaxis_title="running mean ‖ẑ_post[K] − z*‖",
        yaxis_range=[0, 3],
        height=430,
    )
    return fig
