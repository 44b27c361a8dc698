r"""
# ARECHO: chained prediction of many speech-quality metrics

Shi, Cheng, Su, Shim, Tian, Cornell, Zhao, Arora, Watanabe. *ARECHO: Autoregressive
Evaluation via Chain-Based Hypothesis Optimization for Speech Multi-Metric Estimation.*
NeurIPS 2025. [arXiv:2505.24518](https://arxiv.org/abs/2505.24518); official code in the
ESPnet fork `ftshijt/espnet`, branch `universa_plus` (`espnet2/universa/ar_universa/`).

**What is reconstructed.** The paper's tables were not available; the method comes from the
abstract and the official code. Everything at the book's scale is ours: a synthetic corpus
(``espeak-ng`` sentences or a formant synthesiser, degraded by noise, reverberation, band
limits and clipping) labelled with real metric implementations (``pesq``, ``pystoi``,
SI-SNR, LSD), a segment-statistics MLP encoder instead of a Transformer over frames, greedy
search only (beam 1), and the spacing formulas of the tokenizer.

## The method

* **Metric tokenizer.** For a numerical metric with training values $v_1..v_N$:
  thresholds $\theta = \mathrm{percentile}(v, p_k)$, $k = 1..T-1$ (deduplicated), a value
  maps to bin $b(v) = \#\{i : \theta_i \le v\}$; a categorical metric gets one token per
  class; every metric also owns a meta-label token $\langle m \rangle$.
* **Sequence.** $\langle sos\rangle, \langle m_1\rangle, \mathrm{val}(m_1), \langle m_2\rangle,
  \mathrm{val}(m_2), \dots$ over the labelled metrics in an order drawn at random for every
  training example (the *dynamic classifier chain*); missing labels are simply absent.
* **Loss.** Teacher-forced next-token cross-entropy
  $L = -\sum_t \log p_\theta(y_t \mid y_{<t}, \text{audio})$ with label smoothing.
* **Two-step decoding.** For a query $Q$, repeat $|Q|$ times: choose the next metric among
  the unwritten ones (by its meta-token probability, or by the confidence of its best value),
  then write its value with the vocabulary masked to that metric's block.

Modules: :mod:`lab.arecho.quality` (speech, degradations, metrics; numpy/scipy),
:mod:`lab.arecho.corpus` (the labelled corpus, ``python -m lab.arecho.corpus``),
:mod:`lab.arecho.model` (tokenizer, models, training, decoding; torch, imported lazily).

See: book/arecho/index.md
"""

from __future__ import annotations

from typing import Any

from .corpus import (
    DEFAULT_PATH,
    LOWPASS_CLASSES,
    METRIC_TYPES,
    METRICS,
    T60_CLASSES,
    Corpus,
    base_utterances,
    build_corpus,
    label_utterance,
    load_corpus,
)
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
    snr,
    stoi,
    synthetic_rir,
    tts,
)

_MODEL_NAMES = (
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
)

__all__ = [
    # data and metrics
    "SR",
    "espeak_available",
    "tts",
    "formant_speech",
    "synthetic_rir",
    "degrade",
    "si_snr",
    "snr",
    "lsd",
    "pesq_wb",
    "pesq_nb",
    "stoi",
    "logmel_features",
    "mu_law_encode",
    "mu_law_decode",
    # corpus
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
    # tokens, models, decoding (torch; loaded on first use)
    *_MODEL_NAMES,
]


def __getattr__(name: str) -> Any:
    if name in _MODEL_NAMES:
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module 'lab.arecho' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
