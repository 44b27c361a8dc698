"""Issue 38 item 4: an assignment that mixes implement, predict, explain and explore questions.

A small synthetic master (``toy``: one question of each kind) is built with ``lab assign`` in a
throw-away root and graded with ``lab grade`` in the sandbox: the solution scores full
autograded marks with the explain question pending, a wrong choice scores 0 on the predict
question, the expected choice never enters the sandbox, the rubric stays out of everything a
student gets (student notebook, exercise page, self-check tests, zip, feedback), and the
instructor's report holds the rubric and every student's answer, escaped.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest

from lab.tooling import (
    assignenv,
    classroom,
    grademanual,
    gradeschema,
    grading,
    sandbox,
    selfcheck,
)

ROOT = Path(__file__).resolve().parents[1]
OK, WHY = sandbox.check_sandbox()
needs_sandbox = pytest.mark.skipif(not OK, reason=f"no sandbox here: {WHY}")

RUBRIC = "1 point for naming linearity (or distributivity); 0.5 for a numeric example only."
MODEL = "Doubling is linear, so it distributes over the sum: 2(x + y) = 2x + 2y."
PROMPT = "**Explain (1 point).** Why does `double` commute with addition? Two sentences."


def _raw(s):
    return nbformat.v4.new_raw_cell(s)


def _md(s):
    return nbformat.v4.new_markdown_cell(s)


def _code(s):
    return nbformat.v4.new_code_cell(s)


def toy_master(*, rubric: bool = True) -> nbformat.NotebookNode:
    """The synthetic master: q1 implement, q2 predict, q3 explain, then an explore cell."""
    config = [
        "# ASSIGNMENT CONFIG",
        "name: toy",
        "init_cell: true",
        "check_all_cell: false",
        "export_cell: false",
        "run_tests: true",
        "generate: true",
        "solutions_pdf: false",
        "template_pdf: false",
        "save_environment: false",
        "files: []",
        *assignenv.config_lines(),
    ]
    hidden = '""" # BEGIN TEST CONFIG\nhidden: true\n"""  # END TEST CONFIG\n'
    imp = "from lab.tooling.grading import assert_close\n\n"
    solution = f"**Answer.** {MODEL}" + (f"\n\n**Rubric.** {RUBRIC}" if rubric else "")
    cells = [
        _raw("\n".join(config)),
        _md("# Assignment: toy\n\nOne question of each kind."),
        _code("import numpy as np"),
        _raw("# BEGIN QUESTION\nname: q1\npoints: 2"),
        _md("**Implement (2 points).** Write `double(x)`."),
        _raw("# BEGIN SOLUTION"),
        _code("def double(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION"),
        _raw("# END SOLUTION"),
        _raw("# BEGIN TESTS"),
        _code(imp + 'assert_close("double(3)", double(3), 6)'),
        _code(hidden + imp + 'assert_close("double(arange)", double(np.arange(3)), [0, 2, 4])'),
        _raw("# END TESTS"),
        _raw("# END QUESTION"),
        _raw("# BEGIN QUESTION\nname: q2\npoints: 1"),
        _md(
            "**Predict (1 point).** Before you run anything: is `double(double(x))` (a) `x`, "
            '(b) `4 x` or (c) `2 x`? Set `q2_choice` to `"a"`, `"b"` or `"c"` and '
            "`q2_reason` to one line."
        ),
        _raw("# BEGIN SOLUTION"),
        _code(
            'q2_choice = "b"  # SOLUTION\nq2_reason = "doubling twice is times four"  # SOLUTION'
        ),
        _raw("# END SOLUTION"),
        _raw("# BEGIN TESTS"),
        # the public check is worth no points: a wrong choice, one of the three, scores 0
        _code(
            '""" # BEGIN TEST CONFIG\npoints: 0\n"""  # END TEST CONFIG\nassert q2_choice in ("a", "b", "c")'
        ),
        _code(hidden + imp + 'assert_close("q2_choice", q2_choice, "b")'),
        _raw("# END TESTS"),
        _raw("# END QUESTION"),
        _raw("# BEGIN QUESTION\nname: q3\nmanual: true\npoints: 1"),
        _md(PROMPT),
        _raw("# BEGIN SOLUTION"),
        _md(solution),
        _raw("# END SOLUTION"),
        _raw("# END QUESTION"),
        _md("**Explore (ungraded).** Try `double` on a list. What happens, and why?"),
        _md("## What you built\n\nA doubling function and a prediction."),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def toy_root(base: Path, master: nbformat.NotebookNode) -> Path:
    """A checkout holding the toy master: the package files are this checkout's (links), so
    ``lab assign`` bundles the same wheel (kept in this checkout's ``_build/wheel``)."""
    root = base / "root"
    (root / "book" / "toy").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE", "lab"):
        os.symlink(ROOT / name, root / name)
    (ROOT / "_build" / "wheel").mkdir(parents=True, exist_ok=True)
    (root / "_build").mkdir()
    os.symlink(ROOT / "_build" / "wheel", root / "_build" / "wheel")
    nbformat.write(master, root / "book" / "toy" / "assignment.ipynb")
    return root


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    base = tmp_path_factory.mktemp("toy")
    root = toy_root(base, toy_master())
    return grading.assign("toy", base / "assign", root=root, run_tests=False)


def _answer_cell(nb, text: str):
    """``nb`` with the explain question's answer cell (otter's placeholder) set to ``text``."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if grademanual.PLACEHOLDER in c.source)
    cell.source = text
    return nb


def _set(nb, name: str, value: str):
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if c.cell_type == "code" and f"{name} = " in c.source)
    cell.source = "\n".join(
        f"{name} = {value}" if ln.startswith(f"{name} = ") else ln
        for ln in cell.source.splitlines()
    )
    return nb


def _filled(stub, solution):
    """The student notebook with the solution's code cells (and an explain answer)."""
    nb = copy.deepcopy(stub)
    sol = [
        c.source
        for c in solution.cells
        if "otter_assign_solution_cell" in c.metadata.get("tags", []) and c.cell_type == "code"
    ]  # noqa: E501
    answers = [
        c
        for c in nb.cells
        if c.cell_type == "code" and "otter_answer_cell" in c.metadata.get("tags", [])
    ]  # noqa: E501
    for cell, src in zip(answers, sol, strict=True):
        cell.source = src
    return nb


# -- building ----------------------------------------------------------------------------------
def test_lab_assign_keeps_the_rubric_for_the_instructor(build, tmp_path):
    assert build.rubrics == build.out_dir / "instructor" / "rubrics.json"
    name, questions = grademanual.load_rubrics(build.rubrics)
    assert name == "toy" and list(questions) == ["q3"]
    q3 = questions["q3"]
    assert q3["points"] == 1 and q3["rubric"] == RUBRIC and q3["answer"] == MODEL
    assert q3["prompt"] == PROMPT
    secret = [RUBRIC[:40], MODEL[:40]]
    student = build.student.read_text()
    assert not [s for s in secret if s in student], "the rubric is in the student notebook"
    assert "_Type your answer here" in student  # otter's answer cell for the explain question
    with zipfile.ZipFile(build.autograder) as z:
        for n in z.namelist():
            data = z.read(n)
            if n.endswith(".whl"):
                with zipfile.ZipFile(z.open(n)) as w:
                    data = b"".join(w.read(m) for m in w.namelist())
            assert not [s for s in secret if s.encode() in data], f"the rubric is in the zip: {n}"
        assert "tests/q3.py" not in z.namelist()  # otter: no test, no points for q3
    # the book's exercise page and its self-check tests: no rubric, and no hidden choice
    page_root = tmp_path / "page"
    (page_root / "book" / "toy").mkdir(parents=True)
    (page_root / "book" / "toy" / "assignment.ipynb").write_text(
        (build.out_dir.parent / "root" / "book" / "toy" / "assignment.ipynb").read_text()
    )
    page = grading.exercise_page("toy", root=page_root, student=build.student).read_text()
    assert not [s for s in secret if s in page]
    assert "BEGIN QUESTION" not in page and grademanual.PAGE_BEGIN in page
    assert "has no self-check" in page and "**Explain** questions have no check" in page
    assert "**Predict** question only tests that your answer is one of the choices" in page
    tests = json.loads((page_root / "lab" / "tooling" / selfcheck.FOLDER / "toy.json").read_text())
    assert sorted(tests) == ["q1", "q2"]
    q2 = json.dumps(tests["q2"])
    assert "q2_choice in" in q2 and "assert_close" not in q2 and "'b')" not in q2


def test_a_malformed_explain_question_is_refused(tmp_path):
    root = toy_root(tmp_path, toy_master(rubric=False))
    with pytest.raises(ValueError, match=r"q3.*Rubric"):
        grading.assign("toy", tmp_path / "assign", root=root, run_tests=False)
    with pytest.raises(TypeError, match="master"):
        grademanual.manual_questions(3)
    with pytest.raises(ValueError, match="rubrics"):
        grademanual.load_rubrics(tmp_path / "missing.json")


# -- predict: text answers ---------------------------------------------------------------------
def test_assert_close_compares_text_exactly():
    grading.assert_close("q2_choice", " B\n", "b")
    with pytest.raises(AssertionError, match=r"q2_choice: expected 'b', found 'a'"):
        grading.assert_close("q2_choice", "a", "b")
    with pytest.raises(AssertionError, match=r"expected a text answer .*found 2 \(int\)"):
        grading.assert_close("q2_choice", 2, "b")
    with pytest.raises(AssertionError, match="not a number"):
        grading.assert_close("q2_value", "0.5", 0.5)
    grading.assert_close("q2_value", 0.5, 0.5)  # a number prediction is a number


def test_text_answers_travel_as_data_and_are_scored_outside():
    assert gradeschema.encode("b") == {"text": "b"}
    assert gradeschema.decode({"text": "b"}) == "b"
    assert gradeschema.encode("x" * 10**5)["text"] == "x" * gradeschema.MAX_TEXT
    assert isinstance(gradeschema.decode({"type": "list"}), gradeschema.NonNumeric)
    assert isinstance(gradeschema.decode({"shape": "?"}), gradeschema.NonNumeric)
    assert isinstance(gradeschema.decode({"text": 3}), gradeschema.NonNumeric)
    np.testing.assert_array_equal(gradeschema.decode(gradeschema.encode([1, 2])), [1.0, 2.0])
    case = gradeschema.Case("q2", 0, 'assert_close("q2_choice", q2_choice, "b")\n', True, 1.0)
    student = gradeschema.program(case, reference=False)
    assert student == "__lab_case__(q2_choice)", student  # the expected "b" stays out
    ref = {"q2/0": {"events": [{"kind": "close", "got": {"text": "b"}, "expected": {"text": "b"},
                                "name": "q2_choice", "rtol": 0, "atol": 0, "msg": ""}]}}  # fmt: skip
    for got, ok in ((" B", True), ("a", False), (2, False), ([1], False)):
        answer = {"q2/0": {"events": [{"kind": "close", "got": gradeschema.encode(got)}]}}
        q = gradeschema.score([case], ref, answer)["q2"]
        assert q.score == (1.0 if ok else 0.0), (got, q.full)
        assert "'b'" not in " ".join(q.lines)  # a hidden case shows no value
    assert gradeschema.check_reference([case], ref) == []


# -- grading a class ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(build, tmp_path_factory):
    if not OK:
        pytest.skip(f"no sandbox here: {WHY}")
    folder = tmp_path_factory.mktemp("toy_class")
    right = nbformat.read(build.solution, as_version=4)
    stub = nbformat.read(build.student, as_version=4)
    filled = _filled(stub, right)
    subs = {
        "right.ipynb": _answer_cell(filled, "Because doubling is linear."),
        "wrong_choice.ipynb": _answer_cell(_set(filled, "q2_choice", '"a"'), "No idea."),
        "spaced_choice.ipynb": _set(filled, "q2_choice", '"  B "'),
        "number_choice.ipynb": _set(filled, "q2_choice", "2"),
        "html.ipynb": _answer_cell(filled, "<script>alert('x')</script> & **bold**"),
        "stub.ipynb": stub,
    }
    for name, nb in subs.items():
        nbformat.write(nb, folder / name)
    out = tmp_path_factory.mktemp("toy_results")
    path, outcomes = classroom.grade_class(build.autograder, folder, out=out, jobs=2, echo=False)
    with path.open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    return {"rows": rows, "out": out, "folder": folder, "outcomes": outcomes, "subs": subs}


@needs_sandbox
def test_the_solution_scores_full_autograded_marks_with_the_explain_pending(graded):
    row = graded["rows"]["right.ipynb"]
    assert (row["q1"], row["q2"], row["q3"]) == ("2", "1", "pending"), row
    assert (row["total"], row["max"], row["pending"], row["error"]) == ("3", "3", "1", ""), row
    feedback = (graded["out"] / "feedback" / "right.txt").read_text()
    assert "right.ipynb: 3 of 3 autograded points, 1 pending" in feedback, feedback
    assert "q3: pending (1 point): your instructor reads your answer" in feedback
    # "  B " is "b" to the hidden comparison; the public check (`in ("a", "b", "c")`, worth no
    # points) is exact, and says so before the student submits
    assert graded["rows"]["spaced_choice.ipynb"]["q2"] == "1"


@needs_sandbox
def test_a_wrong_choice_scores_zero_on_the_predict_question(graded):
    rows = graded["rows"]
    for name in ("wrong_choice.ipynb", "number_choice.ipynb"):
        assert rows[name]["q2"] == "0" and rows[name]["q1"] == "2", rows[name]
        assert rows[name]["q3"] == "pending" and rows[name]["pending"] == "1"
    assert rows["stub.ipynb"]["total"] == "0" and rows["stub.ipynb"]["pending"] == "1"
    number = (graded["out"] / "instructor" / "number_choice.txt").read_text()
    assert "expected a text answer" in number, number
    wrong = (graded["out"] / "feedback" / "wrong_choice.txt").read_text()
    assert "q2 case 2 (hidden): a hidden case failed" in wrong, wrong
    assert "q2 case 1: passed" in wrong  # the public check: "a" is one of the choices


@needs_sandbox
def test_no_rubric_or_expected_choice_reaches_a_student(graded):
    for path in (graded["out"] / "feedback").glob("*.txt"):
        text = path.read_text()
        assert RUBRIC[:40] not in text and MODEL[:40] not in text, path
        hidden = [ln for ln in text.splitlines() if "(hidden)" in ln]
        assert hidden and not [ln for ln in hidden if "expected" in ln or "found" in ln], path
        assert "expected 'b'" not in text, path


@needs_sandbox
def test_the_instructor_report_holds_the_rubric_and_every_answer(graded):
    page = (graded["out"] / "instructor" / "manual.html").read_text()
    assert RUBRIC in page and MODEL in page and "Why does <code>" not in page
    assert "Because doubling is linear." in page and "No idea." in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; **bold**" in page
    assert "<script>" not in page
    # the stub's and the untouched answers: said to be missing
    assert page.count("no answer (the answer cell is empty") == 3, page
    own = (graded["out"] / "instructor" / "right.txt").read_text()
    assert "q3 (pending, 1 point), the answer:\n    | Because doubling is linear." in own
    assert "rubrics:" in (graded["out"] / "instructor" / "_run.txt").read_text()


@needs_sandbox
def test_a_resumed_run_keeps_the_pending_answers(graded, build):
    _, outcomes = classroom.grade_class(
        build.autograder, graded["folder"], out=graded["out"], resume=True, echo=False
    )
    assert all(o.public.startswith("(graded by an earlier run") for o in outcomes)
    by = {o.submission: o for o in outcomes}
    assert by["right.ipynb"].score == 3 and by["right.ipynb"].pending == {"q3": 1.0}
    page = (graded["out"] / "instructor" / "manual.html").read_text()
    assert "Because doubling is linear." in page
    with (graded["out"] / "grades.csv").open() as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    assert rows == graded["rows"]


@needs_sandbox
def test_the_filled_exercise_page_is_graded_with_its_explain_answer(build, tmp_path):
    page_root = tmp_path / "page"
    (page_root / "book" / "toy").mkdir(parents=True)
    (page_root / "book" / "toy" / "assignment.ipynb").write_text(
        (build.out_dir.parent / "root" / "book" / "toy" / "assignment.ipynb").read_text()
    )
    page = nbformat.read(
        grading.exercise_page("toy", root=page_root, student=build.student), as_version=4
    )
    right = nbformat.read(build.solution, as_version=4)
    filled = _answer_cell(page, "Linear maps distribute.")
    sources = {c.source.split("(")[0].split(" =")[0]: c.source for c in right.cells}
    for cell in filled.cells:
        key = cell.source.split("(")[0].split(" =")[0]
        if cell.cell_type == "code" and key in ("def double", "q2_choice"):
            cell.source = sources[key]
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(filled, folder / "page.ipynb")
    _, outcomes = classroom.grade_class(build.autograder, folder, echo=False)
    o = outcomes[0]
    assert (o.score, o.max, o.error, o.pending) == (3, 3, "", {"q3": 1.0}), o
    assert o.manual == {"q3": "Linear maps distribute."}


@needs_sandbox
def test_lab_grade_one_notebook_prints_the_pending_points(build, tmp_path, capsys):
    import argparse

    nb = tmp_path / "alice.ipynb"
    right = nbformat.read(build.solution, as_version=4)
    nbformat.write(
        _answer_cell(_filled(nbformat.read(build.student, as_version=4), right), "Hi"), nb
    )
    args = argparse.Namespace(
        slug="toy", notebook=str(nb), autograder=build.autograder, out=tmp_path / "out",
        jobs=1, timeout=120, memory_mb=4000, max_output_mb=5, solution=None,
        check_sandbox=False, unsandboxed=False, resume=False, forbid=None, rubrics=None,
    )  # fmt: skip
    assert classroom.cli(args) == 0
    shown = capsys.readouterr().out
    assert "q3: pending (1 point, read by the instructor)" in shown, shown
    assert "total: 3 / 3 autograded points, 1 pending" in shown, shown
    assert "Hi" in (tmp_path / "out" / "instructor" / "manual.html").read_text()
    args.rubrics = tmp_path / "missing.json"
    with pytest.raises(ValueError, match="rubrics"):
        classroom.cli(args)
