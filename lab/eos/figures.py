"""Figures of the eos chapter (plotly, for ``lab.core.explore``; matplotlib for static panels).

Results in, figures out: every function takes a result of ``lab.eos.results`` (what a driver
of ``experiments.py`` or ``network.py`` returned) and draws it; nothing here runs GD, fits or
caches. A widget is ``figures.f(experiments.g(settings))``.

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_instance, check_int
from lab.core.style import INK, PALETTE
from lab.eos.results import Cobweb, CriticalFit, ManifoldRuns, MLPRun, RegimeRun

BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, YELLOW, BLACK = PALETTE
GREY = INK  # reference curves (the manifold, y = x) in the book's ink colour

__all__ = [
    "REGIME_COLOURS",
    "cobweb_figure",
    "critical_fit_figure",
    "manifold_curves_figure",
    "network_figure",
    "regime_figure",
    "regime_panels",
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


def _path_panel(fig, result: RegimeRun, colour: str) -> None:
    """(a) the manifold xy = 1 near the run, the two minimisers of sharpness 2/η, the path."""
    import plotly.graph_objects as go

    run, eta = result.run, result.eta
    xs = run.w[:, 0]
    lo, hi = min(xs.min(), 0.55) * 0.95, max(xs.max(), 1.9) * 1.05
    grid = np.linspace(lo, hi, 200)
    line = dict(color=GREY, width=1.5)
    fig.add_trace(go.Scatter(x=grid, y=1 / grid, mode="lines", name="M: xy = 1", line=line), 1, 1)
    s = 2.0 / eta  # points of M with lambda = x^2 + 1/x^2 = 2/eta (exist when 2/eta >= 2)
    if s >= 2.0:
        px = np.sqrt(np.array([(s + np.sqrt(s * s - 4)) / 2, (s - np.sqrt(s * s - 4)) / 2]))
    else:
        px = np.array([np.nan, np.nan])
    marker = dict(symbol="x", size=10, color=VERMILLION)
    fig.add_trace(
        go.Scatter(x=px, y=1 / px, mode="markers", name="λ = 2/η on M", marker=marker), 1, 1
    )
    idx = np.unique(np.geomspace(1, len(xs), 600).astype(int) - 1)
    path = go.Scatter(
        x=xs[idx],
        y=run.w[idx, 1],
        mode="lines+markers",
        name="GD path",
        marker=dict(size=3, color=colour),
        line=dict(width=0.8, color=colour),
    )
    fig.add_trace(path, 1, 1)


def _step_panels(fig, result: RegimeRun, colour: str) -> np.ndarray:
    """(b)-(d) on a log step axis at about 300 log-spaced steps (the transient lives in the
    first hundred steps, the rates in the tail); returns the sampled sharpness."""
    import plotly.graph_objects as go

    run, eta = result.run, result.eta
    k = run.k
    ks = log_indices(len(k), 300)
    env = result.envelope  # max over consecutive pairs
    line = dict(color=colour)
    fig.add_trace(
        go.Scatter(x=k[ks], y=env[ks] + 1e-300, mode="lines", name="|r_t|", line=line), 1, 2
    )
    ss = run.sharpness[ks]
    fig.add_trace(go.Scatter(x=k[ks], y=ss, mode="lines", name="λ(p_t)", line=line), 2, 1)
    loss = run.loss[ks] + 1e-300
    fig.add_trace(go.Scatter(x=k[ks], y=loss, mode="lines", name="loss", line=line), 2, 2)
    for y, dash, colour_, text, where in (
        (2 / eta, "dash", VERMILLION, "2/η", "top right"),
        (result.lambda_min, "dot", GREY, "λ_min", "bottom right"),
    ):
        fig.add_hline(
            y=y,
            line=dict(dash=dash, color=colour_),
            row=2,
            col=1,
            annotation_text=text,
            annotation_position=where,
        )
    return ss


def _regime_title(result: RegimeRun) -> str:
    run, eta, regime = result.run, result.eta, result.regime
    if run.diverged:
        end = f"diverged at step {run.steps_run}"
    elif regime == "divergent":
        regime = "beyond the window"  # past period doubling: period-4, chaos; outside the theorem
        end = "no period-2 orbit is stable here"
    else:
        end = f"final λ = {run.sharpness[-1]:.3f}"
    return f"η = {eta:.3f}: <b>{regime}</b> (2/η = {2 / eta:.3f}, {end})"


def regime_figure(result: RegimeRun):
    """Four linked panels of one xy-model run (``experiments.regime_run``): path on the plane,
    ``|r_k|``, sharpness, loss. The title is the regime badge from ``classify_regime``.

    See: book/eos/01-three-regimes.ipynb
    """
    check_instance("result", result, RegimeRun)
    from plotly.subplots import make_subplots

    colour = REGIME_COLOURS[result.regime]
    titles = (
        "path in the (x, y) plane",
        "|residual| r_t (log)",
        "sharpness of the projected minimiser",
        "loss (log)",
    )
    fig = make_subplots(
        rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.12, vertical_spacing=0.16
    )
    _path_panel(fig, result, colour)
    ss = _step_panels(fig, result, colour)
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=2)
    fig.update_yaxes(type="log", exponentformat="power", row=2, col=2)
    fig.update_xaxes(title_text="x", row=1, col=1)
    fig.update_yaxes(title_text="y", row=1, col=1)
    for r, c in ((1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(title_text="step t", type="log", exponentformat="power", row=r, col=c)
    lam_min, eta = result.lambda_min, result.eta
    fig.update_yaxes(
        range=[min(lam_min, ss.min()) - 0.05, max(2 / eta, ss.max()) + 0.1], row=2, col=1
    )
    fig.update_layout(title_text=_regime_title(result), height=620, showlegend=False)
    return fig


def cobweb_figure(web: Cobweb):
    """Cobweb of the balanced xy map ``a' = a (1 + eta - eta a^2)`` (``experiments.cobweb``),
    with its second iterate: a fixed point at ``a = 1`` for ``eta < 1``, a flip bifurcation at
    ``eta = 1``, a 2-cycle after it.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    check_instance("web", web, Cobweb)
    import plotly.graph_objects as go

    a = web.a
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=a, y=a, mode="lines", name="a' = a", line=dict(color=GREY, dash="dot"))
    )
    fig.add_trace(go.Scatter(x=a, y=web.image, mode="lines", name="F(a)", line=dict(color=BLUE)))
    fig.add_trace(
        go.Scatter(
            x=a, y=web.second, mode="lines", name="F(F(a))", line=dict(color=PURPLE, width=1)
        )
    )
    fig.add_trace(
        go.Scatter(
            x=web.path_x,
            y=web.path_y,
            mode="lines",
            name="GD iterates",
            line=dict(color=VERMILLION, width=1),
        )
    )
    fig.update_layout(
        title_text=f"η = {web.eta:.3f}: F'(1) = 1 − 2η = {web.multiplier:+.2f} ({web.state})",
        xaxis=dict(title="a_k (on the balanced line x = y = a)", range=[0.55, 1.45]),
        yaxis=dict(title="a_{k+1}", range=[0.55, 1.45]),
        height=520,
        legend=dict(x=0.01, y=0.99),
    )
    return fig


def critical_fit_figure(fit: CriticalFit):
    """Log-log plot of the distance to the flattest minimiser and of ``lambda - lambda_min`` in
    the critical regime, with the power laws of ``experiments.critical_fit`` on its window.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    check_instance("fit", fit, CriticalFit)
    import plotly.graph_objects as go

    k, (lo, hi) = fit.k, fit.window
    (p_dist, c_dist), (p_exc, c_exc) = fit.distance_fit, fit.excess_fit
    idx = np.unique(np.geomspace(1, len(k), 400).astype(int) - 1)
    kf = np.geomspace(lo, hi, 50)
    fig = go.Figure()
    for y, name, colour in (
        (fit.distance, "|w_k − w_flat|", BLUE),
        (fit.excess, "λ_k − λ_min", GREEN),
    ):
        fig.add_trace(
            go.Scatter(x=k[idx], y=y[idx], mode="lines", name=name, line=dict(color=colour))
        )
    for p, c, colour in ((p_dist, c_dist, VERMILLION), (p_exc, c_exc, PURPLE)):
        fig.add_trace(
            go.Scatter(
                x=kf,
                y=c * kf**-p,
                mode="lines",
                name=f"fit k^−{p:.3f}",
                line=dict(color=colour, dash="dash", width=3),
            )
        )
    fig.add_vrect(x0=lo, x1=hi, fillcolor=ORANGE, opacity=0.12, line_width=0)
    fig.update_layout(
        title_text=f"{fit.model}, η = 2/λ_min = {fit.eta:.4f}: distance ~ k^−{p_dist:.3f}, "
        f"excess sharpness ~ k^−{p_exc:.3f}",
        xaxis=dict(type="log", title="step k"),
        yaxis=dict(type="log", title="error", exponentformat="power"),
        height=520,
        legend=dict(x=0.01, y=0.02),
    )
    return fig


def network_figure(run, steps: int | None = None):
    """Sharpness (with the ``2/eta`` line) and loss of one ``mlp_digits_gd`` run, side by side."""
    check_instance("run", run, MLPRun)
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
    for name, run in runs.items():
        check_instance(f"runs[{name!r}]", run, ManifoldRuns)
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


def regime_panels(runs: dict):
    """Notebook 1's four panels for a few xy runs (``{regime name: Trajectory}``): the first
    300 steps in the plane, the envelope of ``|r_t|``, the sharpness of the projected minimiser
    (dashed: ``2/η``) and the loss. Returns a matplotlib figure.

    See: book/eos/01-three-regimes.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a non-empty dict {regime name: Trajectory}")
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4))
    for name, run in runs.items():
        colour = REGIME_COLOURS.get(name, INK)
        t, a = run.k, np.abs(run.residual)
        label = f"{name} (η = {run.eta:g})"
        axes[0, 0].plot(*run.w[:300].T, ".-", ms=2, lw=0.6, color=colour, label=label)
        axes[0, 1].loglog(t[1:], np.maximum(a[:-1], a[1:]), color=colour)
        axes[1, 0].semilogx(t[1:], run.sharpness[1:], color=colour)
        axes[1, 0].axhline(2 / run.eta, ls="--", lw=0.8, color=colour)
        axes[1, 1].loglog(t[1:], run.loss[1:] + 1e-300, color=colour)
    xm = np.linspace(0.85, 1.7, 100)
    axes[0, 0].plot(xm, 1 / xm, color=GREY, alpha=0.4, lw=1, zorder=0)
    axes[0, 0].set(xlabel="x", ylabel="y", title="first 300 steps in the plane")
    axes[0, 0].legend(fontsize=8)
    axes[0, 1].set(xlabel="step t", ylabel="envelope of |r_t|", title="oscillation across M")
    axes[1, 0].axhline(2.0, ls=":", color=INK, lw=0.8)
    axes[1, 0].set(xlabel="step t", ylabel="λ of the projected minimiser", title="sharpness")
    axes[1, 1].set(xlabel="step t", ylabel="loss", title="loss (not monotone)", ylim=(1e-32, 1))
    fig.tight_layout()
    return fig
