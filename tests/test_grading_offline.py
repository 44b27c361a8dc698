"""The container route offline (issue 40 item 7): the autograder zip's ``lab`` needs no index.

otter's Docker image and Gradescope install ``optlab[book] @
file:///autograder/source/optlab-<version>-py3-none-any.whl`` from the zip's
``environment.yml``. Docker is not available here; what is checked instead, in a fresh venv
outside the repository:

* that requirement installs **without any package index** from the wheel in the unpacked zip
  (``pip install --no-index --no-deps --find-links <unpacked zip>``), and the wheel's
  dependencies (``optlab[book]``) are all met by this project's environment (the lock);
* with this environment's packages beside it (a ``.pth`` line: the rest of the image, which the
  image build downloads), otter's own runner (``otter run``, what the container's
  ``run_autograder`` calls) grades the eos solution to full marks with ``lab`` imported from the
  zip's wheel, in a network namespace without network where ``unshare -n`` can make one.

The full environment built from the zip's own lines, with the network, is
``tests/test_grading_zip.py`` (slow).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

from lab.tooling import assignenv, grading


def _unshare_works() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=30
    )
    return done.returncode == 0


def test_the_zip_installs_lab_offline_and_otter_grades_with_it(tmp_path):
    build = grading.assign("eos", tmp_path / "assign", run_tests=False)
    unpacked = tmp_path / "source"  # what /autograder/source holds in otter's container
    with zipfile.ZipFile(build.autograder) as z:
        z.extractall(unpacked)
    wheel = unpacked / assignenv.wheel_name()
    assert wheel.is_file()
    requirement = assignenv.package_requirement().replace(
        f"file://{assignenv.ZIP_SOURCE}/", f"file://{unpacked}/"
    )
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(unpacked)]
    full = subprocess.run([*pip, requirement], capture_output=True, text=True, timeout=300)
    assert full.returncode != 0 and "numpy" in full.stderr  # the rest comes from an index
    done = subprocess.run([*pip, "--no-deps", requirement], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # every requirement of optlab[book] is met by this environment's versions
    requires = json.loads(
        subprocess.run(
            [str(python), "-c", "import importlib.metadata as m, json; "
             "print(json.dumps(m.distribution('optlab').requires))"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    unmet = []
    for line in requires:
        req = Requirement(line)
        if req.marker and not req.marker.evaluate({"extra": "book"}):
            continue
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            unmet.append(line)
            continue
        if not req.specifier.contains(version, prereleases=True):
            unmet.append(f"{line} (here {version})")
    assert not unmet, unmet
    # otter's runner in that venv, this environment's packages beside it, no network
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "zz_project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run(  # not in this checkout: `python -c` puts the cwd on sys.path
        [str(python), "-c", "import lab; print(lab.__file__)"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert where.stdout.startswith(site), where.stdout + where.stderr
    out = tmp_path / "results"
    out.mkdir()
    run = f"{python} -m otter run -a {build.autograder} -o {out} {build.solution}"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LAB_PROGRESS": "0"}
    if _unshare_works():
        cmd = ["unshare", "-n", "sh", "-c", f"ip link set lo up && {run}"]
    else:  # pragma: no cover - where network namespaces are not allowed
        cmd = ["sh", "-c", run]
    graded = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    tests = json.loads((out / "results.json").read_text())["tests"]
    scores = {t["name"]: (t["score"], t["max_score"]) for t in tests if "score" in t}
    assert len(scores) >= 2 and all(s == m > 0 for s, m in scores.values()), scores
