"""Figures of the strategic chapter (plotly for ``lab.core.explore``): results in, figures out
(the results come from :mod:`lab.strategic.experiments`).

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_fields, check_int

__all__ = ["best_response_figure", "regret_curves_figure"]

BLUE, ORANGE, GREY, GREEN, PURPLE = "#0072B2", "#E69F00", "#999999", "#009E73", "#CC79A7"


def _line(w, tau, lim=3.2):
    """Points of the line <w, x> = tau inside the box [-lim, lim]^2."""
    t = np.linspace(-lim * 1.5, lim * 1.5, 2)
    p0 = tau * w
    v = np.array([-w[1], w[0]])
    pts = p0[None, :] + t[:, None] * v[None, :]
    return pts[:, 0], pts[:, 1]


def best_response_figure(scene):
    """Agents' true and reported features under the rule ``<w*, x> >= shift`` (the paper's
    model: ``b* = 0``, radius ``r = gamma``), from a
    :class:`~lab.strategic.experiments.ResponseScene`.

    Accepted agents show their (noisy) label; rejected agents are grey crosses (label never
    revealed). ``shift = r`` is the clairvoyant rule. Seven traces for every scene.

    See: book/strategic/01-best-responses.ipynb
    """
    import plotly.graph_objects as go

    sc = check_fields(
        "scene",
        scene,
        "X",
        "Xt",
        "y",
        "accepted",
        "moved",
        "w",
        "tau",
        "r",
        "b_star",
        "shift",
        "regret",
        kind="a ResponseScene",
    )
    X, Xt, y, acc, moved, w, tau, r = sc.X, sc.Xt, sc.y, sc.accepted, sc.moved, sc.w, sc.tau, sc.r
    fig = go.Figure()
    fig.add_scatter(
        x=X[moved, 0],
        y=X[moved, 1],
        mode="markers",
        marker=dict(color=GREY, size=5, symbol="circle-open"),
        name="true position of movers",
    )
    for mask, colour, name in (
        (acc & (y > 0), BLUE, "accepted, y = +1"),
        (acc & (y < 0), ORANGE, "accepted, y = −1"),
    ):
        fig.add_scatter(
            x=Xt[mask, 0],
            y=Xt[mask, 1],
            mode="markers",
            marker=dict(color=colour, size=6),
            name=name,
        )
    fig.add_scatter(
        x=Xt[~acc, 0],
        y=Xt[~acc, 1],
        mode="markers",
        marker=dict(color=GREY, size=5, symbol="x"),
        name="rejected (label hidden)",
    )
    _add_lines(fig, w, tau, r, sc.b_star)
    fig.update_layout(
        title=f"bar = b* {sc.shift:+.2f}, r = {r:.2f}: {moved.mean():.0%} moved, "
        f"regret/round {sc.regret:.3f} (clairvoyant: shift = r)",
        xaxis=dict(range=[-3, 3], title="x₁", scaleanchor="y"),
        yaxis=dict(range=[-3, 3], title="x₂"),
        height=520,
    )
    return fig


def _add_lines(fig, w, tau, r, b_star) -> None:
    """The posted bar, how far down it reaches and the Bayes boundary."""
    lx, ly = _line(w, tau)
    fig.add_scatter(x=lx, y=ly, mode="lines", line=dict(color="black"), name="announced bar")
    lx, ly = _line(w, tau - r)
    fig.add_scatter(
        x=lx, y=ly, mode="lines", line=dict(color="black", dash="dot"), name="bar − r (reach)"
    )
    lx, ly = _line(w, b_star)
    fig.add_scatter(
        x=lx, y=ly, mode="lines", line=dict(color=GREEN, dash="dash"), name="Bayes boundary"
    )


NAMES = {
    "ours": ("Algorithm 1 (the paper)", BLUE),
    "zhang-partial": ("Zhang et al. 2020, partial", ORANGE),
    "zhang-full": ("Zhang et al. 2020, full", GREY),
    "perceptron-partial": ("Strategic Perceptron, partial", GREEN),
    "perceptron-full": ("Strategic Perceptron, full", PURPLE),
    "explore-fit-shift": ("explore-fit-shift (extra, ours)", "#56B4E9"),
}


def regret_curves_figure(comparison, upto: int | None = None):
    """Mean cumulative expected regret of each learner up to cycle ``upto`` (one trace per
    learner of the comparison, at most 300 points each).

    See: book/strategic/02-regret.ipynb
    """
    import plotly.graph_objects as go

    check_fields("comparison", comparison, "T", "mean", kind="a Comparison")
    if not isinstance(comparison.mean, dict):
        raise TypeError(f"comparison must be a Comparison (got {type(comparison).__name__})")
    T = comparison.T
    upto = T if upto is None else check_int("upto", upto, 2, T)
    idx = np.unique(np.linspace(0, upto - 1, 300).astype(int))
    fig = go.Figure()
    for key, curve in comparison.mean.items():
        name, colour = NAMES[key]
        fig.add_scatter(x=idx + 1, y=curve[idx], mode="lines", name=name, line=dict(color=colour))
    top = max(float(c[upto - 1]) for c in comparison.mean.values())
    fig.update_layout(
        title=f"cumulative regret after {upto} cycles",
        xaxis=dict(title="cycle t", range=[0, upto]),
        yaxis=dict(title="cumulative expected regret", range=[0, 1.05 * top]),
        height=460,
    )
    return fig
