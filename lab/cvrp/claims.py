"""The cvrp chapter's claims, registered before the notebooks measure them.

Sources cite the paper's full text (Luo, Wu, Zheng & Wang, NeurIPS 2025): Table 1 (gap
expansion of POMO, LEHD and BQ trained at C = 50), Table 2 (nine models at seven
capacities), Fig. 2 and Sec. 4.1 (the OVRP and TSP specialists), Table 4 (the VCT / MEM
ablation, equal training-data budget). Two statements that the last release recorded as
claims are code checks now: ``capacity-changes-problem`` (the feasible sets are nested in C,
so the optimal length cannot grow with C, and one route is optimal once C reaches the total
demand: notebook 1's check cell and tests/test_cvrp.py) and ``training-budget`` (the
training time stored in each shipped checkpoint: tests/test_cvrp.py).

Test sets (``n = 20``, PyVRP 0.2 s per instance as the reference): the gap table (32
instances per capacity, instance seed 1234), the ends set (256 instances at C = 10 and
C = 200, instance seed 2026 + shift) and the curve set (128 instances per capacity, instance
seed 2027 + shift), all in ``lab/cvrp/data``.

See: book/cvrp/reproduction.md
"""

from __future__ import annotations

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
_SEEDS = (0, 1, 2)  # the training seeds of the fixed C = 30, VCT and VCT + MEM checkpoints
_TABLE = "n = 20; 32 test instances per capacity C in {10, 20, 30, 50, 100, 200} (seed 1234)"
_RIVAL_SINGLE = (
    "the single-capacity model with the best {what} on the gap table among those trained at "
    "C = 10, 50 and 200 (one checkpoint each) put in the method's place against the same "
    "fixed C = 30 seeds: the method without its key ingredient (one capacity, no VCT)"
)
_RIVAL_FORCED = (
    "the VCT + MEM checkpoints (same three seeds) with every instance sent through the middle "
    "expert, C in (73, 137]: MEM without its routing by tightness, on the same instances"
)

_ENDS = claims.revision(
    _DATE,
    old="paired over the 32 test instances of the gap table (instance seed 1234)",
    new="paired over 256 test instances of their own at C = 10 and C = 200 (instance seed "
    "2026, shifted by the seed-shift check; 512 at FULL), the same rivals and rule",
    known="32 instances (Intel AVX-512 machine, native): specialist minus least favourable "
    "rival -1.49 [-2.30, -0.69] at C = 10 (1.76 SE from 0) and -3.82 [-5.86, -1.78] at C = 200 "
    "(1.78 SE); subsets of 256 of 512 trial instances (instance seeds 98 and 99, PyVRP 0.05 s) "
    "put the interval's end 4.7 / 5.9 SE (C = 10) and 14 / 15 SE (C = 200) below 0 (2nd "
    "percentile / median), 128 instances 1.9 / 3.4 SE at C = 10",
)

CLAIMS = registry(
    "cvrp",
    Spec(
        "fixed-overfits-loose",
        "A model trained at one capacity degrades on the loose side of it: the gap grows as C "
        "grows past the training capacity.",
        notebook="02",
        source="Table 2",
        paper="POMO trained at C = 50: 3.66% at C = 50, 34.12% at C = 500 (9.3×); LEHD 1.6×, "
        "BQ 2.5× (Table 1)",
        rule=claims.rule(qualitatively=claims.ci_above(1.0)),
        expect="reproduced qualitatively",
        seeds=_SEEDS,
        size="n = 20; the fixed C = 30 models (3 training seeds, per-instance gaps averaged "
        "over the seeds) on the curve set, 128 instances at C = 30 and C = 200; the ratio of "
        "mean gaps with its delta-method 95% interval over the instances",
        rival="the VCT model (three seeds averaged) in the fixed model's place, the same ratio "
        "on the same instances: the model the claim should not hold for, trained on both "
        "capacities",
        revised=(
            claims.revision(
                _DATE,
                old="reproduced if ≥ 2, qualitatively if ≥ 1.2, on the smallest of the three "
                "seeds' ratios on the gap table's 32 instances (a point value, no interval)",
                new="qualitatively if the 95% interval of the ratio of mean gaps (fixed C = 30, "
                "seeds averaged, curve set, 128 instances) lies above 1; no reproduced tier: "
                "the paper's own expansions at the loose end range from 1.6× (LEHD) to 9.3× "
                "(POMO), so only the direction is tested",
                known="32 instances: seed ratios 2.59, 1.88, 2.16 (smallest 1.88, qualitative); "
                "before choosing this rule the curve set gave 2.65 [2.34, 2.95] natively and "
                "2.23 [1.96, 2.49] with the seed shift (a boundary at 2 would flip)",
            ),
        ),
    ),
    Spec(
        "fixed-overfits-tight",
        "A model trained at one capacity also degrades on the tight side of it: its gap at "
        "least doubles when C is tightened 5× (trained at C = 50, about ten customers per "
        "route, tested at C = 10, about two).",
        notebook="02",
        source="Table 1",
        paper="gap at C = 10 / gap at C = 50: POMO 5.54×, LEHD 8.66×, BQ 5.54×",
        rule=claims.rule(reproduced=claims.ci_above(2.0)),
        expect="not reproduced",
        seeds=(0,),
        size="n = 20; the fixed C = 50 model (one checkpoint) on the curve set, 128 instances "
        "at C = 10 and C = 50; the ratio of mean gaps with its delta-method 95% interval",
        rival="the VCT model (three seeds averaged) in the fixed model's place, the same ratio "
        "on the same instances: the model the claim should not hold for",
        revised=(
            claims.revision(
                _DATE,
                old="reproduced if ≥ 2, qualitatively if ≥ 1.2, on the fixed C = 50 model's "
                "ratio on the gap table's 32 instances (a point value, no interval); expected "
                "reproduced qualitatively",
                new="reproduced if the 95% interval of the ratio (curve set, 128 instances) lies "
                "above 2, the smallest tight-end expansion of the paper's three models being "
                "5.5×; no qualitative tier; expected not reproduced",
                known="32 instances: 1.54 (qualitative); before choosing this rule the curve set "
                "gave 1.26 [1.03, 1.49] natively and 1.13 [0.91, 1.35] with the seed shift: a "
                "tier at 1 sits inside the noise, the doubling tier 4 to 6 SE away",
            ),
        ),
    ),
    Spec(
        "specialist-wins-tight",
        "At the tightest capacity, a model trained there beats models trained at looser "
        "capacities.",
        notebook="02",
        source="Table 2, Sec. 4.1",
        paper="C = 10: POMO trained at C = 50 20.26%; POMO trained for OVRP 1.9% (Fig. 2)",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=(0,),
        size="n = 20; the ends set, 256 instances at C = 10 (instance seed 2026); the fixed "
        "C = 10 model minus its least favourable rival (fixed C = 30 seeds 0-2, fixed C = 200), "
        "paired over the instances",
        rival="the VCT model (three seeds averaged) in the specialist's place against the same "
        "rivals on the same instances: the generalist trained on every capacity, the nearest "
        "prior recipe to a specialist",
        revised=(
            _ENDS,
            claims.revision(
                _DATE,
                old="control: the best fixed C = 30 seed in the specialist's place (the same "
                "paired comparison with the roles swapped: minus the claim)",
                new="control: the VCT model in the specialist's place, measured on the same "
                "instances, with paired differences VCT minus specialist",
                known="-1.07 [-1.34, -0.79] natively (256 instances); the VCT gap at C = 10 on "
                "these instances had not been measured",
            ),
        ),
    ),
    Spec(
        "specialist-wins-loose",
        "At the loosest capacity, a model trained there beats models trained at tighter "
        "capacities.",
        notebook="02",
        source="Table 2, Sec. 4.1",
        paper="C = 500: POMO trained at C = 50 34.12%; POMO trained for TSP 2.5% (Fig. 2)",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=(0,),
        size="n = 20; the ends set, 256 instances at C = 200 (instance seed 2026); the fixed "
        "C = 200 model minus its least favourable rival (fixed C = 10, fixed C = 30 seeds 0-2), "
        "paired over the instances",
        rival="the VCT model (three seeds averaged) in the specialist's place against the same "
        "rivals on the same instances: the generalist trained on every capacity",
        revised=(
            _ENDS,
            claims.revision(
                _DATE,
                old="control: the best fixed C = 30 seed in the specialist's place (minus the "
                "claim)",
                new="control: the VCT model in the specialist's place, paired differences VCT "
                "minus specialist",
                known="-5.28 [-5.92, -4.63] natively; the VCT gap on these instances had not "
                "been measured",
            ),
        ),
    ),
    Spec(
        "vct-flattens",
        "VCT flattens the gap curve: a smaller spread (worst minus best capacity) than the "
        "model trained at one capacity.",
        notebook="02",
        source="Table 4",
        paper="LEHD base (C = 50) 3.62–45.64%; base + VCT 1.03–4.69% over C = 10..500",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=_SEEDS,
        size="n = 20; the curve set, 128 instances per capacity (instance seed 2027); VCT "
        "minus fixed C = 30, paired over the three training seeds",
        rival=_RIVAL_SINGLE.format(what="spread"),
        revised=(
            claims.revision(
                _DATE,
                old="each training seed's spread on the 32 test instances per capacity of the gap "
                "table (instance seed 1234)",
                new="each training seed's spread on 128 test instances per capacity of their own "
                "(instance seed 2027, shifted by the seed-shift check; 256 at FULL), the same "
                "paired interval over the three training seeds, the same control",
                known="32 instances (Intel AVX-512 machine, native): VCT minus fixed C = 30 "
                "-3.41 [-6.12, -0.69], 1.10 SE from 0; subsets of 128 of 512 trial instances "
                "(instance seeds 98 and 99, PyVRP 0.05 s) put the interval's end 2.6 / 12 SE "
                "below 0 (2nd percentile / median), 160 instances 4.4 / 13 SE",
            ),
        ),
    ),
    Spec(
        "vct-lowers-average-gap",
        "VCT lowers the average gap over the capacity range.",
        notebook="02",
        source="Table 4",
        paper="average gap: base 10.78% → base + VCT 2.41%",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=_SEEDS,
        size=f"{_TABLE}; VCT minus fixed C = 30, paired over the three training seeds",
        rival=_RIVAL_SINGLE.format(what="average gap"),
    ),
    Spec(
        "mem-improves-vct",
        "MEM on top of VCT lowers the average gap further.",
        notebook="02",
        source="Table 4",
        paper="average gap: base + VCT 2.41% → base + VCT + MEM 1.86%",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="not reproduced",
        seeds=_SEEDS,
        size=f"{_TABLE}; VCT + MEM minus VCT, paired over the three training seeds",
        rival=_RIVAL_FORCED,
        equivalence=0.4,
        equivalence_source="half of the paper's MEM gain, 23% of the VCT average (2.41 → 1.86, "
        "Table 4), applied to our VCT average of about 3.8%: 0.44, rounded down to 0.4 points",
        revised=(
            claims.revision(
                _DATE,
                old="no equivalence margin; diagnosis: the training-budget deviation",
                new="equivalence margin 0.4 points (half the paper's relative MEM gain at our "
                "average gap); diagnosis: a tight null (TOST over the seeds)",
                known="+0.03 [-0.05, +0.12] (paired over the three seeds, native)",
            ),
        ),
    ),
    Spec(
        "vct-mem-beats-fixed",
        "VCT + MEM has a lower average gap than the model trained at one capacity.",
        notebook="02",
        source="Table 4",
        paper="average gap: base 10.78% → base + VCT + MEM 1.86%",
        rule=claims.rule(reproduced=claims.ci_below(0.0)),
        expect="reproduced",
        seeds=_SEEDS,
        size=f"{_TABLE}; VCT + MEM minus fixed C = 30, paired over the three training seeds",
        rival=_RIVAL_FORCED,
    ),
    Spec(
        "experts-specialise",
        "The capacity experts specialise: the routed expert is within 1% of the best expert "
        "at every capacity, and the opposite-end expert is more than 2% worse at C = 10 and "
        "at C = 200.",
        notebook="03",
        source="ours",
        paper="MEM: experts for capacity intervals (Sec. 4.3); specialisation not measured",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="not reproduced",
        seeds=_SEEDS,
        size="n = 20; 192 instances per capacity at C in {10, 20, 30, 50, 73, 100, 137, 150, "
        "200}, a test set per training seed (instance seeds 4321, 4322, 4323); the slack per "
        "seed, its 95% interval over the three seeds",
        no_rival="the rival would be three-expert checkpoints trained without routing by "
        "tightness (a MEM whose experts had no reason to specialise); none is shipped, and "
        "training one costs about 25 CPU minutes per seed",
        revised=(
            claims.revision(
                _DATE,
                old="reproduced if the statement holds for every training seed, qualitatively if "
                "for some (a boolean per seed, no margin), 32 instances per capacity (seed 4321)",
                new="the slack per training seed (points; positive exactly when the statement "
                "holds for that seed), reproduced if its 95% interval over the three seeds lies "
                "above 0; no qualitative tier (one seed of three is an anecdote, as in notebook "
                "2's seed rules); 192 instances per capacity, a test set per training seed "
                "(instance seeds 4321, 4322, 4323, shifted by the seed-shift check)",
                known="32 instances (Intel AVX-512 machine, native): [False, False, False], "
                "slacks -0.25, -0.25, -0.04; trial sets of 96, 128 and 256 other instances (seed "
                "77): slacks -0.00, -0.10, -0.38 / -0.10, -0.03, -0.33 / +0.28, +0.22, -0.19 (the "
                "old rule: not reproduced, not reproduced, qualitatively; the new: not "
                "reproduced, interval ends 5.7, 6.0 and 3.6 SE below 0); a first version on 96 "
                "instances per capacity gave slacks +0.17, +0.07, -0.13 (seed 4321, 3.9 SE) and "
                "-0.29, -0.21, -0.24 (seed 5321, 13.9 SE): a test set moves the three seeds "
                "together by about 0.3 points; then on 192 instances, one set for the three "
                "seeds: +0.14, +0.12, +0.02 (1.8 SE) and -0.11, -0.34, -0.17 (7.2 SE): a common "
                "test set makes the interval over seeds blind to the test set's noise, so a test "
                "set per seed",
            ),
        ),
    ),
    deviations={
        "backbone": "The paper's CVRP backbone is LEHD (heavy decoder, supervised by HGS labels, "
        "n = 100, C in [10, 500], d = 192); ours is a tiny POMO trained by REINFORCE (n = 20, "
        "C in [10, 200], d = 64, two encoder layers), so the tight end is about ten routes of "
        "two customers and easier than the paper's.",
        "loose-end": "The paper tests up to C = 500 with n = 100 (about the total "
        "demand); our loosest capacity is C = 200 with n = 20, twice the total demand, and "
        "the problem is one tour from about C = 100 on.",
        "training-budget": "Each checkpoint trains 5,000 steps of 32 instances on one CPU "
        "thread (about 10 to 30 minutes); the paper trains on 1M HGS-labelled instances for "
        "40 epochs on a GPU.",
        "experts": "Each of our experts is one transformer layer after the shared encoder, "
        "before one shared decoder (the official layout with fewer layers: the paper's expert "
        "has three); routing edges at the thirds of [10, 200] (73, 137).",
        "reference-solver": "Gaps are to PyVRP (hybrid genetic search) with 0.2 s per instance, "
        "not to HGS run to convergence.",
    },
)
