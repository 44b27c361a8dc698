"""Tests of lab.strategic: online strategic classification with Massart noise.

The paper's model and Algorithm 1 (reference vs fast path, closed forms, invariants), the
settings and drivers; the extra baseline (explore-fit-shift on the offset game) is tested in
``tests/test_strategic_offset_game.py``. CPU, float64, a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab import strategic as st
from lab.strategic import offset_game


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
        # the same agents as the offset game's rule with tau = -m, r = gamma
        np.testing.assert_allclose(R, offset_game.best_response(X, w, -m, gamma), atol=1e-15)
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


def _cvxpy_prox(w, g, alpha, u, c, p):
    import cvxpy as cp

    x = cp.Variable(w.size)
    objective = g @ x + cp.power(cp.pnorm(x - w, p), 2) / (2 * (p - 1) * alpha)
    cp.Problem(cp.Minimize(objective), [cp.norm(x, 2) <= 1, u @ x >= c]).solve(solver="CLARABEL")
    return x.value


def _prox_instance(rng, d, theta_max=1.4):
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    theta = rng.uniform(0.03, theta_max)
    v = rng.standard_normal(d)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    a = rng.uniform(0, theta)
    w = math.cos(a) * u + math.sin(a) * v  # a unit iterate inside the cone
    g = rng.standard_normal(d) * rng.uniform(0.1, 3.0)
    return w, g, 10 ** rng.uniform(-3, -0.5), u, math.cos(theta)


@pytest.mark.filterwarnings("ignore::UserWarning")  # cvxpy approximates the p-norm by SOCs
def test_prox_step_is_the_papers_argmin():
    """Alg. 3 l.6 / Alg. 4 l.8: the minimiser over W of <g, w> + ||w - w_i||_p^2 / (2(p-1)a),
    against cvxpy (whose p-norm is accurate to about 1e-6) on random instances."""
    rng = np.random.default_rng(7)
    for trial in range(36):
        d = (2, 3, 4, 6)[trial % 4]
        p = st.pnorm_exponent(d)
        w, g, alpha, u, c = _prox_instance(rng, d)
        mine = st.prox_step(w, g, alpha, u, c, p, normalise=False)
        assert np.linalg.norm(mine) <= 1 + 1e-10 and mine @ u >= c - 1e-10  # in W
        np.testing.assert_allclose(mine, _cvxpy_prox(w, g, alpha, u, c, p), atol=2e-5)
        unit = st.prox_step(w, g, alpha, u, c, p)
        np.testing.assert_allclose(unit, mine / np.linalg.norm(mine), atol=1e-15)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_prox_step_fallback_solver(monkeypatch):
    """Where Newton's method does not converge, the general solver gives the same argmin."""
    from lab.strategic import prox

    monkeypatch.setattr(prox, "_prox_newton", lambda w, g, *a: (w.copy(), False))
    rng = np.random.default_rng(8)
    for trial in range(6):
        d = (2, 4)[trial % 2]
        p = st.pnorm_exponent(d)
        w, g, alpha, u, c = _prox_instance(rng, d, theta_max=0.1)  # thin cones
        mine = st.prox_step(w, g, alpha, u, c, p, normalise=False)
        np.testing.assert_allclose(mine, _cvxpy_prox(w, g, alpha, u, c, p), atol=2e-5)


def test_batched_prox_equals_the_reference():
    """The fast path's batched Newton (one KKT system per row) = the reference's step."""
    from lab.strategic import fast, prox

    rng = np.random.default_rng(11)
    for d in (2, 3, 5):
        p = st.pnorm_exponent(d)
        rows = [_prox_instance(rng, d) for _ in range(40)]
        W, G, _, U, C = (np.array([r[i] for r in rows]) for i in range(5))
        sol, ok = fast._prox_rows(W, G, 0.05, U, C, p)
        assert ok.mean() > 0.9
        ref = np.stack([prox.prox_argmin(W[i], G[i], 0.05, U[i], C[i], p) for i in range(40)])
        np.testing.assert_allclose(sol[ok], ref[ok], atol=1e-10)
        np.testing.assert_allclose(fast._project_rows(W + G, U, C),
                                   [st.project_cone_ball(W[i] + G[i], U[i], C[i]) for i in range(40)],
                                   atol=1e-14)  # fmt: skip


def test_prox_step_closed_forms():
    rng = np.random.default_rng(9)
    for _ in range(30):
        d = int(rng.integers(2, 6))
        w, g, alpha, u, c = _prox_instance(rng, d)
        # p = 2: the Euclidean projection of w - alpha g onto W, then normalised
        z = st.project_cone_ball(w - alpha * g, u, c)
        np.testing.assert_allclose(st.prox_step(w, g, alpha, u, c, 2.0), z / np.linalg.norm(z),
                                   atol=1e-10)  # fmt: skip
        # and the earlier mirror step (the ablation) coincides with it in p = 2
        np.testing.assert_allclose(st.mirror_step(w, g, alpha, w, -1.0, 2.0),
                                   st.prox_step(w, g, alpha, w, -1.0, 2.0), atol=1e-10)  # fmt: skip
        # g = 0: the iterate does not move
        p = st.pnorm_exponent(d)
        np.testing.assert_array_equal(st.prox_step(w, 0 * g, alpha, u, c, p), w / np.linalg.norm(w))
    # p < 2: the proximal step from w_i is not the mirror step centred elsewhere
    w, g, alpha, u, c = _prox_instance(np.random.default_rng(1), 4)
    p = st.pnorm_exponent(4)
    assert np.linalg.norm(st.prox_step(w, g, alpha, u, c, p)
                          - st.mirror_step(w, g, alpha, u, c, p)) > 1e-4  # fmt: skip


def test_prox_step_bad_input():
    w, u = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="alpha"):
        st.prox_step(w, w, 0.0, u, 0.5, 1.5)
    with pytest.raises(ValueError, match="p"):
        st.prox_step(w, w, 0.1, u, 0.5, 2.5)
    with pytest.raises(ValueError, match="cos_min"):
        st.prox_step(w, w, 0.1, u, 1.5, 1.5)
    with pytest.raises(ValueError, match="center"):
        st.prox_step(w, w, 0.1, 2 * u, 0.5, 1.5)
    with pytest.raises(ValueError, match="g"):
        st.prox_step(w, np.ones(3), 0.1, u, 0.5, 1.5)


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


def test_schedule_marks_the_batch_the_horizon_cuts():
    c = st.Constants()
    for T in (3000, 6000, 50_000):
        ph = st.schedule(T, 2, 0.2, 0.2)
        assert all(p.complete for p in ph[:-1])
        last = ph[-1]
        # Prop. 4's length T_k (uncut), as in the schedule
        T_k = math.ceil(c.c6 * 4**last.k * 1.2 * 2 * math.log(2) * math.log(T) ** 2 / 0.6**4)
        assert last.complete == (last.iterations == T_k), (T, last)
    assert not st.schedule(6000, 2, 0.2, 0.2)[-1].complete  # the chapter's default is cut


def test_prop4_outcomes_scores_complete_batches_only():
    Phase = st.reference.Phase
    phases = [
        Phase("init", 0, 5, 2, 0.0, 0.0, math.pi / 2),
        Phase("refine", 0, 5, 1, 0.1, 0.1, math.pi / 2),
        Phase("enhance", 1, 5, 2, 0.1, 0.1, math.pi / 4),
        Phase("enhance", 2, 5, 2, 0.05, 0.1, math.pi / 8),
        Phase("enhance", 3, 2, 2, 0.025, 0.1, math.pi / 16, complete=False),
    ]
    # outputs: w~0, refinement, batch 1, 2, 3 (cut)
    angles = np.array(
        [
            [1.0, 0.5, 0.3, 0.05, 0.9],  # both batches within their bounds (0.39, 0.20)
            [1.0, 0.9, 0.2, 0.1, 0.0],  # batch 1's precondition fails (0.9 > pi/4)
            [1.0, 0.7, 0.5, 0.3, 0.0],  # batch 1 misses its bound; batch 2 starts outside
        ]
    )
    p4 = st.prop4_outcomes(angles, phases)
    assert p4.k.tolist() == [1, 2]  # the cut batch 3 is left out
    np.testing.assert_array_equal(p4.precondition, [[True, True], [False, True], [True, False]])
    np.testing.assert_array_equal(p4.within, [[True, True], [True, True], [False, False]])
    assert p4.conditional_share == pytest.approx(3 / 4)
    assert p4.chain_share == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="angles"):
        st.prop4_outcomes(angles[:, :2], phases)
    with pytest.raises(TypeError, match="phases"):
        st.prop4_outcomes(angles, "phases")


def test_horizon_study_curves():
    settings = st.HorizonSettings(st.Instance(d=2, gamma=0.2, eta=0.2), (300, 600), (0, 1))
    final, curves = st.horizon_study(settings, device="cpu", curves=True)
    assert final.shape == (2, 2) and [c.shape for c in curves] == [(300,), (600,)]
    np.testing.assert_allclose([c[-1] for c in curves], final.mean(0))
    np.testing.assert_array_equal(st.horizon_study(settings, device="cpu"), final)
    direct = st.strategic_massart_many(settings.instance.env, 600, [0, 1], device="cpu")
    np.testing.assert_array_equal(final[:, 1], direct.regret.sum(1))  # the driver = the kernel
    with pytest.raises(TypeError, match="curves"):
        st.horizon_study(settings, curves="yes")
    with pytest.raises(TypeError, match="settings must be a HorizonSettings"):
        st.horizon_study(st.Instance())


@pytest.fixture(scope="module")
def paired_runs():
    env = st.StrategicMassart(d=3, gamma=0.2, eta=0.2)
    T = 3000
    draws = st.draw_streams(T, 3, [0, 1, 2])
    fast = st.strategic_massart_many(env, T, draws=draws, device="cpu")
    refs = [st.strategic_massart_learner(env, T, draws=tuple(a[i] for a in draws)) for i in (0, 2)]
    return env, fast, refs


def test_pair_strategic_massart_learner(paired_runs):
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
    a = st.strategic_massart_many(env, 800, seeds=[5, 6], device="cpu")
    b = st.strategic_massart_many(env, 800, seeds=[5, 6], device="cpu")
    np.testing.assert_array_equal(a.regret, b.regret)


def test_baselines_linear_regret_and_ours_sublinear():
    instance = st.Instance(d=2, gamma=0.2, eta=0.2)
    env = instance.env
    learners = ("ours", "zhang-partial", "perceptron-full")
    out = st.compare_learners(st.ComparisonSettings(instance, 4000, (0, 1, 2), learners))
    # the driver's runs are the kernels' runs on the same seeds
    ours = st.strategic_massart_many(env, 4000, [0, 1, 2], device="cpu")
    np.testing.assert_array_equal(out.final["ours"], np.cumsum(ours.regret, 1)[:, -1])
    perc = st.strategic_perceptron(env, 4000, [0, 1, 2], feedback="full")
    np.testing.assert_array_equal(out.final["perceptron-full"], np.cumsum(perc.regret, 1)[:, -1])
    # the non-strategic learner pays the manipulators' band every cycle at the end
    band = (1 - 2 * env.eta) * (0.5 - (1 - math.erf(env.gamma / math.sqrt(2))) / 2)
    late = np.diff(out.mean["zhang-partial"][-1000:]).mean()
    assert late > 0.5 * band
    assert out.final["ours"].mean() < out.final["zhang-partial"].mean()
    assert out.final["ours"].mean() < out.final["perceptron-full"].mean()


def test_perceptron_first_round_and_partial_updates():
    env = st.StrategicMassart(d=2, gamma=0.2, eta=0.0)
    run = st.strategic_perceptron(env, 50, seeds=[0], feedback="partial")
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
        st.strategic_massart_many("env", 100)
    with pytest.raises(ValueError, match="variant"):
        st.strategic_massart_many(env, 100, variant="other")
    with pytest.raises(ValueError, match="T must"):
        st.strategic_massart_learner(env, 2)
    with pytest.raises(ValueError, match="name"):
        st.SweepSettings("zeta", [1], 100)
    with pytest.raises(TypeError, match="settings must be a SweepSettings"):
        st.parameter_sweep("gamma")
    with pytest.raises(ValueError, match="learners"):
        st.ComparisonSettings(learners=("ours", "adam"))
    with pytest.raises(ValueError, match="seeds"):
        st.ComparisonSettings(seeds=(0, 0))
    with pytest.raises(ValueError, match="T must"):
        st.ComparisonSettings(T=10)
    with pytest.raises(ValueError, match="eta"):
        st.Instance(eta=0.6)
    with pytest.raises(ValueError, match="shift"):
        st.ScatterSettings(shift=9.0)
    with pytest.raises(ValueError, match="radii"):
        st.RaiseSettings(radii=(-1.0,))
    with pytest.raises(TypeError, match="constants"):
        st.HorizonSettings(constants="c")


@pytest.mark.cuda
def test_fast_path_cuda_matches_cpu():
    env = st.StrategicMassart(d=2)
    a = st.strategic_massart_many(env, 1500, seeds=[0, 1], device="cpu")
    b = st.strategic_massart_many(env, 1500, seeds=[0, 1], device="cuda")
    np.testing.assert_allclose(a.regret, b.regret, atol=1e-8)


def test_parameter_sweep_smoke_mode_keeps_its_shape(monkeypatch):
    """Under LAB_SMOKE=1 each run stops after 200 cycles; one final regret per seed and value."""
    monkeypatch.setenv("LAB_SMOKE", "1")
    sweep = st.parameter_sweep(st.SweepSettings("d", (2, 3), 5_000, (0, 1, 2)))
    assert sweep.final.shape == (3, 2)
    short = st.strategic_massart_many(st.StrategicMassart(d=2), 200, [0, 1, 2])
    assert np.allclose(sweep.final[:, 0], short.regret.sum(1))


def test_notebook1_drivers():
    """raise_curves: the best raise is the radius and the unraised rule's loss gap matches its
    quadrature; best_response_scene: movers = the band, every mover accepted."""
    rc = st.raise_curves(st.RaiseSettings(radii=(0.5,), n_mc=20_000))
    assert abs(rc.best[0.5] - 0.5) < 1e-9
    assert abs(rc.gap[0.5][0] - rc.gap[0.5][1]) < 0.01
    sc = st.best_response_scene(st.ScatterSettings(shift=0.5, r=0.5, n=300))
    s = sc.X @ sc.w
    np.testing.assert_array_equal(sc.moved, (s >= sc.tau - sc.r) & (s < sc.tau))
    assert np.all(sc.accepted[sc.moved])
    fig = st.best_response_figure(sc)
    assert len(fig.data) == 7
    with pytest.raises(TypeError, match="scene"):
        st.best_response_figure("scene")


def test_worked_example():
    """The lesson's worked example (book/strategic/index.md): three agents, w* = e1, gamma = 0.5."""
    X = np.array([[-0.3, 1.0], [-0.7, 0.2], [0.2, 0.0]])
    unraised = st.best_response(X, [1.0, 0.0], 0.0, 0.5)
    np.testing.assert_allclose(unraised, [[0.0, 1.0], [-0.7, 0.2], [0.2, 0.0]], atol=1e-8)
    assert list(st.admits(unraised, [1.0, 0.0], 0.0)) == [True, False, True]
    raised = st.best_response(X, [1.0, 0.0], -0.5, 0.5)
    np.testing.assert_allclose(raised, [[-0.3, 1.0], [-0.7, 0.2], [0.5, 0.0]], atol=1e-8)
    assert list(st.admits(raised, [1.0, 0.0], -0.5)) == [False, False, True]  # = the true labels
    regret = st.rule_regret(np.array([1.0]), 0.0, 0.5, 0.2)[0]
    assert round(regret, 4) == 0.1149  # 0.6 (Phi(0) - Phi(-0.5))
    assert abs(regret - 0.6 * (0.5 - 0.5 * math.erfc(0.5 / math.sqrt(2)))) < 1e-12
