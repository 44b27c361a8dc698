"""Every toc notebook runs where Colab and Binder run it: the package installed from a wheel with
its ``[book]`` extra, outside the repository, with nothing of ``[dev]``.

The slow test builds the wheel of this checkout, installs ``optlab[book]`` from it into a fresh
venv (with the lock, as Binder pins it), makes the modules that ``[dev]`` has and ``[book]``
lacks unimportable (a meta-path blocker in the venv: a notebook that needs one fails, even if a
dependency dragged it in), copies the toc notebooks to a folder outside the repository and runs
each there, two at a time, in that venv's kernel. The executed notebooks must run without an
error; the exercise pages (not executed by the book: they hold stubs) must start their
self-checks and run each ``grader.check`` cell without an error.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lab.tooling import colab

ROOT = Path(__file__).resolve().parents[1]

# import names of distributions whose name differs from the module
MODULES = {
    "jupyter-book": "jupyter_book",
    "pytest-xdist": "xdist",
    "otter-grader": "otter",
    "check-jsonschema": "check_jsonschema",
    "apricot-select": "apricot",
    "cooper-optim": "cooper",
    "hadamard-transform": "hadamard_transform",
    "ml-dtypes": "ml_dtypes",
    "sphinx-notfound-page": "notfound",
}

_BLOCKER = '''"""Installed by tests/test_outside_repo.py: the [dev]-only modules cannot be imported."""
import importlib.abc
import sys

BLOCKED = {blocked!r}


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"{{name}} is a [dev]-only module (blocked)", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
'''

_RUNNER = r"""
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
import nbformat
from nbclient import NotebookClient

jobs, out, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]


def run(path):
    nb = nbformat.read(path, as_version=4)
    stub_page = nb.metadata.get("mystnb", {}).get("execution_mode") == "off"
    start = time.monotonic()
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=stub_page,
        resources={"metadata": {"path": path.rsplit("/", 1)[0]}},
    )
    error = None
    try:
        client.execute()
    except Exception as exc:
        error = f"{type(exc).__name__}: {str(exc).strip()[-1500:]}"
    if stub_page and error is None:  # the self-checks must work, whatever the stubs do
        for cell in nb.cells:
            if cell.cell_type == "code" and "grader" in cell.source:
                bad = [o for o in cell.outputs if o.get("output_type") == "error"]
                if bad:
                    error = f"{cell.source[:60]!r}: {bad[0].get('ename')}: {bad[0].get('evalue')}"
                    break
    return {"notebook": path, "seconds": round(time.monotonic() - start, 1), "error": error}


with ThreadPoolExecutor(jobs) as pool:
    results = list(pool.map(run, paths))
json.dump(results, open(out, "w"), indent=1)
"""


_INSTALLED = (
    "import importlib.metadata as m; print(*(d.metadata['Name'] for d in m.distributions()))"
)


def dev_only_modules(installed: list[str] = ()) -> list[str]:
    """Import names of ``[dev]``'s distributions that neither the core nor ``[book]`` lists, nor
    the ``installed`` distributions (what ``[book]`` pulled in, and the harness: nbclient)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(specs):
        return {canonicalize_name(Requirement(s).name) for s in specs}

    keep = names(project["dependencies"]) | names(extras[colab.EXTRA])
    keep |= {canonicalize_name(n) for n in installed if n}
    only_dev = sorted(names(extras["dev"]) - keep)
    return [MODULES.get(n, n.replace("-", "_")) for n in only_dev]


def test_the_book_extra_is_part_of_dev_and_holds_what_notebooks_import():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    book = {canonicalize_name(Requirement(s).name) for s in extras[colab.EXTRA]}
    dev = {canonicalize_name(Requirement(s).name) for s in extras["dev"]}
    assert book <= dev, f"[book] packages missing from [dev]: {book - dev}"
    assert {"pesq", "pystoi", "pyvrp", "ml-dtypes", "otter-grader", "ipykernel"} <= book
    blocked = dev_only_modules()
    assert "jupyter_book" in blocked and "pytest" in blocked and "pesq" not in blocked
    assert f"[{colab.EXTRA}] @" in colab.install_requirement(ROOT), "the Colab cell's extra"


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """``(python, venv, folder)``: ``optlab[book]`` from this checkout's wheel in a fresh venv,
    [dev]'s other modules blocked, and a folder outside the repository holding a copy of
    ``_toc.yml`` and ``book/`` (what a reader or an instructor downloads with the notebooks)."""
    from test_grading_zip import clean_env, run_in_venv

    from lab.tooling.assignenv import build_wheel

    base = tmp_path_factory.mktemp("reader")
    start = time.monotonic()
    wheel = build_wheel(base / "wheel")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    run_in_venv(
        venv,
        ["python", "-m", "pip", "install", "--quiet", "-c", str(ROOT / "constraints.txt")]
        + [f"optlab[{colab.EXTRA}] @ {wheel.as_uri()}", "nbclient"],
        timeout=2400,
        cwd=base,
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # what [book] installed (with its dependencies) stays importable; the rest of [dev] not
    names = subprocess.run(
        [str(python), "-c", _INSTALLED], capture_output=True, text=True, check=True
    ).stdout.split()
    blocked = dev_only_modules(installed=names)
    (site / "_optlab_block_dev.py").write_text(_BLOCKER.format(blocked=blocked))
    (site / "_optlab_block_dev.pth").write_text("import _optlab_block_dev\n")
    probe = subprocess.run(
        [str(python), "-c", "import jupyter_book"],
        capture_output=True,
        text=True,
        cwd=base,
        env=clean_env(venv),
    )
    assert probe.returncode != 0, "a [dev]-only module imports in the reader's venv"
    folder = base / "reader"
    shutil.copytree(ROOT / "book", folder / "book", ignore=shutil.ignore_patterns("_build"))
    shutil.copy2(ROOT / "_toc.yml", folder / "_toc.yml")
    print(f"\nreader venv installed in {time.monotonic() - start:.0f} s")
    return python, venv, folder


@pytest.mark.slow
def test_every_toc_notebook_runs_outside_the_repository(reader, tmp_path):
    from test_grading_zip import run_in_venv

    python, venv, book = reader
    notebooks = [str(book / p.relative_to(ROOT)) for p in colab.toc_notebooks(ROOT)]
    results_path = tmp_path / "results.json"
    run_start = time.monotonic()
    run_in_venv(
        venv, ["python", "-c", _RUNNER, "2", str(results_path), *notebooks], timeout=5400, cwd=book
    )
    results = json.loads(results_path.read_text())
    ran = time.monotonic() - run_start
    failed = {
        Path(r["notebook"]).relative_to(book).as_posix(): r["error"] for r in results if r["error"]
    }
    slowest = sorted(results, key=lambda r: -r["seconds"])[:5]
    print(
        f"\n{len(results)} notebooks in {ran:.0f} s (2 at a time); "
        f"slowest: {[(Path(r['notebook']).name, r['seconds']) for r in slowest]}"
    )
    assert len(results) == len(notebooks)
    lines = [f"{k}: {' '.join(v.split())[-600:]}" for k, v in failed.items()]
    assert not failed, "notebooks that fail outside the repository:\n" + "\n".join(lines)


#: the chapter whose claims and grading run from the installed wheel (its notebooks are short)
OUTSIDE_SLUG = "lp_sufficiency"


@pytest.mark.slow
def test_lab_claims_and_lab_grade_run_from_the_installed_wheel(reader, tmp_path):
    """``lab claims`` executes a chapter's notebooks in the reader's folder and prints every
    registered claim with a verdict; ``lab grade`` (the installed one) grades the chapter's
    solution master with an autograder built in the checkout: full marks."""
    from importlib import import_module

    from test_grading_zip import clean_env, run_in_venv

    from lab.tooling import grading

    python, venv, folder = reader
    out = tmp_path / "claims.json"
    run_in_venv(venv, ["lab", "claims", OUTSIDE_SLUG, "-o", str(out)], timeout=1800, cwd=folder)
    records = json.loads(out.read_text())["claims"]
    ids = {r["id"] for r in records if r["chapter"] == OUTSIDE_SLUG}
    assert ids == set(import_module(f"lab.{OUTSIDE_SLUG}.claims").CLAIMS.specs), ids
    assert all(r.get("verdict") for r in records), "a claim without a verdict"
    assert (folder / "_build" / "run" / OUTSIDE_SLUG).is_dir(), "executed into the reader's folder"

    build = grading.assign(OUTSIDE_SLUG, tmp_path / "assign", run_tests=False)
    subs = tmp_path / "submissions"
    subs.mkdir()
    shutil.copy2(build.solution, subs / "alice.ipynb")
    sandbox = subprocess.run(
        [str(venv / "bin" / "lab"), "grade", OUTSIDE_SLUG, "--check-sandbox"],
        capture_output=True,
        text=True,
        cwd=folder,
        env=clean_env(venv),
    )
    flags = [] if sandbox.returncode == 0 else ["--unsandboxed"]
    run_in_venv(
        venv,
        ["lab", "grade", OUTSIDE_SLUG, str(subs), "--autograder", str(build.autograder)]
        + ["--solution", str(build.solution), "--out", str(tmp_path / "graded"), *flags],
        timeout=1800,
        cwd=folder,
    )
    text = (tmp_path / "graded" / "grades.csv").read_text().splitlines()
    rows = list(csv.DictReader(line for line in text if not line.startswith("#")))
    assert [r["submission"] for r in rows] == ["alice.ipynb"], rows
    assert rows[0]["error"] == "" and float(rows[0]["max"]) > 0, rows
    assert rows[0]["total"] == rows[0]["max"], rows
    print(f"\nlab claims: {len(ids)} claims; lab grade ({flags or 'sandboxed'}): {rows[0]}")
