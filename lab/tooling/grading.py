"""Classroom assignments with otter-grader.

Every chapter keeps one **solution master**, ``book/<slug>/assignment.ipynb``, in otter's
notebook format (raw ``# BEGIN QUESTION`` / ``# BEGIN TESTS`` cells, ``# BEGIN SOLUTION``
markers in code). From it:

* :func:`assign` writes the student notebook and the autograder zip into
  ``_build/assign/<slug>/`` (``make assign CH=<slug>`` or ``python -m lab assign <slug>``);
* :func:`grade` scores any notebook against that autograder, locally, without Docker;
* :func:`roundtrip` proves the assignment works: the solutions score full marks, the
  untouched student stubs do not;
* :func:`exercise_page` writes ``book/<slug>/exercises.ipynb``, the clean student-facing page
  the book shows (no otter cells, no tests, no solutions; not executed by the book build).

Inside assignment tests, :func:`assert_close` gives students a readable failure message.
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

__all__ = [
    "AssignmentBuild",
    "assert_close",
    "assign",
    "exercise_page",
    "grade",
    "roundtrip",
    "solution_lines",
]

ROOT = Path(__file__).resolve().parents[2]


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


def assign(
    slug: str,
    out_dir: str | Path | None = None,
    *,
    root: Path | None = None,
    run_tests: bool = True,
) -> AssignmentBuild:
    """Run ``otter assign`` on a chapter's solution master.

    Writes ``<out_dir>/student/assignment.ipynb`` (hand this out) and
    ``<out_dir>/autograder/*.zip`` (grade with it). With ``run_tests`` otter also executes the
    master and fails if a solution does not pass its own tests.

    See: book/intro.md ("Assignments").
    """
    master = _master(slug, root)
    out = Path(out_dir) if out_dir is not None else (root or ROOT) / "_build" / "assign" / slug
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
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
    return AssignmentBuild(
        slug, out, out / "student" / master.name, out / "autograder" / master.name, zips[0]
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
    ``leaked`` lists solution lines found in the student notebook (must be empty).

    ``otter assign`` is run without its own test run: grading the solution master with the
    autograder (public and hidden tests) is the same check, and executing the master a third
    time would only double the cost of the round trip.
    """
    build = assign(slug, out_dir, root=root, run_tests=False)
    sol = grade(build.autograder, build.solution)
    stu = grade(build.autograder, build.student)
    student_text = build.student.read_text()
    leaked = [ln for ln in solution_lines(build.solution) if ln in student_text]
    return {"solution": sol, "student": stu, "leaked": leaked, "build": build}


_OTTER_CELL = re.compile(
    r"^\s*(# Initialize Otter|import otter|grader\s*=\s*otter|grader\.check|grader\.export)", re.M
)


def exercise_page(
    slug: str, *, root: Path | None = None, student: str | Path | None = None
) -> Path:
    """Write ``book/<slug>/exercises.ipynb``: the student notebook without otter's machinery.

    Markdown prompts and code stubs stay; the otter set-up cell and ``grader.check`` cells are
    replaced by a short note on how to check answers locally. The page is marked
    ``mystnb.execution_mode: off`` so the book shows the stubs without running them. Its first
    code cell is the Colab install cell of :mod:`lab.tooling.colab`, as in every toc notebook.
    """
    if student is None:
        student = assign(slug, root=root, run_tests=False).student
    nb = json.loads(Path(student).read_text())
    cells = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "code" and _OTTER_CELL.search(src):
            continue
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
    note = (
        "```{admonition} How to work on this assignment\n:class: tip\n"
        f"This page is the student view of the chapter's assignment. Run `make assign CH={slug}` "
        f"(or `python -m lab assign {slug}`) to get the notebook with its autograder in "
        f"`_build/assign/{slug}/`; inside it, the check cell under each question tells you whether your answer "
        "passes. Instructors grade a submission with `python -m lab grade "
        f"{slug} submission.ipynb`.\n```"
    )
    insert_at = 1 if cells and cells[0]["cell_type"] == "markdown" else 0
    cells.insert(insert_at, {"cell_type": "markdown", "metadata": {}, "source": note})
    out_nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "mystnb": {"execution_mode": "off"},
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


def assert_close(name: str, got, expected, *, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Assignment-test helper: fail with a message a student can act on."""
    got_a = np.asarray(got, dtype=float)
    exp_a = np.asarray(expected, dtype=float)
    if got_a.shape != exp_a.shape:
        raise AssertionError(f"{name}: expected shape {exp_a.shape}, got {got_a.shape}")
    if not np.all(np.isfinite(got_a)):
        raise AssertionError(f"{name}: your result contains NaN or inf")
    if not np.allclose(got_a, exp_a, rtol=rtol, atol=atol):
        err = np.max(np.abs(got_a - exp_a))
        raise AssertionError(
            f"{name}: off by up to {err:.3g} (tolerance rtol={rtol:g}, atol={atol:g})"
        )
