"""Sphinx directives that render a chapter's claim registry (``lab/<slug>/claims.py``) on its
reproduction page: ``{rivals}`` (each claim's nearest rival and why, or why it has none at our
size) and ``{deviations}`` (what the chapter does differently from the paper, each entry an
anchor that a ``deviation`` diagnosis on a claim card links to).

Both read the registry, not the records: they say what was registered before any number was
measured. The option ``:chapter:`` defaults to the page's chapter (``book/<slug>/...``).
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from docutils import nodes

__all__ = ["chapter_registry", "deviation_anchor", "setup"]


def deviation_anchor(slug: str, name: str) -> str:
    """The HTML id of deviation ``name`` of chapter ``slug`` on its reproduction page."""
    return f"deviation-{slug}-{name}"


def chapter_registry(slug: str):
    """The :class:`lab.core.registry.Registry` of chapter ``slug`` (``lab.<slug>.claims.CLAIMS``),
    or None for a chapter that has none yet."""
    if not isinstance(slug, str) or not slug.isidentifier():
        raise ValueError(f"slug must be a chapter slug such as 'eos', got {slug!r}")
    try:
        mod = importlib.import_module(f"lab.{slug}.claims")
    except ModuleNotFoundError as exc:
        if exc.name in (f"lab.{slug}", f"lab.{slug}.claims"):
            return None
        raise
    return mod.CLAIMS


def _rivals(reg) -> list:
    items = nodes.bullet_list()
    for spec in reg.specs.values():
        para = nodes.paragraph()
        para += nodes.literal(text=spec.id)
        if spec.rival:
            para += nodes.Text(f": {spec.rival}")
        elif spec.no_rival:
            para += nodes.emphasis(text=": no rival at this size. ")
            para += nodes.Text(spec.no_rival)
        else:
            para += nodes.Text(": no rival registered.")
        items += nodes.list_item("", para)
    return [items]


def _deviations(reg) -> list:
    if not reg.deviations:
        return [nodes.paragraph(text="None registered: the chapter follows the paper's setup.")]
    out = nodes.definition_list()
    for name, text in reg.deviations.items():
        term = nodes.term()
        term += nodes.literal(text=name)
        item = nodes.definition_list_item(
            "", term, nodes.definition("", nodes.paragraph(text=text))
        )
        item["ids"].append(deviation_anchor(reg.slug, name))
        out += item
    return [out]


def _directive(render):
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective

    class RegistryDirective(SphinxDirective):
        has_content = False
        option_spec: ClassVar[dict] = {"chapter": directives.unchanged}

        def run(self) -> list:
            parts = self.env.docname.split("/")
            page = parts[1] if len(parts) >= 3 and parts[0] == "book" else None
            slug = self.options.get("chapter") or page
            if not slug:
                raise self.error("needs :chapter: outside book/<slug>/ pages")
            reg = chapter_registry(slug)
            if reg is None:
                raise self.error(f"chapter {slug!r} has no registry (lab/{slug}/claims.py)")
            self.env.note_dependency(importlib.import_module(f"lab.{slug}.claims").__file__)
            return render(reg)

    return RegistryDirective


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (listed in ``_config.yml``'s ``extra_extensions``)."""
    from lab import __version__

    app.add_directive("rivals", _directive(_rivals))
    app.add_directive("deviations", _directive(_deviations))
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
