"""The spot chapter's claims, registered before the notebooks measure them.

Sources: the abstract of Xiong et al. (NeurIPS 2025), the only part of the paper that could be
read ("an order of magnitude faster", "policies of the exact approach's quality", "compact trees
without compromising performance", each improvement step "solved to global optimality"), and
the chapter spec's prototype (``source="ours"``: 0.36517 / 0.52012 on the 4x4 lake, the
sysadmin depth-2 stall 263.1 vs 276.5, 330.8 at depth 3). Every instance is deterministic (exact
policy evaluation, a deterministic search): no claim is decided over seeds. The times are
wall-clock on the machine that runs the notebook, and every time comparison gives both sides
the same machine.

One statement that the last release recorded as a claim is a code check now:
``fast-equals-reference`` (the batched torch bound finds the numpy reference's optimum: an
identity to round-off; notebook 2's check cell and tests/test_spot.py).

See: book/spot/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS", "FACTOR", "instances_pass"]

FACTOR = 10.0  # the 64-state MILP gets FACTOR times the loop's time ("an order of magnitude")
_N_BIG = 3  # 64-state instances at the default size (FULL adds the 8x8 lake at depth 3)
_CART = (
    "CART (VIPER-style imitation of the optimal policy, a greedy tree of the same depth, "
    "scikit-learn) on the same MDPs: the fast heuristic peer the paper's suite compares with"
)


def instances_pass(k: int, n: int = _N_BIG) -> claims.Condition:
    """At least ``k`` instances pass, read from one signed margin per instance (>= 0: passes)."""

    def kth(m):
        return sorted(m, reverse=True)[k - 1]

    return claims.Condition(
        f"at least {k} of the {n} instances pass (as good as the best known tree, and "
        f"the MILP at {FACTOR:g}x the loop's time not yet as good as the loop)",
        lambda m: kth(m) >= 0,
        distance=lambda m: (kth(m), "relative"),  # the k-th best instance's own margin
    )


CLAIMS = registry(
    "spot",
    Spec(
        "milp-certifies-small",
        "The monolithic OMDT MILP certifies the optimal depth-2 and depth-3 trees of the slippery "
        "4x4 lake, with the values the chapter spec's prototype found.",
        notebook="01",
        source="ours",
        paper="depth 2: 0.36517, depth 3: 0.52012 (spec prototype, γ = 0.99)",
        rule=claims.rule(reproduced=claims.at_most(1e-5)),  # largest |ours - prototype|
        expect="reproduced",
        size="slippery 4x4 lake, depths 0-3, HiGHS 60 s per depth",
        rival=_CART + "; its gap to the prototype's optimal values at depths 2 and 3",
    ),
    Spec(
        "rsbb-exact",
        "Each improvement step is solved to global optimality by the reduced-space "
        "branch-and-bound: it equals HiGHS's proven optimum and is never below its incumbent.",
        notebook="02",
        source="abstract",
        paper="each step solved to global optimality",
        rule=claims.rule(reproduced=claims.holds("= proven optimum, ≥ capped incumbent")),
        expect="reproduced",
        size="warm-start subproblems: lake 4x4 D = 2, 3; lake 8x8 D = 3",
        rival="RSBB stopped at its first incumbent (the root's no-split completion), before "
        "its search: the method without the branch-and-bound that certifies the step",
    ),
    Spec(
        "rsbb-faster",
        "RSBB solves the improvement step orders of magnitude faster than the subproblem MILP, "
        "at the same certified value (times to that value: a method that ends below it never "
        "reaches it, speed-up 0; a capped HiGHS run gives a lower bound).",
        notebook="02",
        source="abstract",
        paper="orders of magnitude faster; spec prototype: about 1 ms vs 15-30 s (64 states, D = 2)",
        rule=claims.rule(reproduced=claims.at_least(10), qualitatively=claims.at_least(2)),
        expect="reproduced",
        size="the three subproblems of rsbb-exact; HiGHS gets max(3 s, 12x RSBB's time)",
        rival="the greedy top-down tree (each node keeps its own best split, no search) on the "
        "same subproblems: the fastest answer to the same step without RSBB's bound",
    ),
    Spec(
        "exact-parse-prunes",
        "The exact depth-1 parse of the last level makes the bound tight enough to prune: "
        "the search expands fewer nodes than with the state-wise bound alone (8x8 lake, D = 3).",
        notebook="02",
        source="ours",
        paper="(the RS-ORT design the paper builds on)",
        rule=claims.rule(reproduced=claims.at_least(1.5), qualitatively=claims.at_least(1.1)),
        expect="reproduced",
        size="lake 8x8, D = 3, the warm-start subproblem",
        no_rival="the statement is itself the comparison with the method without its key "
        "ingredient (the state-wise bound alone): the measured ratio is that rival's node count "
        "over the method's",
    ),
    Spec(
        "loop-matches-optimum",
        "SPOT reaches the quality of the exact approach: on the 16-state lake the SPOT-style loop "
        "reaches the MILP's proven optimum at depth 2 and 3, with every weighting.",
        notebook="03",
        source="abstract",
        paper="policies of the exact approach's quality",
        rule=claims.rule(reproduced=claims.at_most(1e-6)),  # largest (proven optimum - loop)
        expect="reproduced",
        size="slippery 4x4 lake, depths 2 and 3, four weightings",
        rival=_CART + "; its largest shortfall below the proven optimum",
    ),
    Spec(
        "loop-faster-64",
        "SPOT delivers high-quality policies an order of magnitude faster than the exact approach: "
        "on every 64-state instance the loop's tree is as good as the best tree known (the "
        "certified optimum, else the MILP's incumbent after 32 s), and the MILP given ten times "
        "the loop's time has not yet found a tree as good as the loop's.",
        notebook="03",
        source="abstract",
        paper="an order of magnitude faster; spec prototype: 1-3 orders at 64 states",
        rule=claims.rule(
            reproduced=instances_pass(_N_BIG), qualitatively=instances_pass(_N_BIG - 1)
        ),
        expect="reproduced qualitatively",
        size="lake 8x8 D = 2, sysadmin 6 D = 2 and 3 (FULL adds lake 8x8 D = 3; the rule "
        "still counts 3 and 2 passing instances)",
        rival=_CART + ", timed as the loop is and put through the same test (as good as the best "
        "known tree; the MILP at 10x its time not yet as good)",
        revised=(
            claims.revision(
                "2026-12-06",
                old="the count of instances where the loop's tree is as good as the best known "
                "tree and the MILP at 10x the loop's time has not reached it: reproduced if ≥ 3, "
                "qualitatively if ≥ 2",
                new="per instance, the signed relative margin of that same test (the smaller of "
                "the loop's shortfall below the best known tree and the MILP incumbent's lead "
                "over the loop, each against the tolerance 1e-9 max(1, |J|)); reproduced if "
                "every instance passes, qualitatively if the second best does: the count's "
                "tiers, with a margin",
                known="2 of 3, margin 0 (an integer on the qualitative tier's boundary): lake "
                "8x8 D = 2 and sysadmin 6 D = 3 passed, sysadmin 6 D = 2 ended below the best "
                "known tree (263.15 vs 276.54) (Intel AVX-512 build)",
            ),
        ),
    ),
    Spec(
        "compact-trees",
        "Compact trees without compromising performance: the deepest tree fitted for each MDP "
        "(depth 2 or 3) keeps most of the unconstrained optimum J*.",
        notebook="03",
        source="abstract",
        paper="compact trees without compromising performance",
        rule=claims.rule(reproduced=claims.at_least(0.95), qualitatively=claims.at_least(0.8)),
        expect="reproduced qualitatively",
        size="lake 4x4 D = 3, lake 8x8 D = 2, sysadmin 6 D = 3 (the deepest tree of each MDP)",
        rival=_CART + "; the smallest share of J* its tree keeps over the same instances",
    ),
    Spec(
        "weighting-sensitive",
        "Failure case: with sparse rewards (deterministic 4x4 lake, depth 2) the loop depends on "
        "the state weighting: the default reaches J*, some other weighting gets less than half.",
        notebook="03",
        source="ours",
        paper="(found by the chapter spec's prototype)",
        rule=claims.rule(reproduced=claims.holds("default = J*, some weighting < J*/2")),
        expect="reproduced",
        size="deterministic 4x4 lake, depth 2, four weightings",
        no_rival="a failure case of the method itself: the statement compares the loop's own "
        "state weightings on one MDP, so the alternatives are part of the measurement",
    ),
    Spec(
        "depth2-stall",
        "Failure case: on the system administrator at depth 2 the loop stalls below the best "
        "depth-2 tree (the spec's prototype: 263.1 vs 276.5).",
        notebook="03",
        source="ours",
        paper="gap 276.5 - 263.1 = 13.4 (spec prototype)",
        rule=claims.rule(
            reproduced=claims.within(13.4, abs=0.5),
            # exact policy evaluation of a deterministic loop: no seed noise
            qualitatively=claims.at_least(1.0, deterministic=True),
        ),
        expect="reproduced",
        size="sysadmin 6, depth 2; the best tree by exhaustive enumeration (stored by default)",
        no_rival="the yardstick is the certified best depth-2 tree (exhaustive enumeration), "
        "which is part of the measured gap; the stall is a property of the loop alone",
    ),
    Spec(
        "sysadmin-depth3",
        "On the system administrator at depth 3 the SPOT-style loop reaches the value of the "
        "spec's prototype.",
        notebook="03",
        source="ours",
        paper="330.8 (spec prototype)",
        rule=claims.rule(reproduced=claims.within(330.8, rel=0.01)),
        expect="not reproduced",
        size="sysadmin 6, depth 3, four weightings",
        rival=_CART + "; its depth-3 tree's value",
    ),
    deviations={
        "reconstructed-loop": "The SPOT-style loop's state weightings, warm start and stopping "
        "rule (stop on a repeated policy, keep the best tree evaluated) are our reconstruction: "
        "the paper's code is in its supplementary material, which could not be read, and its "
        "abstract does not give them; a loop that stops on a repeated policy can stall below "
        "the best tree of its depth (notebook 3, the depth-2 stall).",
        "benchmarks": "We measure on a 4x4 and an 8x8 frozen lake and a 6-machine system "
        "administrator at depths 2-3 (16 and 64 states); the paper's nine benchmarks (four of "
        "the OMDT suite, five of PRISM), its depths and its tables are not available, so "
        "'without compromising performance' is read as a share of J* on our instances, where a "
        "depth-3 tree may not be able to express the optimal policy.",
    },
)
