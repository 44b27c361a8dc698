"""Figures of the wflows chapter (plotly, for ``lab.core.explore``).

Kept out of the notebooks so that each cell stays a sentence of code, and out of the
reference kernels so that those read like the paper.

See: book/wflows/01-three-samplers.ipynb, book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_fields, check_int, check_positive

__all__ = [
    "COLOURS",
    "LABELS",
    "ellipse",
    "sampler_frame",
    "flow_1d_frame",
    "sgld_variance_frame",
]

COLOURS = {"langevin": "#0072B2", "sgld": "#D55E00", "svrg": "#009E73", "target": "#555555"}
LABELS = {"langevin": "ULA (GD flow)", "sgld": "SGLD (SGD flow)", "svrg": "SVRG-LD (SVRG flow)"}


def ellipse(mean: np.ndarray, cov: np.ndarray, radius: float = 2.0, points: int = 120):
    """Points of the ellipse ``{x : (x - mean)^T cov^-1 (x - mean) = radius^2}``.

    See: book/wflows/01-three-samplers.ipynb
    """
    w, U = np.linalg.eigh(cov)
    th = np.linspace(0, 2 * np.pi, points)
    circle = np.stack([np.cos(th), np.sin(th)])
    return (mean[:, None] + U @ (np.sqrt(w)[:, None] * radius * circle)).T


def sampler_frame(
    runs: dict[str, Any],
    potential: Any,
    budget: float,
    metric: str = "KL",
    show: int = 200,
):
    """Particle clouds of the three samplers at an equal gradient budget (left) and the
    Gaussian-fit KL or W2 against gradient evaluations with the budget marked (right).

    Always 2 + 3 * 3 traces (target ellipses, cloud, curve and marker per method).

    See: book/wflows/01-three-samplers.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    budget = check_positive("budget", budget, allow_zero=True)
    metric = check_choice("metric", metric, ("KL", "W2"))
    show = check_int("show", show, 1, 300)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "particles at equal gradient budget (dashed: target 1σ, 2σ)",
            f"Gaussian-fit {metric} to π vs gradient evaluations",
        ),
        horizontal_spacing=0.1,
    )
    for r in (1.0, 2.0):
        e = ellipse(potential.mean, potential.cov, r)
        fig.add_trace(
            go.Scatter(
                x=e[:, 0],
                y=e[:, 1],
                mode="lines",
                line=dict(color=COLOURS["target"], dash="dash", width=1),
                showlegend=False,
                hoverinfo="skip",
            ),
            1,
            1,
        )
    lines = []
    for name, H in runs.items():
        cloud, line, marker = _method_traces(name, H, budget, metric, show)
        fig.add_trace(cloud, 1, 1)
        lines.append((line, marker))
    for line, marker in lines:
        fig.add_trace(line, 1, 2)
        fig.add_trace(marker, 1, 2)
    allX = np.concatenate([H.particles[:, :show].reshape(-1, 2) for H in runs.values()])
    lo, hi = np.percentile(allX, [0.5, 99.5], axis=0)
    fig.update_xaxes(title_text="x₁", range=[lo[0] - 0.3, hi[0] + 0.3], row=1, col=1)
    fig.update_yaxes(title_text="x₂", range=[lo[1] - 0.3, hi[1] + 0.3], row=1, col=1)
    fig.update_xaxes(
        title_text="component-gradient evaluations per particle",
        type="log",
        exponentformat="power",
        row=1,
        col=2,
    )
    fig.update_yaxes(title_text=metric, type="log", exponentformat="power", row=1, col=2)
    kls = {n: H.kl[H.at_budget(budget)] for n, H in runs.items()}
    fig.update_layout(
        title_text=f"budget {budget:,.0f} evaluations: KL  ULA {kls['langevin']:.4f} · "
        f"SGLD {kls['sgld']:.4f} · SVRG-LD {kls['svrg']:.4f}",
        height=470,
        legend=dict(orientation="h", y=-0.22),
    )
    return fig


def _method_traces(name: str, H: Any, budget: float, metric: str, show: int):
    """One sampler's traces in ``sampler_frame``: its cloud at the budget, its distance curve
    and the marker at the budget."""
    import plotly.graph_objects as go

    i = H.at_budget(budget)
    Xk = H.particles[i][:show]
    cloud = go.Scatter(
        x=Xk[:, 0],
        y=Xk[:, 1],
        mode="markers",
        marker=dict(size=3, color=COLOURS[name], opacity=0.6),
        name=LABELS[name],
        legendgroup=name,
    )
    y = H.kl if metric == "KL" else H.w2
    ok = H.grad_evals > 0
    idx = np.unique(np.geomspace(1, ok.sum(), 120).astype(int) - 1)
    line = go.Scatter(
        x=H.grad_evals[ok][idx],
        y=y[ok][idx],
        mode="lines",
        line=dict(color=COLOURS[name]),
        name=LABELS[name],
        legendgroup=name,
        showlegend=False,
    )
    marker = go.Scatter(
        x=[max(H.grad_evals[i], 1.0)],
        y=[y[i]],
        mode="markers",
        marker=dict(size=10, color=COLOURS[name], line=dict(color="white", width=1)),
        showlegend=False,
        hovertemplate=f"{LABELS[name]}<br>{metric} = %{{y:.4f}}<extra></extra>",
    )
    return cloud, line, marker


def _hist_from_moments(x, mean, var):
    return np.exp(-0.5 * (x - mean) ** 2 / var) / np.sqrt(2 * np.pi * var)


def flow_1d_frame(data: dict, t: float = 3.0):
    """Density of the GD and SGD flows at flow time ``t`` (PDE, the nearest stored time), with
    the Gaussian fits of the ULA and SGLD particle clouds and the target. Always 5 traces.

    ``data`` is ``experiments.flow_1d_data(settings)``'s result.

    See: book/wflows/01-three-samplers.ipynb
    """
    import plotly.graph_objects as go

    if not isinstance(data, dict) or "settings" not in data:
        raise TypeError("data must be the dict returned by experiments.flow_1d_data")
    t = check_positive("t", t, allow_zero=True)
    eta, batch_size = data["settings"].eta, data["settings"].batch_size
    j = int(np.argmin(np.abs(data["t"] - t)))
    x = data["x"][::2]  # 141 plotted points per curve
    H_ula, H_sgld = data["ula"], data["sgld"]
    ju = min(j, len(H_ula.step) - 1)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=x, y=data["pi"][::2], name="target π", line=dict(color="#555555", dash="dash"))
    )
    fig.add_trace(
        go.Scatter(
            x=x, y=data["gd"][j][::2], name="GD flow (PDE)", line=dict(color=COLOURS["langevin"])
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=data["sgd"][j][::2],
            name="SGD flow (PDE)",
            line=dict(color=COLOURS["sgld"], width=3),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=_hist_from_moments(x, H_ula.mean[ju, 0], H_ula.cov[ju, 0, 0]),
            name="ULA particles (Gaussian fit)",
            line=dict(color=COLOURS["langevin"], dash="dot"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=_hist_from_moments(x, H_sgld.mean[ju, 0], H_sgld.cov[ju, 0, 0]),
            name="SGLD particles (Gaussian fit)",
            line=dict(color=COLOURS["sgld"], dash="dot"),
        )
    )
    fig.update_layout(
        title_text=f"t = {data['t'][j]:.2f}: η = {eta:g}, b = {batch_size}",
        xaxis_title="x",
        yaxis_title="density",
        yaxis_range=[0, 0.9],
        height=420,
    )
    return fig


def sgld_variance_frame(sample: Any):
    """Histogram of SGLD particles after flow time 8 on ``shifted_quadratic_1d(s)`` against
    the target, the SGD flow's stationary law and SGLD's discrete stationary law. 4 traces.

    ``sample`` is ``experiments.sgld_variance_sample(settings)``'s result.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    import plotly.graph_objects as go

    sample = check_fields("sample", sample, "X", "var_sgld", "var_flow", "settings")
    X, v_sgld, v_flow, h = sample.X, sample.var_sgld, sample.var_flow, sample.settings.h
    edges = np.linspace(-6, 6, 81)
    hist, _ = np.histogram(X, bins=edges, density=True)
    mid = 0.5 * (edges[1:] + edges[:-1])
    x = np.linspace(-6, 6, 241)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=mid, y=hist, name="SGLD particles", marker_color="#E69F00", opacity=0.5))
    for var, name, style in [
        (1.0, "target π = N(0, 1)", dict(color="#555555", dash="dash")),
        (v_flow, f"SGD flow: 1 + ηs²/2b = {v_flow:.3f}", dict(color=COLOURS["sgld"])),
        (v_sgld, f"SGLD: (1 + hs²/2b)/(1 − h/2) = {v_sgld:.3f}", dict(color="#000000", dash="dot")),
    ]:
        fig.add_trace(go.Scatter(x=x, y=_hist_from_moments(x, 0.0, var), name=name, line=style))
    fig.update_layout(
        title_text=f"h = {h:.3g}: empirical variance {X.var():.3f} (formula {v_sgld:.3f})",
        xaxis_title="x",
        yaxis_title="density",
        yaxis_range=[0, 0.5],
        bargap=0,
        height=420,
        legend=dict(x=0.01, y=0.99),
    )
    return fig
