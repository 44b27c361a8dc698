"""Figures and widget compute functions of the ARECHO chapter (plotly).

Kept out of the notebooks so that each cell stays a sentence of code. Every ``*_compute``
factory returns a function for :func:`lab.core.explore.explore` whose figure has the same
number of traces for every value of its static control.

See: book/arecho/01-degraded-speech-and-tokens.ipynb, book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np

from .corpus import METRICS
from .quality import SR

__all__ = [
    "METRIC_LABELS",
    "wav_bytes",
    "AudioPlayer",
    "degradation_compute",
    "correlation_figure",
    "tokenizer_compute",
    "error_bars",
    "profile_compute",
    "query_compute",
    "dependency_figure",
    "position_figure",
]

METRIC_LABELS = {
    "PESQ-WB": "PESQ-WB",
    "PESQ-NB": "PESQ-NB",
    "STOI": "STOI",
    "SI-SNR": "SI-SNR (dB)",
    "LSD": "LSD (dB)",
    "SNR": "SNR (dB)",
    "T60": "T60 class",
    "BW": "bandwidth class",
    "clip": "clipping flag",
}
# display ranges used to put every metric on a 0..1 bar
_RANGES = {
    "PESQ-WB": (1.0, 4.64),
    "PESQ-NB": (1.0, 4.55),
    "STOI": (0.4, 1.0),
    "SI-SNR": (-30.0, 40.0),
    "LSD": (0.0, 45.0),
    "SNR": (-5.0, 35.0),
    "T60": (0.0, 3.0),
    "BW": (0.0, 2.0),
    "clip": (0.0, 1.0),
}
_BLUE, _ORANGE, _GREEN, _GREY, _RED = "#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f", "#d62728"


def _check_view(name: str, view) -> None:
    if not callable(view):
        raise TypeError(
            f"{name} must be a view function of lab.arecho.views (got {type(view).__name__})"
        )


def _check_results(name: str, value) -> None:
    if not isinstance(value, dict) or not value:
        raise TypeError(
            f"{name} must be a non-empty dict label -> values (got {type(value).__name__})"
        )


def _go():
    import plotly.graph_objects as go

    return go


def wav_bytes(x: Any, sr: int = SR) -> bytes:
    """16-bit PCM WAV file bytes of a waveform in ``[-1, 1]`` (for audio players).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    x = np.clip(np.asarray(x, dtype=np.float64), -1, 1)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(sr))
        w.writeframes((x * 32767).astype("<i2").tobytes())
    return buf.getvalue()


class AudioPlayer:
    """An ``ipywidgets.Audio`` player that the widget compute functions refill.

    Live kernel only: in the rendered book the audio of the default setting is embedded
    once with ``IPython.display.Audio`` instead.

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    def __init__(self) -> None:
        import ipywidgets as w

        self.widget = w.Audio(value=b"", format="wav", autoplay=False, loop=False)

    def set(self, x: Any) -> None:
        """Load waveform ``x`` (16 kHz) into the player."""
        self.widget.value = wav_bytes(x)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def _norm(name: str, v: float) -> float:
    lo, hi = _RANGES[name]
    return float(np.clip((v - lo) / (hi - lo), 0, 1))


def degradation_compute(panel, player: AudioPlayer | None = None):
    """``compute(snr_db, t60, lowpass_hz, clip)`` for the degradation explorer: draws what
    ``panel`` (:func:`lab.arecho.views.degradation_panel`) returns.

    Figure: clean and degraded log-mel spectrograms and the nine metric values (bars on a
    0..1 display scale, true values in the hover text and on the bars).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    from plotly.subplots import make_subplots

    _check_view("panel", panel)

    def compute(snr_db: float, t60: float, lowpass_hz: float, clip: bool):
        go = _go()
        v = panel(snr_db, t60, lowpass_hz, clip)
        labels = v.labels
        if player is not None:
            player.set(v.waveform)
        fig = make_subplots(
            rows=1,
            cols=3,
            column_widths=[0.27, 0.27, 0.46],
            horizontal_spacing=0.14,
            subplot_titles=("clean", "degraded", "metrics (bar = position in display range)"),
        )
        t = np.linspace(0, v.duration, v.clean_spec.shape[1])
        for col, spec in ((1, v.clean_spec), (2, v.spec)):
            fig.add_trace(
                go.Heatmap(
                    z=spec,
                    x=t,
                    colorscale="Viridis",
                    zmin=-60,
                    zmax=20,
                    showscale=False,
                    colorbar={"title": "dB", "len": 0.8},
                    hoverinfo="skip",
                ),
                row=1,
                col=col,
            )
        names = list(METRICS)
        fig.add_trace(
            go.Bar(
                x=[_norm(n, v) for n, v in zip(names, labels, strict=True)],
                y=[METRIC_LABELS[n] for n in names],
                orientation="h",
                marker_color=_BLUE,
                text=[f"{v:.2f}" for v in labels],
                textposition="outside",
                hovertext=[f"{n} = {v:.3f}" for n, v in zip(names, labels, strict=True)],
                hoverinfo="text",
                showlegend=False,
            ),
            row=1,
            col=3,
        )
        fig.update_xaxes(title_text="time (s)", row=1, col=1)
        fig.update_xaxes(title_text="time (s)", row=1, col=2)
        fig.update_yaxes(title_text="mel band", row=1, col=1)
        fig.update_xaxes(range=[0, 1.3], showticklabels=False, row=1, col=3)
        fig.update_yaxes(autorange="reversed", row=1, col=3)
        fig.update_layout(
            height=380,
            margin={"t": 70, "l": 60},
            title_text=f"SNR {snr_db:g} dB, T60 {t60:g} s, band limit {lowpass_hz / 1000:g} kHz, "
            f"clipping {'on' if clip else 'off'}",
        )
        return fig

    return compute


def correlation_figure(rho: np.ndarray, names):
    """Heat map of the Spearman correlations between the labels
    (:func:`lab.arecho.experiments.label_correlations`).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    go = _go()
    rho = np.asarray(rho, dtype=float)
    names = list(names)
    if rho.ndim != 2 or rho.shape != (len(names), len(names)):
        raise ValueError(f"rho must be a square matrix with one row per name (got {rho.shape})")
    fig = go.Figure(
        go.Heatmap(
            z=rho,
            x=names,
            y=names,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            reversescale=True,
            text=np.round(rho, 2),
            texttemplate="%{text}",
            colorbar={"title": "ρ"},
        )
    )
    fig.update_layout(
        title_text="Spearman ρ between the labels (corpus)",
        height=430,
        width=520,
        yaxis_autorange="reversed",
    )
    return fig


def tokenizer_compute(panel):
    """``compute(n_bins, spacing, metric)`` for the tokenizer explorer: draws what ``panel``
    (:func:`lab.arecho.views.tokenizer_panel`) returns.

    Left: histogram of the training values with the bin edges; right: quantisation error
    (mean absolute round-trip error divided by the training standard deviation) against
    the number of bins, with the current setting marked.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    _check_view("panel", panel)

    def compute(n_bins: int, spacing: str, metric: str):
        return _tokenizer_figure(panel(n_bins, spacing, metric))

    return compute


def _tokenizer_figure(tv):
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        horizontal_spacing=0.12,
        subplot_titles=(
            f"{tv.metric}: training values and bin edges",
            "round-trip error vs bins (test split)",
        ),
    )
    counts, b_edges = np.histogram(tv.values, bins=60)
    fig.add_trace(
        go.Bar(
            x=0.5 * (b_edges[1:] + b_edges[:-1]),
            y=counts,
            width=np.diff(b_edges),
            marker_color=_GREY,
            name="values",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    edges = tv.edges
    ex = np.repeat(edges, 3)
    ey = np.tile([0.0, 1.0, np.nan], edges.size)
    fig.add_trace(
        go.Scatter(
            x=ex,
            y=ey * counts.max(),
            mode="lines",
            line={"color": _RED, "width": 1},
            name="bin edges",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=list(tv.bins_grid),
            y=list(tv.errors),
            mode="lines+markers",
            line={"color": _BLUE},
            name=tv.spacing,
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=[tv.n_bins],
            y=[tv.error],
            mode="markers",
            marker={"size": 13, "color": _ORANGE},
            name="current",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text=METRIC_LABELS[tv.metric], row=1, col=1)
    fig.update_yaxes(title_text="count", row=1, col=1)
    fig.update_xaxes(title_text="bins T", type="log", row=1, col=2)
    fig.update_yaxes(title_text="MAE / σ", type="log", range=[-3.3, 0], row=1, col=2)
    fig.update_layout(
        height=360, title_text=(f"{tv.n_tokens} tokens for {tv.metric} ({tv.spacing} spacing)")
    )
    return fig


def error_bars(results: dict[str, dict[str, float]], title: str, log: bool = False):
    """Grouped bars of per-metric errors, one group per metric and one colour per model.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    _check_results("results", results)
    go = _go()
    colors = [_GREY, _BLUE, _ORANGE, _GREEN, _RED, "#9467bd", "#8c564b"]
    fig = go.Figure()
    for k, (label, errs) in enumerate(results.items()):
        names = [n for n in METRICS if n in errs]
        fig.add_trace(
            go.Bar(
                x=names,
                y=[errs[n] for n in names],
                name=label,
                marker_color=colors[k % len(colors)],
            )
        )
    fig.update_layout(
        barmode="group",
        title_text=title,
        height=380,
        yaxis_title="MAE / σ (numbers), error rate (classes)",
        legend={"orientation": "h", "y": -0.2},
    )
    if log:
        fig.update_yaxes(type="log")
    return fig


def profile_compute(panel, player: AudioPlayer | None = None):
    """``compute(snr_db, t60, clip)`` for the quality-profile explorer (notebook 2): draws what
    ``panel`` (:func:`lab.arecho.views.profile_panel`) returns.

    Left: true (labelled with ``pesq``/``pystoi``/...) and predicted (the chain,
    confidence-first, reference-free) metrics of one degraded utterance. Right: true and
    predicted PESQ-WB and STOI for the test utterances of the corpus nearest to the chosen
    SNR in every cell of the T60 x clipping grid.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    _check_view("panel", panel)

    def compute(snr_db: float, t60: float, clip: bool):
        v = panel(snr_db, t60, clip)
        if player is not None:
            player.set(v.waveform)
        fig = _profile_figure(v)
        fig.update_layout(
            title_text=f"SNR {snr_db:g} dB, T60 {t60:g} s, clipping {'on' if clip else 'off'} "
            "(predictions use the audio only, no reference)",
        )
        return fig

    return compute


def _profile_figure(v):
    from plotly.subplots import make_subplots

    go = _go()
    names = list(METRICS)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.14,
        subplot_titles=(
            "this utterance: true vs predicted",
            "test utterances nearest this SNR, per T60 × clip cell",
        ),
    )
    for vals, label, color in ((v.labels, "true", _GREY), (v.profile, "predicted", _ORANGE)):
        fig.add_trace(
            go.Bar(
                y=[METRIC_LABELS[n] for n in names],
                x=[_norm(n, x) for n, x in zip(names, vals, strict=True)],
                orientation="h",
                name=label,
                marker_color=color,
                text=[f"{x:.2f}" for x in vals],
                textposition="outside",
                hovertext=[f"{label} {n} = {x:.3f}" for n, x in zip(names, vals, strict=True)],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    labels_x = list(v.cells)
    for metric, color in (("PESQ-WB", _BLUE), ("STOI", _GREEN)):
        for kind, vals, symbol in (("true", v.true, "circle"), ("predicted", v.predicted, "x")):
            fig.add_trace(
                go.Scatter(
                    x=labels_x,
                    y=[_norm(metric, x) for x in vals[metric]],
                    mode="markers",
                    marker={"color": color, "size": 10, "symbol": symbol},
                    name=f"{kind} {metric}",
                    hovertext=[f"{x:.3f}" for x in vals[metric]],
                ),
                row=1,
                col=2,
            )
    fig.update_xaxes(range=[0, 1.35], showticklabels=False, row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text="T60 (✂ = clipped)", row=1, col=2)
    fig.update_yaxes(title_text="position in display range", range=[-0.05, 1.05], row=1, col=2)
    fig.update_layout(barmode="group", height=440, margin={"l": 120})
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return fig


def query_compute(panel, numeric, reference: dict[str, float] | None = None):
    """``compute(mode, query, given)`` for the query/decoding explorer (notebook 2): draws what
    ``panel`` (:func:`lab.arecho.views.query_panel`) returns.

    Bars: per-metric test error of the chosen query and decoding mode, with the full-query
    confidence-first errors as the reference (``reference``, the panel's when not given);
    given metrics are imposed at their true values. ``numeric``: the numerical metrics'
    names (the title's mean is over those).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    _check_view("panel", panel)
    numeric = set(numeric)

    def compute(mode: str, query: str, given: str):
        go = _go()
        ref = reference if reference is not None else panel("confidence", "all nine", "nothing")
        default = (mode, query, given) == ("confidence", "all nine", "nothing")
        cur = ref if default and reference is not None else panel(mode, query, given)
        names = list(METRICS)
        fig = go.Figure()
        fig.add_trace(
            go.Bar(
                x=names,
                y=[ref[n] for n in names],
                name="all nine, confidence-first",
                marker_color=_GREY,
            )
        )
        fig.add_trace(
            go.Bar(
                x=names,
                y=[cur.get(n, np.nan) for n in names],
                name=f"{query}, {mode}, {given}",
                marker_color=_ORANGE,
            )
        )
        num = [cur[n] for n in names if n in numeric and n in cur]
        fig.update_layout(
            barmode="group",
            height=380,
            legend={"orientation": "h", "y": -0.2},
            yaxis_title="MAE / σ (numbers), error rate (classes)",
            yaxis_range=[0, 0.8],
            title_text=f"decoding: {mode}; mean over queried numbers "
            f"{np.mean(num) if num else float('nan'):.3f}",
        )
        return fig

    return compute


def dependency_figure(dep: np.ndarray, names: list[str]):
    """Heat map: relative change of each metric's error (column) when another metric
    (row) is given at its true value. Negative (blue) = the given metric helps.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    go = _go()
    fig = go.Figure(
        go.Heatmap(
            z=100 * dep,
            x=names,
            y=names,
            zmid=0,
            colorscale="RdBu_r",
            text=[[f"{100 * v:.0f}" if np.isfinite(v) else "" for v in row] for row in dep],
            texttemplate="%{text}",
            colorbar={"title": "Δ error (%)"},
        )
    )
    fig.update_layout(
        title_text="imposing row metric → change of column metric's error (%)",
        xaxis_title="predicted metric",
        yaxis_title="given metric",
        yaxis_autorange="reversed",
        height=450,
        width=560,
    )
    return fig


def position_figure(curves: dict[str, np.ndarray]):
    """Mean normalised error (numerical metrics) of the metric written at each chain position.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    _check_results("curves", curves)
    go = _go()
    fig = go.Figure()
    for k, (label, c) in enumerate(curves.items()):
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, c.size + 1),
                y=c,
                mode="lines+markers",
                name=label,
                line={"color": [_GREY, _BLUE, _ORANGE, _GREEN][k % 4]},
            )
        )
    fig.update_layout(
        title_text="error of the metric written at each position of the chain",
        xaxis_title="position in the chain",
        yaxis_title="mean MAE / σ (numbers)",
        height=360,
    )
    return fig
