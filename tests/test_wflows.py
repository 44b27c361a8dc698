"""Tests of lab.wflows: closed forms, invariants, reference vs fast path, POT and scipy
agreement, budget accounting, bad input, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from lab import wflows as wf


@pytest.fixture(scope="module")
def pot():
    return wf.quadratic_finite_sum(200, 2, 0)


@pytest.fixture(scope="module")
def far_start(pot):
    rng = np.random.default_rng(1)
    return pot.mean + np.array([3.0, -2.0]) + 0.5 * rng.standard_normal((600, 2))


# ------------------------------------------------------------------------------------------
# the target
# ------------------------------------------------------------------------------------------


def test_target_is_the_gaussian_with_mean_and_cov(pot):
    assert pot.N == 200 and pot.d == 2
    # grad V vanishes at the mean, Hessian is cov^-1
    np.testing.assert_allclose(pot.grad(pot.mean[None]), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.inv(pot.cov), pot.A.mean(0), rtol=1e-12)
    # the full gradient is the mean of the component gradients
    X = np.random.default_rng(0).standard_normal((7, 2))
    np.testing.assert_allclose(pot.grad_components(X).mean(1), pot.grad(X), atol=1e-12)
    # V - V(mean) is the quadratic form of the target
    D = X - pot.mean
    dv = pot.value(X) - pot.value(pot.mean[None])
    np.testing.assert_allclose(dv, 0.5 * np.einsum("pi,ij,pj->p", D, pot.Abar, D), rtol=1e-10)
    eig = np.linalg.eigvalsh(pot.A)
    assert 0.2 <= eig.min() and eig.max() <= 3.0
    assert pot.L == pytest.approx(eig.max())


def test_shifted_1d_moments():
    p = wf.shifted_quadratic_1d(100, 2.0, 3)
    assert p.a.mean() == pytest.approx(0.0, abs=1e-12)
    assert p.a.var() == pytest.approx(4.0, rel=1e-12)
    assert p.mean[0] == pytest.approx(0.0, abs=1e-12) and p.cov[0, 0] == pytest.approx(1.0)
    # Sigma = s^2 / b, independent of x
    np.testing.assert_allclose(p.noise_cov(np.array([[-2.0], [0.0], [3.0]]), 4)[:, 0, 0], 1.0)


# ------------------------------------------------------------------------------------------
# closed forms
# ------------------------------------------------------------------------------------------


def test_kl_gaussian_against_quadrature():
    for m1, v1, m2, v2 in [(0.3, 0.7, -0.2, 1.4), (1.0, 2.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0)]:
        p, q = stats.norm(m1, np.sqrt(v1)), stats.norm(m2, np.sqrt(v2))
        val, _ = integrate.quad(lambda x, p=p, q=q: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), -30, 30)
        assert wf.kl_gaussian(m1, v1, m2, v2) == pytest.approx(val, abs=1e-8)


def test_w2_gaussian_closed_forms_and_pot(pot):
    # 1-D: |m1 - m2|^2 + (s1 - s2)^2
    assert wf.w2_gaussian(1.0, 4.0, -1.0, 1.0) == pytest.approx(np.sqrt(4 + 1))
    # commuting covariances
    S1, S2 = np.diag([1.0, 4.0]), np.diag([9.0, 1.0])
    assert wf.w2_gaussian([0, 0], S1, [0, 0], S2) == pytest.approx(np.sqrt(4 + 1))
    # POT on 2000-point samples, means 3 standard deviations apart
    rng = np.random.default_rng(2)
    S = np.array([[1.0, 0.3], [0.3, 0.5]])
    m = np.array([3.0, 0.0])
    X = rng.multivariate_normal([0, 0], S, 2000)
    Y = rng.multivariate_normal(m, pot.cov, 2000)
    exact = wf.w2_gaussian([0, 0], S, m, pot.cov)
    assert wf.empirical_w2(X, Y) == pytest.approx(exact, rel=0.05)
    sliced = wf.empirical_w2(X, Y, sliced=True, n_projections=200)
    assert 0 < sliced < exact  # a sliced distance lower-bounds W2 (times sqrt(d) scaling aside)


def test_ula_and_sgld_stationary_closed_forms(pot):
    h = 0.05
    S_ula = wf.ula_stationary_cov(pot.Abar, h)
    np.testing.assert_allclose(wf.sgld_stationary_cov(pot, h, None), S_ula, rtol=1e-10)
    # the exact moment recursion converges to the linear-solve answer
    _, covs = wf.sgld_moments(pot, pot.mean, pot.cov, h, 3000, 5)
    np.testing.assert_allclose(covs[-1], wf.sgld_stationary_cov(pot, h, 5), rtol=1e-8)
    # 1-D shifted quadratic: (1 + h s^2 / 2b) / (1 - h/2)
    p1 = wf.shifted_quadratic_1d(50, 2.0, 0)
    for h1, b in [(0.1, 1), (0.3, 4), (0.02, 7)]:
        assert wf.sgld_stationary_cov(p1, h1, b)[0, 0] == pytest.approx(
            wf.sgld_stationary_var_1d(h1, 2.0, b), rel=1e-12
        )


def test_ula_empirical_stationary_covariance(pot):
    rng = np.random.default_rng(5)
    X0 = rng.multivariate_normal(pot.mean, pot.cov, 40_000)
    h = 0.1
    H = wf.run_sampler("langevin", pot, X0, h, 300, seed=3, record_every=300)
    S = wf.ula_stationary_cov(pot.Abar, h)
    emp_mean, emp_cov = H.mean[-1], H.cov[-1]
    se = np.sqrt(np.diag(S) / X0.shape[0])
    assert np.all(np.abs(emp_mean - pot.mean) < 3.5 * se)
    np.testing.assert_allclose(np.diag(emp_cov), np.diag(S), rtol=0.03)


def test_sgld_1d_stationary_variance_simulation():
    p1 = wf.shifted_quadratic_1d(100, 2.0, 0)
    h, b = 0.2, 2
    X0 = np.random.default_rng(0).standard_normal((40_000, 1))
    H = wf.run_sampler("sgld", p1, X0, h, 200, batch_size=b, seed=1, record_every=10)
    var = H.cov[10:, 0, 0].mean()  # time-averaged after burn-in (t >= 20)
    assert var == pytest.approx(wf.sgld_stationary_var_1d(h, 2.0, b), rel=0.02)


# ------------------------------------------------------------------------------------------
# SVRG direction
# ------------------------------------------------------------------------------------------


def test_svrg_direction_unbiased_and_bounded(pot):
    rng = np.random.default_rng(7)
    x = np.array([[0.8, -1.1]])
    xs = np.array([[0.2, -0.4]])
    Gs = pot.grad(xs)
    T, b = 20_000, 3
    X = np.repeat(x, T, 0)
    Xs = np.repeat(xs, T, 0)
    G = wf.svrg_direction(X, Xs, np.repeat(Gs, T, 0), pot, rng.integers(0, pot.N, (T, b)))
    se = G.std(0) / np.sqrt(T)
    assert np.all(np.abs(G.mean(0) - pot.grad(x)[0]) < 3.5 * se)
    # variance <= L^2 |x - xs|^2 / b
    total_var = np.trace(np.cov(G.T))
    assert total_var <= pot.L**2 * np.sum((x - xs) ** 2) / b
    # exact when all A_i are equal
    A = np.repeat(np.array([[[1.5, 0.2], [0.2, 0.7]]]), 30, 0)
    same = wf.FiniteSumQuadratic(A, rng.standard_normal((30, 2)))
    Xr = rng.standard_normal((50, 2))
    Xsr = rng.standard_normal((50, 2))
    G = wf.svrg_direction(Xr, Xsr, same.grad(Xsr), same, rng.integers(0, 30, (50, 4)))
    assert np.abs(G - same.grad(Xr)).max() < 1e-12


# ------------------------------------------------------------------------------------------
# runs: budget accounting, the claim, the fast path
# ------------------------------------------------------------------------------------------


def test_gradient_budget_accounting(pot, far_start):
    H = wf.run_sampler("langevin", pot, far_start, 0.05, 20, record_every=5)
    np.testing.assert_array_equal(H.grad_evals, 200 * H.step)
    H = wf.run_sampler("sgld", pot, far_start, 0.05, 20, batch_size=5, record_every=5)
    np.testing.assert_array_equal(H.grad_evals, 5 * H.step)
    H = wf.run_sampler(
        "svrg", pot, far_start, 0.05, 80, batch_size=5, epoch_length=40, record_every=40
    )
    np.testing.assert_array_equal(H.grad_evals, [0, 200 + 400, 400 + 800])
    assert wf.grad_evals_per_step("svrg", 200, 5, 40) == 15.0
    assert H.X.shape == far_start.shape and H.particles.shape[1:] == (300, 2)


def test_svrg_beats_sgld_at_equal_budget(pot, far_start):
    kw = dict(seed=0, record_every=40)
    sgld = wf.run_sampler("sgld", pot, far_start, 0.05, 1600, batch_size=5, **kw)
    svrg = wf.run_sampler("svrg", pot, far_start, 0.05, 800, batch_size=5, epoch_length=40, **kw)
    # stationary floors, averaged over the second half of each run (budget 4000-8000 / 6000-12000)
    kl_sgld = sgld.kl[len(sgld.kl) // 2 :].mean()
    kl_svrg = svrg.kl[len(svrg.kl) // 2 :].mean()
    assert kl_svrg < kl_sgld
    # SGLD's floor is its exact stationary bias plus the particle floor
    S = wf.sgld_stationary_cov(pot, 0.05, 5)
    bias = wf.kl_gaussian(pot.mean, S, pot.mean, pot.cov)
    assert bias > 2 * wf.kl_gaussian(
        pot.mean, wf.ula_stationary_cov(pot.Abar, 0.05), pot.mean, pot.cov
    )


@pytest.mark.parametrize("method", wf.METHODS)
def test_pair_run_sampler(pot, far_start, method):
    """reference.run_sampler == fast.run_sampler on shared draws, for every method."""
    steps = 100
    kw = {} if method == "langevin" else {"batch_size": 4}
    if method == "svrg":
        kw["epoch_length"] = 25
    b = kw.get("batch_size", 0)
    dr = wf.draw_noise(steps, 200, 2, pot.N, max(b, 1), seed=11)
    if method == "langevin":
        dr = wf.SamplerDraws(dr.indices[:, :, :0], dr.normals)
    X0 = far_start[:200]
    ref = wf.run_sampler(method, pot, X0, 0.05, steps, draws=dr, **kw)
    fast = wf.fast.run_sampler(method, pot, X0, 0.05, steps, draws=dr, device="cpu", **kw)
    assert np.abs(ref.X - fast.X).max() < 1e-10
    np.testing.assert_allclose(ref.kl, fast.kl, atol=1e-10)
    np.testing.assert_array_equal(ref.grad_evals, fast.grad_evals)


def test_torch_device_follows_input(pot, far_start):
    X0 = torch.as_tensor(far_start[:50])
    H = wf.fast.run_sampler("sgld", pot, X0, 0.05, 10, batch_size=2)
    assert H.extra["device"] == "cpu"


def test_determinism(pot, far_start):
    a = wf.run_sampler("svrg", pot, far_start, 0.05, 50, batch_size=3, epoch_length=10, seed=4)
    b = wf.run_sampler("svrg", pot, far_start, 0.05, 50, batch_size=3, epoch_length=10, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    c = wf.fast.run_sampler("sgld", pot, far_start, 0.05, 30, batch_size=3, seed=4, device="cpu")
    d = wf.fast.run_sampler("sgld", pot, far_start, 0.05, 30, batch_size=3, seed=4, device="cpu")
    np.testing.assert_array_equal(c.X, d.X)


def test_exponential_decay_rate_of_langevin(pot):
    # exact ULA moments (the law is Gaussian): slope of log KL vs t ~ -2 lambda_min
    h = 0.02
    means, covs = wf.sgld_moments(pot, pot.mean + [3.0, -2.0], 0.25 * np.eye(2), h, 600)
    kl = np.array(
        [wf.kl_gaussian(m, S, pot.mean, pot.cov) for m, S in zip(means, covs, strict=True)]
    )
    floor = wf.kl_gaussian(pot.mean, wf.ula_stationary_cov(pot.Abar, h), pot.mean, pot.cov)
    t = h * np.arange(len(kl))
    w = (kl > 10 * floor) & (t > 1.0)
    slope = wf.fit_log_slope(t[w], kl[w])
    assert slope == pytest.approx(-2 * pot.lam_min, rel=0.3)
    assert np.all(np.diff(kl) <= 1e-12)


# ------------------------------------------------------------------------------------------
# the 1-D Fokker-Planck flow
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grid():
    x = np.linspace(-7, 7, 400)
    return x, x[1] - x[0]


def test_fokker_planck_mass_stationary_and_monotone_kl(grid):
    x, dx = grid
    p1 = wf.shifted_quadratic_1d(100, 2.0, 0)
    mu0 = np.exp(-((x - 2.5) ** 2) / 0.3)
    t = np.linspace(0, 3, 61)
    out = wf.sgd_flow_density(p1, 0.0, 1, x, mu0, t, dt=0.01)
    np.testing.assert_allclose(out.sum(1) * dx, 1.0, atol=1e-12)
    pi = np.exp(-(x**2) / 2)
    kl = [wf.kl_grid(m, pi, dx) for m in out]
    assert np.all(np.diff(kl) <= 1e-12)
    late = wf.sgd_flow_density(p1, 0.0, 1, x, mu0, [20.0], dt=0.05)[0]
    assert np.abs(late - pi / (pi.sum() * dx)).sum() * dx < 1e-3


def test_sgd_flow_stationary_variance_1d(grid):
    x, dx = grid
    p1 = wf.shifted_quadratic_1d(100, 2.0, 0)
    for eta, b in [(0.1, 1), (0.3, 2)]:
        mu = wf.sgd_flow_density(p1, eta, b, x, np.exp(-(x**2)), [40.0], dt=0.1)[0]
        var = np.sum(mu * x**2) * dx
        assert var == pytest.approx(wf.sgd_flow_stationary_var_1d(eta, 2.0, b), abs=1e-3)


def test_particles_follow_the_pde(grid):
    x, dx = grid
    p1 = wf.quadratic_finite_sum(50, 1, 3, eig_range=(0.5, 1.5), spread=2.0)
    rng = np.random.default_rng(0)
    X0 = 2.0 + 0.4 * rng.standard_normal((100_000, 1))
    mu0 = stats.norm(2.0, 0.4).pdf(x)
    h = 0.01
    H = wf.run_sampler("langevin", p1, X0, h, 100, seed=2, record_every=100)
    pde = wf.sgd_flow_density(p1, 0.0, 1, x, mu0, [1.0], dt=h)[0]
    edges = np.append(x - dx / 2, x[-1] + dx / 2)
    hist, _ = np.histogram(H.X[:, 0], bins=edges, density=True)
    # smooth the histogram over 5 cells before comparing (sampling noise)
    k = np.ones(5) / 5
    assert np.abs(np.convolve(hist, k, "same") - pde).sum() * dx < 0.05


def test_sgd_flow_sde_matches_the_flow_not_sgld():
    # small-dt Euler-Maruyama of the SGD-flow SDE: stationary variance 1 + eta s^2 / (2b) = 1.4,
    # while SGLD with h = eta = 0.2 has (1 + 0.4) / 0.9 = 1.556
    p1 = wf.shifted_quadratic_1d(20, 2.0, 0)
    X0 = np.random.default_rng(0).standard_normal((5000, 1)) * np.sqrt(1.4)
    X = wf.sgd_flow_sde(p1, X0, 0.2, 1, 2.0, 0.02, seed=1)
    assert X.var() == pytest.approx(wf.sgd_flow_stationary_var_1d(0.2, 2.0, 1), rel=0.05)
    assert X.var() < 0.95 * wf.sgld_stationary_var_1d(0.2, 2.0, 1)


def test_fisher_grid_of_gaussians(grid):
    x, dx = grid
    mu = stats.norm(0.5, 1.0).pdf(x)
    pi = stats.norm(0.0, 1.0).pdf(x)
    assert wf.fisher_grid(mu, pi, dx) == pytest.approx(0.25, rel=1e-3)  # |m1 - m2|^2 / s^4
    assert wf.kl_grid(mu, pi, dx) == pytest.approx(wf.kl_gaussian(0.5, 1, 0, 1), rel=1e-4)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


def test_bad_input(pot, far_start):
    with pytest.raises(ValueError, match="method"):
        wf.run_sampler("sgd", pot, far_start, 0.05, 10)
    with pytest.raises(ValueError, match="step_size"):
        wf.run_sampler("langevin", pot, far_start, -0.1, 10)
    with pytest.raises(ValueError, match="step_size"):
        wf.run_sampler("langevin", pot, far_start, 1.0, 10)  # > 2/L
    with pytest.raises(ValueError, match="batch_size"):
        wf.run_sampler("sgld", pot, far_start, 0.05, 10, batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        wf.run_sampler("sgld", pot, far_start, 0.05, 10, batch_size=pot.N + 1)
    with pytest.raises(ValueError, match="batch_size is required"):
        wf.run_sampler("svrg", pot, far_start, 0.05, 10)
    with pytest.raises(ValueError, match="epoch_length"):
        wf.run_sampler("svrg", pot, far_start, 0.05, 10, batch_size=2, epoch_length=0)
    with pytest.raises(ValueError, match="X0"):
        wf.run_sampler("langevin", pot, far_start[:, :1], 0.05, 10)
    with pytest.raises(ValueError, match="X0"):
        wf.run_sampler("langevin", pot, far_start[0], 0.05, 10)
    with pytest.raises(TypeError, match="steps"):
        wf.run_sampler("langevin", pot, far_start, 0.05, 10.5)
    with pytest.raises(TypeError, match="potential"):
        wf.run_sampler("langevin", object(), far_start, 0.05, 10)
    bad_A = np.repeat(np.array([[[1.0, 0.0], [0.0, -0.5]]]), 3, 0)
    with pytest.raises(ValueError, match="positive definite"):
        wf.FiniteSumQuadratic(bad_A, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="eig_range"):
        wf.quadratic_finite_sum(10, 2, 0, eig_range=(0.0, 1.0))
    with pytest.raises(ValueError, match="N"):
        wf.quadratic_finite_sum(1, 2, 0)
    with pytest.raises(ValueError, match="x_grid"):
        wf.fokker_planck_1d(lambda x: x, 1.0, [0.0, 1.0, 3.0], [1, 1, 1], [0.0, 1.0])
    with pytest.raises(ValueError, match="D must be > 0"):
        wf.fokker_planck_1d(lambda x: x, 0.0, [0.0, 1.0, 2.0], [1, 1, 1], [0.0, 1.0])
    with pytest.raises(ValueError, match="S1"):
        wf.kl_gaussian([0, 0], np.eye(3), [0, 0], np.eye(2))


def test_nonfinite_particles_are_reported(pot, far_start):
    # a corrupted noise draw at step 3 must be reported with its step, not returned as NaN
    dr = wf.draw_noise(5, 10, 2, pot.N, 1, seed=0)
    dr.normals[2, 0, 0] = np.inf
    with pytest.raises(ValueError, match="non-finite by step 3"):
        wf.run_sampler(
            "langevin",
            pot,
            far_start[:10],
            0.05,
            5,
            record_every=1,
            draws=wf.SamplerDraws(dr.indices[:, :, :0], dr.normals),
        )


@pytest.mark.cuda
def test_cuda_matches_reference(pot, far_start):
    dr = wf.draw_noise(50, 200, 2, pot.N, 4, seed=1)
    ref = wf.run_sampler("svrg", pot, far_start[:200], 0.05, 50, 4, 10, draws=dr)
    fast = wf.fast.run_sampler(
        "svrg", pot, far_start[:200], 0.05, 50, 4, 10, draws=dr, device="cuda"
    )
    assert np.abs(ref.X - fast.X).max() < 1e-10


def test_gaussian_mixture_target_is_a_finite_sum_of_its_components():
    g = wf.gaussian_mixture_1d(4.0, 0.7, N=40, spread=2.0, seed=1)
    assert abs(g.z.mean()) < 1e-14 and g.z.std() == pytest.approx(2.0, rel=1e-12)
    x = np.linspace(-5, 5, 11)
    # V' = -(log pi)' (central differences) and the density integrates to one
    e = 1e-6
    fd = -(np.log(g.density(x + e)) - np.log(g.density(x - e))) / (2 * e)
    np.testing.assert_allclose(g.grad(x), fd, atol=1e-6)
    assert integrate.quad(lambda t: float(g.density(np.array(t))), -12, 12)[0] == pytest.approx(1)
    assert g.noise_var(4) == pytest.approx(1.0)
    # non-log-concave between the modes: V'' < 0 at the origin
    assert (g.grad(np.array(e)) - g.grad(np.array(-e))) / (2 * e) < 0


def test_fisher_rate_driver_is_consistent():
    fr = wf.fisher_rate_1d(wf.FisherRateSettings(horizons=(2.0, 4.0), n_grid=321, dt=0.02))
    np.testing.assert_allclose(fr.eta, 1 / np.sqrt(fr.horizons))
    assert np.all(fr.min_fisher <= fr.mean_fisher)
    assert np.all(fr.final_kl > 0)
    t, info = fr.curves[4.0]
    assert t[0] == 0 and t[-1] == 4.0 and np.all(info >= 0)
    x = np.linspace(-8, 8, 321)
    pi = fr.target.density(x)
    assert wf.fisher_grid(pi, pi, x[1] - x[0]) == 0.0
    with pytest.raises(ValueError, match="horizons"):
        wf.FisherRateSettings(horizons=(4.0, 2.0))
    with pytest.raises(TypeError, match="target"):
        wf.fisher_rate_1d(target="mixture")
    with pytest.raises(TypeError, match="settings"):
        wf.fisher_rate_1d({"horizons": (4.0, 8.0)})
    with pytest.raises(ValueError, match="batch_size"):
        wf.fisher_rate_1d(wf.FisherRateSettings(batch_size=10_000))


def test_fisher_rate_step_schedule():
    """eta_power sets the schedule eta0 / T^eta_power; a fixed step (0) leaves the time-averaged
    Fisher information on its plateau, the paper's schedule (1/2) makes it fall."""
    grid = dict(horizons=(4.0, 16.0), n_grid=321, dt=0.02)
    fixed = wf.fisher_rate_1d(wf.FisherRateSettings(eta_power=0.0, **grid))
    paper = wf.fisher_rate_1d(wf.FisherRateSettings(**grid))
    np.testing.assert_allclose(fixed.eta, [1.0, 1.0])
    np.testing.assert_allclose(paper.eta, [0.5, 0.25])
    assert fixed.exponent > paper.exponent
    with pytest.raises(ValueError, match="eta_power"):
        wf.FisherRateSettings(horizons=(4.0, 8.0), eta_power=-0.5)


def test_step_functions_validate_and_match_the_run(pot):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 2))
    xi = rng.standard_normal((7, 2))
    idx = rng.integers(0, pot.N, (7, 3))
    with pytest.raises(TypeError, match="potential"):
        wf.ula_step(X, "pot", 0.1, xi)
    with pytest.raises(ValueError, match="h"):
        wf.sgld_step(X, pot, -0.1, idx, xi)
    with pytest.raises(ValueError, match="idx"):
        wf.sgld_step(X, pot, 0.1, idx + pot.N, xi)
    with pytest.raises(ValueError, match="xi"):
        wf.svrg_step(X, X, pot.grad(X), pot, 0.1, idx, xi[:3])
    with pytest.raises(ValueError, match="Gs"):
        wf.svrg_direction(X, X, pot.grad(X)[:2], pot, idx)
    # SVRG at its own snapshot is the full gradient: the step is ULA's
    np.testing.assert_allclose(
        wf.svrg_step(X, X, pot.grad(X), pot, 0.1, idx, xi), wf.ula_step(X, pot, 0.1, xi)
    )


def test_import_is_lazy():
    import subprocess
    import sys

    code = "import sys, lab.wflows; print('torch' in sys.modules, 'lab.wflows.reference' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_flow_1d_data_is_a_memoised_driver():
    """The 1-D widget's data come from experiments (memo), not from figures."""
    st = wf.Flow1DSettings(0.25, 1, particles=200, t_end=0.5, frames=3)
    a = wf.flow_1d_data(st)
    assert wf.flow_1d_data(wf.Flow1DSettings(0.25, 1, particles=200, t_end=0.5, frames=3)) is a
    assert len(a["t"]) == 3 and a["gd"].shape == (3, a["x"].size)
    wf.flow_1d_data.clear()
    assert wf.flow_1d_data(st) is not a
    with pytest.raises(ValueError, match="eta"):
        wf.Flow1DSettings(-0.1, 1)
    with pytest.raises(TypeError, match="settings"):
        wf.flow_1d_data(0.25)
    fig = wf.figures.flow_1d_frame(a, 0.5)
    assert len(fig.data) == 5
    with pytest.raises(TypeError, match="data"):
        wf.figures.flow_1d_frame({"x": a["x"]}, 0.5)


def test_variance_sample_and_frame():
    """The SGLD variance widget: a memoised driver, and a figure of its result."""
    sample = wf.sgld_variance_sample(wf.VarianceSettings(0.2, 2.0, 2, particles=500))
    assert sample.X.shape == (500,)
    assert sample.var_sgld == pytest.approx(wf.sgld_stationary_var_1d(0.2, 2.0, 2))
    assert sample.var_flow == pytest.approx(wf.sgd_flow_stationary_var_1d(0.2, 2.0, 2))
    assert len(wf.figures.sgld_variance_frame(sample).data) == 4
    with pytest.raises(ValueError, match="batch_size"):
        wf.VarianceSettings(0.1, 3.0, 0)
    with pytest.raises(TypeError, match="sample"):
        wf.figures.sgld_variance_frame(None)


def test_equal_budget_window_runs_over_seeds(pot, far_start):
    """The window of each seed is the same as that of a longer run of the same seed."""
    st = wf.WindowSettings(0.05, 5, 40, window=(600.0, 1000.0), steps=(5, 200, 67))
    X0 = far_start[:100]
    s = wf.equal_budget_window(pot, X0, st, (1, 2))
    full = wf.run_sampler("svrg", pot, X0, 0.05, 200, 5, 40, seed=2, record_every=20)
    w = (full.grad_evals >= 600) & (full.grad_evals <= 1000)
    assert s.values("svrg")[1] == pytest.approx(full.kl[w].mean(), rel=1e-12)
    assert s.values("langevin").shape == (2,)
    with pytest.raises(ValueError, match="window"):
        wf.WindowSettings(window=(5.0, 1.0))
    with pytest.raises(TypeError, match="settings"):
        wf.equal_budget_window(pot, X0, None, (1, 2))


def test_sliced_separation_reads_two_clouds_against_target_noise(pot):
    """Two exact target samples are not told apart; a shifted cloud is, by many deviations."""
    rng = np.random.default_rng(3)
    X = rng.multivariate_normal(pot.mean, pot.cov, 400)
    Y = rng.multivariate_normal(pot.mean, pot.cov, 400)
    same = wf.sliced_separation(X, Y, pot, 400)
    assert abs(same["separation"]) < 3 and same["pairs"].shape == (8,)
    far = wf.sliced_separation(X + 1.0, Y, pot, 400)
    assert far["separation"] > 10
    with pytest.raises(ValueError, match="n"):
        wf.sliced_separation(X, Y, pot, 1000)
