"""Drivers the notebooks call: errors, chain positions, train-or-load, the study over seeds.

* :func:`errors`, :func:`metric_order`, :func:`errors_by_position`: scoring decoded profiles;
* :func:`train_models` / :func:`load_models`: the committed chain and its compute-matched
  parallel baseline, one pair per training seed (``python -m lab.arecho.checkpoint``);
* :func:`teacher_forced`: the paper's ablation, every metric predicted with the *true* values
  of the metrics before it in the chain (an upper bound of what conditioning can give);
* :func:`seed_study`: every decoding order, the teacher-forced bound and the parallel baseline
  for every committed seed, on the test split (a :class:`SeedStudy`).

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import check_array, check_int
from lab.core.rates import mean_ci

from .checkpoint import (
    BASELINES,
    CHAIN_BINS,
    MODELS_PATH,
    SEEDS,
    checkpoint_path,
    load_baselines,
    load_models,
    save_models,
    train_baselines,
    train_models,
)
from .corpus import T60_CLASSES, Corpus, label_utterance
from .quality import SR, degrade, mel_bank, power_spec
from .reference import MODES, PAD, SOS, MetricTokenizer

__all__ = [
    "SEEDS",
    "CHAIN_BINS",
    "MODELS_PATH",
    "checkpoint_path",
    "errors",
    "metric_order",
    "errors_by_position",
    "teacher_forced",
    "train_models",
    "load_models",
    "save_models",
    "load_baselines",
    "SeedStudy",
    "seed_study",
    "mean_interval",
    "ridge_oracle_gain",
    "degraded_example",
    "spectrogram",
    "quantisation_error",
    "QUERIES",
    "GIVENS",
    "query_errors",
    "nearest_test_rows",
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

    if not isinstance(model, TinyARECHO):
        raise TypeError(f"model must be a TinyARECHO (got {type(model).__name__})")
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


def _mean_num(err: dict[str, float], names: Sequence[str], types: Sequence[str]) -> float:
    return float(np.mean([err[n] for n, t in zip(names, types, strict=True) if t == "num"]))


def _mean_cat(err: dict[str, float], names: Sequence[str], types: Sequence[str]) -> float:
    return float(np.mean([err[n] for n, t in zip(names, types, strict=True) if t == "cat"]))


@dataclass
class SeedStudy:
    """Test errors of the committed seeds (mean normalised error over the numerical metrics).

    ``modes[i]`` -> column ``i`` of ``chain``; rows are ``seeds``. ``per_metric[s][mode]`` is
    the full per-metric dict of seed ``s`` (also for ``"teacher-forced"``, ``"parallel"``,
    ``"independent"`` and each of ``BASELINES``); ``meta[s]`` the training budgets of the seed.
    ``baselines[name]`` / ``baselines_classes[name]``: UniVERSA (``"universa"``) and UniVERSA-T
    (``"tokens"``) trained for the chain's CPU time; ``independent``: the chain's decoder
    writing each metric alone (``<sos> <m>`` prefix, no other metric: the chain without
    chaining).
    """

    seeds: tuple[int, ...]
    modes: tuple[str, ...]
    chain: np.ndarray  # (S, len(modes)) numbers
    chain_classes: np.ndarray  # (S, len(modes)) classes (error rate)
    teacher_forced: np.ndarray  # (S,) numbers, fixed order with the true prefix
    parallel: np.ndarray  # (S,) numbers
    parallel_classes: np.ndarray  # (S,)
    per_metric: list[dict[str, dict[str, float]]] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, np.ndarray] = field(default_factory=dict)  # first seed, per mode
    predictions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # first seed
    baselines: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (S,) numbers
    baselines_classes: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (S,)
    independent: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (S,) numbers

    def column(self, mode: str) -> np.ndarray:
        """Errors of one decoding mode over the seeds."""
        return self.chain[:, self.modes.index(mode)]


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
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
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


def seed_study(
    corpus: Corpus,
    seeds: Sequence[int] = SEEDS,
    modes: Sequence[str] = MODES,
    pairs: Sequence[tuple[Any, Any, dict]] | None = None,
    baselines: Sequence[tuple[dict[str, Any], dict]] | None = None,
) -> SeedStudy:
    """Decode the test split with every committed seed in every mode (see :class:`SeedStudy`).

    ``pairs`` replaces the committed files by ``(chain, parallel, meta)`` triples (the
    notebook's ``FULL`` retraining) and ``baselines`` the committed UniVERSA / UniVERSA-T by
    ``(models, meta)`` pairs (with ``pairs`` and no ``baselines``, they are trained for each
    chain's CPU time); the tokens and predictions of the first seed are kept.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .fast import decode, predict

    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence | np.ndarray):
        raise TypeError(f"seeds must be a sequence of ints (got {type(seeds).__name__})")
    seeds = tuple(check_int("seed", s, 0) for s in seeds)
    modes = tuple(modes)
    if not seeds or not modes or any(m not in MODES for m in modes):
        raise ValueError(f"seeds must be non-empty and modes a non-empty subset of {MODES}")
    x, y, y_tr = (
        corpus.features[corpus.test],
        corpus.labels[corpus.test],
        corpus.labels[corpus.train],
    )
    names, types = corpus.names, corpus.types
    res = {k: [] for k in ("chain", "cls", "tf", "par", "parc", "per", "meta")}
    if pairs is not None:
        pairs = list(pairs)
        if len(pairs) != len(seeds):
            raise ValueError(f"pairs must hold one (chain, parallel, meta) per seed {seeds}")
    if baselines is not None:
        baselines = list(baselines)
        if len(baselines) != len(seeds):
            raise ValueError(f"baselines must hold one (models, meta) per seed {seeds}")
    res.update({f"b:{k}": [] for k in BASELINES} | {f"bc:{k}": [] for k in BASELINES})
    res["ind"] = []
    tokens: dict[str, np.ndarray] = {}
    preds: dict[str, dict[str, np.ndarray]] = {}
    for i, s in enumerate(seeds):
        chain, par, meta = load_models(corpus, seed=s) if pairs is None else pairs[i]
        per = {}
        for m in modes:
            out, seq = decode(chain, x, "all", m, seed=s, return_tokens=True)
            per[m] = errors(out, y, types, y_tr, names)
            if i == 0:
                tokens[m], preds[m] = seq, out
        res["chain"].append([_mean_num(per[m], names, types) for m in modes])
        res["cls"].append([_mean_cat(per[m], names, types) for m in modes])
        per["teacher-forced"] = errors(teacher_forced(chain, x, y), y, types, y_tr, names)
        per["parallel"] = errors(predict(par, x), y, types, y_tr, names)
        res["tf"].append(_mean_num(per["teacher-forced"], names, types))
        res["par"].append(_mean_num(per["parallel"], names, types))
        res["parc"].append(_mean_cat(per["parallel"], names, types))
        if baselines is not None:
            models, b_meta = baselines[i]
        elif pairs is None:
            models, b_meta = load_baselines(corpus, seed=s)
        else:
            models, b_meta = train_baselines(corpus, meta["chain_cpu_seconds"], s)
        for k, model in models.items():
            per[k] = errors(predict(model, x), y, types, y_tr, names)
            res[f"b:{k}"].append(_mean_num(per[k], names, types))
            res[f"bc:{k}"].append(_mean_cat(per[k], names, types))
        per["independent"] = {}
        for n in names:  # the chain without chaining: each metric written alone
            per["independent"].update(errors(decode(chain, x, [n], "fixed"), y, types, y_tr, names))
        res["ind"].append(_mean_num(per["independent"], names, types))
        res["per"].append(per)
        res["meta"].append({**meta, **{f"baseline_{k}": v for k, v in b_meta.items()}})
    return SeedStudy(
        seeds,
        modes,
        np.array(res["chain"]),
        np.array(res["cls"]),
        np.array(res["tf"]),
        np.array(res["par"]),
        np.array(res["parc"]),
        res["per"],
        res["meta"],
        tokens,
        preds,
        {k: np.array(res[f"b:{k}"]) for k in BASELINES},
        {k: np.array(res[f"bc:{k}"]) for k in BASELINES},
        np.array(res["ind"]),
    )


# ----------------------------------------------------------------------------------------
# what the widgets of lab.arecho.figures compute (memoised here; figures.py only draws)
# ----------------------------------------------------------------------------------------
_CLEAN: dict[int, np.ndarray] = {}


def _register(clean: np.ndarray) -> int:
    _CLEAN[id(clean)] = clean
    return id(clean)


@functools.lru_cache(maxsize=256)
def _degraded(clean_id: int, base: int, snr_db: float, t60: float, lowpass_hz: float, clip: bool):
    clean = _CLEAN[clean_id][base]
    c = 0.7 if clip else 0.0
    feats, labels = label_utterance(clean, snr_db, t60, lowpass_hz, c, 12345)
    return degrade(clean, snr_db, t60, lowpass_hz, c, 12345), feats, labels


def degraded_example(
    corpus: Corpus, base: int, snr_db: float, t60: float, lowpass_hz: float, clip: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One clean sentence of the corpus degraded (noise seed 12345, clipping at 0.7 of the
    peak when ``clip``): ``(waveform, features, nine labels)``, memoised.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
    base = check_int("base", base, 0, corpus.clean.shape[0] - 1)
    key = _register(corpus.clean)
    return _degraded(key, base, float(snr_db), float(t60), float(lowpass_hz), bool(clip))


def spectrogram(x: Any, n_mels: int = 16, n_frames: int = 20) -> np.ndarray:
    """A coarse log-mel spectrogram (``n_mels x n_frames``, dB) for small heat maps.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    x = check_array("x", x, ndim=1, min_size=512)
    spec = power_spec(x)
    mel = 10 * np.log10(spec @ mel_bank(n_mels, 512, SR).T + 1e-8)
    idx = np.array_split(np.arange(mel.shape[0]), n_frames)
    return np.stack([mel[i].mean(0) for i in idx], 1)


@functools.lru_cache(maxsize=256)
def _quantisation_error(corpus_id: int, n_bins: int, spacing: str, j: int) -> float:
    corpus = _CORPORA[corpus_id]
    train = corpus.labels[corpus.train]
    tok = MetricTokenizer(n_bins, spacing).fit(train, corpus.types, corpus.names)
    v = corpus.labels[corpus.test, j]
    return float(np.mean(np.abs(tok.decode(j, tok.encode(j, v)) - v)) / train[:, j].std())


_CORPORA: dict[int, Corpus] = {}


def quantisation_error(corpus: Corpus, n_bins: int, spacing: str, metric: str) -> float:
    """Round-trip error ``|decode(encode(v)) - v| / sd`` of one metric on the test split
    (the floor of a perfect classifier over the bins), memoised.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
    _CORPORA[id(corpus)] = corpus
    return _quantisation_error(id(corpus), int(n_bins), spacing, corpus.index(metric))


#: the query and "given" choices of notebook 2's query explorer
QUERIES = {
    "all nine": "all",
    "PESQ-WB, STOI": ["PESQ-WB", "STOI"],
    "intrusive (PESQ-WB, PESQ-NB, STOI, SI-SNR, LSD)": "PESQ-WB PESQ-NB STOI SI-SNR LSD".split(),
    "classes (T60, BW, clip)": ["T60", "BW", "clip"],
}
GIVENS = {"nothing": (), "SNR, T60, BW given": ("SNR", "T60", "BW")}


def query_errors(model, corpus: Corpus, mode: str, query: str, given: str) -> dict[str, float]:
    """Test errors of one query (a key of ``QUERIES``) decoded in ``mode`` with the metrics of
    ``GIVENS[given]`` imposed at their true values, memoised per model.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .fast import decode

    if query not in QUERIES or given not in GIVENS:
        raise ValueError(f"query must be one of {list(QUERIES)} and given one of {list(GIVENS)}")
    memo = _QUERY_MEMO.setdefault((id(model), id(corpus)), {})
    key = (mode, query, given)
    if key not in memo:
        test = corpus.test
        g = {n: corpus.labels[test, corpus.index(n)] for n in GIVENS[given]}
        out = decode(model, corpus.features[test], QUERIES[query], mode, given=g or None)
        memo[key] = errors(
            out, corpus.labels[test], corpus.types, corpus.labels[corpus.train], corpus.names
        )
    return memo[key]


_QUERY_MEMO: dict[tuple[int, int], dict] = {}


def nearest_test_rows(corpus: Corpus, snr_db: float) -> list[tuple[str, int]]:
    """For every T60 x clipping cell, the test utterance nearest ``snr_db``:
    ``[(cell label, position in corpus.test), ...]`` (cells without a test utterance skipped).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
    test = corpus.test
    i_t60, i_clip, i_snr = corpus.index("T60"), corpus.index("clip"), corpus.index("SNR")
    out = []
    for t in range(len(T60_CLASSES)):
        for c in (0, 1):
            cand = test[(corpus.labels[test, i_t60] == t) & (corpus.labels[test, i_clip] == c)]
            if cand.size:
                r = cand[np.argmin(np.abs(corpus.labels[cand, i_snr] - snr_db))]
                label = f"{T60_CLASSES[t]:g} s{' ✂' if c else ''}"
                out.append((label, int(np.searchsorted(test, r))))
    return out


def fitted_tokenizer(corpus: Corpus, n_bins: int, spacing: str) -> MetricTokenizer:
    """A tokenizer fitted on the training split (memoised per corpus, bins and spacing).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (got {type(corpus).__name__})")
    key = (id(corpus), int(n_bins), spacing)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = MetricTokenizer(int(n_bins), spacing).fit(
            corpus.labels[corpus.train], corpus.types, corpus.names
        )
    return _TOKENIZERS[key]


_TOKENIZERS: dict[tuple, MetricTokenizer] = {}


def profile_prediction(model, features: Any, query: Any = "all") -> dict[str, np.ndarray]:
    """Confidence-first decoding of ``features`` (``(B, F)``) by a chain: ``name -> (B,)``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .fast import decode

    return decode(model, np.atleast_2d(features), query, "confidence")
