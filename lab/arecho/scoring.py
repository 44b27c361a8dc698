"""Scoring decoded profiles: the chapter's error measure, where in the chain errors happen,
the teacher-forced ablation, intervals over seeds, and the ridge ceiling of conditioning.

* :func:`errors`: MAE divided by the training standard deviation (numbers), error rate (classes);
* :func:`metric_order`, :func:`errors_by_position`: which metric a decoded sequence wrote where,
  and the error at each position;
* :func:`teacher_forced`: the paper's ablation, every metric predicted with the *true* values
  of the metrics before it in the chain;
* :func:`mean_interval`: a mean over seeds with its Student-t interval;
* :func:`ridge_oracle_gain`: how much true metric values help a ridge regression.

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import check_array, check_instance, check_int
from lab.core.rates import mean_ci

from .corpus import Corpus
from .reference import PAD, SOS, MetricTokenizer

__all__ = [
    "errors",
    "metric_order",
    "errors_by_position",
    "teacher_forced",
    "derangement",
    "mean_interval",
    "ridge_oracle_gain",
]


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


def teacher_forced(model, features: Any, labels: Any) -> np.ndarray:
    """The chain fed the true previous metrics (fixed order): the paper's ablation.

    One forward pass over the true sequence ``<sos>, <m_1>, val(m_1), ...`` (tokenizer
    order); the value of metric ``m_k`` is the masked argmax over its block given the true
    values of ``m_1 .. m_{k-1}``. The first metric sees no label, so it equals fixed-order
    decoding.

    Parameters
    ----------
    model : TinyARECHO
    features : array_like
        ``(B, F)``.
    labels : array_like
        ``(B, M)`` true labels (no ``NaN``).

    Returns
    -------
    numpy.ndarray
        ``(B, M)`` predicted values.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    from .models import TinyARECHO

    check_instance("model", model, TinyARECHO)
    tok = model.tokenizer
    x = check_array("features", features, ndim=2)
    y = check_array("labels", labels, ndim=2)
    if y.shape != (x.shape[0], len(tok.names)):
        raise ValueError(f"labels must have shape {(x.shape[0], len(tok.names))} (got {y.shape})")
    m = len(tok.names)
    seq = np.full((x.shape[0], 1 + 2 * m), PAD, dtype=np.int64)
    seq[:, 0] = SOS
    seq[:, 1::2] = [tok.meta_token(j) for j in range(m)]
    seq[:, 2::2] = tok.encode_matrix(y)
    dev = next(model.parameters()).device
    with torch.no_grad():
        xt = torch.as_tensor(x, dtype=torch.float32, device=dev)
        logits = model(xt, torch.as_tensor(seq[:, :-1], device=dev)).cpu().numpy()
    out = np.empty(y.shape)
    for j in range(m):
        s, n = tok.block(j)
        k = logits[:, 1 + 2 * j, s : s + n].argmax(1)  # position of <m_j> predicts val(m_j)
        out[:, j] = tok.values[j][k]
    return out


def derangement(n: int, seed: int = 0) -> np.ndarray:
    """A permutation of ``range(n)`` without fixed points (a random cycle): ``labels[p]`` gives
    every row another row's labels, the uninformative prefix of teacher forcing's rival.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    n = check_int("n", n, 2)
    order = np.random.default_rng(check_int("seed", seed, 0)).permutation(n)
    out = np.empty(n, dtype=int)
    out[order] = np.roll(order, 1)  # row order[k] reads row order[k - 1]
    return out


def mean_interval(values: Any, level: float = 0.95) -> dict[str, float]:
    """Mean over seeds with its Student-t interval: ``{"mean", "lo", "hi", "n"}``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    ci = mean_ci(values, level=level)  # the book's one t-interval over seeds
    return {"mean": ci.mean, "lo": ci.low, "hi": ci.high, "n": ci.n}


def ridge_oracle_gain(
    corpus: Corpus,
    targets: Sequence[str],
    given: Sequence[str] | str,
    alpha: float = 10.0,
) -> dict[str, Any]:
    """How much knowing true metric values helps a ridge regression: the ceiling of conditioning.

    For each target metric, a ridge regression (closed form, unpenalised intercept, as
    scikit-learn's ``Ridge``) on the standardised audio features is fitted
    on the training split with and without the *true* values of the given metrics as extra
    inputs (standardised); the test errors are those of :func:`errors` (MAE / training sd).

    Parameters
    ----------
    corpus : Corpus
        The labelled corpus.
    targets : sequence of str
        Numerical metric names to predict.
    given : sequence of str or "previous"
        Metric names given to every target, or ``"previous"``: each target is given the
        metrics before it in the corpus order (the teacher-forced fixed order).
    alpha : float
        Ridge penalty (> 0).

    Returns
    -------
    dict
        ``without`` and ``with`` (``name -> error``), ``gain`` (mean over targets of
        ``1 - with / without``) and ``gain_of_means`` (``1 - mean(with) / mean(without)``).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    if isinstance(targets, str) or not isinstance(targets, Sequence) or not targets:
        raise TypeError("targets must be a non-empty sequence of metric names")
    for t in targets:
        if t not in corpus.names or corpus.types[corpus.names.index(t)] != "num":
            raise ValueError(f"targets must be numerical metrics of the corpus, got {t!r}")
    if isinstance(given, str):
        if given != "previous":
            raise ValueError(f"given must be metric names or 'previous', got {given!r}")
    elif not isinstance(given, Sequence) or any(g not in corpus.names for g in given):
        raise ValueError(f"given must be metric names of the corpus or 'previous', got {given!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise ValueError(f"alpha must be a number > 0, got {alpha!r}")
    tr = corpus.train
    x = corpus.features
    x = (x - x[tr].mean(0)) / (x[tr].std(0) + 1e-12)
    y = corpus.labels
    z = (y - y[tr].mean(0)) / (y[tr].std(0) + 1e-12)
    without, with_ = {}, {}
    with threadpool_limits(1):  # tiny solves: BLAS threads only contend on a shared CPU
        _ridge_errors(corpus, targets, given, float(alpha), x, y, z, without, with_)
    a, b = np.array(list(without.values())), np.array(list(with_.values()))
    return {
        "without": without,
        "with": with_,
        "gain": float(np.mean(1 - b / a)),
        "gain_of_means": float(1 - b.mean() / a.mean()),
    }


def _ridge_errors(corpus, targets, given, alpha, x, y, z, without, with_) -> None:
    tr, te = corpus.train, corpus.test
    for t in targets:
        j = corpus.names.index(t)
        g = corpus.names[:j] if given == "previous" else [n for n in given if n != t]
        cols = [corpus.names.index(n) for n in g]
        sd = y[tr, j].std()
        for out, feats in ((without, x), (with_, np.hstack([x, z[:, cols]]))):
            a = feats[tr] - feats[tr].mean(0)  # ridge with an unpenalised intercept
            b = y[tr, j] - y[tr, j].mean()
            w = np.linalg.solve(a.T @ a + alpha * np.eye(a.shape[1]), a.T @ b)
            pred = y[tr, j].mean() + (feats[te] - feats[tr].mean(0)) @ w
            out[t] = float(np.mean(np.abs(pred - y[te, j])) / sd)
