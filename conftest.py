"""Root pytest configuration: what nbval must not collect, and the execution-cache plugin.

- ``assignment.ipynb`` is a solution master: tests/test_assignments.py grades it with otter.
- ``exercises.ipynb`` is the student view (stubs): it is shown, not executed.
- :mod:`lab.tooling.nbcache_plugin` (``--nbval-cache DIR``): nbval's execution of each notebook
  is stored in the book's execution cache, so that ``make test`` executes every notebook once.
- The notebooks run longest first (``pytest_collection_modifyitems``), by their execution times
  in the last widget benchmark (``benchmarks/results/widgets-cpu.json``, ``execute_s``); one not
  measured there counts as the longest. With ``make test``'s ``-n 2 --dist loadfile
  --no-loadscope-reorder`` the two workers then end close together instead of one of them
  finishing a long notebook alone. The cells of a notebook keep their order.
"""

import json
from pathlib import Path

pytest_plugins = ["lab.tooling.nbcache_plugin"]

collect_ignore_glob = ["book/*/assignment.ipynb", "book/*/exercises.ipynb", "_build/*", "book/_*/*"]

ROOT = Path(__file__).resolve().parent
NOTEBOOK_TIMES = ROOT / "benchmarks" / "results" / "widgets-cpu.json"


def _notebook_seconds() -> dict[str, float]:
    """``{book/<slug>/<name>.ipynb: seconds}`` from the widget benchmark's results ({} if none)."""
    try:
        cases = json.loads(NOTEBOOK_TIMES.read_text())["cases"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    out = {}
    for case in cases:
        notebook = (case.get("size") or {}).get("notebook")
        seconds = (case.get("metrics") or {}).get("execute_s")
        if isinstance(notebook, str) and isinstance(seconds, int | float):
            out[notebook] = float(seconds)
    return out


def pytest_collection_modifyitems(config, items):
    """The notebooks' cells, longest notebook first; a notebook's cells stay in order."""
    if not any(str(it.fspath).endswith(".ipynb") for it in items):
        return
    seconds = _notebook_seconds()

    def key(item):
        path = Path(str(item.fspath))
        if path.suffix != ".ipynb":
            return 0.0
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        return -seconds.get(rel, float("inf"))

    items[:] = sorted(items, key=key)  # stable: cells keep their order within a notebook
