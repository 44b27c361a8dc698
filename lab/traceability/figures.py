"""Plotly figure builders for the traceability chapter's widgets.

See: book/traceability/01-tracing-attack.ipynb, book/traceability/02-dp-and-tradeoff.ipynb
"""

from __future__ import annotations

import math

import numpy as np

from lab.traceability.experiments import RECALL_SIGMAS, recall_sweep
from lab.traceability.fast import tradeoff_curve
from lab.traceability.reference import (
    dp_trace_bound,
    excess_risk_linear,
    l2_hard_instance,
    noisy_erm_l2,
    trace,
    tracer_scores,
)

__all__ = ["recall_figure", "scores_figure", "tradeoff_figure"]


def _hist(x, edges):
    h, _ = np.histogram(x, bins=edges, density=True)
    mids = 0.5 * (edges[1:] + edges[:-1])
    return mids, h


def scores_figure(sigma: float = 0.1, n: int = 50, d: int = 2500, xi: float = 0.05, seed: int = 0):
    """Score histograms of training vs fresh samples for noisy ERM, with the threshold.

    Four traces: training scores, fresh scores, the threshold line, the ξ-tail label.
    See: book/traceability/01-tracing-attack.ipynb
    """
    import plotly.graph_objects as go

    inst = l2_hard_instance(n, d, seed, n_ref=1000, n_fresh=1000)
    Z, Zr, Zf, mu = inst["Z"], inst["Z_ref"], inst["Z_fresh"], inst["mu"]
    w = noisy_erm_l2(Z, sigma, seed)
    h = Zr.shape[0] // 2
    c = Zr[:h].mean(0)
    s_tr, s_fr = tracer_scores(w, Z, c), tracer_scores(w, Zf, c)
    tau = float(np.quantile(tracer_scores(w, Zr[h:], c), 1 - xi))
    traced = trace(w, Z, Zr, xi).mean()
    fpr = trace(w, Zf, Zr, xi).mean()
    exc = excess_risk_linear(w, mu, d)
    allv = np.concatenate([s_tr, s_fr])
    edges = np.linspace(allv.min(), allv.max(), 41)
    x1, h1 = _hist(s_tr, edges)
    x2, h2 = _hist(s_fr, edges)
    top = float(max(h1.max(), h2.max()))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x1, y=h1, mode="lines", line_shape="hvh", name="training samples"))
    fig.add_trace(go.Scatter(x=x2, y=h2, mode="lines", line_shape="hvh", name="fresh samples"))
    fig.add_trace(
        go.Scatter(x=[tau, tau], y=[0, top], mode="lines", line_dash="dash", name="threshold τ")
    )
    fig.add_trace(
        go.Scatter(
            x=[tau],
            y=[top * 0.9],
            mode="text",
            text=[" IN →"],
            textposition="middle right",
            showlegend=False,
        )
    )
    fig.update_layout(
        title=(
            f"σ = {sigma:.3g}: excess risk {exc:.3f}, traced {traced:.2f} of n = {n}, "
            f"false positives {fpr:.3f} (ξ = {xi:g})"
        ),
        xaxis_title="score ⟨ŵ, z − m̂⟩",
        yaxis_title="density",
        height=420,
    )
    return fig


def tradeoff_figure(
    xi: float = 0.05,
    p: float = 2.0,
    eps: float = 1.0,
    n: int = 50,
    d: int = 1000,
    reps: int = 3,
    seed: int = 0,
):
    """Traced fraction against excess risk for noisy ERM in ℓp, the DP learner and its ceiling.

    Four traces: the noisy-ERM curve, the (ε, 10⁻⁵)-DP learner, the line y = ξ, the DP ceiling.
    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    import plotly.graph_objects as go

    sig = [0.0, 0.1, 0.3, 1.0, 3.0, 10.0]
    r = tradeoff_curve(n, d, sig, xi=xi, reps=reps, seed=seed, p=p, show_progress=False)
    dp = tradeoff_curve(n, d, eps=[eps], xi=xi, reps=reps, seed=seed, p=2.0, show_progress=False)
    bound = dp_trace_bound(eps, 1e-5, xi)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=r["excess"],
            y=r["traced"],
            mode="lines+markers",
            error_y={"type": "data", "array": r["traced_se"]},
            text=[f"σ = {s:g}" for s in sig],
            name=f"noisy ERM, ℓ{p:g} ball",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=dp["excess"],
            y=dp["traced"],
            mode="markers",
            marker_size=12,
            marker_symbol="star",
            error_y={"type": "data", "array": dp["traced_se"]},
            name=f"DP Gaussian (ε = {eps:g}, ℓ2)",
        )
    )
    xmax = max(0.6, float(np.max(r["excess"])) * 1.05)
    fig.add_trace(go.Scatter(x=[0, xmax], y=[xi, xi], mode="lines", line_dash="dot", name="ξ"))
    fig.add_trace(
        go.Scatter(
            x=[0, xmax],
            y=[bound, bound],
            mode="lines",
            line_dash="dash",
            name="DP ceiling e^ε ξ + δ",
        )
    )
    fig.update_layout(
        title=f"n = {n}, d = {d}, √d/n = {math.sqrt(d) / n:.2f}, ξ = {xi:g}",
        xaxis_title="excess risk",
        yaxis_title="fraction of training samples traced",
        yaxis_range=[0, 1],
        height=440,
    )
    return fig


def recall_figure(
    alpha: float = 0.15,
    p: float = 2.0,
    xi: float = 0.05,
    n: int = 50,
    d: int = 1000,
    reps: int = 4,
    seed: int = 0,
):
    """Recall (traced fraction) against excess risk on ``P_{k,p}`` for noisy ERM and the
    (1, 1/n²)-DP learner, with the target accuracy α, the level ξ and the DP ceiling.

    Five traces for every input. See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    import plotly.graph_objects as go

    r = recall_sweep(float(alpha), float(p), float(xi), int(n), int(d), int(reps), int(seed))
    m = len(RECALL_SIGMAS)
    ceiling = dp_trace_bound(1.0, 1 / n**2, xi)
    xmax = max(1.3 * alpha, float(np.max(r.excess)) * 1.05)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=r.excess[:m],
            y=r.traced[:m],
            mode="lines+markers",
            error_y={"type": "data", "array": r.traced_se[:m]},
            text=[f"σ = {s:g}" for s in RECALL_SIGMAS],
            name="noisy ERM (σ = 0: ERM)",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=r.excess[m:],
            y=r.traced[m:],
            mode="markers",
            marker_size=12,
            marker_symbol="star",
            error_y={"type": "data", "array": r.traced_se[m:]},
            name="DP learner, ε = 1",
        )
    )
    fig.add_trace(go.Scatter(x=[alpha, alpha], y=[0, 1], mode="lines", name="target α"))
    fig.add_trace(go.Scatter(x=[0, xmax], y=[xi, xi], mode="lines", line_dash="dot", name="ξ"))
    fig.add_trace(
        go.Scatter(
            x=[0, xmax], y=[ceiling, ceiling], mode="lines", line_dash="dash", name="e^ε ξ + δ"
        )
    )
    fig.update_layout(
        title=f"P_k,p with p = {p:g}, k = {r.k}, n = {n}, d = {d}, α = {alpha:g}",
        xaxis_title="excess risk",
        yaxis_title="fraction of training samples traced",
        yaxis_range=[0, 1.05],
        height=440,
    )
    return fig
