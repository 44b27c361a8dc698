"""Figures of the coreset chapter (plotly for ``lab.core.explore``, matplotlib for static panels).

Kept out of the notebooks so that each notebook cell stays a sentence of code. Every function
takes results (a ``ToySelection``, an ``AlignmentStudy``, ``History`` objects) and draws them: a
widget is ``figure(driver(settings))``, the driver memoised in ``experiments`` or ``toy``.

See: book/coreset/01-facility-location.ipynb, book/coreset/02-label-noise.ipynb,
book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_array, check_fields
from lab.coreset.settings import METHODS

__all__ = [
    "COLOURS",
    "toy_selection_figure",
    "alignment_figure",
    "training_figure",
    "proxy_plane",
    "sweep_figure",
    "ablation_figure",
]

COLOURS = {
    "random": "#999999",
    "craig": "#0072B2",
    "posterior": "#D55E00",
    "full": "#009E73",
    "clean": "#56B4E9",
    "flipped": "#E69F00",
}


def proxy_plane(R: np.ndarray) -> np.ndarray:
    """2-D coordinates of 3-class proxies ``p - e_y`` (they lie in the plane sum = 0)."""
    basis = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]])
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)
    R = check_array("R", R, ndim=2, min_size=1)
    if R.shape[1] != 3:
        raise ValueError(f"R must have shape (n, 3) (got {R.shape})")
    return R @ basis.T


def toy_selection_figure(selection):
    """Proxy space with the CRAIG and posterior medoids, and the noisy share of each method
    (a ``ToySelection``, from ``toy_selection``).

    Always 6 traces (for the static twin).

    See: book/coreset/01-facility-location.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    check_fields("selection", selection, "proxies", "flipped", "coresets", "shares", "settings")
    R, fl, sel = selection.proxies, selection.flipped, selection.coresets
    noise, budget = selection.settings.noise, selection.settings.budget
    K, sigma = selection.settings.K, selection.settings.sigma
    Z = proxy_plane(R)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.68, 0.32],
        subplot_titles=("gradient proxies p − e_y (2-D plane)", "weighted share mislabeled"),
    )
    for name, mask in (("clean label", ~fl), ("flipped label", fl)):
        key = "clean" if name == "clean label" else "flipped"
        fig.add_trace(
            go.Scatter(
                x=Z[mask, 0],
                y=Z[mask, 1],
                mode="markers",
                name=name,
                marker={"size": 5, "color": COLOURS[key], "opacity": 0.6},
            ),
            1,
            1,
        )
    for m, symbol in (("craig", "star"), ("posterior", "diamond-open")):
        idx, w = sel[m]
        size = 8 + 22 * np.sqrt(w / max(w.max(), 1))
        fig.add_trace(
            go.Scatter(
                x=Z[idx, 0],
                y=Z[idx, 1],
                mode="markers",
                name=f"{m} medoids (size ∝ γ)",
                marker={"size": size, "symbol": symbol, "color": COLOURS[m], "line": {"width": 2}},
            ),
            1,
            1,
        )
    _share_panel(fig, selection)
    fig.update_xaxes(title_text="proxy coordinate 1", range=[-1.3, 1.3], row=1, col=1)
    fig.update_yaxes(title_text="proxy coordinate 2", range=[-1.3, 1.3], row=1, col=1)
    fig.update_yaxes(title_text="Σγ·[flipped] / Σγ", range=[0, 0.75], row=1, col=2)
    fig.update_layout(
        title_text=f"noise {noise:.0%}, B = {budget}, K = {K}, σ = {sigma:g}",
        height=430,
        legend={"orientation": "h", "y": -0.18},
    )
    return fig


def alignment_figure(study, settings):
    """Gradient error, Hessian error and noisy share of the three methods (9 bar traces) of an
    ``AlignmentStudy`` run with ``settings`` (an ``AlignmentSettings``).

    See: book/coreset/02-label-noise.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    check_fields("study", study, "grad", "hess", "share", "pool_noise")
    check_fields("settings", settings, "noise", "budget", "K", "sigma", "trials")
    st = study
    noise, budget, K, sigma = settings.noise, settings.budget, settings.K, settings.sigma
    trials = settings.trials
    panels = (
        ("grad", "gradient error E‖∇ℓ_S − ∇ℓ‖² / E‖∇ℓ‖²"),
        ("hess", "Hessian error ‖H_S − H‖_F / ‖H‖_F"),
        ("share", "weighted share mislabeled"),
    )
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in panels])
    for c, (key, _) in enumerate(panels, start=1):
        table = getattr(st, key)
        for m in METHODS:
            v = table[m]
            fig.add_trace(
                go.Bar(
                    x=[m],
                    y=[v.mean()],
                    error_y={"type": "data", "array": [v.std()]},
                    marker_color=COLOURS[m],
                    name=m,
                    showlegend=c == 1,
                ),
                1,
                c,
            )
    fig.update_yaxes(range=[0, 0.75], row=1, col=3)
    fig.update_layout(
        title_text=f"digits logistic regression, noise {noise:.0%}, B = {budget}, K = {K}, "
        f"σ = {sigma:g} ({trials} pools)",
        height=400,
        barmode="group",
    )
    return fig


def training_figure(runs, settings, steps: int | None = None):
    """Clean test accuracy and coreset noisy share against step (7 traces): ``runs`` maps each
    method to its ``History`` (``method_runs``), trained with ``settings`` (a
    ``RunSettings``); ``steps`` shows the first steps only.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not isinstance(runs, dict) or not runs:
        raise TypeError(f"runs must be a dict of method -> History (got {type(runs).__name__})")
    check_fields("settings", settings, "noise", "posterior", "train")
    noise, K, sigma = settings.noise, settings.posterior.K, settings.posterior.sigma
    last = settings.train.steps if steps is None else int(steps)
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("clean test accuracy", "weighted share mislabeled")
    )
    runs = {m: _until(h, last) for m, h in runs.items()}
    for m, h in runs.items():
        fig.add_trace(go.Scatter(x=h.steps, y=h.test_acc, name=m, line={"color": COLOURS[m]}), 1, 1)
        if m != "full":
            fig.add_trace(
                go.Scatter(
                    x=h.steps,
                    y=h.noisy_share,
                    name=m,
                    line={"color": COLOURS[m]},
                    showlegend=False,
                ),
                1,
                2,
            )
    fig.update_xaxes(title_text="SGD step")
    fig.update_yaxes(range=[0.3, 1.0], row=1, col=1)
    fig.update_yaxes(range=[0.0, 0.7], row=1, col=2)
    fig.update_layout(
        title_text=f"digits MLP with BatchNorm, noise {noise:.0%}, K = {K}, σ = {sigma:g}",
        height=400,
    )
    return fig


def _until(h, steps: int):
    """``(steps, test_acc, noisy_share)`` of the history ``h`` up to ``steps``."""
    k = sum(1 for s in h.steps if s <= steps)
    return type(h)(h.method, h.steps[:k], h.test_acc[:k], h.noisy_share[:k], h.select_seconds)


def _share_panel(fig, selection) -> None:
    """The right panel of ``toy_selection_figure``: each coreset's weighted noisy share and
    the pool's."""
    import plotly.graph_objects as go

    shares = [selection.shares[m] for m in METHODS]
    fig.add_trace(
        go.Bar(
            x=list(METHODS),
            y=shares,
            marker_color=[COLOURS[m] for m in METHODS],
            showlegend=False,
            text=[f"{s:.2f}" for s in shares],
            textposition="outside",
        ),
        1,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=list(METHODS),
            y=[selection.flipped.mean()] * 3,
            mode="lines",
            name="pool noise",
            line={"dash": "dot", "color": "black"},
        ),
        1,
        2,
    )


def sweep_figure(sweep: dict, noises, steps: int):
    """Clean test accuracy (mean ± std over seeds) and the coresets' weighted noisy share against
    the label-noise ratio, one line per method (matplotlib; ``sweep`` from ``noise_sweep``).

    See: book/coreset/03-training-under-noise.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(sweep, dict) or "craig" not in sweep:
        raise TypeError(f"sweep must be noise_sweep's dict of arrays (got {type(sweep).__name__})")
    noises = np.asarray(noises, dtype=float)
    methods = [m for m in ("random", "craig", "posterior", "full") if m in sweep]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for off, m in zip(np.linspace(-0.012, 0.012, len(methods)), methods, strict=True):
        acc = sweep[m]
        axes[0].errorbar(noises + off, acc.mean(1), yerr=acc.std(1), marker="o", capsize=3,
                         color=COLOURS[m], label=m)  # fmt: skip
        if m != "full":
            share = sweep[f"share/{m}"].mean(1)
            axes[1].plot(noises, share, marker="o", color=COLOURS[m], label=m)
    axes[1].plot(noises, noises * 0.9, ls=":", c="k", label="expected pool share")
    axes[0].set_xlabel("label-noise ratio")
    axes[0].set_ylabel(f"clean test accuracy after {steps} steps")
    axes[1].set_xlabel("label-noise ratio")
    axes[1].set_ylabel("weighted share mislabeled in the coresets")
    for ax in axes:
        ax.legend()
    n = sweep["craig"].shape[1]
    fig.suptitle(f"digits MLP with BatchNorm, mean ± std over {n} seeds")
    fig.tight_layout()
    return fig


def ablation_figure(abl, abl_sig, names: dict):
    """Clean accuracy of posterior coresets per perturbed block and σ (bars: mean ± std; dots:
    seeds), from ``perturbation_ablation`` (``abl``: the blocks, ``abl_sig``: BN only over σ);
    ``names`` maps a block to its label (matplotlib).

    See: book/coreset/02-label-noise.ipynb
    """
    import matplotlib.pyplot as plt

    for name, value in (("abl", abl), ("abl_sig", abl_sig)):
        check_fields(name, value, "wheres", "sigmas", "seeds", "acc")
    labels = [f"{names[w]}\nσ={s:g}" for w in abl.wheres for s in abl.sigmas]
    labels += [f"{names['norm']}\nσ={s:g}" for s in abl_sig.sigmas if s not in abl.sigmas]
    rows = [abl.acc[i, j] for i in range(len(abl.wheres)) for j in range(len(abl.sigmas))]
    rows += [abl_sig.acc[0, j] for j, s in enumerate(abl_sig.sigmas) if s not in abl.sigmas]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.bar(x, [r.mean() for r in rows], yerr=[r.std() for r in rows], capsize=3, color="0.75")
    for k in range(len(abl.seeds)):
        ax.plot(x, [r[k] for r in rows], ".", c="k", alpha=0.6)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylim(0.7, 0.9)
    ax.set_ylabel("clean test accuracy")
    ax.set_title("posterior coresets at 50% noise: which block carries the noise (dots: seeds)")
    fig.tight_layout()
    return fig
