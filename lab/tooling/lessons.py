"""A chapter read as a lesson: what the structure test (``tests/test_lessons.py``) measures.

A converted chapter (issue "A book that teaches") has a lesson page, ``book/<slug>/index.md``
(objectives and prerequisites, the method's equations displayed and labelled, takeaways,
related chapters, reproduction material at most a quarter of its words), a reproduction page
(``reproduction.md`` or ``reproduction.ipynb``), notebooks that are lessons (claim bookkeeping at
most 15% of visible code lines, its cells collapsed, short cells, a recap at the end, every
figure captioned, every widget asking a question) and an assignment that mixes kinds of
question (implement, predict, explain, explore). The conventions each check reads:

* objectives: a ``## Before you start`` section holding 3-5 bullet points and at least one link
  (``{doc}``, ``{ref}`` or a Markdown link) for the prerequisites;
* an equation: a display ``$$ ... $$ (label)`` (MyST's labelled math);
* takeaways: a ``## Takeaways`` section; related chapters: a ``{doc}`` link to
  ``../<other slug>/index``;
* reproduction material: the words of sections whose heading names claims, reproduction,
  parity, benchmarks, performance or deviations;
* a recap: the last Markdown cell of a notebook has a heading with "Recap" and 3-5 bullets;
* bookkeeping: the lines of calls named ``claim``, ``record``, ``control``, ``diagnosis``,
  ``rule`` or ``revision`` and of ``assert`` statements, over the code cells shown on the page
  (all but ``remove-cell`` / ``remove-input``), collapsed or not; a cell holding any is collapsed
  (tag ``hide-input`` and ``metadata.jupyter.source_hidden``);
* a caption: the Markdown cell after a figure cell (one that draws: ``plt.``, ``figures.``,
  ``.show(``) starts with ``**Figure``;
* a widget question: the Markdown cell before a widget cell (``explore(``, ``interact(``)
  holds a question mark; "predict" there makes it a predict-first question;
* question kinds: an assignment question's prompt starts with ``**Implement``, ``**Predict``,
  ``**Explain`` or ``**Explore``.

``python -m lab.tooling.lessons [slug ...]`` prints these measurements for every chapter (the
before and after figures of a conversion).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from lab.tooling import paths

__all__ = [
    "NotebookLesson",
    "PageLesson",
    "as_dict",
    "bookkeeping_lines",
    "main",
    "notebook",
    "page",
]

BOOKKEEPING_CALLS = frozenset({"claim", "record", "control", "diagnosis", "rule", "revision"})
REPRODUCTION_HEADING = re.compile(
    r"claim|reproduc|parity|benchmark|performance|deviation|verdict", re.I
)
HIDDEN_TAGS = frozenset({"remove-cell", "remove-input"})
MAX_LINE = 100
_FIGURE = re.compile(r"\bplt\.|\bfigures\.|\.show\(")
_WIDGET = re.compile(r"\bexplore\(|\binteract\(")
KINDS = ("implement", "predict", "explain", "explore")


def bookkeeping_lines(source: str) -> set[int]:
    """The line numbers (1-based) of ``source`` inside bookkeeping calls or ``assert``s."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a string, got {type(source).__name__}")
    text = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            lines.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
            if name in BOOKKEEPING_CALLS:
                lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


@dataclass(frozen=True)
class NotebookLesson:
    """What a notebook shows as a lesson (see the module)."""

    path: str
    code_lines: int
    bookkeeping: int
    bookkeeping_cells: int
    bookkeeping_collapsed: int
    code_cells: int
    cells_over_15: int
    cells_over_40: int
    lines_over_width: int
    recap: bool
    figures: int
    captioned: int
    widgets: int
    widget_questions: int
    widget_predictions: int

    @property
    def share(self) -> float:
        """Bookkeeping lines over visible code lines."""
        return self.bookkeeping / self.code_lines if self.code_lines else 0.0


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _visible(cell: dict) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    return cell["cell_type"] == "code" and not tags & HIDDEN_TAGS


def _collapsed(cell: dict) -> bool:
    md = cell.get("metadata", {})
    return "hide-input" in md.get("tags", []) and bool(md.get("jupyter", {}).get("source_hidden"))


def _bullets(text: str) -> int:
    return len(re.findall(r"^\s*(?:[-*]|\d+\.)\s+\S", text, re.M))


def notebook(path: str | Path) -> NotebookLesson:
    """Measure one notebook (see the module for the conventions)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    path = Path(path)
    cells = json.loads(path.read_text())["cells"]
    code = bk = bk_cells = collapsed = n_cells = over15 = over40 = wide = 0
    figures = captioned = widgets = questions = predictions = 0
    for i, cell in enumerate(cells):
        if not _visible(cell):
            continue
        src = _source(cell)
        lines = [ln for ln in src.splitlines() if ln.strip()]
        n_cells += 1
        code += len(lines)
        over15 += len(lines) > 15
        over40 += len(lines) > 40
        wide += sum(len(ln) > MAX_LINE for ln in src.splitlines())
        mine = bookkeeping_lines(src)
        bk += len([n for n in mine if src.splitlines()[n - 1].strip()])
        if mine:
            bk_cells += 1
            collapsed += _collapsed(cell)
        nxt = next((c for c in cells[i + 1 :] if c["cell_type"] == "markdown"), None)
        prev = next((c for c in reversed(cells[:i]) if c["cell_type"] == "markdown"), None)
        if _WIDGET.search(src):
            widgets += 1
            before = _source(prev) if prev else ""
            questions += "?" in before
            predictions += "?" in before and "predict" in before.lower()
        elif _FIGURE.search(src):
            figures += 1
            captioned += bool(nxt) and _source(nxt).lstrip().startswith("**Figure")
    last_md = next((c for c in reversed(cells) if c["cell_type"] == "markdown"), None)
    recap_text = _source(last_md) if last_md else ""
    recap = (
        bool(re.search(r"^#+ .*recap", recap_text, re.I | re.M)) and 3 <= _bullets(recap_text) <= 5
    )
    return NotebookLesson(
        str(path), code, bk, bk_cells, collapsed, n_cells, over15, over40, wide, recap,
        figures, captioned, widgets, questions, predictions,
    )  # fmt: skip


@dataclass(frozen=True)
class PageLesson:
    """What a chapter's lesson page holds (see the module)."""

    slug: str
    words: int
    reproduction_words: int
    objectives: int
    prerequisite_links: int
    labelled_equations: int
    takeaways: bool
    related_chapters: tuple[str, ...]
    reproduction_page: bool
    question_kinds: tuple[str, ...]

    @property
    def reproduction_share(self) -> float:
        return self.reproduction_words / self.words if self.words else 0.0


def _sections(text: str) -> list[tuple[str, str]]:
    """``(heading, body)`` of each ``##`` section (the part above the first is ``""``)."""
    parts = re.split(r"^(##+ .*)$", text, flags=re.M)
    out = [("", parts[0])]
    for k in range(1, len(parts), 2):
        out.append((parts[k], parts[k + 1] if k + 1 < len(parts) else ""))
    return out


def _words(text: str) -> int:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text))


def page(slug: str, root: Path | None = None) -> PageLesson:
    """Measure a chapter's lesson page, reproduction page and assignment."""
    if not isinstance(slug, str) or not re.match(r"^[a-z][a-z0-9_]*$", slug):
        raise ValueError(f"slug must be a chapter's folder name, got {slug!r}")
    root = Path(root) if root is not None else paths.ROOT
    chapter = root / "book" / slug
    index = chapter / "index.md"
    if not index.exists():
        raise ValueError(f"slug {slug!r}: no book/{slug}/index.md")
    text = index.read_text()
    sections = _sections(text)
    before = next((b for h, b in sections if re.match(r"##\s+Before you start", h)), "")
    repro = sum(_words(h + b) for h, b in sections if REPRODUCTION_HEADING.search(h))
    related = tuple(
        sorted(set(re.findall(r"\{doc\}`[^`]*?\.\./([a-z][a-z0-9_]*)/index>?`", text)) - {slug})
    )
    kinds: set[str] = set()
    assignment = chapter / "assignment.ipynb"
    if assignment.exists():
        for cell in json.loads(assignment.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                m = re.match(r"\s*\*\*(Implement|Predict|Explain|Explore)", _source(cell))
                if m:
                    kinds.add(m.group(1).lower())
    return PageLesson(
        slug=slug,
        words=_words(text),
        reproduction_words=repro,
        objectives=_bullets(before),
        prerequisite_links=len(re.findall(r"\{doc\}`|\{ref\}`|\]\(", before)),
        labelled_equations=len(re.findall(r"\$\$\s*\(\s*[\w:-]+\s*\)", text)),
        takeaways=any(re.match(r"##\s+Takeaways", h) for h, _ in sections),
        related_chapters=related,
        reproduction_page=any((chapter / f"reproduction.{e}").exists() for e in ("md", "ipynb")),
        question_kinds=tuple(k for k in KINDS if k in kinds),
    )


def as_dict(lesson: NotebookLesson | PageLesson) -> dict:
    """A measurement as a plain dict (JSON reports)."""
    return asdict(lesson)


def main(argv: list[str] | None = None) -> int:
    from lab.tooling.chapters import chapter_notebooks, chapters

    root = paths.ROOT
    slugs = (argv if argv is not None else sys.argv[1:]) or chapters(root)
    total = {"code": 0, "bk": 0, "recaps": 0, "notebooks": 0, "figures": 0, "captioned": 0}
    for slug in slugs:
        p = page(slug, root)
        nbs = [notebook(n) for n in chapter_notebooks(slug, root)]
        code, bk = sum(n.code_lines for n in nbs), sum(n.bookkeeping for n in nbs)
        print(
            f"{slug}: page {p.words} words ({100 * p.reproduction_share:.0f}% reproduction), "
            f"objectives {p.objectives}, equations {p.labelled_equations}, takeaways "
            f"{p.takeaways}, related {len(p.related_chapters)}, reproduction page "
            f"{p.reproduction_page}, kinds {','.join(p.question_kinds) or '-'}; notebooks "
            f"{len(nbs)}: bookkeeping {bk}/{code} lines ({100 * bk / max(code, 1):.0f}%), "
            f"recaps {sum(n.recap for n in nbs)}, captions "
            f"{sum(n.captioned for n in nbs)}/{sum(n.figures for n in nbs)}, widget questions "
            f"{sum(n.widget_questions for n in nbs)}/{sum(n.widgets for n in nbs)}, cells > 40 "
            f"lines {sum(n.cells_over_40 for n in nbs)}"
        )
        total["code"] += code
        total["bk"] += bk
        total["recaps"] += sum(n.recap for n in nbs)
        total["notebooks"] += len(nbs)
        total["figures"] += sum(n.figures for n in nbs)
        total["captioned"] += sum(n.captioned for n in nbs)
    print(
        f"all: bookkeeping {total['bk']}/{total['code']} visible code lines "
        f"({100 * total['bk'] / max(total['code'], 1):.0f}%); recaps {total['recaps']} of "
        f"{total['notebooks']} notebooks; captions {total['captioned']} of {total['figures']} "
        "figure cells"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
