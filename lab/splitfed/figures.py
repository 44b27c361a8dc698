"""Plotly figure builders for the splitfed notebooks' widgets (constant trace counts).

See: book/splitfed/index.md
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "spsa_figure",
    "tau_figure",
    "saturation_figure",
    "cut_heatmap",
    "straggler_figure",
    "gantt_figure",
]

COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]


def _check_kind(name: str, value: Any, kind: type | tuple, what: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what} (got {type(value).__name__})")


def _nearest(values, v):
    values = np.asarray(values, dtype=float)
    return int(np.argmin(np.abs(np.log(values) - np.log(v))))


def spsa_figure(table: dict[str, Any], lam: float, d: int, directions: int):
    """Two panels: relative MSE of SPSA against ``d`` and relative bias against ``lam``.

    Parameters
    ----------
    table : dict
        Precomputed grids: ``d``, ``dirs``, ``mse[dirs, d]``, ``cos[dirs, d]``, ``lam``,
        ``bias32``, ``bias64`` (finite-difference errors), ``floor`` (round-off scale).
    lam, d, directions : float, int, int
        Current control values (the markers).

    Returns
    -------
    plotly.graph_objects.Figure

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _check_kind("table", table, dict, "a dict of precomputed grids (d, dirs, mse, ...)")
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("error against dimension", "finite-difference error against λ"),
    )
    dd, dirs = np.asarray(table["d"]), list(table["dirs"])
    j = dirs.index(directions) if directions in dirs else 0
    for k, nd in enumerate(dirs):
        fig.add_trace(
            go.Scatter(
                x=dd, y=table["mse"][k], mode="lines+markers", name=f"{nd} direction(s)",
                line=dict(color=COLORS[k], width=3 if k == j else 1),
                opacity=1.0 if k == j else 0.35,
            ),
            row=1, col=1,
        )  # fmt: skip
    i = _nearest(dd, d)
    fig.add_trace(
        go.Scatter(
            x=[dd[i]], y=[table["mse"][j][i]], mode="markers+text", name="selected d",
            marker=dict(size=13, color="black", symbol="circle-open"),
            text=[f"cos ≈ {table['cos'][j][i]:.2f}"], textposition="top left",
        ),
        row=1, col=1,
    )  # fmt: skip
    lams = np.asarray(table["lam"])
    fig.add_trace(
        go.Scatter(x=lams, y=table["bias32"], mode="lines+markers", name="float32",
                   line=dict(color=COLORS[4])),
        row=1, col=2,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=lams, y=table["bias64"], mode="lines+markers", name="float64",
                   line=dict(color=COLORS[5])),
        row=1, col=2,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=lams, y=table["floor"], mode="lines", name="ε₃₂·|f|/λ (round-off scale)",
                   line=dict(color="gray", dash="dot")),
        row=1, col=2,
    )  # fmt: skip
    k = _nearest(lams, lam)
    fig.add_trace(
        go.Scatter(x=[lams[k]], y=[table["bias32"][k]], mode="markers", name="selected λ",
                   marker=dict(size=13, color="black", symbol="circle-open")),
        row=1, col=2,
    )  # fmt: skip
    fig.update_xaxes(type="log", title_text="dimension d", row=1, col=1)
    fig.update_yaxes(type="log", title_text="E‖ĝ − ∇f‖² / ‖∇f‖²", row=1, col=1)
    fig.update_xaxes(type="log", title_text="perturbation λ", row=1, col=2)
    fig.update_yaxes(type="log", title_text="RMS ‖ĝ − (∇f·u)u‖ / ‖∇f‖", row=1, col=2)
    fig.update_layout(height=400, legend=dict(orientation="h", y=-0.25))
    return fig


def tau_figure(runs: dict[int, Any], tau: int, x: str = "round"):
    """Loss and accuracy against rounds for ``tau = 1`` and the selected ``tau``.

    Parameters
    ----------
    runs : dict
        ``tau -> History`` with evaluations.
    tau : int
        Selected ``tau``.
    x : {"round", "clock"}
        Horizontal axis: rounds or simulated time.

    Returns
    -------
    plotly.graph_objects.Figure

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _check_kind("runs", runs, dict, "a dict tau -> History")
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss", "test accuracy"))
    for k, t in enumerate(sorted(runs)):
        h = runs[t]
        r = np.asarray(h.eval_round)
        xs = r if x == "round" else np.asarray(h.clock)[r - 1]
        on = t in (1, tau)
        for col, key in ((1, "loss"), (2, "acc")):
            fig.add_trace(
                go.Scatter(
                    x=xs, y=getattr(h, key), mode="lines", name=f"τ = {t}",
                    line=dict(color=COLORS[k % len(COLORS)], width=3 if on else 1),
                    opacity=1.0 if on else 0.25, showlegend=col == 1,
                ),
                row=1, col=col,
            )  # fmt: skip
    label = "round t" if x == "round" else "simulated time (client forwards)"
    fig.update_xaxes(title_text=label)
    fig.update_yaxes(title_text="cross-entropy", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", row=1, col=2)
    fig.update_layout(height=380, title=f"MU-SplitFed τ = {tau} against vanilla SplitFed (τ = 1)")
    return fig


def saturation_figure(runs: dict[int, Any]):
    """Training loss against rounds at a fixed server step: one line per seed and ``tau``.

    Parameters
    ----------
    runs : dict
        ``tau -> {seed: History}`` (:func:`lab.splitfed.simulate_digits_seeds`).

    Returns
    -------
    plotly.graph_objects.Figure

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import plotly.graph_objects as go

    _check_kind("runs", runs, dict, "a dict tau -> {seed: History}")
    fig = go.Figure()
    for k, t in enumerate(sorted(runs)):
        _check_kind(f"runs[{t}]", runs[t], dict, "a dict seed -> History")
        for j, (seed, h) in enumerate(runs[t].items()):
            loss = np.asarray(h.loss, dtype=float)
            fig.add_trace(
                go.Scatter(
                    x=h.eval_round, y=np.where(np.isfinite(loss), loss, np.nan), mode="lines",
                    name=f"τ = {t}", legendgroup=str(t), showlegend=j == 0,
                    line=dict(color=COLORS[k % len(COLORS)], dash=["solid", "dash", "dot"][j % 3]),
                    hovertext=f"seed {seed}",
                )
            )  # fmt: skip
    fig.update_yaxes(type="log", title_text="training loss (log scale)")
    fig.update_xaxes(title_text="round t")
    fig.update_layout(height=380, title="A fixed server step η_s: τ = 8 against τ = 32, per seed")
    return fig


def cut_heatmap(cuts: list[int], taus: list[int], values: np.ndarray, title: str, fmt: str = ".2f"):
    """Heat map of a number over (cut, tau); blank where it is not finite.

    Parameters
    ----------
    cuts, taus : list of int
        Row and column labels.
    values : numpy.ndarray
        Shape ``[len(cuts), len(taus)]``.
    title : str
        Figure title.
    fmt : str
        Format of the cell labels.

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import plotly.graph_objects as go

    values = np.asarray(values, dtype=float)
    z = np.where(np.isfinite(values), values, np.nan)
    text = [[("—" if not np.isfinite(v) else format(v, fmt)) for v in row] for row in values]
    fig = go.Figure(
        go.Heatmap(
            z=z, x=[f"τ = {t}" for t in taus], y=[f"cut {c}" for c in cuts], text=text,
            texttemplate="%{text}", colorscale="Viridis",
        )
    )  # fmt: skip
    fig.update_layout(height=320, title=title)
    return fig


def straggler_figure(curves: dict[str, tuple], delay: float, target: float):
    """Loss against simulated time for a few methods at one straggler delay.

    Parameters
    ----------
    curves : dict
        ``label -> (time, loss)`` (the same labels for every delay).
    delay : float
        Mean delay shown in the title.
    target : float
        Loss target drawn as a line.

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import plotly.graph_objects as go

    _check_kind("curves", curves, dict, "a dict label -> (time, loss)")
    fig = go.Figure()
    for k, (label, (t, loss)) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=t, y=loss, mode="lines", name=label, line=dict(color=COLORS[k])))
    fig.add_hline(y=target, line=dict(color="gray", dash="dot"))
    fig.update_layout(
        height=380,
        title=f"mean straggler delay {delay:g} client forwards",
        xaxis_title="simulated time (client forwards)",
        yaxis_title="training loss",
    )
    return fig


GANTT_KINDS = [
    ("client", "delay", "#BBBBBB"),
    ("client", "compute", "#0072B2"),
    ("client", "wait δ", "#56B4E9"),
    ("server", "τ steps", "#D55E00"),
    ("server", "δ", "#E69F00"),
    ("server", "idle", "#EEEEEE"),
]


def gantt_figure(events: list, title: str = "", rounds: int | None = None):
    """Gantt chart of a gloo run: client delays / compute / waits and server steps per rank.

    Parameters
    ----------
    events : list
        ``(who, index, what, round, start, end)`` records (:func:`launch_local`'s ``events``).
    title : str
        Figure title.
    rounds : int, optional
        Show only the first ``rounds`` rounds.

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per kind of event (always the same number of traces).

    See: book/splitfed/03-stragglers-and-gloo.ipynb
    """
    import plotly.graph_objects as go

    _check_kind("events", events, (list, tuple), "a list of (who, index, what, round, start, end)")
    ev = [e for e in events if rounds is None or e[3] < rounds]
    fig = go.Figure()
    for who, what, color in GANTT_KINDS:
        sel = [e for e in ev if e[0] == who and e[2] == what]
        fig.add_trace(
            go.Bar(
                x=[1000 * (e[5] - e[4]) for e in sel],
                base=[1000 * e[4] for e in sel],
                y=["server" if who == "server" else f"client {e[1] + 1}" for e in sel],
                orientation="h", name=f"{who}: {what}", marker_color=color,
                hovertext=[f"round {e[3]}" for e in sel],
            )
        )  # fmt: skip
    fig.update_layout(
        barmode="overlay", height=330, title=title, xaxis_title="wall-clock (ms)",
        yaxis=dict(categoryorder="category descending"),
    )  # fmt: skip
    return fig
