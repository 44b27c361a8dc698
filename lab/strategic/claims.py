"""The strategic chapter's claims, registered before the notebooks measure them.

Sources cite the paper's full text (Zhao, Mao & Liang, NeurIPS 2025): Theorem 1, Proposition 4
and the experiments of App. A.2 (Figs. 3-5). One statement that earlier releases recorded as a
claim holds by the construction of the model and is a code check now (notebook 1's check cell
and tests/test_strategic.py): ``clairvoyant-raise`` (the loss-minimising raise of the posted
boundary is γ, Cor. 1: it follows from Lemma 1's best response, which the chapter implements).
``sweep-eta`` (the regret changes monotonically with η) is no longer a claim: the paper reports
no direction for η (opposite trends in its two settings), so one setting of ours tests nothing
it states, and the verdict sat 0.35 standard errors from its boundary under the registered seed
shift (2.3 natively); the η sweep stays as the rival of the γ and d trends and in notebook 3.

See: book/strategic/reproduction.md
"""

from __future__ import annotations

import math

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
_SEEDS = tuple(range(120))
_SEEDS_OLD, _SEEDS_NEW = "the paper's 30 replications", "120 seeds at the default size (30 at FULL)"
_NB2_SIZE = "d = 2, γ = 0.2, η = 0.2 (uniform), w* = e₁; T = 6,000 cycles; 120 seeds"
#: the rival of the two localisation claims (notebook 2)
_ZHANG_RIVAL = (
    "Zhang et al. (2020)'s non-strategic Massart learner with partial feedback, run with the "
    "same cones and batch lengths: the localisation the paper adapts, without proxies or "
    "contrastive pairs"
)
_NB3_SIZE = "d = 2, γ = 0.2, η = 0.2 (uniform), w* = e₁; T = 2,000 cycles per value; 120 seeds"
_SEEDS_REVISION = claims.revision(
    _DATE,
    old="the paper's 30 replications (seeds 0-29)",
    new="120 seeds at the default size (the paper's 30 at FULL): the batched runs cost about "
    "the same",
    known="the verdicts of every claim of this notebook at 30 seeds, under seeds 0-29 and the "
    "registered shift 1000-1029 (listed per claim); 120 seeds measured under both sets",
)

_NB2 = (
    Spec(
        "sublinear",
        "The paper's algorithm has sublinear regret: its late per-cycle regret is a small fraction "
        "of its average (95% interval over seeds).",
        notebook="02",
        source="App. A.2, Fig. 3-4",
        paper="our algorithm's regret grows sublinearly",
        rule=claims.rule(reproduced=claims.ci_below(0.65), qualitatively=claims.ci_below(0.85)),
        expect="reproduced qualitatively",
        expect_full="not reproduced",
        seeds=_SEEDS,
        size=_NB2_SIZE,
        rival="the Strategic Perceptron of Ahmadi et al. (2021) with partial feedback, the "
        "strategic prior art the paper improves on (it handles manipulation but not Massart "
        "noise), on the same agents; paired per-seed late ratios (perceptron minus ours)",
        revised=(
            claims.revision(
                _DATE,
                old="at_most(0.65) / at_most(0.85) on the ratio of the mean curve (one number)",
                new="ci_below(0.65) / ci_below(0.85) on its 95% interval over seeds (ratio "
                "estimator); 120 seeds",
                known="30 seeds: 0.66 (seeds 0-29) and 0.71 (1000-1029), qualitatively, 0.09 "
                "relative from 0.65; 120 seeds: 0.68 [0.64, 0.73] and 0.67 [0.62, 0.72]; FULL "
                "(30 seeds): 0.849, whose interval reaches past 0.85",
            ),
        ),
    ),
    Spec(
        "baselines-linear",
        "The Strategic Perceptron and Zhang et al.'s learner (full and partial feedback) "
        "accumulate linear regret: the late-to-average ratio of the baseline whose interval "
        "reaches lowest.",
        notebook="02",
        source="App. A.2, Fig. 3-4",
        paper="the two benchmarks' regrets accumulate linearly",
        # the complement of `sublinear`'s tiers: linear above its qualitative ceiling 0.85
        rule=claims.rule(reproduced=claims.ci_above(0.85), qualitatively=claims.ci_above(0.65)),
        expect="reproduced",
        expect_full="reproduced",
        seeds=_SEEDS,
        size=_NB2_SIZE,
        rival="explore-fit-shift in doubling epochs (a strategy-aware learner built from the "
        "paper's abstract, the chapter's extra baseline; its first 30 seeds): a learner that "
        "raises its bar by γ must not read as linear under the same rule",
        revised=(
            claims.revision(
                "2026-12-03",
                old="reproduced if the smallest ratio is at least 0.8",
                new="at least 0.85, the boundary shared with sublinear's qualitative tier",
                known="FULL (30 seeds): baselines 0.98, the paper's algorithm (control) 0.849: "
                "moved after the FULL value was seen; default: 0.91, control 0.66",
            ),
            claims.revision(
                _DATE,
                old="at_least(0.85) / at_least(0.65) on the smallest ratio (one number)",
                new="ci_above(0.85) / ci_above(0.65) on the 95% interval of each baseline's "
                "ratio, the one reaching lowest; 120 seeds",
                known="30 seeds: 0.91 (seeds 0-29) and 0.90 (1000-1029), 0.05 relative from "
                "0.85, standard error 0.003-0.005; control 0.66 and 0.72; 120 seeds: 0.905 "
                "[0.901, 0.909] and 0.906 [0.902, 0.909]",
            ),
            claims.revision(
                _DATE,
                old="control: the paper's algorithm (its ratio is the value of `sublinear`)",
                new="control: explore-fit-shift, a strategy-aware learner measured on its own",
                known="the paper's algorithm's ratio 0.68 [0.64, 0.73] was rejected by the rule; "
                "explore-fit-shift measured 0.41 (its first 30 seeds) in the same run",
            ),
        ),
    ),
    Spec(
        "ours-beats-baselines",
        "At the horizon, the best baseline's regret over the paper's algorithm's: the paired "
        "interval over seeds of the log of the ratio.",
        notebook="02",
        source="App. A.2, Fig. 3-4",
        paper="the proposed algorithm has the lowest regret",
        rule=claims.rule(
            reproduced=claims.ci_above(math.log(2.0)), qualitatively=claims.ci_above(0.0)
        ),
        expect="reproduced qualitatively",
        expect_full="reproduced",
        seeds=_SEEDS,
        size=_NB2_SIZE,
        rival="explore-fit-shift in doubling epochs (the chapter's extra baseline, a simpler "
        "strategy-aware learner) on the claim's first 30 seeds: the same log ratio against the "
        "best baseline, and paired per-seed log regrets (explore-fit-shift minus ours)",
        revised=(_SEEDS_REVISION,),
    ),
    Spec(
        "theorem1",
        "The expected regret grows no faster than sqrt(T) ln T: the log-log exponent of the "
        "final regret over the horizons (95% interval over seeds).",
        notebook="02",
        source="Thm 1",
        paper="E[Reg] = O(d ln d (ln T)^2/(1-2η)^8 + sqrt((γ+1) d ln d T) ln T/(1-2η)^2)",
        rule=claims.rule(
            reproduced=claims.ci_within(0.2, 0.75), qualitatively=claims.ci_below(0.95)
        ),
        expect="reproduced",
        expect_full="reproduced qualitatively",
        seeds=_SEEDS,
        size="d = 2, γ = 0.2, η = 0.2 (uniform); T ∈ {1,000, 2,000, 4,000, 6,000}, each its own "
        "run; 120 seeds",
        rival="the Strategic Perceptron with partial feedback (the paper's baseline) read at "
        "the same horizons: the exponent of a learner the paper reports as linear",
        revised=(
            claims.revision(
                _DATE,
                old="the paper's 30 replications (seeds 0-29)",
                new="120 seeds at the default size (30 at FULL)",
                known="30 seeds: 0.45 [0.32, 0.57] (seeds 0-29, reproduced) and 0.68 [0.53, "
                "0.82] (1000-1029, qualitatively); 120 seeds: 0.57 [0.51, 0.63] and 0.59 "
                "[0.53, 0.65]",
            ),
        ),
    ),
    Spec(
        "angle-halving",
        "Chained over the complete enhancement batches, the bound halves: the share of seeds "
        "whose every complete batch k ends within π / 2^(k+2) of w* (95% Wilson interval).",
        notebook="02",
        source="Prop. 4",
        paper="θ(w*, w_k+1) ≤ θ_k / 2 with probability ≥ 1 - 6/T²",
        rule=claims.rule(reproduced=claims.ci_above(0.95), qualitatively=claims.ci_above(0.9)),
        expect="not reproduced",
        expect_full="not reproduced",
        seeds=_SEEDS,
        size=_NB2_SIZE + "; complete batches k = 1, 2",
        rival=_ZHANG_RIVAL,
        revised=(
            claims.revision(
                _DATE,
                old="at_least(0.95) / at_least(0.8) on the share (one number), 30 seeds",
                new="ci_above(0.95) / ci_above(0.8) on its 95% Wilson interval; 120 seeds",
                known="30 seeds: 83% (seeds 0-29, qualitatively) and 73% (1000-1029, not "
                "reproduced), control 93% and 100%; 120 seeds: 79% [71%, 86%] and 82% [74%, "
                "88%], control 93% and 94%; FULL: 77% of 30",
            ),
            claims.revision(
                _DATE,
                old="qualitatively if the share's 95% Wilson interval is above 0.8",
                new="qualitatively if it is above 0.9: Prop. 4 chained over two batches holds "
                "with probability at least 1 - 12/T², so 'mostly holds' reads at 0.9; moved "
                "AFTER the values were seen, because 0.8 sat on the measured share",
                known="120 seeds: 79% [71%, 86%] (seeds 0-119, not reproduced, 2.4 SE from 0.8) "
                "and 82% [74%, 88%] (1000-1119, not reproduced, 1.8 SE from 0.8): the same "
                "verdict under both tiers, but 0.8 left it within two standard errors",
            ),
        ),
    ),
    Spec(
        "prop4-bound",
        "Prop. 4 as stated: over the complete batches whose precondition θ(w*, w_k) ≤ θ_k holds, "
        "the share of (seed, batch) pairs whose output is within θ_k / 2 (95% Wilson interval).",
        notebook="02",
        source="Prop. 4",
        paper="θ(w*, w_k+1) ≤ θ_k / 2 with probability ≥ 1 - 6/T²",
        rule=claims.rule(reproduced=claims.ci_above(0.95), qualitatively=claims.ci_above(0.8)),
        expect="reproduced qualitatively",
        expect_full="reproduced qualitatively",
        seeds=_SEEDS,
        size=_NB2_SIZE + "; complete batches k = 1, 2",
        rival=_ZHANG_RIVAL,
        revised=(
            claims.revision(
                _DATE,
                old="at_least(0.95) / at_least(0.8) on the share (one number), 30 seeds",
                new="ci_above(0.95) / ci_above(0.8) on its 95% Wilson interval; 120 seeds",
                known="30 seeds: 91% of 58 pairs (seeds 0-29) and 87% of 60 (1000-1029), 0.08 "
                "relative from 0.8; 120 seeds: 89% of 234 [85%, 93%] and 91% of 237 [86%, "
                "94%]; control 97% of 238 and 97% of 238; FULL: 93% of 83",
            ),
        ),
    ),
)

_ETA_RIVAL = (
    "the same weakest-step rule on the η sweep read upward: the parameter for which the paper "
    "reports no consistent direction (opposite trends in its two settings), on the same seeds"
)
_NB3 = (
    Spec(
        "sweep-gamma",
        "The regret increases with gamma over [0.1, 0.2, 0.5]: the weakest step up, paired over "
        "seeds.",
        notebook="03",
        source="App. A.2, Fig. 5",
        paper="larger γ values result in higher regret",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        expect_full="not reproduced",
        seeds=_SEEDS,
        size=_NB3_SIZE + "; γ ∈ {0.1, 0.2, 0.5}",
        rival=_ETA_RIVAL,
        revised=(
            claims.revision(
                _DATE,
                old=_SEEDS_OLD,
                new=_SEEDS_NEW,
                known="30 seeds: weakest step +4.7 [-1.7, +11.2] (seeds 0-29, not reproduced) "
                "and +6.2 [+2.5, +9.9] (1000-1029, reproduced); 120 seeds: +5.5 [+3.3, +7.8] "
                "and +5.0 [+2.9, +7.1]",
            ),
        ),
    ),
    Spec(
        "sweep-d",
        "The regret increases with d over [2, 4, 6]: the weakest step up, paired over seeds.",
        notebook="03",
        source="App. A.2, Fig. 5",
        paper="d = 2 yields the lowest regret, d = 6 the highest",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        expect_full="not reproduced",
        seeds=_SEEDS,
        size=_NB3_SIZE + "; d ∈ {2, 4, 6}",
        rival=_ETA_RIVAL,
        revised=(
            claims.revision(
                _DATE,
                old=_SEEDS_OLD + "; control: Zhang et al. 2020 (partial feedback), same sweep",
                new=_SEEDS_NEW + "; control: the η sweep read upward",
                known="30 seeds: +58.3 [+12.4, +104.1] and +58.5 [+24.5, +92.5], Zhang's "
                "control +17.4 [-3.8, +38.6] (seeds 0-29) and +30.3 [+9.8, +50.9] (1000-1029, "
                "reproduced: the rule could not tell the method from it); 120 seeds: +52.1 "
                "[+33.0, +71.2] and +51.5 [+33.8, +69.2], Zhang +29.8 [+19.1, +40.4] and +33.1 "
                "[+23.7, +42.6]",
            ),
        ),
    ),
    Spec(
        "constants-sensitivity",
        "Our constants: over c6 in [0.025, 0.1, 0.4] (a 16-fold range of batch lengths) the "
        "final regret changes by at most a factor of two (largest over smallest mean).",
        notebook="03",
        source="ours",
        paper="no values for c0-c7 (App. A.5 gives their forms only)",
        rule=claims.rule(reproduced=claims.at_most(2.0), qualitatively=claims.at_most(4.0)),
        expect="reproduced",
        expect_full="reproduced",
        seeds=_SEEDS,
        size=_NB3_SIZE + "; c6 ∈ {0.025, 0.1, 0.4}, the other constants at their defaults",
        no_rival="the statement is about the chapter's own choice of constants, which the paper "
        "leaves open: there is no published setting or method whose sensitivity to c6 could "
        "be the nearest rival",
    ),
)

CLAIMS = registry(
    "strategic",
    *_NB2,
    *_NB3,
    deviations={
        "constants": "the constants c0..c7 have no values in the paper (App. A.5 gives only "
        "their forms in Assumption 2's parameters): ours are in Constants with their reasons; "
        "initialisation and refinement are capped at T/8 cycles each; the guarantees of "
        "Props. 2-4 hold for the paper's constants, and the late shape of the regret curve "
        "follows our batch lengths",
        "alpha0": "α0 is printed as c4 d ln d/(√T0 ln T); we use c4 √(d ln d)/(√T0 ln T), by "
        "analogy with α_k",
        "settings": "the parameter table of the paper's two experimental settings was "
        "illegible: our instance is x ~ N(0, I_d), d = 2, γ = 0.2, η = 0.2 with uniform noise, "
        "w* = e₁; the paper's η trend has opposite directions in its two settings",
        "horizon": "the default size runs T = 6,000 cycles (notebook 2) and T = 2,000 per sweep "
        "value (notebook 3) with 120 seeds; the paper's T = 50,000 with 30 replications is the "
        "FULL size",
        "exact-regret": "regret is the exact expected regret of each posted rule (Owen's T "
        "function for Gaussian features and uniform noise), not a realised count of mistakes",
    },
)
