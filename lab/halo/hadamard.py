"""Hadamard matrices: the orders HALO needs and their normalized matrices.

``hadamard_matrix(n)`` is the normalized Hadamard matrix ``H_n`` (``H_n H_nᵀ = I``) for
``n = 2^p`` (Sylvester, symmetric) and ``n = K·2^p`` with ``K`` in :data:`SUPPORTED_K`
(``H_K ⊗ H_{2^p}``; ``H_K`` from Paley's constructions, orthogonal but not symmetric).

The transform ``fwht(x, dim)`` (``y = H_n v`` along ``dim`` in ``O(n log n)``) has its
reference kernel, the numpy butterflies, in :mod:`lab.halo.reference` and its fast paths
(the compiled C kernel on CPU, the torch Kronecker-factor path on any device, the triton
kernels on CUDA) in :mod:`lab.halo.fast`, under the same name.

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_int

__all__ = [
    "SUPPORTED_K",
    "hadamard_matrix",
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


def check_size(name: str, n: int) -> int:
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
def paley(K: int) -> np.ndarray:
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
def sylvester(n: int) -> np.ndarray:
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
    check_size("n", n)
    normalized = check_bool("normalized", normalized)
    K, P = split_size(n)
    H = sylvester(P) if K == 1 else np.kron(paley(K), sylvester(P))
    if normalized:
        H = H / math.sqrt(n)
    return torch.tensor(H, dtype=torch.float64 if dtype is None else dtype)
