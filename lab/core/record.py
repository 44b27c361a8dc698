"""A claim's record: what a notebook recorded about one claim, the payload the book renders
(re-exported by :mod:`lab.core.claims`)."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from .rules import format_value

__all__ = ["CLAIM_MIME", "RECORD_SCHEMA", "Record", "margin_text"]

CLAIM_MIME = "application/vnd.optlab.claim+json"
#: version of a record's payload: 2 added ``controls``, ``diagnosis`` and ``flags``; 3 added
#: ``margin`` (distance to the nearest tier boundary) and ``mismatch`` (a verdict that differs
#: from the book's, shown as a warning card outside the book's build); 4 added ``no_rival`` and
#: a control's paired judgement (``paired``, ``as_good``)
RECORD_SCHEMA = 4


def margin_text(margin: dict | None) -> str:
    """A record's margin in words: "margin 3.1 SE to the nearest tier boundary", "margin 12%
    (relative) ...", "exact (a check that ran)" or "margin unknown"."""
    if margin is not None and not isinstance(margin, dict):
        raise TypeError(
            f"margin must be a record's margin dict or None, got {type(margin).__name__}"
        )
    if not margin:
        return "margin unknown"
    if margin.get("unit") == "exact":
        return "exact (a check that ran)"
    if margin.get("unit") == "unmeasured":
        return "nothing measured"
    value = margin.get("value")
    if margin.get("unit") == "se":
        return f"margin {format_value(value, 2)} SE to the nearest tier boundary"
    return f"margin {format_value(100 * value, 2)}% (relative) to the nearest tier boundary"


@dataclass(frozen=True)
class Record:
    """What a notebook recorded about one claim (the payload the book renders).

    ``controls`` holds each control's ``name``, ``measured``, ``text`` and ``verdict`` (decided
    by the claim's rule); ``diagnosis`` is ``{"kind", "evidence", "data"}`` for a verdict other
    than reproduced (None otherwise or when none was given); ``flags`` lists what the rule's
    reading of the value calls for (``sign-test``: a threshold at 0 or 1 on one number).
    """

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
    controls: list = field(default_factory=list)
    diagnosis: dict | None = None
    flags: list = field(default_factory=list)
    margin: dict | None = None
    mismatch: list = field(default_factory=list)
    revised: list = field(default_factory=list)
    no_rival: str = ""

    @property
    def key(self) -> str:
        """``<chapter>/<id>``, unique in the book."""
        return f"{self.chapter}/{self.id}"

    def as_dict(self) -> dict:
        """The JSON payload (the ``application/vnd.optlab.claim+json`` output)."""
        return {**asdict(self), "key": self.key, "schema": RECORD_SCHEMA}

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {
            CLAIM_MIME: self.as_dict(),
            "text/plain": self.summary(),
            "text/html": self._html(),
        }

    def _beside(self) -> str:
        """The control(s) and what the rule said, or the diagnosis (one line, or empty)."""
        if self.controls:
            return "; ".join(
                f"control {c['name']}: {c['text']} ({c['verdict']}"
                + (f"; {c['paired']['judgement']}" if c.get("paired") else "")
                + ")"
                for c in self.controls
            )
        if self.no_rival:
            return f"no rival at this size: {self.no_rival}"
        if self.diagnosis:
            return f"diagnosis {self.diagnosis['kind']}: {self.diagnosis['evidence']}"
        return ""

    def margin_text(self) -> str:
        """The margin in words (see :func:`margin_text`)."""
        return margin_text(self.margin)

    def _warning(self) -> str:
        """The mismatch in words: this run's verdict against the book's build (or empty)."""
        if not self.mismatch:
            return ""
        return (
            f"this run: {self.verdict}; the book's build: {self.expected}; rule: {self.rule}; "
            f"{self.margin_text()}. Your machine's numerics, seeds or size differ from the "
            "book's build (`lab claims --compare` shows what)."
        )

    def summary(self) -> str:
        """One line: the claim, what was measured and the verdict."""
        beside = self._beside()
        warning = self._warning()
        return (
            (f"WARNING {warning}\n" if warning else "")
            + f"claim {self.key} [{self.source}]: {self.statement}\n"
            f"  paper: {self.paper or '—'} | measured ({self.size}): {self.text}\n"
            f"  verdict: {self.verdict} (expected: {self.expected}) | rule: {self.rule} | "
            f"{self.margin_text()}"
            + (f"\n  {beside}" if beside else "")
            + "".join(
                f"\n  rule revised {r['date']}: {r['old']} -> {r['new']} (known: {r['known']})"
                for r in self.revised
            )
        )

    def _html(self) -> str:
        e = html.escape
        beside = self._beside()
        return (
            f'<div class="optlab-claim" id="claim-{e(self.chapter)}-{e(self.id)}" '
            'style="border-left:4px solid #888;padding:4px 10px;margin:6px 0">'
            f"<b>Claim {e(self.id)}</b> ({e(self.source)}): {e(self.statement)}<br>"
            f"paper: {e(self.paper or '—')} · measured ({e(self.size)}): {e(self.text)}<br>"
            f"<b>{e(self.verdict)}</b> <small>rule: {e(self.rule)}; "
            f"{e(self.margin_text())}</small>"
            + (f"<br><small>{e(beside)}</small>" if beside else "")
            + (
                '<div class="optlab-claim-warning" style="background:#fff3cd;color:#664d03;'
                f'padding:4px 8px;margin-top:4px">⚠ {e(self._warning())}</div>'
                if self.mismatch
                else ""
            )
            + "</div>"
        )
