"""Tests of lab.halo's training pieces: HALO linear layers, the fine-tuning and pre-training
drivers, the low-precision all-gather on two gloo processes, and the CUDA paths (marked).

The kernels (Hadamard, formats, rotations, triton), the official-code parity and the
reference/fast pairs are in tests/test_halo.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lab import halo
from lab.halo import experiments, hqfsdp, models
from lab.halo.settings import FinetuneSettings, PretrainSettings

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------
# HaloLinear
# ------------------------------------------------------------------------------------------
def _grads(layer, x, g):
    x = x.clone().requires_grad_(True)
    y = layer(x)
    gx, gw, gb = torch.autograd.grad(y, (x, layer.weight, layer.bias), g)
    return y, gx, gw, gb


@pytest.mark.parametrize("level", [0, 1, 2])
def test_halolinear_exact_without_quantization(level):
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 24)
    h = halo.HaloLinear.from_linear(lin, level=level, fmt=None)
    assert h.weight is lin.weight
    x, g = torch.randn(3, 5, 64), torch.randn(3, 5, 24)  # 15 tokens: padded to 16 for HALO-2
    for a, b in zip(_grads(lin, x, g), _grads(h, x, g), strict=True):
        assert (a - b).abs().max() < 1e-5


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("gran", ["tensor", "row", "block32"])
def test_halolinear_int8_close(level, gran):
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32)
    h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8", granularity=gran)
    x, g = torch.randn(16, 64), torch.randn(16, 32)
    for a, b in zip(_grads(lin, x, g), _grads(h, x, g), strict=True):
        assert torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), 0) > 0.999


def test_halolinear_levels_follow_outliers():
    """HALO-2 protects E_X from token outliers where HALO-1 does not."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 256, bias=False, dtype=torch.float64)
    x = torch.randn(128, 256, dtype=torch.float64)
    g = torch.randn(128, 256, dtype=torch.float64)
    g[:2] *= 300  # token outliers in E_Y
    exact = g @ lin.weight
    err = {}
    for level in (1, 2):
        h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8")
        xx = x.clone().requires_grad_(True)
        (gx,) = torch.autograd.grad(h(xx), xx, g)
        err[level] = halo.row_relative_error(gx, exact)
    assert err[1] > 0.5 and err[2] < 0.3


def test_halo2_padding_is_exact():
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 8, dtype=torch.float64)
    h = halo.HaloLinear.from_linear(lin, level=2, fmt=None)
    x, g = torch.randn(7, 32, dtype=torch.float64), torch.randn(7, 8, dtype=torch.float64)
    _, gx, gw, _ = _grads(h, x, g)
    assert (gx - g @ lin.weight).abs().max() < 1e-12
    assert (gw - g.T @ x).abs().max() < 1e-12


def test_halolinear_saves_one_byte_per_activation():
    lin = torch.nn.Linear(256, 128)
    sizes = []

    def pack(t):
        sizes.append(t.numel() * t.element_size())
        return t

    x = torch.randn(64, 256, requires_grad=True)
    for save in (True, False):
        sizes.clear()
        h = halo.HaloLinear.from_linear(lin, level=1, fmt="int8", save_quantized=save)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = h(x)
        y.sum().backward()
        if save:
            # Q(XH): 1 byte per element of X, plus Q(WH) (1 byte per weight) and two scales
            assert sum(sizes) <= x.numel() + lin.weight.numel() + 64
        else:
            assert sum(sizes) >= 4 * x.numel()


def _gain_mlp():
    from collections import OrderedDict

    torch.manual_seed(0)
    return torch.nn.Sequential(OrderedDict(
        fc1=torch.nn.Linear(16, 32), act1=torch.nn.ReLU(), gain=halo.ChannelGain(32),
        fc2=torch.nn.Linear(32, 8), act2=torch.nn.ReLU(), classifier=torch.nn.Linear(8, 4),
    ))  # fmt: skip


@pytest.mark.parametrize(("fmt", "k"), [("fp6_e2m3", 4096), ("fp6_e3m2", 256), ("fp8_e4m3", 64)])
def test_qmatmul_minifloat_accumulation_is_exact(fmt, k):
    """FP6 E2M3 codes accumulate in float32 (every partial sum an integer count of 1/64
    below 2^24 for k < 4660): bit for bit the float64 accumulation; the others in float64."""
    g = torch.Generator().manual_seed(3)
    a = torch.randn(9, k, generator=g) * torch.logspace(0, 2, k)
    qa, qb = halo.quantize(a, fmt), halo.quantize(torch.randn(7, k, generator=g), fmt)
    acc = qa.values(torch.float64) @ qb.values(torch.float64).T
    assert torch.equal(halo.qmatmul(qa, qb), acc.to(torch.float32) * qa.scale * qb.scale)


def test_halo_wrap_and_inject():
    model = _gain_mlp()
    x = torch.randn(10, 16)
    y0 = model(x)
    w1, w2 = model.fc1.weight.detach().clone(), model.fc2.weight.detach().clone()
    halo.inject_massive_activations(model, 0, [0, 3], 300.0)
    assert (model(x) - y0).abs().max() < 1e-4  # the function is unchanged
    assert torch.equal(model.fc1.weight, w1)  # no weight outlier in the layer before the gain
    assert torch.allclose(model.fc2.weight[:, [0, 3]], w2[:, [0, 3]] / 300.0)  # folded out
    h = model.gain(torch.relu(model.fc1(x)))
    assert torch.allclose(h[:, [0, 3]], 300.0 * torch.relu(x @ w1.T + model.fc1.bias)[:, [0, 3]])
    assert "gain.gain" in dict(model.named_buffers())  # a fixed buffer, not a parameter
    params = list(model.parameters())
    halo.halo_wrap(model, {"level": 1, "fmt": None}, exclude=("classifier",))
    kinds = [type(m).__name__ for m in model]
    assert kinds[0] == kinds[3] == "HaloLinear" and kinds[5] == "Linear"
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert (model(x) - y0).abs().max() < 1e-4
    only = halo.halo_wrap(_gain_mlp(), {"level": 1, "fmt": None}, include=("fc1",))
    assert [type(m).__name__ for m in only][0::3] == ["HaloLinear", "Linear"]
    with pytest.raises(TypeError, match="exclude"):
        halo.halo_wrap(_gain_mlp(), exclude="classifier")


def _nonzero_code_shares(model, level):
    """Share of nonzero INT8 codes of each quantized weight (``Q(WH)`` at levels 1, 2)."""
    out = []
    for m in model.modules():
        if isinstance(m, halo.HaloLinear):
            W = m.weight.detach()
            W = halo.fwht(W, dim=1) if level else W
            out.append(float((halo.quantize(W, "int8").codes != 0).float().mean()))
    return out


def test_injected_model_int8_weight_codes_are_not_degenerate():
    """The injected massive channels live in the activations: every quantized weight keeps
    non-degenerate INT8 codes at every level. The old injection (rows of the first weight
    multiplied by S) fails this check: its Q(W1 H) step exceeds every ordinary entry."""
    for level in (0, 2):
        model = models.pretrained_mlp(64, 300.0, 4, 0)
        halo.halo_wrap(model, level=level, fmt="int8", exclude=models.FULL_PRECISION)
        shares = _nonzero_code_shares(model, level)
        assert len(shares) == 2 and min(shares) > 0.9, shares
        assert type(model.classifier) is torch.nn.Linear  # the classifier: full precision
    old = models.pretrained_mlp(64, 1.0, 4, 0)
    with torch.no_grad():  # the old injection: weight outliers in rows of W1
        old.fc1.weight[:4] *= 300.0
        old.fc1.bias[:4] *= 300.0
        old.fc2.weight[:, :4] /= 300.0
    halo.halo_wrap(old, level=2, fmt="int8", exclude=models.FULL_PRECISION)
    assert min(_nonzero_code_shares(old, 2)) < 0.1  # the check can fail


def test_channel_gain_and_inject_bad_inputs():
    g = halo.ChannelGain(3)
    assert torch.equal(g(torch.ones(2, 3)), torch.ones(2, 3)) and not list(g.parameters())
    with pytest.raises(ValueError, match="features"):
        halo.ChannelGain(0)
    with pytest.raises(ValueError, match="ChannelGain"):
        halo.inject_massive_activations(
            torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)), 0, [0], 2.0
        )
    with pytest.raises(ValueError, match="followed by an nn.Linear"):
        halo.inject_massive_activations(torch.nn.Sequential(halo.ChannelGain(2)), 0, [0], 2.0)
    with pytest.raises(ValueError, match="channels"):
        halo.inject_massive_activations(_gain_mlp(), 0, [40], 2.0)
    with pytest.raises(ValueError, match="layer"):
        halo.inject_massive_activations(_gain_mlp(), 1, [0], 2.0)


def test_halolinear_bad_inputs():
    with pytest.raises(ValueError, match="nearest supported sizes: 96 or 104|nearest"):
        halo.HaloLinear(100, 4, level=1)
    halo.HaloLinear(100, 4, level=0)  # no rotation: any size
    with pytest.raises(ValueError, match="level"):
        halo.HaloLinear(64, 4, level=3)
    with pytest.raises(ValueError, match="fmt"):
        halo.HaloLinear(64, 4, fmt="int4")
    with pytest.raises(ValueError, match="granularity"):
        halo.HaloLinear(64, 4, granularity="col")
    with pytest.raises(TypeError, match="nn.Linear"):
        halo.HaloLinear.from_linear(torch.nn.Conv1d(1, 1, 1))
    with pytest.raises(TypeError, match="float"):
        halo.HaloLinear(64, 4)(torch.ones(2, 64, dtype=torch.int64))
    with pytest.raises(ValueError, match="in_features"):
        halo.HaloLinear(64, 4)(torch.ones(2, 32))
    with pytest.raises(TypeError, match="nn.Module"):
        halo.halo_wrap("model")


def test_finetune_small_run_and_bad_inputs():
    s = FinetuneSettings("halo2", width=64, steps=3, batch=16, scale=10.0, cosine_every=1)
    r = experiments.finetune(s)
    assert len(r.loss) == 3 and len(r.cos) == 3 and 0 <= r.acc <= 1
    again = experiments.finetune(s)
    assert again.loss == r.loss and again.acc == r.acc  # deterministic for a seed
    other = experiments.finetune(s.replace(cosine_every=10), seed=1)
    assert other.loss != r.loss  # the fine-tuning seed changes the batches
    with pytest.raises(ValueError, match="mode"):
        FinetuneSettings("halo3")
    with pytest.raises(ValueError, match="fmt"):
        FinetuneSettings("halo2", fmt=None)
    with pytest.raises(TypeError, match="settings"):
        experiments.finetune("halo2")
    with pytest.raises(ValueError, match="seed"):
        experiments.finetune(s, seed=-1)


def test_precompute_finetune_fills_the_widget_memo():
    from lab.halo import figures

    base = FinetuneSettings(width=64, steps=2, batch=16)
    experiments.cached_finetune.clear()
    n = experiments.precompute_finetune(base, (2.0, 5.0), ("halo0",))
    assert n == 4 and len(experiments.cached_finetune) == 4
    fig = figures.finetune_figure(*experiments.finetune_pair(base, "halo0", 5.0))
    assert len(experiments.cached_finetune) == 4  # a redraw, no new run
    assert len(fig.data) == 3
    with pytest.raises(ValueError, match="scale"):
        experiments.precompute_finetune(base, (0.5,))
    with pytest.raises(ValueError, match="modes"):
        experiments.precompute_finetune(base, (2.0,), ("halo3",))
    with pytest.raises(TypeError, match="scales"):
        experiments.precompute_finetune(base, None)
    with pytest.raises(ValueError, match="mode"):
        experiments.finetune_pair(base, "halo9", 5.0)
    with pytest.raises(TypeError, match="FinetuneRun"):
        figures.finetune_figure(None, None)


def test_digits_data_standardised_on_training_rows_only():
    Xtr, ytr, Xte, yte = models.digits_data(0)
    assert Xtr.shape[1] == 128 and (Xtr[:, 64:] == 0).all()
    assert Xtr[:, :64].mean(0).abs().max() < 1e-4  # training statistics
    assert Xte[:, :64].mean(0).abs().max() > 1e-3  # the test rows were not used
    assert len(ytr) + len(yte) == 1797


def test_seed_study_and_pretrain_small():
    base = FinetuneSettings(scale=10.0, width=64, steps=3, batch=16)
    st = experiments.seed_study(
        {"FP32": base.replace(mode="fp32"), "H2": base.replace(mode="halo2")}, seeds=(0, 1)
    )
    assert st.acc["FP32"].shape == (2,) and st.std("FP32") >= 0
    assert st.gap("FP32", "H2") == pytest.approx(st.mean("FP32") - st.mean("H2"))
    with pytest.raises(TypeError, match="configs"):
        experiments.seed_study({"x": {"fmt": "int8"}})
    with pytest.raises(ValueError, match="seeds"):
        experiments.seed_study({"x": base}, seeds=())
    p = experiments.pretrain(PretrainSettings("halo2", "fp4_e2m1", width=64, steps=10, batch=16))
    assert len(p.loss) == 10 and 0 <= p.acc <= 1 and isinstance(p.diverged, bool)
    with pytest.raises(ValueError, match="steps"):
        PretrainSettings(steps=1)
    with pytest.raises(ValueError, match="eval_batch"):
        PretrainSettings(steps=10, eval_batch=0)
    with pytest.raises(TypeError, match="settings"):
        experiments.pretrain("halo2")


def test_pretrain_evaluates_in_training_sized_batches():
    """Full precision does not depend on the evaluation batch; a per-tensor FP4 scale does:
    one scale over all 540 test rows is set by the largest row (the 0.208 of issue 30)."""
    s = PretrainSettings("fp32", width=64, steps=10, batch=16)
    fp = [experiments.pretrain(s.replace(eval_batch=e)).acc for e in (1, 16, 540)]
    assert fp[0] == fp[1] == fp[2]
    q = PretrainSettings("halo0", "fp4_e2m1", width=64, steps=10, batch=16)
    assert experiments.pretrain(q).acc == experiments.pretrain(q.replace(eval_batch=16)).acc


def test_determinism():
    X, W, E = halo.outlier_tensors(64, 64, 64, 2, 2, 50.0, seed=3)
    a = halo.matmul_error_report(X, W, E, "fp6_e3m2")
    b = halo.matmul_error_report(X, W, E, "fp6_e3m2")
    assert a.equals(b)


# ------------------------------------------------------------------------------------------
# Low-precision all-gather on 2 gloo processes (loopback)
# ------------------------------------------------------------------------------------------
def test_allgather_bytes():
    assert hqfsdp.allgather_bytes(1000, 2, "fp32") == 2000
    assert hqfsdp.allgather_bytes(1000, 2, "bf16") == 1000
    assert hqfsdp.allgather_bytes(1000, 2, "int8") == 504
    with pytest.raises(ValueError, match="fmt"):
        hqfsdp.allgather_bytes(10, 2, "int4")
    with pytest.raises(ValueError, match="divisible"):
        hqfsdp.run_sharded_training(3, "int8", width=64)
    with pytest.raises(ValueError, match="fmt"):
        hqfsdp.run_sharded_training(2, ("int8", "int4"))
    with pytest.raises(RuntimeError, match="not initialized"):
        halo.quantized_allgather(torch.randn(4, 8))


def test_wire_log_counts_what_is_handed_to_the_collective():
    rec = hqfsdp.WireRecord("all_gather", "int8", 1000, 1, 4)
    assert rec.nbytes == 1000 and rec.received == 3000
    with hqfsdp.wire_log() as outer:
        with hqfsdp.wire_log() as inner:
            pass
    assert outer == [] and inner == [] and hqfsdp._LOG is None


def test_sharded_training_two_processes():
    runs = hqfsdp.run_sharded_training(
        2, ("fp32", "bf16", "int8"), steps=15, width=128, lr=5e-3, timeout=180
    )
    numel = runs["int8"]["weight_numel"]  # 128*128 + 16*128
    assert numel == 128 * 128 + 16 * 128
    # counted from the tensors handed to the collective: dtype and bytes per step
    assert runs["int8"]["wire_dtypes"] == ["int8"]
    assert runs["bf16"]["wire_dtypes"] == ["bfloat16"]
    assert runs["fp32"]["wire_dtypes"] == ["float32"]
    half = numel // 2  # the other rank's rows
    assert runs["int8"]["wire_bytes"] == 15 * half * 1
    assert runs["bf16"]["wire_bytes"] == 15 * half * 2
    assert runs["fp32"]["wire_bytes"] == 15 * half * 4
    assert runs["int8"]["scale_bytes"] == 15 * 2 * 4  # one fp32 absmax per weight per step
    assert runs["int8"]["level"] == 2 and runs["fp32"]["level"] is None
    f32, i8 = runs["fp32"]["loss"], runs["int8"]["loss"]
    assert i8[-1] < 0.6 * i8[0]  # it trains, with Q(WH) fed to the HALO-2 products
    assert abs(i8[-1] - f32[-1]) < 0.1 * f32[-1]


def test_halo_linear_takes_a_quantized_rotated_weight():
    """HQ-FSDP's step 3: Q(WH) fed directly gives the same output and gradients as
    HaloLinear, which rotates and quantizes W itself."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32, bias=False, dtype=torch.float64)
    x = torch.randn(16, 64, dtype=torch.float64)
    g = torch.randn(16, 32, dtype=torch.float64)
    for level in (1, 2):
        h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8")
        y, gx, gw = _grads_nobias(h, x, g)
        qw = halo.quantize(halo.fwht(lin.weight.detach(), dim=-1), "int8")
        sink = torch.zeros(32, 64, dtype=torch.float64, requires_grad=True)
        xx = x.clone().requires_grad_(True)
        y2 = halo.halo_linear(xx, sink, level=level, fmt="int8", qweight=qw)
        gx2, gw2 = torch.autograd.grad(y2, (xx, sink), g)
        assert torch.equal(y, y2) and torch.equal(gx, gx2) and torch.equal(gw, gw2)
    with pytest.raises(ValueError, match="qweight"):
        halo.halo_linear(x, sink, fmt="fp8_e4m3", qweight=qw)
    with pytest.raises(TypeError, match="QTensor"):
        halo.halo_linear(x, sink, qweight="junk")


def _grads_nobias(layer, x, g):
    x = x.clone().requires_grad_(True)
    y = layer(x)
    gx, gw = torch.autograd.grad(y, (x, layer.weight), g)
    return y, gx, gw


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("fmt", ["int8", "fp6_e2m3", None])
def test_halolinear_equals_the_reference_products(level, fmt):
    """The autograd layer (fast) computes exactly the level table of reference.py."""
    torch.manual_seed(1)
    lin = torch.nn.Linear(64, 48, bias=False, dtype=torch.float64)
    x = torch.randn(24, 64, dtype=torch.float64) * torch.logspace(0, 2, 64, dtype=torch.float64)
    g = torch.randn(24, 48, dtype=torch.float64)
    g[:2] *= 100  # token outliers
    h = halo.HaloLinear.from_linear(lin, level=level, fmt=fmt)
    y, gx, gw = _grads_nobias(h, x, g)
    ref = halo.halo_products(x, lin.weight.detach(), g, level, fmt)
    for a, b in ((y, ref["Y"]), (gx, ref["E_X"]), (gw, ref["G"])):
        assert (a - b).abs().max() <= 1e-9 * b.abs().max()
    if fmt is not None:  # and it is not the exact product: the quantization is really there
        assert (ref["E_X"] - g @ lin.weight.detach()).abs().max() > 1e-6


# ------------------------------------------------------------------------------------------
# CUDA (untested without a GPU)
# ------------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.parametrize("n", [256, 4096, 32768])
def test_fwht_triton_cuda(n):
    x = torch.randn(64, n, device="cuda")
    ref = halo.fwht(x.double())
    y = halo.fwht_triton(x)
    assert ((y.double() - ref).abs().max() / ref.abs().max()) < 1e-6
    yb = halo.fwht_triton(x.bfloat16())
    assert ((yb.double() - ref).abs().max() / ref.abs().max()) < 1e-2
    assert (halo.fwht(x) - ref.float()).abs().max() < 1e-4  # torch fast path on CUDA


@pytest.mark.cuda
@pytest.mark.parametrize("fmt", ["int8", "fp8_e4m3"])
@pytest.mark.parametrize("gran", ["tensor", "row"])
def test_fused_quant_triton_cuda(fmt, gran):
    x = torch.randn(256, 1024, device="cuda")
    q = halo.fwht_quant_triton(x, fmt, gran)
    r = halo.quantize(halo.fwht(x), fmt, gran)
    diff = (q.values() - r.values()).abs()
    assert (diff > 0).float().mean() < 0.01
    assert torch.allclose(q.scale.double(), r.scale.double(), rtol=1e-5)


@pytest.mark.cuda
def test_qmatmul_int8_cuda_bit_identical():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 256, generator=g), torch.randn(128, 256, generator=g)
    qa, qb = halo.quantize(a, "int8"), halo.quantize(b, "int8")
    cpu = halo.qmatmul(qa, qb)
    qa_c = halo.QTensor(qa.codes.cuda(), qa.scale.cuda(), "int8", "tensor", qa.shape, qa.dtype)
    qb_c = halo.QTensor(qb.codes.cuda(), qb.scale.cuda(), "int8", "tensor", qb.shape, qb.dtype)
    acc = torch._int_mm(qa_c.codes, qb_c.codes.T.contiguous().T)
    assert torch.equal(acc.cpu().long(), qa.codes.long() @ qb.codes.long().T)
    gpu = halo.fast.qmatmul(qa_c, qb_c)
    assert torch.allclose(gpu.cpu().double(), cpu.double(), rtol=1e-5)


@pytest.mark.cuda
@pytest.mark.parametrize("level", [0, 1, 2])
def test_halolinear_cuda_matches_cpu(level):
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 128)
    x, g = torch.randn(64, 256), torch.randn(64, 128)
    h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8")
    cpu = _grads(h, x, g)
    hc = halo.HaloLinear.from_linear(
        torch.nn.Linear(256, 128).cuda(), level=level, fmt="int8", exact=False
    )
    with torch.no_grad():
        hc.weight.copy_(lin.weight)
        hc.bias.copy_(lin.bias)
    gpu = _grads(hc, x.cuda(), g.cuda())
    for a, b in zip(cpu, gpu, strict=True):
        assert torch.nn.functional.cosine_similarity(a.flatten(), b.cpu().flatten(), 0) > 0.9999


def test_lora_halolinear():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32)
    x = torch.randn(8, 64)
    lora = halo.LoRAHaloLinear(lin, r=4, alpha=8.0, dropout=0.0, level=2, fmt=None)
    assert (lora(x) - lin(x)).abs().max() < 1e-5  # B = 0 at init: the base layer
    with torch.no_grad():
        lora.lora_B.normal_()
    y = lora(x)
    ref = lin(x) + 2.0 * (x @ lora.lora_A.T @ lora.lora_B.T)
    assert (y - ref).abs().max() < 1e-4
    y.sum().backward()
    assert lora.base.weight.grad is None and lora.base.bias.grad is None  # frozen base
    assert lora.lora_A.grad is not None and lora.lora_B.grad is not None
    with pytest.raises(ValueError, match="r must be"):
        halo.LoRAHaloLinear(lin, r=0)
    with pytest.raises(ValueError, match="dropout"):
        halo.LoRAHaloLinear(lin, dropout=1.0)
    with pytest.raises(TypeError, match="nn.Linear"):
        halo.LoRAHaloLinear(torch.nn.ReLU())
    r = experiments.finetune(FinetuneSettings(width=64, steps=2, batch=16, scale=10.0, lora_rank=4))
    assert len(r.loss) == 2 and r.cos == []


@pytest.mark.cuda
def test_halo_linear_qweight_cuda_matches_cpu():
    """HQ-FSDP's step 3 on CUDA: the gathered Q(WH) fed to real INT8 GEMMs."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(128, 256, generator=g)
    x, gy = torch.randn(64, 256, generator=g), torch.randn(64, 128, generator=g)
    out = []
    for dev, exact in (("cpu", True), ("cuda", False)):
        qw = halo.quantize(halo.fwht(w.to(dev), dim=-1), "int8")
        sink = torch.zeros(128, 256, device=dev, requires_grad=True)
        xx = x.to(dev).requires_grad_(True)
        y = halo.halo_linear(xx, sink, level=2, fmt="int8", qweight=qw, exact=exact)
        out.append((y, *torch.autograd.grad(y, (xx, sink), gy.to(dev))))
    for a, b in zip(*out, strict=True):
        assert torch.nn.functional.cosine_similarity(a.flatten(), b.cpu().flatten(), 0) > 0.9999
