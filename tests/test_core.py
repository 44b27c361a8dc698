"""Unit tests of lab.core: checks, runtime, explore, cache guard, style, grading helpers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import lab
from lab.core import cache, checks, explore, grading, style
from lab.core.runtime import device, seed, small_problem_threads


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
    old = torch.get_num_threads()
    with small_problem_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == old


def test_setup_applies_style(monkeypatch):
    import matplotlib as mpl
    import plotly.io as pio

    monkeypatch.setenv("LAB_DEVICE", "cpu")
    old = torch.get_num_threads()
    try:
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
    (root / "pyproject.toml").write_text("[project]\n")
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
    (root / "lab" / "a.py").write_text("a = 2\n")  # chapter a's module changed
    assert cache.guard(cdir, root) == ["a"]
    assert cached() == ["b"]
    (root / "lab" / "core" / "x.py").write_text("x = 2\n")  # the core changed: everything
    assert cache.guard(cdir, root) == ["all"]
    assert cached() == []


# -- grading helpers -----------------------------------------------------------------------
def test_assert_close_messages():
    grading.assert_close("x", [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(AssertionError, match="off by up to"):
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

    from lab.core import perf
    from lab.core.bench import Benchmark

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
    from lab.core import perf

    (tmp_path / "_toc.yml").write_text(
        "root: book/intro\nparts:\n  - chapters:\n      - file: book/b/index\n"
        "      - file: book/a/index\n"
    )
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "a-cpu.json").write_text('{"benchmark": "old format"}')
    assert perf.toc_chapters(tmp_path) == ["b", "a"]
    text, fig = perf.page_markdown("cpu", tmp_path)
    assert fig is None and "No CPU benchmark has been run yet" in text


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
    nb.cells[0].source = "FULL = False\nSEED = 0"
    nbformat.write(nb, tmp_path / "book" / "demo" / "01-demo.ipynb")
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    (result,) = cli.run("demo", full=True, out=tmp_path / "out")
    assert result["error"] is None
    done = nbformat.read(tmp_path / "out" / "01-demo.ipynb", as_version=4)
    assert done.cells[1].outputs[0]["text"].strip() == "full"
