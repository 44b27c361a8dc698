"""Root pytest configuration: what nbval must not collect, and the execution-cache plugin.

- ``assignment.ipynb`` is a solution master: tests/test_assignments.py grades it with otter.
- ``exercises.ipynb`` is the student view (stubs): it is shown, not executed.
- :mod:`lab.tooling.nbcache_plugin` (``--nbval-cache DIR``): nbval's execution of each notebook
  is stored in the book's execution cache, so that ``make test`` executes every notebook once.
"""

pytest_plugins = ["lab.tooling.nbcache_plugin"]

collect_ignore_glob = ["book/*/assignment.ipynb", "book/*/exercises.ipynb", "_build/*", "book/_*/*"]
