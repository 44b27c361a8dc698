"""HALO: Hadamard-Assisted Lower-Precision Optimization for LLMs.

Saleh Ashkboos, Mahdi Nikdan, Soroush Tabesh, Roberto L. Castro, Torsten Hoefler, Dan
Alistarh. NeurIPS 2025. https://arxiv.org/abs/2501.02625 (official code: IST-DASLab/HALO).

A linear layer ``Y = X Wᵀ`` runs its three matmuls (forward ``X Wᵀ``, input gradient
``E_X = E_Y W``, weight gradient ``G = E_Yᵀ X``) in INT8/FP8/FP6. Outliers (activation
*channels* of ``X``, error *tokens* of ``E_Y``) waste a per-tensor scale; an orthogonal
Hadamard rotation ``H`` spreads them, and is placed where it cancels (the inner dimension,
``(XH)(WH)ᵀ = X Wᵀ``) or where it can be undone after the product (the tokens of ``E_Y`` for
``E_X``). Levels: HALO-0 (no rotation), HALO-1 (forward protection), HALO-2 (forward and
error protection).

Modules: :mod:`lab.halo.hadamard` (``hadamard_matrix``, ``fwht``), :mod:`lab.halo.formats`
(``quantize``, ``fp_grid``, ``qmatmul``), :mod:`lab.halo.linear` (``halo_wrap``, the
placements, the error report), :mod:`lab.halo.layer` (``HaloLinear``, ``LoRAHaloLinear``),
:mod:`lab.halo.kernels` (triton ``fwht_triton`` and the fused rotate-and-quantize kernel),
:mod:`lab.halo.comm` (low-precision all-gather on ``torch.distributed``),
:mod:`lab.halo.finetune` (notebook 3's experiment), :mod:`lab.halo.figures` (widgets).

What is reconstructed: the main-text equations were reconstructed from the official code (see
the chapter page); the FSDP integration is re-implemented on plain ``torch.distributed``.

See: book/halo/index.md
"""

from __future__ import annotations

from .formats import FORMATS, QTensor, fake_quant, fp_grid, qmatmul, quantize
from .hadamard import (
    SUPPORTED_K,
    fwht,
    hadamard_matrix,
    is_hadamard_size,
    next_hadamard_size,
)
from .linear import (
    PLACEMENTS,
    halo_wrap,
    inject_massive_activations,
    matmul_error_report,
    outlier_tensors,
    rotated_matmul,
    row_relative_error,
)

__all__ = [
    "FORMATS",
    "PLACEMENTS",
    "SUPPORTED_K",
    "QTensor",
    "HaloLinear",
    "LoRAHaloLinear",
    "fake_quant",
    "fp_grid",
    "fwht",
    "fwht_triton",
    "fwht_quant_triton",
    "hadamard_matrix",
    "halo_wrap",
    "inject_massive_activations",
    "is_hadamard_size",
    "matmul_error_report",
    "next_hadamard_size",
    "outlier_tensors",
    "qmatmul",
    "quantize",
    "quantized_allgather",
    "rotated_matmul",
    "row_relative_error",
]


def __getattr__(name: str):
    # torch-heavy names resolved lazily so that `import lab.halo` stays cheap
    if name in ("HaloLinear", "LoRAHaloLinear"):
        from . import layer

        return getattr(layer, name)
    if name in ("fwht_triton", "fwht_quant_triton"):
        from . import kernels

        return getattr(kernels, name)
    if name == "quantized_allgather":
        from . import comm

        return comm.quantized_allgather
    raise AttributeError(f"module 'lab.halo' has no attribute {name!r}")
