"""What the chapter's widgets show, computed: one result per setting of their controls.

Each ``*_panel`` factory returns a function of the widget's controls that returns a small
frozen result; :mod:`lab.arecho.figures` draws it (a widget is
``figures.f(views.g(...))``). Everything expensive is memoised here (:func:`lab.core.memo.memo`),
so the rendered book's precomputed frames and a live kernel share the results.

* :func:`degraded_example`, :func:`spectrogram`, :func:`degradation_panel`: one sentence
  degraded and measured (notebook 1);
* :func:`fitted_tokenizer`, :func:`quantisation_error`, :func:`tokenizer_panel`: bins and the
  round-trip error (notebook 1);
* :func:`profile_prediction`, :func:`nearest_test_rows`, :func:`profile_panel`: the chain's
  profile of a degraded sentence (notebook 2);
* ``QUERIES``, ``GIVENS``, :func:`query_errors`, :func:`query_panel`: subset queries and
  given metrics (notebook 2).

See: book/arecho/01-degraded-speech-and-tokens.ipynb, book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_instance, check_int
from lab.core.memo import memo

from .corpus import T60_CLASSES, Corpus, label_utterance
from .quality import SR, degrade, mel_bank, power_spec
from .reference import MetricTokenizer
from .scoring import errors

__all__ = [
    "DegradationView",
    "TokenizerView",
    "ProfileView",
    "degraded_example",
    "spectrogram",
    "degradation_panel",
    "fitted_tokenizer",
    "quantisation_error",
    "tokenizer_panel",
    "profile_prediction",
    "nearest_test_rows",
    "profile_panel",
    "QUERIES",
    "GIVENS",
    "query_errors",
    "query_panel",
]

#: the bin counts of the tokenizer explorer's error curve
BINS_GRID = (4, 8, 16, 32, 64, 128, 256, 500)


@memo(maxsize=256)
def _degraded(corpus: Corpus, base: int, snr_db: float, t60: float, lowpass_hz: float, clip: bool):
    clean = corpus.clean[base]
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
    check_instance("corpus", corpus, Corpus)
    base = check_int("base", base, 0, corpus.clean.shape[0] - 1)
    return _degraded(corpus, base, float(snr_db), float(t60), float(lowpass_hz), bool(clip))


def spectrogram(x: Any, n_mels: int = 16, n_frames: int = 20) -> np.ndarray:
    """A coarse log-mel spectrogram (``n_mels x n_frames``, dB) for small heat maps.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    x = check_array("x", x, ndim=1, min_size=512)
    spec = power_spec(x)
    mel = 10 * np.log10(spec @ mel_bank(n_mels, 512, SR).T + 1e-8)
    idx = np.array_split(np.arange(mel.shape[0]), n_frames)
    return np.stack([mel[i].mean(0) for i in idx], 1)


@dataclass(frozen=True)
class DegradationView:
    """One degraded sentence: its waveform, the clean and degraded log-mel spectrograms
    (``spectrogram``), the nine labels and the duration in seconds."""

    waveform: np.ndarray
    clean_spec: np.ndarray
    spec: np.ndarray
    labels: np.ndarray
    duration: float


def degradation_panel(corpus: Corpus, base: int = 0) -> Callable[..., DegradationView]:
    """``view(snr_db, t60, lowpass_hz, clip) -> DegradationView`` for sentence ``base``.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    degraded_example(corpus, base, 15.0, 0.2, 8000.0, False)  # checks the arguments
    clean_spec = spectrogram(corpus.clean[base])
    duration = corpus.clean.shape[1] / SR

    def view(snr_db: float, t60: float, lowpass_hz: float, clip: bool) -> DegradationView:
        y, _, labels = degraded_example(corpus, base, snr_db, t60, lowpass_hz, clip)
        return DegradationView(y, clean_spec, spectrogram(y), labels, duration)

    return view


@memo(maxsize=64)
def _fitted(corpus: Corpus, n_bins: int, spacing: str) -> MetricTokenizer:
    return MetricTokenizer(n_bins, spacing).fit(
        corpus.labels[corpus.train], corpus.types, corpus.names
    )


def fitted_tokenizer(corpus: Corpus, n_bins: int, spacing: str) -> MetricTokenizer:
    """A tokenizer fitted on the training split (memoised per corpus, bins and spacing).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    return _fitted(corpus, int(n_bins), spacing)


@memo(maxsize=256)
def _quantisation_error(corpus: Corpus, n_bins: int, spacing: str, j: int) -> float:
    train = corpus.labels[corpus.train]
    tok = MetricTokenizer(n_bins, spacing).fit(train, corpus.types, corpus.names)
    v = corpus.labels[corpus.test, j]
    return float(np.mean(np.abs(tok.decode(j, tok.encode(j, v)) - v)) / train[:, j].std())


def quantisation_error(corpus: Corpus, n_bins: int, spacing: str, metric: str) -> float:
    """Round-trip error ``|decode(encode(v)) - v| / sd`` of one metric on the test split
    (the floor of a perfect classifier over the bins), memoised.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    return _quantisation_error(corpus, int(n_bins), spacing, corpus.index(metric))


@dataclass(frozen=True)
class TokenizerView:
    """One tokenizer setting for one metric: the training values, the bin edges, the number of
    value tokens, the round-trip error over ``bins_grid`` and at ``n_bins``."""

    metric: str
    spacing: str
    n_bins: int
    values: np.ndarray
    edges: np.ndarray
    n_tokens: int
    bins_grid: tuple[int, ...]
    errors: tuple[float, ...]
    error: float


def tokenizer_panel(corpus: Corpus) -> Callable[..., TokenizerView]:
    """``view(n_bins, spacing, metric) -> TokenizerView`` on the corpus's training split.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    train = corpus.labels[corpus.train]

    def view(n_bins: int, spacing: str, metric: str) -> TokenizerView:
        j = corpus.names.index(metric)
        tok = fitted_tokenizer(corpus, n_bins, spacing)
        edges = tok.edges[j] if tok.edges[j] is not None else np.array([])
        errs = tuple(quantisation_error(corpus, b, spacing, metric) for b in BINS_GRID)
        now = quantisation_error(corpus, n_bins, spacing, metric)
        return TokenizerView(
            metric, spacing, int(n_bins), train[:, j], edges, tok.sizes[j], BINS_GRID, errs, now
        )

    return view


def profile_prediction(model, features: Any, query: Any = "all") -> dict[str, np.ndarray]:
    """Confidence-first decoding of ``features`` (``(B, F)``) by a chain: ``name -> (B,)``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .fast import decode

    return decode(model, np.atleast_2d(features), query, "confidence")


def nearest_test_rows(corpus: Corpus, snr_db: float) -> list[tuple[str, int]]:
    """For every T60 x clipping cell, the test utterance nearest ``snr_db``:
    ``[(cell label, position in corpus.test), ...]`` (cells without a test utterance skipped).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    check_instance("corpus", corpus, Corpus)
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


@dataclass(frozen=True)
class ProfileView:
    """One degraded sentence and the chain's reference-free profile of it, beside the test
    utterances nearest its SNR (one per T60 x clipping cell: ``cells``, and their true and
    predicted values per metric in ``true`` and ``predicted``)."""

    waveform: np.ndarray
    labels: np.ndarray
    profile: np.ndarray
    cells: tuple[str, ...]
    true: dict[str, np.ndarray]
    predicted: dict[str, np.ndarray]


def profile_panel(model, corpus: Corpus, base: int = 0, preds=None) -> Callable[..., ProfileView]:
    """``view(snr_db, t60, clip) -> ProfileView`` (band limit 8 kHz) for sentence ``base``.

    ``preds`` (the confidence-first decoding of ``corpus.test``) is computed when not given.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    test = corpus.test
    if preds is None:
        preds = profile_prediction(model, corpus.features[test])

    def view(snr_db: float, t60: float, clip: bool) -> ProfileView:
        y, feats, labels = degraded_example(corpus, base, snr_db, t60, 8000.0, clip)
        p = profile_prediction(model, feats)
        profile = np.array([p[n][0] for n in corpus.names])
        cells = nearest_test_rows(corpus, snr_db)
        ok = [r for _, r in cells]
        shown = ("PESQ-WB", "STOI")
        true = {m: corpus.labels[test[ok], corpus.index(m)] for m in shown}
        return ProfileView(
            y, labels, profile, tuple(c for c, _ in cells), true, {m: preds[m][ok] for m in shown}
        )

    return view


#: the query and "given" choices of notebook 2's query explorer
QUERIES = {
    "all nine": "all",
    "PESQ-WB, STOI": ["PESQ-WB", "STOI"],
    "intrusive (PESQ-WB, PESQ-NB, STOI, SI-SNR, LSD)": "PESQ-WB PESQ-NB STOI SI-SNR LSD".split(),
    "classes (T60, BW, clip)": ["T60", "BW", "clip"],
}
GIVENS = {"nothing": (), "SNR, T60, BW given": ("SNR", "T60", "BW")}


@memo(maxsize=256)
def _query_errors(model, corpus: Corpus, mode: str, query: str, given: str) -> dict[str, float]:
    from .fast import decode

    test = corpus.test
    g = {n: corpus.labels[test, corpus.index(n)] for n in GIVENS[given]}
    out = decode(model, corpus.features[test], QUERIES[query], mode, given=g or None)
    return errors(out, corpus.labels[test], corpus.types, corpus.labels[corpus.train], corpus.names)


def query_errors(model, corpus: Corpus, mode: str, query: str, given: str) -> dict[str, float]:
    """Test errors of one query (a key of ``QUERIES``) decoded in ``mode`` with the metrics of
    ``GIVENS[given]`` imposed at their true values, memoised per model.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    if query not in QUERIES or given not in GIVENS:
        raise ValueError(f"query must be one of {list(QUERIES)} and given one of {list(GIVENS)}")
    check_instance("corpus", corpus, Corpus)
    return _query_errors(model, corpus, mode, query, given)


def query_panel(model, corpus: Corpus) -> Callable[[str, str, str], dict[str, float]]:
    """``view(mode, query, given) -> {metric: test error}`` (:func:`query_errors`).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    check_instance("corpus", corpus, Corpus)

    def view(mode: str, query: str, given: str) -> dict[str, float]:
        return query_errors(model, corpus, mode, query, given)

    return view
