"""Shared data sets, written once: scikit-learn's bundled digits (no download).

Several chapters train a small network on the 1797 8x8 digit images that ship with
scikit-learn. :func:`digits` is the one loader they share: pixels scaled to ``[0, 1]``, an
optional subset of classes, a seeded train/test split, and an optional standardisation whose
statistics come from the **training rows only** (standardising with the test rows included
leaks them into training).

Conventions of the split, the same as the chapters' former copies: a permutation of the
rows from ``np.random.default_rng(seed)``; its first ``n_test`` rows are the test set, the
rest the training set.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks import check_bool, check_int, check_positive, check_range

__all__ = ["N_DIGITS", "DigitsSplit", "digits"]

#: number of images in scikit-learn's digits set
N_DIGITS = 1797


def _digits_file() -> Any:
    """The path of scikit-learn's ``datasets/data/digits.csv.gz``, found without importing
    scikit-learn (``import sklearn.datasets`` takes about 1 s, paid by every kernel that only
    wants the 1797 rows); ``None`` when that file is not where scikit-learn keeps it."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def _raw_digits() -> tuple[np.ndarray, np.ndarray]:
    """``(X / 16, y)`` of the whole set as read-only float64/int64 arrays (loaded once).

    The rows of ``sklearn.datasets.load_digits()`` (the same file, read the way it reads it:
    a comma-separated table whose last column is the digit; tested against it).
    """
    path = _digits_file()
    if path is None:  # a scikit-learn that keeps its data elsewhere: ask it
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
    else:
        import gzip

        with gzip.open(path, "rt", encoding="utf-8") as f:
            table = np.loadtxt(f, delimiter=",")
        X, y = table[:, :-1], table[:, -1].astype(int)
    X = np.asarray(X, dtype=np.float64) / 16.0
    y = np.asarray(y, dtype=np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


@dataclass(frozen=True)
class DigitsSplit:
    """A train/test split of the digits set (returned by :func:`digits`).

    Unpacks like the 4-tuple the chapters used before:
    ``X_train, y_train, X_test, y_test = digits(...)``.

    Attributes
    ----------
    X_train, X_test : np.ndarray, shape (n, 64)
        Features: pixels scaled to ``[0, 1]``, standardised with the training statistics
        when ``standardize=True``.
    y_train, y_test : np.ndarray of int64, shape (n,)
        Labels: the digit, or its position in ``classes`` when a subset was asked for.
    train_index, test_index : np.ndarray of int64
        Rows of ``sklearn.datasets.load_digits()`` behind each split, in split order.
    classes : tuple of int
        The digits kept, in label order.
    mean, scale : np.ndarray or None, shape (64,)
        The standardisation ``(X - mean) / scale`` (training rows only); ``None`` when the
        features are not standardised.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray
    classes: tuple[int, ...]
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None

    def __iter__(self):
        return iter((self.X_train, self.y_train, self.X_test, self.y_test))

    def tensors(self, device: Any = None, dtype: Any = None) -> tuple[Any, Any, Any, Any]:
        """``(X_train, y_train, X_test, y_test)`` as torch tensors.

        Parameters
        ----------
        device : str or torch.device, optional
            Default :func:`lab.device`.
        dtype : torch.dtype, optional
            Of the features (default: the dtype of the numpy features). Labels are int64.
        """
        import torch

        from .runtime import resolve_device

        dev = resolve_device(device)
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a floating torch.dtype or None (got {dtype!r})")

        def feats(a):
            return torch.as_tensor(a, dtype=dtype, device=dev)

        def labels(a):
            return torch.as_tensor(a, dtype=torch.int64, device=dev)

        return feats(self.X_train), labels(self.y_train), feats(self.X_test), labels(self.y_test)


def _check_classes(classes: Any) -> tuple[int, ...]:
    if classes is None:
        return tuple(range(10))
    if isinstance(classes, str | bytes) or not hasattr(classes, "__iter__"):
        raise TypeError(
            f"classes must be None or a sequence of digits 0..9 (got {type(classes).__name__}: "
            f"{classes!r})"
        )
    out = tuple(check_int(f"classes[{i}]", c, 0, 9) for i, c in enumerate(classes))
    if len(out) < 2:
        raise ValueError(f"classes must name at least 2 digits (got {classes!r})")
    if len(set(out)) != len(out):
        raise ValueError(f"classes must be distinct digits (got {classes!r})")
    return out


def _n_test(test_size: Any, n: int) -> int:
    if isinstance(test_size, bool):
        raise TypeError(f"test_size must be a float in [0, 1) or an integer (got {test_size!r})")
    if isinstance(test_size, numbers.Integral | np.integer):
        return check_int("test_size", test_size, 0, n - 1)
    frac = check_range("test_size", test_size, 0.0, 1.0, high_inclusive=False)
    return int(round(frac * n))


def digits(
    classes: Any = None,
    *,
    test_size: float | int = 0.25,
    seed: int | np.random.Generator = 0,
    shuffle: bool = True,
    standardize: bool = True,
    eps: float = 1e-3,
    dtype: Any = "float32",
) -> DigitsSplit:
    """scikit-learn's bundled digits (1797 images 8x8, no download), split and scaled.

    Pixels are divided by 16 (to ``[0, 1]``). With ``standardize`` every feature is then
    mapped to ``(x - mean) / (std + eps)`` where ``mean`` and ``std`` are taken over the
    **training rows only**, so nothing about the test rows leaks into training; ``eps`` keeps
    the always-blank border pixels finite.

    Parameters
    ----------
    classes : sequence of int, optional
        Keep only these digits (at least two, distinct, each in ``0..9``); the labels become
        their positions in ``classes`` (``classes=(3, 8)``: 3 -> 0, 8 -> 1). Default: all ten,
        labels are the digits.
    test_size : float or int
        A fraction in ``[0, 1)`` of the kept rows (``round(test_size * n)`` rows), or a row
        count in ``[0, n - 1]``. ``0`` gives an empty test set.
    seed : int or numpy.random.Generator
        Seed (``>= 0``) of the permutation; a ``Generator`` is used as is (and advanced), so
        a caller can keep drawing from it after the split.
    shuffle : bool
        ``False`` keeps the rows in scikit-learn's order (no permutation; ``seed`` unused).
    standardize : bool
        Standardise with the training statistics (``True``) or keep pixels in ``[0, 1]``.
    eps : float
        ``> 0``, added to the training standard deviation (in ``[0, 1]`` pixel units).
    dtype : {"float32", "float64"}
        Of the features (labels are always int64).

    Returns
    -------
    DigitsSplit
        Unpacks as ``X_train, y_train, X_test, y_test``; ``.tensors(device)`` gives torch
        tensors.

    Raises
    ------
    TypeError, ValueError
        On an argument outside the ranges above (the message names it).

    Examples
    --------
    >>> Xtr, ytr, Xte, yte = digits(test_size=0.25, seed=0)
    >>> Xtr.shape, Xte.shape
    ((1348, 64), (449, 64))
    """
    kept = _check_classes(classes)
    shuffle = check_bool("shuffle", shuffle)
    standardize = check_bool("standardize", standardize)
    eps = check_positive("eps", eps)
    try:
        np_dtype = None if dtype is None else np.dtype(dtype)  # np.dtype(None) is float64
    except TypeError:
        np_dtype = None
    if np_dtype is None or np_dtype.name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64' (got {dtype!r})")
    if isinstance(seed, np.random.Generator):
        rng = seed
    else:
        rng = np.random.default_rng(check_int("seed", seed, 0, 2**63 - 1))

    X, y = _raw_digits()
    if kept == tuple(range(10)):
        rows = np.arange(len(y))
        labels = y
    else:
        rows = np.nonzero(np.isin(y, kept))[0]
        lookup = np.full(10, -1, dtype=np.int64)
        lookup[list(kept)] = np.arange(len(kept))
        labels = lookup[y]
    n = len(rows)
    n_test = _n_test(test_size, n)
    order = rows[rng.permutation(n)] if shuffle else rows
    te, tr = order[:n_test], order[n_test:]

    Xtr, Xte = X[tr], X[te]
    mean = scale = None
    if standardize:
        mean = Xtr.mean(0)  # training rows only: no test statistics leak into training
        scale = Xtr.std(0) + eps
        Xtr, Xte = (Xtr - mean) / scale, (Xte - mean) / scale
    return DigitsSplit(
        X_train=Xtr.astype(np_dtype),
        y_train=labels[tr].astype(np.int64),
        X_test=Xte.astype(np_dtype),
        y_test=labels[te].astype(np.int64),
        train_index=tr.astype(np.int64),
        test_index=te.astype(np.int64),
        classes=kept,
        mean=mean,
        scale=scale,
    )
