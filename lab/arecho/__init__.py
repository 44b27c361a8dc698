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
  $\langle m \rangle$ (eqs. (arecho-tokenize), (arecho-detokenize): the equation labels of
  book/arecho/index.md).
* **Sequence.** $\langle sos\rangle, \langle m_1\rangle, \mathrm{val}(m_1), \langle m_2\rangle,
  \mathrm{val}(m_2), \dots$ over the labelled metrics in an order drawn at random for every
  training example (the *dynamic classifier chain*, eq. (arecho-sequence)); missing labels
  are absent.
* **Loss.** Teacher-forced next-token cross-entropy
  $L = -\sum_t \log p_\theta(y_t \mid y_{<t}, \text{audio})$ with label smoothing
  (eq. (arecho-chain)).
* **Two-step decoding.** For a query $Q$, repeat $|Q|$ times: choose the next metric among
  the unwritten ones (by its meta-token probability, or by the confidence of its best value),
  then write its value with the vocabulary masked to that metric's block
  (eqs. (arecho-step1)-(arecho-candidate)); greedy
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
  larger error than the 32-bin chain (``lab artifacts build arecho/checkpoints -- --bins 500 --seeds 0 --out chain500.pt``).
* Tokens: a bin decodes to the median of its training values (the official code returns the
  lower threshold: ``MetricTokenizer(representative="lower")``); our thresholds are the
  interior percentiles (the official ones add the training minimum and maximum and use
  linear interpolation; with ``n_bins = token_size - 2`` on a sample where interpolation lands
  on data points the two coincide, see ``lab/core/official/arecho_official.json``); no
  per-metric pad token and no ``<eos>``; a categorical metric keeps one token per class (the
  official thresholds path merges its top two classes); the formulas of the non-linear
  spacings are ours (the names follow the official options).
* Decoding: greedy only (``beam=1``; the paper's ablation shows beam size barely matters).
* Baselines: UniVERSA (``ParallelBaseline(target="universa")``: the official loss, raw-scale
  L1 per numerical metric plus cross-entropy per class) and UniVERSA-T (``"tokens"``, 32 bins)
  share the chain's MLP encoder (the paper: WavLM with per-metric pooling and x-vector heads)
  and are trained for each seed's chain CPU time; the standardised-L1 regressor is ours.

## Files

:mod:`lab.arecho.quality` (speech, degradations, metrics; numpy/scipy),
:mod:`lab.arecho.corpus` (the labelled corpus, ``lab artifacts build arecho/corpus``),
:mod:`lab.arecho.reference` (tokenizer, one-utterance decoder), :mod:`lab.arecho.models`
(``TinyARECHO``, ``ParallelBaseline``, ``train``), :mod:`lab.arecho.fast` (batched
``decode``, ``predict``), :mod:`lab.arecho.settings` (the experiments' settings, validated
once), :mod:`lab.arecho.scoring` (errors, chain positions, the teacher-forced ablation, the
ridge ceiling), :mod:`lab.arecho.experiments` (the parallel heads, the study over seeds),
:mod:`lab.arecho.views` (what the widgets show), :mod:`lab.arecho.checkpoint` (train-or-load:
``lab artifacts build arecho/checkpoints``), :mod:`lab.arecho.official` (parity with the official
code), :mod:`lab.arecho.figures` (drawing only).

See: book/arecho/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
