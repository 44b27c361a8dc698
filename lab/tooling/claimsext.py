"""Claims in the book: records from executed notebooks, rendered as tables, cards and numbers.

A notebook records its claims with :mod:`lab.core.claims`; each record is an output of mime type
``application/vnd.optlab.claim+json``. This Sphinx extension (``sphinx: extra_extensions`` in
``_config.yml``) turns them into the book's claims:

* :class:`ClaimRenderer` (a myst-nb mime renderer, entry point ``myst_nb.mime_renderers``) draws
  each record as a claim card in the notebook page, with the anchor ``claim-<chapter>-<id>``,
  and keeps the record in the build environment;
* ``{claims}`` (a directive, on a chapter page) renders the chapter's claims table: claim,
  source, paper, measured, verdict, and a link to the cell that measured it;
* ``{scorecard}`` (a directive, ``book/scorecard.md``) renders every chapter's verdicts;
* ``{claim}`` (a role) puts a record's measured text (``eos/critical-rate``) or one of its
  fields (``eos/critical-rate.verdict``, ``.paper``, ``.source``) into prose;

Records are read while the notebooks are read; tables, cards' links and roles are resolved when
the pages are written (``doctree-resolved``), after every notebook has been read, whatever the
order of the pages. The records of the build are also written to ``_static/claims.json``
(the contract test in ``tests/test_claims.py`` and researchers read it).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes

from lab.core.claims import (
    CLAIM_MIME,
    NOT_MEASURED,
    NOT_REPRODUCED,
    QUALITATIVE,
    REPRODUCED,
    format_value,
    margin_text,
)
from lab.tooling.chapters import claims_page
from lab.tooling.registryext import chapter_registry

__all__ = ["ClaimRenderer", "setup"]

HTML_BUILDERS = ("html", "dirhtml", "singlehtml")
VERDICT_CLASS = {
    REPRODUCED: "reproduced",
    QUALITATIVE: "qualitative",
    NOT_REPRODUCED: "not-reproduced",
    NOT_MEASURED: "not-measured",
}
VERDICT_SHORT = {
    REPRODUCED: "reproduced",
    QUALITATIVE: "qualitatively",
    NOT_REPRODUCED: "not reproduced",
    NOT_MEASURED: "not measured",
}
_KEY = re.compile(
    r"^(?:(?P<chapter>[a-z][a-z0-9_]*)/)?(?P<id>[a-z0-9][a-z0-9-]*)(?:\.(?P<field>[a-z]+))?$"
)
FLAG_TEXT = {
    "sign-test": "a threshold at 0 or 1 decided on one number, without an interval over seeds",
}
_FIELDS = ("text", "verdict", "paper", "source", "statement", "rule", "measured", "expected")


def _anchor(chapter: str, cid: str) -> str:
    return f"claim-{chapter}-{cid}"


def _env_records(env: Any) -> dict[str, list[dict]]:
    if not hasattr(env, "optlab_claims"):
        env.optlab_claims = {}
    return env.optlab_claims


# ----------------------------------------------------------------------------------------
# Notebook side: the claim card
# ----------------------------------------------------------------------------------------
def control_text(rec: dict) -> str:
    """What stands beside a verdict: for each control, what the claim's rule said of it
    ("rejects: <control>, <value> (<verdict>)" when the rival does worse, "rival at least as
    good: ..." when it does as well or better, :func:`lab.core.claims.rivals_as_good`), then
    "<diagnosis kind>: <evidence>"; "" when there is neither (the card, the chapter table and
    the scorecard)."""
    from lab.core.claims import rivals_as_good

    as_good = {id(c) for c in rivals_as_good(rec)}
    parts = []
    for c in rec.get("controls") or []:
        said = "rival at least as good" if id(c) in as_good else "rule rejects"
        if "as_good" in c and id(c) not in as_good:
            said = "rival judged"
        short = VERDICT_SHORT.get(c.get("verdict"), c.get("verdict", ""))
        pair = c.get("paired")
        paired = (
            f"; method - rival {format_value(pair['mean'], 3)} [{format_value(pair['lo'], 3)}, "
            f"{format_value(pair['hi'], 3)}] over {pair['n']}: {pair['judgement']}"
            if pair
            else ""
        )
        parts.append(f"{said}: {c.get('name', '')}, {c.get('text', '')} ({short}{paired})")
    if rec.get("no_rival") and not rec.get("controls"):
        parts.append(f"no rival at this size: {rec['no_rival']}")
    dx = rec.get("diagnosis")
    if dx:
        parts.append(f"{dx.get('kind', '')}: {dx.get('evidence', '')}{diagnosis_check(dx)}")
    return "; ".join(parts)


def diagnosis_check(dx: dict) -> str:
    """What the engine's check of a diagnosis's evidence found against it (or "")."""
    data = dx.get("data") or {}
    if dx.get("kind") == "noise-floor" and data.get("resolves"):
        return " [check: the seeds resolve the paper's margin (2 SE below it): a tight null]"
    if dx.get("kind") == "scale" and (data.get("trend") or {}).get("toward_paper") is False:
        return " [check: the fitted trend over sizes does not point toward the paper]"
    if dx.get("kind") == "tight-null" and (data.get("tost") or {}).get("equivalent") is False:
        return " [check: the 90% interval is not inside the registered margin]"
    return ""


def diagnosis_of(rec: dict) -> str | None:
    """The diagnosis kind of a record whose verdict is not reproduced (``missing`` when it has
    none), None for a reproduced one."""
    if rec.get("verdict") == REPRODUCED:
        return None
    return (rec.get("diagnosis") or {}).get("kind") or "missing"


def _card_html(rec: dict) -> str:
    e = html.escape
    verdict = rec.get("verdict", "")
    cls = VERDICT_CLASS.get(verdict, "unknown")
    notes = f'<div class="optlab-claim-notes">{e(rec["notes"])}</div>' if rec.get("notes") else ""
    paper = e(rec.get("paper") or "—")
    beside_html = ""
    if rec.get("controls") or rec.get("no_rival"):
        only = dict(rec, diagnosis=None)
        beside_html += (
            f'<div class="optlab-claim-control"><b>control</b>: {e(control_text(only))}</div>'
        )
    if rec.get("diagnosis"):
        only = dict(rec, controls=[], no_rival="")
        dx = rec["diagnosis"]
        link = ""
        name = (dx.get("data") or {}).get("deviation")
        reg = chapter_registry(rec["chapter"]) if dx.get("kind") == "deviation" else None
        page = claims_page(rec["chapter"]) if reg is not None else None
        if page is not None and name in reg.deviations and "{deviations}" in page.read_text():
            anchor = f"deviation-{rec['chapter']}-{dx['data']['deviation']}"
            link = f' (<a href="{page.stem}.html#{e(anchor)}">the deviation</a>)'
        beside_html += (
            f'<div class="optlab-claim-diagnosis"><b>diagnosis</b>: {e(control_text(only))}'
            f"{link}</div>"
        )
    flags = "".join(
        f'<div class="optlab-claim-flag">{e(FLAG_TEXT.get(f, f))}</div>'
        for f in rec.get("flags") or []
    )
    revised = "".join(
        f'<div class="optlab-claim-revised">rule revised {e(r.get("date", ""))}: '
        f"{e(r.get('old', ''))} → {e(r.get('new', ''))} (known then: {e(r.get('known', ''))})</div>"
        for r in rec.get("revised") or []
    )
    warning = (
        f'<div class="optlab-claim-warning">this run: {e(verdict)}; the book\'s build: '
        f"{e(rec.get('expected', ''))}</div>"
        if rec.get("mismatch")
        else ""
    )
    return (
        f'<div class="optlab-claim optlab-claim-{cls}" id="{_anchor(rec["chapter"], rec["id"])}">'
        f'<div class="optlab-claim-head"><span class="optlab-verdict optlab-verdict-{cls}">'
        f"{e(verdict)}</span> <b>Claim</b> <code>{e(rec['chapter'])}/{e(rec['id'])}</code>"
        f" · {e(rec.get('source', ''))}</div>"
        f'<div class="optlab-claim-statement">{e(rec.get("statement", ""))}</div>'
        f'<div class="optlab-claim-values"><span>paper: {paper}</span>'
        f"<span>measured ({e(rec.get('size', 'default'))}): {e(rec.get('text', ''))}</span></div>"
        f'<div class="optlab-claim-rule">rule, fixed before measuring: {e(rec.get("rule", ""))}'
        f" · {e(margin_text(rec.get('margin')))}</div>"
        f"{beside_html}{flags}{notes}{revised}{warning}</div>"
    )


class ClaimRenderer:
    """myst-nb mime renderer for ``application/vnd.optlab.claim+json`` (the claim card)."""

    mime_priority_overrides: ClassVar[Sequence[tuple[str, str, int | None]]] = tuple(
        (builder, CLAIM_MIME, 1) for builder in HTML_BUILDERS
    )

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        """Render a claim record and keep it in the environment; None for other mime types."""
        if data.mime_type != CLAIM_MIME:
            return None
        rec = data.content
        if isinstance(rec, str):
            rec = json.loads(rec)
        missing = [k for k in ("chapter", "id", "verdict", "statement", "source") if k not in rec]
        if missing:
            renderer.logger.warning(
                f"claim record without {', '.join(missing)}", subtype="claims", line=data.line
            )
            return []
        env = getattr(renderer.renderer, "sphinx_env", None)
        if env is not None:
            rec = dict(rec, docname=env.docname, cell_index=data.cell_index)
            docrecs = _env_records(env).setdefault(env.docname, [])
            # myst-nb may render an output more than once: keep one record per (cell, id)
            docrecs[:] = [
                r for r in docrecs if (r["cell_index"], r["id"]) != (data.cell_index, rec["id"])
            ]
            docrecs.append(rec)
        return [nodes.raw(text=_card_html(rec), format="html")]


# ----------------------------------------------------------------------------------------
# Page side: placeholders resolved once every notebook has been read
# ----------------------------------------------------------------------------------------
class claims_table(nodes.General, nodes.Element):
    """Placeholder for ``{claims}``: replaced by the chapter's table."""


class scorecard(nodes.General, nodes.Element):
    """Placeholder for ``{scorecard}``: replaced by the book's scorecard."""


class claim_ref(nodes.Inline, nodes.TextElement):
    """Placeholder for ``{claim}``: replaced by a record's field."""


def _chapter_of(docname: str) -> str | None:
    parts = docname.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "book" else None


def _directives():
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective

    class ClaimsDirective(SphinxDirective):
        """``{claims}``: the chapter's claims table (option ``:chapter:`` defaults to the page's)."""

        has_content = False
        option_spec: ClassVar[dict] = {"chapter": directives.unchanged}

        def run(self) -> list:
            slug = self.options.get("chapter") or _chapter_of(self.env.docname)
            if not slug:
                raise self.error("{claims} needs :chapter: outside book/<slug>/ pages")
            node = claims_table(chapter=slug)
            self.env.optlab_claim_pages = getattr(self.env, "optlab_claim_pages", set())
            self.env.optlab_claim_pages.add(self.env.docname)
            return [node]

    class ScorecardDirective(SphinxDirective):
        """``{scorecard}``: every chapter's claims and verdicts."""

        has_content = False

        def run(self) -> list:
            self.env.optlab_claim_pages = getattr(self.env, "optlab_claim_pages", set())
            self.env.optlab_claim_pages.add(self.env.docname)
            return [scorecard()]

    return ClaimsDirective, ScorecardDirective


def claim_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{claim}`<chapter>/<id>[.field]```: a field of a claim record (default: measured text)."""
    m = _KEY.match(text.strip())
    env = inliner.document.settings.env
    if not m or (m.group("field") and m.group("field") not in _FIELDS):
        msg = inliner.reporter.error(
            f"{{claim}} expects <chapter>/<id>[.{'|'.join(_FIELDS)}], got {text!r}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    chapter = m.group("chapter") or _chapter_of(env.docname)
    node = claim_ref(
        rawtext, "", key=f"{chapter}/{m.group('id')}", field=m.group("field") or "text"
    )
    env.optlab_claim_pages = getattr(env, "optlab_claim_pages", set())
    env.optlab_claim_pages.add(env.docname)
    return [node], []


# ----------------------------------------------------------------------------------------
# Resolution
# ----------------------------------------------------------------------------------------
def _all_records(env: Any) -> list[dict]:
    from lab.tooling.chapters import chapters

    order = {slug: i for i, slug in enumerate(chapters(Path(env.srcdir)))}
    recs = [r for docrecs in _env_records(env).values() for r in docrecs]
    return sorted(
        recs, key=lambda r: (order.get(r["chapter"], 999), r["docname"], r.get("cell_index") or 0)
    )


def link_node(app: Any, fromdoc: str, rec: dict, text: str):
    uri = (
        app.builder.get_relative_uri(fromdoc, rec["docname"])
        + "#"
        + _anchor(rec["chapter"], rec["id"])
    )
    ref = nodes.reference("", "", internal=True, refuri=uri)
    ref += nodes.Text(text)
    return ref


def verdict_node(verdict: str):
    cls = VERDICT_CLASS.get(verdict, "unknown")
    return nodes.inline("", verdict, classes=["optlab-verdict", f"optlab-verdict-{cls}"])


def table_node(headers: list[str], rows: list[list[Any]], widths: list[int], classes: list[str]):
    table = nodes.table(classes=classes)
    tgroup = nodes.tgroup(cols=len(headers))
    table += tgroup
    for w in widths:
        tgroup += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    tgroup += thead
    hrow = nodes.row()
    for h in headers:
        entry = nodes.entry()
        entry += nodes.paragraph(text=h)
        hrow += entry
    thead += hrow
    tbody = nodes.tbody()
    tgroup += tbody
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            for piece in cell if isinstance(cell, list) else [cell]:
                para += nodes.Text(piece) if isinstance(piece, str) else piece
            entry += para
            row += entry
        tbody += row
    return table


def _notebook_label(env: Any, docname: str) -> str:
    name = docname.rsplit("/", 1)[-1]
    num = name.split("-", 1)[0]
    return f"notebook {int(num)}" if num.isdigit() else name


def _chapter_table(app: Any, fromdoc: str, recs: list[dict]):
    rows = []
    for r in recs:
        claim = [nodes.Text(r["statement"] + " "), nodes.literal(text=r["id"])]
        verdict = [
            verdict_node(r["verdict"]),
            nodes.Text(" "),
            link_node(app, fromdoc, r, _notebook_label(app.env, r["docname"])),
        ]
        rows.append(
            [
                claim,
                r.get("source", ""),
                r.get("paper") or "—",
                r.get("text", ""),
                verdict,
                control_text(r) or "—",
            ]
        )
    return table_node(
        ["claim", "source", "paper", "measured (default size)", "verdict (cell)", "control / why"],
        rows,
        [28, 8, 12, 22, 11, 19],
        ["optlab-claims"],
    )


def resolve(app: Any, doctree: Any, docname: str) -> None:
    """doctree-resolved: replace the placeholders by tables, scorecard and numbers."""
    from sphinx.util import logging

    from lab.tooling.scorecard import scorecard_nodes

    logger = logging.getLogger(__name__)
    env = app.env
    recs = _all_records(env)
    by_key: dict[str, dict] = {}
    for r in recs:
        by_key[f"{r['chapter']}/{r['id']}"] = r
    for node in list(doctree.findall(claims_table)):
        crecs = [r for r in recs if r["chapter"] == node["chapter"]]
        if not crecs:
            logger.warning(
                f"{{claims}}: no claim records for chapter {node['chapter']!r} in this build",
                location=node,
                type="optlab",
                subtype="claims",
            )
            node.replace_self([])
            continue
        node.replace_self(_chapter_table(app, docname, crecs))
    for node in list(doctree.findall(scorecard)):
        node.replace_self(scorecard_nodes(app, docname, recs))
    for node in list(doctree.findall(claim_ref)):
        rec = by_key.get(node["key"])
        if rec is None:
            logger.warning(
                f"{{claim}}: no record {node['key']!r} in this build",
                location=node,
                type="optlab",
                subtype="claims",
            )
            node.replace_self(nodes.Text(node.rawsource))
            continue
        value = rec.get(node["field"], "")
        if node["field"] == "verdict":
            node.replace_self(verdict_node(value))
        else:
            node.replace_self(nodes.inline("", str(value), classes=["optlab-claim-value"]))


def _check_unique(app: Any, env: Any) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    seen: dict[str, str] = {}
    for r in _all_records(env):
        key = f"{r['chapter']}/{r['id']}"
        if key in seen:
            logger.warning(
                f"claim {key} is recorded twice ({seen[key]} and {r['docname']})",
                type="optlab",
                subtype="claims",
            )
        seen[key] = r["docname"]


def _outdated(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """Pages with claims placeholders are rewritten whenever a notebook is re-read."""
    if added or changed or removed:
        return sorted(getattr(env, "optlab_claim_pages", set()) - set(changed) - set(added))
    return []


def _purge(app: Any, env: Any, docname: str) -> None:
    _env_records(env).pop(docname, None)
    getattr(env, "optlab_claim_pages", set()).discard(docname)


def _merge(app: Any, env: Any, docnames: Any, other: Any) -> None:
    mine = _env_records(env)
    for doc, recs in getattr(other, "optlab_claims", {}).items():
        if doc in docnames:
            mine[doc] = recs
    env.optlab_claim_pages = getattr(env, "optlab_claim_pages", set()) | getattr(
        other, "optlab_claim_pages", set()
    )


def _write_json(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from lab.tooling.claimsjson import write_build

    # claims.json (schema 2: the records and the environment) and claims.schema.json beside it
    recs = [{k: v for k, v in r.items() if k != "cell_index"} for r in _all_records(app.env)]
    write_build(app.outdir, recs)
    css = Path(__file__).with_name("claims.css")
    (Path(app.outdir) / "_static" / "optlab-claims.css").write_text(css.read_text())


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: ``sphinx: extra_extensions: [lab.tooling.claimsext]``."""
    claims_directive, scorecard_directive = _directives()
    for node in (claims_table, scorecard, claim_ref):
        app.add_node(node)
    app.add_directive("claims", claims_directive)
    app.add_directive("scorecard", scorecard_directive)
    app.add_role("claim", claim_role)
    app.connect("env-updated", _check_unique)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-resolved", resolve)
    app.connect("build-finished", _write_json)
    app.add_css_file("optlab-claims.css")
    from lab import __version__

    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
