"""Tests of lab.halo.batched: notebook 3's fine-tuning vectorised over seeds computes, seed by
seed, the runs of :func:`lab.halo.experiments.finetune` (same batches, same products, same Adam
steps), so a study over many seeds is the same experiment, only cheaper."""

from __future__ import annotations

import numpy as np
import pytest

from lab.halo import batched, experiments
from lab.halo.settings import FinetuneSettings

SMALL = {"scale": 30.0, "width": 64, "steps": 12, "batch": 16}


def _settings(mode="halo2", fmt="int8", **kw):
    return FinetuneSettings(mode=mode, fmt=fmt, **{**SMALL, **kw})


def _single(mode, fmt, seeds, **kw):
    s = _settings(mode, fmt, **kw)
    return np.array([experiments.finetune(s, seed=seed).acc for seed in seeds])


@pytest.mark.parametrize(
    "mode,fmt", [("fp32", "int8"), ("halo0", "int8"), ("halo1", "int8"), ("halo2", "int8"),
                 ("halo0", "fp8_e4m3"), ("halo1", "fp6_e2m3")],
)  # fmt: skip
def test_batched_runs_are_the_single_runs(mode, fmt):
    seeds = (0, 3, 7)
    got = batched.finetune_seeds(_settings(mode, fmt), seeds)
    assert got.shape == (3,) and ((0 <= got) & (got <= 1)).all()
    np.testing.assert_array_equal(got, _single(mode, fmt, seeds, **SMALL))


def test_batched_chunks_and_token_padding():
    """Seeds split over several batched models, and a batch that is not a Hadamard size
    (HALO-2 pads the tokens), give the single runs too; so do token outliers."""
    kw = {"batch": 12}
    old = batched.CHUNK
    try:
        batched.CHUNK = 2
        got = batched.finetune_seeds(_settings(**kw), (1, 2, 5))
    finally:
        batched.CHUNK = old
    np.testing.assert_array_equal(got, _single("halo2", "int8", (1, 2, 5), **kw))
    tok = {"token_outliers": True}
    for mode in ("halo1", "halo2"):
        got = batched.finetune_seeds(_settings(mode, **tok), (0, 4))
        np.testing.assert_array_equal(got, _single(mode, "int8", (0, 4), **tok))


def test_batched_seed_study_is_the_seed_study():
    configs = {"FP32": _settings("fp32"), "H2": _settings("halo2"),
               "F8": _settings("halo0", "fp8_e4m3")}  # fmt: skip
    a = batched.seed_study_batched(configs, (0, 2))
    b = experiments.seed_study(configs, (0, 2))
    assert a.seeds == b.seeds and all(np.array_equal(a.acc[k], b.acc[k]) for k in configs)
    with pytest.raises(ValueError, match="configs"):
        batched.seed_study_batched({"x": _settings("fp32", lora_rank=4)})
    with pytest.raises(TypeError, match="configs"):
        batched.seed_study_batched({})
    with pytest.raises(TypeError, match="configs"):
        batched.seed_study_batched({"x": {"mode": "fp32"}})


def test_batched_notebook_size_matches_the_study():
    """At the notebook's size (width 256, 60 steps, batches of 64): the study's runs."""
    kw = {"scale": 300.0, "width": 256, "steps": 60, "batch": 64}
    got = batched.cached_finetune_seeds(_settings(**kw), (0, 1))
    np.testing.assert_array_equal(got, _single("halo2", "int8", (0, 1), **kw))


def test_batched_bad_inputs():
    with pytest.raises(ValueError, match="mode"):
        FinetuneSettings("halo3")
    with pytest.raises(ValueError, match="fmt"):
        FinetuneSettings("halo2", None)
    with pytest.raises(ValueError, match="width"):
        FinetuneSettings("halo2", width=8)
    with pytest.raises(TypeError, match="settings"):
        batched.finetune_seeds("halo2")
    with pytest.raises(ValueError, match="seeds"):
        batched.finetune_seeds(_settings(), seeds=())
    with pytest.raises(ValueError, match="seeds"):
        batched.finetune_seeds(_settings(), seeds=(1, 1))
    with pytest.raises(TypeError, match="seeds"):
        batched.finetune_seeds(_settings(), seeds=(0.5,))


def test_batched_adam_is_torch_adam_bit_for_bit():
    """The blocked optimizer step is torch.optim.Adam's, number for number (blocks that cut
    through tensors of several sizes, moments that underflow)."""
    import torch

    shapes = [(3, 40, 7), (3, 1, 40), (5, 300)]
    make = [torch.Generator().manual_seed(i) for i in range(len(shapes))]
    ours = [torch.randn(s, generator=g).requires_grad_() for s, g in zip(shapes, make, strict=True)]
    ref = [p.detach().clone().requires_grad_() for p in ours]
    adam, opt = batched._Adam(ours, 1e-3), torch.optim.Adam(ref, lr=1e-3)
    adam.BLOCK = 64  # several blocks per tensor, and ragged last blocks
    g = torch.Generator().manual_seed(99)
    for step in range(12):
        for a, b in zip(ours, ref, strict=True):
            grad = torch.randn(a.shape, generator=g) * 10.0 ** (step % 6 - 20)
            a.grad, b.grad = grad.clone(), grad.clone()
        adam.step()
        opt.step()
    assert all(torch.equal(a, b) for a, b in zip(ours, ref, strict=True))


@pytest.mark.parametrize("fmt", ["int8", "fp8_e4m3", "fp6_e2m3", "fp4_e2m1"])
def test_batched_quantize_is_per_seed_quantize(fmt):
    """Seed k's codes and scale are formats.quantize's of its slice (the values of its codes)."""
    import torch

    from lab.halo.formats import quantize

    A = torch.randn(4, 16, 32, generator=torch.Generator().manual_seed(1)) * 3.0
    A[1] *= 1e-3
    A[2, 0, 0] = 500.0
    codes, scale = batched._quantize(A, fmt)
    for k in range(A.shape[0]):
        q = quantize(A[k], fmt)
        assert torch.equal(codes[k], q.values(torch.float32))
        assert torch.equal(scale[k].reshape(()), q.scale.reshape(()))
