"""One sweep runner: a function over a grid of settings and a list of seeds, with the
intervals the book's verdicts read.

Every chapter compares methods or settings over seeds; this is the one place that loops,
shows progress, honours smoke mode and turns per-seed values into intervals::

    from lab.core.sweep import sweep

    def final_loss(method: str, lr: float, seed: int) -> dict:
        ...                                   # one run: numbers out
        return {"loss": loss, "acc": acc}

    s = sweep(final_loss, {"method": ["ours", "rival"], "lr": [0.1]}, seeds=lab.seeds(0, 1, 2))
    s.mean_ci("loss", method="ours")          # MeanCI over the seeds
    s.paired("loss", {"method": "ours"}, {"method": "rival"})   # claims.paired: ours - rival
    s.table(["loss", "acc"])                  # one row per setting: mean, lo, hi

``fn`` is called as ``fn(**setting, seed=seed)`` and returns a number or a dict of numbers.
Seeds pair across settings (seed ``s`` of one setting with seed ``s`` of another), so a paired
interval is a common-random-numbers comparison when ``fn`` draws its data from the seed.
Caching stays with ``fn`` (:func:`lab.core.memo.memo` in process, :func:`lab.core.diskcache.disk_memo`
for what is expensive). In smoke mode (``LAB_SMOKE=1``) every setting runs on the first two
seeds (a notebook may index any setting; ``fn`` shortens its own loops).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Sweep", "sweep"]


def _settings(grid: Any) -> tuple[dict, ...]:
    if grid is None:
        return ({},)
    if isinstance(grid, Mapping):
        for k, v in grid.items():
            if not isinstance(k, str) or not k.isidentifier():
                raise ValueError(f"grid: every key must be a parameter name, got {k!r}")
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise TypeError(f"grid[{k!r}] must be a list of values, got {type(v).__name__}")
        keys = list(grid)
        values = [list(grid[k]) for k in keys]
        if any(not v for v in values):
            raise ValueError(f"grid: every axis needs at least one value, got {dict(grid)!r}")
        return tuple(dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values))
    if isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        out = []
        for i, g in enumerate(grid):
            if not isinstance(g, Mapping):
                raise TypeError(f"grid[{i}] must be a dict of settings, got {type(g).__name__}")
            out.append(dict(g))
        if not out:
            raise ValueError("grid: an empty list of settings")
        return tuple(out)
    raise TypeError(
        f"grid must be a dict of lists (a product) or a list of dicts, got {type(grid).__name__}"
    )


def _outputs(value: Any, setting: dict, seed: int) -> dict[str, float]:
    if isinstance(value, Mapping):
        items = dict(value)
    else:
        items = {"value": value}
    out = {}
    for k, v in items.items():
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            raise TypeError(
                f"sweep: fn({setting}, seed={seed}) returned {k!r} = {v!r}: outputs must be "
                "numbers (or a dict of numbers)"
            ) from None
    return out


@dataclass(frozen=True)
class Sweep:
    """The results of :func:`sweep`: one row per (setting, seed), the setting's parameters,
    ``seed`` and ``fn``'s outputs."""

    settings: tuple[dict, ...]
    seeds: tuple[int, ...]
    rows: tuple[dict, ...]

    def _setting(self, where: dict) -> dict:
        found = [s for s in self.settings if all(s.get(k) == v for k, v in where.items())]
        if len(found) != 1:
            raise ValueError(
                f"the settings {where!r} match {len(found)} of the sweep's settings "
                f"{list(self.settings)}: name exactly one"
            )
        return found[0]

    def values(self, key: str, **where: Any):
        """``key`` over the seeds (in the sweep's seed order) for the one setting ``where``."""
        import numpy as np

        setting = self._setting(where)
        rows = [r for r in self.rows if all(r[k] == v for k, v in setting.items())]
        if not rows or key not in rows[0]:
            outputs = sorted(set(self.rows[0]) - set(setting) - {"seed"}) if self.rows else []
            raise KeyError(f"no output {key!r}; the sweep recorded {outputs}")
        return np.array([r[key] for r in rows], dtype=float)

    def mean_ci(self, key: str, *, level: float = 0.95, **where: Any):
        """The mean of ``key`` over seeds for one setting and its Student-t interval
        (:func:`lab.core.rates.mean_ci`)."""
        from lab.core.rates import mean_ci

        return mean_ci(self.values(key, **where), level=level)

    def paired(self, key: str, a: Mapping, b: Mapping, *, level: float = 0.95) -> dict:
        """The paired interval over seeds of ``key`` under setting ``a`` minus setting ``b``
        (:func:`lab.core.rules.paired`, what ``claims.ci_above`` / ``ci_below`` read)."""
        from lab.core.rules import paired

        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            raise TypeError("a and b must be dicts naming one setting each")
        return paired(self.values(key, **a), self.values(key, **b), level=level)

    def table(self, keys: Sequence[str] | None = None, *, level: float = 0.95) -> list[dict]:
        """One row per setting: its parameters, then ``<key>``, ``<key>_lo``, ``<key>_hi``
        (mean and interval over seeds; the interval is NaN with one seed)."""
        if keys is None:
            keys = sorted(set(self.rows[0]) - set(self.settings[0]) - {"seed"})
        out = []
        for s in self.settings:
            row = dict(s)
            for k in keys:
                v = self.values(k, **s)
                if v.size >= 2:
                    ci = self.mean_ci(k, level=level, **s)
                    row.update({k: ci.mean, f"{k}_lo": ci.low, f"{k}_hi": ci.high})
                else:
                    row.update({k: float(v[0]), f"{k}_lo": math.nan, f"{k}_hi": math.nan})
            out.append(row)
        return out

    def frame(self):
        """The rows as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))


def sweep(
    fn: Callable[..., Any],
    grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]] | None = None,
    seeds: Iterable[int] = (0,),
    *,
    desc: str = "",
) -> Sweep:
    """Run ``fn(**setting, seed=seed)`` for every setting of ``grid`` and every seed.

    Parameters
    ----------
    fn
        One run: a callable taking the grid's parameters and ``seed`` as keywords, returning a
        number or a dict of numbers.
    grid
        A dict of lists (their product), a list of dicts (the settings themselves) or None (one
        setting, no parameters).
    seeds
        Distinct integers (the notebook's registered seeds: ``lab.seeds(...)``), the same for
        every setting so that settings pair seed by seed.
    desc
        The progress bar's label (``LAB_PROGRESS=0`` silences it).

    Returns
    -------
    Sweep

    Raises
    ------
    TypeError
        If ``fn`` is not callable, the grid or seeds have the wrong type, or ``fn`` returns
        something other than numbers.
    ValueError
        If the grid has an empty axis, a key that is not a parameter name or ``seed``, or the
        seeds are empty or repeat.
    """
    from lab.core.checks import check_int
    from lab.core.progress import progress
    from lab.core.runtime import smoke, smoke_items

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    settings = _settings(grid)
    if any("seed" in s for s in settings):
        raise ValueError("grid: 'seed' is not a setting (pass seeds=)")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be a list of integers, got {type(seeds).__name__}")
    seed_list = tuple(check_int("seeds", s) for s in seeds)
    if not seed_list or len(set(seed_list)) != len(seed_list):
        raise ValueError(f"seeds must be distinct integers, at least one, got {seed_list!r}")
    if smoke():  # every setting (notebooks index a sweep by setting), the first two seeds
        seed_list = tuple(smoke_items(seed_list))
    rows = []
    jobs = [(s, seed) for s in settings for seed in seed_list]
    for setting, seed in progress(jobs, desc=desc or getattr(fn, "__name__", "sweep")):
        out = _outputs(fn(**setting, seed=seed), setting, seed)
        clash = set(out) & (set(setting) | {"seed"})
        if clash:
            raise ValueError(f"sweep: fn's outputs {sorted(clash)} clash with parameter names")
        rows.append({**setting, "seed": seed, **out})
    return Sweep(settings, seed_list, tuple(rows))
