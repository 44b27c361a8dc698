"""Figures of the medro notebooks (matplotlib).

See: book/medro/01-official-algorithm.ipynb, book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_int

from .data import GROUP_NAMES

__all__ = [
    "LABELS",
    "compare_figure",
    "gamma_bars",
    "gamma_figure",
    "matrices_figure",
    "training_heatmaps",
    "weights_over_time",
]

LABELS = {
    "erm": "ERM",
    "groupdro": "GroupDRO",
    "groupdro_heads": "GroupDRO, m heads (T7)",
    "medro": "MEDRO (paper, γ = 0.5)",
    "medro_code": "MEDRO (code, γ = 1)",
    "medro_groups": "MEDRO, adversary over groups",
    "medro_gate": "MEDRO + gate",
    "medro_chosen": "MEDRO, chosen on val",
    "medro_gate_train": "MEDRO + gate fitted on train",
}


def _check_run(name: str, res: Any) -> Any:
    """A training result (``lab.medro.train``'s ``TrainResult``): weights and risks per record."""
    if not (hasattr(res, "weights") and hasattr(res, "risks")):
        raise TypeError(
            f"{name} must be a TrainResult of lab.medro.train (got {type(res).__name__})"
        )
    return res


def _check_table(name: str, table: Any, keys: tuple) -> dict:
    """A dict holding ``keys`` (a sweep or a comparison row)."""
    if not isinstance(table, dict) or not all(k in table for k in keys):
        raise TypeError(f"{name} must be a dict with keys {keys} (got {type(table).__name__})")
    return table


def matrices_figure(results: Any, titles: Any):
    """Final risk matrix ``R[i, j]`` and weights ``Λ`` of MEDRO runs, one row per run."""
    import matplotlib.pyplot as plt

    if not isinstance(results, list | tuple) or not results:
        raise TypeError(
            f"results must be a non-empty list of TrainResult (got {type(results).__name__})"
        )
    results = [_check_run(f"results[{i}]", r) for i, r in enumerate(results)]
    if not isinstance(titles, list | tuple) or len(titles) != len(results):
        raise ValueError(f"titles must be a list of {len(results)} titles, one per result")
    fig, axes = plt.subplots(len(results), 2, figsize=(8, 3.4 * len(results)), squeeze=False)
    short = [f"g{j}" for j in range(len(GROUP_NAMES))]
    for row, (res, title) in enumerate(zip(results, titles, strict=True)):
        for col, (mat, name) in enumerate(
            ((res.risks[-1], "risk R[head, group]"), (res.weights[-1], "weights Λ[head, group]"))
        ):
            ax = axes[row, col]
            im = ax.imshow(mat, cmap="viridis")
            ax.set(
                xticks=range(4),
                xticklabels=short,
                yticks=range(4),
                yticklabels=[f"head {i}" for i in range(4)],
                title=f"{title}: {name}",
            )
            fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    return fig


def weights_over_time(res: Any, every: int = 10):
    """Mass of Λ on the diagonal and per group (column sums) over training."""
    import matplotlib.pyplot as plt

    w = _check_run("res", res).weights
    every = check_int("every", every, 1)
    t = np.arange(len(w)) * every
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(t, np.trace(w, axis1=1, axis2=2), "k--", label="diagonal mass")
    for j in range(w.shape[2]):
        ax.plot(t, w[:, :, j].sum(1), label=f"column g{j}")
    ax.set(xlabel="step", ylabel="mass of Λ", title="where the adversary puts its weight")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def compare_figure(results: dict):
    """Worst-group and average test accuracy per method (mean ± std over seeds)."""
    import matplotlib.pyplot as plt

    if not isinstance(results, dict) or not results:
        raise TypeError(
            f"results must be a non-empty dict of compare() rows (got {type(results).__name__})"
        )
    for n, row in results.items():
        _check_table(f"results[{n!r}]", row, ("worst", "average"))
    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key in zip(axes, ("worst", "average"), strict=True):
        vals = [results[n][key] for n in names]
        ax.bar(
            range(len(names)),
            [v.mean() for v in vals],
            yerr=[v.std() for v in vals],
            color=[f"C{i}" for i in range(len(names))],
            capsize=3,
        )
        ax.set_xticks(
            range(len(names)),
            [LABELS.get(n, n) for n in names],
            rotation=35,
            ha="right",
            fontsize=8,
        )
        lo = min(v.mean() - v.std() for v in vals)
        ax.set(ylim=(max(0.0, lo - 0.05), 1.0), ylabel=f"{key} test accuracy")
    fig.tight_layout()
    return fig


def gamma_figure(sweep: dict):
    """Worst-group and average accuracy against γ (mean ± std over seeds)."""
    import matplotlib.pyplot as plt

    _check_table("sweep", sweep, ("gammas", "worst", "average"))
    gm = sweep["gammas"]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for key, c in (("worst", "C3"), ("average", "C0")):
        v = sweep[key]
        ax.errorbar(gm, v.mean(1), yerr=v.std(1), fmt="o-", color=c, capsize=3, label=key)
    ax.set(xscale="log", xlabel="γ", ylabel="test accuracy", title="MEDRO's γ sweep")
    ax.legend()
    fig.tight_layout()
    return fig


def training_heatmaps(runs: dict, step: int, variant: str = "paper"):
    """Plotly: the risk matrix and the weights Λ of a recorded MEDRO run at a training step.

    ``runs`` maps a variant name to a :class:`~lab.medro.training.TrainResult` whose history
    was recorded every ``info["record_every"]`` steps (default 10); the nearest recorded step
    is shown. Two heatmap traces for every step (the widget's contract).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if variant not in runs:
        raise ValueError(f"variant must be one of {sorted(runs)}, got {variant!r}")
    res = runs[variant]
    every = int(res.info.get("record_every", 10))
    i = int(np.clip(round(step / every), 0, len(res.weights) - 1))
    groups = [f"g{j}" for j in range(res.weights.shape[2])]
    heads = [f"head {k}" for k in range(res.weights.shape[1])]
    fig = make_subplots(1, 2, subplot_titles=("risk R[head, group]", "weights Λ[head, group]"))
    fig.add_trace(
        go.Heatmap(z=res.risks[i], x=groups, y=heads, colorscale="Viridis", colorbar={"x": 0.45}),
        1,
        1,
    )
    fig.add_trace(go.Heatmap(z=res.weights[i], x=groups, y=heads, colorscale="Viridis"), 1, 2)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        height=340,
        title=f"{variant} loss, step {i * every}: diagonal mass {np.trace(res.weights[i]):.3f}",
    )
    return fig


def gamma_bars(sweep: dict, gamma: float, baseline: dict | None = None):
    """Plotly: worst-group and average accuracy at one ``γ`` of a sweep (mean ± std over
    seeds), with GroupDRO's as dashed lines when ``baseline`` (``compare()["groupdro"]``) is given.
    """
    import plotly.graph_objects as go

    _check_table("sweep", sweep, ("gammas", "worst", "average"))
    if baseline is not None:
        _check_table("baseline", baseline, ("worst", "average"))
    gm = list(np.asarray(sweep["gammas"], dtype=float))
    if float(gamma) not in gm:
        raise ValueError(f"gamma must be one of the sweep's values {gm}, got {gamma!r}")
    i = gm.index(float(gamma))
    keys = ("worst", "average")
    fig = go.Figure(
        go.Bar(
            x=list(keys),
            y=[sweep[k][i].mean() for k in keys],
            error_y={"type": "data", "array": [sweep[k][i].std() for k in keys]},
            name=f"MEDRO, γ = {gamma:g}",
        )
    )
    if baseline is not None:
        fig.add_trace(
            go.Scatter(
                x=list(keys),
                y=[baseline[k].mean() for k in keys],
                mode="markers",
                marker={"symbol": "line-ew-open", "size": 40},
                name="GroupDRO",
            )
        )
    fig.update_layout(yaxis={"range": [0, 1], "title": "test accuracy"}, height=340)
    return fig
