"""``explore``: the book's one widget helper.

A chapter hands ``explore`` a *compute function* that returns a plotly figure for a set of
parameter values, and the named *controls* for those parameters. The result is one output
with two faces:

* **In a live kernel** (JupyterLab, VS Code, Colab): ipywidgets controls above the figure;
  moving a control calls ``compute`` again and redraws.
* **In the rendered book** (no kernel): a plotly figure whose slider steps were computed
  ahead of time on a grid of one control (the *static* control; the others stay at their
  defaults), so the online reader can still move the slider.

Both faces travel in a single display bundle: the live widget view
(``application/vnd.jupyter.widget-view+json``) and the static twin
(``application/vnd.optlab.explore+json``, a plotly figure dict with ``frames``). Jupyter front
ends do not know the second type and show the widget; the book's renderer
(:mod:`lab.tooling.mime`) prefers the second. ``LAB_EXPLORE_STATIC=0`` skips computing the twin
(for fast local play).

One memo serves both faces: every figure ``compute`` returns is kept, keyed on the exact control
values, with its JSON-safe dict; the static twin fills it for the whole grid of its control, so
a live move to a grid value (or back to a value already seen) redraws without calling
``compute``. ``compute`` must therefore be a function of its arguments (it is: the twin already
assumes so). :func:`explorers` lists the explorers alive in the process (the widget-latency
benchmark, ``benchmarks/bench_widgets.py``, times their live updates).

Widget code never hides a result: notebooks assert on what ``lab`` returns, never on a
widget.

Example
-------
>>> from lab.core.explore import explore, FloatSlider
>>> def compute(a):
...     import plotly.graph_objects as go
...     return go.Figure(go.Scatter(x=[0, 1], y=[0, a]), layout_title_text=f"a = {a:.2f}")
>>> ex = explore(compute, {"a": FloatSlider(0.0, 1.0, 0.1, 0.5)}, static="a", display=False)
>>> len(ex.static_figure()["frames"])
11
"""

from __future__ import annotations

import itertools
import json
import math
import os
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .checks import check_bool, check_int, check_real

__all__ = [
    "EXPLORE_MIME",
    "Control",
    "FloatSlider",
    "LogSlider",
    "IntSlider",
    "RangeSlider",
    "FloatRangeSlider",
    "Dropdown",
    "Checkbox",
    "Explorer",
    "explore",
    "explorers",
]

EXPLORE_MIME = "application/vnd.optlab.explore+json"
MAX_STATIC_FRAMES = 61
MEMO_SIZE = 256  # figures kept per explorer (the static grid is at most MAX_STATIC_FRAMES)


# ----------------------------------------------------------------------------------------
# Controls: a plain description of one parameter, turned into an ipywidget on demand.
# ----------------------------------------------------------------------------------------
class Control:
    """Base class: a named parameter with a default value and a static grid."""

    value: Any
    description: str | None = None

    def widget(self, name: str):  # pragma: no cover - overridden
        raise NotImplementedError

    def grid(self) -> list[Any]:
        """The values the static twin precomputes (defaults to the default only)."""
        return [self.value]

    def label(self, value: Any) -> str:
        return _label(value)


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return "–".join(_label(v) for v in value)
    return str(value)


def _snap(values: Sequence[float], default: float) -> list[float]:
    """Sorted unique grid that contains ``default`` exactly."""
    out = sorted({float(v) for v in values} | {float(default)})
    return out


class FloatSlider(Control):
    """A real parameter on ``[min, max]`` in increments of ``step``.

    ``static_points`` sets how many grid values the book's twin precomputes (evenly spaced,
    the default value always included); ``static_values`` gives them explicitly.
    """

    min: float = 0.0
    max: float = 1.0
    step: float = 0.01
    static_points: int = 21
    static_values: Sequence[float] | None = None

    def __init__(
        self,
        min: float,
        max: float,
        step: float,
        value: float,
        *,
        description: str | None = None,
        static_points: int = 21,
        static_values: Sequence[float] | None = None,
    ):
        self.min = check_real("min", min)
        self.max = check_real("max", max)
        if not self.max > self.min:
            raise ValueError(f"max must be > min (got min={self.min:g}, max={self.max:g})")
        self.step = check_real("step", step)
        if self.step <= 0:
            raise ValueError(f"step must be > 0 (got {self.step:g})")
        value = check_real("value", value)
        if not self.min <= value <= self.max:
            raise ValueError(f"value must lie in [{self.min:g}, {self.max:g}] (got {value:g})")
        self.value = value
        self.description = description
        self.static_points = check_int("static_points", static_points, 1, MAX_STATIC_FRAMES)
        self.static_values = None if static_values is None else [float(v) for v in static_values]

    def widget(self, name: str):
        import ipywidgets as w

        return w.FloatSlider(
            value=self.value,
            min=self.min,
            max=self.max,
            step=self.step,
            description=self.description or name,
            continuous_update=False,
            readout_format=".4g",
            style={"description_width": "initial"},
        )

    def grid(self) -> list[float]:
        if self.static_values is not None:
            return _snap(self.static_values, self.value)
        pts = np.linspace(self.min, self.max, self.static_points)
        # round to the slider's step so that static and live values coincide
        pts = np.round(np.round((pts - self.min) / self.step) * self.step + self.min, 12)
        return _snap(pts, self.value)


class LogSlider(Control):
    """A positive parameter moved on a log scale, ``10**min_exp`` .. ``10**max_exp``."""

    min_exp: float = -3.0
    max_exp: float = 0.0
    static_points: int = 13

    def __init__(
        self,
        min_exp: float,
        max_exp: float,
        value: float,
        *,
        description: str | None = None,
        static_points: int = 13,
        static_values: Sequence[float] | None = None,
    ):
        self.min_exp = check_real("min_exp", min_exp)
        self.max_exp = check_real("max_exp", max_exp)
        if not self.max_exp > self.min_exp:
            raise ValueError(f"max_exp must be > min_exp (got {self.min_exp:g}, {self.max_exp:g})")
        value = check_real("value", value)
        if not 10**self.min_exp <= value <= 10**self.max_exp:
            raise ValueError(
                f"value must lie in [1e{self.min_exp:g}, 1e{self.max_exp:g}] (got {value:g})"
            )
        self.value = value
        self.description = description
        self.static_points = check_int("static_points", static_points, 1, MAX_STATIC_FRAMES)
        self.static_values = None if static_values is None else [float(v) for v in static_values]

    def widget(self, name: str):
        import ipywidgets as w

        return w.FloatLogSlider(
            value=self.value,
            base=10,
            min=self.min_exp,
            max=self.max_exp,
            step=(self.max_exp - self.min_exp) / 100,
            readout_format=".3g",
            description=self.description or name,
            continuous_update=False,
            style={"description_width": "initial"},
        )

    def grid(self) -> list[float]:
        if self.static_values is not None:
            return _snap(self.static_values, self.value)
        return _snap(np.logspace(self.min_exp, self.max_exp, self.static_points), self.value)


class IntSlider(Control):
    """An integer parameter on ``[min, max]``."""

    min: int = 0
    max: int = 10
    step: int = 1
    static_values: Sequence[int] | None = None

    def __init__(
        self,
        min: int,
        max: int,
        value: int,
        *,
        step: int = 1,
        description: str | None = None,
        static_values: Sequence[int] | None = None,
    ):
        self.min = check_int("min", min)
        self.max = check_int("max", max, self.min + 1)
        self.step = check_int("step", step, 1)
        self.value = check_int("value", value, self.min, self.max)
        self.description = description
        self.static_values = static_values

    def widget(self, name: str):
        import ipywidgets as w

        return w.IntSlider(
            value=self.value,
            min=self.min,
            max=self.max,
            step=self.step,
            description=self.description or name,
            continuous_update=False,
            style={"description_width": "initial"},
        )

    def grid(self) -> list[int]:
        if self.static_values is not None:
            vals = [int(v) for v in self.static_values]
        else:
            n = min(MAX_STATIC_FRAMES, (self.max - self.min) // self.step + 1, 21)
            vals = [int(round(v)) for v in np.linspace(self.min, self.max, n)]
        return sorted(set(vals) | {self.value})


class RangeSlider(Control):
    """A pair ``(low, high)`` of integers on ``[min, max]`` (e.g. a fit window)."""

    min: int = 0
    max: int = 10
    step: int = 1
    static_values: Sequence[tuple[int, int]] | None = None
    _widget_class = "IntRangeSlider"

    def __init__(
        self,
        min: int,
        max: int,
        value: tuple[int, int],
        *,
        step: int = 1,
        description: str | None = None,
        static_values: Sequence[tuple[int, int]] | None = None,
    ):
        self._set(min, max, step, value, description, static_values)

    @staticmethod
    def _number(name: str, value: Any) -> int:
        return check_int(name, value)

    def _set(self, min, max, step, value, description, static_values) -> None:
        self.min, self.max = self._number("min", min), self._number("max", max)
        if not self.max > self.min:
            raise ValueError(f"max must be > min (got min={self.min:g}, max={self.max:g})")
        self.step = self._number("step", step)
        if self.step <= 0:
            raise ValueError(f"step must be > 0 (got {self.step:g})")
        if len(value) != 2:
            raise ValueError(f"value must be a (low, high) pair (got {value!r})")
        lo, hi = self._number("value[0]", value[0]), self._number("value[1]", value[1])
        if not self.min <= lo <= hi <= self.max:
            raise ValueError(
                f"value must satisfy {self.min:g} <= low <= high <= {self.max:g} (got {value!r})"
            )
        self.value = (lo, hi)
        self.description = description
        self.static_values = static_values

    def widget(self, name: str):
        import ipywidgets as w

        extra = {"readout_format": ".3g"} if self._widget_class == "FloatRangeSlider" else {}
        return getattr(w, self._widget_class)(
            value=self.value,
            min=self.min,
            max=self.max,
            step=self.step,
            description=self.description or name,
            continuous_update=False,
            style={"description_width": "initial"},
            **extra,
        )

    def grid(self) -> list[tuple]:
        vals = [
            tuple(self._number("static_values[i]", x) for x in v)
            for v in (self.static_values or [])
        ]
        return list(dict.fromkeys(vals + [self.value])) if vals else [self.value]


class FloatRangeSlider(RangeSlider):
    """A pair ``(low, high)`` of reals on ``[min, max]`` in increments of ``step``."""

    _widget_class = "FloatRangeSlider"

    def __init__(
        self,
        min: float,
        max: float,
        step: float,
        value: tuple[float, float],
        *,
        description: str | None = None,
        static_values: Sequence[tuple[float, float]] | None = None,
    ):
        self._set(min, max, step, value, description, static_values)

    @staticmethod
    def _number(name: str, value: Any) -> float:
        return check_real(name, value)


class Dropdown(Control):
    """One of a list of options (strings or numbers); every option is precomputed."""

    options: Sequence[Any] = ()

    def __init__(
        self, options: Sequence[Any], value: Any | None = None, *, description: str | None = None
    ):
        options = list(options)
        if not options:
            raise ValueError("options must be a non-empty sequence")
        value = options[0] if value is None else value
        if value not in options:
            raise ValueError(f"value must be one of {options} (got {value!r})")
        self.options = options
        self.value = value
        self.description = description

    def widget(self, name: str):
        import ipywidgets as w

        return w.Dropdown(
            options=self.options,
            value=self.value,
            description=self.description or name,
            style={"description_width": "initial"},
        )

    def grid(self) -> list[Any]:
        return list(self.options)


class Checkbox(Control):
    """A boolean switch; both states are precomputed."""

    def __init__(self, value: bool = False, *, description: str | None = None):
        self.value = check_bool("value", value)
        self.description = description

    def widget(self, name: str):
        import ipywidgets as w

        return w.Checkbox(value=self.value, description=self.description or name, indent=False)

    def grid(self) -> list[bool]:
        return [False, True]


# ----------------------------------------------------------------------------------------
# The explorer
# ----------------------------------------------------------------------------------------
def _figure_dict(fig: Any) -> dict:
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

    ``figures(values) -> figure dict`` replaces ``_figure_dict(compute(**values))`` (an
    :class:`Explorer` passes its memo, so that the live face reuses the twin's figures)."""
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
            return _figure_dict(compute(**values))

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


class Explorer:
    """Live controls + figure, with a precomputed static twin for the rendered book.

    Attributes
    ----------
    controls : dict of Control
    values : dict
        The current parameter values (updated as widgets move).
    figure : plotly Figure
        The figure for the current values.
    """

    def __init__(
        self,
        compute: Callable[..., Any],
        controls: dict[str, Control],
        *,
        static: str | None,
        title: str | None = None,
        caption: str | None = None,
    ):
        if not callable(compute):
            raise TypeError(f"compute must be callable (got {type(compute).__name__})")
        if not isinstance(controls, dict) or not controls:
            raise ValueError("controls must be a non-empty dict of name -> Control")
        for name, ctrl in controls.items():
            if not isinstance(ctrl, Control):
                raise TypeError(
                    f"controls[{name!r}] must be a lab.core.explore Control (got {type(ctrl).__name__})"
                )
        self.compute = compute
        self.controls = controls
        self.static = static if static is not None else next(iter(controls))
        if self.static not in controls:
            raise ValueError(
                f"static must name one of the controls {list(controls)} (got {self.static!r})"
            )
        self.title = title
        self.caption = caption
        self.values = {k: c.value for k, c in controls.items()}
        # one memo for both faces: key of the control values -> [figure, figure dict or None]
        self._memo: OrderedDict[tuple, list] = OrderedDict()
        self.memo_hits = 0
        self.memo_misses = 0
        self.figure = self._compute(self.values)
        self._widgets: dict[str, Any] | None = None
        self._box = None
        self._out = None
        self._static: dict | None = None
        _REGISTRY.append(weakref.ref(self))

    # -- computing ---------------------------------------------------------------------
    def _key(self, values: dict) -> tuple | None:
        """The memo key of a set of control values (None when a value is not hashable)."""
        try:
            key = tuple((k, _memo_key(values[k])) for k in self.controls)
            hash(key)
        except (TypeError, KeyError):
            return None
        return key

    def _entry(self, values: dict) -> list:
        """The memo entry ``[figure, figure dict or None]`` of ``values``, computed on a miss."""
        key = self._key(values)
        if key is not None and key in self._memo:
            self.memo_hits += 1
            self._memo.move_to_end(key)
            return self._memo[key]
        self.memo_misses += 1
        fig = self.compute(**values)
        if not hasattr(fig, "to_json"):
            raise TypeError(f"compute must return a plotly Figure (got {type(fig).__name__})")
        entry = [fig, None]
        if key is not None:
            self._memo[key] = entry
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return entry

    def _compute(self, values: dict) -> Any:
        return self._entry(values)[0]

    def _figure_dict_of(self, values: dict) -> dict:
        """The JSON-safe dict of ``values``' figure (memoised with the figure)."""
        entry = self._entry(values)
        if entry[1] is None:
            entry[1] = _figure_dict(entry[0])
        return entry[1]

    def update(self, **values: Any) -> Any:
        """Set some parameters (as a widget would) and recompute the figure."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(
                f"unknown control(s) {sorted(unknown)}; controls are {list(self.controls)}"
            )
        self.values.update(values)
        if self._widgets is not None:
            for k, v in values.items():
                if self._widgets[k].value != v:
                    self._widgets[k].value = v  # triggers _on_change, which redraws
        self.figure = self._compute(self.values)
        self._redraw()
        return self.figure

    def static_figure(self) -> dict:
        """The kernel-free twin (plotly figure dict with frames), computed once."""
        if self._static is None:
            self._static = static_twin(
                self.compute,
                self.controls,
                self.static,
                self.caption,
                figures=self._figure_dict_of,
            )
        return self._static

    # -- widgets -----------------------------------------------------------------------
    def widgets(self):
        """Build (once) and return the ipywidgets ``VBox`` of controls + figure output."""
        if self._box is None:
            import ipywidgets as w

            self._widgets = {k: c.widget(k) for k, c in self.controls.items()}
            for k, wid in self._widgets.items():
                wid.observe(
                    lambda change, key=k: self._on_change(key, change["new"]), names="value"
                )
            self._out = w.Output()
            header = [w.HTML(f"<b>{self.title}</b>")] if self.title else []
            self._box = w.VBox(
                header
                + [
                    w.HBox(list(self._widgets.values()), layout=w.Layout(flex_flow="row wrap")),
                    self._out,
                ]
            )
            self._redraw()
        return self._box

    def _on_change(self, key: str, new: Any) -> None:
        if isinstance(new, list):
            new = tuple(new)
        if self.values.get(key) == new:
            return
        self.values[key] = new
        self.figure = self._compute(self.values)
        self._redraw()

    def _redraw(self) -> None:
        if self._out is None:
            return
        from IPython.display import display

        # The plotly mime bundle is written directly: going through plotly's renderers
        # (display(fig)) imports nbformat/jsonschema, several seconds on first use.
        entry = self._memo.get(self._key(self.values) or ())
        if entry is not None and entry[0] is self.figure:
            if entry[1] is None:
                entry[1] = _figure_dict(self.figure)
            fig_dict = entry[1]
        else:  # pragma: no cover - values that cannot be memoised
            fig_dict = _figure_dict(self.figure)
        bundle = {
            "application/vnd.plotly.v1+json": {
                **fig_dict,
                "config": {"responsive": True},
            },
            "text/plain": f"<plotly figure: {len(self.figure.data)} traces>",
        }
        self._out.clear_output(wait=True)
        with self._out:
            display(bundle, raw=True)

    # -- display -----------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {
            "text/plain": f"<Explorer over {list(self.controls)}; static twin over {self.static!r}>"
        }
        try:
            box = self.widgets()
            widget_bundle = box._repr_mimebundle_()
            if isinstance(widget_bundle, tuple):
                widget_bundle = widget_bundle[0]
            bundle.update(widget_bundle or {})
        except ImportError:  # pragma: no cover - ipywidgets is a dependency
            pass
        if _static_enabled():
            bundle[EXPLORE_MIME] = self.static_figure()
        return bundle


def _memo_key(value: Any) -> Any:
    """A hashable stand-in for one control value that tells apart what ``==`` conflates
    (``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``): a memo must never swap figures."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_memo_key(v) for v in value))
    if isinstance(value, float):  # repr is exact, and tells -0.0 (and np.float64) apart
        return (type(value).__name__, repr(value))
    return (type(value).__name__, value)


_REGISTRY: list[weakref.ref] = []


def explorers() -> list[Explorer]:
    """The :class:`Explorer` objects of this process that are still alive, oldest first.

    A displayed explorer lives as long as its widgets; the widget-latency benchmark
    (``benchmarks/bench_widgets.py``) executes a notebook and times the live updates of
    every explorer it built.
    """
    alive = [ex for ex in (r() for r in _REGISTRY) if ex is not None]
    _REGISTRY[:] = [weakref.ref(ex) for ex in alive]
    return alive


def _static_enabled() -> bool:
    return os.environ.get("LAB_EXPLORE_STATIC", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


def explore(
    compute: Callable[..., Any],
    controls: dict[str, Control],
    *,
    static: str | None = None,
    title: str | None = None,
    caption: str | None = None,
    display: bool = True,
) -> Explorer | None:
    """Show ``compute``'s figure with live controls, and a precomputed twin for the book.

    Parameters
    ----------
    compute : callable
        ``compute(**values) -> plotly.graph_objects.Figure``. It must return the same number
        of traces for every value of the static control (pad with empty traces).
    controls : dict
        ``name -> Control`` (:class:`FloatSlider`, :class:`LogSlider`, :class:`IntSlider`,
        :class:`RangeSlider`, :class:`Dropdown`, :class:`Checkbox`); names are ``compute``'s
        keyword arguments.
    static : str, optional
        The control the book's twin sweeps (default: the first). Its grid is precomputed.
    title, caption : str, optional
        Shown above the live widget / below the static slider.
    display : bool
        Display immediately (default) and return ``None``, so that a cell ending in
        ``explore(...)`` shows the widget once. With ``False`` the :class:`Explorer` is
        returned for the caller to display (``display(ex)``) or test.

    Returns
    -------
    Explorer or None

    See: book/intro.md (how the book's widgets work) and every chapter's notebooks.
    """
    ex = Explorer(compute, controls, static=static, title=title, caption=caption)
    if not display:
        return ex
    from IPython.display import display as _display

    _display(ex)
    return None


def grid_size(controls: dict[str, Control]) -> int:
    """Number of figures a full cartesian precomputation would need (for planning)."""
    return math.prod(len(c.grid()) for c in controls.values())


def iter_grid(controls: dict[str, Control]):
    """Every combination of the controls' grids, as dicts (helper for tests and sweeps)."""
    names = list(controls)
    for combo in itertools.product(*(controls[n].grid() for n in names)):
        yield dict(zip(names, combo, strict=True))
