"""Figures of the bilevel chapter (plotly for ``lab.core.explore``, matplotlib static panels).

Kept out of the notebooks so that each notebook cell stays a sentence of code, and out of the
reference kernels so that those read like the paper.

See: book/bilevel/01-kinks-and-stationarity.ipynb, book/bilevel/02-hyper-cleaning.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.bilevel.cleaning import hyper_cleaning
from lab.bilevel.problems import toy_pessimistic
from lab.bilevel.reference import izom, psi_star, weak_convexity_modulus
from lab.core.checks import check_positive, check_range

__all__ = [
    "branch_values",
    "cleaning_figure",
    "cleaning_run",
    "hyperobjective_figure",
    "plot_contour_paths",
]

COLOURS = {"p": "#0072B2", "o": "#D55E00", "conv": "#009E73", "grey": "#999999"}


def branch_values(u: np.ndarray, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Values of the follower's two local branches ``t ~ +1`` and ``t ~ -1`` of
    ``u t - sign (t^2 - 1)^2 / 4`` (local maxima for ``sign = +1``, local minima for ``-1``);
    ``nan`` where a branch does not exist (``|u| > 2 / (3 sqrt 3)``).

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    u = np.asarray(u, dtype=np.float64)
    plus, minus = np.full(u.shape, np.nan), np.full(u.shape, np.nan)
    for i, ui in enumerate(u):
        # stationary points: sign (t^3 - t) = u
        r = np.roots([1.0, 0.0, -1.0, -sign * ui])
        r = r[np.abs(r.imag) < 1e-9].real
        r = r[np.abs(r) > 1 / np.sqrt(3)]  # the outer roots are the local extrema
        for t in r:
            v = ui * t - sign * (t**2 - 1) ** 2 / 4
            if t > 0:
                plus[i] = v
            else:
                minus[i] = v
    return plus, minus


def hyperobjective_figure(kappa: float = 0.0, a: float = 0.3, c: float = 0.0):
    """Widget of notebook 1: the 1-D pessimistic and optimistic hyper-objectives of Toy P / O
    for a concavity ``kappa``, and the convexified ``phi_p + (rho/2) x^2`` with
    ``rho = max(kappa - 1, 0)``; the title carries the sampled weak-convexity modulus.

    Always 4 traces.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    import plotly.graph_objects as go

    kappa = check_range("kappa", kappa, 0.0, 10.0)
    P = toy_pessimistic(m=1, a=[a], c=c, kappa=kappa)
    x = np.linspace(-2.0, 2.0, 201)
    phi_p = P.phi_batch(x[:, None])
    # phi_o = phi_p - 2 psi* (same smooth part; Toy O itself needs kappa < 1 to be bounded)
    phi_o = phi_p - 2.0 * psi_star(x)[0]
    rho = max(kappa - 1.0, 0.0)
    rho_hat = weak_convexity_modulus(P, 1, box=2.0, n=2000, seed=0)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=phi_p, name="φ_p (pessimistic)", line_color=COLOURS["p"]))
    fig.add_trace(go.Scatter(x=x, y=phi_o, name="φ_o (optimistic)", line_color=COLOURS["o"]))
    fig.add_trace(
        go.Scatter(
            x=x,
            y=phi_p + 0.5 * rho * x**2,
            name=f"φ_p + (ρ/2)x², ρ = {rho:.2f}",
            line={"color": COLOURS["conv"], "dash": "dash"},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0.0, 0.0],
            y=[float(P.phi_batch(np.zeros((1, 1)))[0])] * 2,
            mode="markers",
            name="kinks (x = 0)",
            marker={"size": 10, "color": "black"},
        )
    )
    fig.update_layout(
        title=f"κ = {kappa:.2f}: sampled weak-convexity modulus of φ_p = {rho_hat:.3f}",
        xaxis_title="leader's decision x",
        yaxis_title="hyper-objective",
        yaxis_range=[-3.0, 4.0],
        height=420,
    )
    return fig


def cleaning_run(corruption: float = 0.3, T: int = 3000, eta: float = 0.05, seed: int = 0):
    """One hyper-cleaning run (defaults of notebook 2): returns ``(problem, history)``.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    corruption = check_range("corruption", corruption, 0.0, 1.0)
    eta = check_positive("eta", eta)
    H = hyper_cleaning(20, 40, 100, corruption, seed)
    hist = izom(H, np.zeros(H.m), T, eta, 1e-3, seed, measure="none")
    return H, hist


def cleaning_figure(corruption: float = 0.3):
    """Widget of notebook 2: learned label corrections vs the true label errors after an IZOM
    run, corrupted and clean points in two colours; the title carries the validation loss
    before and after. Always 3 traces.

    See: book/bilevel/02-hyper-cleaning.ipynb
    """
    import plotly.graph_objects as go

    H, hist = cleaning_run(corruption)
    x = hist.x[-1]
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
    fig.update_layout(
        title=(f"corruption {corruption:.0%}: validation loss {H(np.zeros(H.m)):.3g} → {H(x):.3g}"),
        xaxis_title="minus the true label error",
        yaxis_title="learned correction x",
        xaxis_range=[-lim, lim],
        yaxis_range=[-lim, lim],
        height=440,
    )
    return fig


def plot_contour_paths(ax, problem, paths: dict, lim: float = 1.8, levels: int = 30):
    """Matplotlib: contours of a 2-D hyper-objective, the kink lines ``x_i = 0`` and paths.

    See: book/bilevel/01-kinks-and-stationarity.ipynb
    """
    if not hasattr(problem, "phi_batch"):
        raise TypeError(
            f"problem must be a bilevel problem with phi_batch (got {type(problem).__name__})"
        )
    if not isinstance(paths, dict):
        raise TypeError(
            f"paths must be a dict of label -> (T, 2) array (got {type(paths).__name__})"
        )
    lim = check_positive("lim", lim)
    g = np.linspace(-lim, lim, 201)
    X1, X2 = np.meshgrid(g, g)
    Z = problem.phi_batch(np.stack([X1.ravel(), X2.ravel()], 1)).reshape(X1.shape)
    ax.contour(X1, X2, Z, levels=levels, cmap="Greys", linewidths=0.6)
    ax.axhline(0, color="k", lw=1.0, ls=":")
    ax.axvline(0, color="k", lw=1.0, ls=":")
    for (label, path), col in zip(paths.items(), ["C1", "C2", "C0", "C3"], strict=False):
        ax.plot(path[:, 0], path[:, 1], lw=0.8, color=col, label=label, alpha=0.85)
        ax.plot(path[-1, 0], path[-1, 1], "o", color=col, ms=5)
    ax.plot(*problem.x_star, "k*", ms=12, label="x* (Clarke stationary)")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_aspect("equal")
    ax.legend(loc="upper left", fontsize=8)
    return ax
