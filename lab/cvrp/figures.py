"""Figures of the cvrp chapter (plotly, for ``lab.core.explore``): they only draw.

What they draw is computed in ``experiments.py`` (PyVRP solves, checkpoints, forced experts).

See: book/cvrp/01-same-customers-different-problem.ipynb, book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab.core.checks import check_array, check_positive
from lab.core.style import PALETTE

__all__ = [
    "MODEL_COLOURS",
    "LABELS",
    "route_panels",
    "gap_figure",
    "tightness_figure",
    "expert_figure",
]

MODEL_COLOURS = {
    "PyVRP": "#222222",
    "fixed C = 30": PALETTE[0],
    "VCT": PALETTE[1],
    "VCT + MEM": PALETTE[2],
    "fixed C = 10": PALETTE[3],
    "fixed C = 200": PALETTE[4 % len(PALETTE)],
    "fixed C = 50": PALETTE[5 % len(PALETTE)],
}

#: Display label of every shipped checkpoint name.
LABELS = {
    "cvrp20_fixed10": "fixed C = 10",
    "cvrp20_fixed30": "fixed C = 30",
    "cvrp20_fixed50": "fixed C = 50",
    "cvrp20_fixed200": "fixed C = 200",
    "cvrp20_vct": "VCT",
    "cvrp20_vct_mem3": "VCT + MEM",
}


def _check_table(name: str, table, keys) -> None:
    if not isinstance(table, dict) or not set(keys) <= set(table):
        raise TypeError(
            f"{name} must be a dict with keys {list(keys)} (got {type(table).__name__})"
        )


def route_panels(xy, demand, panels: Sequence[tuple], title: str = ""):
    """Route maps side by side; each panel is ``(name, routes, subtitle)``.

    Three traces per panel (route lines, customers coloured by route, depot), so every
    capacity draws the same number of traces.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    from plotly.subplots import make_subplots

    xy = check_array("xy", xy, ndim=2, shape=(None, 2))
    q = check_array("demand", demand, ndim=1, shape=(len(xy),))
    if not isinstance(panels, list | tuple):
        raise TypeError(
            f"panels must be a list of (name, routes, subtitle) (got {type(panels).__name__})"
        )
    k = len(panels)
    fig = make_subplots(
        rows=1,
        cols=k,
        subplot_titles=[f"{p[0]}<br>{p[2]}" for p in panels],
        horizontal_spacing=0.03,
    )
    for j, (name, routes, _) in enumerate(panels, start=1):
        for trace in _panel_traces(xy, q, name, routes):
            fig.add_trace(trace, 1, j)
        fig.update_xaxes(range=[-0.03, 1.03], showticklabels=False, row=1, col=j)
        fig.update_yaxes(
            range=[-0.03, 1.03],
            showticklabels=False,
            scaleanchor=f"x{j}" if j > 1 else "x",
            row=1,
            col=j,
        )
    # three-line panel titles (name, gap or length, routes) at a size that fits four panels
    # in the book's text column without running into each other
    fig.update_annotations(font_size=12)
    fig.update_layout(title=title, height=380, margin={"t": 110, "b": 20, "l": 20, "r": 20})
    return fig


def _panel_traces(xy, q, name: str, routes) -> list:
    """One route map's three traces: the route lines, the customers coloured by route and
    sized by demand, the depot."""
    import plotly.graph_objects as go

    lx, ly, colour = [], [], np.zeros(len(xy))
    for r_i, r in enumerate(routes):
        path = [0, *r, 0]
        lx += [*xy[path, 0].tolist(), None]
        ly += [*xy[path, 1].tolist(), None]
        colour[list(r)] = r_i
    c = MODEL_COLOURS.get(name, PALETTE[3])
    lines = go.Scatter(
        x=lx,
        y=ly,
        mode="lines",
        line={"color": c, "width": 1.5},
        name=name,
        showlegend=False,
        hoverinfo="skip",
    )
    marker = {
        "size": 4 + q[1:],
        "color": colour[1:],
        "colorscale": "Turbo",
        "cmin": 0,
        "cmax": max(1, len(routes) - 1),
        "line": {"width": 0.5},
    }
    customers = go.Scatter(
        x=xy[1:, 0],
        y=xy[1:, 1],
        mode="markers",
        showlegend=False,
        marker=marker,
        text=[f"customer {i}, q = {int(q[i])}" for i in range(1, len(xy))],
        hoverinfo="text",
    )
    depot = go.Scatter(
        x=xy[:1, 0],
        y=xy[:1, 1],
        mode="markers",
        showlegend=False,
        marker={"symbol": "square", "size": 11, "color": "black"},
        name="depot",
        hoverinfo="name",
    )
    return [lines, customers, depot]


def gap_figure(
    table: dict, train_capacity: float | None = 30.0, title: str = "", spread: dict | None = None
):
    """Gap to PyVRP (%) against capacity on a log axis, one line per model.

    ``spread`` (optional) maps a model label to ``(low, high)`` per capacity, drawn as error
    bars (e.g. the range over training seeds).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import plotly.graph_objects as go

    _check_table("table", table, ("capacities", "gaps"))
    caps = table["capacities"]
    fig = go.Figure()
    for name, g in table["gaps"].items():
        fig.add_trace(
            go.Scatter(
                x=caps,
                y=g,
                mode="lines+markers",
                name=name,
                line={"color": MODEL_COLOURS.get(name)},
                error_y=None
                if not spread or name not in spread
                else {
                    "type": "data",
                    "symmetric": False,
                    "array": np.asarray(spread[name][1]) - np.asarray(g),
                    "arrayminus": np.asarray(g) - np.asarray(spread[name][0]),
                },
            )
        )
    if train_capacity is not None:
        fig.add_vline(x=train_capacity, line_dash="dot", line_color=MODEL_COLOURS["fixed C = 30"])
        title = (
            f"{title}<br><sup>dotted: the fixed model's training capacity "
            f"C = {train_capacity:g}</sup>"
        )
    lo, hi = np.log10(min(caps) / 1.25), np.log10(max(caps) * 1.25)
    # explicit range: autorange on a log axis reads the vline's x as a log10 value
    fig.update_xaxes(type="log", title="capacity C (log scale)", tickvals=caps, range=[lo, hi])
    fig.update_yaxes(title="gap to PyVRP (%)", rangemode="tozero")
    fig.update_layout(title=title, height=380)
    return fig


def tightness_figure(solved: dict, capacity: float):
    """The widget: routes of PyVRP and of the three models at one capacity, gaps in titles.

    ``solved`` is ``experiments.solve_all(capacity, seed)`` (this function only draws).

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    _check_table("solved", solved, ("xy", "demand", "solutions"))
    capacity = check_positive("capacity", capacity)
    ref = solved["solutions"]["PyVRP"][1]
    panels = []
    for name, (r, L) in solved["solutions"].items():
        sub = f"length {L:.3f}<br>{len(r)} routes"
        if name != "PyVRP":
            sub = f"gap {100 * (L / ref - 1):+.1f}%<br>{len(r)} routes"
        panels.append((name, r, sub))
    q = solved["demand"]
    return route_panels(
        solved["xy"],
        q,
        panels,
        title=f"C = {capacity:g} (total demand {int(q.sum())}; "
        f"at least {int(np.ceil(q.sum() / capacity))} routes)",
    )


def expert_figure(capacity: int, table: dict):
    """Bars: each expert forced on the instances of one capacity (from
    ``expert_table``), as % longer than the best expert; the routed expert is outlined.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import plotly.graph_objects as go

    _check_table("table", table, ("capacities", "relative", "routed", "labels"))
    if capacity not in table["capacities"]:
        raise ValueError(f"capacity must be one of {table['capacities']} (got {capacity!r})")
    j = table["capacities"].index(capacity)
    rel = table["relative"][j]
    routed = table["routed"][j]
    colours = [PALETTE[2] if k == routed else "#bbbbbb" for k in range(len(rel))]
    names = [f"expert {k + 1}<br>{lab}" for k, lab in enumerate(table["labels"])]
    fig = go.Figure(
        go.Bar(
            x=names,
            y=rel,
            marker_color=colours,
            text=[f"{v:.2f}%" for v in rel],
            textposition="outside",
            showlegend=False,
        )
    )
    fig.update_yaxes(
        title="mean length above the best expert (%)",
        range=[0, max(1.0, float(np.max(table["relative"])) * 1.2)],
    )
    fig.update_layout(title=f"C = {capacity}: routed to expert {routed + 1} (green)", height=360)
    return fig
