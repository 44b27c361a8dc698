"""Benchmark numbers in the book: the ``{optlab-benchmarks}`` directive and the ``{bench}`` role.

``{bench}`` puts a number from ``benchmarks/results/<slug>-cpu.json`` into any page's prose:
``{bench}`eos/0/ratios.fast_vs_reference``, ``{bench}`halo/1/rows.fast.seconds|.3g``
(:func:`bench_value` reads the field).

``book/performance.md`` holds ``{optlab-benchmarks}`` with ``:kind: cpu`` or ``:kind: gpu``; at
build time :class:`BenchmarksDirective` turns ``benchmarks/results/<slug>-<kind>.json`` into
tables and a speed-up plot (:func:`lab.tooling.perf.page_markdown`, drawn with
:func:`lab.tooling.mime.figure_html`), and makes the page depend on those files so that a rerun
of ``make bench`` rebuilds it. The pages that hold the directive are remembered in the build
environment (merged across parallel readers, purged on re-read) so that
:func:`plotly_on_benchmark_pages` loads plotly.js on them. :mod:`lab.tooling.sphinxext` wires it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from lab.tooling.assets import PLOTLY_JS
from lab.tooling.mime import figure_html

__all__ = [
    "BenchmarksDirective",
    "bench_role",
    "bench_value",
    "merge_plotly_pages",
    "plotly_on_benchmark_pages",
    "purge_plotly_pages",
]


class BenchmarksDirective(SphinxDirective):
    """``{optlab-benchmarks}`` with option ``:kind: cpu|gpu``: tables and a speed-up plot."""

    has_content = False
    option_spec = {"kind": lambda v: directives.choice(v, ("cpu", "gpu"))}

    def run(self) -> list:
        from lab.tooling import perf

        kind = self.options.get("kind", "cpu")
        root = Path(self.env.srcdir)
        # rebuild this page whenever a results file changes
        for path in sorted((root / "benchmarks" / "results").glob(f"*-{kind}.json")):
            self.env.note_dependency(str(path))
        text, figure = perf.page_markdown(kind, root)
        container = nodes.container(classes=["optlab-benchmarks"])
        if figure is not None:
            html = figure_html(figure, f"optlab-bench-{kind}", kind="plotly")
            container += nodes.raw(text=html, format="html")
            self.env.optlab_plotly_pages = getattr(self.env, "optlab_plotly_pages", set())
            self.env.optlab_plotly_pages.add(self.env.docname)
        self.state.nested_parse(StringList(text.splitlines()), self.content_offset, container)
        return [container]


def plotly_on_benchmark_pages(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """html-page-context: load plotly.js on the pages that hold ``{optlab-benchmarks}``."""
    if pagename in getattr(app.env, "optlab_plotly_pages", set()):
        app.add_js_file(PLOTLY_JS, defer="defer")


def merge_plotly_pages(app: Any, env: Any, docnames: Any, other: Any) -> None:
    """env-merge-info: the pages a parallel reader found hold the directive."""
    env.optlab_plotly_pages = getattr(env, "optlab_plotly_pages", set()) | getattr(
        other, "optlab_plotly_pages", set()
    )


def purge_plotly_pages(app: Any, env: Any, docname: str) -> None:
    """env-purge-doc: forget a page that is read again."""
    getattr(env, "optlab_plotly_pages", set()).discard(docname)


def bench_value(results: dict, path: str) -> Any:
    """The field ``path`` (``<case>/<dotted.path>``) of a benchmark results dict.

    ``<case>`` is the case's index or its exact name; inside a case, ``rows.<role or name>``
    selects a row by its role (when unique) or its name.
    """
    case_key, _, dotted = path.partition("/")
    cases = results.get("cases", [])
    if case_key.isdigit():
        idx = int(case_key)
        if idx >= len(cases):
            raise KeyError(f"case {idx} (the file has {len(cases)})")
        node: Any = cases[idx]
    else:
        match = [c for c in cases if c.get("case") == case_key]
        if len(match) != 1:
            raise KeyError(f"case {case_key!r}")
        node = match[0]
    parts = dotted.split(".") if dotted else []
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(node, dict) and part in node:
            node = node[part]
            i += 1
            continue
        if isinstance(node, list):
            if part.isdigit():
                node = node[int(part)]
                i += 1
                continue
            rows = [r for r in node if isinstance(r, dict) and r.get("role") == part]
            if len(rows) != 1:
                rows = [r for r in node if isinstance(r, dict) and r.get("name") == part]
            if len(rows) == 1:
                node = rows[0]
                i += 1
                continue
        # a dict key that itself contains dots (e.g. "fast_vs_peer:numpy vectorised")
        if isinstance(node, dict):
            for j in range(len(parts), i + 1, -1):
                joined = ".".join(parts[i:j])
                if joined in node:
                    node = node[joined]
                    i = j
                    break
            else:
                raise KeyError(part)
            continue
        raise KeyError(part)
    return node


def _format_number(value: Any, spec: str | None) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if spec:
            return format(value, spec)
        from lab.core.claims import format_value

        return format_value(value, digits=3)
    return str(value)


def bench_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{bench}`<slug>/<case>/<path>[|format]```: a number from a benchmark results file."""
    env = inliner.document.settings.env
    body, _, spec = text.strip().partition("|")
    slug, _, path = body.partition("/")
    kind = "cpu"
    if ":" in slug:
        slug, kind = slug.split(":", 1)
    results_file = Path(env.srcdir) / "benchmarks" / "results" / f"{slug}-{kind}.json"
    try:
        env.note_dependency(str(results_file))
        data = json.loads(results_file.read_text())
        value = bench_value(data, path)
        out = _format_number(value, spec or None)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        msg = inliner.reporter.error(
            f"{{bench}} cannot read {text!r} from {results_file.name}: {exc}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.inline(rawtext, out, classes=["optlab-bench"])], []
