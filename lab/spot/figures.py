"""Plotly figure builders for the ``spot`` chapter's widgets.

See: book/spot/01-tree-policies.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_instance, check_int

from .mdp import TabularMDP, check_mdp
from .tree import Tree

__all__ = [
    "action_symbols",
    "policy_figure",
    "slip_figure",
    "spot_figure",
    "bnb_trace_figure",
]

_ARROWS = {"left": "←", "down": "↓", "right": "→", "up": "↑"}
_PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def action_symbols(mdp: TabularMDP) -> list[str]:
    """Short labels of the actions (arrows for the lake, ``R0``.. and ``·`` for sysadmin).

    See: book/spot/01-tree-policies.ipynb
    """
    mdp = check_mdp(mdp)
    out = []
    for a in mdp.action_names:
        if a in _ARROWS:
            out.append(_ARROWS[a])
        elif a.startswith("reboot "):
            out.append("R" + a.split()[1])
        elif a == "wait":
            out.append("·")
        else:
            out.append(a)
    return out


def _tree_layout(tree: Tree, mdp: TabularMDP):
    """Positions and labels of the tree's effective nodes (no-split chains collapsed)."""
    sym = action_symbols(mdp)
    xs, ys, labels, ex, ey = [], [], [], [], []

    def rec(t, lo, hi, level, parent):
        x = 0.5 * (lo + hi)
        if t >= 2**tree.depth:
            a = int(tree.leaves[t - 2**tree.depth])
            label = f"{sym[a]}"
        else:
            f = int(tree.features[t - 1])
            if f < 0:
                rec(2 * t, lo, hi, level, parent)
                return
            label = f"{mdp.feature_names[f]} ≤ {tree.thresholds[t - 1]:g}"
        xs.append(x)
        ys.append(-level)
        labels.append(label)
        if parent is not None:
            ex.extend([parent[0], x, None])
            ey.extend([parent[1], -level, None])
        if t < 2**tree.depth:
            rec(2 * t, lo, x, level + 1, (x, -level))
            rec(2 * t + 1, x, hi, level + 1, (x, -level))

    rec(1, 0.0, 1.0, 0, None)
    return xs, ys, labels, ex, ey


def policy_figure(
    mdp: TabularMDP, tree: Tree, bars: dict[str, float] | None = None, title: str = ""
):
    """Grid coloured by the tree's action, the tree itself, and a bar chart of values.

    Always 6 traces: action heatmap, action symbols, holes/goal markers, tree edges, tree
    nodes, bars. Sysadmin states are drawn on an 8 x 8 grid (machines 0-2 = column bits,
    3-5 = row bits).

    See: book/spot/01-tree-policies.ipynb
    """
    mdp = check_mdp(mdp)
    check_instance("tree", tree, Tree)
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.36, 0.38, 0.26],
        subplot_titles=("policy on the states", "the tree", "value J"),
        horizontal_spacing=0.06,
    )
    _grid_panel(fig, mdp, tree)
    _tree_panel(fig, mdp, tree)
    bars = bars or {}
    _value_panel(fig, bars)
    _style_axes(fig, mdp, tree, bars)
    fig.update_layout(title_text=title, height=420, margin={"t": 70, "b": 50})
    return fig


def _grid_panel(fig, mdp: TabularMDP, tree: Tree) -> None:
    """Panel 1: the states coloured and labelled by the tree's action, holes and goal marked."""
    import plotly.graph_objects as go

    acts = tree.act(mdp.X)
    sym = action_symbols(mdp)
    rows, cols = mdp.layout[:, 0], mdp.layout[:, 1]
    Z = np.full((rows.max() + 1, cols.max() + 1), np.nan)
    Z[rows, cols] = acts
    m = mdp.n_actions
    scale = []
    for a in range(m):
        scale += [[a / m, _PALETTE[a % 8]], [(a + 1) / m, _PALETTE[a % 8]]]
    heat = go.Heatmap(
        z=Z, zmin=-0.5, zmax=m - 0.5, colorscale=scale, showscale=False, hoverinfo="skip"
    )
    fig.add_trace(heat.update(opacity=0.55), 1, 1)
    text = {"mode": "text", "textfont": {"size": 15}, "hoverinfo": "skip", "showlegend": False}
    fig.add_trace(go.Scatter(x=cols, y=rows, text=[sym[a] for a in acts], **text), 1, 1)
    kind = mdp.cell_kind or []
    special = [s for s, k in enumerate(kind) if k in "HG"]
    marker = {
        "symbol": "square-open",
        "size": 26,
        "line": {"width": 3},
        "color": ["black" if kind[s] == "H" else "gold" for s in special],
    }
    xy = {"x": cols[special] if special else [], "y": rows[special] if special else []}
    fig.add_trace(
        go.Scatter(**xy, mode="markers", marker=marker, hoverinfo="skip", showlegend=False), 1, 1
    )


def _tree_panel(fig, mdp: TabularMDP, tree: Tree) -> None:
    """Panel 2: the tree's effective nodes and edges."""
    import plotly.graph_objects as go

    xs, ys, labels, ex, ey = _tree_layout(tree, mdp)
    edges = go.Scatter(x=ex, y=ey, mode="lines", line={"color": "#999"})
    fig.add_trace(edges.update(hoverinfo="skip", showlegend=False), 1, 2)
    nodes = go.Scatter(
        x=xs,
        y=ys,
        mode="markers+text",
        text=labels,
        textposition="middle center",
        textfont={"size": [11 if "≤" in lb else 18 for lb in labels]},
        marker={"size": 36, "color": "rgba(200,200,230,0.5)"},
    )
    fig.add_trace(nodes.update(hoverinfo="skip", showlegend=False), 1, 2)


def _value_panel(fig, bars: dict[str, float]) -> None:
    """Panel 3: the values compared (the tree's, the optimum, a baseline's)."""
    import plotly.graph_objects as go

    bar = go.Bar(
        x=list(bars),
        y=list(bars.values()),
        text=[f"{v:.4g}" for v in bars.values()],
        textposition="outside",
        marker_color=_PALETTE[: len(bars)],
        showlegend=False,
    )
    fig.add_trace(bar, 1, 3)


def _style_axes(fig, mdp: TabularMDP, tree: Tree, bars: dict[str, float]) -> None:
    """Axis titles and ranges of the three panels."""
    lake = bool(mdp.cell_kind)
    grid = {"showgrid": False, "zeroline": False, "dtick": 1, "row": 1, "col": 1}
    fig.update_yaxes(autorange="reversed", title_text="row" if lake else "state bits 3-5", **grid)
    fig.update_xaxes(title_text="column" if lake else "state bits 0-2", **grid)
    fig.update_xaxes(visible=False, row=1, col=2, range=[-0.05, 1.05])
    fig.update_yaxes(visible=False, row=1, col=2, range=[-tree.depth - 0.5, 0.5])
    top = max(list(bars.values()) + [1e-9])
    fig.update_yaxes(range=[min(0, min(bars.values(), default=0)), 1.2 * top], row=1, col=3)


def slip_figure(run):
    """Widget figure of notebook 1: the SPOT-style tree of an ``experiments.ExplorerRun`` on a
    slippery lake, beside the unconstrained optimum.

    See: book/spot/01-tree-policies.ipynb
    """
    _check_run(run)
    res, s = run.result, run.settings
    bars = {"tree": res.J, "optimum": run.optimum}
    title = f"frozen lake 4x4, slip {s.slip:.2f} per side, depth {s.depth}: J = {res.J:.4f}"
    return policy_figure(run.mdp, res.tree, bars, title=title)


def spot_figure(run):
    """Widget figure of notebook 3: the SPOT-style tree of an ``experiments.ExplorerRun``
    (run with ``cart=True``) vs the CART (VIPER-style) tree vs the optimum.

    See: book/spot/03-spot-loop.ipynb
    """
    _check_run(run)
    res, s = run.result, run.settings
    bars = {"SPOT-style": res.J, "CART": run.cart, "optimum": run.optimum}
    title = (
        f"{s.name}, depth {s.depth}, weights {s.weights}: J = {res.J:.4g} "
        f"({res.iterations} iterations, {res.stop})"
    )
    return policy_figure(run.mdp, res.tree, bars, title=title)


def _check_run(run) -> None:
    if not all(hasattr(run, a) for a in ("settings", "mdp", "result", "optimum", "cart")):
        raise TypeError(
            f"run must be an ExplorerRun (from experiments.explorer_run), got {type(run).__name__}"
        )


def bnb_trace_figure(stats, progress: int = 100, label: str = ""):
    """Animation of the branch-and-bound: best open bound and incumbent vs nodes expanded.

    ``stats`` is the search's log (``rsbb(...)[2]``, or ``experiments.bnb_problem(...)[3]``);
    ``progress`` (percent) cuts the trace; ``label`` names the problem in the title; 4 traces
    always (bound, incumbent, two markers).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    import plotly.graph_objects as go

    if not hasattr(stats, "trace") or not hasattr(stats, "nodes"):
        raise TypeError(f"stats must be an RSBBStats (got {type(stats).__name__})")
    progress = check_int("progress", progress, 0, 100)
    st = stats
    tr = st.trace
    if len(tr) > 300:  # keep <= 300 points per trace
        tr = tr[np.unique(np.linspace(0, len(tr) - 1, 300).astype(int))]
    k = max(1, int(round(progress / 100 * len(tr))))
    cut = tr[:k]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=cut[:, 0],
            y=cut[:, 1],
            mode="lines",
            name="best open bound",
            line={"shape": "hv", "color": _PALETTE[3]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=cut[:, 0],
            y=cut[:, 2],
            mode="lines",
            name="incumbent",
            line={"shape": "hv", "color": _PALETTE[2]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[cut[-1, 0]],
            y=[cut[-1, 1]],
            mode="markers",
            marker={"color": _PALETTE[3], "size": 10},
            showlegend=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[cut[-1, 0]],
            y=[cut[-1, 2]],
            mode="markers",
            marker={"color": _PALETTE[2], "size": 10},
            showlegend=False,
        )
    )
    lo, hi = tr[:, 1:].min(), tr[:, 1:].max()
    pad = 0.05 * (hi - lo + 1e-12)
    gap = cut[-1, 1] - cut[-1, 2]
    fig.update_layout(
        title_text=f"{label}: node {int(cut[-1, 0])} of {st.nodes}, gap {gap:.2e}",
        xaxis={"title": {"text": "B&B nodes expanded"}, "range": [-0.5, tr[-1, 0] + 0.5]},
        yaxis={"title": {"text": "Σₛ G[s, π(s)]"}, "range": [lo - pad, hi + pad]},
        height=400,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
