"""``lab grade`` for a class: every submission in its own sandbox, hostile ones included.

One class of the ``eos`` assignment is graded once (two at a time, as ``--jobs 2``): right,
wrong, partly right, and one submission for each hostile case of issue 32 (an infinite loop,
``sys.exit``, a kernel crash, one that deletes and writes files in its folder, one that prints
megabytes). Each hostile one must score zero with its reason in ``grades.csv`` (the file vandal
only vandalises its own sandbox: it keeps the marks of its right answers), while the right
submission graded beside them still scores full marks and the class folder is untouched.
The slow test grades a class of 20 generated submissions through the command line. The attacks
of issue 40 are in tests/test_grading_attacks.py. What each submission should score is read from
the autograder (:func:`worth`), so that the chapter's master can change.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from lab.tooling import classroom, grademanual, gradeschema, grading, kernels, sandbox

ROOT = Path(__file__).resolve().parents[1]
OK, WHY = sandbox.check_sandbox()
needs_sandbox = pytest.mark.skipif(not OK, reason=f"no sandbox here: {WHY}")

HOSTILE = {
    "loop": "while True:\n    pass",
    "exit": "import sys\n\nsys.exit(3)",
    "crash": "import os\n\nos._exit(1)",
    "files": (
        "import glob, os\n\n"
        "for p in glob.glob('*') + glob.glob('../*') + glob.glob('/tmp/*'):\n"
        "    try:\n"
        "        os.remove(p)\n"
        "    except OSError:\n"
        "        pass\n"
        "for name in ('grades.csv', '../results.json', 'right.ipynb', '/tmp/right.ipynb'):\n"
        "    try:\n"
        "        open(name, 'w').write('pwned')\n"
        "    except OSError:\n"
        "        pass"
    ),
    "prints": "print('x' * 8_000_000)",
}
REASONS = {
    "loop": "timed out",
    "exit": "sys.exit",
    "crash": "kernel died",
    "files": "",  # it deletes and writes only inside its own sandbox: no harm, no zero
    "prints": "printed",
}
LOOP_TIMEOUT = 20  # the infinite loop is graded alone, with a short limit


def _with_cell(nb, source: str, at: int = 1):
    nb = copy.deepcopy(nb)
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def _replace_def(nb, name: str, body: str):
    """The notebook with the code cell defining ``name`` replaced by ``body``."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if c.cell_type == "code" and f"def {name}(" in c.source)
    cell.source = body
    return nb


def make_class(build, folder: Path, *, size: int | None = None) -> dict[str, str]:
    """Write submissions into ``folder``; return ``{file name: kind}``. Without ``size``, one of
    each kind but the loop; with ``size``, that many, the kinds in turn (the loop included)."""
    folder.mkdir(parents=True, exist_ok=True)
    right = nbformat.read(build.solution, as_version=4)
    stub = nbformat.read(build.student, as_version=4)
    kinds = {
        "right": right,
        "stub": stub,
        # all but the imbalance question: it returns d unchanged
        "wrong_q2": _replace_def(
            right, "imbalance_update", "def imbalance_update(d, r, eta):\n    return d"
        ),
        # the power-law question passes 1 of its 3 cases (its first)
        "partial_q3": _replace_def(
            right, "fit_power_law", "def fit_power_law(k, err):\n    return 0.7"
        ),
    }
    kinds |= {name: _with_cell(right, src) for name, src in HOSTILE.items()}
    if size is None:
        chosen = [(f"{kind}.ipynb", kind) for kind in kinds if kind != "loop"]
    else:
        order = list(kinds)
        chosen = [
            (f"student{i:02d}_{order[i % len(order)]}.ipynb", order[i % len(order)])
            for i in range(size)
        ]
    for name, kind in chosen:
        nbformat.write(kinds[kind], folder / name)
    return dict(chosen)


def worth(build) -> dict:
    """What the assignment built in ``build`` is worth, read from its autograder: ``points``
    ({question: points}), ``max`` (autograded), ``pending`` (explain questions' points),
    ``of(function)`` (the question whose tests call it), ``first(question)`` (the points of its
    first case), ``claimable`` (the points of the cases that are bare asserts: their verdict is
    decided inside the sandbox, so a forger can claim them) and ``fmt(x)`` (as grades.csv
    writes x)."""
    _, cases = gradeschema.load_tests(build.autograder)
    points: dict[str, float] = {}
    for c in cases:
        points[c.question] = points.get(c.question, 0.0) + c.points
    _, manual = grademanual.load_rubrics(build.rubrics)

    def of(function: str) -> str:
        call = re.compile(rf"(?<![\w.]){function}\(")
        return next(c.question for c in cases if call.search(c.source))

    def fmt(x: float) -> str:
        return f"{classroom.round_score(x, list(points.values())):g}"

    checks = [c for c in cases if "__lab_case__(" not in gradeschema.program(c, reference=False)]
    return {
        "points": points,
        "max": round(sum(points.values()), 9),  # 3 x 2/3 is 2
        "pending": sum(float(m["points"]) for m in manual.values()),
        "of": of,
        "first": lambda q: next(c.points for c in cases if c.question == q),
        "claimable": sum(c.points for c in checks),
        "fmt": fmt,
    }


def head(w: dict, name: str, score: float) -> str:
    """The first line of a student's feedback file."""
    if w["pending"]:
        return (
            f"{name}: {w['fmt'](score)} of {w['fmt'](w['max'])} autograded points, "
            f"{w['pending']:g} pending"
        )
    return f"{name}: {w['fmt'](score)} / {w['fmt'](w['max'])}"


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.ipynb")}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return grading.assign("eos", tmp_path_factory.mktemp("assign") / "eos", run_tests=False)


@pytest.fixture(scope="module")
def graded(build, tmp_path_factory):
    if not OK:
        pytest.skip(f"no sandbox here: {WHY}")
    """The class graded once, two at a time; the loop alone with a short time limit."""
    folder = tmp_path_factory.mktemp("class")
    kinds = make_class(build, folder)
    nbformat.write(
        _with_cell(nbformat.read(build.solution, as_version=4), HOSTILE["loop"]),
        folder.parent / "loop.ipynb",
    )
    before = _digest(folder)
    out = tmp_path_factory.mktemp("results")
    start = time.monotonic()
    path, outcomes = classroom.grade_class(
        build.autograder, folder, out=out, jobs=2, timeout=240, echo=False
    )
    seconds = time.monotonic() - start
    loop = classroom.grade_isolated(
        build.autograder,
        folder.parent / "loop.ipynb",
        timeout=LOOP_TIMEOUT,
        assignment=classroom.prepare(build.autograder),
    )
    with path.open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    by_name = {o.submission: o for o in outcomes}
    return {
        "worth": worth(build),
        "rows": rows,
        "outcomes": by_name,
        "loop": loop,
        "kinds": kinds,
        "out": out,
        "folder": folder,
        "before": before,
        "seconds": seconds,
    }


def test_every_submission_is_in_grades_csv_and_the_folder_is_untouched(graded):
    assert set(graded["rows"]) == set(graded["kinds"])
    assert _digest(graded["folder"]) == graded["before"], "a submission changed the class folder"
    assert not (graded["folder"] / "grades.csv").exists(), "--out was not honoured"


def test_right_and_wrong_submissions_score_what_they_earn(graded):
    rows, w = graded["rows"], graded["worth"]
    full = w["fmt"](w["max"])
    assert rows["right.ipynb"]["total"] == full and rows["right.ipynb"]["max"] == full
    assert rows["right.ipynb"]["error"] == ""
    assert rows["right.ipynb"]["pending"] == f"{w['pending']:g}"
    assert rows["stub.ipynb"]["total"] == "0" and rows["stub.ipynb"]["error"] == ""
    q = w["of"]("imbalance_update")
    wrong = rows["wrong_q2.ipynb"]
    assert wrong["total"] == w["fmt"](w["max"] - w["points"][q]) and wrong[q] == "0", wrong


def test_scores_are_rounded_to_the_points_precision(graded):
    w = graded["worth"]
    q = w["of"]("fit_power_law")
    row = graded["rows"]["partial_q3.ipynb"]
    assert row[q] == w["fmt"](w["first"](q)) == "0.67", row  # one of three cases of 2 points
    assert row["total"] == w["fmt"](w["max"] - w["points"][q] + w["first"](q)), row
    for row in graded["rows"].values():
        for key in [*w["points"], "total"]:
            assert len(row[key].partition(".")[2]) <= 2, row


def test_a_submission_vandalising_its_folder_harms_no_one(graded):
    row = graded["rows"]["files.ipynb"]
    assert row["total"] == graded["worth"]["fmt"](graded["worth"]["max"]), row
    assert row["error"] == "", row
    assert _digest(graded["folder"]) == graded["before"]


@pytest.mark.parametrize("case", [c for c in HOSTILE if c not in ("loop", "files")])
def test_a_hostile_submission_scores_zero_with_its_reason(graded, case):
    row = graded["rows"][f"{case}.ipynb"]
    assert row["total"] == "0" and row["max"] == graded["worth"]["fmt"](graded["worth"]["max"])
    assert REASONS[case] in row["error"], row["error"]
    print(f"{case}: {row['error']}")


def test_an_infinite_loop_is_stopped_at_the_time_limit(graded):
    loop = graded["loop"]
    assert loop.score == 0 and REASONS["loop"] in loop.error, loop.error
    assert loop.seconds < LOOP_TIMEOUT + 30, loop.seconds
    print(f"loop: {loop.error} ({loop.seconds} s)")


def test_feedback_files_show_public_tests_only(graded):
    out = graded["out"]
    feedback = (out / "feedback" / "stub.txt").read_text()
    instructor = (out / "instructor" / "stub.txt").read_text()
    assert head(graded["worth"], "stub.ipynb", 0) in feedback and "q1 results" in feedback
    # the message of assert_close reaches the student
    assert "expected" in feedback and "found" in feedback
    # q1's hidden test (default_rng(1)) is in the instructor's copy only
    assert "default_rng(1)" in instructor and "default_rng(1)" not in feedback
    assert (out / "feedback" / "crash.txt").read_text().count("kernel died") == 1
    assert "exit status 1" in (out / "instructor" / "crash.txt").read_text()
    assert len(list((out / "feedback").glob("*.txt"))) == len(graded["kinds"])


def test_no_kernel_warns_about_unencrypted_tcp(graded):
    logs = [o.log for o in graded["outcomes"].values()] + [graded["loop"].log]
    assert not any("without encryption" in log for log in logs)


def test_round_score():
    assert classroom.round_score(4 / 3, [2, 1]) == 1.33
    assert classroom.round_score(0.1 + 0.2, [1]) == 0.3
    assert classroom.round_score(1 / 8, [0.125]) == 0.125
    with pytest.raises(TypeError, match="value"):
        classroom.round_score("1", [1])
    with pytest.raises(TypeError, match="points"):
        classroom.round_score(1.0, 2)


def test_bad_arguments_are_refused(build, tmp_path):
    nb = tmp_path / "a.ipynb"
    nbformat.write(nbformat.read(build.student, as_version=4), nb)
    with pytest.raises(ValueError, match="autograder"):
        classroom.grade_isolated(tmp_path / "missing.zip", nb)
    with pytest.raises(ValueError, match="timeout"):
        classroom.grade_isolated(build.autograder, nb, timeout=0)
    with pytest.raises(TypeError, match="memory_mb"):
        classroom.grade_isolated(build.autograder, nb, memory_mb="lots")
    with pytest.raises(ValueError, match="jobs"):
        classroom.grade_class(build.autograder, tmp_path, jobs=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .ipynb"):
        classroom.grade_class(build.autograder, tmp_path / "empty")
    with pytest.raises(TypeError, match="outcomes"):
        classroom.write_results([{"submission": "x"}], tmp_path)


def test_memory_limit_applies_where_the_os_allows():
    code = (
        "from lab.tooling.gradeworker import _limits\n"
        "import numpy as np\n"
        "note = _limits(2048, 0)\n"
        "try:\n"
        "    np.ones(4 * 2**30 // 8)\n"
        "    print('allocated', note)\n"
        "except MemoryError:\n"
        "    print('MemoryError')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    if sys.platform.startswith("linux"):
        assert done.stdout.strip() == "MemoryError", done.stdout + done.stderr
    else:  # pragma: no cover - macOS does not enforce RLIMIT_AS
        assert done.returncode == 0


def test_lab_assign_out_writes_where_asked_and_keeps_the_rest(tmp_path):
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    env = {**os.environ, "LAB_PROGRESS": "0"}
    cmd = [sys.executable, "-m", "lab", "assign", "eos", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "student" / "assignment.ipynb").is_file()
    assert len(list((tmp_path / "autograder").glob("*.zip"))) == 1
    assert keep.read_text() == "mine", "lab assign --out deleted a file it did not write"
    with pytest.raises(TypeError, match="out_dir"):
        grading.assign("eos", 3)


@needs_sandbox
def test_lab_grade_one_notebook_prints_its_scores_and_feedback(build, tmp_path):
    nb = tmp_path / "alice.ipynb"
    nbformat.write(nbformat.read(build.solution, as_version=4), nb)
    cmd = [
        sys.executable,
        "-m",
        "lab",
        "grade",
        "eos",
        str(nb),
        "--autograder",
        str(build.autograder),
    ]
    env = {**os.environ, "LAB_PROGRESS": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    w = worth(build)
    assert f"total: {w['fmt'](w['max'])} / {w['fmt'](w['max'])}" in done.stdout, done.stdout
    assert "q1 results" in done.stdout
    assert "without encryption" not in done.stdout + done.stderr
    bad = [*cmd[:5], str(tmp_path), "--jobs", "0", "--autograder", str(build.autograder)]
    bad = subprocess.run(bad, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "jobs must be >= 1" in bad.stderr


def test_kernels_of_lab_run_use_ipc_and_do_not_warn(capfd):
    """``lab run``'s kernel manager (IPC sockets) against a default one (TCP), which warns:
    the check can fail."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    def execute(km) -> str:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1 + 1)")])
        NotebookClient(nb, km=km, kernel_name="python3").execute()
        assert nb.cells[0].outputs[0]["text"] == "2\n"
        return capfd.readouterr().err

    km = kernels.kernel_manager()
    assert km.transport == ("ipc" if kernels.ipc_available() else "tcp")
    assert "without encryption" not in execute(km)
    if kernels.ipc_available():
        assert "without encryption" in execute(KernelManager(kernel_name="python3"))
    with pytest.raises(TypeError, match="kernel_name"):
        kernels.kernel_manager("")


@needs_sandbox
@pytest.mark.slow
def test_a_class_of_20_grades_in_one_run_with_two_jobs(build, tmp_path):
    """20 generated submissions (right, wrong, hostile) through ``lab grade --jobs 2``."""
    folder = tmp_path / "class"
    kinds = make_class(build, folder, size=20)
    cmd = [sys.executable, "-m", "lab", "grade", "eos", str(folder), "--jobs", "2"]
    cmd += ["--autograder", str(build.autograder), "--timeout", "120"]
    start = time.monotonic()
    env = {**os.environ, "LAB_PROGRESS": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env, cwd=ROOT)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with (folder / "grades.csv").open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    assert set(rows) == set(kinds) and len(rows) == 20
    w = worth(build)
    for name, row in rows.items():
        kind = kinds[name]
        if kind in HOSTILE and REASONS[kind]:
            assert row["total"] == "0" and REASONS[kind] in row["error"], row
        elif kind == "right":
            assert row["total"] == w["fmt"](w["max"]) and not row["error"], row
    print(done.stdout[-3000:])
    print(f"class of {len(rows)} graded with --jobs 2 in {seconds:.0f} s")
