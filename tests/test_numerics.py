"""Verdicts on every machine: numerics modes, margins, seed shifts and the warning card.

- the canary: each numerics mode of :data:`lab.core.numerics.MODES` is applied (torch's CPU
  capability and OpenBLAS's kernel say so) and changes the low bits of a numpy and a torch
  product, so a mode that is silently ignored fails;
- the margin a rule reports (standard errors for an interval, relative for a point value);
- the registered seed shift;
- a verdict that differs from the book's: a warning card outside the build (a notebook run
  without strict mode), an exception inside it (``LAB_CLAIMS_MISMATCH=error``);
- the numerics check's comparison.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from lab.core import claims, numerics
from lab.tooling.numerics import compare_configs, configuration_env

X86 = platform.machine().lower() in ("x86_64", "amd64")


def _probe(mode: str) -> dict:
    env = dict(os.environ)
    for name, value in numerics.mode_environment(mode).items():
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    code = "import json; from lab.core.numerics import probe; print(json.dumps(probe()))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probes() -> dict:
    return {mode: _probe(mode) for mode in numerics.MODES}


@pytest.mark.skipif(not X86, reason="the numerics modes emulate x86 CPUs")
def test_each_mode_is_applied_and_changes_the_low_bits(probes):
    native, avx2, base = probes["native"], probes["avx2"], probes["baseline"]
    # the dispatchers report what the mode asked for
    assert avx2["torch_capability"] == "AVX2" and base["torch_capability"] == "DEFAULT"
    assert avx2["openblas_kernel"] == "Haswell"
    assert base["openblas_kernel"] in ("Prescott", "Katmai")  # OpenBLAS names Prescott Katmai
    # the baseline mode (SSE-class kernels) changes a numpy and a torch product on any x86 CPU
    # newer than SSE4: a mode that is ignored computes the native bits and fails here
    for key in ("numpy_matmul", "torch_matmul", "torch_exp"):
        assert base[key] != native[key], f"baseline mode did not change {key}"
    # the AVX2 mode changes them where the CPU has more than AVX2 (AVX-512); on an AVX2 CPU
    # it is the native mode
    if native["torch_capability"] == "AVX512":
        for key in ("numpy_matmul", "torch_matmul"):
            assert avx2[key] != native[key], f"AVX2 mode did not change {key}"
    elif native["torch_capability"] == "AVX2":
        assert avx2["torch_matmul"] == native["torch_matmul"]


def test_fingerprint_names_what_decides_numerics(monkeypatch):
    for name in numerics.DISPATCHERS:
        monkeypatch.delenv(name, raising=False)
    fp = numerics.fingerprint()
    assert fp["mode"] == "native" and len(fp["key"]) == 12
    assert {"cpu", "cpu_flags", "torch_capability", "blas", "settings", "torch_threads"} <= set(fp)
    for name, value in numerics.MODES["baseline"].items():
        monkeypatch.setenv(name, value)
    other = numerics.fingerprint()
    assert other["mode"] == "baseline" and other["key"] != fp["key"]


def test_modes_set_every_dispatcher_together():
    for mode in ("avx2", "baseline"):
        assert set(numerics.MODES[mode]) == set(numerics.DISPATCHERS)
    assert numerics.mode_environment("native") == dict.fromkeys(numerics.DISPATCHERS, "")
    with pytest.raises(ValueError, match="mode must be one of"):
        numerics.mode_environment("avx512")
    env = configuration_env("baseline")
    assert env["OPENBLAS_CORETYPE"] == "Prescott" and env["LAB_CLAIMS_MISMATCH"] == "warn"
    assert configuration_env("seed+1000")["LAB_SEED_SHIFT"] == "1000"
    with pytest.raises(ValueError, match="registered seed shifts"):
        configuration_env("seed+7")


def test_registered_seed_shift(monkeypatch):
    monkeypatch.delenv("LAB_SEED_SHIFT", raising=False)
    assert numerics.seeds(0, 1, 2) == (0, 1, 2)
    monkeypatch.setenv("LAB_SEED_SHIFT", "1000")
    assert numerics.seeds(0, 1, 2) == (1000, 1001, 1002)
    monkeypatch.setenv("LAB_SEED_SHIFT", "5")
    with pytest.raises(ValueError, match="registered shifts"):
        numerics.seeds(0)
    with pytest.raises(ValueError, match="distinct"):
        numerics.seeds(1, 1)


def test_margins_in_standard_errors_and_relative():
    iv = {"estimate": 0.5, "lo": 0.3, "hi": 0.7, "se": 0.1, "paired": True}
    r = claims.rule(reproduced=claims.ci_above(0.45), qualitatively=claims.ci_above(0.0))
    # qualitatively: 0.3 above 0 (3 SE), but 0.15 below the reproduced boundary (1.5 SE)
    assert r.decide(iv) == claims.QUALITATIVE
    assert r.margin(iv) == pytest.approx({"value": 1.5, "unit": "se"})
    two = claims.rule(reproduced=claims.ci_outside(0.0, 0.0))
    assert two.margin(iv)["value"] == pytest.approx(3.0)
    neg = {"estimate": -0.5, "lo": -0.7, "hi": -0.3, "se": 0.1, "paired": True}
    assert two.decide(neg) == claims.REPRODUCED and two.margin(neg)["value"] == pytest.approx(3.0)
    # a point value: relative to the larger of the threshold and the value
    p = claims.rule(reproduced=claims.at_least(2.0, deterministic=True))
    assert p.margin(2.5) == pytest.approx({"value": 0.2, "unit": "relative"})
    assert p.margin(1.0) == pytest.approx({"value": 0.5, "unit": "relative"})
    w = claims.rule(reproduced=claims.within(1.0, abs=0.1))
    assert w.margin(1.05)["value"] == pytest.approx(0.05 / 1.1)
    assert claims.rule(reproduced=claims.holds()).margin(True)["unit"] == "exact"
    custom = claims.rule(reproduced=claims.Condition("custom", lambda m: m > 0))
    assert custom.margin(1.0) is None


def test_nothing_measured_is_its_own_state_not_a_negative(monkeypatch):
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "error")
    r = claims.rule(reproduced=claims.between(1.3, 2.0))
    assert r.decide(None) == claims.NOT_MEASURED and r.decide(1.0) == claims.NOT_REPRODUCED
    assert r.margin(None) == {"value": None, "unit": "unmeasured"}
    assert claims.margin_text(r.margin(None)) == "nothing measured"
    C = claims.chapter("halo", display=False)
    claim = C.claim("speed", "Fast.", source="Table 2", rule=r, expect="not measured")
    claim.record(None, text="not measured: no GPU")
    assert claim.recorded.verdict == "not measured on this hardware"
    # a measurement where none was expected is a mismatch like any other
    again = C.claim("speed2", "Fast.", source="Table 2", rule=r, expect="not measured")
    with pytest.raises(claims.ClaimMismatch, match="not reproduced at this size"):
        again.record(1.0)


def _paper_claim(C, expect="reproduced"):
    return C.claim(
        "rate",
        "The rate is one half.",
        source="Thm 1",
        rule=claims.rule(reproduced=claims.within(0.5, abs=0.05)),
        expect=expect,
    )


def test_outside_the_build_a_mismatch_is_a_warning_card(monkeypatch):
    monkeypatch.delenv("LAB_CLAIMS_MISMATCH", raising=False)  # a reader's kernel
    C = claims.chapter("eos", display=False)
    claim = _paper_claim(C)
    with pytest.warns(UserWarning, match="expects 'reproduced'"):
        claim.record(0.9)
    rec = claim.recorded
    assert rec.verdict == claims.NOT_REPRODUCED and rec.mismatch
    html = rec._repr_mimebundle_()["text/html"]
    assert "optlab-claim-warning" in html and "the book&#x27;s build: reproduced" in html
    assert rec.summary().startswith("WARNING this run: not reproduced")
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "error")
    with pytest.raises(claims.ClaimMismatch):
        _paper_claim(claims.chapter("eos", display=False)).record(0.9)
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "loud")
    with pytest.raises(ValueError, match="LAB_CLAIMS_MISMATCH"):
        claims.mismatch_mode()


_CELL = textwrap.dedent(
    """
    from lab.core import claims
    C = claims.chapter("eos")
    c = C.claim("rate", "The rate is one half.", source="Thm 1",
                rule=claims.rule(reproduced=claims.within(0.5, abs=0.05)), expect="reproduced")
    c.record(0.9, text="0.9 (forced)")
    """
)


def _execute(env_value: str | None) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_CELL)])
    old = os.environ.get("LAB_CLAIMS_MISMATCH")
    try:
        if env_value is None:
            os.environ.pop("LAB_CLAIMS_MISMATCH", None)
        else:
            os.environ["LAB_CLAIMS_MISMATCH"] = env_value
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    finally:
        if old is None:
            os.environ.pop("LAB_CLAIMS_MISMATCH", None)
        else:
            os.environ["LAB_CLAIMS_MISMATCH"] = old
    return nb


def test_a_forced_mismatch_in_a_notebook_warns_or_raises():
    nb = _execute(None)  # Colab, Binder, jupyter lab: no strict mode
    outputs = nb.cells[0].outputs
    cards = [o for o in outputs if claims.CLAIM_MIME in o.get("data", {})]
    assert len(cards) == 1
    payload = cards[0]["data"][claims.CLAIM_MIME]
    assert payload["verdict"] == claims.NOT_REPRODUCED and payload["mismatch"]
    assert "optlab-claim-warning" in cards[0]["data"]["text/html"]
    with pytest.raises(CellExecutionError, match="ClaimMismatch"):
        _execute("error")  # make test, make book, .ci/run


def _doc(verdicts: dict[str, str], expected="reproduced") -> dict:
    return {
        "claims": [
            {"chapter": "eos", "id": k, "verdict": v, "expected": expected, "controls": []}
            for k, v in verdicts.items()
        ]
    }


def test_the_check_fails_on_a_verdict_that_differs():
    same = {"native": _doc({"a": "reproduced"}), "avx2": _doc({"a": "reproduced"})}
    assert compare_configs(same) == ([], ["eos/a"])
    flips = {
        "native": _doc({"a": "reproduced"}),
        "baseline": _doc({"a": "reproduced qualitatively"}),
    }
    problems, _ = compare_configs(flips)
    assert len(problems) == 1 and "baseline: reproduced qualitatively" in problems[0]
    wrong = {"native": _doc({"a": "reproduced"}, expected="not reproduced at this size")}
    assert compare_configs(wrong)[0]
    missing = {"native": _doc({"a": "reproduced"}), "avx2": _doc({})}
    assert "not recorded under avx2" in compare_configs(missing)[0][0]
    # the seed shift runs only the notebooks that take their seeds from lab.seeds()
    part = {
        "native": _doc({"a": "reproduced", "b": "reproduced"}),
        "seed+1000": _doc({"a": "reproduced"}),
    }
    assert compare_configs(part, frozenset({"seed+1000"})) == ([], ["eos/a", "eos/b"])


def test_verdicts_are_defined_on_the_x86_cpu_path(monkeypatch):
    monkeypatch.setenv("LAB_CLAIMS_MISMATCH", "error")
    if X86:
        assert claims.mismatch_mode() == "error"
    monkeypatch.setattr(platform, "machine", lambda: "arm64")  # Apple silicon: cards, never raise
    assert claims.mismatch_mode() == "warn"


def test_known_flips_are_reported_and_only_shrink(monkeypatch):
    from lab.tooling import numerics as tool

    monkeypatch.setattr(tool, "KNOWN_FLIPS", {"eos/a": "why"})
    flips = {"native": _doc({"a": "reproduced"}), "seed+1000": _doc({"a": "not reproduced"})}
    problems, keys = compare_configs(flips)
    assert tool.split_known(problems, keys) == (problems, [])
    same = {"native": _doc({"a": "reproduced"}), "seed+1000": _doc({"a": "reproduced"})}
    known, new = tool.split_known(*compare_configs(same))
    assert not known and "no longer differs" in new[0]


def test_a_rival_at_least_as_good_is_reported_not_hidden():
    from lab.tooling.claimsext import control_text

    def rec(verdict, *controls):
        return {
            "verdict": verdict,
            "controls": [{"name": n, "text": "x", "verdict": v} for n, v in controls],
        }

    # strategic/prop4-bound's shape: the claim only qualitatively, its rival reproduced
    q = rec(claims.QUALITATIVE, ("Zhang et al.", claims.REPRODUCED))
    assert [c["name"] for c in claims.rivals_as_good(q)] == ["Zhang et al."]
    assert control_text(q).startswith("rival at least as good: Zhang et al.")
    # the same tier is as good when the tier shows the effect; two negatives are not counted
    assert claims.rivals_as_good(rec(claims.QUALITATIVE, ("r", claims.QUALITATIVE)))
    assert not claims.rivals_as_good(rec(claims.NOT_REPRODUCED, ("r", claims.NOT_REPRODUCED)))
    assert claims.rivals_as_good(rec(claims.NOT_REPRODUCED, ("r", claims.QUALITATIVE)))
    worse = rec(claims.REPRODUCED, ("r", claims.NOT_REPRODUCED))
    assert not claims.rivals_as_good(worse)
    assert control_text(worse) == "rule rejects: r, x (not reproduced)"
    assert not claims.rivals_as_good(rec(claims.NOT_MEASURED, ("r", claims.REPRODUCED)))
    with pytest.raises(TypeError, match="record must be"):
        claims.rivals_as_good([])
