"""Shared pytest configuration of the unit tests (``tests/``).

- The ``cuda`` marker (registered in ``pyproject.toml``): every test marked
  ``@pytest.mark.cuda`` is skipped, with one reason, when torch sees no CUDA device.
  ``make gpu-check`` selects exactly these tests with ``pytest -m cuda``.
- ``one_thread``: the one single-thread fixture (session-wide, automatic). Every unit test is a
  small problem, and small problems run several times faster with one torch thread on the
  project's 2-core machines, above all under ``pytest -n 2`` (per-op overhead and thread
  contention dominate; see :mod:`lab.core.runtime`). A test that needs another count scopes it
  with ``lab.small_problem_threads(n)``.

The root ``conftest.py`` (what nbval must not collect) applies as well; the two coexist.
"""

from __future__ import annotations

import pytest

CUDA_SKIP_REASON = "needs a CUDA GPU (torch.cuda.is_available() is False)"


def pytest_collection_modifyitems(config, items):
    """Skip every ``cuda``-marked test when torch sees no CUDA device."""
    if not any(item.get_closest_marker("cuda") for item in items):
        return
    from lab.core.runtime import cuda_available

    if cuda_available():
        return
    skip = pytest.mark.skip(reason=CUDA_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Run the session with one torch intra-op thread, restoring the previous count after.

    Session scope, so module-scoped fixtures (trained models, data) also run single-threaded.
    """
    from lab.core.runtime import small_problem_threads

    with small_problem_threads(1):
        yield
