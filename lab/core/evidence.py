"""The evidence beside a claim's verdict: its rival (a control), why a negative came out (a
diagnosis), and the disclosed changes of its rule (revisions).

Everything here is re-exported by :mod:`lab.core.claims` (``claims.control``,
``claims.diagnosis``, ``claims.revision``); see that module and CONTRIBUTING.md ("Claims").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .rules import NOT_REPRODUCED, QUALITATIVE, REPRODUCED, _is_bool, format_value

__all__ = [
    "DIAGNOSES",
    "Control",
    "Diagnosis",
    "control",
    "diagnosis",
    "revision",
    "rivals_as_good",
]

#: the order of the verdicts, for comparing a claim with its rival under the same rule
_RANK = {NOT_REPRODUCED: 0, QUALITATIVE: 1, REPRODUCED: 2}


def rivals_as_good(record: dict) -> list[dict]:
    """The controls of a claim record whose verdict under the claim's own rule is at least as
    good as the claim's: a better tier, or the same tier when that tier is "reproduced" or
    "qualitatively" (the rule cannot tell the method from its rival). Two "not reproduced"
    verdicts are not counted (neither shows the effect). A finding about the paper at our
    size, shown on the card and counted on the scorecard, not a failure of the build.

    Raises
    ------
    TypeError
        If ``record`` is not a record dict.
    """
    if not isinstance(record, dict):
        raise TypeError(f"record must be a claim record dict, got {type(record).__name__}")
    mine = _RANK.get(record.get("verdict"))
    if mine is None:
        return []
    return [
        c
        for c in record.get("controls") or []
        if (r := _RANK.get(c.get("verdict"))) is not None and (r > mine or r == mine > 0)
    ]


def _jsonable(value: Any) -> Any:
    if _is_bool(value):
        return bool(value)
    if isinstance(value, (int, str)) or value is None:
        return value
    if isinstance(value, float) or hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        v = float(value)
        return v if math.isfinite(v) else str(v)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        seq = value.tolist() if hasattr(value, "tolist") else value
        return [_jsonable(v) for v in seq]
    return str(value)


#: why a claim did not reproduce (or only qualitatively): the fixed vocabulary of diagnoses
DIAGNOSES = {
    "scale": "the gap to the paper shrinks with size (measured at two or more sizes)",
    "noise-floor": "the paper's margin is below what our seeds resolve (standard error shown)",
    "official-code": "the paper's official implementation, run on our instance, agrees",
    "deviation": "a named entry of the chapter's deviations from the paper drives it",
    "open": "no diagnosis yet",
}


def _text(value: Any, name: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


# ----------------------------------------------------------------------------------------
# Controls and diagnoses
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Control:
    """The nearest rival of a claim, measured in the same cell (see :func:`control`)."""

    name: str
    measured: Any
    text: str


def control(name: str, measured: Any, *, text: str | None = None) -> Control:
    """A control: a named, plausible wrong answer that the claim's own rule must reject.

    Pass it to :meth:`Claim.record` (``control=``, one or a list). The record stores its name,
    value, text and the verdict the claim's rule gives it; a paper claim that reproduces while
    its control reproduces too raises :class:`ClaimMismatch` (the rule cannot discriminate).
    Pick the **nearest rival**: the prior art the paper improves on, the method without its key
    ingredient, or the model the claim should not hold for; never random output, zeros or an
    untrained model.

    Parameters
    ----------
    name
        What the rival is ("GD flow (no noise)", "one-step chords", "Adam").
    measured
        Its value, of the same kind as the claim's (the rule reads it the same way).
    text
        How the page shows it (default: ``measured`` formatted); build it from computed values.
    """
    return Control(
        _text(name, "name"),
        measured,
        format_value(measured) if text is None else _text(text, "text", empty=True),
    )


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim did not reproduce (see :func:`diagnosis`)."""

    kind: str
    evidence: str
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "evidence": self.evidence, "data": _jsonable(self.data)}


def _numbers(name: str, values: Any) -> list[float]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    out = [float(v) for v in values]
    if any(math.isnan(v) for v in out):
        raise ValueError(f"{name} must not contain NaN")
    return out


def diagnosis(kind: str, evidence: str = "", **data: Any) -> Diagnosis:
    """Why a verdict is "not reproduced at this size" or "reproduced qualitatively".

    Parameters
    ----------
    kind
        One of :data:`DIAGNOSES`:

        - ``"scale"``: the gap shrinks with size; needs ``sizes=`` and ``values=`` (two or more
          sizes measured in the notebook or at ``FULL``, the trend the record shows);
        - ``"noise-floor"``: the paper's margin is below what the seeds resolve; needs ``se=``
          (the standard error, computed);
        - ``"official-code"``: the official implementation agrees on our instance; needs
          ``fixture=`` (the path of its recorded outputs under ``lab/core/official/``);
        - ``"deviation"``: needs ``deviation=``, the name of an entry of the chapter's
          "Deviations from the paper" list;
        - ``"open"``: none of these yet (allowed, counted and shown on the scorecard).
    evidence
        The sentence the page shows, built from measured values (required except for "open").
    **data
        The measured evidence (stored in the record).
    """
    if not isinstance(kind, str) or kind not in DIAGNOSES:
        raise ValueError(f"kind must be one of {', '.join(map(repr, DIAGNOSES))}, got {kind!r}")
    evidence = _text(evidence, "evidence", empty=kind == "open")
    if kind == "scale":
        if "sizes" not in data or "values" not in data:
            raise ValueError("a 'scale' diagnosis needs sizes= and values= (the measured trend)")
        sizes, values = _numbers("sizes", data["sizes"]), _numbers("values", data["values"])
        if len(sizes) < 2 or len(sizes) != len(values):
            raise ValueError(
                "a 'scale' diagnosis needs two or more sizes and one value per size, got "
                f"{len(sizes)} sizes and {len(values)} values"
            )
    elif kind == "noise-floor":
        if "se" not in data:
            raise ValueError("a 'noise-floor' diagnosis needs se= (the standard error)")
        se = float(data["se"])
        if not se >= 0:
            raise ValueError(f"se must be a number >= 0, got {data['se']!r}")
    elif kind == "official-code":
        _text(data.get("fixture", ""), "fixture")
    elif kind == "deviation":
        _text(data.get("deviation", ""), "deviation")
    return Diagnosis(kind, evidence or DIAGNOSES["open"], dict(data))


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def revision(date: str, *, old: str, new: str, known: str) -> dict:
    """A disclosed change of a claim's rule, seeds or size (pass a list to ``claim(revised=)``).

    Parameters
    ----------
    date
        When it changed, ``YYYY-MM-DD``.
    old, new
        The rule (or seeds, size) before and after, in words.
    known
        What was known when it changed: the measured values that had been seen, on which
        machine; "nothing measured yet" only when true.
    """
    date = _text(date, "date")
    if not _DATE.match(date):
        raise ValueError(f"date must be YYYY-MM-DD, got {date!r}")
    return {
        "date": date,
        "old": _text(old, "old"),
        "new": _text(new, "new"),
        "known": _text(known, "known"),
    }
