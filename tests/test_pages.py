"""Headings that read as headings, in the sources and on every built page.

A broken conversion once left the splitfed notebooks with headings written ``# # Title`` and
``# ## Section`` (rendered as "# Title") and prose paragraphs whose every line began with
``# `` (each line rendered as an H1). Two checks would have caught it:

- the sources (cheap, no build): every markdown cell of every notebook and every Markdown page
  under ``book/``; no heading whose text starts with ``#``, no heading longer than
  ``HEADING_MAX`` characters, exactly one H1 per page;
- the built book (``_build/html``, skipped when the book is not built; ``make test`` builds it
  first): the same rules on the rendered ``<h1>``-``<h6>``, so whatever writes a page (MyST,
  a generated page, a directive) is held to them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"

#: a heading is a title, not a paragraph: the longest one in the book is 87 characters, the
#: shortest line of the broken splitfed paragraphs over 90
HEADING_MAX = 90

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _sources() -> list[Path]:
    book = ROOT / "book"
    return sorted(
        p
        for p in [*book.rglob("*.ipynb"), *book.rglob("*.md")]
        if not any(part.startswith((".", "_")) for part in p.relative_to(book).parts)
    )


def _markdown_blocks(path: Path) -> list[tuple[str, str]]:
    """(where, markdown text) for a Markdown page or each markdown cell of a notebook."""
    if path.suffix == ".md":
        return [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (f"{path.relative_to(ROOT)} cell {i}", "".join(cell["source"]))
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "markdown"
    ]


def markdown_headings(text: str) -> list[tuple[int, str, str]]:
    """(level, heading text, source line) of the ATX headings outside code/directive fences."""
    out, fence = [], None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
                fence = None
            continue
        if fence is None and (h := _HEADING.match(line)):
            out.append((len(h.group(1)), h.group(2), line))
    return out


def heading_problems(headings: list[tuple[int, str]]) -> list[str]:
    """What is wrong with a page's headings (level, text), page-wide rules included."""
    problems = []
    for level, text in headings:
        if text.startswith("#"):
            problems.append(f"h{level} starts with '#': {text[:60]!r}")
        if len(text) > HEADING_MAX:
            problems.append(f"h{level} is {len(text)} > {HEADING_MAX} characters: {text[:60]!r}...")
    n_h1 = sum(level == 1 for level, _ in headings)
    if n_h1 != 1:
        problems.append(f"{n_h1} H1 headings (a page has exactly one: its title)")
    return problems


# -- the rules themselves ----------------------------------------------------------------
def test_rules_catch_the_broken_conversion():
    broken = (
        "# # Zeroth-order estimates across the cut\n\nText.\n\n# ## Parameters\n"
        "# The widget moves the markers: the selected dimension on the error curve (with the "
        "mean cosine\n# between the estimate and the gradient.\n"
    )
    found = heading_problems([(lv, t) for lv, t, _ in markdown_headings(broken)])
    assert any("starts with '#'" in p for p in found)
    assert any("characters" in p for p in found)
    assert any("4 H1 headings" in p for p in found)
    fine = "# Title\n\n```python\n# a comment, not a heading\n```\n\n## Section\n"
    assert markdown_headings(fine) == [(1, "Title", "# Title"), (2, "Section", "## Section")]
    assert heading_problems([(1, "Title"), (2, "Section")]) == []


# -- sources: no build needed ------------------------------------------------------------
@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT / "book")))
def test_source_headings(path):
    headings, where = [], {}
    for place, text in _markdown_blocks(path):
        for level, heading, line in markdown_headings(text):
            headings.append((level, heading))
            where.setdefault(heading, f"{place}: {line[:70]!r}")
    problems = heading_problems(headings)
    bad = [where.get(h, "") for lv, h in headings if h.startswith("#") or len(h) > HEADING_MAX]
    assert not problems, f"{path.relative_to(ROOT)}: {problems}\n" + "\n".join(bad)


# -- the built book ----------------------------------------------------------------------
def _built_pages() -> list[Path]:
    if not HTML.is_dir():
        return []
    return sorted(
        p
        for p in HTML.rglob("*.html")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(HTML).parts)
    )


#: built pages without an article: the root index only redirects, the search page is a form
NO_ARTICLE = {"index.html", "search.html"}


def _page_headings(path: Path) -> list[tuple[int, str]] | None:
    """(level, text) of the headings of a built page's article; None for a page without one."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    # the page's own content; the theme repeats the title in a print-only header outside it
    article = soup.find("article")
    if article is None:
        return None
    out = []
    for tag in article.find_all(re.compile(r"^h[1-6]$")):
        for extra in tag.select("a.headerlink, span.section-number"):
            extra.decompose()  # the pilcrow link is "#"; the number is not the heading's text
        out.append((int(tag.name[1]), " ".join(tag.get_text(" ").split())))
    return out


@pytest.mark.book
def test_built_pages_headings():
    pages = _built_pages()
    if not pages:
        pytest.skip("the book is not built (_build/html): `make book` or `make test` builds it")
    problems = {}
    for page in pages:
        name = page.relative_to(HTML).as_posix()
        headings = _page_headings(page)
        if headings is None:
            if name not in NO_ARTICLE:
                problems[name] = ["no <article> (has the theme changed?)"]
            continue
        found = heading_problems(headings)
        if found:
            problems[name] = found
    assert not problems, "\n".join(f"{page}: {p}" for page, p in problems.items())
