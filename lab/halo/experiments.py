"""The drivers the ``halo`` notebooks call.

* Notebook 1: :func:`outlier_tensors` (synthetic ``X``, ``W``, ``E_Y`` with LLM-like channel
  and token outliers) and :func:`matmul_error_report` (per-row error of the three products
  per rotation placement).
* Notebook 3: fine-tune a small MLP with injected massive activations under FP32 and
  simulated HALO-0/1/2 (:func:`finetune`, :func:`seed_study`), and pre-train one from scratch
  in low precision (:func:`pretrain`).

The fine-tuning experiment:

1. "Pre-train" an MLP ``128 → width → gain → width → 10`` (ReLU; a fixed per-channel
   ``gain`` of ones after the first ReLU; the 8×8 digits of :func:`lab.core.data.digits`,
   standardised with training statistics, padded to 128 features) on classes 0–4 with Adam.
2. Inject massive activations: multiply ``n_channels`` entries of the gain by ``scale`` and
   fold it out of layer 2 (its matching input columns divided by ``scale``): the function is
   unchanged, the weights keep their range, layer 2's inputs get massive channels.
3. Fine-tune on all 10 classes with Adam, every hidden linear layer replaced by a
   ``HaloLinear`` (the classifier stays in full precision, as HALO's ``wrap_model`` leaves
   ``lm_head``; the FP32 run keeps ``nn.Linear``); optionally up-weight the loss of 2% of the
   examples by 100x (token outliers in ``E_Y``). Test accuracy is evaluated in batches of the
   training batch size.

Adam, not SGD: the function-preserving rescale is not optimization-preserving for SGD (the
spec's prototype diverged even in FP32), while Adam is invariant to per-parameter scale.
The pre-trained model and the data split depend on ``pretrain_seed`` only; ``seed`` drives the
fine-tuning (batches, adapter initialisation, dropout), so a study over ``seed`` is the
paper's "standard deviation over fine-tuning runs".

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_range
from lab.core.memo import memo
from lab.core.runtime import smoke_steps

from .reference import PLACEMENTS, check_fmt, rotated_matmul, row_relative_error

__all__ = [
    "MODES",
    "FinetuneRun",
    "SeedStudy",
    "PretrainRun",
    "outlier_tensors",
    "outlier_case",
    "matmul_error_report",
    "error_case",
    "digits_data",
    "pretrained_mlp",
    "finetune",
    "cached_finetune",
    "check_study",
    "seed_study",
    "pretrain",
]

MODES = ("fp32", "halo0", "halo1", "halo2")


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

    X, W, E = (as_tensor(t, nm).double() for t, nm in ((X, "X"), (W, "W"), (E_Y, "E_Y")))
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
    return {"report": report, "blocks": rel.reshape(16, b // 16, 16, m // 16).mean(axis=(1, 3))}


@functools.lru_cache(maxsize=4)
def digits_data(seed: int = 0, features: int = 128):
    """Digits (:func:`lab.core.data.digits`: standardised with the training rows' statistics
    only) zero-padded to ``features`` columns, split 70/30: ``(Xtr, ytr, Xte, yte)`` as
    float32/int64 torch tensors on the CPU.

    See: book/halo/03-quantized-finetune.ipynb
    """
    from lab.core.data import digits

    seed = check_int("seed", seed, 0)
    features = check_int("features", features, 64)
    Xtr, ytr, Xte, yte = digits(test_size=0.3, seed=seed).tensors("cpu")
    pad = features - Xtr.shape[1]
    import torch

    return (
        torch.nn.functional.pad(Xtr, (0, pad)),
        ytr,
        torch.nn.functional.pad(Xte, (0, pad)),
        yte,
    )


@functools.lru_cache(maxsize=8)
def _pretrained_state(width: int, steps: int, seed: int):
    import torch

    Xtr, ytr, _, _ = digits_data(seed)
    keep = ytr < 5
    X, y = Xtr[keep], ytr[keep]
    with torch.random.fork_rng():  # a local seed for the initialisation
        torch.manual_seed(seed)
        model = _mlp(width)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for _ in range(steps):
        idx = torch.randint(0, len(y), (128,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def _mlp(width: int):
    """``fc1 → ReLU → gain → fc2 → ReLU → classifier``; the fixed ``gain`` (ones) is where
    :func:`~lab.halo.layer.inject_massive_activations` puts the massive channels."""
    from collections import OrderedDict

    from torch import nn

    from .layer import ChannelGain

    return nn.Sequential(OrderedDict(
        fc1=nn.Linear(128, width), act1=nn.ReLU(), gain=ChannelGain(width),
        fc2=nn.Linear(width, width), act2=nn.ReLU(), classifier=nn.Linear(width, 10),
    ))  # fmt: skip


# the official wrap_model(model, config, exceptions=["classifier", "lm_head"]) keeps the last
# layer in full precision; so do the fine-tuning and pre-training runs here
FULL_PRECISION = ("classifier",)


def _accuracy(model, X, y, batch: int) -> float:
    """Test accuracy evaluated in batches of ``batch`` rows, the training batch size: a
    per-tensor scale is then computed over as many rows as in training (HALO's evaluation
    runs the wrapped model batch by batch)."""
    import torch

    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(X[i : i + batch]).argmax(1) for i in range(0, len(y), batch)])
    return float((pred == y).float().mean())


def pretrained_mlp(width: int = 512, scale: float = 1.0, n_channels: int = 4, seed: int = 0,
                   pretrain_steps: int = 150):  # fmt: skip
    """The pre-trained MLP (cached) with ``n_channels`` massive channels of size ``scale``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    from .layer import inject_massive_activations

    width = check_int("width", width, 16, 8192)
    seed = check_int("seed", seed, 0)
    pretrain_steps = check_int("pretrain_steps", pretrain_steps, 1)
    scale = check_range("scale", scale, 1.0, 1e5)
    n_channels = check_int("n_channels", n_channels, 0, width)
    model = _mlp(width)
    model.load_state_dict(_pretrained_state(width, pretrain_steps, seed))
    if n_channels and scale != 1.0:
        inject_massive_activations(model, 0, range(n_channels), scale)
    return model


def finetune(
    mode: str = "halo2",
    fmt: str = "int8",
    scale: float = 300.0,
    width: int = 512,
    steps: int = 100,
    batch: int = 64,
    lr: float = 1e-3,
    token_outliers: bool = False,
    cosine_every: int = 10,
    seed: int = 0,
    lora_rank: int = 0,
    pretrain_seed: int = 0,
) -> FinetuneRun:
    """Fine-tune the pre-trained MLP on all 10 digits in one precision mode.

    Parameters
    ----------
    mode : str
        ``"fp32"``, ``"halo0"``, ``"halo1"`` or ``"halo2"``.
    fmt : str
        Format of the HALO runs (``"int8"``, ``"fp8_e4m3"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``).
    scale : float
        Massive-activation scale ``S`` (4 channels of layer 1).
    width, steps, batch, lr : int, int, int, float
    token_outliers : bool
        Up-weight the loss of 2% of each batch's examples by 100x (row outliers of ``E_Y``).
        The batch must then be a Hadamard size for HALO-2 or it is zero-padded.
    cosine_every : int
        Every this many steps, the cosine between the simulated and the exact FP32 gradient
        (same weights, same batch) is recorded.
    seed : int
        The fine-tuning seed (batches, adapter initialisation, dropout).
    lora_rank : int
        ``> 0``: HALO-PEFT, every linear layer frozen and adapted by a rank-``lora_rank``
        LoRA (``alpha = 8``, dropout 0.1; FP32 mode: a LoRA on ``nn.Linear``).
    pretrain_seed : int
        Seed of the pre-trained model and of the data split.

    Returns
    -------
    FinetuneRun

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    check_choice("mode", mode, MODES)
    fmt = check_fmt(fmt)
    if fmt is None:
        raise ValueError("fmt must be a format name (use mode='fp32' for no quantization)")
    scale = check_range("scale", scale, 1.0, 1e5)
    width = check_int("width", width, 16, 8192)
    seed = check_int("seed", seed, 0)
    steps = check_int("steps", steps, 1)
    batch = check_int("batch", batch, 2)
    lr = check_range("lr", lr, 0.0, 1.0, low_inclusive=False)
    token_outliers = check_bool("token_outliers", token_outliers)
    cosine_every = check_int("cosine_every", cosine_every, 1)
    lora_rank = check_int("lora_rank", lora_rank, 0, 64)
    with torch.random.fork_rng():  # adapter init and dropout: a local seed
        torch.manual_seed(seed)
        run = _finetune(mode, fmt, scale, width, steps, batch, lr, token_outliers,
                        cosine_every, seed, lora_rank, pretrain_seed)  # fmt: skip
    return run


def _finetune(mode, fmt, scale, width, steps, batch, lr, token_outliers, cosine_every, seed,
              lora_rank, pretrain_seed):  # fmt: skip
    import torch

    from .layer import halo_wrap

    model = pretrained_mlp(width, scale, 4, pretrain_seed)
    ref = (
        pretrained_mlp(width, scale, 4, pretrain_seed) if mode != "fp32" and not lora_rank else None
    )
    if lora_rank:
        _add_lora(model, lora_rank, None if mode == "fp32" else int(mode[-1]), fmt)
    elif mode != "fp32":
        halo_wrap(model, level=int(mode[-1]), fmt=fmt, exclude=FULL_PRECISION)
    Xtr, ytr, Xte, yte = digits_data(pretrain_seed)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses, cos = [], []
    n_out = max(1, round(0.02 * batch))
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for k in range(steps):
        idx = torch.randint(0, len(ytr), (batch,), generator=g)
        w = torch.ones(batch)
        if token_outliers:
            w[torch.randperm(batch, generator=g)[:n_out]] = 100.0
        loss_vec = torch.nn.functional.cross_entropy(model(Xtr[idx]), ytr[idx], reduction="none")
        loss = (w * loss_vec).sum() / w.sum()
        opt.zero_grad()
        loss.backward()
        if ref is not None and k % cosine_every == 0:
            ref.load_state_dict(model.state_dict())
            lv = torch.nn.functional.cross_entropy(ref(Xtr[idx]), ytr[idx], reduction="none")
            gr = torch.autograd.grad((w * lv).sum() / w.sum(), list(ref.parameters()))
            a = torch.cat([p.grad.flatten() for p in model.parameters()])
            b = torch.cat([t.flatten() for t in gr])
            cos.append((k, float(a @ b / (a.norm() * b.norm() + 1e-30))))
        opt.step()
        losses.append(float(loss.detach()))
    acc = _accuracy(model, Xte, yte, batch)
    return FinetuneRun(mode, fmt, float(scale), losses, acc, cos, seed)


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


@functools.lru_cache(maxsize=128)
def cached_finetune(mode: str, scale: float, width: int, steps: int, batch: int,
                    token_outliers: bool = False, fmt: str = "int8", seed: int = 0,
                    lr: float = 1e-3, lora_rank: int = 0) -> FinetuneRun:  # fmt: skip
    """:func:`finetune`, memoised on its arguments (one memo for the notebook's runs, its
    seed study and its widget).

    See: book/halo/03-quantized-finetune.ipynb
    """
    return finetune(mode, fmt, scale, width, steps, batch, lr, token_outliers=token_outliers,
                    seed=seed, lora_rank=lora_rank)  # fmt: skip


def check_study(configs: Any, seeds: Any, allowed: set[str]) -> tuple[int, ...]:
    """Validate a seed study's ``configs`` (label -> dict with ``mode`` and keys among
    ``allowed``) and ``seeds`` (ints >= 0, at least one); return the seeds as a tuple.

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(configs, dict) or not configs:
        raise TypeError("configs must be a non-empty dict label -> finetune keyword arguments")
    for label, cfg in configs.items():
        if not isinstance(cfg, dict) or not set(cfg) <= set(allowed) or "mode" not in cfg:
            raise ValueError(
                f"configs[{label!r}] must be a dict with 'mode' and keys among {sorted(allowed)}"
            )
    try:
        seeds = tuple(check_int("seeds", s, 0) for s in seeds)
    except TypeError as exc:
        raise TypeError(f"seeds must be a sequence of ints >= 0 (got {seeds!r})") from exc
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return seeds


def seed_study(configs: dict, seeds=(0, 1, 2), *, scale: float = 300.0, width: int = 512,
               steps: int = 100, batch: int = 64, progress=None) -> SeedStudy:  # fmt: skip
    """Test accuracy of several fine-tuning configurations over the same seeds.

    Parameters
    ----------
    configs : dict
        ``label -> dict`` of keyword arguments of :func:`finetune` among ``mode``, ``fmt``,
        ``lr``, ``token_outliers``, ``lora_rank`` (e.g. ``{"FP32": {"mode": "fp32"},
        "HALO-2 INT8": {"mode": "halo2", "fmt": "int8"}}``).
    seeds : sequence of int
        Fine-tuning seeds (at least one).
    scale, width, steps, batch
        As :func:`finetune`, shared by every configuration.
    progress : callable, optional
        Wraps the iterable of runs (e.g. :func:`lab.core.progress.progress`).

    Returns
    -------
    SeedStudy

    See: book/halo/03-quantized-finetune.ipynb
    """
    seeds = check_study(configs, seeds, {"mode", "fmt", "lr", "token_outliers", "lora_rank"})
    jobs = [(label, s) for label in configs for s in seeds]
    acc = {label: np.zeros(len(seeds)) for label in configs}
    for label, s in progress(jobs) if progress is not None else jobs:
        cfg = {"fmt": "int8", "lr": 1e-3, "token_outliers": False, "lora_rank": 0,
               **configs[label]}  # fmt: skip
        run = cached_finetune(cfg["mode"], float(scale), int(width), int(steps), int(batch),
                              bool(cfg["token_outliers"]), cfg["fmt"], s, float(cfg["lr"]),
                              int(cfg["lora_rank"]))  # fmt: skip
        acc[label][seeds.index(s)] = run.acc
    return SeedStudy(seeds, acc)


def pretrain(mode: str = "halo2", fmt: str = "int8", width: int = 256, steps: int = 200,
             batch: int = 64, lr: float = 3e-3, seed: int = 0,
             eval_batch: int | None = None) -> PretrainRun:  # fmt: skip
    """Train the MLP ``128 → width → width → 10`` from scratch on all ten digits, every linear
    layer a ``HaloLinear`` in ``fmt`` (``mode="fp32"``: ``nn.Linear``).

    The toy stand-in for the paper's pre-training observation (TinyLlama-1.1B: FP8 matches
    BF16, INT8 and FP4 diverge): no massive activations are injected; whatever outliers the
    network grows, it grows by itself.

    Parameters
    ----------
    mode : str
        ``"fp32"``, ``"halo0"``, ``"halo1"`` or ``"halo2"``.
    fmt : str
        A format of :func:`lab.halo.quantize` (``"fp4_e2m1"`` included).
    width, steps, batch, lr, seed
    eval_batch : int, optional
        Rows per evaluation batch (default: ``batch``, as in training; a per-tensor scale over
        a larger batch is set by its largest row).

    Returns
    -------
    PretrainRun

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    from .layer import halo_wrap

    check_choice("mode", mode, MODES)
    fmt = check_fmt(fmt)
    if fmt is None:
        raise ValueError("fmt must be a format name (use mode='fp32' for no quantization)")
    width = check_int("width", width, 16, 8192)
    steps = check_int("steps", steps, 10)
    batch = check_int("batch", batch, 2)
    lr = check_range("lr", lr, 0.0, 1.0, low_inclusive=False)
    seed = check_int("seed", seed, 0)
    eval_batch = batch if eval_batch is None else check_int("eval_batch", eval_batch, 1)
    Xtr, ytr, Xte, yte = digits_data(0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = _mlp(width)
    if mode != "fp32":
        halo_wrap(model, level=int(mode[-1]), fmt=fmt, exclude=FULL_PRECISION)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses = []
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for _ in range(steps):
        idx = torch.randint(0, len(ytr), (batch,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(Xtr[idx]), ytr[idx])
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    acc = _accuracy(model, Xte, yte, eval_batch)
    tail = float(np.mean(losses[-10:]))
    diverged = not all(math.isfinite(v) for v in losses) or tail > losses[0]
    return PretrainRun(mode, fmt, losses, acc, bool(diverged))
