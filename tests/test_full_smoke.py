"""``FULL = True`` smoke test: every toc notebook executed at paper scale under ``LAB_SMOKE=1``.

No GPU has run ``FULL`` yet, and CI runs the defaults only. This test switches each chapter
notebook's parameters cell to ``FULL = True`` (as ``lab run <slug> --full`` does) and executes it
on the CPU with ``LAB_SMOKE=1`` (every loop of the experiment drivers stops after a few
iterations; see :func:`lab.core.runtime.smoke_steps`), ``LAB_PROGRESS=0`` and
``LAB_CLAIMS_MISMATCH=warn`` (the verdicts of a smoke run are meaningless: a changed one warns).
What it catches is what a reader with a GPU box would otherwise meet first: shapes, dtypes,
device handling, missing files and the claims' recording code on ``FULL``'s paths, not numbers.

Slow (``@pytest.mark.slow``; ``make test`` deselects it): one notebook at a time,

    .venv/bin/python -m pytest tests/test_full_smoke.py -m slow -p no:cacheprovider -q -x
    .venv/bin/python -m pytest tests/test_full_smoke.py -m slow -p no:cacheprovider -k koala

The executed copies go to ``_build/full_smoke/<slug>/`` for a look at what failed. A failed
``assert`` is a warning, not a failure (the assertion cells check numbers, and a smoke run's
numbers are those of a few iterations; the run goes on past it); ``LAB_SMOKE_ASSERT=error``
makes it fail. Any other exception, a cell past ``LAB_SMOKE_CELL_TIMEOUT`` seconds (900) or a
dead kernel fails the notebook's test.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from pathlib import Path

import pytest

from lab.tooling.chapters import chapter_notebooks, chapters

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "full_smoke"
#: seconds one cell may run under smoke mode before the test calls it a hang
CELL_TIMEOUT_S = int(os.environ.get("LAB_SMOKE_CELL_TIMEOUT", "900"))
SMOKE_ENV = {"LAB_SMOKE": "1", "LAB_PROGRESS": "0", "LAB_CLAIMS_MISMATCH": "warn"}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of an IPython traceback
NOTEBOOKS = [path for slug in chapters(ROOT) for path in chapter_notebooks(slug, ROOT)]


def _cell_errors(nb) -> list[tuple[str, str]]:
    """Every error output of an executed notebook: ``(ename, report)`` with the cell's source
    head and its traceback, in cell order."""
    out = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                head = "\n".join(cell.source.splitlines()[:6])
                trace = _ANSI.sub("", "\n".join(output.get("traceback", [])))
                report = f"cell:\n{head}\n...\n{output['ename']}: {output['evalue']}\n{trace}"
                out.append((output["ename"], report))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_notebook_runs_at_full_scale_in_smoke_mode(path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    from lab.__main__ import set_full

    for key, value in SMOKE_ENV.items():
        monkeypatch.setenv(key, value)  # the kernel inherits the environment
    nb = nbformat.read(path, as_version=4)
    assert set_full(nb, True), f"{path.name}: no parameters cell with `FULL = False`"
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=True,  # run on past a failed assertion cell; every error is read below
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    failure = None
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a timeout or a dead kernel: reported below
        failure = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    target = OUT / path.parent.name / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    print(f"{path.parent.name}/{path.name}: {seconds:.1f} s (FULL, smoke)")
    strict = os.environ.get("LAB_SMOKE_ASSERT", "warn") == "error"
    crashes = []
    for name, report in _cell_errors(nb):
        if name == "AssertionError" and not strict:  # a number after a few smoke iterations
            note = f"{path.parent.name}/{path.name}: assertion under smoke\n{report}"
            warnings.warn(note, stacklevel=1)
        else:
            crashes.append(report)
    failure = failure or (crashes[0] if crashes else None)
    if failure:
        pytest.fail(
            f"{path.parent.name}/{path.name} failed with FULL = True under LAB_SMOKE=1 "
            f"after {seconds:.1f} s (executed copy: {target.relative_to(ROOT)})\n{failure}",
            pytrace=False,
        )


def test_smoke_switch(monkeypatch):
    """The switch the notebooks above rely on: off (identity) unless ``LAB_SMOKE`` says on."""
    from lab.core.runtime import smoke, smoke_items, smoke_steps

    monkeypatch.delenv("LAB_SMOKE", raising=False)
    seeds = (0, 1, 2, 3)
    assert not smoke()
    assert smoke_steps(20_000) == 20_000 and smoke_items(seeds) is seeds
    monkeypatch.setenv("LAB_SMOKE", "1")
    assert smoke()
    assert smoke_steps(20_000) == 3 and smoke_steps(2) == 2 and smoke_steps(9, small=5) == 5
    assert smoke_items(seeds) == (0, 1) and smoke_items(range(9), 3) == range(3)
    with pytest.raises(ValueError, match="n must"):
        smoke_steps(-1)
    with pytest.raises(TypeError, match="n must"):
        smoke_steps(2.5)
    with pytest.raises(ValueError, match="small must"):
        smoke_items(seeds, 0)
    with pytest.raises(TypeError, match="items must"):
        smoke_items(iter(seeds))
