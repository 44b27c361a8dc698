"""Tests of lab.traceability: closed forms, invariants, reference vs fast path, DP
calibration cross-checks, bad input, determinism."""

import math

import numpy as np
import pytest
import torch
from scipy.special import ndtr

from lab import traceability as tr


@pytest.fixture(scope="module")
def inst():
    return tr.l2_hard_instance(50, 400, seed=3, n_ref=1000, n_fresh=2000)


# ---------------------------------------------------------------- fingerprinting lemma
@pytest.mark.parametrize("est", tr.ESTIMATORS)
def test_fingerprint_identity_and_inequality(est):
    t = tr.fingerprint_terms(est, n=30, trials=100_000, seed=1)
    # eq. (1): E[f Σ(x_i − p)] = E[2pf], within 4 SE of the paired difference
    assert abs(t["corr"] - t["identity"]) <= 4 * t["diff_se"] + 1e-12
    # eq. (2): corr + 2E|f − p| ≥ 2/3
    assert t["total"] >= 2 / 3 - 4 * t["total_se"]


def test_fingerprint_mean_is_two_thirds():
    t = tr.fingerprint_terms("mean", n=50, trials=200_000, seed=0)
    # for f = mean, E[f Σ(x_i − p)] = E[Σ(x_i−p)^2]/n = E[1 − p²] = 2/3 exactly
    assert abs(t["corr"] - 2 / 3) <= 4 * t["corr_se"]


def test_fingerprint_constant():
    t = tr.fingerprint_terms("constant", n=10, trials=10_000, seed=0)
    assert t["corr"] == 0 and t["identity"] == 0
    assert abs(t["acc"] - 1.0) <= 4 * t["acc_se"]  # 2E|p| = 1


# ---------------------------------------------------------------- instance and learners
def test_instance_shapes_and_values(inst):
    d = inst["d"]
    assert inst["Z"].shape == (50, d) and inst["Z_ref"].shape == (1000, d)
    assert np.allclose(np.abs(inst["Z"]), 1 / math.sqrt(d))
    assert np.allclose(np.linalg.norm(inst["Z"], axis=1), 1.0)
    # E z = μ/√d, checked on the pooled reference and fresh samples
    pooled = np.concatenate([inst["Z_ref"], inst["Z_fresh"]])
    err = pooled.mean(0) * math.sqrt(d) - inst["mu"]
    assert np.abs(err).max() < 4.5 / math.sqrt(pooled.shape[0])


def test_excess_closed_form_vs_monte_carlo(inst):
    d, mu = inst["d"], inst["mu"]
    w = tr.erm_l2(inst["Z"])
    wstar = mu / np.linalg.norm(mu)
    big = tr.l2_hard_instance(2, d, seed=3, n_ref=20, n_fresh=100_000)["Z_fresh"]
    assert np.allclose(big.mean(0) * 0, 0)
    diff = -(big @ w) + big @ wstar  # f(w; z) − f(w*; z)
    exact = tr.excess_risk_linear(w, mu, d)
    assert abs(diff.mean() - exact) <= 4 * diff.std() / math.sqrt(diff.size)
    assert tr.excess_risk_linear(wstar, mu, d) == pytest.approx(0, abs=1e-12)


def test_erm_in_ball_and_dual_map():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(30)
    for p in (1.2, 1.5, 2.0, 3.0, 6.0):
        w = tr.dual_map(v, p)
        assert np.sum(np.abs(w) ** p) ** (1 / p) == pytest.approx(1.0, abs=1e-10)
        q = p / (p - 1)
        # Hölder equality: ⟨w, v⟩ = ‖v‖_q
        assert w @ v == pytest.approx(np.sum(np.abs(v) ** q) ** (1 / q), rel=1e-10)
    assert np.allclose(tr.dual_map(v, 2.0), v / np.linalg.norm(v))


def test_dual_map_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(1)
    v = rng.standard_normal(8)
    w = cp.Variable(8)
    prob = cp.Problem(cp.Maximize(v @ w), [cp.pnorm(w, 1.5) <= 1])
    prob.solve()
    assert np.allclose(tr.dual_map(v, 1.5), w.value, atol=2e-3)


def test_erm_excess_decreases_with_n():
    vals = []
    for n in (25, 50, 100, 200):
        e = [
            tr.excess_risk_linear(tr.erm_l2(I["Z"]), I["mu"], 300)
            for I in (tr.l2_hard_instance(n, 300, seed=s, n_ref=20, n_fresh=1) for s in range(20))
        ]
        vals.append(np.mean(e))
    assert all(a > b for a, b in zip(vals, vals[1:], strict=False)), vals


def test_noisy_erm_limits(inst):
    Z = inst["Z"]
    assert np.allclose(tr.noisy_erm_l2(Z, 0.0), tr.erm_l2(Z))
    w = tr.noisy_erm_l2(Z, 1e6, seed=2)
    g = np.random.default_rng(2).standard_normal(Z.shape[1])
    assert np.allclose(w, g / np.linalg.norm(g), atol=1e-5)


# ---------------------------------------------------------------- DP calibration
def test_classic_sigma_formula():
    # σ = √(2 ln(1.25/δ)) Δ/ε by hand
    assert tr.gaussian_sigma(0.04, 0.5, 1e-5, "classic") == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)) * 0.04 / 0.5, rel=1e-14
    )


@pytest.mark.parametrize("eps", [0.1, 0.5, 0.9, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_analytic_sigma_is_tight(eps, delta):
    s = tr.gaussian_sigma(1.0, eps, delta)

    def profile(s):  # Balle & Wang (2018), Thm. 8, written independently here
        return ndtr(0.5 / s - eps * s) - math.exp(eps) * ndtr(-0.5 / s - eps * s)

    assert profile(s) <= delta * (1 + 1e-9)
    assert profile(s * (1 - 1e-6)) > delta * (1 - 1e-6)  # smallest such s
    if eps < 1:  # the classic calibration is valid, hence never smaller than the exact one
        assert s <= tr.gaussian_sigma(1.0, eps, delta, "classic")
    # scale covariance in Δ
    assert tr.gaussian_sigma(0.04, eps, delta) == pytest.approx(0.04 * s, rel=1e-9)


def test_privacy_loss_profile_by_monte_carlo():
    # δ(ε) = P[L > ε] − e^ε P[L' > ε] for the privacy loss L ~ N(Δ²/2s², Δ²/s²)
    eps, delta = 1.0, 1e-3
    s = tr.gaussian_sigma(1.0, eps, delta)
    x = np.random.default_rng(0).standard_normal(2_000_000) * s
    loss = (1 - 2 * x) / (2 * s * s)  # log p(x)/q(x), p = N(0, s²), q = N(1, s²)
    est = np.mean(np.maximum(0.0, 1 - np.exp(eps - loss)))
    assert est == pytest.approx(delta, rel=0.15)


def test_dp_learner_equals_calibrated_noisy_erm(inst):
    Z = inst["Z"]
    n, d = Z.shape
    s = tr.gaussian_sigma(2 / n, 1.0, 1e-5)
    assert np.allclose(
        tr.dp_gaussian_l2(Z, 1.0, 1e-5, seed=4), tr.noisy_erm_l2(Z, math.sqrt(d) * s, 4)
    )


def test_dp_trace_bound():
    assert tr.dp_trace_bound(1.0, 1e-5, 0.05) == pytest.approx(math.e * 0.05 + 1e-5)
    assert tr.dp_trace_bound(10.0, 0.0, 0.5) == 1.0


# ---------------------------------------------------------------- tracer
def test_trace_soundness_and_completeness():
    # the threshold is itself estimated from R/2 reference points, so the realised
    # false-positive rate varies by ~√(ξ(1−ξ)(1/m + 2/R)); test within 3.5 of those SE
    I = tr.l2_hard_instance(50, 400, seed=5, n_ref=4000, n_fresh=4000)
    w = tr.erm_l2(I["Z"])
    xi = 0.05
    fresh = tr.trace(w, I["Z_fresh"], I["Z_ref"], xi)
    se = math.sqrt(xi * (1 - xi) * (1 / 4000 + 2 / 4000))
    assert abs(fresh.mean() - xi) <= 3.5 * se
    lo, hi = tr.binomial_interval(int(fresh.sum()), fresh.size)
    assert 0 <= lo <= fresh.mean() <= hi <= 1
    assert tr.trace(w, I["Z"], I["Z_ref"], xi).mean() > 3 * xi


def test_trace_with_oracle_center(inst):
    w = tr.erm_l2(inst["Z"])
    c = inst["mu"] / math.sqrt(inst["d"])
    m = tr.trace(w, inst["Z"], inst["Z_ref"], 0.05, center=c)
    s = tr.tracer_scores(w, inst["Z"], c)
    tau = tr.calibrate_threshold(tr.tracer_scores(w, inst["Z_ref"], c), 0.05)
    assert np.array_equal(m, s > tau)


def test_pair_trace(inst):
    """reference.trace == fast.trace (batched torch) on shared models and samples."""
    rng = np.random.default_rng(0)
    d = inst["d"]
    W = np.stack([tr.noisy_erm_l2(inst["Z"], s, 1) for s in (0.0, 0.3, 1.0)])
    W = W + 1e-3 * rng.standard_normal(W.shape)  # generic, tie-free
    cand = np.concatenate([inst["Z"], inst["Z_fresh"]])
    got = tr.fast.trace(
        torch.as_tensor(W),
        torch.as_tensor(cand).expand(3, -1, -1),
        torch.as_tensor(inst["Z_ref"]).expand(3, -1, -1),
        0.05,
    ).numpy()
    for i in range(3):
        assert np.array_equal(got[i], tr.trace(W[i], cand, inst["Z_ref"], 0.05))
    assert got.shape == (3, cand.shape[0]) and d == W.shape[1]


def test_tradeoff_backends_agree_and_deterministic():
    s = tr.TradeoffSettings(n=30, d=300, sigmas=(0.0, 0.5, 3.0), n_ref=400, n_fresh=300)
    a = tr.tradeoff_curve(s, reps=3, seed=2, backend="numpy")
    b = tr.tradeoff_curve(s, reps=3, seed=2, backend="torch", device="cpu")
    c = tr.tradeoff_curve(s, reps=3, seed=2, backend="torch", device="cpu")
    assert np.array_equal(a["traced_all"], b["traced_all"])
    assert np.array_equal(a["fpr_all"], b["fpr_all"])
    assert np.allclose(a["excess_all"], b["excess_all"])
    assert np.array_equal(b["traced_all"], c["traced_all"])


def test_tradeoff_monotone_default():
    from scipy.stats import spearmanr

    s = tr.TradeoffSettings(50, 1000, sigmas=(0, 0.1, 0.3, 1, 3, 10))
    r = tr.tradeoff_curve(s, reps=5, device="cpu")
    assert np.all(np.diff(r["excess"]) > 0)
    assert spearmanr(r["sigma"], r["traced"]).statistic <= -0.9


def test_dp_learner_below_ceiling():
    r = tr.tradeoff_curve(tr.TradeoffSettings(50, 1000, eps=(0.5, 1.0, 2.0)), reps=20, device="cpu")
    for e, t, se in zip(r["eps"], r["traced"], r["traced_se"], strict=True):
        assert t <= tr.dp_trace_bound(e, 1e-5, 0.05) + 3 * se


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call",
    [
        lambda: tr.trace(np.ones(3), np.ones((2, 3)), np.ones((10, 3)), 0.0),
        lambda: tr.trace(np.ones(3), np.ones((2, 3)), np.ones((10, 3)), 1.0),
        lambda: tr.trace(np.ones(3), np.ones((2, 4)), np.ones((10, 3)), 0.1),
        lambda: tr.trace(np.ones(3), np.ones((2, 3)), np.ones((3, 3)), 0.1),
        lambda: tr.dp_trace_bound(-1.0, 1e-5, 0.1),
        lambda: tr.dp_trace_bound(1.0, 1.0, 0.1),
        lambda: tr.gaussian_sigma(1.0, 0.0, 1e-5),
        lambda: tr.gaussian_sigma(1.0, 1.0, 0.0),
        lambda: tr.gaussian_sigma(1.0, 1.0, 1e-5, "laplace"),
        lambda: tr.l2_hard_instance(1, 10),
        lambda: tr.l2_hard_instance(10, 0),
        lambda: tr.excess_risk_linear(np.ones(3), np.ones(3), 3),
        lambda: tr.excess_risk_linear(np.zeros(3), np.ones(4), 3),
        lambda: tr.noisy_erm_l2(np.ones((2, 3)), -1.0),
        lambda: tr.fingerprint_terms("mode"),
        lambda: tr.TradeoffSettings(10, 10, sigmas=(0.1,), eps=(1.0,)),
        lambda: tr.dual_map(np.ones(3), 1.0),
    ],
)
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_type_errors():
    with pytest.raises(TypeError):
        tr.l2_hard_instance(5.5, 10)
    with pytest.raises(TypeError):
        tr.trace(np.ones(3), np.ones((2, 3)), np.ones((10, 3)), "0.1")


@pytest.mark.cuda
def test_cuda_matches_cpu():
    s = tr.TradeoffSettings(n=30, d=300, sigmas=(0.0, 1.0), n_ref=400, n_fresh=300)
    a = tr.tradeoff_curve(s, reps=2, device="cpu")
    b = tr.tradeoff_curve(s, reps=2, device="cuda")
    assert np.abs(a["traced_all"] - b["traced_all"]).max() <= 2 / 30


# ----------------------------------------------------------------------------------------
# The paper's hard problem P_{k,p} (problems.py, experiments.py)
# ----------------------------------------------------------------------------------------
def test_sparse_instance_public_shape():
    inst = tr.sparse_instance(40, 30, 7, 0.1, 3.0, seed=2)
    assert inst.Z.shape == (40, 30) and inst.mu.shape == (30,)
    assert set(np.unique(inst.Z)) <= {-1.0, 0.0, 1.0}
    assert np.all((inst.Z != 0).sum(axis=1) == 7)  # exactly k non-zeros per row
    assert np.all(np.abs(inst.mu) <= 7 / 30 + 1e-12)
    assert inst.beta == tr.prior_scale(30, 7, 0.1, 3.0) >= 1.0
    again = tr.sparse_instance(40, 30, 7, 0.1, 3.0, seed=2)
    assert np.array_equal(inst.Z, again.Z) and np.array_equal(inst.mu, again.mu)


def test_sparse_data_mean_is_mu():
    inst = tr.sparse_instance(2, 12, 4, 0.2, 4.0, seed=0)
    Z = inst.fresh(200_000, seed=3)
    se = Z.std(axis=0) / np.sqrt(Z.shape[0])
    assert np.all(np.abs(Z.mean(axis=0) - inst.mu) <= 4.5 * se)  # E z = µ (Def. 4.1)


def test_fingerprint_scores_formula():
    inst = tr.sparse_instance(5, 9, 3, 0.15, 2.5, seed=1)
    theta = np.random.default_rng(0).uniform(-1, 1, 9) * 9 ** (-1 / 2.5)
    got = tr.fingerprint_scores(theta, inst.Z, inst.mu, 3, 2.5)
    for i, z in enumerate(inst.Z):
        centred = z - np.where(z != 0, (9 / 3) * inst.mu, 0.0)
        assert np.isclose(got[i], 9 ** (1 / 2.5) / np.sqrt(3) * centred @ theta)


def test_box_learners_and_excess():
    inst = tr.sparse_instance(50, 40, 10, 0.12, 4.0, seed=0)
    r = tr.box_radius(40, 4.0)
    for theta in (tr.erm_box(inst.Z, 4.0), tr.noisy_erm_box(inst.Z, 1.0, 4.0, 1)):
        assert np.all(np.abs(theta) <= r + 1e-15)
        assert tr.excess_risk_box(theta, inst.mu, 10, 4.0) >= -1e-15
    best = r * np.sign(inst.mu)
    assert abs(tr.excess_risk_box(best, inst.mu, 10, 4.0)) < 1e-15
    # the loss is 1-Lipschitz in ℓ4: ‖∇f‖_q = k^(−1/q) ‖z‖_q = 1
    q = 4 / 3
    assert np.allclose(10 ** (-1 / q) * np.linalg.norm(inst.Z, ord=q, axis=1), 1.0)


def test_sparse_fingerprinting_identity_every_learner():
    for n, d, k, alpha, p in [(10, 60, 60, 0.2, 2.0), (10, 60, 12, 0.15, 4.0)]:
        chk = tr.identity_check(tr.IdentitySettings(n, d, k, alpha, p), reps=1500, seed=1)
        assert np.all(np.abs(chk.z) <= 4.0), chk
        assert chk.lhs[chk.learners.index("constant")] == 0.0


def test_identity_check_can_fail_with_the_dense_centre():
    dense = tr.IdentitySettings(10, 60, 12, 0.15, 4.0, learners=("erm",), centre="dense")
    chk = tr.identity_check(dense, reps=1500)
    assert abs(chk.z[0]) > 4.0  # centring at µ on every coordinate breaks the lemma for k < d


def test_paper_sparsity_and_ranges():
    assert tr.paper_sparsity(1000, 0.1, 2.0) == 1000
    assert tr.paper_sparsity(1000, 0.1, 4.0) == round(0.6**4 * 1000)
    lo, hi = tr.alpha_range(50, 2000, 2.0, 0.05)
    assert np.isclose(lo, 1 / np.sqrt(50)) and hi == 1 / 6
    lo4, _ = tr.alpha_range(50, 2000, 4.0, 0.05)
    assert np.isclose(lo4, min(50**-0.25, 2000**0.25 / np.sqrt(50)) / 6)
    # Thm 2.8: the first branch is the smaller one exactly when d ≥ εn
    n, eps, p = 100, 0.5, 4.0
    for d in (10, 49, 50, 51, 10_000):
        a = (d / (eps * n) ** 2) ** (1 / p)
        b = d ** (1 - 1 / p) / (eps * n)
        assert (a <= b) == (d >= eps * n)
        assert np.isclose(tr.dp_lower_bound(n, d, p, eps), min(a, b, 1.0))


def test_recall_curve_sound_and_dp_below_ceiling():
    s = tr.RecallSettings(50, 400, 0.15, 2.0, sigmas=(0.0, 3.0), eps=(1.0,), n_ref=400)
    r = tr.recall_curve(s, reps=6)
    assert np.all(np.abs(r.fpr - 0.05) <= 4 * np.sqrt(0.05 * 0.95 * 3 / (400 * 6)))
    assert r.traced[0] > 3 * 0.05  # ERM is traced on a constant fraction
    assert r.traced[2] <= tr.dp_trace_bound(1.0, 1 / 50**2, 0.05) + 3 * r.traced_se[2] + 1e-12
    assert r.excess[0] < r.excess[1]


def test_recall_widget_is_the_memoised_widget_curve():
    """The recall widget's driver: recall_curve over RECALL_SIGMAS and DP, computed once."""
    tr.recall_widget.clear()
    a = tr.recall_widget(0.15, 2.0, 0.05, 20, 200, 2, 0)
    assert tr.recall_widget(0.15, 2.0, 0.05, 20, 200, 2, 0) is a
    s = tr.RecallSettings(20, 200, 0.15, 2.0, sigmas=tr.RECALL_SIGMAS, eps=(1.0,), n_ref=500)
    b = tr.recall_curve(s, reps=2)
    assert np.array_equal(a.traced, b.traced) and np.array_equal(a.excess, b.excess)
    assert a.ceiling == tr.dp_trace_bound(1.0, 1 / 20**2, 0.05)
    with pytest.raises((ValueError, TypeError)):
        tr.recall_widget(0.15, 2.0, 0.05, 1, 200, 2, 0)
    fig = tr.figures.recall_figure(a)
    assert len(fig.data) == 5
    with pytest.raises(TypeError, match="r must be a RecallCurve"):
        tr.figures.recall_figure(None)


def test_scores_view_feeds_the_score_figure():
    view = tr.tracer_scores_view(tr.ScoresSettings(0.1, 30, 300, 0.05), 0)
    assert view.train.shape == (30,) and view.fresh.shape == (1000,)
    assert len(tr.figures.scores_figure(view).data) == 4
    with pytest.raises(TypeError, match="scores must be a Scores"):
        tr.figures.scores_figure(None)


def test_l2_counterexample_rate():
    rate = tr.l2_erm_rate(tr.L2RateSettings((25, 100, 400), d=200), reps=10)
    assert np.all(np.diff(rate.excess) < 0)
    # noisy ERM (noise of norm 0.3): its excess risk stays on a plateau the 1/n rate would cross
    noisy = tr.l2_erm_rate(tr.L2RateSettings((25, 100, 400), d=200, sigma=0.3), reps=10)
    assert noisy.excess[-1] > 3 * rate.excess[-1]
    with pytest.raises(ValueError, match="sigma"):
        tr.L2RateSettings((25, 100), d=200, sigma=-1.0)


def test_clipped_mean_learner():
    """The clipped mean lies in the box, equals ERM where |z̄| is large, stays proportional to z̄
    elsewhere, and is another α-learner in the recall curve (listed before the DP learner)."""
    s = tr.sparse_instance(50, 400, 400, 0.15, 2.0, 0)
    th = tr.clipped_mean_box(s.Z, 2.0, 3.0)
    r = tr.box_radius(400, 2.0)
    zbar = s.Z.mean(0)
    assert np.all(np.abs(th) <= r + 1e-15)
    big = np.abs(zbar) * 3.0 * np.sqrt(50) >= 1
    np.testing.assert_allclose(th[big], r * np.sign(zbar[big]))
    np.testing.assert_allclose(th[~big], r * 3.0 * np.sqrt(50) * zbar[~big])
    assert (
        tr.excess_risk_box(th, s.mu, s.k, 2.0)
        >= tr.excess_risk_box(tr.erm_box(s.Z, 2.0), s.mu, s.k, 2.0) - 1e-12
    )
    both = tr.RecallSettings(
        50, 400, 0.15, 2.0, sigmas=(0.0,), clip_scales=(3.0,), eps=(1.0,), n_ref=200
    )
    curve = tr.recall_curve(both, reps=3)
    assert curve.labels == [("noisy", 0.0), ("clipped", 3.0), ("dp", 1.0)]
    assert curve.traced[1] > 3 * 0.05
    only = tr.recall_curve(
        tr.RecallSettings(50, 400, 0.15, 2.0, sigmas=(), clip_scales=(3.0,), n_ref=200), reps=3
    )
    np.testing.assert_allclose(only.traced, curve.traced[1:2])
    with pytest.raises(ValueError, match="scale"):
        tr.clipped_mean_box(s.Z, 2.0, 0.0)
    with pytest.raises(ValueError, match="clip_scales"):
        tr.RecallSettings(50, 400, 0.15, 2.0, clip_scales=(-1.0,))


@pytest.mark.parametrize(
    "call",
    [
        lambda: tr.sparse_instance(0, 10, 2, 0.1, 2.0, 0),
        lambda: tr.sparse_instance(5, 10, 11, 0.1, 2.0, 0),
        lambda: tr.sparse_instance(5, 10, 2, 0.0, 2.0, 0),
        lambda: tr.sparse_instance(5, 10, 2, 0.1, 1.0, 0),
        lambda: tr.fingerprint_scores(np.zeros(3), np.zeros((2, 4)), np.zeros(4), 2, 2.0),
        lambda: tr.fingerprint_scores(np.zeros(4), np.zeros((2, 4)), np.zeros(4), 5, 2.0),
        lambda: tr.dp_lower_bound(10, 10, 1.5, 0.5),
        lambda: tr.dp_lower_bound(10, 10, 3.0, 2.0),
        lambda: tr.alpha_range(10, 10, 2.0, 0.5),
        lambda: tr.IdentitySettings(5, 10, 2, 0.1, 2.0, learners=("oracle",)),
        lambda: tr.RecallSettings(5, 10, 0.1, 2.0, sigmas=()),
    ],
)
def test_sparse_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


# ----------------------------------------------------------------------------------------
# The registered claims and the evidence the notebooks record
# ----------------------------------------------------------------------------------------
def test_evidence_builds_values_and_measured_rivals():
    from lab.traceability import evidence
    from lab.traceability.claims import CEILING, CLAIMS, XI

    assert set(CLAIMS.notebooks()) == {"01", "02"}
    assert CEILING == pytest.approx(math.exp(1) * XI + 1 / 50**2)
    s = tr.RecallSettings(50, 400, 0.15, 2.0, sigmas=(0.0, 3.0), eps=(1.0,), n_ref=200)
    r = tr.recall_curve(s, reps=4)
    assert r.traced_all.shape == (3, 4) and np.allclose(r.traced_all.mean(1), r.traced)
    ev = evidence.recall(r)
    lo, hi = ev["measured"]["lo"], ev["measured"]["hi"]
    assert lo <= ev["measured"]["estimate"] <= hi
    # the rival is measured on the same instances, paired per instance (method − rival)
    assert ev["control"].measured["estimate"] == pytest.approx(r.traced[-1])
    drop = evidence.recall_drop({2.0: r})
    assert drop["measured"]["estimate"] == pytest.approx(r.traced[0] - r.traced[1])
    with pytest.raises(TypeError, match="curves"):
        evidence.dp_ceiling(None, CEILING)


def test_worked_example():
    """The lesson page's worked example (book/traceability/index.md), by hand and by lab."""
    mu = np.array([0.25, -0.25, 0.0, 0.5])
    rows = np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])
    theta = tr.erm_box(rows[:1], 2.0)
    np.testing.assert_allclose(theta, [0.5, 0.0, -0.5, 0.0])
    scores = tr.fingerprint_scores(theta, rows, mu, 2, 2.0)
    np.testing.assert_allclose(scores, [np.sqrt(2) * 0.75, 0.0])
    assert round(float(scores[0]), 4) == 1.0607
    assert round(tr.excess_risk_box(theta, mu, 2, 2.0), 4) == 0.2652
    ceiling = tr.dp_trace_bound(1.0, 1 / 50**2, 0.05)
    assert round(50 * ceiling, 2) == 6.82 and round(ceiling, 3) == 0.136
