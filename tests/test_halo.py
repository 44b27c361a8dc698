"""Tests of lab.halo: Hadamard transforms, low-precision formats, HALO linear layers, the
triton kernels (CPU interpreter in a subprocess; CUDA marked) and the low-precision
all-gather on two gloo processes.

Mirrors the "Correctness checks" of shared/papers/halo-quantized-training.md.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import scipy.linalg
import torch

from lab import halo
from lab.halo import experiments, hqfsdp
from lab.halo.formats import _round_minifloat

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------
# Hadamard
# ------------------------------------------------------------------------------------------
SIZES = [1, 2, 4, 8, 64, 256, 1024, 12, 24, 20, 28, 36, 44, 60, 108, 140, 12 * 64, 28 * 16]


@pytest.mark.parametrize("n", SIZES)
def test_hadamard_orthogonal_and_fwht_matches_matrix(n):
    H = halo.hadamard_matrix(n).numpy()
    assert np.abs(H @ H.T - np.eye(n)).max() < 1e-12
    x = np.random.default_rng(n).standard_normal((3, n))
    assert np.abs(halo.fwht(x) - x @ H.T).max() < 1e-12  # reference
    fast = halo.fwht(torch.tensor(x)).numpy()
    assert np.abs(fast - x @ H.T).max() < 1e-12  # fast path, float64
    assert np.abs(halo.fwht(halo.fwht(x), inverse=True) - x).max() < 1e-12
    assert np.abs(halo.fwht(torch.tensor(x), inverse=True).numpy() - x @ H).max() < 1e-12


@pytest.mark.parametrize("p", range(0, 11))
def test_sylvester_equals_scipy_and_is_self_inverse(p):
    n = 2**p
    H = halo.hadamard_matrix(n).numpy()
    assert np.array_equal(np.round(H * math.sqrt(n)), scipy.linalg.hadamard(n))
    assert np.abs(H * math.sqrt(n) - scipy.linalg.hadamard(n)).max() < 1e-12
    x = np.random.default_rng(p).standard_normal((2, n))
    assert np.abs(halo.fwht(halo.fwht(x)) - x).max() < 1e-12


def test_fwht_unnormalized_equals_sympy_exactly():
    from sympy.discrete.transforms import fwht as sympy_fwht

    v = np.random.default_rng(0).integers(-9, 10, 64)
    assert np.array_equal(halo.fwht(v, normalized=False), np.array(sympy_fwht(list(v)), float))
    assert np.array_equal(
        halo.fwht(torch.tensor(v, dtype=torch.float64), normalized=False).numpy(),
        np.array(sympy_fwht(list(v)), float),
    )


def test_fwht_dim_and_dtypes():
    x = torch.randn(8, 16, 3, dtype=torch.float64)
    y = halo.fwht(x, dim=1)
    ref = torch.einsum("ij,bjk->bik", halo.hadamard_matrix(16), x)
    assert (y - ref).abs().max() < 1e-12
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        out = halo.fwht(x.to(dt), dim=1)
        assert out.dtype == dt
        assert (out.double() - ref).abs().max() < (1e-5 if dt == torch.float32 else 0.05)
    assert np.allclose(halo.fwht(np.ones(4)), [2, 0, 0, 0])


@pytest.mark.parametrize("backend", ["c", "torch"])
@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32, 128, 512, 2048, 4096, 16384, 12 * 64, 20 * 8])
def test_fwht_cpu_backends_match_reference_and_scipy(backend, n, monkeypatch):
    """Both CPU fast paths (compiled C butterflies, torch factors) against the numpy reference
    and scipy's Hadamard matrix: 1e-12 relative in float64, 1e-6 in float32."""
    from lab.halo import fwht_cpu

    if backend == "c" and fwht_cpu.load() is None:
        pytest.skip(f"compiled FWHT unavailable: {fwht_cpu.build_error()}")
    monkeypatch.setenv("LAB_FWHT_BACKEND", backend)
    x = np.random.default_rng(n).standard_normal((5, n))
    K, P = halo.hadamard.split_size(n)
    exact_product = _sylvester_product if K == 1 and P > 2048 else None
    Hs = (
        None
        if exact_product
        else scipy.linalg.hadamard(P)
        if K == 1
        else np.kron(halo.hadamard._paley(K), scipy.linalg.hadamard(P))
    )
    for inverse in (False, True):
        ref = halo.fwht(x, inverse=inverse)
        if exact_product:  # x @ H.T for scipy's H of size P, without the 2 GB matrix
            exact = exact_product(x) / math.sqrt(n)  # (H is symmetric: inverse is the same)
        else:
            exact = x @ (Hs if inverse else Hs.T) / math.sqrt(n)
        scale = np.abs(exact).max()
        assert np.abs(ref - exact).max() <= 1e-12 * scale
        for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
            xt = torch.tensor(x, dtype=dtype)
            assert halo.fwht_backend(xt) == backend
            y = halo.fwht(xt, inverse=inverse).double().numpy()
            assert np.abs(y - exact).max() <= rtol * scale, (dtype, inverse)
            assert np.abs(y - ref).max() <= rtol * scale
    unnorm = halo.fwht(torch.tensor(x), normalized=False).numpy()
    exact = exact_product(x) if exact_product else x @ Hs.T
    assert np.abs(unnorm - exact).max() <= 1e-12 * np.abs(exact).max()


def _sylvester_product(x: np.ndarray) -> np.ndarray:
    """``x @ scipy.linalg.hadamard(n).T`` for a power of two ``n = a * b`` through Sylvester's
    identity ``hadamard(a * b) == kron(hadamard(a), hadamard(b))`` (checked below), with the two
    small scipy factors: at n = 16384 the dense matrix alone would be 2 GB."""
    n = x.shape[-1]
    a = 1 << (n.bit_length() - 1) // 2
    A, B = scipy.linalg.hadamard(a), scipy.linalg.hadamard(n // a)
    X = x.reshape(x.shape[0], a, n // a)
    return (A.astype(float) @ X @ B.T.astype(float)).reshape(x.shape)


def test_sylvester_product_is_scipys_hadamard():
    x = np.random.default_rng(3).standard_normal((3, 2048))
    assert np.array_equal(
        scipy.linalg.hadamard(2048), np.kron(scipy.linalg.hadamard(32), scipy.linalg.hadamard(64))
    )
    H = scipy.linalg.hadamard(2048)
    assert np.allclose(_sylvester_product(x), x @ H.T, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [8192, 32768, 65536, 131072])
def test_fwht_c_kernel_past_its_cache_block_matches_reference(n):
    """Rows longer than the C kernel's 32 KB cache block (4096 float64, 8192 float32): the
    stages across blocks run as radix-8/4/2 sweeps; all agree with the numpy reference."""
    from lab.halo import fwht_cpu

    if fwht_cpu.load() is None:
        pytest.skip(f"compiled FWHT unavailable: {fwht_cpu.build_error()}")
    x = np.random.default_rng(n).standard_normal((3, n))
    ref = halo.fwht(x)
    scale = np.abs(ref).max()
    for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
        xt = torch.tensor(x, dtype=dtype)
        assert halo.fwht_backend(xt) == "c"
        y = halo.fwht(xt).double().numpy()
        assert np.abs(y - ref).max() <= rtol * scale, dtype
    src = torch.tensor(x)
    with pytest.raises(ValueError, match="dst"):
        fwht_cpu.fwht_rows_(src, src, 1.0)  # the kernel is out of place


def test_fwht_backend_reports_and_c_path_is_differentiable(monkeypatch):
    from lab.halo import fwht_cpu

    assert halo.fwht_backend(np.ones(4)) == "reference"
    expected = "c" if fwht_cpu.load() is not None else "torch"
    assert halo.fwht_backend() == expected
    assert halo.fwht_backend(torch.ones(4, dtype=torch.bfloat16)) == expected
    monkeypatch.setenv("LAB_FWHT_BACKEND", "torch")
    assert halo.fwht_backend(torch.ones(4)) == "torch"
    monkeypatch.setenv("LAB_FWHT_BACKEND", "fastest")
    with pytest.raises(ValueError, match="LAB_FWHT_BACKEND"):
        halo.fwht(torch.ones(4))
    monkeypatch.delenv("LAB_FWHT_BACKEND")
    with pytest.raises(TypeError, match="x must be"):
        halo.fwht_backend([1.0, 2.0])
    # the gradient of y = A x is Aᵀ g (the inverse transform), on the C path as on torch's
    for n in (16, 12 * 4):
        x = torch.randn(3, n, dtype=torch.float64, requires_grad=True)
        for inverse in (False, True):
            assert torch.autograd.gradcheck(lambda z, i=inverse: halo.fwht(z, inverse=i), (x,))
    y = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: halo.fwht(z, dim=0, normalized=False), (y,))


def test_fwht_cpu_build_falls_back_without_a_compiler(tmp_path):
    """No C compiler (a plain pip install): fwht still works, on the torch path."""
    code = textwrap.dedent(
        """
        import numpy as np, torch
        from lab import halo
        from lab.halo import fwht_cpu
        assert fwht_cpu.load() is None and "compiler" in fwht_cpu.build_error()
        assert halo.fwht_backend(torch.ones(8)) == "torch"
        x = torch.randn(4, 64, dtype=torch.float64)
        assert np.abs(halo.fwht(x).numpy() - halo.fwht(x.numpy())).max() < 1e-12
        print("ok")
        """
    )
    env = {**os.environ, "CC": "", "PATH": str(tmp_path), "LAB_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_hadamard_bad_inputs():
    with pytest.raises(ValueError, match="nearest supported sizes: 4 or 8"):
        halo.hadamard_matrix(6)
    with pytest.raises(ValueError, match="not a supported Hadamard size"):
        halo.fwht(np.ones((2, 100)))
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        halo.fwht(torch.ones(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="dim"):
        halo.fwht(np.ones(4), dim=3)
    with pytest.raises(TypeError):
        halo.hadamard_matrix(4.0)
    assert halo.next_hadamard_size(100) == 108 and halo.next_hadamard_size(7) == 8


# ------------------------------------------------------------------------------------------
# Formats
# ------------------------------------------------------------------------------------------
ML = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}


def test_fp_grids():
    g = halo.fp_grid("fp6_e2m3")
    assert len(g) == 63 and g.max() == 7.5 and g[g > 0].min() == 0.125
    g = halo.fp_grid("fp6_e3m2")
    assert len(g) == 63 and g.max() == 28 and g[g > 0].min() == 0.0625
    g = halo.fp_grid("fp8_e4m3")
    assert len(g) == 253 and g.max() == 448
    g = halo.fp_grid("fp4_e2m1")
    assert len(g) == 15 and g.max() == 6 and g[g > 0].min() == 0.5
    for fmt, dt in ML.items():
        bits = {"fp8": 256, "fp6": 64, "fp4": 16}[fmt[:3]]
        codes = np.arange(bits, dtype=np.uint8).view(dt).astype(np.float64)
        assert np.array_equal(np.unique(codes[np.isfinite(codes)]), halo.fp_grid(fmt))


@pytest.mark.parametrize("fmt", list(ML))
def test_minifloat_rounding_bit_exact_with_ml_dtypes(fmt):
    g = halo.fp_grid(fmt)
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-g.max(), g.max(), 100_000),
            rng.standard_normal(10_000) * 0.01,
            (g[1:] + g[:-1]) / 2,  # every tie: round half to even
            g,
        ]
    )
    ours = _round_minifloat(torch.tensor(x), fmt).numpy()
    assert np.array_equal(ours, x.astype(ML[fmt]).astype(np.float64))
    if fmt == "fp8_e4m3":
        assert np.array_equal(ours, torch.tensor(x).to(torch.float8_e4m3fn).double().numpy())


@pytest.mark.parametrize("fmt", halo.FORMATS)
@pytest.mark.parametrize("gran", ["tensor", "row", "col", "block32"])
def test_quantize_roundtrip_error_bound(fmt, gran):
    x = torch.randn(40, 70, dtype=torch.float64) * torch.logspace(0, 2, 70, dtype=torch.float64)
    q = halo.quantize(x, fmt, gran)
    d = q.dequantize()
    assert d.shape == x.shape and d.dtype == x.dtype
    assert q.codes.element_size() == 1
    vals = q.values()
    if fmt == "int8":
        assert vals.abs().max() <= 127 and torch.equal(vals, vals.round())
    # every code is on the grid and the error is within half a grid step (times the scale)
    grid = torch.tensor(halo.fp_grid(fmt), dtype=torch.float64)
    assert torch.isin(vals, grid).all()
    if gran == "tensor":
        step = torch.diff(grid).max() * q.scale
        assert (d - x).abs().max() <= step / 2 + 1e-12
        if fmt == "int8":
            assert (d - x).abs().max() <= q.scale / 2 + 1e-12


def test_int8_codes_and_example():
    q = halo.quantize(torch.tensor([0.5, -1.0, 0.25]), "int8")
    assert q.codes.tolist() == [64, -127, 32]
    x = torch.randn(1000, dtype=torch.float64)
    q = halo.quantize(x, "int8")
    assert q.codes.min() >= -127 and q.codes.max() <= 127
    assert (q.dequantize() - x).abs().max() <= q.scale / 2 + 1e-15


def test_clip_ratio_saturates():
    x = torch.linspace(-1, 1, 101, dtype=torch.float64)
    q = halo.quantize(x, "fp6_e2m3", clip_ratio=0.75)
    assert q.values().abs().max() == 7.5
    assert (q.dequantize().abs() <= 0.75 + 1e-12).all()
    assert (q.values().abs() == 7.5).sum() > 2  # the top entries saturate


def test_qmatmul_int8_is_exact_integer_matmul():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(33, 64, generator=g), torch.randn(17, 64, generator=g)
    qa, qb = halo.quantize(a, "int8", "row"), halo.quantize(b, "int8", "row")
    out = halo.qmatmul(qa, qb)
    ints = qa.codes.long() @ qb.codes.long().T  # exact int64
    ref = ints.double() * qa.scale.double() * qb.scale.double().T
    assert torch.allclose(out.double(), ref, rtol=1e-6, atol=0)
    big = halo.quantize(torch.randn(8, 4096, generator=g, dtype=torch.float64), "int8")
    o2 = halo.qmatmul(big, big)
    i2 = big.codes.long() @ big.codes.long().T
    assert torch.equal((o2 / (big.scale * big.scale)).round().long(), i2)


def test_qmatmul_block32_and_reduction_dim_error():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(40, 70, generator=g), torch.randn(70, 50, generator=g)
    qa, qb = halo.quantize(a, "int8", "block32"), halo.quantize(b, "int8", "block32")
    out = halo.qmatmul(qa, qb, transpose_b=False)
    assert torch.allclose(out, qa.dequantize().double() @ qb.dequantize().double(), atol=1e-5)
    with pytest.raises(ValueError, match="scale along reduction dim"):
        halo.qmatmul(halo.quantize(a, "int8", "col"), halo.quantize(b, "int8"), False)
    with pytest.raises(ValueError, match="scale along reduction dim"):
        halo.qmatmul(halo.quantize(a, "int8"), halo.quantize(b, "int8", "row"), False)
    with pytest.raises(ValueError, match="scale along reduction dim"):
        halo.qmatmul(halo.quantize(a, "int8"), halo.quantize(b.T, "int8", "col"), True)


def test_format_bad_inputs():
    x = torch.randn(4, 4)
    with pytest.raises(ValueError, match="fmt must be one of"):
        halo.quantize(x, "int4")
    with pytest.raises(ValueError, match="granularity"):
        halo.quantize(x, "int8", "channel")
    with pytest.raises(ValueError, match="clip_ratio"):
        halo.quantize(x, "int8", clip_ratio=0.0)
    with pytest.raises(ValueError, match="2-D"):
        halo.quantize(torch.randn(2, 2, 2), "int8", "row")
    with pytest.raises(TypeError, match="float16"):
        halo.quantize(torch.ones(3, dtype=torch.int64), "int8")
    with pytest.raises(ValueError, match="finite"):
        halo.quantize(torch.tensor([1.0, float("nan")]), "int8")
    with pytest.raises(TypeError, match="QTensor"):
        halo.qmatmul(x, x)
    with pytest.raises(ValueError, match="fmt"):
        halo.fp_grid("fp4")


# ------------------------------------------------------------------------------------------
# Rotations and the outlier mechanism
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", halo.PLACEMENTS)
def test_rotations_cancel_without_quantization(placement):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(64, 32, generator=g, dtype=torch.float64)
    B = torch.randn(32, 16, generator=g, dtype=torch.float64)
    out = halo.rotated_matmul(A, B, placement, fmt=None)
    assert (out - A @ B).abs().max() < 1e-10


def test_middle_rotation_exact_for_kp_sizes():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8, 12 * 16, generator=g, dtype=torch.float64)
    W = torch.randn(5, 12 * 16, generator=g, dtype=torch.float64)
    assert (halo.fwht(X) @ halo.fwht(W).T - X @ W.T).abs().max() < 1e-10


def test_outlier_mechanism():
    """The spec's falsifiable check (at b = 256, m = n = 512 to stay fast)."""
    X, W, E = halo.outlier_tensors(256, 512, 512, 8, 4, 100.0, seed=0)
    r = halo.matmul_error_report(X, W, E, "int8")
    assert r.loc["none", "E_X"] > 0.5 and r.loc["middle", "E_X"] > 0.5
    assert r.loc["left", "E_X"] < 0.15
    assert r.loc["middle", "Y"] < r.loc["none", "Y"] / 3
    X, W, E = halo.outlier_tensors(256, 512, 512, 8, 4, 1000.0, seed=0)
    r = halo.matmul_error_report(X, W, E, "int8", placements=("left",))
    assert r.loc["left", "E_X"] > 0.5  # the limit of the left rotation


def test_rotation_bad_inputs():
    A, B = torch.randn(6, 8), torch.randn(8, 4)
    with pytest.raises(ValueError, match="placement"):
        halo.rotated_matmul(A, B, "top")
    with pytest.raises(ValueError, match="nearest supported sizes"):
        halo.rotated_matmul(A, B, "left")  # 6 rows
    with pytest.raises(ValueError, match="p×k and k×q"):
        halo.rotated_matmul(A, A)
    with pytest.raises(ValueError, match="shapes"):
        halo.matmul_error_report(torch.randn(4, 8), torch.randn(2, 8), torch.randn(4, 3))


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


def test_halo_wrap_and_inject():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8), torch.nn.ReLU(),
        torch.nn.Linear(8, 4),
    )  # fmt: skip
    x = torch.randn(10, 16)
    y0 = model(x)
    halo.inject_massive_activations(model, 0, [0, 3], 300.0)
    assert (model(x) - y0).abs().max() < 1e-4
    params = list(model.parameters())
    halo.halo_wrap(model, {"level": 1, "fmt": None}, include=("0", "2"))
    kinds = [type(m).__name__ for m in model]
    assert kinds[0] == kinds[2] == "HaloLinear" and kinds[4] == "Linear"
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert (model(x) - y0).abs().max() < 1e-4


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
    with pytest.raises(ValueError, match="channels"):
        halo.inject_massive_activations(
            torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)), 0, [5], 2.0
        )


def test_finetune_small_run_and_bad_inputs():
    r = experiments.finetune("halo2", width=64, steps=3, batch=16, scale=10.0, cosine_every=1)
    assert len(r.loss) == 3 and len(r.cos) == 3 and 0 <= r.acc <= 1
    again = experiments.finetune("halo2", width=64, steps=3, batch=16, scale=10.0, cosine_every=1)
    assert again.loss == r.loss and again.acc == r.acc  # deterministic for a seed
    other = experiments.finetune("halo2", width=64, steps=3, batch=16, scale=10.0, seed=1)
    assert other.loss != r.loss  # the fine-tuning seed changes the batches
    with pytest.raises(ValueError, match="mode"):
        experiments.finetune("halo3")
    with pytest.raises(ValueError, match="fmt"):
        experiments.finetune("halo2", fmt=None)


def test_precompute_finetune_fills_the_widget_memo():
    from lab.halo import figures

    experiments.cached_finetune.cache_clear()
    n = figures.precompute_finetune((2.0, 5.0), ("halo0",), width=64, steps=2, batch=16)
    assert n == 4 and experiments.cached_finetune.cache_info().currsize == 4
    fig = figures.finetune_figure("halo0", 5.0, width=64, steps=2, batch=16)
    assert experiments.cached_finetune.cache_info().currsize == 4  # a redraw, no new run
    assert len(fig.data) == 3
    with pytest.raises(ValueError, match="scale"):
        figures.precompute_finetune((0.5,), width=64, steps=2, batch=16)
    with pytest.raises(ValueError, match="modes"):
        figures.precompute_finetune((2.0,), ("halo3",), width=64, steps=2, batch=16)
    with pytest.raises(TypeError, match="scales"):
        figures.precompute_finetune(None)
    with pytest.raises(ValueError, match="mode"):
        figures.finetune_figure("halo9", 5.0, width=64, steps=2, batch=16)


def test_digits_data_standardised_on_training_rows_only():
    Xtr, ytr, Xte, yte = experiments.digits_data(0)
    assert Xtr.shape[1] == 128 and (Xtr[:, 64:] == 0).all()
    assert Xtr[:, :64].mean(0).abs().max() < 1e-4  # training statistics
    assert Xte[:, :64].mean(0).abs().max() > 1e-3  # the test rows were not used
    assert len(ytr) + len(yte) == 1797


def test_seed_study_and_pretrain_small():
    st = experiments.seed_study(
        {"FP32": {"mode": "fp32"}, "H2": {"mode": "halo2"}},
        seeds=(0, 1),
        scale=10.0,
        width=64,
        steps=3,
        batch=16,
    )
    assert st.acc["FP32"].shape == (2,) and st.std("FP32") >= 0
    assert st.gap("FP32", "H2") == pytest.approx(st.mean("FP32") - st.mean("H2"))
    with pytest.raises(ValueError, match="configs"):
        experiments.seed_study({"x": {"fmt": "int8"}})
    with pytest.raises(ValueError, match="seeds"):
        experiments.seed_study({"x": {"mode": "fp32"}}, seeds=())
    p = experiments.pretrain("halo2", "fp4_e2m1", width=64, steps=10, batch=16)
    assert len(p.loss) == 10 and 0 <= p.acc <= 1 and isinstance(p.diverged, bool)
    with pytest.raises(ValueError, match="steps"):
        experiments.pretrain(steps=1)


def test_determinism():
    X, W, E = halo.outlier_tensors(64, 64, 64, 2, 2, 50.0, seed=3)
    a = halo.matmul_error_report(X, W, E, "fp6_e3m2")
    b = halo.matmul_error_report(X, W, E, "fp6_e3m2")
    assert a.equals(b)


# ------------------------------------------------------------------------------------------
# triton kernels: CPU interpreter in a subprocess (TRITON_INTERPRET must precede the import)
# ------------------------------------------------------------------------------------------
def test_triton_kernels_need_a_device_or_the_interpreter():
    if os.environ.get("TRITON_INTERPRET") == "1" or torch.cuda.is_available():
        pytest.skip("interpreter or GPU active in this process")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        halo.fwht_triton(torch.randn(2, 8))
    with pytest.raises(ValueError, match="power of two"):
        halo.fwht_triton(torch.randn(2, 12))
    with pytest.raises(TypeError, match="float16, bfloat16 or float32"):
        halo.fwht_triton(torch.randn(2, 8, dtype=torch.float64))


def test_triton_kernels_in_interpreter():
    pytest.importorskip("triton")
    code = textwrap.dedent(
        """
        import torch
        from lab import halo
        torch.manual_seed(0)
        for n in (2, 64, 512):
            x = torch.randn(6, n)
            y = halo.fwht_triton(x)
            ref = halo.fwht(x.double())
            assert (y.double() - ref).abs().max() < 1e-5 * ref.abs().max(), n
            assert (halo.fwht_triton(x, scale=1.0).double() - halo.fwht(x.double(), normalized=False)).abs().max() < 1e-3
            for gran in ("tensor", "row"):
                q = halo.fwht_quant_triton(x, "int8", gran)
                r = halo.quantize(ref.float(), "int8", gran)
                assert (q.codes.int() - r.codes.int()).abs().max() <= 1, (n, gran)
                assert (q.codes.int() != r.codes.int()).float().mean() < 0.01
                assert torch.allclose(q.scale.double(), r.scale.double(), rtol=1e-5)
        xb = torch.randn(4, 128).bfloat16()
        assert (halo.fwht_triton(xb).float() - halo.fwht(xb.float())).abs().max() < 5e-2
        print("ok")
        """
    )
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]


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
    gpu = halo.qmatmul(qa_c, qb_c, exact=False)
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
    r = experiments.finetune("halo2", width=64, steps=2, batch=16, scale=10.0, lora_rank=4)
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
