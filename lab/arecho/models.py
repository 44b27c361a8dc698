"""The paper's objects at the book's size: the tiny chain, the parallel baseline, training.

* :class:`TinyARECHO`: segment encoder + causal Transformer decoder over metric tokens,
  trained by teacher-forced next-token cross-entropy with label smoothing,
  ``L = - sum_t log p(y_t | y_<t, audio)`` (the paper's loss, eq. (arecho-chain)) over
  sequences in a random metric order (eq. (arecho-sequence)).
* :class:`ParallelBaseline`: the UniVERSA-style parallel predictor (one shared encoder, one
  head per metric): ``target="universa"`` is the official UniVERSA loss (L1 on each numerical
  metric's raw scale, :func:`masked_l1_loss`, plus cross-entropy on each class label),
  ``"tokens"`` per-metric classification over bins (UniVERSA-T); ``"raw"`` and
  ``"standardized"`` are the one-loss regressions of notebook 1.

Deviations: the encoder is an MLP over per-segment log-mel statistics, not a Transformer over
frames.

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_instance, check_int, check_range
from lab.core.runtime import smoke_steps

from .reference import PAD, SOS, MetricTokenizer
from .settings import TrainSettings

__all__ = ["TinyARECHO", "ParallelBaseline", "train", "masked_l1_loss"]


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
        check_instance("tokenizer", tokenizer, MetricTokenizer)
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
        ``"raw"`` (one L1 over all nine metrics on their own scales: the failure the tokenizer
        fixes), ``"standardized"`` (L1 on z-scored targets), ``"universa"`` (the official
        UniVERSA: a sum over metrics of the masked L1 on each numerical metric's raw scale
        plus the cross-entropy of each categorical metric; needs ``tokenizer`` for the types
        and categories) or ``"tokens"`` (cross-entropy over each metric's bins, UniVERSA-T;
        needs ``tokenizer``).
    tokenizer : MetricTokenizer, optional
        Required for ``target="tokens"`` and ``"universa"``.
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
        self.target = check_choice("target", target, TARGETS)
        if target in ("tokens", "universa"):
            if not isinstance(tokenizer, MetricTokenizer):
                raise TypeError(f"target={target!r} needs a fitted MetricTokenizer as tokenizer")
            tokenizer._check_fitted()
            if len(tokenizer.names) != n_metrics:
                raise ValueError(f"tokenizer has {len(tokenizer.names)} metrics, not {n_metrics}")
        self.tokenizer = tokenizer
        self.encoder = _SegmentEncoder(n_features, n_segments, d)
        n_seg1 = n_segments + 1
        if target == "tokens":
            widths = list(tokenizer.sizes)
        elif target == "universa":  # one raw output per number, one logit per category
            widths = [
                1 if t == "num" else s
                for t, s in zip(tokenizer.types, tokenizer.sizes, strict=True)
            ]
        else:
            widths = [1] * n_metrics
        self.starts = np.concatenate([[0], np.cumsum(widths)]).tolist()  # output block per metric
        n_out = self.starts[-1]
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


TARGETS = ("raw", "standardized", "universa", "tokens")


def masked_l1_loss(pred, target, mask):
    """Mean absolute error over the entries where ``mask`` is true (the official UniVERSA loss).

    ``mean(|pred[mask] - target[mask]|)``: labels missing from an utterance are left out of
    the mean (the official code marks them with a pad value of -100 and masks them), as
    ``espnet2/universa/base/loss.py::masked_l1_loss`` does.

    Parameters
    ----------
    pred, target : torch.Tensor
        Same shape.
    mask : torch.Tensor
        Boolean, same shape; at least one entry true.

    Returns
    -------
    torch.Tensor
        A scalar.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    torch = _torch()
    for name, t in (("pred", pred), ("target", target), ("mask", mask)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor (got {type(t).__name__})")
    if pred.shape != target.shape or mask.shape != pred.shape:
        raise ValueError(
            f"pred, target and mask must have one shape (got {tuple(pred.shape)}, "
            f"{tuple(target.shape)}, {tuple(mask.shape)})"
        )
    if mask.dtype != torch.bool or not bool(mask.any()):
        raise ValueError("mask must be a boolean tensor with at least one true entry")
    return (pred.masked_select(mask) - target.masked_select(mask)).abs().mean()


def _set_norms(model, corpus_x: np.ndarray, corpus_y: np.ndarray | None = None) -> None:
    torch = _torch()
    dev = next(model.parameters()).device
    model.encoder.mu.copy_(torch.as_tensor(corpus_x.mean(0), device=dev))
    model.encoder.sd.copy_(torch.as_tensor(corpus_x.std(0) + 1e-3, device=dev))
    if (
        corpus_y is not None
        and isinstance(model, ParallelBaseline)
        and model.target
        in (
            "standardized",
            "tokens",
        )
    ):
        model.y_mu.copy_(torch.as_tensor(np.nanmean(corpus_y, 0), device=dev))
        model.y_sd.copy_(torch.as_tensor(np.nanstd(corpus_y, 0) + 1e-9, device=dev))


def _batch_sequences(val_tok: np.ndarray, meta: np.ndarray, rng, label_dropout: float):
    """Teacher-forcing batch, eq. (arecho-sequence): random order per row, dropped labels
    moved to the end."""
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


def train(model, corpus, settings: TrainSettings | None = None, *, rows: Any = None) -> dict:
    """Train a :class:`TinyARECHO` or :class:`ParallelBaseline` on a corpus's training split.

    Parameters
    ----------
    model : TinyARECHO or ParallelBaseline
    corpus : Corpus
        Uses ``corpus.features[rows]`` and ``corpus.labels[rows]`` (``rows`` defaults to
        ``corpus.train``).
    settings : TrainSettings, optional
        Budget (``seconds``, ``steps``, ``clock``), optimiser (``batch``, ``lr``), the chain's
        ``label_dropout`` and ``label_smoothing``, ``seed`` and ``progress``
        (default ``TrainSettings()``).
    rows : array_like of int, optional
        The training rows (default ``corpus.train``).

    Returns
    -------
    dict
        ``steps``, ``seconds`` (measured on ``settings.clock``), ``wall_seconds``, ``clock``,
        ``loss`` (per step).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    if not isinstance(model, TinyARECHO | ParallelBaseline):
        raise TypeError(
            f"model must be TinyARECHO or ParallelBaseline (got {type(model).__name__})"
        )
    settings = TrainSettings() if settings is None else settings
    check_instance("settings", settings, TrainSettings)
    rows = corpus.train if rows is None else np.asarray(rows, dtype=int)
    if rows.size == 0:
        raise ValueError("rows (or corpus.train) must not be empty")
    steps = None if settings.steps is None else smoke_steps(settings.steps)  # LAB_SMOKE=1
    batch = _Batches(model, corpus, rows, settings)
    torch = _torch()
    devices = [batch.dev] if batch.dev.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # local: the caller's generator is untouched
        torch.manual_seed(settings.seed)  # dropout (if any) inside the fork
        return _fit(model, batch, settings, steps)


class _Batches:
    """The training rows of one run as tensors, and the loss of a random mini-batch."""

    def __init__(self, model, corpus, rows: np.ndarray, settings: TrainSettings) -> None:
        torch = _torch()
        self.model, self.rows, self.s = model, rows, settings
        self.dev = next(model.parameters()).device
        x_all = corpus.features[rows].astype(np.float32)
        y_all = corpus.labels[rows]
        _set_norms(model, x_all, y_all)
        self.rng = np.random.default_rng(settings.seed)
        self.x = torch.as_tensor(x_all, device=self.dev)
        tok = model.tokenizer
        if isinstance(model, TinyARECHO) or model.target in ("tokens", "universa"):
            self.val_tok = tok.encode_matrix(y_all)
            self.meta = np.array([tok.meta_token(j) for j in range(len(tok.names))])
        if isinstance(model, ParallelBaseline):
            self.y = torch.as_tensor(y_all, dtype=torch.float32, device=self.dev)
            if model.target in ("tokens", "universa"):
                local = self.val_tok - np.array(tok.offsets)[None]
                self.local = torch.as_tensor(
                    np.where(self.val_tok == PAD, -1, local), device=self.dev
                )
        self.ce = torch.nn.CrossEntropyLoss(
            ignore_index=PAD, label_smoothing=settings.label_smoothing
        )

    def loss(self):
        """The loss of the next random mini-batch (eq. (arecho-chain) for the chain)."""
        torch = _torch()
        model, s = self.model, self.s
        idx = self.rng.integers(0, self.rows.size, size=min(s.batch, self.rows.size))
        xb = self.x[idx]
        if isinstance(model, TinyARECHO):
            seq = _batch_sequences(self.val_tok[idx], self.meta, self.rng, s.label_dropout)
            seq = torch.as_tensor(seq, device=self.dev)
            logits = model(xb, seq[:, :-1])
            # eq. (arecho-chain): the cross-entropy of every next token
            return self.ce(logits.reshape(-1, logits.shape[-1]), seq[:, 1:].reshape(-1))
        return self._head_loss(model(xb), idx)

    def _head_loss(self, out, idx):
        f = _torch().nn.functional
        model, tok = self.model, self.model.tokenizer
        starts = model.starts if model.target in ("tokens", "universa") else None
        if model.target == "universa":  # official UniVERSA: per metric, summed
            y = self.y[idx]
            return sum(
                masked_l1_loss(out[:, starts[j]], y[:, j], ~_torch().isnan(y[:, j]))
                if tok.types[j] == "num"
                else f.cross_entropy(
                    out[:, starts[j] : starts[j + 1]], self.local[idx, j], ignore_index=-1
                )
                for j in range(len(tok.sizes))
            )
        if model.target == "tokens":
            smoothing = self.s.label_smoothing
            return sum(
                f.cross_entropy(
                    out[:, starts[j] : starts[j + 1]], self.local[idx, j], label_smoothing=smoothing
                )
                for j in range(len(tok.sizes))
            ) / len(tok.sizes)
        # "raw": every metric in its own units; "standardized": z-scored
        resid = out - (self.y[idx] - model.y_mu) / model.y_sd
        return resid.abs().mean() if model.loss == "l1" else resid.pow(2).mean()


def _fit(model, batch: _Batches, s: TrainSettings, steps: int | None) -> dict:
    """AdamW with cosine decay until ``steps`` or ``s.seconds`` on ``s.clock``."""
    torch = _torch()
    now = time.perf_counter if s.clock == "wall" else time.process_time
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=1e-4)
    losses: list[float] = []
    model.train()
    t0, w0 = now(), time.perf_counter()
    bar = None
    if s.progress and steps is not None:
        from lab.core.progress import progress as _progress

        bar = _progress(total=steps, desc=type(model).__name__)
    k = 0
    while True:
        elapsed = now() - t0
        if (steps is not None and k >= steps) or elapsed >= s.seconds:
            break
        frac = k / steps if steps is not None else elapsed / s.seconds
        for g in opt.param_groups:
            g["lr"] = s.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))
        loss = batch.loss()
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
        "clock": s.clock,
        "loss": losses,
    }
