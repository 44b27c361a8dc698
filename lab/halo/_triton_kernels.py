"""The triton kernels of :mod:`lab.halo.fast` (imported lazily: this module imports triton).

Kept at module level because ``@triton.jit`` functions must be globals to call each other.

See: book/halo/02-fwht-kernel.ipynb
"""

import triton
import triton.language as tl


@triton.jit
def _butterflies(x, N: tl.constexpr, LOG_N: tl.constexpr):
    for s in tl.static_range(LOG_N):
        h: tl.constexpr = 1 << s  # stride of this stage
        x = tl.reshape(x, (N // (2 * h), 2, h))
        x = tl.permute(x, (0, 2, 1))
        a, b = tl.split(x)
        x = tl.join(a + b, a - b)  # (a, b) -> (a + b, a - b)
        x = tl.permute(x, (0, 2, 1))
        x = tl.reshape(x, (N,))
    return x


@triton.jit
def fwht_kernel(X, Y, stride_x, stride_y, scale, N: tl.constexpr, LOG_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(X + row * stride_x + offs).to(tl.float32)
    y = _butterflies(x, N, LOG_N) * scale
    tl.store(Y + row * stride_y + offs, y.to(Y.dtype.element_ty))


@triton.jit
def rowmax_kernel(X, M, stride_x, N: tl.constexpr, LOG_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(X + row * stride_x + offs).to(tl.float32)
    y = _butterflies(x, N, LOG_N)
    tl.store(M + row, tl.max(tl.abs(y), axis=0))


@triton.jit
def quant_kernel(X, Q, S, stride_x, inv_sqrt_n, PER_ROW: tl.constexpr, N: tl.constexpr,
                 LOG_N: tl.constexpr, FP8: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(X + row * stride_x + offs).to(tl.float32)
    y = _butterflies(x, N, LOG_N) * inv_sqrt_n
    if PER_ROW:
        amax = tl.max(tl.abs(y), axis=0)
        s = tl.maximum(amax / (448.0 if FP8 else 127.0), 1e-5 / 127.0)
        tl.store(S + row, s)
    else:
        s = tl.load(S)
    v = y / s
    if FP8:
        v = tl.minimum(tl.maximum(v, -448.0), 448.0)
        tl.store(Q + row * N + offs, v.to(Q.dtype.element_ty))
    else:
        # round half to even in fp32: adding and removing 1.5·2^23 (|v| <= 127)
        r = (v + 12582912.0) - 12582912.0
        r = tl.minimum(tl.maximum(r, -127.0), 127.0)
        tl.store(Q + row * N + offs, r.to(tl.int8))
