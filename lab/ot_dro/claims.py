"""The chapter's claims, registered before the notebooks measure them (lab.core.registry).

Statements, sources, rules, expected verdicts, seeds, sizes, each claim's nearest rival and the
disclosed revisions live here; the notebooks record (``C["id"].record(...)``), building the
values, rivals and diagnoses with :mod:`lab.ot_dro.evidence`.

Identities of our own kernels are code checks, not claims (the notebooks' assertion cells and
``tests/test_ot_dro.py``): the worst case is N times the semi-relaxed entropic plan for
``C - l/lam``; the implied radius ``rho(lam)`` decreases; the two ``eps`` limits; our Sinkhorn
agrees with POT's.

See: book/ot_dro/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_SEEDS = (0, 1, 2, 3, 4)  # lab.seeds(*range(5)): the paired seeds of notebook 2

CLAIMS = registry(
    "ot_dro",
    Spec(
        "sample-complexity",
        "The mini-batch objective is biased like 1/M in the inner batch size M: the nested "
        "expectation that the authors' MLMC sample-complexity rate is built for.",
        notebook="01",
        source="README (MLMC)",
        paper="O(ε^-4 log²(1/ε)) samples for an ε-stationary point (MLMC estimator)",
        rule=claims.rule(qualitatively=claims.within(-1.0, abs=0.15)),
        expect="not reproduced",
        seeds=(0,),
        size="2-D toy, 40 training points, pool of 10,000 candidates; M = 16..512, 400 draws each",
        rival="the same objective at ε = 1 instead of 0.1 (the neighbouring regime: a smoother "
        "inner log-mean-exp, where the 1/M asymptotics of a log of a sample mean sets in at "
        "smaller M), on the same pool, batch sizes and draws",
    ),
    Spec(
        "calibration-own-copy",
        "After calibration a point's own augmentation is cheap: its semantic cost is a small "
        "fraction of the mean same-class cost.",
        notebook="02",
        source="README (calibrated cost)",
        paper="moving an image to its recoloured copy is cheap",
        rule=claims.rule(reproduced=claims.at_most(0.1), qualitatively=claims.at_most(0.5)),
        expect="reproduced",
        seeds=(0,),
        size="150 phase-1 steps (batch 128 of 2,000); costs of 256 fresh points",
        rival="the squared-Euclidean input cost of Euclidean Sinkhorn DRO (the prior art whose "
        "cost AdaDRO replaces) and the same semantic cost before calibration (the method "
        "without its key ingredient), on the same points and augmentations",
        revised=(
            claims.revision(
                "2026-12-03",
                old="the feature term alone (alpha_y = 0)",
                new="the paper's cost of eq. (1) (alpha_x = alpha_y = 1); rule unchanged",
                known="the feature-term ratio had been measured (reproduced); the label term is "
                "0 on a point's own copy, so the change cannot move the ratio's numerator",
            ),
        ),
    ),
    Spec(
        "calibration-blocks",
        "Calibration gives the semantic cost (eq. 1, feature and label terms) a class block "
        "structure: the ratio of other-class to same-class cost grows (measured: ratio after "
        "minus ratio before, paired over seeds).",
        notebook="02",
        source="README (calibrated cost)",
        paper="moving a cat to a dog is expensive",
        rule=claims.rule(reproduced=claims.ci_above(0.5), qualitatively=claims.ci_above(0.0)),
        expect="not reproduced",
        seeds=_SEEDS,
        size="150 phase-1 steps (batch 128 of 2,000); costs of 256 fresh points; 5 seeds",
        rival="the feature term alone (alpha_y = 0): the cost without the label embedding, "
        "calibrated by the same runs, paired seed by seed",
        revised=(
            claims.revision(
                "2026-12-03",
                old="the feature term alone (alpha_y = 0); expected not reproduced",
                new="the paper's cost of eq. (1) (alpha_x = alpha_y = 1); expected reproduced "
                "qualitatively; the feature term alone became the rival",
                known="the feature-term growth had been measured (not reproduced, -0.03)",
            ),
            claims.revision(
                "2026-12-06",
                old="one training seed (0); a point rule: reproduced if >= 0.5, qualitatively "
                "if >= 0.1; expected reproduced qualitatively",
                new="5 seeds (lab.seeds(0..4)), the paired interval of (after - before): "
                "reproduced if above 0.5, qualitatively if above 0 (the house's tiers: the "
                "same evidence, different magnitude); expected not reproduced",
                known="seed 0 gave +0.20 (qualitatively); a check of the seed-shift before this "
                "change gave -0.11 (seed 1000), +0.11 (1001) and -0.07 (2000): one seed's "
                "verdict flipped with the seed",
            ),
        ),
    ),
    Spec(
        "shift-robust",
        "AdaDRO is robust to a spurious-feature shift beyond what its augmentation gives: its "
        "shifted-test accuracy is above that of ERM trained on the same augmented data ν "
        "(paired over seeds; our toy, the paper's benchmarks were not run).",
        notebook="02",
        source="abstract",
        paper="state-of-the-art robustness across distribution shifts; the spec's toy run: "
        "AdaDRO 0.77, ERM 0.52, ERM on ν 0.85",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="not reproduced",
        seeds=_SEEDS,
        size="300 Adam steps (batch 128 of 2,000), 100 phase-1 steps; test of 2,000 points",
        rival="Euclidean Sinkhorn DRO on ν (the prior art AdaDRO improves on: the same worst "
        "case with the squared input distance as cost, no calibration, no filter), against "
        "ERM on ν on the same seeds; paired with AdaDRO seed by seed",
        revised=(
            claims.revision(
                "2026-12-03",
                old="AdaDRO minus ERM on the clean data P, mean of 2 seeds, at least 0.15 "
                "(qualitatively); expected reproduced qualitatively",
                new="AdaDRO minus ERM on the augmented ν, paired over 5 seeds, 95% interval "
                "above 0; expected not reproduced",
                known="2 seeds: AdaDRO well above ERM on P, and ERM on ν within 0.02 of AdaDRO "
                "or ahead (then recorded as a claim of its own, reproduced)",
            ),
        ),
    ),
    Spec(
        "filter-drops-corrupt",
        "The trained filter drops corrupt candidates: over the last five logged steps, clean "
        "candidates are kept at a clearly higher rate than corrupt ones.",
        notebook="02",
        source="README eq. (7)",
        paper="the filter removes candidates that no longer mean the same thing",
        rule=claims.rule(reproduced=claims.at_least(0.3), qualitatively=claims.at_least(0.1)),
        expect="not reproduced",
        seeds=(0,),
        size="300 Adam steps, 30% corrupt candidates, keep-rates logged every 10 steps",
        rival="the official trainer's unpaired filter (utils/filtering_o1.py, our "
        "rule='unpaired') in the same run: the other published rule for the same job",
    ),
    Spec(
        "filter-robust",
        "With 30% corrupt candidates, filtered AdaDRO stays as accurate as ERM on ν (within 0.02).",
        notebook="02",
        source="abstract (feedback)",
        paper="filtering makes the uncertainty set robust to harmful augmentations",
        rule=claims.rule(reproduced=claims.at_least(-0.02), qualitatively=claims.at_least(-0.1)),
        expect="not reproduced",
        seeds=(0,),
        size="300 Adam steps, 30% corrupt candidates; test of 2,000 points",
        rival="AdaDRO without the filter (the method without the ingredient the claim is "
        "about), against the same ERM on ν",
    ),
    deviations={
        "toy-task": "The shift experiments run on a synthetic spurious-feature toy (8 "
        "coordinates, an MLP 8-32-16, in-batch InfoNCE), not on the paper's Colored MNIST, "
        "CIFAR-10/100 and Waterbirds benchmarks with a ResNet-18 and a MoCo queue.",
        "no-mlmc": "The MLMC gradient estimator is not implemented: the sample-complexity "
        "statement is probed only through the O(1/M) bias of the mini-batch objective.",
        "detached-cost": "The cost is detached from the DRO gradient and Q held fixed (the "
        "Sinkhorn-DRO gradient sum_j Q_j grad l_j); the official loss back-propagates through Q.",
        "paired-filter": "Our default filter is the README's paired rule on the semi-relaxed "
        "plan (eq. 7); the official trainer filters with the unpaired rule.",
        "in-batch-calibration": "Phase 1 runs 100 steps of in-batch InfoNCE + cross-entropy "
        "instead of the code's 10-50 epochs of MoCo.",
    },
)
