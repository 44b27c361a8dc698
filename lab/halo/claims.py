"""The halo chapter's claims, registered before the notebooks measure them.

Sources: Ashkboos et al., NeurIPS 2025 (HALO), its levels (HALO-0/1/2, reconstructed from the
official code ``IST-DASLab/HALO``), Table 1 (Llama-3-8B fine-tuning, from a secondary summary:
marked ≈), Table 2 (speed-ups), the PEFT table and the appendix's pre-training. Three
statements that earlier releases recorded as claims hold by construction and are code checks
now:

* ``formats-bit-exact`` (the simulated FP8/FP6/FP4 rounding equals the hardware casts bit for
  bit: notebook 1's check cell and
  ``tests/test_halo.py::test_minifloat_rounding_bit_exact_with_ml_dtypes``);
* ``fwht-exact`` (the FWHT equals the dense normalised Hadamard product, is orthogonal and
  self-inverse: notebook 2's check cell, ``tests/test_halo.py::test_pair_fwht``,
  ``test_hadamard_orthogonal_and_fwht_matches_matrix`` and
  ``test_fwht_unnormalized_equals_sympy_exactly``);
* ``allgather-half-bytes`` (an 8-bit all-gather moves half the bytes of a BF16 one: one byte
  per element against two, counted on the wire; notebook 2's check cell and
  ``tests/test_halo_training.py::test_sharded_training_two_processes``).

See: book/halo/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"

_TABLE1_REVISED = claims.revision(
    _DATE,
    old="the mean gap to FP32 over 3 seeds against the thresholds (a point rule)",
    new="the paired 95% interval of the gap over 5 seeds, the same thresholds (30-50 points "
    "for HALO-0 INT8's reproduced tier, was 40 ± 10)",
    known="3 seeds: HALO-2 INT8 gap 0.0105 natively (after the FWHT kernel's rewrite; 0.010 "
    "before) and 0.0037 under the seed shift, against its 0.01 line; pooled over 16 seeds "
    "about 0.009 ± 0.003",
)

_TABLE1_SIZE = "MLP 128 → 256 → 256 → 10 on digits, S = 300 on 4 channels, 60 Adam steps, batch 64"

_TOY = "toy-model"

CLAIMS = registry(
    "halo",
    # notebook 1: outliers and rotations
    Spec(
        "outliers-collapse-codes",
        "With a few channel outliers, one INT8 scale per tensor leaves almost every ordinary "
        "entry on the codes −1, 0, 1; a Hadamard rotation over the channels fills the range.",
        notebook="01",
        source="method (reconstructed)",
        paper="outliers waste a per-tensor scale; H spreads them",
        rule=claims.rule(reproduced=claims.at_most(0.1)),
        expect="reproduced",
        seeds=(0,),
        size="X 256 × 512 with 8 channels × 100; the share of XH's INT8 codes in {−1, 0, 1}",
        rival="the same Hadamard rotation over the tokens (H_b X) instead of the channels: an "
        "orthogonal mix of the wrong dimension, which leaves channel outliers where they are",
        revised=(
            claims.revision(
                _DATE,
                old="holds: more than half of X's codes in {−1, 0, 1}, under a tenth of XH's "
                "(a boolean, with a channel permutation and an outlier-free X as controls)",
                new="the share of XH's codes in {−1, 0, 1} at most 0.1 (the old rule's second "
                "half; X's share is a check), the rotation over the tokens as the rival",
                known="X 0.985, XH 0.045 (seed 0); a permutation leaves X's share unchanged "
                "by construction (0.985), which is why it is no longer the rival",
            ),
        ),
    ),
    Spec(
        "middle-fixes-forward",
        "The middle rotation of HALO-1 (over the in-features, where it cancels) fixes channel "
        "outliers in the forward product.",
        notebook="01",
        source="HALO-1 (method)",
        paper="Y = Q(XH) Q(WH)ᵀ protects the forward product",
        rule=claims.rule(reproduced=claims.at_least(3.0), qualitatively=claims.at_least(1.5)),
        expect="reproduced",
        seeds=(0,),
        size="b = 256, m = n = 512, 8 channel outliers × 100; error of Y without rotation over "
        "that with it",
        rival="the left and right rotations (over the tokens, over the out-features) in place "
        "of the middle one: the same Hadamard on the dimensions where channel outliers do not "
        "live",
    ),
    Spec(
        "left-fixes-input-gradient",
        "Token outliers of E_Y are fixed only by a left rotation over the tokens (HALO-2), not by "
        "the middle rotation.",
        notebook="01",
        source="HALO-2 (method)",
        paper="E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ protects E_X",
        rule=claims.rule(reproduced=claims.at_most(0.15)),
        expect="reproduced",
        seeds=(0,),
        size="b = 256, m = n = 512, 4 token outliers × 100; per-row error of E_X with the left "
        "rotation",
        rival="the middle rotation of HALO-1 (over the out-features, inside each token row) and "
        "the right one, in place of the left: they mix within the rows a token outlier sets",
        revised=(
            claims.revision(
                _DATE,
                old="holds: E_X error above 0.5 without rotation and with the middle one, below "
                "0.15 with left (a boolean)",
                new="the left-rotated E_X error at most 0.15 (the old rule's threshold), the "
                "middle and right rotations as rivals judged by it",
                known="none 0.790, middle 0.662, left 0.110, right 0.790 (seed 0)",
            ),
        ),
    ),
    Spec(
        "fp8-needs-no-rotation",
        "FP8 E4M3's dynamic range protects E_X from token outliers without any rotation (hence "
        "HALO-0 for FP8, HALO-2 for INT8).",
        notebook="01",
        source="HALO-0 for FP8 (method)",
        paper="FP8 runs HALO-0; INT8 needs HALO-2",
        rule=claims.rule(reproduced=claims.at_most(0.15)),
        expect="reproduced",
        seeds=(0,),
        size="b = 256, m = n = 512, 4 token outliers × 100; per-row error of E_X, no rotation",
        rival="INT8 with one scale per tensor and no rotation: the format HALO-2 is for, on the "
        "same tensors",
    ),
    Spec(
        "left-rotation-limit",
        "At extreme outlier ratios even the left rotation fails: the inverse rotation spreads the "
        "large rows' quantization error into the small rows.",
        notebook="01",
        source="ours",
        paper="(not in the paper: a limit of the mechanism)",
        rule=claims.rule(reproduced=claims.at_least(0.5)),
        expect="reproduced",
        seeds=(0,),
        size="b = 256, m = n = 512, 4 token outliers × 1000; per-row error of left-rotated E_X",
        rival="the same left rotation at outlier magnitude 300, the neighbouring regime in "
        "which it still protects E_X",
        revised=(
            claims.revision(
                _DATE,
                old="holds: left-rotated E_X error above 0.5 at magnitude 1000 (a boolean)",
                new="the left-rotated E_X error at magnitude 1000 at least 0.5 (the same "
                "threshold), magnitude 300 as the rival",
                known="1.048 at magnitude 1000 (seed 0)",
            ),
        ),
    ),
    # notebook 2: the transform and the all-gather
    Spec(
        "allgather-trains",
        "Training with the gathered INT8 Q(WH) fed directly to HALO-2 products reaches the same "
        "loss as an FP32 all-gather with an FP32 forward.",
        notebook="02",
        source="ours",
        paper="(HQ-FSDP keeps fine-tuning accuracy; the paper reports its speed-up)",
        rule=claims.rule(reproduced=claims.at_most(0.10), qualitatively=claims.at_most(0.5)),
        expect="reproduced",
        seeds=(0,),
        size="2 gloo processes, 2-layer MLP regression of width 256, 30 steps, batch 64 per rank",
        no_rival="every all-gather the sharded run can carry (BF16, FP32) trains as well as "
        "the INT8 one, and the regression grows no outliers that would separate an unrotated "
        "INT8 all-gather from HALO-2's: no rival can fail this rule at our size",
    ),
    Spec(
        "gpu-speedup",
        "HALO's INT8 kernels speed up fine-tuning: up to 1.41× end to end, 1.82× per module.",
        notebook="02",
        source="Table 2 (≈)",
        paper="1.35–1.41× end to end (4–8 RTX 4090); up to 1.82× per module",
        rule=claims.rule(reproduced=claims.between(1.3, 2.0)),
        expect="not measured",
        size="needs CUDA GPUs (RTX 4090 class); the book's build has none",
        no_rival="nothing is measured on a CPU: the rival (BF16 GEMMs, nn.Linear) is timed by "
        "benchmarks/bench_halo.py --gpu beside the layer itself",
    ),
    # notebook 3: fine-tuning and pre-training the toy model
    Spec(
        "int8-halo0-collapses",
        "INT8 without rotations (HALO-0) loses most of the fine-tuning accuracy when the "
        "activations have massive channels.",
        notebook="03",
        source="Table 1 (≈)",
        paper="INT8 HALO-0: about 40 points below BF16 on average",
        rule=claims.rule(
            reproduced=claims.ci_within(0.30, 0.50), qualitatively=claims.ci_above(0.10)
        ),
        expect="reproduced qualitatively",
        seeds=tuple(range(5)),
        size=f"{_TABLE1_SIZE}; paired gap to FP32 over 5 seeds",
        rival="HALO-2 INT8 (the same format with the rotations) and HALO-0 FP8 (the same level "
        "in FP8), on the same 5 seeds: the method with its key ingredient, and the format that "
        "needs none; paired per seed",
        revised=(_TABLE1_REVISED,),
    ),
    Spec(
        "int8-halo2-near-bf16",
        "INT8 HALO-2 fine-tunes to within about 1% of the full-precision accuracy.",
        notebook="03",
        source="Table 1 (≈)",
        paper="INT8 HALO-2 within about 1% of BF16",
        rule=claims.rule(reproduced=claims.ci_below(0.01), qualitatively=claims.ci_below(0.10)),
        expect="reproduced",
        seeds=tuple(range(128)),
        size=f"{_TABLE1_SIZE}; paired gap to FP32 over 128 seeds",
        rival="HALO-0 INT8, the same format without the rotations, on the first 12 of the "
        "claim's seeds (its gap is twenty times the line: 12 paired seeds resolve it)",
        revised=(
            _TABLE1_REVISED,
            claims.revision(
                _DATE,
                old="the paired interval over the 5 seeds of the other Table 1 gaps; expected "
                "'reproduced qualitatively' with a noise-floor diagnosis",
                new="over 128 paired seeds, FP32 and HALO-2 INT8 runs only (the first 5 the "
                "study's, the others from the batched runner, the same runs seed by seed); the "
                "thresholds unchanged; expected 'reproduced': the interval now lies below 0.01",
                known="5 seeds: gap 0.0089, interval [-0.003, 0.021], straddling the 0.01 line, "
                "ending 2.52 SE above it natively, 2.78 under the AVX2 mode, 1.50 under the "
                "baseline mode and 2.42 under the seed shift (Intel AVX-512 machine); a run of "
                "192 seeds on both seed sets (native): 64 seeds end 2.4 and 3.2 SE below the "
                "line, 128 seeds 3.1 and 4.8 (gaps 0.0057 and 0.0053), 192 seeds 5.4 and 5.4",
            ),
        ),
    ),
    Spec(
        "fp8-halo0-lossless",
        "FP8 E4M3 needs no rotation: HALO-0 in FP8 fine-tunes about as well as full precision.",
        notebook="03",
        source="Table 1 (≈)",
        paper="FP8 HALO-0 about lossless",
        rule=claims.rule(reproduced=claims.ci_below(0.01), qualitatively=claims.ci_below(0.10)),
        expect="reproduced",
        seeds=tuple(range(12)),
        size=f"{_TABLE1_SIZE}; paired gap to FP32 over 12 seeds",
        rival="HALO-0 INT8, the same level in INT8, on the claim's 12 seeds, paired per seed",
        revised=(
            _TABLE1_REVISED,
            claims.revision(
                _DATE,
                old="the paired interval over the 5 seeds of the other Table 1 gaps",
                new="over the FP6 claim's 12 seeds (16 at FULL), FP32 and FP8 runs only (the "
                "first 5 the study's); the thresholds unchanged",
                known="5 seeds: reproduced, the interval's end 3.7 SE below the 0.01 line "
                "natively, 1.4 SE under the AVX2 numerics mode and 0.5 SE under the seed shift "
                "(Intel AVX-512 machine); no run of the 12 seeds yet",
            ),
        ),
    ),
    Spec(
        "fp6-halo1",
        "FP6 (E2M3) HALO-1 fine-tunes to within a few points of full precision.",
        notebook="03",
        source="Table 1 (≈)",
        paper="GSM8K: FP6 HALO-1 66.5 vs BF16 69.3 (2.8 points)",
        rule=claims.rule(reproduced=claims.ci_below(0.03), qualitatively=claims.ci_below(0.10)),
        expect="reproduced qualitatively",
        seeds=tuple(range(12)),
        size=f"{_TABLE1_SIZE}; paired gap to FP32 over 12 seeds",
        rival="HALO-0 FP6 E2M3, the same format without the rotations, on the claim's 12 "
        "seeds, paired per seed",
        revised=(
            _TABLE1_REVISED,
            claims.revision(
                _DATE,
                old="the paired interval over the 5 seeds of the other Table 1 gaps",
                new="over 12 seeds (16 at FULL), the FP32 and FP6 runs only (the first 5 are "
                "the study's); the thresholds unchanged",
                known="5 seeds: gap 0.075, interval [0.045, 0.104] natively (0.4 SE beyond the "
                "0.10 line: not reproduced), ending at 0.093 under the seed shift "
                "(qualitatively); a run of 24 seeds on both seed sets (Intel AVX-512): 12 seeds "
                "end at 0.082 and 0.071 (3.8 and 6.0 SE inside 0.10, over 8 SE above 0.03), "
                "16 seeds at 0.079 and 0.068, 24 at 0.072 and 0.065",
            ),
        ),
    ),
    Spec(
        "halo2-token-outliers",
        "With token outliers in the backpropagated error, HALO-2 (left rotation over the tokens) "
        "fine-tunes better than HALO-1.",
        notebook="03",
        source="levels figure (≈)",
        paper="accuracy order HALO-2 > HALO-1 > HALO-0",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="not reproduced",
        seeds=(0, 1, 2),
        size=f"{_TABLE1_SIZE}; 2% of each batch's losses × 100; paired over 3 seeds",
        rival="the same HALO-2 − HALO-1 comparison without token outliers (the regime in which "
        "the left rotation has nothing to spread), on the same seeds",
    ),
    Spec(
        "peft-int8-within-std",
        "HALO-PEFT (LoRA adapters on frozen INT8 HALO-2 layers) is within one standard deviation "
        "of the full-precision LoRA baseline.",
        notebook="03",
        source="PEFT table (≈)",
        paper="INT8/FP8 HALO-PEFT within the LoRA baseline's std",
        rule=claims.rule(reproduced=claims.ci_above(-1.0)),
        expect="reproduced",
        seeds=tuple(range(8)),
        size=f"{_TABLE1_SIZE}; LoRA rank 16, lr 3e-3, paired over 8 seeds",
        rival="LoRA on frozen INT8 HALO-0 layers: the same adapters on the same format without "
        "the rotations, paired per seed",
        revised=(
            claims.revision(
                _DATE,
                old="3 fine-tuning seeds",
                new="8 fine-tuning seeds (10 at FULL), the rule unchanged",
                known="3 seeds gave +0.3 std, 95% interval [-0.5, +1.1], then +0.1, [-0.5, +0.8] "
                "after a kernel change (seeds 0-2, native), and +0.6 std, [-1.2, +2.4] (seeds "
                "1000-1002): 3.3 and 0.5 SE from -1, two verdicts; "
                "a run of 10 seeds on both sets put 8 seeds at [-0.11, +0.67] and [+0.00, +0.78] "
                "(5.4 and 6.1 SE), 6 seeds at 2.4 and 4.7 SE",
            ),
        ),
    ),
    Spec(
        "pretrain-fp8-matches",
        "Pre-training from scratch in FP8 (HALO-0) reaches the full-precision accuracy.",
        notebook="03",
        source="appendix, pre-training (≈)",
        paper="TinyLlama-1.1B: FP8 matches BF16",
        rule=claims.rule(reproduced=claims.at_most(0.01)),
        expect="reproduced",
        seeds=(0,),
        size="MLP 128 → 256 → 256 → 10 from scratch on all ten digits, 150 Adam steps, batch 64",
        rival="FP4 E2M1 with HALO-2, the format the paper reports diverging, on the same seed",
    ),
    Spec(
        "pretrain-int8-fp4-diverge",
        "Pre-training from scratch in INT8 and in FP4 diverges, even with HALO-2.",
        notebook="03",
        source="appendix, pre-training (≈)",
        paper="TinyLlama-1.1B: INT8 and FP4 diverge",
        rule=claims.rule(
            reproduced=claims.holds("both the INT8 and the FP4 run diverge"),
        ),
        expect="not reproduced",
        seeds=(0,),
        size="MLP 128 → 256 → 256 → 10 from scratch on all ten digits, 150 Adam steps, batch 64",
        no_rival="no run of ours diverges, the full-precision one included: every rival (FP32, "
        "FP8) reads the same 'no divergence' as the claim, and tells nothing at our size",
    ),
    deviations={
        _TOY: "A 256-wide MLP on digits with four injected massive channels (S = 300) stands "
        "in for Llama-3-8B (no weights or data sets can be downloaded, a CPU budget): a "
        "Hadamard of order 256 spreads a massive channel by 16 where the paper's order-4096 "
        "rotations spread it by 64, and two quantized layers stand for 32 blocks, so the sizes "
        "of the toy's accuracy gaps are not the paper's; its directions are what it tests.",
        "pretrain-toy": "Pre-training a 256-wide MLP on digits for 150 steps stands in for "
        "TinyLlama-1.1B: a network this small grows no LLM-scale outliers of its own, so no "
        "format diverges.",
        "cpu-simulation": "Low precision is simulated on the CPU (exact integer and minifloat "
        "accumulation); real INT8/FP8 GEMMs run only on CUDA, so no speed of HALO's kernels "
        "can be measured in the book's CPU build.",
    },
)
