"""The actor_critic chapter's claims, registered before any notebook measures them.

Each ``Spec`` holds a claim's statement, source, the paper's value, the verdict rule, the
expected verdict, the seeds and size it is measured at, and its nearest rival (what the control
is and why it is the nearest). The notebooks record: ``C = CLAIMS.chapter("01", full=FULL)``,
then ``C["sample-complexity"].record(**evidence.sample_complexity(study, size))`` where the
number is computed (:mod:`lab.actor_critic.evidence` builds the value, its text and the control).

The MDPs are ``random_mdp(6, 3, 0.9, seed)``: the exponent study's seeds are its 16 MDPs (each
MDP one seed of the interval; its runs draw their numbers from the same seed), notebook 2's are
the one MDP of seed 0 and its runs.

See: book/actor_critic/index.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_STUDY = "16 random MDPs (6 states, 3 actions, γ = 0.9) x 4 runs, k up to 20,000, fit on k ≥ 667"
_ONE_MDP = "random MDP of seed 0 (6 states, 3 actions, γ = 0.9)"
_STALE = (
    "the paper's actor with the spec's stale critic (β_k = (k+1)^-2/3, constant 1) on the same "
    "MDPs and random numbers: the method without its key ingredient, a critic that keeps up"
)

_NOTEBOOK_ONE = (
    Spec(
        "perfect-critic-rate",
        "Exact softmax policy-gradient ascent with a constant step (a perfect critic) has gap "
        "O(1/k).",
        notebook="01",
        source="peer (Mei et al. 2020)",
        paper="O(1/k)",
        rule=claims.rule(
            reproduced=claims.within(-1.0, abs=0.15), qualitatively=claims.between(-1.5, -0.7)
        ),
        expect="reproduced",
        size=f"exact gradients, K = 2,000 steps, step 1; {_ONE_MDP}",
        rival="the same exact ascent with the decaying step (k+1)^-2/3 on the same MDP: the "
        "method without the constant step the O(1/k) rate needs",
    ),
    Spec(
        "sample-complexity",
        "With actor and critic steps both ∝ k^-2/3, the single-timescale actor-critic's gap "
        "decays at the rate of exact policy gradient with the same actor steps (the coupled "
        "critic error costs no rate): the paired slope difference, actor-critic minus exact "
        "gradient.",
        notebook="01",
        source="abstract, main theorem",
        paper="O(ε^-3) samples: the critic's coupled error keeps the actor's k^-1/3 rate",
        rule=claims.rule(
            reproduced=claims.ci_within(-1 / 12, 1 / 12), qualitatively=claims.ci_below(1 / 12)
        ),
        expect="reproduced",
        seeds=tuple(range(16)),
        size=_STUDY,
        rival=_STALE,
    ),
    Spec(
        "coupled-errors",
        "Updated once per sample with the same order of step, the chapter's critic keeps up "
        "with the moving policy: its tracking error falls faster than the gap (paired slopes "
        "over MDPs).",
        notebook="01",
        source="ours",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=tuple(range(16)),
        size=_STUDY,
        rival=_STALE,
    ),
)

_NOTEBOOK_TWO = (
    Spec(
        "critic-constant",
        "With β_k = k^-2/3 the critic barely learns at this size (the actor then runs on a "
        "stale critic); β_k = min(1, 20 k^-2/3) tracks Q^π_k with the same exponent.",
        notebook="02",
        source="ours",
        rule=claims.rule(reproduced=claims.at_most(0.2)),
        expect="reproduced",
        seeds=(0,),
        size=f"K = 10,000 samples, 8 runs; {_ONE_MDP}",
        rival="the chapter's critic constant 20 without the cap at 1 (β_k = 20 (k+1)^-2/3) on "
        "the same runs: the critic without the ingredient that keeps its first steps ≤ 1",
    ),
    Spec(
        "stall",
        "Too large an actor step saturates the softmax on sub-optimal actions and the gap stalls.",
        notebook="02",
        source="ours (Mei et al. 2020)",
        rule=claims.rule(reproduced=claims.at_most(0.02)),
        expect="reproduced",
        seeds=(0,),
        size=f"c_a = 10, K = 5,000 samples, 4 runs; {_ONE_MDP}",
        rival="the chapter's actor constant c_a = 0.1 on the same MDP and runs: the "
        "neighbouring regime, where the softmax does not saturate",
    ),
    Spec(
        "tuned-half-faster",
        "The k^-2/3 rate is a worst-case guarantee: tuned per exponent, the classical k^-1/2 "
        "schedule is faster on this MDP (final gap, paired over the runs).",
        notebook="02",
        source="ours",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=(0,),
        size=f"K = 5,000 samples, 128 fresh paired runs (run seed lab.seeds(1)); {_ONE_MDP}",
        no_rival="the claim is itself the paired comparison of the classical k^-1/2 schedule "
        "with its rival, the paper's k^-2/3 schedule, each tuned on the same grid; a third "
        "schedule would be no nearer",
        revised=(
            claims.revision(
                "2026-12-06",
                old="the paired interval over the sweep's 4 runs (the constants chosen on the "
                "same runs); expected not reproduced",
                new="the constants chosen on the sweep's 4 runs, then the two tuned schedules "
                "run again on 128 fresh paired runs of the same MDP (run seed lab.seeds(1): the "
                "registered shift applies), the same rule; expected reproduced, which the 128 "
                "runs decide",
                known="4 runs: -0.488 [-1.627, +0.650], not reproduced, 1.82 SE from 0; all 14 "
                "schedules of the sweep on 32 and 64 runs (seed 0): -0.240 [-0.387, -0.092] and "
                "-0.155 [-0.212, -0.099], 1.3 and 3.5 SE below 0, the same constants chosen; the "
                "two tuned schedules on 128 runs: 4.5, 5.5 and 4.7 SE below 0 (run seeds 0, 1000 "
                "and 1); Intel AVX-512 machine",
            ),
        ),
    ),
    Spec(
        "slow-actor",
        "A slow actor (two-timescale corner, η_k ∝ k^-1) is the slowest: its step sum grows "
        "only like log k.",
        notebook="02",
        source="ours",
        rule=claims.rule(
            reproduced=claims.holds("every cell of the p_a = 1 row is above every other row's best")
        ),
        expect="reproduced",
        seeds=(0,),
        size=f"K = 5,000 samples, 4 runs per cell, c_a = 0.1; {_ONE_MDP}",
        rival="the same check for the p_a = 2/3 row (the paper's actor exponent) on the same "
        "map: the neighbouring regime, which should not be the slowest",
    ),
    Spec(
        "critic-decays-too-fast",
        "A critic step decaying faster than the actor's (p_c = 1) hurts: the critic stops "
        "learning.",
        notebook="02",
        source="ours",
        rule=claims.rule(
            reproduced=claims.holds("p_c = 1 worse than p_c = 2/3 for p_a = 1/2 and 2/3")
        ),
        expect="reproduced",
        seeds=(0,),
        size=f"K = 5,000 samples, 4 runs per cell, c_a = 0.1, c_c = 1; {_ONE_MDP}",
        rival="the same check for p_c = 1/2 (a critic decaying slower than the actor's 2/3) on "
        "the same map: the neighbouring regime, where the critic keeps learning",
    ),
)

DEVIATIONS = {
    "reconstructed-algorithm": "Only the abstract was read: the estimator (score x critic "
    "advantage), the critic (one SARSA(0)-style step on Q), the occupancy oracle and all "
    "constants are ours, from the single-timescale literature.",
    "capped-critic": "The chapter's critic step is min(1, 20 (k+1)^-2/3), not the spec's "
    "(k+1)^-2/3: with constant 1 the critic barely learns at CPU sizes; the exponent is the "
    "paper's and the cap acts only in the first ~90 steps.",
    "rate-not-bound": "The ε^-3 against ε^-4 comparison is between two proofs' bounds and is not "
    "measured: the exponent study compares each schedule with exact policy gradient at the same "
    "actor steps.",
}

CLAIMS = registry("actor_critic", *_NOTEBOOK_ONE, *_NOTEBOOK_TWO, deviations=DEVIATIONS)
