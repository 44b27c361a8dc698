"""Root pytest configuration: what nbval must not collect.

- ``assignment.ipynb`` is a solution master: tests/test_assignments.py grades it with otter.
- ``exercises.ipynb`` is the student view (stubs): it is shown, not executed.
"""

collect_ignore_glob = ["book/*/assignment.ipynb", "book/*/exercises.ipynb", "_build/*", "book/_*/*"]
