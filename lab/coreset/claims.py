"""The coreset chapter's claims, registered before the notebooks measure them.

Sources cite the paper as the chapter read it (the abstract, a summary of the definitions,
theorem statements and tables, and the official code): Definition 3.1 (stability), Theorem
3.2 (Hessian and Newton-step alignment), Tables 1-2 (accuracy under label noise, the
perturbation ablation). Three statements that earlier releases recorded as claims hold by
construction and are code checks now (the notebooks' check cells and tests/test_coreset.py):
``greedy-approximation`` (greedy facility location within 1 − 1/e of the optimum on small pools:
on those pools even the worst subset meets the bound, so the record tested nothing),
``fast-path-agrees`` (the torch fast path picks the reference's indices and weights) and
``concatenation-identity`` (‖G_i − G_j‖²/K equals the mean of the K per-draw squared
distances, an identity checked to round-off).

See: book/coreset/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
#: the old "qualitatively" tier asked less evidence than "reproduced" (disclosed in v0.1.0)
_TIERS = claims.revision(
    _DATE,
    old="reproduced: 95% interval beyond 0; qualitatively: mean more than one SE beyond 0",
    new="every tier needs the 95% interval: beyond the paper's margin (reproduced, where "
    "the paper gives one), beyond 0 (qualitatively)",
    known="this build's values, and three numerics modes of an AVX-512 machine that gave "
    "noisy-accuracy and sigma-sensitivity two and three verdicts; the one-SE tier passes a "
    "null effect 21-42% of the time",
)
_K1 = (
    "one posterior draw (K = 1, the same σ) in place of the K-draw average, on the same pools "
    "and selections' seeds: the method without its key ingredient (the averaging), so noise "
    "alone cannot pass for the mechanism; paired per pool (one draw minus K draws)"
)
_LR_SIZE = (
    "digits logistic regression, 40% noise, pools of 300, B = 30 (3 per class), K = 8, σ = 0.2"
)
_MLP_SIZE = "digits 64-128(BN)-10 MLP, 50% noise, 200 SGD steps on coresets of 30 from pools of 130"


def below(margin: float | None = None) -> claims.Rule:
    """Paired rule for "the method's error is smaller": every tier needs the 95% interval."""
    if margin is None:
        return claims.rule(reproduced=claims.ci_below(0.0))
    return claims.rule(reproduced=claims.ci_below(-margin), qualitatively=claims.ci_below(0.0))


def above(margin: float | None = None) -> claims.Rule:
    """Paired rule for "the method's accuracy is higher" (see ``below``)."""
    if margin is None:
        return claims.rule(reproduced=claims.ci_above(0.0))
    return claims.rule(reproduced=claims.ci_above(margin), qualitatively=claims.ci_above(0.0))


_NB1 = (
    Spec(
        "noisy-budget",
        "Under label noise, gradient matching spends part of its budget on mislabeled points.",
        notebook="01",
        source="Sec. 1",
        paper="mislabeled examples take coreset slots",
        rule=claims.rule(reproduced=claims.ci_above(0.5), qualitatively=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=tuple(range(24)),
        size="2-D toy, 3 blobs of 100, 30% noise, B = 15; 24 draws (blobs, noise, selection)",
        rival="the uniform coreset of the same size on the same draws, the selector without "
        "gradient matching: its medoids should hold the pool's share (ratio − 1 near 0); "
        "paired per draw (CRAIG's ratio minus uniform's)",
        revised=(
            claims.revision(
                _DATE,
                old="6 toy draws",
                new="12 toy draws (the rule unchanged)",
                known="6 draws gave ratio − 1 = +1.23 ± 0.18 (SE), the interval's end 1.5 SE "
                "from the reproduced boundary 0.5: a fragile verdict",
            ),
            claims.revision(
                _DATE,
                old="12 toy draws; control: the posterior medoids (the paper's selection)",
                new="24 toy draws (the rule unchanged); control: the uniform coreset, paired",
                known="12 draws gave +1.07 ± 0.12, the interval's end 2.4 SE from 0.5 (under "
                "the 2.5 SE the chapter keeps); 24 draws +1.00 ± 0.08 (3.9 SE); the posterior "
                "medoids measured +0.67 ± 0.08 at 12 draws and +0.69 ± 0.06 at 24, their "
                "interval's end within 1.4 SE of 0.5 both times (a control whose verdict a "
                "seed set decides); the uniform coreset −0.01 ± 0.11",
            ),
        ),
    ),
)

_NB2 = (
    Spec(
        "hessian-alignment",
        "Posterior selection aligns the coreset Hessian with the full Hessian better than CRAIG.",
        notebook="02",
        source="Thm 3.2",
        paper="‖H_S − H‖ = O(ε^1/2)",
        rule=below(),
        expect="reproduced",
        seeds=(0,),
        size=_LR_SIZE + "; 48 pools (Hessian errors only), the first 6 the study's",
        rival="the uniform coreset (Random, the strongest baseline of the paper's tables) on "
        "the same pools, paired per pool (Random's error minus posterior's). One posterior draw "
        "(K = 1, the method without its averaging) is the nearer rival but also lowers the "
        "Hessian error at this size on some seed sets and not on others (its interval's end "
        "within 0.3 SE of 0 over 24 pools): a control whose verdict the seed set decides; "
        "notebook 2 prints it beside the study",
        revised=(
            _TIERS,
            claims.revision(
                _DATE,
                old="the study's 6 pools (20 at FULL)",
                new="48 pools scored on the Hessian error alone (96 at FULL), the first 6 the "
                "study's; the rule unchanged; the control: the uniform coreset on the same pools",
                known="6 pools gave −0.0147 ± 0.0032 natively (2.1 SE beyond 0) and ended 0.1 "
                "SE from 0 under the seed shift; 24 pools −0.0204 ± 0.0029 natively (5.0 SE) "
                "and −0.0156 ± 0.0035 under the seed shift (2.4 SE, under the 2.5 SE the "
                "chapter keeps), one posterior draw −0.0092 ± 0.0039 and −0.0000 ± 0.0047: "
                "a rival whose verdict the seed set decides, so it left the card",
            ),
        ),
    ),
    Spec(
        "gradient-alignment",
        "Posterior selection lowers the posterior-averaged gradient error below CRAIG's.",
        notebook="02",
        source="Def. 3.1",
        paper="(σ, ε, w̄)-stable subsets",
        rule=below(),
        expect="reproduced",
        seeds=(0,),
        size=_LR_SIZE + "; 64 pools (gradient errors only), the first 6 the study's",
        rival=_K1,
        revised=(
            _TIERS,
            claims.revision(
                _DATE,
                old="the study's 6 pools (20 at FULL)",
                new="64 pools (128 at FULL) of the same study without the Hessians, its first 6 "
                "the study's; the rule unchanged; the control (one posterior draw) on the same "
                "pools",
                known="6 pools gave −0.0016 ± 0.0036 natively (not reproduced) and −0.0107 ± "
                "0.0031 under the seed shift (reproduced); 16 pools −0.0041 ± 0.0021 and "
                "−0.0086 ± 0.0021 (0.2 and 1.9 SE beyond 0); a run of 64 pools on both seed "
                "sets (Intel AVX-512) gave −0.0100 ± 0.0014 and −0.0112 ± 0.0013, one "
                "posterior draw +0.0018 ± 0.0020 and +0.0031 ± 0.0016",
            ),
        ),
    ),
    Spec(
        "newton-alignment",
        "Newton steps of the posterior coreset agree better with the full Newton step than "
        "CRAIG's (both compared inside the range of the coreset Hessian).",
        notebook="02",
        source="Thm 3.2",
        paper="‖H_S'⁻¹∇ℓ_S' − H_S⁻¹∇ℓ_S‖ ≤ O(ε^1/2)",
        rule=below(),
        expect="not reproduced",
        seeds=(0,),
        size=_LR_SIZE + "; the study's 6 pools",
        no_rival="at this size the Newton errors are dominated by the smallest retained "
        "eigenvalues of the coreset Hessian and scatter by several units from pool to pool for "
        "every selector: one posterior draw (K = 1), the nearest rival, measured +0.35 ± 0.78 "
        "for the method and a K = 1 interval ending 0.2 SE from 0, a verdict the pools decide",
        revised=(
            _TIERS,
            claims.revision(
                _DATE,
                old="no control (the notebook declared none)",
                new="no_rival, with the reason",
                known="one posterior draw on the study's 6 pools: K = 1 − CRAIG interval "
                "[−2.53, −0.11], 0.2 SE from the boundary",
            ),
        ),
    ),
    Spec(
        "lr-noisy-share",
        "Gradient-matching coresets (CRAIG) hold a smaller weighted share of mislabeled "
        "examples than random ones (logistic regression).",
        notebook="02",
        source="ours",
        rule=below(),
        expect="reproduced",
        seeds=(0,),
        size=_LR_SIZE + "; 64 pools (the gradient study's), the first 6 the study's",
        no_rival="the statement is itself a paired comparison with the uniform coreset on the "
        "same pools, the selector without any gradient information; the other gradient "
        "selector (posterior) is the paper's, not a rival of CRAIG's noise share",
        revised=(
            _TIERS,
            claims.revision(
                _DATE,
                old="the study's 6 pools",
                new="the gradient study's 64 pools (their shares need no Hessian), the first "
                "6 the study's; the rule unchanged",
                known="6 pools gave −0.154 ± 0.031, the interval's end 2.4 SE from 0 (under "
                "the 2.5 SE the chapter keeps)",
            ),
        ),
    ),
    Spec(
        "bn-perturbation-best",
        "Perturbing only the normalisation (BatchNorm) layers gives better coresets under "
        "label noise than perturbing all layers or the final FC layer.",
        notebook="02",
        source="Table 2",
        paper="CIFAR-10, 50% noise: BN 0.7318 > all 0.7288 > FC 0.7232",
        rule=above(0.7318 - 0.7288),
        expect="not reproduced",
        seeds=(0, 1, 2),
        size=_MLP_SIZE + "; σ = 0.01, K = 4; 3 seeds",
        paper_margin=0.7318 - 0.7288,
        paper_margin_source="Table 2 (CIFAR-10, 50% noise: BN only 0.7318 − all layers 0.7288)",
        rival="CRAIG's coresets (no posterior noise anywhere, σ = 0) on the same seeds: the "
        "method without its key ingredient; measured as CRAIG minus the better of the other "
        "two blocks, paired per seed against BN only",
        revised=(_TIERS,),
    ),
    Spec(
        "sigma-sensitivity",
        "The accuracy of BN-perturbed posterior coresets depends on σ over the paper's grid "
        "{0.1, 0.01, 0.001}.",
        notebook="02",
        source="Sec. 4 (σ by validation)",
        paper="σ chosen by validation from {0.1, 0.01, 0.001}",
        rule=claims.rule(reproduced=claims.ci_outside(-0.01, 0.01)),
        expect="not reproduced",
        seeds=tuple(range(12)),
        size=_MLP_SIZE + "; BN only, K = 4; 12 seeds",
        paper_margin=0.01,
        paper_margin_source="one point of accuracy, the size of Table 2's gaps (0.3-0.9 points)",
        rival="a tenfold step at the small end of the grid (σ = 0.01 against 0.001) on the "
        "same seeds: the neighbouring regime where the noise barely moves the selection",
        revised=(
            claims.revision(
                _DATE,
                old="reproduced: the 95% interval of acc(σ=0.1) − acc(σ=0.001) excludes 0; "
                "qualitatively: |mean| more than one SE; 3 seeds",
                new="reproduced: the 95% interval lies outside ±0.01 (one point); 6 seeds",
                known="3 seeds gave −0.005 ± 0.010 (native AVX-512), −0.010 ± 0.008 (AVX2 "
                "mode), +0.025 ± 0.006 (baseline mode): three verdicts",
            ),
            claims.revision(
                _DATE,
                old="6 seeds (10 at FULL); diagnosis noise-floor with the 0.01 margin",
                new="12 seeds (20 at FULL), the rule unchanged; diagnosis open",
                known="6 seeds gave −0.0014 ± 0.0050 natively, not reproduced 4.3 SE from the "
                "boundary natively and 4.1, 2.35 and 2.47 SE under the AVX2 mode, the baseline "
                "mode and the seed shift (under the 2.5 SE the chapter keeps); the noise floor "
                "was resolved (0.01 >= 2 SE), so it was no floor",
            ),
        ),
    ),
)

_NB3 = (
    Spec(
        "noisy-accuracy",
        "Under label noise, posterior coresets train to higher clean accuracy than CRAIG's.",
        notebook="03",
        source="Tables 1, 2",
        paper="higher accuracy than CRAIG/CREST under 10-50% noise (margins 0.008-0.096 at 50%)",
        rule=above(0.008),
        expect="not reproduced",
        seeds=(0, 1, 2),
        size=_MLP_SIZE + "; K = 4, σ = 0.05; 3 seeds",
        paper_margin=0.008,
        paper_margin_source="Table 1 (the smallest margin over CREST at 50% noise: "
        "TinyImageNet 0.3644 − 0.3567)",
        rival=_K1.replace(
            "pools and selections' seeds", "seeds (split, noise, initialisation)"
        ).replace("per pool", "per seed"),
        revised=(_TIERS,),
    ),
    Spec(
        "full-data-memorises",
        "With the same steps and mini-batch size, posterior coresets beat SGD on the full "
        "noisy data.",
        notebook="03",
        source="Sec. 5",
        paper="full-data training memorises noisy labels",
        rule=above(),
        expect="not reproduced",
        seeds=(0, 1, 2),
        size=_MLP_SIZE + "; K = 4, σ = 0.05; 3 seeds",
        rival="random mini-batches from class-balanced pools (plain SGD on pools, no selection) "
        "against the same full-data SGD: does any pool-based sampler beat full data, or the "
        "posterior selection; paired per seed (posterior minus random)",
        revised=(_TIERS,),
    ),
    Spec(
        "mlp-noisy-share",
        "CRAIG's mini-batch coresets hold a smaller weighted share of mislabeled examples than "
        "random mini-batches.",
        notebook="03",
        source="ours",
        rule=below(),
        expect="reproduced",
        seeds=(0, 1, 2),
        size=_MLP_SIZE + "; 3 seeds",
        no_rival="the statement is itself a paired comparison with random mini-batches on the "
        "same seeds, the selector without any gradient information",
    ),
)

CLAIMS = registry(
    "coreset",
    *_NB1,
    *_NB2,
    *_NB3,
    deviations={
        "objective": "the selection objective (facility location on concatenated posterior "
        "features) is reconstructed from the stability definition and the official code, "
        "not from the proofs",
        "digits": "sklearn's digits (logistic regression with exact Hessians; a 64-128(BN)-10 "
        "MLP) stand in for CIFAR, TinyImageNet, ImageNet and SNLI; CREST's dropping of "
        "learned examples is not implemented",
        "all-weights": "the logistic-regression study perturbs every weight (the model has no "
        "normalisation layer); the network path perturbs the BatchNorm affine parameters as "
        "the paper does",
        "similarity": "facility location uses CRAIG's similarity d_max − d (eq. 2); the "
        "official selection (submodlib) uses exp(−d / m); both are implemented and the "
        "official one reproduces the fixture's picks",
        "newton-range": "Newton steps are compared inside the range of the coreset Hessian "
        "(rank at most B (C − 1) < C (d + 1)); Theorem 3.2 assumes invertible Hessians",
    },
)
