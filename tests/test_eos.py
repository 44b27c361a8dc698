"""Tests of lab.eos: GD at the edge of stability on overparametrised least squares.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/edge-of-stability-rates.md):
closed forms of the xy model, the regimes, reference == fast path (``test_pair_gd``), bad input.
The full text's App. B/F (ν = 4 y^(2-4/p), the convexity moduli, the KKT projection onto M), the
trusted-library checks, the network and the figures are in tests/test_eos_manifold.py. Everything
runs on CPU in float64; the ``cuda`` test is skipped without a GPU (tests/conftest.py).
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from scipy.optimize import brentq

from lab import eos

ETA_SUB, ETA_CRIT, ETA_SUPER = 0.85, 1.0, 1.05


@pytest.fixture(scope="module")
def xy():
    return eos.XYModel()


@pytest.fixture(scope="module")
def critical_run(xy):
    w0 = eos.point_on_manifold(xy, 2.3, 1e-3)
    return eos.gd(xy, w0, ETA_CRIT, 100_000)


@pytest.fixture(scope="module")
def subcritical_run(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    return eos.gd(xy, w0, ETA_SUB, 2000)


# ------------------------------------------------------------------------------------------
# closed forms
# ------------------------------------------------------------------------------------------


def test_xy_closed_forms(xy):
    rng = np.random.default_rng(0)
    W = rng.uniform(0.2, 3.0, size=(200, 2)) * rng.choice([-1.0, 1.0], size=(200, 1))
    d = W[:, 0] ** 2 - W[:, 1] ** 2
    lam = eos.sharpness_on_manifold(xy, W)
    np.testing.assert_allclose(lam, np.sqrt(d**2 + 4.0), rtol=1e-12)
    for x in [0.3, 0.9, 1.0, 1.7, 4.0]:
        assert eos.hessian_sharpness(xy, [x, 1.0 / x]) == pytest.approx(x**2 + 1 / x**2, rel=1e-12)
    value, w_flat = eos.lambda_min(xy)
    assert value == 2.0
    np.testing.assert_allclose(w_flat, [1.0, 1.0])


def test_projection_lands_on_manifold_and_keeps_the_invariant(xy):
    rng = np.random.default_rng(1)
    for model in [xy, eos.XYModel(-2.0), eos.InnerProductModel(3, 1.5), eos.ProductModel(4)]:
        for _ in range(20):
            p0 = eos.point_on_manifold(model, rng.uniform(1.0, 2.0) * eos.lambda_min(model)[0])
            w = p0 + 0.05 * rng.standard_normal(model.dim)
            p = model.project(w)
            assert model.residual(p) == pytest.approx(0.0, abs=1e-12)
            # sharpness of the projection = ||grad f(p)||^2 = the closed form used by gd
            lam = float(np.sum(model.grad(p) ** 2))
            assert eos.sharpness_on_manifold(model, w) == pytest.approx(lam, rel=1e-10)
            # on M the full-Hessian sharpness is the same number
            assert eos.hessian_sharpness(model, p) == pytest.approx(lam, rel=1e-10)


def test_lambda_min_closed_forms():
    for q in [2, 3, 5]:
        value, w = eos.lambda_min(eos.ProductModel(q))
        assert value == pytest.approx(q)
        np.testing.assert_allclose(np.abs(w), 1.0)
    value, w = eos.lambda_min(eos.ProductModel(3, target=-8.0))
    assert value == pytest.approx(3 * 8.0 ** (4 / 3))
    assert np.prod(w) == pytest.approx(-8.0)
    for m, y in [(1, 1.0), (4, 2.5), (3, -1.0)]:
        model = eos.InnerProductModel(m, y)
        value, w = eos.lambda_min(model)
        assert value == pytest.approx(2 * abs(y))
        assert model.residual(w) == pytest.approx(0.0, abs=1e-14)
        assert eos.hessian_sharpness(model, w) == pytest.approx(2 * abs(y), rel=1e-12)


def test_product_depth_two_is_the_xy_model(xy):
    rng = np.random.default_rng(2)
    W = rng.uniform(0.3, 2.5, size=(50, 2))
    np.testing.assert_allclose(
        eos.sharpness_on_manifold(eos.ProductModel(2), W),
        eos.sharpness_on_manifold(xy, W),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    "model", [eos.XYModel(), eos.ProductModel(3), eos.InnerProductModel(2, 0.7)], ids=str
)
def test_point_on_manifold(model):
    lam_min, _ = eos.lambda_min(model)
    for lam0 in [lam_min, 1.1 * lam_min, 1.6 * lam_min]:
        for offset in [0.0, 1e-3, -1e-2]:
            w = eos.point_on_manifold(model, lam0, offset)
            assert model.residual(w) == pytest.approx(offset, abs=1e-14)
            assert eos.sharpness_on_manifold(model, w) == pytest.approx(lam0, rel=1e-12)


# ------------------------------------------------------------------------------------------
# exact identities of one GD step (xy)
# ------------------------------------------------------------------------------------------


def test_imbalance_identity_and_residual_map(xy):
    rng = np.random.default_rng(3)
    for _ in range(500):
        w = rng.uniform(-3, 3, size=2)
        eta = rng.uniform(0.01, 2.0)
        x, y = w
        r = x * y - 1
        tr = eos.gd(xy, w, eta, 1)
        d, d1 = eos.imbalance(xy, tr.w[0]), eos.imbalance(xy, tr.w[1])
        # d' = d (1 - eta^2 r^2)
        assert d1 == pytest.approx(d * (1 - eta**2 * r**2), rel=1e-12, abs=1e-12 * (x * x + y * y))
        # r' = r - eta r (x^2 + y^2) + eta^2 r^2 (r + 1)
        expect = r - eta * r * (x * x + y * y) + eta**2 * r**2 * (r + 1)
        scale = max(1.0, abs(r), eta * abs(r) * (x * x + y * y), eta**2 * r**2 * abs(r + 1))
        assert abs(tr.residual[1] - expect) <= 1e-12 * scale


def test_balanced_line_map(xy):
    for a in [0.5, 0.9, 1.2]:
        for eta in [0.3, 1.0, 1.1]:
            w1 = eos.gd(xy, [a, a], eta, 1).w[1]
            np.testing.assert_allclose(w1, a * (1 + eta - eta * a * a), rtol=1e-14)


# ------------------------------------------------------------------------------------------
# the regimes on the xy model
# ------------------------------------------------------------------------------------------


def test_stable_regime(xy):
    lam0 = 2.6
    w0 = eos.point_on_manifold(xy, lam0, 1e-6)
    tr = eos.gd(xy, w0, 0.7, 400)  # 0.7 < 2/2.6
    a = np.abs(tr.residual)
    live = a > 1e-13
    assert np.all(np.diff(a[live]) < 0)
    assert abs(tr.sharpness[-1] - lam0) < 1e-6
    assert eos.classify_regime(xy, 0.7, w0) == "stable"


def test_subcritical_regime(xy, subcritical_run):
    tr = subcritical_run
    r = np.abs(tr.residual)
    exit_step = int(np.nonzero(r >= 1e-3)[0].max())  # |r| < 1e-3 for good after this
    assert exit_step < 200
    lam_final = tr.sharpness[-1]
    assert 2.0 < lam_final < 2.0 / ETA_SUB
    assert 2.20 <= lam_final <= 2.25
    last = int(np.nonzero(r > 1e-12)[0].max())
    rate = eos.fit_linear_rate(tr.residual, window=(exit_step + 20, last))
    assert rate == pytest.approx(abs(1 - ETA_SUB * lam_final), abs=1e-3)
    assert tr.residual[-1] == pytest.approx(0.0, abs=1e-14)
    assert eos.classify_regime(xy, ETA_SUB, tr.w[0]) == "subcritical"


def test_critical_exponents(xy, critical_run):
    tr = critical_run
    k = tr.k
    p_xy, _ = eos.fit_power_law(k, np.abs(tr.w[:, 0] - tr.w[:, 1]), window=(1e3, 1e5))
    p_lam, _ = eos.fit_power_law(k, tr.sharpness - 2.0, window=(1e3, 1e5))
    p_env, _ = eos.fit_power_law(k[:-1], eos.envelope(tr.residual), window=(1e3, 1e5))
    assert 0.45 <= p_xy <= 0.55
    assert 0.9 <= p_lam <= 1.1
    assert 0.45 <= p_env <= 0.55
    assert not tr.diverged
    assert eos.classify_regime(xy, ETA_CRIT, tr.w[0]) == "critical"


def test_critical_power_law_dies_in_float32(xy, critical_run):
    """The spec's pitfall, measured: in float32 |x - y| stalls near 4.3e-3 (float64: 2.2e-3
    at k = 1e5) and the fitted exponent over [1e4, 1e5] drops from 0.50 to 0.16."""
    x, y = (np.float32(v) for v in eos.point_on_manifold(xy, 2.3, 1e-3))
    one, eta = np.float32(1.0), np.float32(ETA_CRIT)
    gap = np.empty(100_001, dtype=np.float32)
    gap[0] = abs(x - y)
    for k in range(100_000):
        er = eta * (x * y - one)
        x, y = x - er * y, y - er * x
        gap[k + 1] = abs(x - y)
    k = np.arange(gap.size)
    with pytest.warns(RuntimeWarning, match="float32 cannot resolve the critical power law"):
        p32, _ = eos.fit_power_law(k, gap, window=(1e4, 1e5))
    ref = critical_run.w
    p64, _ = eos.fit_power_law(k, np.abs(ref[:, 0] - ref[:, 1]), window=(1e4, 1e5))
    assert 0.45 <= p64 <= 0.55
    assert p32 < 0.3


def test_supercritical_regime(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    tr = eos.gd(xy, w0, ETA_SUPER, 3000)
    assert np.abs(tr.w[-1, 0] - tr.w[-1, 1]) < 1e-10
    w_plus, w_minus = eos.period_two_orbit(xy, ETA_SUPER)
    late = tr.w[-2:]
    if tr.residual[-1] > 0:
        late = late[::-1]
    np.testing.assert_allclose(late[0], w_plus, atol=1e-8)
    np.testing.assert_allclose(late[1], w_minus, atol=1e-8)
    assert abs(0.5 * (w_plus[0] + w_minus[0]) - 1.0) < 0.03
    assert 0.5 * (w_plus[0] + w_minus[0]) == pytest.approx(0.982, abs=1e-3)
    assert xy.residual(w_plus) == pytest.approx(4 / 21, abs=1e-12)  # measured r = {4/21, -5/21}
    assert xy.residual(w_minus) == pytest.approx(-5 / 21, abs=1e-12)
    assert eos.classify_regime(xy, ETA_SUPER, w0) == "supercritical"


def _amplitude(model, eta):
    wp, wm = eos.period_two_orbit(model, eta)
    return 0.5 * (model.residual(wp) - model.residual(wm))


def test_supercritical_amplitude_scales_like_sqrt(xy):
    ratio = _amplitude(xy, 1.08) / _amplitude(xy, 1.02)
    assert ratio == pytest.approx(2.0, rel=0.10)
    assert ratio == pytest.approx(1.903, abs=1e-3)
    # the GD iterates reach the same amplitude
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    r = eos.gd(xy, w0, 1.08, 4000).residual[-2:]
    assert 0.5 * abs(r[0] - r[1]) == pytest.approx(_amplitude(xy, 1.08), abs=1e-10)


def test_period_two_orbit_matches_independent_brentq(xy):
    for eta in [1.01, 1.05, 1.1, 1.2]:
        # closed 2-cycle equations in r: (1 - eta r1)(1 - eta r2) = 1, r2 = (1+r1)(1-eta r1)^2 - 1
        def h(r1, eta=eta):
            return (1 + r1) * (1 - eta * r1) ** 2 - 1 - r1 / (eta * r1 - 1)

        r1 = brentq(h, 1e-6, 0.5, xtol=1e-15)
        wp, wm = eos.period_two_orbit(xy, eta)
        rp, rm = xy.residual(wp), xy.residual(wm)
        assert rp == pytest.approx(r1, abs=1e-10)
        assert rp + rm == pytest.approx(eta * rp * rm, abs=1e-12)
        # closed form: u = (1 + eta +- sqrt((1 + eta)^2 - 4)) / 2, r = (1 - u) / eta
        disc = math.sqrt((1 + eta) ** 2 - 4)
        assert rp == pytest.approx((1 - 0.5 * (1 + eta - disc)) / eta, abs=1e-12)
        assert rm == pytest.approx((1 - 0.5 * (1 + eta + disc)) / eta, abs=1e-12)
        # it really is a 2-cycle of the full GD map
        np.testing.assert_allclose(eos.gd(xy, wp, eta, 2).w[1:], [wm, wp], atol=1e-12)


def test_supercritical_window_and_errors(xy):
    eta_pd = eos.regime_thresholds(xy, [1.0, 1.0], probe_steps=0).eta_period_doubling
    assert eta_pd == pytest.approx(math.sqrt(5) - 1, abs=1e-8)
    with pytest.raises(ValueError, match="no period-2 orbit"):
        eos.period_two_orbit(xy, 0.99)
    with pytest.raises(ValueError, match="outside the supercritical window"):
        eos.period_two_orbit(xy, 1.3)
    wp, wm = eos.period_two_orbit(xy, 1.3, allow_unstable=True)
    assert xy.residual(wp) > 0 > xy.residual(wm)


def test_period_two_orbit_product_and_inner_product():
    for model in [eos.ProductModel(3), eos.InnerProductModel(3, 2.0)]:
        eta_c = 2.0 / eos.lambda_min(model)[0]
        eta = 1.05 * eta_c
        wp, wm = eos.period_two_orbit(model, eta)
        np.testing.assert_allclose(eos.gd(model, wp, eta, 2).w[1:], [wm, wp], atol=1e-12)
        # and GD from a sharp start converges to it
        w0 = eos.point_on_manifold(model, 1.3 * eos.lambda_min(model)[0], 1e-3)
        tr = eos.gd(model, w0, eta, 6000)
        late = tr.w[-2:] if tr.residual[-2] > 0 else tr.w[-2:][::-1]
        np.testing.assert_allclose(late, [wp, wm], atol=1e-8)
    # a rescaled xy model has a rescaled window: eta_max = (sqrt 5 - 1) / |y|
    th = eos.regime_thresholds(eos.InnerProductModel(3, 2.0), [1, 1, 1, 1, 1, 1], probe_steps=0)
    assert th.eta_period_doubling == pytest.approx((math.sqrt(5) - 1) / 2, abs=1e-8)


def test_drift_law_on_the_critical_run(xy, critical_run):
    tr = critical_run
    d = eos.imbalance(xy, tr.w[:10_001])
    r = tr.residual[:10_000]
    ok = np.abs(r) > 1e-4
    ratio = (d[1:] - d[:-1])[ok] / (r[ok] ** 2 * d[:-1][ok])
    np.testing.assert_allclose(ratio, -(ETA_CRIT**2), rtol=1e-6)
    # the same drift seen as a tangential step: along M the step is O(eta^2 r^2), across O(eta r)
    for k in [100, 1000, 5000]:
        dpar, dnorm = eos.tangential_normal_split(xy, tr.w[k], tr.w[k + 1])
        np.testing.assert_allclose(dpar + dnorm, tr.w[k + 1] - tr.w[k], atol=1e-15)
        assert np.linalg.norm(dnorm) == pytest.approx(
            ETA_CRIT * abs(r[k]) * np.sqrt(tr.sharpness[k]), rel=0.05
        )
        assert np.linalg.norm(dpar) < 5 * ETA_CRIT**2 * r[k] ** 2 * np.sqrt(tr.sharpness[k])


def test_regime_labels(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    labels = {
        eta: eos.classify_regime(xy, eta, w0)
        for eta in [0.5, 0.8, 0.995, 1.0, 1.0005, 1.2, 1.25, 1.6]
    }
    assert labels == {
        0.5: "stable",
        0.8: "subcritical",
        0.995: "subcritical",
        1.0: "critical",
        1.0005: "critical",
        1.2: "supercritical",
        1.25: "divergent",
        1.6: "divergent",
    }
    th = eos.regime_thresholds(xy, w0)
    assert th.eta_stable == pytest.approx(2 / 2.6)
    assert th.eta_critical == 1.0
    assert th.critical_band == pytest.approx((0.999, 1.001))
    assert th.eta_blowup == pytest.approx(4 / 2.6, rel=1e-5)  # measured: the catapult bound
    assert th.eta_divergent == th.eta_period_doubling
    # a sharp start is a catapult: it blows up inside the supercritical window
    sharp = eos.point_on_manifold(xy, 3.5, 1e-3)
    assert eos.classify_regime(xy, 1.2, sharp) == "divergent"
    assert eos.regime_thresholds(xy, sharp).eta_blowup == pytest.approx(4 / 3.5, rel=1e-5)


# ------------------------------------------------------------------------------------------
# models of the tests below (the trusted-library checks: tests/test_eos_manifold.py)
# ------------------------------------------------------------------------------------------


MODELS = [
    eos.XYModel(),
    eos.ProductModel(3),
    eos.ProductModel(5, -2.0),
    eos.InnerProductModel(4, 1.5),
]


# ------------------------------------------------------------------------------------------
# divergence, bad input, determinism, pickling
# ------------------------------------------------------------------------------------------


def test_divergence_is_flagged_not_nan(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    tr = eos.gd(xy, w0, 2.5, 1000)
    assert tr.diverged and tr.steps_run < 1000
    assert tr.w.shape == (tr.steps_run + 1, 2) and tr.residual.shape == (tr.steps_run + 1,)
    assert abs(tr.residual[-1]) > eos.DIVERGENCE_THRESHOLD
    for arr in (tr.w, tr.residual, tr.loss, tr.sharpness):
        assert np.all(np.isfinite(arr))
    # a step straight to overflow (non-finite) is not stored
    deep = eos.ProductModel(40)
    tr = eos.gd(deep, np.full(40, 1.6), 0.5, 10)
    assert tr.diverged and tr.steps_run == 0 and np.all(np.isfinite(tr.w))
    bt = eos.fast.gd(deep, np.full(40, 1.6), [0.5], 10, device="cpu")
    assert bool(bt.diverged[0]) and int(bt.steps_run[0]) == 0
    assert torch.isfinite(bt.w).all() and torch.equal(bt.w[-1, 0], bt.w[0, 0])


def test_bad_inputs(xy):
    w0 = [1.2, 0.8]
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.gd(xy, w0, 0.0, 10)
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.gd(xy, w0, -0.1, 10)
    with pytest.raises(ValueError, match="w0 must contain only finite"):
        eos.gd(xy, [np.nan, 1.0], 0.5, 10)
    with pytest.raises(ValueError, match="w0 must contain only finite"):
        eos.gd(xy, [np.inf, 1.0], 0.5, 10)
    with pytest.raises(ValueError, match="w0 must have 2 entries"):
        eos.gd(xy, [1.0, 1.0, 1.0], 0.5, 10)
    with pytest.raises(ValueError, match="steps must be an integer in"):
        eos.gd(xy, w0, 0.5, 0)
    with pytest.raises(TypeError, match="steps must be an integer"):
        eos.gd(xy, w0, 0.5, 10.0)
    with pytest.raises(TypeError, match="model must be"):
        eos.gd("xy", w0, 0.5, 10)
    with pytest.raises(ValueError, match="depth must be an integer in"):
        eos.ProductModel(1)
    with pytest.raises(ValueError, match="target must be nonzero"):
        eos.InnerProductModel(2, 0.0)
    with pytest.raises(ValueError, match="m must be an integer in"):
        eos.InnerProductModel(0)
    with pytest.raises(ValueError, match=r"no minimiser has sharpness below lambda_min = 2"):
        eos.point_on_manifold(xy, 1.5)
    with pytest.raises(ValueError, match="offset must lie in"):
        eos.point_on_manifold(xy, 2.6, 1.5)
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.classify_regime(xy, -1.0, w0)
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.period_two_orbit(xy, 0.0)
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.fast.gd(xy, w0, [0.5, -0.5], 10, device="cpu")
    with pytest.raises(ValueError, match="eta must be a scalar or have shape"):
        eos.fast.gd(xy, np.ones((3, 2)), [0.5, 0.6], 10, device="cpu")
    with pytest.raises(ValueError, match="record_every must be an integer in"):
        eos.fast.gd(xy, w0, 0.5, 10, record_every=11, device="cpu")
    with pytest.raises(ValueError, match="dtype must be one of"):
        eos.fast.gd(xy, w0, 0.5, 10, device="cpu", dtype=torch.int64)
    with pytest.raises(ValueError, match="w0 must contain only finite"):
        eos.fast.gd(xy, torch.tensor([[np.nan, 1.0]]), 0.5, 10)
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda"):
        eos.fast.gd(xy, w0, 0.5, 10, device="tpu")
    with pytest.raises(ValueError, match="w0 must have 2 entries"):
        eos.classify_regime(xy, 0.5, [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="model must be"):
        eos.lambda_min(object())
    with pytest.raises(ValueError, match="k and err must have the same shape"):
        eos.fit_power_law([1, 2, 3], [1.0, 0.5])
    with pytest.raises(ValueError, match="at least 2 points"):
        eos.fit_power_law([1, 2, 3], [1.0, 0.5, 0.3], window=(10, 20))
    with pytest.raises(ValueError, match="window must be"):
        eos.fit_linear_rate([1.0, 0.5, 0.25], window=(3, 1))
    with pytest.raises(ValueError, match="r must have at least 2"):
        eos.envelope([1.0])
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        eos.sharpness_hvp(3.0, torch.ones(2))
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.NetworkSettings(0.0, steps=2)
    with pytest.raises(ValueError, match="n_samples must be"):
        eos.mlp_digits_gd(eos.NetworkSettings(0.1, steps=2, n_samples=1000))
    with pytest.raises(TypeError, match="settings must be a NetworkSettings"):
        eos.mlp_digits_gd(0.1)
    with pytest.raises(ValueError, match="classes must be two different"):
        eos.NetworkSettings(0.1, classes=(3, 3))


def test_fit_power_law_and_rate_on_synthetic_data():
    k = np.arange(1, 10_001, dtype=float)
    p, c = eos.fit_power_law(k, 3.0 * k**-0.73)
    assert p == pytest.approx(0.73, abs=1e-6) and c == pytest.approx(3.0, rel=1e-6)
    p, _ = eos.fit_power_law(k, 2.0 * k**-1.5, window=(100, 1000))
    assert p == pytest.approx(1.5, abs=1e-6)
    err = 0.5 * (-0.9) ** np.arange(200)
    assert eos.fit_linear_rate(err) == pytest.approx(0.9, abs=1e-9)
    np.testing.assert_array_equal(eos.envelope([1.0, -3.0, 2.0, -0.5]), [3.0, 3.0, 2.0])


def test_determinism_and_pickling(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    a, b = eos.gd(xy, w0, ETA_SUB, 500), eos.gd(xy, w0, ETA_SUB, 500)
    np.testing.assert_array_equal(a.w, b.w)
    for model in MODELS:
        clone = pickle.loads(pickle.dumps(model))
        assert clone == model and hash(clone) == hash(model)
        np.testing.assert_array_equal(
            eos.gd(clone, model.balanced(1.1), 0.3, 5).w,
            eos.gd(model, model.balanced(1.1), 0.3, 5).w,
        )
    assert eos.sharpness_hvp(
        lambda v: (v**4).sum() + (v[0] * v[1]) ** 2, torch.tensor([1.0, 2.0, 0.5])
    ) == eos.sharpness_hvp(
        lambda v: (v**4).sum() + (v[0] * v[1]) ** 2, torch.tensor([1.0, 2.0, 0.5])
    )


def test_gd_target_override():
    tr = eos.gd(eos.XYModel(), [1.0, 1.0], 0.2, 300, target=4.0)
    assert tr.target == 4.0 and tr.residual[-1] == pytest.approx(0.0, abs=1e-12)
    assert tr.sharpness[-1] == pytest.approx(8.0, rel=1e-12)  # balanced start stays balanced


# ------------------------------------------------------------------------------------------
# fast path
# ------------------------------------------------------------------------------------------


def test_pair_gd(xy):
    """reference.gd == fast.gd (the batched torch path) on shared starts and steps."""
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    etas = np.array([0.5, ETA_SUB, ETA_CRIT, ETA_SUPER, 1.2, 1.3, 1.6, 2.5])
    bt = eos.fast.gd(xy, w0, etas, 10_000, device="cpu")
    assert bt.w.shape == (10_001, etas.size, 2) and bt.w.dtype == torch.float64
    assert torch.isfinite(bt.w).all()
    for i, eta in enumerate(etas):
        ref = eos.gd(xy, w0, eta, 10_000)
        n = ref.steps_run + 1
        np.testing.assert_allclose(bt.w[:n, i].numpy(), ref.w, rtol=0, atol=1e-12)
        np.testing.assert_allclose(bt.residual[:n, i].numpy(), ref.residual, rtol=0, atol=1e-12)
        assert bool(bt.diverged[i]) == ref.diverged and int(bt.steps_run[i]) == ref.steps_run
        if ref.diverged:  # frozen, not NaN
            assert torch.equal(bt.w[-1, i], bt.w[n - 1, i])
    np.testing.assert_allclose(
        bt.sharpness()[:, 0], eos.gd(xy, w0, 0.5, 10_000).sharpness, rtol=1e-12
    )


@pytest.mark.parametrize("model", [eos.ProductModel(3), eos.InnerProductModel(3, 2.0)], ids=str)
def test_fast_gd_matches_gd_other_models(model):
    eta_c = 2.0 / eos.lambda_min(model)[0]
    starts = np.stack(
        [eos.point_on_manifold(model, s * eos.lambda_min(model)[0], 1e-3) for s in (1.1, 1.3)]
    )
    etas = np.array([0.8, 1.05]) * eta_c
    bt = eos.fast.gd(model, starts, etas, 3000, record_every=10, device="cpu")
    assert bt.w.shape == (301, 2, model.dim)
    np.testing.assert_array_equal(bt.steps_recorded.numpy(), np.arange(0, 3001, 10))
    for i in range(2):
        ref = eos.gd(model, starts[i], etas[i], 3000)
        np.testing.assert_allclose(bt.w[:, i].numpy(), ref.w[::10], rtol=0, atol=1e-12)


def test_fast_gd_broadcast_recording_and_float32(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    bt = eos.fast.gd(xy, torch.tensor(w0), 0.85, 25, record_every=10)
    assert bt.w.shape == (4, 1, 2) and bt.steps_recorded.tolist() == [0, 10, 20, 25]
    assert bt.w.device.type == "cpu"
    b32 = eos.fast.gd(xy, w0, [0.85], 2000, record_every=2000, device="cpu", dtype=torch.float32)
    assert b32.w.dtype == torch.float32
    ref = eos.gd(xy, w0, 0.85, 2000)
    np.testing.assert_allclose(b32.w[-1, 0].double().numpy(), ref.w[-1], atol=1e-4)


@pytest.mark.cuda
def test_fast_gd_cuda_matches_cpu(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    # non-chaotic step sizes (chaos for 1.24 < eta < 1.54 would amplify any 1-ulp difference)
    # plus two that blow up
    etas = torch.cat([torch.linspace(0.5, 1.2, 255, dtype=torch.float64), torch.tensor([1.6, 2.5])])
    cpu = eos.fast.gd(xy, w0, etas, 4000, record_every=100, device="cpu")
    gpu = eos.fast.gd(xy, w0, etas.cuda(), 4000, record_every=100)
    assert gpu.w.device.type == "cuda"
    torch.testing.assert_close(gpu.diverged.cpu(), cpu.diverged)
    ok = ~cpu.diverged
    # identical op order; tolerance covers FMA contraction on the GPU in the EoS phases
    torch.testing.assert_close(gpu.w.cpu()[:, ok], cpu.w[:, ok], rtol=0, atol=1e-9)
    for model in [eos.ProductModel(3), eos.InnerProductModel(3, 2.0)]:
        start = eos.point_on_manifold(model, 1.2 * eos.lambda_min(model)[0], 1e-3)
        e = torch.tensor([0.7, 0.9], dtype=torch.float64) * 2 / eos.lambda_min(model)[0]
        a = eos.fast.gd(model, start, e, 2000, record_every=50, device="cpu")
        b = eos.fast.gd(model, start, e, 2000, record_every=50, device="cuda")
        torch.testing.assert_close(b.w.cpu(), a.w, rtol=0, atol=1e-10)


# ------------------------------------------------------------------------------------------
# the layout: one GD kernel, a cheap import
# ------------------------------------------------------------------------------------------


def test_import_is_lazy_and_cheap():
    import subprocess
    import sys

    code = "import sys, lab.eos as e; e.gd; e.project_to_manifold; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # numpy paths never import torch
    assert set(eos.__all__) >= {"gd", "fast", "project_to_manifold", "attractor", "figures"}


@pytest.mark.parametrize(
    "model", [eos.XYModel(), eos.ProductModel(5), eos.InnerProductModel(3, -1.5)], ids=str
)
def test_reference_equals_fast_path_bitwise(model):
    """The one kernel (``_step``/``_residual``) on Python floats and on torch tensors."""
    lam, _ = eos.lambda_min(model)
    starts = np.stack([eos.point_on_manifold(model, s * lam, 1e-3) for s in (1.05, 1.2, 1.4)])
    etas = np.array([0.9, 1.0, 1.04]) * 2 / lam
    bt = eos.fast.gd(model, starts, etas, 3000, device="cpu")
    for i in range(3):
        ref = eos.gd(model, starts[i], etas[i], 3000)
        np.testing.assert_allclose(bt.w[:, i].numpy(), ref.w, rtol=0, atol=1e-12)
        if not isinstance(model, eos.InnerProductModel):  # same op order: bit for bit
            np.testing.assert_array_equal(bt.w[:, i].numpy(), ref.w)


def test_the_worked_example_of_the_lesson_page():
    """book/eos/index.md, "A worked example": the numbers a reader checks by hand."""
    xy = eos.XYModel()
    lam_star, flat = eos.lambda_min(xy)
    assert lam_star == pytest.approx(2.0) and np.allclose(np.abs(flat), 1.0)
    assert eos.sharpness_on_manifold(xy, [2.0, 0.5]) == pytest.approx(4.25)
    x1, y1 = eos.gd(xy, [1.5, 0.7], 1.0, 1).w[1]
    assert (x1, y1) == pytest.approx((1.465, 0.625), abs=1e-12)
    d0, d1 = eos.imbalance(xy, [1.5, 0.7]), eos.imbalance(xy, [x1, y1])
    assert (d0, d1) == pytest.approx((1.76, 1.7556), abs=1e-12)
    assert d1 / d0 == pytest.approx(1 - 0.05**2, abs=1e-12)
    k5 = eos.flattest_constants(5, 1.0)  # the paper's example: lambda* = 5, step 0.4, nu = 4
    assert (k5.sharpness, k5.eta_critical, k5.nu) == pytest.approx((5.0, 0.4, 4.0))
    # the balanced line: u' = (1 - 2 eta) u - 3 eta u^2 - eta u^3 with a = 1 + u
    eta, u = 0.9, 0.07
    a1 = xy.balanced_map(1 + u, eta)
    assert a1 - 1 == pytest.approx((1 - 2 * eta) * u - 3 * eta * u**2 - eta * u**3, abs=1e-14)
