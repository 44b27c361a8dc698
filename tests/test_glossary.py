"""The book's glossary (book/glossary.md): at least 60 concepts, every one linked from a page
that uses it, and every ``{term}`` reference naming one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
_REF = re.compile(r"\{term\}`([^`<]*?)(?:\s*<([^>]*)>)?`")


def glossary_entries() -> list[list[str]]:
    """Each entry's terms (the first, then its aliases), in page order."""
    entries: list[list[str]] = []
    current: list[str] | None = None
    inside = False
    for line in GLOSSARY.read_text().splitlines():
        if line.startswith("```{glossary}"):
            inside, current = True, None
        elif line.startswith("```"):
            inside = False
        elif inside and line and not line.startswith(" "):
            if current is None:
                current = []
                entries.append(current)
            current.append(line.strip())
        elif inside and line.startswith("  "):
            current = None
    return entries


def page_texts() -> dict[str, str]:
    """Every page's prose but the glossary's own: Markdown pages and notebooks' Markdown cells."""
    texts = {}
    for p in sorted((ROOT / "book").rglob("*.md")):
        if p != GLOSSARY and "_build" not in p.parts:
            texts[str(p.relative_to(ROOT))] = p.read_text()
    for p in sorted((ROOT / "book").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in p.parts:
            continue
        cells = json.loads(p.read_text())["cells"]
        texts[str(p.relative_to(ROOT))] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        )
    return texts


def references(text: str) -> set[str]:
    return {(m.group(2) or m.group(1)).strip().lower() for m in _REF.finditer(text)}


def test_the_glossary_holds_at_least_sixty_concepts():
    entries = glossary_entries()
    assert len(entries) >= 60, len(entries)
    terms = [t.lower() for e in entries for t in e]
    assert len(terms) == len(set(terms)), "a term is defined twice"


def test_every_concept_is_linked_from_a_page_and_every_link_resolves():
    entries = glossary_entries()
    known = {t.lower() for e in entries for t in e}
    used: set[str] = set()
    for page, text in page_texts().items():
        refs = references(text)
        unknown = sorted(refs - known)
        assert not unknown, f"{page}: {{term}} names no glossary entry: {unknown}"
        used |= refs
    unlinked = [e[0] for e in entries if not any(t.lower() in used for t in e)]
    assert not unlinked, f"glossary terms no page links: {unlinked}"


def test_the_notation_page_and_the_glossary_link_each_other():
    assert "{doc}`glossary`" in (ROOT / "book" / "notation.md").read_text()
    assert "{doc}`notation`" in GLOSSARY.read_text()
    assert "book/glossary" in (ROOT / "_toc.yml").read_text()


@pytest.mark.book
def test_the_sidebar_numbers_chapters_not_the_sections_of_a_page():
    """A chapter is numbered (``4.``) and its notebooks are not (they used to read ``4.6``, after
    the chapter page's own sections): the notebooks' map on the page numbers them."""
    page = ROOT / "_build" / "html" / "book" / "eos" / "index.html"
    if not page.exists():
        pytest.skip("the book is not built (make book; make test builds it before pytest)")
    nav = re.findall(r'<a class="reference internal" href="[^"]*">([^<]*)</a>', page.read_text())
    chapters = [n for n in nav if re.match(r"\d+\. ", n)]
    sections = [n for n in nav if re.match(r"\d+\.\d+\.", n)]
    assert len(chapters) >= 19 and not sections, sections[:5]
