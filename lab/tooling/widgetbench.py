"""Live-widget latency: how long a learner waits after moving a control of an ``explore`` widget.

:func:`measure_notebook` executes a notebook in a fresh kernel (``LAB_PROGRESS=0``, this
checkout's ``lab`` first on the path), exactly as a learner's "Run all" would, then runs
:func:`time_live_updates` in that kernel: for every :class:`lab.core.explore.Explorer` the
notebook built (:func:`lab.core.explore.explorers`), each control is moved to three values
(:func:`probe_values`: values of the static grid *and* values between them, which is what a
learner's slider hits) and the update is timed, compute function, serialisation and redraw
into the widget's output included. After each control the explorer is reset to its defaults
(untimed). ``benchmarks/bench_widgets.py`` runs it over the toc notebooks and writes
``benchmarks/results/widgets-cpu.json``.

See: book/performance.md
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.tooling.paths import ROOT

__all__ = [
    "TARGET_MAX_S",
    "TARGET_MEDIAN_S",
    "measure_notebook",
    "probe_values",
    "summarise",
    "time_live_updates",
]

TARGET_MEDIAN_S = 0.150  # per notebook: median live update
TARGET_MAX_S = 1.0  # per notebook: slowest live update


def _between(lo: float, hi: float, step: float, origin: float, taken: set) -> float | None:
    """A value on the slider's step lattice strictly between ``lo`` and ``hi`` not in ``taken``."""
    if step <= 0:
        return None
    k_lo = math.floor((lo - origin) / step + 1e-9) + 1
    k_hi = math.ceil((hi - origin) / step - 1e-9) - 1
    if k_hi < k_lo:
        return None
    k = (k_lo + k_hi) // 2
    v = round(origin + k * step, 12)
    return None if v in taken else v


def probe_values(ctrl: Any) -> list[Any]:
    """Three values a learner would move ``ctrl`` to (never its default first).

    Sliders: a grid value near the first quarter, a value between two grid values in the middle
    (on the slider's own step, so a real widget can hold it) and the top of the range; log
    sliders use the exponent step of their widget. Dropdowns: up to three other options.
    Checkbox: the other state, then back. Range sliders: the other precomputed pairs, then the
    default shifted by one step.
    """
    from lab.core import explore as ex

    default = ctrl.value
    if isinstance(ctrl, ex.Checkbox):
        return [not default, default]
    if isinstance(ctrl, ex.Dropdown):
        return [o for o in ctrl.options if o != default][:3] or [default]
    if isinstance(ctrl, ex.RangeSlider):  # also FloatRangeSlider
        others = [v for v in ctrl.grid() if v != default][:2]
        lo, hi = default
        shifted = (
            (lo, hi - ctrl.step) if hi - ctrl.step >= lo else (lo, min(hi + ctrl.step, ctrl.max))
        )
        if isinstance(ctrl, ex.FloatRangeSlider):
            shifted = tuple(round(x, 12) for x in shifted)
        return others + ([shifted] if shifted != default and shifted not in others else [])
    if isinstance(ctrl, ex.LogSlider):
        grid = ctrl.grid()
        step = (ctrl.max_exp - ctrl.min_exp) / 100
        exps = [math.log10(g) for g in grid]
        mid = len(grid) // 2
        off = None
        if len(grid) > 1:
            lo, hi = exps[max(mid - 1, 0)], exps[mid]
            e = _between(lo, hi, step, ctrl.min_exp, set())
            off = None if e is None else 10**e
        cand = [grid[len(grid) // 4], off, grid[-1]]
    elif isinstance(ctrl, (ex.FloatSlider, ex.IntSlider)):
        grid = ctrl.grid()
        mid = len(grid) // 2
        off = None
        if len(grid) > 1:
            off = _between(grid[max(mid - 1, 0)], grid[mid], ctrl.step, ctrl.min, set(grid))
            if off is not None and isinstance(ctrl, ex.IntSlider):
                off = int(round(off))
        cand = [grid[len(grid) // 4], off, grid[-1]]
    else:  # an unknown control: its grid
        cand = list(ctrl.grid())[:3]
    out: list[Any] = []
    grid = list(ctrl.grid())
    n = len(grid)
    # fill up to three moves with grid values spread over the range
    spread = [grid[(3 * n) // 4], grid[0], grid[n // 2], *grid] if n else []
    for v in [*cand, *spread]:
        if len(out) == 3:
            break
        if v is not None and v != default and v not in out:
            out.append(v)
    return out


def time_live_updates(explorers: list | None = None) -> list[dict[str, Any]]:
    """Time ``Explorer.update`` (what a moved widget runs) for every explorer and control.

    Returns one record per move: explorer index, compute function, control, value, seconds,
    and whether the memo already held the figure.
    """
    from lab.core import explore as ex

    explorers = ex.explorers() if explorers is None else explorers
    records: list[dict[str, Any]] = []
    for i, e in enumerate(explorers):
        defaults = {k: c.value for k, c in e.controls.items()}
        name = getattr(e.compute, "__qualname__", type(e.compute).__name__)
        for key, ctrl in e.controls.items():
            for value in probe_values(ctrl):
                hits = e.memo_hits
                t0 = time.perf_counter()
                e.update(**{key: value})
                dt = time.perf_counter() - t0
                records.append(
                    {
                        "explorer": i,
                        "compute": name,
                        "control": key,
                        "value": repr(value),
                        "static": key == e.static,
                        "seconds": dt,
                        "memo_hit": e.memo_hits > hits,
                    }
                )
            e.update(**defaults)
    return records


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Median / max of the moves, the slowest move, and whether the targets hold."""
    if not records:
        return {"moves": 0, "median_s": None, "max_s": None, "meets_target": True}
    secs = [r["seconds"] for r in records]
    worst = max(records, key=lambda r: r["seconds"])
    med, mx = statistics.median(secs), max(secs)
    return {
        "moves": len(secs),
        "widgets": len({r["explorer"] for r in records}),
        "median_s": med,
        "max_s": mx,
        "memo_hits": sum(bool(r["memo_hit"]) for r in records),
        "slowest": f"{worst['compute']}: {worst['control']} = {worst['value']}",
        "meets_target": med <= TARGET_MEDIAN_S and mx <= TARGET_MAX_S,
    }


_PROBE_CELL = """\
import json as _json
from lab.tooling.widgetbench import time_live_updates as _time_live_updates
with open({path!r}, "w") as _f:
    _json.dump(_time_live_updates(), _f)
"""


def measure_notebook(path: str | Path, *, timeout: int = 240, tries: int = 2) -> dict[str, Any]:
    """Execute ``path`` in a fresh kernel, then time its widgets' live updates there.

    ``timeout`` bounds each cell (the notebooks run in under 30 s, the probe cell in under a
    minute); a kernel that stalls past it (seen a few times in this round's harness runs: kernel
    and client both idle) is shut down and the notebook runs again in a fresh one, up to
    ``tries`` times in all. The stall is the harness's, never a slow move: a timed move is
    recorded whatever it takes.

    Returns ``{"notebook", "execute_s", "tries", "records", **summarise(records)}``.
    """
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    if not isinstance(tries, int) or isinstance(tries, bool) or tries < 1:
        raise ValueError(f"tries must be an integer >= 1 (got {tries!r})")
    for attempt in range(1, tries + 1):
        try:
            res = _measure_once(path, timeout)
        except (CellTimeoutError, DeadKernelError, TimeoutError):
            if attempt == tries:
                raise
            continue
        return {**res, "tries": attempt}
    raise AssertionError("unreachable")  # pragma: no cover


def _measure_once(path: str | Path, timeout: int) -> dict[str, Any]:
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    if not path.is_file() or path.suffix != ".ipynb":
        raise ValueError(f"path must be an existing .ipynb notebook (got {str(path)!r})")
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "records.json"
        nb.cells.append(nbformat.v4.new_code_cell(_PROBE_CELL.format(path=str(out))))
        env = dict(os.environ)
        env["LAB_PROGRESS"] = "0"
        env.pop("LAB_EXPLORE_STATIC", None)  # the twin is part of what a learner's run does
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        t0 = time.perf_counter()
        client.execute(env=env)
        execute_s = time.perf_counter() - t0
        records = json.loads(out.read_text())
    rel = path.resolve()
    rel = rel.relative_to(ROOT) if rel.is_relative_to(ROOT) else rel
    return {"notebook": str(rel), "execute_s": execute_s, **summarise(records), "records": records}


if __name__ == "__main__":  # pragma: no cover - python -m lab.tooling.widgetbench nb.ipynb
    for arg in sys.argv[1:]:
        res = measure_notebook(arg)
        print(json.dumps({k: v for k, v in res.items() if k != "records"}, indent=1))
        for r in res["records"]:
            print(
                f"  {r['compute']}: {r['control']} = {r['value']}: {r['seconds'] * 1e3:.0f} ms"
                + (" (memo)" if r["memo_hit"] else "")
            )
