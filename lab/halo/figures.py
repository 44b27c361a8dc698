"""Plotly figure builders for the ``halo`` chapter's widgets.

See: book/halo/01-outliers-and-rotations.ipynb
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_range
from lab.core.style import PALETTE

__all__ = [
    "FORMAT_CHOICES",
    "error_figure",
    "butterfly_stages",
    "butterfly_figure",
    "FINETUNE_SCALES",
    "finetune_figure",
    "precompute_finetune",
]

# widget label -> (fmt, granularity)
FORMAT_CHOICES = {
    "INT8 per-tensor": ("int8", "tensor"),
    "INT8 per-row": ("int8", "row"),
    "FP8 E4M3": ("fp8_e4m3", "tensor"),
    "FP6 E2M3": ("fp6_e2m3", "tensor"),
    "FP6 E3M2": ("fp6_e3m2", "tensor"),
}
_PLACEMENT_COLORS = {
    "none": PALETTE[4],
    "middle": PALETTE[0],
    "left": PALETTE[1],
    "right": PALETTE[2],
}


def error_figure(
    magnitude: float = 100.0,
    fmt: str = "INT8 per-tensor",
    placement: str = "left",
    clip_ratio: float = 1.0,
    n_outliers: int = 8,
    size: tuple = (256, 512, 512),
    seed: int = 0,
):
    """Per-row relative error of ``Y``, ``E_X``, ``G`` per placement (bars, log scale) and
    the ``|error|`` of ``E_X`` under ``placement`` (heat map, tokens × features, 16×16 block
    means). ``n_outliers`` channels of ``X`` and ``n_outliers/2`` tokens of ``E_Y`` are
    scaled by ``magnitude``.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .experiments import error_case
    from .reference import PLACEMENTS

    f, gran = FORMAT_CHOICES[fmt]
    case = error_case(magnitude, f, gran, placement, clip_ratio, n_outliers, tuple(size), seed)
    report, blocks = case["report"], case["blocks"]
    fig = make_subplots(
        1,
        2,
        column_widths=[0.55, 0.45],
        subplot_titles=("per-row relative error", f"|error| of E_X, placement {placement}"),
    )
    for p in PLACEMENTS:
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
        title_text=f"{fmt}, outlier magnitude {magnitude:.3g}, clip ratio {clip_ratio:.2f}",
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def butterfly_stages(x) -> list[np.ndarray]:
    """The vector after 0, 1, ..., ``log2 n`` unnormalized butterfly stages.

    See: book/halo/02-fwht-kernel.ipynb
    """
    v = np.asarray(x, dtype=np.float64).copy()
    n = v.size
    if n < 1 or n & (n - 1):
        raise ValueError(f"x must have a power-of-two length (got {n})")
    out = [v.copy()]
    h = 1
    while h < n:
        w = v.reshape(n // (2 * h), 2, h)
        a, b = w[:, 0].copy(), w[:, 1].copy()
        w[:, 0], w[:, 1] = a + b, a - b  # (a, b) -> (a + b, a - b)
        out.append(v.copy())
        h *= 2
    return out


def butterfly_figure(stage: int = 1, n: int = 16, seed: int = 0):
    """The values after ``stage`` butterfly stages (bars) and the pairs the *next* stage
    combines (arcs between index ``i`` and ``i + h``).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import plotly.graph_objects as go

    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    x[rng.integers(n)] = 4.0  # one outlier ...
    x += rng.normal(0, 0.3, n)  # ... on small noise
    stages = butterfly_stages(x)
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


# The outlier scales S of notebook 3's live widget (a menu): ``precompute_finetune`` runs every
# level at each of them once, so that every move of the widget only redraws.
FINETUNE_SCALES = (1.0, 10.0, 100.0, 300.0, 1000.0)
FINETUNE_MODES = ("halo0", "halo1", "halo2")


@contextmanager
def _one_thread():
    """A small MLP: one torch thread (two only contend, badly on a loaded machine)."""
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        yield
    finally:
        torch.set_num_threads(threads)


def _finetune_args(scale, width, steps, batch, token_outliers):
    # the same positional key as experiments.seed_study: one memo for the runs and the widget
    return (float(check_range("scale", scale, 1.0, 1e5)), int(check_int("width", width, 16, 8192)),
            int(check_int("steps", steps, 1)), int(check_int("batch", batch, 2)),
            check_bool("token_outliers", token_outliers), "int8", 0, 1e-3, 0)  # fmt: skip


def precompute_finetune(scales=FINETUNE_SCALES, modes=FINETUNE_MODES, *, width: int = 512,
                        steps: int = 100, batch: int = 64, token_outliers: bool = False) -> int:  # fmt: skip
    """Run (once, memoised by :func:`~lab.halo.experiments.cached_finetune`) the seed-0 INT8
    fine-tuning runs that :func:`finetune_figure` draws, FP32 and every level in ``modes``, at
    every scale in ``scales``. Returns the number of runs.

    See: book/halo/03-quantized-finetune.ipynb
    """
    from .experiments import MODES, cached_finetune

    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__iter__"):
        raise TypeError(f"scales must be a sequence of floats in [1, 1e5] (got {scales!r})")
    if isinstance(modes, (str, bytes)) or not hasattr(modes, "__iter__"):
        raise TypeError(f"modes must be a sequence of {MODES} (got {modes!r})")
    modes = [check_choice("modes[i]", m, MODES) for m in modes]
    keys = [_finetune_args(s, width, steps, batch, token_outliers) for s in scales]
    runs = [(m, k) for k in keys for m in dict.fromkeys(("fp32", *modes))]
    with _one_thread():
        for m, k in runs:
            cached_finetune(m, *k)
    return len(runs)


def finetune_figure(mode: str = "halo0", scale: float = 300.0, width: int = 512,
                    steps: int = 100, batch: int = 64, token_outliers: bool = False):  # fmt: skip
    """Loss curves of FP32 and ``mode`` (left) and the gradient cosine to FP32 (right).

    See: book/halo/03-quantized-finetune.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .experiments import MODES, cached_finetune

    check_choice("mode", mode, MODES)
    args = _finetune_args(scale, width, steps, batch, token_outliers)
    with _one_thread():
        ref = cached_finetune("fp32", *args)
        run = cached_finetune(mode, *args)
    fig = make_subplots(1, 2, subplot_titles=("training loss", "cos(simulated, exact gradient)"))
    k = np.arange(len(ref.loss))
    sm = min(5, len(k))

    def smooth(y):
        return np.convolve(y, np.ones(sm) / sm, mode="valid")

    fig.add_trace(go.Scatter(x=k[sm - 1:], y=smooth(ref.loss), name=f"FP32 (acc {ref.acc:.2f})",
                             line=dict(color=PALETTE[4])), 1, 1)  # fmt: skip
    name = mode.upper().replace("HALO", "HALO-")
    fig.add_trace(go.Scatter(x=k[sm - 1:], y=smooth(run.loss), name=f"{name} INT8 (acc {run.acc:.2f})",
                             line=dict(color=PALETTE[1])), 1, 1)  # fmt: skip
    cs = np.array(run.cos) if run.cos else np.zeros((0, 2))
    fig.add_trace(go.Scatter(x=cs[:, 0], y=cs[:, 1], mode="lines+markers", name="gradient cosine",
                             line=dict(color=PALETTE[0])), 1, 2)  # fmt: skip
    fig.update_yaxes(type="log", title_text="loss (5-step mean)", row=1, col=1)
    fig.update_yaxes(range=[-0.3, 1.05], row=1, col=2)
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=2)
    fig.update_layout(title_text=f"S = {scale:.3g}, width {width}", height=400,
                      legend=dict(orientation="h", y=-0.25))  # fmt: skip
    return fig
