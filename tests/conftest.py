"""Shared pytest configuration of the unit tests (``tests/``).

- The ``cuda`` marker (registered in ``pyproject.toml``): every test marked
  ``@pytest.mark.cuda`` is skipped, with one reason, when torch sees no CUDA device.
  ``make gpu-check`` selects exactly these tests with ``pytest -m cuda``.
- ``one_thread``: the one single-thread fixture (session-wide, automatic). Every unit test is a
  small problem, and small problems run several times faster with one torch thread on the
  project's 2-core machines, above all under ``pytest -n 2`` (per-op overhead and thread
  contention dominate; see :mod:`lab.core.runtime`). A test that needs another count scopes it
  with ``lab.small_problem_threads(n)``.
- The browser tests of one page run next to each other and share one load of the page
  (``_group_browser_tests``; ``tests/test_browser.py``'s ``OfflinePage``).
- The ``book`` marker: the test reads the built book (``_build/html``, the execution cache).
  Such tests run last, and each first waits for the book (:func:`wait_for_book`): ``make test``
  builds the book while the other unit tests run (``LAB_BOOK_STATUS`` names the file its build
  writes its exit status to); without that variable a test skips when no book is built.

The root ``conftest.py`` (what nbval must not collect) applies as well; the two coexist.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK_INDEX = ROOT / "_build" / "html" / "index.html"
#: how long a ``book`` test waits for the concurrent build (the build takes 1-2 minutes)
BOOK_WAIT_S = 1800.0
CUDA_SKIP_REASON = "needs a CUDA GPU (torch.cuda.is_available() is False)"


#: the browser tests of one page, in the order they run (they share one load of the page)
BROWSER_ORDER = {
    "test_page_works_offline": 0,
    "test_every_precomputed_slider_changes_its_figure": 1,
    "test_figures_are_readable_in_both_themes": 2,
    "test_phone_width_no_sideways_scrolling_and_figures_fit": 3,
}


def _group_browser_tests(items) -> None:
    """Put the tests of one page next to each other, in ``BROWSER_ORDER`` (the load check, the
    sliders, the themes, the phone width): ``tests/test_browser.py``'s ``OfflinePage`` then
    loads each page once for all of them. Other tests keep their places."""
    slots = [i for i, it in enumerate(items) if it.module.__name__.endswith("test_browser")]

    def key(it):
        params = getattr(getattr(it, "callspec", None), "params", {})
        return (str(params.get("path", "")), BROWSER_ORDER.get(it.originalname, -1))

    for i, it in zip(slots, sorted((items[i] for i in slots), key=key), strict=True):
        items[i] = it


def wait_for_book() -> None:
    """Before a ``book`` test: wait for ``make test``'s concurrent build of the book and fail if
    it failed (``LAB_BOOK_STATUS`` set); skip when there is no built book (not set)."""
    status = os.environ.get("LAB_BOOK_STATUS")
    if not status:
        if not BOOK_INDEX.is_file():
            pytest.skip("no built book at _build/html/index.html (run `make book` first)")
        return
    path, deadline = Path(status), time.monotonic() + BOOK_WAIT_S
    while not path.is_file() or not path.read_text().strip():
        if time.monotonic() > deadline:
            pytest.fail(f"the book build did not finish within {BOOK_WAIT_S:.0f} s ({path})")
        time.sleep(0.5)
    code = path.read_text().strip()
    if code != "0":
        pytest.fail(f"the book build failed (exit status {code}; its log: _build/book.log)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("book"):
        wait_for_book()


def pytest_collection_modifyitems(config, items):
    """Group the browser tests by page; the ``book`` tests last (the book is built meanwhile);
    skip every ``cuda``-marked test when torch sees no CUDA device."""
    _group_browser_tests(items)
    items[:] = sorted(items, key=lambda it: it.get_closest_marker("book") is not None)
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
