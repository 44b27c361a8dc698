"""HALO's linear layer: Hadamard rotations placed in the forward and backward matmuls.

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
the right, which is the same orthogonal trick for any Hadamard matrix). With
``save_quantized=True`` and per-tensor scales the backward pass reuses the forward's
``Q(XH)`` and ``Q(WH)`` (one byte per element of ``X`` is stored: HALO's
``...WithQFSDPBackwardXH`` variant).

The layer itself, :class:`lab.halo.layer.HaloLinear`, lives in :mod:`lab.halo.layer` (it
imports torch at import time); this module holds the placement algebra and the helpers.

See: book/halo/01-outliers-and-rotations.ipynb and book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from typing import Any

from lab.core.checks import check_choice, check_int, check_range

from .formats import FORMATS, qmatmul, quantize
from .hadamard import _check_size, fwht

__all__ = [
    "PLACEMENTS",
    "halo_wrap",
    "rotated_matmul",
    "row_relative_error",
    "matmul_error_report",
    "outlier_tensors",
    "inject_massive_activations",
]

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
    num = (approx - exact).reshape(exact.shape[0], -1).norm(dim=1)
    den = exact.reshape(exact.shape[0], -1).norm(dim=1).clamp(min=1e-300)
    return float((num / den).mean())


def outlier_tensors(
    b: int = 512,
    m: int = 1024,
    n: int = 1024,
    channel_outliers: int = 8,
    token_outliers: int = 4,
    magnitude: float = 100.0,
    seed: int = 0,
):
    """Synthetic ``X`` (``b×m``, channel outliers), ``W`` (``n×m``), ``E_Y`` (``b×n``, token
    outliers), float64, LLM-like: ``channel_outliers`` whole columns of ``X`` and
    ``token_outliers`` whole rows of ``E_Y`` are multiplied by ``magnitude``.

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import torch

    b, m, n = check_int("b", b, 1), check_int("m", m, 1), check_int("n", n, 1)
    kc = check_int("channel_outliers", channel_outliers, 0, m)
    kt = check_int("token_outliers", token_outliers, 0, b)
    mag = check_range("magnitude", magnitude, 1.0, 1e6)
    g = torch.Generator().manual_seed(check_int("seed", seed, 0))
    X = torch.randn(b, m, generator=g, dtype=torch.float64)
    W = torch.randn(n, m, generator=g, dtype=torch.float64) / m**0.5
    E = torch.randn(b, n, generator=g, dtype=torch.float64)
    X[:, torch.randperm(m, generator=g)[:kc]] *= mag
    E[torch.randperm(b, generator=g)[:kt]] *= mag
    return X, W, E


def matmul_error_report(
    X: Any,
    W: Any,
    E_Y: Any,
    fmt: str = "int8",
    placements=PLACEMENTS,
    granularity: str = "tensor",
    clip_ratio: float = 1.0,
):
    """Per-row relative error of the three products of a linear layer, per placement.

    Parameters
    ----------
    X, W, E_Y : torch.Tensor
        ``b×m``, ``n×m``, ``b×n``.
    fmt, granularity, clip_ratio
        As in :func:`rotated_matmul`.
    placements : sequence of str

    Returns
    -------
    pandas.DataFrame
        Index: placements; columns ``Y`` (``X Wᵀ``), ``E_X`` (``E_Y W``), ``G``
        (``E_Yᵀ X``). Rotated dimensions: middle = inner (``m``, ``n``, ``b``), left = rows
        (``b``, ``b``, ``n``), right = columns (``n``, ``m``, ``m``).

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    import pandas as pd

    from .formats import _as_tensor

    X, W, E = (_as_tensor(t, nm).double() for t, nm in ((X, "X"), (W, "W"), (E_Y, "E_Y")))
    if X.ndim != 2 or W.ndim != 2 or E.ndim != 2:
        raise ValueError("X, W and E_Y must be 2-D")
    if X.shape[1] != W.shape[1] or E.shape != (X.shape[0], W.shape[0]):
        raise ValueError(
            f"shapes must be X b×m, W n×m, E_Y b×n (got {tuple(X.shape)}, {tuple(W.shape)}, "
            f"{tuple(E.shape)})"
        )
    placements = [check_choice("placements", p, PLACEMENTS) for p in placements]
    products = {"Y": (X, W.T), "E_X": (E, W), "G": (E.T, X)}
    rows = {}
    for p in placements:
        rows[p] = {
            name: row_relative_error(rotated_matmul(A, B, p, fmt, granularity, clip_ratio), A @ B)
            for name, (A, B) in products.items()
        }
    return pd.DataFrame.from_dict(rows, orient="index")[["Y", "E_X", "G"]]


def halo_wrap(model, cfg: dict | None = None, include=None, **kwargs):
    """Replace the ``nn.Linear`` modules of ``model`` in place by :class:`HaloLinear`.

    Parameters
    ----------
    model : torch.nn.Module
    cfg : dict, optional
        Keyword arguments of ``HaloLinear`` (``level``, ``fmt``, ...); ``kwargs`` are merged in.
    include : sequence of str, optional
        Only linears whose qualified name ends with one of these (e.g. ``("q_proj", "fc1")``);
        default: every ``nn.Linear`` (``HaloLinear`` modules are left alone).

    Returns
    -------
    torch.nn.Module
        ``model`` itself (parameters are shared, so optimizers keep working).

    See: book/halo/03-quantized-finetune.ipynb
    """
    from torch import nn

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (got {type(model).__name__})")
    cfg = {**(cfg or {}), **kwargs}
    from .layer import HaloLinear as cls

    if include is not None:
        include = tuple(include)
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if type(child) is nn.Linear and (include is None or full.endswith(include)):
                setattr(mod, child_name, cls.from_linear(child, **cfg))
    return model


def inject_massive_activations(model, layer: int, channels, scale: float):
    """Function-preserving rescale that creates "massive activation" channels.

    Multiplies rows ``channels`` of the ``layer``-th ``nn.Linear`` (weight and bias) by
    ``scale`` and divides the matching input columns of the next ``nn.Linear`` by ``scale``.
    The network's function is unchanged when the activation in between is positively
    homogeneous (ReLU, identity); the hidden channels become ``scale`` times larger.

    Parameters
    ----------
    model : torch.nn.Module
    layer : int
        Index among the model's linear layers (in ``modules()`` order); a next one must exist.
    channels : sequence of int
    scale : float
        ``> 0``.

    Returns
    -------
    torch.nn.Module
        ``model``, modified in place.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch
    from torch import nn

    lins = [m for m in model.modules() if isinstance(m, nn.Linear)]
    layer = check_int("layer", layer, 0, len(lins) - 2)
    scale = check_range("scale", scale, 0.0, None, low_inclusive=False)
    a, b = lins[layer], lins[layer + 1]
    ch = torch.as_tensor(list(channels), dtype=torch.long)
    if ch.numel() == 0 or int(ch.min()) < 0 or int(ch.max()) >= a.out_features:
        raise ValueError(f"channels must be indices in [0, {a.out_features - 1}] (got {channels})")
    with torch.no_grad():
        a.weight[ch] *= scale
        if a.bias is not None:
            a.bias[ch] *= scale
        b.weight[:, ch] /= scale
    return model
