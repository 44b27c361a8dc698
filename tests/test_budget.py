"""The time budget: every notebook's defaults run in about 20 s, at most 30 s, on the CI machine.

The test does not depend on this machine's speed or load: each execution stores the CPU time
of its kernel and of a reference workload timed in the same process as the notebook starts
and ends (:mod:`lab.tooling.budget`), and a notebook may take at most
``2 x 30 s / REFERENCE_CI_S`` reference workloads of CPU time (2x headroom). Wall times are
printed (the report), never asserted.

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

from lab.tooling.budget import CEILING_S, HEADROOM, REFERENCE_CI_S, ceiling_ratio

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"
pytestmark = pytest.mark.book  # after make test's book build, whose prefill may add executions


def execution_times() -> dict[str, dict | None]:
    """``{notebook path relative to the repo: timing or None (not in the cache)}``.

    The timing of the execution the cache holds, nbval's (``executed_by: nbval``) or the
    prefill's: ``execution_seconds`` (wall), ``cpu_seconds`` (the kernel's CPU time) and
    ``reference_cpu_seconds`` (the reference workload's, timed beside it).
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
        out[rel] = record.data or None
    return out


@pytest.fixture(scope="module")
def times() -> dict[str, dict | None]:
    if not (CACHE / "global.db").exists():
        pytest.skip("no execution cache: run `make book` first")
    return execution_times()


def test_every_notebook_was_executed_and_timed(times):
    keys = ("cpu_seconds", "reference_cpu_seconds")
    missing = [nb for nb, t in times.items() if not t or any(t.get(k) is None for k in keys)]
    assert not missing, f"not in the execution cache (or without CPU times): {missing}"


def test_every_notebook_runs_within_its_cpu_budget(times):
    ceiling = ceiling_ratio()
    ratios = {
        nb: t["cpu_seconds"] / t["reference_cpu_seconds"]
        for nb, t in times.items()
        if t and t.get("cpu_seconds") is not None and t.get("reference_cpu_seconds")
    }
    ranked = sorted(ratios.items(), key=lambda kv: -kv[1])[:10]
    print(
        f"budget: {ceiling:.0f} reference workloads of CPU time ({CEILING_S:.0f} s x "
        f"{HEADROOM:g} at {REFERENCE_CI_S} s each); heaviest notebooks:",
        ", ".join(
            f"{nb} {r:.0f} (cpu {times[nb]['cpu_seconds']:.1f} s, "
            f"wall {times[nb].get('execution_seconds', float('nan')):.1f} s)"
            for nb, r in ranked
        ),
    )
    over = {nb: round(r) for nb, r in ratios.items() if r > ceiling}
    assert not over, f"notebooks over {ceiling:.0f} reference workloads of CPU time: {over}"
