"""Figure builders for the OMiSO chapter (plotly for the widgets, matplotlib for static plots).

Each ``*_figure`` function is a ``compute`` for :func:`lab.core.explore.explore`: it returns a
plotly figure with the same number of traces for every value of its static control. The
simulations behind them are the memoised drivers of ``experiments.py``, so moving a live
control redraws without re-simulating.
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_positive, check_real
from lab.omiso.array import UtahArraySim
from lab.omiso.experiments import (
    DRIFT_Q,
    DRIFTS,
    Q_VALUES,  # noqa: F401  (the drift widget's grid, read as figures.Q_VALUES)
    TARGET_ANGLES,
    drift_seeds,
    drift_sessions,
    omiso_drift_errors,
    state_dependence,
    target_sessions,
)
from lab.omiso.models import METHODS

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


def array_map(ax, sim: UtahArraySim, dim: int = 0, pattern: int | None = None) -> None:
    """Draw the array (matplotlib): each electrode coloured by its effect ``beta_e[dim]``,
    candidate electrodes ringed, the electrodes of ``pattern`` starred.

    See: book/omiso/01-simulated-array.ipynb
    """
    if not isinstance(sim, UtahArraySim):
        raise TypeError(f"sim must be a UtahArraySim (got {type(sim).__name__})")
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


def kappa_figure(kappa: float = 1.0, dim: int = 0, seed: int = 0):
    """Post- vs pre-stimulation state along latent ``dim`` for three patterns, with fitted
    lines: at ``kappa = 0`` every slope is the autonomous decay 0.6.

    See: book/omiso/01-simulated-array.ipynb
    """
    import plotly.graph_objects as go

    d = state_dependence(float(kappa), int(seed))
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


def target_figure(angle: float = 60.0, radius: float = 1.5, n_show: int = 200):
    """The closed loop toward a target at ``angle`` (degrees) and ``radius`` in the estimated
    latent plane: the first ``n_show`` post-stimulation states of OMiSO and MiSO and their
    running errors.

    See: book/omiso/02-inverting-the-model.ipynb
    """
    from plotly.subplots import make_subplots

    angles = tuple(sorted(set(TARGET_ANGLES) | {float(angle)}))
    d = target_sessions(round(float(radius), 3), angles)
    j = angles.index(float(angle))
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


def drift_figure(drift: float = 0.02, q_proc: float = 0.002):
    """Running mean error of the four methods at one drift level (mean over sessions).

    Static, MiSO and random do not use ``q_proc``: their rows come from the notebook's
    ``drift_sessions(DRIFT_Q)``, and a new ``q_proc`` reads OMiSO's sessions from
    :func:`precompute_drift_figure` (or, for a value it did not run, re-simulates OMiSO at this
    drift only).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import plotly.graph_objects as go

    drift = check_real("drift", drift)
    q_proc = check_positive("q_proc", q_proc, allow_zero=True)
    if not any(np.isclose(x, drift) for x in DRIFTS):
        raise ValueError(f"drift must be one of the simulated levels {list(DRIFTS)}, got {drift!r}")
    level = next((x for x in DRIFTS if np.isclose(x, drift)), None)
    d = drift_sessions(DRIFT_Q if level is not None else q_proc)
    fig = go.Figure()
    n = d["errors"].shape[1]
    t = np.arange(1, n + 1)
    for m in METHODS:
        idx = [i for i, r in enumerate(d["rows"]) if np.isclose(r[0], drift) and r[2] == m]
        if m == "omiso" and level is not None and q_proc != DRIFT_Q:
            # precompute_drift_figure's batched run, or (a value it did not run) OMiSO alone
            e = omiso_drift_errors(level, q_proc, drift_seeds()).mean(0)
        else:
            e = d["errors"][idx].mean(0)
        run = np.cumsum(e) / t
        fig.add_scatter(
            x=t[::2],
            y=run[::2],
            mode="lines",
            line=dict(color=COLORS[m]),
            name=f"{LABELS[m]}: {run[-1]:.2f}",
        )
    fig.update_layout(
        title=f"drift {drift:.3f} per trial, Q = {q_proc:.0e}",
        xaxis_title="closed-loop trial",
        yaxis_title="running mean ‖ẑ_post[K] − z*‖",
        yaxis_range=[0, 3],
        height=430,
    )
    return fig
