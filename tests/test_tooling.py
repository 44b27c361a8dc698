"""Unit tests of lab.tooling: the execution cache, grading helpers, benchmark harness, performance
page, chapters of the toc and the command line."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from lab.tooling import cache, chapters, grading


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
