"""The time budget: every notebook's defaults run in under 60 s on the CI machine.

``make book`` executes every notebook of ``_toc.yml`` into the execution cache (two at a time,
as in CI) and stores each execution's wall time with it; this test reads those times. Without a
built cache (``make book`` not run) it skips; in ``make test`` the book is always built first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
CEILING_S = 60.0


def execution_times() -> dict[str, float | None]:
    """``{notebook path relative to the repo: seconds or None (not in the cache)}``."""
    import nbformat
    from jupyter_cache import get_cache

    from lab.core.cache import toc_notebooks

    cache = get_cache(str(CACHE))
    out: dict[str, float | None] = {}
    for path in toc_notebooks(ROOT):
        rel = str(path.relative_to(ROOT))
        try:
            record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            out[rel] = None
            continue
        out[rel] = (record.data or {}).get("execution_seconds")
    return out


@pytest.fixture(scope="module")
def times() -> dict[str, float | None]:
    if not (CACHE / "global.db").exists():
        pytest.skip("no execution cache: run `make book` first")
    return execution_times()


def test_every_notebook_was_executed_and_timed(times):
    missing = [nb for nb, s in times.items() if s is None]
    assert not missing, f"not in the execution cache (or without a time): {missing}"


def test_every_notebook_runs_under_the_ceiling(times):
    slow = {nb: round(s, 1) for nb, s in times.items() if s is not None and s > CEILING_S}
    ranked = sorted(((s, nb) for nb, s in times.items() if s), reverse=True)[:10]
    print("slowest notebooks:", ", ".join(f"{nb} {s:.1f} s" for s, nb in ranked))
    assert not slow, f"notebooks over the {CEILING_S:.0f} s ceiling: {slow}"
