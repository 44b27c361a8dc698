"""Plotly figure builders for the traceability chapter's widgets.

See: book/traceability/01-tracing-attack.ipynb, book/traceability/02-dp-and-tradeoff.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_fields

__all__ = ["recall_figure", "scores_figure"]


def _hist(x, edges):
    h, _ = np.histogram(x, bins=edges, density=True)
    mids = 0.5 * (edges[1:] + edges[:-1])
    return mids, h


def scores_figure(scores):
    """Score histograms of training vs fresh samples for noisy ERM, with the threshold, from
    ``experiments.tracer_scores_view(settings)`` (a ``Scores``).

    Four traces: training scores, fresh scores, the threshold line, the ξ-tail label.
    See: book/traceability/01-tracing-attack.ipynb
    """
    import plotly.graph_objects as go

    fields = ("train", "fresh", "tau", "settings", "excess")
    check_fields("scores", scores, *fields, kind="a Scores (a result of lab.traceability)")
    s_tr, s_fr, tau = scores.train, scores.fresh, scores.tau
    sigma, n, xi = scores.settings.sigma, scores.settings.n, scores.settings.xi
    traced, fpr, exc = scores.traced, scores.fpr, scores.excess
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


def recall_figure(r):
    """Recall (traced fraction) against excess risk on ``P_{k,p}`` for noisy ERM and the
    (1, 1/n²)-DP learner, with the target accuracy α, the level ξ and the DP ceiling, from
    ``experiments.recall_widget(...)`` (a ``RecallCurve`` whose last learner is the DP one).

    Five traces for every input. See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    import plotly.graph_objects as go

    fields = ("labels", "excess", "traced", "traced_se", "ceiling", "alpha")
    check_fields("r", r, *fields, kind="a RecallCurve (a result of lab.traceability)")
    alpha, p, n, d, xi = r.alpha, r.p, r.n, r.d, r.xi
    sigmas = [level for kind, level in r.labels if kind == "noisy"]
    m = len(sigmas)
    ceiling = r.ceiling
    xmax = max(1.3 * alpha, float(np.max(r.excess)) * 1.05)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=r.excess[:m],
            y=r.traced[:m],
            mode="lines+markers",
            error_y={"type": "data", "array": r.traced_se[:m]},
            text=[f"σ = {s:g}" for s in sigmas],
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
