"""The time budget: every notebook's defaults run in under 30 s on the CI machine.

Each notebook is executed once per ``make test``: by nbval in the first pytest run, which stores
the execution, with its wall time from the kernel's start to the last cell's end, in the book's
execution cache (``--nbval-cache``, :mod:`lab.tooling.nbcache_plugin`); a notebook nbval did not
run through is executed by the prefill of ``make book`` (two at a time, as in CI), which stores
its time the same way. This test reads those times, nothing is executed again. Without a
filled cache (neither run) it skips; ``make test`` runs it after the book build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
CEILING_S = 30.0
pytestmark = pytest.mark.book  # after make test's book build, whose prefill may add executions


def execution_times() -> dict[str, float | None]:
    """``{notebook path relative to the repo: seconds or None (not in the cache)}``.

    The seconds of the execution the cache holds: nbval's (``executed_by: nbval``) or the
    prefill's.
    """
    import nbformat
    from jupyter_cache import get_cache

    from lab.tooling.chapters import toc_notebooks

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
