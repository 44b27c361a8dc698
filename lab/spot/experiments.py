"""Drivers of the ``spot`` notebooks: each runs one comparison and returns a small dataclass.

See: book/spot/03-spot-loop.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_positive

from .baselines import exhaustive_tree
from .mdp import (
    TabularMDP,
    _check_mdp,
    evaluate,
    frozen_lake,
    state_weights,
    sysadmin,
    value_iteration,
)
from .milp import improvement_milp, omdt_milp
from .search import WEIGHTINGS, SpotResult, rsbb, spot
from .tree import Tree

__all__ = [
    "MDP_CHOICES",
    "LAKE_6X6",
    "STORED_SYSADMIN_DEPTH2",
    "make_mdp",
    "bnb_problem",
    "StepComparison",
    "compare_improvement_step",
    "TimeToValue",
    "time_to_value",
    "weighting_runs",
    "BestTree",
    "best_sysadmin_depth2",
]

LAKE_6X6 = ["SFFFFF", "FHFFHF", "FFFHFF", "HFFFFH", "FFHFFF", "FFFFHG"]
MDP_CHOICES = ("lake 4x4", "lake 4x4 not slippery", "lake 8x8", "sysadmin 6")

#: The best depth-2 tree of ``sysadmin(6)``, as found by ``exhaustive_tree(sysadmin(6), 2)``
#: (about 17 s on one idle core): ``(features, thresholds, leaves)``. ``best_sysadmin_depth2``
#: evaluates it by default and re-enumerates on request; a slow test checks that they agree.
STORED_SYSADMIN_DEPTH2 = ((1, 0, 5), (0.0, 0.0, 0.0), (0, 1, 5, 4))


@lru_cache(maxsize=32)
def make_mdp(name: str, slip: float = 1 / 3) -> TabularMDP:
    """One of ``MDP_CHOICES`` or ``"lake 6x6"`` (``slip`` applies to the slippery lakes).

    See: book/spot/03-spot-loop.ipynb
    """
    check_choice("name", name, list(MDP_CHOICES) + ["lake 6x6"])
    if name == "lake 4x4":
        return frozen_lake("4x4", slip)
    if name == "lake 4x4 not slippery":
        return frozen_lake("4x4", 0.0)
    if name == "lake 8x8":
        return frozen_lake("8x8", slip)
    if name == "lake 6x6":
        return frozen_lake(LAKE_6X6, slip)
    return sysadmin(6)


@lru_cache(maxsize=32)
def bnb_problem(name: str, depth: int, exact_parse: bool = True):
    """The warm-start improvement subproblem ``G = w* Q*`` of an MDP, solved by ``rsbb``.

    Returns ``(G, X, value, stats)``.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    depth = check_int("depth", depth, 0, 6)
    exact_parse = check_bool("exact_parse", exact_parse)
    mdp = make_mdp(name)
    V, pi = value_iteration(mdp)
    Q = mdp.R + mdp.gamma * mdp.P @ V
    w = state_weights(mdp, "optimal", optimal_policy=pi)
    G = w[:, None] * Q
    val, _, st = rsbb(G, mdp.X, depth, exact_parse=exact_parse)
    return G, mdp.X, val, st


@dataclass
class StepComparison:
    """One improvement step solved by RSBB and by the subproblem MILP in HiGHS.

    ``speedup_at_least`` compares times to the same certified value: HiGHS's time to prove
    the optimum that RSBB certifies (``highs_proven``), or, when HiGHS stopped at its limit
    with an incumbent below RSBB's optimum, the limit itself (a lower bound on its time to
    reach that value); ``nan`` when HiGHS reached the value without proving it (no bound).

    See: book/spot/02-reduced-space-bnb.ipynb
    """

    name: str
    depth: int
    rsbb_value: float
    rsbb_seconds: float
    rsbb_nodes: int
    highs_value: float
    highs_proven: bool
    highs_seconds: float
    speedup_at_least: float


def compare_improvement_step(
    name: str, depth: int, highs_limit: float, resolve: float = 0.0
) -> StepComparison:
    """RSBB against ``improvement_milp`` on the warm-start subproblem of ``make_mdp(name)``.

    HiGHS gets ``max(highs_limit, resolve * RSBB's time)`` seconds, so that a capped run still
    certifies a speed-up of at least ``resolve`` on a slow or loaded machine.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    check_choice("name", name, list(MDP_CHOICES) + ["lake 6x6"])
    depth = check_int("depth", depth, 0, 6)
    highs_limit = check_positive("highs_limit", highs_limit)
    resolve = check_positive("resolve", resolve, allow_zero=True)
    G, X, _, _ = bnb_problem(name, depth)
    v, _, st = rsbb(G, X, depth)
    limit = max(highs_limit, resolve * st.seconds)
    h = improvement_milp(G, X, depth, time_limit=limit)
    tol = 1e-9 * max(1.0, abs(v))
    below = not np.isfinite(h.value) or h.value < v - tol
    if h.optimal:  # time to prove the value RSBB certifies
        speedup = h.seconds / st.seconds
    elif below:  # HiGHS ran for at least its limit without reaching the value: a lower bound
        speedup = max(h.seconds, limit) / st.seconds
    else:  # reached without proof: no bound on when
        speedup = math.nan
    return StepComparison(
        name, depth, v, st.seconds, st.nodes, h.value, h.optimal, h.seconds, speedup
    )


def weighting_runs(
    mdp: TabularMDP, depth: int, weights: tuple[str, ...] = WEIGHTINGS[:-1]
) -> dict[str, SpotResult]:
    """``spot(mdp, depth, w)`` for each weighting ``w`` (the first one is timed cold).

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = _check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    if isinstance(weights, str) or not weights:
        raise TypeError(f"weights must be a non-empty tuple of weightings, got {weights!r}")
    for w in weights:
        check_choice("weights", w, list(WEIGHTINGS))
    return {w: spot(mdp, depth, w) for w in weights}


@dataclass
class TimeToValue:
    """The MILP given ``factor`` times the loop's time: did it reach the loop's value?

    ``reached`` False certifies that HiGHS needs more than ``factor`` times the loop's time
    to find a tree as good as the loop's (the speed-up is at least ``factor``).

    See: book/spot/03-spot-loop.ipynb
    """

    name: str
    depth: int
    loop_value: float
    loop_seconds: float
    factor: float
    milp_limit: float
    milp_value: float
    milp_seconds: float
    milp_proven: bool
    reached: bool


def time_to_value(
    mdp: TabularMDP, depth: int, loop: SpotResult, factor: float = 10.0
) -> TimeToValue:
    """Run ``omdt_milp`` with a time limit of ``factor * loop.seconds`` and compare values.

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = _check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    if not isinstance(loop, SpotResult):
        raise TypeError(f"loop must be a SpotResult (from spot()), got {type(loop).__name__}")
    factor = check_positive("factor", factor)
    limit = factor * loop.seconds
    r = omdt_milp(mdp, depth, time_limit=limit)
    val = r.value if np.isfinite(r.value) else -math.inf
    reached = bool(val >= loop.J - 1e-9 * max(1.0, abs(loop.J)))
    return TimeToValue(
        mdp.name, depth, loop.J, loop.seconds, factor, limit, r.value, r.seconds, r.optimal, reached
    )


@dataclass
class BestTree:
    """The best depth-2 tree of ``sysadmin(6)``: ``enumerated`` False means the stored tree
    (found by ``exhaustive_tree`` offline) was evaluated, not searched for in this run.

    See: book/spot/03-spot-loop.ipynb
    """

    J: float
    tree: Tree
    enumerated: bool
    seconds: float


def best_sysadmin_depth2(enumerate_now: bool = False) -> BestTree:
    """The certificate of the depth-2 stall: enumerate (slow) or evaluate the stored tree.

    See: book/spot/03-spot-loop.ipynb
    """
    enumerate_now = check_bool("enumerate_now", enumerate_now)
    admin = make_mdp("sysadmin 6")
    t0 = time.perf_counter()
    if enumerate_now:
        J, tree = exhaustive_tree(admin, 2)
    else:
        f, th, leaves = STORED_SYSADMIN_DEPTH2
        tree = Tree(2, list(f), list(th), list(leaves), n_actions=admin.n_actions)
        J = evaluate(admin, tree)[0]
    return BestTree(float(J), tree, enumerate_now, time.perf_counter() - t0)
