"""HALO's fast paths, under the names of the reference kernels they replace.

* :func:`fwht`: the Walsh-Hadamard transform of torch tensors (the reference is the numpy
  butterflies of :func:`lab.halo.reference.fwht`). On CPU the **compiled C kernel** (float32/
  float64, when a C compiler is there to build it once): the same butterflies in C, row by row
  while the row is in cache (:mod:`lab.halo.fwht_cpu`), differentiable (the transpose is the
  ``inverse`` transform). Elsewhere, or without a compiler, the **torch path**: the butterfly
  stages grouped into ``ceil(p/6)`` Kronecker factors, ``H_{2^p} = H_{r1} ⊗ H_{r2} ⊗ ...``
  with ``r <= 64`` (4096 = 64·64), each applied along its own axis with one small batched
  matmul. It does ``r/log2(r)`` times the additions of the butterflies (128 instead of 12 per
  element at n = 4096, still 32x fewer than the dense ``n = 4096`` per element) but only two
  passes over memory, which is what a memory-bound transform pays for on CPU (deviation from
  the paper's kernel, which keeps a row in registers: see :func:`fwht_triton`).
  :func:`fwht_backend` says which one a given input runs; ``LAB_FWHT_BACKEND=torch`` forces
  the torch path on CPU.
* :func:`qmatmul`: the low-precision GEMM on real INT8 / FP8 tensor cores (``torch._int_mm``,
  ``torch._scaled_mm``) where the GPU and the shapes allow, else the exact simulated product
  of :func:`lab.halo.formats.qmatmul`.
* :func:`halo_products`: the three products of a HALO level (the reference is
  :func:`lab.halo.reference.halo_products`) as a layer runs them: codes multiplied by
  :func:`qmatmul` with one rescale, rotations by :func:`fwht`, on the inputs' device.
* triton kernels for the FWHT and the fused rotate-and-quantize (HALO's
  ``fast_hadamard_quant_transform``), tested against :func:`lab.halo.reference.fwht` and
  :func:`lab.halo.quantize`.

One triton program per row keeps the whole row in registers: it is read once, the ``log2 n``
butterfly stages run on registers (each stage views the row as ``(n/2h, 2, h)`` and maps the
pair ``(a, b)`` to ``(a + b, a − b)`` with ``tl.split``/``tl.join``), and it is written once.
That is the roofline's one read and one write; a kernel with ``log2 n`` passes over global
memory would be ``log2 n`` times slower.

The fused kernel rotates and quantizes in the same pass. Per-tensor absmax needs a grid-wide
reduction, so it runs two passes over the input (pass 1: rotate, per-row absmax only; a tiny
max over rows; pass 2: rotate again, scale, round half to even, store one byte per element),
which still writes only the 8-bit output. ``granularity="row"`` needs one pass.

triton is imported lazily (a clear ``ImportError`` when it is missing). The kernels also run
on CPU in triton's interpreter: set ``TRITON_INTERPRET=1`` *before* the first call of this
module's functions in the process (the tests do it in a subprocess).

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_real

from .hadamard import check_size, paley, split_size, sylvester

__all__ = [
    "fwht",
    "fwht_backend",
    "qmatmul",
    "halo_products",
    "fwht_triton",
    "fwht_quant_triton",
    "triton_available",
    "MAX_TRITON_N",
]

MAX_TRITON_N = 1 << 15
_KERNELS = None


# ------------------------------------------------------------------------------------------
# fwht: the torch path, radix-64 Kronecker factors (CPU or CUDA)
# ------------------------------------------------------------------------------------------
_MAX_RADIX_LOG2 = 6  # Kronecker factors of order <= 64: two passes for n = 4096


def _radices(P: int) -> list[int]:
    """Balanced split of ``P = 2^p`` into ``ceil(p/6)`` factors (e.g. 4096 = 64·64)."""
    p = P.bit_length() - 1
    if p == 0:
        return []
    k = -(-p // _MAX_RADIX_LOG2)
    logs = [p // k + (1 if i < p % k else 0) for i in range(k)]
    return [1 << e for e in logs]


@functools.lru_cache(maxsize=64)
def _factor(size: int, dtype_name: str, device: str):
    import torch

    return torch.tensor(sylvester(size), dtype=getattr(torch, dtype_name), device=device)


def _fwht_torch(x, normalized: bool, inverse: bool):
    import torch

    rows, n = x.shape
    K, P = split_size(n)
    dev = str(x.device)
    dname = str(x.dtype).removeprefix("torch.")
    # H_P = H_{r1} ⊗ H_{r2} ⊗ ...: view a row as an (r1, r2, ...) array and apply each
    # factor along its own axis (Sylvester factors are symmetric, so no transposes)
    radices = _radices(P)
    y = x.reshape(rows * K, P)
    if radices:
        last = radices[-1]
        y = (y.reshape(-1, last) @ _factor(last, dname, dev)).reshape(rows * K, P)
        inner = last
        for r in reversed(radices[:-1]):
            v = y.reshape(-1, r, inner)
            y = torch.matmul(_factor(r, dname, dev), v)  # H_r on the middle axis
            inner *= r
    y = y.reshape(rows, K, P)
    if K > 1:  # dense K×K factor across the K blocks
        HK = _factor_k(K, dname, dev)
        y = torch.matmul(HK.T if inverse else HK, y)
    y = y.reshape(rows, n)
    if normalized:
        y = y * (1.0 / math.sqrt(n))
    return y


@functools.lru_cache(maxsize=64)
def _factor_k(K: int, dtype_name: str, device: str):
    import torch

    return torch.tensor(paley(K), dtype=getattr(torch, dtype_name), device=device)


# ------------------------------------------------------------------------------------------
# Compiled CPU path: C butterflies (lab.halo.fwht_cpu), with the K×K factor in torch
# ------------------------------------------------------------------------------------------
_BACKENDS = ("auto", "c", "torch")


def _backend_env() -> str:
    name = os.environ.get("LAB_FWHT_BACKEND", "auto").strip().lower() or "auto"
    if name not in _BACKENDS:
        raise ValueError(f"LAB_FWHT_BACKEND must be one of {list(_BACKENDS)} (got {name!r})")
    return name


def _tensor_backend(x) -> str:
    import torch

    choice = _backend_env()
    eligible = x.device.type == "cpu" and x.dtype in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
    )
    if choice == "torch" or not eligible:
        return "torch"
    from . import fwht_cpu

    if fwht_cpu.load() is None:
        if choice == "c":
            raise RuntimeError(
                f"LAB_FWHT_BACKEND=c but the compiled kernel is unavailable: "
                f"{fwht_cpu.build_error()}"
            )
        return "torch"
    return "c"


def _fwht_c(x, normalized: bool, inverse: bool):
    """Rows of a float32/float64 CPU tensor ``x`` (shape ``(rows, n)``), no autograd."""
    import torch

    from .fwht_cpu import fwht_rows_

    rows, n = x.shape
    K, P = split_size(n)
    src = x.detach().contiguous().reshape(rows * K, P)
    # The output buffer comes from numpy: for large arrays numpy asks the kernel for
    # transparent huge pages (madvise), torch's allocator does not, and a fresh 32 MB output
    # (256 rows of 16384 float64) otherwise costs ~8000 page faults, more than the transform.
    # It is aligned to 64 bytes, so that the kernel's streaming stores (large arrays) write it
    # straight from the last butterfly sweep.
    out = torch.from_numpy(_aligned_empty(tuple(src.shape), src.dtype == torch.float64))
    # H_P on each block, then the reference's y / sqrt(n) (bit for bit); threads: torch's
    fwht_rows_(src, out, divisor=math.sqrt(n) if normalized else None)
    if K == 1:
        return out.reshape(rows, n)
    HK = _factor_k(K, str(x.dtype).removeprefix("torch."), "cpu")
    y = torch.matmul(HK.T if inverse else HK, out.reshape(rows, K, P))  # K×K across blocks
    return y.reshape(rows, n)


def _aligned_empty(shape: tuple, f64: bool) -> np.ndarray:
    """An uninitialised float32/float64 numpy array whose data starts on a 64-byte boundary."""
    dtype = np.dtype(np.float64 if f64 else np.float32)
    count = math.prod(shape)
    buf = np.empty(count + 64 // dtype.itemsize, dtype=dtype)
    skip = (-buf.ctypes.data % 64) // dtype.itemsize
    return buf[skip : skip + count].reshape(shape)


@functools.cache
def _c_function():
    import torch

    class _FwhtC(torch.autograd.Function):
        """``y = A x`` row-wise with the C kernel; the gradient is ``Aᵀ g`` (the inverse flag
        flipped: ``(H_K ⊗ H_P)ᵀ = H_Kᵀ ⊗ H_P``)."""

        @staticmethod
        def forward(ctx, x, normalized, inverse):
            ctx.flags = (normalized, inverse)
            return _fwht_c(x, normalized, inverse)

        @staticmethod
        def backward(ctx, g):
            normalized, inverse = ctx.flags
            return _fwht_rows(g, normalized, not inverse), None, None

    return _FwhtC


def _fwht_rows(x, normalized: bool, inverse: bool):
    """The fast path on rows ``(rows, n)`` of a float32/float64 tensor: C kernel or torch."""
    if _tensor_backend(x) == "c":
        return _c_function().apply(x, normalized, inverse)
    return _fwht_torch(x, normalized, inverse)


def fwht_backend(x=None) -> str:
    """Which implementation :func:`fwht` runs for ``x``.

    Parameters
    ----------
    x : numpy.ndarray or torch.Tensor, optional
        The input (its kind, device and dtype decide). Default: a float32 CPU tensor.

    Returns
    -------
    str
        ``"reference"`` (numpy input: the numpy butterflies), ``"c"`` (CPU tensor: the
        compiled C butterflies of :mod:`lab.halo.fwht_cpu`) or ``"torch"`` (other devices,
        no C compiler, or ``LAB_FWHT_BACKEND=torch``: the torch Kronecker-factor path).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    if x is None:
        x = torch.empty(0)
    if isinstance(x, np.ndarray):
        return "reference"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a numpy array or a torch tensor (got {type(x).__name__})")
    return _tensor_backend(x)


def fwht(x, dim: int = -1, normalized: bool = True, *, inverse: bool = False):
    """Fast Walsh-Hadamard transform of a torch tensor along ``dim``: ``y = H_n v``.

    The fast path of :func:`lab.halo.reference.fwht` (same arguments, same result): on CPU the
    compiled C butterflies of :mod:`lab.halo.fwht_cpu` when they could be built, else (and on
    other devices) the torch Kronecker-factor path; :func:`fwht_backend` says which runs.

    Parameters
    ----------
    x : torch.Tensor
        float16, bfloat16, float32 or float64, any device; 16-bit inputs are computed in
        float32 and returned in their dtype.
    dim : int
        The axis to transform; its length must be a supported Hadamard size.
    normalized : bool
        Divide by ``sqrt(n)`` (default), making the transform orthogonal.
    inverse : bool
        Apply ``H_nᵀ`` instead of ``H_n`` (differs from ``H_n`` for ``K·2^p`` only).

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device; differentiable.

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    normalized = check_bool("normalized", normalized)
    inverse = check_bool("inverse", inverse)
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"x must be a torch tensor (got {type(x).__name__}); numpy arrays run the "
            "reference, lab.halo.reference.fwht"
        )
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(
            "x must be float16, bfloat16, float32 or float64 "
            f"(got {str(x.dtype).removeprefix('torch.')})"
        )
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension (got a scalar)")
    dim = check_int("dim", dim, -x.ndim, x.ndim - 1) % x.ndim
    n = x.shape[dim]
    check_size(f"x.shape[{dim}]", int(n))
    orig = x.dtype
    work = x if orig in (torch.float32, torch.float64) else x.float()
    moved = work.movedim(dim, -1)
    shp = moved.shape
    out = _fwht_rows(moved.reshape(-1, n), normalized, inverse)
    return out.reshape(shp).movedim(-1, dim).to(orig)


def qmatmul(a, b, transpose_b: bool = True, *, exact: bool = False):
    """``Q(A)·Q(B)`` on real INT8 / FP8 GEMMs where the device allows: the fast path of
    :func:`lab.halo.formats.qmatmul` (same arguments and result).

    On CUDA, INT8 codes run ``torch._int_mm`` (int32 accumulator) and FP8 codes
    ``torch._scaled_mm`` (float32 accumulator), then one rescale ``s_A·s_B``, when the shapes
    allow (INT8: ``p > 16``, ``k`` and ``q`` multiples of 8; FP8: multiples of 16) and the
    scales are per tensor or on the outer dims. Otherwise, on CPU, or with ``exact=True``,
    the exact simulated product of :func:`lab.halo.formats.qmatmul`.

    Parameters
    ----------
    a, b : QTensor
        As :func:`lab.halo.formats.qmatmul`.
    transpose_b : bool
    exact : bool
        Force the exact simulated product.

    Returns
    -------
    torch.Tensor
        ``(p, q)``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    from .formats import QTensor
    from .formats import qmatmul as exact_qmatmul

    exact = check_bool("exact", exact)
    outer_b = "row" if transpose_b else "col"
    if (
        not exact
        and isinstance(a, QTensor)
        and isinstance(b, QTensor)
        and a.codes.device.type == "cuda"
        and a.granularity in ("tensor", "row")
        and b.granularity in ("tensor", outer_b)
    ):  # pragma: no cover - needs a GPU
        codes = b.codes.T if transpose_b else b.codes  # (k, q)
        sb = b.scale.mT if (transpose_b and b.scale.ndim >= 2) else b.scale
        out = _gpu_qmatmul(a.codes, a.scale, codes, sb, a.fmt, b.fmt)
        if out is not None:
            return out
    return exact_qmatmul(a, b, transpose_b)


def _gpu_qmatmul(ca, sa, cb, sb, fa, fb):  # pragma: no cover - needs a GPU
    import torch

    p, k = ca.shape
    q = cb.shape[1]
    try:
        if fa == fb == "int8" and p > 16 and k % 8 == 0 and q % 8 == 0:
            acc = torch._int_mm(ca.contiguous(), cb.T.contiguous().T)
            return acc.float() * sa.float() * sb.float()
        if fa == fb == "fp8_e4m3" and k % 16 == 0 and q % 16 == 0:
            one = torch.ones((), device=ca.device)
            acc = torch._scaled_mm(
                ca.contiguous(), cb.T.contiguous().T, scale_a=one, scale_b=one,
                out_dtype=torch.float32,
            )  # fmt: skip
            return acc * sa.float() * sb.float()
    except (RuntimeError, NotImplementedError):
        return None
    return None


def halo_products(X, W, E_Y, level: int = 2, fmt: str | None = "int8", clip_ratio: float = 1.0,
                  *, exact: bool = False):  # fmt: skip
    """The three products of one HALO linear layer, as a layer runs them: the fast path of
    :func:`lab.halo.reference.halo_products` (same arguments and result, to rounding).

    The operands are quantized once (per tensor) and multiplied as codes by :func:`qmatmul`
    (real INT8 / FP8 GEMMs on CUDA) with one rescale each; the rotations run :func:`fwht`; the
    backward products reuse the forward's ``Q(XH)`` and ``Q(WH)``; everything stays on the
    inputs' device.

    Parameters
    ----------
    X, W, E_Y : torch.Tensor
        ``b×m``, ``n×m``, ``b×n``, float, one device; ``m`` a Hadamard size for levels 1, 2.
    level, fmt, clip_ratio
        As :func:`lab.halo.reference.halo_products`.
    exact : bool
        Force the exact simulated GEMMs on CUDA too.

    Returns
    -------
    dict
        ``{"Y", "E_X", "G"}``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    from .formats import FORMATS, quantize
    from .hadamard import next_hadamard_size

    for name, T in (("X", X), ("W", W), ("E_Y", E_Y)):
        if not isinstance(T, torch.Tensor) or T.ndim != 2 or not T.is_floating_point():
            raise TypeError(f"{name} must be a 2-D float torch tensor")
    if X.shape[1] != W.shape[1] or E_Y.shape != (X.shape[0], W.shape[0]):
        raise ValueError(
            f"shapes must be X b×m, W n×m, E_Y b×n (got {tuple(X.shape)}, {tuple(W.shape)}, "
            f"{tuple(E_Y.shape)})"
        )
    level = check_int("level", level, 0, 2)
    if fmt is not None:
        check_choice("fmt", fmt, FORMATS)
    if level >= 1:
        check_size("m (in-features)", X.shape[1])

    def mm(A, B, transpose_b=False):  # Q(A)·Q(B), codes times codes, one rescale
        if fmt is None:
            return A @ (B.T if transpose_b else B)
        qa, qb = quantize(A, fmt, "tensor", clip_ratio), quantize(B, fmt, "tensor", clip_ratio)
        return qmatmul(qa, qb, transpose_b, exact=exact).to(A.dtype)

    if level == 0:
        return {"Y": mm(X, W, True), "E_X": mm(E_Y, W), "G": mm(E_Y.T, X)}
    XH, WH = fwht(X), fwht(W)
    out = {"Y": mm(XH, WH, True)}  # Q(XH) Q(WH)ᵀ
    if level == 1:
        out["E_X"] = fwht(mm(E_Y, WH), inverse=True)  # [Q(E_Y) Q(WH)] Hᵀ
    else:
        b = E_Y.shape[0]
        Ep = torch.nn.functional.pad(E_Y, (0, 0, 0, next_hadamard_size(b) - b))
        inner = mm(fwht(Ep, dim=0), WH)  # Q(H_b E_Y) Q(WH)
        out["E_X"] = fwht(fwht(inner, dim=0, inverse=True)[:b], inverse=True)
    out["G"] = fwht(mm(E_Y.T, XH), inverse=True)  # [Q(E_Y)ᵀ Q(XH)] Hᵀ
    return out


def triton_available() -> bool:
    """True when triton imports and can run here (a CUDA GPU, or ``TRITON_INTERPRET=1``).

    See: book/halo/02-fwht-kernel.ipynb
    """
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    import torch

    return torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"


def _kernels():
    global _KERNELS
    if _KERNELS is not None:
        return _KERNELS
    try:
        from . import _triton_kernels as k
    except ImportError as exc:  # pragma: no cover - triton is optional
        raise ImportError(
            "fwht_triton needs triton (pip install triton); use lab.halo.fwht on CPU"
        ) from exc
    _KERNELS = (k.fwht_kernel, k.rowmax_kernel, k.quant_kernel)
    return _KERNELS


def _prepare(x, name="x"):
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (got {type(x).__name__})")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(
            f"{name} must be float16, bfloat16 or float32 (got {str(x.dtype).removeprefix('torch.')})"
        )
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension")
    n = x.shape[-1]
    if n < 2 or n > MAX_TRITON_N or n & (n - 1):
        raise ValueError(
            f"{name}.shape[-1] must be a power of two in [2, {MAX_TRITON_N}] for the triton "
            f"kernel (got {n}); use lab.halo.fwht for K·2^p sizes"
        )
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            "the triton kernels need a CUDA tensor (or TRITON_INTERPRET=1 set before the "
            "first call, for the CPU interpreter)"
        )
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    return x2, n


def fwht_triton(x, scale: float | None = None):
    """Normalized FWHT along the last dim by the triton kernel (fp32 compute).

    Parameters
    ----------
    x : torch.Tensor
        float16, bfloat16 or float32, on CUDA (or CPU with ``TRITON_INTERPRET=1``); last dim a
        power of two up to 32768.
    scale : float, optional
        Output scale; default ``1/sqrt(n)`` (orthogonal, as :func:`lab.halo.fwht`).

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device.

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    x2, n = _prepare(x)
    s = 1.0 / math.sqrt(n) if scale is None else check_real("scale", scale)
    fwht_kernel, _, _ = _kernels()
    y = torch.empty_like(x2)
    if x2.shape[0]:
        fwht_kernel[(x2.shape[0],)](
            x2, y, x2.stride(0), y.stride(0), s, N=n, LOG_N=n.bit_length() - 1, num_warps=_warps(n)
        )
    return y.reshape(x.shape)


def _warps(n: int) -> int:
    return max(1, min(16, n // 256))


def fwht_quant_triton(x, fmt: str = "int8", granularity: str = "tensor"):
    """Fused normalized FWHT and quantization: ``Q(x Hᵀ)`` in one kernel (two for
    per-tensor scales).

    Parameters
    ----------
    x : torch.Tensor
        As :func:`fwht_triton`.
    fmt : str
        ``"int8"`` (symmetric ``±127``, round half to even) or ``"fp8_e4m3"`` (CUDA only:
        the interpreter has no FP8 type).
    granularity : str
        ``"tensor"`` or ``"row"`` (one scale per row, one pass).

    Returns
    -------
    QTensor
        ``codes`` (int8 or float8_e4m3fn) shaped like ``x`` flattened to 2-D, ``scale``
        (``()`` or ``(rows, 1)``, float32). Equal to
        ``quantize(fwht(x.float()), fmt, granularity)`` up to float32 rounding ties.

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    from .formats import QTensor

    check_choice("fmt", fmt, ("int8", "fp8_e4m3"))
    check_choice("granularity", granularity, ("tensor", "row"))
    x2, n = _prepare(x)
    if fmt == "fp8_e4m3" and x2.device.type == "cpu":
        raise RuntimeError("fmt='fp8_e4m3' in the fused kernel needs a CUDA device")
    _, rowmax_kernel, quant_kernel = _kernels()
    rows, log_n = x2.shape[0], n.bit_length() - 1
    fp8 = fmt == "fp8_e4m3"
    top = 448.0 if fp8 else 127.0
    q = torch.empty((rows, n), dtype=torch.float8_e4m3fn if fp8 else torch.int8, device=x2.device)
    inv = 1.0 / math.sqrt(n)
    if granularity == "row":
        s = torch.empty(rows, dtype=torch.float32, device=x2.device)
        quant_kernel[(rows,)](x2, q, s, x2.stride(0), inv, PER_ROW=True, N=n, LOG_N=log_n,
                              FP8=fp8, num_warps=_warps(n))  # fmt: skip
        scale = s[:, None]
    else:
        m = torch.empty(rows, dtype=torch.float32, device=x2.device)
        rowmax_kernel[(rows,)](x2, m, x2.stride(0), N=n, LOG_N=log_n, num_warps=_warps(n))
        s = (m.max() * inv / top).clamp(min=1e-5 / 127.0).reshape(1)  # the grid-wide max
        quant_kernel[(rows,)](x2, q, s, x2.stride(0), inv, PER_ROW=False, N=n, LOG_N=log_n,
                              FP8=fp8, num_warps=_warps(n))  # fmt: skip
        scale = s.reshape(())
    return QTensor(q, scale, fmt, granularity, (rows, n), x.dtype)
