"""Figures of the ace chapter (plotly, for ``lab.core.explore``).

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int

__all__ = [
    "METHOD_COLOURS",
    "dual_dynamics_figure",
    "partial_symmetry_figure",
]

METHOD_COLOURS = {
    "strict": "#0072B2",
    "unconstrained": "#D55E00",
    "equality": "#009E73",
    "resilient": "#CC79A7",
}


def _thin(n: int, points: int = 300) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, points)).astype(int))


def dual_dynamics_figure(run: dict):
    """Scalar problem min (x-2)^2 s.t. x = 0 under GDA: x(t), λ(t) and the (x, λ) phase plane.

    ``run``: a :func:`lab.ace.experiments.scalar_dynamics` result (iterates, step sizes and the
    spectral radius of the linear map).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not isinstance(run, dict) or not {"x", "lam", "eta_d", "aug", "radius"} <= set(run):
        raise TypeError("run must be a scalar_dynamics result (x, lam, eta_d, aug, radius)")
    eta_d, aug, rad = run["eta_d"], run["aug"], run["radius"]
    steps = len(run["x"]) - 1
    r = {k: np.clip(run[k], -1e3, 1e3) for k in ("x", "lam")}
    idx = _thin(steps + 1)
    t = idx
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=("constraint value x (γ)", "multiplier λ", "phase plane (x, λ)"),
    )
    fig.add_trace(go.Scatter(x=t, y=r["x"][idx], name="x", line={"color": "#009E73"}), 1, 1)
    fig.add_trace(
        go.Scatter(x=[0, steps], y=[0, 0], name="x* = 0", line={"dash": "dot", "color": "grey"}),
        1,
        1,
    )
    fig.add_trace(go.Scatter(x=t, y=r["lam"][idx], name="λ", line={"color": "#CC79A7"}), 1, 2)
    fig.add_trace(
        go.Scatter(x=[0, steps], y=[4, 4], name="λ* = 4", line={"dash": "dot", "color": "grey"}),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=r["x"][idx], y=r["lam"][idx], mode="lines", name="path", line={"color": "#0072B2"}
        ),
        1,
        3,
    )
    fig.add_trace(
        go.Scatter(x=[0], y=[4], mode="markers", name="KKT point", marker={"size": 10}), 1, 3
    )
    late = np.abs(r["x"][-steps // 4 :]).max()
    regime = "diverges" if rad > 1 + 1e-9 else ("undamped" if rad > 1 - 1e-9 else "damped")
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=2)
    fig.update_xaxes(title_text="x", row=1, col=3)
    fig.update_yaxes(range=[-3, 3], row=1, col=1)
    fig.update_yaxes(range=[-2, 10], row=1, col=2)
    fig.update_xaxes(range=[-3, 3], row=1, col=3)
    fig.update_yaxes(title_text="λ", range=[-2, 10], row=1, col=3)
    fig.update_layout(
        title=(
            f"η_d = {eta_d:.3g}, c = {aug:.3g}: spectral radius {rad:.4f} ({regime}); "
            f"max |x| over the last quarter {late:.2g}"
        ),
        height=380,
        showlegend=False,
    )
    return fig


def partial_symmetry_figure(cells: dict, eps: float, N: int, truncate: bool = False, source=""):
    """Test MSE of the four methods and the per-layer ``|γ_i|`` and ``u_i`` at one (ε, N).

    ``cells``: method -> list of runs (dicts with the final numbers, ``gamma``, ``u``), as
    :func:`lab.ace.stored_runs.cell_runs` returns them (seed-averaged here); ``source`` names where
    they come from in the title.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    methods = ("strict", "unconstrained", "equality", "resilient")
    if not isinstance(cells, dict) or not set(methods) <= set(cells):
        raise TypeError(f"cells must map each of {methods} to a list of runs (cell_runs)")
    N = check_int("N", N, 1)
    key = "test_mse_truncated" if truncate else "test_mse"
    mse = [float(np.mean([r[key] for r in cells[m]])) for m in methods]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("test MSE (mean over seeds)", "per-layer |γ_i| and slack u_i"),
    )
    fig.add_trace(
        go.Bar(
            x=list(methods),
            y=mse,
            marker_color=[METHOD_COLOURS[m] for m in methods],
            text=[f"{v:.3g}" for v in mse],
            textposition="outside",
            name="test MSE",
        ),
        1,
        1,
    )
    layers = [f"layer {i + 1}" for i in range(3)]
    for m, what in (("equality", "gamma"), ("resilient", "gamma"), ("resilient", "u")):
        vals = np.mean([np.abs(r[what]) if r[what] else np.zeros(3) for r in cells[m]], axis=0)
        fig.add_trace(
            go.Bar(
                x=layers,
                y=vals,
                name=f"{m} {'|γ|' if what == 'gamma' else 'u'}",
                marker_color=METHOD_COLOURS[m],
                opacity=1.0 if what == "gamma" else 0.5,
            ),
            1,
            2,
        )
    fig.update_yaxes(type="log", range=[-2.5, 0.5], title_text="test MSE", row=1, col=1)
    fig.update_yaxes(range=[0, 1.2], title_text="value", row=1, col=2)
    src = f" ({source})" if source else ""
    fig.update_layout(
        title=f"ε = {eps:.2g}, N = {N}, {'truncated' if truncate else 'deployed'} models{src}",
        barmode="group",
        height=400,
    )
    return fig
