"""Tests of lab.coreset: facility-location coresets and posterior-sampled selection.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/coreset-posterior-sampling.md):
facility-location invariants and the (1 - 1/e) bound, reference vs fast path, agreement with
apricot, the sigma = 0 reduction, the concatenation identity, parameter restoration, the weighted
loss, label noise, bad input. The paper-scale alignment and training checks are marked slow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lab import coreset as cs


def _pool(n=60, m=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, m))


# ------------------------------------------------------------------------------------------
# facility location
# ------------------------------------------------------------------------------------------
def test_greedy_invariants():
    D = cs.pairwise_distances(_pool())
    prev = -1.0
    for b in range(1, 15):
        idx, w = cs.greedy_facility_location(D, b)
        assert len(np.unique(idx)) == b == len(w)
        assert w.dtype.kind == "i" and (w >= 1).all() and w.sum() == 60
        f = cs.facility_location_objective(D, idx)
        assert f >= prev - 1e-12
        prev = f
        # greedy is a prefix family: the first b picks of B are the picks of b
        assert np.array_equal(cs.greedy_facility_location(D, 14)[0][:b], idx)


def test_budget_at_least_pool_returns_everything():
    D = cs.pairwise_distances(_pool(7))
    for fn in (
        cs.greedy_facility_location,
        lambda d, b: cs.facility_location(d, b, metric="precomputed", device="cpu"),
    ):
        idx, w = fn(D, 7)
        assert np.array_equal(idx, np.arange(7)) and np.array_equal(w, np.ones(7))
        idx, w = fn(D, 50)
        assert np.array_equal(idx, np.arange(7))


def test_greedy_within_one_minus_one_over_e_of_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(15):
        D = cs.pairwise_distances(rng.standard_normal((12, 2)))
        b = int(rng.integers(1, 5))
        idx, _ = cs.greedy_facility_location(D, b)
        _, best = cs.brute_force_facility_location(D, b)
        assert cs.facility_location_objective(D, idx) >= (1 - 1 / math.e) * best


def test_weights_are_nearest_medoid_counts():
    G = _pool(40)
    D = cs.pairwise_distances(G)
    idx, w = cs.greedy_facility_location(D, 6)
    nearest = np.argmin(D[:, idx], axis=1)
    assert np.array_equal(np.bincount(nearest, minlength=6), w)


def test_lazy_greedy_reaches_the_same_objective():
    D = cs.pairwise_distances(_pool(120, 4, 5))
    i1, _ = cs.greedy_facility_location(D, 20)
    i2, w2 = cs.greedy_facility_location(D, 20, lazy=True)
    f1, f2 = (cs.facility_location_objective(D, i) for i in (i1, i2))
    assert f2 == pytest.approx(f1, rel=1e-12) and w2.sum() == 120


def test_pair_greedy_facility_location():
    """reference.greedy_facility_location == fast.facility_location on shared pools."""
    for seed, (n, m, b) in enumerate([(50, 3, 5), (300, 10, 30), (1000, 8, 40)]):
        G = _pool(n, m, seed)
        ref = cs.greedy_facility_location(cs.pairwise_distances(G), b)
        fast = cs.facility_location(torch.as_tensor(G), b)
        assert np.array_equal(ref[0], fast[0]) and np.array_equal(ref[1], fast[1])


def test_reference_vs_torch_ties_broken_the_same_way():
    # integer distances: many exact ties, all sums exact in float64
    rng = np.random.default_rng(0)
    P = rng.integers(0, 4, size=(40, 2)).astype(float)
    D = np.abs(P[:, None, :] - P[None, :, :]).sum(-1)  # L1 on a grid: integer-valued
    for b in (1, 5, 12):
        ref = cs.greedy_facility_location(D, b)
        fast = cs.facility_location(D, b, metric="precomputed", device="cpu")
        assert np.array_equal(ref[0], fast[0]) and np.array_equal(ref[1], fast[1])


def test_torch_batch_equals_one_pool_at_a_time():
    G = np.stack([_pool(80, 6, s) for s in range(4)])
    idx, w = cs.facility_location(torch.as_tensor(G), 9)
    assert idx.shape == (4, 9) and (w.sum(1) == 80).all()
    for p in range(4):
        i1, w1 = cs.greedy_facility_location(cs.pairwise_distances(G[p]), 9)
        assert np.array_equal(i1, idx[p]) and np.array_equal(w1, w[p])


def test_apricot_agrees_on_the_objective():
    apricot = pytest.importorskip("apricot")
    D = cs.pairwise_distances(_pool(150, 6, 2))
    idx, _ = cs.greedy_facility_location(D, 15)
    sel = apricot.FacilityLocationSelection(15, metric="precomputed", optimizer="naive")
    sel.fit(D.max() - D)
    f_ref = cs.facility_location_objective(D, idx)
    assert cs.facility_location_objective(D, sel.ranking) == pytest.approx(f_ref, rel=1e-12)


@pytest.mark.cuda
def test_torch_on_cuda_float32_objective():
    G = _pool(2000, 16, 4)
    D = cs.pairwise_distances(G)
    idx_ref, _ = cs.greedy_facility_location(D, 50)
    idx, w = cs.facility_location(torch.as_tensor(G, dtype=torch.float32, device="cuda"), 50)
    f_ref = cs.facility_location_objective(D, idx_ref)
    assert cs.facility_location_objective(D, idx) == pytest.approx(f_ref, rel=1e-5)
    assert w.sum() == 2000


# ------------------------------------------------------------------------------------------
# posterior features
# ------------------------------------------------------------------------------------------
def _net():
    return cs.make_mlp(8, 16, 3, seed=0)


def _data(n=40):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    return X, y


def test_posterior_features_reduce_to_the_proxy():
    net, (X, y) = _net(), _data()
    net.eval()
    with torch.no_grad():
        ref = cs.gradient_proxy(net(X), y)
    F = cs.posterior_features(net, X, y, K=1, sigma=0.0)
    assert torch.equal(F, ref)
    F3 = cs.posterior_features(net, X, y, K=3, sigma=0.0)
    assert F3.shape == (40, 9) and torch.equal(F3[:, 3:6], ref)
    assert torch.allclose(ref.sum(1), torch.zeros(40), atol=1e-6)


@pytest.mark.parametrize("where", ["norm", "all", "last", "norm_out"])
def test_posterior_features_restore_parameters_and_mode(where):
    net, (X, y) = _net(), _data()
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    g = torch.Generator().manual_seed(1)
    F = cs.posterior_features(net, X, y, K=4, sigma=0.1, where=where, generator=g)
    assert F.shape == (40, 12)
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # running stats untouched too
    assert net.training
    # and the noise did something
    assert not torch.equal(F[:, :3], F[:, 3:6])


def test_posterior_features_deterministic_with_generator():
    net, (X, y) = _net(), _data()
    F1 = cs.posterior_features(net, X, y, 4, 0.1, generator=torch.Generator().manual_seed(5))
    F2 = cs.posterior_features(net, X, y, 4, 0.1, generator=torch.Generator().manual_seed(5))
    assert torch.equal(F1, F2)


def test_concatenation_identity():
    X, y, _, _ = cs.digits_split()
    W = cs.softmax_regression_fit(X, y, 10, steps=10)
    G = cs.logreg_posterior_features(W, X[:30], y[:30], K=5, sigma=0.3, seed=2)
    blocks = G.reshape(30, 5, -1)
    lhs = ((G[:, None] - G[None]) ** 2).sum(-1)
    rhs = sum(((blocks[:, None, k] - blocks[None, :, k]) ** 2).sum(-1) for k in range(5))
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-12)


def test_sigma_zero_posterior_selection_is_craig():
    X, y, _, _ = cs.digits_split()
    W = cs.softmax_regression_fit(X, y, 10, steps=10)
    Xp, yp = X[:120], y[:120]
    craig = cs.greedy_facility_location(
        cs.pairwise_distances(cs.logreg_example_gradients(W, Xp, yp).reshape(120, -1)), 12
    )
    for K in (1, 2, 4):
        post = cs.greedy_facility_location(
            cs.pairwise_distances(cs.logreg_posterior_features(W, Xp, yp, K, 0.0)), 12
        )
        assert np.array_equal(craig[0], post[0]) and np.array_equal(craig[1], post[1])


def test_minibatch_coresets_sigma_zero_is_craig_and_shapes():
    net = cs.make_mlp(seed=0)
    X, y, _, _ = cs.digits_split()
    Xt = torch.as_tensor(X, dtype=torch.float32)
    kw = dict(train=cs.TrainSettings(pool_size=64, budget=8), steps=3, seed=4)
    craig = cs.select_minibatch_coresets(net, Xt, y, method="craig", **kw)
    flat = cs.PosteriorSettings(K=3, sigma=0.0)
    post = cs.select_minibatch_coresets(net, Xt, y, method="posterior", posterior=flat, **kw)
    rand = cs.select_minibatch_coresets(net, Xt, y, method="random", **kw)
    assert len(craig) == len(post) == len(rand) == 3
    for (i1, w1), (i2, w2) in zip(craig, post, strict=True):
        assert np.array_equal(i1, i2) and np.array_equal(w1, w2) and w1.sum() == 64
    for i, w in rand:
        assert len(np.unique(i)) == 8 and (w == 1).all()


# ------------------------------------------------------------------------------------------
# the weighted loss, label noise, logistic-regression algebra
# ------------------------------------------------------------------------------------------
def test_coreset_loss_uniform_and_duplicates():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 1, 0])
    ref = torch.nn.functional.cross_entropy(z, y)
    assert torch.allclose(cs.coreset_loss(z, y, torch.ones(6)), ref, rtol=1e-14)
    gam = torch.tensor([1.0, 2.0, 3.0, 1.0, 4.0, 2.0])
    loss = cs.coreset_loss(z, y, gam)
    (gz,) = torch.autograd.grad(loss, z)
    # duplicate row 4 and halve its weight
    z2 = torch.cat([z, z[4:5]])
    y2 = torch.cat([y, y[4:5]])
    gam2 = torch.cat([gam, gam[4:5]])
    gam2[4] = gam2[6] = 2.0
    loss2 = cs.coreset_loss(z2, y2, gam2)
    (gz2,) = torch.autograd.grad(loss2, z)
    assert torch.allclose(loss, loss2, rtol=1e-14) and torch.allclose(gz, gz2, rtol=1e-13)


def test_corrupt_labels():
    y = np.arange(20000) % 10
    same, fl = cs.corrupt_labels(y, 0.0, 10, 0)
    assert np.array_equal(same, y) and not fl.any()
    for ratio in (0.2, 0.5, 0.8):
        yn, fl = cs.corrupt_labels(y, ratio, 10, 1)
        p = ratio * 9 / 10
        assert abs(fl.mean() - p) < 3 * math.sqrt(p * (1 - p) / y.size)
        assert np.array_equal(fl, yn != y)
    yn, fl = cs.corrupt_labels(y, 0.5, 10, 1, mode="exclusive")
    assert abs(fl.mean() - 0.5) < 3 * math.sqrt(0.25 / y.size)
    assert np.array_equal(cs.corrupt_labels(y, 0.3, 10, 7)[0], cs.corrupt_labels(y, 0.3, 10, 7)[0])


def test_logreg_gradients_and_hessian_match_autograd():
    X, y, _, _ = cs.digits_split()
    X, y = X[:25, :6], y[:25] % 3
    W = np.random.default_rng(0).standard_normal((3, 7)) * 0.3
    gam = np.random.default_rng(1).uniform(0.5, 2.0, 25)

    def loss(Wt):
        Xa = torch.cat([torch.as_tensor(X), torch.ones(25, 1, dtype=torch.float64)], 1)
        ce = torch.nn.functional.cross_entropy(Xa @ Wt.T, torch.as_tensor(y), reduction="none")
        g = torch.as_tensor(gam)
        return (g * ce).sum() / g.sum()

    Wt = torch.as_tensor(W)
    H_auto = torch.autograd.functional.hessian(loss, Wt).reshape(21, 21).numpy()
    np.testing.assert_allclose(cs.logreg_hessian(W, X, y, gam), H_auto, atol=1e-12)
    G = cs.logreg_example_gradients(W, X, y)
    g_auto = torch.autograd.functional.jacobian(loss, Wt).numpy()
    np.testing.assert_allclose(np.einsum("i,ica->ca", gam / gam.sum(), G), g_auto, atol=1e-12)


def test_alignment_errors_of_the_whole_pool_are_zero():
    X, y, _, _ = cs.digits_split()
    X, y = X[:60], y[:60]
    W = cs.softmax_regression_fit(X, y, 10, steps=5)
    err = cs.alignment_errors(W, X, y, np.arange(60), np.ones(60), sigma=0.1, draws=2)
    assert err["grad"] < 1e-25 and err["hess"] < 1e-12 and err["newton"] < 1e-10


def test_alignment_study_small_ranking():
    X, y, _, _ = cs.digits_split()
    st = cs.alignment_study(
        X, y, cs.AlignmentSettings(noise=0.4, trials=2, eval_draws=2, sigma=0.2)
    )
    g, h = st.mean("grad"), st.mean("hess")
    assert g["craig"] < g["random"] and g["posterior"] < g["random"]
    assert h["craig"] < h["random"] and h["posterior"] < h["random"]


def test_shared_alignment_errors_are_alignment_errors_bit_for_bit():
    from lab.coreset.experiments import _shared_errors

    X, y, _, _ = cs.digits_split()
    X, y = X[:80], y[:80]
    W = cs.softmax_regression_fit(X, y, 10, steps=5)
    sel = {
        "random": cs.random_coreset(80, 12, 3),
        "craig": cs.greedy_facility_location(
            cs.pairwise_distances(cs.logreg_example_gradients(W, X, y).reshape(80, -1)), 12
        ),
    }
    s = cs.AlignmentSettings(pool_size=80, budget=12, sigma=0.2, eval_draws=3)
    shared = _shared_errors(W, (X, y), sel, s, 7)
    for m, (idx, w) in sel.items():
        assert shared[m] == cs.alignment_errors(W, X, y, idx, w, sigma=0.2, draws=3, seed=7)


def test_alignment_study_without_hessians_keeps_the_gradient_errors():
    X, y, _, _ = cs.digits_split()
    kw = dict(noise=0.4, pool_size=60, budget=10, K=3, sigma=0.2, eval_draws=2, seed=5)
    full = cs.alignment_study(X, y, cs.AlignmentSettings(trials=2, **kw))
    grad = cs.alignment_study(X, y, cs.AlignmentSettings(trials=3, hessians=False, **kw))
    for m in cs.METHODS:  # the first trials are the same pools, selections and draws
        assert np.array_equal(grad.grad[m][:2], full.grad[m])
        assert np.array_equal(grad.share[m][:2], full.share[m])
        assert np.isnan(grad.hess[m]).all() and np.isnan(grad.newton[m]).all()
    with pytest.raises(TypeError, match="hessians"):
        cs.AlignmentSettings(trials=1, hessians="no", **kw)


def test_alignment_study_without_newton_steps_keeps_the_hessian_errors():
    X, y, _, _ = cs.digits_split()
    s = cs.AlignmentSettings(pool_size=60, budget=10, K=3, sigma=0.2, eval_draws=2, trials=2)
    full = cs.alignment_study(X, y, s)
    hess = cs.alignment_study(X, y, s.replace(trials=3, newton=False))
    for m in cs.METHODS:  # the first trials are the same pools, selections and draws
        assert np.array_equal(hess.hess[m][:2], full.hess[m])
        assert np.array_equal(hess.grad[m][:2], full.grad[m])
        assert np.isnan(hess.newton[m]).all()
    with pytest.raises(TypeError, match="newton"):
        cs.AlignmentSettings(newton="no")


def test_alignment_study_memoises_the_fit_on_the_data():
    from lab.coreset import experiments as ex

    X, y, _, _ = cs.digits_split()
    s = cs.AlignmentSettings(noise=0.3, budget=5, K=2, trials=1, eval_draws=1, seed=4)
    a = cs.alignment_study(X, y, s)
    n = len(ex.fitted_weights)
    b = cs.alignment_study(X, y, s)
    assert len(ex.fitted_weights) == n and a.grad == b.grad and a.hess == b.hess
    yn, _ = cs.corrupt_labels(y, 0.3, 10, 4)
    W = ex.fitted_weights(X, np.asarray(yn), 10, 30)
    assert np.array_equal(W, cs.softmax_regression_fit(X, yn, 10, steps=30))
    cs.alignment_study(X[:-1], y[:-1], s)
    assert len(ex.fitted_weights) == n + 1  # other data, another fit


def test_widget_choices_and_precompute_bad_input():
    assert 30 in cs.ALIGNMENT_CHOICES["budget"] and 8 in cs.ALIGNMENT_CHOICES["K"]
    assert 0.2 in cs.ALIGNMENT_CHOICES["sigma"]
    assert 4 in cs.TRAINING_CHOICES["K"] and 0.05 in cs.TRAINING_CHOICES["sigma"]
    with pytest.raises(ValueError, match="noise"):
        cs.AlignmentSettings(noise=1.5)
    with pytest.raises(TypeError, match="budget"):
        cs.AlignmentSettings(budget=2.5)
    with pytest.raises(ValueError, match="sigma"):
        cs.PosteriorSettings(sigma=-1.0)
    with pytest.raises(TypeError, match="K"):
        cs.PosteriorSettings(K="4")
    with pytest.raises(TypeError, match="settings"):
        cs.precompute_alignment(0.4)
    with pytest.raises(TypeError, match="run"):
        cs.precompute_training({"noise": 0.5})


def test_trainer_short_run_and_restores_nothing_broken():
    Xtr, ytr, Xte, yte = cs.digits_split()
    yn, fl = cs.corrupt_labels(ytr, 0.3, 10, 0)
    net = cs.make_mlp(seed=0)
    train = cs.TrainSettings(steps=20, select_every=5, eval_every=10)
    h = cs.CoresetTrainer("posterior", train=train).fit(net, Xtr, yn, Xte, yte, flipped=fl)
    assert h.steps == [10, 20] and 0.2 < h.test_acc[-1] <= 1.0
    assert 0.0 <= h.noisy_share[-1] <= 1.0
    h2 = cs.CoresetTrainer("posterior", train=train).fit(
        cs.make_mlp(seed=0), Xtr, yn, Xte, yte, flipped=fl
    )
    assert h.test_acc == h2.test_acc  # deterministic


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_input():
    D = cs.pairwise_distances(_pool(10))
    with pytest.raises(ValueError, match="budget"):
        cs.greedy_facility_location(D, 0)
    with pytest.raises(TypeError, match="budget"):
        cs.greedy_facility_location(D, 2.5)
    with pytest.raises(ValueError, match="square"):
        cs.greedy_facility_location(D[:, :5], 2)
    with pytest.raises(ValueError, match="non-negative"):
        cs.greedy_facility_location(-D, 2)
    with pytest.raises(ValueError, match="finite"):
        cs.facility_location(np.full((3, 2), np.nan), 1)
    with pytest.raises(ValueError, match="budget"):
        cs.facility_location(_pool(5), -1)
    net, (X, y) = _net(), _data()
    with pytest.raises(ValueError, match="K"):
        cs.posterior_features(net, X, y, K=0)
    with pytest.raises(ValueError, match="sigma"):
        cs.posterior_features(net, X, y, sigma=-0.1)
    with pytest.raises(ValueError, match="where"):
        cs.posterior_features(net, X, y, where="middle")
    plain = torch.nn.Sequential(torch.nn.Linear(8, 3))
    with pytest.raises(ValueError, match='where="last"'):
        cs.posterior_features(plain, X, y, where="norm")
    with pytest.raises(ValueError, match="finite"):
        cs.gradient_proxy(torch.full((2, 3), float("nan")), [0, 1])
    with pytest.raises(ValueError, match="ratio"):
        cs.corrupt_labels([0, 1], 1.5, 2, 0)
    with pytest.raises(ValueError, match="y must lie"):
        cs.corrupt_labels([0, 5], 0.1, 3, 0)
    with pytest.raises(ValueError, match="method"):
        cs.CoresetTrainer("gradmatch")
    with pytest.raises(ValueError, match="gamma"):
        cs.coreset_loss(torch.zeros(2, 3), torch.tensor([0, 1]), torch.tensor([-1.0, 1.0]))


# ------------------------------------------------------------------------------------------
# paper-scale checks (slow)
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_alignment_ranking_at_notebook_scale():
    X, y, _, _ = cs.digits_split()
    st = cs.alignment_study(X, y, cs.AlignmentSettings(noise=0.4, trials=6, K=8, sigma=0.2))
    h, g = st.mean("hess"), st.mean("grad")
    assert h["posterior"] <= h["craig"] < h["random"]
    assert g["posterior"] <= 1.1 * g["craig"] and g["craig"] < g["random"]


@pytest.mark.slow
def test_training_trend_at_fifty_percent_noise():
    r = cs.noise_sweep(cs.SweepSettings(noises=(0.5,), seeds=(0, 1, 2)))
    assert r["posterior"].mean() >= r["craig"].mean() - 0.01


def test_bad_input_offenders_of_the_probe():
    with pytest.raises(ValueError, match="flipped"):
        cs.noisy_share([], [0], [1.0])
    with pytest.raises(ValueError, match="idx"):
        cs.noisy_share([True, False], [2], [1.0])
    with pytest.raises(ValueError, match="weights"):
        cs.noisy_share([True, False], [0, 1], [0.0, 0.0])
    assert cs.noisy_share([True, False, True], [0, 1], [3, 1]) == pytest.approx(0.75)
    model = cs.make_mlp(d_in=4, hidden=8, num_classes=3)
    with pytest.raises(ValueError, match="y"):
        cs.select_minibatch_coresets(model, np.zeros((0, 4)), np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match="X"):
        cs.select_minibatch_coresets(model, np.zeros((5, 4)), np.zeros(6, dtype=int))
    with pytest.raises(TypeError, match="model"):
        cs.select_minibatch_coresets(None, np.zeros((5, 4)), np.zeros(5, dtype=int))


def test_paired_difference_ci_closed_form():
    d = cs.paired_difference_ci([1.0, 3.0], [0.0, 0.0])
    # n = 2: se = sd / sqrt(2) = 1, t_{0.975, 1} = 12.7062047...
    assert d["mean"] == 2.0 and d["se"] == pytest.approx(1.0)
    assert d["lo"] == pytest.approx(2.0 - 12.706204736, rel=1e-9)
    assert d["hi"] == pytest.approx(2.0 + 12.706204736, rel=1e-9)
    one = cs.paired_difference_ci([1.0], [0.0])
    assert one["lo"] == -math.inf and one["hi"] == math.inf
    with pytest.raises(ValueError, match="shape"):
        cs.paired_difference_ci([1.0, 2.0], [1.0])


def test_full_data_baseline_is_minibatch_sgd_over_shuffled_passes():
    """Like with like: "full" takes steps on `budget` examples, covering the data once a pass."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = np.arange(40) % 3
    seen = []

    class Spy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = cs.make_mlp(d_in=4, hidden=8, num_classes=3)

        def forward(self, x):
            if self.training:
                seen.append(x.detach().clone())
            return self.net(x)

    trainer = cs.CoresetTrainer("full", train=cs.TrainSettings(steps=5, budget=8, pool_size=8))
    trainer.fit(Spy(), X, y, X, y)
    assert [b.shape[0] for b in seen] == [8] * 5
    rows = torch.cat(seen).double().numpy()
    # one pass of 5 steps x 8 = 40 examples: every training example exactly once
    match = (np.abs(rows[:, None, :] - X[None, :, :]).max(-1) < 1e-6).sum(0)
    assert np.array_equal(match, np.ones(40, dtype=int))


def test_perturbation_ablation_shapes_determinism_and_bad_input():
    from lab.coreset.ablation import PerturbationAblation, perturbation_ablation

    train = cs.TrainSettings(steps=6, select_every=3, budget=10)

    def ablation(wheres, sigmas, seeds, **kw):
        return cs.AblationSettings(wheres, sigmas, seeds, train=train, **kw)

    threads = torch.get_num_threads()
    r = perturbation_ablation(ablation(("norm", "all", "last"), (0.1, 0.001), (0, 1)))
    assert torch.get_num_threads() == threads  # the one-thread limit is undone
    assert isinstance(r, PerturbationAblation)
    assert r.wheres == ("norm", "all", "last") and r.sigmas == (0.1, 0.001) and r.seeds == (0, 1)
    assert r.acc.shape == r.share.shape == (3, 2, 2) and r.mean().shape == (3, 2)
    assert np.all((r.acc >= 0) & (r.acc <= 1)) and np.all((r.share >= 0) & (r.share <= 1))
    assert r.at("all", 0.001).shape == (2,)
    # the runs are deterministic: a fresh trainer (not the memo) gives the same accuracy
    cs.experiments._trained.clear()
    again = perturbation_ablation(ablation(("last",), (0.001,), (1,)))
    assert again.acc[0, 0, 0] == r.acc[2, 1, 1]
    # the perturbed block changes the selection: the variants are not all the same run
    assert r.share.reshape(3, -1).std(axis=0).max() > 0 or r.acc.std() > 0
    with pytest.raises(ValueError, match="where"):
        ablation(("bn",), (0.01,), (0,))
    with pytest.raises(ValueError, match="sigma"):
        ablation(("norm",), (-0.1,), (0,))
    with pytest.raises(ValueError, match="distinct"):
        ablation(("norm", "norm"), (0.01,), (0,))
    with pytest.raises(ValueError, match="empty"):
        ablation(("norm",), (), (0,))
    with pytest.raises(TypeError, match="sequence"):
        ablation("norm", (0.01,), (0,))
    with pytest.raises(ValueError, match="noise"):
        ablation(("norm",), (0.01,), (0,), noise=1.5)
    with pytest.raises(TypeError, match="settings"):
        perturbation_ablation({"wheres": ("norm",)})
    with pytest.raises(ValueError, match="sigma"):
        r.at("norm", 0.5)


def test_pair_per_class_facility_location():
    """Reference vs fast path, per class: identical indices and weights (balanced pools, one
    batched call, and unbalanced pools, grouped by class size), both similarities."""
    from lab.coreset.fast import per_class_facility_location_many

    rng = np.random.default_rng(7)
    G = rng.standard_normal((4, 130, 12))
    y = np.stack([rng.permutation(np.repeat(np.arange(10), 13)) for _ in range(4)])
    y_unbalanced = y.copy()
    y_unbalanced[0, :6] = 2
    for labels in (y, y_unbalanced):
        for sim in ("max-minus", "exp"):
            out = per_class_facility_location_many(G, labels, 30, similarity=sim, device="cpu")
            for p in range(4):
                i, w = cs.per_class_facility_location(G[p], labels[p], 30, similarity=sim)
                assert np.array_equal(out[p][0], i) and np.array_equal(out[p][1], w)
    with pytest.raises(ValueError, match="y must have shape"):
        per_class_facility_location_many(G, y[:, :5], 30)
    with pytest.raises(ValueError, match="G must have shape"):
        per_class_facility_location_many(torch.zeros(130, 12), y[0], 30)


def test_widget_drivers_are_memoised_and_figures_only_draw():
    from lab.coreset import experiments, figures, toy

    toy.toy_problem.clear()
    a = cs.toy_problem(0.3)
    assert cs.toy_problem(noise=0.3, n=300, seed=0) is a  # keyed on the bound arguments
    t = cs.toy_selection(cs.ToySettings(0.3, budget=6, K=2, sigma=0.5))
    assert set(t.coresets) == set(cs.METHODS) and t.flipped.shape == (300,)
    assert t.proxies.shape == (300, 3)
    assert t.shares["craig"] == cs.noisy_share(t.flipped, *t.coresets["craig"])
    assert len(figures.toy_selection_figure(t).data) == 6
    with pytest.raises(ValueError, match="noise"):
        cs.toy_problem(1.5)
    experiments.digits_alignment.clear()
    s = cs.AlignmentSettings(noise=0.3, budget=5, K=2, sigma=0.2, trials=1)
    st = cs.digits_alignment(s)
    assert cs.digits_alignment(settings=s) is st
    assert len(figures.alignment_figure(st, s).data) == 9
    assert experiments.digits_alignment.store and len(experiments.digits_alignment.store) == 1


def test_the_lessons_worked_example():
    """book/coreset/index.md, "A worked example": four points on a line, B = 2, the far one
    mislabeled: medoids 1 and 3, weights 3 and 1, weighted noisy share 1/4 (half the medoids)."""
    D = cs.pairwise_distances([[0.0], [1.0], [2.0], [10.0]])
    S = D.max() - D
    assert S.sum(axis=0).tolist() == [27.0, 29.0, 29.0, 13.0]  # the first pick's F({j})
    idx, gamma = cs.greedy_facility_location(D, 2)
    assert idx.tolist() == [1, 3] and gamma.tolist() == [3, 1]
    gains = np.maximum(S - S[:, 1:2], 0).sum(axis=0)  # the second pick's gains
    assert gains.tolist() == [1.0, 0.0, 2.0, 9.0]
    assert cs.noisy_share([False, False, False, True], idx, gamma) == 0.25
