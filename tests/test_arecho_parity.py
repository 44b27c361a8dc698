"""ARECHO against the official code (ftshijt/espnet, branch universa_plus): the fixture's
provenance, the tokenizer, the two-step search and UniVERSA's loss, replayed by
``lab.arecho.official_parity`` (split from tests/test_arecho.py by meaning).
"""

from __future__ import annotations

import json

import pytest

from lab import arecho as ar
from lab.core.fixtures import official_fixture

OFFICIAL = official_fixture("arecho_official.json")


def test_official_fixture_provenance_is_complete():
    """The provenance fields every fixture has: tests/test_installed_fixtures.py."""
    fx = json.loads(OFFICIAL.read_text())
    assert {"instance", "outputs"} <= set(fx) and fx["provenance"]["setup"]
    assert fx["provenance"]["branch"] == "universa_plus"


@pytest.fixture(scope="module")
def parity():
    from lab.arecho.official import official_parity

    return official_parity(OFFICIAL)


def test_tokenizer_matches_the_official_one(parity):
    """Thresholds, value tokens and decoded values equal the official tokenizer's (to 1e-12)
    on every numerical probe value; the two documented differences are checked as such."""
    assert parity["threshold_diff"] < 1e-12 and parity["decode_diff"] < 1e-12
    agree, total = parity["encode"]
    assert agree == total == 164
    # below the training range the official code returns its index 0 (the pad token m@0)
    assert parity["below_range"] == (2, 2, 2)
    # categorical metrics not named "category": the official thresholds path merges the top
    # two classes; ours keeps one token per class
    cat = parity["categorical"]["C"]
    assert cat["official"] == [0, 1, 1] and cat["ours"] == [0, 1, 2]


def test_decoding_matches_the_official_two_step_search(parity):
    """Beam 1, both first steps (meta-label score and skip_meta_label_score): our batched
    and one-utterance decoders write the official token sequences and values exactly."""
    assert parity["searches"] == parity["searches_fast"] == parity["searches_reference"] == 12
    assert parity["values_diff"] < 1e-12
    fx = json.loads(OFFICIAL.read_text())
    runs = {}
    for s in fx["outputs"]["searches"]:
        runs.setdefault((tuple(s["query"]), s["utterance"]), []).append(s["yseq"])
    assert any(a != b for a, b in runs.values())  # the two first steps differ somewhere
    assert parity["l1_diff"] < 1e-12  # and UniVERSA's masked L1 loss


def test_official_parity_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError, match="path"):
        ar.official_parity(3)
    with pytest.raises(FileNotFoundError):
        ar.official_parity(tmp_path / "missing.json")
