r"""Data: a Waterbirds-like subpopulation-shift set built from the bundled digits (no download).

*Water digits.* The label is ``y = 1[digit >= 5]``; the attribute ``a ∈ {0, 1}`` is a
"background colour": a patch of extra pixels whose value is ``±strength`` (plus noise) next to
the digit. Training groups ``g = 2y + a`` have Waterbirds' skew (3,498 / 184 / 56 / 1,057 for
(y, a) = (0,0), (0,1), (1,0), (1,1)) scaled to the digits, so the background predicts the label
in most training rows; validation and test rows have the attribute independent of the label,
every group equally large (as in Waterbirds' test split). Features are standardised with the
training statistics.

:func:`make_rotated_spurious_envs` is the small synthetic environment set of the exercises.

See: book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_int, check_positive, check_range
from lab.core.data import digits

__all__ = [
    "GROUP_NAMES",
    "WATERBIRDS_TRAIN",
    "GroupSplit",
    "WaterDigits",
    "make_rotated_spurious_envs",
    "water_digits",
]

#: Waterbirds' training group sizes, (y, a) = (0, 0), (0, 1), (1, 0), (1, 1) (Sagawa et al.).
WATERBIRDS_TRAIN = (3498, 184, 56, 1057)
GROUP_NAMES = (
    "low digit, background 0",
    "low digit, background 1",
    "high digit, background 0",
    "high digit, background 1",
)


@dataclass
class GroupSplit:
    """One split: features ``x [n, d]`` (float32), labels ``y``, attribute ``a``, group ``g = 2y + a``."""

    x: np.ndarray
    y: np.ndarray
    a: np.ndarray
    g: np.ndarray

    def tensors(self, device: Any = None):
        """``(x, y, g)`` as torch tensors (float32, int64, int64)."""
        import torch

        return (
            torch.as_tensor(self.x, dtype=torch.float32, device=device),
            torch.as_tensor(self.y, dtype=torch.int64, device=device),
            torch.as_tensor(self.g, dtype=torch.int64, device=device),
        )

    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.g, minlength=4)


@dataclass
class WaterDigits:
    """Train / validation / test splits of :func:`water_digits` (4 groups)."""

    train: GroupSplit
    val: GroupSplit
    test: GroupSplit
    n_groups: int = 4
    n_classes: int = 2


def water_digits(
    scale: float = 0.15,
    *,
    strength: float = 1.0,
    noise: float = 0.5,
    patch: int = 8,
    pixel_noise: float = 0.0,
    val_fraction: float = 0.25,
    seed: int = 0,
) -> WaterDigits:
    """A Waterbirds-like split of the digits with a spurious background attribute.

    Parameters
    ----------
    scale : float
        Training group sizes are ``round(scale * WATERBIRDS_TRAIN)`` (each at least 2); in
        ``(0, 0.18]`` so the low-digit class (about 900 images) also leaves rows to validate and
        test on. Default 0.15: 525 / 28 / 8 / 159.
    strength : float
        ``>= 0``, the background patch's mean ``±strength`` (the spurious signal).
    noise : float
        ``>= 0``, Gaussian noise on the patch.
    patch : int
        ``>= 1`` background features appended to the 64 pixels.
    pixel_noise : float
        ``>= 0``, Gaussian noise added to the pixels (in ``[0, 1]`` pixel units) to make the core
        signal harder.
    val_fraction : float
        In ``(0, 1)``: share of the remaining rows of each class used for validation (rest: test).
    seed : int
        ``>= 0``.

    Returns
    -------
    WaterDigits

    See: book/medro/02-water-digits.ipynb
    """
    scale = check_range("scale", scale, 1e-3, 0.18)
    strength = check_positive("strength", strength, allow_zero=True)
    noise = check_positive("noise", noise, allow_zero=True)
    patch = check_int("patch", patch, 1, 1024)
    pixel_noise = check_positive("pixel_noise", pixel_noise, allow_zero=True)
    val_fraction = check_range("val_fraction", val_fraction, 0.01, 0.99)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    pix, digit, _, _ = digits(test_size=0, seed=seed, standardize=False, dtype="float64")
    label = (digit >= 5).astype(np.int64)
    sizes = [max(2, round(scale * s)) for s in WATERBIRDS_TRAIN]
    rows = {y: rng.permutation(np.flatnonzero(label == y)) for y in (0, 1)}
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"train": [], "val": [], "test": []}
    for y in (0, 1):
        n0, n1 = sizes[2 * y], sizes[2 * y + 1]
        r = rows[y]
        parts["train"] += [
            (r[:n0], np.zeros(n0, np.int64)),
            (r[n0 : n0 + n1], np.ones(n1, np.int64)),
        ]
        rest = r[n0 + n1 :]
        n_val = 2 * (round(val_fraction * len(rest)) // 2)
        for name, chunk in (("val", rest[:n_val]), ("test", rest[n_val:])):
            half = len(chunk) // 2
            parts[name] += [
                (chunk[:half], np.zeros(half, np.int64)),
                (chunk[half : 2 * half], np.ones(2 * half - half, np.int64)),
            ]

    def build(name: str) -> GroupSplit:
        idx = np.concatenate([p[0] for p in parts[name]])
        a = np.concatenate([p[1] for p in parts[name]])
        y = label[idx]
        x = pix[idx] + pixel_noise * rng.standard_normal((len(idx), pix.shape[1]))
        bg = (2 * a[:, None] - 1) * strength + noise * rng.standard_normal((len(idx), patch))
        return GroupSplit(np.column_stack([x, bg]), y, a, 2 * y + a)

    train, val, test = build("train"), build("val"), build("test")
    mean, std = train.x.mean(0), train.x.std(0) + 1e-3  # training statistics only
    for s in (train, val, test):
        s.x = ((s.x - mean) / std).astype(np.float32)
    return WaterDigits(train, val, test)


def make_rotated_spurious_envs(
    n_per_env: int,
    rho_list: Any,
    theta_list: Any,
    noise_dims: int = 5,
    seed: int = 0,
    *,
    style_scale: float = 6.0,
    label_noise: float = 0.05,
    dtype: Any = None,
):
    """Small synthetic environments with conflicting decision directions (the exercises' data).

    Environment ``e``: a core ``c ~ N(0, I_2)`` labelled by the direction at angle ``θ_e``
    (labels flipped with probability ``label_noise``), a spurious coordinate ``±1`` agreeing with
    the label with probability ``ρ_e``, and ``noise_dims`` Gaussian coordinates, the first
    shifted by ``style_scale · θ_e``.

    Parameters
    ----------
    n_per_env : int (>= 1)
    rho_list, theta_list : sequences of float of one length (``ρ ∈ [0, 1]``, ``θ ∈ [-π, π]``)
    noise_dims : int (>= 1)
    seed : int (>= 0)
    style_scale : float (>= 0)
    label_noise : float in [0, 0.5]
    dtype : torch.dtype, optional (default float32)

    Returns
    -------
    list of (Tensor[n, 3 + noise_dims], LongTensor[n])

    See: book/medro/exercises.ipynb
    """
    import torch

    n = check_int("n_per_env", n_per_env, 1)
    rho = check_array("rho_list", rho_list, ndim=1, min_size=1)
    theta = check_array("theta_list", theta_list, ndim=1, min_size=1)
    if rho.shape != theta.shape:
        raise ValueError("rho_list and theta_list must have the same length")
    if np.any((rho < 0) | (rho > 1)):
        raise ValueError(f"rho_list must lie in [0, 1] (got {rho.tolist()})")
    if np.any(np.abs(theta) > math.pi):
        raise ValueError(f"theta_list must lie in [-pi, pi] (got {theta.tolist()})")
    noise_dims = check_int("noise_dims", noise_dims, 1)
    seed = check_int("seed", seed, 0)
    style_scale = check_positive("style_scale", style_scale, allow_zero=True)
    label_noise = check_range("label_noise", label_noise, 0.0, 0.5)
    dtype = torch.float32 if dtype is None else dtype
    rng = np.random.default_rng(seed)
    envs = []
    for r, t in zip(rho, theta, strict=True):
        core = rng.standard_normal((n, 2))
        y = (core @ np.array([math.cos(t), math.sin(t)]) > 0).astype(np.int64)
        y = np.where(rng.random(n) < label_noise, 1 - y, y)
        spur = np.where(rng.random(n) < r, 2 * y - 1, 1 - 2 * y) + 0.1 * rng.standard_normal(n)
        extra = rng.standard_normal((n, noise_dims))
        extra[:, 0] += style_scale * t
        x = np.column_stack([core, spur, extra])
        envs.append((torch.as_tensor(x, dtype=dtype), torch.as_tensor(y)))
    return envs
