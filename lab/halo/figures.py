"""Plotly figure builders for the ``halo`` chapter's widgets: results in, a figure out (the
drivers in :mod:`lab.halo.experiments` compute what they draw).

See: book/halo/01-outliers-and-rotations.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.style import PALETTE

__all__ = ["error_figure", "butterfly_figure", "finetune_figure"]
_PLACEMENT_COLORS = {
    "none": PALETTE[4],
    "middle": PALETTE[0],
    "left": PALETTE[1],
    "right": PALETTE[2],
}


def error_figure(case: dict, title: str = ""):
    """Per-row relative error of ``Y``, ``E_X``, ``G`` per placement (bars, log scale) and
    the ``|error|`` of ``E_X`` under the case's placement (heat map, tokens × features, 16×16
    block means), from :func:`lab.halo.experiments.error_case`'s ``case``.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not isinstance(case, dict) or not {"report", "blocks", "placement"} <= set(case):
        raise TypeError("case must be the dict of lab.halo.experiments.error_case")
    report, blocks, placement = case["report"], case["blocks"], case["placement"]
    fig = make_subplots(
        1,
        2,
        column_widths=[0.55, 0.45],
        subplot_titles=("per-row relative error", f"|error| of E_X, placement {placement}"),
    )
    for p in report.index:
        fig.add_trace(
            go.Bar(
                x=["Y = XWᵀ", "E_X = E_Y W", "G = E_Yᵀ X"],
                y=report.loc[p].to_numpy(),
                name=p,
                marker_color=_PLACEMENT_COLORS[p],
            ),
            1,
            1,
        )
    fig.add_trace(
        go.Heatmap(
            z=np.log10(blocks + 1e-6),
            colorscale="Viridis",
            zmin=-3,
            zmax=1,
            colorbar=dict(title="log₁₀ rel.", x=1.02),
            showscale=True,
        ),
        1,
        2,
    )
    fig.update_yaxes(type="log", range=[-3, 0.3], title_text="mean over rows", row=1, col=1)
    fig.update_xaxes(title_text="feature block", row=1, col=2)
    fig.update_yaxes(title_text="token block", row=1, col=2)
    fig.update_layout(
        barmode="group",
        height=420,
        title_text=title,
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def butterfly_figure(stages: list, stage: int = 1):
    """The values after ``stage`` of the butterfly ``stages``
    (:func:`lab.halo.reference.butterfly_stages`) as bars, and the pairs the *next* stage
    combines (arcs between index ``i`` and ``i + h``).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import plotly.graph_objects as go

    if not isinstance(stages, (list, tuple)) or not stages:
        raise TypeError("stages must be the list of lab.halo.reference.butterfly_stages")
    n = len(stages[0])
    stage = int(min(max(stage, 0), len(stages) - 1))
    v = stages[stage] / np.sqrt(2.0**stage)  # keep the norm: orthonormal partial transform
    fig = go.Figure()
    fig.add_trace(go.Bar(x=np.arange(n), y=v, name="values", marker_color=PALETTE[0]))
    xs, ys = [], []
    h = 2**stage
    top = float(np.abs(v).max()) * 1.15 + 0.1
    if h < n:
        for i in range(n):
            if (i // h) % 2 == 0:
                t = np.linspace(0, np.pi, 12)
                xs += list(i + h * (1 - np.cos(t)) / 2) + [None]
                ys += list(top + 0.25 * top * np.sin(t) * min(1, h / 4 + 0.3)) + [None]
    fig.add_trace(
        go.Scatter(
            x=xs or [None],
            y=ys or [None],
            mode="lines",
            name=f"next pairs (stride {h})",
            line=dict(color=PALETTE[1], width=1),
        )  # fmt: skip
    )
    fig.update_layout(
        title_text=f"after {stage} of {len(stages) - 1} stages: max |v| = {np.abs(v).max():.2f}",
        xaxis_title="index i",
        yaxis_title="value (scaled by 2^(−s/2))",
        yaxis_range=[-top * 1.1, top * 1.5],
        height=380,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def finetune_figure(ref, run, title: str = ""):
    """Loss curves of the FP32 run ``ref`` and the HALO run ``run`` (left) and ``run``'s
    gradient cosine to FP32 (right): two :class:`~lab.halo.experiments.FinetuneRun`, e.g.
    :func:`lab.halo.experiments.finetune_pair`'s.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    for name, r in (("ref", ref), ("run", run)):
        if not all(hasattr(r, a) for a in ("loss", "acc", "cos", "mode")):
            raise TypeError(f"{name} must be a FinetuneRun (got {type(r).__name__})")
    mode = run.mode
    fig = make_subplots(1, 2, subplot_titles=("training loss", "cos(simulated, exact gradient)"))
    k = np.arange(len(ref.loss))
    sm = min(5, len(k))

    def smooth(y):
        return np.convolve(y, np.ones(sm) / sm, mode="valid")

    fig.add_trace(go.Scatter(x=k[sm - 1:], y=smooth(ref.loss), name=f"FP32 (acc {ref.acc:.2f})",
                             line=dict(color=PALETTE[4])), 1, 1)  # fmt: skip
    name = mode.upper().replace("HALO", "HALO-")
    fig.add_trace(go.Scatter(x=k[sm - 1:], y=smooth(run.loss), name=f"{name} {run.fmt.upper()} (acc {run.acc:.2f})",
                             line=dict(color=PALETTE[1])), 1, 1)  # fmt: skip
    cs = np.array(run.cos) if run.cos else np.zeros((0, 2))
    fig.add_trace(go.Scatter(x=cs[:, 0], y=cs[:, 1], mode="lines+markers", name="gradient cosine",
                             line=dict(color=PALETTE[0])), 1, 2)  # fmt: skip
    fig.update_yaxes(type="log", title_text="loss (5-step mean)", row=1, col=1)
    fig.update_yaxes(range=[-0.3, 1.05], row=1, col=2)
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=2)
    fig.update_layout(title_text=title, height=400,
                      legend=dict(orientation="h", y=-0.25))  # fmt: skip
    return fig
