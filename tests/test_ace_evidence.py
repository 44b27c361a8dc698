"""lab.ace.evidence: what each registered claim records, built from the drivers' results (the
notebooks record each claim in one line from these)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from lab import ace
from lab.ace import evidence
from lab.ace.claims import CLAIMS
from lab.ace.stored_runs import load_long_runs, load_sweep, sweep_mse


def test_gda_damping_evidence_reads_the_damped_run_and_its_rival():
    damped = ace.scalar_gda(eta_p=0.05, eta_d=0.05, aug=1.0, steps=2000)
    free = ace.scalar_gda(eta_p=0.05, eta_d=2.0, aug=0.0, steps=2000)
    ev = evidence.gda_damping_evidence(damped, free, 1.0, 0.9)
    assert ev["measured"] is True and ev["control"].measured is False
    with pytest.raises(TypeError, match="damped"):
        evidence.gda_damping_evidence({}, free, 1.0, 0.9)


def test_homotopy_and_order_evidence():
    damped = {"gamma": np.array([[1.0, -1.0], [0.01, -0.02]])}
    undamped = {"gamma": np.array([[1.0, -1.0], [0.5, -0.9]])}
    ev = evidence.homotopy_evidence(damped, undamped, 400)
    assert ev["measured"] == pytest.approx(0.02) and ev["control"].measured == pytest.approx(0.9)
    assert "400 steps" in ev["text"]

    class Slopes:
        slope_truncation, slope_violation = 0.99, 1.01

    rem = {"slope_truncation": 2.05, "slope_violation": 1.98}
    ev = evidence.order_evidence("violation", Slopes(), rem)
    assert ev["measured"] == 1.01 and ev["control"].measured == 1.98
    with pytest.raises(ValueError, match="name"):
        evidence.order_evidence("order", Slopes(), rem)
    with pytest.raises(TypeError, match="remainder"):
        evidence.order_evidence("truncation", Slopes(), {})


def test_stored_claims_evidence_matches_the_registry():
    sweep, long_runs = load_sweep(), load_long_runs()
    Ns = sweep["grid"]["N"]
    mse = partial(sweep_mse, sweep)
    tracks = evidence.resilient_tracks_evidence(mse, Ns)
    assert tracks["measured"] == pytest.approx(3.916, abs=1e-3)
    assert tracks["control"].measured > tracks["measured"]  # equality ACE tracks worse
    slacks = evidence.slacks_locate_evidence(sweep)
    assert slacks["measured"] == pytest.approx(1.380, abs=1e-3)
    sym = evidence.symmetric_beats_strict_evidence(sweep, long_runs)
    assert sym["measured"]["estimate"] == pytest.approx(-0.461, abs=1e-3)
    seeds = long_runs["settings"]["robust_seeds"]
    growth = {
        m: np.array([long_runs["runs"][f"robustness|{m}|0.5|64|{s}"]["degradation"] for s in seeds])
        for m in ("strict", "resilient")
    }
    rob = evidence.robustness_evidence(growth, 0.1, 600)
    assert rob["measured"]["hi"] > 0 > rob["measured"]["lo"]
    # each claim's rule reads what its evidence builder measures
    assert (
        CLAIMS["resilient-tracks"].rule.decide(tracks["measured"]) == "not reproduced at this size"
    )
    assert CLAIMS["slacks-locate"].rule.decide(slacks["measured"]) == "reproduced qualitatively"
    with pytest.raises(TypeError, match="mse"):
        evidence.tracking_ratios(3, "resilient", 0.5, Ns)
    with pytest.raises(TypeError, match="sweep"):
        evidence.slacks_locate_evidence([])
