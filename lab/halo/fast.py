"""HALO's fast path on CUDA: triton kernels for the FWHT and the fused rotate-and-quantize
(HALO's ``fast_hadamard_quant_transform``), tested against :func:`lab.halo.fwht` and
:func:`lab.halo.quantize` (the CPU fast path of ``fwht`` itself, batched torch and the
compiled C kernel of :mod:`lab.halo.fwht_cpu`, lives in :mod:`lab.halo.hadamard`).

One program per row keeps the whole row in registers: it is read once, the ``log2 n``
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

import math
import os

from lab.core.checks import check_choice, check_real

__all__ = ["fwht_triton", "fwht_quant_triton", "triton_available", "MAX_TRITON_N"]

MAX_TRITON_N = 1 << 15
_KERNELS = None


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
