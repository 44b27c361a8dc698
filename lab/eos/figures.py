"""Figures of the eos chapter (plotly, for ``lab.core.explore``; matplotlib for static panels).

Kept out of the notebooks so that each notebook cell stays a sentence of code, and kept out
of the reference kernels so that those read like the paper.

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.style import INK, PALETTE
from lab.eos.experiments import critical_run, envelope, fit_power_law, regime_run
from lab.eos.models import XYModel
from lab.eos.network import MLPRun
from lab.eos.reference import distance_to_flattest, lambda_min

BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, YELLOW, BLACK = PALETTE
GREY = INK  # reference curves (the manifold, y = x) in the book's ink colour

__all__ = [
    "REGIME_COLOURS",
    "cobweb_figure",
    "critical_fit_figure",
    "network_figure",
    "regime_figure",
]

REGIME_COLOURS = {
    "stable": GREEN,
    "subcritical": BLUE,
    "critical": ORANGE,
    "supercritical": PURPLE,
    "divergent": VERMILLION,
}


def log_indices(n: int, points: int = 300) -> np.ndarray:
    """About ``points`` indices in ``1 .. n-1``, evenly spaced on a log scale (for log step axes)."""
    n = check_int("n", n, 2)
    return np.unique(np.geomspace(1, n - 1, points).astype(int))


def regime_figure(eta: float, lambda0: float = 2.6, r0: float = 1e-3, steps: int = 4000):
    """Four linked panels of one xy-model run: path on the plane, ``|r_k|``, sharpness, loss.

    The title is the regime badge from ``classify_regime``.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    regime, run = regime_run(eta, lambda0, r0, steps)  # validates; lab.eos.experiments: cached
    lam_min, _ = lambda_min(XYModel())
    k = run.k
    colour = REGIME_COLOURS[regime]

    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "path in the (x, y) plane",
            "|residual| r_k (log)",
            "sharpness of the projected minimiser",
            "loss (log)",
        ),
        horizontal_spacing=0.12,
        vertical_spacing=0.16,
    )
    # (a) the manifold xy = 1 near the run, the two minimisers of sharpness 2/eta, the path
    xs = run.w[:, 0]
    lo, hi = min(xs.min(), 0.55) * 0.95, max(xs.max(), 1.9) * 1.05
    grid = np.linspace(lo, hi, 200)
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=1 / grid,
            mode="lines",
            name="M: xy = 1",
            line=dict(color=GREY, width=1.5),
        ),
        1,
        1,
    )
    s = 2.0 / eta  # points of M with lambda = x^2 + 1/x^2 = 2/eta (exist when 2/eta >= 2)
    if s >= 2.0:
        x2 = np.array([(s + np.sqrt(s * s - 4)) / 2, (s - np.sqrt(s * s - 4)) / 2])
        px = np.sqrt(x2)
    else:
        px = np.array([np.nan, np.nan])
    fig.add_trace(
        go.Scatter(
            x=px,
            y=1 / px,
            mode="markers",
            name="λ = 2/η on M",
            marker=dict(symbol="x", size=10, color=VERMILLION),
        ),
        1,
        1,
    )
    idx = np.unique(np.geomspace(1, len(xs), 600).astype(int) - 1)
    fig.add_trace(
        go.Scatter(
            x=xs[idx],
            y=run.w[idx, 1],
            mode="lines+markers",
            name="GD path",
            marker=dict(size=3, color=colour),
            line=dict(width=0.8, color=colour),
        ),
        1,
        1,
    )
    # (b)-(d) on a log step axis, sampled at about 300 log-spaced steps: the transient lives in
    # the first hundred steps, the rates in the tail
    ks = log_indices(len(k), 300)
    env = np.append(envelope(run.residual), abs(run.residual[-1]))  # max over consecutive pairs
    fig.add_trace(
        go.Scatter(
            x=k[ks], y=env[ks] + 1e-300, mode="lines", name="|r_k|", line=dict(color=colour)
        ),
        1,
        2,
    )
    ss = run.sharpness[ks]
    fig.add_trace(
        go.Scatter(x=k[ks], y=ss, mode="lines", name="λ(p_k)", line=dict(color=colour)), 2, 1
    )
    fig.add_trace(
        go.Scatter(
            x=k[ks], y=run.loss[ks] + 1e-300, mode="lines", name="loss", line=dict(color=colour)
        ),
        2,
        2,
    )

    fig.add_hline(
        y=2 / eta,
        line=dict(dash="dash", color=VERMILLION),
        row=2,
        col=1,
        annotation_text="2/η",
        annotation_position="top right",
    )
    fig.add_hline(
        y=lam_min,
        line=dict(dash="dot", color=GREY),
        row=2,
        col=1,
        annotation_text="λ_min",
        annotation_position="bottom right",
    )
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=2)
    fig.update_yaxes(type="log", exponentformat="power", row=2, col=2)
    fig.update_xaxes(title_text="x", row=1, col=1)
    fig.update_yaxes(title_text="y", row=1, col=1)
    for r, c in ((1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(title_text="step k", type="log", exponentformat="power", row=r, col=c)
    fig.update_yaxes(
        range=[min(lam_min, ss.min()) - 0.05, max(2 / eta, ss.max()) + 0.1], row=2, col=1
    )
    if run.diverged:
        end = f"diverged at step {run.steps_run}"
    elif regime == "divergent":
        regime = "beyond the window"  # past period doubling: period-4, chaos; outside the theorem
        end = "no period-2 orbit is stable here"
    else:
        end = f"final λ = {run.sharpness[-1]:.3f}"
    fig.update_layout(
        title_text=f"η = {eta:.3f}: <b>{regime}</b> (2/η = {2 / eta:.3f}, {end})",
        height=620,
        showlegend=False,
    )
    return fig


def cobweb_figure(eta: float, a0: float = 1.08, iterations: int = 60):
    """Cobweb of the balanced xy map ``a' = a (1 + eta - eta a^2)`` (the residual dynamics on
    ``x = y = a``), with its second iterate: a fixed point at ``a = 1`` for ``eta < 1``, a flip
    bifurcation at ``eta = 1``, a 2-cycle after it."""
    import plotly.graph_objects as go

    eta = check_positive("eta", eta)
    iterations = check_int("iterations", iterations, 1, 10_000)
    model = XYModel()

    def F(a):
        return model.balanced_map(a, eta)  # eq: a' = a (1 + eta - eta a^2)

    a = np.linspace(0.55, 1.45, 300)
    path_x, path_y = [a0], [0.55]
    cur = a0
    for _ in range(iterations):
        nxt = F(cur)
        if not np.isfinite(nxt) or abs(nxt) > 10:
            break
        path_x += [cur, nxt]
        path_y += [nxt, nxt]
        cur = nxt
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=a, y=a, mode="lines", name="a' = a", line=dict(color=GREY, dash="dot"))
    )
    fig.add_trace(go.Scatter(x=a, y=F(a), mode="lines", name="F(a)", line=dict(color=BLUE)))
    fig.add_trace(
        go.Scatter(x=a, y=F(F(a)), mode="lines", name="F(F(a))", line=dict(color=PURPLE, width=1))
    )
    fig.add_trace(
        go.Scatter(
            x=path_x,
            y=path_y,
            mode="lines",
            name="GD iterates",
            line=dict(color=VERMILLION, width=1),
        )
    )
    mult = 1 - 2 * eta  # F'(1) = 1 - 2 eta
    if abs(mult) < 1:
        state = "stable fixed point"
    elif eta < np.sqrt(5) - 1:  # the 2-cycle's own multiplier reaches -1 at sqrt(5) - 1
        state = "fixed point unstable: stable 2-cycle"
    else:
        state = "2-cycle unstable too: period 4 and beyond"
    fig.update_layout(
        title_text=f"η = {eta:.3f}: F'(1) = 1 − 2η = {mult:+.2f} ({state})",
        xaxis=dict(title="a_k (on the balanced line x = y = a)", range=[0.55, 1.45]),
        yaxis=dict(title="a_{k+1}", range=[0.55, 1.45]),
        height=520,
        legend=dict(x=0.01, y=0.99),
    )
    return fig


def critical_fit_figure(model: str = "xy", window: tuple = (3.0, 5.0), steps: int = 100_000):
    """Log-log plot of the distance to the flattest minimiser and of ``lambda - lambda_min`` in
    the critical regime, with power laws fitted on ``10**window[0] <= k <= 10**window[1]``."""
    import plotly.graph_objects as go

    run = critical_run(model, steps)  # lab.eos.experiments: cached
    m = run.model
    lam_min, _ = lambda_min(m)
    k = run.k[1:]
    dist = distance_to_flattest(m, run.w[1:])
    excess = run.sharpness[1:] - lam_min
    lo, hi = 10 ** float(window[0]), min(10 ** float(window[1]), k[-1])
    if not hi > lo * 1.5:
        raise ValueError(
            f"window must span more than a factor 1.5 of steps inside [1, {k[-1]}] (got {window})"
        )
    p_dist, c_dist = fit_power_law(k, dist, window=(lo, hi))
    p_exc, c_exc = fit_power_law(k, np.maximum(excess, 1e-300), window=(lo, hi))
    idx = np.unique(np.geomspace(1, len(k), 400).astype(int) - 1)
    kf = np.geomspace(lo, hi, 50)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=k[idx], y=dist[idx], mode="lines", name="|w_k − w_flat|", line=dict(color=BLUE)
        )
    )
    fig.add_trace(
        go.Scatter(
            x=k[idx], y=excess[idx], mode="lines", name="λ_k − λ_min", line=dict(color=GREEN)
        )
    )
    fig.add_trace(
        go.Scatter(
            x=kf,
            y=c_dist * kf**-p_dist,
            mode="lines",
            name=f"fit k^−{p_dist:.3f}",
            line=dict(color=VERMILLION, dash="dash", width=3),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=kf,
            y=c_exc * kf**-p_exc,
            mode="lines",
            name=f"fit k^−{p_exc:.3f}",
            line=dict(color=PURPLE, dash="dash", width=3),
        )
    )
    fig.add_vrect(x0=lo, x1=hi, fillcolor=ORANGE, opacity=0.12, line_width=0)
    fig.update_layout(
        title_text=f"{model}, η = 2/λ_min = {2 / lam_min:.4f}: distance ~ k^−{p_dist:.3f}, excess sharpness ~ k^−{p_exc:.3f}",
        xaxis=dict(type="log", title="step k"),
        yaxis=dict(type="log", title="error", exponentformat="power"),
        height=520,
        legend=dict(x=0.01, y=0.02),
    )
    return fig


def network_figure(run, steps: int | None = None):
    """Sharpness (with the ``2/eta`` line) and loss of one ``mlp_digits_gd`` run, side by side."""
    if not isinstance(run, MLPRun):
        raise TypeError(f"run must be an MLPRun from mlp_digits_gd (got {type(run).__name__})")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    eta = run.eta
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("top Hessian eigenvalue", "training loss (log)"),
        horizontal_spacing=0.12,
    )
    fig.add_trace(
        go.Scatter(
            x=run.sharpness_steps,
            y=run.sharpness,
            mode="lines+markers",
            name="sharpness",
            marker=dict(size=4),
            line=dict(color=BLUE),
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=np.arange(len(run.loss)),
            y=run.loss,
            mode="lines",
            name="loss",
            line=dict(color=GREEN),
        ),
        1,
        2,
    )
    fig.add_hline(
        y=2 / eta,
        line=dict(dash="dash", color=VERMILLION),
        row=1,
        col=1,
        annotation_text="2/η",
        annotation_position="top left",
    )
    top = max(2 / eta, float(np.max(run.sharpness)) if len(run.sharpness) else 0.0) * 1.15
    fig.update_yaxes(range=[0, min(top, 60)], title_text="λ_max of the Hessian", row=1, col=1)
    fig.update_yaxes(type="log", title_text="loss", row=1, col=2)
    fig.update_xaxes(title_text="GD step", range=[0, steps or len(run.loss)], row=1, col=1)
    fig.update_xaxes(title_text="GD step", row=1, col=2)
    late = run.sharpness[len(run.sharpness) // 2 :]
    where = (
        f"late sharpness {late.mean():.1f} vs 2/η = {2 / eta:.1f}"
        if len(late)
        else "sharpness not tracked"
    )
    fig.update_layout(title_text=f"η = {eta:.3g}: {where}", height=430, showlegend=False)
    return fig


def manifold_curves_figure(runs: dict, *, title: str | None = None):
    """The paper's Figs 2-4 in one grid: per regime (rows), the distance ``‖θ∥_t - θ∥*‖``,
    ``|θ⊥_t|`` and the sharpness gap ``λ(θ∥_t) - λ*`` (columns), one line per start.

    ``runs`` maps a regime name to a ``ManifoldRuns``. Returns a matplotlib figure.
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a non-empty dict {regime name: ManifoldRuns}")
    fig, axes = plt.subplots(len(runs), 3, figsize=(11, 2.9 * len(runs)), squeeze=False)
    columns = ("‖θ∥ₜ − θ∥*‖", "|θ⊥ₜ|", "λ(θ∥ₜ) − λ*")
    for row, (name, run) in zip(axes, runs.items(), strict=True):
        t = np.maximum(run.t, 1)
        for i in range(run.distance.shape[0]):
            colour = PALETTE[i % len(PALETTE)]
            for ax, values in zip(
                row, (run.distance[i], np.abs(run.perp[i]), run.gap[i]), strict=True
            ):
                ax.loglog(t, np.where(values > 0, values, np.nan), color=colour, lw=1)
        for ax, label in zip(row, columns, strict=True):
            ax.set(xlabel="step t", ylabel=label)
        row[0].set_title(f"{name}: η = {run.eta:g}", loc="left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
