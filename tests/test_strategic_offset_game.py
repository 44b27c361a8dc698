"""Tests of lab.strategic's extra baseline: the offset game (``lab.strategic.offset_game``) and
the doubling-epoch learner (``lab.strategic.doubling_epochs``). CPU, float64, a few seconds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lab.strategic import doubling_epochs as learner
from lab.strategic import offset_game as game


@pytest.fixture(scope="module")
def env():
    return game.StrategicEnv(n_mc=100_000)


@pytest.fixture(scope="module")
def long_run(env):
    return learner.explore_fit_shift(env, 2**15, seed=0, n_dirs=180)


# ------------------------------------------------------------------------------------------
# best responses
# ------------------------------------------------------------------------------------------
def test_best_response_invariants():
    rng = np.random.default_rng(0)
    for _ in range(20):
        X = rng.standard_normal((2000, 2))
        w = rng.standard_normal(2)
        tau, r = rng.uniform(-1, 1), rng.uniform(0, 1.5)
        Xt = game.best_response(X, w, tau, r)
        u = w / np.linalg.norm(w)
        s = X @ u
        band = (s >= tau - r) & (s < tau)
        moved = np.any(Xt != X, axis=1)
        np.testing.assert_array_equal(moved, band)  # moved fraction = band mass, exactly
        assert np.all(game.accepts(Xt[band], w, tau))  # every mover gets in
        assert np.all(np.linalg.norm(Xt - X, axis=1) <= r + 1e-8)
        # movers go straight along w (no sideways component)
        d = Xt[band] - X[band]
        np.testing.assert_allclose(d[:, 0] * u[1] - d[:, 1] * u[0], 0, atol=1e-12)
    X = rng.standard_normal((500, 3))
    np.testing.assert_array_equal(game.best_response(X, [1.0, 0, 0], 0.2, 0.0), X)  # r = 0
    np.testing.assert_array_equal(game.best_response(X, [1.0, 0, 0], -np.inf, 2.0), X)  # all pass


def test_floating_point_trap_on_the_boundary():
    """Movers projected exactly onto the bar (tie = 0) round to the wrong side; the nudge fixes it."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((100_000, 2))
    w = np.array([math.cos(0.6), math.sin(0.6)])
    tau = 0.8
    s = X @ w
    band = (s >= tau - 0.5) & (s < tau)
    exact = game.best_response(X, w, tau, 0.5, tie=0.0)
    lost = ~game.accepts(exact[band], w, tau)
    assert lost.mean() > 0.05  # a real fraction of movers paid and were rejected
    nudged = game.best_response(X, w, tau, 0.5)
    assert np.all(game.accepts(nudged[band], w, tau))
    # agents sitting exactly on the bar already pass and do not move
    on = np.array([[tau * w[0], tau * w[1]]])
    if game.accepts(on, w, tau)[0]:
        np.testing.assert_array_equal(game.best_response(on, w, tau, 0.5), on)
    # and the trap shows up in the regret of the clairvoyant rule
    env = game.StrategicEnv(n_mc=50_000)
    assert env.regret(*game.clairvoyant(env)) == 0.0
    assert env.regret(*game.clairvoyant(env), tie=0.0) > 1e-3


# ------------------------------------------------------------------------------------------
# environment, clairvoyant rule, closed form
# ------------------------------------------------------------------------------------------
def test_clairvoyant_is_optimal(env):
    w, tau = game.clairvoyant(env)
    assert tau == env.b_star + env.r
    shifts = np.linspace(0, 2 * env.r, 21)
    losses = [env.expected_loss(env.w_star, env.b_star + s) for s in shifts]
    assert int(np.argmin(losses)) == 10  # s = r
    assert env.regret(w, tau) == 0.0


@pytest.mark.parametrize("noise", game.NOISE_PROFILES)
def test_unshifted_gap_closed_form(noise):
    env = game.StrategicEnv(noise=noise, n_mc=200_000)
    gap = env.expected_loss(env.w_star, env.b_star) - env.expected_loss(*game.clairvoyant(env))
    assert abs(gap - game.closed_form_unshifted_gap(env)) < 0.005
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
        theta, err = learner.erm01_1d(s, y)
        assert err == _brute_1d(s, y)
        assert err == int(np.sum(np.where(s >= theta, 1, -1) != y))
        theta2, err2 = learner.erm01_1d(np.exp(s), y)  # monotone transform
        assert err2 == err
    s = rng.standard_normal(100)
    assert learner.erm01_1d(s, np.where(s >= 0.3, 1.0, -1.0))[1] == 0


def test_erm01_fast_matches_reference():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(5, 200))
        X = rng.standard_normal((n, 2))
        y = np.where(X @ [0.6, 0.8] >= 0.1, 1.0, -1.0) * np.where(rng.random(n) < 0.2, -1, 1)
        w1, b1 = learner.erm01_halfspace(X, y, n_dirs=90)
        w2, b2 = learner.erm01_halfspace(X, y, n_dirs=90, backend="torch", device="cpu")
        np.testing.assert_allclose(w1, w2, atol=1e-12)
        assert abs(b1 - b2) < 1e-12


def test_erm01_recovers_boundary_and_logistic_does_not():
    env = game.StrategicEnv(n_mc=1000)
    X, y = env.sample(10_000, np.random.default_rng(6))
    w, b = learner.erm01_halfspace(X, y, n_dirs=180)
    assert abs(math.atan2(w[1], w[0]) - 0.6) < 0.03 and abs(b - env.b_star) < 0.05
    wl, bl = learner.logistic_halfspace(X, y)
    assert abs(bl - env.b_star) > 0.2  # biased by asymmetric Massart noise
    # with symmetric (uniform) noise both recover it
    env_u = game.StrategicEnv(noise="uniform", n_mc=1000)
    X, y = env_u.sample(10_000, np.random.default_rng(7))
    wl, bl = learner.logistic_halfspace(X, y)
    assert abs(math.atan2(wl[1], wl[0]) - 0.6) < 0.05 and abs(bl - env.b_star) < 0.05


# ------------------------------------------------------------------------------------------
# the online learner
# ------------------------------------------------------------------------------------------
def test_epoch_schedule():
    for T, L0, c_e in itertools.product([64, 1000, 2**15 + 7], [16, 64], [0.3, 1.0, 3.0]):
        sched = learner.epoch_schedule(T, L0, c_e, 2)
        lengths = [a + b for a, b in sched]
        assert sum(lengths) == T
        assert all(lengths[k] == L0 * 2**k for k in range(len(lengths) - 1))
        assert all(b >= 0 for _, b in sched)
        explore = sum(a for a, _ in sched)
        # geometric sum: <= c_e sqrt(2 d T) sqrt(2) / (sqrt(2) - 1) + one ceil per epoch
        assert explore <= 4.9 * c_e * math.sqrt(2 * T) + len(sched)
        assert explore >= min(T, 0.5 * c_e * math.sqrt(2 * T))


def test_prefix_property_and_determinism(env, long_run):
    short = learner.explore_fit_shift(env, 2**12, seed=0, n_dirs=180)
    np.testing.assert_array_equal(short["regret"], long_run["regret"][: 2**12])
    again = learner.explore_fit_shift(env, 2**12, seed=0, n_dirs=180)
    np.testing.assert_array_equal(short["loss"], again["loss"])


def test_partial_feedback_in_run(long_run):
    assert np.all(long_run["seen"][long_run["explore"]])
    assert not np.all(long_run["seen"][~long_run["explore"]])


def test_regret_rate_and_baseline(env):
    Ts = np.array([2**k for k in range(11, 16)])
    R = np.array(
        [
            np.cumsum(learner.explore_fit_shift(env, Ts[-1], seed=s, n_dirs=180)["regret"])[Ts - 1]
            for s in range(3)
        ]
    )
    slope = learner.regret_slope(Ts, R)
    assert 0.35 <= slope <= 0.65, slope
    naive = np.cumsum(learner.naive_unshifted(env, Ts[-1])["regret"])[Ts - 1]
    assert learner.regret_slope(Ts, naive) > 0.99
    forgot = np.cumsum(learner.explore_fit_shift(env, Ts[-1], shift=False, n_dirs=180)["regret"])[
        Ts - 1
    ]
    assert learner.regret_slope(Ts, forgot) > 0.85


def test_regret_slope_exact():
    T = np.array([10.0, 100, 1000])
    assert abs(learner.regret_slope(T, 3 * T**0.5) - 0.5) < 1e-12
    assert abs(learner.regret_slope(T, np.vstack([T, 3 * T])) - 1.0) < 1e-12


@pytest.mark.slow
def test_convergence_at_128k():
    env = game.StrategicEnv()
    out = learner.explore_fit_shift(env, 2**17, seed=0)
    assert out["w_err"][-1] < 0.05 and out["b_err"][-1] < 0.05


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_inputs(env):
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="r must be >= 0"):
        game.best_response(X, [1.0, 0.0], 0.0, -0.1)
    with pytest.raises(ValueError, match="w must be nonzero"):
        game.best_response(X, [0.0, 0.0], 0.0, 0.1)
    with pytest.raises(ValueError, match="length d = 2"):
        game.best_response(X, [1.0, 0.0, 0.0], 0.0, 0.1)
    with pytest.raises(ValueError, match="eta_max must lie in"):
        game.StrategicEnv(eta_max=0.5)
    with pytest.raises(ValueError, match="noise must be one of"):
        game.StrategicEnv(noise="pink")
    with pytest.raises(ValueError, match="T must be >= L0"):
        learner.explore_fit_shift(env, 10)
    with pytest.raises(TypeError, match="env must be a StrategicEnv"):
        game.clairvoyant("env")
    with pytest.raises(ValueError, match="y must contain only"):
        learner.erm01_1d([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="regrets must be > 0|T_grid and regrets"):
        learner.regret_slope([1, 2], [0.0, 1.0])
    with pytest.raises(TypeError, match="T must be an integer"):
        learner.naive_unshifted(env, 10.5)


@pytest.mark.cuda
def test_erm01_cuda_matches_reference():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((3000, 2))
    y = np.where(X @ [0.6, 0.8] >= 0.1, 1.0, -1.0) * np.where(rng.random(3000) < 0.2, -1, 1)
    w1, b1 = learner.erm01_halfspace(X, y)
    w2, b2 = learner.erm01_halfspace(X, y, backend="torch", device="cuda")
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    assert abs(b1 - b2) < 1e-12
