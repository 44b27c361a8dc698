"""``lab claims`` and ``claims.json`` (``lab/tooling/claimsjson.py``).

A build's records compared with themselves give no differences (exit 0); one altered verdict is
reported first and exits 1; an altered value is reported and exits 0; the JSON Schema kept in
``lab/tooling/claims.schema.json`` accepts what the build writes and rejects a broken record;
records are read from executed notebooks (a tiny fixture, no chapter is executed, except in
the ``slow`` end-to-end test).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

import lab.__main__ as cli
from lab.core import claims
from lab.tooling import claimsjson

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "_build" / "html" / "_static" / "claims.json"


def _record(cid: str, measured: float, rule, expect: str, **extra) -> dict:
    """A real record's payload (``Record.as_dict``), plus the fields of ``extra``."""
    chapter = claims.chapter("eos", display=False)
    c = chapter.claim(
        cid, f"The claim {cid}.", source="Thm 1", paper="0.5", rule=rule, expect=expect
    )
    c.record(measured, text=f"slope {measured:.3f}")
    return {**c.recorded.as_dict(), **extra}


@pytest.fixture
def records() -> list[dict]:
    rule = claims.rule(reproduced=claims.within(0.5, abs=0.05))
    control = {"name": "gd", "measured": 0.9, "text": "0.9", "verdict": claims.NOT_REPRODUCED}
    return [
        _record("rate", 0.51, rule, "reproduced", controls=[control], diagnosis=None, flags=[]),
        _record(
            "far",
            0.8,
            rule,
            "not reproduced",
            controls=[],
            diagnosis={"kind": "scale", "evidence": "gap 0.3 -> 0.2", "data": {"n": [1, 2]}},
        ),
        {**_record("old", 0.5, rule, "reproduced"), "docname": "book/eos/01-x"},  # schema 1
    ]


@pytest.fixture
def build(tmp_path, records) -> Path:
    """A book build folder holding ``_static/claims.json`` and its schema."""
    claimsjson.write_build(tmp_path / "html", records)
    return tmp_path / "html"


def _notebook(path: Path, records: list[dict], as_text: bool = False) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(nbformat.v4.new_code_cell("FULL = False"))
    for rec in records:
        cell = nbformat.v4.new_code_cell("c.record(...)")
        payload = json.dumps(rec) if as_text else rec
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data={claims.CLAIM_MIME: payload, "text/plain": "claim"}
            )
        ]
        nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_markdown_cell("the end"))
    nbformat.write(nb, path)
    return path


def _alter(path: Path, key: str, **changes) -> Path:
    doc = json.loads(path.read_text())
    for rec in doc["claims"]:
        if rec["key"] == key:
            rec.update(changes)
    out = path.with_name("altered.json")
    out.write_text(json.dumps(doc))
    return out


# ----------------------------------------------------------------------------------------
# claims.json and its schema
# ----------------------------------------------------------------------------------------
def test_build_writes_schema_2_with_environment_and_schema_file(build, records):
    doc = json.loads((build / "_static" / "claims.json").read_text())
    assert doc["schema"] == 2 and doc["lab"] and doc["claims"] == records
    env = doc["environment"]
    assert {"git_commit", "python", "packages", "cpu", "gpu", "threads", "size", "date"} <= set(env)
    assert set(env["packages"]) >= {"lab", "torch", "numpy", "scipy"} and env["packages"]["numpy"]
    assert env["size"] == "default" and env["source"] == "book build"
    schema = json.loads((build / "_static" / "claims.schema.json").read_text())
    assert schema == claimsjson.schema() and schema["properties"]["schema"]["const"] == 2


def test_schema_validates_a_produced_claims_json_and_rejects_a_broken_one(build):
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads((build / "_static" / "claims.json").read_text())
    jsonschema.Draft202012Validator.check_schema(claimsjson.schema())
    jsonschema.validate(doc, claimsjson.schema(), cls=jsonschema.Draft202012Validator)
    claimsjson.validate(doc)
    for path, value in (
        (("claims", 0, "verdict"), "maybe"),
        (("claims", 1, "diagnosis", "kind"), "bad luck"),
        (("claims", 0, "controls", 0, "verdict"), "yes"),
        (("environment", "size"), "huge"),
        (("schema",), 1),
    ):
        broken = copy.deepcopy(doc)
        node = broken
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
        with pytest.raises(ValueError, match="claims.schema.json"):
            claimsjson.validate(broken)


def test_the_sphinx_extension_writes_claims_json_and_its_schema(tmp_path, records):
    from types import SimpleNamespace

    from lab.tooling import claimsext

    recs = [dict(r, docname="book/eos/01-x", cell_index=i) for i, r in enumerate(records)]
    env = SimpleNamespace(srcdir=str(ROOT), optlab_claims={"book/eos/01-x": recs})
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path), env=env)
    claimsext._write_json(app, None)
    doc = json.loads((tmp_path / "_static" / "claims.json").read_text())
    claimsjson.validate(doc)
    assert [r["key"] for r in doc["claims"]] == ["eos/rate", "eos/far", "eos/old"]
    assert "cell_index" not in doc["claims"][0] and doc["environment"]["source"] == "book build"
    assert (tmp_path / "_static" / "claims.schema.json").read_text() == (
        claimsjson.SCHEMA_FILE.read_text()
    )


def test_the_books_own_claims_json_validates():
    if not BUILT.exists():
        pytest.skip("the book is not built")
    doc = json.loads(BUILT.read_text())
    if doc.get("schema") != 2:
        pytest.skip("the book was built before claims.json schema 2")
    claimsjson.validate(doc)


def test_full_size_and_smoke_are_recorded(monkeypatch, records):
    monkeypatch.setenv("LAB_SMOKE", "1")
    full = [dict(r, size="full") for r in records]
    env = claimsjson.document(full)["environment"]
    assert env["size"] == "FULL" and env["smoke"] is True
    assert claimsjson.document(records[:1] + full[1:])["environment"]["size"] == "mixed"


# ----------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------
def test_records_from_executed_notebooks(tmp_path, records):
    nb = _notebook(tmp_path / "01-a.ipynb", records[:2])
    found = claimsjson.records_from_notebook(nb)
    assert [r["key"] for r in found] == ["eos/rate", "eos/far"]
    assert found[0]["notebook"] == "01-a.ipynb" and found[0]["controls"][0]["name"] == "gd"
    # a payload stored as a JSON string, and a record displayed twice (the last one wins)
    twice = _notebook(tmp_path / "02-b.ipynb", [records[2], dict(records[2], text="x")], True)
    assert [r["text"] for r in claimsjson.records_from_notebook(twice)] == ["x"]
    doc = claimsjson.read(tmp_path)  # a folder of notebooks
    assert [r["key"] for r in doc["claims"]] == ["eos/rate", "eos/far", "eos/old"]
    assert "executed notebooks" in doc["environment"]["source"]
    assert claimsjson.read(tmp_path, ["wflows"])["claims"] == []
    assert len(claimsjson.read(nb)["claims"]) == 2


def test_read_accepts_a_claims_json_or_a_build_folder(build, records):
    for path in (build, build.parent, build / "_static" / "claims.json"):
        assert claimsjson.read(path)["claims"] == records


def test_default_build_prefers_executed_notebooks(tmp_path, build):
    with pytest.raises(ValueError, match="no executed build"):
        claimsjson.default_build("eos", tmp_path / "nowhere")
    (tmp_path / "_build").mkdir()
    build.rename(tmp_path / "_build" / "html")
    assert claimsjson.default_build("eos", tmp_path).name == "claims.json"
    run_dir = tmp_path / "_build" / "run" / "eos"
    run_dir.mkdir(parents=True)
    _notebook(run_dir / "01-a.ipynb", [])
    assert claimsjson.default_build("eos", tmp_path) == run_dir


# ----------------------------------------------------------------------------------------
# Comparing
# ----------------------------------------------------------------------------------------
def test_a_build_compared_with_itself_has_no_differences(build, capsys):
    doc = claimsjson.read(build)
    cmp = claimsjson.compare(doc, copy.deepcopy(doc))
    assert cmp.empty and not cmp.verdicts_differ and cmp.compared == 3
    published = str(build / "_static" / "claims.json")
    assert cli.main(["claims", "eos", "--build", str(build), "--compare", published]) == 0
    out = capsys.readouterr().out
    assert "no differences (3 claims compared)" in out
    assert "environment" in out and "packages.torch" in out and "git_commit" in out


def test_an_altered_verdict_is_reported_first_and_exits_1(build, capsys):
    published = build / "_static" / "claims.json"
    altered = _alter(
        published, "eos/rate", verdict=claims.NOT_REPRODUCED, measured=0.7, text="slope 0.700"
    )
    cmp = claimsjson.compare(claimsjson.read(published), claimsjson.read(altered))
    assert [(c.key, c.field, c.mine) for c in cmp.verdicts] == [
        ("eos/rate", "verdict", claims.NOT_REPRODUCED)
    ]
    assert {c.field for c in cmp.values} == {"measured", "text"} and cmp.verdicts_differ
    assert cli.main(["claims", "eos", "--build", str(altered), "--compare", str(published)]) == 1
    out = capsys.readouterr().out
    assert out.index("verdict changes (1)") < out.index("value changes (2)")
    assert "eos/rate  verdict: reproduced  ->  not reproduced at this size" in out


def test_an_altered_value_is_reported_and_exits_0(build, capsys):
    published = build / "_static" / "claims.json"
    altered = _alter(published, "eos/far", measured=0.81)
    assert cli.main(["claims", "--build", str(altered), "--compare", str(published)]) == 0
    out = capsys.readouterr().out
    assert "value changes (1)" in out and "eos/far  measured: 0.8  ->  0.81" in out
    assert "verdict changes (" not in out
    # numbers equal up to round-off are the same value
    tiny = _alter(published, "eos/far", measured=0.8 * (1 + 1e-12))
    assert claimsjson.compare(claimsjson.read(published), claimsjson.read(tiny)).empty


def test_controls_diagnoses_other_fields_missing_and_added(build, records):
    pub = claimsjson.read(build)
    mine = copy.deepcopy(pub)
    rate, far, old = mine["claims"]
    rate["controls"][0]["verdict"] = claims.REPRODUCED
    far["diagnosis"] = {"kind": "open", "evidence": "", "data": {}}
    far["rule"] = "a moved rule"
    old["id"], old["key"] = "new", "eos/new"
    cmp = claimsjson.compare(pub, mine)
    assert [c.field for c in cmp.controls] == ["controls[gd].verdict"] and cmp.verdicts_differ
    assert [(c.field, c.published, c.mine) for c in cmp.diagnoses] == [
        ("diagnosis.kind", "scale", "open")
    ]
    assert [c.field for c in cmp.other] == ["rule"]
    assert cmp.missing == ["eos/old"] and cmp.added == ["eos/new"]
    text = claimsjson.format_comparison(cmp)
    order = ["control changes", "diagnosis changes", "other field changes", "missing", "added"]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)
    # comparing one chapter ignores the others' records
    other = dict(pub, claims=pub["claims"] + [dict(records[0], chapter="koala", key="koala/x")])
    assert claimsjson.compare(other, pub, slugs=["eos"]).empty
    assert claimsjson.compare(other, pub).missing == ["koala/x"]


def test_environments_are_printed_side_by_side(build):
    pub = claimsjson.read(build)
    mine = copy.deepcopy(pub)
    mine["environment"]["gpu"] = "NVIDIA H200"
    mine["environment"]["size"] = "FULL"
    text = claimsjson.format_comparison(claimsjson.compare(pub, mine))
    gpu = next(line for line in text.splitlines() if " gpu " in line)
    assert gpu.startswith("*") and gpu.rstrip().endswith("NVIDIA H200")
    assert "sizes differ (published default, this run FULL)" in text


# ----------------------------------------------------------------------------------------
# Printing and the command line
# ----------------------------------------------------------------------------------------
def test_records_are_printed_one_block_per_claim(tmp_path, records, capsys):
    _notebook(tmp_path / "01-a.ipynb", records)
    assert cli.main(["claims", "eos", "--build", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    blocks = out.strip().split("\n\n")
    assert len(blocks) == 4 and blocks[0].startswith("eos/rate  [Thm 1]  REPRODUCED")
    assert "control gd: 0.9 -> not reproduced at this size" in blocks[0]
    assert "diagnosis: scale: gap 0.3 -> 0.2" in blocks[1]
    assert blocks[-1].startswith("3 claims: 2 reproduced, 1 not reproduced")


def test_the_default_executes_notebooks_through_lab_run(tmp_path, records, monkeypatch, capsys):
    calls = []

    def fake_run(slug, full=False, out=None, timeout=3600):
        calls.append((slug, full, Path(out).parts[-2:]))
        nb = _notebook(tmp_path / f"{slug}.ipynb", records[:1])
        return [{"notebook": nb.name, "seconds": 0.1, "output": str(nb), "error": None}]

    monkeypatch.setattr(cli, "run", fake_run)
    written = tmp_path / "mine.json"
    assert cli.main(["claims", "eos", "--full", "-o", str(written)]) == 0
    assert calls == [("eos", True, ("run", "eos"))]
    doc = json.loads(written.read_text())
    assert doc["environment"]["size"] == "FULL" and [r["key"] for r in doc["claims"]] == [
        "eos/rate"
    ]
    claimsjson.validate(doc)
    assert "eos/rate" in capsys.readouterr().out


def test_bad_arguments_exit_2_or_raise(tmp_path, build, capsys):
    assert cli.main(["claims", "nochapter", "--build", str(build)]) == 2
    assert cli.main(["claims", "eos", "--build", str(tmp_path / "missing.json")]) == 2
    assert cli.main(["claims", "eos", "--full", "--build", str(build)]) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert (
        cli.main(["claims", "eos", "--build", str(build), "--compare", str(tmp_path / "bad.json")])
        == 2
    )
    assert "lab claims: error" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["claims", "--from-build", "--build", str(build)])
    doc = claimsjson.read(build)
    with pytest.raises(TypeError, match="published"):
        claimsjson.compare([], doc)
    with pytest.raises(ValueError, match="rtol"):
        claimsjson.compare(doc, doc, rtol=-1)
    with pytest.raises(ValueError, match="size"):
        claimsjson.environment("huge")
    with pytest.raises(TypeError, match="records"):
        claimsjson.document("x")
    with pytest.raises(TypeError, match="path"):
        claimsjson.read(3)
    with pytest.raises(ValueError, match="path"):
        claimsjson.records_from_notebook(tmp_path / "x.txt")
    with pytest.raises(TypeError, match="cmp"):
        claimsjson.format_comparison(None)


@pytest.mark.slow
def test_lab_claims_runs_a_real_notebook(monkeypatch, tmp_path, capsys):
    """End to end: execute eos's first notebook and compare its records with themselves."""
    first = ROOT / "book" / "eos" / "01-three-regimes.ipynb"
    monkeypatch.setattr(cli, "chapter_notebooks", lambda slug: [first])
    mine = tmp_path / "mine.json"
    assert cli.main(["claims", "eos", "-o", str(mine)]) == 0
    doc = json.loads(mine.read_text())
    claimsjson.validate(doc)
    assert doc["claims"] and all(r["chapter"] == "eos" for r in doc["claims"])
    capsys.readouterr()
    assert cli.main(["claims", "eos", "--build", str(mine), "--compare", str(mine)]) == 0
    assert "no differences" in capsys.readouterr().out


def test_the_schema_names_the_verdicts_and_diagnoses_of_lab_core():
    from lab.core import claims
    from lab.tooling import claimsjson

    text = json.dumps(claimsjson.schema())
    assert json.dumps(list(claims.DIAGNOSES)) in text
    assert json.dumps(list(claims.VERDICTS)) in text
