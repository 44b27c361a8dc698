"""The ``{optlab-benchmarks}`` directive: the performance page, rendered from the results files.

``book/performance.md`` holds ``{optlab-benchmarks}`` with ``:kind: cpu`` or ``:kind: gpu``; at
build time :class:`BenchmarksDirective` turns ``benchmarks/results/<slug>-<kind>.json`` into
tables and a speed-up plot (:func:`lab.tooling.perf.page_markdown`, drawn with
:func:`lab.tooling.mime.figure_html`), and makes the page depend on those files so that a rerun
of ``make bench`` rebuilds it. The pages that hold the directive are remembered in the build
environment (merged across parallel readers, purged on re-read) so that
:func:`plotly_on_benchmark_pages` loads plotly.js on them. :mod:`lab.tooling.sphinxext` wires it.
"""

from __future__ import annotations

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
