"""The book's chapters, read from ``_toc.yml`` (the one place that lists them).

``_toc.yml`` decides what is a chapter and in which order: a chapter is an entry
``book/<slug>/index``, its sections are the pages under it. Everything that walks the book (the
command line, the execution cache, the performance page, the tests) asks this module instead of
parsing the toc or listing folders itself.

- :func:`toc_files`: every page of the toc (``book/eos/index``, ...), root first, in order.
- :func:`chapters`: the chapter slugs in toc order (``["eos", "wflows", ...]``).
- :func:`check_slug`: a slug, validated against :func:`chapters`.
- :func:`chapter_notebooks`: a chapter's numbered notebooks (``01-*.ipynb`` ...).
- :func:`toc_notebooks`: the notebooks of the toc (by default those the book executes).

Every function takes the repository root (default: the checkout this package lives in); without
a ``_toc.yml`` there (an installed copy of ``lab``) there are no chapters.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lab.tooling.paths import ROOT

__all__ = [
    "ROOT",
    "chapter_notebooks",
    "chapters",
    "check_slug",
    "claims_page",
    "toc_files",
    "toc_notebooks",
]

_CHAPTER = re.compile(r"book/([A-Za-z0-9_]+)/index")


def toc_files(root: Path | None = None) -> list[str]:
    """Every ``file:`` of ``_toc.yml`` (paths without extension), the toc's root first.

    Depth first, in the order the book shows them; ``[]`` when there is no ``_toc.yml``.
    """
    path = Path(root or ROOT) / "_toc.yml"
    if not path.is_file():
        return []
    import yaml

    toc = yaml.safe_load(path.read_text()) or {}
    files: list[str] = [toc["root"]] if toc.get("root") else []

    def walk(node) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
        elif isinstance(node, dict):
            if "file" in node:
                files.append(str(node["file"]))
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key) or [])

    walk(toc)
    return files


def chapters(root: Path | None = None) -> list[str]:
    """The chapter slugs (``book/<slug>/index`` entries of ``_toc.yml``) in toc order."""
    out: list[str] = []
    for entry in toc_files(root):
        m = _CHAPTER.fullmatch(entry)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def check_slug(slug: str, root: Path | None = None) -> str:
    """Return ``slug`` if it names a chapter; otherwise raise ``ValueError`` listing them."""
    root = Path(root or ROOT)
    valid = chapters(root)
    if not valid:
        raise ValueError(
            f"no _toc.yml with chapters next to the lab package ({root}): this command needs a "
            "checkout of the optlab repository"
        )
    if slug not in valid:
        raise ValueError(f"unknown chapter {slug!r}; valid slugs: {', '.join(valid)}")
    return slug


def claims_page(slug: str, root: Path | None = None) -> Path:
    """The page that renders chapter ``slug``'s claims table: its reproduction report
    (``book/<slug>/reproduction.md``) once the chapter has one, else its lesson page."""
    root = ROOT if root is None else Path(root)
    report = root / "book" / slug / "reproduction.md"
    return report if report.exists() else root / "book" / slug / "index.md"


def chapter_notebooks(slug: str, root: Path | None = None) -> list[Path]:
    """The chapter's numbered notebooks (``book/<slug>/01-*.ipynb`` ...), in order.

    Raises ``ValueError`` if ``slug`` is not a chapter of the toc.
    """
    root = Path(root or ROOT)
    return sorted((root / "book" / check_slug(slug, root)).glob("[0-9][0-9]-*.ipynb"))


def toc_notebooks(root: Path | None = None, *, executed: bool = True) -> list[Path]:
    """The ``.ipynb`` pages of ``_toc.yml``, in toc order.

    With ``executed=True`` (the default) only those the book executes: a notebook whose metadata
    says ``mystnb: execution_mode: off`` (the generated ``exercises.ipynb``) is left out.
    """
    root = Path(root or ROOT)
    out = []
    for entry in toc_files(root):
        path = root / f"{entry}.ipynb"
        if path.is_file():
            meta = json.loads(path.read_text()).get("metadata", {}) if executed else {}
            if meta.get("mystnb", {}).get("execution_mode") != "off":
                out.append(path)
    return out
