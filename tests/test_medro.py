"""Tests of lab.medro: risk matrix (fast vs reference), the adversary, steps, inference, convex case."""

import numpy as np
import pytest
import torch

import lab
from lab import medro

torch.set_num_threads(1)  # tiny models: per-op overhead dominates, threads only contend


def _model(m=3, seed=0, dtype=torch.float32, in_dim=8):
    torch.manual_seed(seed)
    return medro.MultiHeadNet(medro.make_featurizer(in_dim, 16, 6), 6, 2, m).to(dtype)


def _envs(m=3, n=40, seed=0, dtype=torch.float32):
    th = np.linspace(-0.6, 0.6, m) if m > 1 else [0.0]
    return medro.make_rotated_spurious_envs(n, [0.8] * m, th, seed=seed, dtype=dtype)


def test_data_shapes_and_determinism():
    a, b = _envs(seed=3), _envs(seed=3)
    assert len(a) == 3 and a[0][0].shape == (40, 8) and a[0][1].dtype == torch.long
    for (x1, y1), (x2, y2) in zip(a, b, strict=True):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)


def test_risk_matrix_fast_matches_reference_values_and_grads():
    model = _model(dtype=torch.float64)
    envs = [(x, y) for x, y in _envs(n=[30, 50, 20][0], dtype=torch.float64)]
    envs[1] = (envs[1][0][:17], envs[1][1][:17])  # unequal sizes
    fast = medro.risk_matrix(model, envs)
    ref = medro.risk_matrix_reference(model, envs)
    assert torch.allclose(fast, ref, atol=1e-12)
    g1 = torch.autograd.grad(fast.sum() + fast[0, 2], list(model.parameters()))
    g2 = torch.autograd.grad(ref.sum() + ref[0, 2], list(model.parameters()))
    for a, b in zip(g1, g2, strict=True):
        assert torch.allclose(a, b, atol=1e-10)


def test_heads_einsum_matches_loop():
    model = _model(m=4)
    z = torch.randn(9, 6)
    assert torch.allclose(model.head_logits(z), model.head_logits_reference(z), atol=1e-6)
    assert model(torch.randn(9, 8)).shape == (4, 9, 2)


def test_update_pair_weights_properties():
    torch.manual_seed(0)
    q = torch.softmax(torch.randn(9, dtype=torch.float64), 0).reshape(3, 3)
    R = torch.rand(3, 3, dtype=torch.float64)
    new = medro.update_pair_weights(q, R, 0.3)
    assert abs(float(new.sum()) - 1) < 1e-12 and torch.all(new > 0)
    ref = q * torch.exp(0.3 * R)
    assert torch.allclose(new, ref / ref.sum(), atol=1e-14)
    assert torch.allclose(medro.update_pair_weights(q, R, 0.0), q, atol=1e-15)
    assert torch.allclose(medro.update_pair_weights(q, torch.full_like(R, 2.0), 5.0), q, atol=1e-14)
    assert torch.allclose(medro.update_pair_weights(q, R + 7.0, 0.3), new, atol=1e-14)
    big = medro.update_pair_weights(q, R, 1e3)  # no overflow: log domain
    assert torch.isfinite(big).all() and big.reshape(-1)[R.argmax()] > 0.99


def test_permuting_environments_permutes_columns():
    model = _model(dtype=torch.float64)
    envs = _envs(dtype=torch.float64)
    perm = [2, 0, 1]
    R = medro.risk_matrix(model, envs)
    Rp = medro.risk_matrix(model, [envs[i] for i in perm])
    assert torch.allclose(Rp, R[:, perm], atol=1e-12)
    q = torch.full((3, 3), 1 / 9, dtype=torch.float64)
    assert torch.allclose(
        medro.update_pair_weights(q, Rp, 0.5), medro.update_pair_weights(q, R, 0.5)[:, perm]
    )


def test_one_head_medro_equals_groupdro():
    envs = [_envs(m=1, seed=s)[0] for s in range(1)]
    m1, m2 = _model(m=1, seed=5), _model(m=1, seed=5)
    o1 = torch.optim.SGD(m1.parameters(), lr=0.1)
    o2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    q1, q2 = torch.ones(1, 1), torch.ones(1)
    for _ in range(10):
        q1, _ = medro.medro_step(m1, envs, q1, o1, 0.5)
        q2, _ = medro.groupdro_step(m2, envs, q2, o2, 0.5)
    for a, b in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_identical_heads_worst_pair_equals_groupdro_worst_env():
    model = _model(m=3)
    with torch.no_grad():
        model.weight[1:] = model.weight[0]
        model.bias[1:] = model.bias[0]
    single = medro.MultiHeadNet(model.featurizer, 6, 2, 1)
    with torch.no_grad():
        single.weight[:] = model.weight[:1]
        single.bias[:] = model.bias[:1]
    envs = _envs()
    R = medro.risk_matrix(model, envs)
    worst = float(medro.risk_matrix(single, envs).detach().max())
    assert abs(float(R.detach().max()) - worst) < 1e-6


def test_medro_step_keeps_simplex_and_detaches_q():
    model = _model()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    q = torch.full((3, 3), 1 / 9)
    for _ in range(5):
        q, info = medro.medro_step(model, _envs(), q, opt, 0.1, alpha=0.5)
        assert not q.requires_grad and abs(float(q.sum()) - 1) < 1e-6
    assert info["R"].shape == (3, 3)


def test_groupdro_ensemble_rows_on_simplex():
    model = _model()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    q = torch.full((3, 3), 1 / 3)
    q, _ = medro.groupdro_step(model, _envs(), q, opt, 0.5)
    assert torch.allclose(q.sum(1), torch.ones(3), atol=1e-6)


def test_predict_modes_and_gate():
    model = _model()
    x = _envs()[0][0]
    ens = medro.predict(model, x, "ensemble")
    assert torch.allclose(ens.sum(1), torch.ones(len(x)), atol=1e-6)
    logits = model(x).detach()
    uniform = torch.full((len(x), 3), 1 / 3)
    assert torch.allclose(medro.gated_predict(logits, uniform), ens, atol=1e-6)
    one_hot = torch.zeros(len(x), 3)
    one_hot[:, 2] = 1
    assert torch.allclose(
        medro.gated_predict(logits, one_hot), medro.predict(model, x, "oracle", env=2), atol=1e-6
    )
    gate = medro.train_gate(model, _envs(n=100), steps=100)
    g = gate(x)
    assert g.shape == (len(x), 3) and torch.allclose(g.sum(1), torch.ones(len(x)), atol=1e-6)


def test_gate_identifies_environments_on_toy():
    lab.seed(0)
    envs = medro.make_rotated_spurious_envs(300, [0.9, 0.8, 0.7], [-0.6, 0.0, 0.6], seed=1)
    res = medro.fit(envs, "medro", steps=60, batch=64)
    gate = medro.train_gate(res.model, envs, steps=300)
    x = torch.cat([e[0] for e in envs])
    lab_e = torch.repeat_interleave(torch.arange(3), 300)
    assert float((gate(x).argmax(1) == lab_e).float().mean()) > 0.9


def test_fit_deterministic_and_records():
    envs = _envs(n=100)
    a = medro.fit(envs, "medro", steps=20, record_every=5, seed=1)
    b = medro.fit(envs, "medro", steps=20, record_every=5, seed=1)
    assert np.array_equal(a.R, b.R) and a.R.shape == (5, 3, 3) and a.q.shape == (5, 3, 3)
    for meth, heads in [("erm", 1), ("groupdro", 1), ("groupdro_ensemble", 3)]:
        assert medro.fit(envs, meth, steps=3).model.n_heads == heads


def _convex_case(n=120):
    rng = np.random.default_rng(0)
    envs = medro.make_rotated_spurious_envs(
        n, [0.9, 0.8, 0.7], [-0.6, 0, 0.6], seed=0, dtype=torch.float64
    )
    proj = rng.standard_normal((8, 10))
    feats = [np.maximum(x.numpy() @ proj, 0) for x, _ in envs]
    labs = [2.0 * y.numpy() - 1 for _, y in envs]
    return feats, labs


def test_convex_minmax_matches_cvxpy():
    pytest.importorskip("cvxpy")
    feats, labs = _convex_case()
    value, w = medro.solve_convex_minmax(feats, labs, 3, 1e-2)
    prob, *_ = medro.convex_minmax_problem(feats, labs, 3, 1e-2)
    prob.solve(solver="CLARABEL")
    assert abs(value - prob.value) < 1e-5
    assert abs(medro.convex_risks(w, feats, labs, 1e-2).max() - value) < 1e-12
    # frozen features: the m-head value equals the one-head (GroupDRO) value
    assert abs(medro.solve_convex_minmax(feats, labs, 1, 1e-2)[0] - value) < 1e-9


@pytest.mark.parametrize(
    "call",
    [
        lambda: medro.medro_step(_model(), _envs()[:2], torch.ones(3, 3) / 9, None),
        lambda: medro.risk_matrix(
            _model(), [(torch.zeros(0, 8), torch.zeros(0, dtype=torch.long))]
        ),
        lambda: medro.update_pair_weights(torch.ones(3) / 3, torch.ones(3), -0.1),
        lambda: medro.medro_step(
            _model(),
            _envs(),
            torch.ones(3, 3) / 9,
            torch.optim.SGD(_model().parameters(), 0.1),
            0.1,
            -1.0,
        ),
        lambda: medro.predict(_model(), torch.zeros(2, 8), "gate"),
        lambda: medro.predict(_model(), torch.zeros(2, 8), "oracle"),
        lambda: medro.predict(_model(), torch.zeros(2, 8), "vote"),
        lambda: medro.risk_matrix(_model(), [(torch.zeros(2, 8), torch.tensor([0, 2]))]),
        lambda: medro.make_rotated_spurious_envs(10, [0.5, 1.2], [0.0, 0.1]),
        lambda: medro.make_rotated_spurious_envs(10, [0.5], [0.0, 0.1]),
        lambda: medro.fit(_envs(), "irm"),
        lambda: medro.solve_convex_minmax(*_convex_case(10), 3, 0.0),
    ],
)
def test_bad_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_type_errors():
    with pytest.raises(TypeError):
        medro.MultiHeadNet("not a module", 4, 2, 2)
    with pytest.raises(TypeError):
        medro.risk_matrix(object(), _envs())


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    model = _model(dtype=torch.float64)
    envs = _envs(dtype=torch.float64)
    cpu = medro.risk_matrix(model, envs)
    gpu = medro.risk_matrix(model.cuda(), [(x.cuda(), y.cuda()) for x, y in envs])
    assert torch.allclose(cpu, gpu.cpu(), atol=1e-10)
