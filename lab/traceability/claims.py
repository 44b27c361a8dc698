"""The traceability chapter's claims, registered before any notebook measures them.

Each ``Spec`` holds a claim's statement, source, the paper's value, the verdict rule, the
expected verdict, the seeds and size it is measured at, and its nearest rival (what the control
is and why it is the nearest). The notebooks record ``C[id].record(**evidence.<claim>(...))``
where the number is computed (:mod:`lab.traceability.evidence` builds the value, the card's text
and the measured rival).

The paper is theory only: no table gives a margin, so no claim registers ``paper_margin``. The
seeds are the base seeds of the instances (``lab.seeds``: the seed-shift check moves them);
repetition r of a driver draws instance ``seed · 1,000,003 + r``.

Code checks, not claims: the dense fingerprinting lemma (eqs. (1)-(2), notebook 1's checks and
``tests/test_traceability.py``), the tracer's soundness at level ξ, k non-zeros per row, and
"the first branch of Thm 2.8 is the smaller exactly when d ≥ εn" (an algebraic identity).

See: book/traceability/reproduction.md
"""

from __future__ import annotations

import math

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS", "XI", "N", "CEILING"]

#: the tracer's soundness level (false-positive rate) of every claim
XI = 0.05
#: training rows of the default size (δ = 1/n² of the DP learner)
N = 50
#: Prop A.5's ceiling e^ε ξ + δ for the (1, 1/n²)-DP learner at the default size
CEILING = math.exp(1.0) * XI + 1 / N**2

_DAY = "2026-12-06"
_P = "P_{k,p}, n = 50, d = 1000, α at the geometric middle of the theorem's range"

#: reproduced: traced beyond what any (1, 1/n²)-DP learner may be (Prop A.5's ceiling, the DP
#: regime the theorems sit outside); qualitatively: beyond twice the false-positive level
_RECALL_RULE = claims.rule(
    reproduced=claims.ci_above(CEILING), qualitatively=claims.ci_above(2 * XI)
)


def _recall(p: int, source: str, law: str, old_worst: str) -> Spec:
    return Spec(
        f"recall-p{p}",
        f"p = {p}: with α in the theorem's range, every α-learner of our family is traced on a "
        "constant fraction of its sample, more than any (1, 1/n²)-DP learner may be (e^ε ξ + δ).",
        notebook="02",
        source=source,
        paper=law,
        rule=_RECALL_RULE,
        expect="reproduced",
        seeds=(0,),
        size=f"{_P}; 24 instances; ξ = 0.05",
        rival="the (1, 1/n²)-DP learner on the same instances and tracer: the learner Prop A.5 "
        "forbids to be traced beyond e^ε ξ + δ, the nearest one the theorem should not cover "
        "(its privacy noise puts its excess risk above α); paired per instance",
        revised=(
            claims.revision(
                _DAY,
                old="reproduced if the smallest mean traced fraction of an α-learner ≥ 0.2; "
                "qualitatively if ≥ 2ξ; 8 instances",
                new="the 95% interval (over 24 instances) of that learner's traced fraction above "
                "Prop A.5's DP ceiling e^ε ξ + δ (reproduced) or above 2ξ (qualitatively)",
                known=f"{old_worst}; a smallest-of-means with no interval is not a verdict, and the "
                "DP claim already ran these 24 instances (one run now serves both)",
            ),
        ),
    )


CLAIMS = registry(
    "traceability",
    Spec(
        "l2-counterexample-fast-rate",
        "On the ℓ2 instance with a uniform prior (Θ = B₂(1), z ∈ {±1/√d}^d), ERM's excess risk "
        "decays like 1/n, so the instance cannot show Ω(1/α²) recall.",
        notebook="01",
        source="App. B.1",
        paper="excess risk O(1/n)",
        rule=claims.rule(
            reproduced=claims.within(-1.0, abs=0.1), qualitatively=claims.between(-1.3, -0.7)
        ),
        expect="reproduced",
        seeds=(0,),
        size="d = 500, n from 25 to 800, 20 instances per n",
        rival="noisy ERM (noise of norm 0.3 on z̄) on the same instances: the learner without "
        "ERM's consistency, whose excess risk stalls instead of falling like 1/n",
    ),
    Spec(
        "sparse-fingerprinting-identity",
        "For every learner, E Σᵢ ϕ_µ(θ̂, Zᵢ) = (2βd/k) E⟨µ, θ̂⟩ (the sparse fingerprinting lemma).",
        notebook="02",
        source="Lemma 4.2",
        paper="an identity, for every learner and every k",
        rule=claims.rule(reproduced=claims.at_most(4.0), qualitatively=claims.at_most(6.0)),
        expect="reproduced",
        seeds=(0,),
        size="n = 20, d = 200 (k = d, p = 2; k < d, p = 4); 4 learners; 1000 draws of (µ, S)",
        rival="the score centred at µ on every coordinate (the dense lemma's score) for ERM on "
        "the k < d instance: the lemma without its key ingredient, centring on the support",
    ),
    _recall(
        2,
        "Thm 2.5",
        "m = Ω(1/α²) for every α-learner",
        "with 8 instances the smallest was 0.228 ± 0.029 (noisy ERM, σ = 0.3), under one "
        "standard error from the old threshold 0.2",
    ),
    _recall(
        4,
        "Thm 2.7",
        "m = Ω(1/(6α)^p) for every α-learner",
        "with 8 instances the smallest was 0.863 ± 0.015 (ERM)",
    ),
    Spec(
        "recall-falls-with-accuracy",
        "Recall falls as excess risk grows: ERM (an α-learner) is traced on a larger fraction "
        "of its sample than the nearly trivial noisy ERM (σ = 3), by more than 2ξ.",
        notebook="02",
        source="ours",
        rule=claims.rule(reproduced=claims.ci_above(2 * XI), qualitatively=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=(0,),
        size=f"{_P}; 24 instances; the smaller of p = 2 and p = 4",
        rival="the same paired drop measured on the tracer's false-positive rate (fresh rows, "
        "same learners and thresholds): records the learners never saw, where accuracy should "
        "not move the score",
        revised=(
            claims.revision(
                _DAY,
                old="Spearman ρ(excess risk, traced fraction) over the family ≤ -0.9 (reproduced), "
                "≤ -0.5 (qualitatively); 8 instances",
                new="the paired 95% interval over 24 instances of traced(ERM) − traced(σ = 3), "
                "the smaller over p, above 2ξ (reproduced) or above 0 (qualitatively)",
                known="ρ = -0.96 at both p with 8 instances: one swap among the three "
                "near-trivial learners at p = 4 (traced 0.06-0.07, within noise of each other) "
                "would have made it -0.89, under the old threshold",
            ),
        ),
    ),
    Spec(
        "dp-ceiling",
        "An (ε, δ)-DP learner traced at soundness ξ has recall m ≤ n e^ε ξ + n δ.",
        notebook="02",
        source="Prop A.5",
        paper="m ≤ n e^ε ξ + n δ",
        rule=claims.rule(reproduced=claims.ci_below(CEILING)),
        expect="reproduced",
        seeds=(0,),
        size=f"{_P}; ε = 1, δ = 1/n²; 24 instances; ±3 SE band; the larger over p",
        rival="ERM, not private, on the same instances and tracer: the learner without the "
        "privacy noise, which Prop A.5 does not cap",
        revised=(
            claims.revision(
                _DAY,
                old="the DP learner over the recall curves' 8 instances",
                new="24 instances (a power calculation: 3 SE near 0.04 under the gap e^ε ξ − ξ)",
                known="with 8 instances the ±3 SE band reached past the ceiling; the change to "
                "24 was made then and not disclosed as a revision (issue 37's audit)",
            ),
        ),
    ),
    deviations={
        "prior-constant": "The paper fixes β only up to a constant: we take β = α^(−2) (k/d)^(1/p) "
        "/ 16, so that accuracy α is not trivial (the learner θ̂ = 0 has excess risk about 2α), "
        "as the proof requires.",
        "learner-family": "The theorems quantify over every α-learner; we measure a family (ERM, "
        "noisy ERM, the clipped mean, a Gaussian-mechanism DP learner, the constant), and take "
        "the unknown universal constants c = 1 in the score and in the theorems' ranges of α.",
        "one-instance-for-p-up-to-2": "For p ≤ 2 (k = d) the problems P_{d,p} coincide up to "
        "θ = d^(−1/p) u, so p = 2 stands for all p in (1, 2]; the p = 1 refinement (Thm 2.6) is "
        "not built.",
        "known-mean-tracer": "The tracer knows µ (as in the paper's proof, Sec. 5) and sets its "
        "threshold on fresh rows; notebook 1's ℓ2 tracer estimates the centre from reference "
        "rows instead.",
    },
)
