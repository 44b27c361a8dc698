"""Figures of the ace chapter (plotly, for ``lab.core.explore``).

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.ace.reference import scalar_gda
from lab.core.checks import check_int, check_positive

__all__ = [
    "METHOD_COLOURS",
    "dual_dynamics_figure",
    "gda_spectral_radius",
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


def gda_spectral_radius(eta_p: float, eta_d: float, aug: float = 0.0) -> float:
    """Spectral radius of the linear GDA update on min (x-2)^2 + c x^2 s.t. x = 0.

    The map is (x, λ) -> A (x, λ) + const with A = [[1 - 2η_p(1+c), -η_p], [η_d, 1]].

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    eta_p = check_positive("eta_p", eta_p)
    eta_d = check_positive("eta_d", eta_d, allow_zero=True)
    aug = check_positive("aug", aug, allow_zero=True)
    A = np.array([[1 - 2 * eta_p * (1 + aug), -eta_p], [eta_d, 1.0]])
    return float(np.abs(np.linalg.eigvals(A)).max())


def dual_dynamics_figure(eta_d: float = 0.05, aug: float = 0.0, steps: int = 2000):
    """Scalar problem min (x-2)^2 s.t. x = 0 under GDA: x(t), λ(t) and the (x, λ) phase plane.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    eta_d = check_positive("eta_d", eta_d)
    aug = check_positive("aug", aug, allow_zero=True)
    steps = check_int("steps", steps, 10)
    with np.errstate(over="ignore", invalid="ignore"):
        r = scalar_gda(eta_p=0.05, eta_d=eta_d, aug=aug, steps=steps)
    r = {k: np.clip(v, -1e3, 1e3) for k, v in r.items()}
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
    rad = gda_spectral_radius(0.05, eta_d, aug)
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


def partial_symmetry_figure(
    sweep: dict, eps: float = 0.5, log2N: int = 6, truncate: bool = False, live_steps: int = 300
):
    """Test MSE of the four methods and the per-layer ``|γ_i|`` and ``u_i`` at one (ε, N).

    Reads the stored sweep when (ε, N) is on its grid (seed-averaged), otherwise trains the
    four models live (``live_steps`` steps, one seed).

    See: book/ace/02-partial-symmetry.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from lab.ace.experiments import live_cell, sweep_key

    if not isinstance(sweep, dict) or not {"grid", "runs"} <= set(sweep):
        raise TypeError(
            f"sweep must be the stored sweep dict with 'grid' and 'runs' (got {type(sweep).__name__})"
        )
    N = 2 ** check_int("log2N", log2N, 1, 12)
    methods = ("strict", "unconstrained", "equality", "resilient")
    on_grid = eps in sweep["grid"]["eps"] and N in sweep["grid"]["N"]
    cells = {}
    for m in methods:
        if on_grid:
            runs = [
                sweep["runs"][sweep_key(m, eps, N, s)]
                for s in sweep["grid"]["seed"]
                if sweep_key(m, eps, N, s) in sweep["runs"]
            ]
        else:
            runs = [live_cell(m, float(eps), N, live_steps)]
        cells[m] = runs
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
    src = "stored sweep" if on_grid else f"live run, {live_steps} steps"
    fig.update_layout(
        title=f"ε = {eps:.2g}, N = {N}, {'truncated' if truncate else 'deployed'} models ({src})",
        barmode="group",
        height=400,
    )
    return fig
