"""HALO's reference kernels: rotation placements and the three products of each level.

One linear layer ``Y = X Wᵀ`` (``X``: ``b×m`` tokens × in-features, ``W``: ``n×m``) has three
products, each run in low precision with a quantize-dequantize ``Q``:

* forward ``Y = X Wᵀ`` (inner dim ``m``),
* input gradient ``E_X = E_Y W`` (inner dim ``n``; the tokens ``b`` are an *outer* dim),
* weight gradient ``G = E_Yᵀ X`` (inner dim ``b``).

HALO levels (``H = H_m`` over the in-features, ``H_b`` over the tokens; Ashkboos et al.,
NeurIPS 2025; reconstructed from the official code ``IST-DASLab/HALO``, see the chapter):

* HALO-0: ``Y = Q(X) Q(W)ᵀ``, ``E_X = Q(E_Y) Q(W)``, ``G = Q(E_Y)ᵀ Q(X)``;
* HALO-1: ``Y = Q(XH) Q(WH)ᵀ`` (middle rotation, cancels exactly),
  ``E_X = [Q(E_Y) Q(WH)] Hᵀ``, ``G = [Q(E_Y)ᵀ Q(XH)] Hᵀ`` (right rotation, undone on the output);
* HALO-2: as HALO-1, but ``E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ`` (left rotation over the tokens,
  which is the only placement that spreads token-wise outliers of ``E_Y``).

The transform itself, :func:`fwht` (the numpy butterflies; torch tensors run
:func:`lab.halo.fast.fwht`), is the reference kernel of the chapter's notebook 2.

Rotations are ``fwht`` applications (``XH`` is computed as ``fwht(X)``, i.e. ``R = H_mᵀ`` on
the right, which is the same orthogonal trick for any Hadamard matrix). The equation labels
below (``# eq. (halo-y)``, ``# eq. (halo-ex)``, ``# eq. (halo-g)``; ``# eq. (halo-fwht)`` for
the butterflies) are the labelled equations of the chapter's lesson page (book/halo/index.md):
the paper's main-text equations were not read verbatim (reconstructed from the official code).

The autograd layer that runs these products inside training is
:class:`lab.halo.layer.HaloLinear` (tested against :func:`halo_products`).

See: book/halo/01-outliers-and-rotations.ipynb and book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_range

from .formats import FORMATS, as_tensor, quantize
from .hadamard import check_size, paley, split_size

__all__ = [
    "PLACEMENTS",
    "LEVELS",
    "fwht",
    "butterfly_stages",
    "rotated_matmul",
    "row_relative_error",
    "halo_products",
]

PLACEMENTS = ("none", "middle", "left", "right")
LEVELS = (0, 1, 2)
LINEAR_GRANULARITIES = ("tensor", "row", "block32")


def fwht(x, dim: int = -1, normalized: bool = True, *, inverse: bool = False):
    """Fast Walsh-Hadamard transform along ``dim``: ``y = H_n v`` for every vector ``v``.

    The **reference** kernel: ``log2 n`` butterfly stages ``(a, b) -> (a + b, a - b)`` at
    strides ``1, 2, ..., n/2`` on float64 numpy arrays, then the dense ``K×K`` factor across
    the ``K`` contiguous blocks for ``n = K·2^p``, then the scale ``1/sqrt(n)``. A torch
    tensor (float16, bfloat16, float32 or float64; any device) runs the **fast path**,
    :func:`lab.halo.fast.fwht` (the compiled C kernel on CPU, else torch), and returns a tensor
    of the same dtype on the same device; :func:`lab.halo.fast.fwht_backend` says which.

    Parameters
    ----------
    x : numpy.ndarray or torch.Tensor
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
    if hasattr(x, "detach") and hasattr(x, "device"):  # a torch tensor: the fast path
        from .fast import fwht as fast_fwht

        return fast_fwht(x, dim, normalized, inverse=inverse)
    if isinstance(x, np.ndarray) and x.dtype.kind in "fiu":
        arr = x.astype(np.float64)
    else:
        from lab.core.checks import check_array

        arr = check_array("x", x, finite=False)
    if arr.ndim == 0:
        raise ValueError("x must have at least one dimension (got a scalar)")
    dim = check_int("dim", dim, -arr.ndim, arr.ndim - 1) % arr.ndim
    n = arr.shape[dim]
    check_size(f"x.shape[{dim}]", int(n))
    moved = np.moveaxis(arr, dim, -1)
    rows = moved.reshape(-1, n)
    K, P = split_size(n)
    y = rows.reshape(len(rows), K, P).copy()
    h = 1
    while h < P:  # eq. (halo-fwht): one butterfly stage per stride h = 1, 2, ..., P/2
        v = y.reshape(len(rows), K, P // (2 * h), 2, h)
        a, b = v[..., 0, :].copy(), v[..., 1, :]
        v[..., 0, :] += b  # a + b
        v[..., 1, :] = a - b  # a - b
        h *= 2
    if K > 1:  # eq. (H_K ⊗ H_P): dense K×K factor across blocks, vec(H_K V H_Pᵀ)
        HK = paley(K)
        y = np.einsum("jk,rkp->rjp", HK.T if inverse else HK, y)
    y = y.reshape(len(rows), n)
    if normalized:
        y = y / math.sqrt(n)  # H_n = H_n^(±1) / sqrt(n)
    return np.moveaxis(y.reshape(moved.shape), -1, dim)


def butterfly_stages(x) -> list[np.ndarray]:
    """The vector after 0, 1, ..., ``log2 n`` unnormalized butterfly stages of :func:`fwht`
    (eq. (halo-fwht), one stage at a time: what notebook 2's widget steps through).

    See: book/halo/02-fwht-kernel.ipynb
    """
    v = np.asarray(x, dtype=np.float64).copy()
    n = v.size
    if v.ndim != 1 or n < 1 or n & (n - 1):
        raise ValueError(f"x must be a vector of power-of-two length (got shape {v.shape})")
    out = [v.copy()]
    h = 1
    while h < n:  # eq. (halo-fwht): stride h = 1, 2, ..., n/2
        w = v.reshape(n // (2 * h), 2, h)
        a, b = w[:, 0].copy(), w[:, 1].copy()
        w[:, 0], w[:, 1] = a + b, a - b  # (a, b) -> (a + b, a - b)
        out.append(v.copy())
        h *= 2
    return out


def check_fmt(fmt):
    if fmt is not None:
        check_choice("fmt", fmt, FORMATS)
    return fmt


def quantize_operand(A, fmt, gran, clip, operand):
    """Quantize a 2-D operand of a product ``A·B`` with its scales on the outer dims."""
    g = {"tensor": "tensor", "block32": "block32"}.get(gran, "row" if operand == "a" else "col")
    return quantize(A, fmt, g, clip)


def lowp_matmul(A, B, fmt, gran, clip, exact=True):
    """``Q(A)·Q(B)`` (``A``: ``p×k``, ``B``: ``k×q``); exact ``A @ B`` for ``fmt=None``."""
    from .fast import qmatmul  # exact=False: real INT8/FP8 GEMMs on CUDA

    if fmt is None:
        return A @ B
    out = qmatmul(
        quantize_operand(A, fmt, gran, clip, "a"),
        quantize_operand(B, fmt, gran, clip, "b"),
        False,
        exact=exact,
    )
    return out.to(A.dtype)


def rotated_matmul(
    A: Any,
    B: Any,
    placement: str = "none",
    fmt: str | None = "int8",
    granularity: str = "tensor",
    clip_ratio: float = 1.0,
):
    """Low-precision product ``A·B`` with a Hadamard rotation at one placement.

    ========== ================================ =====================================
    placement  computed                         post-processing
    ========== ================================ =====================================
    none       ``Q(A)·Q(B)``                    none
    middle     ``Q(A H_kᵀ)·Q(H_k B)``           none (cancels inside the product)
    left       ``H_pᵀ·[Q(H_p A)·Q(B)]``         inverse rotation over the ``p`` rows
    right      ``[Q(A)·Q(B H_qᵀ)]·H_q``         inverse rotation over the ``q`` columns
    ========== ================================ =====================================

    Parameters
    ----------
    A, B : torch.Tensor
        ``p×k`` and ``k×q`` (float); the rotated dimension must be a Hadamard size.
    placement : str
        ``"none"``, ``"middle"``, ``"left"`` or ``"right"``.
    fmt : str or None
        A format of :func:`lab.halo.quantize` (``None``: no quantization, the rotations must
        then cancel to rounding error).
    granularity : str
        ``"tensor"``, ``"row"`` (scales on the outer dims: rows of ``A``, columns of ``B``) or
        ``"block32"``.
    clip_ratio : float

    Returns
    -------
    torch.Tensor
        ``p×q``, in ``A``'s dtype.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    A, B = as_tensor(A, "A"), as_tensor(B, "B")
    check_choice("placement", placement, PLACEMENTS)
    check_fmt(fmt)
    check_choice("granularity", granularity, LINEAR_GRANULARITIES)
    clip_ratio = check_range("clip_ratio", clip_ratio, 0.0, 1.0, low_inclusive=False)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A and B must be p×k and k×q (got {tuple(A.shape)}, {tuple(B.shape)})")
    args = (fmt, granularity, clip_ratio)
    if placement == "none":
        return lowp_matmul(A, B, *args)
    if placement == "middle":  # Q(A H_kᵀ) Q(H_k B): H_kᵀ H_k = I inside the product
        check_size("k (inner dimension)", A.shape[1])
        return lowp_matmul(fwht(A, dim=1), fwht(B, dim=0), *args)
    if placement == "left":  # H_pᵀ [Q(H_p A) Q(B)]
        check_size("p (rows of A)", A.shape[0])
        return fwht(lowp_matmul(fwht(A, dim=0), B, *args), dim=0, inverse=True)
    check_size("q (columns of B)", B.shape[1])  # right: [Q(A) Q(B H_qᵀ)] H_q
    return fwht(lowp_matmul(A, fwht(B, dim=1), *args), dim=1, inverse=True)


def row_relative_error(approx: Any, exact: Any):
    """Mean over rows of ``‖approx_i − exact_i‖ / ‖exact_i‖`` (float).

    The per-row error, not the Frobenius error of the whole matrix: outlier rows dominate the
    Frobenius norm and would hide ordinary rows that were zeroed.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    approx = as_tensor(approx, "approx").detach().double()
    exact = as_tensor(exact, "exact").detach().double()
    if approx.shape != exact.shape:
        raise ValueError(f"shapes differ: {tuple(approx.shape)} vs {tuple(exact.shape)}")
    if exact.ndim == 0 or exact.numel() == 0:
        raise ValueError(
            f"approx and exact must have at least one row (got shape {tuple(exact.shape)})"
        )
    num = (approx - exact).reshape(exact.shape[0], -1).norm(dim=1)
    den = exact.reshape(exact.shape[0], -1).norm(dim=1).clamp(min=1e-300)
    return float((num / den).mean())


def check_layer_shapes(X: Any, W: Any, E: Any) -> None:
    """A linear layer's operands: 2-D ``X`` (b×m), ``W`` (n×m) and output gradient ``E_Y`` (b×n)."""
    if X.ndim != 2 or W.ndim != 2 or E.ndim != 2:
        raise ValueError("X, W and E_Y must be 2-D")
    if X.shape[1] != W.shape[1] or E.shape != (X.shape[0], W.shape[0]):
        raise ValueError(
            f"shapes must be X b×m, W n×m, E_Y b×n (got {tuple(X.shape)}, {tuple(W.shape)}, "
            f"{tuple(E.shape)})"
        )


def halo_products(
    X: Any,
    W: Any,
    E_Y: Any,
    level: int = 2,
    fmt: str | None = "int8",
    clip_ratio: float = 1.0,
):
    """The three products of one HALO linear layer, straight from the level table.

    Per-tensor scales; the backward products reuse the forward's ``Q(XH)`` and ``Q(WH)``
    (HALO's ``...WithQFSDPBackwardXH`` variant), as :class:`lab.halo.layer.HaloLinear` does.

    Parameters
    ----------
    X, W, E_Y : torch.Tensor
        ``b×m`` inputs, ``n×m`` weight, ``b×n`` error ``∂ℓ/∂Y``; ``m`` must be a Hadamard size
        for levels 1, 2 (the tokens are zero-padded to one for level 2).
    level : int
        0, 1 or 2.
    fmt : str or None
        A format of :func:`lab.halo.quantize`; ``None``: no quantization.
    clip_ratio : float

    Returns
    -------
    dict
        ``{"Y": X Wᵀ, "E_X": E_Y W, "G": E_Yᵀ X}`` as computed by HALO-``level``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    from .hadamard import next_hadamard_size

    X, W, E = (as_tensor(t, nm) for t, nm in ((X, "X"), (W, "W"), (E_Y, "E_Y")))
    level = check_int("level", level, 0, 2)
    check_fmt(fmt)
    clip_ratio = check_range("clip_ratio", clip_ratio, 0.0, 1.0, low_inclusive=False)
    check_layer_shapes(X, W, E)
    if level >= 1:
        check_size("m (in-features)", X.shape[1])

    def Q(A):  # quantize-dequantize, one scale per tensor
        return A if fmt is None else quantize(A, fmt, "tensor", clip_ratio).dequantize()

    def H(A, dim=-1, inverse=False):  # A H over dim (inverse: A Hᵀ)
        return fwht(A, dim=dim, inverse=inverse)

    if level == 0:
        qX, qW = Q(X), Q(W)
        Y = qX @ qW.T  # eq. (halo-y) HALO-0: Q(X) Q(W)ᵀ
        E_X = Q(E) @ qW  # eq. (halo-ex) Q(E_Y) Q(W)
        G = Q(E).T @ qX  # eq. (halo-g) Q(E_Y)ᵀ Q(X)
        return {"Y": Y, "E_X": E_X, "G": G}
    qXH, qWH = Q(H(X)), Q(H(W))
    Y = qXH @ qWH.T  # eq. (halo-y) HALO-1/2: Q(XH) Q(WH)ᵀ, H Hᵀ = I cancels inside
    if level == 1:
        E_X = H(Q(E) @ qWH, inverse=True)  # eq. (halo-ex) HALO-1: [Q(E_Y) Q(WH)] Hᵀ
    else:
        b = E.shape[0]
        bp = next_hadamard_size(b)  # deviation: tokens zero-padded to a Hadamard size
        Ep = torch.nn.functional.pad(E, (0, 0, 0, bp - b))
        inner = Q(H(Ep, dim=0)) @ qWH  # Q(H_b E_Y) Q(WH)
        back = H(inner, dim=0, inverse=True)[:b]  # H_bᵀ [...], the padded tokens dropped
        E_X = H(back, inverse=True)  # eq. (halo-ex) HALO-2: H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ
    G = H(Q(E).T @ qXH, inverse=True)  # eq. (halo-g) [Q(E_Y)ᵀ Q(XH)] Hᵀ
    return {"Y": Y, "E_X": E_X, "G": G}
