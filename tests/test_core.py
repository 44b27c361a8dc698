"""Unit tests of lab.core: checks, runtime, explore, cache guard, style, grading helpers."""

from __future__ import annotations

import math
import types
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import lab
from lab.core import chapters, checks, explore, style
from lab.core.runtime import device, seed, small_problem_threads
from lab.tooling import cache, grading


# -- checks ------------------------------------------------------------------------------
def test_check_positive_messages_name_argument_value_and_range():
    assert checks.check_positive("eta", 0.5) == 0.5
    with pytest.raises(ValueError, match=r"eta must be > 0 \(got -0.1\)"):
        checks.check_positive("eta", -0.1)
    with pytest.raises(ValueError, match="eta must be finite"):
        checks.check_positive("eta", math.nan)
    with pytest.raises(TypeError, match="eta must be a real number"):
        checks.check_positive("eta", "0.1")
    with pytest.raises(TypeError):
        checks.check_positive("eta", True)
    assert checks.check_positive("r0", 0, allow_zero=True) == 0.0


def test_check_range_int_choice_bool():
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\] \(got 2\)"):
        checks.check_range("p", 2, 0, 1)
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\]"):
        checks.check_range("p", 0, 0, 1, low_inclusive=False)
    assert checks.check_int("steps", np.int64(5), 1) == 5
    with pytest.raises(TypeError, match="steps must be an integer"):
        checks.check_int("steps", 2.5)
    with pytest.raises(ValueError, match=r"depth must be an integer in \[2, inf\] \(got 1\)"):
        checks.check_int("depth", 1, 2)
    with pytest.raises(ValueError, match="model must be one of"):
        checks.check_choice("model", "zz", ["xy", "product"])
    with pytest.raises(TypeError):
        checks.check_bool("flag", 1)


def test_check_array_shape_and_finiteness():
    a = checks.check_array("w0", [1, 2], shape=(2,))
    assert a.dtype == np.float64
    with pytest.raises(ValueError, match=r"w0 must have shape \(\*, 2\)"):
        checks.check_array("w0", np.zeros((3, 3)), shape=(None, 2))
    with pytest.raises(ValueError, match="w0 must contain only finite values"):
        checks.check_array("w0", [1.0, np.inf])
    with pytest.raises(ValueError, match="ndim"):
        checks.check_array("w0", 1.0, ndim=1)
    t = checks.check_array("w0", torch.ones(2, dtype=torch.float64))
    assert isinstance(t, np.ndarray)


# -- runtime -----------------------------------------------------------------------------
def test_device_follows_env(monkeypatch):
    monkeypatch.setenv("LAB_DEVICE", "cpu")
    assert device().type == "cpu"
    monkeypatch.setenv("LAB_DEVICE", "tpu")
    with pytest.raises(ValueError, match="LAB_DEVICE must be 'cpu' or 'cuda"):
        device()
    monkeypatch.delenv("LAB_DEVICE")
    assert device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            device("cuda")


def test_seed_makes_runs_repeat():
    seed(3)
    a = (np.random.rand(3), torch.rand(3))
    seed(3)
    b = (np.random.rand(3), torch.rand(3))
    assert np.array_equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError):
        seed(-1)


def test_small_problem_threads_restores():
    # the session runs single-threaded (tests/conftest.py): start from 2 so a restore shows
    with small_problem_threads(2):
        assert torch.get_num_threads() == 2
        with small_problem_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2


def test_setup_applies_style(monkeypatch):
    import matplotlib as mpl
    import plotly.io as pio

    monkeypatch.setenv("LAB_DEVICE", "cpu")
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # the session runs single-threaded: make setup's change visible
        dev = lab.setup(1, verbose=False)
        assert dev.type == "cpu"
        assert torch.get_num_threads() == 1
        assert pio.templates.default == "optlab"
        assert mpl.rcParams["axes.prop_cycle"].by_key()["color"][0] == style.PALETTE[0]
    finally:
        torch.set_num_threads(old)


# -- explore -----------------------------------------------------------------------------
def _compute(a, mode="line", log=False):
    y = [0.0, a, 2 * a]
    fig = go.Figure([go.Scatter(x=[0, 1, 2], y=y, name=mode), go.Scatter(x=[0], y=[a])])
    fig.update_layout(title_text=f"a = {a:.2f} ({mode})", yaxis_type="log" if log else "linear")
    fig.add_hline(y=a)
    return fig


def _controls():
    return {
        "a": explore.FloatSlider(0.0, 1.0, 0.1, 0.3),
        "mode": explore.Dropdown(["line", "dots"]),
        "log": explore.Checkbox(False),
    }


def test_explore_live_mode_recomputes_when_a_widget_moves():
    ex = explore.explore(_compute, _controls(), static="a", display=False)
    box = ex.widgets()
    assert len(box.children) == 2  # controls row + figure output
    ex._widgets["a"].value = 0.7
    assert ex.values["a"] == 0.7
    assert ex.figure.layout.title.text == "a = 0.70 (line)"
    ex._widgets["mode"].value = "dots"
    assert ex.figure.layout.title.text == "a = 0.70 (dots)"
    ex.update(a=0.1)
    assert ex._widgets["a"].value == 0.1 and ex.figure.data[1].y[0] == 0.1


def test_explore_static_twin_has_one_frame_per_grid_value_and_a_slider():
    ex = explore.explore(_compute, _controls(), static="a", display=False)
    fig = ex.static_figure()
    grid = _controls()["a"].grid()
    assert len(grid) == 11 and 0.3 in grid
    assert len(fig["frames"]) == len(grid)
    slider = fig["layout"]["sliders"][0]
    assert len(slider["steps"]) == len(grid)
    assert slider["active"] == grid.index(0.3)
    titles = [fr["layout"]["title"]["text"] for fr in fig["frames"]]
    assert titles[0] == "a = 0.00 (line)" and titles[-1] == "a = 1.00 (line)"
    # frames carry the shapes that move with the parameter (here the hline at y = a)
    assert fig["frames"][-1]["layout"]["shapes"][0]["y0"] == 1.0
    for step, frame in zip(slider["steps"], fig["frames"], strict=True):
        assert step["method"] == "animate" and step["args"][0] == [frame["name"]]


def test_explore_bundle_carries_widget_and_static_twin(monkeypatch):
    ex = explore.explore(_compute, _controls(), static="mode", display=False)
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert len(bundle[explore.EXPLORE_MIME]["frames"]) == 2
    monkeypatch.setenv("LAB_EXPLORE_STATIC", "0")
    assert (
        explore.EXPLORE_MIME
        not in explore.explore(_compute, _controls(), display=False)._repr_mimebundle_()
    )


def test_explore_rejects_bad_input():
    with pytest.raises(TypeError, match="compute must be callable"):
        explore.explore(3, _controls(), display=False)
    with pytest.raises(ValueError, match="static must name one of the controls"):
        explore.explore(_compute, _controls(), static="zz", display=False)
    with pytest.raises(TypeError, match="must be a lab.core.explore Control"):
        explore.explore(_compute, {"a": 3}, display=False)
    with pytest.raises(ValueError, match=r"value must lie in \[0, 1\]"):
        explore.FloatSlider(0, 1, 0.1, 2.0)
    with pytest.raises(TypeError, match="compute must return a plotly Figure"):
        explore.explore(lambda a: 1, {"a": explore.FloatSlider(0, 1, 0.5, 0)}, display=False)

    def uneven(a):
        return go.Figure([go.Scatter(y=[a])] * (1 if a < 0.5 else 2))

    ex = explore.explore(uneven, {"a": explore.FloatSlider(0, 1, 0.5, 0)}, display=False)
    with pytest.raises(ValueError, match="same number of traces"):
        ex.static_figure()


def test_explore_memo_serves_both_faces_with_identical_figures():
    calls = []

    def counted(**values):
        calls.append(values)
        return _compute(**values)

    ex = explore.explore(counted, _controls(), static="a", display=False)
    assert len(calls) == 1 and ex.memo_misses == 1  # the default figure
    twin = ex.static_figure()
    grid = _controls()["a"].grid()
    assert len(calls) == len(grid)  # the default was not computed twice
    # the twin is the same as one computed without a memo
    assert twin == explore.static_twin(_compute, _controls(), "a")
    # a live move to a grid value is served by the memo: no call, the very figure
    ex.widgets()
    n = len(calls)
    fig = ex.update(a=grid[-1])
    assert len(calls) == n and ex.memo_hits >= 1
    assert fig is ex._memo[ex._key(ex.values)][0]
    assert explore._figure_dict(fig) == explore._figure_dict(_compute(a=grid[-1]))
    # a value off the grid is computed once, then remembered
    ex.update(mode="dots")
    ex.update(mode="line")
    ex.update(mode="dots")
    assert len(calls) == n + 1
    assert ex.figure.layout.title.text == f"a = {grid[-1]:.2f} (dots)"
    # the widget path (what a learner's slider runs) uses the same memo
    ex._widgets["mode"].value = "line"
    assert len(calls) == n + 1 and ex.figure.layout.title.text == f"a = {grid[-1]:.2f} (line)"


def test_explore_memo_keys_tell_apart_values_that_compare_equal():
    seen = []

    def compute(a):
        seen.append(type(a))
        return go.Figure(go.Scatter(y=[0]), layout_title_text=repr(a))

    ex = explore.explore(compute, {"a": explore.FloatSlider(0, 2, 1, 1.0)}, display=False)
    assert ex.update(a=1).layout.title.text == "1"  # int 1 == 1.0, but its figure differs
    assert ex.update(a=True).layout.title.text == "True"
    assert ex.update(a=-0.0).layout.title.text == "-0.0"
    assert ex.update(a=1.0).layout.title.text == "1.0"  # the memo's first figure
    ex.update(a=np.float64(1.0))
    assert seen == [float, int, bool, float, np.float64]
    # unhashable values are computed every time (never a wrong figure)
    assert ex.update(a=[1, 2]).layout.title.text == "[1, 2]"


def test_explorers_registry_holds_live_explorers_only():
    import gc

    ex = explore.explore(_compute, _controls(), display=False)
    assert any(e is ex for e in explore.explorers())
    ident = id(ex)
    del ex
    gc.collect()
    assert all(id(e) != ident for e in explore.explorers())


def test_widget_latency_probe_moves_every_control():
    from lab.tooling import widgetbench as wb

    vals = wb.probe_values(explore.FloatSlider(0.0, 1.0, 0.05, 0.3, static_points=5))
    grid = explore.FloatSlider(0.0, 1.0, 0.05, 0.3, static_points=5).grid()
    assert len(vals) == 3 and 0.3 not in vals
    assert any(v not in grid for v in vals)  # a value between grid points, on the step
    assert all(abs(v / 0.05 - round(v / 0.05)) < 1e-9 for v in vals)
    assert wb.probe_values(explore.Dropdown(["a", "b", "c"], "b")) == ["a", "c"]
    assert wb.probe_values(explore.Checkbox(False)) == [True, False]
    assert len(wb.probe_values(explore.IntSlider(0, 20, 5))) == 3
    log = wb.probe_values(explore.LogSlider(-3, 0, 0.01))
    assert len(log) == 3 and all(1e-3 <= v <= 1 for v in log)
    assert wb.probe_values(explore.RangeSlider(0, 10, (2, 5), static_values=[(0, 10)])) == [
        (0, 10),
        (2, 4),
    ]
    ex = explore.explore(_compute, _controls(), static="a", display=False)
    ex.static_figure()
    records = wb.time_live_updates([ex])
    assert {r["control"] for r in records} == {"a", "mode", "log"}
    assert all(r["seconds"] >= 0 for r in records)
    assert any(r["memo_hit"] for r in records if r["static"])  # grid values come from the twin
    assert ex.values == {k: c.value for k, c in _controls().items()}  # reset to the defaults
    summary = wb.summarise(records)
    assert summary["moves"] == len(records) and summary["max_s"] >= summary["median_s"]
    with pytest.raises(ValueError, match="path"):
        wb.measure_notebook("no-such-notebook.ipynb")


def test_control_grids():
    assert explore.LogSlider(-3, 0, 0.01, static_points=4).grid() == pytest.approx(
        [1e-3, 1e-2, 1e-1, 1]
    )
    assert explore.IntSlider(0, 4, 2).grid() == [0, 1, 2, 3, 4]
    assert explore.RangeSlider(0, 10, (2, 5), static_values=[(0, 10)]).grid() == [(0, 10), (2, 5)]
    assert explore.FloatRangeSlider(1, 5, 0.1, (3, 5), static_values=[(2, 4)]).grid() == [
        (2.0, 4.0),
        (3.0, 5.0),
    ]
    with pytest.raises(ValueError, match="low <= high"):
        explore.FloatRangeSlider(1, 5, 0.1, (4, 3))
    assert explore.grid_size(_controls()) == 11 * 2 * 2


# -- cache guard ---------------------------------------------------------------------------
def _tiny_notebook(path, code="x = 6 * 7\nprint(x)"):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_cache_guard_drops_only_what_changed(tmp_path):
    from jupyter_cache import get_cache

    root = tmp_path / "repo"
    (root / "lab" / "core").mkdir(parents=True)
    (root / "lab" / "core" / "x.py").write_text("x = 1\n")
    (root / "lab" / "a.py").write_text("a = 1\n")
    (root / "lab" / "tooling").mkdir()
    (root / "lab" / "tooling" / "t.py").write_text("t = 1\n")
    (root / "pyproject.toml").write_text("[project]\n")
    (root / "_toc.yml").write_text(
        "root: book/intro\nchapters:\n  - file: book/a/index\n  - file: book/b/index\n"
    )
    nbs = [
        _tiny_notebook(root / "book" / slug / "01-n.ipynb", f"print('{slug}')")
        for slug in ("a", "b")
    ]
    cdir = root / "_build" / ".jupyter_cache"
    assert cache.guard(cdir, root) == []
    cache.prefill(cdir, nbs, jobs=2)

    def cached():
        return sorted(Path(r.uri).parent.name for r in get_cache(str(cdir)).list_cache_records())

    assert cached() == ["a", "b"]
    assert cache.guard(cdir, root) == [] and cached() == ["a", "b"]
    (root / "lab" / "tooling" / "t.py").write_text("t = 2\n")  # build tooling: nothing re-runs
    (root / "lab" / "__main__.py").write_text("# the command line\n")
    assert cache.guard(cdir, root) == [] and cached() == ["a", "b"]
    (root / "lab" / "a.py").write_text("a = 2\n")  # chapter a's module changed
    assert cache.guard(cdir, root) == ["a"]
    assert cached() == ["b"]
    (root / "lab" / "core" / "x.py").write_text("x = 2\n")  # the core changed: everything
    assert cache.guard(cdir, root) == ["all"]
    assert cached() == []


# -- grading helpers -----------------------------------------------------------------------
def test_assert_close_messages():
    grading.assert_close("x", [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(AssertionError, match=r"expected x\[1\] = 2, found 2.1 \(off by 0.1"):
        grading.assert_close("x", [1.0, 2.1], [1.0, 2.0])
    with pytest.raises(AssertionError, match="NaN"):
        grading.assert_close("x", [np.nan], [1.0])
    with pytest.raises(AssertionError, match="shape"):
        grading.assert_close("x", [1.0], [1.0, 2.0])


def test_assign_rejects_unknown_chapter():
    with pytest.raises(ValueError, match="slug"):
        grading.assign("Not A Slug")
    with pytest.raises(ValueError, match="has no assignment"):
        grading.assign("nosuchchapter")


def test_cache_prefill_executes_once_and_myst_nb_finds_it(tmp_path):
    import nbformat
    from jupyter_cache import get_cache

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7\nprint(x)")])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    bad = tmp_path / "bad.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("assert False")]), bad)
    cdir = tmp_path / "cache"
    report = cache.prefill(cdir, [path, bad], jobs=2)
    assert isinstance(report[str(path)], float)
    assert "AssertionError" in report[str(bad)] or "CellExecutionError" in report[str(bad)]
    record, merged = get_cache(str(cdir)).merge_match_into_notebook(
        nbformat.read(path, as_version=4)
    )
    assert merged.cells[0].outputs[0]["text"] == "42\n"
    assert cache.prefill(cdir, [path], jobs=2) == {}  # cached: nothing to execute


_NB_CELLS = [
    "print('a')\nfrom IPython.display import Markdown, display\ndisplay(Markdown('**m**'))\n"
    "print('b')\n6 * 7",
    "",  # an empty cell: nbclient leaves it unexecuted
    "import ipywidgets\nout = ipywidgets.Output()\nwith out:\n    print('in the widget')\n"
    "ipywidgets.VBox([ipywidgets.IntSlider(3), out])",
    "h = display(Markdown('old'), display_id=True)\nh.update(Markdown('new'))",
]


def _normalized(nb):
    """Outputs, counts and widget state, the random widget model ids renamed in the order a
    walk from the displayed views through the state's references meets them."""
    import json
    import re

    cells = [(c.get("execution_count"), c.get("outputs")) for c in nb.cells]
    widgets = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    state = widgets.get("state", {})
    ids: dict[str, str] = {}

    def visit(model_id):
        if model_id in ids:
            return
        ids[model_id] = f"model{len(ids)}"
        text = json.dumps(state.get(model_id, {}), sort_keys=True)
        for ref in re.findall(r"IPY_MODEL_([0-9a-f]{32})", text):
            visit(ref)

    for ref in re.findall(r'"model_id": "([0-9a-f]{32})"', json.dumps(cells)):
        visit(ref)
    for model_id in sorted(state, key=lambda m: json.dumps(state[m]["state"], sort_keys=True)):
        visit(model_id)  # models no view shows (closed widgets), in an order of their own
    text = json.dumps(
        {"cells": cells, "widgets": widgets, "language": nb.metadata["language_info"]["name"]}
    )
    text = re.sub(r"[0-9a-f]{32}", lambda m: ids.get(m.group(0), "?"), text)
    return json.loads(text)


def test_nbval_cache_writes_hold_one_lock(tmp_path):
    """The two nbval workers write to the execution cache one at a time (jupyter-cache's
    truncation races with a concurrent insert): while one holds the lock, another cannot."""
    import fcntl

    from lab.tooling.nbcache_plugin import _cache_lock

    with _cache_lock(tmp_path / "cache"):
        with open(tmp_path / "cache" / ".optlab-write.lock", "w") as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(tmp_path / "cache" / ".optlab-write.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released after the block


def test_nbval_run_caches_what_the_prefill_would(tmp_path):
    """make test executes each notebook once: nbval's run, stored with --nbval-cache, is what
    the prefill would store (outputs in order, counts, widget state, language_info) and myst-nb
    finds it; a failing notebook and one outside the toc are not cached; the time is kept."""
    import subprocess
    import sys

    import nbformat
    from jupyter_cache import get_cache

    root = tmp_path / "repo"
    (root / "_toc.yml").parent.mkdir(parents=True)
    (root / "_toc.yml").write_text(
        "root: book/intro\nchapters:\n  - file: book/a/index\n    sections:\n"
        "      - file: book/a/01-n\n      - file: book/a/02-bad\n"
    )
    path = _tiny_notebook(root / "book" / "a" / "01-n.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells = [nbformat.v4.new_markdown_cell("# N")] + [
        nbformat.v4.new_code_cell(c) for c in _NB_CELLS
    ]
    nbformat.write(nb, path)
    bad = _tiny_notebook(root / "book" / "a" / "02-bad.ipynb", "assert False")
    _tiny_notebook(root / "book" / "a" / "03-off-toc.ipynb")
    ours, theirs = root / "nbval-cache", root / "prefill-cache"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab.tooling.nbcache_plugin", "--nbval-lax",
         "--nbval-current-env", "-p", "no:cacheprovider", "--rootdir", str(root),
         "--nbval-cache", str(ours), "-q", str(root / "book")],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-3000:]
    cache.prefill(theirs, [path], jobs=1)
    records = get_cache(str(ours)).list_cache_records()
    assert [Path(r.uri).name for r in records] == ["01-n.ipynb"]
    assert records[0].data["executed_by"] == "nbval" and records[0].data["execution_seconds"] > 0
    source = nbformat.read(path, as_version=4)
    _, by_nbval = get_cache(str(ours)).merge_match_into_notebook(source)
    _, by_prefill = get_cache(str(theirs)).merge_match_into_notebook(source)
    assert _normalized(by_nbval) == _normalized(by_prefill)
    assert [c.get("execution_count") for c in by_nbval.cells] == [None, 1, None, 2, 3]
    assert by_nbval.metadata["widgets"]  # the slider's and the Output widget's state
    with pytest.raises(KeyError):
        get_cache(str(ours)).match_cache_notebook(nbformat.read(bad, as_version=4))


def test_nbval_cache_writes_wait_for_the_other_worker():
    """Two xdist workers share the cache's sqlite file: a locked database is retried."""
    from sqlalchemy.exc import OperationalError

    from lab.tooling.nbcache_plugin import _with_retry

    calls = []

    def write():
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        return "written"

    assert _with_retry(write) == "written" and len(calls) == 3

    def broken():
        raise OperationalError("SELECT", {}, Exception("no such table: nbcache"))

    with pytest.raises(OperationalError, match="no such table"):
        _with_retry(broken)


def test_static_slider_moves_below_a_horizontal_legend():
    def compute(a):
        fig = go.Figure([go.Scatter(y=[0, a], name=f"series number {i}") for i in range(6)])
        fig.update_layout(height=400, legend=dict(orientation="h", y=-0.2))
        return fig

    fig = explore.explore(
        compute, {"a": explore.FloatSlider(0, 1, 0.5, 0)}, display=False
    ).static_figure()
    slider, layout = fig["layout"]["sliders"][0], fig["layout"]
    assert slider["yanchor"] == "top" and slider["y"] < -0.2  # under the legend, not on it
    assert layout["margin"]["b"] > 110 and layout["height"] > 400
    plain = explore.explore(_compute, _controls(), display=False).static_figure()
    assert "y" not in plain["layout"]["sliders"][0]  # figures without such a legend are untouched


# -- benchmark harness, performance page, command line -----------------------------------
def test_benchmark_harness_times_roles_and_writes_results(tmp_path, capsys):
    import json

    from lab.tooling import perf
    from lab.tooling.bench import Benchmark

    bench = Benchmark("demo", "demo benchmark", argv=["--quick", "--reps", "2"])
    assert bench.quick and not bench.gpu and bench.reps == 2
    x = np.arange(1000.0)
    with bench.case("sum of 1000", target=">= 1x", n=1000) as case:
        ref = case.time("reference", "python sum", lambda: sum(x.tolist()))
        fast = case.time("fast", "numpy sum", lambda: x.sum())
        case.time("peer", "einsum", lambda: np.einsum("i->", x))
        case.record("peer", "quality row", seconds=None, gap=0.05)
        case.metric("abs_diff", abs(ref - fast))
        with pytest.raises(ValueError, match="role must be one of"):
            case.time("fastest", "bad role", lambda: None)
    path = bench.finish(tmp_path / "demo-cpu.json")
    res = json.loads(path.read_text())
    assert res["schema"] == 1 and res["slug"] == "demo" and res["machine"]["cpu_count"]
    (c,) = res["cases"]
    assert [r["role"] for r in c["rows"]] == ["reference", "fast", "peer", "peer"]
    assert all(r["reps"] == 2 for r in c["rows"][:3])
    ratio = c["rows"][0]["seconds"] / c["rows"][1]["seconds"]
    assert c["ratios"]["fast_vs_reference"] == pytest.approx(ratio)
    assert "fast_vs_peer:einsum" in c["ratios"] and c["metrics"]["abs_diff"] == 0
    assert "| sum of 1000 | reference | python sum (cpu) |" in capsys.readouterr().out
    table = perf.table_markdown(res)
    assert "target: >= 1x" in table and "gap 0.05" in table and "abs_diff 0" in table
    fig = perf.speedup_figure({"demo": res})
    assert fig["data"][0]["x"] == [pytest.approx(ratio)]
    with pytest.raises(ValueError, match="slug must be"):
        Benchmark("not a slug")


def test_performance_page_reads_every_toc_chapter(tmp_path):
    from lab.tooling import perf

    (tmp_path / "_toc.yml").write_text(
        "root: book/intro\nparts:\n  - chapters:\n      - file: book/b/index\n"
        "      - file: book/a/index\n"
    )
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "a-cpu.json").write_text('{"benchmark": "old format"}')
    assert chapters.chapters(tmp_path) == ["b", "a"]
    text, fig = perf.page_markdown("cpu", tmp_path)
    assert fig is None and "No CPU benchmark has been run yet" in text


def test_performance_page_shows_the_widget_latency_table(tmp_path):
    import json

    from lab.tooling import perf
    from lab.tooling.bench import SCHEMA

    (tmp_path / "_toc.yml").write_text("root: book/intro\nparts:\n  - chapters: []\n")
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    target = "median <= 150 ms, max <= 1 s"
    res = {
        "schema": SCHEMA,
        "machine": {"cpu": "test cpu", "cpu_count": 2, "load_avg_1min": 1.0},
        "date": "2026-12-01T00:00:00+00:00",
        "threads": 1,
        "cases": [
            {
                "case": "eos/01-three-regimes",
                "target": target,
                "rows": [{"role": "fast", "name": "live", "seconds": 0.05, "moves": 12}],
                "metrics": {"median_ms": 50.0, "max_ms": 568.0, "memo_hits": 4,
                            "slowest": "f: steps = 9", "meets_target": True},
            },
            {"case": "x/02-broken", "target": target, "rows": [], "metrics": {"error": "Boom"}},
            {"case": "all notebooks", "target": target, "rows": [{"seconds": 0.05}],
             "metrics": {"notebooks": 2, "over_target": "x/02-broken",
                         "re_measured": "eos/01-three-regimes (after a fix)"}},
        ],
    }  # fmt: skip
    (results / "widgets-cpu.json").write_text(json.dumps(res))
    text, _ = perf.page_markdown("cpu", tmp_path)
    assert "**Live widgets**" in text and target in text
    assert "| eos/01-three-regimes | 50 ms | 568 ms | 12 (4) | f: steps = 9 | yes |" in text
    assert "failed: Boom" in text and "all notebooks" not in text
    assert (
        "2 notebooks; over the target: x/02-broken; median of the notebooks' medians 50 ms."
        " Measured again after a change: eos/01-three-regimes (after a fix)." in text
    )


def test_chapters_are_read_from_the_toc(tmp_path):
    import nbformat

    assert chapters.chapters(tmp_path) == [] and chapters.toc_files(tmp_path) == []
    with pytest.raises(ValueError, match="checkout"):
        chapters.check_slug("eos", tmp_path)
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n"
        "  - caption: I\n    chapters:\n"
        "      - file: book/z/index\n        sections:\n"
        "          - file: book/z/01-first\n          - file: book/z/02-off\n"
        "  - caption: II\n    chapters:\n      - file: book/a/index\n      - file: book/api\n"
    )
    for name in ("01-first", "02-off", "03-unlisted"):
        _tiny_notebook(tmp_path / "book" / "z" / f"{name}.ipynb")
    off = nbformat.read(tmp_path / "book" / "z" / "02-off.ipynb", as_version=4)
    off.metadata["mystnb"] = {"execution_mode": "off"}
    nbformat.write(off, tmp_path / "book" / "z" / "02-off.ipynb")
    assert chapters.toc_files(tmp_path) == [
        "book/intro",
        "book/z/index",
        "book/z/01-first",
        "book/z/02-off",
        "book/a/index",
        "book/api",
    ]
    assert chapters.chapters(tmp_path) == ["z", "a"]  # toc order, not alphabetical
    assert [p.name for p in chapters.chapter_notebooks("z", tmp_path)] == [
        "01-first.ipynb",
        "02-off.ipynb",
        "03-unlisted.ipynb",
    ]
    assert [p.name for p in chapters.toc_notebooks(tmp_path)] == ["01-first.ipynb"]
    assert [p.name for p in chapters.toc_notebooks(tmp_path, executed=False)] == [
        "01-first.ipynb",
        "02-off.ipynb",
    ]
    with pytest.raises(ValueError, match="unknown chapter 'api'; valid slugs: z, a"):
        chapters.chapter_notebooks("api", tmp_path)
    assert chapters.chapters()[0] == "eos"  # this checkout's toc


def test_book_tooling_is_wired_by_the_extension_and_the_entry_point():
    from importlib.metadata import entry_points

    from lab.tooling import mime, sphinxext

    (ep,) = [e for e in entry_points(group="myst_nb.mime_renderers") if e.name == "plotly"]
    assert ep.load() is mime.PlotlyRenderer
    html = mime.figure_html({"data": [{"y": [1, float("nan")]}]}, "fig-1")
    assert "Plotly.newPlot" in html and '"y":[1,null]' in html

    class App:
        def __init__(self):
            self.calls = []

        def __getattr__(self, name):
            return lambda *args, **kwargs: self.calls.append((name, args))

    app = App()
    assert sphinxext.setup(app)["parallel_read_safe"]
    events = [args[0] for name, args in app.calls if name == "connect"]
    assert {"config-inited", "builder-inited", "html-page-context", "build-finished"} <= set(events)
    assert ("add_directive", ("optlab-benchmarks",)) in [
        (name, args[:1]) for name, args in app.calls
    ]


def test_cli_info_and_bad_slugs(capsys):
    from lab.__main__ import chapters, main

    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "torch" in out and "cuda_available" in out and "triton" in out
    assert "eos" in chapters()
    for cmd in (["run", "nosuch"], ["assign", "nosuch"], ["bench", "nosuch"]):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert "nosuch" in err and "eos" in err, err


def test_cli_run_switches_full_and_saves_executed_copies(tmp_path, monkeypatch):
    import nbformat

    from lab import __main__ as cli

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("FULL = False\nSEED = 0"),
        nbformat.v4.new_code_cell("print('full' if FULL else 'default')"),
    ]
    assert cli.set_full(nb, True) and "FULL = True" in nb.cells[0].source
    (tmp_path / "book" / "demo").mkdir(parents=True)
    (tmp_path / "book" / "demo" / "index.md").write_text("# demo\n")
    (tmp_path / "_toc.yml").write_text("root: book/demo/index\n")
    nb.cells[0].source = "FULL = False\nSEED = 0"
    nbformat.write(nb, tmp_path / "book" / "demo" / "01-demo.ipynb")
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    (result,) = cli.run("demo", full=True, out=tmp_path / "out")
    assert result["error"] is None
    done = nbformat.read(tmp_path / "out" / "01-demo.ipynb", as_version=4)
    assert done.cells[1].outputs[0]["text"].strip() == "full"


# -- runtime.resolve_device ----------------------------------------------------------------
def test_resolve_device_explicit_inputs_default(monkeypatch):
    from lab.core import resolve_device

    monkeypatch.setenv("LAB_DEVICE", "cpu")
    assert resolve_device() == torch.device("cpu")  # falls back to lab.device()
    assert resolve_device(None, None, np.zeros(2)) == torch.device("cpu")
    t = torch.zeros(2, device="meta")  # follows the first tensor, whatever its device
    assert resolve_device(None, np.zeros(2), t, torch.zeros(1)) == torch.device("meta")
    assert resolve_device("CPU ", t) == torch.device("cpu")  # explicit wins over inputs
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


def test_resolve_device_bad_input():
    from lab.core import resolve_device

    with pytest.raises(TypeError, match=r"device must be a str or torch.device .*got int"):
        resolve_device(0)
    for bad in ("tpu", "cuda:x", "", "cpu:"):
        with pytest.raises(ValueError, match=r"device must be 'cpu' or 'cuda\[:index\]'"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda:0")


@pytest.mark.cuda
def test_resolve_device_cuda():
    from lab.core import resolve_device

    assert resolve_device("cuda").type == "cuda"
    assert resolve_device(None, torch.zeros(1, device="cuda")).type == "cuda"


# -- data.digits ---------------------------------------------------------------------------
def test_digits_split_and_standardisation_use_training_rows_only():
    from sklearn.datasets import load_digits

    from lab.core import digits

    X, y = load_digits(return_X_y=True)
    d = digits(test_size=0.25, seed=3)
    Xtr, ytr, Xte, yte = d  # unpacks like the old 4-tuples
    assert Xtr.shape == (1348, 64) and Xte.shape == (449, 64)
    assert Xtr.dtype == np.float32 and ytr.dtype == np.int64
    perm = np.random.default_rng(3).permutation(len(y))  # the split convention: test first
    assert np.array_equal(d.test_index, perm[:449]) and np.array_equal(d.train_index, perm[449:])
    assert np.array_equal(ytr, y[perm[449:]]) and np.array_equal(yte, y[perm[:449]])
    raw_tr = X[d.train_index] / 16.0
    mu, sd = raw_tr.mean(0), raw_tr.std(0) + 1e-3
    np.testing.assert_allclose(d.mean, mu, rtol=0, atol=1e-15)  # training rows only: no leak
    np.testing.assert_allclose(Xtr, (raw_tr - mu) / sd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Xte, (X[d.test_index] / 16.0 - mu) / sd, rtol=1e-6, atol=1e-6)
    assert np.abs(Xtr.mean(0)).max() < 1e-5
    assert np.abs(Xte.mean(0)).max() > 1e-3  # the test rows are not centred on themselves
    # the training features do not depend on what the test rows are
    other = digits(test_size=449, seed=3)
    np.testing.assert_array_equal(other.X_train, Xtr)


def test_digits_rows_are_load_digits_rows(monkeypatch):
    """The loader reads scikit-learn's file itself (no ``import sklearn.datasets``): the same
    rows, bit for bit, as ``load_digits``; and it asks scikit-learn when the file is not found."""
    from sklearn.datasets import load_digits

    from lab.core import data

    X, y = load_digits(return_X_y=True)
    assert data._digits_file() is not None
    data._raw_digits.cache_clear()
    Xd, yd = data._raw_digits()
    np.testing.assert_array_equal(Xd, X / 16.0)
    np.testing.assert_array_equal(yd, y)
    assert Xd.dtype == np.float64 and yd.dtype == np.int64 and not Xd.flags.writeable
    monkeypatch.setattr(data, "_digits_file", lambda: None)
    data._raw_digits.cache_clear()
    try:
        Xs, ys = data._raw_digits()
    finally:
        data._raw_digits.cache_clear()
    np.testing.assert_array_equal(Xs, Xd)
    np.testing.assert_array_equal(ys, yd)


def test_digits_options():
    from lab.core import digits

    plain = digits(test_size=597, seed=0, standardize=False, dtype="float64")
    assert plain.mean is None and plain.X_train.dtype == np.float64
    assert plain.X_train.min() == 0.0 and plain.X_train.max() == 1.0 and len(plain.y_test) == 597
    two = digits((8, 3), test_size=0, shuffle=False, standardize=False)
    assert two.classes == (8, 3) and two.X_test.shape == (0, 64)
    assert set(np.unique(two.y_train)) == {0, 1} and len(two.y_train) == 357
    assert np.all(np.diff(two.train_index) > 0)  # shuffle=False keeps scikit-learn's order
    # a Generator is used as is, so a caller can keep drawing from it after the split
    rng = np.random.default_rng(7)
    a = digits(seed=rng)
    ref = np.random.default_rng(7)
    assert np.array_equal(a.test_index, ref.permutation(1797)[:449])
    assert rng.random() == ref.random()
    tensors = a.tensors("cpu", torch.float64)
    assert tensors[0].dtype == torch.float64 and tensors[1].dtype == torch.int64
    assert torch.equal(tensors[3], torch.as_tensor(a.y_test))


def test_digits_bad_input():
    from lab.core import digits

    cases = [
        (dict(classes="38"), TypeError, "classes must be None or a sequence"),
        (dict(classes=(3,)), ValueError, "at least 2 digits"),
        (dict(classes=(3, 3)), ValueError, "distinct"),
        (dict(classes=(3, 10)), ValueError, r"classes\[1\] must be an integer in \[0, 9\]"),
        (dict(test_size=1.0), ValueError, r"test_size must lie in \[0, 1\)"),
        (dict(test_size=-0.1), ValueError, "test_size"),
        (dict(test_size=True), TypeError, "test_size"),
        (dict(test_size=1797), ValueError, r"test_size must be an integer in \[0, 1796\]"),
        (dict(test_size=float("nan")), ValueError, "test_size must be finite"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(seed=1.5), TypeError, "seed"),
        (dict(dtype="int32"), ValueError, "dtype must be 'float32' or 'float64'"),
        (dict(dtype=None), ValueError, "dtype must be 'float32' or 'float64'"),
        (dict(eps=0.0), ValueError, "eps must be > 0"),
        (dict(standardize="yes"), TypeError, "standardize must be True or False"),
        (dict(shuffle=1), TypeError, "shuffle"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            digits(**kwargs)
    with pytest.raises(TypeError, match="dtype must be a floating torch.dtype"):
        digits().tensors("cpu", torch.int64)


# -- rates ---------------------------------------------------------------------------------
def test_power_law_fit_exact_and_window():
    from lab.core import power_law_fit

    k = np.arange(1.0, 2001.0)
    fit = power_law_fit(k, 3.0 * k**-0.5)
    assert abs(fit.exponent + 0.5) < 1e-12 and abs(fit.prefactor - 3.0) < 1e-10
    assert fit.r2 == pytest.approx(1.0, abs=1e-12) and fit.n == 2000
    np.testing.assert_allclose(fit(k[:5]), 3.0 * k[:5] ** -0.5, rtol=1e-10)
    # a broken power law: the window picks the tail's exponent exactly
    y = np.where(k < 100, k**-1.0, 100.0 ** (-1.0 + 1.5) * k**-1.5)
    tail = power_law_fit(y=y, x=k, window=(100, None))
    assert abs(tail.exponent + 1.5) < 1e-12 and tail.n == 1901
    assert power_law_fit(k, y).r2 < 1.0
    # zeros are skipped by default (a gap that reached exactly 0), refused on request
    y0 = 2.0 * k**0.25
    y0[::7] = 0.0
    assert abs(power_law_fit(k, y0).exponent - 0.25) < 1e-12
    with pytest.raises(ValueError, match="must be > 0"):
        power_law_fit(k, y0, nonpositive="raise")


def test_exponential_fit_exact_rate():
    from lab.core import exponential_fit

    k = np.arange(60.0)
    fit = exponential_fit(k, 2.0 * (-0.8) ** k)  # sign-alternating residual: |.| is fitted
    assert abs(fit.factor - 0.8) < 1e-12 and abs(fit.rate - math.log(0.8)) < 1e-12
    assert abs(fit.prefactor - 2.0) < 1e-10 and fit.r2 == pytest.approx(1.0, abs=1e-12)
    assert abs(exponential_fit(k, np.exp(-0.3 * k), window=(10, 40)).rate + 0.3) < 1e-12


def test_exponent_ci_covers_truth_under_noise():
    from lab.core import exponent_ci

    rng = np.random.default_rng(0)
    T = np.geomspace(10, 1e4, 20)
    ys = 5.0 * T**0.5 * np.exp(0.2 * rng.standard_normal((10, T.size)))  # sqrt(T) regret
    ci = exponent_ci(T, ys, level=0.95)
    assert ci.low < ci.mean < ci.high and ci.covers(0.5)
    assert ci.high - ci.low < 0.1 and ci.exponents.shape == (10,)
    wider = exponent_ci(T, ys, level=0.99)
    assert wider.low < ci.low and wider.high > ci.high
    # exact curves: every seed gives the exponent, the interval collapses onto it
    exact = exponent_ci(T, np.vstack([T**-1.0, 4 * T**-1.0]))
    assert abs(exact.mean + 1.0) < 1e-12 and exact.high - exact.low < 1e-10


def test_rates_bad_input():
    from lab.core import exponent_ci, exponential_fit, power_law_fit

    k = np.arange(1.0, 11.0)
    with pytest.raises(ValueError, match=r"y must have shape \(10\) \(got \(9,\)\)"):
        power_law_fit(k, k[:-1])
    with pytest.raises(ValueError, match="x must have at least 2 elements"):
        power_law_fit([1.0], [1.0])
    with pytest.raises(ValueError, match="y must contain only finite values"):
        power_law_fit(k, np.r_[k[:-1], np.nan])
    with pytest.raises(TypeError, match="x must be array-like"):
        power_law_fit("abc", k)
    with pytest.raises(ValueError, match="at least 2 distinct usable points"):
        power_law_fit(k, k, window=(5, 5))
    with pytest.raises(ValueError, match="at least 2 distinct usable points"):
        power_law_fit(np.ones(5), np.arange(1.0, 6.0))
    with pytest.raises(ValueError, match="window must have low <= high"):
        power_law_fit(k, k, window=(8, 2))
    with pytest.raises(TypeError, match=r"window must be None or a pair"):
        power_law_fit(k, k, window=3)
    with pytest.raises(ValueError, match=r"window\[0\] must be finite"):
        power_law_fit(k, k, window=(float("nan"), 3))
    with pytest.raises(ValueError, match="nonpositive must be one of"):
        power_law_fit(k, k, nonpositive="clip")
    with pytest.raises(ValueError, match="y must be nonzero"):
        exponential_fit(k, np.r_[0.0, k[1:]], nonpositive="raise")
    with pytest.raises(ValueError, match="at least 2 seeds"):
        exponent_ci(k, k[None, :])
    with pytest.raises(ValueError, match=r"ys_per_seed must have shape \(seeds, 10\)"):
        exponent_ci(k, np.ones((3, 9)))
    with pytest.raises(ValueError, match=r"level must lie in \(0, 1\)"):
        exponent_ci(k, np.ones((3, 10)), level=1.0)


def test_mean_ci_is_the_student_t_interval():
    from scipy import stats

    from lab.core.rates import mean_ci

    v = np.array([0.1, -0.3, 0.25, 0.05])
    ci = mean_ci(v, level=0.9)
    lo, hi = stats.t.interval(0.9, v.size - 1, loc=v.mean(), scale=stats.sem(v))
    assert ci.mean == pytest.approx(v.mean()) and ci.n == 4 and ci.level == 0.9
    assert (ci.low, ci.high) == pytest.approx((lo, hi), rel=1e-12)
    assert ci.se == pytest.approx(stats.sem(v), rel=1e-12)
    with pytest.raises(ValueError, match="values"):
        mean_ci([1.0])
    with pytest.raises(ValueError, match="level"):
        mean_ci(v, level=1.0)


def test_widget_benchmark_update_replaces_cases_and_recomputes_the_summary():
    """bench_widgets --update: the new cases replace the old ones, the others and the stamp stay,
    the summary is computed again over every notebook and names what was measured again."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_widgets", Path(__file__).resolve().parents[1] / "benchmarks/bench_widgets.py"
    )
    bw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bw)

    def case(name, median_s, ok=True):
        return {
            "case": name,
            "rows": [{"role": "fast", "seconds": median_s}],
            "metrics": {"median_ms": median_s * 1e3, "meets_target": ok},
        }

    summary = {"case": bw.SUMMARY, "rows": [], "metrics": {"re_measured": "x/01 (earlier)"}}
    old = {
        "date": "2026-01-01T00:00:00+00:00",
        "cases": [case("a/01", 0.01), case("b/01", 0.5, ok=False), case("c/01", 0.03), summary],
    }
    new = {"date": "2026-02-03T04:05:06+00:00", "cases": [case("b/01", 0.02), dict(summary)]}
    out = bw.update_results(old, new, "after a fix")
    assert out["date"] == old["date"]
    assert [c["case"] for c in out["cases"]] == ["a/01", "b/01", "c/01", bw.SUMMARY]
    assert out["cases"][1]["rows"][0]["seconds"] == 0.02
    m = out["cases"][-1]["metrics"]
    assert m["notebooks"] == 3 and m["over_target"] == "none"
    assert out["cases"][-1]["rows"][0]["seconds"] == 0.02  # median of 0.01, 0.02, 0.03
    assert m["re_measured"] == "x/01 (earlier); b/01 (2026-02-03, after a fix)"
    with pytest.raises(SystemExit, match="not in the results file"):
        bw.update_results(old, {"date": new["date"], "cases": [case("z/09", 0.1)]}, "r")


def test_prefill_starts_another_kernel_when_one_dies_at_start(tmp_path, monkeypatch):
    """A kernel that dies before its first reply (a port taken by another process's kernel)
    is started again, up to KERNEL_START_TRIES times; any other error is raised at once."""
    import nbformat
    from jupyter_cache.executors import utils

    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), path)
    died = "Kernel died before replying to kernel_info"

    def executions(*errors):
        """A stand-in for single_nb_execution raising ``errors`` in turn, then succeeding."""
        calls = []

        def run(nb, **kw):
            calls.append(1)
            if len(calls) <= len(errors):
                raise RuntimeError(errors[len(calls) - 1])
            return types.SimpleNamespace(err=None)

        monkeypatch.setattr(utils, "single_nb_execution", run)
        return calls

    calls = executions(died)
    assert cache._execute(str(path), 10)[3] is None and len(calls) == 2
    calls = executions(*[died] * cache.KERNEL_START_TRIES)
    with pytest.raises(RuntimeError, match="kernel_info"):
        cache._execute(str(path), 10)
    assert len(calls) == cache.KERNEL_START_TRIES
    calls = executions("something else")
    with pytest.raises(RuntimeError, match="something else"):
        cache._execute(str(path), 10)
    assert len(calls) == 1
