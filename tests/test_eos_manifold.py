"""Tests of lab.eos, part 2: the paper's geometry and experiments (App. B, App. F), the trusted
libraries (eigvalsh, torch.func), the network of notebook 3 and the figures.

Split from tests/test_eos.py (the house limit of 600 lines per file); the reference/fast pair
test ``test_pair_gd`` stays there. Everything runs on CPU in float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lab import eos

MODELS = [
    eos.XYModel(),
    eos.ProductModel(3),
    eos.ProductModel(5, -2.0),
    eos.InnerProductModel(4, 1.5),
]


@pytest.fixture(scope="module")
def xy():
    return eos.XYModel()


# ------------------------------------------------------------------------------------------
# trusted libraries
# ------------------------------------------------------------------------------------------


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
# the real-network contrast
# ------------------------------------------------------------------------------------------


def test_mlp_digits_gd_small_and_deterministic():
    settings = eos.NetworkSettings(0.2, steps=40, width=8, n_samples=60, track_every=20, seed=1)
    a = eos.mlp_digits_gd(settings, "cpu")
    eos.mlp_digits_gd.clear()  # recompute, not the memo's copy
    b = eos.mlp_digits_gd(settings, "cpu")
    assert b is not a and b is eos.mlp_digits_gd(settings, "cpu")
    assert a.loss.shape == (41,) and a.sharpness_steps.tolist() == [0, 20, 40]
    assert a.n_params == 64 * 8 + 8 + 8 * 2 + 2
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.sharpness, b.sharpness)
    assert a.loss[-1] < a.loss[0] and not a.diverged


@pytest.mark.slow
def test_mlp_digits_hovers_at_the_edge_of_stability():
    eta = 0.2
    run = eos.mlp_digits_gd(eos.NetworkSettings(eta, steps=1000, track_every=50), "cpu")
    assert run.sharpness[0] < 0.8 * 2 / eta  # starts well below 2/eta: progressive sharpening
    late = run.sharpness[run.sharpness_steps >= 300]
    assert np.all(np.abs(late / (2 / eta) - 1) < 0.12)  # then hovers at 2/eta
    assert run.accuracy == 1.0


# -- figures of the book (lab.eos.figures) -----------------------------------------------------
def test_regime_figure_badge_and_constant_trace_count():
    from lab.eos import figures

    titles, n_traces = [], set()
    for eta in (0.7, 0.85, 1.0, 1.05, 1.3):
        fig = figures.regime_figure(eos.regime_run(eos.RegimeSettings(eta, steps=500)))
        titles.append(fig.layout.title.text)
        n_traces.add(len(fig.data))
    assert n_traces == {6}  # the static twin needs the same traces for every slider step
    for word, title in zip(
        ["stable", "subcritical", "critical", "supercritical", "beyond"], titles, strict=True
    ):
        assert f"<b>{word}" in title, title
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.RegimeSettings(0.0)
    with pytest.raises(TypeError, match="result must be a RegimeRun"):
        figures.regime_figure(0.85)


def test_cobweb_and_critical_fit_figures():
    from lab.eos import figures

    def web(eta):
        return figures.cobweb_figure(eos.cobweb(eos.CobwebSettings(eta))).layout.title.text

    assert "stable fixed point" in web(0.9)
    assert "stable 2-cycle" in web(1.1)
    assert "period 4" in web(1.3)
    short = eos.CriticalSettings("xy", steps=10_000)
    fig = figures.critical_fit_figure(eos.critical_fit(short, (3.0, 4.0)))
    assert "k^−0.5" in fig.layout.title.text
    with pytest.raises(ValueError, match="model must be one of"):
        eos.CriticalSettings("nope")
    with pytest.raises(ValueError, match="window must span"):
        eos.critical_fit(short, (3.0, 3.1))
    with pytest.raises(TypeError, match="fit must be a CriticalFit"):
        figures.critical_fit_figure("xy")


def test_network_figure_from_a_short_run():
    from lab.eos import figures

    run = eos.mlp_digits_gd(
        eos.NetworkSettings(0.2, steps=20, width=4, n_samples=20, track_every=10)
    )
    fig = figures.network_figure(run, 20)
    assert len(fig.data) == 2 and "2/η = 10.0" in fig.layout.title.text


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
    a = eos.critical_run(eos.CriticalSettings("xy", 2000, eta_factor=0.99))
    assert a is eos.critical_run(eos.CriticalSettings("xy", 2000, eta_factor=0.99))
    assert a.eta == pytest.approx(0.99)
    assert set(eos.CRITICAL_MODELS) == {"xy", "depth-3 product", "depth-4 product, y = 2"}
    with pytest.raises(ValueError, match="eta_factor must lie in"):
        eos.CriticalSettings("xy", 100, eta_factor=2.0)
    with pytest.raises(TypeError, match="settings must be a CriticalSettings"):
        eos.critical_run("xy")
    result = eos.regime_run(eos.RegimeSettings(0.85, steps=300))
    assert result.regime == "subcritical" and result.run.steps_run == 300
    assert result is eos.regime_run(eos.RegimeSettings(0.85, steps=300))
    with pytest.raises(ValueError, match="eta must be > 0"):
        eos.RegimeSettings(-1.0)
    # the settings path runs the same numbers as the checked public kernels
    ref = eos.gd(eos.XYModel(), eos.point_on_manifold(eos.XYModel(), 2.6, 1e-3), 0.85, 300)
    np.testing.assert_array_equal(result.run.w, ref.w)


def test_attractor_period_doubling_cascade_and_chaos():
    xy = eos.XYModel()
    periods = {
        eta: eos.attractor(xy, eta, steps=4000, lyapunov_steps=2000)
        for eta in (0.9, 1.1, 1.25, 1.29, 1.35)
    }
    assert [periods[e].period for e in (0.9, 1.1, 1.25, 1.29)] == [1, 2, 4, 8]
    assert all(periods[e].lyapunov < 0 for e in (0.9, 1.1, 1.25))
    assert periods[1.35].period == 0 and periods[1.35].lyapunov > 0.05
    for a in periods.values():  # the closure residuals decide the period: first P within tol
        assert a.returns.shape == (64,)
        closed = np.flatnonzero(a.returns <= 1e-9)
        assert a.period == (closed[0] + 1 if closed.size else 0)
    assert periods[1.25].returns[1] > 1e-3 and periods[1.25].returns[3] <= 1e-12
    blown = eos.attractor(xy, 3.0, eos.point_on_manifold(xy, 4.0, 1e-3), steps=400)
    assert blown.diverged and math.isnan(blown.lyapunov) and blown.period == 0
    assert np.all(np.isnan(blown.returns))


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


# -- the registry and the records' evidence (lab.eos.claims, lab.eos.evidence) -----------------
def test_registry_names_a_rival_for_every_claim():
    from lab.eos.claims import CLAIMS

    assert CLAIMS.notebooks() == ("01", "02", "03")
    for spec in CLAIMS.specs.values():
        assert bool(spec.rival) != bool(spec.no_rival), spec.id
    assert "window-end-xy" not in CLAIMS.specs  # a code check (notebook 2, test_eos), not a claim
    assert set(CLAIMS.deviations) >= {"chord-distance", "euclidean-normal", "seeded-starts"}


def test_settles_on_reads_the_closure_residuals():
    from lab.eos.claims import settles_on

    four = settles_on(4)
    assert four.test([0.5, 0.1, 0.5, 0.0]) and not four.test([0.5, 0.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="period must be"):
        settles_on(1)
    with pytest.raises(TypeError, match="period must be"):
        settles_on(None)


def test_evidence_measures_a_rival_apart_from_the_claim():
    from lab.eos import evidence

    k5 = eos.flattest_constants(5, 1.0)
    ball = evidence.convexity_on_ball(eos.ProductModel(5), k5, n=5, seed=0)
    assert ball["measured"] >= 1.0 > ball["control"].measured  # curvature of M makes it convex
    not_global, depth_two = evidence.convexity_far_and_depth_two()
    assert not_global["measured"] < 0 < not_global["control"].measured
    assert depth_two["measured"] > 2 - 1e-5 > depth_two["control"].measured
