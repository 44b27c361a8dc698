"""The evidence beside a verdict (lab.core.evidence): rivals judged by paired intervals, claims
without an honest rival, and diagnoses whose evidence the engine checks."""

from __future__ import annotations

import numpy as np
import pytest

from lab.core import claims
from lab.core.registry import Spec, registry
from lab.tooling.claimsext import diagnosis_check
from lab.tooling.registryext import chapter_registry, deviation_anchor


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "error")


def _paper_claim(**kw):
    C = claims.chapter("demo", display=False)
    args = {
        "source": "Table 2",
        "rule": claims.rule(reproduced=claims.ci_above(0.0)),
        "expect": "reproduced",
    } | kw
    return C.claim("beats", "The method beats its rival.", **args)


def test_judge_rival_reads_the_paired_interval():
    ahead = claims.judge_rival([1.0, 1.1, 0.9, 1.2])
    assert not ahead["as_good"] and ahead["judgement"] == "method ahead" and ahead["n"] == 4
    behind = claims.judge_rival([-1.0, -1.1, -0.9, -1.2])
    assert behind["as_good"] and behind["judgement"].startswith("rival better")
    same = claims.judge_rival([0.01, -0.01, 0.02, -0.02], equivalence=0.1)
    assert same["as_good"] and same["judgement"].startswith("rival as good")
    unsure = claims.judge_rival([0.5, -0.4, 0.6, -0.5])
    assert not unsure["as_good"] and unsure["judgement"] == "not told apart"
    with pytest.raises(ValueError, match="at least 2"):
        claims.judge_rival([1.0])
    with pytest.raises(ValueError, match="equivalence must be"):
        claims.judge_rival([1.0, 2.0], equivalence=-1)
    with pytest.raises(TypeError, match="paired must be a sequence"):
        claims.control("x", 1.0, paired=3.0)


def test_a_paired_rival_as_good_is_reported_not_raised():
    c = _paper_claim(equivalence=0.5)
    method, rival = np.array([1.0, 1.2, 1.1, 0.9]), np.array([1.0, 1.25, 1.05, 0.92])
    baseline = method - 0.5  # what both improve on, on the same seeds
    c.record(
        claims.paired(method, baseline),
        control=claims.control("rival", claims.paired(rival, baseline), paired=method - rival),
    )
    rec = c.recorded.as_dict()
    ctl = rec["controls"][0]
    assert rec["verdict"] == claims.REPRODUCED and ctl["verdict"] == claims.REPRODUCED
    assert ctl["as_good"] and ctl["paired"]["judgement"].startswith("rival as good")
    assert claims.rivals_as_good(rec) == [ctl]


def test_an_unpaired_rival_that_also_reproduces_still_raises():
    c = _paper_claim(rule=claims.rule(reproduced=claims.at_least(1.0)))
    with pytest.raises(claims.ClaimMismatch, match="cannot tell the method from"):
        c.record(2.0, control=claims.control("rival", 1.5))


def test_a_claim_without_rival_says_why():
    c = _paper_claim(rule=claims.rule(reproduced=claims.at_least(1.0)), no_rival="none at n=8")
    c.record(2.0)
    assert c.recorded.no_rival == "none at n=8"
    assert "no rival at this size: none at n=8" in c.recorded.summary()
    with pytest.raises(TypeError, match="no_rival must be a string"):
        _paper_claim(no_rival=3)
    with pytest.raises(ValueError, match="equivalence must be"):
        _paper_claim(equivalence=0)


def test_a_deviation_diagnosis_names_a_registered_deviation():
    rule = claims.rule(reproduced=claims.at_least(1.0))
    c = _paper_claim(rule=rule, expect="not reproduced", deviations=("float64",))
    with pytest.raises(ValueError, match="not one of the chapter's registered"):
        c.record(0.5, diagnosis=claims.diagnosis("deviation", "we use x", deviation="other"))
    c.record(0.5, diagnosis=claims.diagnosis("deviation", "we use float64", deviation="float64"))
    assert c.recorded.diagnosis["data"]["deviation"] == "float64"


def test_a_scale_diagnosis_fits_a_trend_toward_the_paper():
    dx = claims.diagnosis(
        "scale", "grows", sizes=[8, 16, 32, 64], values=[0.2, 0.4, 0.6, 0.8], paper=1.0
    )
    assert dx.data["trend"]["toward_paper"] and dx.data["trend"]["slope"] > 0
    # the check is recorded (the card shows it; a converted chapter's contract requires it)
    flat = claims.diagnosis("scale", "x", sizes=[8, 16, 32], values=[0.5, 0.4, 0.6], paper=1.0)
    away = claims.diagnosis("scale", "x", sizes=[8, 16, 32], values=[0.8, 0.6, 0.4], paper=1.0)
    assert not flat.data["trend"]["toward_paper"] and not away.data["trend"]["toward_paper"]
    assert "does not point toward" in diagnosis_check(away.as_dict())
    two = claims.diagnosis("scale", "x", sizes=[8, 16], values=[0.2, 0.4])
    assert "trend" not in two.data


def test_a_noise_floor_needs_the_paper_margin_below_two_standard_errors():
    dx = claims.diagnosis("noise-floor", "se 0.02", se=0.02, paper_margin=0.01)
    assert dx.data["resolves"] is False
    resolved = claims.diagnosis("noise-floor", "se 0.001", se=0.001, paper_margin=0.05)
    assert resolved.data["resolves"] is True
    assert "tight null" in diagnosis_check(resolved.as_dict())
    assert diagnosis_check(dx.as_dict()) == ""


def test_a_tight_null_is_an_equivalence_test():
    rng = np.random.default_rng(0)
    effects = rng.normal(0.0, 0.01, size=32)
    dx = claims.diagnosis(
        "tight-null", "small", effects=effects, margin=0.05, margin_source="half of Table 2"
    )
    assert -0.05 < dx.data["tost"]["lo"] < dx.data["tost"]["hi"] < 0.05
    assert dx.data["tost"]["level"] == 0.9 and dx.data["tost"]["equivalent"]
    wide = claims.diagnosis(
        "tight-null", "x", effects=effects + 0.06, margin=0.05, margin_source="s"
    )
    assert not wide.data["tost"]["equivalent"] and "not inside" in diagnosis_check(wide.as_dict())
    with pytest.raises(ValueError, match="margin_source"):
        claims.diagnosis("tight-null", "x", effects=effects, margin=0.05)
    with pytest.raises(ValueError, match="margin must be"):
        claims.diagnosis("tight-null", "x", effects=effects, margin=0, margin_source="s")


def _spec(**kw):
    args = {
        "statement": "It beats the rival.",
        "notebook": "01",
        "source": "Table 2",
        "rule": claims.rule(reproduced=claims.at_least(1.0)),
        "expect": "reproduced",
    } | kw
    return Spec("beats", **args)


def test_a_registry_carries_rivals_equivalence_and_deviations():
    reg = registry(
        "demo",
        _spec(rival="Adam: the optimiser the paper improves on", equivalence=0.1,
              equivalence_source="half of Table 2's gap"),
        deviations={"float64": "we compute in float64 where the paper uses float32"},
    )  # fmt: skip
    C = reg.chapter("01", display=False)
    assert C["beats"].equivalence == 0.1 and C["beats"].deviations == ("float64",)
    assert reg.snapshot()["beats"]["equivalence"] == 0.1
    with pytest.raises(ValueError, match="rival or no_rival, not both"):
        _spec(rival="a", no_rival="b")
    with pytest.raises(ValueError, match="equivalence_source"):
        _spec(equivalence=0.1)
    with pytest.raises(ValueError, match="deviation's name"):
        registry("demo", _spec(), deviations={"Bad Name": "x"})
    with pytest.raises(ValueError, match="needs a sentence"):
        registry("demo", _spec(), deviations={"ok": " "})


def test_registry_directives_find_a_chapters_registry():
    assert chapter_registry("nosuchchapter") is None
    assert deviation_anchor("eos", "float64") == "deviation-eos-float64"
    with pytest.raises(ValueError, match="slug"):
        chapter_registry("not a slug")
