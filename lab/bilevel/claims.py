"""The bilevel chapter's claims, registered before the notebooks measure them.

Sources cite the paper's full text (Chen, Li & So, NeurIPS 2025): Definition 3 (set
smoothness, eqs. 4-5), Theorems 1-4, Remark 4 and Example 3 (eq. 7), Algorithm 1 (IZOM).
Three statements that earlier releases recorded as claims hold by the construction of the
chapter's toys and are code checks now (notebook 1's check cell and tests/test_bilevel.py):
``toy-p-weakly-convex`` (Toy P is a convex function plus a known quadratic),
``toy-o-not-weakly-convex`` (a concave kink has no weak-convexity modulus) and
``curvature-drives-nonconvexity`` (``|x| + s sin x`` has modulus ``s`` on ``[-2, 2]``).

See: book/bilevel/reproduction.md
"""

from __future__ import annotations

import math

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
#: Theorem 1's bound on the curved instance: L_Y = 1, M_g = sqrt(box^2 + s^2), L_g = box
_RHO_CURVED = math.hypot(2.0, 2.0) * 1.0 + 2.0 * (1 + 1.0)

CLAIMS = registry(
    "bilevel",
    Spec(
        "izom-moreau",
        "IZOM reaches approximate Clarke stationarity of φ_p on Toy P: after T = 4000 steps the "
        "Moreau-envelope gradient at the last iterate is at most (m/T)^(1/4) on every seed.",
        notebook="01",
        source="Thm 4 (ii)",
        paper="E‖∇φ_p,γ(x̄)‖² = O(√m (Δ_p + 1)/√T) with η = Θ(m^(−1/2) T^(−1/2)), "
        "ε = O(T^(−1/2)), w = O(m^(−3/4) T^(−3/4)), γ ∈ (0, 1/(ρ + 1))",
        rule=claims.rule(reproduced=claims.at_most((2 / 4000) ** 0.25)),
        expect="reproduced",
        seeds=(0, 1, 2),
        size="Toy P, m = 2, T = 4,000 steps, η = 0.5/√(mT), ε = 10⁻³, exact oracle, γ = 0.5; "
        "3 seeds (the largest norm is the value)",
        rival="the gradient-free method of Lin, Zheng & Jordan (2022) with its Goldstein radius "
        "fixed at 0.3: the same two-point estimator on the same problem and seeds, the "
        "Goldstein-stationarity prior art that the paper's Clarke guarantee improves on",
        revised=(
            claims.revision(
                _DATE,
                old="seed 0 only: the Moreau-gradient norm at its last iterate",
                new="seeds 0, 1, 2: the largest of the three norms, the Goldstein rival paired "
                "over the same seeds",
                known="seed 0 measured 0.0341 against the bound 0.149 (this machine); seeds 1 "
                "and 2 had not been run",
            ),
        ),
    ),
    Spec(
        "baselines-miss-clarke",
        "Fixed-step finite-difference descent (assumes smoothness) and the gradient-free Goldstein "
        "method (radius 0.3) do not land on the Clarke point.",
        notebook="01",
        source="ours",
        paper="Clarke is stronger than Goldstein stationarity (Sec. 2, after Def. 2)",
        rule=claims.rule(reproduced=claims.holds("both stay more than 0.05 away")),
        expect="reproduced",
        seeds=(0,),
        size="Toy P from x0 = (1.5, −1.2): FD descent 300 steps (η = 0.2), gradient-free "
        "3,000 steps (η = 0.01)",
        rival="IZOM itself under the same test (is its last iterate more than 0.05 from x* = 0?): "
        "the method the two baselines are contrasted with, on the same start",
    ),
    Spec(
        "izom-rate",
        "The squared Moreau gradient at the random output decays like T^(−1/2) or faster.",
        notebook="01",
        source="Thm 4 (ii)",
        paper="E‖∇φ_p,γ(x̄)‖² = O(√m (Δ_p + 1)/√T)",
        rule=claims.rule(qualitatively=claims.at_most(-0.5)),
        expect="reproduced qualitatively",
        seeds=tuple(range(8)),
        size="Toy P, T ∈ {250, 1000, 4000}, η = 0.5/√(mT), ε = 10⁻³; 8 seeds",
        rival="the same protocol (horizons, seeds, steps, random output x_R) with the smoothing "
        "radius fixed at 0.3: the gradient-free Goldstein method of Lin, Zheng & Jordan (2022), "
        "whose target is Goldstein, not Clarke, stationarity",
    ),
    Spec(
        "optimistic-clarke-smooth",
        "Optimistic case on Toy O, whose minimiser is a smooth point: IZOM with ε = T^(−1/2) "
        "reaches (ϵ, δ = T^(−1/4))-Clarke stationarity of φ_o (so does finite-difference "
        "descent: this instance does not test Thm 4).",
        notebook="01",
        source="ours",
        paper="Thm 4 (i): E dist(0, ∪_{z∈B(x̄,δ)} ∂φ_o(z))² = O(√m (Δ_o + 1)/√T), δ = O(T^(−1/4))",
        rule=claims.rule(reproduced=claims.at_most((2 / 2000) ** 0.25)),
        expect="reproduced",
        seeds=(0,),
        size="Toy O, T = 2,000 steps, ε = T^(−1/2), certificate ball δ = T^(−1/4)",
        rival="finite-difference gradient descent with a fixed step, certified in the same ball: "
        "the smoothness-assuming method, which a smooth minimiser does not separate from IZOM",
        revised=(
            claims.revision(
                _DATE,
                old="smoothing radius = certificate ball = T^(−1/4) (a reconstruction)",
                new="smoothing radius ε = T^(−1/2), certificate ball δ = T^(−1/4), the two "
                "radii of Thm 4 (i)",
                known="certificate 1.8e-4 against the bound 0.178 with the old radius; the full "
                "text shows that ε and δ are different radii",
            ),
        ),
    ),
    Spec(
        "izom-leaves-concave-kink",
        "Weak concavity: a concave kink is not a minimiser, and IZOM started on the "
        "Clarke-stationary kink leaves it for the minimiser (within δ = T^(−1/4)).",
        notebook="01",
        source="ours",
        paper="Thm 3 (i): φ_o is ρ-weakly concave",
        rule=claims.rule(reproduced=claims.at_most(2000**-0.25)),
        expect="reproduced",
        seeds=(0,),
        size="Toy O, T = 2,000 steps from the kink point (0, x₂), ε = T^(−1/2)",
        no_rival="every method that reads function values or one-sided slopes (finite "
        "differences, IZOM, Goldstein) leaves a concave kink; only one handed the minimum-norm "
        "Clarke subgradient (0 there) would stay, and Sec. 4 of the paper notes that "
        "subgradients of hyper-objectives are not available",
        revised=(
            claims.revision(
                _DATE,
                old="smoothing radius T^(−1/4)",
                new="smoothing radius ε = T^(−1/2) (Thm 4)",
                known="distance 2.2e-4 against the bound 0.149 with the old radius",
            ),
        ),
    ),
    Spec(
        "curved-set-weak-convexity",
        "With a curved set-smooth S (L_S = 1 > 0), φ_p is ρ-weakly convex with "
        "ρ = M_g L_Y + L_g (1 + L_Y).",
        notebook="01",
        source="Thm 1",
        paper=f"ρ = M_g L_Y + L_g (1 + L_Y) = {_RHO_CURVED:.2f} here",
        rule=claims.rule(reproduced=claims.at_most(_RHO_CURVED)),
        expect="reproduced",
        size="φ_p = |x| + 2 sin x on |x| ≤ 2; 20,000 random segments",
        rival="a follower without set smoothness: the paper's Example 3 (a box-constrained lower "
        "level), whose sampled modulus on the smallest window is the same estimator's reading "
        "of a function the theorem excludes",
    ),
    Spec(
        "error-bound-set-smooth",
        "An error bound on the lower level (no strong convexity) implies set smoothness: the "
        "rotating-line solution map has finite constants (1 on |t| ≤ 1).",
        notebook="01",
        source="Thm 2",
        paper="(A3) ⇒ S is L_S-smooth, L_S = max{2H_f τ (1 + 9L_f² τ²), 4L_f² τ²}",
        rule=claims.rule(reproduced=claims.within(1.0, rel=0.05)),
        expect="reproduced",
        size="10,000 random triples (x₁, x₂, θ)",
        rival="a solution map without an error bound: a line that jumps at x = 0, estimated by "
        "the same triples",
    ),
    Spec(
        "lower-level-constraint-breaks",
        "Lower-level constraints can destroy weak convexity: on the paper's Example 3 the sampled "
        "modulus of φ_p grows like 1/width around its concave kink at x = 0.",
        notebook="01",
        source="Remark 4, Example 3 (eq. 7)",
        paper="φ_p has one-sided derivatives 0 and −1 at x = 0: no ρ makes φ_p + (ρ/2)x² convex",
        rule=claims.rule(reproduced=claims.within(-1.0, abs=0.1)),
        expect="reproduced",
        size="windows 10⁻¹, 10⁻², 10⁻³; 2,000 segments each",
        rival="a set-smooth kinked φ_p (Toy P, κ = 2) on the same shrinking windows: a convex "
        "kink, whose modulus stays bounded",
        revised=(
            claims.revision(
                _DATE,
                old="our clipped follower min_{y∈[−1,1]} ½(y − x)², F = y (kink at x = 1)",
                new="the paper's Example 3: min_{y∈[0,1]²} ‖y − (x, 2)‖², F = −1ᵀy (kink at x = 0)",
                known="exponent −1.000 on our instance; Example 3's kink has the same slope "
                "jump (1), so the same exponent was expected",
            ),
        ),
    ),
    Spec(
        "hyper-cleaning-nonunique-follower",
        "The theory covers followers with non-unique solutions, where implicit differentiation is "
        "undefined: IZOM cleans the labels of an interpolating follower (validation loss reduced).",
        notebook="02",
        source="ours",
        paper="no experiments in the paper (our application)",
        rule=claims.rule(reproduced=claims.at_least(100), qualitatively=claims.at_least(10)),
        expect="reproduced",
        seeds=(0,),
        size="20 training points, 40 features, 100 validation points, 30% corrupted; 3,000 steps",
        rival="IZOM on the min-norm selection x ↦ F(A⁺(y_tr + x)) (what gradient descent on the "
        "lower level returns), same instance, steps and seed: the follower without the "
        "optimistic selection",
    ),
    Spec(
        "optimistic-selection-matters",
        "The optimistic selection matters: the min-norm interpolant (what GD on the lower level "
        "returns) ends at a worse validation loss (ratio of final losses).",
        notebook="02",
        source="ours",
        paper="optimistic vs min-norm follower",
        rule=claims.rule(reproduced=claims.at_least(2)),
        expect="reproduced",
        seeds=(0,),
        size="as hyper-cleaning-nonunique-follower",
        rival="the same ratio before the leader moves (x = 0, no label corrected): the two "
        "selections of the same follower without the leader exploiting the follower's freedom",
    ),
    deviations={
        "median-over-seeds": "izom-rate reads the median over seeds of the squared Moreau "
        "gradient at the random output, not its expectation (Thm 4): a few seeds whose output "
        "index falls on an early iterate carry the mean; the mean's slope and its bootstrap "
        "standard error are recorded beside it",
        "chapter-constants": "Thm 4 fixes only orders (η = Θ(m^(−1/2) T^(−1/2)), ε = O(T^(−1/2)), "
        "w = O(m^(−3/4) T^(−3/4)), δ = O(T^(−1/4))); the constants here (η = 0.5/√(mT), ε = 10⁻³ "
        "on Toy P and T^(−1/2) on Toy O, δ = T^(−1/4)) are the chapter's, and every oracle is "
        "exact (w = 0)",
        "last-iterate": "izom-moreau reads the last iterate; Thm 4 certifies the random output "
        "x̄ (which izom-rate reads)",
        "sampled-clarke-ball": "the optimistic certificate samples the ball with "
        "finite-difference gradients, an upper bound on the distance of Def. 1 that cannot see "
        "kinks; the exact distance, kinks included, is computed for the toys only",
        "local-assumptions": "Toy P's double well makes F only locally Lipschitz and smooth (B1) "
        "and the rotating line's f only locally smooth (A1): constants are taken on bounded "
        "boxes, as Remark 3 allows for Thm 2",
    },
)
