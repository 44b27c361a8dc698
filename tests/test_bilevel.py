"""Tests of lab.bilevel: set smoothness, weak convexity and the zeroth-order method IZOM.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/bilevel-set-smoothness.md).
CPU float64, a few seconds; the CUDA test is skipped without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lab import bilevel as bl
from lab.core.runtime import small_problem_threads

X0 = np.array([1.5, -1.2])


@pytest.fixture(scope="module")
def toy_p():
    return bl.toy_pessimistic()


@pytest.fixture(scope="module")
def toy_o():
    return bl.toy_optimistic()


@pytest.fixture(scope="module")
def cleaning():
    return bl.hyper_cleaning(20, 40, 100, 0.3, 0)


# ------------------------------------------------------------------------------------------
# closed forms
# ------------------------------------------------------------------------------------------
def test_psi_star_matches_brute_force_and_has_the_kink():
    u = np.array([-2.7, -1.0, -0.3, -1e-3, 0.0, 2e-3, 0.25, 0.9, 2.2])
    t = np.linspace(-3.0, 3.0, 1_000_001)
    brute = np.max(u[:, None] * t - (t**2 - 1.0) ** 2 / 4.0, axis=1)
    value, arg = bl.psi_star(u)
    np.testing.assert_allclose(value, brute, atol=1e-6)
    np.testing.assert_allclose(arg**3 - arg, u, atol=1e-12)
    assert bl.psi_star(0.0)[0] == 0.0
    h = 1e-6
    right = (bl.psi_star(h)[0] - bl.psi_star(0.0)[0]) / h
    left = (bl.psi_star(0.0)[0] - bl.psi_star(-h)[0]) / h
    assert right == pytest.approx(1.0, abs=1e-4) and left == pytest.approx(-1.0, abs=1e-4)
    rng = np.random.default_rng(0)
    p, q = rng.uniform(-3, 3, (2, 10_000))
    mid = bl.psi_star(0.5 * (p + q))[0] - 0.5 * (bl.psi_star(p)[0] + bl.psi_star(q)[0])
    assert mid.max() <= 1e-12  # convex


def test_pair_psi_star():
    """The pair: reference.psi_star (numpy) == fast.psi_star (torch), value and maximiser."""
    u = np.linspace(-4, 4, 1001)
    val, t = bl.fast.psi_star(torch.tensor(u, dtype=torch.float64))
    ref_val, ref_t = bl.reference.psi_star(u)
    np.testing.assert_allclose(val.numpy(), ref_val, atol=1e-13)
    np.testing.assert_allclose(t.numpy(), ref_t, atol=1e-12)


def test_closed_form_equals_projected_ascent(toy_p, toy_o):
    rng = np.random.default_rng(0)
    xs = rng.uniform(-2.0, 2.0, size=(12, 2))
    for prob in (toy_p, toy_o):
        oracle = bl.ProjectedAscentOracle(prob, n_starts=20, n_steps=400, lr=0.1)
        err = max(abs(oracle(x) - prob(x)) for x in xs)
        assert err < 1e-6, (prob.name, err)


def test_toy_stationary_points(toy_p, toy_o):
    assert toy_p(np.zeros(2)) == pytest.approx(0.5 * (0.5**2 + 0.3**2))
    # x* = 0 minimises the convex Toy P: nothing lower on a grid
    g = np.linspace(-1, 1, 81)
    G = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    assert toy_p.phi_batch(G).min() >= toy_p(np.zeros(2)) - 1e-15
    # Toy O's minimiser is a smooth point: gradient ~ 0 there
    assert bl.clarke_ball_certificate(toy_o, toy_o.x_star, 1e-4, n_samples=0) < 1e-5
    assert np.all(np.abs(toy_o.x_star) > 0.5)


# ------------------------------------------------------------------------------------------
# set smoothness and weak convexity
# ------------------------------------------------------------------------------------------
def test_set_smoothness_constants():
    maps = bl.set_maps()
    L_aff = bl.estimate_set_smoothness(*maps["affine"], n=10_000)
    L_sin = bl.estimate_set_smoothness(*maps["sine"], n=10_000)
    L_jump = bl.estimate_set_smoothness(*maps["jumping"], n=10_000)
    assert L_aff[0] < 1e-10 and L_aff[1] == pytest.approx(0.25, rel=1e-9)
    assert 0.99 <= L_sin[0] <= 1.0 + 1e-9 and 0.99 <= L_sin[1] <= 1.0 + 1e-9
    assert L_jump[0] > 100


def test_weak_convexity_modulus(toy_p):
    assert bl.weak_convexity_modulus(toy_p, 2, box=2.0) <= 0.0
    rho = bl.weak_convexity_modulus(bl.toy_pessimistic(kappa=2.0), 2, box=2.0)
    assert 0.75 <= rho <= 1.0  # at most kappa - 1 = 1 (Theorem: weakly convex)
    # Toy O is not weakly convex: concave kinks make the midpoint gap blow up on short segments
    assert bl.weak_convexity_modulus(bl.toy_optimistic(), 2, box=0.05) > 10


def test_moreau_gradient_prox_matches_nelder_mead(toy_p):
    rng = np.random.default_rng(2)
    for x in rng.uniform(-2, 2, (4, 2)):
        exact = bl.moreau_gradient(toy_p, x, 0.5)
        generic = bl.moreau_gradient(lambda z: toy_p(z), x, 0.5)
        np.testing.assert_allclose(exact, generic, atol=1e-6)
    np.testing.assert_allclose(bl.moreau_gradient(toy_p, np.zeros(2), 0.5), 0.0, atol=1e-14)


# ------------------------------------------------------------------------------------------
# zeroth-order estimator and IZOM
# ------------------------------------------------------------------------------------------
def test_zo_estimator_unbiased_for_ball_smoothing():
    # 1-D phi = |x| + x^2/2: grad of the delta-ball smoothing at x in (0, delta) is x/delta + x
    phi = lambda z: float(np.abs(z).sum() + 0.5 * (z**2).sum())  # noqa: E731
    rng = np.random.default_rng(0)
    x, delta = np.array([0.03]), 0.1
    g = np.array([bl.zo_two_point(phi, x, delta, rng)[0] for _ in range(4000)])
    se = g.std() / np.sqrt(g.size)
    assert abs(g.mean() - (x[0] / delta + x[0])) < 3 * se + 1e-12
    # on a quadratic the estimate is unbiased for the gradient; variance grows ~ m
    variances = []
    for m in (2, 8, 32):
        Q = np.diag(np.linspace(1, 2, m))
        xq = np.ones(m)
        quad = lambda z, Q=Q: float(0.5 * z @ Q @ z)  # noqa: E731
        G = np.array([bl.zo_two_point(quad, xq, 1e-3, rng) for _ in range(3000)])
        se = G.std(0) / np.sqrt(len(G))
        assert np.all(np.abs(G.mean(0) - Q @ xq) < 4 * se + 1e-9)
        variances.append((G**2).sum(1).mean() / ((Q @ xq) ** 2).sum())  # E||g||^2 = m ||grad||^2
    slope = np.polyfit(np.log([2, 8, 32]), np.log(variances), 1)[0]
    assert 0.8 <= slope <= 1.2


def test_izom_reaches_the_kink(toy_p):
    dists = {}
    for T in (250, 4000):
        h = bl.izom(
            toy_p, X0, T, 0.5 / np.sqrt(2 * T), 1e-3, 0, certificate=bl.Certificate(n_measure=5)
        )
        dists[T] = np.linalg.norm(h.x[-1])
        assert h.x.shape == (T + 1, 2) and h.evaluations == 2 * T
        assert 0 <= h.output_index < T
        np.testing.assert_array_equal(h.x_out, h.x[h.output_index])
        assert h.stationarity[0] > 1.0 and h.stationarity[-1] < 0.12
    assert dists[250] < 0.1 and dists[4000] < 0.03


def test_izom_random_output_rate(toy_p):
    med = []
    Ts = (250, 1000, 4000)
    for T in Ts:
        vals = [
            bl.izom(
                toy_p, X0, T, 0.5 / np.sqrt(2 * T), 1e-3, s, certificate=bl.Certificate(n_measure=1)
            ).stationarity_out
            for s in range(8)
        ]
        med.append(np.median(np.square(vals)))
    slope = np.polyfit(np.log(Ts), np.log(med), 1)[0]
    assert slope <= -0.5, (med, slope)


def test_izom_optimistic_clarke_certificate(toy_o):
    T = 2000
    h = bl.izom(
        toy_o, X0, T, 0.5 / np.sqrt(2 * T), T**-0.25, 0, certificate=bl.Certificate(n_measure=5)
    )
    assert h.measure == "clarke"
    assert h.stationarity[-1] < 0.05 < h.stationarity[0]
    assert np.linalg.norm(h.x[-1] - toy_o.x_star) < 0.05


def test_baselines_do_not_certify(toy_p):
    fd = bl.fd_gradient_descent(toy_p, X0, 1e-6, 0.2, 300)
    # chatters across the kink: Moreau gradient stays at the level of the step size
    chatter = np.median([np.linalg.norm(bl.moreau_gradient(toy_p, x, 0.5)) for x in fd[-20:]])
    assert chatter > 0.05
    gf = bl.gradient_free_goldstein(toy_p, X0, delta=0.3, eta=0.01, T=3000)
    assert np.linalg.norm(gf[-200:].mean(0)) > 0.05  # minimiser of the smoothing, not x* = 0


def test_izom_determinism_and_replay(toy_p):
    a = bl.izom(toy_p, X0, 200, 0.02, 1e-3, 5, measure="none")
    b = bl.izom(toy_p, X0, 200, 0.02, 1e-3, 5, measure="none")
    np.testing.assert_array_equal(a.x, b.x)
    rng = np.random.default_rng(3)
    U = bl.sphere_directions(rng, 200, 2)
    c = bl.izom(lambda z: toy_p(z), X0, 200, 0.02, 1e-3, 5, measure="none", directions=U)
    d = bl.izom(toy_p, X0, 200, 0.02, 1e-3, 5, measure="none", directions=U)
    np.testing.assert_allclose(c.x, d.x, atol=1e-12)


# ------------------------------------------------------------------------------------------
# fast path vs reference
# ------------------------------------------------------------------------------------------
def test_pair_izom(toy_p, cleaning):
    """The declared pair (PAIRS): reference.izom == fast.izom_many on the same directions."""
    rng = np.random.default_rng(4)
    with small_problem_threads():
        # Toy P far from the kink (short run: at the kink rounding differences are amplified)
        U = bl.sphere_directions(rng, 40, 2)
        ref = bl.izom(toy_p, X0, 40, 0.02, 1e-3, 0, measure="none", directions=U)
        fast = bl.izom_many(toy_p, X0, 40, 0.02, 1e-3, directions=U[:, None, None], device="cpu")
        np.testing.assert_allclose(fast.x[:, 0].numpy(), ref.x, atol=1e-10)
        # smooth hyper-cleaning: the whole run
        U = bl.sphere_directions(rng, 300, cleaning.m)
        x0 = np.zeros(cleaning.m)
        ref = bl.izom(cleaning, x0, 300, 0.05, 1e-3, 0, measure="none", directions=U)
        fast = bl.izom_many(
            cleaning, x0, 300, 0.05, 1e-3, directions=U[:, None, None], device="cpu"
        )
        np.testing.assert_allclose(fast.x[:, 0].numpy(), ref.x, atol=1e-10)
        batch = bl.IZOMBatch(n_dirs=4, runs=6)
        many = bl.izom_many(toy_p, X0, 500, 0.02, 1e-3, 1, batch=batch, device="cpu")
        assert many.x.shape == (501, 6, 2) and np.all(many.output_index < 500)
        assert float(many.x_last.norm(dim=1).max()) < 0.2


def test_kkt_oracles_agree_with_cvxpy(cleaning):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, cleaning.m))
    oracle = bl.kkt_oracle(cleaning.A, cleaning.G, cleaning.ytr, cleaning.yval, "cpu")
    np.testing.assert_allclose(oracle(torch.tensor(X)).numpy(), cleaning.phi_batch(X), atol=1e-10)
    np.testing.assert_allclose(
        cleaning.phi_batch(X), [cleaning(x) for x in X], rtol=1e-10, atol=1e-12
    )
    for x in X[:2]:
        w_ref = bl.cvxpy_inner_solve(cleaning, x)
        np.testing.assert_allclose(cleaning.inner_solution(x), w_ref, atol=1e-6)
    # the follower's problem is degenerate: A^T A has p - n_train zero eigenvalues
    eig = np.linalg.eigvalsh(cleaning.A.T @ cleaning.A)
    assert np.sum(eig < 1e-9) == 40 - 20


def test_hyper_cleaning_application(cleaning):
    h = bl.izom(cleaning, np.zeros(cleaning.m), 3000, 0.05, 1e-3, 0, measure="none")
    x = h.x[-1]
    before, after = cleaning(np.zeros(cleaning.m)), cleaning(x)
    assert after < before / 100
    bad = cleaning.corrupted
    assert np.corrcoef(x[bad], -cleaning.errors[bad])[0, 1] > 0.95
    # the min-norm selection with the *true* corrections is worse than the optimistic one
    mn = bl.MinNormSelection(cleaning)
    assert mn(-cleaning.errors) > 10 * cleaning(-cleaning.errors)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_input(toy_p):
    with pytest.raises(ValueError, match="delta"):
        bl.izom(toy_p, X0, 10, 0.1, 0.0)
    with pytest.raises(ValueError, match="eta"):
        bl.izom(toy_p, X0, 10, -0.1, 1e-3)
    with pytest.raises(ValueError, match="T"):
        bl.izom(toy_p, X0, 0, 0.1, 1e-3)
    with pytest.raises(TypeError, match="oracle"):
        bl.izom(3.0, X0, 10, 0.1, 1e-3)
    with pytest.raises(ValueError, match="not strongly convex"):
        bl.moreau_gradient(bl.toy_pessimistic(kappa=3.0), X0, gamma=0.6)
    with pytest.raises(ValueError, match="non-finite"):
        bl.izom(lambda z: float("nan"), X0, 5, 0.1, 1e-3)
    with pytest.raises(ValueError, match="mode"):
        bl.BilevelProblem(*[None] * 4, 1, 1, "neutral", None, None, np.zeros(1))
    with pytest.raises(ValueError, match="kappa"):
        bl.toy_optimistic(kappa=1.5)
    with pytest.raises(ValueError, match="corruption"):
        bl.hyper_cleaning(corruption=1.5)
    with pytest.raises(ValueError, match="p must"):
        bl.hyper_cleaning(n_train=20, p=10)
    # pessimistic problem with F unbounded above on S(x): the inner ascent diverges
    unbounded = bl.toy_pessimistic(m=1)
    unbounded.grad_y_F = lambda x, y: y  # F = ||y||^2 / 2
    with pytest.raises(ValueError, match="bounded above"):
        bl.ProjectedAscentOracle(unbounded, n_steps=500, lr=0.5)(np.zeros(1))


def test_curved_problem_closed_form_and_theorem_1():
    p = bl.toy_curved(2.0)
    t = np.linspace(-np.pi, np.pi, 20001)
    for x in (-1.7, -0.3, 0.0, 0.8, 1.9):
        y = np.stack([t, np.full_like(t, np.sin(x))], axis=1)
        xs = np.array([x])
        assert np.allclose(p.f(xs, y), 0.0)  # every (t, sin x) solves the lower level
        assert abs(p(xs) - p.F(xs, y).max()) < 1e-7  # phi_p = max over S(x) of F
    from lab.bilevel import experiments

    r = experiments.curved_weak_convexity(bl.CurvedSettings(2.0, 2.0, n=5000, seed=1))
    assert r.modulus <= r.modulus_exact + 1e-9 <= r.rho_bound
    # by construction (a claim before 2026-12-06): the modulus is s, the affine twin is convex
    assert abs(r.modulus / 2.0 - 1) < 0.05
    assert abs(r.L_g - 2.0) < 1e-6 and abs(r.M_g - np.hypot(2.0, 2.0)) < 1e-12
    assert r.modulus_affine < 1e-6 < r.modulus


def test_error_bound_and_constraint_counterexample():
    from lab.bilevel import experiments

    ll = bl.rotating_line()
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, 50)
    y = ll["select_branch"](x[:, None], rng.uniform(-1, 1, 50))
    assert np.allclose(ll["f"](x, y), 0.0) and np.allclose(ll["dist"](x, y), 0.0)
    eb = experiments.error_bound_set_smoothness(bl.SmoothnessSettings(n=2000, seed=0))
    assert abs(eb.tau - 1.0) < 1e-9 and eb.hessian_rank == 1
    assert 0.9 < eb.L_comb <= 1.0 + 1e-9 and 0.9 < eb.L_branch <= 1.0 + 1e-9
    cons = experiments.constraint_counterexample(bl.ConstraintSettings((1e-1, 1e-2), n=500))
    assert abs(cons.exponent + 1.0) < 1e-6  # exact 1 / width scaling of a concave kink
    assert cons.modulus_unconstrained < 1e-3
    # the paper's Example 3: phi_p = -1 - clip(x, 0, 1), slopes 0 and -1 at the kink x = 0
    ex3 = bl.constrained_counterexample()
    assert [ex3(np.array([v])) for v in (-1.0, 0.5, 3.0)] == [-1.0, -1.5, -2.0]
    y = np.array([[np.clip(0.5, 0, 1), 1.0]])  # the projection of (x, 2) on the box
    assert ex3.F(np.array([0.5]), y)[0] == ex3(np.array([0.5]))


def test_clarke_distance_at_kink_and_smooth_point(toy_o):
    from lab.bilevel import experiments

    k = experiments.kink_certificate(bl.KinkSettings(delta=0.15, T=300, n_samples=200, seed=0))
    assert k.exact == 0.0 and k.slopes[0] > 0 > k.slopes[1] and k.sampled > 0.05
    # away from the kinks and with a tiny ball the distance is the gradient norm at x
    x = np.array([1.2, -0.9])
    h = 1e-6
    g = [(toy_o(x + h * e) - toy_o(x - h * e)) / (2 * h) for e in np.eye(2)]
    d = experiments.clarke_distance_toy(toy_o, x, 1e-9, n_samples=10)
    assert abs(d - np.linalg.norm(g)) < 1e-5


def test_layout_small_files_and_lazy_import():
    import subprocess
    import sys
    from pathlib import Path

    for f in Path(bl.__file__).parent.glob("*.py"):
        assert len(f.read_text().splitlines()) <= 650, f
    code = "import sys, lab.bilevel; print('torch' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout


def test_bad_input_new_functions():
    from lab.bilevel import experiments

    with pytest.raises(TypeError, match="rng"):
        bl.sphere_directions(None, 3, 2)
    with pytest.raises(ValueError, match="m"):
        bl.sphere_directions(np.random.default_rng(0), 3, 0)
    with pytest.raises(ValueError, match="s"):
        bl.toy_curved(-1.0)
    with pytest.raises(TypeError, match="constrained"):
        bl.constrained_counterexample("yes")
    with pytest.raises(TypeError, match="Toy"):
        experiments.clarke_distance_toy(bl.toy_curved(), np.zeros(1), 0.1)
    with pytest.raises(ValueError, match="widths"):
        bl.ConstraintSettings(widths=(0.1, -0.1))
    with pytest.raises(TypeError, match="settings"):
        experiments.kink_certificate(0.15)
    with pytest.raises(ValueError, match="eta_scale"):
        bl.ToyRunSettings(eta_scale=0.0)
    with pytest.raises(TypeError, match="certificate"):
        bl.izom(bl.toy_pessimistic(), X0, 5, 0.1, 1e-3, certificate="moreau")
    with pytest.raises(TypeError, match="batch"):
        bl.izom_many(bl.toy_pessimistic(), X0, 5, 0.1, 1e-3, batch=4)


def test_hyper_cleaning_checks_its_fields(cleaning):
    """HyperCleaning computes in __post_init__: junk fields raise ValueError/TypeError naming the
    field, not AttributeError."""
    fields = [cleaning.A, cleaning.ytr, cleaning.G, cleaning.yval, cleaning.y_clean,
              cleaning.errors, cleaning.corrupted, cleaning.w_true]  # fmt: skip
    again = bl.HyperCleaning(*fields)
    np.testing.assert_allclose(again.w0, cleaning.w0)
    with pytest.raises(ValueError, match="A"):
        bl.HyperCleaning(None, *fields[1:])
    with pytest.raises(ValueError, match="ytr"):
        bl.HyperCleaning(fields[0], fields[1][:-1], *fields[2:])
    with pytest.raises(ValueError, match="G"):
        bl.HyperCleaning(fields[0], fields[1], fields[2][:, :-1], *fields[3:])
    with pytest.raises(TypeError, match="A"):
        bl.HyperCleaning("junk", *fields[1:])
    with pytest.raises(ValueError, match="mode"):
        bl.HyperCleaning(*fields, mode="pessimistic")


@pytest.mark.cuda
def test_izom_many_cuda(cleaning):
    rng = np.random.default_rng(0)
    U = bl.sphere_directions(rng, 200, cleaning.m)
    x0 = np.zeros(cleaning.m)
    ref = bl.izom(cleaning, x0, 200, 0.05, 1e-3, 0, measure="none", directions=U)
    fast = bl.izom_many(cleaning, x0, 200, 0.05, 1e-3, directions=U[:, None, None], device="cuda")
    np.testing.assert_allclose(fast.x[:, 0].cpu().numpy(), ref.x, atol=1e-9)


def test_registry_and_evidence():
    """The registry imports and cites the paper's text; evidence helpers reject junk."""
    from lab.bilevel import evidence
    from lab.bilevel.claims import CLAIMS

    assert {s.source for s in CLAIMS.specs.values()} >= {"Thm 1", "Thm 2", "Thm 4 (ii)"}
    assert all(s.rival or s.no_rival for s in CLAIMS.specs.values())
    with pytest.raises(TypeError, match="rate"):
        evidence.izom_rate_evidence(None)
    with pytest.raises(TypeError, match="clean"):
        evidence.optimistic_selection_matters_evidence(3.0, None)


def test_worked_example():
    """The lesson page's worked example (book/bilevel/index.md), number by number."""
    toy = bl.toy_pessimistic(m=1, a=[0.3], c=0.0)
    h = 1e-7
    left = (toy(np.zeros(1)) - toy(np.array([-h]))) / h
    right = (toy(np.array([h])) - toy(np.zeros(1))) / h
    assert abs(left + 1.3) < 1e-5 and abs(right - 0.7) < 1e-5  # Clarke set [-1.3, 0.7]
    t = bl.psi_star(np.array([0.1]))[1][0]
    assert abs(t**3 - t - 0.1) < 1e-12 and abs(t - 1.047) < 1e-3
    grad = (toy(np.array([0.1 + h])) - toy(np.array([0.1 - h]))) / (2 * h)
    assert abs(grad - (t - 0.2)) < 1e-6 and abs(grad - 0.847) < 1e-3
    assert abs(bl.moreau_gradient(toy, np.array([0.1]), 0.5)[0] - 0.2) < 1e-12  # prox is 0
    g = bl.zo_two_point(toy, np.zeros(1), 1e-6, u=np.array([1.0]))
    assert abs(g[0] + 0.3) < 1e-5  # the average of the one-sided slopes
