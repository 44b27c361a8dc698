"""Tests of lab.omiso: the simulated Utah array, FA, the response model and the closed loop.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/omiso-microstimulation.md):
FA against scikit-learn, the simulator against its generative parameters, the Kalman update
against batch ridge, choice by brute force, numpy vs batched torch on the same seeds, the
control experiment, bad inputs. Sessions are shortened to keep the file fast; the paper-scale
comparison is marked ``slow``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from sklearn.decomposition import FactorAnalysis

from lab import omiso
from lab.omiso.fast import run_sessions
from lab.omiso.settings import SessionBatch, SessionSettings


def fast_run(seeds, methods="omiso", *, n_cal=600, n_train=1500, n_test=400, device="cpu", **world):
    """``run_sessions`` on the sessions ``seeds`` x ``methods`` with the simulator ``world``."""
    settings = SessionSettings(n_cal=n_cal, n_train=n_train, n_test=n_test)
    return run_sessions(SessionBatch(seeds, methods, **world), settings, device=device)


@pytest.fixture(scope="module")
def calib():
    sim = omiso.UtahArraySim(seed=0)
    Y = np.stack([sim.pre()[1] for _ in range(600)])
    return sim, Y


# ------------------------------------------------------------------------------------------
# factor analysis
# ------------------------------------------------------------------------------------------


def test_fit_fa_matches_sklearn(calib):
    sim, Y = calib
    fa = omiso.fit_fa(Y, 4)
    sk = FactorAnalysis(4, tol=1e-8, max_iter=10_000).fit(Y)
    assert abs(fa.loglik(Y) - sk.score(Y)) / abs(sk.score(Y)) < 1e-5
    assert fa.loglik(Y) >= sk.score(Y) - 1e-9  # at least as converged
    assert np.degrees(subspace_angles(fa.L, sk.components_.T)).max() < 1.0
    assert np.degrees(subspace_angles(fa.L, sim.L)).max() < 15.0


def test_posterior_mean_equals_sklearn_transform(calib):
    _, Y = calib
    fa = omiso.fit_fa(Y, 4)
    sk = FactorAnalysis(4).fit(Y)
    sk.components_, sk.noise_variance_, sk.mean_ = fa.L.T, fa.psi, fa.mu
    np.testing.assert_allclose(omiso.fa_posterior_mean(Y, fa), sk.transform(Y), atol=1e-10)


def test_fa_recovers_exact_gaussian_model():
    rng = np.random.default_rng(3)
    L = rng.normal(size=(30, 3))
    psi = rng.uniform(0.2, 1.0, 30)
    Z = rng.normal(size=(5000, 3))
    Y = Z @ L.T + 2.0 + rng.normal(size=(5000, 30)) * np.sqrt(psi)
    fa = omiso.fit_fa(Y, 3)
    assert np.degrees(subspace_angles(fa.L, L)).max() < 3.0
    np.testing.assert_allclose(fa.psi, psi, rtol=0.15)
    # the posterior mean beats least-squares projection in MSE to the true z
    Zhat = omiso.fa_posterior_mean(Y, fa)
    _, R = omiso.align_loadings(L, fa.L)
    ls = np.linalg.lstsq(fa.L, (Y - fa.mu).T, rcond=None)[0].T
    assert ((Zhat @ R - Z) ** 2).mean() < ((ls @ R - Z) ** 2).mean()


def test_align_loadings_undoes_a_rotation():
    rng = np.random.default_rng(0)
    L = rng.normal(size=(20, 4))
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    aligned, R = omiso.align_loadings(L, L @ Q)
    np.testing.assert_allclose(aligned, L, atol=1e-12)
    np.testing.assert_allclose(R @ R.T, np.eye(4), atol=1e-12)


# ------------------------------------------------------------------------------------------
# simulator
# ------------------------------------------------------------------------------------------


def test_array_geometry():
    pos = omiso.array_positions()
    assert pos.shape == (96, 2)
    assert len({tuple(p) for p in pos}) == 96
    sim = omiso.UtahArraySim()
    assert sim.n_patterns == 66 and len(set(map(tuple, sim.patterns))) == 66


def test_simulator_statistics_match_generative_parameters():
    sims = [omiso.UtahArraySim(seed=100 + i, drift=0.0) for i in range(8)]
    Zs = np.stack([[s.pre(record=False)[0] for _ in range(2000)] for s in sims])
    var_s = 0.04 / (1 - 0.98**2)
    assert abs(Zs.var(1).mean() - (var_s + 0.25)) < 0.1
    # first differences: 2 var_s (1 - 0.98) + 2 * 0.25
    assert abs(np.diff(Zs, axis=1).var(1).mean() - (2 * var_s * 0.02 + 0.5)) < 0.02
    sim = omiso.UtahArraySim(seed=5, drift=0.0)
    n = 2000
    Z = np.empty((n, 4))
    Y = np.empty((n, 96))
    for t in range(n):
        Z[t], Y[t] = sim.pre()
    rate = sim.rates(Z)
    assert abs(((Y - rate) ** 2).sum() / rate.sum() - 1) < 0.05  # Poisson: Fano factor 1
    resid = []
    for t in range(400):
        z_pre, _ = sim.pre(record=False)
        mean = sim.response_mean(z_pre, t % 66)
        resid.append(sim.stim(t % 66, record=False)[0] - mean)
    assert abs(np.std(resid) - 0.3) < 0.03


def test_poisson_icdf_is_poisson():
    rng = np.random.default_rng(0)
    r = np.full(200_000, 4.5)
    y = omiso.poisson_icdf(r, rng.random(r.shape))
    assert abs(y.mean() - 4.5) < 0.02 and abs(y.var() - 4.5) < 0.05
    assert omiso.poisson_icdf(np.array([0.0]), np.array([0.5]))[0] == 0


@pytest.mark.parametrize(
    "rate, u, match",
    [
        (None, np.array([0.5]), "rate"),
        (np.array([np.nan]), np.array([0.5]), "rate"),
        (np.array([-1.0]), np.array([0.5]), "rate"),
        (np.array([1.0]), np.array([1.5]), "u"),
        (np.array([1.0, 2.0]), np.array([0.5]), "u"),
        ("junk", np.array([0.5]), "rate"),
    ],
)
def test_poisson_icdf_refuses_junk(rate, u, match):
    """None, NaN and negative rates (and uniforms outside [0, 1] or of another shape) raise
    instead of returning counts."""
    with pytest.raises((ValueError, TypeError), match=match):
        omiso.poisson_icdf(rate, u)


def test_same_seed_same_session_and_drift_moves_effects():
    a = omiso.UtahArraySim(seed=2, drift=0.02)
    b = omiso.UtahArraySim(seed=2, drift=0.02)
    for u in (0, 5, 9):
        za, ya = a.pre()
        zb, yb = b.pre()
        np.testing.assert_array_equal(ya, yb)
        np.testing.assert_array_equal(a.stim(u)[1], b.stim(u)[1])
    assert np.abs(a.beta - a.beta0).max() > 0
    a.reset()
    np.testing.assert_array_equal(a.beta, a.beta0)


def test_kappa_zero_removes_state_dependence():
    sim = omiso.UtahArraySim(kappa=0.0, seed=1)
    z = np.ones(4)
    d = [sim.response_mean(2 * z, u) - sim.response_mean(z, u) for u in range(66)]
    np.testing.assert_allclose(np.array(d), np.tile(0.6 * z, (66, 1)), atol=1e-12)


# ------------------------------------------------------------------------------------------
# response model
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def triples():
    rng = np.random.default_rng(0)
    n, q, U = 800, 4, 10
    W_true = rng.normal(size=(U, q, q + 1))
    Zp = rng.normal(size=(n, q))
    u = rng.integers(0, U, n)
    Zq = np.einsum("nqd,nd->nq", W_true[u], np.c_[Zp, np.ones(n)]) + 0.3 * rng.normal(size=(n, q))
    return Zp, u, Zq, W_true


def test_sequential_kalman_equals_batch_ridge(triples):
    Zp, u, Zq, _ = triples
    for aware in (True, False):
        batch = omiso.StimResponseModel(10, 4, state_aware=aware, lam=1.0).fit(Zp, u, Zq)
        seq = omiso.StimResponseModel(10, 4, state_aware=aware, lam=1.0, q_proc=0.0)
        for z, k, zq in zip(Zp, u, Zq, strict=True):
            seq.update(int(k), z, zq)
        np.testing.assert_allclose(seq.W, batch.W, atol=1e-8)
        np.testing.assert_allclose(seq.P, batch.P, atol=1e-8)


def test_ridge_matches_sklearn_ridge(triples):
    from sklearn.linear_model import Ridge

    Zp, u, Zq, _ = triples
    m = omiso.StimResponseModel(10, 4, lam=1.0).fit(Zp, u, Zq)
    sel = u == 3
    X = np.c_[Zp[sel], np.ones(sel.sum())]
    ref = Ridge(alpha=1.0, fit_intercept=False).fit(X, Zq[sel])
    np.testing.assert_allclose(m.W[3], ref.coef_, atol=1e-10)


def test_P_stays_positive_definite():
    rng = np.random.default_rng(1)
    m = omiso.StimResponseModel(3, 2, q_proc=0.002)
    for _ in range(10_000):
        m.update(int(rng.integers(3)), rng.normal(size=2), rng.normal(size=2))
    for P in m.P:
        np.testing.assert_allclose(P, P.T, atol=1e-14)
        assert np.linalg.eigvalsh(P).min() > 0


def test_choose_is_brute_force_and_shift_invariant(triples):
    Zp, u, Zq, _ = triples
    m = omiso.StimResponseModel(10, 4).fit(Zp, u, Zq)
    rng = np.random.default_rng(2)
    for _ in range(100):
        z, tg = rng.normal(size=4), rng.normal(size=2)
        pred = m.predict(z)
        brute = int(np.argmin([np.sum((pred[k, :2] - tg) ** 2) for k in range(10)]))
        assert m.choose(z, tg) == brute
        shifted = omiso.StimResponseModel(10, 4)
        shifted.W = m.W.copy()
        shifted.W[:, 2:, -1] += 5.0  # a common shift outside K changes nothing
        assert shifted.choose(z, tg) == brute
        shifted.W[:, :2, -1] += 0.7  # inside K: nearest to target - c
        assert shifted.choose(z, tg) == m.choose(z, tg - 0.7)


def test_miso_update_rule():
    m = omiso.MiSOBaseline(3, 2, lr=0.1)
    m.fit(np.zeros((3, 2)), np.array([0, 1, 2]), np.array([[1.0, 0], [0, 1], [1, 1]]))
    m.update(1, None, np.array([1.0, 1.0]))
    np.testing.assert_allclose(m.pred[1], [0.1, 1.0])
    assert m.choose(np.zeros(2), np.array([1.0, 0.0])) == 0


# ------------------------------------------------------------------------------------------
# closed loop: reference vs fast path, determinism, the claims at reduced size
# ------------------------------------------------------------------------------------------


def test_pair_run_session():
    """The declared pair (PAIRS): reference.run_session == fast.run_sessions, session by session."""
    kw = dict(drift=0.01, adapt=0.02, ramp=0.0005, kappa=0.8)
    seeds, methods = [1, 1, 2, 4], ["omiso", "miso", "static", "random"]
    fast = fast_run(seeds, methods, n_cal=300, n_train=250, n_test=60, **kw)
    for i, (s, m) in enumerate(zip(seeds, methods, strict=True)):
        log = omiso.run_session(omiso.UtahArraySim(seed=s, **kw), m, SessionSettings(300, 250, 60))
        np.testing.assert_array_equal(log.choices, fast["choices"][i])
        np.testing.assert_allclose(log.errors, fast["errors"][i], atol=1e-6)


def test_run_session_is_deterministic_and_targets_estimated_space():
    a = omiso.run_session(omiso.UtahArraySim(seed=3), "omiso", SessionSettings(300, 200, 50))
    b = omiso.run_session(omiso.UtahArraySim(seed=3), "omiso", SessionSettings(300, 200, 50))
    np.testing.assert_array_equal(a.errors, b.errors)
    np.testing.assert_allclose(
        a.errors, np.linalg.norm(a.z_post[:, :2] - omiso.default_target(), axis=1)
    )


def test_run_session_accepts_model_objects():
    sim = omiso.UtahArraySim(seed=0)
    log = omiso.run_session(
        sim, omiso.StimResponseModel(66, 4), SessionSettings(300, 200, 30), target=[0.5, 0.0]
    )
    assert log.errors.shape == (30,) and log.choices.max() < 66


def test_state_awareness_helps_and_control_ties():
    seeds = [0, 1, 2, 3]
    main = omiso.compare_methods(
        seeds, ("omiso", "miso"), SessionSettings(n_test=200), device="cpu"
    )
    g = main.groupby("method").mean_error.mean()
    assert g["omiso"] < 0.8 * g["miso"]
    ctrl = omiso.compare_methods(
        seeds, ("omiso", "miso"), SessionSettings(n_test=200), kappa=0.0, a_auto=0.0, device="cpu"
    )
    c = ctrl.groupby("method").mean_error.mean()
    assert abs(c["omiso"] / c["miso"] - 1) < 0.1


@pytest.mark.slow
def test_paper_scale_ordering_over_8_seeds():
    df = omiso.compare_methods(range(8), drift=0.0, device="cpu")
    g = df.groupby("method").mean_error.mean()
    assert g["random"] > g["miso"] > g["static"] and g["omiso"] <= 1.02 * g["static"]
    assert g["omiso"] < 0.8 * g["miso"]
    df = omiso.compare_methods(range(8), ("omiso", "static"), drift=0.02, device="cpu")
    g = df.groupby("method").mean_error.mean()
    assert g["omiso"] < 0.92 * g["static"]


@pytest.mark.cuda
def test_cuda_batch_equals_cpu_batch():
    kw = dict(n_cal=300, n_train=250, n_test=60, drift=0.01)
    seeds, methods = [0, 0, 1], ["omiso", "miso", "static"]
    cpu = fast_run(seeds, methods, device="cpu", **kw)
    gpu = fast_run(seeds, methods, device="cuda", **kw)
    np.testing.assert_array_equal(cpu["choices"], gpu["choices"])
    np.testing.assert_allclose(cpu["errors"], gpu["errors"], atol=1e-6)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


def test_bad_inputs_raise():
    m = omiso.StimResponseModel(5, 4)
    with pytest.raises(ValueError, match="dims"):
        m.choose(np.zeros(4), [0.0, 0.0], dims=(0, 4))
    with pytest.raises(ValueError, match="u must be"):
        m.update(5, np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="epsilon"):
        m.choose(np.zeros(4), [0.0, 0.0], epsilon=1.5)
    with pytest.raises(ValueError, match="lam"):
        omiso.StimResponseModel(5, 4, lam=-1.0)
    with pytest.raises(ValueError, match="q_proc"):
        omiso.StimResponseModel(5, 4, q_proc=-0.1)
    with pytest.raises(ValueError, match="q must be"):
        omiso.fit_fa(np.ones((50, 4)), 4)
    bad = np.ones((50, 6))
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        omiso.fit_fa(bad, 2)
    with pytest.raises(ValueError, match="kappa"):
        omiso.UtahArraySim(kappa=-1.0)
    with pytest.raises(TypeError, match="q must be an integer"):
        omiso.UtahArraySim(q=2.5)
    sim = omiso.UtahArraySim()
    with pytest.raises(ValueError, match="u must be"):
        sim.pre()
        sim.stim(66)
    with pytest.raises(ValueError, match="method"):
        omiso.run_session(sim, "bandit")
    with pytest.raises(TypeError, match="sim must be"):
        omiso.run_session("sim", "omiso")
    with pytest.raises(ValueError, match="U must"):
        m.fit(np.zeros((3, 4)), np.array([0, 1, 7]), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="target"):
        run_sessions(SessionBatch([0], "omiso", target=[1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="methods"):
        SessionBatch([0, 1], ["omiso"])
    with pytest.raises(TypeError, match="batch must be"):
        run_sessions([0, 1])
    with pytest.raises(TypeError, match="settings must be"):
        omiso.run_session(omiso.UtahArraySim(), "omiso", {"n_test": 3})
    with pytest.raises(ValueError, match="n_cal"):
        SessionSettings(n_cal=2)
    with pytest.raises(ValueError, match="epsilon"):
        SessionSettings(epsilon=2.0)
    with pytest.raises(TypeError, match="d must be"):
        omiso.figures.drift_figure({"drift": 0.0})


def test_align_loadings_on_shared_channels():
    rng = np.random.default_rng(4)
    L = rng.normal(size=(30, 3))
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    new = L @ Q
    new[:5] = rng.normal(size=(5, 3))  # channels lost in the new session
    aligned, _ = omiso.align_loadings(L, new, channels=np.arange(5, 30))
    np.testing.assert_allclose(aligned[5:], L[5:], atol=1e-12)
    with pytest.raises(ValueError, match="channels"):
        omiso.align_loadings(L, new, channels=[0, 99, 2])


def test_run_sessions_per_session_process_noise():
    """A per-session ``q_proc`` runs each session exactly as a scalar ``q_proc`` would."""
    kw = dict(n_cal=300, n_train=250, n_test=40, drift=0.01)
    mixed = fast_run([0, 0, 1, 1], "omiso", q_proc=[0.0, 0.1, 0.002, 0.1], **kw)
    for i, (s, q) in enumerate([(0, 0.0), (0, 0.1), (1, 0.002), (1, 0.1)]):
        alone = fast_run([s], "omiso", q_proc=q, **kw)
        assert np.array_equal(mixed["errors"][i], alone["errors"][0])
    with pytest.raises(ValueError, match="q_proc"):
        SessionBatch([0, 1], "omiso", q_proc=[0.1, -1.0])


def test_precompute_drift_figure_validates():

    with pytest.raises(TypeError, match="q_values"):
        omiso.precompute_drift_figure("abc")
    with pytest.raises(ValueError, match="q_values"):
        omiso.precompute_drift_figure((-1.0,))
    with pytest.raises(ValueError, match="drifts"):
        omiso.precompute_drift_figure((0.1,), drifts=(0.015,))
    assert omiso.precompute_drift_figure((omiso.DRIFT_Q,)) == 0  # drift_sessions has it


def test_run_sessions_rows_do_not_depend_on_their_batch():
    """A session's errors are the same alone or batched with other seeds, drifts and methods
    (notebook 3 joins the drift table's sessions with more sessions of two methods)."""
    kw = dict(n_cal=300, n_train=250, n_test=40)
    rows = [(0, "static", 0.0), (0, "omiso", 0.0), (3, "miso", 0.02), (5, "omiso", 0.02)]
    batch = fast_run([r[0] for r in rows], [r[1] for r in rows], drift=[r[2] for r in rows], **kw)
    for i, (s, m, d) in enumerate(rows):
        alone = fast_run([s], m, drift=d, **kw)
        assert np.array_equal(batch["errors"][i], alone["errors"][0])
        assert np.array_equal(batch["choices"][i], alone["choices"][0])


def test_fast_poisson_counts_equal_the_reference_at_high_rates():
    """The batched sampler (which drops the entries that stopped counting) gives the counts of
    the numpy inverse CDF: sessions with a common-mode ramp (high rates, long tails) agree."""
    kw = dict(drift=0.02, ramp=0.002, kappa=1.5)
    seeds, methods = [7, 7, 8], ["omiso", "random", "static"]
    fast = fast_run(seeds, methods, n_cal=300, n_train=200, n_test=80, **kw)
    for i, (s, m) in enumerate(zip(seeds, methods, strict=True)):
        log = omiso.run_session(omiso.UtahArraySim(seed=s, **kw), m, SessionSettings(300, 200, 80))
        np.testing.assert_array_equal(log.choices, fast["choices"][i])
        np.testing.assert_allclose(log.errors, fast["errors"][i], atol=1e-6)


def test_drift_sessions_default_seeds_follow_the_seed_shift(monkeypatch):
    """The drift widget reads the notebook's sessions under the registered seed shift too."""
    from lab.omiso.experiments import drift_seeds

    monkeypatch.setenv("LAB_SEED_SHIFT", "0")
    assert drift_seeds() == omiso.DRIFT_SEEDS
    monkeypatch.setenv("LAB_SEED_SHIFT", "1000")
    assert drift_seeds() == tuple(s + 1000 for s in omiso.DRIFT_SEEDS)


# ------------------------------------------------------------------------------------------
# settings and the claims' evidence
# ------------------------------------------------------------------------------------------


def test_session_batch_broadcasts_and_validates_once():
    b = SessionBatch([0, 0, 1], ["omiso", "miso", "static"], drift=0.01, target=[0.5, 1.0])
    assert len(b) == 3 and b.drift == (0.01,) * 3 and b.target == ((0.5, 1.0),) * 3
    assert b.world(2) == {"kappa": 1.0, "drift": 0.01, "a_auto": 0.6, "adapt": 0.0, "ramp": 0.0}
    with pytest.raises(ValueError, match="a_auto"):
        SessionBatch([0], a_auto=1.5)
    with pytest.raises(ValueError, match="kappa"):
        SessionBatch([0, 1], kappa=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="seeds"):
        SessionBatch("01")
    with pytest.raises(ValueError, match="dims"):
        run_sessions(SessionBatch([0], q=2), SessionSettings(dims=(0, 3)))
    assert SessionSettings(dims=[1, 2]).dims == (1, 2)


def test_state_explains_outcome_pairs_to_the_r2_difference():
    from lab.omiso import evidence

    rng = np.random.default_rng(0)
    zq = rng.normal(size=(30, 4))
    d = {"z_post": zq, "n_fit": 10}
    e1, e0 = rng.random(20), rng.random(20) + 0.5
    rec = evidence.state_explains_outcome(d, e1, e0)
    sst = ((zq[10:, :2] - zq[10:, :2].mean(0)) ** 2).sum()
    assert np.isclose(rec["measured"], 1 - e1.sum() / sst)
    ctrl = rec["control"]
    assert np.isclose(ctrl.measured, 1 - e0.sum() / sst)
    assert np.isclose(np.mean(ctrl.paired), rec["measured"] - ctrl.measured)


def test_drift_pairs_and_gains_read_the_table():
    from lab.omiso import evidence

    rng = np.random.default_rng(1)
    drifts = omiso.DRIFTS
    table = {m: 1.0 + rng.random((len(drifts), 5)) for m in omiso.METHODS}
    table["random"] += 1.0
    pairs = evidence.drift_pairs(table, drifts, {})
    assert set(pairs) == {(d, m) for d in drifts for m in ("static", "miso", "random")}
    rec = evidence.state_gain(table, drifts)
    assert np.isclose(rec["measured"], 1 - table["static"][0].mean() / table["miso"][0].mean())
    assert np.isclose(
        rec["control"].measured, 1 - table["static"][3].mean() / table["miso"][3].mean()
    )
    rls = table["static"][2] * 1.01
    rec = evidence.online_gain(pairs[(0.02, "static")], table, drifts, rls)
    np.testing.assert_allclose(rec["control"].paired, np.log(rls) - np.log(table["omiso"][2]))


def test_worked_example_of_the_lesson():
    """book/omiso/index.md, "A worked example": one Kalman step from the prior equals the batch
    ridge fit on that trial, W = (2/3, 2/3), P = [[2, -1], [-1, 2]] / 3."""
    m = omiso.StimResponseModel(1, 1, lam=1.0, q_proc=0.0).update(0, np.array([1.0]), [2.0])
    np.testing.assert_allclose(m.W[0], [[2 / 3, 2 / 3]], atol=1e-15)
    np.testing.assert_allclose(m.P[0], np.array([[2.0, -1.0], [-1.0, 2.0]]) / 3, atol=1e-15)
    batch = omiso.StimResponseModel(1, 1, lam=1.0).fit(np.ones((1, 1)), np.zeros(1, int), [[2.0]])
    np.testing.assert_allclose(batch.W, m.W, atol=1e-15)
    np.testing.assert_allclose(m.predict(np.array([-1.0]))[0], [0.0], atol=1e-15)
    np.testing.assert_allclose(m.predict(np.array([1.0]))[0], [4 / 3], atol=1e-15)
