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

import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence import (
    DIAGNOSES,
    Control,
    Diagnosis,
    _jsonable,
    _text,
    control,
    diagnosis,
    judge_rival,
    revision,
    rivals_as_good,
)
from .record import CLAIM_MIME, RECORD_SCHEMA, Record, margin_text
from .rules import (
    NOT_MEASURED,
    NOT_REPRODUCED,
    QUALITATIVE,
    REPRODUCED,
    VERDICTS,
    Condition,
    Rule,
    _is_bool,
    at_least,
    at_most,
    between,
    ci_above,
    ci_below,
    ci_outside,
    ci_within,
    format_value,
    holds,
    paired,
    rule,
    within,
)

__all__ = [
    "CLAIM_MIME",
    "DIAGNOSES",
    "MISMATCH_MODES",
    "NOT_MEASURED",
    "NOT_REPRODUCED",
    "QUALITATIVE",
    "RECORD_SCHEMA",
    "REPRODUCED",
    "SOURCES_OURS",
    "VERDICTS",
    "Chapter",
    "Claim",
    "ClaimMismatch",
    "Condition",
    "Control",
    "Diagnosis",
    "Record",
    "Rule",
    "at_least",
    "at_most",
    "between",
    "chapter",
    "ci_above",
    "ci_below",
    "ci_outside",
    "ci_within",
    "control",
    "diagnosis",
    "format_value",
    "holds",
    "is_paper_sourced",
    "judge_rival",
    "margin_text",
    "mismatch_mode",
    "paired",
    "revision",
    "rivals_as_good",
    "rule",
    "within",
]

#: ``LAB_CLAIMS_MISMATCH``: ``error`` (the book's own build: make test, make book, .ci/run) raises
#: :class:`ClaimMismatch`; ``warn`` (the default: a reader's kernel, Colab, Binder) records the
#: difference and shows it on the card
MISMATCH_MODES = ("warn", "error")

_VERDICT_ALIASES = {
    "reproduced": REPRODUCED,
    "qualitatively": QUALITATIVE,
    "reproduced qualitatively": QUALITATIVE,
    "qualitative": QUALITATIVE,
    "not reproduced": NOT_REPRODUCED,
    "not reproduced at this size": NOT_REPRODUCED,
    "not measured": NOT_MEASURED,
    "not measured on this hardware": NOT_MEASURED,
}
SOURCES_OURS = "ours"

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


class ClaimMismatch(RuntimeError):
    """The verdict computed by a claim's rule differs from the verdict the notebook expects,
    or the rule also reproduces the claim's control (it cannot discriminate)."""


def _verdict(value: Any, name: str = "expect") -> str:
    if not isinstance(value, str) or value.strip().lower() not in _VERDICT_ALIASES:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(v) for v in VERDICTS)} "
            f"(or 'qualitatively' / 'not reproduced'), got {value!r}"
        )
    return _VERDICT_ALIASES[value.strip().lower()]


def mismatch_mode() -> str:
    """``LAB_CLAIMS_MISMATCH`` (default ``warn``; the book's build sets ``error``).

    Verdicts are defined on the x86 CPU path: on arm64 or where ``lab.device()`` is CUDA (TF32
    on by default) the mode is ``warn`` whatever is set: such a run records its verdicts and
    shows the card where one differs, and the build never decides on them.
    """
    mode = os.environ.get("LAB_CLAIMS_MISMATCH", "warn").strip().lower() or "warn"
    if mode not in MISMATCH_MODES:
        raise ValueError(f"LAB_CLAIMS_MISMATCH must be 'warn' or 'error', got {mode!r}")
    if mode == "error" and not _verdicts_defined_here():
        return "warn"
    return mode


def _verdicts_defined_here() -> bool:
    """The x86 CPU path, where the book's verdicts are defined."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    from lab.core.runtime import device

    try:
        return device().type == "cpu"
    except ValueError:
        return True


def is_paper_sourced(source: str) -> bool:
    """True unless the claim is the chapter's own (``"ours"``) or a contrast with other work
    (``"contrast: ..."``)."""
    s = _text(source, "source").lower()
    return s != SOURCES_OURS and not s.startswith("contrast")


# ----------------------------------------------------------------------------------------
# Claims and records
# ----------------------------------------------------------------------------------------
def _controls(control: Any) -> list[Control]:
    if control is None:
        return []
    items = [control] if isinstance(control, Control) else control
    if not isinstance(items, (list, tuple)) or not all(isinstance(c, Control) for c in items):
        raise TypeError(
            f"control must be a claims.control(...) or a list of them, got {type(control).__name__}"
        )
    return list(items)


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
    revised: tuple = ()
    equivalence: float | None = None
    no_rival: str = ""
    deviations: tuple[str, ...] | None = None

    def verdict_for(self, measured: Any) -> str:
        """The verdict the rule gives ``measured`` (nothing is recorded)."""
        return self.rule.decide(measured)

    def _judge(self, c: Control) -> dict:
        """A control's record: its value and verdict under the claim's rule, and with paired
        differences, the interval judgement (:func:`lab.core.evidence.judge_rival`)."""
        out = {
            "name": c.name,
            "measured": _jsonable(c.measured),
            "text": c.text,
            "verdict": self.rule.decide(c.measured),
        }
        if c.paired is not None:
            judged = judge_rival(c.paired, self.equivalence)
            out["as_good"] = judged.pop("as_good")
            out["paired"] = judged
        return out

    def record(
        self,
        measured: Any,
        *,
        text: str | None = None,
        notes: str = "",
        control: Control | Sequence[Control] | None = None,
        diagnosis: Diagnosis | None = None,
    ) -> None:
        """Record the measured value, decide the verdict, display the record.

        The record is displayed once (the claim card) and kept in :attr:`recorded`; nothing is
        returned, so a ``record(...)`` that ends a cell is not shown twice.

        Parameters
        ----------
        measured
            The measured value the rule tests (a number, a boolean, an interval...; two
            stochastic methods compare through :func:`paired`).
        text
            How the page shows the measurement (default: ``measured`` formatted); build it
            from computed values (an f-string), never type a number.
        notes
            An optional sentence shown under the claim (what was tried, the size used).
        control
            The nearest rival(s) (:func:`control`), judged by the same rule and, when measured
            with ``paired=`` differences, by their interval (a rival at least as good is
            reported on the card and the scorecard). A paper-sourced claim that reproduces
            needs a rival that its rule rejects or that is judged by paired differences.
        diagnosis
            Why a verdict other than reproduced came out (:func:`diagnosis`); ignored when the
            verdict is reproduced.

        Raises
        ------
        ClaimMismatch
            When the computed verdict differs from the expected one (at the default size; at
            ``full`` size only when ``expect_full`` was given, otherwise a warning), or when a
            reproduced paper claim's unpaired control reproduces too.
        ValueError
            When a ``deviation`` diagnosis names no registered deviation of the chapter.
        """
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if not isinstance(notes, str):
            raise TypeError(f"notes must be a string, got {type(notes).__name__}")
        controls = _controls(control)
        if diagnosis is not None and not isinstance(diagnosis, Diagnosis):
            raise TypeError(
                f"diagnosis must be a claims.diagnosis(...), got {type(diagnosis).__name__}"
            )
        verdict = self.rule.decide(measured)
        expected = self.expect_full if (self.full and self.expect_full) else self.expect
        judged = [self._judge(c) for c in controls]
        if diagnosis is not None and diagnosis.kind == "deviation" and self.deviations is not None:
            if diagnosis.data["deviation"] not in self.deviations:
                raise ValueError(
                    f"claim {self.chapter}/{self.id}: the deviation "
                    f"{diagnosis.data['deviation']!r} is not one of the chapter's registered "
                    f"deviations {list(self.deviations)}"
                )
        flags = self.rule.flags(measured)
        problems = []
        if verdict != expected:
            problems.append(
                f"claim {self.chapter}/{self.id}: the rule gives '{verdict}' but the notebook "
                f"expects '{expected}' (measured: {text if text is not None else measured}; rule: "
                f"{self.rule.text}). Update the expected verdict and the page's prose on purpose; "
                "never move the rule."
            )
        rivals = [c for c in judged if c["verdict"] == REPRODUCED and "paired" not in c]
        if verdict == REPRODUCED and is_paper_sourced(self.source) and rivals:
            problems.append(
                f"claim {self.chapter}/{self.id}: the rule also reproduces the control "
                f"'{rivals[0]['name']}' ({rivals[0]['text']}): it cannot tell the method from "
                "its rival. Re-specify the claim (a sharper rule, fixed before measuring) or "
                "the control."
            )
        strict = mismatch_mode() == "error" and not (self.full and not self.expect_full)
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
            controls=judged,
            diagnosis=None if verdict == REPRODUCED or diagnosis is None else diagnosis.as_dict(),
            flags=flags,
            margin=self.rule.margin(measured),
            mismatch=[] if strict else problems,
            revised=[dict(r) for r in self.revised],
            no_rival=self.no_rival if not judged else "",
        )
        self.recorded = rec
        if self.display:
            try:
                from IPython.display import display

                display(rec)
            except ImportError:  # pragma: no cover - IPython is a dependency of the book
                pass
        for message in problems:
            if strict:
                raise ClaimMismatch(message)
            warnings.warn(message, stacklevel=2)
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
        revised: Sequence[dict] = (),
        equivalence: float | None = None,
        no_rival: str = "",
        deviations: Sequence[str] | None = None,
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
        revised
            Disclosed changes of the rule, seeds or size (:func:`revision`), oldest first;
            the card shows them.
        equivalence
            The registered equivalence margin (> 0) within which a rival measured with paired
            differences counts as "as good" (:func:`lab.core.evidence.judge_rival`).
        no_rival
            Why no honest rival exists at our size (shown on the card when no control is
            recorded, counted on the scorecard).
        deviations
            The chapter's registered deviation names (a ``deviation`` diagnosis must name one).
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
        if isinstance(revised, (str, dict)) or not all(
            isinstance(r, dict) and set(r) == {"date", "old", "new", "known"} for r in revised
        ):
            raise TypeError("revised must be a list of claims.revision(...) entries")
        if equivalence is not None and not (
            isinstance(equivalence, (int, float)) and not _is_bool(equivalence) and equivalence > 0
        ):
            raise ValueError(f"equivalence must be a number > 0 or None, got {equivalence!r}")
        if not isinstance(no_rival, str):
            raise TypeError(f"no_rival must be a string, got {type(no_rival).__name__}")
        c = Claim(
            equivalence=None if equivalence is None else float(equivalence),
            no_rival=no_rival.strip(),
            deviations=None if deviations is None else tuple(deviations),
            revised=tuple(revised),
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

    def __getitem__(self, cid: str) -> Claim:
        """The declared claim ``cid`` (a registry's notebook records ``C[cid].record(...)``)."""
        try:
            return self.claims[cid]
        except KeyError:
            raise KeyError(
                f"chapter {self.slug!r} declares no claim {cid!r} in this notebook; declared: "
                f"{sorted(self.claims)}"
            ) from None

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
