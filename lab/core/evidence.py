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
    "judge_rival",
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
    out = []
    for c in record.get("controls") or []:
        if "as_good" in c:  # judged by the paired interval of (method - rival)
            if c["as_good"]:
                out.append(c)
        elif (r := _RANK.get(c.get("verdict"))) is not None and (r > mine or r == mine > 0):
            out.append(c)
    return out


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
    "tight-null": "the effect is measured and smaller than a margin registered before the run "
    "(equivalence test): evidence against the claim at this size",
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
    paired: tuple[float, ...] | None = None


def control(name: str, measured: Any, *, text: str | None = None, paired: Any = None) -> Control:
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
    paired
        The per-seed (or per-instance) differences *method - rival* on the claim's own seeds and
        data, signed so that a positive difference favours the method (at least 2). The record
        then judges the rival by their 95% interval (:func:`judge_rival`): "rival at least as
        good" when the upper end is at or below 0, or when the interval lies inside the claim's
        registered equivalence margin.
    """
    return Control(
        _text(name, "name"),
        measured,
        format_value(measured) if text is None else _text(text, "text", empty=True),
        None if paired is None else tuple(_numbers("paired", paired)),
    )


def judge_rival(paired: Any, equivalence: float | None = None) -> dict:
    """The paired judgement of a rival: the 95% Student-t interval of the differences *method -
    rival* (positive favours the method), and whether the rival is at least as good.

    The rival is **better** when the interval's upper end is at or below 0, **as good** when the
    interval lies inside ``(-equivalence, equivalence)`` (the claim's registered equivalence
    margin, when it has one), and otherwise the method is not shown to lose.

    Returns
    -------
    dict
        ``{"n", "mean", "se", "lo", "hi", "equivalence", "judgement"}`` and the boolean
        ``as_good`` beside it (see :meth:`lab.core.claims.Claim.record`).
    """
    from .rates import mean_ci

    d = _numbers("paired", paired)
    if len(d) < 2:
        raise ValueError(f"paired must hold at least 2 differences, got {len(d)}")
    if equivalence is not None and not (float(equivalence) > 0 and math.isfinite(equivalence)):
        raise ValueError(f"equivalence must be a finite number > 0, got {equivalence!r}")
    ci = mean_ci(d)
    better = ci.high <= 0
    same = equivalence is not None and -equivalence < ci.low and ci.high < equivalence
    judgement = (
        "rival better (interval of method - rival at or below 0)"
        if better
        else "rival as good (interval inside the equivalence margin)"
        if same
        else "method ahead"
        if ci.low > 0
        else "not told apart"
    )
    return {
        "n": len(d),
        "mean": ci.mean,
        "se": ci.se,
        "lo": ci.low,
        "hi": ci.high,
        "equivalence": equivalence,
        "judgement": judgement,
        "as_good": bool(better or same),
    }


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


def _trend(sizes: list[float], values: list[float], paper: float) -> dict:
    """The least-squares slope of ``values`` against log(size), its 95% interval, and whether it
    points from the largest size's value toward the paper's."""
    import numpy as np
    from scipy import stats

    u, v = np.log(np.asarray(sizes, float)), np.asarray(values, float)
    if np.ptp(u) == 0 or np.any(np.asarray(sizes) <= 0):
        raise ValueError("sizes must be positive and not all equal")
    slope, intercept = np.polyfit(u, v, 1)
    resid = v - (slope * u + intercept)
    se = math.sqrt(float(resid @ resid) / (len(u) - 2) / float(((u - u.mean()) ** 2).sum()))
    t = float(stats.t.ppf(0.975, len(u) - 2))
    lo, hi = slope - t * se, slope + t * se
    toward = math.copysign(1.0, paper - v[-1])
    return {
        "slope": float(slope),
        "lo": float(lo),
        "hi": float(hi),
        "paper": paper,
        "toward_paper": bool(lo > 0 if toward > 0 else hi < 0),
    }


def _tost(data: dict) -> dict:
    """The 90% interval of a tight null's effect and its registered margin (two one-sided
    tests at 5%: the interval inside (-margin, margin))."""
    from .rates import mean_ci

    if "margin" not in data or "margin_source" not in data:
        raise ValueError(
            "a 'tight-null' diagnosis needs margin= (registered before the run) and "
            "margin_source= (where it comes from: 'half of Table 2's gap')"
        )
    margin = float(data["margin"])
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"margin must be a finite number > 0, got {data['margin']!r}")
    _text(data["margin_source"], "margin_source")
    if "effects" not in data:
        raise ValueError("a 'tight-null' diagnosis needs effects= (one effect per seed)")
    ci = mean_ci(_numbers("effects", data["effects"]), level=0.90)
    return {
        "mean": ci.mean,
        "lo": ci.low,
        "hi": ci.high,
        "se": ci.se,
        "n": ci.n,
        "level": 0.9,
        "equivalent": bool(-margin < ci.low and ci.high < margin),
    }


def diagnosis(kind: str, evidence: str = "", **data: Any) -> Diagnosis:
    """Why a verdict is "not reproduced at this size" or "reproduced qualitatively".

    Parameters
    ----------
    kind
        One of :data:`DIAGNOSES`. The engine checks the evidence it is given and records the
        outcome beside it (the card shows a check that fails; a converted chapter's contract
        test requires it to pass; never an exception mid-notebook, where a borderline value
        would crash on one machine and pass on another):

        - ``"scale"``: the gap shrinks with size; needs ``sizes=`` and ``values=`` (two or more
          sizes). With three or more sizes and ``paper=`` (the paper's value, a number) the
          record holds the fitted trend (slope against log size and its 95% interval) and
          ``toward_paper``: whether it points from the largest size toward the paper's value;
        - ``"noise-floor"``: the paper's margin is below what the seeds resolve; needs ``se=``
          (the standard error, computed). With ``paper_margin=`` (the claim's registered
          margin) the record holds ``resolves``: ``paper_margin >= 2 se`` (then it is a tight
          null, not a noise floor);
        - ``"tight-null"``: the effect is resolved and small: needs ``effects=`` (one per
          seed), ``margin=`` (registered before the run) and ``margin_source=``; the record
          holds the 90% interval and ``equivalent``: whether it lies inside
          ``(-margin, margin)`` (TOST at 5%);
        - ``"official-code"``: the official implementation agrees on our instance; needs
          ``fixture=`` (the path of its recorded outputs under ``lab/core/official/``);
        - ``"deviation"``: needs ``deviation=``, the name of an entry of the chapter's
          deviations (its registry's ``deviations``, rendered on the reproduction page);
        - ``"open"``: none of these yet (allowed, counted and shown on the scorecard).
    evidence
        The sentence the page shows, built from measured values (required except for "open").
    **data
        The measured evidence (stored in the record, with what the engine computed from it).
    """
    if not isinstance(kind, str) or kind not in DIAGNOSES:
        raise ValueError(f"kind must be one of {', '.join(map(repr, DIAGNOSES))}, got {kind!r}")
    evidence = _text(evidence, "evidence", empty=kind == "open")
    data = dict(data)
    if kind == "scale":
        if "sizes" not in data or "values" not in data:
            raise ValueError("a 'scale' diagnosis needs sizes= and values= (the measured trend)")
        sizes, values = _numbers("sizes", data["sizes"]), _numbers("values", data["values"])
        if len(sizes) < 2 or len(sizes) != len(values):
            raise ValueError(
                "a 'scale' diagnosis needs two or more sizes and one value per size, got "
                f"{len(sizes)} sizes and {len(values)} values"
            )
        if len(sizes) >= 3 and "paper" in data:
            data["trend"] = _trend(sizes, values, float(data["paper"]))
    elif kind == "noise-floor":
        if "se" not in data:
            raise ValueError("a 'noise-floor' diagnosis needs se= (the standard error)")
        se = float(data["se"])
        if not se >= 0:
            raise ValueError(f"se must be a number >= 0, got {data['se']!r}")
        if "paper_margin" in data:
            data["resolves"] = not abs(float(data["paper_margin"])) < 2 * se
    elif kind == "tight-null":
        data["tost"] = _tost(data)
    elif kind == "official-code":
        _text(data.get("fixture", ""), "fixture")
    elif kind == "deviation":
        _text(data.get("deviation", ""), "deviation")
    return Diagnosis(kind, evidence or DIAGNOSES["open"], data)


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
