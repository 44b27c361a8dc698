"""Grading a class: every submission in its own sandbox, scored outside it.

``lab grade <slug> <folder>`` calls :func:`grade_class`; ``lab grade <slug> <notebook>``
:func:`grade_isolated`. For each submission:

1. the notebook is read here (never executed here) and its code cells are sent, with the
   **student programs** of its tests (:mod:`lab.tooling.gradeschema`: the test code without the
   expected values), into a fresh bubblewrap sandbox (:mod:`lab.tooling.sandbox`): its own PID,
   network, IPC and mount namespaces, only the Python environment and the ``lab`` package in
   view, a private ``/tmp``, limits on time, memory (all its processes together), CPU and output;
2. :mod:`lab.tooling.gradeworker` runs the cells and the programs there and sends back the
   student's answers as JSON;
3. this process compares them with the expected values of a **reference run** (the solution,
   run once per class in a sandbox of its own) and writes the scores and the feedback.

The questions the instructor reads (explain questions, otter's manual ones:
:mod:`lab.tooling.grademanual`) are not run: their answer cells are read from the notebook here,
their points are **pending** (the ``pending`` column of ``grades.csv``; the total is of the
autograded points), and ``instructor/manual.html`` lists each one's rubric and every answer.

Every failure of a submission (time, memory, output, ``sys.exit``, a dead process, an unreadable
file) is that submission's zero with the reason in the ``error`` column of ``grades.csv``; no
submission can stop the run or change another's grade. ``grades.csv`` is rewritten after each
submission (:mod:`lab.tooling.gradereport`), ``resume=True`` keeps the rows of an earlier run
whose file is unchanged. The autograder zip and the solution are checksummed before and after
the run; a change is reported. ``unsandboxed=True`` (where bubblewrap cannot run) grades without
isolation, with a warning in ``grades.csv`` and ``instructor/_run.txt``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.tooling import grademanual, gradereport, gradeschema, sandbox

__all__ = [
    "DEFAULT_MAX_OUTPUT_MB",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT",
    "Assignment",
    "Outcome",
    "cli",
    "grade_class",
    "grade_isolated",
    "prepare",
    "round_score",
    "write_results",
]

DEFAULT_TIMEOUT = 300  # seconds per submission: an assignment runs in 5-30 s on 2 cores
DEFAULT_MEMORY_MB = 8192  # all the sandbox's processes together; torch maps ~2 GB
DEFAULT_MAX_OUTPUT_MB = 5.0  # what the executed notebook may print, all cells together
MAX_NOTEBOOK_MB = 50
UNSANDBOXED = "graded --unsandboxed: submissions ran with the grader's permissions, unisolated"


@dataclass
class Outcome:
    """One graded submission."""

    submission: str
    score: float = 0.0
    max: float = 0.0
    questions: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0
    public: str = ""  # the student's feedback (public cases in full, hidden ones without values)
    full: str = ""  # every case, hidden ones included (the instructor's copy)
    log: str = ""  # the start of what the notebook printed (the instructor's copy)
    sha256: str = ""
    manual: dict[str, str | None] = field(default_factory=dict)  # explain answers (None: none)
    pending: dict[str, float] = field(default_factory=dict)  # their points, for the instructor


@dataclass
class Assignment:
    """An autograder prepared for grading: its cases, the sandbox programs, the reference."""

    autograder: Path
    solution: Path
    name: str
    cases: list
    programs: dict[str, str]
    reference: dict
    secrets: list[str]
    unsandboxed: bool = False
    seconds: float = 0.0
    forbidden: dict[str, list[str]] = field(default_factory=dict)
    forbidden_share: float = (
        0.0  # of a question's marks kept when its code calls a forbidden symbol
    )
    manual: dict[str, dict] = field(default_factory=dict)  # grademanual's questions (rubrics)
    notes: list[str] = field(default_factory=list)  # for instructor/_run.txt


def _check_number(name: str, value, *, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number (got {value!r})")
    if not value >= low:
        raise ValueError(f"{name} must be >= {low:g} (got {value!r})")
    return float(value)


def _check_file(name: str, path, suffix: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (got {path!r})")
    path = Path(path)
    if not path.is_file() or path.suffix.lower() != suffix:
        raise ValueError(f"{name} must be an existing {suffix} file (got {path})")
    return path.resolve()


def round_score(value: float, points: list[float] | tuple[float, ...] = ()) -> float:
    """``value`` rounded to the precision of the points: two decimals, or as many as the finest
    point value has (``0.125`` points: three). A share of 2 points (``1.3333...``) is written
    ``1.33``.

    Raises
    ------
    TypeError
        If ``value`` is not a number or ``points`` not a sequence of numbers.
    """
    value = _check_number("value", value, low=float("-inf"))
    if not isinstance(points, (list, tuple)):
        raise TypeError(f"points must be a list of numbers (got {points!r})")
    decimals = 2
    for p in points:
        p = _check_number("points", p, low=0)
        text = f"{p:.6f}".rstrip("0")
        decimals = max(decimals, len(text.split(".")[1]) if "." in text else 0)
    return round(value + 0.0, decimals) + 0.0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:  # read-only
        while chunk := f.read(2**20):
            h.update(chunk)
    return h.hexdigest()


def _cells(data: bytes) -> tuple[list[str], str, dict]:
    """The code cells of a notebook file's bytes, its otter assignment name, the notebook."""
    nb = json.loads(data)
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a notebook (no cells)")
    cells = []
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            cells.append("".join(src) if isinstance(src, list) else str(src))
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    otter = meta.get("otter") if isinstance(meta.get("otter"), dict) else {}
    return cells, str(otter.get("assignment_name") or ""), nb


def _limits(timeout: float, memory_mb: float, max_output_mb: float) -> sandbox.Limits:
    return sandbox.Limits(
        timeout=timeout,
        memory_mb=memory_mb,
        process_memory_mb=memory_mb,
        cpu_s=timeout,
        max_output_mb=max_output_mb,
    )


def _run(cells, programs, limits, *, reference: bool, unsandboxed: bool, stop=None, forbid=()):
    message = {
        "cells": cells,
        "programs": programs,
        "reference": reference,
        "forbidden": [list(f) for f in forbid],
        "memory_mb": limits.process_memory_mb,
        "cpu_s": limits.cpu_s,
    }
    argv = [sys.executable, "-m", "lab.tooling.gradeworker"]
    return sandbox.run(
        argv, json.dumps(message).encode(), limits, unsandboxed=unsandboxed, stop=stop
    )


def _find_solution(autograder: Path) -> Path:
    found = sorted(autograder.parent.glob("*.ipynb"))
    if len(found) != 1:
        raise ValueError(
            f"solution: expected the solution notebook beside {autograder.name} (lab assign "
            f"writes autograder/assignment.ipynb), found {[p.name for p in found]}; pass solution="
        )
    return found[0]


def prepare(
    autograder: str | Path,
    solution: str | Path | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: float = DEFAULT_MEMORY_MB,
    unsandboxed: bool = False,
    forbidden: dict[str, list[str]] | None = None,
    forbidden_share: float = 0.0,
    rubrics: str | Path | None = None,
) -> Assignment:
    """Read the autograder's tests and run the solution once (the reference run, sandboxed).

    ``solution`` defaults to the one notebook beside the zip (``lab assign`` writes it there).
    ``forbidden`` (``{question: ["lab.eos.fit_power_law", ...]}``; default
    :data:`lab.tooling.gradeschema.FORBIDDEN` of the assignment, each under the question whose
    tests call it) names the ``lab`` functions a question asks the student to write: inside the sandbox they raise when the student's code
    calls them, and the question keeps ``forbidden_share`` of its marks (default none).
    ``rubrics`` is the ``rubrics.json`` of the questions the instructor reads (default: the
    ``instructor/rubrics.json`` that ``lab assign`` writes beside ``autograder/``, if there is
    one; :mod:`lab.tooling.grademanual`).

    Raises
    ------
    TypeError, ValueError
        If a file is missing or not what it should be, or the solution fails its own tests.
    RuntimeError
        If the sandbox cannot start (:func:`lab.tooling.sandbox.check_sandbox` says why).
    """
    from lab.tooling import grading

    autograder = _check_file("autograder", autograder, ".zip")
    solution = (
        _find_solution(autograder)
        if solution is None
        else _check_file("solution", solution, ".ipynb")
    )
    name, cases = gradeschema.load_tests(autograder)
    if forbidden is None:
        forbidden = gradeschema.forbidden_questions(cases, gradeschema.FORBIDDEN.get(name, []))
    if not isinstance(forbidden, dict) or not all(
        isinstance(q, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
        for q, v in forbidden.items()
    ):
        raise TypeError(f"forbidden must map questions to lists of names (got {forbidden!r})")
    forbidden_share = _check_number("forbidden_share", forbidden_share, low=0)
    if forbidden_share > 1:
        raise ValueError(f"forbidden_share must be <= 1 (got {forbidden_share})")
    manual, notes = _rubrics(rubrics, autograder, name, solution)
    start = time.monotonic()
    cells, _, _ = _cells(solution.read_bytes())
    ref_programs = {
        f"{c.question}/{c.index}": gradeschema.program(c, reference=True) for c in cases
    }
    limits = _limits(timeout, memory_mb, DEFAULT_MAX_OUTPUT_MB * 20)
    res = _run(cells, ref_programs, limits, reference=True, unsandboxed=unsandboxed)
    try:
        reference = json.loads(res.channel)["results"]
    except (ValueError, KeyError, TypeError) as err:
        log = res.output.decode(errors="replace")[-3000:]
        raise ValueError(
            f"solution: the reference run of {solution} failed ({err}): {log}"
        ) from None
    bad = gradeschema.check_reference(cases, reference)
    if bad:
        raise ValueError(f"solution {solution} fails its own tests when run here: {bad[:3]}")
    secrets = [ln.strip() for ln in grading.solution_lines(solution)]
    secrets += grademanual.manual_lines(manual)
    return Assignment(
        autograder,
        solution,
        name,
        cases,
        {f"{c.question}/{c.index}": gradeschema.program(c, reference=False) for c in cases},
        reference,
        secrets,
        unsandboxed,
        round(time.monotonic() - start, 1),
        forbidden,
        forbidden_share,
        manual,
        notes,
    )


def _rubrics(rubrics, autograder: Path, name: str, solution: Path) -> tuple[dict, list[str]]:
    """The manual questions of :func:`prepare`, and notes for the run report."""
    if rubrics is not None:
        path = _check_file("rubrics", rubrics, ".json")
    else:
        path = autograder.parent.parent / "instructor" / grademanual.RUBRICS
        if not path.is_file():
            marked = solution.read_text(errors="replace").count(grademanual.OTTER_BEGIN)
            note = (
                f"the solution has {marked} question(s) read by the instructor, but no {path} "
                "(lab assign writes it; pass rubrics=): their answers are not collected"
            )
            return {}, [note] if marked else []
    found, manual = grademanual.load_rubrics(path)
    if found and name and found != name:
        raise ValueError(f"rubrics {path} is of assignment {found!r}, not {name!r}")
    return manual, [f"rubrics: {path} ({len(manual)} question(s) read by the instructor)"]


def _grade(assignment: Assignment, notebook: Path, limits: sandbox.Limits, stop=None) -> Outcome:
    outcome = Outcome(notebook.name)
    outcome.manual = dict.fromkeys(assignment.manual)  # None: no answer (until one is read)
    outcome.pending = {q: float(m["points"]) for q, m in assignment.manual.items()}
    start = time.monotonic()
    try:
        try:
            with open(notebook, "rb") as f:
                data = f.read(MAX_NOTEBOOK_MB * 2**20 + 1)
        except OSError as err:
            raise _Zero(f"the file could not be read ({type(err).__name__}; deleted?)") from None
        outcome.sha256 = hashlib.sha256(data).hexdigest()
        if len(data) > MAX_NOTEBOOK_MB * 2**20:
            raise _Zero(f"the file is larger than {MAX_NOTEBOOK_MB} MB")
        try:
            cells, name, nb = _cells(data)
        except (ValueError, TypeError) as err:
            raise _Zero(f"not a readable notebook ({str(err)[:80]})") from None
        try:
            outcome.manual = grademanual.answers(nb, assignment.manual)
        except Exception:  # noqa: BLE001 - a notebook's odd shape is its own missing answer
            outcome.manual = dict.fromkeys(assignment.manual)
        if name and assignment.name and name != assignment.name:
            raise _Zero(f"submitted for assignment {name[:40]!r}, not {assignment.name!r}")
        res = _run(
            cells, assignment.programs, limits, reference=False,
            unsandboxed=assignment.unsandboxed, stop=stop,
            forbid=[(q, f) for q, fs in assignment.forbidden.items() for f in fs],
        )  # fmt: skip
        outcome.log = res.output.decode(errors="replace")
        _score(assignment, outcome, res, limits)
    except _Zero as zero:
        outcome.error = f"{zero}: scored 0"
    if not outcome.questions:  # the maximum is known even for a zero
        for c in assignment.cases:
            s, m = outcome.questions.get(c.question, (0.0, 0.0))
            outcome.questions[c.question] = (0.0, m + c.points)
    points = [m for _, m in outcome.questions.values()]
    if outcome.error:
        outcome.questions = {q: (0.0, m) for q, (_, m) in outcome.questions.items()}
    outcome.questions = {
        q: (round_score(s, points), round_score(m, points))
        for q, (s, m) in outcome.questions.items()
    }
    outcome.max = round_score(sum(points), points)
    outcome.score = round_score(sum(s for s, _ in outcome.questions.values()), points)
    outcome.seconds = round(time.monotonic() - start, 1)
    return outcome


class _Zero(Exception):
    """A submission that scores zero, with the reason."""


def _score(assignment: Assignment, outcome: Outcome, res, limits: sandbox.Limits) -> None:
    if res.stopped:
        raise _Zero("the run was interrupted before this submission finished")
    if res.timed_out:
        raise _Zero(f"timed out after {limits.timeout:g} s (infinite loop?)")
    if res.returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU):
        # RLIMIT_CPU equals the wall-clock limit: a busy loop can reach either one first
        raise _Zero(f"timed out: used its {limits.cpu_s:g} s of CPU time (infinite loop?)")
    if res.memory_exceeded:
        raise _Zero(
            f"used more than {limits.memory_mb:g} MB of memory (all its processes together)"
        )
    if res.output_exceeded:
        raise _Zero(
            f"the notebook printed {res.output_bytes / 2**20:.1f} MB or more "
            f"(limit {limits.max_output_mb:g} MB)"
        )
    if res.channel_exceeded:
        raise _Zero("the notebook sent back more answers than the tests can hold")
    if not res.channel:
        raise _Zero(
            f"the notebook's process died (exit status {res.returncode}: the kernel died, "
            "or it ran out of memory or CPU time)"
        )
    try:
        report = json.loads(res.channel)
        answers = report["results"]
        exit_cell = report.get("exit_cell")
        if not isinstance(answers, dict):
            raise TypeError("results")
    except (ValueError, KeyError, TypeError) as err:
        raise _Zero(f"the sandbox's answers were unreadable ({type(err).__name__})") from None
    if exit_cell is not None:
        raise _Zero(f"the notebook calls sys.exit (cell {str(exit_cell)[:6]})")
    scores = gradeschema.score(
        assignment.cases, assignment.reference, answers, solution=assignment.secrets
    )
    for item in report.get("forbidden") or []:
        q, symbol = (str(x)[:80] for x in item[:2])
        if q in scores and symbol in assignment.forbidden.get(q, []):
            share = assignment.forbidden_share
            scores[q].score *= share
            note = (
                f"{q}: your code calls {symbol}, which {q} asks you to write yourself: "
                f"{'no marks' if share == 0 else f'{share:g} of the marks'} for {q}"
            )
            scores[q].lines.insert(0, note)
            scores[q].full.insert(0, note)
    outcome.questions = {q: (s.score, s.max) for q, s in scores.items()}
    outcome.public = _summary(scores, full=False)
    outcome.full = _summary(scores, full=True, cases=assignment.cases)


def _summary(scores: dict, *, full: bool, cases=()) -> str:
    sources = {f"{c.question} case {c.index + 1}": c.source for c in cases}
    out = []
    for q, s in scores.items():
        lines = s.full if full else s.lines
        passed = sum(ln.endswith(": passed") for ln in lines)
        out.append(
            f"{q} results: {passed} of {len(lines)} cases passed ({s.score:.4g} / {s.max:g})"
        )
        for ln in lines:
            out.append(f"    {ln}")
            key = ln.split(" (hidden)")[0].split(":")[0]
            if full and "FAILED" in ln and key in sources:
                out += [f"        | {t}" for t in sources[key].splitlines()]
    return "\n".join(out) + "\n"


def grade_isolated(
    autograder: str | Path,
    notebook: str | Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: float = DEFAULT_MEMORY_MB,
    max_output_mb: float = DEFAULT_MAX_OUTPUT_MB,
    solution: str | Path | None = None,
    unsandboxed: bool = False,
    assignment: Assignment | None = None,
) -> Outcome:
    """Grade one notebook in a sandbox of its own (see the module docstring); never raises for
    what the submission does. ``assignment`` (from :func:`prepare`) skips the reference run.

    Raises
    ------
    TypeError, ValueError
        If an argument is of the wrong type, a file is missing or a limit is out of range.
    RuntimeError
        If the sandbox cannot start and ``unsandboxed`` is false.
    """
    autograder = _check_file("autograder", autograder, ".zip")
    if not isinstance(notebook, (str, os.PathLike)):
        raise TypeError(f"notebook must be a path (got {notebook!r})")
    limits = _limits(
        _check_number("timeout", timeout, low=1),
        _check_number("memory_mb", memory_mb, low=0),
        _check_number("max_output_mb", max_output_mb, low=0),
    )
    if assignment is None:
        assignment = prepare(autograder, solution, unsandboxed=unsandboxed)
    elif not isinstance(assignment, Assignment):
        raise TypeError(f"assignment must be an Assignment (got {assignment!r})")
    return _grade(assignment, Path(notebook), limits)


def write_results(
    outcomes: list[Outcome],
    out: str | Path,
    *,
    warning: str = "",
    skipped: dict[str, str] | None = None,
    manual: dict[str, dict] | None = None,
) -> Path:
    """Write ``grades.csv``, ``feedback/<name>.txt`` (for the student) and
    ``instructor/<name>.txt`` (everything) into ``out``; return the csv's path. ``skipped``
    (``{file: reason}``) adds a row for each entry that was not graded. ``manual`` (the
    questions the instructor reads, :attr:`Assignment.manual`) adds ``instructor/manual.html``:
    each one's rubric and every submission's answer; in ``grades.csv`` their cells read
    ``pending`` and the ``pending`` column holds their points (the total is of the autograded
    points).

    Raises
    ------
    TypeError
        If ``outcomes`` is not a list of :class:`Outcome` or ``out`` not a path.
    """
    if not isinstance(outcomes, list) or not all(isinstance(o, Outcome) for o in outcomes):
        raise TypeError("outcomes must be a list of Outcome")
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (got {out!r})")
    if manual is not None and not isinstance(manual, dict):
        raise TypeError(f"manual must be a dict of questions (got {manual!r})")
    out = Path(out)
    names, _ = gradereport.feedback_names([o.submission for o in outcomes])
    questions: list[str] = []
    for o in outcomes:
        questions += [q for q in [*o.questions, *o.pending] if q not in questions]
    maximum = max((o.max for o in outcomes), default=0.0)
    rows = []
    for o in outcomes:
        row = {q: "0" for q in questions} | {q: f"{s:g}" for q, (s, _) in o.questions.items()}
        row |= dict.fromkeys(o.pending, "pending")
        row |= {"submission": o.submission, "total": f"{o.score:g}", "error": o.error}
        row |= {"max": f"{o.max or maximum:g}", "feedback": names[o.submission], "sha256": o.sha256}
        row["pending"] = f"{sum(o.pending.values()):g}"
        rows.append(row)
        if o.public.startswith(_EARLIER):
            continue  # graded by an earlier run (--resume): its files are already there
        head = _head(o, maximum)
        scores = "".join(f"{q}: {s:g} / {m:g}\n" for q, (s, m) in o.questions.items())
        waits = "".join(
            f"{q}: pending ({_points(m)}): your instructor reads your answer\n"
            for q, m in o.pending.items()
        )
        feedback = out / "feedback" / names[o.submission]
        gradereport.write_atomic(feedback, f"{head}{scores}{waits}\n{o.public}\n")
        log = f"\n--- what the notebook printed (start) ---\n{o.log[:20000]}\n" if o.log else ""
        warn = f"WARNING: {warning}\n" if warning else ""
        text = f"{warn}{head}{scores}{waits}\n{o.full}\n{_answers(o)}{log}"
        gradereport.write_atomic(out / "instructor" / names[o.submission], text)
    for name, why in (skipped or {}).items():
        rows.append({"submission": name, "error": f"not graded: {why}"})
    if manual:
        answers = {o.submission: o.manual for o in outcomes}
        page = grademanual.report_html("", manual, answers)
        gradereport.write_atomic(out / "instructor" / "manual.html", page)
    path = out / "grades.csv"
    gradereport.write_csv(path, rows, questions, warning)
    return path


def _head(o: Outcome, maximum: float) -> str:
    pending = sum(o.pending.values())
    if pending:
        head = f"{o.submission}: {o.score:g} of {o.max or maximum:g} autograded points, "
        head += f"{pending:g} pending (read by your instructor)\n"
    else:
        head = f"{o.submission}: {o.score:g} / {o.max or maximum:g}\n"
    return head + (f"{o.error}\n" if o.error else "")


def _points(value: float) -> str:
    return f"{value:g} point{'' if value == 1 else 's'}"


def _answers(o: Outcome) -> str:
    """The explain answers of the instructor's copy (control characters removed)."""
    out = []
    for q, points in o.pending.items():
        answer = o.manual.get(q)
        if not answer:
            out.append(f"{q} (pending, {_points(points)}): no answer (empty, or not found)")
            continue
        clean = "".join(c if c.isprintable() or c == "\n" else " " for c in answer)
        out.append(f"{q} (pending, {_points(points)}), the answer:")
        out += [f"    | {line}" for line in clean.splitlines()]
    return "\n".join(out) + "\n" if out else ""


_EARLIER = "(graded by an earlier run"

from lab.tooling.classrun import cli, grade_class  # noqa: E402 - the class run builds on the above
