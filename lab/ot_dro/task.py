"""The spurious-feature task of notebook 2 (ours) and its small model.

Binary labels carried by two noisy core coordinates, a clean spurious coordinate that agrees
with the label in training and not at test, and noise coordinates; the prior augmentation
``A`` flips the spurious sign (:func:`flip_spurious`).

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_positive, check_range

__all__ = ["make_spurious", "flip_spurious", "make_model", "accuracy"]


def make_spurious(
    n: int, agree: float = 0.95, seed: int = 0, core_noise: float = 1.0, n_noise: int = 5
):
    """Binary task: 2 noisy core coordinates, 1 clean spurious coordinate, ``n_noise`` noise.

    The spurious coordinate equals ``+-1`` and agrees with the label sign with probability
    ``agree`` (0.95 in training; the shifted test uses a low value). Returns float32
    ``X [n, 3 + n_noise]`` and int64 ``y [n]``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    n = check_int("n", n, 1)
    agree = check_range("agree", agree, 0.0, 1.0)
    seed = check_int("seed", seed, 0)
    core_noise = check_positive("core_noise", core_noise)
    n_noise = check_int("n_noise", n_noise, 0)
    return make_spurious_unchecked(n, agree, seed, core_noise, n_noise)


def make_spurious_unchecked(
    n: int, agree: float, seed: int, core_noise: float = 1.0, n_noise: int = 5
):
    """:func:`make_spurious` on validated arguments (the drivers' path)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = 2.0 * y - 1.0
    core = s[:, None] * np.array([1.0, 1.0]) + core_noise * rng.standard_normal((n, 2))
    spur = np.where(rng.random(n) < agree, s, -s)[:, None]
    noise = rng.standard_normal((n, n_noise))
    X = np.concatenate([core, spur, noise], axis=1).astype(np.float32)
    return X, y.astype(np.int64)


def flip_spurious(X, corrupt: float = 0.0, seed: int = 0, p_flip: float = 0.5):
    """The prior augmentation A: flip the sign of the spurious coordinate (index 2).

    Each row is flipped with probability ``p_flip`` (0.5: the augmented set carries no
    spurious signal; 1.0 flips every row and builds the *reversed* correlation). A fraction
    ``corrupt`` of the rows is replaced by a harmful candidate (core coordinates negated: it
    keeps its label but now looks like the other class) that the filter should drop. Returns
    ``(X_aug, is_corrupt)``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    corrupt = check_range("corrupt", corrupt, 0.0, 1.0)
    p_flip = check_range("p_flip", p_flip, 0.0, 1.0)
    try:
        X = np.asarray(X, dtype=np.float32)  # flip_spurious_unchecked copies
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"X must be array-like of numbers (got {type(X).__name__}): {exc}"
        ) from None
    if X.ndim != 2 or X.shape[1] < 3:
        raise ValueError(f"X must be [n, d] with d >= 3 (got shape {X.shape})")
    if not np.isfinite(X).all():
        raise ValueError("X must be finite (found NaN or inf)")
    return flip_spurious_unchecked(X, corrupt, check_int("seed", seed, 0), p_flip)


def flip_spurious_unchecked(X: np.ndarray, corrupt: float, seed: int, p_flip: float = 0.5):
    """:func:`flip_spurious` on validated arguments; flips a float32 copy of ``X``."""
    X = np.array(X, dtype=np.float32, copy=True)
    rng = np.random.default_rng(seed + 12345)
    flip = rng.random(X.shape[0]) < p_flip
    X[flip, 2] = -X[flip, 2]
    bad = rng.random(X.shape[0]) < corrupt
    X[bad, :2] = -X[bad, :2]
    return X, bad


def make_model(d_in: int = 8, hidden: int = 32, k: int = 16, n_classes: int = 2, seed: int = 0):
    """MLP encoder ``d_in -> hidden -> k`` plus a linear head; ``forward -> (z, logits)``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    d_in = check_int("d_in", d_in, 1)
    hidden = check_int("hidden", hidden, 1)
    k = check_int("k", k, 1)
    n_classes = check_int("n_classes", n_classes, 2)
    return make_model_unchecked(d_in, hidden, k, n_classes, check_int("seed", seed, 0))


def make_model_unchecked(
    d_in: int, hidden: int = 32, k: int = 16, n_classes: int = 2, seed: int = 0
):
    """:func:`make_model` on validated arguments (the drivers' path)."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, k))
            self.head = nn.Linear(k, n_classes)

        def forward(self, x):
            z = self.enc(x)
            return z, self.head(torch.relu(z))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # local: the global generator is restored on exit
        return Net()


def accuracy(model, X, y) -> float:
    """Classification accuracy of ``model`` on numpy ``X, y``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    try:
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X and y must be array-like: {exc}") from None
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be [n, d] with n >= 1 and y [n] (got {X.shape}, {y.shape})")
    with torch.no_grad():
        _, logits = model(torch.as_tensor(X))
        return float((logits.argmax(1).numpy() == y).mean())
