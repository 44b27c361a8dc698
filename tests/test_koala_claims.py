"""The koala chapter's claim registry (lab/koala/claims.py): every claim names its rival, the
notebooks only record, and the statements that hold by construction are code checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.koala.claims import CLAIMS, below

ROOT = Path(__file__).resolve().parents[1]


def _code(nb: str) -> str:
    cells = json.loads((ROOT / "book" / "koala" / nb).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_every_claim_names_its_rival_and_its_notebook_records_it():
    assert set(CLAIMS.notebooks()) == {"01", "02"}
    sources = {"01": _code("01-kalman-view.ipynb"), "02": _code("02-training-digits.ipynb")}
    for spec in CLAIMS.specs.values():
        assert spec.rival and not spec.no_rival, spec.id
        assert f'C["{spec.id}"].record(' in sources[spec.notebook], spec.id
    for nb, src in sources.items():
        assert f'CLAIMS.chapter("{nb}"' in src
        assert not re.search(r"\.claim\(|claims\.rule\(|revision\(", src), nb


def test_by_construction_statements_are_code_checks_not_claims():
    assert "one-dimension-exact" not in CLAIMS.specs and "state-memory" not in CLAIMS.specs
    assert "dev_1d < 1e-12" in _code("01-kalman-view.ipynb")
    assert 'floats["koalapp"] / floats["adam"]' in _code("02-training-digits.ipynb")


def test_the_drop_rule_reads_interval_distances_in_standard_errors():
    m = {"koalapp": {"hi": 0.7, "se": 0.05}}
    assert below(m, "koalapp", 0.8) == pytest.approx(2.0)
    assert "digits-for-cifar" in CLAIMS.deviations
