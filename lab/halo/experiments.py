"""The drivers the ``halo`` notebooks call.

* Notebook 1: :func:`outlier_tensors` (synthetic ``X``, ``W``, ``E_Y`` with LLM-like channel
  and token outliers) and :func:`matmul_error_report` (per-row error of the three products
  per rotation placement).
* Notebook 3: fine-tune a small MLP with injected massive activations under FP32 and
  simulated HALO-0/1/2 (:func:`finetune`, :func:`seed_study`), and pre-train one from scratch
  in low precision (:func:`pretrain`).

The fine-tuning experiment (the toy model and its data: :mod:`lab.halo.models`): fine-tune the
pre-trained MLP with injected massive activations on all 10 classes with Adam, every hidden
linear layer replaced by a ``HaloLinear`` (the classifier stays in full precision, as HALO's
``wrap_model`` leaves ``lm_head``; the FP32 run keeps ``nn.Linear``); optionally up-weight the
loss of 2% of the examples by 100x (token outliers in ``E_Y``). Test accuracy is evaluated in
batches of the training batch size. A run's configuration is a
:class:`~lab.halo.settings.FinetuneSettings`, validated once when it is made; the seed goes
beside it, and studies over seeds run through :func:`lab.core.sweep.sweep`.

Adam, not SGD: the function-preserving rescale is not optimization-preserving for SGD (the
spec's prototype diverged even in FP32), while Adam is invariant to per-parameter scale.
``seed`` drives the fine-tuning (batches, adapter initialisation, dropout), so a study over
``seed`` is the paper's "standard deviation over fine-tuning runs".

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_range
from lab.core.memo import memo
from lab.core.runtime import smoke_steps

from .models import FULL_PRECISION, accuracy, digits_data, mlp, pretrained_mlp
from .reference import PLACEMENTS, rotated_matmul, row_relative_error
from .settings import MODES, FinetuneSettings, PretrainSettings

__all__ = [
    "FinetuneRun",
    "SeedStudy",
    "PretrainRun",
    "outlier_tensors",
    "outlier_case",
    "matmul_error_report",
    "error_case",
    "FORMAT_CHOICES",
    "butterfly_example",
    "finetune",
    "cached_finetune",
    "check_configs",
    "seed_study",
    "pretrain",
    "FINETUNE_SCALES",
    "precompute_finetune",
    "finetune_pair",
]

# notebook 1's format menu: label -> (fmt, granularity)
FORMAT_CHOICES = {
    "INT8 per-tensor": ("int8", "tensor"),
    "INT8 per-row": ("int8", "row"),
    "FP8 E4M3": ("fp8_e4m3", "tensor"),
    "FP6 E2M3": ("fp6_e2m3", "tensor"),
    "FP6 E3M2": ("fp6_e3m2", "tensor"),
}


@dataclass
class FinetuneRun:
    """One fine-tuning run: ``loss`` per step, test accuracy ``acc``, gradient cosines ``cos``
    (``(step, cosine)`` pairs, simulated vs exact FP32 gradient), and its settings."""

    mode: str
    fmt: str
    scale: float
    loss: list = field(repr=False)
    acc: float
    cos: list = field(repr=False)
    seed: int = 0

    @property
    def mean_cosine(self) -> float:
        """Mean of the recorded gradient cosines (1.0 for FP32, which records none)."""
        return float(np.mean([c for _, c in self.cos])) if self.cos else 1.0


@dataclass
class SeedStudy:
    """Test accuracies of several configurations over the same fine-tuning seeds.

    ``acc[label]`` is an array over ``seeds`` (paired: seed ``i`` is the same batches for every
    configuration)."""

    seeds: tuple
    acc: dict

    def mean(self, label: str) -> float:
        return float(np.mean(self.acc[label]))

    def std(self, label: str) -> float:
        """Sample standard deviation over seeds (``ddof=1``)."""
        a = np.asarray(self.acc[label], dtype=float)
        return float(a.std(ddof=1)) if a.size > 1 else 0.0

    def gap(self, ref: str, label: str) -> float:
        """Mean accuracy of ``ref`` minus that of ``label`` (points as fractions)."""
        return self.mean(ref) - self.mean(label)


@dataclass
class PretrainRun:
    """A run from scratch: ``loss`` per step, final test accuracy, and whether it diverged
    (a non-finite loss, or a final 10-step mean loss above the initial loss)."""

    mode: str
    fmt: str
    loss: list = field(repr=False)
    acc: float
    diverged: bool


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


@memo(maxsize=8)
def outlier_case(b: int, m: int, n: int, channel_outliers: int, magnitude: float, seed: int = 0):
    """:func:`outlier_tensors` with ``channel_outliers`` outlier channels and half as many
    outlier tokens, memoised on its arguments (notebook 1's widget redraws from it).

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    k = check_int("channel_outliers", channel_outliers, 0)
    return outlier_tensors(b, m, n, k, k // 2, magnitude, seed)


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

    from .formats import as_tensor
    from .reference import check_layer_shapes

    X, W, E = (as_tensor(t, nm).double() for t, nm in ((X, "X"), (W, "W"), (E_Y, "E_Y")))
    check_layer_shapes(X, W, E)
    placements = [check_choice("placements", p, PLACEMENTS) for p in placements]
    products = {"Y": (X, W.T), "E_X": (E, W), "G": (E.T, X)}
    rows = {}
    for p in placements:
        rows[p] = {
            name: row_relative_error(rotated_matmul(A, B, p, fmt, granularity, clip_ratio), A @ B)
            for name, (A, B) in products.items()
        }
    return pd.DataFrame.from_dict(rows, orient="index")[["Y", "E_X", "G"]]


@memo(maxsize=16)
def error_case(magnitude: float = 100.0, fmt: str = "int8", granularity: str = "tensor",
               placement: str = "left", clip_ratio: float = 1.0, n_outliers: int = 8,
               size: tuple = (256, 512, 512), seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """What notebook 1's error widget draws: ``report``, the :func:`matmul_error_report` of
    :func:`outlier_case` ``(*size, n_outliers, magnitude, seed)`` for every placement, and
    ``blocks``, the per-token relative ``|error|`` of ``E_X = E_Y W`` under ``placement`` in
    16×16 block means (tokens × features; ``size`` ``(b, m, n)`` with ``b``, ``m`` multiples of 16).

    See: book/halo/01-outliers-and-rotations.ipynb
    """
    placement = check_choice("placement", placement, PLACEMENTS)
    b, m, n = (check_int(f"size[{i}]", v, 16) for i, v in enumerate(size))
    if b % 16 or m % 16:
        raise ValueError(f"size (b, m, n) needs b and m multiples of 16 (got {tuple(size)})")
    X, W, E = outlier_case(b, m, n, int(n_outliers), float(magnitude), seed)
    report = matmul_error_report(X, W, E, fmt, PLACEMENTS, granularity, clip_ratio)
    err = (rotated_matmul(E, W, placement, fmt, granularity, clip_ratio) - E @ W).abs().numpy()
    rel = err / (np.abs((E @ W).numpy()).mean(axis=1, keepdims=True) + 1e-30)  # per token
    blocks = rel.reshape(16, b // 16, 16, m // 16).mean(axis=(1, 3))
    return {"report": report, "blocks": blocks, "placement": placement}


def butterfly_example(seed: int = 0, n: int = 16) -> list:
    """One outlier of size 4 on ``N(0, 0.3²)`` noise, length ``n`` (a power of two), and the
    vector after each butterfly stage (:func:`lab.halo.reference.butterfly_stages`): what
    notebook 2's widget draws.

    See: book/halo/02-fwht-kernel.ipynb
    """
    from .reference import butterfly_stages

    rng = np.random.default_rng(check_int("seed", seed, 0))
    x = np.zeros(check_int("n", n, 2, 1024))
    x[rng.integers(n)] = 4.0  # one outlier ...
    x += rng.normal(0, 0.3, n)  # ... on small noise
    return butterfly_stages(x)


def finetune(settings: FinetuneSettings, seed: int = 0) -> FinetuneRun:
    """Fine-tune the pre-trained MLP on all 10 digits under ``settings``.

    Parameters
    ----------
    settings : FinetuneSettings
        The configuration (validated when it was made).
    seed : int
        The fine-tuning seed (batches, adapter initialisation, dropout).

    Returns
    -------
    FinetuneRun

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(settings, FinetuneSettings):
        raise TypeError(f"settings must be a FinetuneSettings (got {type(settings).__name__})")
    return _finetune(settings, check_int("seed", seed, 0))


@memo(maxsize=128)
def cached_finetune(settings: FinetuneSettings, seed: int = 0) -> FinetuneRun:
    """:func:`finetune`, memoised on its arguments (one memo for the notebook's runs, its
    seed study and its widget).

    See: book/halo/03-quantized-finetune.ipynb
    """
    return finetune(settings, seed)


def _finetune(s: FinetuneSettings, seed: int) -> FinetuneRun:
    import torch

    with torch.random.fork_rng():  # adapter init and dropout: a local seed
        torch.manual_seed(seed)
        model, ref = _finetune_models(s)
        losses, cos = _finetune_loop(model, ref, s, seed)
        Xtr, ytr, Xte, yte = digits_data(s.pretrain_seed)
        acc = accuracy(model, Xte, yte, s.batch)
    return FinetuneRun(s.mode, s.fmt, s.scale, losses, acc, cos, seed)


def _finetune_models(s: FinetuneSettings):
    """The model to fine-tune (wrapped in ``s``'s level, or LoRA-adapted) and the FP32 twin
    whose exact gradients the cosines compare with (``None`` for FP32 and LoRA runs)."""
    from .layer import halo_wrap

    model = pretrained_mlp(s.width, s.scale, 4, s.pretrain_seed)
    exact = s.mode != "fp32" and not s.lora_rank
    ref = pretrained_mlp(s.width, s.scale, 4, s.pretrain_seed) if exact else None
    if s.lora_rank:
        _add_lora(model, s.lora_rank, s.level, s.fmt)
    elif s.mode != "fp32":
        halo_wrap(model, level=s.level, fmt=s.fmt, exclude=FULL_PRECISION)
    return model, ref


def _finetune_loop(model, ref, s: FinetuneSettings, seed: int):
    """Adam on the (optionally token-weighted) cross-entropy; the gradient cosines to ``ref``."""
    import torch

    Xtr, ytr, _, _ = digits_data(s.pretrain_seed)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=s.lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses, cos = [], []
    n_out = max(1, round(0.02 * s.batch))
    for k in range(smoke_steps(s.steps)):  # LAB_SMOKE=1: a few iterations
        idx = torch.randint(0, len(ytr), (s.batch,), generator=g)
        w = torch.ones(s.batch)
        if s.token_outliers:
            w[torch.randperm(s.batch, generator=g)[:n_out]] = 100.0
        loss_vec = torch.nn.functional.cross_entropy(model(Xtr[idx]), ytr[idx], reduction="none")
        loss = (w * loss_vec).sum() / w.sum()
        opt.zero_grad()
        loss.backward()
        if ref is not None and k % s.cosine_every == 0:
            cos.append((k, _gradient_cosine(model, ref, Xtr[idx], ytr[idx], w)))
        opt.step()
        losses.append(float(loss.detach()))
    return losses, cos


def _gradient_cosine(model, ref, X, y, w) -> float:
    """The cosine between ``model``'s simulated gradient and the exact FP32 gradient of
    ``ref`` at the same weights and batch."""
    import torch

    ref.load_state_dict(model.state_dict())
    lv = torch.nn.functional.cross_entropy(ref(X), y, reduction="none")
    gr = torch.autograd.grad((w * lv).sum() / w.sum(), list(ref.parameters()))
    a = torch.cat([p.grad.flatten() for p in model.parameters()])
    b = torch.cat([t.flatten() for t in gr])
    return float(a @ b / (a.norm() * b.norm() + 1e-30))


def _add_lora(model, rank: int, level, fmt: str) -> None:
    """Replace every ``nn.Linear`` by a LoRA-adapted (HALO or plain, ``level=None``) copy."""
    from torch import nn

    from .layer import LoRAHaloLinear

    for name, m in list(model.named_children()):
        if isinstance(m, nn.Linear):
            full = level is None or name in FULL_PRECISION  # the classifier: full precision
            cfg = {"level": 0, "fmt": None} if full else {"level": level, "fmt": fmt}
            r = min(rank, m.in_features, m.out_features)
            setattr(model, name, LoRAHaloLinear(m, r=r, alpha=8.0, dropout=0.1, **cfg))


def check_configs(configs: Any, batched: bool = False) -> dict:
    """Validate a seed study's ``configs`` (label -> :class:`FinetuneSettings`; ``batched``:
    no LoRA, which the batched runner does not train); return it.

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(configs, dict) or not configs:
        raise TypeError("configs must be a non-empty dict label -> FinetuneSettings")
    for label, cfg in configs.items():
        if not isinstance(cfg, FinetuneSettings):
            raise TypeError(
                f"configs[{label!r}] must be a FinetuneSettings (got {type(cfg).__name__})"
            )
        if batched and cfg.lora_rank:
            raise ValueError(f"configs[{label!r}]: the batched runner trains no LoRA")
    return configs


def seed_study(configs: dict, seeds=(0, 1, 2)) -> SeedStudy:
    """Test accuracy of several fine-tuning configurations over the same seeds (a
    :func:`lab.core.sweep.sweep` of :func:`cached_finetune`).

    Parameters
    ----------
    configs : dict
        ``label -> FinetuneSettings`` (e.g. ``{"FP32": base.replace(mode="fp32"), "HALO-2 INT8":
        base}``).
    seeds : sequence of int
        Fine-tuning seeds (distinct, at least one).

    Returns
    -------
    SeedStudy

    See: book/halo/03-quantized-finetune.ipynb
    """
    from lab.core.sweep import sweep

    configs = check_configs(configs)

    def accuracy_of(label: str, seed: int) -> float:
        return cached_finetune(configs[label], seed).acc

    runs = sweep(accuracy_of, {"label": list(configs)}, seeds, desc="fine-tuning")
    acc = {label: runs.values("value", label=label) for label in configs}
    return SeedStudy(runs.seeds, acc)


def pretrain(settings: PretrainSettings, seed: int = 0) -> PretrainRun:
    """Train the MLP ``128 → width → width → 10`` from scratch on all ten digits, every
    hidden linear layer a ``HaloLinear`` in ``settings.fmt`` (``mode="fp32"``: ``nn.Linear``).

    The toy stand-in for the paper's pre-training observation (TinyLlama-1.1B: FP8 matches
    BF16, INT8 and FP4 diverge): no massive activations are injected; whatever outliers the
    network grows, it grows by itself.

    Parameters
    ----------
    settings : PretrainSettings
    seed : int
        Initialisation and batches.

    Returns
    -------
    PretrainRun

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(settings, PretrainSettings):
        raise TypeError(f"settings must be a PretrainSettings (got {type(settings).__name__})")
    return _pretrain(settings, check_int("seed", seed, 0))


def _pretrain(s: PretrainSettings, seed: int) -> PretrainRun:
    import torch

    from .layer import halo_wrap

    Xtr, ytr, Xte, yte = digits_data(0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = mlp(s.width)
    if s.mode != "fp32":
        halo_wrap(model, level=s.level, fmt=s.fmt, exclude=FULL_PRECISION)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(smoke_steps(s.steps)):  # LAB_SMOKE=1: a few iterations
        idx = torch.randint(0, len(ytr), (s.batch,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(Xtr[idx]), ytr[idx])
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    acc = accuracy(model, Xte, yte, s.eval_batch)
    tail = float(np.mean(losses[-10:]))
    diverged = not all(math.isfinite(v) for v in losses) or tail > losses[0]
    return PretrainRun(s.mode, s.fmt, losses, acc, bool(diverged))


# The outlier scales S of notebook 3's live widget (a menu): ``precompute_finetune`` runs every
# level at each of them once, so that every move of the widget only redraws.
FINETUNE_SCALES = (1.0, 10.0, 100.0, 300.0, 1000.0)
FINETUNE_MODES = ("halo0", "halo1", "halo2")


def precompute_finetune(base: FinetuneSettings, scales=FINETUNE_SCALES,
                        modes=FINETUNE_MODES) -> int:  # fmt: skip
    """Run (once, memoised by :func:`cached_finetune`) the seed-0 runs that notebook 3's widget
    draws: FP32 and every level in ``modes`` at every scale in ``scales``, the rest as
    ``base``. Returns the number of runs.

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(base, FinetuneSettings):
        raise TypeError(f"base must be a FinetuneSettings (got {type(base).__name__})")
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__iter__"):
        raise TypeError(f"scales must be a sequence of floats in [1, 1e5] (got {scales!r})")
    if isinstance(modes, (str, bytes)) or not hasattr(modes, "__iter__"):
        raise TypeError(f"modes must be a sequence of {MODES} (got {modes!r})")
    modes = [check_choice("modes[i]", m, MODES) for m in modes]
    runs = [base.replace(mode=m, scale=float(s)) for s in scales for m in ("fp32", *modes)]
    runs = list(dict.fromkeys(runs))
    with _one_thread():
        for r in runs:
            cached_finetune(r, 0)
    return len(runs)


def finetune_pair(base: FinetuneSettings, mode: str, scale: float):
    """The seed-0 runs of FP32 and of ``mode`` at outlier scale ``scale`` (the rest as
    ``base``): what notebook 3's widget draws (:func:`lab.halo.figures.finetune_figure`).

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(base, FinetuneSettings):
        raise TypeError(f"base must be a FinetuneSettings (got {type(base).__name__})")
    with _one_thread():
        ref = cached_finetune(base.replace(mode="fp32", scale=scale), 0)
        run = cached_finetune(base.replace(mode=mode, scale=scale), 0)
    return ref, run


@contextmanager
def _one_thread():
    """A small MLP: one torch thread (two only contend, badly on a loaded machine)."""
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        yield
    finally:
        torch.set_num_threads(threads)
