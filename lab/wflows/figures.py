"""Figures of the wflows chapter (plotly, for ``lab.core.explore``).

Kept out of the notebooks so that each cell stays a sentence of code, and out of the
reference kernels so that those read like the paper.

See: book/wflows/01-three-samplers.ipynb, book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_fields,
    check_int,
    check_positive,
)

__all__ = [
    "COLOURS",
    "LABELS",
    "ellipse",
    "sampler_frame",
    "flow_1d_frame",
    "sgld_variance_frame",
    "target_map",
    "budget_curves",
    "flow_snapshots",
    "variance_vs_step",
    "lsi_decay",
    "fisher_rate",
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
    ju = min(j, len(data["ula"].step) - 1)
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
    for sampler, colour in (("ula", "langevin"), ("sgld", "sgld")):
        H = data[sampler]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=_hist_from_moments(x, H.mean[ju, 0], H.cov[ju, 0, 0]),
                name=f"{sampler.upper()} particles (Gaussian fit)",
                line=dict(color=COLOURS[colour], dash="dot"),
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


# ---------------------------------------------------------------------------------------------
# Static panels of the notebooks (matplotlib)
# ---------------------------------------------------------------------------------------------


def target_map(potential: Any, components: int = 6):
    """The finite-sum target: the component centres, the 1σ ellipses of the first few
    components' curvatures and the target's 1σ and 2σ ellipses.

    See: book/wflows/01-three-samplers.ipynb
    """
    import matplotlib.pyplot as plt

    pot = check_fields("potential", potential, "a", "A", "mean", "cov", kind="a target")
    components = check_int("components", components, 0, len(pot.a))
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(*pot.a.T, s=8, color="#999999", label="component centres $a_i$")
    for i in range(components):
        e = ellipse(pot.a[i], np.linalg.inv(pot.A[i]), 1.0)
        ax.plot(*e.T, color="#bbbbbb", lw=0.8)
    for r in (1, 2):
        ax.plot(*ellipse(pot.mean, pot.cov, r).T, "k--", lw=1.2)
    ax.plot(*pot.mean, "k*", ms=12, label="target mean $m_*$ (dashed: 1σ, 2σ)")
    ax.set(xlabel="$x_1$", ylabel="$x_2$", aspect="equal", title=f"{len(pot.a)} components")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, ncol=2)
    return fig


def _smooth(y: np.ndarray, width: int = 9) -> np.ndarray:
    """Running mean in log space; the first records, where the cloud still moves fast, kept."""
    pad = np.pad(np.log(y), width // 2, mode="edge")
    out = np.exp(np.convolve(pad, np.ones(width) / width, "valid"))
    out[:width] = y[:width]
    return out


def budget_curves(runs: Any, floor: float, budget: float = 8000.0):
    """Gaussian-fit KL (left) and W2 (right) of each run against gradient evaluations: thin
    lines the records, thick lines a running mean, grey band the particle floor.

    See: book/wflows/01-three-samplers.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a dict of run_sampler histories")
    floor, budget = check_positive("floor", floor), check_positive("budget", budget)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, run in runs.items():
        check_fields(f"runs[{name!r}]", run, "grad_evals", "kl", "w2", kind="a sampler history")
        ok = run.grad_evals > 0
        g, c = run.grad_evals[ok], COLOURS[name]
        for ax, y in zip(axes, (run.kl[ok], run.w2[ok]), strict=True):
            ax.loglog(g, y, color=c, alpha=0.25, lw=0.8)
            ax.loglog(g, _smooth(y), color=c, label=LABELS[name])
    axes[0].axhspan(floor / 2, 2 * floor, color="#cccccc", alpha=0.5,
                    label=f"particle floor d(d+3)/4P = {floor:.4f}")  # fmt: skip
    for ax, name, lim in zip(
        axes, ("KL(fit ‖ π)", "W2(fit, π)"), ((5e-4, 30), (5e-3, 10)), strict=True
    ):
        ax.axvline(budget, color="k", lw=0.6, ls=":")
        ax.set(xlabel="component-gradient evaluations per particle", ylabel=name, ylim=lim)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def flow_snapshots(data: dict, frames: Any = (0, 5, 30)):
    """The GD and SGD flows of densities (PDE) and the target at three stored times.

    ``data`` is ``experiments.flow_1d_data(settings)``'s result.

    See: book/wflows/01-three-samplers.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(data, dict) or "settings" not in data:
        raise TypeError("data must be the dict returned by experiments.flow_1d_data")
    frames = [int(j) for j in check_array("frames", frames, ndim=1, min_size=1)]
    st, x = data["settings"], data["x"]
    fig, axes = plt.subplots(1, len(frames), figsize=(4 * len(frames), 3.4), sharey=True)
    for ax, j in zip(np.atleast_1d(axes), frames, strict=True):
        ax.plot(x, data["pi"], "k--", lw=1, label="π")
        ax.plot(x, data["gd"][j], color=COLOURS["langevin"], label="GD flow")
        ax.plot(x, data["sgd"][j], color=COLOURS["sgld"], lw=2,
                label=f"SGD flow (η = {st.eta:g}, b = {st.batch_size})")  # fmt: skip
        ax.set(title=f"t = {data['t'][j]:.1f}", xlabel="x")
    np.atleast_1d(axes)[0].set_ylabel("density")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def variance_vs_step(rows: Any, theory: dict, spread: float):
    """SGLD's stationary variance against the step: simulations (dots), the PDE of the SGD flow
    (crosses), SGLD's formula (solid), the SGD flow's (dashed) and ULA's (dotted).

    ``rows`` are ``(b, h, simulated, SGLD formula, SGD-flow formula, PDE)``; ``theory`` holds
    ``h`` (a grid of steps) and, per batch size ``b``, the pair of formula curves on it.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    import matplotlib.pyplot as plt

    rows = check_array("rows", rows, ndim=2, min_size=6)
    if not isinstance(theory, dict) or "h" not in theory:
        raise TypeError("theory must be a dict with the step grid 'h' and one entry per b")
    spread = check_positive("spread", spread)
    hh = check_array("theory['h']", theory["h"], ndim=1, min_size=2)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for b, colour in zip(
        [k for k in theory if k != "h"], ("#D55E00", "#0072B2", "#009E73"), strict=False
    ):
        sgld, flow = theory[b]
        sel = rows[:, 0] == b
        ax.plot(hh, sgld, color=colour, label=f"SGLD formula, b = {b}")
        ax.plot(hh, flow, color=colour, ls="--", label=f"SGD-flow formula, b = {b}")
        ax.plot(rows[sel, 1], rows[sel, 2], "o", color=colour, ms=6, label=f"simulated, b = {b}")
        ax.plot(rows[sel, 1], rows[sel, 5], "x", color="k", ms=6)
    ax.plot(hh, 1 / (1 - hh / 2), color="#777777", ls=":", label="ULA: 1/(1 − h/2)")
    ax.axhline(1, color="k", lw=0.6)
    ax.set(xscale="log", xlabel="step h = η", ylabel="stationary variance (target: 1)",
           title=f"SGLD inflates the variance (s = {spread:g}; ×: SGD-flow PDE)")  # fmt: skip
    ax.legend(fontsize=7, ncol=2)
    return fig


def lsi_decay(fixed: dict, decreasing: dict):
    """Left: log KL against flow time at a fixed step (ULA's exact moments, SVRG-LD and SGLD
    particles, the line ``exp(-2 lam_min t)``, the particle floor). Right: KL against T on
    log-log axes for the decreasing and the fixed step, with slopes -1 and -2.

    ``fixed`` holds ``t_ula, kl_ula, runs, lam_min, floor, particles``; ``decreasing`` holds
    ``T, kl, T_fixed, kl_fixed, T0, kl0``.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    import matplotlib.pyplot as plt

    need = {"fixed": ("t_ula", "kl_ula", "runs", "lam_min", "floor", "particles"),
            "decreasing": ("T", "kl", "T_fixed", "kl_fixed", "T0", "kl0")}  # fmt: skip
    for name, value in (("fixed", fixed), ("decreasing", decreasing)):
        if not isinstance(value, dict) or not set(need[name]) <= set(value):
            raise TypeError(f"{name} must be a dict with keys {', '.join(need[name])}")
    f, d = fixed, decreasing
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    ax.semilogy(f["t_ula"], f["kl_ula"], color=COLOURS["langevin"], label="ULA (exact moments)")
    for name, run in f["runs"].items():
        ax.semilogy(run.time, run.kl, color=COLOURS[name],
                    label=f"{LABELS[name]}, {f['particles']} particles")  # fmt: skip
    tt = np.linspace(0, 4, 20)
    ax.semilogy(tt, f["kl_ula"][0] * np.exp(-2 * f["lam_min"] * tt), "k:", label="exp(−2 λmin t)")
    ax.axhline(f["floor"], color="#999999", lw=1, ls="--", label="particle floor d(d+3)/4P")
    ax.set(xlabel="flow time t", ylabel="KL(fit ‖ π)", title="fixed step h = 0.05",
           ylim=(1e-4, 30), xlim=(0, 30))  # fmt: skip
    ax.legend(fontsize=7)
    bx.loglog(d["T"], d["kl"], color=COLOURS["sgld"], label="SGLD, h ∝ 1/T (exact moments)")
    bx.loglog(d["T_fixed"], d["kl_fixed"], color=COLOURS["sgld"], ls="--",
              label="SGLD, fixed h = 0.05")  # fmt: skip
    ref_T = np.array([d["T0"], d["T"][-1]])
    for p, ls in ((1.0, ":"), (2.0, "-.")):
        bx.loglog(ref_T, d["kl0"] * (ref_T / ref_T[0]) ** -p, "k" + ls, label=f"slope −{p:g}")
    bx.set(xlabel="flow time T", ylabel="KL(moment fit ‖ π)",
           title="decreasing step removes the bias", ylim=(1e-6, 30))  # fmt: skip
    bx.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fisher_rate(rate: Any):
    """Left: the relative Fisher information along the SGD flow for each horizon. Right: its
    time average against the horizon, with the slope -1/2 of the bound.

    ``rate`` is ``experiments.fisher_rate_1d(settings)``'s result.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    import matplotlib.pyplot as plt

    fr = check_fields("rate", rate, "curves", "horizons", "mean_fisher", kind="a FisherRate")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for T_, (t_, info) in fr.curves.items():
        axes[0].semilogy(t_, info, label=f"T = {T_:.0f}")
    axes[0].set(
        xlabel="flow time t", ylabel="I(μ_t ‖ π)", title="Fisher information along the flow"
    )
    axes[0].legend(fontsize=7)
    axes[1].loglog(fr.horizons, fr.mean_fisher, "o-", color=COLOURS["sgld"], label="measured")
    ref_T = fr.horizons[[0, -1]]
    axes[1].loglog(ref_T, fr.mean_fisher[0] * (ref_T / ref_T[0]) ** -0.5, "k:", label="slope −1/2")
    axes[1].set(xlabel="horizon T", ylabel="(1/T) ∫ I dt", title="SGD flow, η = η0/√T")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig
