"""The batched fast path: greedy two-step decoding of many utterances at once (CPU or CUDA).

Same name and results as :func:`lab.arecho.reference.decode` (tested token for token).

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_instance

from .models import ParallelBaseline
from .reference import SOS, prepare_decoding, read_sequences

__all__ = ["decode", "predict"]


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
    """Batched two-step decoding of a subset of metrics (the fast path),
    eqs. (arecho-step1)-(arecho-candidate).

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
    import torch

    x, q, g = prepare_decoding(model, features, query, mode, given, beam)
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
        blocks = (starts, sizes)
        for _ in range(len(q)):
            rows = torch.arange(b, device=dev)
            pick = _choose_metric(model, mode, seq, mem, remaining, q, meta, blocks, rand_keys)
            seq = _write_value(model, seq, mem, meta[qt[pick]], pick, q, blocks)
            remaining[rows, pick] = False
    out = read_sequences(tok, seq.cpu().numpy(), skip=1 + 2 * len(g))
    result = {tok.names[j]: out[j] for j in q}
    return (result, seq.cpu().numpy()) if return_tokens else result


def _choose_metric(model, mode, seq, mem, remaining, q, meta, blocks, rand_keys):
    """Eq. (arecho-step1) for every row: the index (into ``q``) of the metric written next."""
    import torch

    b, dev = seq.shape[0], seq.device
    qt = torch.tensor(q, device=dev)
    if mode in ("fixed", "random"):
        key = (
            -torch.arange(len(q), device=dev, dtype=torch.float64).expand(b, -1)
            if mode == "fixed"
            else rand_keys
        )
        return torch.where(remaining, key, -math.inf).argmax(1)
    if mode == "meta":
        lp = model(None, seq, memory=mem)[:, -1].log_softmax(-1)  # step 1: <m> scores
        return torch.where(remaining, lp[:, meta[qt]], -math.inf).argmax(1)
    # confidence: try every remaining metric, keep the surest value
    starts, sizes = blocks
    r = len(q)
    cand = torch.cat([seq.repeat_interleave(r, 0), meta[qt].repeat(b)[:, None]], 1)
    lp = model(None, cand, memory=mem.repeat_interleave(r, 0))[:, -1].log_softmax(-1)
    best = torch.stack(
        [lp[k::r, starts[j] : starts[j] + sizes[j]].max(1).values for k, j in enumerate(q)], 1
    )
    return torch.where(remaining, best, -math.inf).argmax(1)


def _write_value(model, seq, mem, m_tok, pick, q, blocks):
    """Eqs. (arecho-topb)-(arecho-candidate), B = 1: append ``<m>`` and its value, the
    vocabulary masked to its block."""
    import torch

    starts, sizes = blocks
    dev = seq.device
    seq = torch.cat([seq, m_tok[:, None]], 1)
    lp = model(None, seq, memory=mem)[:, -1]
    lo = torch.as_tensor([starts[j] for j in q], device=dev)[pick]
    hi = lo + torch.as_tensor([sizes[j] for j in q], device=dev)[pick]
    v = torch.arange(lp.shape[1], device=dev)[None]
    masked = torch.where((v >= lo[:, None]) & (v < hi[:, None]), lp, -math.inf)
    return torch.cat([seq, masked.argmax(1)[:, None]], 1)


def predict(model, features) -> np.ndarray:
    """Predicted metric matrix ``(B, M)`` of a :class:`ParallelBaseline` (original units;
    categorical metrics rounded to the nearest category, or the argmax over their classes or
    tokens).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    import torch

    check_instance("model", model, ParallelBaseline)
    dev = next(model.parameters()).device
    x = torch.as_tensor(check_array("features", features, ndim=2), dtype=torch.float32, device=dev)
    with torch.no_grad():
        out = model(x)
        if model.target in ("tokens", "universa"):
            tok, starts = model.tokenizer, model.starts
            cols = []
            for j in range(model.n_metrics):
                block = out[:, starts[j] : starts[j + 1]]
                if model.target == "universa" and tok.types[j] == "num":
                    cols.append(block[:, 0].cpu().numpy().astype(np.float64))  # raw scale
                    continue
                cols.append(tok.values[j][block.argmax(1).cpu().numpy()])
            return np.stack(cols, 1)
        y = (out * model.y_sd + model.y_mu).cpu().numpy().astype(np.float64)
    return y
