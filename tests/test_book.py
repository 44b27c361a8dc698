"""The chapter contract of DESIGN.md, made executable.

For every chapter in ``_toc.yml``: the chapter page with a claims table, 2-3 notebooks, the
assignment master and its student page, ``lab/<slug>``, ``tests/test_<slug>.py`` and
``benchmarks/bench_<slug>.py``; notebooks committed without outputs, kernelspec python3, a
parameters cell with ``FULL`` and a seed, no hard-coded ``"cuda"``; toc and folders agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.tooling.chapters import chapter_notebooks, chapters, claims_page, toc_files

ROOT = Path(__file__).resolve().parents[1]


TOC = toc_files(ROOT)
CHAPTERS = sorted(chapters(ROOT))


def _resolve(entry: str) -> Path:
    for ext in (".md", ".ipynb"):
        if (ROOT / (entry + ext)).exists():
            return ROOT / (entry + ext)
    raise AssertionError(f"_toc.yml names {entry!r} but neither .md nor .ipynb exists")


def test_toc_entries_exist():
    for entry in TOC:
        _resolve(entry)
    assert CHAPTERS, "no chapter in _toc.yml"


def test_every_chapter_folder_is_in_the_toc_and_every_notebook_listed():
    folders = sorted(
        p.parent.name
        for p in (ROOT / "book").glob("*/index.md")
        if not p.parent.name.startswith("_")
    )
    assert folders == CHAPTERS
    for slug in CHAPTERS:
        for nb in (ROOT / "book" / slug).glob("*.ipynb"):
            if nb.name == "assignment.ipynb":  # the solution master stays out of the book
                assert f"book/{slug}/assignment" not in TOC
                continue
            assert f"book/{slug}/{nb.stem}" in TOC, f"{nb} is not in _toc.yml"


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_contract_files(slug):
    index = (ROOT / "book" / slug / "index.md").read_text()
    # migrated chapters render their table from records (tests/test_claims.py holds them to it),
    # on the reproduction report once the chapter has one
    table = claims_page(slug, ROOT).read_text()
    assert "```{claims}" in table or re.search(
        r"^\|.*claim.*\|.*verdict.*\|", table, re.I | re.M
    ), f"{claims_page(slug, ROOT)} needs a claims table (the {{claims}} directive)"
    assert "{cite}" in index, f"book/{slug}/index.md must cite the paper with {{cite}}"
    nbs = chapter_notebooks(slug, ROOT)
    assert 2 <= len(nbs) <= 3, f"chapter {slug} has {len(nbs)} notebooks (2-3 expected)"
    assert (ROOT / "book" / slug / "assignment.ipynb").exists()
    assert (ROOT / "book" / slug / "exercises.ipynb").exists(), "run `make exercises`"
    assert (ROOT / "lab" / f"{slug}.py").exists() or (ROOT / "lab" / slug / "__init__.py").exists()
    assert (ROOT / "tests" / f"test_{slug}.py").exists()
    assert (ROOT / "benchmarks" / f"bench_{slug}.py").exists()
    for nb in nbs:
        assert f"book/{slug}/{nb.stem}" in index or nb.name in index, (
            f"index.md of {slug} must map {nb.name}"
        )


ALL_NOTEBOOKS = sorted(
    p for p in (ROOT / "book").glob("*/*.ipynb") if not p.parent.name.startswith("_")
)


@pytest.mark.parametrize("nb_path", ALL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_hygiene(nb_path):
    nb = json.loads(nb_path.read_text())
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for cell in code:
        assert not cell.get("outputs"), f"{nb_path.name}: committed with outputs"
        assert cell.get("execution_count") is None, (
            f"{nb_path.name}: committed with execution counts"
        )
        src = "".join(cell["source"])
        assert not re.search(r"""["']cuda(:\d+)?["']""", src), f"{nb_path.name}: hard-codes 'cuda'"
    if nb_path.name in ("assignment.ipynb", "exercises.ipynb"):
        return
    params = next((c for c in code if "FULL" in "".join(c["source"])), None)
    assert params is not None, f"{nb_path.name}: no parameters cell with FULL"
    src = "".join(params["source"])
    assert re.search(r"^FULL\s*=\s*False", src, re.M), f"{nb_path.name}: FULL must default to False"
    assert re.search(r"lab\.(setup|seed)\(", src), (
        f"{nb_path.name}: the parameters cell must seed (lab.setup)"
    )
    asserts = sum("assert " in "".join(c["source"]) for c in code)
    assert asserts >= 1, f"{nb_path.name}: no assertion cell"
    assert any("explore(" in "".join(c["source"]) for c in code), (
        f"{nb_path.name}: no explore widget"
    )


ASSIGNMENTS = [slug for slug in CHAPTERS if (ROOT / "book" / slug / "assignment.ipynb").exists()]


@pytest.mark.parametrize("slug", ASSIGNMENTS)
def test_assignment_states_goals_time_and_prerequisites(slug):
    nb = json.loads((ROOT / "book" / slug / "assignment.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "Learning goals" in text, f"book/{slug}/assignment.ipynb: no learning goals"
    assert re.search(r"^\*\*Time\.\*\*.*?\b\d+\s+minutes", text, re.M), (
        f"book/{slug}/assignment.ipynb: no '**Time.** About NN minutes.' line"
    )
    assert "Prerequisites" in text, f"book/{slug}/assignment.ipynb: no prerequisites"


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_page_links_notebooks_assignment_api_and_paper(slug):
    """A reader reaches everything from the chapter page: each notebook, the assignment's
    student page, the module's API reference and the paper itself."""
    index = (ROOT / "book" / slug / "index.md").read_text()
    for nb in sorted((ROOT / "book" / slug).glob("[0-9][0-9]-*.ipynb")):
        assert f"]({nb.name})" in index, f"book/{slug}/index.md does not link {nb.name}"
    assert "](exercises.ipynb)" in index, f"book/{slug}/index.md does not link its assignment"
    assert f"<api-{slug}>`" in index, (
        f"book/{slug}/index.md must link its API reference: {{ref}}`lab.{slug} <api-{slug}>`"
    )
    api = (ROOT / "book" / "api.md").read_text()
    assert f"(api-{slug})=" in api, f"book/api.md has no (api-{slug})= section"
    assert re.search(r"\]\(https?://[^)]+\)", index), f"book/{slug}/index.md: no link to the paper"


# The house shape of every chapter: tests/test_house.py
