"""Notebook 3's fine-tuning run, vectorised over seeds: one batched model trains many seeds.

:func:`lab.halo.experiments.finetune` trains one seed at a time; at the notebook's size (a
256-wide MLP, batches of 64) each run is mostly Python and dispatch overhead, so a study over
a hundred seeds would not fit the notebook's budget. :func:`finetune_seeds` runs the same
experiment for ``K`` seeds at once: every weight gets a leading seed axis (``K × out × in``),
every product is a batched matmul, and each seed keeps its own per-tensor scales, batches and
Adam state, so seed ``k`` computes what ``finetune(..., seed=seeds[k])`` computes:

* the same pre-trained model with the same injected massive channels
  (:func:`~lab.halo.models.pretrained_mlp`), the same batches (one generator per seed,
  seeded ``seed + 1``), Adam with the same settings, accuracy evaluated in batches of the
  training batch size;
* the same HALO products (:class:`~lab.halo.layer.HaloLinear`'s, per-tensor scales; the
  classifier in full precision): ``Y = Q(XH) Q(WH)ᵀ``, ``E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ``
  (HALO-2; ``[Q(E_Y) Q(WH)] Hᵀ`` at level 1), ``G = [Q(E_Yᵀ) Q(XH)] Hᵀ``, with exact
  integer / minifloat accumulation (:func:`lab.halo.formats.qmatmul`'s rule: float32 when
  every partial sum stays below ``2^24`` units, else float64), so the quantized products
  are bit for bit those of the unbatched layer.

What it leaves out: the gradient cosines (they never change the trajectory)
and LoRA. The full-precision products (the FP32 run, the classifier, the biases' gradients)
are batched matmuls and reductions, which may round differently from the unbatched ones in
the last bit; a rounding difference re-draws a trajectory the way a numerics mode does, so
the accuracies agree with :func:`~lab.halo.experiments.finetune` seed by seed to a few test
examples, not always bit for bit (the tests hold both).

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int
from lab.core.diskcache import disk_memo
from lab.core.runtime import smoke_steps

from .experiments import SeedStudy, check_configs
from .models import digits_data, pretrained_mlp
from .settings import FinetuneSettings

__all__ = ["finetune_seeds", "cached_finetune_seeds", "seed_study_batched"]

#: seeds trained together in one batched model at width 256 (about 3 MB per seed); fewer at
#: larger widths (:func:`_chunk`)
CHUNK = 64


def _chunk(width: int) -> int:
    return max(1, min(CHUNK, CHUNK * 256**2 // width**2))


def _quantize(A, fmt: str):
    """Per-seed per-tensor :func:`~lab.halo.formats.quantize` of ``A`` (``K × ...``, float32):
    ``(codes, scale)``, seed ``k``'s slice scaled and rounded as ``quantize(A[k], fmt)`` does.
    The codes stay float32 grid values (the same integers or minifloat values, without the
    round trip through ``int8`` or ``float8_e4m3fn`` and the lookup back)."""
    import torch

    from .formats import INT8_MAX, fmax, round_minifloat

    flat = A.reshape(A.shape[0], -1)
    amax = torch.maximum(flat.amax(dim=1), -flat.amin(dim=1))  # max |A| per seed (= abs().amax)
    if not bool(torch.isfinite(amax).all()):
        raise ValueError("the fine-tuning produced NaN or inf")
    scale = (amax * 1.0 / fmax(fmt)).clamp(min=1e-5 / INT8_MAX)  # formats.quantize's steps
    scale = scale.reshape(-1, *([1] * (A.ndim - 1)))
    if fmt == "int8":
        return torch.div(A, scale).round_().clamp_(-INT8_MAX, INT8_MAX), scale
    return round_minifloat(torch.div(A, scale), fmt), scale  # exact in float32: grid ⊂ E4M3


def _qbmm(a, b, k: int):
    """``Q(A)·Q(B)`` per seed from ``(codes, scale)`` pairs: exact accumulation, one rescale
    ``s_A·s_B`` (:func:`lab.halo.formats.qmatmul`, batched); ``k`` is the inner size."""
    import torch

    from .formats import code_units

    (ca, sa, fmt), (cb, sb, _) = a, b
    small = code_units(fmt) ** 2 * k < 2**24
    dtype = torch.float32 if small else torch.float64  # the codes are float32 grid values
    acc = torch.bmm(ca.to(dtype), cb.to(dtype))
    out = torch.promote_types(sa.dtype, sb.dtype)
    return acc.to(out).mul_(sa.to(out)).mul_(sb.to(out))  # (acc · s_A) · s_B, as qmatmul


def _function():
    import torch

    from .fast import fwht
    from .hadamard import next_hadamard_size

    class _BatchedHalo(torch.autograd.Function):
        """``Y_k = X_k W_kᵀ`` for every seed ``k`` with HALO's rotations and quantizers."""

        @staticmethod
        def forward(ctx, x, weight, level, fmt):
            rot = level >= 1
            Xr = fwht(x, dim=-1) if rot else x  # XH
            Wr = fwht(weight, dim=-1) if rot else weight  # WH
            qX, qW = (*_quantize(Xr, fmt), fmt), (*_quantize(Wr, fmt), fmt)
            ctx.cfg = (level, fmt, x.dtype)
            ctx.save_for_backward(qX[0], qX[1], qW[0], qW[1])
            y = _qbmm(qX, (qW[0].transpose(1, 2), qW[1], fmt), x.shape[-1])  # Q(XH) Q(WH)ᵀ
            return y.to(x.dtype)

        @staticmethod
        def backward(ctx, gy):
            level, fmt, dtype = ctx.cfg
            cX, sX, cW, sW = ctx.saved_tensors
            qX, qW = (cX, sX, fmt), (cW, sW, fmt)
            rot = level >= 1
            gx = gw = None
            if ctx.needs_input_grad[0]:
                if level == 2:  # E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ, tokens on dim 1
                    b = gy.shape[1]
                    bp = next_hadamard_size(b)
                    E = gy if bp == b else torch.nn.functional.pad(gy, (0, 0, 0, bp - b))
                    A = fwht(E, dim=1)
                    gx = _qbmm((*_quantize(A, fmt), fmt), qW, gy.shape[-1])
                    gx = fwht(gx, dim=1, inverse=True)[:, :b]
                else:
                    gx = _qbmm((*_quantize(gy, fmt), fmt), qW, gy.shape[-1])
                if rot:
                    gx = fwht(gx, dim=-1, inverse=True)
                gx = gx.to(dtype)
            if ctx.needs_input_grad[1]:  # G = Q(E_Yᵀ) Q(XH) (... Hᵀ)
                gt = gy.transpose(1, 2).contiguous()
                gw = _qbmm((*_quantize(gt, fmt), fmt), qX, gy.shape[1])
                if rot:
                    gw = fwht(gw, dim=-1, inverse=True)
                gw = gw.to(dtype)
            return gx, gw, None, None

    return _BatchedHalo


_FN: list = []


def _linear(x, weight, bias, level, fmt):
    """One batched layer: HALO products for ``level`` (``None``: full precision)."""
    import torch

    if level is None:
        return torch.baddbmm(bias, x, weight.transpose(1, 2))
    if not _FN:
        _FN.append(_function())
    return _FN[0].apply(x, weight, level, fmt) + bias


def finetune_seeds(settings: FinetuneSettings, seeds=(0, 1, 2)) -> np.ndarray:
    """Test accuracies of :func:`~lab.halo.experiments.finetune` runs over ``seeds``, trained
    together in batched models of at most :data:`CHUNK` seeds (see the module).

    Parameters
    ----------
    settings : FinetuneSettings
        The configuration (no LoRA; the gradient cosines are not recorded).
    seeds : sequence of int
        Fine-tuning seeds (distinct, ``>= 0``; at least one).

    Returns
    -------
    numpy.ndarray
        ``(len(seeds),)`` test accuracies, in the order of ``seeds``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    check_configs({"settings": settings}, batched=True)
    try:
        seeds = tuple(check_int("seeds", s, 0) for s in seeds)
    except TypeError as exc:
        raise TypeError(f"seeds must be a sequence of ints >= 0 (got {seeds!r})") from exc
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must hold at least one seed, all distinct (got {seeds!r})")
    n = _chunk(settings.width)
    return np.concatenate([_run(settings, seeds[i : i + n]) for i in range(0, len(seeds), n)])


def _run(s: FinetuneSettings, seeds: tuple) -> np.ndarray:
    import torch

    K, level, fmt = len(seeds), s.level, s.fmt
    model = pretrained_mlp(s.width, s.scale, 4, s.pretrain_seed)
    gain = model.gain.gain.detach().clone()

    def stack(t, bias=False):
        t = t.detach().clone()
        t = t[None, None, :] if bias else t[None]
        return t.repeat(K, *([1] * (t.ndim - 1))).requires_grad_(True)

    names = ("fc1", "fc2", "classifier")
    W = {n: stack(getattr(model, n).weight) for n in names}
    B = {n: stack(getattr(model, n).bias, bias=True) for n in names}

    def forward(x):  # x: K × rows × 128; the classifier in full precision
        h = torch.relu(_linear(x, W["fc1"], B["fc1"], level, fmt)) * gain
        h = torch.relu(_linear(h, W["fc2"], B["fc2"], level, fmt))
        return _linear(h, W["classifier"], B["classifier"], None, fmt)

    params = [p for n in names for p in (W[n], B[n])]
    _train(forward, params, s, seeds)
    return _accuracies(forward, s, K)


def _train(forward, params: list, s: FinetuneSettings, seeds: tuple) -> None:
    """Adam on every seed's weighted batch mean, each seed's batches in finetune's order."""
    import torch

    Xtr, ytr, _, _ = digits_data(s.pretrain_seed)
    K, batch = len(seeds), s.batch
    adam = _Adam(params, s.lr)  # torch.optim.Adam's single-tensor step, bit for bit
    gens = [torch.Generator().manual_seed(seed + 1) for seed in seeds]
    n_out = max(1, round(0.02 * batch))
    w = torch.ones(K, batch)
    for _ in range(smoke_steps(s.steps)):  # LAB_SMOKE=1: a few iterations
        idx = torch.empty(K, batch, dtype=torch.long)
        for k, g in enumerate(gens):  # each seed's draws, in finetune's order
            idx[k] = torch.randint(0, len(ytr), (batch,), generator=g)
            if s.token_outliers:
                w[k] = 1.0
                w[k, torch.randperm(batch, generator=g)[:n_out]] = 100.0
        logits = forward(Xtr[idx])
        loss_vec = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ytr[idx].reshape(-1), reduction="none"
        )
        wl = w * loss_vec.reshape(K, batch)
        loss = (wl.sum(1) / w.sum(1)).sum()  # each seed: its weighted batch mean
        for p in params:
            p.grad = None
        loss.backward()
        adam.step()


class _Adam:
    """``torch.optim.Adam(params, lr)`` (betas 0.9, 0.999, eps 1e-8, no weight decay): the same
    operations as its single-tensor step in the same order, element by element, so the same
    numbers bit for bit (``tests/test_halo_batched.py``), applied to cache-sized blocks of each
    flattened tensor: with a leading seed axis the moments outgrow the cache and the
    whole-tensor passes are bound by memory (a quarter of the optimizer's time here)."""

    BLOCK = 1 << 16  # floats per block (256 KB), a multiple of every vector width

    def __init__(self, params: list, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params, self.lr, self.betas, self.eps, self.steps = params, lr, betas, eps, 0
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]

    def step(self) -> None:
        import torch

        (beta1, beta2), lr, eps = self.betas, self.lr, self.eps
        self.steps += 1
        step = float(self.steps)  # torch keeps the step count in a float tensor
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        n = self.BLOCK
        with torch.no_grad():
            for p, (m, v) in zip(self.params, self.moments, strict=True):
                P, G, M, V = p.view(-1), p.grad.view(-1), m.view(-1), v.view(-1)
                for i in range(0, P.numel(), n):
                    g, mm, vv = G[i : i + n], M[i : i + n], V[i : i + n]
                    mm.lerp_(g, 1 - beta1)
                    vv.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                    denom = (vv.sqrt() / bias_correction2_sqrt).add_(eps)
                    P[i : i + n].addcdiv_(mm, denom, value=-step_size)


def _accuracies(forward, s: FinetuneSettings, K: int) -> np.ndarray:
    """Every seed's test accuracy, in batches of the training batch size (as finetune)."""
    import torch

    _, _, Xte, yte = digits_data(s.pretrain_seed)
    correct = torch.zeros(K)
    with torch.no_grad():
        for i in range(0, len(yte), s.batch):
            x = Xte[i : i + s.batch].expand(K, -1, -1)
            correct += (forward(x).argmax(-1) == yte[i : i + s.batch]).float().sum(1)
    return (correct / len(yte)).double().numpy()


@disk_memo
def cached_finetune_seeds(settings: FinetuneSettings, seeds: tuple) -> np.ndarray:
    """:func:`finetune_seeds`, kept on disk (:func:`lab.core.diskcache.disk_memo`: keyed on
    the chapter's source, ``lab``'s version and the numerics fingerprint).

    See: book/halo/03-quantized-finetune.ipynb
    """
    return finetune_seeds(settings, tuple(seeds))


def seed_study_batched(configs: dict, seeds=(0, 1, 2)) -> SeedStudy:
    """:func:`lab.halo.experiments.seed_study` on the batched runner: the same accuracies, seed
    by seed, for ``configs`` (label -> :class:`~lab.halo.settings.FinetuneSettings`, no LoRA:
    use the unbatched study).

    See: book/halo/03-quantized-finetune.ipynb
    """
    configs = check_configs(configs, batched=True)
    try:
        seeds = tuple(check_int("seeds", s, 0) for s in seeds)
    except TypeError as exc:
        raise TypeError(f"seeds must be a sequence of ints >= 0 (got {seeds!r})") from exc
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return SeedStudy(seeds, {k: cached_finetune_seeds(c, seeds) for k, c in configs.items()})
