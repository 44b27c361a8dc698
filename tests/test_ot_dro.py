"""Tests for lab.ot_dro: closed forms, limits, identities, POT agreement, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lab import ot_dro as o


def _rand(n=12, m=17, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=m), rng.uniform(0, 2, size=(n, m))


def test_worst_case_weights_matches_reference_and_sums():
    for s in range(5):
        loss, C = _rand(seed=s)
        pi, Q = o.fast.worst_case_weights(loss, C, 0.7, 0.3)
        pr, qr = o.reference.worst_case_weights(loss, C, 0.7, 0.3)
        assert np.allclose(pi, pr, atol=1e-12) and np.allclose(Q, qr, atol=1e-12)
        assert np.allclose(pi.sum(1), 1, atol=1e-12) and abs(Q.sum() - 1) < 1e-12
        assert (Q >= 0).all()


def test_worst_case_limits_and_invariance():
    loss, C = _rand()
    _, Q = o.fast.worst_case_weights(loss, C, 1.0, 1e4)
    assert 0.5 * np.abs(Q - 1 / len(Q)).sum() < 1e-3  # eps -> inf: uniform
    pi, _ = o.fast.worst_case_weights(loss, C, 0.1, 1e-4)  # eps -> 0: argmax of l - lam C
    assert np.array_equal(pi.argmax(1), (loss[None] - 0.1 * C).argmax(1))
    assert np.allclose(pi.max(1), 1, atol=1e-6)
    _, Q2 = o.fast.worst_case_weights(loss + 3.7, C, 1.0, 0.2)
    _, Q1 = o.fast.worst_case_weights(loss, C, 1.0, 0.2)
    assert np.allclose(Q1, Q2, atol=1e-12)
    # lam -> inf with zero diagonal cost: each p keeps its own candidate
    C0 = C[:, :12] + 0.5
    np.fill_diagonal(C0, 0.0)
    pi, _ = o.fast.worst_case_weights(loss[:12], C0, 1e3, 0.01)
    assert np.allclose(np.diag(pi), 1, atol=1e-6)


def test_no_overflow_tiny_eps():
    loss, C = _rand()
    pi, Q = o.fast.worst_case_weights(loss * 100, C, 1.0, 1e-3)
    assert np.isfinite(pi).all() and abs(Q.sum() - 1) < 1e-9


def test_envelope_gradient_and_bounds():
    loss, C = _rand()
    lt = torch.tensor(loss, requires_grad=True)
    R = o.fast.sinkhorn_dro_objective(lt, torch.tensor(C), 0.8, 0.4)
    (g,) = torch.autograd.grad(R, lt)
    _, Q = o.fast.worst_case_weights(loss, C, 0.8, 0.4)
    assert np.allclose(g.numpy(), Q, atol=1e-10)
    rng = np.random.default_rng(3)
    for _ in range(100):
        n, m = rng.integers(2, 10, size=2)
        loss = rng.normal(size=m) * 3
        C = rng.uniform(0, 3, size=(n, m))
        lam, eps = rng.uniform(0.1, 5), rng.uniform(0.01, 3)
        R = float(o.fast.sinkhorn_dro_objective(loss, C, lam, eps))
        upper = lam * eps * (np.logaddexp.reduce(loss / (lam * eps)) - math.log(m))
        assert loss.mean() - lam * C.mean() - 1e-9 <= R <= upper + 1e-9 <= loss.max() + 2e-9


def test_stopgrad_weighted_loss_equals_dual_gradient():
    torch.manual_seed(0)
    w = torch.randn(5, dtype=torch.float64, requires_grad=True)
    X = torch.randn(9, 5, dtype=torch.float64)
    C = torch.rand(6, 9, dtype=torch.float64)
    loss_q = (X @ w) ** 2
    R = o.fast.sinkhorn_dro_objective(loss_q, C, 1.0, 0.2)
    (g1,) = torch.autograd.grad(R, w, retain_graph=True)
    _, Q = o.fast.worst_case_weights(loss_q.detach(), C, 1.0, 0.2)
    (g2,) = torch.autograd.grad((Q * loss_q).sum(), w)
    assert torch.allclose(g1, g2, atol=1e-10)


def test_batched_worst_case():
    rng = np.random.default_rng(1)
    L, C = rng.normal(size=(4, 9)), rng.uniform(size=(4, 5, 9))
    pi, Q = o.fast.worst_case_weights(torch.tensor(L), torch.tensor(C), 1.0, 0.5)
    for b in range(4):
        assert np.allclose(Q[b].numpy(), o.reference.worst_case_weights(L[b], C[b], 1.0, 0.5)[1])


def test_pair_worst_case_weights():
    """reference.worst_case_weights (numpy, one problem) = fast.worst_case_weights (torch)."""
    loss, C = _rand(n=9, m=14, seed=7)
    pr, qr = o.reference.worst_case_weights(loss, C, 0.6, 0.2)
    pf, qf = o.fast.worst_case_weights(loss, C, 0.6, 0.2)
    assert np.abs(pr - pf).max() < 1e-12 and np.abs(qr - qf).max() < 1e-12


def test_pair_sinkhorn_dro_objective():
    """reference.sinkhorn_dro_objective (numpy, eq. 4) = fast.sinkhorn_dro_objective (torch),
    at a tiny eps too (the max-shift keeps both finite)."""
    for lam, eps in ((0.6, 0.2), (2.0, 1e-4)):
        loss, C = _rand(n=9, m=14, seed=8)
        r_ref = o.reference.sinkhorn_dro_objective(loss, C, lam, eps)
        r_fast = float(o.fast.sinkhorn_dro_objective(loss, C, lam, eps))
        assert isinstance(r_ref, float) and abs(r_ref - r_fast) < 1e-12 * max(1.0, abs(r_ref))


def test_pair_implied_radius():
    """reference.implied_radius (numpy, eq. 5) = fast.implied_radius (torch)."""
    loss, C = _rand(n=9, m=14, seed=9)
    pi, _ = o.reference.worst_case_weights(loss, C, 0.8, 0.3)
    rho = o.reference.implied_radius(pi, C)
    assert abs(rho - float(o.fast.implied_radius(pi, C))) < 1e-14
    assert 0.0 <= rho <= C.max()


def test_settings_are_frozen_and_validated_once():
    """TrainSettings carries the run whole; AdaDROConfig is frozen; the sweep pairs seeds."""
    import dataclasses

    s = o.TrainSettings("erm", steps=3, calib_steps=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.steps = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.cfg.lam = 2.0
    sw = o.shift_sweep(s, ["erm", "erm_nu"], seeds=(0, 1))
    assert sw.values("shifted", method="erm").shape == (2,)
    again = o.shift_scores("erm", s, 1)
    assert again["shifted"] == sw.values("shifted", method="erm")[1]


def test_shift_figure_draws_results():
    """figures take results: the shift figure draws a ShiftCurves without training."""
    from lab.ot_dro import figures

    curves = {m: np.linspace(0.9, 0.5, len(o.SHIFTS)) for m in ("erm", "erm_nu", "adadro")}
    res = o.ShiftCurves(0.1, o.SHIFTS, curves)
    assert len(figures.shift_figure(res, 0.5).data) == 4
    with pytest.raises(TypeError, match="ShiftCurves"):
        figures.shift_figure(0.1, 0.5)
    with pytest.raises(ValueError, match="shift"):
        figures.shift_figure(res, 1.5)


def test_pair_entropic_plan():
    """reference.entropic_plan (numpy log domain) = fast.entropic_plan (torch, auto method)."""
    rng = np.random.default_rng(3)
    C = rng.uniform(size=(12, 9))
    a = rng.uniform(0.5, 1.5, 12)
    a /= a.sum()
    Pr = o.reference.entropic_plan(C, 0.1, a, None, n_iter=5000, tol=1e-12)
    Pf = o.fast.entropic_plan(C, 0.1, a, None, n_iter=5000, tol=1e-12)
    assert np.abs(Pr - Pf).max() < 1e-9


def test_toy_drivers_cache_and_agree():
    """toy_plan / lam_curve (experiments, memoised) give the plan the kernels give; the figure
    draws them."""
    res = o.toy_plan(1.0, 0.1, 0)
    assert o.toy_plan(1.0, 0.1, 0) is res  # cached
    pi, Qw = o.fast.worst_case_weights(res.loss, res.C, 1.0, 0.1)
    assert np.abs(pi - res.pi).max() == 0.0 and np.abs(Qw - res.Qw).max() == 0.0
    rho, R = o.lam_curve(o.LAMS, 0.1, 0)
    assert np.array_equal(rho, res.rho_curve) and np.all(np.diff(rho) < 1e-12)
    from lab.ot_dro import figures

    assert len(figures.plan_figure(res).data) == 6  # plan, candidates, points, ρ, R, λ


def test_entropic_plan_vs_reference_and_pot():
    import ot

    rng = np.random.default_rng(0)
    C = rng.uniform(size=(50, 40))
    a = rng.uniform(0.5, 1.5, 50)
    a /= a.sum()
    b = np.full(40, 1 / 40)
    P = o.fast.entropic_plan(C, 0.05, a, b, n_iter=5000, tol=1e-12)
    P_log = o.fast.entropic_plan(C, 0.05, a, b, n_iter=5000, tol=1e-12, method="log")
    assert np.abs(P - P_log).max() < 1e-9
    # small eps: auto falls back to the log domain and stays finite
    P_tiny = o.fast.entropic_plan(C, 1e-3, a, b, n_iter=3000, tol=1e-8)
    assert np.isfinite(P_tiny).all() and np.allclose(P_tiny.sum(1), a, atol=1e-5)
    assert np.allclose(P.sum(1), a, atol=1e-10) and np.allclose(P.sum(0), b, atol=1e-10)
    Pr = o.reference.entropic_plan(C, 0.05, a, b, n_iter=5000, tol=1e-12)
    Pot = ot.bregman.sinkhorn_log(a, b, C, 0.05, numItermax=5000, stopThr=1e-12)
    assert np.abs(P - Pr).max() < 1e-6 and np.abs(P - Pot).max() < 1e-6
    Pot2 = ot.sinkhorn(a, b, C, 0.05, numItermax=20000, stopThr=1e-12)
    assert np.abs(P - Pot2).max() < 1e-6


def test_entropic_plan_batched_and_semi_relaxed():
    rng = np.random.default_rng(2)
    C = torch.tensor(rng.uniform(size=(3, 20, 30)))
    P = o.fast.entropic_plan(C, 0.1, tol=1e-12, n_iter=3000)
    P_log = o.fast.entropic_plan(C, 0.1, tol=1e-12, n_iter=3000, method="log")
    assert torch.allclose(P, P_log, atol=1e-9)
    for k in range(3):
        Pk = o.fast.entropic_plan(C[k], 0.1, tol=1e-12, n_iter=3000)
        assert torch.allclose(P[k], Pk, atol=1e-9)
    S = o.fast.entropic_plan(C[0], 0.1, semi_relaxed=True)
    assert torch.allclose(S.sum(1), torch.full((20,), 1 / 20, dtype=S.dtype))
    P_small, it = o.fast.entropic_plan(C[0].numpy(), 1.0, tol=1e-6, return_iters=True)
    assert isinstance(P_small, np.ndarray) and it < 1000


def test_semantic_cost_properties():
    torch.manual_seed(0)
    zp, zq, W = torch.randn(7, 4), torch.randn(9, 4), torch.randn(3, 4)
    yp, yq = torch.randint(0, 3, (7,)), torch.randint(0, 3, (9,))
    C = o.semantic_cost(zp, yp, zq, yq, W)
    assert C.shape == (7, 9) and (C >= -1e-6).all() and (C <= 4 + 1e-6).all()
    ref = (1 - torch.nn.functional.cosine_similarity(zp[:, None], zq[None], dim=-1)) + (
        1 - torch.nn.functional.cosine_similarity(W[yp][:, None], W[yq][None], dim=-1)
    )
    assert torch.allclose(C, ref, atol=1e-5)
    soft = torch.nn.functional.one_hot(yq, 3).double()
    C2 = o.semantic_cost(zp.double(), yp, zq.double(), soft, W.double())
    assert torch.allclose(C2.float(), C, atol=1e-5)


def test_iot_is_infonce_and_balanced_matches_pot():
    import ot

    torch.manual_seed(0)
    za, zb = torch.randn(50, 8, dtype=torch.float64), torch.randn(50, 8, dtype=torch.float64)
    sim = torch.nn.functional.normalize(za, dim=1) @ torch.nn.functional.normalize(zb, dim=1).T
    ce = torch.nn.functional.cross_entropy(sim / 0.2, torch.arange(50))
    assert abs(float(o.iot_loss(za, zb, 0.2)) - float(ce)) < 1e-10
    lb = o.iot_loss(za, zb, 0.2, balanced=True, n_iter=500)
    u = np.full(50, 1 / 50)
    P = ot.sinkhorn(u, u, (1 - sim).numpy(), 0.2, numItermax=10000, stopThr=1e-12)
    ref = -np.mean(np.log(50 * np.diag(P)))
    assert abs(float(lb) - ref) < 1e-4


def test_refine_reference():
    zp = torch.eye(5)[:4]
    zq = zp.clone()
    zq[2] = torch.eye(5)[4]  # candidate 2 no longer resembles its source (nor anything else)
    keep = o.refine_reference(zp, zq, omega=0.6, eps_f=0.1)
    assert keep.tolist() == [True, True, False, True]
    assert bool(o.refine_reference(torch.eye(4), torch.eye(4), omega=1.0).all())
    z = torch.randn(20, 3)
    keep = o.refine_reference(z, -z, omega=0.6, min_keep=0.25)
    assert int(keep.sum()) >= 5
    perm = torch.randperm(20)
    zq = z + 0.3 * torch.randn(20, 3)
    k1 = o.refine_reference(z, zq)
    k2 = o.refine_reference(z[perm], zq[perm])
    assert torch.equal(k1[perm], k2)
    assert o.refine_reference(z, zq, rule="unpaired").shape == (20,)


def test_adadro_step_and_end_to_end_beats_erm():
    Xte, yte = o.make_spurious(2000, 0.1, seed=99)
    m_erm, _ = o.train_method(o.TrainSettings("erm", steps=250), seed=0)
    m_ada, hist = o.train_method(o.TrainSettings("adadro", steps=250, log_every=50), seed=0)
    a_erm, a_ada = o.accuracy(m_erm, Xte, yte), o.accuracy(m_ada, Xte, yte)
    assert a_ada - a_erm >= 0.15, (a_erm, a_ada)
    assert len(hist["keep"]) > 0 and all(0 < k <= 1 for k in hist["keep"])


def test_adadro_step_detach_options():
    X, y = o.make_spurious(64, 0.95, seed=1)
    Xq, _ = o.flip_spurious(X, seed=1)
    batch_p = (torch.as_tensor(X), torch.as_tensor(y))
    batch_nu = (torch.as_tensor(Xq), torch.as_tensor(y))
    for detach in (True, False):
        model = o.make_model(8, seed=0)
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        out = o.adadro_step(model, batch_p, batch_nu, opt, o.AdaDROConfig(detach_cost=detach))
        assert abs(float(out["Q"].sum()) - 1) < 1e-5 and 0 < out["keep"] <= 1
        assert out["rho"] >= 0 and math.isfinite(out["robust"])
    with pytest.raises(TypeError, match="cfg"):
        o.adadro_step(model, batch_p, batch_nu, opt, cfg={"lam": 1.0})


def test_determinism():
    m1, _ = o.train_method(o.TrainSettings("adadro", steps=20), seed=3)
    m2, _ = o.train_method(o.TrainSettings("adadro", steps=20), seed=3)
    for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(p, q)


def test_bad_inputs():
    loss, C = _rand()
    with pytest.raises(ValueError, match="lam"):
        o.fast.worst_case_weights(loss, C, 0.0, 0.1)
    with pytest.raises(ValueError, match="eps"):
        o.fast.worst_case_weights(loss, C, 1.0, -1.0)
    with pytest.raises(ValueError, match="loss_q"):
        o.fast.worst_case_weights(loss[:3], C, 1.0, 0.1)
    with pytest.raises(ValueError, match="loss_q"):
        o.fast.worst_case_weights(np.full_like(loss, np.nan), C, 1.0, 0.1)
    with pytest.raises(ValueError, match="omega"):
        o.refine_reference(torch.eye(3), torch.eye(3), omega=1.5)
    with pytest.raises(ValueError, match="omega"):
        o.AdaDROConfig(omega=-0.1)
    with pytest.raises(ValueError, match="non-empty"):
        o.semantic_cost(torch.randn(3, 2), [0, 1, 0], torch.zeros(0, 2), [], torch.randn(2, 2))
    with pytest.raises(ValueError, match="yq"):
        o.semantic_cost(torch.randn(3, 2), [0, 1, 0], torch.randn(2, 2), [0, 5], torch.randn(2, 2))
    with pytest.raises(ValueError, match="yp"):
        o.semantic_cost(torch.randn(3, 2), [0, 1], torch.randn(2, 2), [0, 1], torch.randn(2, 2))
    with pytest.raises(ValueError, match="eps"):
        o.fast.entropic_plan(C, 0.0)
    with pytest.raises(TypeError, match="n_iter"):
        o.fast.entropic_plan(C, 0.1, n_iter=2.5)
    with pytest.raises(ValueError, match="method"):
        o.TrainSettings("groupdro")
    with pytest.raises(TypeError, match="settings"):
        o.train_method("adadro")
    with pytest.raises(ValueError, match="corrupt"):
        o.TrainSettings(corrupt=1.5)
    with pytest.raises(ValueError, match="tau"):
        o.CalibrationSettings(tau=0.0)
    with pytest.raises(ValueError, match="lam"):
        o.reference.sinkhorn_dro_objective(loss, C, 0.0, 0.1)
    with pytest.raises(ValueError, match="same shape"):
        o.reference.implied_radius(np.ones((2, 3)), np.ones((3, 2)))


@pytest.mark.cuda
def test_cuda_matches_cpu():
    rng = np.random.default_rng(0)
    C = torch.tensor(rng.uniform(size=(8, 64, 64)))
    P_cpu = o.fast.entropic_plan(C, 0.05, tol=1e-10, n_iter=3000)
    P_gpu = o.fast.entropic_plan(C.cuda(), 0.05, tol=1e-10, n_iter=3000)
    assert P_gpu.device.type == "cuda" and torch.allclose(P_gpu.cpu(), P_cpu, atol=1e-9)
    L = torch.tensor(rng.normal(size=(8, 64)))
    _, Q1 = o.fast.worst_case_weights(L, C, 1.0, 0.1)
    _, Q2 = o.fast.worst_case_weights(L.cuda(), C.cuda(), 1.0, 0.1)
    assert torch.allclose(Q2.cpu(), Q1, atol=1e-10)


def test_phase_one_calibration_runs_before_phase_two():
    _, h0 = o.train_method(o.TrainSettings("adadro", steps=5, calib_steps=0), seed=0)
    _, h1 = o.train_method(o.TrainSettings("adadro", steps=5, calib_steps=30, log_every=1), 0)
    assert h0["iot"] == [] and len(h1["iot"]) == 30
    assert np.mean(h1["iot"][-5:]) < h1["iot"][0]  # phase 1 lowers the IOT loss
    assert len(h1["robust"]) == 5 and all(math.isfinite(r) for r in h1["robust"])
    _, he = o.train_method(o.TrainSettings("erm", steps=5, calib_steps=30), seed=0)
    assert he["iot"] == []  # ERM has no phase 1


def test_dro_descent_gradient_and_convergence():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    C = rng.uniform(0, 2, size=(10, 30))
    run = o.dro_descent(X, y, C, 1.0, 0.3, mu=0.5, steps=1)

    # finite-difference check of the gradient at w = 0 (the first recorded gradient norm)
    def F(w):
        loss = np.logaddexp(0.0, -y * (X @ w))
        return float(o.fast.sinkhorn_dro_objective(loss, C, 1.0, 0.3)) + 0.25 * float(w @ w)

    h = 1e-6
    g = np.array([(F(h * e) - F(-h * e)) / (2 * h) for e in np.eye(2)])
    assert abs(np.linalg.norm(g) - run.grad_norm[0]) < 1e-6
    assert abs(run.objective[0] - F(np.zeros(2))) < 1e-12
    run = o.dro_descent(X, y, C, 1.0, 0.3, mu=0.5, steps=400)
    assert np.all(np.diff(run.objective) <= 1e-12)  # descent with step 1/L
    assert run.grad_norm[-1] < 1e-3 * run.grad_norm[0]


def test_nested_bias_is_negative_and_shrinks():
    rng = np.random.default_rng(1)
    loss, C = rng.normal(size=2000), rng.uniform(0, 2, size=(8, 2000))
    nb = o.nested_bias(loss, C, [4, 64], lam=1.0, eps=0.3, reps=300)
    assert nb.bias[0] < 0 and abs(nb.bias[1]) < abs(nb.bias[0])


def test_bad_inputs_second_pass():
    with pytest.raises(ValueError, match="X"):
        o.flip_spurious(np.zeros(5))
    with pytest.raises(TypeError, match="zp"):
        o.refine_reference(None, None)
    with pytest.raises(ValueError, match="d_in"):
        o.make_model(d_in=-1)
    with pytest.raises(TypeError, match="model"):
        o.accuracy(None, np.zeros((2, 8)), [0, 1])
    with pytest.raises(ValueError, match="C"):
        o.reference.worst_case_weights([1.0], np.array([]), 1.0, 0.1)
    with pytest.raises(ValueError, match="loss_q"):
        o.reference.worst_case_weights([1.0, 2.0], np.ones((2, 3)), 1.0, 0.1)
    with pytest.raises(ValueError, match="eps"):
        o.reference.entropic_plan(np.ones((2, 2)), -1.0)


def test_lazy_import_is_cheap():
    import subprocess
    import sys

    code = "import sys, lab.ot_dro; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ parity with the authors' code
# lab/core/official/ot_dro_official.json: AdaDROLoss and the two ReferenceDistributionFilter
# variants of h305142/AdaDRO on shared instances (float64)
def _official():
    from lab.ot_dro import official

    return official


def test_official_fixture_has_its_provenance():
    """The provenance fields every fixture has: tests/test_installed_fixtures.py."""
    import json

    fixture = json.loads(_official().OFFICIAL_FIXTURE.read_text())
    prov = fixture["provenance"]
    assert prov["repository"] == "h305142/AdaDRO" and prov["setup"] and prov["dtype"]
    assert "torch" in prov["versions"]
    assert fixture["loss_cases"] and fixture["filter_cases"]


def test_cost_and_worst_case_weights_reproduce_the_official_loss():
    """semantic_cost (both terms, and each alone) to 1e-12; Q to 1e-7 at the official code's
    temperature lam*eps + 1e-8 (its other 1e-8 guards, in the normalisers, remain) and to 1e-4 at
    the nominal eps; the DRO loss sum_j Q_j l_j to 1e-6."""
    loss = _official().official_parity()["loss"]
    for key in ("cost", "cost_x", "cost_y", "nu_losses"):
        assert loss[key] < 1e-12, (key, loss[key])
    assert loss["Q_guarded"] < 1e-7 and loss["Q_nominal"] < 1e-4
    assert loss["dro_loss"] < 1e-6


def test_official_gradient_flows_through_the_worst_case_weights():
    """The official dro_loss.backward() differentiates Q as well (Q depends on the losses and
    the cost); adadro_step holds Q fixed (the Sinkhorn-DRO gradient). Differentiating our Q
    reproduces the official gradient (1e-6); holding it fixed does not (a listed deviation)."""
    loss = _official().official_parity()["loss"]
    assert loss["grad_through_Q"] < 1e-6
    assert loss["grad_fixed_Q"] > 1e-2 * loss["grad_scale"]


def test_filters_against_the_official_rules():
    """The unpaired rule (utils/filtering_o1.py, the one the official trainer uses) keeps the
    same candidates; our paired rule (on the semi-relaxed plan, competitor per candidate) is not
    the official paired rule (raw cosines, competitor per source) and disagrees somewhere."""
    filt = _official().official_parity()["filter"]
    assert filt["candidates"] > 0
    assert filt["unpaired"] == 0
    assert filt["paired"] >= 1


def test_official_parity_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError, match="path"):
        _official().official_parity(3)
    with pytest.raises(FileNotFoundError):
        _official().official_parity(tmp_path / "missing.json")


def test_worst_case_is_the_semi_relaxed_entropic_plan():
    """The identity notebook 1 used to record as a claim (a code check now): with lam fixed,
    pi = N x the semi-relaxed entropic plan for the cost C - l / lam at regularisation eps."""
    loss, C = _rand(n=10, m=23, seed=4)
    for lam, eps in ((1.0, 0.1), (0.4, 0.5)):
        pi, _ = o.reference.worst_case_weights(loss, C, lam, eps)
        plan = o.fast.entropic_plan(C - loss[None, :] / lam, eps, semi_relaxed=True)
        assert np.abs(C.shape[0] * plan - pi).max() < 1e-12
    rho = [o.reference.implied_radius(o.reference.worst_case_weights(loss, C, lam, 0.1)[0], C)
           for lam in np.geomspace(0.05, 20, 15)]  # fmt: skip
    assert np.all(np.diff(rho) < 1e-12)  # rho(lam) decreases: lam is the price of the radius


def test_registry_rivals_and_deviations():
    """Every registered claim names its rival; every deviation a diagnosis names is registered."""
    from lab.ot_dro.claims import CLAIMS

    assert CLAIMS.notebooks() == ("01", "02")
    for spec in CLAIMS.specs.values():
        assert spec.rival or spec.no_rival, spec.id
    assert {"toy-task", "no-mlmc"} <= set(CLAIMS.deviations)


def test_the_lessons_worked_example():
    """The hand-checkable example of book/ot_dro/index.md: one point, two candidates."""
    loss, C = np.array([0.5, 2.0]), np.array([[0.0, 1.0]])
    pi, Q = o.reference.worst_case_weights(loss, C, 1.0, 1.0)
    assert np.allclose(pi, [[0.378, 0.622]], atol=5e-4) and np.array_equal(pi[0], Q)
    assert abs(Q @ loss - 1.43) < 5e-3 and abs(o.reference.implied_radius(pi, C) - 0.622) < 5e-4
    assert abs(o.reference.sinkhorn_dro_objective(loss, C, 1.0, 1.0) - 0.781) < 5e-4
    pi4, _ = o.reference.worst_case_weights(loss, C, 4.0, 1.0)
    assert np.allclose(pi4, [[0.651, 0.349]], atol=5e-4)
    assert abs(o.reference.implied_radius(pi4, C) - 0.349) < 5e-4


def test_the_entropic_budget_falls_with_the_price_but_its_cost_part_need_not():
    """What the lesson page says of eq. 5: the entropic budget E_pi C + eps KL(pi || uniform) is
    the negative slope of a convex function of lambda, so it does not rise with the price, on
    random instances; the cost part E_pi C alone can (the own copy the harder candidate)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        loss, C, eps = rng.uniform(0, 3, 6), rng.uniform(0, 2, (4, 6)), rng.uniform(0.1, 2)
        budgets = []
        for lam in np.geomspace(0.1, 20, 40):
            pi, _ = o.reference.worst_case_weights(loss, C, lam, eps)
            kl = np.sum(pi * np.log(pi * C.shape[1] + 1e-300), axis=1).mean()
            budgets.append(o.reference.implied_radius(pi, C) + eps * kl)
        assert np.all(np.diff(budgets) <= 1e-12)
    loss, C = np.array([2.0, 0.5]), np.array([[0.0, 1.0]])
    rho = [o.reference.implied_radius(o.reference.worst_case_weights(loss, C, lam, 1.0)[0], C)
           for lam in (1.0, 4.0)]  # fmt: skip
    assert rho[1] > rho[0] + 0.1  # 0.076 -> 0.202
