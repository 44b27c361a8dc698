"""Low-precision number formats: INT8 and the minifloats FP8 E4M3, FP6 E2M3, FP6 E3M2 and
FP4 E2M1 (the last only for the pre-training observation of the chapter).

Every quantizer is symmetric, round-to-nearest-even, deterministic, without zero point:

* ``int8``: ``s = c·max|A| / 127``, ``q = clip(round(A/s), -127, 127)`` (the symmetric range:
  ``-128`` is never used), guard ``s >= 1e-5/127``;
* minifloat ``E{e}M{m}`` with bias ``b`` (finite-only "fn" formats: no inf, saturate at
  ``fmax``): ``s = c·max|A| / fmax`` and ``q = round_to_grid(clip(A/s, ±fmax))``. The grid has
  quantum ``2^(E-m)`` in the binade ``[2^E, 2^(E+1))``, ``E >= 1-b`` (subnormals below
  ``2^(1-b)``);

with the clip ratio ``c`` (``clip_ratio``, 1.0 by default; HALO's simulated FP6 uses 0.75,
which saturates the largest entries on purpose).

Scales can be per tensor, per row (``granularity="row"``: one scale per entry of the *first*
axis), per column (``"col"``) or per 32×32 tile (``"block32"``, Jetfire's baseline). A
low-precision matmul is only a *rescaled* integer/minifloat matmul when the scales sit on the
outer dimensions of the product; :func:`qmatmul` refuses scales along the contracted
dimension (``ValueError("scale along reduction dim")``), except for 32×32 tiles, which it
accumulates tile by tile.

The rounding is computed here (``torch.frexp`` + ``torch.round``, which rounds half to even)
and tested bit for bit against ``ml_dtypes`` (``float8_e4m3fn``, ``float6_e2m3fn``,
``float6_e3m2fn``, ``float4_e2m1fn``) and ``torch.float8_e4m3fn``.

See: book/halo/01-outliers-and-rotations.ipynb
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_choice, check_range

__all__ = [
    "FORMATS",
    "GRANULARITIES",
    "QTensor",
    "code_units",
    "quantize",
    "fp_grid",
    "qmatmul",
    "fake_quant",
]

# name -> (exponent bits, mantissa bits, bias, fmax); None for int8
_MINIFLOATS = {
    "fp8_e4m3": (4, 3, 7, 448.0),
    "fp6_e2m3": (2, 3, 1, 7.5),
    "fp6_e3m2": (3, 2, 3, 28.0),
    "fp4_e2m1": (2, 1, 1, 6.0),
}
FORMATS = ("int8", *_MINIFLOATS)
GRANULARITIES = ("tensor", "row", "col", "block32")
INT8_MAX = 127.0
BLOCK = 32


def fmax(fmt: str) -> float:
    """Largest representable magnitude of ``fmt`` (127 for ``int8``)."""
    check_choice("fmt", fmt, FORMATS)
    return INT8_MAX if fmt == "int8" else _MINIFLOATS[fmt][3]


@functools.cache
def fp_grid(fmt: str) -> np.ndarray:
    """Every representable value of ``fmt``, sorted, ``±0`` merged.

    Parameters
    ----------
    fmt : str
        ``"fp8_e4m3"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``, ``"fp4_e2m1"`` or ``"int8"`` (the
        integers ``-127..127``).

    Returns
    -------
    numpy.ndarray
        float64, e.g. 63 values for the FP6 formats (64 codes, ``±0`` merged), 15 for FP4
        E2M1, 253 for FP8 E4M3FN (256 codes minus ``±NaN``, ``±0`` merged).

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    check_choice("fmt", fmt, FORMATS)
    if fmt == "int8":
        return np.arange(-127.0, 128.0)
    e, m, bias, top = _MINIFLOATS[fmt]
    vals = {0.0}
    for E in range(2**e):
        for M in range(2**m):
            if E == 0:  # subnormal: 0.M · 2^(1-bias)
                v = (M / 2**m) * 2.0 ** (1 - bias)
            else:  # normal: 1.M · 2^(E-bias)
                v = (1 + M / 2**m) * 2.0 ** (E - bias)
            if v <= top:  # fn formats: the top code(s) are NaN (E4M3) or do not exist
                vals.add(v)
    pos = np.array(sorted(vals))
    return np.concatenate([-pos[:0:-1], pos])


def code_units(fmt: str) -> float:
    """``fmax / quantum``: the largest code of ``fmt`` in units of its smallest quantum
    ``2^(1-bias-m)`` (every code is an integer number of them; 127 for ``int8``): products of
    two codes summed over ``k`` stay exact in float32 while ``code_units² · k < 2^24``."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if fmt == "int8":
        return INT8_MAX
    _, m, bias, top = _MINIFLOATS[fmt]
    return top * 2.0 ** (m + bias - 1)


def round_minifloat(y, fmt: str):
    """Round-to-nearest-even onto the (unscaled) grid of ``fmt``; ``y`` already in range."""
    import torch

    e, m, bias, top = _MINIFLOATS[fmt]
    a = y.abs().clamp(max=top)
    bits = _float_bits(a.dtype)
    if bits is None:  # float16, bfloat16: frexp and a power of two
        _, ex = torch.frexp(a)  # a = f·2^ex, f in [0.5, 1): binade exponent E = ex - 1
        E = (ex - 1).clamp(min=1 - bias)  # below 2^(1-bias): subnormal spacing
        quantum = torch.pow(torch.tensor(2.0, dtype=y.dtype, device=y.device), (E - m).to(y.dtype))
    else:  # the same E and quantum 2^(E-m) from the exponent field (a >= 0): no frexp, no pow
        itype, mbits, ebias = bits
        E = ((a.view(itype) >> mbits) - ebias).clamp_(min=1 - bias)  # subnormal spacing below
        quantum = ((E + (ebias - m)) << mbits).view(a.dtype)
    q = torch.round(a / quantum) * quantum  # torch.round: half to even
    return torch.copysign(q.clamp(max=top), y)


def _float_bits(dtype):
    """``(same-width integer dtype, mantissa bits, exponent bias)`` of float32 and float64, else
    ``None``."""
    import torch

    bits = {torch.float32: (torch.int32, 23, 127), torch.float64: (torch.int64, 52, 1023)}
    return bits.get(dtype)


@functools.cache
def _fp8_table(dtype):
    """The value of every ``float8_e4m3fn`` code (by its byte), in ``dtype``: exact."""
    import torch

    return torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).to(dtype)


@dataclass
class QTensor:
    """A quantized tensor: ``codes · scale`` approximates the original.

    Attributes
    ----------
    codes : torch.Tensor
        ``int8`` for INT8; ``float8_e4m3fn`` for FP8 and for FP6 (every FP6 E2M3/E3M2 value is
        exactly representable in E4M3, so the codes take one byte).
    scale : torch.Tensor
        float, broadcastable to the padded codes: shape ``()`` (tensor), ``(rows, 1)``,
        ``(1, cols)`` or ``(rows/32, 1, cols/32, 1)`` (block32, on the padded tile view).
    fmt, granularity : str
    shape : tuple
        The original shape (``codes`` may be padded for block32).
    dtype : torch.dtype
        The original dtype, restored by :meth:`dequantize`.

    See: book/halo/01-outliers-and-rotations.ipynb
    """

    codes: Any
    scale: Any
    fmt: str
    granularity: str
    shape: tuple
    dtype: Any

    def values(self, dtype=None):
        """The codes as grid values (unscaled; float64 unless ``dtype`` is given)."""
        import torch

        dtype, c = torch.float64 if dtype is None else dtype, self.codes
        exact = dtype in (torch.float32, torch.float64)  # every code is exact in both
        if c.dtype == torch.float8_e4m3fn and c.device.type == "cpu" and exact:
            # a lookup of the 256 codes: torch's elementwise float8 cast is ~4x slower on CPU
            return torch.take(_fp8_table(dtype), c.view(torch.uint8).long())
        return c.to(dtype)

    def dequantize(self):
        """``codes · scale`` in the original dtype and shape."""

        v = self.values()
        if self.granularity == "block32":
            R, C = v.shape
            v = (v.reshape(R // BLOCK, BLOCK, C // BLOCK, BLOCK) * self.scale).reshape(R, C)
            v = v[: self.shape[0], : self.shape[1]]
        else:
            v = v * self.scale
        return v.to(self.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of codes plus scales (what would travel or be stored)."""
        return int(
            self.codes.numel() * self.codes.element_size()
            + self.scale.numel() * self.scale.element_size()
        )


def as_tensor(x: Any, name: str = "x"):
    import torch

    if not isinstance(x, torch.Tensor):
        from lab.core.checks import check_array

        x = torch.as_tensor(check_array(name, x))
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(
            f"{name} must be float16, bfloat16, float32 or float64 "
            f"(got {str(x.dtype).removeprefix('torch.')})"
        )
    return x


def quantize(
    x: Any, fmt: str = "int8", granularity: str = "tensor", clip_ratio: float = 1.0
) -> QTensor:
    """Quantize ``x`` to ``fmt`` with symmetric absmax scaling (round to nearest, ties even).

    Parameters
    ----------
    x : torch.Tensor or array-like
        Any shape for ``"tensor"``; 2-D for ``"row"``, ``"col"`` and ``"block32"``.
    fmt : str
        ``"int8"``, ``"fp8_e4m3"``, ``"fp6_e2m3"`` or ``"fp6_e3m2"``.
    granularity : str
        ``"tensor"`` (one scale), ``"row"`` (one per row), ``"col"`` (one per column) or
        ``"block32"`` (one per 32×32 tile; the tensor is zero-padded to whole tiles).
    clip_ratio : float
        ``c`` in ``(0, 1]``: the scale maps ``c·max|x|`` to the format's largest value, so
        entries above it saturate.

    Returns
    -------
    QTensor
        ``.dequantize()`` gives the approximation, ``.codes`` and ``.scale`` the pieces.

    Examples
    --------
    >>> import torch
    >>> q = quantize(torch.tensor([0.5, -1.0, 0.25]), "int8")
    >>> q.codes.tolist(), round(float(q.scale), 6)
    ([64, -127, 32], 0.007874)

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import torch

    x = as_tensor(x)
    check_choice("fmt", fmt, FORMATS)
    check_choice("granularity", granularity, GRANULARITIES)
    c = check_range("clip_ratio", clip_ratio, 0.0, 1.0, low_inclusive=False)
    if granularity != "tensor" and x.ndim != 2:
        raise ValueError(f"granularity={granularity!r} needs a 2-D x (got shape {tuple(x.shape)})")
    shape, dtype = tuple(x.shape), x.dtype
    # float32 inputs are scaled and rounded in float32, float64 inputs in float64
    v = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    if granularity == "block32":
        R, C = v.shape
        Rp, Cp = -(-R // BLOCK) * BLOCK, -(-C // BLOCK) * BLOCK
        v = torch.nn.functional.pad(v, (0, Cp - C, 0, Rp - R))
        amax = v.abs().reshape(Rp // BLOCK, BLOCK, Cp // BLOCK, BLOCK).amax(dim=(1, 3))
        amax = amax[:, None, :, None]
    elif granularity == "row":
        amax = v.abs().amax(dim=1, keepdim=True)
    elif granularity == "col":
        amax = v.abs().amax(dim=0, keepdim=True)
    else:
        amax = v.abs().amax() if v.numel() else torch.zeros((), dtype=torch.float64)
    if not bool(torch.isfinite(amax).all()):  # amax propagates NaN and inf: one cheap check
        raise ValueError("x must contain only finite values (got NaN or inf)")
    top = fmax(fmt)
    scale = (amax * c / top).clamp(min=1e-5 / INT8_MAX)  # s = c·max|A| / fmax, guarded
    if granularity == "block32":
        Rp, Cp = v.shape
        y = (v.reshape(Rp // BLOCK, BLOCK, Cp // BLOCK, BLOCK) / scale).reshape(Rp, Cp)
    else:
        y = v / scale
    if fmt == "int8":
        codes = torch.round(y).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)  # q = clip(round(A/s))
    else:
        codes = round_minifloat(y, fmt).to(torch.float8_e4m3fn)  # exact: grid ⊂ E4M3
    return QTensor(codes, scale, fmt, granularity, shape, dtype)


def fake_quant(x: Any, fmt: str | None = "int8", granularity: str = "tensor", clip_ratio=1.0):
    """``quantize(...).dequantize()`` (identity for ``fmt=None``): the simulated ``Q(x)``.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    if fmt is None:
        return as_tensor(x)
    return quantize(x, fmt, granularity, clip_ratio).dequantize()


def _scale_axis(q: QTensor, operand: str) -> str:
    """Which axis of a 2-D operand its scales vary along: 'outer', 'inner', 'none', 'block'."""
    g = q.granularity
    if g == "tensor":
        return "none"
    if g == "block32":
        return "block"
    # operand 'a' is (p, k): rows are outer; operand 'b' is (k, q): columns are outer
    row_outer = operand == "a"
    return "outer" if (g == "row") == row_outer else "inner"


def qmatmul(a: QTensor, b: QTensor, transpose_b: bool = True):
    """Simulated low-precision GEMM ``Q(A)·Q(B)`` with one rescale of the accumulator.

    Parameters
    ----------
    a : QTensor
        ``(p, k)``.
    b : QTensor
        ``(q, k)`` if ``transpose_b`` (the ``X Wᵀ`` layout of a linear layer), else ``(k, q)``.
    transpose_b : bool

    The codes are multiplied in float64 (float32 when every partial sum is an integer count
    of the products' quantum below ``2^24``: INT8 for ``127²·k < 2^24``, FP6 E2M3 for
    ``60²·k < 2^24``, the same result bit for bit), which is exact for INT8 codes
    (``|sum| <= 127²·k < 2^53``) and for FP8/FP6 codes up to float64 rounding of the sum. Real INT8 / FP8 GEMMs on CUDA: :func:`lab.halo.fast.qmatmul`.

    Returns
    -------
    torch.Tensor
        ``(p, q)`` in the scales' dtype (float64 for float64 inputs, else float32).

    Raises
    ------
    ValueError
        ``"scale along reduction dim"`` when a row/column scale varies along the contracted
        dimension (the product is then not a rescaled low-precision GEMM).

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import torch

    for name, q in (("a", a), ("b", b)):
        if not isinstance(q, QTensor):
            raise TypeError(f"{name} must be a QTensor from quantize (got {type(q).__name__})")
        if q.codes.ndim != 2:
            raise ValueError(f"{name} must be 2-D (got shape {q.shape})")
    transpose_b = check_bool("transpose_b", transpose_b)
    if transpose_b:  # view b as (k, q): a 'row' scale of (q, k) is an outer (column) scale
        b = QTensor(
            b.codes.T,
            (b.scale.permute(2, 3, 0, 1) if b.granularity == "block32" else b.scale.mT)
            if b.scale.ndim >= 2
            else b.scale,
            b.fmt,
            {"row": "col", "col": "row"}.get(b.granularity, b.granularity),
            b.shape[::-1],
            b.dtype,
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {a.shape}, b is {b.shape} (as k×q)")
    sa, sb = _scale_axis(a, "a"), _scale_axis(b, "b")
    if "inner" in (sa, sb):
        raise ValueError(
            "scale along reduction dim: per-row/column scales must sit on the outer dimensions "
            f"(a has {a.granularity!r} scales, b has {b.granularity!r} scales as a k×q operand)"
        )
    if "block" in (sa, sb):
        if sa != sb:
            raise ValueError("block32 operands can only be multiplied with block32 operands")
        # Jetfire: accumulate each 32-wide k-slice separately and rescale it by its tiles
        A, B = a.values(), b.values()
        Ab, Bb = A.reshape(A.shape[0], -1, BLOCK), B.reshape(-1, BLOCK, B.shape[1])
        part = torch.einsum("pti,tiq->tpq", Ab, Bb)  # (tiles_k, p, q) exact accumulators
        sA = a.scale[:, 0, :, 0].double().repeat_interleave(BLOCK, 0)  # (p_pad, tiles_k)
        sB = b.scale[:, 0, :, 0].double().repeat_interleave(BLOCK, 1)  # (tiles_k, q_pad)
        out = torch.einsum("tpq,pt,tq->pq", part, sA, sB)
        return out[: a.shape[0], : b.shape[1]]
    # exact accumulation in float32 when every partial sum is an integer count of the
    # products' quantum below 2^24 (INT8: 127²·k; FP6 E2M3: 60²·k; FP8 never): bit for bit
    small = code_units(a.fmt) * code_units(b.fmt) * a.shape[1] < 2**24
    acc_dtype = torch.float32 if small else torch.float64
    acc = a.values(acc_dtype) @ b.values(acc_dtype)  # exact integer (or minifloat) accumulate
    out = torch.promote_types(a.scale.dtype, b.scale.dtype)
    return acc.to(out) * a.scale.to(out) * b.scale.to(out)  # one rescale: s_A · s_B
