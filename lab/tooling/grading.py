"""Classroom assignments with otter-grader.

Every chapter keeps one **solution master**, ``book/<slug>/assignment.ipynb``, in otter's
notebook format (raw ``# BEGIN QUESTION`` / ``# BEGIN TESTS`` cells, ``# BEGIN SOLUTION``
markers in code). From it:

* :func:`assign` writes the student notebook and the autograder zip into
  ``_build/assign/<slug>/`` (``make assign CH=<slug>`` or ``python -m lab assign <slug>``), and
  the rubrics of the questions the instructor reads into its ``instructor/rubrics.json``
  (:mod:`lab.tooling.grademanual`);
* :func:`grade` scores any notebook against that autograder, locally, without Docker;
* :func:`roundtrip` proves the assignment works: the solutions score full marks, the
  untouched student stubs do not;
* :func:`exercise_page` writes ``book/<slug>/exercises.ipynb``, the student notebook the book
  shows and offers for download and Colab: stubs and self-checks against the public tests
  (:mod:`lab.tooling.selfcheck`), no solutions, no hidden tests; not executed by the book build.

Grading a class (each submission in its own bubblewrap sandbox, scored outside it) is
:mod:`lab.tooling.classroom`; :func:`grade` is otter's own grader, unsandboxed, for notebooks
you trust (the round trip of the solution masters).
Inside assignment tests, :func:`assert_close` says what it expected and what it found.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.tooling.paths import ROOT

__all__ = [
    "AssignmentBuild",
    "assert_close",
    "assign",
    "checker_cell",
    "exercise_page",
    "grade",
    "roundtrip",
    "solution_lines",
]


def _book_dir(root: Path | None) -> Path:
    return (root or ROOT) / "book"


def _master(slug: str, root: Path | None = None) -> Path:
    if not isinstance(slug, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise ValueError(f"slug must be a chapter folder name like 'eos' (got {slug!r})")
    path = _book_dir(root) / slug / "assignment.ipynb"
    if not path.exists():
        known = sorted(p.parent.name for p in _book_dir(root).glob("*/assignment.ipynb"))
        raise ValueError(
            f"slug {slug!r} has no assignment (book/{slug}/assignment.ipynb); chapters with one: {known}"
        )
    return path


@dataclass
class AssignmentBuild:
    """Where :func:`assign` put things."""

    slug: str
    out_dir: Path
    student: Path
    solution: Path
    autograder: Path
    rubrics: Path | None = None  # instructor/rubrics.json: the explain questions' rubrics


def assign(
    slug: str,
    out_dir: str | Path | None = None,
    *,
    root: Path | None = None,
    run_tests: bool = True,
) -> AssignmentBuild:
    """Run ``otter assign`` on a chapter's solution master.

    Writes ``<out_dir>/student/assignment.ipynb`` (hand this out) and
    ``<out_dir>/autograder/*.zip`` (grade with it; ``out_dir`` defaults to
    ``_build/assign/<slug>/``, and only its ``student/``, ``autograder/`` and
    ``instructor/rubrics.json`` are replaced). ``instructor/rubrics.json`` holds the prompt,
    points, model answer and rubric of each manual (explain) question, for ``lab grade``'s
    instructor report (:mod:`lab.tooling.grademanual`; otter leaves them out of the student
    notebook and the zip). With
    ``run_tests`` otter also executes the master and fails if a solution does not pass its own
    tests. The zip carries this checkout's wheel, which its ``environment.yml`` installs
    (:mod:`lab.tooling.assignenv`).

    See: book/intro.md ("Assignments").
    """
    master = _master(slug, root)
    if out_dir is not None and not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a path (got {out_dir!r})")
    out = Path(out_dir) if out_dir is not None else (root or ROOT) / "_build" / "assign" / slug
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} exists and is not a folder")
    # replace what an earlier run wrote (student/, autograder/), nothing else of the folder
    for part in ("student", "autograder"):
        shutil.rmtree(out / part, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    from lab.tooling import grademanual

    # the rubrics first: a malformed explain question fails before otter runs
    rubrics = out / "instructor" / grademanual.RUBRICS
    grademanual.write_rubrics(master, rubrics)
    from otter.assign import main as otter_assign

    # otter's assign in this process (what ``otter assign`` runs, without starting and
    # importing a second Python: about 5 s a call on these machines); its log goes to a buffer
    # that a failure quotes.
    log = io.StringIO()
    try:
        with (
            _grading_env(),
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", DeprecationWarning)
            otter_assign(str(master), str(out), no_run_tests=not run_tests)
    except Exception as err:
        raise RuntimeError(
            f"otter assign {master} failed: {err}\n{log.getvalue()[-3000:]}"
        ) from err
    zips = sorted((out / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"expected one autograder zip in {out / 'autograder'}, found {zips}")
    from lab.tooling import assignenv

    assignenv.bundle(zips[0], root=root)
    return AssignmentBuild(
        slug, out, out / "student" / master.name, out / "autograder" / master.name, zips[0], rubrics
    )


@contextlib.contextmanager
def _grading_env():
    """The environment the notebook's kernel inherits while otter assigns or grades: no
    progress bars, no static twins, no debugger file check."""
    keys = {"LAB_PROGRESS": "0", "LAB_EXPLORE_STATIC": "0", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    saved = {k: os.environ.get(k) for k in keys}
    for k, v in keys.items():
        os.environ.setdefault(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def grade(autograder: str | Path, notebook: str | Path) -> dict:
    """Grade ``notebook`` with an otter autograder zip.

    Runs otter's grader in this process (``otter.api.grade_submission``: what ``otter run``
    does, without starting and importing a second Python; the notebook still runs in its own
    kernel).

    Returns ``{"score": s, "max": m, "fraction": s/m, "questions": {name: (score, max)}}``.
    """
    autograder, notebook = Path(autograder), Path(notebook)
    for name, p in (("autograder", autograder), ("notebook", notebook)):
        if not p.exists():
            raise ValueError(f"{name} file does not exist: {p}")
    from otter.api import grade_submission

    with _grading_env(), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        # otter's own use of pandas (DataFrame.drop(inplace=True)) is deprecated upstream
        warnings.filterwarnings("ignore", message="The inplace keyword", module="otter")
        results = grade_submission(str(notebook), str(autograder), quiet=True)
    questions = {
        name: (float(results.get_score(name)), float(tf.possible))
        for name, tf in results.results.items()
    }
    score = sum(s for s, _ in questions.values())
    total = sum(m for _, m in questions.values())
    return {
        "score": score,
        "max": total,
        "fraction": score / total if total else 0.0,
        "questions": questions,
    }


def solution_lines(notebook: str | Path) -> list[str]:
    """The non-trivial code lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` markers
    (and lines ending in ``# SOLUTION``) of a solution master."""
    nb = json.loads(Path(notebook).read_text())
    lines: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        inside = False
        for line in "".join(cell["source"]).splitlines():
            tag = line.strip()
            if tag.startswith("# BEGIN SOLUTION"):
                inside = True
            elif tag.startswith("# END SOLUTION"):
                inside = False
            elif inside or tag.endswith("# SOLUTION"):
                code = line.split("# SOLUTION")[0].strip()
                if len(code) > 8 and not code.startswith("#"):
                    lines.append(code)
    return lines


def roundtrip(slug: str, *, root: Path | None = None, out_dir: str | Path | None = None) -> dict:
    """Build the assignment, grade the solution master and the untouched student notebook.

    Returns ``{"solution": grade(...), "student": grade(...), "leaked": [lines]}`` where
    ``leaked`` lists solution lines, and lines of the explain questions' model answers and
    rubrics, found in the student notebook (must be empty). otter's grader scores the
    autograded questions only (the explain questions are not in the zip).

    ``otter assign`` is run without its own test run: grading the solution master with the
    autograder (public and hidden tests) is the same check, and executing the master a third
    time would only double the cost of the round trip.
    """
    build = assign(slug, out_dir, root=root, run_tests=False)
    sol = grade(build.autograder, build.solution)
    stu = grade(build.autograder, build.student)
    student_text = build.student.read_text()
    leaked = [ln for ln in solution_lines(build.solution) if ln in student_text]
    from lab.tooling import grademanual

    manual = grademanual.manual_questions(_master(slug, root))
    leaked += [ln for ln in grademanual.manual_lines(manual) if ln in student_text]
    return {"solution": sol, "student": stu, "leaked": leaked, "build": build}


_OTTER_INIT = re.compile(r"^\s*(# Initialize Otter|import otter|grader\s*=\s*otter)", re.M)
_OTTER_EXPORT = re.compile(r"^\s*grader\.export", re.M)


def checker_cell(slug: str) -> str:
    """The exercise page's first cell after the Colab cell: otter's self-checks, public tests
    only (:func:`lab.tooling.selfcheck.checker`).

    Raises
    ------
    TypeError, ValueError
        If ``slug`` is not a chapter folder name.
    """
    if not isinstance(slug, str):
        raise TypeError(f"slug must be a string (got {slug!r})")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise ValueError(f"slug must be a chapter folder name like 'eos' (got {slug!r})")
    return (
        "# Self-checks: grader.check(\"q1\") runs question 1's public tests (the grader's\n"
        "# hidden tests run only when your instructor grades the notebook).\n"
        "from lab.tooling.selfcheck import checker\n"
        "\n"
        f'grader = checker("{slug}")'
    )


def exercise_page(
    slug: str, *, root: Path | None = None, student: str | Path | None = None
) -> Path:
    """Write ``book/<slug>/exercises.ipynb``, the student notebook the book offers (its download
    and Colab target), and ``lab/tooling/selfchecks/<slug>.json``, the public tests it checks
    against.

    The page is otter's student notebook (questions, stubs, a ``grader.check`` cell under each
    question), with otter's set-up cell replaced by :func:`checker_cell`, so the self-checks
    run wherever the page is opened (Colab included); no solution and no hidden test is in it.
    An explain question (otter's manual question) has no check; its prompt says the instructor
    reads the answer, and otter's question markers become the page's own
    (:func:`lab.tooling.grademanual.page_cells`: the answer is found there when graded).
    Its metadata names the assignment as otter's student notebook does
    (``otter.assignment_name``), so the filled-in page is a valid submission.
    It is marked ``mystnb.execution_mode: off`` (the book shows the stubs without running
    them); its first code cell is the Colab install cell of :mod:`lab.tooling.colab`.
    """
    if student is None:
        student = assign(slug, root=root, run_tests=False).student
    nb = json.loads(Path(student).read_text())
    from lab.tooling import selfcheck

    tests_dir = (root or ROOT) / "lab" / "tooling" / selfcheck.FOLDER
    tests_dir.mkdir(parents=True, exist_ok=True)
    selfcheck.write_public_tests(student, tests_dir / f"{slug}.json")
    cells, init_done = [], False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and _OTTER_EXPORT.search(src):
            continue
        if cell["cell_type"] == "code" and _OTTER_INIT.search(src):
            if init_done:
                continue
            cell, init_done = {**cell, "source": checker_cell(slug)}, True
        cell = copy.deepcopy(cell)
        cell.pop("id", None)
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
            tags = [
                t for t in cell.get("metadata", {}).get("tags", []) if not t.startswith("otter")
            ]
            cell["metadata"] = {"tags": tags} if tags else {}
        else:
            cell["metadata"] = {}
        cells.append(cell)
    if not init_done:
        raise ValueError(f"student notebook {student} has no otter set-up cell")
    from lab.tooling import grademanual

    manual = grademanual.manual_questions(_master(slug, root))
    cells = grademanual.page_cells(cells, manual)
    kinds = ""
    if any(c["cell_type"] == "markdown" and "**Predict" in "".join(c["source"]) for c in cells):
        kinds += (
            "The check of a **Predict** question only tests that your answer is one of the "
            "choices: the autograder marks the choice itself. "
        )
    if manual:
        kinds += (
            "**Explain** questions have no check: write your answer in the cell under the "
            "question; your instructor reads it and marks it with a rubric. "
        )
    note = (
        "```{admonition} How to work on this page\n:class: tip\n"
        "This is the chapter's assignment as a student gets it. Download the notebook (the "
        "download button at the top of the page) or open it on Colab or Binder (the rocket "
        "button), write your code where you see `...`, and run the check cell under each "
        'question: `grader.check("q1")` runs that question\'s **public** tests and says what '
        "it expected and what it found. Your instructor's autograder also runs hidden tests, "
        f"so passing every check is not yet full marks. {kinds}Submit the `.ipynb` file. "
        "Instructors: see [Teaching with the book](../teaching.md).\n```"
    )
    insert_at = 1 if cells and cells[0]["cell_type"] == "markdown" else 0
    cells.insert(insert_at, {"cell_type": "markdown", "metadata": {}, "source": note})
    out_nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "mystnb": {"execution_mode": "off"},
            # what an autograder needs to accept the page as a submission of this assignment
            # (otter reads it; lab grade checks it)
            "otter": {"assignment_name": slug},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    from lab.tooling import colab

    colab.apply(out_nb, colab.colab_cell())  # the Colab install cell, as in every toc notebook
    import nbformat

    node = nbformat.from_dict(out_nb)
    for i, cell in enumerate(node.cells):
        cell["id"] = f"{slug}-ex-{i:02d}"
    path = _book_dir(root) / slug / "exercises.ipynb"
    nbformat.write(node, path)
    return path


def _as_array(label: str, value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor (on any device, with or without grad)
        value = value.detach().cpu().numpy()
    try:
        if value is None or np.asarray(value).dtype.kind not in "biuf":
            raise TypeError("not numeric")
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(f"{label} is not a number or an array of numbers: {value!r}") from None


def _at(a: np.ndarray, index: tuple) -> str:
    return f"{a[index]:.10g}" if a.ndim else f"{float(a):.10g}"


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _assert_text(head: str, got, expected: str) -> None:
    """A text answer (a predict question's choice): equal after ``.strip().lower()``."""
    if not isinstance(got, str):
        raise AssertionError(
            f'{head}: expected a text answer (a string such as "a"), '
            f"found {_short(got)} ({type(got).__name__})"
        )
    if got.strip().lower() != expected.strip().lower():
        raise AssertionError(
            f"{head}: expected {_short(expected.strip())}, found {_short(got.strip())} "
            "(text is compared after .strip().lower())"
        )


def assert_close(
    name: str,
    got,
    expected,
    *,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    msg: object = "",
) -> None:
    """Assignment-test helper: fail with a message that says what was expected and what was
    found, e.g. ``q1 step: expected 1.25, found 1.3 (off by 0.05; tolerance rtol=1e-09,
    atol=1e-12)``; for arrays, at the worst entry (``expected x[3] = ...``). Passes when
    ``|got - expected| <= atol + rtol * |expected|`` everywhere (``numpy.isclose``); an
    ``expected`` of fewer dimensions is broadcast (``0.0`` for a whole array). Accepts numbers,
    arrays, nested lists and torch tensors. ``msg`` (a hint, as after ``assert ...,``) leads
    the message. A text ``expected`` (a predict question's choice, ``assert_close("q2_choice",
    q2_choice, "b")``) asks for text equal to it after ``.strip().lower()`` (the tolerances do
    not apply): ``q2_choice: expected 'b', found 'a'``.

    Raises
    ------
    AssertionError
        If the values differ beyond the tolerance, the shapes differ, ``got`` holds NaN/inf
        or is not numeric, or (a text ``expected``) ``got`` is not that text.
    TypeError, ValueError
        If ``name`` is not a string or a tolerance is negative.

    See: book/teaching.md
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string (got {name!r})")
    msg = msg if isinstance(msg, str) else repr(msg)  # like assert's message: any object
    for label, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
            raise ValueError(f"{label} must be a number >= 0 (got {tol!r})")
    head = f"{msg} ({name})" if msg else name
    if isinstance(expected, str):
        return _assert_text(head, got, expected)
    exp_a = _as_array(f"{head}: the expected value", expected)
    got_a = _as_array(f"{head}: your result", got)
    if got_a.shape != exp_a.shape and exp_a.ndim < got_a.ndim:
        with contextlib.suppress(ValueError):  # a scalar or a row stands for every entry
            exp_a = np.broadcast_to(exp_a, got_a.shape)
    if got_a.shape != exp_a.shape:
        raise AssertionError(
            f"{head}: expected shape {exp_a.shape}, found shape {got_a.shape}"
            + (f" (expected {_at(exp_a, ())}, found {got_a.tolist()})" if exp_a.ndim == 0 else "")
        )
    bad = ~np.isfinite(got_a) & np.isfinite(exp_a)
    close = np.isclose(got_a, exp_a, rtol=rtol, atol=atol, equal_nan=True)
    if close.all() and not bad.any():
        return
    diff = np.where(bad, np.inf, np.abs(np.nan_to_num(got_a - exp_a, nan=np.inf)))
    worst = np.unravel_index(int(np.argmax(np.where(close & ~bad, -1.0, diff))), got_a.shape)
    where = f"[{', '.join(map(str, worst))}]" if got_a.ndim else ""
    off = (
        "NaN or inf where a number is expected; "
        if bad[worst]
        else f"off by {float(diff[worst]):.3g}; "
    )
    raise AssertionError(
        f"{head}: expected{(' ' + name + where + ' =') if where else ''} {_at(exp_a, worst)}, "
        f"found {_at(got_a, worst)} ({off}tolerance rtol={rtol:g}, atol={atol:g}"
        + (f"; {int((~close | bad).sum())} of {got_a.size} entries differ)" if got_a.ndim else ")")
    )
