"""Plotly figure builders for the ``spot`` chapter's widgets.

See: book/spot/01-tree-policies.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_choice, check_int, check_range

from .experiments import LAKE_6X6, MDP_CHOICES, bnb_problem, explorer_run, make_mdp
from .mdp import TabularMDP, check_mdp
from .search import WEIGHTINGS
from .tree import Tree

__all__ = [
    "action_symbols",
    "policy_figure",
    "slip_explorer",
    "spot_explorer",
    "bnb_trace_figure",
]

# re-exported for older callers: they live in ``experiments``
_REEXPORTED = (LAKE_6X6, MDP_CHOICES, bnb_problem, make_mdp)

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
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a Tree (got {type(tree).__name__})")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    acts = tree.act(mdp.X)
    sym = action_symbols(mdp)
    rows, cols = mdp.layout[:, 0], mdp.layout[:, 1]
    nr, nc = rows.max() + 1, cols.max() + 1
    Z = np.full((nr, nc), np.nan)
    Z[rows, cols] = acts
    m = mdp.n_actions
    scale = []
    for a in range(m):
        scale += [[a / m, _PALETTE[a % 8]], [(a + 1) / m, _PALETTE[a % 8]]]
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.36, 0.38, 0.26],
        subplot_titles=("policy on the states", "the tree", "value J"),
        horizontal_spacing=0.06,
    )
    fig.add_trace(
        go.Heatmap(
            z=Z,
            zmin=-0.5,
            zmax=m - 0.5,
            colorscale=scale,
            showscale=False,
            hoverinfo="skip",
            opacity=0.55,
        ),
        1,
        1,
    )
    txt = [sym[a] for a in acts]
    fig.add_trace(
        go.Scatter(
            x=cols,
            y=rows,
            mode="text",
            text=txt,
            textfont={"size": 15},
            hoverinfo="skip",
            showlegend=False,
        ),
        1,
        1,
    )
    kind = mdp.cell_kind or []
    special = [s for s, k in enumerate(kind) if k in "HG"]
    fig.add_trace(
        go.Scatter(
            x=cols[special] if special else [],
            y=rows[special] if special else [],
            mode="markers",
            marker={
                "symbol": "square-open",
                "size": 26,
                "line": {"width": 3},
                "color": ["black" if kind[s] == "H" else "gold" for s in special],
            },
            hoverinfo="skip",
            showlegend=False,
        ),
        1,
        1,
    )
    xs, ys, labels, ex, ey = _tree_layout(tree, mdp)
    fig.add_trace(
        go.Scatter(
            x=ex, y=ey, mode="lines", line={"color": "#999"}, hoverinfo="skip", showlegend=False
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text",
            text=labels,
            textposition="middle center",
            textfont={"size": [11 if "≤" in lb else 18 for lb in labels]},
            marker={"size": 36, "color": "rgba(200,200,230,0.5)"},
            hoverinfo="skip",
            showlegend=False,
        ),
        1,
        2,
    )
    bars = bars or {}
    fig.add_trace(
        go.Bar(
            x=list(bars),
            y=list(bars.values()),
            text=[f"{v:.4g}" for v in bars.values()],
            textposition="outside",
            marker_color=_PALETTE[: len(bars)],
            showlegend=False,
        ),
        1,
        3,
    )
    lake = bool(mdp.cell_kind)
    fig.update_yaxes(
        autorange="reversed",
        row=1,
        col=1,
        showgrid=False,
        zeroline=False,
        dtick=1,
        title_text="row" if lake else "state bits 3-5",
    )
    fig.update_xaxes(
        showgrid=False,
        zeroline=False,
        row=1,
        col=1,
        dtick=1,
        title_text="column" if lake else "state bits 0-2",
    )
    fig.update_xaxes(visible=False, row=1, col=2, range=[-0.05, 1.05])
    fig.update_yaxes(visible=False, row=1, col=2, range=[-tree.depth - 0.5, 0.5])
    top = max(list(bars.values()) + [1e-9])
    fig.update_yaxes(range=[min(0, min(bars.values(), default=0)), 1.2 * top], row=1, col=3)
    fig.update_layout(title_text=title, height=420, margin={"t": 70, "b": 50})
    return fig


def slip_explorer(slip: float = 1 / 3, depth: int = 2):
    """Widget of notebook 1: the SPOT-style tree on the 4x4 lake as the ice gets slipperier.

    See: book/spot/01-tree-policies.ipynb
    """
    slip = check_range("slip", slip, 0.0, 0.5)
    depth = check_int("depth", depth, 0, 3)
    run = explorer_run("lake 4x4", depth, "optimal", True, slip)
    res = run.result
    bars = {"tree": res.J, "optimum": run.optimum}
    return policy_figure(
        run.mdp,
        res.tree,
        bars,
        title=f"frozen lake 4x4, slip {slip:.2f} per side, depth {depth}: J = {res.J:.4f}",
    )


def spot_explorer(
    mdp: str = "lake 4x4 not slippery",
    depth: int = 2,
    weights: str = "optimal",
    warm_start: bool = True,
):
    """Widget of notebook 3: SPOT-style tree vs the CART (VIPER-style) tree vs the optimum.

    See: book/spot/03-spot-loop.ipynb
    """
    check_choice("mdp", mdp, list(MDP_CHOICES))
    depth = check_int("depth", depth, 1, 3)
    check_choice("weights", weights, list(WEIGHTINGS[:-1]))
    run = explorer_run(mdp, depth, weights, bool(warm_start), 1 / 3, cart=True)
    res = run.result
    bars = {"SPOT-style": res.J, "CART": run.cart, "optimum": run.optimum}
    return policy_figure(
        run.mdp,
        res.tree,
        bars,
        title=f"{mdp}, depth {depth}, weights {weights}: J = {res.J:.4g} "
        f"({res.iterations} iterations, {res.stop})",
    )


def bnb_trace_figure(
    progress: int = 100, grid: str = "lake 8x8", depth: int = 3, exact_parse: bool = True
):
    """Animation of the branch-and-bound: best open bound and incumbent vs nodes expanded.

    ``progress`` (percent) cuts the trace; 4 traces always (bound, incumbent, two markers).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    import plotly.graph_objects as go

    progress = check_int("progress", progress, 0, 100)
    check_choice("grid", grid, ["lake 4x4", "lake 6x6", "lake 8x8", "sysadmin 6"])
    depth = check_int("depth", depth, 2, 3)
    _, _, val, st = bnb_problem(grid, depth, bool(exact_parse))
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
        title_text=f"{grid}, depth {depth}, {'exact depth-1 parse' if exact_parse else 'state-wise bound only'}:"
        f" node {int(cut[-1, 0])} of {st.nodes}, gap {gap:.2e}",
        xaxis={"title": {"text": "B&B nodes expanded"}, "range": [-0.5, tr[-1, 0] + 0.5]},
        yaxis={"title": {"text": "Σₛ G[s, π(s)]"}, "range": [lo - pad, hi + pad]},
        height=400,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
