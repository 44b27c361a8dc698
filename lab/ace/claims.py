"""The ace chapter's claims, registered before the notebooks measure them.

Sources cite the paper (Manolache et al., 2025: Algorithms 1-2, Theorems 4.1-4.2, Sec. 5 and
Fig. 2) as read through the chapter's spec; the paper's own tables were not read, so no claim
registers a paper margin. One statement that earlier releases recorded as a claim holds by the
construction of the model and is a code check now (notebook 1's check cell and
tests/test_ace.py): ``truncated-equivariant`` (the truncated model runs only the equivariant
branches, so its equivariance error is float round-off).

See: book/ace/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
_ORDER_RULE = claims.rule(
    reproduced=claims.within(1.0, abs=0.05), qualitatively=claims.between(0.8, 1.2)
)
_ORDER_SIZE = (
    "the undamped network of the homotopy claim; γ rescaled by 13 factors in [10⁻³, 1]; "
    "500 held-out test points (constants on the other 500); slope window γ̄ in [10⁻³, 0.1]"
)
_REMAINDER_RIVAL = (
    "the same {gap} with its first-order term s·∂f/∂s removed (a central difference on a "
    "float64 copy of the same network), on the same points, scales and window: a second-order "
    "quantity, the model the claim must not describe; a slope test that read it as first order "
    "would be empty"
)
_SWEEP_SIZE = "stored sweep: 600 Adam steps, width 16, ρ = 10, η_d = 0.05; N = 16…256; 2 seeds"

CLAIMS = registry(
    "ace",
    Spec(
        "gda-damping",
        "Plain gradient descent-ascent on an equality constraint oscillates; an augmented term "
        "c x^2 damps it and the iterates reach the KKT point.",
        notebook="01",
        source="Alg. 1",
        paper="GDA on the Lagrangian oscillates; the augmented term (a code option) damps it",
        rule=claims.rule(
            reproduced=claims.holds(
                "undamped (c = 0, η_d = 2) max |x| over the last 500 of 2000 steps > 0.5, and "
                "damped (c = 1, η_d = 0.05) within 1e-3 of the KKT point (0, 4)"
            )
        ),
        expect="reproduced",
        size="min (x − 2)² s.t. x = 0; η_p = 0.05; 2,000 steps (deterministic)",
        rival="GDA without the augmented term (c = 0, η_d = 2) read by the same test in the "
        "damped run's place: the method without its key ingredient",
    ),
    Spec(
        "homotopy-network",
        "On a network the multipliers drive every γ_i to zero (the homotopy), at the pace of the "
        "dual step.",
        notebook="01",
        source="Alg. 1",
        paper="γ → 0 under dual ascent on γ_i = 0",
        rule=claims.rule(reproduced=claims.at_most(0.05), qualitatively=claims.at_most(0.2)),
        expect="reproduced",
        seeds=(0,),
        size="SO(2) toy, N = 64, 3 layers, 400 steps (1,200 at FULL), η_d = 0.05; seed 0",
        rival="undamped ACE (Adam on γ, c = 0) on the same data, seed and steps: the method "
        "without the augmented term that damps the dual dynamics",
    ),
    Spec(
        "truncation-order",
        "The truncation cost ‖f_γ(x) − f_0(x)‖ is first order in γ̄ (log-log slope 1 for small γ̄).",
        notebook="01",
        source="Thm 4.1",
        paper="≤ [Σ_k (1+γ̄)^k] γ̄ B M^(L−1) ‖x‖: linear in γ̄",
        rule=_ORDER_RULE,
        expect="reproduced",
        seeds=(0,),
        size=_ORDER_SIZE,
        rival=_REMAINDER_RIVAL.format(gap="truncation gap"),
        revised=(
            claims.revision(
                _DATE,
                old="control: the same truncation gap fitted on the large-γ̄ window [0.1, γ̄]",
                new="control: the second-order remainder of the gap on the claim's own window",
                known="large-window slope 0.707 (the same gap, not a rival); the claim's "
                "slope 0.999 is unchanged",
            ),
        ),
    ),
    Spec(
        "violation-order",
        "The equivariance violation max_g ‖R f(x) − f(R x)‖ is first order in γ̄.",
        notebook="01",
        source="Thm 4.2",
        paper="≤ 2γ̄ (M + Cγ̄)^(L−1) L B² ‖x‖: linear in γ̄",
        rule=_ORDER_RULE,
        expect="reproduced",
        seeds=(0,),
        size=_ORDER_SIZE + "; 16 random rotations",
        rival=_REMAINDER_RIVAL.format(gap="violation"),
        revised=(
            claims.revision(
                _DATE,
                old="control: the same violation fitted on the large-γ̄ window [0.1, γ̄]",
                new="control: the second-order remainder of the violation on the claim's own "
                "window",
                known="large-window slope 0.668 (the same gap, not a rival); the claim's "
                "slope 0.997 is unchanged",
            ),
        ),
    ),
    Spec(
        "robustness",
        "ACE is more robust to input perturbations than the strictly equivariant model: its test "
        "error grows less under input noise.",
        notebook="02",
        source="Sec. 5",
        paper="ACE improves robustness to input perturbations over strictly equivariant models "
        "(no margin read: the paper's robustness tables were not available)",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="not reproduced",
        seeds=(0, 1, 2, 3, 4),
        size="stored long runs: ε = 0.5, N = 64, 600 steps; Gaussian input noise σ = 0.1, "
        "8 draws; 5 seeds",
        revised=(
            claims.revision(
                "2026-12-03",
                old="reproduced if the growth ratio resilient / strict of the live run (one "
                "seed) is at most 1",
                new="reproduced if the paired 95% interval of resilient − strict growth over 5 "
                "stored seeds lies below 0",
                known="changed in commit 9bdd64a, before release v0.1.0; the stored seeds' "
                "per-seed ratios 1.06, 0.97, 0.92, 1.05, 0.93 fall on both sides of 1",
            ),
        ),
        no_rival="the claim is itself the paired comparison with its nearest rival, the strictly "
        "equivariant model trained on the same data, seeds and steps (resilient − strict growth "
        "per seed); no other method was stored at these seeds, and a second control would "
        "re-read the same differences",
    ),
    Spec(
        "resilient-tracks",
        "On partly symmetric data resilient ACE tracks the better of the strict and the "
        "unconstrained model at every sample size.",
        notebook="02",
        source="Sec. 5",
        paper="resilient ACE matches or beats both extremes across N",
        rule=claims.rule(reproduced=claims.at_most(1.2), qualitatively=claims.at_most(1.5)),
        expect="not reproduced",
        seeds=(0, 1),
        size=_SWEEP_SIZE + "; ε = 0.5",
        rival="equality ACE (Algorithm 1, no slack) on the same sweep cells and seeds, read by "
        "the same ratio: the method without the resilient relaxation the claim credits",
    ),
    Spec(
        "slacks-locate",
        "The resilient slacks grow where the data breaks the symmetry.",
        notebook="02",
        source="Sec. 4",
        paper="u_i* = λ_i*/ρ shows which layers need to break the symmetry",
        rule=claims.rule(reproduced=claims.at_least(2.0), qualitatively=claims.at_least(1.1)),
        expect="qualitatively",
        seeds=(0, 1),
        size=_SWEEP_SIZE + "; N = 256, ε = 0 and 1",
        rival="the unconstrained model's largest |γ_i| on the same cells (ε = 1 over ε = 0, "
        "N = 256, same seeds): does a freely trained γ locate the symmetry breaking as well, "
        "without slacks?",
        revised=(
            claims.revision(
                _DATE,
                old="no rule: the first pass printed the slacks u_i at N = 256 for every ε",
                new="the rule ≥ 2 (reproduced), ≥ 1.1 (qualitatively), chosen in the second "
                "pass after those slacks had been printed",
                known="largest slack ε = 1 over ε = 0 at N = 256: 1.38 (two seeds), seen "
                "before the rule was written",
            ),
        ),
    ),
    Spec(
        "symmetric-beats-strict",
        "On fully symmetric data ACE (trained until γ ≈ 0, then truncated: exactly equivariant) "
        "beats the strict model trained as long.",
        notebook="02",
        source="Fig. 2",
        paper="ACE beats strictly equivariant SEGNN on N-body at every training-set size",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="not reproduced",
        seeds=(0, 1),
        size="stored long runs: ε = 0; N = 16…256; equality ACE until max |γ_i| < 0.01 "
        "(checked every 100 steps), the strict model as many steps; 2 seeds",
        revised=(
            claims.revision(
                "2026-12-03",
                old="reproduced if ACE's truncated MSE is below the strict model's at every N "
                "(qualitatively at half of them), the sweep's 600 steps",
                new="reproduced if the paired 95% interval of log strict − log truncated ACE "
                "over (N, seed) lies above 0, ACE trained until max |γ_i| < 0.01",
                known="changed in commit 9bdd64a, before release v0.1.0: at 600 steps |γ| was "
                "still near 0.1 and ACE won at 1 of 5 N",
            ),
        ),
        no_rival="the claim is itself the paired comparison with its nearest rival, the strict "
        "model trained as many steps on the same data and seeds (log strict − log truncated ACE "
        "per (N, seed)); a second control would re-read the same differences",
    ),
    deviations={
        "resilient-loop": "resilient mode follows the paper's form, ρ/2‖u‖² with dual ascent on "
        "|γ_i| − u_i; the authors' loop prices ρ‖u‖², also subtracts u_i(|γ_i| − u_i) in the "
        "primal loss and feeds each multiplier −(|γ_i| − 2u_i) (the parity fixture agrees on the "
        "first step only)",
        "toy-scale": "an SO(2) vector-field toy with a three-layer vector-neuron network replaces "
        "the paper's SEGNN/EGNO/SchNet benchmarks (they need e3nn, torch-geometric, a GPU and "
        "data sets not shipped)",
    },
)
