"""Claims registered before the number (lab.core.registry): the registry declares a notebook's
claims, refuses bad entries, and a change since the last release needs a revision."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from lab.core import claims
from lab.core.registry import Spec, registry
from lab.tooling.release import changes, registered, released

ROOT = Path(__file__).resolve().parents[1]
RELEASED = ROOT / "tests" / "fixtures" / "registry"


def _spec(cid="rate", **kw):
    args = {
        "statement": "The rate is one half.",
        "notebook": "01",
        "source": "Thm 1",
        "rule": claims.rule(reproduced=claims.within(0.5, abs=0.05)),
        "expect": "reproduced",
        "seeds": (0, 1, 2),
        "size": "T = 100",
    } | kw
    return Spec(cid, **args)


def test_a_registry_declares_a_notebooks_claims_for_one_line_records(monkeypatch):
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "error")
    reg = registry("eos", _spec(), _spec("other", notebook="02"))
    assert reg.notebooks() == ("01", "02")
    C = reg.chapter("01", display=False)
    assert list(C.claims) == ["rate"]
    C["rate"].record(0.51)
    assert C.records()[0].verdict == claims.REPRODUCED and C.unrecorded() == []
    with pytest.raises(KeyError, match="declares no claim 'other' in this notebook"):
        C["other"]
    with pytest.raises(ValueError, match="notebook must be one of"):
        reg.chapter("03")
    with pytest.raises(KeyError, match="registers no claim"):
        reg["nope"]


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"notebook": "1"}, ValueError, "two-digit"),
        ({"rule": "within 0.5"}, TypeError, "rule must be a Rule"),
        ({"seeds": (1, 1)}, ValueError, "distinct"),
        ({"seeds": (1.5,)}, TypeError, "seeds must be integers"),
        ({"paper_margin": 0.1}, ValueError, "paper_margin_source"),
    ],
)
def test_a_bad_spec_names_its_field(kw, error, match):
    with pytest.raises(error, match=match):
        _spec(**kw)


def test_a_bad_registry_fails_at_import():
    with pytest.raises(ValueError, match="registered twice"):
        registry("eos", _spec(), _spec())
    with pytest.raises(ValueError, match="expect must be one of"):
        registry("eos", _spec(expect="maybe"))
    with pytest.raises(TypeError, match="Spec entries"):
        registry("eos", {"id": "x"})
    with pytest.raises(ValueError, match="slug"):
        registry("EOS", _spec())


def test_a_change_since_the_release_needs_a_revision():
    released = registry("eos", _spec()).snapshot()
    moved = registry("eos", _spec(rule=claims.rule(reproduced=claims.within(0.5, abs=0.1))))
    assert moved.unrevised_changes(released) == ["eos/rate: rule changed without a revision"]
    more_seeds = registry("eos", _spec(seeds=(0, 1, 2, 3)))
    assert "seeds" in more_seeds.unrevised_changes(released)[0]
    disclosed = registry(
        "eos",
        _spec(
            seeds=(0, 1, 2, 3),
            revised=[claims.revision("2026-12-06", old="3 seeds", new="4", known="nothing")],
        ),
    )
    assert disclosed.unrevised_changes(released) == []
    assert registry("eos", _spec(), _spec("new")).unrevised_changes(released) == []
    with pytest.raises(TypeError, match="snapshot dict"):
        moved.unrevised_changes([])


@pytest.mark.parametrize("slug", registered())
def test_registries_match_the_last_release(slug):
    reg = importlib.import_module(f"lab.{slug}.claims").CLAIMS
    snapshot = RELEASED / f"{slug}.json"
    if not snapshot.exists():
        pytest.skip(f"{slug}: registered since the last release (no snapshot)")
    assert not reg.unrevised_changes(json.loads(snapshot.read_text()))


@pytest.mark.parametrize("slug", registered())
def test_registries_new_since_the_release_match_its_verdict_file(slug):
    """A chapter registered after the release (no snapshot yet) is checked against the release's
    records (lab/tooling/released.json): a rule or expected verdict that moved needs a revision
    made since."""
    last = released()
    if last is None or (RELEASED / f"{slug}.json").exists():
        pytest.skip("no release, or checked against its snapshot")
    reg = importlib.import_module(f"lab.{slug}.claims").CLAIMS
    moved = []
    for cid, spec in reg.specs.items():
        then = last["claims"].get(f"{slug}/{cid}")
        if then is None:
            continue
        expect = reg.chapter(spec.notebook, display=False)[cid].expect  # the verdict's name
        changed = [
            k for k, now in (("rule", spec.rule.text), ("expected", expect)) if now != then[k]
        ]
        if changed and len(spec.revised) <= then["revisions"]:
            moved.append(f"{slug}/{cid}: {', '.join(changed)} changed without a revision")
    assert not moved, moved


def test_changes_since_the_release_list_verdicts_with_their_reason():
    last = {
        "version": "0.1.0",
        "date": "2026-12-06",
        "claims": {
            "eos/a": {"verdict": "reproduced", "revisions": 0},
            "eos/b": {"verdict": "reproduced", "revisions": 1},
            "eos/gone": {"verdict": "reproduced", "revisions": 0},
        },
    }
    rev = claims.revision("2026-12-07", old="3 seeds", new="64 seeds", known="1.5 SE")
    recs = [
        {"key": "eos/a", "verdict": "reproduced", "revised": []},
        {"key": "eos/b", "verdict": "not reproduced at this size", "revised": [rev, rev]},
        {"key": "eos/new", "verdict": "reproduced", "revised": []},
    ]
    rows = {r["key"]: r for r in changes(recs, last)}
    assert set(rows) == {"eos/b", "eos/new", "eos/gone"}
    assert rows["eos/b"]["reason"] == "revised 2026-12-07: 3 seeds -> 64 seeds"
    assert rows["eos/gone"]["reason"] == "claim removed" and rows["eos/new"]["old"] == ""
    assert changes(recs, {}) == []
    with pytest.raises(TypeError, match="recs must be a list"):
        changes({}, last)
