"""Comparisons the chapter's verdicts read: per-seed gaps of a gap table, paired intervals
over training seeds or over test instances.

See: book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "seed_gaps",
    "seed_rule",
    "seed_comparison",
    "instance_comparison",
    "seed_average",
    "ratio_interval",
]


def seed_gaps(table: dict, name: str) -> np.ndarray:
    """Gaps (%) of every training seed of checkpoint ``name`` in a ``gap_table`` result.

    The table's models must be labelled ``"<name>-seed<k>"`` (as ``checkpoint_keys`` gives).

    Returns
    -------
    numpy.ndarray
        ``(seeds, capacities)``, seeds in increasing order.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    if not isinstance(table, dict) or "gaps" not in table:
        raise TypeError("table must be a gap_table result (a dict with 'gaps')")
    if not isinstance(name, str):
        raise TypeError(f"name must be a checkpoint name (got {type(name).__name__})")
    rows = sorted(
        (int(k.rsplit("-seed", 1)[1]), v)
        for k, v in table["gaps"].items()
        if k.rsplit("-seed", 1)[0] == name and "-seed" in k
    )
    if not rows:
        raise ValueError(f"name {name!r} has no '<name>-seed<k>' model in the table")
    return np.array([v for _, v in rows], dtype=float)


def seed_rule(better: str = "new", worse: str = "old"):
    """The verdict rule for "``better`` has a lower gap than ``worse``": a paired interval.

    The measured value is a paired interval (``lab.core.claims.paired``) of ``better - worse``:
    over training seeds (:func:`seed_comparison`) where both models have several, over test
    instances (:func:`instance_comparison`) where one has a single checkpoint. Reproduced when
    the whole 95% interval lies below zero; there is no qualitative tier (an ordering of means
    is a sign test).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    if not isinstance(better, str) or not isinstance(worse, str):
        raise TypeError("better and worse must be labels (strings)")
    return claims.rule(reproduced=claims.ci_below(0.0))


def _per_seed(name: str, values) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a sequence of numbers, one per seed") from e
    if v.ndim != 1 or v.size < 1 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a 1-d array of finite numbers, got shape {v.shape}")
    return v


def seed_comparison(better, worse) -> dict:
    """Paired interval over training seeds of ``better - worse`` (seed ``i`` with seed ``i``).

    A model with one checkpoint (one value) is paired with every seed of the other, so the
    interval then carries the other model's seed spread only.

    Parameters
    ----------
    better, worse : array_like, shape (seeds,)
        One value per training seed (average gap, spread...); equal lengths, or one of
        length 1; at least two pairs.

    Returns
    -------
    dict
        ``lab.core.claims.paired``'s interval (``estimate``, ``lo``, ``hi``, ``se``, ``n``).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    b, w = _per_seed("better", better), _per_seed("worse", worse)
    if b.size == 1:
        b = np.full(w.shape, b[0])
    if w.size == 1:
        w = np.full(b.shape, w[0])
    if b.size != w.size or b.size < 2:
        raise ValueError(
            f"better and worse must hold one value per seed (>= 2 pairs), got {b.size} and {w.size}"
        )
    return claims.paired(b, w)


def instance_comparison(table: dict, better: str, rivals: Sequence[str], capacity: int) -> dict:
    """The least favourable paired interval over test instances of ``better - rival``.

    For each rival model, the per-instance gaps of ``better`` and the rival at ``capacity`` (the
    same instances) give a paired interval of the difference; the one with the highest upper
    bound is returned, with ``"rival"`` naming it. Used where a model has one checkpoint, so
    no interval over training seeds exists: the interval carries instance noise only.

    Parameters
    ----------
    table : dict
        A :func:`gap_table` result (``gap_instances``, ``capacities``).
    better : str
        A model label of the table.
    rivals : sequence of str
        Other model labels of the table (at least one).
    capacity : int
        One of the table's capacities.

    Returns
    -------
    dict
        ``lab.core.claims.paired``'s interval plus ``"rival"``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    if not isinstance(table, dict) or "gap_instances" not in table:
        raise TypeError("table must be a gap_table result (a dict with 'gap_instances')")
    labels = table["gap_instances"]
    if not isinstance(better, str) or better not in labels:
        raise ValueError(f"better must be a model label of the table, got {better!r}")
    if isinstance(rivals, str) or not isinstance(rivals, Sequence) or not rivals:
        raise TypeError("rivals must be a non-empty sequence of model labels")
    for r in rivals:
        if r not in labels or r == better:
            raise ValueError(f"rivals must be other model labels of the table, got {r!r}")
    caps = list(table["capacities"])
    if capacity not in caps:
        raise ValueError(f"capacity must be one of the table's capacities {caps}, got {capacity!r}")
    j = caps.index(capacity)
    out = [dict(claims.paired(labels[better][j], labels[r][j]), rival=r) for r in rivals]
    return max(out, key=lambda d: d["hi"])


def seed_average(table: dict, name: str) -> np.ndarray:
    """Per-instance gaps (%) of checkpoint ``name`` averaged over its training seeds, from a
    ``gap_table`` result whose models are labelled ``"<name>-seed<k>"``.

    Returns
    -------
    numpy.ndarray
        ``(capacities, instances)``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    if not isinstance(table, dict) or "gap_instances" not in table:
        raise TypeError("table must be a gap_table result (a dict with 'gap_instances')")
    rows = [v for k, v in table["gap_instances"].items() if k.rsplit("-seed", 1)[0] == name]
    if not rows:
        raise ValueError(f"name {name!r} has no '<name>-seed<k>' model in the table")
    return np.mean(rows, axis=0)


def ratio_interval(numerator, denominator, level: float = 0.95) -> dict:
    """The ratio of two means over paired instances, ``mean(a) / mean(b)``, with its
    delta-method Student-t interval: the standard error of ``mean(a - R b) / mean(b)``.

    Parameters
    ----------
    numerator, denominator : array_like, shape (n,)
        One value per instance each (the same instances), ``n >= 2``; ``mean(b) > 0``.
    level : float
        Confidence level in ``(0, 1)``.

    Returns
    -------
    dict
        ``{"estimate", "lo", "hi", "se", "n", "level"}`` (what ``claims.ci_above`` reads).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from scipy import stats

    from lab.core.checks import check_array, check_range

    a = check_array("numerator", numerator, ndim=1, min_size=2)
    b = check_array("denominator", denominator, ndim=1, shape=a.shape)
    level = check_range("level", level, 0.0, 1.0)
    if b.mean() <= 0:
        raise ValueError(f"denominator must have a positive mean (got {b.mean():.3g})")
    n = a.size
    R = float(a.mean() / b.mean())
    se = float((a - R * b).std(ddof=1) / np.sqrt(n) / b.mean())
    t = float(stats.t.ppf(0.5 + level / 2, n - 1))
    return {"estimate": R, "lo": R - t * se, "hi": R + t * se, "se": se, "n": n, "level": level}
