"""Tests of lab.koala: the EKF reference, KOALA++ (reference, loop, fast path), KOALA-V."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lab import koala


def run_opt(opt_cls, theta0, loss_fn, grad_fn, steps, lsq=None, **kw):
    """Drive a lab optimizer on one float64 parameter vector with numpy loss/grad."""
    p = torch.nn.Parameter(torch.tensor(theta0, dtype=torch.float64))
    opt = opt_cls([p], **kw)
    for k in range(1, steps + 1):
        th = p.detach().numpy().copy()
        p.grad = torch.tensor(grad_fn(th, k))
        opt.step_with_loss(loss_fn(th, k), None if lsq is None else lsq[k - 1])
    return p.detach().numpy(), opt


@pytest.fixture(scope="module")
def quad10():
    return koala.NoisyQuadratic(n=10, kappa=100.0, noise=0.0, seed=0)


# ------------------------------------------------------------------ exactness in 1-D


@pytest.mark.parametrize("q,r,s0", [(0.1, 0.5, 0.1), (1e-3, 2.0, 1.0), (0.5, 0.01, 0.05)])
def test_one_dimension_koalapp_is_the_ekf(q, r, s0):
    prob = koala.NoisyQuadratic(n=1, kappa=1.0, noise=0.3, seed=3)
    th0 = np.array([2.5])
    ekf = koala.ekf_full(th0, prob.loss, prob.grad, s0, q, r, 50, phantom=True)
    ref = koala.koalapp(th0, prob.loss, prob.grad, steps=50, sigma0=s0, q=q, r=r)
    np.testing.assert_allclose(ref["theta"], ekf["theta"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ref["v"], ekf["v_true"], rtol=1e-12, atol=1e-14)
    final, _ = run_opt(koala.KoalaPP, th0, prob.loss, prob.grad, 50, lr=1.0, sigma0=s0, q=q, r=r)
    np.testing.assert_allclose(final, ekf["theta"][-1], rtol=0, atol=1e-12)


def test_collinear_gradients_all_variants_equal_ekf():
    # L = 1/2 (u^T theta - b)^2: every gradient is a multiple of u, so w_k = 0 and the closure
    # is exact: vanilla = symmetric = full EKF.
    rng = np.random.default_rng(0)
    u = rng.standard_normal(6)

    def loss(th):
        return 0.5 * (u @ th - 1.0) ** 2

    def grad(th):
        return (u @ th - 1.0) * u

    th0 = rng.standard_normal(6)
    ekf = koala.ekf_full(th0, loss, grad, 0.2, 0.05, 0.3, 40)
    for sym in (True, False):
        ref = koala.koalapp(th0, loss, grad, steps=40, sigma0=0.2, q=0.05, r=0.3, symmetric=sym)
        np.testing.assert_allclose(ref["theta"], ekf["theta"], atol=1e-12)


def test_first_step_closed_form():
    rng = np.random.default_rng(1)
    th0 = rng.standard_normal(5)
    h1 = rng.standard_normal(5)
    s0, q, r = 0.3, 0.2, 0.7
    out = koala.koalapp(th0, lambda t: 1.0, lambda t: h1, steps=1, sigma0=s0, q=q, r=r)
    xx = h1 @ h1
    lam = (s0 + q) * xx / ((s0 + q) * xx + r)
    np.testing.assert_allclose(out["v"][0], (1 - lam) * (s0 + q) * h1, rtol=1e-14)


def test_v_update_matches_reference_and_ekf_in_1d():
    rng = np.random.default_rng(2)
    v_prev, h_prev, h = rng.standard_normal((3, 5))
    S_prev, q = 1.7, 0.1
    for sym in (True, False):
        got = koala.koalapp_v_update(v_prev, h_prev, h, S_prev, q, sym)
        x, y, a, c = h_prev @ h_prev, h_prev @ v_prev, h @ h_prev, h @ v_prev
        lam = (c + q * a) / S_prev
        w = c / x - a * y / x**2 if sym else 0.0
        want = (a / x - lam) * v_prev + q * (h - lam * h_prev) + w * h_prev
        np.testing.assert_allclose(got, want, rtol=1e-13)
    # 1-D: equals H_k P_{k-1} of the EKF
    prob = koala.NoisyQuadratic(n=1, kappa=1.0, noise=0.2, seed=0)
    ekf = koala.ekf_full(np.array([1.5]), prob.loss, prob.grad, 0.1, 0.1, 0.5, 5)
    hs = [prob.grad(ekf["theta"][k - 1], k) for k in range(1, 6)]
    v = koala.koalapp_v_update(ekf["v_true"][2], hs[2], hs[3], ekf["S"][2], 0.1)
    np.testing.assert_allclose(v, ekf["v_true"][3], rtol=1e-12)


def test_the_worked_example_of_the_lesson_page():
    """book/koala/index.md, "A worked example": two KOALA++ steps on L = theta^2 / 2 by hand."""
    theta0, hp = np.array([2.0]), dict(sigma0=0.5, q=0.5, r=4.0, lr=1.0)
    loss, grad = (lambda t: 0.5 * float(t @ t)), (lambda t: t.copy())
    out = koala.koalapp(theta0, loss, grad, steps=2, **hp)
    np.testing.assert_allclose(out["v"][:, 0], [1.0, 0.75], rtol=1e-14)  # v_1, v_2
    np.testing.assert_allclose(out["g"][:, 0], [2.0, 1.5], rtol=1e-14)  # g_k = v_k + Q H_k
    np.testing.assert_allclose(out["S"], [8.0, 6.25], rtol=1e-14)  # S_k = H_k g_k + R
    np.testing.assert_allclose(out["theta"][:, 0], [2.0, 1.5, 1.23], rtol=1e-14)
    # the first step's recursion alone, from the phantom start v_0 = sigma0 H_1, S_0 = 8
    v1 = koala.koalapp_v_update(np.array([1.0]), np.array([2.0]), np.array([2.0]), 8.0, 0.5)
    np.testing.assert_allclose(v1, [1.0], rtol=1e-14)
    # the full-covariance EKF (P_0 = sigma0) takes the same steps
    ekf = koala.ekf_full(theta0, loss, grad, 0.5, 0.5, 4.0, 2)
    np.testing.assert_allclose(ekf["theta"][:, 0], [2.0, 1.5, 1.23], rtol=1e-14)


# ------------------------------------------------------------------ tracking (n = 10)


def test_tracking_n10_kappa100(quad10):
    ekf = koala.run_quadratic(quad10, "ekf", steps=60, q=0.1, r=0.5, sigma0=0.1)
    for m in ("koalapp", "koalapp_vanilla"):
        run = koala.run_quadratic(quad10, m, steps=60, q=0.1, r=0.5, sigma0=0.1)
        err = koala.tracking_error(run, ekf)
        assert np.all(err[[5, 20, 60]] < 0.1), err[[5, 20, 60]]
        assert run["mean_loss"][-1] < run["mean_loss"][0] / 10


def test_covariance_replay_shapes_and_1d_exact():
    out = koala.covariance_replay(koala.NoisyQuadratic(n=1, kappa=1.0), steps=20)
    assert np.max(out["rel_koalapp"]) < 1e-12
    out = koala.covariance_replay(koala.NoisyQuadratic(n=10, kappa=100.0), steps=30)
    assert out["angle_koalav"].shape == (30,)
    assert np.all(out["rel_koalapp"] < 1.0)


# ------------------------------------------------------------------ limits


def test_limits():
    rng = np.random.default_rng(4)
    c = rng.standard_normal(4)
    th0 = rng.standard_normal(4)
    th0 += (2.0 - c @ th0) / (c @ c) * c  # L(theta0) = c^T theta0 - 0.5 = 1.5 > 0

    def loss(t):
        return c @ t - 0.5

    def grad(t):
        return c

    # Q = sigma0 = 0: v = 0, no step
    out = koala.koalapp(th0, loss, grad, steps=3, sigma0=0.0, q=0.0, r=1.0)
    np.testing.assert_array_equal(out["theta"][-1], th0)
    # R -> infinity: the step vanishes
    big = koala.koalapp(th0, loss, grad, steps=1, r=1e12)
    assert np.linalg.norm(big["theta"][1] - th0) < 1e-10
    # R = 0, linear loss, eta = 1: one step solves L = 0
    one = koala.koalapp(th0, loss, grad, steps=1, r=0.0)
    assert abs(loss(one["theta"][1])) < 1e-13


# ------------------------------------------------------------------ optimizer = reference


@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("init", ["phantom", "prior"])
def test_koalapp_matches_reference(quad10, foreach, symmetric, init):
    th0 = quad10.start()
    hp = dict(lr=0.8, sigma0=0.1, q=0.1, r=0.5, symmetric=symmetric, init=init, weight_decay=0.01)
    ref = koala.koalapp(th0, quad10.loss, quad10.grad, steps=100, **hp)
    got, _ = run_opt(koala.KoalaPP, th0, quad10.loss, quad10.grad, 100, foreach=foreach, **hp)
    np.testing.assert_allclose(got, ref["theta"][-1], rtol=0, atol=1e-12)


def test_koalapp_ema_r_matches_reference_sequence(quad10):
    th0 = quad10.start()
    lsq = np.linspace(0.2, 3.0, 40)
    R, Rs = 1.0, []
    for v in lsq:
        R = 0.9 * R + 0.1 * v
        Rs.append(R)
    ref = koala.koalapp(th0, quad10.loss, quad10.grad, steps=40, r=np.array(Rs))
    got, opt = run_opt(koala.KoalaPP, th0, quad10.loss, quad10.grad, 40, lsq=lsq)
    np.testing.assert_allclose(got, ref["theta"][-1], atol=1e-12)
    assert abs(float(opt.state["R"]) - Rs[-1]) < 1e-14


def _separable_run(device, steps=200, host_checks=None):
    """Three tensors of a separable quadratic, float64: foreach path vs per-block reference."""
    rng = np.random.default_rng(5)
    shapes = [(3, 4), (7,), (2, 2, 2)]
    As = []
    for s in shapes:
        n = int(np.prod(s))
        M = rng.standard_normal((n, n))
        As.append(M @ M.T / n + 0.1 * np.eye(n))
    th0 = [rng.standard_normal(s) for s in shapes]
    params = [torch.nn.Parameter(torch.tensor(t, device=device)) for t in th0]
    opt = koala.KoalaPP(params, lr=1.0, sigma0=0.1, q=0.1, r=0.5, weight_decay=1e-3, foreach=True)
    if host_checks is not None:  # exercise the sync-free (CUDA) branch of the fast path
        from lab.koala import optim

        base = optim.koalapp_foreach_
        opt_step = opt.step_with_loss

        def step_with_loss(loss, lsq=None):
            optim.koalapp_foreach_ = lambda *a, **kw: base(*a, host_checks=host_checks, **kw)
            try:
                opt_step(loss, lsq)
            finally:
                optim.koalapp_foreach_ = base

        opt.step_with_loss = step_with_loss
    losses, grads = [], [[] for _ in shapes]
    for _ in range(steps):
        L = 0.0
        for i, (p, A) in enumerate(zip(params, As, strict=True)):
            t = p.detach().cpu().numpy().ravel()
            L += 0.5 * t @ A @ t
            g = A @ t
            grads[i].append(g)
            p.grad = torch.tensor(g.reshape(p.shape), device=device)
        losses.append(L)
        opt.step_with_loss(L)
    worst = 0.0
    for i, A in enumerate(As):
        ref = koala.koalapp(
            th0[i].ravel(),
            lambda t, k: losses[k - 1],
            lambda t, k, A=A: A @ t,
            steps=steps,
            lr=1.0,
            sigma0=0.1,
            q=0.1,
            r=0.5,
            weight_decay=1e-3,
        )
        got = params[i].detach().cpu().numpy().ravel()
        worst = max(worst, float(np.max(np.abs(got - ref["theta"][-1]))))
    return worst


def test_foreach_multi_tensor_matches_reference_cpu():
    assert _separable_run("cpu") < 1e-10


def test_foreach_sync_free_branch_matches_reference_on_cpu():
    assert _separable_run("cpu", steps=60, host_checks=False) < 1e-10


@pytest.mark.cuda
def test_foreach_multi_tensor_matches_reference_cuda():
    assert _separable_run("cuda") < 1e-10


def test_koalav_matches_reference(quad10):
    th0 = quad10.start()
    hp = dict(lr=1.0, sigma0=0.1, q=0.1, r=0.5, weight_decay=0.01)
    ref = koala.koalav(th0, quad10.loss, quad10.grad, steps=60, **hp)
    got, opt = run_opt(koala.KoalaV, th0, quad10.loss, quad10.grad, 60, **hp)
    np.testing.assert_allclose(got, ref["theta"][-1], atol=1e-12)
    assert abs(float(opt.state["sigma"]) - ref["sigma"][-1]) < 1e-14


def test_adam_reference_matches_torch(quad10):
    th0 = quad10.start()
    ref = koala.adam(th0, quad10.grad, steps=30, lr=0.1)
    p = torch.nn.Parameter(torch.tensor(th0))
    opt = torch.optim.Adam([p], lr=0.1)
    for k in range(1, 31):
        p.grad = torch.tensor(quad10.grad(p.detach().numpy(), k))
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ref["theta"][-1], atol=1e-12)


# ------------------------------------------------------------------ trusted library


def test_ekf_matches_filterpy():
    from filterpy.kalman import ExtendedKalmanFilter

    prob = koala.NoisyQuadratic(n=5, kappa=20.0, noise=0.0, seed=2)
    th0 = prob.start()
    Q, R, P0 = 0.05, 0.4, 0.3
    ours = koala.ekf_full(th0, prob.loss, prob.grad, P0, Q, R, 25, phantom=False)
    f = ExtendedKalmanFilter(dim_x=5, dim_z=1)
    f.x = th0.reshape(5, 1).copy()
    f.P = P0 * np.eye(5)
    f.F = np.eye(5)
    f.Q = Q * np.eye(5)
    f.R = np.array([[R]])
    for _ in range(25):
        f.predict()
        f.update(
            np.array([[0.0]]),
            HJacobian=lambda x: prob.grad(x.ravel()).reshape(1, 5),
            Hx=lambda x: np.array([[prob.loss(x.ravel())]]),
        )
    np.testing.assert_allclose(f.x.ravel(), ours["theta"][-1], atol=1e-10)
    np.testing.assert_allclose(f.P, ours["P"][-1], atol=1e-10)


# ------------------------------------------------------------------ training sanity


def test_digits_training_sanity_and_determinism():
    a = koala.train_digits("koalapp", epochs=10, seed=0, device="cpu")
    assert a.finite and a.test_acc[-1] >= 0.93
    b = koala.train_digits("koalapp", epochs=2, seed=0, device="cpu")
    np.testing.assert_array_equal(a.train_loss[:3], b.train_loss)


def test_stepwise_callables():
    # a default-valued second parameter is not the step index; a parameter named k is
    ref = koala.ekf_full(
        np.array([1.0]),
        lambda t, a=2.0: 0.5 * a * t[0] ** 2,
        lambda t, a=2.0: a * t,
        0.1,
        0.1,
        0.5,
        3,
        phantom=False,
    )
    ref2 = koala.ekf_full(
        np.array([1.0]), lambda t: t[0] ** 2, lambda t: 2.0 * t, 0.1, 0.1, 0.5, 3, phantom=False
    )
    np.testing.assert_array_equal(ref["theta"], ref2["theta"])
    prob = koala.NoisyQuadratic(n=2, noise=1.0, seed=0)
    a = koala.ekf_full(prob.start(), prob.loss, prob.grad, 0.1, 0.1, 0.5, 3)
    b = koala.ekf_full(
        prob.start(), lambda t, k: prob.loss(t, k), lambda t, k: prob.grad(t, k), 0.1, 0.1, 0.5, 3
    )
    np.testing.assert_array_equal(a["theta"], b["theta"])


# ------------------------------------------------------------------ the house layout


def test_import_is_lazy_and_files_stay_short():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, lab.koala as k; k.koalapp; k.NoisyQuadratic; "
        "assert 'torch' not in sys.modules, 'the numpy reference must not import torch'; "
        "k.KoalaPP; assert 'lab.koala.fast' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    folder = Path(koala.__file__).parent
    for name in ("reference.py", "fast.py", "optim.py", "experiments.py", "figures.py"):
        assert (folder / name).exists(), name
    for f in folder.glob("*.py"):
        assert len(f.read_text().splitlines()) <= 600, f"{f.name} is over 600 lines"


def test_equation_labels_are_blocks_not_paper_numbers():
    """The paper's equation numbering was not read: no module may cite a bare number."""
    import importlib
    import re

    for name in ("", ".reference", ".fast", ".optim", ".experiments"):
        mod = importlib.import_module(f"lab.koala{name}")
        src = open(mod.__file__).read()
        assert not re.search(r"eqs?\. \(?\d", src), f"{mod.__name__} cites an equation number"
        assert not re.search(r"\\tag\{\d", src), f"{mod.__name__} tags an equation with a number"
    ref = open(importlib.import_module("lab.koala.reference").__file__).read()
    page = (Path(__file__).resolve().parents[1] / "book" / "koala" / "index.md").read_text()
    for label in ("koala-ekf", "koala-recursion", "koala-closure", "koala-update"):
        assert label in koala.__doc__, label
    for label in ("koala-ekf", "koala-recursion", "koala-lambda", "koala-closure",
                  "koala-v-update", "koala-update", "koala-init", "koalav"):  # fmt: skip
        assert f"eq. ({label})" in ref, f"reference.py cites ({label})"
        assert f"$$ ({label})" in page, f"the lesson page displays ({label})"


def test_reference_calls_the_v_update(monkeypatch):
    """koalapp runs the recursion through the v update (written once, checked once: the
    walked path calls the unchecked kernel that koalapp_v_update validates for)."""
    from lab.koala import reference

    calls = []
    real = reference._koalapp_v_update

    def counted(*args, **kw):
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(reference, "_koalapp_v_update", counted)
    prob = koala.NoisyQuadratic(n=4, kappa=10.0, seed=1)
    out = koala.koalapp(prob.start(), prob.loss, prob.grad, steps=6, r=0.5)
    assert len(calls) == 6  # phantom start: the recursion runs from the first step
    np.testing.assert_array_equal(out["v"][-1], real(*calls[-1]))
    calls.clear()
    koala.koalapp(prob.start(), prob.loss, prob.grad, steps=6, r=0.5, init="prior")
    assert len(calls) == 5  # prior start: v_1 = sigma0 H_1 without the recursion


# ------------------------------------------------------------------ the pairs and the widget driver


@pytest.mark.parametrize("host_checks", [True, False])
def test_pair_koalapp(quad10, host_checks):
    """reference.koalapp (a whole run on one vector) == fast.koalapp_foreach_ (one in-place step
    on a list of tensors) stepped by hand on the same quadratic, float64."""
    th0 = quad10.start()
    hp = dict(lr=0.8, sigma0=0.1, q=0.1, weight_decay=0.01, symmetric=True, init="phantom")
    ref = koala.koalapp(th0, quad10.loss, quad10.grad, steps=30, r=0.5, **hp)
    p = torch.tensor(th0, dtype=torch.float64)
    state: dict = {}
    for k in range(1, 31):
        th = p.numpy().copy()
        g = torch.tensor(quad10.grad(th, k))
        koala.fast.koalapp_foreach_(
            [p], [g], [state], loss=float(quad10.loss(th, k)), R=0.5, host_checks=host_checks, **hp
        )
        np.testing.assert_allclose(p.numpy(), ref["theta"][k], rtol=0, atol=1e-12)


def test_quadratic_paths_is_memoised_and_drawn():
    from lab.koala import experiments, figures

    experiments.quadratic_paths.clear()
    paths = koala.quadratic_paths(30.0, 0.1, 0.1, 0.5, steps=12)
    assert koala.quadratic_paths(kappa=30.0, steps=12) is paths  # keyed on the bound arguments
    assert set(paths.runs) == set(experiments.PATH_METHODS) and paths.steps == 12
    assert paths.runs["koalapp"]["theta"].shape == (13, 2)
    assert len(figures.quadratic_figure(paths).data) == 9
    with pytest.raises(ValueError, match="kappa"):
        koala.quadratic_paths(0.5)
    with pytest.raises(TypeError, match="paths"):
        figures.quadratic_figure({"runs": {}})


# ------------------------------------------------------------------ counted step cost


def test_op_counter_counts_known_ops_exactly():
    n = 1000
    x, y = torch.ones(n), torch.ones(n)
    with koala.OpCounter() as c:
        x.add_(y)  # reads x and y, writes x: 3 n float32
    assert (c.work, c.bytes, c.ops) == (n, 3 * 4 * n, 1)
    with koala.OpCounter() as c:
        x.view(10, 100).reshape(-1).detach()  # views cost nothing
        torch.dot(x, y)  # 2 flops per entry (flop_counter's convention), reads 2 n, writes 1
        x.copy_(y)  # does not read its destination
    assert c.work == 2 * n + n and c.ops == 2
    assert c.bytes == (2 * 4 * n + 4) + 2 * 4 * n
    assert c.by_op["dot"] == [1, 2 * n, 2 * 4 * n + 4]
    a, b = torch.ones(8, 5, dtype=torch.float64), torch.ones(5, 3, dtype=torch.float64)
    with koala.OpCounter() as c:
        a @ b  # mm: 2 m n k flops
        float(a.sum())  # a reduction counts its input; one value read on the host
    assert c.by_op["mm"][1] == 2 * 8 * 5 * 3 and c.by_op["sum"][1] == 40
    assert c.host_reads == 1


def test_step_counts_adam_is_linear_and_deterministic():
    counts = [koala.step_counts(((64 * k, 64), (64 * k,)), "adam") for k in (1, 2, 3)]
    n = counts[0].parameters
    assert [c.parameters for c in counts] == [n, 2 * n, 3 * n]
    # seven passes per weight, plus the step counter (one 0-d float32 add) per tensor
    assert [c.work for c in counts] == [7 * k * n + 2 for k in (1, 2, 3)]
    assert counts[1].bytes - counts[0].bytes == counts[2].bytes - counts[1].bytes
    assert counts[0].bytes == 19 * 4 * n + 2 * 2 * 4 + 2 * 4  # + step counters, host reads
    again = koala.step_counts(((64, 64), (64,)), "adam")
    assert (again.work, again.bytes, again.ops) == (n * 7 + 2, counts[0].bytes, counts[0].ops)
    assert again.by_op == counts[0].by_op


def test_step_counts_meta_equals_cpu_and_ekf_is_quadratic():
    shapes = ((32, 16), (32,), (4, 32), (4,))
    for name in ("adam", "adam_foreach", "sgd", "koalapp"):
        meta, cpu = koala.step_counts(shapes, name), koala.step_counts(shapes, name, device="cpu")
        # the same arithmetic; KoalaPP's host-side loss check and S <= 0 flag differ on
        # meta by a few per-tensor scalars
        assert abs(meta.work - cpu.work) <= 4 * len(shapes), name
        assert abs(meta.bytes - cpu.bytes) <= 32 * len(shapes), name
    ekf = koala.step_counts(shapes, "ekf")
    assert ekf.work == koala.step_counts(shapes, "ekf", device="cpu").work
    n2 = sum((int(np.prod(s))) ** 2 for s in shapes)
    assert ekf.work >= 4 * n2  # a matrix-vector product and a rank-one update per tensor
    big = koala.step_counts(koala.MLP_1M9, "ekf")  # on meta: nothing allocated
    assert big.work > 1e12
    kp, adam = koala.step_counts(shapes, "koalapp"), koala.step_counts(shapes, "adam")
    assert set(kp.over(adam)) == {"work", "bytes"}


def test_step_counts_bad_input():
    with pytest.raises(TypeError, match="model_or_shapes"):
        koala.step_counts("mlp", "adam")
    with pytest.raises(TypeError, match="model_or_shapes"):
        koala.step_counts((3, 4), "adam")
    with pytest.raises(ValueError, match="model_or_shapes"):
        koala.step_counts((), "adam")
    with pytest.raises(ValueError, match="model_or_shapes"):
        koala.step_counts(((0, 4),), "adam")
    with pytest.raises(ValueError, match="optimizer"):
        koala.step_counts(((4,),), "lbfgs")
    with pytest.raises(TypeError, match="optimizer"):
        koala.step_counts(((4,),), None)
    with pytest.raises(ValueError, match="device"):
        koala.step_counts(((4,),), "adam", device="cuda")
    with pytest.raises(ValueError, match="device"):
        koala.step_counts(((100, 100),), "ekf", device="cpu")
    with pytest.raises(TypeError, match="warmup"):
        koala.step_counts(((4,),), "adam", warmup=1)
    with pytest.raises(TypeError, match="meta_item"):
        koala.OpCounter(meta_item="1")
    with pytest.raises(TypeError, match="other"):
        koala.step_counts(((4,),), "adam").over(3)
    model = torch.nn.Linear(4, 2)
    assert koala.step_counts(model, "sgd").parameters == 10
