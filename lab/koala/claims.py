"""The koala chapter's claims, registered before the notebooks measure them.

The paper's result tables and equation numbers were not read (the chapter was written from the
authors' code, README and poster and the abstract; see the package docstring), so sources cite
the abstract, the method and "ours". Two statements that the last release recorded as claims
hold by construction and are code checks now: ``one-dimension-exact`` (in one dimension the
closure is exact, so KOALA++ is the EKF: notebook 1's check cell and
tests/test_koala.py's 1-D tests) and ``state-memory`` (KoalaPP keeps two parameter-sized
vectors per tensor, as Adam: tests/test_koala_optim.py
``test_state_floats_counts_two_buffers_per_weight_like_adam``).

See: book/koala/index.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
_SEEDS = tuple(range(64))  # notebook 2's SEEDS (lab.seeds: the seed shift applies)
_PSD_SEEDS = tuple(range(32))  # notebook 1's PSD_SEEDS (lab.seeds)
_DIGITS = "scikit-learn digits, 64-64-10 tanh MLP (4.8k weights), 10 epochs, batch 64"


def below(m: dict, key: str, x: float) -> float:
    """How far the interval ``m[key]`` ends below ``x``, in its standard errors (< 0: above)."""
    return (x - m[key]["hi"]) / m[key]["se"]


_DROP_RULE = claims.rule(
    reproduced=claims.Condition(
        "KOALA++'s ratio below 0.8, and below SGD-momentum's and Adam's (95% intervals)",
        lambda m: m["koalapp"]["hi"] < 0.8 and max(m["vs sgd"]["hi"], m["vs adam"]["hi"]) < 0,
        distance=lambda m: (
            min(below(m, "koalapp", 0.8), below(m, "vs sgd", 0), below(m, "vs adam", 0)),
            "se",
        ),
    ),
    qualitatively=claims.Condition(
        "KOALA++'s ratio below 1 (95% interval)",
        lambda m: m["koalapp"]["hi"] < 1,
        distance=lambda m: (below(m, "koalapp", 1.0), "se"),
    ),
)

CLAIMS = registry(
    "koala",
    Spec(
        "tracks-ekf",
        "KOALA++ stays close to the full-covariance EKF on a κ = 100 quadratic at n = 10 and 50.",
        notebook="01",
        source="ours",
        rule=claims.rule(reproduced=claims.at_most(0.1), qualitatively=claims.at_most(0.3)),
        expect="reproduced",
        seeds=(0,),
        size="noise-free quadratics, κ = 100, n = 10 and 50, 60 steps; the largest distance / "
        "‖θ₀‖ at steps 5, 20, 60 over both closures",
        rival="KOALA-V (the scalar covariance σI the paper improves on), the same problems, "
        "settings and steps: the filter KOALA++ replaces, under the same distance",
    ),
    Spec(
        "directional-covariance",
        "KOALA++ keeps the directional information of the covariance that KOALA-V's σI "
        "discards: its preconditioned gradient points closer to the EKF's than KOALA-V's does.",
        notebook="01",
        source="abstract",
        paper="KOALA-V's scalar covariance loses the directional structure; KOALA++ keeps it",
        rule=claims.rule(
            reproduced=claims.at_most(0.8), qualitatively=claims.at_most(1.0, deterministic=True)
        ),
        expect="not reproduced",
        seeds=(0,),
        size="noise-free quadratics, κ = 100, n = 10 and 50, 60 steps, the EKF's gradients "
        "replayed; mean angle of KOALA++ over mean angle of KOALA-V, the worse n",
        rival="KOALA++ with the vanilla closure (β_k = 0, no symmetry term): the method without "
        "the ingredient that is meant to carry the direction, the same replayed gradients",
    ),
    Spec(
        "closure-not-psd",
        "The least-squares closure is not positive semidefinite in general: S_k can turn negative.",
        notebook="01",
        source="conclusion (future work)",
        paper="enforcing PSD is left to future work",
        rule=claims.rule(reproduced=claims.holds("S_k ≤ 0 within 40 steps at σ0 = 1, Q = 1e-3")),
        expect="reproduced",
        seeds=_PSD_SEEDS,
        size="noisy quadratics, n = 10, κ = 100, σ₀ = 1, Q = 10⁻³, R = 0.5, up to 40 steps, "
        "32 problems (one per seed): the statement is existential, so one problem where "
        "S_k ≤ 0 suffices",
        rival="the full-covariance EKF with the same settings and gradients: the exact filter "
        "the closure approximates, whose P stays positive definite",
        revised=(
            claims.revision(
                _DATE,
                old="one problem, seed 0 (not drawn through lab.seeds, so the seed shift did not "
                "move it)",
                new="32 problems, seeds 0-31 through lab.seeds (the seed shift applies); the "
                "same rule, read on any of them",
                known="seed 0: S_k ≤ 0 at step 21; seed 1000 (the shifted instance): none "
                "within 40 steps, so the one-problem claim flipped under the shift; seeds "
                "1000-1007: 2 of 8; over 32 problems: 9 (seeds 0-31), 4 (1000-1031), 8 "
                "(2000-2031) and 8 (3000-3031) with S_k ≤ 0; the EKF's S_k stays above 0.5 on "
                "every one",
            ),
        ),
    ),
    Spec(
        "trains-on-par",
        "On digits KOALA++ trains a network to the accuracy of the first-order baselines "
        "(SGD-momentum, Adam): a sanity check at our size.",
        notebook="02",
        source="ours",
        rule=claims.rule(reproduced=claims.ci_above(-0.02), qualitatively=claims.ci_above(-0.05)),
        expect="reproduced",
        seeds=_SEEDS,
        size=f"{_DIGITS}; 64 seeds paired, KOALA++ minus the better (in mean) of SGD and Adam",
        rival="plain SGD (no momentum, lr 0.1) under the same rule and seeds: the weakest "
        "first-order method, to show what the rule lets through",
        revised=(
            claims.revision(
                _DATE,
                old="5 seeds (0-4), one run at a time",
                new="64 seeds (SEEDS, registered: the seed shift applies), trained in one batch",
                known="5 seeds: -0.0040 [-0.0076, -0.0004], 9.5 SE above -0.02 (seeds 0-4), "
                "-0.0040 [-0.0131, +0.0050], 2.1 SE (1000-1004), where the plain-SGD control "
                "fell to qualitatively (-0.018 [-0.026, -0.009]); 64 seeds: 19.0 and 14.7 SE "
                "(0-63, 1000-1063); Intel AVX-512 machine",
            ),
        ),
    ),
    Spec(
        "beats-koalav",
        "KOALA++ is more accurate than KOALA-V, the scalar-covariance filter it improves on.",
        notebook="02",
        source="Table 1",
        paper="KOALA++ above KOALA-V on every CIFAR-10 model (values not read)",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=_SEEDS,
        size=f"{_DIGITS}; 64 seeds paired, the authors' settings for both",
        rival="KOALA++ with the vanilla closure (no symmetry term) against KOALA-V, the same "
        "rule and seeds: the method without its key ingredient",
        revised=(
            claims.revision(
                _DATE,
                old="the paired interval over 5 seeds (0-4), expected not reproduced",
                new="the same rule over 64 seeds (SEEDS, registered: the seed shift applies), "
                "trained in one batch; expected reproduced, which the 64 seeds decide (the "
                "paper's Table 1 values were not read, so no effect size of its own could be "
                "registered in place of 0); control: KOALA++ against the better first-order "
                "baseline, this rule",
                known="5 seeds: +0.0031 [-0.0038, +0.0101], not reproduced, 1.53 SE from 0; 48 "
                "seeds one at a time: +0.0038 [+0.0024, +0.0052] (seeds 0-47) and +0.0052 "
                "[+0.0040, +0.0064] (1000-1047), 3.6 and 6.5 SE above 0; 64 seeds batched: "
                "4.1, 6.6 and 5.1 SE above 0 (seeds 0-63, 1000-1063, 2000-2063); Intel "
                "AVX-512 machine",
            ),
        ),
    ),
    Spec(
        "step-shrinks-fixed-r",
        "With a fixed measurement noise R, the Kalman step shrinks as the loss falls "
        "(K ∝ L_k/S_k).",
        notebook="02",
        source="method (Kalman gain)",
        paper="the step adapts to the loss level, ∝ L_k/S_k",
        rule=claims.rule(reproduced=claims.at_most(0.5)),
        expect="reproduced",
        seeds=(0,),
        size=f"{_DIGITS}; seed 0, R = 1; first-layer effective step, last epoch over first",
        rival="the same run with the authors' online R (EMA of the mean squared per-sample "
        "loss): the one change that the statement says matters",
    ),
    Spec(
        "step-grows-ema-r",
        "With the authors' online R (EMA of the mean squared per-sample loss), the Kalman step "
        "grows during training: R ~ L² falls faster than L.",
        notebook="02",
        source="ours",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=_SEEDS,
        size=f"{_DIGITS}; 64 seeds; log first-layer step, last epoch minus first",
        rival="KOALA++ with a fixed R = 1 on the same 64 seeds: the same filter without the "
        "online noise estimate the statement credits",
        revised=(
            claims.revision(
                _DATE,
                old="the paired interval over 5 seeds (0-4)",
                new="the same rule over 64 seeds (SEEDS, registered: the seed shift applies), "
                "trained in one batch",
                known="5 seeds: +0.344 [+0.072, +0.616], 0.73 SE above 0 (one seed of the five "
                "grew far less); 48 seeds: +0.363 [+0.324, +0.402] (seeds 0-47) and +0.335 "
                "[+0.304, +0.366] (1000-1047); Intel AVX-512 machine",
            ),
        ),
    ),
    Spec(
        "step-cost",
        "KOALA++'s optimizer step costs about as much as a first-order step (at most 2× "
        "Adam's work and memory traffic on large layers): second-order accuracy at "
        "first-order cost.",
        notebook="02",
        source="abstract; Table 2",
        paper="near first-order time per epoch (values not read)",
        rule=claims.rule(
            reproduced=claims.at_most(2.0, deterministic=True),
            qualitatively=claims.at_most(5.0, deterministic=True),
        ),
        expect="reproduced qualitatively",
        size="the 1.9M-weight MLP 784-1024-1024-10; aten ops counted on the meta device",
        rival="the full-covariance EKF step (a dense P per tensor) on the same model, counted "
        "the same way: the second-order filter whose accuracy KOALA++ claims at lower cost",
        revised=(
            claims.revision(
                _DATE,
                old="the wall-time ratio of the KOALA++ step over the faster Adam step",
                new="the larger of KOALA++'s counted work and bytes per step over Adam's (the "
                "same thresholds)",
                known="wall-time ratios 1.53×, 1.86×, 2.67× (under load) and 0.78× (an emulated "
                "numerics mode) on one machine, and a rough estimate of the counts (about 2.9× "
                "work, 1.6× bytes) before 'the larger of the two' was fixed",
            ),
        ),
    ),
    Spec(
        "lr-drop-response",
        "KOALA++ responds strongly to a learning-rate drop: the largest immediate fall in loss.",
        notebook="02",
        source="Fig. 1",
        paper="largest drop in validation error at each step decay (CIFAR-100, ResNet-50)",
        rule=_DROP_RULE,
        expect="not reproduced",
        seeds=_SEEDS[:5],
        size=f"{_DIGITS}; ten-fold drop at epoch 6; 5 seeds, each paired with its "
        "constant-rate run",
        rival="SGD-momentum in KOALA++'s place (its ratio, and it against KOALA++ and Adam), "
        "the same seeds and drop: the optimizer the paper's Fig. 1 shows responding less",
        revised=(
            claims.revision(
                _DATE,
                old="one run (seed 0): KOALA++'s ratio ≤ 0.8 and below SGD-momentum's and "
                "Adam's; qualitatively < 1 (custom conditions without a distance)",
                new="the same thresholds on 95% intervals over DROP_SEEDS (5 registered seeds, "
                "each paired with its constant-rate run), with their distances in standard "
                "errors",
                known="seed 0: KOALA++ ×1.21, SGD-momentum ×1.38, Adam ×1.19, not reproduced, "
                "no margin; 10 seeds: KOALA++ ×1.18 (0-9) and ×1.14 (1000-1009), every seed "
                "above 1; Intel AVX-512 machine",
            ),
        ),
    ),
    deviations={
        "digits-for-cifar": "Notebook 2 trains a 4.8k-weight MLP on scikit-learn's digits "
        "for 10 epochs on a CPU in place of the paper's CIFAR-10/100, ImageNet-32 and "
        "WikiText-2 models (hundreds of GPU hours); learning-rate drops come while every "
        "optimizer is still improving, not at a plateau.",
        "positivity": "Where S_k ≤ 0 (the closure lost positive definiteness) our kernels raise "
        "FloatingPointError instead of stepping uphill as the authors' code does.",
        "koalav-update": "KOALA-V's covariance update is the scalar EKF update "
        "σ ← σ − σ² max_l ‖H_l‖²/S_l; the authors' VanillaKOALA squares ‖H_l‖² a second time "
        "(the first step agrees, later ones do not).",
    },
)
