"""Figures of the strategic chapter (plotly for ``lab.core.explore``; matplotlib panels).

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.strategic.legacy import NOISE_PROFILES, StrategicEnv, accepts, best_response

__all__ = ["best_response_figure", "regret_curves_figure"]

BLUE, ORANGE, GREY, GREEN, PURPLE = "#0072B2", "#E69F00", "#999999", "#009E73", "#CC79A7"


def _line(w, tau, lim=3.2):
    """Points of the line <w, x> = tau inside the box [-lim, lim]^2."""
    t = np.linspace(-lim * 1.5, lim * 1.5, 2)
    p0 = tau * w
    v = np.array([-w[1], w[0]])
    pts = p0[None, :] + t[:, None] * v[None, :]
    return pts[:, 0], pts[:, 1]


def best_response_figure(
    shift: float = 0.5, r: float = 0.5, noise: str = "asymmetric", n: int = 300, seed: int = 0
):
    """Agents' true and reported features under the rule ``<w*, x> >= shift`` (the paper's
    model: ``b* = 0``, radius ``r = gamma``).

    Accepted agents show their (noisy) label; rejected agents are grey crosses (label never
    revealed). ``shift = r`` is the clairvoyant rule. Seven traces for every argument.

    See: book/strategic/01-best-responses.ipynb
    """
    import plotly.graph_objects as go

    shift = check_range("shift", shift, -2.0, 3.0)
    r = check_positive("r", r, allow_zero=True)
    noise = check_choice("noise", noise, NOISE_PROFILES)
    n = check_int("n", n, 1, 300)
    env = StrategicEnv(b_star=0.0, r=r, noise=noise, n_mc=20_000)
    rng = np.random.default_rng(seed)
    X, y = env.sample(n, rng)
    w, tau = env.w_star, env.b_star + shift
    Xt = best_response(X, w, tau, r)
    acc = accepts(Xt, w, tau)
    moved = np.any(Xt != X, axis=1)
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
    lx, ly = _line(w, tau)
    fig.add_scatter(x=lx, y=ly, mode="lines", line=dict(color="black"), name="announced bar")
    lx, ly = _line(w, tau - r)
    fig.add_scatter(
        x=lx, y=ly, mode="lines", line=dict(color="black", dash="dot"), name="bar − r (reach)"
    )
    lx, ly = _line(w, env.b_star)
    fig.add_scatter(
        x=lx, y=ly, mode="lines", line=dict(color=GREEN, dash="dash"), name="Bayes boundary"
    )
    reg = env.regret(w, tau)
    fig.update_layout(
        title=f"bar = b* {shift:+.2f}, r = {r:.2f}: {moved.mean():.0%} moved, "
        f"regret/round {reg:.3f} (clairvoyant: shift = r)",
        xaxis=dict(range=[-3, 3], title="x₁", scaleanchor="y"),
        yaxis=dict(range=[-3, 3], title="x₂"),
        height=520,
    )
    return fig


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

    from lab.strategic.experiments import Comparison

    if not isinstance(comparison, Comparison):
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
