"""Tests of lab.halo's kernels: Hadamard transforms, low-precision formats, rotation
placements, the triton kernels (CPU interpreter in a subprocess), the parity with the official
code and the reference/fast pairs. The layers, drivers, all-gather and CUDA paths are in
tests/test_halo_training.py.

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
from lab.core.fixtures import official_fixture
from lab.halo import fwht_cpu
from lab.halo.formats import round_minifloat

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
        else np.kron(halo.hadamard.paley(K), scipy.linalg.hadamard(P))
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


def _butterflies(x):  # the reference's stages in x's own dtype, then / sqrt(n) in that dtype
    y, (rows, n), h = x.copy(), x.shape, 1
    while h < n:
        v, h = y.reshape(rows, n // (2 * h), 2, h), 2 * h
        v[..., 0, :], v[..., 1, :] = v[..., 0, :] + v[..., 1, :], v[..., 0, :] - v[..., 1, :]
    return y / x.dtype.type(math.sqrt(n))


@pytest.mark.parametrize("isa", ["avx512", "avx2", "generic"])  # generic: a CPU without AVX2
def test_fwht_cpu_paths_bit_exact_in_and_out_of_place(isa, monkeypatch):
    if fwht_cpu.load() is None or isa not in fwht_cpu._isas():
        pytest.skip(f"kernel path {isa} unavailable here")
    monkeypatch.setenv("LAB_FWHT_ISA", isa)  # forces the path of fwht_rows_ and the public fwht
    for p in range(1, 17):  # n = 2..2^16, 1-7 rows; float64: the reference bit for bit
        n, rows, div = 2**p, (1, 3, 4, 7)[p % 4], math.sqrt(2**p)
        x = np.random.default_rng(p).standard_normal((rows, n)).astype(np.float32).astype(float)
        ref, w32 = halo.fwht(x), _butterflies(x.astype(np.float32))  # the documented bound:
        assert (np.abs(w32 - ref) <= (p + 1) * 2.0**-24 * np.abs(x).sum(1)[:, None] / div).all()
        assert np.array_equal(halo.fwht(torch.tensor(x)).numpy(), ref)
        for xd, w in ((x, ref), (x.astype(np.float32), w32)):  # float32: w32 bit for bit
            for th, stream, o in ((1, 0, 2), (2, 1, 2), (1, 1, 16), (2, 0, 0)):  # o: dst offset
                src = torch.tensor(xd)  # dst 64-byte aligned (o = 16), not (o = 2), in place (0)
                dst = src.new_zeros(rows * n + o)[o:].view(rows, n) if o else None
                path = fwht_cpu.fwht_rows_(src, dst, divisor=div, threads=th, stream=stream)
                assert path in (isa, "generic") and np.array_equal((dst if o else src).numpy(), w)
    for kw in ({"isa": "sse9"}, {"threads": 0}, {"divisor": -2.0}, {"scale": 2.0, "divisor": 4}):
        with pytest.raises(ValueError, match=next(iter(kw)) if len(kw) == 1 else "not both"):
            fwht_cpu.fwht_rows_(torch.ones(2, 8), torch.ones(2, 8), **kw)


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
    ours = round_minifloat(torch.tensor(x), fmt).numpy()
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


def test_error_case_is_the_widget_data():
    """experiments.error_case: the report and heat-map blocks error_figure draws, memoised."""
    case = halo.error_case(100.0, "int8", "tensor", "left", 1.0, 8, (64, 128, 64), 0)
    X, W, E = halo.outlier_case(64, 128, 64, 8, 100.0, 0)
    want = halo.matmul_error_report(X, W, E, "int8")
    assert case["report"].equals(want) and case["blocks"].shape == (16, 16)
    assert halo.error_case(100.0, "int8", "tensor", "left", 1.0, 8, (64, 128, 64), 0) is case
    with pytest.raises(ValueError, match="placement"):
        halo.error_case(placement="top")
    with pytest.raises(ValueError, match="multiples of 16"):
        halo.error_case(size=(40, 128, 64))


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
# Parity with the official code (lab/core/official/halo_official.json)
# ------------------------------------------------------------------------------------------
OFFICIAL = official_fixture("halo_official.json")
#: the official products are bfloat16 (the GEMM's output, then one rotation in bfloat16 for
#: E_X and G at levels 1, 2): two roundings of 2^-8 relative at most
PRODUCT_TOL = 2.0**-7
#: quantizer outputs: float32 rounding of the scale (``c·max/fmax`` vs ``max/fmax·c``)
QUANT_TOL = 1e-6


def test_official_fixture_provenance_is_complete():
    import json

    data = json.loads(OFFICIAL.read_text())
    prov = data["provenance"]
    for key in ("repository", "commit", "file", "functions", "setup", "command", "versions"):
        assert prov[key], key
    assert prov["repository"] == "IST-DASLab/HALO" and len(prov["commit"]) == 40
    assert {"python", "torch", "numpy"} <= set(prov["versions"])
    assert OFFICIAL.stat().st_size < 100_000


def test_official_quantizers_and_hadamard_match():
    par = halo.official_parity(OFFICIAL)
    assert par["quantize_int8 codes"] == 0  # every INT8 code equal
    for key in ("quantize_int8 scale", "quantize_fp8", "quantize_fp8 scale", "int8 tensor",
                "int8 row", "int8 col", "int8 block32", "codebook fp6_e2m3", "codebook fp6_e3m2",
                "codebook fp4_e2m1", "fake_quant fp6_e2m3", "fake_quant fp6_e3m2",
                "fake_quant fp4_e2m1", "right_had_16"):  # fmt: skip
        assert par[key] <= QUANT_TOL, (key, par[key])


def test_official_right_had_24_uses_another_h12():
    """Order 24 = 12·2: both are H_12 ⊗ H_2 and orthogonal, but HALO's H_12 (Sloane's table)
    is not our Paley I matrix, so the rotated values differ (HALO's products do not depend
    on which orthogonal H is used: it cancels)."""
    import json

    par = halo.official_parity(OFFICIAL)
    assert par["right_had_24"] > 0.1
    out = json.loads(OFFICIAL.read_text())["outputs"]
    x, y = np.array(out["X24"]).reshape(-1, 24), np.array(out["right_had_24"]).reshape(-1, 24)
    yt = np.array(out["right_had_24_transpose"]).reshape(-1, 24)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), np.linalg.norm(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(yt, axis=1), np.linalg.norm(x, axis=1), rtol=1e-5)


def test_official_halo_levels_match():
    par = halo.official_parity(OFFICIAL)
    cases = [f"halo{lv}_int8" for lv in (0, 1, 2)] + [f"halo{lv}_fp8" for lv in (0, 1)]
    for case in cases:
        for name in ("Y", "E_X", "G"):
            assert par[f"{case} {name}"] <= PRODUCT_TOL, (case, name, par[f"{case} {name}"])
        assert par[f"{case} scales"] <= QUANT_TOL, case  # the GEMMs' s_A·s_B


def test_official_parity_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError, match="path"):
        halo.official_parity(3)
    with pytest.raises(FileNotFoundError):
        halo.official_parity(tmp_path / "missing.json")


# ------------------------------------------------------------------------------------------
# Reference / fast pairs (lab.halo.reference vs lab.halo.fast, the same names)
# ------------------------------------------------------------------------------------------
def test_pair_fwht():
    from lab.halo import fast, reference

    x = np.random.default_rng(7).standard_normal((5, 3, 12 * 8))
    for dim, n in ((-1, 96), (1, 3)):
        if n == 3:  # 3 is no Hadamard size: both refuse it alike
            with pytest.raises(ValueError, match="Hadamard"):
                reference.fwht(x, dim=dim)
            with pytest.raises(ValueError, match="Hadamard"):
                fast.fwht(torch.from_numpy(x), dim=dim)
            continue
        for inverse in (False, True):
            ref = reference.fwht(x, dim=dim, inverse=inverse)
            got = fast.fwht(torch.from_numpy(x), dim=dim, inverse=inverse).numpy()
            np.testing.assert_allclose(got, ref, atol=1e-12)
    assert isinstance(reference.fwht(torch.ones(4)), torch.Tensor)  # tensors: the fast path
    with pytest.raises(TypeError, match="torch tensor"):
        fast.fwht(np.ones(4))


def test_pair_halo_products():
    from lab.halo import fast, reference

    X, W, E = halo.outlier_tensors(32, 64, 16, 4, 2, 50.0, seed=1)
    X, W, E = X.float(), W.float(), E.float()
    for level in (0, 1, 2):
        for fmt in ("int8", "fp8_e4m3", "fp6_e2m3", None):
            ref = reference.halo_products(X, W, E, level, fmt)
            got = fast.halo_products(X, W, E, level, fmt)
            for k in ("Y", "E_X", "G"):
                scale = ref[k].abs().max()
                assert (got[k] - ref[k]).abs().max() <= 1e-5 * scale, (level, fmt, k)
    with pytest.raises(ValueError, match="shapes"):
        fast.halo_products(X, W, E.T)
    with pytest.raises(TypeError, match="2-D float"):
        fast.halo_products(X.numpy(), W, E)


def test_fast_qmatmul_equals_exact_on_cpu():
    from lab.halo import fast

    a = halo.quantize(torch.randn(8, 16), "int8", "row")
    b = halo.quantize(torch.randn(4, 16), "int8", "row")
    assert torch.equal(fast.qmatmul(a, b), halo.qmatmul(a, b))
    with pytest.raises(ValueError, match="reduction dim"):
        fast.qmatmul(a, halo.quantize(torch.randn(4, 16), "int8", "col"))
