"""Tests of lab.eos: GD at the edge of stability on overparametrised least squares.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/edge-of-stability-rates.md)
and the full text's App. B/F: closed forms (λ* = p y^(2-2/p), ν = 4 y^(2-4/p), the convexity
moduli), the KKT projection onto M, reference == fast path, bad input. Everything runs on CPU
in float64; the ``cuda`` test is skipped without a GPU (tests/conftest.py).
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
# trusted libraries
# ------------------------------------------------------------------------------------------


MODELS = [
    eos.XYModel(),
    eos.ProductModel(3),
    eos.ProductModel(5, -2.0),
    eos.InnerProductModel(4, 1.5),
]


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_hessian_sharpness_matches_eigvalsh_and_torch(model):
    rng = np.random.default_rng(4)
    for _ in range(5):
        w = eos.point_on_manifold(
            model, 1.4 * eos.lambda_min(model)[0]
        ) + 0.1 * rng.standard_normal(model.dim)
        wt = torch.tensor(w, dtype=torch.float64)

        def loss(v, model=model):
            return 0.5 * (model.f_torch(v) - model.target) ** 2

        h_torch = torch.func.hessian(loss)(wt).numpy()
        np.testing.assert_allclose(model.loss_hessian(w), h_torch, rtol=1e-12, atol=1e-12)
        top = eos.hessian_sharpness(model, w)
        assert top == pytest.approx(np.linalg.eigvalsh(h_torch)[-1], rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("model", [eos.InnerProductModel(100, 1.0), eos.ProductModel(8)], ids=str)
def test_sharpness_hvp_matches_hessian_sharpness(model):
    rng = np.random.default_rng(5)
    w = eos.point_on_manifold(model, 1.5 * eos.lambda_min(model)[0]) + 0.02 * rng.standard_normal(
        model.dim
    )
    est = eos.sharpness_hvp(
        lambda v: 0.5 * (model.f_torch(v) - model.target) ** 2, torch.tensor(w), iters=100
    )
    assert est == pytest.approx(eos.hessian_sharpness(model, w), rel=1e-6)


def test_sharpness_hvp_on_a_small_network():
    gen = torch.Generator().manual_seed(0)  # a local generator: the global one is not touched
    x = torch.randn(20, 4, generator=gen, dtype=torch.float64)
    y = torch.randn(20, 1, generator=gen, dtype=torch.float64)
    shapes = [(4, 6), (6,), (6, 1), (1,)]
    params = tuple(0.7 * torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes)

    def loss(ps):
        w1, b1, w2, b2 = ps
        return 0.5 * ((torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()

    flat = torch.cat([p.reshape(-1) for p in params])

    def loss_flat(v):
        out, i = [], 0
        for s in shapes:
            n = math.prod(s)
            out.append(v[i : i + n].reshape(s))
            i += n
        return loss(tuple(out))

    top = np.linalg.eigvalsh(torch.func.hessian(loss_flat)(flat).numpy())[-1]
    assert eos.sharpness_hvp(loss, params, iters=100) == pytest.approx(top, rel=1e-6)


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
    bt = eos.gd_batched(deep, np.full(40, 1.6), [0.5], 10, device="cpu")
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
        eos.gd_batched(xy, w0, [0.5, -0.5], 10, device="cpu")
    with pytest.raises(ValueError, match="eta must be a scalar or have shape"):
        eos.gd_batched(xy, np.ones((3, 2)), [0.5, 0.6], 10, device="cpu")
    with pytest.raises(ValueError, match="record_every must be an integer in"):
        eos.gd_batched(xy, w0, 0.5, 10, record_every=11, device="cpu")
    with pytest.raises(ValueError, match="dtype must be one of"):
        eos.gd_batched(xy, w0, 0.5, 10, device="cpu", dtype=torch.int64)
    with pytest.raises(ValueError, match="w0 must contain only finite"):
        eos.gd_batched(xy, torch.tensor([[np.nan, 1.0]]), 0.5, 10)
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda"):
        eos.gd_batched(xy, w0, 0.5, 10, device="tpu")
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
        eos.mlp_digits_gd(0.0, steps=2)
    with pytest.raises(ValueError, match="n_samples must be"):
        eos.mlp_digits_gd(0.1, steps=2, n_samples=1000)


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


def test_gd_batched_matches_gd_xy(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    etas = np.array([0.5, ETA_SUB, ETA_CRIT, ETA_SUPER, 1.2, 1.3, 1.6, 2.5])
    bt = eos.gd_batched(xy, w0, etas, 10_000, device="cpu")
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
def test_gd_batched_matches_gd_other_models(model):
    eta_c = 2.0 / eos.lambda_min(model)[0]
    starts = np.stack(
        [eos.point_on_manifold(model, s * eos.lambda_min(model)[0], 1e-3) for s in (1.1, 1.3)]
    )
    etas = np.array([0.8, 1.05]) * eta_c
    bt = eos.gd_batched(model, starts, etas, 3000, record_every=10, device="cpu")
    assert bt.w.shape == (301, 2, model.dim)
    np.testing.assert_array_equal(bt.steps_recorded.numpy(), np.arange(0, 3001, 10))
    for i in range(2):
        ref = eos.gd(model, starts[i], etas[i], 3000)
        np.testing.assert_allclose(bt.w[:, i].numpy(), ref.w[::10], rtol=0, atol=1e-12)


def test_gd_batched_broadcast_recording_and_float32(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    bt = eos.gd_batched(xy, torch.tensor(w0), 0.85, 25, record_every=10)
    assert bt.w.shape == (4, 1, 2) and bt.steps_recorded.tolist() == [0, 10, 20, 25]
    assert bt.w.device.type == "cpu"
    b32 = eos.gd_batched(xy, w0, [0.85], 2000, record_every=2000, device="cpu", dtype=torch.float32)
    assert b32.w.dtype == torch.float32
    ref = eos.gd(xy, w0, 0.85, 2000)
    np.testing.assert_allclose(b32.w[-1, 0].double().numpy(), ref.w[-1], atol=1e-4)


@pytest.mark.cuda
def test_gd_batched_cuda_matches_cpu(xy):
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    # non-chaotic step sizes (chaos for 1.24 < eta < 1.54 would amplify any 1-ulp difference)
    # plus two that blow up
    etas = torch.cat([torch.linspace(0.5, 1.2, 255, dtype=torch.float64), torch.tensor([1.6, 2.5])])
    cpu = eos.gd_batched(xy, w0, etas, 4000, record_every=100, device="cpu")
    gpu = eos.gd_batched(xy, w0, etas.cuda(), 4000, record_every=100)
    assert gpu.w.device.type == "cuda"
    torch.testing.assert_close(gpu.diverged.cpu(), cpu.diverged)
    ok = ~cpu.diverged
    # identical op order; tolerance covers FMA contraction on the GPU in the EoS phases
    torch.testing.assert_close(gpu.w.cpu()[:, ok], cpu.w[:, ok], rtol=0, atol=1e-9)
    for model in [eos.ProductModel(3), eos.InnerProductModel(3, 2.0)]:
        start = eos.point_on_manifold(model, 1.2 * eos.lambda_min(model)[0], 1e-3)
        e = torch.tensor([0.7, 0.9], dtype=torch.float64) * 2 / eos.lambda_min(model)[0]
        a = eos.gd_batched(model, start, e, 2000, record_every=50, device="cpu")
        b = eos.gd_batched(model, start, e, 2000, record_every=50, device="cuda")
        torch.testing.assert_close(b.w.cpu(), a.w, rtol=0, atol=1e-10)


# ------------------------------------------------------------------------------------------
# the real-network contrast
# ------------------------------------------------------------------------------------------


def test_mlp_digits_gd_small_and_deterministic():
    a = eos.mlp_digits_gd(
        0.2, steps=40, width=8, n_samples=60, track_every=20, seed=1, device="cpu"
    )
    b = eos.mlp_digits_gd(
        0.2, steps=40, width=8, n_samples=60, track_every=20, seed=1, device="cpu"
    )
    assert a.loss.shape == (41,) and a.sharpness_steps.tolist() == [0, 20, 40]
    assert a.n_params == 64 * 8 + 8 + 8 * 2 + 2
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.sharpness, b.sharpness)
    assert a.loss[-1] < a.loss[0] and not a.diverged


@pytest.mark.slow
def test_mlp_digits_hovers_at_the_edge_of_stability():
    eta = 0.2
    run = eos.mlp_digits_gd(eta, steps=1000, track_every=50, device="cpu")
    assert run.sharpness[0] < 0.8 * 2 / eta  # starts well below 2/eta: progressive sharpening
    late = run.sharpness[run.sharpness_steps >= 300]
    assert np.all(np.abs(late / (2 / eta) - 1) < 0.12)  # then hovers at 2/eta
    assert run.accuracy == 1.0


# -- figures of the book (lab.eos.figures) -----------------------------------------------------
def test_regime_figure_badge_and_constant_trace_count():
    from lab.eos import figures

    titles, n_traces = [], set()
    for eta in (0.7, 0.85, 1.0, 1.05, 1.3):
        fig = figures.regime_figure(eta, steps=500)
        titles.append(fig.layout.title.text)
        n_traces.add(len(fig.data))
    assert n_traces == {6}  # the static twin needs the same traces for every slider step
    for word, title in zip(
        ["stable", "subcritical", "critical", "supercritical", "beyond"], titles, strict=True
    ):
        assert f"<b>{word}" in title, title
    with pytest.raises(ValueError, match="eta must be > 0"):
        figures.regime_figure(0.0)


def test_cobweb_and_critical_fit_figures():
    from lab.eos import figures

    assert "stable fixed point" in figures.cobweb_figure(0.9).layout.title.text
    assert "stable 2-cycle" in figures.cobweb_figure(1.1).layout.title.text
    assert "period 4" in figures.cobweb_figure(1.3).layout.title.text
    fig = figures.critical_fit_figure("xy", (3.0, 4.0), steps=10_000)
    assert "k^−0.5" in fig.layout.title.text
    with pytest.raises(ValueError, match="model_name must be one of"):
        eos.critical_run("nope")
    with pytest.raises(ValueError, match="window must span"):
        figures.critical_fit_figure("xy", (3.0, 3.1), steps=10_000)


def test_network_figure_from_a_short_run():
    from lab.eos import figures

    run = eos.mlp_digits_gd(0.2, steps=20, width=4, n_samples=20, track_every=10)
    fig = figures.network_figure(run, 20)
    assert len(fig.data) == 2 and "2/η = 10.0" in fig.layout.title.text


# ------------------------------------------------------------------------------------------
# the layout: one GD kernel, a cheap import
# ------------------------------------------------------------------------------------------


def test_import_is_lazy_and_cheap():
    import subprocess
    import sys

    code = "import sys, lab.eos as e; e.gd; e.project_to_manifold; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # numpy paths never import torch
    assert set(eos.__all__) >= {"gd", "gd_batched", "project_to_manifold", "attractor", "figures"}


@pytest.mark.parametrize(
    "model", [eos.XYModel(), eos.ProductModel(5), eos.InnerProductModel(3, -1.5)], ids=str
)
def test_reference_equals_fast_path_bitwise(model):
    """The one kernel (``_step``/``_residual``) on Python floats and on torch tensors."""
    lam, _ = eos.lambda_min(model)
    starts = np.stack([eos.point_on_manifold(model, s * lam, 1e-3) for s in (1.05, 1.2, 1.4)])
    etas = np.array([0.9, 1.0, 1.04]) * 2 / lam
    bt = eos.gd_batched(model, starts, etas, 3000, device="cpu")
    for i in range(3):
        ref = eos.gd(model, starts[i], etas[i], 3000)
        np.testing.assert_allclose(bt.w[:, i].numpy(), ref.w, rtol=0, atol=1e-12)
        if not isinstance(model, eos.InnerProductModel):  # same op order: bit for bit
            np.testing.assert_array_equal(bt.w[:, i].numpy(), ref.w)


# ------------------------------------------------------------------------------------------
# App. F: the projection onto M by KKT conditions and bisection
# ------------------------------------------------------------------------------------------


def _scipy_projection(model, theta):
    from scipy.optimize import minimize

    res = minimize(
        lambda z: 0.5 * np.sum((z - theta) ** 2),
        model.project(theta),  # start from the gradient-flow projection (on M)
        jac=lambda z: z - theta,
        constraints=[{"type": "eq", "fun": lambda z: model.f(z) - model.target, "jac": model.grad}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return res.x


@pytest.mark.parametrize(
    "model",
    [eos.ProductModel(5), eos.ProductModel(3, 2.5), eos.XYModel(), eos.InnerProductModel(3, -1.5)],
    ids=str,
)
def test_projection_kkt_product_and_nearest(model):
    rng = np.random.default_rng(7)
    lam, star = eos.lambda_min(model)
    star = np.abs(star) if isinstance(model, eos.ProductModel) else star
    theta = star * (1 + 0.25 * rng.standard_normal((300, model.dim)))
    if isinstance(model, eos.ProductModel):
        theta = np.abs(theta)
    par = eos.project_to_manifold(model, theta)
    assert par.shape == theta.shape
    # on M to 1e-12
    np.testing.assert_allclose(model.f(par), model.target, rtol=1e-12, atol=0)
    # KKT: theta - par is parallel to grad f(par)
    g = model.grad(par)
    alpha = -np.sum((par - theta) * g, 1) / np.sum(g * g, 1)
    assert np.max(np.abs(par - theta + alpha[:, None] * g)) < 1e-12
    # no other sampled point of M is nearer
    others = eos.project_to_manifold(
        model, np.abs(theta[::-1]) if model.target > 0 else theta[::-1]
    )
    others = np.concatenate([others, model.project(theta)])
    for t, p in zip(theta[:60], par[:60], strict=True):
        assert np.linalg.norm(p - t) <= np.min(np.linalg.norm(others - t, axis=1)) + 1e-12
    # agrees with scipy's constrained minimiser
    for t, p in zip(theta[:10], par[:10], strict=True):
        np.testing.assert_allclose(_scipy_projection(model, t), p, atol=1e-7)
    # a single point keeps its shape; depth given as an int
    one = eos.project_to_manifold(model, theta[0])
    assert one.shape == (model.dim,)
    if isinstance(model, eos.ProductModel):
        np.testing.assert_allclose(
            eos.project_to_manifold(model.depth, theta[:5], y=model.target), par[:5], rtol=1e-15
        )


def test_projection_far_above_the_manifold():
    """Far above M the "+" branch overshoots; the smallest coordinate takes the "-" root."""
    xy = eos.ProductModel(2)
    z = eos.project_to_manifold(xy, [10.0, 10.0])
    assert np.prod(z) == pytest.approx(1.0, rel=1e-12)
    ref = min(
        (_scipy_projection(xy, np.array([10.0, 10.0]) + d) for d in ([0.1, -0.1], [-0.1, 0.1])),
        key=lambda q: np.linalg.norm(q - 10.0),
    )
    assert np.linalg.norm(z - 10.0) <= np.linalg.norm(ref - 10.0) + 1e-9  # as near as SLSQP
    assert np.linalg.norm(z - 10.0) < np.linalg.norm(np.ones(2) - 10.0)  # not the balanced point
    p5 = eos.ProductModel(5)
    theta = np.array([0.5, 3.0, 3.0, 3.0, 3.0])  # product 40.5, far above y = 1
    z = eos.project_to_manifold(p5, theta)
    assert np.prod(z) == pytest.approx(1.0, rel=1e-12)
    grid = eos.project_to_manifold(
        p5, np.abs(theta + 0.5 * np.random.default_rng(0).standard_normal((3000, 5)))
    )
    assert np.linalg.norm(z - theta) <= np.min(np.linalg.norm(grid - theta, axis=1)) + 1e-12


def test_manifold_coordinates_and_sharpness_gradient():
    p5 = eos.ProductModel(5)
    rng = np.random.default_rng(3)
    theta = np.abs(1 + 0.1 * rng.standard_normal((50, 5)))
    par, perp = eos.manifold_coordinates(p5, theta)
    n = p5.grad(par) / np.linalg.norm(p5.grad(par), axis=1, keepdims=True)
    np.testing.assert_allclose(par + perp[:, None] * n, theta, atol=1e-13)
    # the Riemannian gradient: tangent, and the derivative of lambda along M
    q = par[0]
    g = eos.sharpness_gradient_on_manifold(p5, q)
    assert abs(g @ n[0]) < 1e-12
    v = rng.standard_normal(5)
    v -= (v @ n[0]) * n[0]
    h = 1e-6

    def lam(z):
        return float(np.sum(p5.grad(eos.project_to_manifold(p5, z)) ** 2))

    fd = (lam(q + h * v) - lam(q - h * v)) / (2 * h)
    assert fd == pytest.approx(g @ v, rel=1e-6)


# ------------------------------------------------------------------------------------------
# App. B: closed forms and convexity constants
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p,y", [(2, 1.0), (3, 1.0), (5, 1.0), (3, 2.5), (5, 0.4)])
def test_flattest_sharpness_and_nu(p, y):
    k = eos.flattest_constants(p, y)
    model = eos.ProductModel(p, y)
    assert k.sharpness == pytest.approx(p * y ** (2 - 2 / p), rel=1e-15)
    assert k.eta_critical == pytest.approx(2 / k.sharpness)
    assert eos.hessian_sharpness(model, k.theta_star) == pytest.approx(k.sharpness, rel=1e-12)
    assert eos.lambda_min(model)[0] == pytest.approx(k.sharpness, rel=1e-12)
    H = eos.riemannian_hessian(model, k.theta_star)
    assert H.shape == (p - 1, p - 1)
    np.testing.assert_allclose(np.linalg.eigvalsh(H), 4 * y ** (2 - 4 / p), rtol=1e-5)  # Prop B.7


def test_paper_example_constants():
    k = eos.flattest_constants(5)
    assert (k.sharpness, k.eta_critical, k.nu, k.ball_radius) == pytest.approx((5, 0.4, 4, 0.15))
    np.testing.assert_array_equal(k.theta_star, np.ones(5))
    assert eos.convexity_modulus(5) == pytest.approx(1.3375, abs=5e-4)
    assert eos.convexity_modulus(5) >= 1.33
    assert eos.convexity_modulus(3, 2.0, 0.0) == pytest.approx(4 * 2.0 ** (2 - 4 / 3))  # δ = 0: ν
    assert eos.convexity_modulus(2, 7.0) == 2.0


@pytest.mark.parametrize("p,y", [(3, 1.0), (5, 1.0), (4, 2.0)])
def test_convexity_on_the_geodesic_ball(p, y):
    model = eos.ProductModel(p, y)
    k = eos.flattest_constants(p, y)
    pts = eos.geodesic_ball_points(model, k.ball_radius, n=25, seed=p)
    assert np.all(np.linalg.norm(pts - k.theta_star, axis=1) <= k.ball_radius)  # chord <= geodesic
    np.testing.assert_allclose(model.f(pts), y, rtol=1e-12)
    mins = [np.linalg.eigvalsh(eos.riemannian_hessian(model, q))[0] for q in pts]
    assert min(mins) >= k.modulus  # Prop B.6: 1.33 y^(2-4/p) on the ball
    # the second difference along a geodesic-like curve through the ball is above the modulus too
    v = pts[0] - k.theta_star
    s = np.linspace(-1, 1, 41) * 0.9 * k.ball_radius / np.linalg.norm(v)
    curve = eos.project_to_manifold(model, k.theta_star + s[:, None] * v)
    arc = np.concatenate([[0], np.cumsum(np.linalg.norm(np.diff(curve, axis=0), axis=1))])
    lam = np.sum(model.grad(curve) ** 2, 1)
    second = np.diff(np.diff(lam) / np.diff(arc)) / (0.5 * (arc[2:] - arc[:-2]))
    assert second.min() >= 0.95 * k.modulus  # finite-difference curvature along the curve


def test_convexity_depth_two_everywhere_and_depth_three_fails_far_away():
    xy = eos.XYModel()
    for x in np.geomspace(0.05, 20, 25):
        assert np.linalg.eigvalsh(eos.riemannian_hessian(xy, [x, 1 / x]))[0] >= 2 - 1e-5
    p3 = eos.ProductModel(3, 1.5)
    for eps in (0.1, 0.05):
        far = np.array([eps, 1.0, 1.5 / eps])  # on M
        assert p3.f(far) == pytest.approx(1.5)
        assert np.linalg.eigvalsh(eos.riemannian_hessian(p3, far))[0] < 0


# ------------------------------------------------------------------------------------------
# the paper's experiment, the drift law, beyond the window
# ------------------------------------------------------------------------------------------


def test_starts_on_manifold_and_manifold_runs():
    p5 = eos.ProductModel(5)
    starts = eos.starts_on_manifold(p5, 5.25, 3, 1e-3, seed=1)
    par, perp = eos.manifold_coordinates(p5, starts)
    np.testing.assert_allclose(np.sum(p5.grad(par) ** 2, 1), 5.25, rtol=1e-10)
    np.testing.assert_allclose(perp, 1e-3, rtol=1e-8)
    runs = eos.manifold_runs(p5, 0.39, starts, 3000, dense=3000)
    assert runs.distance.shape == (3, 3001) and not runs.diverged.any()
    tau = runs.exit_times()
    assert np.all((tau > 0) & (tau < 3000))
    assert np.all(0.39 * runs.sharpness[:, -1] < 2) and np.all(runs.gap[:, -1] > 0)
    assert np.all(np.diff(runs.sharpness, axis=1) <= 1e-10)  # Thm 5.1: monotone decrease


def test_drift_law_is_exact_on_xy_and_close_on_product():
    xy = eos.XYModel()
    w0 = eos.point_on_manifold(xy, 2.3, 1e-3)
    run = eos.gd(xy, w0, 1.0, 3000)
    law = eos.drift_law(xy, run.w, window=(500, 3000))
    assert law.period == 2 and law.power == 2.0 and np.all(np.diff(law.t) == 2)
    assert law.cosine.min() > 1 - 1e-9  # along -grad_M lambda (a 1-D manifold)
    assert law.spread < 0.05
    p5 = eos.ProductModel(5)
    start = eos.starts_on_manifold(p5, 5.05, 1, 1e-3, seed=0)[0]
    law5 = eos.drift_law(p5, eos.gd(p5, start, 0.4, 1500).w, window=(200, 1500))
    assert law5.cosine.min() > 0.999 and law5.kappa.min() > 0


def test_drift_law_one_step_chords_alternate_and_cancel_over_a_period():
    p5 = eos.ProductModel(5)
    start = eos.starts_on_manifold(p5, 5.75, 1, 1e-3, seed=0)[0]
    w = eos.gd(p5, start, 0.4, 3000).w
    one = eos.drift_law(p5, w, window=(2000, 3000), period=1)
    two = eos.drift_law(p5, w, window=(2000, 3000))
    # the one-step kappa zigzags with the sign of the normal coordinate ...
    dev = one.kappa - np.median(one.kappa)
    assert np.mean(np.sign(dev[1:]) != np.sign(dev[:-1])) > 0.9
    assert (
        np.mean(np.sign(dev) == np.sign(one.perp)) > 0.9
        or np.mean(np.sign(dev) == -np.sign(one.perp)) > 0.9
    )
    # ... and the first-order term cancels over one period
    assert two.spread < 0.1 * one.spread
    # the two-step chord is the sum of two one-step chords: same kappa-weighted energy
    law1 = eos.drift_law(p5, w, window=(2000, 2002), period=1)
    law2 = eos.drift_law(p5, w, window=(2000, 2002))
    e1 = law1.perp**2  # the same gradient at both steps, to first order
    assert law2.kappa[0] == pytest.approx((law1.kappa * e1).sum() / e1.sum(), rel=2e-2)
    # the rival law (drift proportional to |theta_perp|) is not constant while |theta_perp| decays
    rival = eos.drift_law(p5, w, window=(200, 3000), power=1)
    assert rival.spread > 10 * eos.drift_law(p5, w, window=(200, 3000)).spread


def test_batched_sharpness_gradient_matches_the_reference():
    from lab.eos.experiments import _sharpness_gradients

    rng = np.random.default_rng(7)
    for model in [eos.ProductModel(5), eos.XYModel(), eos.ProductModel(4, 2.0)]:
        star = np.abs(eos.lambda_min(model)[1])
        P = eos.project_to_manifold(
            model, star + 0.1 * np.abs(rng.standard_normal((20, model.dim)))
        )
        ref = np.array([eos.sharpness_gradient_on_manifold(model, p) for p in P])
        np.testing.assert_allclose(
            _sharpness_gradients(model, P), ref, atol=1e-10 * np.abs(ref).max()
        )


def test_tail_rates_match_the_limit_not_the_exit_or_the_start():
    p5 = eos.ProductModel(5)
    runs = eos.manifold_runs(
        p5, 0.39, eos.starts_on_manifold(p5, 5.25, 2, 1e-3, seed=3), 3000, dense=3000
    )
    tail = eos.tail_rates(runs)
    assert np.all(np.isfinite(tail.rate)) and np.all(tail.window[:, 0] > runs.exit_times())
    assert np.all(np.abs(runs.perp[0, runs.t >= tail.window[0, 0]]) < 1e-3)
    assert np.max(np.abs(tail.rate - tail.predicted(tail.sharpness_end))) < 1e-4
    assert np.min(np.abs(tail.rate - tail.predicted(tail.sharpness_start))) > 1e-2
    assert np.all(tail.sharpness_exit > tail.sharpness_end)  # the sharpness still falls after tau
    # a run that never exits (the critical step) has no window
    crit = eos.manifold_runs(
        p5, 0.4, eos.starts_on_manifold(p5, 5.1, 1, 1e-3, seed=1), 500, dense=500
    )
    none = eos.tail_rates(crit)
    assert np.isnan(none.rate).all() and (none.window == -1).all()
    with pytest.raises(TypeError, match="runs must be a ManifoldRuns"):
        eos.tail_rates("runs")
    with pytest.raises(ValueError, match="floor must be < below"):
        eos.tail_rates(runs, below=1e-6, floor=1e-6)


def test_outcomes_of_notebook_one_and_their_controls():
    xy = eos.XYModel()
    w0 = eos.point_on_manifold(xy, 2.6, 1e-3)
    sub = eos.subcritical_outcome(eos.gd(xy, w0, 0.85, 3000), 1e-3)
    assert 0 < sub["exit_step"] < 200 and 2.0 < sub["sharpness"] < 2 / 0.85
    assert sub["rate"] == pytest.approx(sub["predicted"], abs=1e-4)
    crit = eos.subcritical_outcome(eos.gd(xy, w0, 1.0, 3000), 1e-3)
    assert crit["exit_step"] is None and math.isnan(crit["rate"])
    sup = eos.supercritical_outcome(xy, eos.gd(xy, w0, 1.05, 4000))
    assert sup["imbalance"] < 1e-10 and sup["gap"] < 1e-8 and abs(sup["midpoint"] - 1) < 0.03
    beyond = eos.supercritical_outcome(xy, eos.gd(xy, w0, 1.25, 4000))
    assert not beyond["gap"] < 1e-8
    with pytest.raises(TypeError, match="run must be a Trajectory"):
        eos.subcritical_outcome(np.zeros(3), 1e-3)
    with pytest.raises(ValueError, match="r0 must be > 0"):
        eos.subcritical_outcome(eos.gd(xy, w0, 0.85, 10), 0.0)
    with pytest.raises(ValueError, match="at must be an integer in"):
        eos.supercritical_outcome(xy, eos.gd(xy, w0, 1.05, 10), at=100)


def test_euclidean_tangent_hessian_misses_the_curvature_of_m():
    k5 = eos.flattest_constants(5, 1.0)
    p5 = eos.ProductModel(5)
    riem = np.linalg.eigvalsh(eos.riemannian_hessian(p5, k5.theta_star))
    flat = np.linalg.eigvalsh(eos.euclidean_tangent_hessian(p5, k5.theta_star))
    np.testing.assert_allclose(riem, k5.nu, rtol=1e-4)
    # the second fundamental form term -<grad lambda, n> II is 2 nu here: the signs flip
    np.testing.assert_allclose(flat, -k5.nu, rtol=1e-4)
    with pytest.raises(ValueError, match="h must lie in"):
        eos.euclidean_tangent_hessian(p5, k5.theta_star, h=1.0)
    with pytest.raises(TypeError, match="model must be"):
        eos.euclidean_tangent_hessian("p5", k5.theta_star)


def test_critical_and_regime_runs_are_cached_drivers():
    a = eos.critical_run("xy", 2000, eta_factor=0.99)
    assert a is eos.critical_run("xy", 2000, eta_factor=0.99)
    assert a.eta == pytest.approx(0.99)
    assert set(eos.CRITICAL_MODELS) == {"xy", "depth-3 product", "depth-4 product, y = 2"}
    with pytest.raises(ValueError, match="eta_factor must lie in"):
        eos.critical_run("xy", 100, eta_factor=2.0)
    regime, run = eos.regime_run(0.85, steps=300)
    assert regime == "subcritical" and run.steps_run == 300
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.regime_run(-1.0)


def test_attractor_period_doubling_cascade_and_chaos():
    xy = eos.XYModel()
    periods = {
        eta: eos.attractor(xy, eta, steps=4000, lyapunov_steps=2000)
        for eta in (0.9, 1.1, 1.25, 1.29, 1.35)
    }
    assert [periods[e].period for e in (0.9, 1.1, 1.25, 1.29)] == [1, 2, 4, 8]
    assert all(periods[e].lyapunov < 0 for e in (0.9, 1.1, 1.25))
    assert periods[1.35].period == 0 and periods[1.35].lyapunov > 0.05
    blown = eos.attractor(xy, 3.0, eos.point_on_manifold(xy, 4.0, 1e-3), steps=400)
    assert blown.diverged and math.isnan(blown.lyapunov) and blown.period == 0


# ------------------------------------------------------------------------------------------
# bad input of the new public names
# ------------------------------------------------------------------------------------------


def test_bad_inputs_of_the_paper_functions():
    p5 = eos.ProductModel(5)
    with pytest.raises(ValueError, match="positive-orthant"):
        eos.project_to_manifold(p5, [1.0, -1.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="positive-orthant"):
        eos.project_to_manifold(eos.ProductModel(3, -1.0), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="theta must have 5 entries"):
        eos.project_to_manifold(p5, [1.0, 1.0])
    with pytest.raises(ValueError, match="theta must contain only finite"):
        eos.project_to_manifold(p5, [1.0, np.nan, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="depth must be an integer in"):
        eos.project_to_manifold(1, [1.0])
    with pytest.raises(TypeError, match="model_or_p"):
        eos.project_to_manifold(True, [1.0, 1.0])
    with pytest.raises(ValueError, match="not unique"):
        eos.project_to_manifold(eos.XYModel(), [1.0, -1.0])
    with pytest.raises(ValueError, match="h must lie in"):
        eos.riemannian_hessian(p5, np.ones(5), h=1.0)
    with pytest.raises(ValueError, match="p must be an integer in"):
        eos.flattest_constants(1)
    with pytest.raises(ValueError, match="y must be > 0"):
        eos.flattest_constants(3, -1.0)
    with pytest.raises(ValueError, match="delta must lie in"):
        eos.convexity_modulus(3, 1.0, 0.5)
    with pytest.raises(ValueError, match="sharpness must exceed"):
        eos.starts_on_manifold(p5, 4.0)
    with pytest.raises(ValueError, match="w must hold at least period"):
        eos.drift_law(p5, np.ones((1, 5)))
    with pytest.raises(ValueError, match="period must be an integer in"):
        eos.drift_law(p5, np.ones((4, 5)), period=0)
    with pytest.raises(ValueError, match="power must lie in"):
        eos.drift_law(p5, np.ones((4, 5)), power=0.0)
    with pytest.raises(ValueError, match="room for one chord"):
        eos.drift_law(p5, np.ones((10, 5)), window=(0, 1))
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.attractor(eos.XYModel(), 0.0)
    with pytest.raises(ValueError, match="steps must be an integer in"):
        eos.attractor(eos.XYModel(), 1.0, max_period=64, steps=10)
