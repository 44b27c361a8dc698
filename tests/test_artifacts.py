"""The artifact store (lab.core.artifacts) and the one command that rebuilds every chapter's
stored artifacts (``lab artifacts``, lab.tooling.artifacts)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lab.core import artifacts as store
from lab.tooling.artifacts import ARTIFACTS, build, describe

ROOT = Path(__file__).resolve().parents[1]


def test_weights_round_trip_with_provenance(tmp_path):
    payload = {"w": torch.arange(6.0).reshape(2, 3), "config": {"d": 3}}
    path = store.save_weights(tmp_path / "m.pt", payload, {"steps": 5}, "cvrp/checkpoint")
    back = store.load_weights(path, "cvrp/checkpoint")
    assert torch.equal(back["w"], payload["w"]) and back["config"] == {"d": 3}
    prov = back["meta"]["provenance"]
    assert back["meta"]["steps"] == 5
    assert prov["command"] == "lab artifacts build cvrp/checkpoint"
    assert {"lab", "torch", "date", "numerics"} <= set(prov)


def test_provenance_records_the_build_arguments(tmp_path):
    """Inside a build (``lab artifacts build <name> -- ARGS``), what is stored names ARGS; a
    different artifact, or a write outside the build, does not get them."""
    with store.building("splitfed/gloo-runs", ["--rounds", "3"]):
        path = store.save_json(tmp_path / "r.json", {"runs": []}, "splitfed/gloo-runs")
        other = store.provenance("ace/sweep")
    cmd = store.load_json(path, "splitfed/gloo-runs")["provenance"]["command"]
    assert cmd == "lab artifacts build splitfed/gloo-runs -- --rounds 3"
    assert other["command"] == "lab artifacts build ace/sweep"
    assert store.provenance("splitfed/gloo-runs")["command"].endswith("gloo-runs")
    with pytest.raises(TypeError, match="args"):
        with store.building("ace/sweep", "--steps 3"):
            pass


def test_weights_load_refuses_pickled_code(tmp_path):
    """weights_only: a file that needs arbitrary unpickling is refused."""
    path = tmp_path / "bad.pt"
    torch.save({"f": Path("x")}, path)
    with pytest.raises(Exception, match="[Ww]eights"):
        store.load_weights(path, "cvrp/checkpoint")


def test_json_round_trip_and_missing_file_names_the_command(tmp_path):
    path = store.save_json(tmp_path / "r.json", {"runs": [1, 2]}, "splitfed/gloo-runs")
    data = store.load_json(path, "splitfed/gloo-runs")
    assert data["runs"] == [1, 2] and "provenance" in data
    with pytest.raises(FileNotFoundError, match="lab artifacts build ace/sweep"):
        store.load_json(tmp_path / "none.json", "ace/sweep")


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="artifact"):
        store.build_command("cvrp")
    with pytest.raises(TypeError, match="payload"):
        store.save_weights(tmp_path / "x.pt", [1], {}, "cvrp/checkpoint")
    with pytest.raises(TypeError, match="meta"):
        store.save_weights(tmp_path / "x.pt", {}, None, "cvrp/checkpoint")
    with pytest.raises(ValueError, match="artifact must be one of"):
        build("nope")


@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_every_builder_answers_help(name, capsys):
    """Each artifact's builder exists and parses its own arguments (``-- --help``)."""
    with pytest.raises(SystemExit) as exc:
        build(name, ["--help"])
    assert exc.value.code == 0
    assert f"lab artifacts build {name}" in capsys.readouterr().out
    assert name in describe()


def test_no_chapter_module_is_its_own_entry_point():
    """One command rebuilds artifacts: no ``python -m lab.<slug>...`` entry points."""
    found = []
    for path in sorted((ROOT / "lab").glob("*/*.py")):
        if path.parent.name in ("core", "tooling"):
            continue
        tree = ast.parse(path.read_text())
        main_guard = any(
            isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) for n in tree.body
        )
        if path.name == "__main__.py" or main_guard:
            found.append(str(path.relative_to(ROOT)))
    assert not found, f"entry points outside `lab artifacts`: {found}"


def test_the_command_lists_every_artifact():
    out = subprocess.run(
        [sys.executable, "-m", "lab", "artifacts", "list"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in ARTIFACTS)
