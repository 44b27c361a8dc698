"""The label-noise side of the chapter: symmetric label noise, the weighted share of
mislabeled examples in a coreset, and the uniform coreset every selector is compared with.

See: book/coreset/01-facility-location.ipynb, book/coreset/02-label-noise.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_range

__all__ = ["random_coreset", "corrupt_labels", "noisy_share"]


def random_coreset(n: int, budget: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random subset of size ``budget`` with equal weights ``n / budget``.

    See: book/coreset/01-facility-location.ipynb
    """
    n = check_int("n", n, 1)
    budget = check_int("budget", budget, 1)
    seed = check_int("seed", seed, 0)
    b = min(budget, n)
    idx = np.random.default_rng(seed).choice(n, size=b, replace=False)
    return idx, np.full(b, n / b)


def corrupt_labels(
    y: Any, ratio: float, num_classes: int, seed: int = 0, *, mode: str = "symmetric"
) -> tuple[np.ndarray, np.ndarray]:
    """Inject label noise.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Clean labels in ``0 .. num_classes - 1``.
    ratio : float in [0, 1]
        Fraction of examples whose label is redrawn.
    num_classes : int
        Number of classes ``C >= 2``.
    seed : int
        Seed of the numpy generator (deterministic).
    mode : {"symmetric", "exclusive"}
        ``"symmetric"``: each picked example gets a uniform label over all ``C`` classes (it
        may keep its own, so the flipped fraction is ``ratio (C-1)/C`` on average; the
        convention of the paper's experiments). ``"exclusive"``: a uniform *other* class.

    Returns
    -------
    y_noisy : ndarray of int
    flipped : ndarray of bool
        ``y_noisy != y``.

    See: book/coreset/02-label-noise.ipynb
    """
    num_classes = check_int("num_classes", num_classes, 2)
    y = check_array("y", y, ndim=1, dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y)):
            y = y.astype(int)
        else:
            raise TypeError(f"y must hold integer labels (got dtype {y.dtype})")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"y must lie in [0, {num_classes - 1}] (got {y.min()}..{y.max()})")
    ratio = check_range("ratio", ratio, 0.0, 1.0)
    seed = check_int("seed", seed, 0)
    mode = check_choice("mode", mode, ("symmetric", "exclusive"))
    rng = np.random.default_rng(seed)
    pick = rng.random(y.size) < ratio
    y_noisy = y.astype(int).copy()
    if mode == "symmetric":
        y_noisy[pick] = rng.integers(0, num_classes, size=int(pick.sum()))
    else:
        shift = rng.integers(1, num_classes, size=int(pick.sum()))
        y_noisy[pick] = (y_noisy[pick] + shift) % num_classes
    return y_noisy, y_noisy != y


def noisy_share(flipped: Any, idx: Any, weights: Any) -> float:
    """Weighted share of mislabeled points in a coreset, ``sum_j gamma_j [flipped_j] / sum gamma``.

    See: book/coreset/01-facility-location.ipynb
    """
    flipped = check_array("flipped", flipped, ndim=1, dtype=None, min_size=1).astype(bool)
    idx = check_array("idx", idx, ndim=1, dtype=None, min_size=1)
    if not np.issubdtype(idx.dtype, np.integer):
        if np.issubdtype(idx.dtype, np.floating) and np.all(idx == np.round(idx)):
            idx = idx.astype(int)
        else:
            raise TypeError(f"idx must hold integer indices (got dtype {idx.dtype})")
    if idx.min() < 0 or idx.max() >= flipped.size:
        raise ValueError(f"idx must lie in [0, {flipped.size - 1}] (got {idx.min()}..{idx.max()})")
    w = check_array("weights", weights, ndim=1, min_size=1)
    if w.shape != idx.shape:
        raise ValueError(f"weights must have the shape of idx {idx.shape} (got {w.shape})")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    return float((w * flipped[idx]).sum() / w.sum())
