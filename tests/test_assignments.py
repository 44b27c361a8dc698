"""The assignment round-trip, for every chapter with an assignment.

otter builds the student notebook and the autograder from the solution master; the master
must score full marks, the untouched student stubs must not, no solution line may leak into
the student notebook, and the book's student page (the self-checking student notebook) and its
public tests must be up to date with the master. The assignments compare numbers with
``assert_close`` and their configs install the package in otter's container
(tests/test_grading_zip.py builds that environment).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from lab.tooling import assignenv, grading, selfcheck

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
    # ... and so are the public tests its self-checks run (lab/tooling/selfchecks/<slug>.json)
    fresh_tests = fresh_root / "lab" / "tooling" / selfcheck.FOLDER / f"{slug}.json"
    assert json.loads(fresh_tests.read_text()) == selfcheck.public_tests(slug), (
        f"lab/tooling/selfchecks/{slug}.json is stale: run `make exercises`"
    )
    text = committed.read_text()
    for marker in (
        "BEGIN SOLUTION",
        "BEGIN TESTS",
        "BEGIN QUESTION",
        "TEST CONFIG",
        "hidden: true",
    ):
        assert marker not in text, f"student page shows {marker!r}"
    # the page is the self-checking student notebook: otter's checks, public tests only
    sources = [src for kind, src in _sources(committed) if kind == "code"]
    assert grading.checker_cell(slug) in sources
    questions = sorted(sol["questions"])
    assert sorted(re.findall(r'^grader\.check\("(\w+)"\)', "\n".join(sources), re.M)) == questions
    assert sorted(selfcheck.public_tests(slug)) == questions
    public = json.dumps(selfcheck.public_tests(slug))
    assert '"hidden": true' not in public
    assert not [ln for ln in grading.solution_lines(res["build"].solution) if ln in public]


def _test_cells(slug: str) -> list[str]:
    out, inside = [], False
    for kind, src in _sources(ROOT / "book" / slug / "assignment.ipynb"):
        if kind == "raw":
            inside = src.startswith("# BEGIN TESTS") or (inside and not src.startswith("# END"))
        elif inside and kind == "code":
            out.append(src)
    return out


@pytest.mark.parametrize("slug", SLUGS)
def test_assignment_tests_compare_numbers_with_assert_close(slug):
    """Each assignment's tests report expected and found values (assert_close) where they
    compare numbers: no bare ``abs(a - b) < tol`` or ``np.allclose`` assert is left."""
    cells = _test_cells(slug)
    assert any("assert_close(" in c for c in cells), f"{slug}: no test uses assert_close"
    bare = re.compile(r"^\s*assert\s+(abs\(|np\.allclose\(|torch\.allclose\()", re.M)
    offenders = [c.splitlines()[0] for c in cells if bare.search(c)]
    assert not offenders, f"{slug}: bare numeric asserts: {offenders}"


def test_assignment_configs_install_the_package_for_otters_container():
    """Every config cell names this version of the package (CPU torch) and the tested Python:
    ``python -m lab.tooling.assignenv`` writes them."""
    stale = [s for s in SLUGS if assignenv.sync(ROOT / "book" / s / "assignment.ipynb", check=True)]
    assert not stale, f"stale assignment configs (python -m lab.tooling.assignenv): {stale}"
    reqs = assignenv.requirements()
    assert reqs[0] == f"--extra-index-url {assignenv.CPU_INDEX}"
    assert reqs[1].startswith("torch==") and reqs[1].endswith("+cpu")
    from lab import __version__

    wheel = f"optlab-{__version__}-py3-none-any.whl"
    assert reqs[2] == f"optlab[book] @ file:///autograder/source/{wheel}"
    assert assignenv.tested_python() == "3.11"


def test_the_autograder_zip_carries_the_wheel_of_this_checkout(tmp_path):
    """The zip installs ``lab`` from the wheel inside it (otter's container unpacks the zip into
    /autograder/source): its modules are this checkout's, byte for byte, so the grader runs the
    instructor's code offline."""
    import hashlib
    import zipfile

    build = grading.assign("eos", tmp_path / "eos", run_tests=False)
    with zipfile.ZipFile(build.autograder) as z:
        names = z.namelist()
        env = z.read("environment.yml").decode()
        wheel_name = next(n for n in names if n.endswith(".whl"))
        (tmp_path / wheel_name).write_bytes(z.read(wheel_name))
    assert assignenv.package_requirement() in env
    assert assignenv.package_requirement().endswith("/" + wheel_name)
    with zipfile.ZipFile(tmp_path / wheel_name) as w:
        packed = {n: hashlib.sha256(w.read(n)).hexdigest() for n in w.namelist()}
    mine = {
        str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (ROOT / "lab").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert mine and all(packed.get(n) == h for n, h in mine.items()), sorted(
        n for n, h in mine.items() if packed.get(n) != h
    )[:5]
    # a second bundle adds nothing (the wheel is kept by content)
    assert assignenv.bundle(build.autograder) == assignenv.build_wheel()
    with zipfile.ZipFile(build.autograder) as z:
        assert sum(n.endswith(".whl") for n in z.namelist()) == 1


def test_assert_close_says_what_it_expected_and_found():
    grading.assert_close("x", 1.0 + 1e-13, 1.0)
    grading.assert_close("t", [[1, 2], [3, 4]], np.array([[1, 2], [3, 4.0]]))
    with pytest.raises(AssertionError, match=r"step: expected 1\.25, found 1\.3 \(off by 0\.05"):
        grading.assert_close("step", 1.3, 1.25)
    with pytest.raises(AssertionError, match=r"hint \(v\): expected v\[2\] = 3\.5, found 3 "):
        grading.assert_close("v", [1, 2, 3], [1, 2, 3.5], msg="hint")
    with pytest.raises(AssertionError, match=r"expected shape \(3,\), found shape \(2,\)"):
        grading.assert_close("v", [1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match="expected 1, found nan"):
        grading.assert_close("v", float("nan"), 1.0)
    with pytest.raises(AssertionError, match="not a number .*None"):
        grading.assert_close("v", None, 1.0)
    with pytest.raises(TypeError, match="name"):
        grading.assert_close(3, 1.0, 1.0)
    with pytest.raises(ValueError, match="atol"):
        grading.assert_close("v", 1.0, 1.0, atol=-1)


def test_self_checks_run_the_public_tests_with_their_messages(tmp_path):
    """The exercise page's ``grader = checker(slug)``: a right answer passes, a wrong one
    fails with assert_close's message (otter's ``check`` in this process)."""
    import lab
    from lab import eos

    grader = selfcheck.checker("eos", tmp_path / "tests")
    env = {"np": np, "lab": lab, "eos": eos}
    env["imbalance_update"] = lambda d, r, eta: d * (1.0 - eta**2 * r**2)
    assert grader.check("q2", global_env=env).grade == 1.0
    env["imbalance_update"] = lambda d, r, eta: d
    result = grader.check("q2", global_env=env)
    assert result.grade == 0.0
    assert "expected" in result.summary() and "found" in result.summary()
    with pytest.raises(ValueError, match="slug"):
        selfcheck.public_tests("no_such_chapter")
    with pytest.raises(TypeError, match="slug"):
        selfcheck.public_tests(3)
