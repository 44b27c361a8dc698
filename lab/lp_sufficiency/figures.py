"""Figure builders for the lp_sufficiency chapter (plotly for widgets, matplotlib panels).

Each takes a result of ``experiments.py`` (a ``GeometryView``, ``HiringView``,
``ScalingSweep`` or ``WidthCurve``, or the violation rates of notebook 2) and draws it; a widget is ``figures.f(experiments.g(settings))``.

See: book/lp_sufficiency/01-geometry-and-construction.ipynb
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "geometry_figure",
    "geometry_axes",
    "geometry_panels",
    "hiring_figure",
    "scaling_figure",
    "violation_figure",
    "width_figure",
]


def _check_view(view, *fields: str) -> None:
    missing = [f for f in fields if not hasattr(view, f)]
    if missing:
        raise TypeError(
            f"view must be a result of lab.lp_sufficiency.experiments with {fields} "
            f"(got {type(view).__name__}, missing {missing})"
        )


def _geometry_traces(view):
    """The plotly traces of the two panels: X and its relevant edges, the rays and the box."""
    import plotly.graph_objects as go

    P = view.polygon
    x_poly = go.Scatter(x=P[:, 0], y=P[:, 1], mode="lines", line=dict(color="#888"), name="X")
    ex, ey = [], []
    for S in view.edges:
        ex += [S[0, 0], S[1, 0], None]
        ey += [S[0, 1], S[1, 1], None]
    x_edges = go.Scatter(
        x=ex or [None],
        y=ey or [None],
        mode="lines",
        line=dict(color="#d62728", width=5),
        name="relevant edges",
    )
    rx, ry, hx, hy = [], [], [], []
    for i, g in enumerate(view.normals):
        tgt = (hx, hy) if i in view.relevant else (rx, ry)
        tgt[0].extend([0.0, -2.2 * g[0], None])
        tgt[1].extend([0.0, -2.2 * g[1], None])
    rays = go.Scatter(
        x=rx,
        y=ry,
        mode="lines",
        line=dict(color="#aaa", dash="dot"),
        name="ray −gᵢ (tie of edge i)",
    )
    hits = go.Scatter(
        x=hx or [None],
        y=hy or [None],
        mode="lines",
        line=dict(color="#d62728", width=3),
        name="rays hit by C",
    )
    lo, hi = view.lo, view.hi
    bx = [lo[0], hi[0], hi[0], lo[0], lo[0]]
    by = [lo[1], lo[1], hi[1], hi[1], lo[1]]
    box = go.Scatter(x=bx, y=by, fill="toself", mode="lines", line=dict(color="#1f77b4"), name="C")
    return (x_poly, x_edges), (rays, hits, box)


def geometry_figure(view):
    """Plotly: the polygon X with its relevant edges (left) and the cost plane (right): the
    normal rays ``-g_i`` and the uncertainty box C. Title: ``d*`` from the MILP construction.

    ``view`` is a :class:`~lab.lp_sufficiency.GeometryView`
    (:func:`~lab.lp_sufficiency.geometry_view`).
    """
    from plotly.subplots import make_subplots

    _check_view(view, "polygon", "edges", "normals", "relevant", "lo", "hi", "D", "n_milp")
    fig = make_subplots(
        1, 2, subplot_titles=("decisions x ∈ X", "costs c (box C and the normal rays)")
    )
    left, right = _geometry_traces(view)
    for tr in left:
        fig.add_trace(tr, 1, 1)
    for tr in right:
        fig.add_trace(tr, 1, 2)
    fig.update_xaxes(range=[-2.3, 2.3], row=1, col=2)
    fig.update_yaxes(range=[-2.3, 2.3], scaleanchor="x2", row=1, col=2)
    fig.update_yaxes(scaleanchor="x", row=1, col=1)
    fig.update_layout(
        title_text=f"box half-width {view.radius:.2f}: d* = {view.D.shape[0]} (MILP, "
        f"{view.n_milp} solves), relevant edges {len(view.relevant)}",
        height=420,
    )
    return fig


def geometry_axes(ax_x, ax_c, view):
    """Matplotlib twin of :func:`geometry_figure` on two given axes (``view``: a
    :class:`~lab.lp_sufficiency.GeometryView`)."""
    from matplotlib.patches import Rectangle

    _check_view(view, "polygon", "edges", "normals", "relevant", "lo", "hi", "D")
    P, D = view.polygon, view.D
    ax_x.plot(P[:, 0], P[:, 1], color="0.5")
    for S in view.edges:
        ax_x.plot(S[:, 0], S[:, 1], color="C3", lw=4)
    for q in D:
        ax_x.annotate(
            "", xy=0.8 * q, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C0", lw=2)
        )
    ax_x.set_aspect("equal")
    ax_x.set_title(f"X: relevant edges (red), dataset D (blue), d* = {D.shape[0]}")
    for i, g in enumerate(view.normals):
        rel = i in view.relevant
        ax_c.plot(
            [0, -2 * g[0]], [0, -2 * g[1]], color="C3" if rel else "0.7", ls="-" if rel else ":"
        )
    ax_c.add_patch(Rectangle(view.lo, *(view.hi - view.lo), alpha=0.35, color="C0"))
    ax_c.set_xlim(-2.1, 2.1)
    ax_c.set_ylim(-2.1, 2.1)
    ax_c.set_aspect("equal")
    ax_c.set_xlabel("c₁")
    ax_c.set_ylabel("c₂")
    ax_c.set_title("costs: box C and rays −gᵢ")


def hiring_figure(view):
    """Plotly: value intervals of the candidates, the relevant pairs (closed form, eq. 5), and
    the least-cost dataset (closed form) with interviews at price 1 and comparisons at the
    view's comparison price (``view``: a :class:`~lab.lp_sufficiency.HiringView`)."""
    import plotly.graph_objects as go

    _check_view(view, "settings", "lo", "hi", "pairs", "d_star", "interviews", "comparisons")
    lo, hi, st = view.lo, view.hi, view.settings
    n, k, comparison_cost = lo.size, st.k, st.comparison_cost
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
    inter, comp = list(view.interviews), list(view.comparisons)
    mid = 0.5 * (lo + hi)
    fig.add_trace(go.Scatter(x=mid[inter] if inter else [None], y=y[inter] if inter else [None], mode="markers",
                             marker=dict(size=13, color="#d62728", symbol="diamond"), name="interview (cost 1)"))  # fmt: skip
    cx, cy = [], []
    for i, j in comp:
        cx += [mid[i], mid[j], None]
        cy += [i, j, None]
    fig.add_trace(go.Scatter(x=cx or [None], y=cy or [None], mode="lines+markers", line=dict(color="#1f77b4", width=2),
                             name=f"comparison (cost {comparison_cost:.2f})"))  # fmt: skip
    hired = list(view.hired)
    fig.add_trace(go.Scatter(x=mid[hired], y=y[hired], mode="markers", marker=dict(size=7, color="black"),
                             name="hired at the centre values"))  # fmt: skip
    fig.update_layout(
        title_text=(
            f"k = {k}: relevant pairs {len(view.pairs)}, d* = {view.d_star}; cheapest dataset: "
            f"{len(inter)} interviews + {len(comp)} comparisons, cost {view.total:.2f}"
        ),  # fmt: skip
        xaxis_title="value v",
        yaxis_title="candidate (sorted by centre)",
        height=460,
    )
    return fig


def geometry_panels(views):
    """Matplotlib: one column per :class:`~lab.lp_sufficiency.GeometryView` of ``views`` (the
    polygon with its relevant edges and the dataset above, the cost box and the rays below);
    returns the figure."""
    import matplotlib.pyplot as plt

    if isinstance(views, (str, bytes)) or not isinstance(views, (list, tuple)) or not views:
        raise TypeError("views must be a nonempty list of GeometryView results")
    for v in views:
        _check_view(v, "polygon", "edges", "normals", "relevant", "lo", "hi", "D", "n_milp")
    fig, axes = plt.subplots(2, len(views), figsize=(3.7 * len(views), 7.2), squeeze=False)
    for col, view in enumerate(views):
        geometry_axes(axes[0, col], axes[1, col], view)
        axes[0, col].set_title(
            f"half-width {view.radius:g}: d* = {view.D.shape[0]} ({view.n_milp} MILPs)",
            fontsize=10,
        )
    fig.tight_layout()
    return fig


def scaling_figure(sweep):
    """Matplotlib: ``d*`` of the transportation LP against the half-width of the cost box, with
    ``dim X`` dashed (``sweep``: a :class:`~lab.lp_sufficiency.ScalingSweep`)."""
    import matplotlib.pyplot as plt

    _check_view(sweep, "radii", "d_star", "dim_X")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot(sweep.radii, sweep.d_star, "-o", label="d* (MILP construction)")
    ax.axhline(sweep.dim_X, color="0.5", ls="--", label="dim X = (r − 1)(s − 1)")
    ax.set_xscale("log")
    ax.set_xlabel("half-width of the cost box C")
    ax.set_ylabel("minimal dataset size d*")
    ax.set_title("4 × 5 transportation LP")
    ax.legend(fontsize=8)
    return fig


def width_figure(curve):
    """Matplotlib: the share of the ``n − 1`` dimensions measured by comparisons (``d*``) and by
    interviews along the width grid, with the MILP's ``d*`` as crosses (``curve``: a
    :class:`~lab.lp_sufficiency.WidthCurve`)."""
    import matplotlib.pyplot as plt

    _check_view(curve, "settings", "d_star", "interviews", "milp_widths", "d_milp")
    n, k, widths = curve.settings.n, curve.settings.k, curve.settings.widths
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    share = np.array(curve.d_star) / (n - 1)
    ax.plot(widths, share, "-o", ms=3, label="d*/(n−1), comparisons (closed form)")
    share = np.array(curve.interviews) / (n - 1)
    ax.plot(widths, share, "-s", ms=3, label="interviews/(n−1) (closed form)")
    share = np.array(curve.d_milp) / (n - 1)
    ax.plot(curve.milp_widths, share, "kx", ms=9, label="d*/(n−1) from the MILP")
    ax.set_xscale("log")
    ax.set_xlabel("interval width scale")
    ax.set_ylabel("fraction of dimensions measured")
    ax.set_title(f"hiring n = {n}, k = {k}")
    ax.legend(fontsize=8)
    return fig


def violation_figure(rates, trials: int):
    """Matplotlib: bars of the violation rates (percent) of the datasets in ``rates`` (a dict
    name -> rate, ``"full D"`` first and ``"no data"`` last) over ``trials`` pairs."""
    import matplotlib.pyplot as plt

    if not isinstance(rates, dict) or len(rates) < 2:
        raise TypeError("rates must be a dict name -> violation rate with at least two entries")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be a positive integer (got {trials!r})")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    colours = ["C2"] + ["C3"] * (len(rates) - 2) + ["0.5"]
    ax.bar(list(rates), [100 * float(r) for r in rates.values()], color=colours)
    ax.set_ylabel("pairs with different hires (%)")
    ax.set_title(f"{trials} observationally equivalent pairs")
    plt.setp(ax.get_xticklabels(), rotation=30)
    return fig
