"""The controls of :func:`lab.core.explore.explore`: a plain description of one parameter (its
bounds, default and the grid the book's static twin precomputes), turned into an ipywidget on
demand. Every bound is validated once, here, with a message that names the argument.

See: lab/core/explore.py (the widget helper) and book/intro.md (how the book's widgets work).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .checks import check_bool, check_int, check_real

__all__ = [
    "MAX_STATIC_FRAMES",
    "Control",
    "FloatSlider",
    "LogSlider",
    "IntSlider",
    "RangeSlider",
    "FloatRangeSlider",
    "Dropdown",
    "Checkbox",
    "label",
    "check_controls",
]

MAX_STATIC_FRAMES = 61


def label(value: Any) -> str:
    """How a control value reads on the twin's slider (``on``/``off``, 4 significant digits)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return "–".join(label(v) for v in value)
    return str(value)


def _snap(values: Sequence[float], default: float) -> list[float]:
    """Sorted unique grid that contains ``default`` exactly."""
    return sorted({float(v) for v in values} | {float(default)})


def _interval(lo: float, hi: float, names: tuple[str, str] = ("min", "max")) -> None:
    if not hi > lo:
        raise ValueError(
            f"{names[1]} must be > {names[0]} (got {names[0]}={lo:g}, {names[1]}={hi:g})"
        )


def _positive_step(step: float) -> None:
    if step <= 0:
        raise ValueError(f"step must be > 0 (got {step:g})")


def check_controls(controls: Any) -> dict:
    """``controls`` as :func:`~lab.core.explore.explore` takes them: a non-empty dict of
    name -> :class:`Control`."""
    if not isinstance(controls, dict) or not controls:
        raise ValueError("controls must be a non-empty dict of name -> Control")
    for name, ctrl in controls.items():
        if not isinstance(ctrl, Control):
            raise TypeError(
                f"controls[{name!r}] must be a lab.core.explore Control (got {type(ctrl).__name__})"
            )
    return controls


class Control:
    """Base class: a named parameter with a default value and a static grid."""

    value: Any
    description: str | None = None
    widget_class: str = ""

    def widget_kwargs(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def widget(self, name: str):
        """The live ipywidget for this control (``name`` labels it without a description)."""
        import ipywidgets as w

        kwargs = {
            "value": self.value,
            "description": self.description or name,
            "style": {"description_width": "initial"},
            **self.widget_kwargs(),
        }
        return getattr(w, self.widget_class)(**kwargs)

    def grid(self) -> list[Any]:
        """The values the static twin precomputes (defaults to the default only)."""
        return [self.value]

    def label(self, value: Any) -> str:
        return label(value)


class FloatSlider(Control):
    """A real parameter on ``[min, max]`` in increments of ``step``.

    ``static_points`` sets how many grid values the book's twin precomputes (evenly spaced,
    the default value always included); ``static_values`` gives them explicitly.
    """

    widget_class = "FloatSlider"

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
        self.min, self.max = check_real("min", min), check_real("max", max)
        _interval(self.min, self.max)
        self.step = check_real("step", step)
        _positive_step(self.step)
        value = check_real("value", value)
        if not self.min <= value <= self.max:
            raise ValueError(f"value must lie in [{self.min:g}, {self.max:g}] (got {value:g})")
        self.value = value
        self.description = description
        self.static_points = check_int("static_points", static_points, 1, MAX_STATIC_FRAMES)
        self.static_values = None if static_values is None else [float(v) for v in static_values]

    def widget_kwargs(self) -> dict[str, Any]:
        return {
            "min": self.min,
            "max": self.max,
            "step": self.step,
            "continuous_update": False,
            "readout_format": ".4g",
        }

    def grid(self) -> list[float]:
        if self.static_values is not None:
            return _snap(self.static_values, self.value)
        pts = np.linspace(self.min, self.max, self.static_points)
        # round to the slider's step so that static and live values coincide
        pts = np.round(np.round((pts - self.min) / self.step) * self.step + self.min, 12)
        return _snap(pts, self.value)


class LogSlider(Control):
    """A positive parameter moved on a log scale, ``10**min_exp`` .. ``10**max_exp``."""

    widget_class = "FloatLogSlider"

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

    def widget_kwargs(self) -> dict[str, Any]:
        return {
            "base": 10,
            "min": self.min_exp,
            "max": self.max_exp,
            "step": (self.max_exp - self.min_exp) / 100,
            "readout_format": ".3g",
            "continuous_update": False,
        }

    def grid(self) -> list[float]:
        if self.static_values is not None:
            return _snap(self.static_values, self.value)
        return _snap(np.logspace(self.min_exp, self.max_exp, self.static_points), self.value)


class IntSlider(Control):
    """An integer parameter on ``[min, max]``."""

    widget_class = "IntSlider"

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

    def widget_kwargs(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "step": self.step, "continuous_update": False}

    def grid(self) -> list[int]:
        if self.static_values is not None:
            vals = [int(v) for v in self.static_values]
        else:
            n = min(MAX_STATIC_FRAMES, (self.max - self.min) // self.step + 1, 21)
            vals = [int(round(v)) for v in np.linspace(self.min, self.max, n)]
        return sorted(set(vals) | {self.value})


class RangeSlider(Control):
    """A pair ``(low, high)`` of integers on ``[min, max]`` (e.g. a fit window)."""

    widget_class = "IntRangeSlider"

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
    def number(name: str, value: Any) -> int:
        """One bound, validated as this slider's number type."""
        return check_int(name, value)

    def _set(self, min, max, step, value, description, static_values) -> None:
        self.min, self.max = self.number("min", min), self.number("max", max)
        _interval(self.min, self.max)
        self.step = self.number("step", step)
        _positive_step(self.step)
        if len(value) != 2:
            raise ValueError(f"value must be a (low, high) pair (got {value!r})")
        lo, hi = self.number("value[0]", value[0]), self.number("value[1]", value[1])
        if not self.min <= lo <= hi <= self.max:
            raise ValueError(
                f"value must satisfy {self.min:g} <= low <= high <= {self.max:g} (got {value!r})"
            )
        self.value = (lo, hi)
        self.description = description
        self.static_values = static_values

    def widget_kwargs(self) -> dict[str, Any]:
        extra = {"readout_format": ".3g"} if self.widget_class == "FloatRangeSlider" else {}
        return {
            "min": self.min,
            "max": self.max,
            "step": self.step,
            "continuous_update": False,
            **extra,
        }

    def grid(self) -> list[tuple]:
        vals = [
            tuple(self.number("static_values[i]", x) for x in v) for v in (self.static_values or [])
        ]
        return list(dict.fromkeys(vals + [self.value])) if vals else [self.value]


class FloatRangeSlider(RangeSlider):
    """A pair ``(low, high)`` of reals on ``[min, max]`` in increments of ``step``."""

    widget_class = "FloatRangeSlider"

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
    def number(name: str, value: Any) -> float:
        """One bound, validated as a real number."""
        return check_real(name, value)


class Dropdown(Control):
    """One of a list of options (strings or numbers); every option is precomputed."""

    widget_class = "Dropdown"

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

    def widget_kwargs(self) -> dict[str, Any]:
        return {"options": self.options}

    def grid(self) -> list[Any]:
        return list(self.options)


class Checkbox(Control):
    """A boolean switch; both states are precomputed."""

    widget_class = "Checkbox"

    def __init__(self, value: bool = False, *, description: str | None = None):
        self.value = check_bool("value", value)
        self.description = description

    def widget(self, name: str):
        import ipywidgets as w

        return w.Checkbox(value=self.value, description=self.description or name, indent=False)

    def grid(self) -> list[bool]:
        return [False, True]
