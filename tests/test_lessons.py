"""A converted chapter is a lesson first (issue "A book that teaches"): the structure its lesson
page, reproduction page, notebooks and assignment must have, measured by lab.tooling.lessons.

A chapter joins ``CONVERTED`` (tests/converted.py) when it passes this test and the statistician's and run layer's
items for it (CONTRIBUTING.md, "Converting a chapter"); the list only grows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from converted import CONVERTED

from lab.tooling import lessons
from lab.tooling.chapters import chapter_notebooks

ROOT = Path(__file__).resolve().parents[1]

BOOKKEEPING_MAX = 0.15
REPRODUCTION_MAX = 0.25


@pytest.mark.parametrize("slug", CONVERTED)
def test_the_lesson_page_teaches(slug):
    p = lessons.page(slug, ROOT)
    assert 3 <= p.objectives <= 5, f"{slug}: 'Before you start' needs 3-5 objectives"
    assert p.prerequisite_links >= 1, f"{slug}: prerequisites must link where they are taught"
    assert p.labelled_equations >= 1, f"{slug}: the method's equations, displayed and labelled"
    assert p.takeaways, f"{slug}: a '## Takeaways' section"
    assert p.related_chapters, f"{slug}: a link to a related chapter"
    assert p.reproduction_page, f"{slug}: book/{slug}/reproduction.md (or .ipynb)"
    assert p.reproduction_share <= REPRODUCTION_MAX, (
        f"{slug}: reproduction material is {p.reproduction_share:.0%} of the lesson page"
    )
    assert set(p.question_kinds) >= {"predict", "explain", "explore"}, p.question_kinds


@pytest.mark.parametrize("slug", CONVERTED)
def test_the_notebooks_are_lessons(slug):
    for path in chapter_notebooks(slug, ROOT):
        n = lessons.notebook(path)
        name = path.name
        assert n.share <= BOOKKEEPING_MAX, f"{name}: bookkeeping {n.share:.0%} of code lines"
        assert n.bookkeeping_collapsed == n.bookkeeping_cells, f"{name}: collapse those cells"
        assert n.recap, f"{name}: end with a '## Recap' of 3-5 points"
        assert n.cells_over_40 == 0 and n.cells_over_15 <= n.code_cells // 4, name
        assert n.lines_over_width == 0, f"{name}: lines over {lessons.MAX_LINE} characters"
        assert n.captioned == n.figures, f"{name}: caption every figure (**Figure ...)"
        assert n.widget_questions == n.widgets, f"{name}: every widget asks a question"
        assert 2 * n.widget_predictions >= n.widgets, f"{name}: most widgets: predict, then move"


def _nb(tmp_path: Path, cells: list[tuple[str, str, dict]]) -> Path:
    path = tmp_path / "01-demo.ipynb"
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": t, "source": s, "metadata": m}
                    | ({"outputs": [], "execution_count": None} if t == "code" else {})
                    for t, s, m in cells
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return path


def test_bookkeeping_counts_claim_calls_and_asserts_not_the_lesson():
    src = (
        "x = f(1)\n"
        "c = C.claim(\n    'a',\n    rule=claims.rule(reproduced=claims.at_least(1)),\n)\n"
        "c.record(x)\n"
        "assert x > 0\n"
        "plt.plot(x)\n"
    )
    assert lessons.bookkeeping_lines(src) == {2, 3, 4, 5, 6, 7}
    assert lessons.bookkeeping_lines("def f(:\n") == set()
    with pytest.raises(TypeError, match="source must be a string"):
        lessons.bookkeeping_lines(3)


def test_a_notebook_measured_as_a_lesson(tmp_path):
    hidden = {"tags": ["hide-input"], "jupyter": {"source_hidden": True}}
    path = _nb(
        tmp_path,
        [
            ("markdown", "# Demo", {}),
            ("code", "import lab", {"tags": ["remove-cell"]}),
            ("code", "fig = figures.curve(run)\nfig", {}),
            ("markdown", "**Figure.** Look at the slope.", {}),
            ("markdown", "Predict: will the orbit grow? Then move the slider.", {}),
            ("code", "explore(figures.curve, {})", {}),
            ("code", "c.record(1)\nassert True", hidden),
            ("code", "c.record(2)", {}),
            ("markdown", "## Recap\n\n- one\n- two\n- three\n", {}),
        ],
    )
    n = lessons.notebook(path)
    assert (n.code_cells, n.code_lines, n.bookkeeping) == (4, 6, 3)
    assert (n.bookkeeping_cells, n.bookkeeping_collapsed) == (2, 1)
    assert (n.figures, n.captioned, n.widgets, n.widget_questions, n.widget_predictions) == (
        1,
        1,
        1,
        1,
        1,
    )
    assert n.recap and n.share == pytest.approx(3 / 6)


def test_a_lesson_page_measured(tmp_path):
    chapter = tmp_path / "book" / "demo"
    chapter.mkdir(parents=True)
    (chapter / "index.md").write_text(
        "# Demo\n\n## Before you start\n\n- objective one\n- objective two\n- objective three\n\n"
        "Prerequisites: {doc}`../notation`.\n\n## The method\n\n$$\nw = w - \\eta g\n$$ (gd)\n\n"
        "See also {doc}`the other <../other/index>`.\n\n## Takeaways\n\nRemember this.\n\n"
        "## Claims\n\nA few words here.\n"
    )
    (chapter / "reproduction.md").write_text("# Reproduction\n")
    p = lessons.page("demo", tmp_path)
    assert (p.objectives, p.prerequisite_links, p.labelled_equations) == (3, 1, 1)
    assert p.takeaways and p.reproduction_page and p.related_chapters == ("other",)
    assert 0 < p.reproduction_share < 0.25
    with pytest.raises(ValueError, match="slug"):
        lessons.page("Not a slug", tmp_path)
    with pytest.raises(ValueError, match="no book/nothere/index.md"):
        lessons.page("nothere", tmp_path)
