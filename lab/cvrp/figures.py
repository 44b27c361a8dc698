"""Figures of the cvrp chapter (plotly, for ``lab.core.explore``).

See: book/cvrp/01-same-customers-different-problem.ipynb, book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.style import PALETTE

MODEL_COLOURS = {
    "PyVRP": "#222222",
    "fixed C = 30": PALETTE[0],
    "VCT": PALETTE[1],
    "VCT + MEM": PALETTE[2],
    "fixed C = 10": PALETTE[3],
    "fixed C = 200": PALETTE[4 % len(PALETTE)],
}

#: Display label of every shipped checkpoint name.
LABELS = {
    "cvrp20_fixed10": "fixed C = 10",
    "cvrp20_fixed30": "fixed C = 30",
    "cvrp20_fixed200": "fixed C = 200",
    "cvrp20_vct": "VCT",
    "cvrp20_vct_mem3": "VCT + MEM",
}


def route_panels(xy, demand, panels: Sequence[tuple], title: str = ""):
    """Route maps side by side; each panel is ``(name, routes, subtitle)``.

    Three traces per panel (route lines, customers coloured by route, depot), so every
    capacity draws the same number of traces.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    xy = np.asarray(xy, dtype=float)
    q = np.asarray(demand, dtype=float)
    k = len(panels)
    fig = make_subplots(
        rows=1,
        cols=k,
        subplot_titles=[f"{p[0]}<br>{p[2]}" for p in panels],
        horizontal_spacing=0.03,
    )
    for j, (name, routes, _) in enumerate(panels, start=1):
        lx, ly, colour = [], [], np.zeros(len(xy))
        for r_i, r in enumerate(routes):
            path = [0, *r, 0]
            lx += [*xy[path, 0].tolist(), None]
            ly += [*xy[path, 1].tolist(), None]
            colour[list(r)] = r_i
        c = MODEL_COLOURS.get(name, PALETTE[3])
        fig.add_trace(
            go.Scatter(
                x=lx,
                y=ly,
                mode="lines",
                line={"color": c, "width": 1.5},
                name=name,
                showlegend=False,
                hoverinfo="skip",
            ),
            1,
            j,
        )
        fig.add_trace(
            go.Scatter(
                x=xy[1:, 0],
                y=xy[1:, 1],
                mode="markers",
                showlegend=False,
                marker={
                    "size": 4 + q[1:],
                    "color": colour[1:],
                    "colorscale": "Turbo",
                    "cmin": 0,
                    "cmax": max(1, len(routes) - 1),
                    "line": {"width": 0.5},
                },
                text=[f"customer {i}, q = {int(q[i])}" for i in range(1, len(xy))],
                hoverinfo="text",
            ),
            1,
            j,
        )
        fig.add_trace(
            go.Scatter(
                x=xy[:1, 0],
                y=xy[:1, 1],
                mode="markers",
                showlegend=False,
                marker={"symbol": "square", "size": 11, "color": "black"},
                name="depot",
                hoverinfo="name",
            ),
            1,
            j,
        )
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


def gap_figure(
    table: dict, train_capacity: float | None = 30.0, title: str = "", spread: dict | None = None
):
    """Gap to PyVRP (%) against capacity on a log axis, one line per model.

    ``spread`` (optional) maps a model label to ``(low, high)`` per capacity, drawn as error
    bars (e.g. the range over training seeds).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import plotly.graph_objects as go

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


MODEL_NAMES = {
    "fixed C = 30": "cvrp20_fixed30",
    "VCT": "cvrp20_vct",
    "VCT + MEM": "cvrp20_vct_mem3",
}


def shipped_models() -> dict:
    """The three shipped checkpoints under their display names (loaded once).

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    return {k: _load(v) for k, v in MODEL_NAMES.items()}


def _load(name):
    if name not in _CACHE:
        from .store import load_checkpoint

        _CACHE[name] = load_checkpoint(name)
    return _CACHE[name]


_CACHE: dict = {}


def solve_all(capacity: float, seed: int = 0, n: int = 20, seconds: float = 0.1) -> dict:
    """One instance (``seed``) at ``capacity``: PyVRP's and each shipped model's routes.

    Returns ``{"xy", "demand", "solutions": {name: (routes, length)}}``; every solution is
    checked feasible.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    key = (float(capacity), int(seed), int(n), float(seconds))
    if key in _SOLVED:
        return _SOLVED[key]
    from .problems import generate_cvrp
    from .solvers import route_feasible, solve_pyvrp, tour_length

    b = generate_cvrp(1, n, capacity, seed=seed)
    xy, q = b.xy[0].double().numpy(), b.demand[0].double().numpy()
    sols = {"PyVRP": solve_pyvrp(xy, q, capacity, seconds)}
    from .fast import decode_routes

    for name, m in shipped_models().items():
        r = decode_routes(m, b)[0]
        sols[name] = (r, tour_length(r, xy))
    for name, (r, _) in sols.items():
        if not route_feasible(r, q, capacity):  # pragma: no cover - a bug, not a result
            raise RuntimeError(f"{name} returned an infeasible solution")
    _SOLVED[key] = {"xy": xy, "demand": q, "solutions": sols}
    return _SOLVED[key]


_SOLVED: dict = {}


def tightness_figure(capacity: int = 30, seed: int = 0):
    """The widget: routes of PyVRP and of the three models at one capacity, gaps in titles.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    s = solve_all(capacity, seed)
    ref = s["solutions"]["PyVRP"][1]
    panels = []
    for name, (r, L) in s["solutions"].items():
        sub = f"length {L:.3f}<br>{len(r)} routes"
        if name != "PyVRP":
            sub = f"gap {100 * (L / ref - 1):+.1f}%<br>{len(r)} routes"
        panels.append((name, r, sub))
    q = s["demand"]
    return route_panels(
        s["xy"],
        q,
        panels,
        title=f"C = {capacity} (total demand {int(q.sum())}; "
        f"at least {int(np.ceil(q.sum() / capacity))} routes)",
    )


def expert_figure(capacity: int, table: dict):
    """Bars: each expert decoder forced on the instances of one capacity (from
    ``expert_table``), as % longer than the best expert; the routed expert is outlined.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import plotly.graph_objects as go

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


def expert_table(model, capacities, instances: int = 32, n: int = 20, seed: int = 4321) -> dict:
    """Forced-expert lengths of ``model`` per capacity (for ``expert_figure``).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    from .experiments import expert_lengths
    from .problems import generate_cvrp

    edges = model.config["edges"]
    bounds = [0, *edges, np.inf]
    labels = [f"C in ({bounds[k]:g}, {bounds[k + 1]:g}]" for k in range(len(edges) + 1)]
    out = {
        "capacities": list(capacities),
        "labels": labels,
        "relative": [],
        "routed": [],
        "mean": [],
    }
    for c in capacities:
        L = expert_lengths(model, generate_cvrp(instances, n, c, seed=seed)).mean(axis=1)
        out["mean"].append(L)
        out["relative"].append(100 * (L / L.min() - 1))
        out["routed"].append(int(model.expert_of(__import__("torch").tensor([float(c)]))[0]))
    out["relative"] = np.array(out["relative"])
    return out
