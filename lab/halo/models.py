"""Notebook 3's toy model and data: the digits, the MLP and its "pre-training".

1. "Pre-train" an MLP ``128 → width → gain → width → 10`` (ReLU; a fixed per-channel
   ``gain`` of ones after the first ReLU; the 8×8 digits of :func:`lab.core.data.digits`,
   standardised with training statistics, padded to 128 features) on classes 0–4 with Adam.
2. Inject massive activations: multiply ``n_channels`` entries of the gain by ``scale`` and
   fold it out of layer 2 (its matching input columns divided by ``scale``): the function is
   unchanged, the weights keep their range, layer 2's inputs get massive channels.

The pre-trained model and the data split depend on ``pretrain_seed`` only.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from lab.core.checks import check_int, check_range
from lab.core.memo import memo
from lab.core.runtime import smoke_steps

__all__ = ["digits_data", "pretrained_mlp", "FULL_PRECISION"]

# the official wrap_model(model, config, exceptions=["classifier", "lm_head"]) keeps the last
# layer in full precision; so do the fine-tuning and pre-training runs here
FULL_PRECISION = ("classifier",)


@memo(maxsize=4)
def digits_data(seed: int = 0, features: int = 128):
    """Digits (:func:`lab.core.data.digits`: standardised with the training rows' statistics
    only) zero-padded to ``features`` columns, split 70/30: ``(Xtr, ytr, Xte, yte)`` as
    float32/int64 torch tensors on the CPU.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch

    from lab.core.data import digits

    seed = check_int("seed", seed, 0)
    features = check_int("features", features, 64)
    Xtr, ytr, Xte, yte = digits(test_size=0.3, seed=seed).tensors("cpu")
    pad = features - Xtr.shape[1]
    return (
        torch.nn.functional.pad(Xtr, (0, pad)),
        ytr,
        torch.nn.functional.pad(Xte, (0, pad)),
        yte,
    )


@memo(maxsize=8)
def _pretrained_state(width: int, steps: int, seed: int):
    import torch

    Xtr, ytr, _, _ = digits_data(seed)
    keep = ytr < 5
    X, y = Xtr[keep], ytr[keep]
    with torch.random.fork_rng():  # a local seed for the initialisation
        torch.manual_seed(seed)
        model = mlp(width)
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


def mlp(width: int):
    """``fc1 → ReLU → gain → fc2 → ReLU → classifier``; the fixed ``gain`` (ones) is where
    :func:`~lab.halo.layer.inject_massive_activations` puts the massive channels."""
    from collections import OrderedDict

    from torch import nn

    from .layer import ChannelGain

    return nn.Sequential(OrderedDict(
        fc1=nn.Linear(128, width), act1=nn.ReLU(), gain=ChannelGain(width),
        fc2=nn.Linear(width, width), act2=nn.ReLU(), classifier=nn.Linear(width, 10),
    ))  # fmt: skip


def accuracy(model, X, y, batch: int) -> float:
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
    """The pre-trained MLP (memoised) with ``n_channels`` massive channels of size ``scale``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    width = check_int("width", width, 16, 8192)
    seed = check_int("seed", seed, 0)
    pretrain_steps = check_int("pretrain_steps", pretrain_steps, 1)
    scale = check_range("scale", scale, 1.0, 1e5)
    n_channels = check_int("n_channels", n_channels, 0, width)
    return _pretrained(width, scale, n_channels, seed, pretrain_steps)


def _pretrained(width: int, scale: float, n_channels: int, seed: int, pretrain_steps: int):
    """:func:`pretrained_mlp` without the checks (the drivers' settings are validated)."""
    from .layer import inject_massive_activations

    model = mlp(width)
    model.load_state_dict(_pretrained_state(width, pretrain_steps, seed))
    if n_channels and scale != 1.0:
        inject_massive_activations(model, 0, range(n_channels), scale)
    return model
