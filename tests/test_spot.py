"""Tests of lab.spot: tabular MDPs, tree policies, the OMDT MILP, RSBB and the SPOT-style loop."""

from __future__ import annotations

import numpy as np
import pytest

from lab import spot
from lab.spot import experiments, figures

TINY = ["SFF", "FHG"]  # 6-state lake for brute-force checks


@pytest.fixture(scope="module")
def lake():
    return spot.frozen_lake("4x4")


# ------------------------------------------------------------------ MDPs and evaluation
def test_frozen_lake_matches_gymnasium():
    fl = pytest.importorskip("gymnasium.envs.toy_text.frozen_lake")
    for slippery, slip in ((True, 1 / 3), (False, 0.0)):
        env = fl.FrozenLakeEnv(map_name="8x8", is_slippery=slippery)
        mdp = spot.frozen_lake("8x8", slip=slip)
        P = np.zeros_like(mdp.P)
        R = np.zeros_like(mdp.R)
        for s, acts in env.P.items():
            for a, outs in acts.items():
                for p, s2, r, _ in outs:
                    P[s, a, s2] += p
                    R[s, a] += p * r
        np.testing.assert_allclose(P, mdp.P, atol=1e-12)
        np.testing.assert_allclose(R, mdp.R, atol=1e-12)


def test_lake_optimum_and_lp(lake):
    V, pi = spot.value_iteration(lake)
    assert abs(lake.p0 @ V - 0.54203) < 1e-5
    slick = spot.frozen_lake("4x4", slip=0.0)
    assert abs(slick.p0 @ spot.value_iteration(slick)[0] - 0.95099) < 1e-5
    # LP over occupancies: max R.y s.t. sum_a y[s,a] - gamma sum P[s',a,s] y[s',a] = p0
    from scipy.optimize import linprog

    n, m = lake.n_states, lake.n_actions
    A = np.kron(np.eye(n), np.ones((1, m))) - lake.gamma * lake.P.reshape(n * m, n).T
    res = linprog(-lake.R.reshape(-1), A_eq=A, b_eq=lake.p0, bounds=(0, None), method="highs")
    assert abs(-res.fun - lake.p0 @ V) < 1e-6
    assert abs(res.x.sum() - 1 / (1 - lake.gamma)) < 1e-6


def test_evaluate_matches_iteration_and_occupancy(lake):
    rng = np.random.default_rng(0)
    pi = rng.integers(0, 4, 16)
    J, V = spot.evaluate(lake, pi)
    W = np.zeros(16)
    idx = np.arange(16)
    for _ in range(5000):
        W = lake.R[idx, pi] + lake.gamma * lake.P[idx, pi] @ W
    assert np.abs(W - V).max() < 1e-8
    d = spot.occupancy(lake, pi)
    assert abs(d.sum() - 1 / (1 - lake.gamma)) < 1e-8
    assert abs(d @ lake.R[idx, pi] - J) < 1e-10


def test_sysadmin_model():
    mdp = spot.sysadmin(3)
    assert mdp.P.shape == (8, 4, 8) and mdp.n_actions == 4
    np.testing.assert_allclose(mdp.P.sum(2), 1.0)
    assert mdp.p0[7] == 1.0 and mdp.R[7, 3] == 3.0 and mdp.R[7, 0] == 2.5
    # rebooting machine 0 from "all down" brings it up for sure
    assert abs(mdp.P[0, 0][[s for s in range(8) if s & 1]].sum() - 1.0) < 1e-12
    # machine 1 up with machine 0 (its left neighbour) down: stays up w.p. 0.95 * 0.6
    s = 0b010
    assert abs(mdp.P[s, 3][[t for t in range(8) if t & 2]].sum() - 0.95 * 0.6) < 1e-12


def test_bad_inputs(lake):
    P = lake.P.copy()
    P[0, 0, 0] += 0.1
    with pytest.raises(ValueError, match="sum to 1"):
        spot.TabularMDP(P, lake.R, lake.X, lake.p0, 0.99)
    with pytest.raises(ValueError, match="gamma"):
        spot.TabularMDP(lake.P, lake.R, lake.X, lake.p0, 1.0)
    with pytest.raises(ValueError, match="X must have one row per state"):
        spot.TabularMDP(lake.P, lake.R, lake.X[:5], lake.p0, 0.99)
    with pytest.raises(TypeError):
        spot.evaluate("lake", np.zeros(16, int))
    with pytest.raises(ValueError, match="actions must lie"):
        spot.evaluate(lake, np.full(16, 4))
    with pytest.raises(ValueError, match="depth"):
        spot.rsbb(np.zeros((16, 4)), lake.X, -1)
    with pytest.raises(ValueError, match="finite"):
        G = np.zeros((16, 4))
        G[3, 1] = np.nan
        spot.rsbb(G, lake.X, 2)
    with pytest.raises(ValueError, match="rows like G"):
        spot.rsbb(np.zeros((15, 4)), lake.X, 2)
    with pytest.raises(ValueError, match="leaf actions"):
        spot.Tree(1, [0], [1.0], [0, 5], n_actions=4)
    with pytest.raises(ValueError, match="depth"):
        spot.omdt_milp(lake, -1)
    with pytest.raises(ValueError, match="time_limit"):
        spot.omdt_milp(lake, 1, time_limit=0)
    with pytest.raises(ValueError, match="weights"):
        spot.spot(lake, 2, weights="best")
    with pytest.raises(ValueError, match="slip"):
        spot.frozen_lake("4x4", slip=0.7)
    with pytest.raises(ValueError, match="backend"):
        spot.rsbb(np.zeros((16, 4)), lake.X, 2, backend="jax")
    with pytest.raises(TypeError):
        spot.sysadmin(2.5)


# ------------------------------------------------------------------ trees
def test_tree_routing_and_text(lake):
    t = spot.Tree(2, [0, 1, -1], [1.0, 0.0, 0.0], [0, 1, 2, 3], n_actions=4)
    X = lake.X
    expect = np.where(X[:, 0] > 1, 2, np.where(X[:, 1] > 0, 1, 0))
    np.testing.assert_array_equal(t.act(X), expect)
    text = t.to_text(lake.feature_names, lake.action_names)
    assert "if row <= 1:" in text and "if col <= 0:" in text
    assert spot.candidate_splits(X) == [(0, 0.0), (0, 1.0), (0, 2.0), (1, 0.0), (1, 1.0), (1, 2.0)]


def test_depth0_is_best_constant(lake):
    res = spot.omdt_milp(lake, 0, time_limit=20)
    best = max(spot.evaluate(lake, np.full(16, a))[0] for a in range(4))
    assert res.optimal and abs(res.value - best) < 1e-9


def test_exhaustive_and_milp_agree_with_enumeration():
    mdp = spot.frozen_lake(TINY)
    for depth in (1, 2):
        brute = max(spot.evaluate(mdp, t)[0] for t in spot.enumerate_trees(mdp.X, depth, 4))
        J, tree = spot.exhaustive_tree(mdp, depth)
        assert abs(J - brute) < 1e-12 and abs(spot.evaluate(mdp, tree)[0] - J) < 1e-12
        res = spot.omdt_milp(mdp, depth, time_limit=20)
        assert res.optimal and abs(res.value - brute) < 1e-7
        assert abs(res.objective - res.value) < 1e-6
        assert spot.spot(mdp, depth).J <= brute + 1e-12


def test_omdt_lake_depth2(lake):
    res = spot.omdt_milp(lake, 2, time_limit=30)
    assert res.optimal and abs(res.value - 0.36517) < 1e-5
    assert abs(res.objective - res.value) < 1e-6 and res.bound >= res.value - 1e-7


# ------------------------------------------------------------------ RSBB
def test_depth1_parse_vs_bruteforce():
    rng = np.random.default_rng(1)
    X = spot.frozen_lake("4x4").X
    B = spot.split_matrix(X)
    for _ in range(50):
        G = rng.normal(size=(16, 4))
        mask = rng.random(16) < 0.6
        v, k = spot.depth1_parse(G, mask, B)
        leaf = G[mask].sum(0).max() if mask.any() else 0.0
        cands = [leaf] + [
            G[mask & ~B[j]].sum(0).max() + G[mask & B[j]].sum(0).max() for j in range(len(B))
        ]
        assert abs(v - max(cands)) < 1e-10 and v >= leaf - 1e-12
        assert (k == -1) == (abs(v - leaf) < 1e-12)


def test_rsbb_equals_enumeration_depth2(lake):
    rng = np.random.default_rng(2)
    B = spot.split_matrix(lake.X)
    full = np.ones(16, bool)
    for _ in range(30):
        G = rng.normal(size=(16, 4))
        brute = max(
            [spot.depth1_parse(G, full, B)[0]]
            + [
                spot.depth1_parse(G, ~B[j], B)[0] + spot.depth1_parse(G, B[j], B)[0]
                for j in range(len(B))
            ]
        )
        v, tree, _ = spot.rsbb(G, lake.X, 2)
        assert abs(v - brute) < 1e-10
        assert abs(G[np.arange(16), tree.act(lake.X)].sum() - v) < 1e-10


def test_rsbb_equals_improvement_milp():
    rng = np.random.default_rng(3)
    X = spot.frozen_lake(["SFF", "FHF", "FFG"]).X
    for depth, reps in ((1, 2), (2, 3), (3, 1)):
        for _ in range(reps):
            G = rng.normal(size=(9, 4))
            v, tree, st = spot.rsbb(G, X, depth)
            ref = spot.improvement_milp(G, X, depth, time_limit=30)
            assert ref.optimal
            assert abs(v - ref.value) <= 1e-9 * max(1, abs(v))


def test_rsbb_trace_monotone_and_bound_types():
    G, X, v, st = experiments.bnb_problem("lake 6x6", 3)
    tr = st.trace
    assert np.all(np.diff(tr[:, 1]) <= 1e-12) and np.all(np.diff(tr[:, 2]) >= -1e-12)
    assert abs(tr[-1, 1] - tr[-1, 2]) < 1e-12 and abs(tr[-1, 2] - v) < 1e-12
    v2, _, st2 = spot.rsbb(G, X, 3, exact_parse=False)
    assert abs(v - v2) < 1e-12 and st2.nodes >= st.nodes


def _frontier_numpy_and_torch(rng, G, nodes, children, exact, device):
    """``bound_frontier`` on ``G`` of a random frontier (``nodes`` open, ``children`` masks) by
    both backends: ``(numpy, torch)``, each ``(bound, incumbent)``."""
    n = G.shape[0]
    B = rng.random((nodes, n)) < 0.5
    masks = rng.random((children, len(exact), n)) < 0.5
    exact = np.array(exact)
    return (
        spot.bound_frontier(G, B, masks, exact, backend="numpy"),
        spot.bound_frontier(G, B, masks, exact, backend="torch", device=device),
    )


def test_bound_frontier_torch_matches_numpy():
    pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    G = rng.normal(size=(20, 3))
    (b1, i1), (b2, i2) = _frontier_numpy_and_torch(rng, G, 7, 9, [True, False, True, False], "cpu")
    np.testing.assert_allclose(b1, b2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(i1, i2, rtol=1e-12, atol=1e-12)
    assert np.all(b1 >= i1 - 1e-12)


def test_rsbb_torch_backend_matches_numpy():
    pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for i in range(20):
        n = 12 + i
        X = rng.integers(0, 4, size=(n, 2)).astype(float)
        G = rng.normal(size=(n, 3))
        depth = 2 + i % 2
        v1, t1, _ = spot.rsbb(G, X, depth, backend="numpy")
        v2, t2, _ = spot.rsbb(G, X, depth, backend="torch", device="cpu")
        assert abs(v1 - v2) <= 1e-6 * max(1, abs(v1))
        obj = G[np.arange(n), t2.act(X)].sum()
        assert abs(obj - v1) <= 1e-6 * max(1, abs(v1))


@pytest.mark.cuda
def test_bound_children_cuda():
    rng = np.random.default_rng(6)
    G = rng.normal(size=(256, 5))
    (b1, i1), (b2, i2) = _frontier_numpy_and_torch(
        rng, G, 30, 512, [True, True, False, False], "cuda"
    )
    np.testing.assert_allclose(b1, b2, rtol=1e-9)
    np.testing.assert_allclose(i1, i2, rtol=1e-9)
    X = rng.integers(0, 8, size=(256, 3)).astype(float)
    v1 = spot.rsbb(G, X, 3)[0]
    v2 = spot.rsbb(G, X, 3, backend="torch", device="cuda")[0]
    assert abs(v1 - v2) <= 1e-6 * abs(v1)


# ------------------------------------------------------------------ the loop
def test_spot_reaches_milp_optimum_on_lake(lake):
    res = spot.spot(lake, 3)
    assert abs(res.J - 0.52012) < 1e-4
    assert abs(spot.evaluate(lake, res.tree)[0] - res.J) < 1e-10
    best = np.maximum.accumulate(res.history)
    assert np.all(np.diff(best) >= 0) and abs(best[-1] - res.J) < 1e-12
    assert res.iterations <= 50 and res.stop in ("converged", "cycle", "max_iter")


def test_spot_weighting_failure_case_and_portfolio():
    slick = spot.frozen_lake("4x4", slip=0.0)
    runs = {w: spot.spot(slick, 2, w).J for w in spot.WEIGHTINGS[:4]}
    assert abs(runs["optimal"] - 0.95099) < 1e-5 and runs["uniform"] < 0.1
    port = spot.spot(slick, 2, "portfolio")
    assert port.J >= max(runs.values()) - 1e-12 and port.weights == "optimal"
    cold = spot.spot(spot.frozen_lake("4x4"), 2, warm_start=False)
    assert cold.J <= 0.36517 + 1e-5


def test_spot_deterministic(lake):
    a, b = spot.spot(lake, 3), spot.spot(lake, 3)
    np.testing.assert_array_equal(a.tree.act(lake.X), b.tree.act(lake.X))
    assert a.history == b.history


def test_greedy_tree_is_valid(lake):
    for d in (0, 1, 2, 3):
        t = spot.greedy_tree(lake, d)
        J = spot.evaluate(lake, t)[0]
        assert t.depth == d and J <= 0.54203 + 1e-6


def test_highs_is_quiet(lake, capfd):
    spot.improvement_milp(np.random.default_rng(0).normal(size=(16, 4)), lake.X, 1, 5)
    out, err = capfd.readouterr()
    assert "HiGHS" not in out and "HiGHS" not in err


def test_figures_have_fixed_trace_counts():
    Settings = experiments.ExplorerSettings
    runs = [experiments.explorer_run(Settings("lake 4x4", 2, slip=s)) for s in (0.0, 0.2)]
    counts = {len(figures.slip_figure(r).data) for r in runs}
    for w in ("optimal", "uniform"):
        run = experiments.explorer_run(Settings("lake 4x4 not slippery", 2, w, cart=True))
        counts.add(len(figures.spot_figure(run).data))
    assert counts == {6}
    stats = experiments.bnb_problem("lake 4x4", 3)[3]
    assert {len(figures.bnb_trace_figure(stats, p, "lake").data) for p in (0, 50, 100)} == {4}
    with pytest.raises(TypeError, match="stats"):
        figures.bnb_trace_figure("lake 4x4")


@pytest.mark.slow
def test_sysadmin_depth2_stall_below_exhaustive_optimum():
    admin = spot.sysadmin(6)
    J_opt, tree = spot.exhaustive_tree(admin, 2)
    loop = spot.spot(admin, 2, "portfolio")
    assert abs(J_opt - 276.54) < 0.01 and loop.J < J_opt - 10  # the loop stalls (263.1)
    stored = spot.best_sysadmin_depth2()  # the tree the notebooks evaluate by default
    assert not stored.enumerated and abs(stored.J - J_opt) < 1e-9


def test_stored_sysadmin_tree_is_a_valid_depth2_tree():
    stored = spot.best_sysadmin_depth2()
    admin = spot.sysadmin(6)
    assert stored.tree.depth == 2 and abs(spot.evaluate(admin, stored.tree)[0] - stored.J) < 1e-12
    assert stored.J > spot.spot(admin, 2).J  # above the loop's stall


def test_pair_bound_children():
    pytest.importorskip("torch")
    from lab.spot import fast, reference

    rng = np.random.default_rng(3)
    X = spot.frozen_lake("4x4").X
    B = spot.split_matrix(X)
    G = rng.normal(size=(16, 4))
    masks = rng.random((7, 3, 16)) < 0.5
    exact = np.array([True, False, True])
    b1, i1 = reference.bound_children(G, B, masks, exact)
    b2, i2 = fast.bound_children(G, B, masks, exact)
    assert np.allclose(b1, b2, atol=1e-12) and np.allclose(i1, i2, atol=1e-12)
    assert np.all(b1 >= i1 - 1e-12)  # a bound is never below the incumbent


def test_experiment_drivers():
    from lab.spot import experiments

    # 0.7 s on an idle core; a 20 s limit was hit under the baseline numerics on a loaded machine
    step = experiments.compare_improvement_step("lake 4x4", 2, 300.0)
    assert step.highs_proven and abs(step.rsbb_value - step.highs_value) < 1e-9
    assert step.speedup_at_least == pytest.approx(step.highs_seconds / step.rsbb_seconds)
    lake = spot.frozen_lake("4x4")
    loop = spot.spot(lake, 1)
    factor = 20.0 / loop.seconds  # 20 s: ample time, the MILP proves the depth-1 optimum
    ttv = experiments.time_to_value(lake, 1, loop, factor=factor)
    assert ttv.reached and ttv.milp_proven and ttv.milp_limit == pytest.approx(20.0)
    runs = experiments.weighting_runs(lake, 1, ("optimal", "uniform"))
    assert set(runs) == {"optimal", "uniform"}
    with pytest.raises(TypeError, match="loop"):
        experiments.time_to_value(lake, 1, 0.5)
    with pytest.raises(ValueError, match="factor"):
        experiments.time_to_value(lake, 1, loop, factor=-1)
    with pytest.raises(TypeError, match="weights"):
        experiments.weighting_runs(lake, 1, "optimal")


def test_greedy_split_tree_is_a_feasible_answer_to_the_step(lake):
    """The greedy top-down tree is a valid tree whose value is its objective, never above RSBB's
    certified optimum, and equal to it at depth 1 (one node: its own parse is exact)."""
    rng = np.random.default_rng(5)
    for d in (0, 1, 2, 3):
        G = rng.normal(size=(16, 4))
        v, tree = spot.greedy_split_tree(G, lake.X, d)
        assert tree.depth == d
        assert v == pytest.approx(G[np.arange(16), tree.act(lake.X)].sum(), abs=1e-12)
        v_opt = spot.rsbb(G, lake.X, d)[0]
        assert v <= v_opt + 1e-12
        if d <= 1:
            assert v == pytest.approx(v_opt, abs=1e-12)
    with pytest.raises(ValueError, match="rows like G"):
        spot.greedy_split_tree(np.zeros((15, 4)), lake.X, 2)
    with pytest.raises(ValueError, match="depth"):
        spot.greedy_split_tree(np.zeros((16, 4)), lake.X, -1)
    with pytest.raises(ValueError, match="finite"):
        spot.greedy_split_tree(np.full((16, 4), np.nan), lake.X, 2)


def test_reference_trees_and_baseline_drivers():
    from lab.spot import experiments

    for (name, d), (*_, certified) in experiments.REFERENCE_TREES.items():
        ref = experiments.reference_tree(name, d)
        mdp = experiments.make_mdp(name)
        J_star = float(mdp.p0 @ spot.value_iteration(mdp)[0])
        assert ref.tree.depth == d and ref.J <= J_star + 1e-9
        if certified:  # a certified optimum is at least as good as the loop's tree
            assert ref.J >= spot.spot(mdp, d).J - 1e-9
    assert experiments.reference_tree("sysadmin 6", 2).J == pytest.approx(
        spot.best_sysadmin_depth2().J, abs=1e-9
    )
    with pytest.raises(ValueError, match="depth"):
        experiments.reference_tree("lake 8x8", 1)
    with pytest.raises(ValueError, match="name"):
        experiments.reference_tree("lake 4x4", 2)
    lake = spot.frozen_lake("4x4")
    cart = experiments.cart_run(lake, 2)
    assert cart.seconds > 0 and cart.J == pytest.approx(spot.evaluate(lake, cart.tree)[0])
    t = experiments.milp_time_to_value(lake, 1, 0.0, 1.0, factor=20.0)  # value 0: any tree
    assert t.reached and t.milp_limit == pytest.approx(20.0)
    with pytest.raises(ValueError, match="value"):
        experiments.milp_time_to_value(lake, 1, float("nan"), 1.0)
    with pytest.raises(ValueError, match="seconds"):
        experiments.milp_time_to_value(lake, 1, 0.1, 0.0)
    v, s = experiments.greedy_step("lake 4x4", 2)
    assert s >= 0 and v <= experiments.bnb_problem("lake 4x4", 2)[2] + 1e-12


def test_public_kernels_and_figures_validate_their_arguments(lake):
    from lab.spot import fast, reference

    B = spot.split_matrix(lake.X)
    masks = np.ones((2, 1, 16), dtype=bool)
    for kernel in (reference.bound_children, fast.bound_children):
        with pytest.raises(ValueError, match="G"):
            kernel(None, B, masks, np.array([True]))
        with pytest.raises(ValueError, match="exact"):
            kernel(np.zeros((16, 4)), B, masks, np.array([True, False]))
        with pytest.raises(ValueError, match="states"):
            kernel(np.zeros((16, 4)), B[:, :5], masks, np.array([True]))
    with pytest.raises(TypeError, match="mdp"):
        figures.action_symbols("lake")
    with pytest.raises(TypeError, match="tree"):
        figures.policy_figure(lake, None)


def test_explorer_run_is_cached_and_validates():
    Settings = experiments.ExplorerSettings
    run = experiments.explorer_run(Settings("lake 4x4", 1, cart=True))
    assert run is experiments.explorer_run(Settings("lake 4x4", depth=1, cart=True))  # memoised
    assert run.cart is not None and run.result.J <= run.optimum + 1e-12
    assert abs(spot.evaluate(run.mdp, run.result.tree)[0] - run.result.J) < 1e-12
    with pytest.raises(ValueError, match="slip"):
        Settings("lake 4x4", 1, slip=0.9)
    with pytest.raises(ValueError, match="weights"):
        Settings("lake 4x4", 1, "nope")
    with pytest.raises(TypeError, match="settings"):
        experiments.explorer_run("lake 4x4")


def test_settings_validate_once_and_drive_the_notebooks():
    steps = experiments.StepSettings([["lake 4x4", 2]], 300.0)
    assert steps.instances == (("lake 4x4", 2),)
    (row,) = experiments.improvement_steps(steps)
    assert row.rsbb_value == pytest.approx(experiments.bnb_problem("lake 4x4", 2)[2], abs=1e-12)
    with pytest.raises(ValueError, match="highs_limit"):
        experiments.StepSettings((("lake 4x4", 2),), -1.0)
    with pytest.raises(TypeError, match="instances"):
        experiments.StepSettings("lake 4x4", 1.0)
    with pytest.raises(ValueError, match="instances"):
        experiments.LoopSettings((("lake 4x4", 2),))
    with pytest.raises(ValueError, match="weights"):
        experiments.LoopSettings((("lake 8x8", 2),), ("portfolio",))
    with pytest.raises(ValueError, match="factor"):
        experiments.LoopSettings((("lake 8x8", 2),), factor=0.0)
    with pytest.raises(TypeError, match="settings"):
        experiments.instance_runs(steps)


# ------------------------------------------------------------------ ties decided by index
def _ulps(a, rng, k=4):
    """``a`` with each entry moved by a random number of ulps in ``[-k, k]`` (another CPU)."""
    a = np.array(a, dtype=float)
    for _ in range(k):
        step = rng.integers(-1, 2, size=a.shape)
        a = np.where(
            step > 0, np.nextafter(a, np.inf), np.where(step < 0, np.nextafter(a, -np.inf), a)
        )
    return a


def test_sysadmin_optimal_policy_ties_go_to_the_lowest_action():
    """The ring is symmetric: several actions tie exactly (e.g. every reboot in the all-down
    state). A few ulps of rounding (another CPU's kernels) flip a plain argmax; the policy must
    not move, since it decides the weights, the warm start and the depth2-stall claim."""
    from lab.spot.mdp import first_max, value_tolerance

    admin = spot.sysadmin(6)
    V, pi = spot.value_iteration(admin)
    Q = admin.R + admin.gamma * admin.P @ V
    tol = value_tolerance(admin)
    near = Q >= Q.max(1, keepdims=True) - tol
    tied = near.sum(1) > 1
    assert tied.sum() >= 6 and pi[0] == 0  # all down: reboot 0, the lowest of six equals
    np.testing.assert_array_equal(pi, near.argmax(1))  # the lowest tied action everywhere
    gaps = Q.max(1, keepdims=True) - np.where(near, -np.inf, Q)
    assert gaps.min() > 1e6 * tol  # real gaps are far above the tolerance
    rng = np.random.default_rng(0)
    flipped = False
    for _ in range(20):
        Qp = _ulps(Q, rng)
        np.testing.assert_array_equal(first_max(Qp, tol), pi)
        flipped |= bool(np.any(Qp.argmax(1) != pi))
    assert flipped  # the perturbation does move a plain argmax: the ties are real
    # the whole pipeline on a perturbed model: same optimal policy, same stalled loop
    Rp = _ulps(admin.R, rng)
    other = spot.TabularMDP(admin.P, Rp, admin.X, admin.p0, admin.gamma)
    np.testing.assert_array_equal(spot.value_iteration(other)[1], pi)


def test_search_ties_go_to_the_first_tree_in_index_order():
    """Trees of the same policy (or mirror-image splits) have equal values in exact arithmetic;
    perturbing G by a few ulps must not change the split, the leaves or the returned tree."""
    from lab.spot.reference import sum_tolerance

    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    B = spot.split_matrix(X)  # x0 > 0 and x1 > 0
    G = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]) * 0.1
    # splitting on x0 or x1 gains exactly as much (0.2 = 0.1 + 0.1), the leaf 0.2 too: a tie
    rng = np.random.default_rng(1)
    for _ in range(30):
        Gp = _ulps(G, rng)
        assert spot.parse_node(Gp, np.ones(4, bool), B)[1:] == (-1, 0, 0)
    G3 = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [0.0, 1.0]]) * 0.3  # x0, x1 tie at 0.9
    picks = {spot.parse_node(_ulps(G3, rng), np.ones(4, bool), B)[1] for _ in range(30)}
    assert picks == {0}
    # the loop's second step on the system administrator ("mix" weights after the warm start):
    # at depth 3 open partial trees tie on their bounds, and the expansion order decides
    # which of two trees of the same policy is returned (a plain heap order flips in 3 of 6)
    admin = spot.sysadmin(6)
    V, pi = spot.value_iteration(admin)
    w = spot.state_weights(admin, "optimal", optimal_policy=pi)
    tree0 = spot.rsbb(w[:, None] * (admin.R + admin.gamma * admin.P @ V), admin.X, 3)[1]
    pi0 = tree0.act(admin.X)
    w = spot.state_weights(admin, "mix", pi0, optimal_policy=pi)
    G = w[:, None] * (admin.R + admin.gamma * admin.P @ spot.evaluate(admin, pi0)[1])
    assert sum_tolerance(G) < 1e-10
    v, tree, _ = spot.rsbb(G, admin.X, 3)
    for _ in range(6):
        vp, tp, _ = spot.rsbb(_ulps(G, rng), admin.X, 3)
        assert abs(vp - v) < 1e-10
        np.testing.assert_array_equal(tp.features, tree.features)
        np.testing.assert_array_equal(tp.leaves, tree.leaves)


def test_worked_example():
    """The lesson page's four-state example (book/spot/index.md, "A worked example")."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    G = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]])
    right = spot.split_matrix(X)
    assert G.sum(0).max() == 3.0  # one leaf
    assert spot.depth1_parse(G, np.ones(4, bool), right) == (4.0, 0)
    assert G.max(1).sum() == 5.0  # the state-wise bound of the empty depth-2 tree
    value, tree, _ = spot.rsbb(G, X, 2)
    assert value == 5.0 and tree.act(X).tolist() == [0, 1, 0, 1]
