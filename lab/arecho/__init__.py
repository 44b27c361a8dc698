r"""
# ARECHO: chained prediction of many speech-quality metrics

Shi, Cheng, Su, Shim, Tian, Cornell, Zhao, Arora, Watanabe. *ARECHO: Autoregressive
Evaluation via Chain-Based Hypothesis Optimization for Speech Multi-Metric Estimation.*
NeurIPS 2025. [arXiv:2505.24518](https://arxiv.org/abs/2505.24518); official code in the
ESPnet fork `ftshijt/espnet`, branch `universa_plus` (`espnet2/universa/ar_universa/`).

## The method

* **Metric tokenizer.** For a numerical metric with training values $v_1..v_N$:
  thresholds $\theta = \mathrm{percentile}(v, p_k)$, $k = 1..T-1$ (deduplicated; the
  paper's $T = 500$), a value maps to bin $b(v) = \#\{i : \theta_i \le v\}$; a categorical
  metric gets one token per class; every metric also owns a meta-label token
  $\langle m \rangle$ (eqs. (6)-(7) of :mod:`lab.arecho.reference`).
* **Sequence.** $\langle sos\rangle, \langle m_1\rangle, \mathrm{val}(m_1), \langle m_2\rangle,
  \mathrm{val}(m_2), \dots$ over the labelled metrics in an order drawn at random for every
  training example (the *dynamic classifier chain*, eq. (8)); missing labels are absent.
* **Loss.** Teacher-forced next-token cross-entropy
  $L = -\sum_t \log p_\theta(y_t \mid y_{<t}, \text{audio})$ with label smoothing (eq. (9)).
* **Two-step decoding.** For a query $Q$, repeat $|Q|$ times: choose the next metric among
  the unwritten ones (by its meta-token probability, or by the confidence of its best value),
  then write its value with the vocabulary masked to that metric's block (eq. (10)); greedy
  (beam 1), the paper's setting.

## Deviations from the paper

* Data: a synthetic corpus (``espeak-ng`` sentences or a formant synthesiser, degraded by
  noise, reverberation, band limits and clipping; 1,000 utterances) labelled with nine real
  metric implementations (``pesq``, ``pystoi``, SI-SNR, LSD, SNR and three classes), not
  87 metrics over 308 hours of speech.
* Model: an MLP over per-segment log-mel statistics instead of a WavLM/Transformer encoder;
  a 2-layer decoder of width 64 (the paper: 581.21M parameters); no RoPE.
* Bins: the tokenizer's default is the paper's 500 bins per numerical metric, but the
  committed chains use 32 (``CHAIN_BINS``): on 800 training utterances 500-bin token heads
  are less accurate than 32-bin ones (measured in notebook 1), and a 500-bin chain trained
  like the committed ones (seed 0, 1,500 or 4,000 steps) decodes its values with a clearly
  larger error than the 32-bin chain (``python -m lab.arecho.checkpoint --bins 500 --seeds 0 --out chain500.pt``).
* Tokens: a bin decodes to the median of its training values (the official code returns the
  lower threshold); no per-metric pad token and no ``<eos>``; the formulas of the non-linear
  spacings are ours (the names follow the official options).
* Decoding: greedy only (``beam=1``; the paper's ablation shows beam size barely matters).
* Baselines: ``ParallelBaseline`` is a tiny UniVERSA (standardised L1 regression) or
  UniVERSA-T (``target="tokens"``); both share the chain's encoder.
* Parallel baseline loss: the chain is compared with ``ParallelBaseline`` regressing
  standardised targets with L1, where the official UniVERSA (``universa_base.py``,
  ``masked_l1_loss``, ftshijt/espnet branch universa_plus) trains L1 on the raw scales; the
  paper's two steps (UniVERSA -> UniVERSA-T tokens -> ARECHO chain) are not reported apart.

## Files

:mod:`lab.arecho.quality` (speech, degradations, metrics; numpy/scipy),
:mod:`lab.arecho.corpus` (the labelled corpus, ``python -m lab.arecho.corpus``),
:mod:`lab.arecho.reference` (tokenizer, one-utterance decoder), :mod:`lab.arecho.models`
(``TinyARECHO``, ``ParallelBaseline``, ``train``), :mod:`lab.arecho.fast` (batched
``decode``, ``predict``), :mod:`lab.arecho.experiments` (errors, train-or-load, the seed
study), :mod:`lab.arecho.checkpoint` (``python -m lab.arecho.checkpoint``),
:mod:`lab.arecho.figures`.

See: book/arecho/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "quality": [
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
        ],
        "corpus": [
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
        ],
        "reference": ["SPACINGS", "MODES", "DEFAULT_BINS", "MetricTokenizer", "decode_reference"],
        "models": ["TinyARECHO", "ParallelBaseline", "train"],
        "fast": ["decode", "predict"],
        "experiments": [
            "SEEDS",
            "CHAIN_BINS",
            "errors",
            "metric_order",
            "errors_by_position",
            "teacher_forced",
            "train_models",
            "load_models",
            "save_models",
            "SeedStudy",
            "seed_study",
            "mean_interval",
            "ridge_oracle_gain",
        ],
    },
)
