"""An installed lab finds its official-code fixtures: they ship as package data
(lab/core/official/), so a wheel unpacked outside the repository replays them (Colab installs
the package from a wheel, not from a checkout)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

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
