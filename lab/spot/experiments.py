"""Drivers of the ``spot`` notebooks: each runs one comparison and returns a small dataclass.

See: book/spot/03-spot-loop.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)
from lab.core.memo import memo

from .baselines import exhaustive_tree, greedy_split_tree, greedy_tree
from .mdp import (
    TabularMDP,
    check_mdp,
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
    "StepSettings",
    "compare_improvement_step",
    "improvement_steps",
    "TimeToValue",
    "time_to_value",
    "milp_time_to_value",
    "TimedTree",
    "cart_run",
    "REFERENCE_TREES",
    "reference_tree",
    "greedy_step",
    "weighting_runs",
    "BestTree",
    "best_sysadmin_depth2",
    "ExplorerSettings",
    "ExplorerRun",
    "explorer_run",
    "LoopSettings",
    "InstanceRun",
    "instance_runs",
]

LAKE_6X6 = ["SFFFFF", "FHFFHF", "FFFHFF", "HFFFFH", "FFHFFF", "FFFFHG"]
MDP_CHOICES = ("lake 4x4", "lake 4x4 not slippery", "lake 8x8", "sysadmin 6")

#: The best depth-2 tree of ``sysadmin(6)``, as found by ``exhaustive_tree(sysadmin(6), 2)``
#: (about 17 s on one idle core): ``(features, thresholds, leaves)``. ``best_sysadmin_depth2``
#: evaluates it by default and re-enumerates on request; a slow test checks that they agree.
STORED_SYSADMIN_DEPTH2 = ((1, 0, 5), (0.0, 0.0, 0.0), (0, 1, 5, 4))
_NAMES = list(MDP_CHOICES) + ["lake 6x6"]


def make_mdp(name: str, slip: float = 1 / 3) -> TabularMDP:
    """One of ``MDP_CHOICES`` or ``"lake 6x6"`` (``slip`` applies to the slippery lakes).

    See: book/spot/03-spot-loop.ipynb
    """
    check_choice("name", name, _NAMES)
    return _mdp(name, check_range("slip", slip, 0.0, 0.5))


@memo(maxsize=32)
def _mdp(name: str, slip: float) -> TabularMDP:
    if name == "lake 4x4":
        return frozen_lake("4x4", slip)
    if name == "lake 4x4 not slippery":
        return frozen_lake("4x4", 0.0)
    if name == "lake 8x8":
        return frozen_lake("8x8", slip)
    if name == "lake 6x6":
        return frozen_lake(LAKE_6X6, slip)
    return sysadmin(6)


def bnb_problem(name: str, depth: int, exact_parse: bool = True):
    """The warm-start improvement subproblem ``G = w* Q*`` of an MDP, solved by ``rsbb``.

    Returns ``(G, X, value, stats)`` (memoised).

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    check_choice("name", name, _NAMES)
    depth = check_int("depth", depth, 0, 6)
    return _bnb(name, depth, check_bool("exact_parse", exact_parse))


@memo(maxsize=32)
def _bnb(name: str, depth: int, exact_parse: bool):
    mdp = _mdp(name, 1 / 3)
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
    check_choice("name", name, _NAMES)
    depth = check_int("depth", depth, 0, 6)
    highs_limit = check_positive("highs_limit", highs_limit)
    resolve = check_positive("resolve", resolve, allow_zero=True)
    return _compare_step(name, depth, highs_limit, resolve)


def _compare_step(name: str, depth: int, highs_limit: float, resolve: float) -> StepComparison:
    G, X, _, _ = _bnb(name, depth, True)
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


@dataclass(frozen=True)
class StepSettings:
    """The improvement-step comparison of notebook 2, validated once.

    ``instances`` are ``(name, depth)`` pairs; HiGHS gets ``max(highs_limit, resolve * RSBB's
    time)`` seconds on each (see :func:`compare_improvement_step`).

    See: book/spot/02-reduced-space-bnb.ipynb
    """

    instances: tuple[tuple[str, int], ...]
    highs_limit: float
    resolve: float = 12.0

    def __post_init__(self):
        inst = _check_instances("instances", self.instances)
        object.__setattr__(self, "instances", inst)
        object.__setattr__(self, "highs_limit", check_positive("highs_limit", self.highs_limit))
        resolve = check_positive("resolve", self.resolve, allow_zero=True)
        object.__setattr__(self, "resolve", resolve)


def improvement_steps(settings: StepSettings) -> list[StepComparison]:
    """:func:`compare_improvement_step` on every instance of ``settings``, in order.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    check_instance("settings", settings, StepSettings)
    return [
        _compare_step(n, d, settings.highs_limit, settings.resolve) for n, d in settings.instances
    ]


def _check_instances(name: str, instances) -> tuple[tuple[str, int], ...]:
    """A non-empty sequence of ``(MDP name, depth)`` pairs, as a tuple of tuples."""
    if isinstance(instances, str) or not isinstance(instances, (list, tuple)) or not instances:
        raise TypeError(f"{name} must be a non-empty sequence of (mdp name, depth) pairs")
    out = []
    for pair in instances:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"{name} must hold (mdp name, depth) pairs, got {pair!r}")
        check_choice(f"{name} mdp name", pair[0], _NAMES)
        out.append((pair[0], check_int(f"{name} depth", pair[1], 0, 6)))
    return tuple(out)


def weighting_runs(
    mdp: TabularMDP, depth: int, weights: tuple[str, ...] = WEIGHTINGS[:-1]
) -> dict[str, SpotResult]:
    """``spot(mdp, depth, w)`` for each weighting ``w`` (the first one is timed cold).

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    if isinstance(weights, str) or not weights:
        raise TypeError(f"weights must be a non-empty tuple of weightings, got {weights!r}")
    for w in weights:
        check_choice("weights", w, list(WEIGHTINGS))
    return _weighting_runs(mdp, depth, tuple(weights))


def _weighting_runs(mdp, depth, weights) -> dict[str, SpotResult]:
    return {w: spot(mdp, depth, w) for w in weights}


@dataclass(frozen=True)
class ExplorerSettings:
    """One widget setting of notebooks 1 and 3, validated once.

    ``name`` is one of ``MDP_CHOICES`` or ``"lake 6x6"``; ``slip`` applies to the slippery
    lakes; ``cart`` also fits the CART (VIPER-style) tree of the same depth.

    See: book/spot/03-spot-loop.ipynb
    """

    name: str = "lake 4x4"
    depth: int = 2
    weights: str = "optimal"
    warm_start: bool = True
    slip: float = 1 / 3
    cart: bool = False

    def __post_init__(self):
        check_choice("name", self.name, _NAMES)
        object.__setattr__(self, "depth", check_int("depth", self.depth, 0, 6))
        check_choice("weights", self.weights, list(WEIGHTINGS))
        object.__setattr__(self, "warm_start", check_bool("warm_start", self.warm_start))
        object.__setattr__(self, "slip", check_range("slip", self.slip, 0.0, 0.5))
        object.__setattr__(self, "cart", check_bool("cart", self.cart))


@dataclass(frozen=True)
class ExplorerRun:
    """One widget setting: the SPOT-style result, the unconstrained optimum ``p0 . V*`` and,
    on request, the CART (VIPER-style) tree's value.

    See: book/spot/03-spot-loop.ipynb
    """

    settings: ExplorerSettings
    mdp: TabularMDP
    result: SpotResult
    optimum: float
    cart: float | None


@memo
def explorer_run(settings: ExplorerSettings) -> ExplorerRun:
    """``spot`` on one widget setting, with what the widgets draw beside it (memoised: the
    widgets of notebooks 1 and 3 call it on every move).

    See: book/spot/03-spot-loop.ipynb
    """
    check_instance("settings", settings, ExplorerSettings)
    s = settings
    mdp = _mdp(s.name, s.slip)
    res = spot(mdp, s.depth, s.weights, warm_start=s.warm_start)
    V, _ = value_iteration(mdp)
    J_cart = evaluate(mdp, greedy_tree(mdp, s.depth))[0] if s.cart else None
    return ExplorerRun(s, mdp, res, float(mdp.p0 @ V), J_cart)


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
    if not isinstance(loop, SpotResult):
        raise TypeError(f"loop must be a SpotResult (from spot()), got {type(loop).__name__}")
    return milp_time_to_value(mdp, depth, loop.J, loop.seconds, factor)


def milp_time_to_value(
    mdp: TabularMDP, depth: int, value: float, seconds: float, factor: float = 10.0
) -> TimeToValue:
    """``omdt_milp`` with a time limit of ``factor * seconds``: has it found a tree worth ``value``?

    The same test as :func:`time_to_value` for any method that returned a tree of value
    ``value`` in ``seconds`` (a baseline such as :func:`cart_run`).

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    depth = check_int("depth", depth, 0, 6)
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    seconds = check_positive("seconds", seconds)
    factor = check_positive("factor", factor)
    return _milp_time_to_value(mdp, depth, value, seconds, factor)


def _milp_time_to_value(mdp, depth, value, seconds, factor) -> TimeToValue:
    limit = factor * seconds
    r = omdt_milp(mdp, depth, time_limit=limit)
    val = r.value if np.isfinite(r.value) else -math.inf
    reached = bool(val >= value - 1e-9 * max(1.0, abs(value)))
    return TimeToValue(
        mdp.name, depth, value, seconds, factor, limit, r.value, r.seconds, r.optimal, reached
    )


@dataclass
class TimedTree:
    """A baseline's tree, its exact value ``J`` and the seconds it took.

    See: book/spot/03-spot-loop.ipynb
    """

    J: float
    seconds: float
    tree: Tree


def cart_run(mdp: TabularMDP, depth: int) -> TimedTree:
    """The CART (VIPER-style) baseline, timed as the loop is: value iteration, fit, evaluation.

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    return _cart_run(mdp, check_int("depth", depth, 0, 6))


def _cart_run(mdp: TabularMDP, depth: int) -> TimedTree:
    t0 = time.perf_counter()
    tree = greedy_tree(mdp, depth)
    J = float(evaluate(mdp, tree)[0])
    return TimedTree(J, time.perf_counter() - t0, tree)


#: The best tree known for each 64-state instance of notebook 3, ``(features, thresholds,
#: leaves, provenance, certified)``: the reference of "a tree as good as the exact approach's".
#: Found offline on this project's 2-core machines (2026-12-03, HiGHS through scipy 1.x):
#: the certified optimum where one is known, else the MILP's incumbent at the benchmark's
#: longest limit (32 s, ``benchmarks/bench_spot.py``'s ladder).
REFERENCE_TREES = {
    ("lake 8x8", 2): (
        (0, 1, 1),
        (0.0, 0.0, 5.0),
        (3, 2, 3, 2),
        "omdt_milp(frozen_lake('8x8'), 2), proven optimal in 13.8 s",
        True,
    ),
    ("sysadmin 6", 2): (
        *STORED_SYSADMIN_DEPTH2,
        "exhaustive_tree(sysadmin(6), 2): enumeration, a global certificate",
        True,
    ),
    ("sysadmin 6", 3): (
        (-1, 4, -1, 1, 3, -1, -1),
        (0.0,) * 7,
        (4, 1, 3, 2, 6, 4, 6, 1),
        "omdt_milp(sysadmin(6), 3, time_limit=32): incumbent, not proven",
        False,
    ),
    ("lake 8x8", 3): (
        (0, -1, 0, -1, -1, 1, 1),
        (0.0, 0.0, 3.0, 0.0, 0.0, 5.0, 5.0),
        (2, 0, 0, 1, 3, 2, 1, 2),
        "omdt_milp(frozen_lake('8x8'), 3, time_limit=32): incumbent, not proven",
        False,
    ),
}


def reference_tree(name: str, depth: int) -> TimedTree:
    """The stored best-known tree of ``(name, depth)`` (:data:`REFERENCE_TREES`), evaluated.

    ``seconds`` is the evaluation time, not the time that found the tree.

    See: book/spot/03-spot-loop.ipynb
    """
    check_choice("name", name, sorted({n for n, _ in REFERENCE_TREES}))
    depth = check_int("depth", depth, 0, 6)
    if (name, depth) not in REFERENCE_TREES:
        known = sorted(d for n, d in REFERENCE_TREES if n == name)
        raise ValueError(f"depth must be one of {known} for {name!r}, got {depth}")
    return _reference_tree(name, depth)


def _reference_tree(name: str, depth: int) -> TimedTree:
    f, th, leaves, _how, _certified = REFERENCE_TREES[(name, depth)]
    mdp = _mdp(name, 1 / 3)
    t0 = time.perf_counter()
    tree = Tree(depth, list(f), list(th), list(leaves), n_actions=mdp.n_actions)
    J = float(evaluate(mdp, tree)[0])
    return TimedTree(J, time.perf_counter() - t0, tree)


def greedy_step(name: str, depth: int) -> tuple[float, float]:
    """``greedy_split_tree`` on the warm-start subproblem of :func:`bnb_problem`: ``(value, seconds)``.

    See: book/spot/02-reduced-space-bnb.ipynb
    """
    check_choice("name", name, _NAMES)
    depth = check_int("depth", depth, 0, 6)
    G, X, _, _ = _bnb(name, depth, True)
    t0 = time.perf_counter()
    value, _ = greedy_split_tree(G, X, depth)
    return value, time.perf_counter() - t0


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
    admin = _mdp("sysadmin 6", 1 / 3)
    t0 = time.perf_counter()
    if enumerate_now:
        J, tree = exhaustive_tree(admin, 2)
    else:
        f, th, leaves = STORED_SYSADMIN_DEPTH2
        tree = Tree(2, list(f), list(th), list(leaves), n_actions=admin.n_actions)
        J = evaluate(admin, tree)[0]
    return BestTree(float(J), tree, enumerate_now, time.perf_counter() - t0)


@dataclass(frozen=True)
class LoopSettings:
    """The 64-state time-to-quality comparison of notebook 3, validated once.

    ``instances`` are ``(name, depth)`` pairs with a stored best-known tree
    (:data:`REFERENCE_TREES`); ``weights`` the weightings the loop runs; the MILP gets
    ``factor`` times the loop's time.

    See: book/spot/03-spot-loop.ipynb
    """

    instances: tuple[tuple[str, int], ...]
    weights: tuple[str, ...] = WEIGHTINGS[:-1]
    factor: float = 10.0

    def __post_init__(self):
        inst = _check_instances("instances", self.instances)
        for pair in inst:
            if pair not in REFERENCE_TREES:
                raise ValueError(f"instances must be among {sorted(REFERENCE_TREES)}, got {pair!r}")
        object.__setattr__(self, "instances", inst)
        w = self.weights
        if isinstance(w, str) or not isinstance(w, (list, tuple)) or not w:
            raise TypeError(f"weights must be a non-empty tuple of weightings, got {w!r}")
        for x in w:
            check_choice("weights", x, list(WEIGHTINGS[:-1]))
        object.__setattr__(self, "weights", tuple(w))
        object.__setattr__(self, "factor", check_positive("factor", self.factor))


@dataclass(frozen=True)
class InstanceRun:
    """One 64-state instance: the loop per weighting, the MILP at ``factor`` times the loop's
    time (``ttv``), the CART control timed the same way, the best known tree and ``J*``.

    See: book/spot/03-spot-loop.ipynb
    """

    runs: dict
    ttv: TimeToValue
    optimum: float
    cart: TimedTree
    cart_ttv: TimeToValue
    best_known: float


def instance_runs(settings: LoopSettings) -> dict[tuple[str, int], InstanceRun]:
    """:class:`InstanceRun` of every instance of ``settings``, in order.

    See: book/spot/03-spot-loop.ipynb
    """
    check_instance("settings", settings, LoopSettings)
    out = {}
    for name, d in settings.instances:
        mdp = _mdp(name, 1 / 3)
        runs = _weighting_runs(mdp, d, settings.weights)
        ttv = _milp_time_to_value(
            mdp, d, runs["optimal"].J, runs["optimal"].seconds, settings.factor
        )
        optimum = float(mdp.p0 @ value_iteration(mdp)[0])
        cart = _cart_run(mdp, d)  # the control: timed as the loop is
        cart_ttv = _milp_time_to_value(mdp, d, cart.J, cart.seconds, settings.factor)
        best = _reference_tree(name, d).J
        out[(name, d)] = InstanceRun(runs, ttv, optimum, cart, cart_ttv, best)
    return out
