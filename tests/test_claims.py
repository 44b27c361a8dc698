"""Claims as records: the rules of ``lab.core.claims`` and the book's claims contract.

Unit tests prove the rules decide what they say. The contract tests read the records of the
last book build (``_build/html/_static/claims.json``, written by ``lab.tooling.claimsext``; the
book is built before pytest in ``make test``) and hold every migrated chapter
(``tests/migration.py``) to DESIGN.md's contract: the claims section of ``index.md`` renders
its table from records and types no measured number; every claim a notebook declares was
recorded and is on the page; every record names a source; at least one claim is sourced to
the paper; every verdict is the one its notebook expects.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from migration import MIGRATED

from lab.core import claims
from lab.core.chapters import chapter_notebooks, chapters

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CLAIMS_JSON = HTML / "_static" / "claims.json"


# ----------------------------------------------------------------------------------------
# The rules
# ----------------------------------------------------------------------------------------
def test_within_absolute_and_relative():
    c = claims.within(-0.5, abs=0.05)
    assert c(-0.54) and c(-0.46) and not c(-0.56) and not c(float("nan")) and not c("x")
    r = claims.within(100.0, rel=0.1)
    assert r(109.9) and not r(111)
    both = claims.within(1.0, rel=0.01, abs=0.1)  # the larger tolerance wins
    assert both(1.09)
    with pytest.raises(ValueError, match="rel= or abs="):
        claims.within(1.0)
    with pytest.raises(ValueError, match=">= 0"):
        claims.within(1.0, abs=-1)
    with pytest.raises(TypeError, match="target"):
        claims.within("a", abs=1)


def test_between_bounds_and_errors():
    c = claims.between(2.5, 3.5)
    assert c(2.5) and c(3.5) and not c(3.78) and not c(None)
    with pytest.raises(ValueError, match="lo <= hi"):
        claims.between(2, 1)
    assert claims.at_least(2)(2) and not claims.at_least(2)(1.999)
    assert claims.at_most(2)(2) and not claims.at_most(2)(2.001)


def test_confidence_interval_conditions_tell_three_from_four():
    """An exponent measured as 3.78 with interval [3.6, 3.95] is not eps^-3 and not eps^-4."""
    three = claims.ci_within(2.75, 3.25)
    four_excluded = claims.ci_below(4.0)
    measured = (3.78, 3.6, 3.95)
    assert not three(measured)
    assert four_excluded(measured)
    assert claims.ci_above(3.5)(measured) and not claims.ci_above(3.7)(measured)
    assert three({"lo": 2.9, "hi": 3.1})
    assert not three((1.0,))  # malformed interval never satisfies


def test_holds_is_strict_about_booleans():
    h = claims.holds()
    assert h(True) and not h(False) and not h(1) and not h("yes")
    import numpy as np

    assert h(np.bool_(True)) and not h(np.bool_(False))


def test_rule_tiers_and_text():
    rule = claims.rule(
        reproduced=claims.within(-0.5, abs=0.05), qualitatively=claims.between(-0.7, -0.3)
    )
    assert rule.decide(-0.5) == claims.REPRODUCED
    assert rule.decide(-0.65) == claims.QUALITATIVE
    assert rule.decide(-0.1) == claims.NOT_REPRODUCED
    assert "reproduced if within ± 0.05 of -0.5" in rule.text
    assert rule.text.endswith("otherwise not reproduced")
    with pytest.raises(ValueError):
        claims.rule()
    with pytest.raises(TypeError, match="Condition"):
        claims.rule(reproduced=lambda m: True)


def _declare(C, expect="reproduced", **kw):
    return C.claim(
        "slope",
        "The slope is -1/2.",
        source="Thm 5.2",
        paper="-1/2",
        rule=claims.rule(reproduced=claims.within(-0.5, abs=0.05)),
        expect=expect,
        **kw,
    )


def test_record_payload_and_expected_verdict():
    C = claims.chapter("eos", display=False)
    claim = _declare(C)
    assert claim.record(-0.501, text="slope -0.501") is None
    rec = claim.recorded
    d = rec.as_dict()
    assert d["key"] == "eos/slope" and d["verdict"] == "reproduced" and d["size"] == "default"
    assert d["measured"] == -0.501 and d["text"] == "slope -0.501"
    assert claims.CLAIM_MIME in rec._repr_mimebundle_()
    json.dumps(d)  # the payload is JSON
    assert C.records() == [rec] and C.unrecorded() == []


def test_a_verdict_that_differs_from_the_expected_one_raises():
    C = claims.chapter("eos", display=False)
    with pytest.raises(claims.ClaimMismatch, match="expects 'reproduced'"):
        _declare(C).record(-0.8)
    # a "not reproduced" verdict that is expected is a result, not an error
    C2 = claims.chapter("eos", display=False)
    claim = _declare(C2, expect="not reproduced")
    claim.record(-0.8)
    assert claim.recorded.verdict == claims.NOT_REPRODUCED


def test_full_size_without_an_expectation_only_warns():
    C = claims.chapter("eos", full=True, display=False)
    claim = _declare(C)
    with pytest.warns(UserWarning, match="expects"):
        claim.record(-0.8)
    assert claim.recorded.size == "full"
    C2 = claims.chapter("eos", full=True, display=False)
    with pytest.raises(claims.ClaimMismatch):
        _declare(C2, expect_full="reproduced").record(-0.8)


def test_bad_declarations_are_rejected():
    C = claims.chapter("eos", display=False)
    _declare(C)
    with pytest.raises(ValueError, match="twice"):
        _declare(C)
    with pytest.raises(ValueError, match="id"):
        C.claim("Bad Id", "x", source="ours", rule=claims.rule(claims.holds()), expect="reproduced")
    with pytest.raises(ValueError, match="source"):
        C.claim("a", "x", source=" ", rule=claims.rule(claims.holds()), expect="reproduced")
    with pytest.raises(ValueError, match="expect"):
        C.claim("b", "x", source="ours", rule=claims.rule(claims.holds()), expect="maybe")
    with pytest.raises(TypeError, match="rule"):
        C.claim("c", "x", source="ours", rule="within 5%", expect="reproduced")
    with pytest.raises(ValueError, match="slug"):
        claims.chapter("Not a slug")
    with pytest.raises(TypeError, match="full"):
        claims.chapter("eos", full="yes")


def test_format_value_is_short_and_stable():
    assert claims.format_value(0.50123456) == "0.5012"
    assert claims.format_value(1.23e-7) == "1.23×10^-7"
    assert claims.format_value(True) == "yes"
    assert claims.format_value(12345) == "12,345"
    assert claims.format_value((3.78, 3.6, 3.95)) == "(3.78, 3.6, 3.95)"
    assert claims.format_value(float("nan")) == "nan" and math.isnan(float("nan"))


def test_bench_role_reads_results_fields():
    from lab.tooling.claimsext import bench_value

    data = {
        "cases": [
            {
                "case": "a",
                "rows": [{"role": "fast", "name": "f", "seconds": 0.5}],
                "ratios": {"fast_vs_peer:numpy v1.2": 2.0},
            }
        ]
    }
    assert bench_value(data, "0/rows.fast.seconds") == 0.5
    assert bench_value(data, "a/rows.f.seconds") == 0.5
    assert bench_value(data, "0/ratios.fast_vs_peer:numpy v1.2") == 2.0
    with pytest.raises(KeyError):
        bench_value(data, "1/ratios")
    with pytest.raises(KeyError):
        bench_value(data, "0/ratios.nothing")


# ----------------------------------------------------------------------------------------
# The contract (reads the last book build)
# ----------------------------------------------------------------------------------------
_ROLE = re.compile(r"\{(claim|bench|cite|ref|doc|numref|eq)\}`[^`]*`")
_REFERENCE = re.compile(
    r"\b(Thm|Theorem|Prop|Proposition|Lemma|Cor|Corollary|Table|Tab|Fig|Figure|Sec|Section|"
    r"App|Appendix|Eq|eq|Alg|Algorithm|Assumption|A)\.?\s*[A-Z]?\d+(\.\d+)*"
)
# what a typed measurement looks like: a decimal, a power of ten, a percentage, a ratio "x1.4"
# or an integer with two or more digits
_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+|\d+\s*%|\d+\s*[x×]|\d{2,}|10\^|\de-?\d)")


def _claims_section(index: str) -> str:
    m = re.search(r"^## Claims.*?$(.*?)(?=^## |\Z)", index, re.M | re.S)
    return m.group(1) if m else ""


def _built_records() -> list[dict]:
    if not (HTML / "index.html").exists():
        pytest.skip("the book is not built (make book; make test builds it before pytest)")
    assert CLAIMS_JSON.exists(), "the book build did not write _static/claims.json"
    return json.loads(CLAIMS_JSON.read_text())["claims"]


def _declared_ids(slug: str) -> set[str]:
    ids: set[str] = set()
    for nb in chapter_notebooks(slug, ROOT):
        cells = json.loads(nb.read_text())["cells"]
        src = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        ids |= set(re.findall(r"\.claim\(\s*[\"']([a-z0-9][a-z0-9-]*)[\"']", src))
    return ids


def test_migrated_chapters_exist_and_every_claims_page_is_migrated():
    slugs = chapters(ROOT)
    assert set(MIGRATED) <= set(slugs)
    for slug in slugs:
        index = (ROOT / "book" / slug / "index.md").read_text()
        if "```{claims}" in index:
            assert slug in MIGRATED, (
                f"{slug} renders generated claims: add it to tests/migration.py"
            )


@pytest.mark.parametrize("slug", MIGRATED)
def test_claims_section_is_generated_not_typed(slug):
    index = (ROOT / "book" / slug / "index.md").read_text()
    section = _claims_section(index)
    assert section, f"book/{slug}/index.md has no '## Claims ...' section"
    assert "```{claims}" in section, f"book/{slug}/index.md: the claims section needs ```{{claims}}"
    assert not re.search(r"^\|.*\|\s*$", section, re.M), (
        f"book/{slug}/index.md: a hand-typed table in the claims section"
    )
    prose = _REFERENCE.sub("", _ROLE.sub("", section))
    typed = _NUMBER.findall(prose)
    assert not typed, (
        f"book/{slug}/index.md: numbers typed in the claims section {typed}: "
        "use {claim}`<id>` or {bench}`<slug>/<case>/<field>`"
    )


@pytest.mark.book
@pytest.mark.parametrize("slug", MIGRATED)
def test_every_claim_is_recorded_sourced_and_as_expected(slug):
    recs = [r for r in _built_records() if r["chapter"] == slug]
    assert recs, f"chapter {slug}: no claim records in the build"
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids)), f"chapter {slug}: a claim id recorded twice"
    # every id a notebook declares literally was recorded (ids built in a loop are checked at
    # run time: a record needs its declaration, and notebooks end with C.unrecorded() == [])
    declared = _declared_ids(slug)
    assert declared <= set(ids), (
        f"chapter {slug}: declared but not recorded {sorted(declared - set(ids))}"
    )
    for r in recs:
        assert r["source"].strip(), f"{slug}/{r['id']}: no source"
        assert r["rule"].strip(), f"{slug}/{r['id']}: no rule"
        if r["size"] == "default":
            assert r["verdict"] == r["expected"], (
                f"{slug}/{r['id']}: verdict {r['verdict']!r}, expected {r['expected']!r}"
            )
    paper_sourced = [
        r
        for r in recs
        if r["source"].lower() != claims.SOURCES_OURS
        and not r["source"].lower().startswith("contrast")
    ]
    assert paper_sourced, f"chapter {slug}: no claim sourced to the paper"


@pytest.mark.book
@pytest.mark.parametrize("slug", MIGRATED)
def test_every_record_is_on_the_chapter_page_with_its_link(slug):
    recs = [r for r in _built_records() if r["chapter"] == slug]
    page = (HTML / "book" / slug / "index.html").read_text()
    for r in recs:
        anchor = f"#claim-{slug}-{r['id']}"
        assert anchor in page, f"book/{slug}/index.html does not link {anchor}"
        nb_page = HTML / (r["docname"] + ".html")
        assert f'id="claim-{slug}-{r["id"]}"' in nb_page.read_text(), f"no card in {nb_page}"


@pytest.mark.book
def test_scorecard_lists_every_chapter_with_records():
    recs = _built_records()
    page = (HTML / "book" / "scorecard.html").read_text()
    for slug in {r["chapter"] for r in recs}:
        assert f"{slug}/index.html" in page, f"the scorecard does not list {slug}"
    for r in recs:
        assert f"#claim-{r['chapter']}-{r['id']}" in page
    total = len(recs)
    assert re.search(rf"<strong>{total}</strong>", page), "the scorecard's total is wrong"
