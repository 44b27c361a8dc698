"""Tests of lab.gmm_attention: attention heads cluster a Gaussian mixture.

Mirrors the "Correctness checks" of the chapter spec
(shared/papers/transformers-gmm-clustering.md). CPU, float64, a few seconds in all; the CUDA
test is skipped without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lab import gmm_attention as ga
from lab.core.runtime import small_problem_threads


@pytest.fixture(scope="module")
def mu():
    return ga.symmetric_means(10, 3.0, seed=0)


@pytest.fixture(scope="module")
def trained(mu):
    return ga.train_heads(mu, ga.TrainSettings(), 0, lam=1.0)


def _numeric_grad(Theta, X, lam, score, h=1e-6):
    G = np.zeros_like(Theta)
    for idx in np.ndindex(*Theta.shape):
        E = np.zeros_like(Theta)
        E[idx] = h
        G[idx] = (ga.risk(Theta + E, X, lam, score) - ga.risk(Theta - E, X, lam, score)) / (2 * h)
    return G


# ------------------------------------------------------------------------------------------
# the layer and its gradient
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", ga.SCORES)
def test_risk_grad_matches_finite_differences(score):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) * 2
    Theta = rng.normal(size=(3, 4))
    G = ga.risk_grad(Theta, X, 0.7, score)
    N = _numeric_grad(Theta, X, 0.7, score)
    assert np.linalg.norm(G - N) / np.linalg.norm(N) < 1e-6


@pytest.mark.parametrize("score", ga.SCORES)
def test_risk_grad_matches_autograd(score):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(64, 5))
    Theta = rng.normal(size=(2, 5))
    lam = 1.3
    Xt = torch.tensor(X)
    T = torch.tensor(Theta, requires_grad=True)
    logits = Xt @ T.T
    if score == "distance":
        logits = logits - 0.5 * (T**2).sum(1)
    A = torch.softmax(lam * logits, -1) @ T
    loss = ((Xt - A) ** 2).sum(1).mean()
    loss.backward()
    assert loss.item() == pytest.approx(ga.risk(Theta, X, lam, score), rel=1e-14)
    np.testing.assert_allclose(ga.risk_grad(Theta, X, lam, score), T.grad.numpy(), atol=1e-10)


def test_head_weights_and_stability():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20, 3)) * 100
    Theta = rng.normal(size=(2, 3)) * 100
    for score in ga.SCORES:
        A, W = ga.head_attention(X, Theta, 1e3, score)
        assert np.all(np.isfinite(A)) and np.all(np.isfinite(W))
        np.testing.assert_allclose(W.sum(1), 1.0, atol=1e-12)


def test_head_swap_symmetry_and_symmetric_saddle(mu):
    rng = np.random.default_rng(3)
    X, _ = ga.sample_gmm(500, mu, 1.0, 4)
    Theta = rng.normal(size=(2, 10))
    for score in ga.SCORES:
        assert abs(ga.risk(Theta, X, 1.0, score) - ga.risk(Theta[::-1], X, 1.0, score)) < 1e-12
    # theta_1 = theta_2 stays symmetric under exact GD (a saddle): the heads never separate
    v = rng.normal(size=10) * 0.1
    T = np.stack([v, v])
    for _ in range(50):
        T = T - 0.1 * ga.risk_grad(T, X, 1.0, "dot")
    assert np.abs(T[0] - T[1]).max() < 1e-12


# ------------------------------------------------------------------------------------------
# population risk (quadrature) vs Monte Carlo, landscape
# ------------------------------------------------------------------------------------------


def test_quadrature_matches_monte_carlo(mu):
    u = mu[0] / np.linalg.norm(mu[0])
    Theta = np.stack([3.01 * u, -3.01 * u])
    quad = float(ga.population_risk_symmetric(3.01, 0.0))
    mc, se = ga.monte_carlo_risk(Theta, mu, 1.0, 1.0, "dot", n=400_000, seed=5)
    assert quad == pytest.approx(9.963, abs=1e-3)
    assert abs(mc - quad) < 3 * se
    # an off-axis pair, too (angle 1 rad)
    w = np.zeros(10)
    w[np.argmax(np.abs(u) < 0.5)] = 1
    w -= (w @ u) * u
    w /= np.linalg.norm(w)
    v = np.cos(1.0) * u + np.sin(1.0) * w
    q2 = float(ga.population_risk_symmetric(2.0, 1.0))
    mc2, se2 = ga.monte_carlo_risk(np.stack([2 * v, -2 * v]), mu, 1.0, 1.0, "dot", 200_000, 6)
    assert abs(mc2 - q2) < 4 * se2


def test_landscape_minimiser():
    t = np.linspace(0, 5, 200)
    phi = np.linspace(0, np.pi, 100)
    R = ga.population_risk_symmetric(t[None, :], phi[:, None])
    i, j = np.unravel_index(np.argmin(R), R.shape)
    assert phi[i] in (0.0, np.pi)
    assert abs(t[j] - 3.0) < 0.05
    # the origin (collapsed heads) is worse than the minimiser, the noise floor is d sigma^2
    assert R[0, 0] == pytest.approx(9 + 10, abs=1e-12)
    assert 9.9 < R.min() < 10.0


# ------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------


def test_training_aligns_with_centroids(mu, trained):
    assert trained.Theta.shape == (2, 10)
    assert trained.alignment[-1] > 0.999
    assert np.all(np.abs(np.linalg.norm(trained.Theta, axis=1) / 3.0 - 1) < 0.02)
    r, _ = ga.monte_carlo_risk(trained.Theta, mu, 1.0, 1.0, "dot", 100_000, 9)
    assert abs(r - 9.963) / 9.963 < 0.01
    assert trained.alignment[0] < 0.9  # it started unaligned


@pytest.mark.parametrize("seed", [1, 2])
def test_training_seeds(mu, seed):
    h = ga.train_heads(mu, ga.TrainSettings(), seed)
    assert h.alignment[-1] > 0.999


def test_general_centroids_distance_score_beats_dot():
    rng = np.random.default_rng(1)
    U = rng.normal(size=(2, 10))
    means = 3 * U / np.linalg.norm(U, axis=1, keepdims=True) + 1.0
    dot = ga.train_heads(means, ga.TrainSettings(), 0, score="dot")
    dist = ga.train_heads(means, ga.TrainSettings(), 0, score="distance")
    e_dot, e_dist = ga.centroid_error(dot.Theta, means), ga.centroid_error(dist.Theta, means)
    assert ga.alignment(dist.Theta, means) > 0.999
    assert e_dist < 0.15 and e_dot > 2 * e_dist


def test_large_lambda_is_a_lloyd_fixed_point(mu):
    h = ga.train_heads(mu, ga.TrainSettings(), 0, lam=50.0)
    X, _ = ga.sample_gmm(200_000, mu, 1.0, 11)
    assert ga.lloyd_fixed_point_residual(h.Theta, X) < 0.1


def test_determinism(mu):
    short = ga.TrainSettings(steps=20, batch=64)
    a = ga.train_heads(mu, short, 3)
    b = ga.train_heads(mu, short, 3)
    np.testing.assert_array_equal(a.path, b.path)
    X1, z1 = ga.sample_gmm(10, mu, 1.0, 5)
    X2, z2 = ga.sample_gmm(10, mu, 1.0, 5)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(z1, z2)


def test_alignment_is_permutation_invariant_and_sign_aware(mu):
    assert ga.alignment(mu, mu) == pytest.approx(1.0)
    assert ga.alignment(mu[::-1], mu) == pytest.approx(1.0)
    assert ga.alignment(np.stack([mu[0], mu[0]]), mu) == pytest.approx(0.0, abs=1e-12)
    K3 = np.eye(3) * 2
    assert ga.alignment(K3[[2, 0, 1]] * 5, K3) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------
# fast path vs reference
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", ga.SCORES)
def test_pair_train_heads(mu, score):
    """reference.train_heads == fast.train_heads (batched) on the same samples and starts."""
    rng = np.random.default_rng(7)
    steps, batch = 30, 128
    S = ga.sample_gmm(2 * steps * batch, mu, 1.0, 8)[0].reshape(2, steps, batch, 10)
    T0 = 0.1 * rng.normal(size=(2, 2, 10))
    with small_problem_threads(1):
        fast = ga.fast.train_heads(
            mu,
            ga.TrainSettings(steps=steps, batch=batch),
            2,
            lam=[1.0, 2.0],
            score=score,
            Theta0=T0,
            samples=S,
            device="cpu",
        )
    for r, lam in enumerate([1.0, 2.0]):
        settings = ga.TrainSettings(steps=steps, batch=batch)
        ref = ga.train_heads(mu, settings, 0, lam=lam, score=score, Theta0=T0[r], samples=S[r])
        np.testing.assert_allclose(fast[r].numpy(), ref.Theta, atol=1e-8)


def test_batched_torch_learns(mu):
    with small_problem_threads(1):
        out = ga.fast.train_heads(mu, ga.TrainSettings(batch=256), 4, device="cpu", seed=1)
    assert out.shape == (4, 2, 10) and out.dtype == torch.float32
    assert min(ga.alignment(o.numpy(), mu) for o in out) > 0.99


def test_identity_attention_properties():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 16, 4))
    Y = ga.identity_attention(X, 0.7)
    # outputs are convex combinations: beta = 0 -> sequence mean; permutation equivariance
    np.testing.assert_allclose(ga.identity_attention(X, 0.0), np.broadcast_to(X.mean(1, keepdims=True), X.shape), atol=1e-12)  # fmt: skip
    perm = rng.permutation(16)
    np.testing.assert_allclose(ga.identity_attention(X[:, perm], 0.7), Y[:, perm], atol=1e-12)
    assert np.all(Y.max(1) <= X.max(1) + 1e-12) and np.all(Y.min(1) >= X.min(1) - 1e-12)
    np.testing.assert_allclose(ga.identity_attention(X[1], 0.7), Y[1], atol=1e-14)
    assert np.all(np.isfinite(ga.identity_attention(X * 100, 50.0)))
    np.testing.assert_array_equal(ga.identity_attention(X, 3.0, 0), X)


def test_pair_identity_attention():
    """reference.identity_attention == fast.identity_attention (SDPA) on shared inputs."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 32, 5))
    ref = ga.identity_attention(X, 0.3, 2)
    out = ga.fast.identity_attention(X, 0.3, 2, device="cpu")
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    out32 = ga.fast.identity_attention(torch.tensor(X, dtype=torch.float32), 0.3, 2)
    np.testing.assert_allclose(out32.numpy(), ref, atol=1e-5)


def test_in_context_u_curve():
    X, z = ga.sample_in_context(500, 64, 5, 3.0, 2, 1.0, 0)
    raw = ga.in_context_error(X, z, 0.0, 0)
    best = ga.in_context_error(X, z, 0.2, 1)
    hot = ga.in_context_error(X, z, 5.0, 1)
    assert best < 1.0 and best * 4 < raw
    assert hot > raw


# ------------------------------------------------------------------------------------------
# trusted library: scikit-learn
# ------------------------------------------------------------------------------------------


def test_heads_match_sklearn_kmeans_and_em(mu):
    res = ga.fit_baselines(mu, ga.TrainSettings(), 0)
    heads = res["attention"]["centers"]
    for name in ("k-means", "EM"):
        assert ga.centroid_error(heads, res[name]["centers"]) < 0.1
        assert res[name]["error"] < 0.1
    assert res["attention"]["error"] < 0.1


def test_kmeans_batched_matches_sklearn():
    from sklearn.cluster import KMeans

    X, z = ga.sample_in_context(8, 64, 5, 3.0, 2, 1.0, 3)
    C, lab, inertia = ga.kmeans_batched(X, 2, seed=0)
    for b in range(8):
        km = KMeans(2, n_init=5, random_state=0).fit(X[b])
        assert inertia[b] == pytest.approx(km.inertia_, rel=1e-9)
        assert ga.centroid_error(C[b], km.cluster_centers_) < 1e-9
    assert ga.in_context_kmeans_error(X, z, 2) < 0.2


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


def test_bad_input(mu):
    X, _ = ga.sample_gmm(10, mu, 1.0, 0)
    with pytest.raises(ValueError, match="lam"):
        ga.head_attention(X, mu, 0.0)
    with pytest.raises(ValueError, match="beta"):
        ga.identity_attention(X, -1.0)
    with pytest.raises(ValueError, match="Theta"):
        ga.risk(mu[:1], X)
    with pytest.raises(ValueError, match="dimension"):
        ga.risk(mu[:, :5], X)
    with pytest.raises(ValueError, match="sigma"):
        ga.sample_gmm(10, mu, 0.0)
    with pytest.raises(ValueError, match="weights"):
        ga.sample_gmm(10, mu, 1.0, weights=[0.5, 0.6])
    with pytest.raises(ValueError, match="score"):
        ga.risk_grad(mu, X, 1.0, "cosine")
    with pytest.raises(ValueError, match="means"):
        ga.train_heads(mu[:1])
    with pytest.raises(TypeError, match="steps"):
        ga.TrainSettings(steps=1.5)
    with pytest.raises(ValueError, match="lr"):
        ga.TrainSettings(lr=-1)
    with pytest.raises(TypeError, match="settings"):
        ga.train_heads(mu, {"steps": 10})
    with pytest.raises(TypeError, match="unknown"):
        ga.TrainSettings().replace(step=3)


@pytest.mark.cuda
def test_cuda_fast_paths_match(mu):  # pragma: no cover - GPU only
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 256, 16))
    ref = ga.identity_attention(X, 0.2)
    out = ga.fast.identity_attention(torch.tensor(X, dtype=torch.float32, device="cuda"), 0.2)
    np.testing.assert_allclose(out.cpu().numpy(), ref, atol=1e-4)
    heads = ga.fast.train_heads(mu, ga.TrainSettings(), 8, device="cuda")
    assert min(ga.alignment(h.cpu().numpy(), mu) for h in heads) > 0.999


# ---------------------------------------------------------------------------------------------
# the house layout and the layer sweep driver
# ---------------------------------------------------------------------------------------------


def test_package_is_lazy_and_files_stay_short():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, lab.gmm_attention as ga; "
        "assert 'lab.gmm_attention.fast' not in sys.modules; "
        "ga.fast.train_heads; assert 'lab.gmm_attention.fast' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    folder = Path(ga.__file__).parent
    for name in ("reference.py", "fast.py", "mixture.py", "experiments.py", "figures.py"):
        assert (folder / name).exists(), name
    for f in folder.glob("*.py"):
        assert len(f.read_text().splitlines()) <= 600, f"{f.name} is over 600 lines"


def test_equation_labels_are_the_package_own():
    """The paper's text was not read: no docstring may cite a bare paper equation number."""
    import importlib
    import re

    for name in ("reference", "fast", "mixture", "experiments"):
        mod = importlib.import_module(f"lab.gmm_attention.{name}")
        src = open(mod.__file__).read()
        assert not re.search(r"eq\. \(?\d", src), f"{mod.__name__} cites a bare equation number"
    assert "(M7, ours" in ga.__doc__ and "ours" in ga.in_context_error.__doc__


def test_layer_sweep_matches_in_context_error():
    X, z = ga.sample_in_context(6, 16, 3, 3.0, seed=1)
    betas = np.array([0.0, 0.1, 1.0])
    sweep = ga.layer_sweep(X, z, betas, layers=(1, 3))
    for n in (1, 3):
        for i, b in enumerate(betas):
            assert sweep.errors[n][i] == ga.in_context_error(X, z, b, n)
    assert sweep.raw_error == ga.in_context_error(X, z, 0.0, 0)
    b, e = sweep.best(1)
    assert e == sweep.errors[1].min() and b in betas
    with pytest.raises(ValueError):
        sweep.best(2)


@pytest.mark.parametrize(
    "kwargs",
    [{"betas": [-0.1]}, {"betas": []}, {"layers": (0,)}, {"layers": ()}, {"layers": "12"}],
)
def test_layer_sweep_bad_input(kwargs):
    X, z = ga.sample_in_context(2, 8, 2, seed=0)
    args = {"betas": [0.1], "layers": (1,)} | kwargs
    with pytest.raises((ValueError, TypeError)):
        ga.layer_sweep(X, z, **args)


# ---------------------------------------------------------------------------------------------
# the nn.Module faces of the layers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", ["dot", "distance"])
def test_head_attention_module_matches_reference(score):
    rng = np.random.default_rng(3)
    Theta, X = rng.normal(size=(3, 4)), rng.normal(size=(20, 4))
    m = ga.HeadAttention(lam=0.7, score=score, Theta=Theta, dtype=torch.float64)
    x = torch.as_tensor(X)
    A, W = ga.head_attention(X, Theta, 0.7, score)
    np.testing.assert_allclose(m(x).detach().numpy(), A, atol=1e-12)
    np.testing.assert_allclose(m.weights(x).detach().numpy(), W, atol=1e-12)
    loss = m.risk(x)
    assert abs(loss.item() - ga.risk(Theta, X, 0.7, score)) < 1e-12
    loss.backward()
    np.testing.assert_allclose(m.theta.grad.numpy(), ga.risk_grad(Theta, X, 0.7, score), atol=1e-10)


def test_head_attention_module_trains_with_torch_optim():
    mu = ga.symmetric_means(4, 3.0, seed=0)
    m = ga.HeadAttention(2, 4, seed=0, dtype=torch.float64)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for k in range(150):
        X, _ = ga.sample_gmm(256, mu, 1.0, k)
        opt.zero_grad()
        m.risk(torch.as_tensor(X)).backward()
        opt.step()
    assert ga.alignment(m.theta.detach().numpy(), mu) > 0.99


def test_identity_attention_module_matches_reference():
    X, _ = ga.sample_in_context(3, 12, 4, seed=2)
    out = ga.IdentityAttention(0.3, 2)(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(out, ga.identity_attention(X, 0.3, 2), atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ga.HeadAttention(heads=1),
        lambda: ga.HeadAttention(lam=0.0),
        lambda: ga.HeadAttention(score="cosine"),
        lambda: ga.HeadAttention(Theta=np.ones((1, 3))),
        lambda: ga.HeadAttention(dtype=torch.int64),
        lambda: ga.HeadAttention(2, 3)(torch.ones(5, 4)),
        lambda: ga.HeadAttention(2, 3)(np.ones((5, 3))),
        lambda: ga.IdentityAttention(-1.0),
        lambda: ga.IdentityAttention(0.1)(torch.ones(4)),
    ],
)
def test_attention_modules_bad_input(make):
    with pytest.raises((ValueError, TypeError)):
        make()


def test_temperature_curves_match_temperature_curve():
    """The live figure's layered curve cache equals the direct computation exactly, for the
    layer asked and every fewer one it stored on the way."""
    betas, errs3, raw = ga.temperature_curves(16, 3, 2.0, 3)
    for n in (1, 3):
        direct, raw_direct = ga.temperature_curve(betas, 16, 3, 2.0, n, n_seq=100)
        assert np.array_equal(ga.temperature_curves(16, 3, 2.0, n)[1], direct)
        assert raw == raw_direct
    assert np.array_equal(errs3, ga.temperature_curves(16, 3, 2.0, 3)[1])
    for kwargs in ({"L": 4}, {"K": 6}, {"separation": -1.0}, {"n_layers": 0}, {"L": "x"}):
        with pytest.raises((ValueError, TypeError)):
            ga.temperature_curves(**kwargs)


def test_widget_drivers_live_in_experiments():
    """training_run and context_data are memoised drivers (figures only draw)."""
    from lab.gmm_attention import experiments, figures

    run = ga.training_run(4, 3.0, 1.0, "dot", True, 5, 0)
    assert ga.training_run(4, 3.0, 1.0, "dot", True, 5, 0) is run and run.means.shape == (2, 4)
    X, z = experiments.context_data(3, 8, 2, 3.0, 0)
    assert X.shape[:2] == (3, 8) and experiments.context_data(3, 8, 2, 3.0, 0)[0] is X
    assert not hasattr(figures, "training_run")
    with pytest.raises((ValueError, TypeError)):
        ga.training_run(1)
    fig = figures.temperature_figure(ga.temperature_view(0.3, 1, 16, 2, 3.0))
    assert len(fig.data) == 13
    with pytest.raises(TypeError, match="view"):
        figures.temperature_figure({"beta": 0.3})


def test_figures_take_results_only():
    """figures.py imports no driver or kernel of the chapter (a widget is f(g(settings)))."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(ga.__file__).parent / "figures.py").read_text())
    local = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert local == [], local


def test_seed_runs_sweep_matches_single_runs(mu):
    short = ga.TrainSettings(steps=10, batch=32)
    runs, s = ga.seed_runs(mu, short, (0, 1), n_mc=100)
    assert s.values("alignment").tolist() == [runs[0].alignment[-1], runs[1].alignment[-1]]
    np.testing.assert_array_equal(runs[1].Theta, ga.train_heads(mu, short, 1).Theta)
    by_score = ga.score_errors(mu, short, (0,))
    assert by_score.values("error", score="dot")[0] == ga.centroid_error(runs[0].Theta, mu)


# ---------------------------------------------------------------------------------------------
# the claims' rivals (lab.gmm_attention.rivals) and the registry
# ---------------------------------------------------------------------------------------------


def test_kmeans_rival_finds_the_centroids(mu):
    s = ga.rivals.kmeans_seed_runs(mu, 1.0, (0, 1), n=2000, n_mc=1000)
    assert s.values("alignment").min() > 0.999
    assert s.values("norm_error").max() < 0.1
    assert np.all(s.values("risk") < 11.0)  # near the minimum ~10 (d σ² + a little)


def test_own_mean_heads_beat_raw_tokens_and_lloyd_steps_improve():
    X, z = ga.sample_in_context(20, 32, 5, 3.0, 2, 1.0, 4)
    per = ga.rivals.own_mean_heads_errors(X, z, 1.0)
    raw = np.array([ga.in_context_error(X[b], z[b], 0.0, n_layers=0) for b in range(20)])
    assert per.shape == (20,) and per.mean() < raw.mean()
    e1, e5 = ga.rivals.lloyd_error(X, z, 2, 0, 1), ga.rivals.lloyd_error(X, z, 2, 0, 5)
    assert e5 < e1
    with pytest.raises(TypeError, match="steps"):
        ga.rivals.lloyd_error(X, z, 2, 0, 1.5)


def test_registry_names_a_rival_or_why_not_for_every_claim():
    from lab.gmm_attention.claims import CLAIMS

    assert CLAIMS.notebooks() == ("01", "02")
    for spec in CLAIMS.specs.values():
        assert bool(spec.rival) != bool(spec.no_rival), spec.id


def test_the_worked_example_of_the_lesson_page():
    """book/gmm_attention/index.md, "A worked example": heads ±(2, 0), λ = 1, x = (1, 0)."""
    heads, x = np.array([[2.0, 0.0], [-2.0, 0.0]]), np.array([[1.0, 0.0]])
    A, W = ga.head_attention(x, heads, 1.0)
    assert W[0, 0] == pytest.approx(1 / (1 + np.exp(-4)), abs=1e-12)  # 0.982
    assert A[0] == pytest.approx([2 * np.tanh(2.0), 0.0], abs=1e-12)  # (1.928, 0)
    assert ga.risk(heads, x, 1.0) == pytest.approx((1 - 2 * np.tanh(2.0)) ** 2)  # 0.861
    # collapsed heads remove nothing: R(0, φ) = ||μ||² + dσ² (eq. M5)
    assert ga.population_risk_symmetric(0.0, 0.7, 3.0, 1.0, 10, 1.0) == pytest.approx(19.0)


def test_evidence_builds_one_line_records():
    """lab.gmm_attention.evidence: the dicts the notebooks pass to ``record`` in one line."""
    from lab.gmm_attention import evidence

    depth = {1: 4.5, 10: 8.9}
    out = evidence.stacking_evidence(depth, 3.0)
    assert out["measured"] == pytest.approx(8.9 / 9) and out["control"].measured == pytest.approx(
        0.5
    )
    grid = ga.landscape(3.0, 10, 1.0)
    out = evidence.landscape_minimiser_evidence(grid, ga.landscape(3.0, 10, 0.1), 3.0)
    assert out["measured"] < 0.1 and "φ = 0.0°" in out["text"]
    with pytest.raises(TypeError, match="depth must be a dict"):
        evidence.stacking_evidence([4.5, 8.9], 3.0)
    with pytest.raises(TypeError, match="landscape"):
        evidence.landscape_minimiser_evidence(grid[0], grid, 3.0)
