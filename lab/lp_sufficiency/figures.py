"""Figure builders for the lp_sufficiency chapter (plotly for widgets, matplotlib panels).

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.lp_sufficiency.problems import (
    BoxSet,
    Polytope,
    topk_least_cost,
    topk_relevant_pairs,
    topk_sdd,
)
from lab.lp_sufficiency.reference import minimal_sdd

__all__ = [
    "regular_polygon",
    "relevant_edges_2d",
    "geometry_figure",
    "geometry_axes",
    "hiring_instance",
    "hiring_figure",
]


def regular_polygon(n_sides: int = 6, radius: float = 1.0) -> Polytope:
    """The polygon ``{x : g_i^T x <= radius}`` with outward normals at angles ``2 pi i / n``."""
    ang = 2 * np.pi * np.arange(n_sides) / n_sides
    return Polytope(np.c_[np.cos(ang), np.sin(ang)], radius * np.ones(n_sides))


def _ray_meets_box(g: np.ndarray, C: BoxSet) -> bool:
    """Does the ray ``{-t g : t > 0}`` (costs making the face with normal g optimal) meet C?"""
    t_lo, t_hi = 0.0, np.inf
    for j in range(2):
        if abs(g[j]) < 1e-12:
            if not (C.lo[j] < 0 < C.hi[j]):
                return False
            continue
        a, b = sorted((C.lo[j] / -g[j], C.hi[j] / -g[j]))
        t_lo, t_hi = max(t_lo, a), min(t_hi, b)
    return t_lo < t_hi


def _check_plane(X, C) -> None:
    if not isinstance(X, Polytope) or not isinstance(C, BoxSet):
        raise TypeError(
            f"X, C must be a Polytope and a BoxSet (got {type(X).__name__}, {type(C).__name__})"
        )


def relevant_edges_2d(X: Polytope, C: BoxSet) -> list[int]:
    """Indices of the polygon's facets (edges) that are optimal for some cost in ``C``."""
    _check_plane(X, C)
    return [i for i, g in enumerate(X.G) if _ray_meets_box(g, C)]


def _edge_segment(X: Polytope, i: int) -> np.ndarray:
    V = X.vertices()
    on = np.abs(V @ X.G[i] - X.h[i]) < 1e-9
    return V[on]


def _polygon_order(V: np.ndarray) -> np.ndarray:
    ang = np.arctan2(V[:, 1] - V[:, 1].mean(), V[:, 0] - V[:, 0].mean())
    return V[np.argsort(ang)]


def geometry_figure(radius: float, angle_deg: float = 200.0, n_sides: int = 6):
    """Plotly: the polygon X with its relevant edges (left) and the cost plane (right):
    the normal rays ``-g_i`` and the uncertainty box C of half-width ``radius`` centred at
    distance 1 in direction ``angle_deg``. Title: ``d*`` from the MILP construction."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    X = regular_polygon(n_sides)
    centre = np.array([np.cos(np.radians(angle_deg)), np.sin(np.radians(angle_deg))])
    C = BoxSet(centre - radius, centre + radius)
    rel = relevant_edges_2d(X, C)
    D, n_milp = minimal_sdd(X, C, rng=0)
    fig = make_subplots(
        1, 2, subplot_titles=("decisions x ∈ X", "costs c (box C and the normal rays)")
    )
    P = _polygon_order(X.vertices())
    P = np.vstack([P, P[:1]])
    fig.add_trace(
        go.Scatter(x=P[:, 0], y=P[:, 1], mode="lines", line=dict(color="#888"), name="X"), 1, 1
    )
    ex, ey = [], []
    for i in rel:
        S = _edge_segment(X, i)
        ex += [S[0, 0], S[1, 0], None]
        ey += [S[0, 1], S[1, 1], None]
    fig.add_trace(
        go.Scatter(
            x=ex or [None],
            y=ey or [None],
            mode="lines",
            line=dict(color="#d62728", width=5),
            name="relevant edges",
        ),
        1,
        1,
    )
    rx, ry, hx, hy = [], [], [], []
    for i, g in enumerate(X.G):
        tgt = (hx, hy) if i in rel else (rx, ry)
        tgt[0].extend([0.0, -2.2 * g[0], None])
        tgt[1].extend([0.0, -2.2 * g[1], None])
    fig.add_trace(
        go.Scatter(
            x=rx,
            y=ry,
            mode="lines",
            line=dict(color="#aaa", dash="dot"),
            name="ray −gᵢ (tie of edge i)",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=hx or [None],
            y=hy or [None],
            mode="lines",
            line=dict(color="#d62728", width=3),
            name="rays hit by C",
        ),
        1,
        2,
    )
    bx = [C.lo[0], C.hi[0], C.hi[0], C.lo[0], C.lo[0]]
    by = [C.lo[1], C.lo[1], C.hi[1], C.hi[1], C.lo[1]]
    fig.add_trace(
        go.Scatter(x=bx, y=by, fill="toself", mode="lines", line=dict(color="#1f77b4"), name="C"),
        1,
        2,
    )
    fig.update_xaxes(range=[-2.3, 2.3], row=1, col=2)
    fig.update_yaxes(range=[-2.3, 2.3], scaleanchor="x2", row=1, col=2)
    fig.update_yaxes(scaleanchor="x", row=1, col=1)
    fig.update_layout(
        title_text=f"box half-width {radius:.2f}: d* = {D.shape[0]} (MILP, {n_milp} solves), relevant edges {len(rel)}",
        height=420,
    )
    return fig


def geometry_axes(ax_x, ax_c, X: Polytope, C: BoxSet, D: np.ndarray):
    """Matplotlib twin of :func:`geometry_figure` on two given axes."""
    _check_plane(X, C)
    rel = relevant_edges_2d(X, C)
    P = _polygon_order(X.vertices())
    P = np.vstack([P, P[:1]])
    ax_x.plot(P[:, 0], P[:, 1], color="0.5")
    for i in rel:
        S = _edge_segment(X, i)
        ax_x.plot(S[:, 0], S[:, 1], color="C3", lw=4)
    for q in D:
        ax_x.annotate(
            "", xy=0.8 * q, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C0", lw=2)
        )
    ax_x.set_aspect("equal")
    ax_x.set_title(f"X: relevant edges (red), dataset D (blue), d* = {D.shape[0]}")
    for i, g in enumerate(X.G):
        ax_c.plot(
            [0, -2 * g[0]],
            [0, -2 * g[1]],
            color="C3" if i in rel else "0.7",
            ls="-" if i in rel else ":",
        )
    ax_c.add_patch(
        __import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
            C.lo, *(C.hi - C.lo), alpha=0.35, color="C0"
        )
    )
    ax_c.set_xlim(-2.1, 2.1)
    ax_c.set_ylim(-2.1, 2.1)
    ax_c.set_aspect("equal")
    ax_c.set_xlabel("c₁")
    ax_c.set_ylabel("c₂")
    ax_c.set_title("costs: box C and rays −gᵢ")


def hiring_instance(n: int = 12, width: float = 1.5, seed: int = 0):
    """A reproducible hiring instance: centres U(0, 10), widths ``width * U(0.5, 1.5)``."""
    rng = np.random.default_rng(seed)
    centre = np.sort(rng.uniform(0, 10, n))[::-1]
    w = width * rng.uniform(0.5, 1.5, n)
    return centre - w / 2, centre + w / 2


def hiring_figure(
    k: int, comparison_cost: float = 0.8, n: int = 12, width: float = 2.5, seed: int = 0
):
    """Plotly: value intervals of the candidates, the relevant pairs (closed form, eq. 5), and
    the least-cost dataset (closed form) with interviews at price 1 and comparisons at
    ``comparison_cost``."""
    import plotly.graph_objects as go

    lo, hi = hiring_instance(n, width, seed)
    pairs = sorted(topk_relevant_pairs(lo, hi, k))
    B = topk_sdd(lo, hi, k)
    Qsel, total = topk_least_cost(lo, hi, k, 1.0, comparison_cost)
    y = np.arange(n)
    fig = go.Figure()
    ix, iy = [], []
    for i in range(n):
        ix += [lo[i], hi[i], None]
        iy += [i, i, None]
    fig.add_trace(
        go.Scatter(
            x=ix, y=iy, mode="lines", line=dict(color="#999", width=6), name="value interval"
        )
    )
    inter = [int(np.flatnonzero(q)[0]) for q in Qsel if np.count_nonzero(q) == 1]
    comp = [tuple(np.flatnonzero(q)) for q in Qsel if np.count_nonzero(q) == 2]
    mid = 0.5 * (lo + hi)
    fig.add_trace(go.Scatter(x=mid[inter] if inter else [None], y=y[inter] if inter else [None], mode="markers",
                             marker=dict(size=13, color="#d62728", symbol="diamond"), name="interview (cost 1)"))  # fmt: skip
    cx, cy = [], []
    for i, j in comp:
        cx += [mid[i], mid[j], None]
        cy += [i, j, None]
    fig.add_trace(go.Scatter(x=cx or [None], y=cy or [None], mode="lines+markers", line=dict(color="#1f77b4", width=2),
                             name=f"comparison (cost {comparison_cost:.2f})"))  # fmt: skip
    hired = np.argsort(-mid)[:k]
    fig.add_trace(go.Scatter(x=mid[hired], y=y[hired], mode="markers", marker=dict(size=7, color="black"),
                             name="hired at the centre values"))  # fmt: skip
    fig.update_layout(
        title_text=(
            f"k = {k}: relevant pairs {len(pairs)}, d* = {B.shape[0]}; cheapest dataset: "
            f"{len(inter)} interviews + {len(comp)} comparisons, cost {total:.2f}"
        ),  # fmt: skip
        xaxis_title="value v",
        yaxis_title="candidate (sorted by centre)",
        height=460,
    )
    return fig
