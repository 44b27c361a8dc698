"""Students' self-checks on the book's exercise pages: otter's ``grader.check`` with the public
tests only, wherever the page is opened (a clone, a download, Binder, Colab).

``book/<slug>/exercises.ipynb`` (written by :func:`lab.tooling.grading.exercise_page`) starts
with ``grader = checker("<slug>")``. The public tests of each chapter's assignment travel inside
the package, as ``lab/tooling/selfchecks/<slug>.json`` (otter's test dicts, the hidden test
cases left out by ``otter assign``), because a notebook opened on Colab cannot read its own
file and otter refuses tests stored in notebook metadata there. :func:`checker` writes them
into a temporary ``tests/`` folder and returns an ``otter.Notebook`` that reads them.

The hidden tests never leave the instructor's autograder zip (``lab assign``).

What a self-check covers is what can be checked without the answers: an **implement**
question's public tests; of a **predict** question (``q2_choice = "b"``), only its public test
that the choice is one of the options (worth no points: the choice itself is compared, hidden,
by the autograder); an **explain** question (otter's manual question) has no test and no check
cell: the page says that the instructor reads the answer (:mod:`lab.tooling.grademanual`).
otter's ``check`` of a question whose public cases are all worth 0 points displays its result
as usual (its ``.grade`` attribute divides by zero: the page does not use it).
"""

from __future__ import annotations

import json
import pprint
import re
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["FOLDER", "checker", "public_tests", "write_public_tests"]

FOLDER = "selfchecks"  # inside lab/tooling (package data)


def _check_slug(slug: Any) -> str:
    if not isinstance(slug, str):
        raise TypeError(f"slug must be a string (got {slug!r})")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise ValueError(f"slug must be a chapter folder name like 'eos' (got {slug!r})")
    return slug


def public_tests(slug: str) -> dict[str, dict]:
    """The public tests of the chapter's assignment: ``{question: otter test dict}``.

    Raises
    ------
    TypeError, ValueError
        If ``slug`` is not a chapter with an assignment.
    """
    slug = _check_slug(slug)
    data = resources.files("lab.tooling").joinpath(FOLDER, f"{slug}.json")
    if not data.is_file():
        raise ValueError(f"slug {slug!r} has no self-checks (lab/tooling/{FOLDER}/{slug}.json)")
    return json.loads(data.read_text())


def write_public_tests(student: str | Path, path: str | Path) -> dict[str, dict]:
    """Extract the public tests from otter's student notebook ``student`` (its metadata holds
    them, hidden cases already removed) into the JSON file ``path``; return them.

    Raises
    ------
    TypeError
        If an argument is not a path.
    ValueError
        If the notebook holds no otter tests, or a hidden case (a safety check).
    """
    for name, value in (("student", student), ("path", path)):
        if not isinstance(value, (str, Path)):
            raise TypeError(f"{name} must be a path (got {value!r})")
    nb = json.loads(Path(student).read_text())
    tests = (nb.get("metadata", {}).get("otter") or {}).get("tests") or {}
    if not tests:
        raise ValueError(f"student notebook {student} holds no otter tests in its metadata")
    for q, test in tests.items():
        for suite in test.get("suites", []):
            if any(case.get("hidden") for case in suite.get("cases", [])):
                raise ValueError(f"student notebook {student}: {q} holds a hidden test case")
    Path(path).write_text(json.dumps(tests, indent=1, sort_keys=True) + "\n")
    return tests


def checker(slug: str, tests_dir: str | Path | None = None) -> Any:
    """An ``otter.Notebook`` whose ``check("q1")`` runs question 1's public tests.

    The tests are written into ``tests_dir`` (default: a fresh temporary folder).

    Raises
    ------
    TypeError, ValueError
        If ``slug`` is not a chapter with an assignment, or ``tests_dir`` not a path.
    ImportError
        If otter-grader is not installed (``pip install "optlab[book]"`` installs it).
    """
    tests = public_tests(slug)
    if tests_dir is not None and not isinstance(tests_dir, (str, Path)):
        raise TypeError(f"tests_dir must be a path (got {tests_dir!r})")
    try:
        import otter
    except ImportError as err:  # pragma: no cover - the book extra installs it
        raise ImportError(
            'the self-checks need otter-grader: pip install "optlab[book]" (or otter-grader)'
        ) from err
    folder = Path(tests_dir) if tests_dir is not None else Path(tempfile.mkdtemp(prefix="lab-"))
    folder.mkdir(parents=True, exist_ok=True)
    for question, test in tests.items():
        text = f"OK_FORMAT = True\n\ntest = {pprint.pformat(test, indent=4, width=100)}\n"
        (folder / f"{question}.py").write_text(text)
    return otter.Notebook(tests_dir=str(folder))
