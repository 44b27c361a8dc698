"""The statistician's contract for a converted chapter (issue "Verdicts a statistician would
sign"; CONTRIBUTING.md, "Converting a chapter").

For every chapter in ``CONVERTED`` (tests/converted.py):

1. its claims are registered in ``lab/<slug>/claims.py`` before any notebook measures them, and
   the notebooks declare nothing (no ``claim(``, ``rule(``, ``revision(`` calls: they record);
2. every registered claim names its nearest rival (or why it has none at our size), and the
   reproduction page renders the rivals, the deviations and the claims table;
3. in the build's records: every registered claim is recorded, each with a measured rival
   unless the registry says there is none; no control is a constant typed into the notebook,
   the claim's own value or another claim's value;
4. every diagnosis carries the evidence the engine checks (``scale``: a fitted trend over three
   or more sizes toward the paper; ``noise-floor``: the paper's margin, below two standard
   errors; ``tight-null``: its equivalence test; ``deviation``: a registered deviation;
   ``official-code``: a committed fixture).

Revisions against the last release are checked for every registry by tests/test_registry.py.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from converted import CONVERTED

from lab.core import claims
from lab.core.fixtures import OFFICIAL_DIR
from lab.tooling.chapters import chapter_notebooks
from lab.tooling.registryext import chapter_registry

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_JSON = Path(
    os.environ.get("LAB_CLAIMS_JSON") or ROOT / "_build" / "html" / "_static" / "claims.json"
)
#: what a converted notebook may not call: declarations belong in the registry
DECLARATIONS = re.compile(r"\.claim\(|\bclaims\.rule\(|\brevision\(|\bclaims\.chapter\(")


def _code(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def constant_controls(source: str) -> list[str]:
    """Calls ``control(name, <a number typed in>)`` in ``source`` (a rival must be measured)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        value = node.args[1]
        if isinstance(value, ast.UnaryOp):
            value = value.operand
        if name == "control" and isinstance(value, ast.Constant):
            out.append(ast.unparse(node)[:80])
    return out


def _records(slug: str) -> list[dict]:
    if not CLAIMS_JSON.exists():
        pytest.skip("the book is not built (make book; make test builds it before pytest)")
    return [r for r in json.loads(CLAIMS_JSON.read_text())["claims"] if r["chapter"] == slug]


def test_a_constant_control_is_found():
    src = "C['a'].record(x, control=claims.control('Adam', 0.5))\nclaims.control('b', y)\n"
    assert constant_controls(src) == ["claims.control('Adam', 0.5)"]
    assert constant_controls("control('x', -1)") == ["control('x', -1)"]
    assert constant_controls("def f(:") == []


@pytest.mark.parametrize("slug", CONVERTED)
def test_claims_are_registered_and_notebooks_only_record(slug):
    reg = chapter_registry(slug)
    assert reg is not None, f"lab/{slug}/claims.py must define CLAIMS (lab.core.registry)"
    assert reg.slug == slug
    for path in chapter_notebooks(slug, ROOT):
        src = _code(path)
        found = DECLARATIONS.findall(src)
        assert not found, f"{path.name}: declarations {found} belong in lab/{slug}/claims.py"
        assert not constant_controls(src), (
            f"{path.name}: a control typed as a constant {constant_controls(src)}"
        )
    recording = [p.name for p in chapter_notebooks(slug, ROOT) if "CLAIMS.chapter(" in _code(p)]
    assert len(recording) == len(reg.notebooks()), (
        f"{slug}: notebooks {reg.notebooks()} record claims; found CLAIMS.chapter( in {recording}"
    )


@pytest.mark.parametrize("slug", CONVERTED)
def test_every_claim_names_its_rival_and_the_report_renders_them(slug):
    reg = chapter_registry(slug)
    for spec in reg.specs.values():
        assert spec.rival or spec.no_rival, (
            f"{slug}/{spec.id}: register rival= (what the control is, why it is the nearest) "
            "or no_rival= (why no honest rival exists at our size)"
        )
    page = next((ROOT / "book" / slug).glob("reproduction.*"), None)
    assert page is not None, f"book/{slug}/reproduction.md (or .ipynb)"
    text = page.read_text()
    for directive in ("{claims}", "{rivals}", "{deviations}"):
        assert directive in text, f"{page.name} must render {directive}"


@pytest.mark.book
@pytest.mark.parametrize("slug", CONVERTED)
def test_records_hold_measured_rivals(slug):
    reg = chapter_registry(slug)
    recs = {r["id"]: r for r in _records(slug) if r["size"] == "default"}
    assert set(recs) == set(reg.specs), (
        f"{slug}: registered but not recorded {sorted(set(reg.specs) - set(recs))}, "
        f"recorded but not registered {sorted(set(recs) - set(reg.specs))}"
    )
    values = {cid: json.dumps(r["measured"], sort_keys=True) for cid, r in recs.items()}
    for cid, r in recs.items():
        spec = reg[cid]
        controls = r.get("controls") or []
        if spec.rival:
            assert controls, f"{slug}/{cid}: the registered rival was not recorded as a control"
        else:
            assert r.get("no_rival"), f"{slug}/{cid}: no control and no no_rival on the record"
        for c in controls:
            mine = json.dumps(c["measured"], sort_keys=True)
            assert mine != values[cid], f"{slug}/{cid}: control {c['name']!r} is the claim's value"
            # an exact zero is a floor two unrelated measurements can both hit (a shortfall, a
            # speed-up that never reaches its target): only a nonzero copy is another claim's value
            if c["measured"] in (0, [0], None):
                continue
            others = [k for k, v in values.items() if k != cid and v == mine]
            assert not others, f"{slug}/{cid}: control {c['name']!r} is the value of {others}"


@pytest.mark.book
@pytest.mark.parametrize("slug", CONVERTED)
def test_diagnoses_carry_checked_evidence(slug):
    reg = chapter_registry(slug)
    for r in _records(slug):
        dx = r.get("diagnosis")
        if r["verdict"] == claims.REPRODUCED or r["size"] != "default":
            continue
        where = f"{slug}/{r['id']}"
        assert dx, f"{where}: a negative verdict needs a diagnosis"
        kind, data = dx["kind"], dx.get("data") or {}
        if kind == "scale":
            assert data.get("trend", {}).get("toward_paper"), (
                f"{where}: 'scale' needs three or more sizes and paper= (a fitted trend toward it)"
            )
        elif kind == "noise-floor":
            assert "paper_margin" in data and data.get("resolves") is False, (
                f"{where}: 'noise-floor' needs paper_margin= (the registered paper margin)"
            )
            assert reg[r["id"]].paper_margin is not None, f"{where}: register paper_margin"
        elif kind == "tight-null":
            assert (data.get("tost") or {}).get("equivalent"), (
                f"{where}: a tight null whose 90% interval is not inside its registered margin"
            )
        elif kind == "deviation":
            assert data["deviation"] in reg.deviations, f"{where}: an unregistered deviation"
        elif kind == "official-code":
            assert (OFFICIAL_DIR / Path(data["fixture"]).name).exists(), f"{where}: no fixture"
