"""Notebook 3's experiment: fine-tune a small MLP with injected massive activations under
FP32 and simulated HALO-0/1/2.

1. "Pre-train" an MLP ``128 → width → width → 10`` (ReLU; the 8×8 digits padded to 128
   features) on classes 0–4 with Adam.
2. Inject massive activations: multiply ``n_channels`` hidden channels of layer 1 by ``scale``
   and divide the matching input columns of layer 2 by ``scale`` (the function is unchanged).
3. Fine-tune on all 10 classes with Adam, every linear layer replaced by a ``HaloLinear``
   (the FP32 run keeps ``nn.Linear``); optionally up-weight the loss of 2% of the examples by
   100x (token outliers in ``E_Y``).

Adam, not SGD: the function-preserving rescale is not optimization-preserving for SGD (the
spec's prototype diverged even in FP32), while Adam is invariant to per-parameter scale.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import functools

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int, check_range

__all__ = ["MODES", "digits_data", "pretrained_mlp", "finetune"]

MODES = ("fp32", "halo0", "halo1", "halo2")


@functools.lru_cache(maxsize=4)
def digits_data(seed: int = 0, features: int = 128):
    """Digits (sklearn, 8×8) standardized and zero-padded to ``features`` columns, split
    70/30: ``(Xtr, ytr, Xte, yte)`` as float32/int64 torch tensors.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / (X.std(0) + 1e-6)
    X = np.pad(X, ((0, 0), (0, features - X.shape[1])))
    perm = np.random.default_rng(seed).permutation(len(y))
    ntr = int(0.7 * len(y))
    tr, te = perm[:ntr], perm[ntr:]
    t = functools.partial(torch.tensor, dtype=torch.float32)
    return t(X[tr]), torch.tensor(y[tr]), t(X[te]), torch.tensor(y[te])


@functools.lru_cache(maxsize=8)
def _pretrained_state(width: int, steps: int, seed: int):
    import torch

    torch.manual_seed(seed)
    Xtr, ytr, _, _ = digits_data(seed)
    keep = ytr < 5
    X, y = Xtr[keep], ytr[keep]
    model = _mlp(width)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(y), (128,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def _mlp(width: int):
    from torch import nn

    return nn.Sequential(
        nn.Linear(128, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
    )


def pretrained_mlp(width: int = 512, scale: float = 1.0, n_channels: int = 4, seed: int = 0,
                   pretrain_steps: int = 150):  # fmt: skip
    """The pre-trained MLP (cached) with ``n_channels`` massive channels of size ``scale``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    from .linear import inject_massive_activations

    width = check_int("width", width, 16, 8192)
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
) -> dict:
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
    lora_rank : int
        ``> 0``: HALO-PEFT, every linear layer frozen and adapted by a rank-``lora_rank``
        LoRA (``alpha = 8``, dropout 0.1; FP32 mode: a LoRA on ``nn.Linear``).

    Returns
    -------
    dict
        ``loss`` (per step), ``acc`` (test accuracy after fine-tuning), ``cos`` (list of
        ``(step, cosine)``), ``mode``, ``fmt``, ``scale``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    from .linear import halo_wrap

    check_choice("mode", mode, MODES)
    steps = check_int("steps", steps, 1)
    batch = check_int("batch", batch, 2)
    lr = check_range("lr", lr, 0.0, 1.0, low_inclusive=False)
    token_outliers = check_bool("token_outliers", token_outliers)
    cosine_every = check_int("cosine_every", cosine_every, 1)
    lora_rank = check_int("lora_rank", lora_rank, 0, 64)
    model = pretrained_mlp(width, scale, 4, seed)
    ref = pretrained_mlp(width, scale, 4, seed) if mode != "fp32" and not lora_rank else None
    if lora_rank:
        torch.manual_seed(seed)
        _add_lora(model, lora_rank, None if mode == "fp32" else int(mode[-1]), fmt)
    elif mode != "fp32":
        halo_wrap(model, level=int(mode[-1]), fmt=fmt)
    Xtr, ytr, Xte, yte = digits_data(seed)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses, cos = [], []
    n_out = max(1, round(0.02 * batch))
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
    model.eval()
    with torch.no_grad():
        acc = float((model(Xte).argmax(1) == yte).float().mean())
    return {"mode": mode, "fmt": fmt, "scale": scale, "loss": losses, "acc": acc, "cos": cos}


def _add_lora(model, rank: int, level, fmt: str) -> None:
    """Replace every ``nn.Linear`` by a LoRA-adapted (HALO or plain, ``level=None``) copy."""
    from torch import nn

    from .layer import LoRAHaloLinear

    for i, m in enumerate(model):
        if isinstance(m, nn.Linear):
            cfg = {"level": 0, "fmt": None} if level is None else {"level": level, "fmt": fmt}
            r = min(rank, m.in_features, m.out_features)
            model[i] = LoRAHaloLinear(m, r=r, alpha=8.0, dropout=0.1, **cfg)
