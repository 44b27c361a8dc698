"""Hadamard matrices and the fast Walsh-Hadamard transform (FWHT).

``hadamard_matrix(n)`` is the normalized Hadamard matrix ``H_n`` (``H_n H_nᵀ = I``) for
``n = 2^p`` (Sylvester, symmetric) and ``n = K·2^p`` with ``K`` in :data:`SUPPORTED_K`
(``H_K ⊗ H_{2^p}``; ``H_K`` from Paley's constructions, orthogonal but not symmetric).

``fwht(x, dim)`` applies ``H_n`` to every vector along ``dim`` (``y = H_n v``; for a matrix of
rows ``X`` that is ``X H_nᵀ``) in ``O(n log n)``: ``log2 n`` butterfly stages
``(a, b) -> (a + b, a - b)`` at strides ``1, 2, ..., n/2``, then the dense ``K×K`` factor
across the ``K`` contiguous blocks, then the scale ``1/sqrt(n)``.

Three implementations, tested against each other and against ``scipy.linalg.hadamard``:

* the **reference** (numpy arrays in, numpy out): one vectorised butterfly stage per line,
  exactly the algorithm above;
* the **compiled CPU kernel** (float32/float64 torch tensors on CPU, when a C compiler is
  there to build it once): the same butterflies in C, row by row while the row is in cache
  (:mod:`lab.halo.fwht_cpu`); differentiable (the transpose is the ``inverse`` transform);
* the **torch path** (any other tensor, or no compiler): the butterfly stages grouped into
  ``ceil(p/6)`` Kronecker factors, ``H_{2^p} = H_{r1} ⊗ H_{r2} ⊗ ...`` with ``r <= 64``
  (4096 = 64·64), each applied along its own axis with one small batched matmul. It does
  ``r/log2(r)`` times the additions of the butterflies (128 instead of 12 per element at
  n = 4096, still 32x fewer than the dense ``n = 4096`` per element) but only two passes over
  memory, which is what a memory-bound transform pays for on CPU (deviation from the paper's
  kernel, which keeps a row in registers: see :func:`lab.halo.fast.fwht_triton`).

:func:`fwht_backend` says which one a given input runs (``"reference"``, ``"c"`` or
``"torch"``); ``LAB_FWHT_BACKEND=torch`` forces the torch path on CPU.

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_int

__all__ = [
    "SUPPORTED_K",
    "hadamard_matrix",
    "fwht",
    "fwht_backend",
    "is_hadamard_size",
    "next_hadamard_size",
    "split_size",
]

# K -> (construction, q). Paley I gives order q + 1 for a prime q = 3 (mod 4); Paley II gives
# order 2 (q + 1) for a prime q = 1 (mod 4). Deviation from HALO: its table also holds
# K = 52, 156, 172 (Williamson constructions, e.g. for 11008 = 172·64), not tabulated here.
_PALEY = {12: ("I", 11), 20: ("I", 19), 28: ("II", 13), 36: ("II", 17), 44: ("I", 43),
          60: ("I", 59), 108: ("I", 107), 140: ("I", 139)}  # fmt: skip
SUPPORTED_K = tuple(sorted(_PALEY))
MAX_N = 1 << 20


def split_size(n: int) -> tuple[int, int] | None:
    """``(K, 2^p)`` with ``n = K·2^p`` (``K = 1`` for powers of two), or ``None``."""
    if n < 1:
        return None
    p2 = n & -n  # largest power of two dividing n
    k = n // p2
    if k == 1:
        return 1, p2
    for K in SUPPORTED_K:
        if n % K == 0 and (n // K) & (n // K - 1) == 0:
            return K, n // K
    return None


def is_hadamard_size(n: int) -> bool:
    """True when :func:`hadamard_matrix` supports order ``n``."""
    return isinstance(n, int | np.integer) and 1 <= n <= MAX_N and split_size(int(n)) is not None


def next_hadamard_size(n: int) -> int:
    """The smallest supported Hadamard order ``>= n`` (used to pad tokens for HALO-2)."""
    n = check_int("n", n, 1, MAX_N)
    m = n
    while not is_hadamard_size(m):
        m += 1
    return m


def _nearest_sizes(n: int) -> str:
    lo = n
    while lo > 1 and not is_hadamard_size(lo):
        lo -= 1
    hi = next_hadamard_size(min(n, MAX_N))
    return f"{lo} or {hi}"


def _check_size(name: str, n: int) -> int:
    if not is_hadamard_size(n):
        raise ValueError(
            f"{name} = {n} is not a supported Hadamard size (2^p or K·2^p with K in "
            f"{list(SUPPORTED_K)}, at most {MAX_N}); nearest supported sizes: {_nearest_sizes(n)}"
        )
    return int(n)


def _legendre(a: int, q: int) -> int:
    a %= q
    if a == 0:
        return 0
    return 1 if pow(a, (q - 1) // 2, q) == 1 else -1


@functools.cache
def _paley(K: int) -> np.ndarray:
    """Unnormalized ``±1`` Hadamard matrix of order ``K`` (Paley I or II)."""
    kind, q = _PALEY[K]
    Q = np.array([[_legendre(j - i, q) for j in range(q)] for i in range(q)], dtype=np.float64)
    one = np.ones((q, 1))
    if kind == "I":  # H = I + [[0, 1ᵀ], [-1, Q]]  (skew Hadamard, q = 3 mod 4)
        S = np.block([[np.zeros((1, 1)), one.T], [-one, Q]])
        H = np.eye(q + 1) + S
    else:  # H = C ⊗ [[1, 1], [1, -1]] + I ⊗ [[1, -1], [-1, -1]],  C = [[0, 1ᵀ], [1, Q]]
        C = np.block([[np.zeros((1, 1)), one.T], [one, Q]])
        H = np.kron(C, [[1, 1], [1, -1]]) + np.kron(np.eye(q + 1), [[1, -1], [-1, -1]])
    assert np.array_equal(H @ H.T, K * np.eye(K)), K  # a construction bug must not pass
    return H


@functools.cache
def _sylvester(n: int) -> np.ndarray:
    H = np.ones((1, 1))
    while H.shape[0] < n:  # H_{2k} = [[H_k, H_k], [H_k, -H_k]]
        H = np.block([[H, H], [H, -H]])
    return H


def hadamard_matrix(n: int, dtype: Any = None, *, normalized: bool = True):
    """The Hadamard matrix of order ``n`` (a torch tensor, float64 by default).

    Parameters
    ----------
    n : int
        ``2^p`` or ``K·2^p`` with ``K`` in ``SUPPORTED_K`` (12, 20, 28, 36, 44, 60, 108, 140).
    dtype : torch dtype, optional
        Default ``torch.float64``.
    normalized : bool
        Scale by ``1/sqrt(n)`` so that ``H Hᵀ = I`` (default).

    Returns
    -------
    torch.Tensor
        ``H_K ⊗ H_{2^p}`` (Sylvester ``H_{2^p}`` is symmetric; ``H_K`` is not).

    Raises
    ------
    ValueError
        For an unsupported order (the message names the nearest supported ones).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    n = check_int("n", n, 1, MAX_N)
    _check_size("n", n)
    normalized = check_bool("normalized", normalized)
    K, P = split_size(n)
    H = _sylvester(P) if K == 1 else np.kron(_paley(K), _sylvester(P))
    if normalized:
        H = H / math.sqrt(n)
    return torch.tensor(H, dtype=torch.float64 if dtype is None else dtype)


# ------------------------------------------------------------------------------------------
# Reference kernel: numpy butterflies
# ------------------------------------------------------------------------------------------
def _fwht_reference(x: np.ndarray, normalized: bool, inverse: bool) -> np.ndarray:
    """Rows of ``x`` (shape ``(rows, n)``), float64."""
    rows, n = x.shape
    K, P = split_size(n)
    y = x.reshape(rows, K, P).copy()
    h = 1
    while h < P:  # one butterfly stage per stride h = 1, 2, ..., P/2
        v = y.reshape(rows, K, P // (2 * h), 2, h)
        a, b = v[..., 0, :].copy(), v[..., 1, :]
        v[..., 0, :] += b  # a + b
        v[..., 1, :] = a - b  # a - b
        h *= 2
    if K > 1:  # dense K×K factor across blocks: (H_K ⊗ H_P) v = vec(H_K V H_Pᵀ)
        HK = _paley(K)
        y = np.einsum("jk,rkp->rjp", HK.T if inverse else HK, y)
    y = y.reshape(rows, n)
    if normalized:
        y = y / math.sqrt(n)  # H_n = H_n^(±1) / sqrt(n)
    return y


# ------------------------------------------------------------------------------------------
# Fast path: torch, radix-16 Kronecker factors (CPU or CUDA)
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

    return torch.tensor(_sylvester(size), dtype=getattr(torch, dtype_name), device=device)


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

    return torch.tensor(_paley(K), dtype=getattr(torch, dtype_name), device=device)


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
    out = torch.from_numpy(
        np.empty(tuple(src.shape), dtype=np.float64 if src.dtype == torch.float64 else np.float32)
    )
    fwht_rows_(src, out, 1.0 / math.sqrt(n) if normalized else 1.0)  # H_P on each block
    if K == 1:
        return out.reshape(rows, n)
    HK = _factor_k(K, str(x.dtype).removeprefix("torch."), "cpu")
    y = torch.matmul(HK.T if inverse else HK, out.reshape(rows, K, P))  # K×K across blocks
    return y.reshape(rows, n)


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
    """Fast Walsh-Hadamard transform along ``dim``: ``y = H_n v`` for every vector ``v``.

    Parameters
    ----------
    x : numpy.ndarray or torch.Tensor
        A numpy array runs the **reference** (float64 butterflies) and returns numpy; a torch
        tensor (float16, bfloat16, float32 or float64; any device) runs the **fast path** and
        returns a tensor of the same dtype on the same device (16-bit inputs are computed in
        float32). On CPU the fast path is the compiled C kernel when it could be built, else
        torch: :func:`fwht_backend` says which.
    dim : int
        The axis to transform; its length must be a supported Hadamard size.
    normalized : bool
        Divide by ``sqrt(n)`` (default), making the transform orthogonal. With ``False`` the
        ``±1`` matrix is applied (integer inputs stay exact in float64).
    inverse : bool
        Apply ``H_nᵀ`` instead of ``H_n``. Identical for ``n = 2^p`` (Sylvester ``H`` is
        symmetric, so ``fwht`` is its own inverse); needed for ``K·2^p``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Same shape as ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> fwht(np.array([1.0, 0.0, 0.0, 0.0]), normalized=False)
    array([1., 1., 1., 1.])

    See: book/halo/02-fwht-kernel.ipynb
    """
    normalized = check_bool("normalized", normalized)
    inverse = check_bool("inverse", inverse)
    is_torch = hasattr(x, "detach") and hasattr(x, "device")
    if not is_torch:
        if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
            arr = x.astype(np.float64)
        else:
            from lab.core.checks import check_array

            arr = check_array("x", x, finite=False)
        if arr.ndim == 0:
            raise ValueError("x must have at least one dimension (got a scalar)")
    else:
        import torch

        if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            raise TypeError(
                "x must be float16, bfloat16, float32 or float64 "
                f"(got {str(x.dtype).removeprefix('torch.')})"
            )
        if x.ndim == 0:
            raise ValueError("x must have at least one dimension (got a scalar)")
        arr = x
    nd = arr.ndim
    dim = check_int("dim", dim, -nd, nd - 1) % nd
    n = arr.shape[dim]
    _check_size(f"x.shape[{dim}]", int(n))
    if not is_torch:
        moved = np.moveaxis(arr, dim, -1)
        shp = moved.shape
        out = _fwht_reference(moved.reshape(-1, n), normalized, inverse)
        return np.moveaxis(out.reshape(shp), -1, dim)
    import torch

    orig = arr.dtype
    work = arr if orig in (torch.float32, torch.float64) else arr.float()
    moved = work.movedim(dim, -1)
    shp = moved.shape
    out = _fwht_rows(moved.reshape(-1, n), normalized, inverse)
    return out.reshape(shp).movedim(-1, dim).to(orig)
