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

Rotations are ``fwht`` applications (``XH`` is computed as ``fwht(X)``, i.e. ``R = H_mᵀ`` on
the right, which is the same orthogonal trick for any Hadamard matrix). The equation labels
below (``# (Y)``, ``# (E_X)``, ``# (G)``) are the level table of the chapter page: the paper's
main-text equations were not read verbatim (reconstructed from the official code).

The autograd layer that runs these products inside training is
:class:`lab.halo.layer.HaloLinear` (tested against :func:`halo_products`).

See: book/halo/01-outliers-and-rotations.ipynb and book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from typing import Any

from lab.core.checks import check_choice, check_int, check_range

from .formats import FORMATS, qmatmul, quantize
from .hadamard import _check_size, fwht

__all__ = ["PLACEMENTS", "LEVELS", "rotated_matmul", "row_relative_error", "halo_products"]

PLACEMENTS = ("none", "middle", "left", "right")
LEVELS = (0, 1, 2)
LINEAR_GRANULARITIES = ("tensor", "row", "block32")


def _check_fmt(fmt):
    if fmt is not None:
        check_choice("fmt", fmt, FORMATS)
    return fmt


def _q(A, fmt, gran, clip, operand):
    """Quantize a 2-D operand of a product ``A·B`` with its scales on the outer dims."""
    g = {"tensor": "tensor", "block32": "block32"}.get(gran, "row" if operand == "a" else "col")
    return quantize(A, fmt, g, clip)


def _lowp_mm(A, B, fmt, gran, clip, exact=True):
    """``Q(A)·Q(B)`` (``A``: ``p×k``, ``B``: ``k×q``); exact ``A @ B`` for ``fmt=None``."""
    if fmt is None:
        return A @ B
    out = qmatmul(_q(A, fmt, gran, clip, "a"), _q(B, fmt, gran, clip, "b"), False, exact=exact)
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
    from .formats import _as_tensor

    A, B = _as_tensor(A, "A"), _as_tensor(B, "B")
    check_choice("placement", placement, PLACEMENTS)
    _check_fmt(fmt)
    check_choice("granularity", granularity, LINEAR_GRANULARITIES)
    clip_ratio = check_range("clip_ratio", clip_ratio, 0.0, 1.0, low_inclusive=False)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A and B must be p×k and k×q (got {tuple(A.shape)}, {tuple(B.shape)})")
    args = (fmt, granularity, clip_ratio)
    if placement == "none":
        return _lowp_mm(A, B, *args)
    if placement == "middle":  # Q(A H_kᵀ) Q(H_k B): H_kᵀ H_k = I inside the product
        _check_size("k (inner dimension)", A.shape[1])
        return _lowp_mm(fwht(A, dim=1), fwht(B, dim=0), *args)
    if placement == "left":  # H_pᵀ [Q(H_p A) Q(B)]
        _check_size("p (rows of A)", A.shape[0])
        return fwht(_lowp_mm(fwht(A, dim=0), B, *args), dim=0, inverse=True)
    _check_size("q (columns of B)", B.shape[1])  # right: [Q(A) Q(B H_qᵀ)] H_q
    return fwht(_lowp_mm(A, fwht(B, dim=1), *args), dim=1, inverse=True)


def row_relative_error(approx: Any, exact: Any):
    """Mean over rows of ``‖approx_i − exact_i‖ / ‖exact_i‖`` (float).

    The per-row error, not the Frobenius error of the whole matrix: outlier rows dominate the
    Frobenius norm and would hide ordinary rows that were zeroed.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    from .formats import _as_tensor

    approx = _as_tensor(approx, "approx").detach().double()
    exact = _as_tensor(exact, "exact").detach().double()
    if approx.shape != exact.shape:
        raise ValueError(f"shapes differ: {tuple(approx.shape)} vs {tuple(exact.shape)}")
    if exact.ndim == 0 or exact.numel() == 0:
        raise ValueError(
            f"approx and exact must have at least one row (got shape {tuple(exact.shape)})"
        )
    num = (approx - exact).reshape(exact.shape[0], -1).norm(dim=1)
    den = exact.reshape(exact.shape[0], -1).norm(dim=1).clamp(min=1e-300)
    return float((num / den).mean())


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

    from .formats import _as_tensor
    from .hadamard import next_hadamard_size

    X, W, E = (_as_tensor(t, nm) for t, nm in ((X, "X"), (W, "W"), (E_Y, "E_Y")))
    level = check_int("level", level, 0, 2)
    _check_fmt(fmt)
    clip_ratio = check_range("clip_ratio", clip_ratio, 0.0, 1.0, low_inclusive=False)
    if X.ndim != 2 or W.ndim != 2 or E.ndim != 2:
        raise ValueError("X, W and E_Y must be 2-D")
    if X.shape[1] != W.shape[1] or E.shape != (X.shape[0], W.shape[0]):
        raise ValueError(
            f"shapes must be X b×m, W n×m, E_Y b×n (got {tuple(X.shape)}, {tuple(W.shape)}, "
            f"{tuple(E.shape)})"
        )
    if level >= 1:
        _check_size("m (in-features)", X.shape[1])

    def Q(A):  # quantize-dequantize, one scale per tensor
        return A if fmt is None else quantize(A, fmt, "tensor", clip_ratio).dequantize()

    def H(A, dim=-1, inverse=False):  # A H over dim (inverse: A Hᵀ)
        return fwht(A, dim=dim, inverse=inverse)

    if level == 0:
        qX, qW = Q(X), Q(W)
        Y = qX @ qW.T  # (Y) HALO-0: Q(X) Q(W)ᵀ
        E_X = Q(E) @ qW  # (E_X) Q(E_Y) Q(W)
        G = Q(E).T @ qX  # (G) Q(E_Y)ᵀ Q(X)
        return {"Y": Y, "E_X": E_X, "G": G}
    qXH, qWH = Q(H(X)), Q(H(W))
    Y = qXH @ qWH.T  # (Y) HALO-1/2: Q(XH) Q(WH)ᵀ, H Hᵀ = I cancels inside
    if level == 1:
        E_X = H(Q(E) @ qWH, inverse=True)  # (E_X) HALO-1: [Q(E_Y) Q(WH)] Hᵀ
    else:
        b = E.shape[0]
        bp = next_hadamard_size(b)  # deviation: tokens zero-padded to a Hadamard size
        Ep = torch.nn.functional.pad(E, (0, 0, 0, bp - b))
        inner = Q(H(Ep, dim=0)) @ qWH  # Q(H_b E_Y) Q(WH)
        E_X = H(H(inner, dim=0, inverse=True)[:b], inverse=True)  # (E_X) H_bᵀ [...] Hᵀ
    G = H(Q(E).T @ qXH, inverse=True)  # (G) [Q(E_Y)ᵀ Q(XH)] Hᵀ
    return {"Y": Y, "E_X": E_X, "G": G}
