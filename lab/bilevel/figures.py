"""Figures of the bilevel chapter: results of :mod:`lab.bilevel.experiments` to plotly figures
(for ``lab.core.explore``) and matplotlib panels. Nothing here solves, runs or caches.

See: book/bilevel/01-kinks-and-stationarity.ipynb, book/bilevel/02-hyper-cleaning.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "cleaning_figure",
    "hyperobjective_figure",
    "plot_contour_paths",
]

COLOURS = {"p": "#0072B2", "o": "#D55E00", "conv": "#009E73", "grey": "#999999"}


def _has(result: Any, *names: str) -> None:
    missing = [n for n in names if not hasattr(result, n)]
    if missing:
        raise TypeError(
            f"expected a result with {', '.join(names)} (from lab.bilevel.experiments), got "
            f"{type(result).__name__}"
        )


def hyperobjective_figure(curves: Any):
    """Widget of notebook 1: the 1-D pessimistic and optimistic hyper-objectives of Toy P / O
    and the convexified ``phi_p + (rho/2) x^2``, from
    :func:`~lab.bilevel.experiments.hyperobjective_curves`; the title carries the sampled
    weak-convexity modulus. Always 4 traces.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import plotly.graph_objects as go

    _has(curves, "x", "phi_p", "phi_o", "rho", "rho_hat", "kappa", "phi_at_kink")
    x, rho = curves.x, curves.rho
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=x, y=curves.phi_p, name="φ_p (pessimistic)", line_color=COLOURS["p"])
    )
    fig.add_trace(go.Scatter(x=x, y=curves.phi_o, name="φ_o (optimistic)", line_color=COLOURS["o"]))
    fig.add_trace(
        go.Scatter(
            x=x,
            y=curves.phi_p + 0.5 * rho * x**2,
            name=f"φ_p + (ρ/2)x², ρ = {rho:.2f}",
            line={"color": COLOURS["conv"], "dash": "dash"},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0.0, 0.0],
            y=[curves.phi_at_kink] * 2,
            mode="markers",
            name="kinks (x = 0)",
            marker={"size": 10, "color": "black"},
        )
    )
    fig.update_layout(
        title=f"κ = {curves.kappa:.2f}: sampled weak-convexity modulus of φ_p = {curves.rho_hat:.3f}",
        xaxis_title="leader's decision x",
        yaxis_title="hyper-objective",
        yaxis_range=[-3.0, 4.0],
        height=420,
    )
    return fig


def cleaning_figure(result: Any, corruption: float):
    """Widget of notebook 2: learned label corrections vs the true label errors after an IZOM
    run (:func:`~lab.bilevel.experiments.cleaning_run`), corrupted and clean points in two
    colours; the title carries the validation loss before and after. Always 3 traces.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    import plotly.graph_objects as go

    _has(result, "problem", "run", "loss")
    H, x = result.problem, result.run.x[-1]
    bad = H.corrupted
    lim = float(max(np.abs(H.errors).max(), np.abs(x).max(), 1.0)) * 1.1
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[-lim, lim], y=[-lim, lim], mode="lines", name="ideal: x = −error",
            line={"color": COLOURS["grey"], "dash": "dot"},
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=-H.errors[bad], y=x[bad], mode="markers", name="corrupted labels",
            marker={"color": COLOURS["o"], "size": 10},
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=-H.errors[~bad], y=x[~bad], mode="markers", name="clean labels",
            marker={"color": COLOURS["p"], "size": 8},
        )
    )  # fmt: skip
    loss = result.loss
    fig.update_layout(
        title=f"corruption {corruption:.0%}: validation loss {loss[0]:.3g} → {loss[-1]:.3g}",
        xaxis_title="minus the true label error",
        yaxis_title="learned correction x",
        xaxis_range=[-lim, lim],
        yaxis_range=[-lim, lim],
        height=440,
    )
    return fig


def plot_contour_paths(ax, grid: Any, paths: dict, levels: int = 30):
    """Matplotlib: contours of a 2-D hyper-objective
    (:func:`~lab.bilevel.experiments.contour_grid`), the kink lines ``x_i = 0`` and paths.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    _has(grid, "x1", "x2", "z", "x_star")
    if not isinstance(paths, dict):
        raise TypeError(
            f"paths must be a dict of label -> (T, 2) array (got {type(paths).__name__})"
        )
    ax.contour(grid.x1, grid.x2, grid.z, levels=levels, cmap="Greys", linewidths=0.6)
    ax.axhline(0, color="k", lw=1.0, ls=":")
    ax.axvline(0, color="k", lw=1.0, ls=":")
    for (label, path), col in zip(paths.items(), ["C1", "C2", "C0", "C3"], strict=False):
        ax.plot(path[:, 0], path[:, 1], lw=0.8, color=col, label=label, alpha=0.85)
        ax.plot(path[-1, 0], path[-1, 1], "o", color=col, ms=5)
    ax.plot(*grid.x_star, "k*", ms=12, label="x* (Clarke stationary)")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_aspect("equal")
    ax.legend(loc="upper left", fontsize=8)
    return ax
