"""An installed lab finds its official-code fixtures: they ship as package data
(lab/core/official/), so a wheel unpacked outside the repository replays them (Colab installs
the package from a wheel, not from a checkout)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from lab.core.fixtures import OFFICIAL_DIR
from lab.tooling import assignenv

SCRIPT = """
import lab, sys
from pathlib import Path
assert Path(lab.__file__).is_relative_to(Path(sys.argv[1])), lab.__file__
from lab.core.fixtures import official_fixture
for slug in ("ace", "arecho", "coreset", "cvrp", "halo", "medro", "ot_dro"):
    assert official_fixture(f"{slug}_official.json").is_file(), slug
import lab.ot_dro, lab.arecho
lab.ot_dro.official_parity()
lab.arecho.official_parity()
print("ok")
"""


@pytest.mark.parametrize("path", sorted(OFFICIAL_DIR.glob("*_official.json")), ids=lambda p: p.stem)
def test_every_official_fixture_has_its_provenance(path):
    """Each fixture names the code it was recorded from (repository, full commit, file or
    files, functions, command, versions) and stays small; each chapter's tests check its own
    repository and cases."""
    prov = json.loads(path.read_text())["provenance"]
    assert prov["repository"] and re.fullmatch(r"[0-9a-f]{40}", prov["commit"]), prov
    assert prov.get("file") or prov.get("files"), "the recorded source file(s)"
    for key in ("functions", "command", "versions"):
        assert prov[key], key
    assert {"python", "numpy"} <= set(prov["versions"])
    assert path.stat().st_size < 100_000


def test_a_wheel_unpacked_outside_the_repository_replays_its_fixtures(tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(assignenv.build_wheel()) as z:
        z.extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site), LAB_PROGRESS="0")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(site)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
