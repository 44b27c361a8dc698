"""Parity with the authors' code: our quantizers, Hadamard transform and HALO products
replayed on the official-code fixture.

``lab/core/official/halo_official.json`` holds the outputs of the official ``qllmt``
package (``IST-DASLab/HALO``: the quantizers of ``qllmt/functional/quantization.py``,
``right_had`` of ``qllmt/functional/hadamard.py`` and the autograd functions
``HaloFnLevel0``, ``HaloFnLevel1WithQFSDPBackwardXH``, ``HaloFnLevel2WithQFSDPBackwardXH``),
run in a scratch folder outside this project on a small shared instance, with its provenance.
The official Hadamard kernel and GEMMs are CUDA-only: the fixture ran them through stubs (a
dense Hadamard product, an exact GEMM returning bfloat16 as the CUTLASS kernels do; see its
``provenance.setup``), so the products are bfloat16 values.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from pathlib import Path

from lab.core.fixtures import official_fixture

__all__ = ["OFFICIAL_FIXTURE", "official_parity"]

#: the official qllmt functions on a shared instance (``lab/core/official/``)
OFFICIAL_FIXTURE = official_fixture("halo_official.json")


def _rel(ours, official) -> float:
    """``max |ours - official| / max |official|``."""
    import torch

    ref = torch.as_tensor(official, dtype=torch.float64).flatten()
    got = torch.as_tensor(ours, dtype=torch.float64).flatten()
    if got.shape != ref.shape:
        raise ValueError(f"shapes differ: {tuple(got.shape)} vs {tuple(ref.shape)}")
    return float((got - ref).abs().max() / ref.abs().max().clamp(min=1e-300))


def official_parity(path: str | Path | None = None) -> dict[str, float]:
    """Replay the fixture's cases with our kernels and measure how far they are.

    * quantizers: :func:`lab.halo.quantize` / :func:`lab.halo.fake_quant` (INT8 per tensor,
      per row, per column and per 32×32 tile, FP8 E4M3, the FP6/FP4 codebooks with HALO's
      clip ratio 0.75) against ``quantize_int8``, ``quantize_fp8``,
      ``simulated_*_int8_absmax_quant``, ``jetfire_quantize``, ``quantize_fp_codebook``;
    * the rotation: :func:`lab.halo.fwht` against ``right_had`` (order 16; order 24 = 12·2
      is reported too: its ``H_12`` differs, see the returned ``"right_had_24"``);
    * the levels: :func:`lab.halo.halo_products` (float32) against the official autograd
      functions' ``Y``, ``E_X = ∂ℓ/∂X`` and ``G = ∂ℓ/∂W`` (bfloat16 out of the GEMM).

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).

    Returns
    -------
    dict
        ``case -> max |ours - official| / max |official|`` (``"<case> codes"``: the number of
        INT8 codes that differ). Cases: ``"quantize_int8 codes"``, ``"quantize_int8 scale"``,
        ``"quantize_fp8"``, ``"int8 tensor"``, ``"int8 row"``, ``"int8 col"``,
        ``"int8 block32"``, ``"codebook <fmt>"``, ``"fake_quant <fmt>"``, ``"right_had_16"``,
        ``"right_had_24"``, ``"<level>_<precision> <Y|E_X|G>"`` for ``halo0/1/2`` INT8 and
        ``halo0/1`` FP8, and ``"<level>_<precision> scales"`` (the three GEMMs' rescales
        ``s_A·s_B`` against the ``alpha`` the official GEMMs received).

    See: book/halo/03-quantized-finetune.ipynb
    """
    from lab.core.fixtures import load_fixture

    data = load_fixture(path, OFFICIAL_FIXTURE)
    inst, off = data["instance"], data["outputs"]
    b, m, n = inst["b"], inst["m"], inst["n"]
    X, W, E = _t(inst["X"], b, m), _t(inst["W"], n, m), _t(inst["E_Y"], b, n)
    out = _quantizer_parity(_t(inst["A"], -1, 64), _t(inst["v"], -1), off)
    out.update(_level_parity(X, W, E, off))
    return out


def _t(vals, *shape):
    import torch

    return torch.tensor(vals, dtype=torch.float32).reshape(*shape)


def _quantizer_parity(A, v, off: dict) -> dict[str, float]:
    """The quantizers and codebooks against the official ones (see :func:`official_parity`)."""
    import numpy as np
    import torch

    from .formats import fake_quant, fp_grid, quantize

    out = {}
    q = quantize(A, "int8")
    codes = torch.tensor(off["quantize_int8"]["codes"]).reshape(q.codes.shape)
    out["quantize_int8 codes"] = float((q.codes.to(torch.int64) != codes).sum())
    out["quantize_int8 scale"] = _rel(q.scale, off["quantize_int8"]["scale"])
    q8 = quantize(A, "fp8_e4m3")
    out["quantize_fp8"] = _rel(q8.values(), off["quantize_fp8"]["values"])
    out["quantize_fp8 scale"] = _rel(q8.scale, off["quantize_fp8"]["scale"])
    for gran, name in (("tensor", "global"), ("row", "row_wise"), ("col", "col_wise")):
        official = off[f"simulated_{name}_int8_absmax_quant"]
        out[f"int8 {gran}"] = _rel(fake_quant(A, "int8", gran), official)
    out["int8 block32"] = _rel(
        fake_quant(A, "int8", "block32"), off["jetfire_quantize_int8_block32"]
    )
    for ours, scheme in (("fp6_e2m3", "fp6_e2m3fn"), ("fp6_e3m2", "fp6_e3m2fn"),
                         ("fp4_e2m1", "fp4_e2m1fn")):  # fmt: skip
        book = np.unique(np.asarray(off[f"codebook_{scheme}"]))  # ±0 merged, sorted
        grid = fp_grid(ours)
        out[f"codebook {ours}"] = _rel(grid, book) if grid.shape == book.shape else float("inf")
        official = off[f"quantize_fp_codebook_{scheme}"]
        out[f"fake_quant {ours}"] = _rel(fake_quant(v, ours, clip_ratio=0.75), official)
    return out


def _level_parity(X, W, E, off: dict) -> dict[str, float]:
    """The rotation and the levels' three products and rescales against the official ones."""
    from .formats import quantize
    from .reference import fwht, halo_products

    out = {}
    out["right_had_16"] = _rel(fwht(X), off["right_had_16"])
    out["right_had_24"] = _rel(fwht(_t(off["X24"], -1, 24)), off["right_had_24"])
    for prec, fmt in (("int8", "int8"), ("fp8", "fp8_e4m3")):
        for level in (0, 1, 2):
            key = f"halo{level}_{prec}"
            if key not in off:
                continue
            ours = halo_products(X, W, E, level, fmt)
            for name in ("Y", "E_X", "G"):
                out[f"{key} {name}"] = _rel(ours[name], off[key][name])
            # the GEMMs' rescales s_A·s_B, in call order: Y, E_X, G
            Xr, Wr = (fwht(X), fwht(W)) if level else (X, W)
            Eh = fwht(E, dim=0) if level == 2 else E  # H_b E_Y: rotated over the tokens

            def s(T):
                return float(quantize(T, fmt).scale)  # noqa: B023 (used at once)

            alphas = [s(Xr) * s(Wr), s(Eh) * s(Wr), s(E) * s(Xr)]
            out[f"{key} scales"] = _rel(alphas, off[key]["gemm_alphas"])
    return out
