"""The kernel-free twin of an explorer: one plotly figure with a frame per grid value of one
control, and a slider (or buttons) that switches frames, so the online reader of the rendered
book can still move it.

See: lab/core/explore.py (the widget helper that pairs it with the live face).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .controls import MAX_STATIC_FRAMES, Control, check_controls

__all__ = ["static_twin", "figure_dict"]


def figure_dict(fig: Any) -> dict:
    """A JSON-safe plotly figure dict (numpy arrays encoded by plotly's own encoder)."""
    if isinstance(fig, dict):
        import plotly.graph_objects as go

        fig = go.Figure(fig)
    if not hasattr(fig, "to_json"):
        raise TypeError(f"compute must return a plotly Figure (got {type(fig).__name__})")
    return json.loads(fig.to_json())


_FRAME_LAYOUT_KEYS = ("title", "annotations", "shapes")


def _frame_layout(layout: dict) -> dict:
    """The parts of a layout that may differ between slider steps."""
    out = {k: layout[k] for k in _FRAME_LAYOUT_KEYS if k in layout}
    for key, val in layout.items():
        if (
            (key.startswith("xaxis") or key.startswith("yaxis"))
            and isinstance(val, dict)
            and "range" in val
        ):
            out[key] = {"range": val["range"]}
    if "title" in out and isinstance(out["title"], dict):
        out["title"] = {"text": out["title"].get("text", "")}
    out.setdefault("annotations", [])
    out.setdefault("shapes", [])
    return out


def _slider_below_legend(layout: dict, data: list) -> None:
    """A horizontal legend under the plot would sit on top of the slider: move the slider
    below the legend's estimated rows and grow the bottom margin (and the height, so the plot
    area keeps its size)."""
    leg = layout.get("legend") or {}
    if leg.get("orientation") != "h" or layout.get("showlegend", True) is False:
        return
    if leg.get("y", 1.0) >= 0 or leg.get("yanchor") == "bottom":
        return
    margin = layout["margin"]
    height = layout.get("height", 450)
    top, bottom = margin.get("t", 60), margin["b"]
    plot_px = max(height - top - bottom, 100)
    # pack the entries (~40 px of symbol and padding + ~7 px a character) into ~760 px rows
    widths = [
        40 + 7 * len(str(tr["name"]))
        for tr in data
        if tr.get("showlegend", True) is not False and tr.get("name")
    ]
    rows, used = 1, 0
    for w in widths:
        if used and used + w > 760:
            rows, used = rows + 1, 0
        used += w
    legend_px = -float(leg["y"]) * plot_px + rows * 22 + 14
    new_bottom = int(legend_px + 95)
    layout["height"] = height + max(0, new_bottom - bottom)
    margin["b"] = max(bottom, new_bottom)
    layout["sliders"][0].update(y=-legend_px / plot_px, yanchor="top", pad={"t": 10, "b": 10})


def static_twin(
    compute: Callable[..., Any],
    controls: dict[str, Control],
    static: str,
    caption: str | None = None,
    *,
    figures: Callable[[dict], dict] | None = None,
) -> dict:
    """Precompute ``compute`` over the grid of one control and return a plotly figure dict
    with one frame per grid value and a slider (or buttons, for a dropdown) that switches
    frames. The other controls stay at their defaults.

    ``figures(values) -> figure dict`` replaces ``figure_dict(compute(**values))`` (an
    :class:`Explorer` passes its memo, so that the live face reuses the twin's figures)."""
    if not callable(compute) and figures is None:
        raise TypeError(f"compute must be callable (got {type(compute).__name__})")
    check_controls(controls)
    if static not in controls:
        raise ValueError(f"static must name one of the controls {list(controls)} (got {static!r})")
    defaults = {k: c.value for k, c in controls.items()}
    ctrl = controls[static]
    grid = ctrl.grid()
    if len(grid) > MAX_STATIC_FRAMES:
        raise ValueError(
            f"the static grid of {static!r} has {len(grid)} values; at most {MAX_STATIC_FRAMES}"
        )
    if figures is None:

        def figures(values: dict) -> dict:
            return figure_dict(compute(**values))

    figs = [figures({**defaults, static: v}) for v in grid]
    n_traces = {len(f["data"]) for f in figs}
    if len(n_traces) != 1:
        raise ValueError(
            f"compute must return the same number of traces for every {static!r} "
            f"(got {sorted(n_traces)}); pad with empty traces"
        )
    active = next(i for i, v in enumerate(grid) if v == ctrl.value)
    base = figs[active]
    names = [f"{static}={ctrl.label(v)}" for v in grid]
    frames = [
        {"name": nm, "data": f["data"], "layout": _frame_layout(f.get("layout", {}))}
        for nm, f in zip(names, figs, strict=True)
    ]
    steps = [
        {
            "method": "animate",
            "label": ctrl.label(v),
            "args": [
                [nm],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for v, nm in zip(grid, names, strict=True)
    ]
    layout = dict(base.get("layout", {}))
    desc = ctrl.description or static
    layout["sliders"] = [
        {
            "active": active,
            "currentvalue": {"prefix": f"{desc} = ", "font": {"size": 13}},
            "pad": {"t": 50, "b": 10},
            "steps": steps,
            "len": 0.95,
            "x": 0.025,
        }
    ]
    margin = dict(layout.get("margin", {}))
    margin["b"] = max(margin.get("b", 50), 110)
    layout["margin"] = margin
    _slider_below_legend(layout, base["data"])
    fixed = {k: c.label(c.value) for k, c in controls.items() if k != static}
    note = caption or (
        "Precomputed: move the slider. "
        + (
            "Other controls fixed at " + ", ".join(f"{k} = {v}" for k, v in fixed.items()) + "."
            if fixed
            else ""
        )
    )
    return {
        "data": base["data"],
        "layout": layout,
        "frames": frames,
        "config": {"responsive": True, "displaylogo": False},
        "optlab": {"static_control": static, "grid": [ctrl.label(v) for v in grid], "note": note},
    }
