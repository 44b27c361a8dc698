"""Claims as records: a paper's statement, what we measured, and a verdict decided by a rule.

A chapter's claims table is not typed: each notebook *records* the claims it measures, where it
measures them, and the book renders the table from those records (``{claims}`` on the chapter
page, ``{scorecard}`` for the whole book, ``{claim}`` for a number in prose).

The verdict is decided by a :class:`Rule` that is written **before** the measurement, in the
cell that declares the claim, and the notebook states the verdict it expects. A measurement
that does not reproduce the paper is a recorded verdict ("not reproduced at this size"), not a
failing assertion; a verdict that differs from the expected one raises :class:`ClaimMismatch`,
so that a regression (or an improvement) stops the build and the page's prose is updated on
purpose. Assertion cells stay for what proves the *code* right.

Example (a notebook of the ``eos`` chapter)::

    from lab.core import claims
    C = claims.chapter("eos", full=FULL)
    rate = C.claim(
        "critical-rate",
        "At the critical step, the distance to the flattest minimiser decays like t^-1/2.",
        source="Thm 5.2",
        paper="Θ(t^-1/2)",
        rule=claims.rule(reproduced=claims.within(-0.5, abs=0.05),
                         qualitatively=claims.between(-0.7, -0.3)),
        expect="reproduced",
    )
    ...  # measure
    rate.record(fit.exponent, text=f"slope {fit.exponent:.3f}")

Each record is displayed as ``application/vnd.optlab.claim+json`` (the book's renderer turns it
into a claim card with an anchor that the chapter table links to) with a plain-text and an
HTML face for a live kernel.

See: ``book/eos/01-three-regimes.ipynb`` and CONTRIBUTING.md ("Claims").
"""

from __future__ import annotations

import html
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "CLAIM_MIME",
    "NOT_REPRODUCED",
    "QUALITATIVE",
    "REPRODUCED",
    "SOURCES_OURS",
    "VERDICTS",
    "Chapter",
    "Claim",
    "ClaimMismatch",
    "Condition",
    "Record",
    "Rule",
    "at_least",
    "at_most",
    "between",
    "chapter",
    "ci_above",
    "ci_below",
    "ci_within",
    "format_value",
    "holds",
    "rule",
    "within",
]

CLAIM_MIME = "application/vnd.optlab.claim+json"

REPRODUCED = "reproduced"
QUALITATIVE = "reproduced qualitatively"
NOT_REPRODUCED = "not reproduced at this size"
VERDICTS = (REPRODUCED, QUALITATIVE, NOT_REPRODUCED)
_VERDICT_ALIASES = {
    "reproduced": REPRODUCED,
    "qualitatively": QUALITATIVE,
    "reproduced qualitatively": QUALITATIVE,
    "qualitative": QUALITATIVE,
    "not reproduced": NOT_REPRODUCED,
    "not reproduced at this size": NOT_REPRODUCED,
}
SOURCES_OURS = "ours"

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


class ClaimMismatch(RuntimeError):
    """The verdict computed by a claim's rule differs from the verdict the notebook expects."""


def _verdict(value: Any, name: str = "expect") -> str:
    if not isinstance(value, str) or value.strip().lower() not in _VERDICT_ALIASES:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(v) for v in VERDICTS)} "
            f"(or 'qualitatively' / 'not reproduced'), got {value!r}"
        )
    return _VERDICT_ALIASES[value.strip().lower()]


def _is_bool(value: Any) -> bool:
    """A Python or numpy boolean (numpy 2 names its type ``bool``)."""
    return isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    )


def _real(value: Any, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        and not hasattr(value, "__float__")
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must be a number, got NaN")
    return out


# ----------------------------------------------------------------------------------------
# Conditions and rules
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """A test on a measured value with the sentence that describes it.

    ``test`` returns True when the measured value satisfies the condition; a value of the wrong
    kind (a NaN, a missing interval) never satisfies it.
    """

    text: str
    test: Callable[[Any], bool] = field(repr=False, compare=False)

    def __call__(self, measured: Any) -> bool:
        try:
            return bool(self.test(measured))
        except (TypeError, ValueError, IndexError, KeyError):
            return False


def _num(x: Any) -> float:
    v = float(x)
    if math.isnan(v):
        raise ValueError("NaN")
    return v


def within(target: float, *, rel: float | None = None, abs: float | None = None) -> Condition:  # noqa: A002
    """``|measured - target| <= tol``, with ``tol = max(abs, rel * |target|)``."""
    t = _real(target, "target")
    if rel is None and abs is None:
        raise ValueError("within() needs rel= or abs= (a tolerance >= 0)")
    r = 0.0 if rel is None else _real(rel, "rel")
    a = 0.0 if abs is None else _real(abs, "abs")
    if r < 0 or a < 0:
        raise ValueError(f"rel and abs must be >= 0, got rel={rel!r}, abs={abs!r}")
    tol = max(a, r * math.fabs(t))
    parts = []
    if abs is not None:
        parts.append(f"± {format_value(a)}")
    if rel is not None:
        parts.append(f"± {format_value(100 * r)}%")
    return Condition(
        f"within {' or '.join(parts)} of {format_value(t)}",
        lambda m: math.fabs(_num(m) - t) <= tol,
    )


def between(lo: float, hi: float) -> Condition:
    """``lo <= measured <= hi``."""
    a, b = _real(lo, "lo"), _real(hi, "hi")
    if a > b:
        raise ValueError(f"between() needs lo <= hi, got lo={lo!r}, hi={hi!r}")
    return Condition(f"in [{format_value(a)}, {format_value(b)}]", lambda m: a <= _num(m) <= b)


def at_least(x: float) -> Condition:
    """``measured >= x``."""
    a = _real(x, "x")
    return Condition(f"≥ {format_value(a)}", lambda m: _num(m) >= a)


def at_most(x: float) -> Condition:
    """``measured <= x``."""
    a = _real(x, "x")
    return Condition(f"≤ {format_value(a)}", lambda m: _num(m) <= a)


def holds(text: str = "the statement holds") -> Condition:
    """The measured value is the boolean ``True`` (a check that was run and passed)."""
    if not isinstance(text, str) or not text:
        raise TypeError("text must be a non-empty string")
    return Condition(text, lambda m: _is_bool(m) and bool(m))


def _ci(m: Any) -> tuple[float, float]:
    if isinstance(m, dict):
        lo, hi = m["lo"], m["hi"]
    else:
        lo, hi = m[-2], m[-1]
    return _num(lo), _num(hi)


def ci_within(lo: float, hi: float) -> Condition:
    """The measured confidence interval ``(lo_m, hi_m)`` (or ``(estimate, lo_m, hi_m)``, or a
    dict with ``lo``/``hi``) lies inside ``[lo, hi]``."""
    a, b = _real(lo, "lo"), _real(hi, "hi")
    if a > b:
        raise ValueError(f"ci_within() needs lo <= hi, got lo={lo!r}, hi={hi!r}")
    return Condition(
        f"confidence interval inside [{format_value(a)}, {format_value(b)}]",
        lambda m: a <= _ci(m)[0] and _ci(m)[1] <= b,
    )


def ci_above(x: float) -> Condition:
    """The whole measured confidence interval lies above ``x`` (excludes it)."""
    a = _real(x, "x")
    return Condition(f"confidence interval above {format_value(a)}", lambda m: _ci(m)[0] > a)


def ci_below(x: float) -> Condition:
    """The whole measured confidence interval lies below ``x`` (excludes it)."""
    a = _real(x, "x")
    return Condition(f"confidence interval below {format_value(a)}", lambda m: _ci(m)[1] < a)


@dataclass(frozen=True)
class Rule:
    """Tiers of conditions: the first that the measured value satisfies gives the verdict.

    ``reproduced`` and ``qualitatively`` are :class:`Condition`s (or None: that tier is never
    awarded); a value that satisfies neither is "not reproduced at this size".
    """

    reproduced: Condition | None = None
    qualitatively: Condition | None = None

    def decide(self, measured: Any) -> str:
        """The verdict for ``measured``."""
        if self.reproduced is not None and self.reproduced(measured):
            return REPRODUCED
        if self.qualitatively is not None and self.qualitatively(measured):
            return QUALITATIVE
        return NOT_REPRODUCED

    @property
    def text(self) -> str:
        """The rule in words (shown beside the verdict)."""
        parts = []
        if self.reproduced is not None:
            parts.append(f"reproduced if {self.reproduced.text}")
        if self.qualitatively is not None:
            parts.append(f"qualitatively if {self.qualitatively.text}")
        parts.append("otherwise not reproduced")
        return "; ".join(parts)


def rule(reproduced: Condition | None = None, qualitatively: Condition | None = None) -> Rule:
    """A verdict rule (see :class:`Rule`); at least one tier must be given."""
    for name, cond in (("reproduced", reproduced), ("qualitatively", qualitatively)):
        if cond is not None and not isinstance(cond, Condition):
            raise TypeError(
                f"{name} must be a Condition (within, between, at_least, at_most, holds, "
                f"ci_within, ci_above, ci_below), got {type(cond).__name__}"
            )
    if reproduced is None and qualitatively is None:
        raise ValueError("rule() needs a reproduced= or qualitatively= condition")
    return Rule(reproduced, qualitatively)


# ----------------------------------------------------------------------------------------
# Values
# ----------------------------------------------------------------------------------------
def format_value(value: Any, digits: int = 4) -> str:
    """A short, stable text for a measured value (``digits`` significant digits)."""
    if _is_bool(value):
        return "yes" if bool(value) else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float) or hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v == 0:
            return "0"
        if 1e-3 <= abs(v) < 1e5:
            return f"{v:.{digits}g}"
        mant, exp = f"{v:.{max(digits - 2, 1)}e}".split("e")
        return f"{mant}×10^{int(exp)}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {format_value(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(format_value(v, digits) for v in value) + ")"
    return str(value)


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


# ----------------------------------------------------------------------------------------
# Claims and records
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    """What a notebook recorded about one claim (the payload the book renders)."""

    chapter: str
    id: str
    statement: str
    source: str
    paper: str
    measured: Any
    text: str
    rule: str
    verdict: str
    expected: str
    size: str
    notes: str = ""

    @property
    def key(self) -> str:
        """``<chapter>/<id>``, unique in the book."""
        return f"{self.chapter}/{self.id}"

    def as_dict(self) -> dict:
        """The JSON payload (the ``application/vnd.optlab.claim+json`` output)."""
        return {**asdict(self), "key": self.key, "schema": 1}

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {
            CLAIM_MIME: self.as_dict(),
            "text/plain": self.summary(),
            "text/html": self._html(),
        }

    def summary(self) -> str:
        """One line: the claim, what was measured and the verdict."""
        return (
            f"claim {self.key} [{self.source}]: {self.statement}\n"
            f"  paper: {self.paper or '—'} | measured ({self.size}): {self.text}\n"
            f"  verdict: {self.verdict} (expected: {self.expected}) | rule: {self.rule}"
        )

    def _html(self) -> str:
        e = html.escape
        return (
            f'<div class="optlab-claim" id="claim-{e(self.chapter)}-{e(self.id)}" '
            'style="border-left:4px solid #888;padding:4px 10px;margin:6px 0">'
            f"<b>Claim {e(self.id)}</b> ({e(self.source)}): {e(self.statement)}<br>"
            f"paper: {e(self.paper or '—')} · measured ({e(self.size)}): {e(self.text)}<br>"
            f"<b>{e(self.verdict)}</b> <small>rule: {e(self.rule)}</small></div>"
        )


@dataclass
class Claim:
    """A claim declared before it is measured: its rule and expected verdict are fixed here.

    Create it with :meth:`Chapter.claim`; call :meth:`record` once the value is measured.
    """

    chapter: str
    id: str
    statement: str
    source: str
    paper: str
    rule: Rule
    expect: str
    expect_full: str | None
    full: bool
    display: bool = True
    recorded: Record | None = None

    def verdict_for(self, measured: Any) -> str:
        """The verdict the rule gives ``measured`` (nothing is recorded)."""
        return self.rule.decide(measured)

    def record(self, measured: Any, *, text: str | None = None, notes: str = "") -> None:
        """Record the measured value, decide the verdict, display the record.

        The record is displayed once (the claim card) and kept in :attr:`recorded`; nothing is
        returned, so a ``record(...)`` that ends a cell is not shown twice.

        Parameters
        ----------
        measured
            The measured value the rule tests (a number, a boolean, an interval...).
        text
            How the page shows the measurement (default: ``measured`` formatted); build it
            from computed values (an f-string), never type a number.
        notes
            An optional sentence shown under the claim (what was tried, the size used).

        Raises
        ------
        ClaimMismatch
            When the computed verdict differs from the expected one (at the default size; at
            ``full`` size only when ``expect_full`` was given, otherwise a warning).
        """
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if not isinstance(notes, str):
            raise TypeError(f"notes must be a string, got {type(notes).__name__}")
        verdict = self.rule.decide(measured)
        expected = self.expect_full if (self.full and self.expect_full) else self.expect
        rec = Record(
            chapter=self.chapter,
            id=self.id,
            statement=self.statement,
            source=self.source,
            paper=self.paper,
            measured=_jsonable(measured),
            text=text if text is not None else format_value(measured),
            rule=self.rule.text,
            verdict=verdict,
            expected=expected,
            size="full" if self.full else "default",
            notes=notes,
        )
        self.recorded = rec
        if self.display:
            try:
                from IPython.display import display

                display(rec)
            except ImportError:  # pragma: no cover - IPython is a dependency of the book
                pass
        if verdict != expected:
            message = (
                f"claim {rec.key}: the rule gives '{verdict}' but the notebook expects "
                f"'{expected}' (measured: {rec.text}; rule: {rec.rule}). Update the expected "
                "verdict and the page's prose on purpose; never move the rule."
            )
            if self.full and not self.expect_full:
                warnings.warn(message, stacklevel=2)
            elif os.environ.get("LAB_CLAIMS_MISMATCH", "error") == "warn":
                warnings.warn(message, stacklevel=2)
            else:
                raise ClaimMismatch(message)
        return None


@dataclass
class Chapter:
    """The claims of one chapter, as recorded by one notebook (see :func:`chapter`)."""

    slug: str
    full: bool = False
    display: bool = True
    claims: dict[str, Claim] = field(default_factory=dict)

    def claim(
        self,
        id: str,  # noqa: A002
        statement: str,
        *,
        source: str,
        rule: Rule,
        expect: str,
        paper: str = "",
        expect_full: str | None = None,
    ) -> Claim:
        """Declare a claim before measuring it.

        Parameters
        ----------
        id
            Stable name within the chapter (lowercase letters, digits and dashes).
        statement
            The claim in one sentence.
        source
            Where it comes from: "Thm 5.1", "Table 2", "Fig. 3", "abstract", or "ours".
        rule
            The verdict rule (:func:`rule`), written before the measurement.
        expect
            The verdict this notebook expects at the default size.
        paper
            The paper's number or statement ("Θ(t^-1/2)", "34.12%"); empty for "ours".
        expect_full
            The expected verdict at ``FULL`` size, when it has been measured.
        """
        if not isinstance(id, str) or not _NAME.match(id):
            raise ValueError(f"id must be lowercase letters, digits and dashes, got {id!r}")
        if id in self.claims:
            raise ValueError(f"claim id {id!r} is declared twice in chapter {self.slug!r}")
        for name, value in (("statement", statement), ("source", source)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if not isinstance(paper, str):
            raise TypeError(f"paper must be a string, got {type(paper).__name__}")
        if not isinstance(rule, Rule):
            raise TypeError(
                f"rule must be a Rule (use claims.rule(...)), got {type(rule).__name__}"
            )
        c = Claim(
            chapter=self.slug,
            id=id,
            statement=statement.strip(),
            source=source.strip(),
            paper=paper.strip(),
            rule=rule,
            expect=_verdict(expect),
            expect_full=None if expect_full is None else _verdict(expect_full, "expect_full"),
            full=self.full,
            display=self.display,
        )
        self.claims[id] = c
        return c

    def records(self) -> list[Record]:
        """The records made so far, in declaration order."""
        return [c.recorded for c in self.claims.values() if c.recorded is not None]

    def unrecorded(self) -> list[str]:
        """Ids of claims declared but never recorded (a notebook should end with none)."""
        return [k for k, c in self.claims.items() if c.recorded is None]


def chapter(slug: str, *, full: bool = False, display: bool = True) -> Chapter:
    """The claim recorder of chapter ``slug`` for one notebook run (``full`` = paper size)."""
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise ValueError(f"slug must be a chapter slug such as 'eos', got {slug!r}")
    if not _is_bool(full):
        raise TypeError(f"full must be a bool, got {type(full).__name__}")
    return Chapter(slug=slug, full=bool(full), display=bool(display))


def parse_records(outputs: Sequence[dict]) -> list[dict]:
    """The claim payloads found in a list of notebook outputs (used by the book's tooling)."""
    found = []
    for out in outputs:
        data = out.get("data", {}) if isinstance(out, dict) else {}
        if CLAIM_MIME in data:
            found.append(data[CLAIM_MIME])
    return found
