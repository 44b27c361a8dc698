"""Issue 40: one class run of attacking submissions next to honest canaries, in the sandbox.

Every attacker is built on the untouched student stubs (so any mark it gets is undeserved)
plus one hostile cell; the canaries are the right solution and two partly wrong ones. After one
``grade_class`` run (two at a time) the canaries keep their scores, the attackers get nothing
(but the public bare ``assert`` cases a forger can claim, see ``book/teaching.md``), the class
folder, the autograder zip and the solution are unchanged, the run completes, and no process of
it outlives it. Skipped, with the reason, where the sandbox cannot run. What each canary earns
is read from the autograder (``test_grading_class.worth``).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import os
import re
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from test_grading_class import _replace_def, _with_cell, worth

from lab.tooling import classroom, gradereport, grading, sandbox

OK, WHY = sandbox.check_sandbox()
pytestmark = pytest.mark.skipif(not OK, reason=f"no sandbox here: {WHY}")

MEMORY_MB = 3000  # all of a submission's processes together, for this run


def _attacks(paths: dict[str, str]) -> dict[str, str]:
    folder, zip_, solution, out = paths["folder"], paths["zip"], paths["solution"], paths["out"]
    return {
        "classmate_edit": (
            "import glob\n"
            f"for p in glob.glob({folder!r} + '/*.ipynb') + glob.glob('/*/*/*.ipynb'):\n"
            "    try:\n"
            "        open(p, 'w').write('{}')\n"
            "    except OSError:\n"
            "        pass\n"
            f"open({folder!r} + '/right.ipynb', 'w').write('pwned')"
        ),
        "zip_overwrite": f"open({zip_!r}, 'wb').write(b'pwned')",
        "classmate_kill": (
            "import os, signal\n"
            "for pid in map(int, filter(str.isdigit, os.listdir('/proc'))):\n"
            "    if pid not in (1, os.getpid()):\n"
            "        try:\n"
            "            os.kill(pid, signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass"
        ),
        "deletion": f"import os\n\nos.remove({folder!r} + '/right.ipynb')",
        "patch_assert": (
            "import lab.tooling.grading as g\n\ng.assert_close = lambda *a, **k: None\n"
            "import builtins\n\nbuiltins.AssertionError = type('Nope', (Exception,), {})"
        ),
        "patch_serializer": (
            "import json, pickle\n"
            "_dumps = json.dumps\n"
            "def forged(obj, *a, **k):\n"
            "    if isinstance(obj, dict) and 'results' in obj:\n"
            "        for r in obj['results'].values():\n"
            "            r.pop('error', None)\n"
            "            for e in r['events']:\n"
            "                e['ok'] = True\n"
            "                e['got'] = {'shape': [], 'data': [0.5]}\n"
            "    return _dumps(obj, *a, **k)\n"
            "json.dumps = forged\n"
            "pickle.dump = lambda *a, **k: None"
        ),
        "forged_channel": (
            "import json, os, gc\n"
            "msg = next(o for o in gc.get_objects() if isinstance(o, dict) and 'programs' in o)\n"
            "fds = [int(f) for f in os.listdir('/proc/self/fd') if int(f) > 2]\n"
            "res = {k: {'events': [{'kind': 'check', 'ok': True}] * 500} for k in msg['programs']}\n"
            "for fd in fds:\n"
            "    try:\n"
            "        os.write(fd, json.dumps({'results': res}).encode())\n"
            "    except OSError:\n"
            "        pass\n"
            "os._exit(0)"
        ),
        "read_solution": (
            "import json\n"
            f"nb = json.load(open({solution!r}))\n"
            "for c in nb['cells']:\n"
            "    if c['cell_type'] == 'code':\n"
            "        exec(''.join(c['source']))"
        ),
        "daemon": (
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        for _ in range(600):\n"
            "            time.sleep(0.5)\n"
            "            try:\n"
            f"                open({out!r} + '/grades.csv', 'w').write('pwned')\n"
            "            except OSError:\n"
            "                pass\n"
            "    os._exit(0)"
        ),
        "leak_hidden": (
            "import gc\n"
            "def gd_step_xy(x, y, eta):\n"
            "    texts = [o for o in gc.get_objects() if isinstance(o, str) and 'default_rng(1)' in o]\n"
            "    raise ValueError(' '.join(texts) or 'nothing found')"
        ),
        "huge_stdout": "import sys\nwhile True:\n    sys.stdout.write('x' * 2**20)",
        "memory_children": (
            "import os, time\n"
            "import numpy as np\n"
            "for _ in range(4):\n"
            "    if os.fork() == 0:\n"
            "        a = np.ones(2**30 // 8)\n"
            "        time.sleep(60)\n"
            "        os._exit(0)\n"
            "time.sleep(60)"
        ),
    }


REASONS = {
    "huge_stdout": "printed",
    "memory_children": "memory",
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("attacks")
    build = grading.assign("eos", base / "assign", run_tests=False)
    folder, out = base / "class", base / "results"
    folder.mkdir()
    right = nbformat.read(build.solution, as_version=4)
    stub = nbformat.read(build.student, as_version=4)
    w = worth(build)
    full, fit = w["fmt"](w["max"]), w["of"]("fit_power_law")
    canaries = {
        "right.ipynb": (right, full),
        "wrong_q2.ipynb": (
            _replace_def(
                right, "imbalance_update", "def imbalance_update(d, r, eta):\n    return d"
            ),
            w["fmt"](w["max"] - w["points"][w["of"]("imbalance_update")]),
        ),
        "partial_q3.ipynb": (
            _replace_def(right, "fit_power_law", "def fit_power_law(k, err):\n    return 0.7"),
            w["fmt"](w["max"] - w["points"][fit] + w["first"](fit)),
        ),
        # names: two that make the same feedback file, a spreadsheet formula, an upper-case suffix
        "alice smith.ipynb": (right, full),
        "alice_smith.ipynb": (stub, "0"),
        "=HYPERLINK(1).ipynb": (right, full),
        "upper.IPYNB": (right, full),
        # a question asks for fit_power_law: calling lab's own loses it, with the reason
        "forbidden.ipynb": (
            _replace_def(
                right,
                "fit_power_law",
                "def fit_power_law(k, err):\n    return eos.fit_power_law(k, err)[0]",
            ),
            w["fmt"](w["max"] - w["points"][fit]),
        ),
    }
    for name, (nb, _) in canaries.items():
        nbformat.write(nb, folder / name)
    (folder / "notes.ipynb.txt").write_text("renamed by a browser")
    paths = {
        "folder": str(folder),
        "zip": str(build.autograder),
        "solution": str(build.solution),
        "out": str(out),
    }
    attacks = _attacks(paths)
    for name, src in attacks.items():
        nbformat.write(_with_cell(stub, src), folder / f"{name}.ipynb")
    before = {p.name: _sha(p) for p in folder.iterdir()}
    inputs = {p: _sha(Path(p)) for p in (paths["zip"], paths["solution"])}
    start = time.monotonic()
    path, outcomes = classroom.grade_class(
        build.autograder, folder, out=out, jobs=2, timeout=120, memory_mb=MEMORY_MB, echo=False
    )
    seconds = time.monotonic() - start
    time.sleep(2)  # a daemon that outlived the run would write now
    with path.open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    print(f"class of {len(rows)} entries graded in {seconds:.0f} s")
    return {
        "rows": rows,
        "outcomes": {o.submission: o for o in outcomes},
        "canaries": canaries,
        "attacks": attacks,
        "folder": folder,
        "out": out,
        "before": before,
        "inputs": inputs,
        "seconds": seconds,
        "path": path,
        "worth": w,
    }


def test_the_private_tmp_is_mounted_before_the_binds():
    """A grader whose venv lives under /tmp (a CI runner, pytest's tmp_path) keeps it visible:
    bwrap applies mounts in order, so the tmpfs on /tmp must come before the read-only binds."""
    cmd = sandbox.command(["python", "-c", "pass"])
    tmpfs = cmd.index("/tmp", cmd.index("--tmpfs"))
    binds = [i for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert binds and tmpfs < min(binds), cmd


def test_canaries_keep_their_scores(run):
    for name, (_, total) in run["canaries"].items():
        shown = gradereport.escape_cell(name)
        row = run["rows"][shown]
        assert row["total"] == total, (name, row)
        assert not row["error"], row


ATTACKS = list(_attacks(dict.fromkeys(("folder", "zip", "solution", "out"), "x")))


def test_calling_a_forbidden_lab_function_costs_the_question(run):
    text = (run["out"] / "feedback" / "forbidden.txt").read_text()
    q = run["worth"]["of"]("fit_power_law")
    assert f"{q}: your code calls lab.eos.fit_power_law" in text, text
    assert f"no marks for {q}" in text, text


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attacker_gets_no_undeserved_marks(run, attack):
    row = run["rows"][f"{attack}.ipynb"]
    o = run["outcomes"][f"{attack}.ipynb"]
    # the public cases that are bare asserts (0.45 <= p_critical <= 0.55; a predict question's
    # "is it one of the choices") are what a forger can claim: hard-coding p_critical = 0.5 or
    # any one of the choices earns them too
    w = run["worth"]
    assert o.questions["q1"][0] == 0 and o.questions["q2"][0] == 0, row
    assert o.score <= float(w["fmt"](w["claimable"])), row
    if attack in REASONS:
        assert re.search(REASONS[attack], row["error"]), row["error"]
    print(f"{attack}: {row['total']} / {row['max']} {row['error']}")


def test_the_class_folder_and_the_instructor_files_are_untouched(run):
    assert {p.name: _sha(p) for p in run["folder"].iterdir()} == run["before"]
    assert {p: _sha(Path(p)) for p in run["inputs"]} == run["inputs"]
    assert "pwned" not in run["path"].read_text()
    assert "inputs unchanged" in (run["out"] / "instructor" / "_run.txt").read_text()


def _ours_or_orphaned(p: psutil.Process) -> bool:
    """A sandbox process of this test (or an orphan), not of another grader running beside."""
    try:
        parents = p.parents()
    except psutil.Error:
        return False
    others = [
        q for q in parents if q.pid not in (1, os.getpid()) and not q.name().startswith("bwrap")
    ]
    return any(q.pid == os.getpid() for q in parents) or not others


def test_nothing_outlives_the_run(run):
    left = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if ("lab.tooling.gradeworker" in cmd or "bwrap" in cmd[:20]) and _ours_or_orphaned(p):
            left.append((p.pid, cmd[:120]))
    assert not left, left


def test_hidden_tests_do_not_leak_into_feedback(run):
    feedback = (run["out"] / "feedback" / "leak_hidden.txt").read_text()
    assert "default_rng(1)" not in feedback and "a hidden case failed" in feedback, feedback
    for path in (run["out"] / "feedback").glob("*.txt"):
        text = path.read_text()
        assert "default_rng(1)" not in text and "geomspace(1, 1" not in text, path


def test_every_entry_is_graded_or_listed_and_names_are_safe(run):
    rows = run["rows"]
    assert rows["notes.ipynb.txt"]["error"].startswith("not graded: not a .ipynb file")
    assert "'=HYPERLINK(1).ipynb" in rows, sorted(rows)
    files = {r["feedback"] for r in rows.values() if r["feedback"]}
    assert len(files) == len(rows) - 1, "two submissions share a feedback file"
    assert {rows["alice smith.ipynb"]["feedback"], rows["alice_smith.ipynb"]["feedback"]} == {
        "alice_smith.txt",
        "alice_smith-2.txt",
    }
    assert "collision" in (run["out"] / "instructor" / "_run.txt").read_text()
    assert len(list((run["out"] / "feedback").glob("*.txt"))) == len(rows) - 1


def test_the_run_fits_its_time_budget(run):
    assert run["seconds"] < 400, run["seconds"]


def test_a_vanished_file_is_a_row_with_its_reason(tmp_path):
    build = grading.assign("eos", tmp_path / "assign", run_tests=False)
    a = classroom.prepare(build.autograder)
    o = classroom._grade(a, tmp_path / "gone.ipynb", classroom._limits(60, 2000, 5))
    assert o.score == 0 and o.max == worth(build)["max"], o
    assert "could not be read" in o.error, o.error


def test_the_filled_exercise_page_scores_full_marks_and_the_empty_one_zero(tmp_path):
    """The student route: the book's exercise page, downloaded, filled, submitted."""
    build = grading.assign("eos", tmp_path / "assign", run_tests=False)
    page = nbformat.read(grading.ROOT / "book" / "eos" / "exercises.ipynb", as_version=4)
    assert page.metadata["otter"]["assignment_name"] == "eos"
    solution = nbformat.read(build.solution, as_version=4)

    def key(source: str) -> str:  # "def name" of a function, "name" of a predict's choice
        found = re.match(r"\s*(def \w+|\w+)", source)
        return found.group(1) if found else ""

    answers = {
        key(c.source): c.source
        for c in solution.cells
        if c.cell_type == "code" and "otter_assign_solution_cell" in c.metadata.get("tags", [])
    }
    filled = copy.deepcopy(page)
    for cell in filled.cells:
        if cell.cell_type == "code" and key(cell.source) in answers:
            cell.source = answers[key(cell.source)]
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(filled, folder / "filled.ipynb")
    nbformat.write(page, folder / "empty.ipynb")
    _, outcomes = classroom.grade_class(build.autograder, folder, echo=False, jobs=2)
    got = {o.submission: (o.score, o.max, o.error) for o in outcomes}
    full = worth(build)["max"]
    assert got["filled.ipynb"] == (full, full, ""), got
    assert got["empty.ipynb"][0] == 0, got
