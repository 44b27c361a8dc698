"""Tests of lab.strategic: online strategic classification with Massart noise.

The first part tests the paper's model and Algorithm 1 (reference vs fast path, closed forms,
invariants); the second part the first reconstruction kept as an extra baseline
(``lab.strategic.legacy``). CPU, float64, a few seconds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lab import strategic as st
from lab.strategic import legacy


# ------------------------------------------------------------------------------------------
# the paper's model (Lemma 1, Prop. 1, Cor. 1) and the exact regret
# ------------------------------------------------------------------------------------------
def test_best_response_lemma1():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 3))
    w = np.array([0.6, 0.8, 0.0])
    for m, gamma in ((0.0, 0.2), (-0.3, 0.5), (0.4, 1.0)):
        R = st.best_response(X, w, m, gamma)
        s = X @ w + m
        band = (s >= -gamma) & (s < 0)
        moved = np.any(R != X, axis=1)
        np.testing.assert_array_equal(moved, band)  # exactly the band moves
        assert np.all(np.linalg.norm(R - X, axis=1) <= gamma + 1e-8)  # at most gamma
        assert np.all(st.admits(R[band], w, m))  # every mover gets in
        np.testing.assert_allclose(R[band] @ w + m, 1e-9, atol=1e-12)  # onto the boundary
        # the same agents as the first reconstruction's rule with tau = -m, r = gamma
        np.testing.assert_allclose(R, legacy.best_response(X, w, -m, gamma), atol=1e-15)
    np.testing.assert_array_equal(st.best_response(X, w, 0.1, 0.0), X)  # gamma = 0


def test_proposition1_and_clairvoyant():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20000, 2))
    w, m, gamma = np.array([0.8, -0.6]), 0.3, 0.4
    # Prop. 1: posting sgn(<w, r> + m - gamma) classifies like sgn(<w, x> + m)
    R = st.best_response(X, w, m - gamma, gamma)
    np.testing.assert_array_equal(st.admits(R, w, m - gamma), X @ w + m >= 0)
    env = st.StrategicMassart(d=2, gamma=0.3, eta=0.2)
    w_c, m_c = st.clairvoyant_rule(env.w_star, env.gamma)
    assert env.regret(w_c, -m_c) < 1e-12  # Cor. 1
    for shift in (-0.2, 0.0, 0.15):
        assert env.regret(w_c, env.gamma + shift) > (0 if shift == 0 else 1e-3) - 1e-12


def test_disagreement_closed_form():
    for phi in (0.0, 0.3, 1.2, 2.5, math.pi):
        cos = math.cos(phi)
        assert abs(st.disagreement(np.array([cos]), 0.0)[0] - phi / math.pi) < 1e-12
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400_000, 2))
    for phi, c in ((0.4, 0.3), (2.0, -0.5), (0.0, 0.7)):
        w = np.array([math.cos(phi), math.sin(phi)])
        mc = np.mean(np.sign(X @ w - c + 1e-300) != np.sign(X[:, 0]))
        assert abs(st.disagreement(np.array([math.cos(phi)]), c)[0] - mc) < 0.003


def test_regret_closed_form_vs_monte_carlo():
    env = st.StrategicMassart(d=3, gamma=0.3, eta=0.25)
    w = np.array([0.9, 0.3, -0.2])
    for thr in (0.0, 0.3, 0.6):
        assert abs(env.regret(w, thr) - env.regret_mc(w, thr, n=400_000)) < 0.004


def test_massart_labels():
    env = st.StrategicMassart(d=2, eta=0.3)
    X, y = env.sample(200_000, seed=3)
    flip = y != np.where(X[:, 0] >= 0, 1, -1)
    assert abs(flip.mean() - 0.3) < 0.005
    env_b = st.StrategicMassart(d=2, eta=0.3, noise="boundary")
    assert np.all(env_b.eta_of(X) <= 0.3)


# ------------------------------------------------------------------------------------------
# Algorithm 1: pieces, reference vs fast path
# ------------------------------------------------------------------------------------------
def test_pnorm_and_mirror_step():
    assert abs(st.pnorm_exponent(2) - math.log(16) / (math.log(16) - 1)) < 1e-15
    rng = np.random.default_rng(4)
    w = np.array([0.6, 0.8])
    # with p = 2 the mirror step is a projected, normalised gradient step
    for _ in range(20):
        g = rng.standard_normal(2)
        z = w - 0.05 * g
        np.testing.assert_allclose(st.mirror_step(w, g, 0.05, w, -1.0, 2.0), z / np.linalg.norm(z))
    # projections land in W and are nearest among sampled points of W
    u = np.array([1.0, 0.0, 0.0])
    for _ in range(50):
        v = 2 * rng.standard_normal(3)
        c = rng.uniform(-0.5, 0.95)
        P = st.project_cone_ball(v, u, c)
        assert np.linalg.norm(P) <= 1 + 1e-12 and P @ u >= c - 1e-12
        S = rng.standard_normal((4000, 3))
        S = S / np.linalg.norm(S, axis=1, keepdims=True) * rng.random((4000, 1)) ** (1 / 3)
        S = S[S @ u >= c]
        assert np.linalg.norm(v - P) <= np.min(np.linalg.norm(S - v, axis=1)) + 1e-12


def test_schedule_shapes():
    for T in (100, 5000, 50_000):
        ph = st.schedule(T, 2, 0.2, 0.2)
        assert sum(p.iterations * p.cycles for p in ph) in (T, T + 1)  # cut at T
        assert [p.kind for p in ph[:2]] == ["init", "refine"]
        ks = [p.k for p in ph if p.kind == "enhance"]
        assert ks == list(range(1, len(ks) + 1))
        bs = [p.b for p in ph if p.kind == "enhance"]
        assert all(abs(b2 / b1 - 0.5) < 1e-12 for b1, b2 in zip(bs, bs[1:], strict=False))
    ph = st.schedule(50_000, 2, 0.2, 0.4)  # the cap keeps refinement within T/8
    assert ph[1].iterations <= 50_000 // 8


@pytest.fixture(scope="module")
def paired_runs():
    env = st.StrategicMassart(d=3, gamma=0.2, eta=0.2)
    T = 3000
    draws = st.draw_batch(T, 3, [0, 1, 2])
    fast = st.strategic_massart_batch(env, T, draws=draws, device="cpu")
    refs = [st.strategic_massart_learner(env, T, draws=tuple(a[i] for a in draws)) for i in (0, 2)]
    return env, fast, refs


def test_fast_path_matches_reference(paired_runs):
    env, fast, refs = paired_runs
    for i, ref in zip((0, 2), refs, strict=True):
        np.testing.assert_allclose(fast.cos[i], ref.cos, atol=1e-8)
        np.testing.assert_array_equal(fast.threshold[i], ref.threshold)
        np.testing.assert_allclose(fast.angles[i], ref.angles, atol=1e-7)
        np.testing.assert_allclose(fast.regret[i], ref.regret, atol=1e-8)


def test_run_invariants(paired_runs):
    env, fast, refs = paired_runs
    ref = refs[0]
    assert np.all(ref.regret >= -1e-12) and np.all(ref.regret <= 1 - 2 * env.eta + 1e-12)
    ph = ref.phases
    n_init = 2 * ph[0].iterations
    assert set(np.unique(ref.threshold[:n_init])) == {0.0}
    # enhancement posts thresholds gamma and gamma + b_k only
    enh = ref.threshold[n_init + ph[1].iterations :]
    allowed = {env.gamma} | {env.gamma + p.b for p in ph if p.kind == "enhance"}
    assert set(np.round(np.unique(enh), 12)) <= set(np.round(list(allowed), 12))
    assert ref.angles[-1] < 0.5  # the last batch points near w*


def test_determinism():
    env = st.StrategicMassart()
    a = st.strategic_massart_batch(env, 800, seeds=[5, 6], device="cpu")
    b = st.strategic_massart_batch(env, 800, seeds=[5, 6], device="cpu")
    np.testing.assert_array_equal(a.regret, b.regret)


def test_baselines_linear_regret_and_ours_sublinear():
    env = st.StrategicMassart(d=2, gamma=0.2, eta=0.2)
    out = st.compare_learners(
        env, 4000, seeds=range(3), learners=("ours", "zhang-partial", "perceptron-full")
    )
    # the non-strategic learner pays the manipulators' band every cycle at the end
    band = (1 - 2 * env.eta) * (0.5 - (1 - math.erf(env.gamma / math.sqrt(2))) / 2)
    late = np.diff(out.mean["zhang-partial"][-1000:]).mean()
    assert late > 0.5 * band
    assert out.final["ours"].mean() < out.final["zhang-partial"].mean()
    assert out.final["ours"].mean() < out.final["perceptron-full"].mean()


def test_perceptron_first_round_and_partial_updates():
    env = st.StrategicMassart(d=2, gamma=0.2, eta=0.0)
    run = st.strategic_perceptron_batch(env, 50, seeds=[0], feedback="partial")
    assert abs(run.regret[0, 0] - 0.5) < 1e-12  # the first agent is admitted without a rule
    assert np.all(run.threshold[0, 1:] == env.gamma)


def test_new_bad_inputs():
    env = st.StrategicMassart()
    with pytest.raises(ValueError, match="gamma"):
        st.best_response(np.zeros((2, 2)), [1.0, 0.0], 0.0, -0.1)
    with pytest.raises(ValueError, match="eta"):
        st.StrategicMassart(eta=0.5)
    with pytest.raises(ValueError, match="d must"):
        st.StrategicMassart(d=1)
    with pytest.raises(TypeError, match="env must be a StrategicMassart"):
        st.strategic_massart_batch("env", 100)
    with pytest.raises(ValueError, match="variant"):
        st.strategic_massart_batch(env, 100, variant="other")
    with pytest.raises(ValueError, match="T must"):
        st.strategic_massart_learner(env, 2)
    with pytest.raises(ValueError, match="name"):
        st.parameter_sweep("zeta", [1], 100)


@pytest.mark.cuda
def test_fast_path_cuda_matches_cpu():
    env = st.StrategicMassart(d=2)
    a = st.strategic_massart_batch(env, 1500, seeds=[0, 1], device="cpu")
    b = st.strategic_massart_batch(env, 1500, seeds=[0, 1], device="cuda")
    np.testing.assert_allclose(a.regret, b.regret, atol=1e-8)


# ------------------------------------------------------------------------------------------
# the first reconstruction (lab.strategic.legacy), an extra baseline
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def env():
    return legacy.StrategicEnv(n_mc=100_000)


@pytest.fixture(scope="module")
def long_run(env):
    return legacy.explore_fit_shift(env, 2**15, seed=0, n_dirs=180)


# ------------------------------------------------------------------------------------------
# best responses
# ------------------------------------------------------------------------------------------
def test_best_response_invariants():
    rng = np.random.default_rng(0)
    for _ in range(20):
        X = rng.standard_normal((2000, 2))
        w = rng.standard_normal(2)
        tau, r = rng.uniform(-1, 1), rng.uniform(0, 1.5)
        Xt = legacy.best_response(X, w, tau, r)
        u = w / np.linalg.norm(w)
        s = X @ u
        band = (s >= tau - r) & (s < tau)
        moved = np.any(Xt != X, axis=1)
        np.testing.assert_array_equal(moved, band)  # moved fraction = band mass, exactly
        assert np.all(legacy.accepts(Xt[band], w, tau))  # every mover gets in
        assert np.all(np.linalg.norm(Xt - X, axis=1) <= r + 1e-8)
        # movers go straight along w (no sideways component)
        d = Xt[band] - X[band]
        np.testing.assert_allclose(d[:, 0] * u[1] - d[:, 1] * u[0], 0, atol=1e-12)
    X = rng.standard_normal((500, 3))
    np.testing.assert_array_equal(legacy.best_response(X, [1.0, 0, 0], 0.2, 0.0), X)  # r = 0
    np.testing.assert_array_equal(legacy.best_response(X, [1.0, 0, 0], -np.inf, 2.0), X)  # all pass


def test_floating_point_trap_on_the_boundary():
    """Movers projected exactly onto the bar (tie = 0) round to the wrong side; the nudge fixes it."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((100_000, 2))
    w = np.array([math.cos(0.6), math.sin(0.6)])
    tau = 0.8
    s = X @ w
    band = (s >= tau - 0.5) & (s < tau)
    exact = legacy.best_response(X, w, tau, 0.5, tie=0.0)
    lost = ~legacy.accepts(exact[band], w, tau)
    assert lost.mean() > 0.05  # a real fraction of movers paid and were rejected
    nudged = legacy.best_response(X, w, tau, 0.5)
    assert np.all(legacy.accepts(nudged[band], w, tau))
    # agents sitting exactly on the bar already pass and do not move
    on = np.array([[tau * w[0], tau * w[1]]])
    if legacy.accepts(on, w, tau)[0]:
        np.testing.assert_array_equal(legacy.best_response(on, w, tau, 0.5), on)
    # and the trap shows up in the regret of the clairvoyant rule
    env = legacy.StrategicEnv(n_mc=50_000)
    assert env.regret(*legacy.clairvoyant(env)) == 0.0
    assert env.regret(*legacy.clairvoyant(env), tie=0.0) > 1e-3


# ------------------------------------------------------------------------------------------
# environment, clairvoyant rule, closed form
# ------------------------------------------------------------------------------------------
def test_clairvoyant_is_optimal(env):
    w, tau = legacy.clairvoyant(env)
    assert tau == env.b_star + env.r
    shifts = np.linspace(0, 2 * env.r, 21)
    losses = [env.expected_loss(env.w_star, env.b_star + s) for s in shifts]
    assert int(np.argmin(losses)) == 10  # s = r
    assert env.regret(w, tau) == 0.0


@pytest.mark.parametrize("noise", legacy.NOISE_PROFILES)
def test_unshifted_gap_closed_form(noise):
    env = legacy.StrategicEnv(noise=noise, n_mc=200_000)
    gap = env.expected_loss(env.w_star, env.b_star) - env.expected_loss(*legacy.clairvoyant(env))
    assert abs(gap - legacy.closed_form_unshifted_gap(env)) < 0.005
    assert abs(env.regret(env.w_star, env.b_star) - gap) < 1e-12


def test_feedback_mask(env):
    rng = np.random.default_rng(2)
    Xt, seen, info = env.step(env.w_star, -np.inf, rng, 1000)
    np.testing.assert_array_equal(Xt, info["X"])  # no one moves when all pass
    np.testing.assert_array_equal(seen, info["y"])  # every label revealed
    Xt, seen, info = env.step(env.w_star, env.b_star + env.r, rng, 5000)
    np.testing.assert_array_equal(seen != 0, info["accepted"])
    np.testing.assert_array_equal(seen[info["accepted"]], info["y"][info["accepted"]])


def test_massart_noise_rate(env):
    rng = np.random.default_rng(3)
    X, y = env.sample(200_000, rng)
    flips = y != env.bayes(X)
    right = X[:, 0] > 0
    assert abs(flips[right].mean() - 0.35) < 0.005 and abs(flips[~right].mean() - 0.05) < 0.005


# ------------------------------------------------------------------------------------------
# 0-1 ERM and the surrogate
# ------------------------------------------------------------------------------------------
def _brute_1d(s, y):
    cands = np.concatenate([[s.min() - 1], (np.sort(s)[1:] + np.sort(s)[:-1]) / 2, [s.max() + 1]])
    return min(int(np.sum(np.where(s >= c, 1, -1) != y)) for c in cands)


def test_erm01_1d_exact():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = rng.integers(1, 30)
        s = np.round(rng.standard_normal(n), 1)  # ties included
        y = rng.choice([-1.0, 1.0], n)
        theta, err = legacy.erm01_1d(s, y)
        assert err == _brute_1d(s, y)
        assert err == int(np.sum(np.where(s >= theta, 1, -1) != y))
        theta2, err2 = legacy.erm01_1d(np.exp(s), y)  # monotone transform
        assert err2 == err
    s = rng.standard_normal(100)
    assert legacy.erm01_1d(s, np.where(s >= 0.3, 1.0, -1.0))[1] == 0


def test_erm01_fast_matches_reference():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(5, 200))
        X = rng.standard_normal((n, 2))
        y = np.where(X @ [0.6, 0.8] >= 0.1, 1.0, -1.0) * np.where(rng.random(n) < 0.2, -1, 1)
        w1, b1 = legacy.erm01_halfspace(X, y, n_dirs=90)
        w2, b2 = legacy.erm01_halfspace(X, y, n_dirs=90, backend="torch", device="cpu")
        np.testing.assert_allclose(w1, w2, atol=1e-12)
        assert abs(b1 - b2) < 1e-12


def test_erm01_recovers_boundary_and_logistic_does_not():
    env = legacy.StrategicEnv(n_mc=1000)
    X, y = env.sample(10_000, np.random.default_rng(6))
    w, b = legacy.erm01_halfspace(X, y, n_dirs=180)
    assert abs(math.atan2(w[1], w[0]) - 0.6) < 0.03 and abs(b - env.b_star) < 0.05
    wl, bl = legacy.logistic_halfspace(X, y)
    assert abs(bl - env.b_star) > 0.2  # biased by asymmetric Massart noise
    # with symmetric (uniform) noise both recover it
    env_u = legacy.StrategicEnv(noise="uniform", n_mc=1000)
    X, y = env_u.sample(10_000, np.random.default_rng(7))
    wl, bl = legacy.logistic_halfspace(X, y)
    assert abs(math.atan2(wl[1], wl[0]) - 0.6) < 0.05 and abs(bl - env.b_star) < 0.05


# ------------------------------------------------------------------------------------------
# the online learner
# ------------------------------------------------------------------------------------------
def test_epoch_schedule():
    for T, L0, c_e in itertools.product([64, 1000, 2**15 + 7], [16, 64], [0.3, 1.0, 3.0]):
        sched = legacy.epoch_schedule(T, L0, c_e, 2)
        lengths = [a + b for a, b in sched]
        assert sum(lengths) == T
        assert all(lengths[k] == L0 * 2**k for k in range(len(lengths) - 1))
        assert all(b >= 0 for _, b in sched)
        explore = sum(a for a, _ in sched)
        # geometric sum: <= c_e sqrt(2 d T) sqrt(2) / (sqrt(2) - 1) + one ceil per epoch
        assert explore <= 4.9 * c_e * math.sqrt(2 * T) + len(sched)
        assert explore >= min(T, 0.5 * c_e * math.sqrt(2 * T))


def test_prefix_property_and_determinism(env, long_run):
    short = legacy.explore_fit_shift(env, 2**12, seed=0, n_dirs=180)
    np.testing.assert_array_equal(short["regret"], long_run["regret"][: 2**12])
    again = legacy.explore_fit_shift(env, 2**12, seed=0, n_dirs=180)
    np.testing.assert_array_equal(short["loss"], again["loss"])


def test_partial_feedback_in_run(long_run):
    assert np.all(long_run["seen"][long_run["explore"]])
    assert not np.all(long_run["seen"][~long_run["explore"]])


def test_regret_rate_and_baseline(env):
    Ts = np.array([2**k for k in range(11, 16)])
    R = np.array(
        [
            np.cumsum(legacy.explore_fit_shift(env, Ts[-1], seed=s, n_dirs=180)["regret"])[Ts - 1]
            for s in range(3)
        ]
    )
    slope = legacy.regret_slope(Ts, R)
    assert 0.35 <= slope <= 0.65, slope
    naive = np.cumsum(legacy.naive_unshifted(env, Ts[-1])["regret"])[Ts - 1]
    assert legacy.regret_slope(Ts, naive) > 0.99
    forgot = np.cumsum(legacy.explore_fit_shift(env, Ts[-1], shift=False, n_dirs=180)["regret"])[
        Ts - 1
    ]
    assert legacy.regret_slope(Ts, forgot) > 0.85


def test_regret_slope_exact():
    T = np.array([10.0, 100, 1000])
    assert abs(legacy.regret_slope(T, 3 * T**0.5) - 0.5) < 1e-12
    assert abs(legacy.regret_slope(T, np.vstack([T, 3 * T])) - 1.0) < 1e-12


@pytest.mark.slow
def test_convergence_at_128k():
    env = legacy.StrategicEnv()
    out = legacy.explore_fit_shift(env, 2**17, seed=0)
    assert out["w_err"][-1] < 0.05 and out["b_err"][-1] < 0.05


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_inputs(env):
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="r must be >= 0"):
        legacy.best_response(X, [1.0, 0.0], 0.0, -0.1)
    with pytest.raises(ValueError, match="w must be nonzero"):
        legacy.best_response(X, [0.0, 0.0], 0.0, 0.1)
    with pytest.raises(ValueError, match="length d = 2"):
        legacy.best_response(X, [1.0, 0.0, 0.0], 0.0, 0.1)
    with pytest.raises(ValueError, match="eta_max must lie in"):
        legacy.StrategicEnv(eta_max=0.5)
    with pytest.raises(ValueError, match="noise must be one of"):
        legacy.StrategicEnv(noise="pink")
    with pytest.raises(ValueError, match="T must be >= L0"):
        legacy.explore_fit_shift(env, 10)
    with pytest.raises(TypeError, match="env must be a StrategicEnv"):
        legacy.clairvoyant("env")
    with pytest.raises(ValueError, match="y must contain only"):
        legacy.erm01_1d([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="regrets must be > 0|T_grid and regrets"):
        legacy.regret_slope([1, 2], [0.0, 1.0])
    with pytest.raises(TypeError, match="T must be an integer"):
        legacy.naive_unshifted(env, 10.5)


@pytest.mark.cuda
def test_erm01_cuda_matches_reference():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((3000, 2))
    y = np.where(X @ [0.6, 0.8] >= 0.1, 1.0, -1.0) * np.where(rng.random(3000) < 0.2, -1, 1)
    w1, b1 = legacy.erm01_halfspace(X, y)
    w2, b2 = legacy.erm01_halfspace(X, y, backend="torch", device="cuda")
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    assert abs(b1 - b2) < 1e-12
