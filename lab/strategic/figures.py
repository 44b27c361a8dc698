"""Figures of the strategic chapter (plotly for ``lab.core.explore``; matplotlib panels).

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.checks import check_choice, check_int, check_positive, check_range
from . import (
    NOISE_PROFILES,
    StrategicEnv,
    accepts,
    best_response,
    explore_fit_shift,
    naive_unshifted,
)

__all__ = ["best_response_figure", "cumulative_regret_runs", "regret_figure"]

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
    """Agents' true and reported features under the rule ``<w*, x> >= b* + shift``.

    Accepted agents show their (noisy) label; rejected agents are grey crosses (label never
    revealed). ``shift = r`` is the clairvoyant rule. Seven traces for every argument.

    See: book/strategic/01-best-responses.ipynb
    """
    import plotly.graph_objects as go

    shift = check_range("shift", shift, -2.0, 3.0)
    r = check_positive("r", r, allow_zero=True)
    noise = check_choice("noise", noise, NOISE_PROFILES)
    n = check_int("n", n, 1, 300)
    env = StrategicEnv(r=r, noise=noise, n_mc=20_000)
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


@functools.lru_cache(maxsize=64)
def cumulative_regret_runs(
    T: int, noise: str = "asymmetric", r: float = 0.5, seeds: int = 1, n_dirs: int = 180
) -> dict:
    """Cumulative expected regret of explore-fit-shift (0-1 ERM), the same learner with a
    logistic fitter, and the unshifted true boundary, averaged over ``seeds`` runs.

    See: book/strategic/02-regret.ipynb
    """
    T = check_int("T", T, 64)
    seeds = check_int("seeds", seeds, 1)
    env = StrategicEnv(r=r, noise=noise, n_mc=50_000)
    out = {}
    for name, kw in (
        ("explore-fit-shift", {"fitter": "erm01"}),
        ("logistic fitter", {"fitter": "logistic"}),
    ):
        out[name] = np.mean(
            [
                np.cumsum(explore_fit_shift(env, T, seed=s, n_dirs=n_dirs, **kw)["regret"])
                for s in range(seeds)
            ],
            axis=0,
        )
    out["unshifted true boundary"] = np.cumsum(naive_unshifted(env, T)["regret"])
    return out


def regret_figure(log2T: int = 13, noise: str = "asymmetric", r: float = 0.5):
    """Cumulative regret against rounds (log-log) with a √t guide: four traces always.

    See: book/strategic/02-regret.ipynb
    """
    import plotly.graph_objects as go

    log2T = check_int("log2T", log2T, 8, 20)
    T = 2**log2T
    runs = cumulative_regret_runs(T, noise, float(r))
    idx = np.unique(np.geomspace(1, T, 250).astype(int)) - 1
    t = idx + 1.0
    fig = go.Figure()
    for (name, c), colour in zip(runs.items(), (BLUE, PURPLE, ORANGE), strict=True):
        fig.add_scatter(
            x=t, y=np.maximum(c[idx], 1e-3), mode="lines", line=dict(color=colour), name=name
        )
    ratio = runs["explore-fit-shift"][-1] / np.sqrt(T)
    fig.add_scatter(
        x=t,
        y=ratio * np.sqrt(t),
        mode="lines",
        line=dict(color="black", dash="dot"),
        name=f"{ratio:.2f}·√t",
    )
    fig.update_layout(
        title=f"T = {T}, noise = {noise}, r = {r:.2f}: regret(T)/√T = {ratio:.2f}",
        xaxis=dict(type="log", title="round t"),
        yaxis=dict(type="log", title="cumulative expected regret", range=[-1, np.log10(T)]),
        height=480,
    )
    return fig
