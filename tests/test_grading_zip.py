"""otter's container and Gradescope route: the autograder zip's own environment grades.

``otter assign`` writes ``environment.yml`` into each autograder zip; otter's Docker image and
Gradescope build the grading environment from it alone. Here that environment is built the
same way, in a fresh venv outside the repository, from the zip's own lines (its Python, its pip
requirements: otter, PyTorch's CPU index and torch, ``optlab[book]`` from the wheel the zip
carries): the one substitution is the folder, ``/autograder/source`` (where otter's container
unpacks the zip) becoming the folder the zip is unpacked into here. Then ``otter run`` in that venv grades each chapter's solution master: full
marks. Three chapters by default (``eos``, and ``cvrp`` and ``arecho``, which need the book
extra's ``pyvrp`` and ``pesq``); all 19 in the slow test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from lab.tooling import assignenv, grading

#: building the zip's environment from its own requirements takes 10-13 minutes on 2 cores: not in CI
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SLUGS = sorted(p.parent.name for p in (ROOT / "book").glob("*/assignment.ipynb"))
QUICK = ["eos", "cvrp", "arecho"]


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a process of ``venv``: nothing of this checkout's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["LAB_PROGRESS"] = "0"
    return env


def run_in_venv(venv: Path, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run ``venv/bin/<args[0]> args[1:]`` in ``venv``'s :func:`clean_env` (``kwargs`` to
    ``subprocess.run``: ``cwd``, ``timeout``) and fail with the tail of its output unless it
    exits 0."""
    done = subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=clean_env(venv),
        **kwargs,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def zip_environment(autograder: Path) -> tuple[str, list[str]]:
    """``(python version, pip lines)`` of an autograder zip's ``environment.yml``."""
    with zipfile.ZipFile(autograder) as z:
        env = yaml.safe_load(z.read("environment.yml"))
    deps = env["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python="))
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    return python.removeprefix("python="), pip


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    """Every chapter's autograder zip and solution master, built lazily."""
    base = tmp_path_factory.mktemp("assign")
    built: dict[str, grading.AssignmentBuild] = {}

    def get(slug: str) -> grading.AssignmentBuild:
        if slug not in built:
            built[slug] = grading.assign(slug, base / slug, run_tests=False)
        return built[slug]

    return get


@pytest.fixture(scope="module")
def zip_venv(zips, tmp_path_factory):
    """A fresh venv built from the eos zip's environment.yml (the other zips must agree)."""
    version, pip_lines = zip_environment(zips("eos").autograder)
    assert version == assignenv.tested_python()
    python = shutil.which(f"python{version}")
    if python is None:
        pytest.skip(f"no python{version} on this machine (the zip's Python)")
    base = tmp_path_factory.mktemp("zipenv")
    package = assignenv.package_requirement()
    assert package in pip_lines, f"the zip does not install {package}: {pip_lines}"
    source = base / "source"
    with zipfile.ZipFile(zips("eos").autograder) as z:
        z.extractall(source)
    lines = [ln.replace(f"file://{assignenv.ZIP_SOURCE}", source.as_uri()) for ln in pip_lines]
    (base / "requirements.txt").write_text("\n".join(lines) + "\n")
    venv = base / "venv"
    start = time.monotonic()
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    run_in_venv(
        venv,
        ["python", "-m", "pip", "install", "--quiet", "--retries", "0"]
        + ["-r", str(base / "requirements.txt")],
        timeout=2400,
        cwd=base,
    )
    freeze = run_in_venv(venv, ["python", "-m", "pip", "freeze"]).stdout
    assert re.search(r"^torch==\S+\+cpu$", freeze, re.M), "the zip's torch is not the CPU build"
    assert not re.search(r"^jupyter-book==", freeze, re.M), "the [dev] extras were installed"
    print(f"zip environment built in {time.monotonic() - start:.0f} s")
    return venv, pip_lines


def grade_in_zip_env(venv: Path, pip_lines: list[str], build, work: Path) -> dict:
    """``otter run`` of the venv on the solution master, outside the repository."""
    assert zip_environment(build.autograder)[1] == pip_lines, "zips differ in their environment"
    work.mkdir(parents=True)
    notebook = work / "submission.ipynb"
    shutil.copy2(build.solution, notebook)
    run_in_venv(
        venv,
        ["otter", "run", "-a", str(build.autograder), "-o", str(work), str(notebook)],
        timeout=900,
        cwd=work,
    )
    results = json.loads((work / "results.json").read_text())
    tests = results["tests"]
    score = sum(t["score"] for t in tests if "score" in t)
    possible = sum(t["max_score"] for t in tests if "max_score" in t)
    return {"score": score, "max": possible, "tests": tests}


def _check_full_marks(zips, zip_venv, slugs, tmp_path):
    venv, pip_lines = zip_venv
    scores = {}
    for slug in slugs:
        res = grade_in_zip_env(venv, pip_lines, zips(slug), tmp_path / slug)
        scores[slug] = f"{res['score']:g}/{res['max']:g}"
        failed = [t.get("name") for t in res["tests"] if t.get("score") != t.get("max_score")]
        assert res["max"] > 0 and res["score"] == res["max"], f"{slug}: {scores[slug]} {failed}"
    print("zip environment grades:", scores)


def test_the_installed_package_is_the_wheel_not_the_checkout(zip_venv, tmp_path):
    venv, _ = zip_venv
    done = run_in_venv(
        venv, ["python", "-c", "import lab, otter; print(lab.__file__)"], cwd=tmp_path, timeout=300
    )
    assert Path(done.stdout.strip()).is_relative_to(venv), done.stdout


def test_the_zip_environment_grades_the_solution_to_full_marks(zips, zip_venv, tmp_path):
    _check_full_marks(zips, zip_venv, QUICK, tmp_path)


@pytest.mark.slow
def test_the_zip_environment_grades_every_chapter_to_full_marks(zips, zip_venv, tmp_path):
    _check_full_marks(zips, zip_venv, [s for s in SLUGS if s not in QUICK], tmp_path)
