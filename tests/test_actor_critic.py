"""Tests of lab.actor_critic: single-timescale actor-critic on tabular MDPs.

Mirrors the "Correctness checks" of the chapter spec
(shared/papers/actor-critic-global-convergence.md), at CPU size; paper-scale runs are `slow`.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from lab import actor_critic as ac
from lab.core.runtime import small_problem_threads


@pytest.fixture(scope="module")
def mdp():
    return ac.random_mdp(6, 3, 0.9, 0)


@pytest.fixture(scope="module")
def default_run(mdp):
    return ac.single_timescale_ac(
        mdp, 20_000, (0.1, 2 / 3), (1.0, 2 / 3), 8, 0, show_progress=False
    )


# ------------------------------------------------------------------------------------------
# exact quantities
# ------------------------------------------------------------------------------------------


def test_random_mdp_is_valid_and_deterministic():
    a, b = ac.random_mdp(5, 4, 0.8, 3), ac.random_mdp(5, 4, 0.8, 3)
    np.testing.assert_array_equal(a.P, b.P)
    np.testing.assert_array_equal(a.R, b.R)
    assert a.P.shape == (5, 4, 5) and a.R.shape == (5, 4) and a.rho.shape == (5,)
    np.testing.assert_allclose(a.P.sum(-1), 1.0, atol=1e-12)
    assert not np.array_equal(a.P, ac.random_mdp(5, 4, 0.8, 4).P)


def test_policy_evaluation_satisfies_bellman(mdp):
    rng = np.random.default_rng(0)
    pi = ac.softmax_policy(rng.standard_normal((6, 3)))
    V, Q = ac.policy_evaluation(mdp, pi)
    P_pi = np.einsum("sa,sat->st", pi, mdp.P)
    r_pi = np.sum(pi * mdp.R, 1)
    np.testing.assert_allclose(V, r_pi + mdp.gamma * P_pi @ V, atol=1e-12)
    np.testing.assert_allclose(np.sum(pi * Q, 1), V, atol=1e-12)
    # batched = one by one
    pis = ac.softmax_policy(rng.standard_normal((4, 6, 3)))
    Vb, Qb = ac.policy_evaluation(mdp, pis)
    for i in range(4):
        np.testing.assert_allclose(Vb[i], ac.policy_evaluation(mdp, pis[i])[0], atol=1e-12)


def test_value_iteration_matches_linear_program(mdp):
    V, Q, policy = ac.optimal_values(mdp)
    # Bellman optimality to 1e-10
    np.testing.assert_allclose(V, np.max(mdp.R + mdp.gamma * mdp.P @ V, 1), atol=1e-10)
    np.testing.assert_allclose(policy.sum(1), 1.0)
    # trusted solver: the primal LP  min sum V  s.t.  V >= r + gamma P V  (scipy/HiGHS)
    S, A = mdp.n_states, mdp.n_actions
    A_ub = (mdp.gamma * mdp.P.reshape(S * A, S)) - np.repeat(np.eye(S), A, axis=0)
    res = linprog(np.ones(S), A_ub=A_ub, b_ub=-mdp.R.reshape(-1), bounds=[(None, None)] * S)
    assert res.status == 0
    np.testing.assert_allclose(V, res.x, atol=1e-7)
    # no softmax policy beats J*
    J_star = V @ mdp.rho
    rng = np.random.default_rng(1)
    assert np.all(ac.expected_return(mdp, ac.softmax_policy(rng.normal(size=(50, 6, 3)))) <= J_star)


def test_occupancy_is_a_distribution_and_matches_restart_sampler(mdp):
    rng = np.random.default_rng(2)
    pi = ac.softmax_policy(rng.standard_normal((6, 3)))
    d = ac.occupancy(mdp, pi)
    assert np.all(d >= 0) and abs(d.sum() - 1) < 1e-12
    # the restart sampler's stopping state is distributed as d
    n = 20_000
    from lab.actor_critic.reference import _restart_draw

    s, steps = _restart_draw(mdp, np.broadcast_to(pi, (n, 6, 3)), rng)
    freq = np.bincount(s, minlength=6) / n
    se = np.sqrt(d * (1 - d) / n)
    assert np.all(np.abs(freq - d) <= 4 * se + 1e-12)
    assert abs(steps.mean() - mdp.gamma / (1 - mdp.gamma)) < 0.3


def test_exact_gradient_matches_finite_differences():
    for seed in range(3):
        m = ac.random_mdp(5, 3, 0.85, seed)
        theta = np.random.default_rng(seed).standard_normal((5, 3))
        grad = ac.exact_policy_gradient(m, theta)
        num = np.zeros_like(theta)
        h = 1e-6
        for idx in np.ndindex(theta.shape):
            e = np.zeros_like(theta)
            e[idx] = h
            jp = ac.expected_return(m, ac.softmax_policy(theta + e))
            jm = ac.expected_return(m, ac.softmax_policy(theta - e))
            num[idx] = (jp - jm) / (2 * h)
        assert np.linalg.norm(grad - num) <= 1e-6 * np.linalg.norm(num)
        np.testing.assert_allclose(grad.sum(1), 0.0, atol=1e-12)  # softmax invariance


def test_gradient_domination_along_exact_pg(mdp):
    V_star, _, policy = ac.optimal_values(mdp)
    d_star = ac.occupancy(mdp, policy)
    a_star = policy.argmax(1)
    theta = np.zeros((6, 3))
    J_star = V_star @ mdp.rho
    for _ in range(300):
        pi = ac.softmax_policy(theta)
        grad = ac.exact_policy_gradient(mdp, theta)
        gap = J_star - ac.expected_return(mdp, pi)
        d = ac.occupancy(mdp, pi)
        c = np.min(pi[np.arange(6), a_star]) / (np.sqrt(6) * np.max(d_star / d))
        # Mei et al. (2020) Lemma 8 (our J carries the 1/(1-gamma) of the unnormalised value)
        assert np.linalg.norm(grad) >= c * gap - 1e-12
        theta = theta + 1.0 * grad


def test_exact_pg_ascent_converges(mdp):
    pg = ac.exact_pg_ascent(mdp, 2000, 1.0)
    assert pg.gap[0] > 1.0 and pg.gap[-1] < 5e-3
    assert np.all(np.diff(pg.gap) <= 1e-12)  # ascent with a small enough step is monotone
    assert ac.fit_rate(pg.k, pg.gap, (100, 2000)) < -0.8  # O(1/k)


def test_from_gymnasium_frozenlake():
    pytest.importorskip("gymnasium")
    m = ac.from_gymnasium("FrozenLake-v1", gamma=0.9)
    assert m.n_states == 17 and m.n_actions == 4
    np.testing.assert_allclose(m.P[-1, :, -1], 1.0)  # absorbing end state
    V, _, _ = ac.optimal_values(m)
    assert V[15] == 0.0 and V[14] > V[0] > 0.0  # goal is terminal; near the goal is worth more
    m2 = ac.from_gymnasium("FrozenLake-v1", gamma=0.9, rho="initial")
    assert m2.rho[0] == 1.0
    taxi = ac.from_gymnasium("Taxi-v4", gamma=0.9)
    assert taxi.n_states == 501 and taxi.n_actions == 6


# ------------------------------------------------------------------------------------------
# the algorithm
# ------------------------------------------------------------------------------------------


def test_step_schedule():
    s = ac.StepSchedule(0.5, 2 / 3)
    assert s(0) == pytest.approx(0.5)
    np.testing.assert_allclose(s(np.array([0, 7])), [0.5, 0.5 * 8 ** (-2 / 3)])
    assert ac.StepSchedule(20.0, 2 / 3, cap=1.0)(0) == 1.0
    assert ac.StepSchedule(1.0, 0.0)(10**6) == 1.0


def test_single_update_touches_one_row_and_one_entry(mdp):
    u = np.random.default_rng(0).random((2, 3, 4))
    h1 = ac.single_timescale_ac(
        mdp, 1, (0.1, 2 / 3), (1.0, 2 / 3), 3, uniforms=u[:1], show_progress=False
    )
    h2 = ac.single_timescale_ac(
        mdp, 2, (0.1, 2 / 3), (1.0, 2 / 3), 3, uniforms=u, show_progress=False
    )
    # first step from Q = 0: advantage 0, actor unchanged; exactly one critic entry moves
    assert np.all(h1.theta == 0)
    assert np.all(np.count_nonzero(h1.Q.reshape(3, -1), axis=1) == 1)
    changed = np.any(h2.theta != h1.theta, axis=2).sum(1)
    assert np.all(changed <= 1)
    assert np.all(np.count_nonzero((h2.Q - h1.Q).reshape(3, -1), axis=1) <= 1)


def test_default_run_reaches_the_spec_numbers(default_run):
    h = default_run
    i = np.searchsorted(h.k, 1000)
    assert h.gap[-1] < 0.4 * h.gap[i]  # measured 0.81 / 2.49
    slope = ac.fit_rate(h.samples, h.gap, (500, 2e4))
    assert -0.6 <= slope <= -0.2  # measured -0.32
    assert np.all(np.isfinite(h.theta)) and np.all(h.gaps >= -1e-9)
    np.testing.assert_allclose(ac.softmax_policy(h.theta).sum(-1), 1.0)


def test_half_schedule_and_stall(mdp):
    h = ac.single_timescale_ac(mdp, 20_000, (0.1, 0.5), (1.0, 0.5), 8, 0, show_progress=False)
    assert h.gap[-1] < 0.4  # measured 0.36: the tuned classical schedule is faster here
    big = ac.single_timescale_ac(
        mdp, 20_000, (10.0, 2 / 3), (1.0, 2 / 3), 8, 0, show_progress=False
    )
    assert np.all(np.isfinite(big.theta))
    assert big.gap[-1] > 1.0  # too large an actor step stalls


def test_determinism(mdp):
    a = ac.single_timescale_ac(mdp, 500, (0.1, 2 / 3), (1.0, 2 / 3), 4, 7, show_progress=False)
    b = ac.single_timescale_ac(mdp, 500, (0.1, 2 / 3), (1.0, 2 / 3), 4, 7, show_progress=False)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.gaps, b.gaps)


def test_restart_sampler_counts_transitions(mdp):
    h = ac.single_timescale_ac(
        mdp, 300, (0.1, 2 / 3), (1.0, 2 / 3), 4, sampler="restart", show_progress=False
    )
    # mean 1/(1-gamma) transitions per iteration
    assert 7 * 300 < h.samples[-1] < 13 * 300


def test_pair_single_timescale_ac(mdp):
    """The pair: reference.single_timescale_ac == fast.single_timescale_ac (torch, CPU) on
    the same uniforms."""
    u = np.random.default_rng(3).random((2000, 5, 4))
    ref = ac.single_timescale_ac(
        mdp, 2000, (0.1, 2 / 3), (1.0, 2 / 3), 5, uniforms=u, show_progress=False
    )
    with small_problem_threads(1):
        fast = ac.fast.single_timescale_ac(
            mdp, 2000, (0.1, 2 / 3), (1.0, 2 / 3), 5, uniforms=u, device="cpu", show_progress=False
        )
    np.testing.assert_allclose(fast.theta, ref.theta, atol=1e-10)
    np.testing.assert_allclose(fast.Q, ref.Q, atol=1e-10)
    np.testing.assert_allclose(fast.gaps, ref.gaps, atol=1e-10)


@pytest.mark.cuda
def test_torch_cuda_matches_reference(mdp):
    u = np.random.default_rng(4).random((1000, 16, 4))
    ref = ac.single_timescale_ac(
        mdp, 1000, (0.1, 2 / 3), (1.0, 2 / 3), 16, uniforms=u, show_progress=False
    )
    fast = ac.fast.single_timescale_ac(
        mdp, 1000, (0.1, 2 / 3), (1.0, 2 / 3), 16, uniforms=u, device="cuda", show_progress=False
    )
    np.testing.assert_allclose(fast.theta, ref.theta, atol=1e-8)


def test_rates_helpers():
    k = np.geomspace(1, 1e5, 50)
    assert ac.fit_rate(k, 3 * k ** (-1 / 3)) == pytest.approx(-1 / 3, abs=1e-9)
    assert ac.samples_to_epsilon(k, 1 / k, 0.01) == pytest.approx(k[k >= 100 - 1e-9][0])
    assert ac.samples_to_epsilon(k, np.ones(50), 0.5) == float("inf")


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


def test_bad_input(mdp):
    with pytest.raises(ValueError, match="gamma"):
        ac.random_mdp(4, 2, 1.0, 0)
    with pytest.raises(ValueError, match="P rows"):
        ac.TabularMDP(np.ones((2, 2, 2)), np.zeros((2, 2)), 0.9, np.full(2, 0.5))
    with pytest.raises(ValueError, match="rho"):
        ac.TabularMDP(np.full((2, 2, 2), 0.5), np.zeros((2, 2)), 0.9, np.array([0.7, 0.7]))
    with pytest.raises(ValueError, match="c"):
        ac.StepSchedule(-0.1, 0.5)
    with pytest.raises(ValueError, match="p"):
        ac.StepSchedule(0.1, 1.5)
    with pytest.raises(ValueError, match="K"):
        ac.single_timescale_ac(mdp, 0)
    with pytest.raises(ValueError, match="sampler"):
        ac.single_timescale_ac(mdp, 10, sampler="stationary")
    with pytest.raises(TypeError, match="actor"):
        ac.single_timescale_ac(mdp, 10, actor=0.1)
    with pytest.raises(TypeError, match="mdp"):
        ac.policy_evaluation("mdp", np.ones((6, 3)) / 3)
    with pytest.raises(ValueError, match="pi"):
        ac.policy_evaluation(mdp, np.ones((6, 3)))
    with pytest.raises(ValueError, match="uniforms"):
        ac.single_timescale_ac(mdp, 10, runs=2, uniforms=np.zeros((10, 3, 4)))


def test_ac_update_by_hand():
    theta = np.array([[0.0, np.log(3.0)], [0.5, -0.5]])  # pi(.|0) = (1/4, 3/4)
    Q = np.array([[1.0, 2.0], [0.5, 4.0]])
    th, q = ac.ac_update(theta, Q, 0, 0, 1, 1, reward=0.3, gamma=0.5, eta=0.2, beta=0.1)
    adv = 1.0 - (0.25 * 1.0 + 0.75 * 2.0)  # Q(0,0) - V(0) = -0.75
    np.testing.assert_allclose(th[0], theta[0] + 0.2 / 0.5 * np.array([0.75, -0.75]) * adv)
    np.testing.assert_array_equal(th[1], theta[1])
    assert q[0, 0] == pytest.approx(1.0 + 0.1 * (0.3 + 0.5 * 4.0 - 1.0))
    assert np.count_nonzero(q != Q) == 1 and theta[0, 0] == 0.0  # inputs not modified
    with pytest.raises(ValueError, match="s_next"):
        ac.ac_update(theta, Q, 0, 0, 5, 1, 0.3, 0.5, 0.2, 0.1)


def test_worked_example_of_the_lesson():
    """book/actor_critic/index.md, "A worked example": the numbers a student checks by hand."""
    theta, Q = ac.ac_update(
        np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, 0.5]]), 0, 0, 1, 1,
        reward=1.0, gamma=0.9, eta=0.1, beta=0.5,
    )  # fmt: skip
    np.testing.assert_allclose(theta, [[0.25, -0.25], [0.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(ac.softmax_policy(theta)[0], [0.622, 0.378], atol=5e-4)
    np.testing.assert_allclose(Q, [[1.225, 0.0], [0.0, 0.5]], atol=1e-15)
    assert ac.StepSchedule(0.1, 2 / 3)(7) == pytest.approx(0.025)
    assert (3 / 0.3) ** 3 == pytest.approx(1e3) and (3 / 0.03) ** 3 == pytest.approx(1e6)
    budget = sum(ac.StepSchedule(1.0, 2 / 3)(k) for k in range(10_000))  # "about 62"
    assert round(budget) == 62


# ------------------------------------------------------------------------------------------
# the batched many-MDP engine and the exponent study
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_batch_engine_matches_reference_per_mdp(backend):
    mdps = [ac.random_mdp(5, 3, 0.9, s) for s in (1, 2, 3)]
    K, R = 400, 2
    u = np.random.default_rng(5).random((K, 3 * R, 4))
    actor, critic = ac.StepSchedule(0.5, 2 / 3), ac.StepSchedule(20.0, 2 / 3, cap=1.0)
    with small_problem_threads(1):
        b = ac.single_timescale_ac_many(
            mdps, K, actor, critic, R, uniforms=u, eval_points=12, backend=backend,
            device="cpu", show_progress=False,
        )  # fmt: skip
    assert b.gaps.shape == (3, R, b.k.size) and b.mdp_gap.shape == (3, b.k.size)
    for i, m in enumerate(mdps):
        ref = ac.single_timescale_ac(
            m, K, actor, critic, R, uniforms=u[:, i * R : (i + 1) * R], eval_points=12,
            show_progress=False,
        )  # fmt: skip
        np.testing.assert_allclose(b.gaps[i], ref.gaps, atol=1e-10)
        np.testing.assert_allclose(b.critic_errors[i], ref.critic_errors, atol=1e-10)
        assert b.J_star[i] == pytest.approx(ref.J_star, abs=1e-12)


@pytest.mark.cuda
def test_batch_engine_cuda_matches_numpy():
    mdps = [ac.random_mdp(6, 3, 0.9, s) for s in range(4)]
    u = np.random.default_rng(6).random((500, 4 * 8, 4))
    a = ac.single_timescale_ac_many(mdps, 500, runs=8, uniforms=u, backend="numpy")
    b = ac.single_timescale_ac_many(mdps, 500, runs=8, uniforms=u, backend="torch", device="cuda")
    np.testing.assert_allclose(a.gaps, b.gaps, atol=1e-8)


def test_batch_engine_is_deterministic_and_validates():
    m = [ac.random_mdp(4, 2, 0.9, 0), ac.random_mdp(4, 2, 0.9, 1)]
    a = ac.single_timescale_ac_many(m, 200, runs=2, seed=3, show_progress=False)
    b = ac.single_timescale_ac_many(m, 200, runs=2, seed=3, show_progress=False)
    np.testing.assert_array_equal(a.gaps, b.gaps)
    with pytest.raises(ValueError, match="share"):
        ac.single_timescale_ac_many([m[0], ac.random_mdp(5, 2, 0.9, 0)], 10)
    with pytest.raises(TypeError, match="mdps"):
        ac.single_timescale_ac_many([], 10)
    with pytest.raises(TypeError, match=r"mdps\[1\]"):
        ac.single_timescale_ac_many([m[0], "x"], 10)
    with pytest.raises(ValueError, match="backend"):
        ac.single_timescale_ac_many(m, 10, backend="jax")
    with pytest.raises(ValueError, match="uniforms"):
        ac.single_timescale_ac_many(m, 10, runs=2, uniforms=np.zeros((10, 3, 4)), backend="numpy")


def test_exponent_study_fits_and_maps_the_interval():
    settings = ac.StudySettings(3, 2, 600, eval_points=20)
    st = ac.exponent_study(settings, {"p": ac.SCHEDULES[next(iter(ac.SCHEDULES))]},
                           show_progress=False)  # fmt: skip
    ci = st.gap_ci["p"]
    assert ci.exponents.shape == (3,) and ci.low <= ci.mean <= ci.high
    q, lo, hi = st.eps_exponent["p"]
    if ci.high < 0:  # q = -1/slope, the interval mapped through the same monotone map
        assert q == pytest.approx(-1 / ci.mean) and lo == pytest.approx(-1 / ci.low)
        assert hi == pytest.approx(-1 / ci.high)
    assert st.window == (600 / 30, 600.0)
    with pytest.raises(ValueError, match="n_mdps"):
        ac.StudySettings(1)
    with pytest.raises(ValueError, match="window_start"):
        ac.StudySettings(2, 1, 200, window_start=0.9)
    with pytest.raises(ValueError, match="backend"):
        ac.StudySettings(backend="jax")
    with pytest.raises(TypeError, match="settings"):
        ac.exponent_study(16)
    with pytest.raises(TypeError, match="schedules"):
        ac.exponent_study(ac.StudySettings(2, 1, 200), {"x": 1})


def test_pair_exact_pg_ascent():
    """The declared pair (PAIRS): reference.exact_pg_ascent == fast.exact_pg_many, MDP by MDP."""
    mdps = [ac.random_mdp(6, 3, 0.9, s) for s in (0, 1, 2)]
    for actor in (ac.StepSchedule(0.1, 2 / 3), (1.0, 0.5)):
        k, gaps = ac.exact_pg_many(mdps, 400, actor, eval_points=15)
        assert gaps.shape == (3, k.size)
        for i, m in enumerate(mdps):
            step = actor if isinstance(actor, ac.StepSchedule) else ac.StepSchedule(*actor)
            ref = ac.exact_pg_ascent(m, 400, step, eval_points=15)
            np.testing.assert_allclose(ref.k, k)
            np.testing.assert_allclose(ref.gap, gaps[i], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="K"):
        ac.exact_pg_many(mdps, 0)
    with pytest.raises(TypeError, match="mdps"):
        ac.exact_pg_many("mdp", 10)
    with pytest.raises(ValueError, match="eval_points"):
        ac.exact_pg_many(mdps, 10, eval_points=1)


def test_exponent_study_runs_the_exact_gradient_baseline():
    sched = dict(list(ac.SCHEDULES.items())[:1])
    st = ac.exponent_study(ac.StudySettings(3, 2, 600, eval_points=20), sched, show_progress=False)
    (name,) = sched
    k, gaps = ac.exact_pg_many([ac.random_mdp(6, 3, 0.9, s) for s in range(3)], 600,
                                sched[name][0], eval_points=20)  # fmt: skip
    np.testing.assert_allclose(st.exact_gap[name], gaps)
    d = st.rate_gap[name]
    diffs = st.gap_ci[name].exponents - st.exact_ci[name].exponents
    assert d["paired"] and d["n"] == 3 and d["estimate"] == pytest.approx(diffs.mean())
    assert d["lo"] <= d["estimate"] <= d["hi"]


# ------------------------------------------------------------------------------------------
# the widgets' precomputed runs (issue 21)
def test_run_grid_equals_schedule_run_exactly():
    """The grid's runs are the one-run driver's: bit-equal with the machine's native kernels;
    under the baseline numerics mode (other BLAS kernels) within 1.8e-15 relative (measured),
    so the comparison allows 64 ulps of float64."""
    from lab.actor_critic import experiments as ex

    def same(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return a.shape == b.shape and np.allclose(a, b, rtol=64 * np.finfo(float).eps, atol=0)

    configs = [(0.666667, 0.666667, 0.1, 1.0), (0.5, 0.0, 10.0, 0.01), (1.0, 1.0, 0.001, 3.0)]
    settings = ac.RunSettings(K=300, runs=3, seed=5)
    grid = ex.run_grid(configs, settings)
    for c, run in zip(configs, grid, strict=True):
        h, pg = run.history, run.pg
        h0 = ac.single_timescale_ac(
            ac.random_mdp(6, 3, 0.9, 5), 300, (c[2], c[0]), (c[3], c[1]), 3, 5,
            eval_points=60, show_progress=False,
        )  # fmt: skip
        pg0 = ac.exact_pg_ascent(ac.random_mdp(6, 3, 0.9, 5), 300, ac.StepSchedule(c[2], c[0]),
                                 eval_points=60)  # fmt: skip
        for name in ("k", "samples", "gaps", "critic_errors", "optimal_action_prob", "theta", "Q"):
            assert same(getattr(h, name), getattr(h0, name)), name
        for name in ("k", "gap", "grad_norm", "optimal_action_prob", "theta"):
            assert same(getattr(pg, name), getattr(pg0, name)), name
        # schedule_run reads the stored run (the same object)
        assert ac.schedule_run(*c, settings) is run
    # stored runs are not recomputed; the with_pg=False runs are separate
    assert ex.run_grid(configs[:1], settings)[0] is grid[0]
    no_pg = ac.RunSettings(K=300, runs=3, seed=5, with_pg=False)
    assert ex.run_grid(configs[:1], no_pg)[0].pg is None


def test_schedule_run_computes_what_run_grid_would():
    """A schedule no batch stored is computed by the one-run path, equal to the batch's."""
    c = (0.4, 0.5, 0.3, 3.0)
    a = ac.schedule_run(*c, ac.RunSettings(K=200, runs=2, seed=11, with_pg=False))
    b = ac.run_grid([c], ac.RunSettings(K=200, runs=2, seed=12, with_pg=False))[0]
    assert a.pg is None and a.config == c and np.isfinite(a.slope)
    assert b.history.J_star != a.history.J_star  # another MDP


def test_run_grid_and_settings_validate():
    from lab.actor_critic import experiments as ex

    with pytest.raises(TypeError, match="configs"):
        ex.run_grid(3)
    with pytest.raises(ValueError, match="configs"):
        ex.run_grid([(0.5, 0.5, 0.1)])
    with pytest.raises(ValueError, match="p_actor"):
        ex.run_grid([(1.5, 0.5, 0.1, 1.0)])
    with pytest.raises(ValueError, match="c_critic"):
        ex.run_grid([(0.5, 0.5, 0.1, 0.0)])
    with pytest.raises(TypeError, match="settings"):
        ex.run_grid([(0.5, 0.5, 0.1, 1.0)], 300)
    with pytest.raises(ValueError, match="K"):
        ac.RunSettings(K=0)
    with pytest.raises(ValueError, match="runs"):
        ac.RunSettings(runs=0)
    with pytest.raises(TypeError, match="with_pg"):
        ac.RunSettings(with_pg="yes")
    with pytest.raises(ValueError, match="critic_cap"):
        ac.RunSettings(critic_cap=-1.0)
    with pytest.raises(TypeError, match="settings"):
        ac.precompute_schedules(3000)
    with pytest.raises(TypeError, match="constants"):
        ac.precompute_stall("abc")
    with pytest.raises(ValueError, match="constants"):
        ac.precompute_stall([0.1, -1.0])


def test_precomputed_widget_values_are_memo_reads():
    from lab.actor_critic import experiments as ex
    from lab.actor_critic import figures

    stall = ac.RunSettings(K=200, runs=2, seed=1, with_pg=False)
    assert ac.precompute_stall((0.1, 10.0), stall) == 14
    n = ex._schedule_run.misses
    fig = figures.stall_figure(ac.schedule_run(0.666667, 0.666667, 10.0, 1.0, stall))
    fig = figures.stall_figure(ac.schedule_run(0.4, 0.666667, 10.0, 1.0, stall))
    assert ex._schedule_run.misses == n and len(fig.data) == 7
    widget = ac.RunSettings(K=200, runs=2, seed=1)
    assert ac.precompute_schedules(widget) == 28
    assert hasattr(ac.precompute_schedules, "clear")  # memoised in experiments.py
    n = ex._schedule_run.misses
    run = ac.schedule_run(0.666667, 0.0, 0.1, 1.0, widget)
    assert ex._schedule_run.misses == n and len(figures.schedule_figure(run).data) == 5
    with pytest.raises(TypeError, match="run"):
        figures.schedule_figure(3)
    with pytest.raises(ValueError, match="with_pg"):
        figures.schedule_figure(ac.schedule_run(0.666667, 0.666667, 10.0, 1.0, stall))


def test_run_grid_run_seed_draws_the_runs_not_the_mdp():
    from lab.actor_critic import experiments as ex

    c = [(0.5, 0.666667, 0.1, 1.0)]

    def run(seed, run_seed=None):
        settings = ac.RunSettings(K=200, runs=3, seed=seed, with_pg=False, run_seed=run_seed)
        return ex.run_grid(c, settings)[0].history

    h = run(7)
    assert np.array_equal(run(7, run_seed=7).gaps, h.gaps)  # run_seed = seed: the default's runs
    other = run(7, run_seed=8)
    assert other.J_star == h.J_star  # the same MDP
    assert not np.array_equal(other.gaps, h.gaps)  # other random numbers
    mdp8 = ac.random_mdp(6, 3, 0.9, 8)
    h8 = run(8)
    assert h8.J_star != h.J_star and h8.J_star == pytest.approx(
        ac.optimal_values(mdp8)[0] @ mdp8.rho
    )
    with pytest.raises(ValueError, match="run_seed"):
        run(7, run_seed=-1)


# ------------------------------------------------------------------------------------------
# the registered claims and what each records
def test_registry_holds_every_claim_with_a_rival_or_a_reason():
    from lab.actor_critic.claims import CLAIMS

    assert set(CLAIMS.notebooks()) == {"01", "02"}
    assert len(CLAIMS.specs) == 8
    for spec in CLAIMS.specs.values():
        assert bool(spec.rival) != bool(spec.no_rival), spec.id


def test_phase_map_checks_and_their_rivals():
    from lab.actor_critic import evidence

    phase = np.array([[0.3, 0.5, 0.8, 2.2], [1.5, 1.4, 1.8, 2.7], [2.9, 2.9, 3.0, 3.0]])
    slow, fast = evidence.phase_map(phase, 5000)
    assert slow["measured"] is True and fast["measured"] is True
    assert slow["control"].measured is False and fast["control"].measured is False
    with pytest.raises(ValueError, match="phase"):
        evidence.phase_map(np.zeros((2, 4)), 5000)
    with pytest.raises(TypeError, match="per_run"):
        evidence.tuned_half_faster({}, {}, [], 5000, 1)
