"""The chapter's labelled corpus: clean base utterances, degradations, real metric labels.

Build (fixed seed, one thread, about 0.2 s per utterance on 2 cores)::

    OMP_NUM_THREADS=1 timeout 1800 lab artifacts build arecho/corpus -- --n 1000 --seed 0 \\
        --out lab/arecho/data/corpus.npz

The file stores the clean base utterances (8-bit mu-law at 16 kHz: the *decoded* mu-law
signal is the reference every label was computed against), the degradation parameters of
every utterance, its nine labels and its features (int8-quantised log-mel statistics). Labels
are recomputed from the stored base utterances alone, so they never depend on the version of
``espeak-ng`` (or on whether it is installed).

See: book/arecho/01-degraded-speech-and-tokens.ipynb
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_range

from .quality import (
    SR,
    degrade,
    espeak_available,
    formant_speech,
    logmel_features,
    lsd,
    mu_law_decode,
    mu_law_encode,
    pesq_nb,
    pesq_wb,
    si_snr,
    stoi,
    tts,
)

__all__ = [
    "Corpus",
    "METRICS",
    "METRIC_TYPES",
    "T60_CLASSES",
    "LOWPASS_CLASSES",
    "DEFAULT_PATH",
    "base_utterances",
    "label_utterance",
    "build_corpus",
    "load_corpus",
]

METRICS = ("PESQ-WB", "PESQ-NB", "STOI", "SI-SNR", "LSD", "SNR", "T60", "BW", "clip")
METRIC_TYPES = ("num", "num", "num", "num", "num", "num", "cat", "cat", "cat")
T60_CLASSES = (0.0, 0.2, 0.4, 0.8)
LOWPASS_CLASSES = (2000.0, 4000.0, 8000.0)
SI_SNR_RANGE = (-30.0, 40.0)
DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "corpus.npz"
BASE_SECONDS = 1.8

# Harvard sentences (IEEE 1969 recommended practice, public domain) and espeak-ng voices
_SENTENCES = (
    ("The birch canoe slid on the smooth planks.", "en-us", 165, 45),
    ("Glue the sheet to the dark blue background.", "en-us+f3", 170, 60),
    ("It's easy to tell the depth of a well.", "en-gb", 160, 40),
    ("These days a chicken leg is a rare dish.", "en+f2", 175, 70),
    ("Rice is often served in round bowls.", "en-us+m3", 160, 35),
    ("The juice of lemons makes fine punch.", "en-gb+f4", 165, 55),
    ("The box was thrown beside the parked truck.", "en-us+m1", 175, 50),
    ("The hogs were fed chopped corn and garbage.", "en+f1", 170, 65),
    ("Four hours of steady work faced us.", "en-gb-scotland", 160, 45),
    ("Large size in stockings is hard to sell.", "en-us+f5", 165, 75),
)


@dataclass(eq=False)  # identity: a corpus keys the memoised drivers
class Corpus:
    """A labelled corpus of degraded utterances.

    Attributes
    ----------
    features : numpy.ndarray
        ``(n, F)`` float32 model inputs (log-mel segment statistics).
    labels : numpy.ndarray
        ``(n, M)`` float64 metric values in the order of ``names``.
    names, types : tuple of str
        Metric names and ``"num"``/``"cat"`` per metric.
    meta : dict of numpy.ndarray
        Per utterance: ``base``, ``snr_db``, ``t60``, ``lowpass_hz``, ``clip``, ``seed``.
    clean : numpy.ndarray
        ``(n_base, L)`` float64 clean base utterances (the references of the labels).
    train, test : numpy.ndarray
        Index arrays of the split (80/20, seeded).
    source : str
        ``"espeak-ng"`` or ``"formant"``: what rendered the base utterances.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """

    features: np.ndarray
    labels: np.ndarray
    names: tuple[str, ...]
    types: tuple[str, ...]
    meta: dict[str, np.ndarray]
    clean: np.ndarray
    train: np.ndarray
    test: np.ndarray
    source: str = "formant"
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def audio(self, i: int) -> np.ndarray:
        """The degraded waveform of utterance ``i`` (regenerated from its base and seed)."""
        i = check_int("i", i, 0, len(self) - 1)
        m = self.meta
        return degrade(
            self.clean[int(m["base"][i])],
            float(m["snr_db"][i]),
            float(m["t60"][i]),
            float(m["lowpass_hz"][i]),
            float(m["clip"][i]),
            int(m["seed"][i]),
        )

    def index(self, name: str) -> int:
        """Column of metric ``name`` in ``labels``."""
        if name not in self.names:
            raise ValueError(f"name must be one of {list(self.names)} (got {name!r})")
        return self.names.index(name)


def base_utterances(n_base: int = 10, source: str = "auto") -> tuple[np.ndarray, str]:
    """Render the clean base utterances (``BASE_SECONDS`` long, 16 kHz, mu-law round-tripped).

    Parameters
    ----------
    n_base : int
        How many (1 to 10 with ``espeak-ng``; any number with the formant fallback).
    source : str
        ``"espeak"``, ``"formant"`` or ``"auto"`` (``espeak-ng`` if installed).

    Returns
    -------
    (numpy.ndarray, str)
        ``(n_base, L)`` waveforms and the source used.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    n_base = check_int("n_base", n_base, 1, 1000)
    if source not in ("auto", "espeak", "formant"):
        raise ValueError(f"source must be one of ['auto', 'espeak', 'formant'] (got {source!r})")
    use_espeak = source == "espeak" or (source == "auto" and espeak_available())
    if use_espeak and n_base > len(_SENTENCES):
        raise ValueError(f"n_base must be <= {len(_SENTENCES)} with espeak-ng (got {n_base})")
    L = int(BASE_SECONDS * SR)
    out = np.zeros((n_base, L))
    for b in range(n_base):
        if use_espeak:
            text, voice, speed, pitch = _SENTENCES[b]
            x = tts(text, voice=voice, speed=speed, pitch=pitch)
        else:
            x = formant_speech(1000 + b, BASE_SECONDS)
        x = x[:L]
        x = np.pad(x, (0, L - x.size))
        out[b] = mu_law_decode(mu_law_encode(x))  # the stored reference is the decoded code
    return out, ("espeak-ng" if use_espeak else "formant")


def label_utterance(
    clean: Any, snr_db: float, t60: float, lowpass_hz: float, clip: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Degrade one clean utterance and return ``(features, labels)``.

    Labels, in the order of ``METRICS``: PESQ-WB, PESQ-NB (``pesq``), STOI (``pystoi``),
    SI-SNR (clipped to [-30, 40] dB so that a few reverberant outliers do not take the tail
    bins), LSD, the imposed SNR, the T60 class (index into ``T60_CLASSES``), the bandwidth
    class (index into ``LOWPASS_CLASSES``) and the clipping flag.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    t60 = check_range("t60", t60, 0.0, 2.0)
    lowpass_hz = check_range("lowpass_hz", lowpass_hz, 500.0, SR / 2)
    y = degrade(clean, snr_db, t60, lowpass_hz, clip, seed)
    ref = np.asarray(clean, dtype=np.float64)
    labels = np.array(
        [
            pesq_wb(ref, y, utt_id=seed),
            pesq_nb(ref, y, utt_id=seed),
            stoi(ref, y),
            np.clip(si_snr(ref, y), *SI_SNR_RANGE),
            lsd(ref, y),
            float(snr_db),
            float(np.argmin(np.abs(np.asarray(T60_CLASSES) - t60))),
            float(np.argmin(np.abs(np.asarray(LOWPASS_CLASSES) - lowpass_hz))),
            float(clip > 0),
        ]
    )
    return logmel_features(y), labels


def _draw_params(n: int, n_base: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    clip_on = rng.uniform(size=n) < 0.3
    return {
        "base": np.arange(n) % n_base,
        "snr_db": np.round(rng.uniform(-5, 35, size=n), 2),
        "t60": np.asarray(T60_CLASSES)[rng.integers(len(T60_CLASSES), size=n)],
        "lowpass_hz": np.asarray(LOWPASS_CLASSES)[rng.integers(len(LOWPASS_CLASSES), size=n)],
        "clip": np.where(clip_on, np.round(rng.uniform(0.3, 0.8, size=n), 3), 0.0),
        "seed": seed * 1_000_003 + np.arange(n),
    }


def _quantise(features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo = features.min(0)
    scale = np.maximum(features.max(0) - lo, 1e-6) / 254.0
    q = np.round((features - lo) / scale - 127).astype(np.int8)
    return q, lo.astype(np.float32), scale.astype(np.float32)


def _dequantise(q: np.ndarray, lo: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return ((q.astype(np.float32) + 127) * scale + lo).astype(np.float32)


def _split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed + 7).permutation(n)
    n_test = n // 5
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _label_rows(clean: np.ndarray, params: dict, idx: np.ndarray, progress: bool):
    """Features and labels of the rows ``idx`` (one degraded utterance each)."""
    from lab.core.progress import progress as _progress

    feats, labs = [], []
    for i in _progress(idx, desc="labelling", disable=not progress):
        f, y = label_utterance(
            clean[params["base"][i]],
            params["snr_db"][i],
            params["t60"][i],
            params["lowpass_hz"][i],
            params["clip"][i],
            int(params["seed"][i]),
        )
        feats.append(f)
        labs.append(y)
    return feats, labs


def build_corpus(
    n: int = 1000,
    seed: int = 0,
    cache: str | os.PathLike | None = DEFAULT_PATH,
    *,
    n_base: int = 10,
    source: str = "auto",
    clean: Any = None,
    rows: Any = None,
    progress: bool = False,
) -> Corpus:
    """Build (or load from ``cache``) a deterministic labelled corpus.

    Parameters
    ----------
    n : int
        Number of degraded utterances (8 to 100 000).
    seed : int
        Seed of the degradation parameters and of the train/test split.
    cache : path or None
        If the file exists and was built with the same ``n`` and ``seed`` it is loaded
        (the committed corpus is the default); otherwise the corpus is built and, when
        ``cache`` is not ``None``, written there.
    n_base : int
        Number of clean base utterances.
    source : str
        ``"auto"``, ``"espeak"`` or ``"formant"`` (used only when ``clean`` is ``None``).
    clean : array_like, optional
        ``(n_base, L)`` clean base utterances to use instead of rendering them (how a test
        rebuilds labels from the committed file without any text-to-speech).
    rows : array_like of int, optional
        Label only these rows (a slice for checks); the result then holds just those rows.
    progress : bool
        Show a progress bar.

    Returns
    -------
    Corpus

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    n = check_int("n", n, 8, 100_000)
    seed = check_int("seed", seed, 0, 2**31 - 1)
    n_base = check_int("n_base", n_base, 1, 1000)
    if cache is not None and rows is None and clean is None and Path(cache).exists():
        c = load_corpus(cache)
        if len(c) == n and int(c.extra.get("seed", -1)) == seed:
            return c
    if clean is None:
        clean, src = base_utterances(n_base, source)
    else:
        clean = np.asarray(clean, dtype=np.float64)
        if clean.ndim != 2:
            raise ValueError(f"clean must have shape (n_base, L) (got {clean.shape})")
        n_base, src = clean.shape[0], "given"
    params = _draw_params(n, n_base, seed)
    idx = np.arange(n) if rows is None else np.asarray(rows, dtype=int)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"rows must be indices in [0, {n - 1}]")
    feats, labs = _label_rows(clean, params, idx, progress)
    meta = {k: v[idx] for k, v in params.items()}
    train, test = _split(n, seed)
    corpus = Corpus(
        features=np.stack(feats),
        labels=np.stack(labs),
        names=METRICS,
        types=METRIC_TYPES,
        meta=meta,
        clean=clean,
        train=train if rows is None else np.arange(0),
        test=test if rows is None else np.arange(0),
        source=src,
        extra={"seed": seed, "n": n},
    )
    if cache is not None and rows is None:
        save_corpus(corpus, cache)
        corpus = load_corpus(cache)  # the committed form (quantised features)
    return corpus


def save_corpus(corpus: Corpus, path: str | os.PathLike) -> None:
    """Write ``corpus`` as a compressed ``.npz`` (features int8, clean speech mu-law).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    q, lo, scale = _quantise(corpus.features)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        features_q=q,
        features_lo=lo,
        features_scale=scale,
        labels=corpus.labels.astype(np.float32),
        names=np.array(corpus.names),
        types=np.array(corpus.types),
        clean_mulaw=mu_law_encode(corpus.clean),
        source=np.array(corpus.source),
        seed=np.array(corpus.extra.get("seed", 0)),
        **{"meta_" + k: v for k, v in corpus.meta.items()},
    )


def load_corpus(path: str | os.PathLike = DEFAULT_PATH) -> Corpus:
    """Load a corpus written by :func:`build_corpus` (the committed one by default).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no corpus at {path}; build it with `lab artifacts build arecho/corpus -- --out {path}`"
        )
    with np.load(path, allow_pickle=False) as z:
        features = _dequantise(z["features_q"], z["features_lo"], z["features_scale"])
        meta = {k[5:]: z[k] for k in z.files if k.startswith("meta_")}
        seed = int(z["seed"])
        labels = z["labels"].astype(np.float64)
        corpus = Corpus(
            features=features,
            labels=labels,
            names=tuple(str(s) for s in z["names"]),
            types=tuple(str(s) for s in z["types"]),
            meta=meta,
            clean=mu_law_decode(z["clean_mulaw"]),
            train=np.arange(0),
            test=np.arange(0),
            source=str(z["source"]),
            extra={"seed": seed, "n": labels.shape[0]},
        )
    corpus.train, corpus.test = _split(len(corpus), seed)
    return corpus


def main(argv: list[str] | None = None) -> int:
    """The ``lab artifacts build arecho/corpus`` command (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="lab artifacts build arecho/corpus", description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-base", type=int, default=10)
    parser.add_argument("--source", default="auto", choices=["auto", "espeak", "formant"])
    parser.add_argument("--out", default=str(DEFAULT_PATH))
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.perf_counter()
    out = Path(args.out)
    if out.exists():
        out.unlink()
    c = build_corpus(args.n, args.seed, out, n_base=args.n_base, source=args.source, progress=True)
    dt = time.perf_counter() - t0
    print(
        f"{len(c)} utterances from {c.clean.shape[0]} {c.source} base utterances, "
        f"{dt:.0f} s ({dt / len(c):.3f} s each), {out.stat().st_size / 1024:.0f} KiB -> {out}"
    )
    return 0
