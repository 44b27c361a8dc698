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

import math
import os
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .controls import (
    Checkbox,
    Control,
    Dropdown,
    FloatRangeSlider,
    FloatSlider,
    IntSlider,
    LogSlider,
    RangeSlider,
    check_controls,
)
from .twin import figure_dict, static_twin

# the controls are defined in lab.core.controls and re-exported here, beside explore()
__all__ = [
    "EXPLORE_MIME",
    "Explorer",
    "explore",
    "explorers",
    "grid_size",
    "static_twin",
    "Checkbox",
    "Control",
    "Dropdown",
    "FloatRangeSlider",
    "FloatSlider",
    "IntSlider",
    "LogSlider",
    "RangeSlider",
]

EXPLORE_MIME = "application/vnd.optlab.explore+json"
MEMO_SIZE = 256  # figures kept per explorer (the static grid is at most MAX_STATIC_FRAMES)


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
        check_controls(controls)
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
            entry[1] = figure_dict(entry[0])
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
                entry[1] = figure_dict(self.figure)
            fig_dict = entry[1]
        else:  # pragma: no cover - values that cannot be memoised
            fig_dict = figure_dict(self.figure)
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
    check_controls(controls)
    return math.prod(len(c.grid()) for c in controls.values())
