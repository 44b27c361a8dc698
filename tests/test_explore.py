"""Unit tests of lab.core.explore, its controls and its static twin."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from lab.core import explore


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
    assert explore.figure_dict(fig) == explore.figure_dict(_compute(a=grid[-1]))
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
