"""Tests of lab.koala's optimizers: invariants of KoalaPP/KoalaV, bad input, the fast path
as a function, the drivers, and parity with the authors' code (tests/test_koala.py holds the
reference kernels, the pairs and the house layout)."""

from __future__ import annotations

import copy
import dataclasses
import json

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


# ------------------------------------------------------------------ optimizer invariants


def _mlp(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).to(
        dtype
    )


def _batch(seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(32, 8, generator=g, dtype=dtype), torch.randint(0, 3, (32,), generator=g)


def _train(model, opt, steps, start=0):
    for k in range(start, start + steps):
        x, y = _batch(k)
        opt.zero_grad()
        per = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
        per.mean().backward()
        opt.step_with_loss(per.mean().detach(), (per.detach() ** 2).mean())


def test_foreach_equals_loop_on_mlp():
    outs = []
    for foreach in (True, False):
        model = _mlp()
        _train(model, koala.KoalaPP(model.parameters(), foreach=foreach, weight_decay=5e-4), 30)
        outs.append(torch.cat([p.detach().ravel() for p in model.parameters()]))
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=1e-12)


def test_foreach_equals_loop_with_skipped_late_and_low_precision_tensors():
    """The multi-tensor path's host-side cases: a tensor skipped by the skip rule, one that
    gets its first gradient late (phantom start mid-run), weight decay, and bfloat16 weights
    (computed in float32) agree with the per-tensor loop."""
    for dtype, tol in ((torch.float64, 1e-12), (torch.bfloat16, 0.0)):
        outs = []
        for foreach in (True, False):
            g = torch.Generator().manual_seed(3)
            params = [torch.nn.Parameter(torch.randn(s, generator=g).to(dtype)) for s in SHAPES]
            opt = koala.KoalaPP(params, foreach=foreach, weight_decay=1e-3, r=0.5, init="prior")
            for k in range(12):
                for i, p in enumerate(params):
                    grad = torch.randn(p.shape, generator=g).to(dtype) * 0.1
                    if i == 1 and k % 3 == 0:
                        grad.zero_()  # skipped this step
                    p.grad = None if (i == 2 and k < 5) else grad  # tensor 2 starts late
                opt.step_with_loss(0.5 / (1 + k))
            outs.append(torch.cat([p.detach().double().ravel() for p in params]))
        assert torch.isfinite(outs[0]).all()
        torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=tol)


SHAPES = [(4, 3), (5,), (2, 3)]


def test_state_shapes_grad_untouched_and_state_dict_roundtrip():
    model = _mlp()
    opt = koala.KoalaPP(model.parameters())
    _train(model, opt, 5)
    for p in model.parameters():
        st = opt.state[p]
        assert st["v"].shape == (p.numel(),) and st["h_prev"].shape == (p.numel(),)
    x, y = _batch(99)
    opt.zero_grad()
    per = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
    per.mean().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    opt.step_with_loss(per.mean().detach(), (per.detach() ** 2).mean())
    for g, p in zip(grads, model.parameters(), strict=True):
        assert torch.equal(g, p.grad)
    # continuation from a state_dict is bit-identical
    model2 = copy.deepcopy(model)
    opt2 = koala.KoalaPP(model2.parameters())
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    _train(model, opt, 5, start=10)
    _train(model2, opt2, 5, start=10)
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_closure_api_equals_explicit():
    m1, m2 = _mlp(), _mlp()
    o1, o2 = koala.KoalaPP(m1.parameters()), koala.KoalaPP(m2.parameters())
    _train(m1, o1, 3)
    for k in range(3):
        x, y = _batch(k)

        def closure(x=x, y=y):
            o2.zero_grad()
            per = torch.nn.functional.cross_entropy(m2(x), y, reduction="none")
            per.mean().backward()
            return per.mean(), per

        o2.step(closure)
    for a, b in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_nonpositive_s_raises_on_cpu():
    # sigma0 = 1, Q = 1e-3: the least-squares closure loses positivity at step 21
    prob = koala.NoisyQuadratic(n=10, kappa=100.0, seed=0)
    with pytest.raises(FloatingPointError, match="S_k"):
        run_opt(koala.KoalaPP, prob.start(), prob.loss, prob.grad, 40, sigma0=1.0, q=1e-3, r=0.5)
    with pytest.raises(FloatingPointError, match="S_k"):
        koala.koalapp(prob.start(), prob.loss, prob.grad, steps=40, sigma0=1.0, q=1e-3, r=0.5)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"lr": 0.0}, "lr"),
        ({"q": -0.1}, "q"),
        ({"sigma0": -1.0}, "sigma0"),
        ({"alpha_r": 1.0}, "alpha_r"),
        ({"init": "zero"}, "init"),
    ],
)
def test_bad_hyperparameters(kw, match):
    with pytest.raises(ValueError, match=match):
        koala.KoalaPP(_mlp().parameters(), **kw)


def test_bad_calls():
    model = _mlp()
    opt = koala.KoalaPP(model.parameters())
    with pytest.raises(TypeError, match="step_with_loss"):
        opt.step()
    x, y = _batch()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    with pytest.raises(TypeError, match="loss_sq_mean"):
        opt.step_with_loss(1.0)
    with pytest.raises(FloatingPointError, match="non-finite"):
        opt.step_with_loss(float("nan"), 1.0)
    before = [p.detach().clone() for p in model.parameters()]
    skip = koala.KoalaPP(model.parameters(), skip_nonfinite=True)
    skip.step_with_loss(float("inf"), 1.0)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    emb = torch.nn.Embedding(10, 3, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(NotImplementedError, match="sparse"):
        koala.KoalaPP(emb.parameters(), r=1.0).step_with_loss(1.0)
    with pytest.raises(ValueError, match="kappa"):
        koala.NoisyQuadratic(kappa=0.5)
    with pytest.raises(ValueError, match="method"):
        koala.run_quadratic(koala.NoisyQuadratic(n=2), "lbfgs")
    with pytest.raises(ValueError, match="optimizer"):
        koala.train_digits("rmsprop")
    with pytest.raises(ValueError, match="h_prev must be nonzero"):
        koala.koalapp_v_update(np.ones(2), np.zeros(2), np.ones(2), 1.0, 0.1)


def test_skip_rule_keeps_state():
    p = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = koala.KoalaPP([p], r=1.0)
    p.grad = torch.full((3,), 1e-12, dtype=torch.float64)
    opt.step_with_loss(1.0)
    assert torch.equal(p.detach(), torch.ones(3, dtype=torch.float64))
    assert float(opt.state[p]["initialized"]) == 0.0


# ------------------------------------------------------------------ the fast path as a function


def test_foreach_function_fills_fresh_states_and_equals_the_optimizer():
    """koalapp_foreach_ called by hand (fresh dict states, float loss and R, autograd on)
    takes the optimizer's steps, on both of its code paths."""
    shapes = [(3, 2), (4,)]
    for host_checks in (None, False):
        g = torch.Generator().manual_seed(0)
        a = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=torch.float64)) for s in shapes]
        b = [torch.nn.Parameter(p.detach().clone()) for p in a]
        opt = koala.KoalaPP(b, r=0.5, weight_decay=1e-3, foreach=True)
        states = [{} for _ in a]
        for k in range(8):
            grads = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
            for p, gr in zip(b, grads, strict=True):
                p.grad = gr.clone()
            opt.step_with_loss(1.0 / (1 + k))
            koala.koalapp_foreach_(
                a, grads, states, loss=1.0 / (1 + k), R=0.5, lr=1.0, sigma0=0.1, q=0.1,
                weight_decay=1e-3, host_checks=host_checks,
            )  # fmt: skip
        for p, q in zip(a, b, strict=True):
            torch.testing.assert_close(p.detach(), q.detach(), rtol=0, atol=1e-12)
        assert sorted(states[0]) == sorted(koala.init_state(a[0]))


@pytest.mark.parametrize(
    "change,error,match",
    [
        ({"params": "junk"}, TypeError, "params must be a list"),
        ({"params": []}, ValueError, "non-empty"),
        ({"grads": [torch.zeros(4), torch.zeros(4)]}, ValueError, "equal length"),
        ({"grads": [torch.zeros(3)]}, ValueError, "shape"),
        ({"states": [{"v": torch.zeros(4)}]}, ValueError, "lacks"),
        ({"states": ["junk"]}, TypeError, "states\\[0\\]"),
        ({"loss": "junk"}, TypeError, "loss"),
        ({"R": torch.ones(2)}, ValueError, "R must be a scalar"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"q": float("nan")}, ValueError, "q"),
        ({"init": "zero"}, ValueError, "init"),
    ],
)
def test_foreach_function_bad_input(change, error, match):
    p = torch.nn.Parameter(torch.ones(4))
    kw = dict(params=[p], grads=[torch.ones(4)], states=[{}], loss=1.0, R=1.0, lr=1.0)
    kw.update(sigma0=0.1, q=0.1)
    kw.update(change)
    with pytest.raises(error, match=match):
        koala.koalapp_foreach_(kw.pop("params"), kw.pop("grads"), kw.pop("states"), **kw)


def test_tracking_error_bad_input():
    run = koala.run_quadratic(koala.NoisyQuadratic(n=2), "koalapp", steps=5)
    with pytest.raises(TypeError, match="run dict"):
        koala.tracking_error(np.array([]), run)
    with pytest.raises(ValueError, match="no 'theta'"):
        koala.tracking_error(run, {"v": run["theta"]})
    with pytest.raises(ValueError, match="one shape"):
        koala.tracking_error(run, {"theta": run["theta"][:3]})
    assert koala.tracking_error(run, run).shape == (6,)


def test_train_digits_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    run = koala.train_digits("koalapp", epochs=1, seed=0, device="cpu")
    assert torch.equal(before, torch.random.get_rng_state())
    assert run.finite and run.test_acc.shape == (2,)


def test_step_times_and_final_accuracies_drivers():
    st = koala.step_times(((8, 4), (4,)), optimizers=("adam", "adam_foreach", "koalapp"), blocks=2)
    assert st.parameters == 36 and set(st.seconds) == {"adam", "adam_foreach", "koalapp"}
    assert all(v > 0 for v in st.seconds.values())
    assert st.ratio("koalapp") == st.seconds["koalapp"] / st.seconds["adam"]
    with pytest.raises(ValueError, match="optimizers"):
        koala.step_times(optimizers=("lbfgs",))
    with pytest.raises(ValueError, match="shapes"):
        koala.step_times(())
    fake = koala.TrainRun(
        "sgd", 0.1, np.ones(2), np.array([0.1, 0.5]), 0.0, 0.0, np.ones((1, 4)), 1, 0.0
    )
    accs = koala.final_accuracies(("sgd",), (0,), known={("sgd", 0): fake})  # no training
    np.testing.assert_array_equal(accs["sgd"], [0.5])
    with pytest.raises(ValueError, match="optimizer"):
        koala.final_accuracies(("rmsprop",))
    with pytest.raises(TypeError, match="seeds"):
        koala.final_accuracies(("sgd",), seeds=3)


def test_state_floats_counts_two_buffers_per_weight_like_adam():
    model = _mlp()
    n = sum(p.numel() for p in model.parameters())
    kp, adam = koala.KoalaPP(model.parameters()), torch.optim.Adam(model.parameters())
    _train(model, kp, 1)
    adam.step()
    assert koala.state_floats(kp) == 2 * n + 2 * 4 + 1  # v, h_prev; S, flag per tensor; R
    assert koala.state_floats(adam) == 2 * n + 4  # exp_avg, exp_avg_sq; step per tensor
    with pytest.raises(TypeError, match="Optimizer"):
        koala.state_floats("adam")


def test_default_path_on_cpu_follows_the_mean_tensor_size(monkeypatch):
    """foreach=None on CPU: the multi-tensor path for groups of small tensors (per-call overhead
    dominates), the per-tensor loop for groups of large ones (measured in bench_koala)."""
    from lab.koala import optim

    calls = []
    multi, loop = optim.koalapp_foreach_, optim.koalapp_loop_
    monkeypatch.setattr(
        optim, "koalapp_foreach_", lambda *a, **k: calls.append("multi") or multi(*a, **k)
    )
    monkeypatch.setattr(
        optim, "koalapp_loop_", lambda *a, **k: calls.append("loop") or loop(*a, **k)
    )
    cap = optim.FOREACH_MAX_MEAN_NUMEL
    for numels, expected in (
        ((64, 4096), "multi"),
        ((cap, cap), "multi"),
        ((cap + 1, cap + 1), "loop"),
    ):
        params = [torch.nn.Parameter(torch.zeros(n)) for n in numels]
        for p in params:
            p.grad = torch.full_like(p, 0.01)
        calls.clear()
        koala.KoalaPP(params, r=0.5).step_with_loss(0.5)
        assert calls == [expected], (numels, calls)


# ---------------------------------------------------------------------------------------------
# Parity with the authors' code (lab/core/official/koala_official.json)
# ---------------------------------------------------------------------------------------------
OFFICIAL = koala.OFFICIAL_FIXTURE


def test_official_fixture_has_its_provenance():
    data = json.loads(OFFICIAL.read_text())
    prov = data["provenance"]
    assert prov["repository"] == "Sumxiaa/KOALA_Plus_Plus" and len(prov["commit"]) == 40
    for key in ("files", "functions", "command", "versions", "protocol"):
        assert prov[key], key
    assert {c["optimizer"] for c in data["cases"]} == {"KOALAPlusPlus", "VanillaKOALA"}


def test_koalapp_reproduces_the_official_update():
    """Our KoalaPP takes the authors' KOALAPlusPlus.update steps: both closures, with and
    without weight decay, 8 steps of a 5-4-3 MLP in float64; tolerance 1e-12 (measured 4e-16)."""
    parity = koala.official_parity(OFFICIAL)
    kpp = {k: v for k, v in parity.items() if k.startswith("KOALAPlusPlus")}
    assert len(kpp) == 4
    for name, errors in kpp.items():
        assert errors.shape == (8,) and errors.max() < 1e-12, (name, errors)


def test_koalav_matches_the_official_first_step_only():
    """KOALA-V: the same first step (tolerance 1e-12); the authors' covariance update divides
    max ||H||^4 (not ||H||^2) by S, so later steps differ (a listed deviation)."""
    errors = koala.official_parity(OFFICIAL)["VanillaKOALA wd=0"]
    assert errors[0] < 1e-12 and errors[-1] > 1e-6
    # the authors' sigma after step 1 is sigma_hat - sigma_hat^2 max_l ||H_l||^4 / S_l
    data = json.loads(OFFICIAL.read_text())
    case = next(c for c in data["cases"] if c["optimizer"] == "VanillaKOALA")
    inst = data["instance"]
    shapes = [(4, 5), (4,), (3, 4), (3,)]
    ps = [torch.tensor(a, dtype=torch.float64).reshape(s).requires_grad_() for a, s in
          zip(inst["init"], shapes, strict=True)]  # fmt: skip
    X = torch.tensor(inst["X"], dtype=torch.float64)
    y = torch.tensor(inst["y"])
    b = inst["batch"]
    per = torch.nn.functional.cross_entropy(
        torch.tanh(X[:b] @ ps[0].T + ps[1]) @ ps[2].T + ps[3], y[:b], reduction="none"
    )
    per.mean().backward()
    r = 0.9 * 1.0 + 0.1 * float((per.detach() ** 2).mean())
    sigma_hat = case["sigma"] + case["q"]
    hh = np.array([float((p.grad**2).sum()) for p in ps])
    official = sigma_hat - sigma_hat**2 * np.max(hh**2 / (sigma_hat * hh + r))
    ours = sigma_hat - sigma_hat**2 * np.max(hh / (sigma_hat * hh + r))
    assert case["params"][0]["sigma"] == pytest.approx(official, rel=1e-12)
    assert abs(ours - official) > 1e-3


def test_official_parity_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError, match="path"):
        koala.official_parity(3)
    with pytest.raises(FileNotFoundError):
        koala.official_parity(tmp_path / "missing.json")


def test_seed_runs_and_the_authors_settings():
    fake = koala.TrainRun(
        "sgd", 0.1, np.ones(2), np.array([0.1, 0.5]), 0.0, 0.0, np.ones((1, 4)), 1, 0.0
    )
    assert koala.seed_runs("sgd", (0,), known={0: fake}) == [fake]  # no training
    with pytest.raises(ValueError, match="optimizer"):
        koala.seed_runs("rmsprop")
    with pytest.raises(TypeError, match="seeds"):
        koala.seed_runs("sgd", seeds=3)
    with pytest.raises(ValueError, match="seeds"):
        koala.seed_runs("sgd", seeds=())
    assert koala.DEFAULT_SETTINGS["koalav"] == {
        "lr": 0.1, "sigma0": 0.1, "q": 1.0, "weight_decay": 5e-4
    }  # fmt: skip
    assert koala.DEFAULT_SETTINGS["koalapp"]["weight_decay"] == 5e-4
    with pytest.raises(ValueError, match="momentum"):
        koala.train_digits("adam", momentum=0.5)
    with pytest.raises(ValueError, match="momentum"):
        koala.train_digits("sgd", momentum=1.0)


def test_train_digits_passes_weight_decay_to_koalav():
    a = koala.train_digits("koalav", epochs=1, seed=0, device="cpu", weight_decay=0.0)
    b = koala.train_digits("koalav", epochs=1, seed=0, device="cpu")  # the authors' 5e-4
    assert not np.array_equal(a.train_loss, b.train_loss)


def test_step_times_ekf_is_dense_and_bounded():
    st = koala.step_times(((8, 4),), optimizers=("adam", "ekf"), blocks=1, steps=1)
    assert st.seconds["ekf"] > 0
    with pytest.raises(ValueError, match="ekf"):
        koala.step_times(((100, 100),), optimizers=("ekf",))


def test_batched_seed_runs_are_the_runs_of_one_seed():
    """seed_runs(batched=True) (every seed's network in one batch) gives each seed the run
    train_digits gives it: float64, to rounding (the batched products add in another order),
    the learning-rate drop included."""
    cases = (
        ("koalav", {"lr_drop_epoch": 2}),
        ("koalapp", {"lr_drop_epoch": 2}),
        ("koalapp_vanilla", {"r": 1.0}),
        ("sgd", {"momentum": 0.0}),
        ("adam", {}),
    )
    for name, kw in cases:
        many = koala.seed_runs(name, (0, 3), epochs=2, batched=True, dtype="float64", **kw)
        for s, run in zip((0, 3), many, strict=True):
            one = koala.train_digits(name, epochs=2, seed=s, dtype="float64", **kw)
            np.testing.assert_allclose(run.train_loss, one.train_loss, rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(run.test_acc, one.test_acc, atol=1e-7, err_msg=name)
            np.testing.assert_allclose(run.step_size, one.step_size, rtol=1e-10, err_msg=name)
            assert run.finite and run.steps == one.steps and run.optimizer == name


def test_batched_seed_runs_validate():
    with pytest.raises(ValueError, match="optimizer"):
        koala.seed_runs("rmsprop", (0, 1), batched=True)
    with pytest.raises(ValueError, match="momentum"):
        koala.seed_runs("adam", (0, 1), batched=True, momentum=0.5)
    with pytest.raises(ValueError, match="seeds"):
        koala.seed_runs("koalav", (1, 1), batched=True)
    with pytest.raises(ValueError, match="known"):
        koala.seed_runs("koalav", (0, 1), batched=True, known={0: None})
    with pytest.raises(TypeError, match="batched"):
        koala.seed_runs("koalav", (0, 1), batched="yes")
    with pytest.raises(ValueError, match="lr"):
        koala.seed_runs("koalapp", (0, 1), batched=True, lr=-1.0)
    with pytest.raises(TypeError, match="seeds"):
        koala.experiments.train_digits_seeds("koalav", 3)


def test_digits_settings_are_checked_once_and_resolve_to_one_key():
    s = koala.DigitsSettings("koalapp", epochs=3)
    assert s.resolved() == koala.DigitsSettings("koalapp", epochs=3, lr=1.0, q=0.1).resolved()
    assert s.hp["weight_decay"] == 5e-4 and koala.DigitsSettings("adam").hp["weight_decay"] == 0
    with pytest.raises(ValueError, match="optimizer"):
        koala.DigitsSettings("rmsprop")
    with pytest.raises(ValueError, match="epochs"):
        koala.DigitsSettings("sgd", epochs=0)
    with pytest.raises(ValueError, match="lr_drop_epoch"):
        koala.DigitsSettings("sgd", epochs=3, lr_drop_epoch=4)
    with pytest.raises(TypeError, match="settings"):
        koala.train_digits(s, epochs=2)  # a settings object or keyword settings, not both
    with pytest.raises(TypeError, match="settings"):
        koala.train_digits(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 4


def test_figures_take_results_only():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(koala.figures.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {f"lab.koala.{m}" for m in ("experiments", "training", "batched",
                                                       "reference", "fast", "optim")}  # fmt: skip
