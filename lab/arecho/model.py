"""ARECHO's metric tokenizer, the tiny chain model, the parallel baseline and the decoders.

Equations (numbering is this module's):

* (6) thresholds ``theta_m = percentile(v_train, p_k)``, ``k = 1..T-1`` (deduplicated; the
  "lower" percentile, an actual training value, so repeated values never leave empty bins);
* (7) token of a value ``b(v) = #{i : theta_i <= v}``; a category gets its own token;
* (8) sequence ``<sos>, <m_1>, val(m_1), <m_2>, val(m_2), ...`` in a random order ``pi``;
* (9) loss ``L = - sum_t log p(y_t | y_<t, audio)`` (teacher forcing, label smoothing);
* (10) two-step decoding: choose the next metric ``m* = argmax_{m in Q \\ written} s(m)``
  then its value ``v* = argmax_{v in block(m*)} log p(v | prefix, <m*>)``.

Deviations from the official code (flagged where they occur): the representative value of a
bin is the median of the training values in it (the official code returns the lower
threshold); there is no per-metric pad token and no ``<eos>`` (decoding is driven by the
query); the encoder is an MLP over per-segment log-mel statistics, not a Transformer over
frames; the spacing names follow the official options but their formulas are ours.

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.checks import check_array, check_choice, check_int, check_positive, check_range

__all__ = [
    "SPACINGS",
    "MODES",
    "MetricTokenizer",
    "TinyARECHO",
    "ParallelBaseline",
    "train",
    "decode",
    "decode_reference",
    "predict",
    "errors",
    "metric_order",
    "errors_by_position",
]

SPACINGS = ("linear", "normal", "quadratic", "exponential", "logarithmic")
MODES = ("fixed", "random", "meta", "confidence")
PAD, UNK, SOS, EOS = 0, 1, 2, 3
N_SPECIAL = 4


def _percentile_points(n_bins: int, spacing: str) -> np.ndarray:
    """Percentile points in (0, 100) for ``n_bins`` bins under a spacing rule (ours)."""
    u = np.arange(1, n_bins) / n_bins
    if spacing == "linear":
        g = u  # equal-mass bins
    elif spacing == "quadratic":  # denser in the centre
        z = 2 * u - 1
        g = 0.5 + 0.5 * np.sign(z) * z**2
    elif spacing == "normal":  # equal steps in a standard normal's quantiles: centre-dense
        from scipy.stats import norm

        g = norm.cdf((u - 0.5) * 5.0)
    elif spacing == "exponential":  # denser in the lower tail
        g = np.expm1(4 * u) / np.expm1(4)
    else:  # logarithmic: denser in the upper tail
        g = np.log1p(np.expm1(4) * u) / 4
    return 100 * g


class MetricTokenizer:
    """Per-metric value tokens: percentile bins for numbers, one token per category.

    Vocabulary: ``<pad>, <unk>, <sos>, <eos>`` then, per metric, ``[<m>, value tokens...]``;
    each metric's value tokens form a contiguous block (:meth:`block`).

    Parameters
    ----------
    n_bins : int
        Bins per numerical metric (2 to 1024); fewer remain when percentiles repeat.
    spacing : str
        ``"linear"`` (equal-mass bins), ``"normal"``, ``"quadratic"`` (denser in the centre),
        ``"exponential"`` (lower tail), ``"logarithmic"`` (upper tail).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """

    def __init__(self, n_bins: int = 32, spacing: str = "linear"):
        self.n_bins = check_int("n_bins", n_bins, 2, 1024)
        self.spacing = check_choice("spacing", spacing, SPACINGS)
        self.names: tuple[str, ...] = ()

    # -- fitting --------------------------------------------------------------------------
    def fit(self, labels: Any, types: Sequence[str], names: Sequence[str] | None = None):
        """Fit thresholds (numbers) and category lists on training labels ``(N, M)``.

        ``NaN`` marks a missing label and is ignored. Returns ``self``.
        """
        labels = check_array("labels", labels, ndim=2, finite=False, min_size=1)
        m = labels.shape[1]
        types = tuple(types)
        if len(types) != m or any(t not in ("num", "cat") for t in types):
            raise ValueError(f"types must be {m} entries of 'num'/'cat' (got {types!r})")
        names = tuple(names) if names is not None else tuple(f"m{j}" for j in range(m))
        if len(names) != m or len(set(names)) != m:
            raise ValueError(f"names must be {m} distinct strings (got {names!r})")
        self.names, self.types = names, types
        self.edges, self.values, self.offsets, self.sizes = [], [], [], []
        offset = N_SPECIAL
        for j in range(m):
            v = labels[:, j]
            v = v[np.isfinite(v)]
            if v.size == 0:
                raise ValueError(f"metric {names[j]!r} has no finite training value")
            if types[j] == "num":
                # eq. (6): thresholds at percentile points, duplicates removed
                # method="lower": every threshold is a training value, so no bin is empty
                pts = _percentile_points(self.n_bins, self.spacing)
                theta = np.unique(np.percentile(v, pts, method="lower"))
                theta = theta[theta > v.min()]  # no empty first bin
                b = np.searchsorted(theta, v, side="right")  # eq. (7)
                # deviation: representative = median of the training values in the bin
                lo = np.concatenate([[v.min()], theta])
                hi = np.concatenate([theta, [v.max()]])
                rep = np.array(
                    [
                        np.median(v[b == k]) if np.any(b == k) else 0.5 * (lo[k] + hi[k])
                        for k in range(theta.size + 1)
                    ]
                )
                self.edges.append(theta)
                self.values.append(rep)
            else:
                cats = np.unique(v)
                self.edges.append(None)
                self.values.append(cats)
            self.offsets.append(offset + 1)  # offset is the meta token <m>
            self.sizes.append(len(self.values[-1]))
            offset += 1 + self.sizes[-1]
        self.vocab_size = offset
        return self

    def _check_fitted(self) -> None:
        if not self.names:
            raise RuntimeError("MetricTokenizer is not fitted; call .fit(labels, types) first")

    def _metric(self, metric: Any) -> int:
        self._check_fitted()
        if isinstance(metric, str):
            if metric not in self.names:
                raise ValueError(f"metric must be one of {list(self.names)} (got {metric!r})")
            return self.names.index(metric)
        return check_int("metric", metric, 0, len(self.names) - 1)

    # -- tokens ---------------------------------------------------------------------------
    def meta_token(self, metric: Any) -> int:
        """Token id of the meta-label ``<m>`` naming ``metric``."""
        return self.offsets[self._metric(metric)] - 1

    def block(self, metric: Any) -> tuple[int, int]:
        """``(start, size)`` of ``metric``'s value tokens in the vocabulary."""
        j = self._metric(metric)
        return self.offsets[j], self.sizes[j]

    def bin_of(self, metric: Any, value: Any) -> np.ndarray:
        """Bin index (0-based, inside the metric's block) of ``value``, eq. (7)."""
        j = self._metric(metric)
        v = np.atleast_1d(check_array("value", value))
        if self.types[j] == "num":
            return np.searchsorted(self.edges[j], v, side="right")  # eq. (7)
        cats = self.values[j]
        k = np.searchsorted(cats, v).clip(0, cats.size - 1)
        if not np.all(cats[k] == v):
            bad = v[cats[k] != v][0]
            raise ValueError(
                f"value {bad:g} is not a category of {self.names[j]!r} ({cats.tolist()})"
            )
        return k

    def encode(self, metric: Any, value: Any) -> Any:
        """Token id(s) of ``value`` for ``metric`` (scalar in, int out; array in, array out)."""
        j = self._metric(metric)
        tok = self.offsets[j] + self.bin_of(j, value)
        return int(tok[0]) if np.ndim(value) == 0 else tok

    def decode(self, metric: Any, token: Any) -> Any:
        """Representative value(s) of token(s) of ``metric``; ``ValueError`` outside its block."""
        j = self._metric(metric)
        t = np.atleast_1d(np.asarray(token))
        if not np.issubdtype(t.dtype, np.integer):
            raise TypeError(f"token must be an integer (got {t.dtype})")
        k = t - self.offsets[j]
        if np.any((k < 0) | (k >= self.sizes[j])):
            raise ValueError(
                f"token must lie in [{self.offsets[j]}, {self.offsets[j] + self.sizes[j] - 1}] "
                f"for metric {self.names[j]!r} (got {t[(k < 0) | (k >= self.sizes[j])][0]})"
            )
        out = self.values[j][k]
        return float(out[0]) if np.ndim(token) == 0 else out

    def sequence(self, row: Any, order: Sequence[int] | None = None) -> np.ndarray:
        """Token sequence of one utterance, eq. (8): ``<sos>`` then ``<m>, val`` pairs.

        ``NaN`` labels are skipped; ``order`` is a permutation of metric indices (default:
        the fitted order).
        """
        self._check_fitted()
        row = check_array("row", row, ndim=1, finite=False)
        m = len(self.names)
        if row.size != m:
            raise ValueError(f"row must have {m} values (got {row.size})")
        order = list(range(m)) if order is None else [self._metric(o) for o in order]
        if sorted(order) != list(range(m)):
            raise ValueError(f"order must be a permutation of range({m}) (got {order})")
        seq = [SOS]
        for j in order:
            if np.isfinite(row[j]):
                seq += [self.meta_token(j), self.encode(j, row[j])]
        return np.array(seq, dtype=np.int64)

    def encode_matrix(self, labels: Any) -> np.ndarray:
        """Value tokens of a label matrix ``(N, M)`` (``PAD`` where a label is ``NaN``)."""
        labels = check_array("labels", labels, ndim=2, finite=False)
        out = np.full(labels.shape, PAD, dtype=np.int64)
        for j in range(labels.shape[1]):
            ok = np.isfinite(labels[:, j])
            if ok.any():
                out[ok, j] = self.encode(j, labels[ok, j])
        return out

    def decode_matrix(self, tokens: Any) -> np.ndarray:
        """Inverse of :meth:`encode_matrix` (``NaN`` for ``PAD``)."""
        tokens = np.asarray(tokens)
        out = np.full(tokens.shape, np.nan)
        for j in range(tokens.shape[1]):
            ok = tokens[:, j] != PAD
            if ok.any():
                out[ok, j] = self.decode(j, tokens[ok, j])
        return out

    def state(self) -> dict[str, Any]:
        """A plain-data description (for checkpoints)."""
        return {"n_bins": self.n_bins, "spacing": self.spacing, "names": list(self.names)}


# ----------------------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------------------
def _torch():
    import torch

    return torch


def _module_base():
    return _torch().nn.Module


class _SegmentEncoder(_module_base()):
    """Features ``(B, S * 2 * n_mels)`` -> memory ``(B, S + 1, d)``: one token per segment
    plus one for the whole utterance (a 2-layer MLP each; the book's stand-in for ARECHO's
    Transformer audio encoder)."""

    def __init__(self, n_features: int, n_segments: int, d: int):
        torch = _torch()
        super().__init__()
        if n_features % n_segments:
            raise ValueError(f"n_features={n_features} must be a multiple of n_segments")
        self.n_segments = n_segments
        per = n_features // n_segments
        self.seg = torch.nn.Sequential(
            torch.nn.Linear(per, 2 * d), torch.nn.GELU(), torch.nn.Linear(2 * d, d)
        )
        self.glob = torch.nn.Sequential(
            torch.nn.Linear(n_features, 2 * d), torch.nn.GELU(), torch.nn.Linear(2 * d, d)
        )
        self.pos = torch.nn.Parameter(torch.zeros(n_segments + 1, d))
        self.register_buffer("mu", torch.zeros(n_features))
        self.register_buffer("sd", torch.ones(n_features))

    def forward(self, x):
        torch = _torch()
        x = (x - self.mu) / self.sd
        b = x.shape[0]
        segs = self.seg(x.view(b, self.n_segments, -1))
        return torch.cat([self.glob(x)[:, None], segs], dim=1) + self.pos


class _Attention(_module_base()):
    """Multi-head attention written out (faster than the fused CPU kernels at this size)."""

    def __init__(self, d: int, heads: int):
        torch = _torch()
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(d, d)
        self.kv = torch.nn.Linear(d, 2 * d)
        self.o = torch.nn.Linear(d, d)

    def forward(self, x, ctx, causal: bool):
        b, t, d = x.shape
        h = self.heads
        q = self.q(x).view(b, t, h, d // h).transpose(1, 2)
        k, v = self.kv(ctx).view(b, ctx.shape[1], 2, h, d // h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * (d // h) ** -0.5
        if causal:
            s = ctx.shape[1]
            mask = _torch().ones(t, s, dtype=_torch().bool, device=x.device).triu(1)
            att = att.masked_fill(mask, float("-inf"))
        y = att.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class _DecoderLayer(_module_base()):
    """Pre-norm decoder block: causal self-attention, cross-attention to the audio memory,
    feed-forward."""

    def __init__(self, d: int, heads: int, ff: int):
        torch = _torch()
        super().__init__()
        self.n1, self.n2, self.n3 = (torch.nn.LayerNorm(d) for _ in range(3))
        self.self_att = _Attention(d, heads)
        self.cross_att = _Attention(d, heads)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(d, ff), torch.nn.GELU(), torch.nn.Linear(ff, d)
        )

    def forward(self, x, memory):
        h = self.n1(x)
        x = x + self.self_att(h, h, causal=True)
        x = x + self.cross_att(self.n2(x), memory, causal=False)
        return x + self.ff(self.n3(x))


class TinyARECHO(_module_base()):
    """A tiny ARECHO: segment encoder + causal Transformer decoder over metric tokens.

    Parameters
    ----------
    tokenizer : MetricTokenizer
        A fitted tokenizer (defines the vocabulary and is kept for decoding).
    n_features : int
        Input feature size.
    n_segments : int
        Segments in the feature vector (memory tokens = ``n_segments + 1``).
    d, layers, heads, ff : int
        Width, decoder layers, attention heads, feed-forward width.
    dropout : float
        Dropout inside the decoder.

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    def __init__(
        self,
        tokenizer: MetricTokenizer,
        n_features: int,
        n_segments: int = 4,
        d: int = 64,
        layers: int = 2,
        heads: int = 4,
        ff: int = 128,
        dropout: float = 0.0,
    ):
        torch = _torch()
        super().__init__()
        if not isinstance(tokenizer, MetricTokenizer):
            raise TypeError(f"tokenizer must be a MetricTokenizer (got {type(tokenizer).__name__})")
        tokenizer._check_fitted()
        n_features = check_int("n_features", n_features, 1)
        n_segments = check_int("n_segments", n_segments, 1, n_features)
        d = check_int("d", d, 4)
        layers = check_int("layers", layers, 1, 64)
        heads = check_int("heads", heads, 1, d)
        if d % heads:
            raise ValueError(f"d must be divisible by heads (got d={d}, heads={heads})")
        ff = check_int("ff", ff, 1)
        dropout = check_range("dropout", dropout, 0.0, 0.9)
        self.tokenizer = tokenizer
        self.n_metrics = len(tokenizer.names)
        self.encoder = _SegmentEncoder(n_features, n_segments, d)
        self.embed = torch.nn.Embedding(tokenizer.vocab_size, d)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(1 + 2 * self.n_metrics, d))
        self.layers = torch.nn.ModuleList(_DecoderLayer(d, heads, ff) for _ in range(layers))
        self.dropout = torch.nn.Dropout(dropout)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, tokenizer.vocab_size)

    def encode(self, features):
        """Memory tokens ``(B, S + 1, d)`` of features ``(B, F)``."""
        return self.encoder(features)

    def forward(self, features, tokens, memory=None):
        """Next-token logits ``(B, T, V)`` for token prefixes ``(B, T)`` (causal)."""
        if memory is None:
            memory = self.encode(features)
        t = tokens.shape[1]
        h = self.dropout(self.embed(tokens) + self.pos[:t])
        for layer in self.layers:
            h = layer(h, memory)
        return self.head(self.norm(h))


class ParallelBaseline(_module_base()):
    """UniVERSA-style parallel prediction: one shared encoder, one head per metric.

    Parameters
    ----------
    n_features, n_metrics : int
        Input size and number of metrics.
    target : str
        ``"raw"`` (L1 on the metrics' own scales: the failure the tokenizer fixes),
        ``"standardized"`` (L1 on z-scored targets) or ``"tokens"`` (cross-entropy over each
        metric's bins; needs ``tokenizer``).
    tokenizer : MetricTokenizer, optional
        Required for ``target="tokens"``.
    loss : str
        ``"l1"`` or ``"mse"`` for the regression targets (ignored for tokens).
    n_segments, d : int
        Encoder shape (the same encoder as :class:`TinyARECHO`).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """

    def __init__(
        self,
        n_features: int,
        n_metrics: int,
        target: str = "standardized",
        tokenizer: MetricTokenizer | None = None,
        loss: str = "l1",
        n_segments: int = 4,
        d: int = 64,
    ):
        torch = _torch()
        super().__init__()
        self.loss = check_choice("loss", loss, ("l1", "mse"))
        n_features = check_int("n_features", n_features, 1)
        self.n_metrics = check_int("n_metrics", n_metrics, 1)
        self.target = check_choice("target", target, ("raw", "standardized", "tokens"))
        if target == "tokens":
            if not isinstance(tokenizer, MetricTokenizer):
                raise TypeError("target='tokens' needs a fitted MetricTokenizer as tokenizer")
            if len(tokenizer.names) != n_metrics:
                raise ValueError(f"tokenizer has {len(tokenizer.names)} metrics, not {n_metrics}")
        self.tokenizer = tokenizer
        self.encoder = _SegmentEncoder(n_features, n_segments, d)
        n_seg1 = n_segments + 1
        n_out = sum(tokenizer.sizes) if target == "tokens" else n_metrics
        self.head = torch.nn.Sequential(
            torch.nn.Flatten(),
            torch.nn.GELU(),
            torch.nn.Linear(n_seg1 * d, 2 * d),
            torch.nn.GELU(),
            torch.nn.Linear(2 * d, n_out),
        )
        self.register_buffer("y_mu", torch.zeros(n_metrics))
        self.register_buffer("y_sd", torch.ones(n_metrics))

    def forward(self, features):
        """Raw head outputs ``(B, n_out)``."""
        return self.head(self.encoder(features))


def _set_norms(model, corpus_x: np.ndarray, corpus_y: np.ndarray | None = None) -> None:
    torch = _torch()
    dev = next(model.parameters()).device
    model.encoder.mu.copy_(torch.as_tensor(corpus_x.mean(0), device=dev))
    model.encoder.sd.copy_(torch.as_tensor(corpus_x.std(0) + 1e-3, device=dev))
    if corpus_y is not None and isinstance(model, ParallelBaseline) and model.target != "raw":
        model.y_mu.copy_(torch.as_tensor(np.nanmean(corpus_y, 0), device=dev))
        model.y_sd.copy_(torch.as_tensor(np.nanstd(corpus_y, 0) + 1e-9, device=dev))


def _batch_sequences(val_tok: np.ndarray, meta: np.ndarray, rng, label_dropout: float):
    """Teacher-forcing batch, eq. (8): random order per row, dropped labels moved to the end."""
    b, m = val_tok.shape
    keys = rng.random((b, m))
    keep = (rng.random((b, m)) >= label_dropout) & (val_tok != PAD)
    keep[np.arange(b), np.argmax(np.where(val_tok != PAD, keys, -1), 1)] |= np.any(
        val_tok != PAD, 1
    )  # at least one label per row
    keys = np.where(keep, keys, 2.0 + keys)
    order = np.argsort(keys, axis=1)  # random permutation; dropped ones last
    rows = np.arange(b)[:, None]
    kept = np.take_along_axis(keep, order, 1)
    seq = np.full((b, 1 + 2 * m), PAD, dtype=np.int64)
    seq[:, 0] = SOS
    seq[:, 1::2] = np.where(kept, meta[order], PAD)
    seq[:, 2::2] = np.where(kept, val_tok[rows, order], PAD)
    return seq


def train(
    model,
    corpus,
    seconds: float = 10.0,
    *,
    steps: int | None = None,
    batch: int = 64,
    lr: float = 2e-3,
    label_dropout: float = 0.15,
    label_smoothing: float = 0.05,
    seed: int = 0,
    rows: Any = None,
    clock: str = "wall",
    progress: bool = False,
) -> dict[str, Any]:
    """Train a :class:`TinyARECHO` or :class:`ParallelBaseline` on a corpus's training split.

    Parameters
    ----------
    model : TinyARECHO or ParallelBaseline
    corpus : Corpus
        Uses ``corpus.features[rows]`` and ``corpus.labels[rows]`` (``rows`` defaults to
        ``corpus.train``).
    seconds : float
        Time budget (the compute-matched comparisons give every model the same).
    steps : int, optional
        Stop after this many optimiser steps instead (deterministic; ``seconds`` still caps).
    batch, lr : int, float
        Mini-batch size and AdamW learning rate (cosine decay over the budget).
    label_dropout : float
        Probability of dropping each label from a training sequence (partial annotation).
    label_smoothing : float
        Cross-entropy label smoothing (token models).
    seed : int
        Seed of the batches, orders and dropout.
    clock : str
        ``"wall"`` (``time.perf_counter``) or ``"cpu"`` (``time.process_time``: the compute this
        process used, insensitive to other processes on a shared machine; with one thread it
        is the fair budget for a compute-matched comparison).
    progress : bool
        Show a progress bar over steps (when ``steps`` is given).

    Returns
    -------
    dict
        ``steps``, ``seconds`` (measured on ``clock``), ``wall_seconds``, ``loss`` (per step).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    torch = _torch()
    if not isinstance(model, TinyARECHO | ParallelBaseline):
        raise TypeError(
            f"model must be TinyARECHO or ParallelBaseline (got {type(model).__name__})"
        )
    seconds = check_positive("seconds", seconds)
    if steps is not None:
        steps = check_int("steps", steps, 1)
    batch = check_int("batch", batch, 1)
    lr = check_positive("lr", lr)
    label_dropout = check_range("label_dropout", label_dropout, 0.0, 0.95)
    label_smoothing = check_range("label_smoothing", label_smoothing, 0.0, 0.5)
    seed = check_int("seed", seed, 0)
    clock = check_choice("clock", clock, ("wall", "cpu"))
    now = time.perf_counter if clock == "wall" else time.process_time
    rows = corpus.train if rows is None else np.asarray(rows, dtype=int)
    if rows.size == 0:
        raise ValueError("rows (or corpus.train) must not be empty")
    dev = next(model.parameters()).device
    x_all = corpus.features[rows].astype(np.float32)
    y_all = corpus.labels[rows]
    _set_norms(model, x_all, y_all)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    x_t = torch.as_tensor(x_all, device=dev)
    tok = model.tokenizer
    if isinstance(model, TinyARECHO) or model.target == "tokens":
        val_tok = tok.encode_matrix(y_all)
        meta = np.array([tok.meta_token(j) for j in range(len(tok.names))])
    if isinstance(model, ParallelBaseline):
        y_t = torch.as_tensor(y_all, dtype=torch.float32, device=dev)
        if model.target == "tokens":
            local = torch.as_tensor(val_tok - np.array(tok.offsets)[None], device=dev)
            starts = np.concatenate([[0], np.cumsum(tok.sizes)])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    ce = torch.nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=label_smoothing)
    losses: list[float] = []
    model.train()
    t0, w0 = now(), time.perf_counter()
    bar = None
    if progress and steps is not None:
        from ..core.progress import progress as _progress

        bar = _progress(total=steps, desc=type(model).__name__)
    k = 0
    while True:
        elapsed = now() - t0
        if (steps is not None and k >= steps) or elapsed >= seconds:
            break
        frac = k / steps if steps is not None else elapsed / seconds
        for g in opt.param_groups:
            g["lr"] = lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))
        idx = rng.integers(0, rows.size, size=min(batch, rows.size))
        xb = x_t[idx]
        if isinstance(model, TinyARECHO):
            seq = torch.as_tensor(
                _batch_sequences(val_tok[idx], meta, rng, label_dropout), device=dev
            )
            logits = model(xb, seq[:, :-1])
            loss = ce(logits.reshape(-1, logits.shape[-1]), seq[:, 1:].reshape(-1))  # eq. (9)
        else:
            out = model(xb)
            if model.target == "tokens":
                loss = sum(
                    torch.nn.functional.cross_entropy(
                        out[:, starts[j] : starts[j + 1]],
                        local[idx, j],
                        label_smoothing=label_smoothing,
                    )
                    for j in range(len(tok.sizes))
                ) / len(tok.sizes)
            else:  # "raw": every metric in its own units; "standardized": z-scored
                resid = out - (y_t[idx] - model.y_mu) / model.y_sd
                loss = resid.abs().mean() if model.loss == "l1" else resid.pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        k += 1
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    model.eval()
    return {
        "steps": k,
        "seconds": now() - t0,
        "wall_seconds": time.perf_counter() - w0,
        "clock": clock,
        "loss": losses,
    }


# ----------------------------------------------------------------------------------------
# decoding
# ----------------------------------------------------------------------------------------
def _check_query(model, query) -> list[int]:
    tok = model.tokenizer
    if query is None or query == "all":
        return list(range(len(tok.names)))
    if isinstance(query, str):
        query = [query]
    out = [tok._metric(q) for q in query]
    if not out:
        raise ValueError("query must name at least one metric")
    if len(set(out)) != len(out):
        raise ValueError(f"query must not repeat a metric (got {list(query)})")
    return out


def _given_tokens(model, given, n: int) -> list[tuple[int, np.ndarray]]:
    """``[(metric, value tokens (n,)), ...]`` for the ``given`` dict (values or arrays)."""
    if given is None:
        return []
    if not isinstance(given, dict):
        raise TypeError(f"given must be a dict metric -> value(s) (got {type(given).__name__})")
    tok = model.tokenizer
    out = []
    for name, value in given.items():
        j = tok._metric(name)
        v = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))
        out.append((j, np.asarray(tok.encode(j, v)).reshape(n)))
    return out


def _prepare(model, features, query, mode, given, beam):
    torch = _torch()
    if not isinstance(model, TinyARECHO):
        raise TypeError(f"model must be a TinyARECHO (got {type(model).__name__})")
    mode = check_choice("mode", mode, MODES)
    beam = check_int("beam", beam, 1, 1)  # deviation: greedy only (B = 1) in the book
    dev = next(model.parameters()).device
    if isinstance(features, torch.Tensor):
        x = features.to(dev, torch.float32)
    else:
        x = torch.as_tensor(
            check_array("features", features, ndim=(1, 2)), dtype=torch.float32, device=dev
        )
    if x.ndim == 1:
        x = x[None]
    q = _check_query(model, query)
    g = _given_tokens(model, given, x.shape[0])
    q = [j for j in q if j not in {j for j, _ in g}]
    return x, q, g


def decode(
    model,
    features,
    query: Any = "all",
    mode: str = "confidence",
    given: dict[str, Any] | None = None,
    *,
    beam: int = 1,
    seed: int = 0,
    return_tokens: bool = False,
) -> dict[str, np.ndarray] | tuple[dict[str, np.ndarray], np.ndarray]:
    """Batched two-step decoding of a subset of metrics (the fast path), eq. (10).

    Parameters
    ----------
    model : TinyARECHO
    features : array_like or torch.Tensor
        ``(B, F)`` (or ``(F,)``) input features.
    query : str or sequence of str
        Metrics to predict (``"all"`` for every metric).
    mode : str
        Which metric to write next: ``"fixed"`` (the tokenizer's order), ``"random"``,
        ``"meta"`` (highest meta-token probability, the official default step 1) or
        ``"confidence"`` (the official variant that keeps every remaining metric and lets
        the value step decide: the metric whose best value token is most probable wins).
    given : dict, optional
        Known metric values (a scalar or one value per utterance), written first as a
        teacher-forced prefix; they are not predicted.
    beam : int
        Beam width; the book implements greedy search only (``1``).
    seed : int
        Seed of the ``"random"`` order.
    return_tokens : bool
        Also return the ``(B, 1 + 2 * written)`` token sequences.

    Returns
    -------
    dict
        ``metric -> (B,)`` predicted values (and the tokens if asked).

    Raises
    ------
    ValueError
        Unknown metric in ``query``/``given``, a given value outside a categorical
        metric's categories, an unknown ``mode``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    torch = _torch()
    x, q, g = _prepare(model, features, query, mode, given, beam)
    tok = model.tokenizer
    b = x.shape[0]
    dev = x.device
    meta = torch.tensor([tok.meta_token(j) for j in range(len(tok.names))], device=dev)
    starts = [tok.offsets[j] for j in range(len(tok.names))]
    sizes = [tok.sizes[j] for j in range(len(tok.names))]
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        mem = model.encode(x)
        seq = torch.full((b, 1), SOS, dtype=torch.long, device=dev)
        for j, vt in g:  # given metrics: teacher-forced prefix
            pair = torch.stack([meta[j].expand(b), torch.as_tensor(vt, device=dev)], 1)
            seq = torch.cat([seq, pair], 1)
        remaining = torch.ones(b, len(q), dtype=torch.bool, device=dev)
        qt = torch.tensor(q, device=dev)
        rand_keys = torch.as_tensor(rng.random((b, len(q))), device=dev)
        for _ in range(len(q)):
            rows = torch.arange(b, device=dev)
            if mode in ("fixed", "random"):
                key = (
                    -torch.arange(len(q), device=dev, dtype=torch.float64).expand(b, -1)
                    if mode == "fixed"
                    else rand_keys
                )
                pick = torch.where(remaining, key, -math.inf).argmax(1)
            elif mode == "meta":
                lp = model(None, seq, memory=mem)[:, -1].log_softmax(-1)  # step 1: <m> scores
                pick = torch.where(remaining, lp[:, meta[qt]], -math.inf).argmax(1)
            else:  # confidence: try every remaining metric, keep the surest value
                r = len(q)
                cand = torch.cat([seq.repeat_interleave(r, 0), meta[qt].repeat(b)[:, None]], 1)
                lp = model(None, cand, memory=mem.repeat_interleave(r, 0))[:, -1].log_softmax(-1)
                best = torch.stack(
                    [
                        lp[k::r, starts[j] : starts[j] + sizes[j]].max(1).values
                        for k, j in enumerate(q)
                    ],
                    1,
                )
                pick = torch.where(remaining, best, -math.inf).argmax(1)
            m_tok = meta[qt[pick]]
            seq = torch.cat([seq, m_tok[:, None]], 1)
            lp = model(None, seq, memory=mem)[:, -1]
            # step 2: mask the vocabulary to the chosen metric's value block
            lo = torch.as_tensor([starts[j] for j in q], device=dev)[pick]
            hi = lo + torch.as_tensor([sizes[j] for j in q], device=dev)[pick]
            v = torch.arange(lp.shape[1], device=dev)[None]
            masked = torch.where((v >= lo[:, None]) & (v < hi[:, None]), lp, -math.inf)
            seq = torch.cat([seq, masked.argmax(1)[:, None]], 1)
            remaining[rows, pick] = False
    out = _read_sequences(tok, seq.cpu().numpy(), skip=1 + 2 * len(g))
    result = {tok.names[j]: out[j] for j in q}
    return (result, seq.cpu().numpy()) if return_tokens else result


def _read_sequences(tok: MetricTokenizer, seq: np.ndarray, skip: int) -> dict[int, np.ndarray]:
    b = seq.shape[0]
    out: dict[int, np.ndarray] = {}
    metas = {tok.meta_token(j): j for j in range(len(tok.names))}
    for pos in range(skip, seq.shape[1], 2):
        for r in range(b):
            j = metas[int(seq[r, pos])]
            out.setdefault(j, np.full(b, np.nan))[r] = tok.decode(j, int(seq[r, pos + 1]))
    return out


def decode_reference(
    model, features, query: Any = "all", mode: str = "confidence", given=None, *, seed: int = 0
) -> dict[str, np.ndarray]:
    """One utterance and one candidate at a time: the readable two-step search, eq. (10).

    Same arguments and result as :func:`decode` (greedy); used to test the batched path.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    torch = _torch()
    x, q, g = _prepare(model, features, query, mode, given, 1)
    tok = model.tokenizer
    rng = np.random.default_rng(seed)
    keys = rng.random((x.shape[0], len(q)))
    results = {tok.names[j]: np.full(x.shape[0], np.nan) for j in q}
    with torch.no_grad():
        for i in range(x.shape[0]):
            mem = model.encode(x[i : i + 1])
            seq = [SOS]
            for j, vt in g:
                seq += [tok.meta_token(j), int(vt[i])]

            def next_logp(prefix, mem=mem):
                t = torch.tensor([prefix], device=x.device)
                return model(None, t, memory=mem)[0, -1].log_softmax(-1)

            remaining = list(range(len(q)))
            while remaining:
                if mode == "fixed":
                    k = remaining[0]
                elif mode == "random":
                    k = max(remaining, key=lambda r: keys[i, r])
                elif mode == "meta":  # step 1: the most probable meta-label token
                    lp = next_logp(seq)
                    k = max(remaining, key=lambda r: float(lp[tok.meta_token(q[r])]))
                else:  # confidence: the metric whose best value is most probable

                    def best(r, seq=seq):
                        s, n = tok.block(q[r])
                        return float(next_logp(seq + [tok.meta_token(q[r])])[s : s + n].max())

                    k = max(remaining, key=best)
                j = q[k]
                seq.append(tok.meta_token(j))
                s, n = tok.block(j)
                v = s + int(next_logp(seq)[s : s + n].argmax())  # step 2: masked argmax
                seq.append(v)
                results[tok.names[j]][i] = tok.decode(j, v)
                remaining.remove(k)
    return results


def predict(model, features) -> np.ndarray:
    """Predicted metric matrix ``(B, M)`` of a :class:`ParallelBaseline` (original units;
    categorical metrics rounded to the nearest category, or argmax over their tokens).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    torch = _torch()
    if not isinstance(model, ParallelBaseline):
        raise TypeError(f"model must be a ParallelBaseline (got {type(model).__name__})")
    dev = next(model.parameters()).device
    x = torch.as_tensor(check_array("features", features, ndim=2), dtype=torch.float32, device=dev)
    with torch.no_grad():
        out = model(x)
        if model.target == "tokens":
            tok = model.tokenizer
            starts = np.concatenate([[0], np.cumsum(tok.sizes)])
            cols = []
            for j in range(model.n_metrics):
                k = out[:, starts[j] : starts[j + 1]].argmax(1).cpu().numpy()
                cols.append(tok.values[j][k])
            return np.stack(cols, 1)
        y = (out * model.y_sd + model.y_mu).cpu().numpy().astype(np.float64)
    return y


def errors(
    pred: Any,
    true: Any,
    types: Sequence[str],
    train_labels: Any,
    names: Sequence[str] | None = None,
) -> dict[str, float]:
    """Per-metric error: MAE divided by the training standard deviation (numbers), error
    rate after rounding to the nearest category (classes). ``NaN`` predictions are skipped.

    Parameters
    ----------
    pred, true : array_like
        ``(N, M)`` predictions and labels (or dicts ``name -> (N,)`` for ``pred``).
    types : sequence of str
        ``"num"``/``"cat"`` per metric.
    train_labels : array_like
        ``(N_train, M)`` labels whose standard deviation normalises the MAE.
    names : sequence of str, optional
        Metric names (required when ``pred`` is a dict).

    Returns
    -------
    dict
        ``name -> error``.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    true = check_array("true", true, ndim=2)
    m = true.shape[1]
    names = list(names) if names is not None else [f"m{j}" for j in range(m)]
    if isinstance(pred, dict):
        cols = [pred.get(n) for n in names]
    else:
        pred = check_array("pred", pred, shape=true.shape, finite=False)
        cols = [pred[:, j] for j in range(m)]
    sd = np.std(check_array("train_labels", train_labels, ndim=2), axis=0)
    out = {}
    for j, col in enumerate(cols):
        if col is None:
            continue
        col = np.asarray(col, dtype=np.float64)
        ok = np.isfinite(col)
        if not ok.any():
            continue
        if types[j] == "num":
            out[names[j]] = float(np.mean(np.abs(col[ok] - true[ok, j])) / max(sd[j], 1e-12))
        else:
            out[names[j]] = float(np.mean(np.round(col[ok]) != true[ok, j]))
    return out


def metric_order(seq: Any, tokenizer: MetricTokenizer) -> np.ndarray:
    """Names of the metrics in the order a decoded sequence wrote them, ``(B, k)``.

    ``seq`` is the token array returned by ``decode(..., return_tokens=True)`` (the given
    prefix included).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    seq = np.asarray(seq)
    if seq.ndim != 2 or seq.shape[1] % 2 != 1:
        raise ValueError(f"seq must have shape (B, 1 + 2k) (got {seq.shape})")
    metas = {tokenizer.meta_token(j): n for j, n in enumerate(tokenizer.names)}
    try:
        return np.vectorize(metas.__getitem__, otypes=[object])(seq[:, 1::2])
    except KeyError as exc:
        raise ValueError(f"seq holds a non-meta token {exc} at a metric position") from None


def errors_by_position(
    seq: Any, tokenizer: MetricTokenizer, true: Any, train_labels: Any
) -> np.ndarray:
    """Mean normalised absolute error of the numerical metric written at each position.

    Returns
    -------
    numpy.ndarray
        ``(k,)``; ``NaN`` where no numerical metric was written at that position.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    seq = np.asarray(seq)
    true = check_array("true", true, ndim=2)
    sd = np.std(check_array("train_labels", train_labels, ndim=2), axis=0)
    order = metric_order(seq, tokenizer)
    k = order.shape[1]
    total, count = np.zeros(k), np.zeros(k)
    for r in range(seq.shape[0]):
        for p in range(k):
            j = tokenizer.names.index(order[r, p])
            if tokenizer.types[j] != "num":
                continue
            v = tokenizer.decode(j, int(seq[r, 2 + 2 * p]))
            total[p] += abs(v - true[r, j]) / sd[j]
            count[p] += 1
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)
