"""pytest plugin: nbval's execution of a notebook is the book's execution.

``make test`` runs every notebook once, under nbval (the notebook test), and the book reuses
that execution instead of running the notebook again:

``--nbval-cache DIR``
    Every notebook of ``_toc.yml`` that nbval ran from its first code cell to its last without
    an error, a skip or a timeout is written into the jupyter-cache at ``DIR`` (the book's
    ``_build/.jupyter_cache``) exactly as myst-nb's ``execute_notebooks: cache`` and
    :func:`lab.tooling.cache.prefill` store it: the notebook with each code cell's outputs, in
    order, its execution count, the kernel's ``language_info`` and the widget state
    (``metadata.widgets``), plus the wall time (``execution_seconds``, from the kernel's start
    to the last cell's end) that ``tests/test_budget.py`` checks. The outputs are rebuilt from
    the kernel's messages by nbclient's own message handling (the code path jupyter-cache and
    myst-nb execute with), so display updates, ``clear_output``, Output widgets and widget
    state come out as a prefill would write them; nbval's own copy of the outputs (streams
    merged for comparison) is not used. The ``make book`` that follows finds these notebooks
    cached and executes only what is missing.

Without ``--nbval-cache`` the plugin does nothing.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from pathlib import Path

import pytest

from lab.tooling.budget import kernel_cpu_seconds, reference_cpu_seconds


def pytest_addoption(parser):
    group = parser.getgroup("optlab", "optlab: one execution per notebook")
    group.addoption(
        "--nbval-cache",
        metavar="DIR",
        default=None,
        help="write each notebook nbval ran without error into the jupyter-cache DIR",
    )


def pytest_configure(config):
    cache_dir = config.getoption("nbval_cache", None)
    if cache_dir:
        if not hasattr(config, "workerinput"):  # the controller: create the DB before workers
            _with_retry(lambda: _open_cache(cache_dir).list_cache_records())
        writer = NbvalCacheWriter(cache_dir, config.rootpath)
        config.pluginmanager.register(writer, "optlab-nbval-cache")


def _open_cache(cache_dir):
    from jupyter_cache import get_cache

    return get_cache(str(cache_dir))


def _with_retry(action, attempts: int = 12):
    """Run ``action``, retrying while another process holds the sqlite database."""
    from sqlalchemy.exc import OperationalError

    for attempt in range(attempts):
        try:
            return action()
        except OperationalError as err:  # "database is locked" from the other xdist worker
            if "locked" not in str(err) and "already exists" not in str(err):
                raise
            if attempt == attempts - 1:
                raise
            time.sleep(min(0.1 * 2**attempt, 2.0))


def store(cache_dir, path: str | Path, nb, seconds: float, timing: dict | None = None) -> None:
    """Cache the executed ``nb`` of ``path`` as :func:`lab.tooling.cache.prefill` does.

    ``timing`` adds ``cpu_seconds`` (the kernel's) and ``reference_cpu_seconds``
    (:mod:`lab.tooling.budget`) to the record's data.
    """
    from jupyter_cache.base import CacheBundleIn

    data = {"execution_seconds": seconds, "executed_by": "nbval", **(timing or {})}

    def write():
        cache = _open_cache(cache_dir)
        stage = cache.add_nb_to_project(str(path))
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, stage.uri, data=data),
            check_validity=False,
            overwrite=True,
        )

    with _cache_lock(cache_dir):
        _with_retry(write)


@contextlib.contextmanager
def _cache_lock(cache_dir):
    """Hold an exclusive lock on the cache folder while one xdist worker writes to it.

    ``cache_notebook_bundle`` ends with ``truncate_caches``, which lists the records to keep and
    then the others in two queries: a record the other worker inserts in between (its file not
    yet written) is taken for an old one to delete, and the write fails with "Notebook file does
    not exist for cache record" (seen once in 46 notebooks); had the file been there, the other
    worker's fresh record would have been deleted. One writer at a time closes both. (POSIX
    ``flock``; elsewhere the writes are not serialised.)
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".optlab-write.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _NotebookRun:
    """One notebook under nbval: its executed copy, rebuilt from the kernel's messages."""

    def __init__(self, path: Path, kernel):
        import nbformat
        from nbclient import NotebookClient

        self.path = path
        self.t0 = time.perf_counter()
        self.ok = True
        self.nb = nbformat.read(str(path), as_version=4)
        self.code_cells = [i for i, c in enumerate(self.nb.cells) if c.cell_type == "code"]
        for i in self.code_cells:
            self.nb.cells[i].outputs = []
            self.nb.cells[i].execution_count = None
        self.client = NotebookClient(self.nb, km=kernel.km, record_timing=False)
        self.client.kc = kernel.kc
        self.executed = 0  # the execution count, as nbclient numbers the cells it runs
        self.next_cell = 0  # nbval's number of the code cell that must run next
        self.cell = None
        self.cell_index = None
        self.msg_id = None
        self.kernel = kernel
        self.reference = [reference_cpu_seconds()]
        info = kernel.kc.kernel_info(reply=True, timeout=30)
        self.nb.metadata["language_info"] = info["content"]["language_info"]

    def on_message(self, msg):
        """nbclient's handling of one iopub message of the current cell (others are ignored)."""
        from nbclient.exceptions import CellExecutionComplete

        if self.cell is None or msg["parent_header"].get("msg_id") != self.msg_id:
            return
        try:
            self.client.process_message(msg, self.cell, self.cell_index)
        except CellExecutionComplete:
            pass


def _timing(run: _NotebookRun) -> dict:
    """The kernel's CPU time and the reference workload's (mean of the notebook's start and
    end): what ``tests/test_budget.py`` compares."""
    provisioner = getattr(run.kernel.km, "provisioner", None)
    cpu = kernel_cpu_seconds(getattr(provisioner, "pid", None))
    run.reference.append(reference_cpu_seconds())
    if cpu is None:
        return {}
    return {
        "cpu_seconds": round(cpu, 2),
        "reference_cpu_seconds": round(sum(run.reference) / len(run.reference), 4),
    }


class NbvalCacheWriter:
    """Follows nbval's cells and caches each notebook that ran through."""

    def __init__(self, cache_dir, root: Path):
        from lab.tooling.chapters import toc_notebooks

        self.cache_dir = str(Path(cache_dir).resolve())
        self.notebooks = {p.resolve() for p in toc_notebooks(root)}  # what the book executes
        self.runs: dict = {}

    def _cell(self, item):
        try:
            from nbval.plugin import IPyNbCell
        except ImportError:  # pragma: no cover - nbval is a dev dependency
            return None
        if isinstance(item, IPyNbCell) and Path(str(item.fspath)).resolve() in self.notebooks:
            return item
        return None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        cell = self._cell(item)
        t0 = time.perf_counter()
        yield  # the first cell's setup starts the notebook's kernel
        if cell is None:
            return
        nbfile = cell.parent
        if cell.cell_num == 0 and nbfile.kernel is not None:
            try:
                run = _NotebookRun(Path(str(cell.fspath)), nbfile.kernel)
            except Exception as err:  # never fail the test for the cache's sake
                warnings.warn(f"not cached (kernel_info failed: {err})", stacklevel=1)
                return
            run.t0 = t0
            self.runs[nbfile.nodeid] = run
            self._hook(nbfile, run)

    @staticmethod
    def _hook(nbfile, run):
        """Tap the kernel's iopub messages and the id of each cell's execute request."""
        kernel = nbfile.kernel
        read, execute = nbfile.get_kernel_message, kernel.execute_cell_input

        def get_kernel_message(*args, **kwargs):
            msg = read(*args, **kwargs)
            if kwargs.get("stream", "iopub") == "iopub":
                run.on_message(msg)
            return msg

        def execute_cell_input(*args, **kwargs):
            run.msg_id = execute(*args, **kwargs)
            return run.msg_id

        nbfile.get_kernel_message = get_kernel_message
        kernel.execute_cell_input = execute_cell_input

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        cell = self._cell(item)
        run = self.runs.get(cell.parent.nodeid) if cell is not None else None
        if run is None or not run.ok or cell.cell_num != run.next_cell:  # every cell, in order
            if run is not None:
                run.ok = False
            yield
            return
        run.next_cell += 1
        index = run.code_cells[cell.cell_num]
        nbcell = run.nb.cells[index]
        run.cell, run.cell_index, run.msg_id = nbcell, index, None
        run.client.clear_before_next_output = False
        outcome = yield
        run.cell = None
        if outcome.excinfo is not None or cell.parent.timed_out:
            run.ok = False  # an error, a skip or a timeout: the prefill executes it instead
            self.runs.pop(cell.parent.nodeid, None)
            return
        if nbcell.source.strip():  # nbclient leaves empty cells unexecuted
            run.executed += 1
            nbcell.execution_count = run.executed
            for out in nbcell.outputs:
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = run.executed
        else:
            nbcell.outputs, nbcell.execution_count = [], None
        if cell.cell_num == len(run.code_cells) - 1:
            self.runs.pop(cell.parent.nodeid, None)
            seconds = round(time.perf_counter() - run.t0, 2)
            timing = _timing(run)
            run.client.set_widgets_metadata()
            try:
                store(self.cache_dir, run.path, run.nb, seconds, timing)
            except Exception as err:
                warnings.warn(
                    f"{run.path.name} not cached ({type(err).__name__}: {err}): "
                    "make book executes it again",
                    stacklevel=1,
                )
