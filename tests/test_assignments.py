"""The assignment round-trip, for every chapter with an assignment.

otter builds the student notebook and the autograder from the solution master; the master
must score full marks, the untouched student stubs must not, no solution line may leak into
the student notebook, and the book's student page must be up to date with the master.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.tooling import grading

ROOT = Path(__file__).resolve().parents[1]
SLUGS = sorted(p.parent.name for p in (ROOT / "book").glob("*/assignment.ipynb"))


def _sources(path: Path) -> list[tuple[str, str]]:
    nb = json.loads(path.read_text())
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]


@pytest.mark.parametrize("slug", SLUGS)
def test_assignment_roundtrip(slug, tmp_path):
    res = grading.roundtrip(slug, out_dir=tmp_path / slug)
    sol, stu = res["solution"], res["student"]
    assert sol["max"] > 0 and len(sol["questions"]) >= 2
    assert sol["fraction"] == 1.0, f"solutions do not score full marks: {sol['questions']}"
    assert stu["fraction"] < 1.0, f"the empty stubs pass: {stu['questions']}"
    assert all(s < m for s, m in stu["questions"].values()), (
        f"a stub scores full marks: {stu['questions']}"
    )
    assert res["leaked"] == [], f"solution code in the student notebook: {res['leaked']}"
    # the committed student page (book/<slug>/exercises.ipynb) matches the master
    committed = ROOT / "book" / slug / "exercises.ipynb"
    fresh_root = tmp_path / "fresh"
    (fresh_root / "book" / slug).mkdir(parents=True)
    (fresh_root / "book" / slug / "assignment.ipynb").write_text(
        (ROOT / "book" / slug / "assignment.ipynb").read_text()
    )
    fresh = grading.exercise_page(slug, root=fresh_root, student=res["build"].student)
    assert _sources(fresh) == _sources(committed), (
        "book/<slug>/exercises.ipynb is stale: run `make exercises`"
    )
    text = committed.read_text()
    for marker in ("BEGIN SOLUTION", "BEGIN TESTS", "BEGIN QUESTION", "grader.check", "otter"):
        assert marker not in text, f"student page shows {marker!r}"
