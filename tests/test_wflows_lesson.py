"""The wflows lesson page's worked example, computed by lab (book/wflows/index.md includes the
test below, so the page cannot drift from the code), and the chapter's record builders
(lab.wflows.evidence) on small inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab import wflows as wf
from lab.wflows import evidence


def test_the_worked_example_of_the_lesson_page():
    # V_1 = (x - 1)^2 / 2, V_2 = (x + 1)^2 / 2: V = (x^2 + 1) / 2, pi = N(0, 1)
    pot = wf.FiniteSumQuadratic(A=[[[1.0]], [[1.0]]], a=[[1.0], [-1.0]])
    x, xi, h = np.array([[2.0]]), np.array([[0.5]]), 0.1
    minibatch = np.array([[0]])  # B = {1}: the component centred at a_1 = 1
    sgld = wf.sgld_step(x, pot, h, minibatch, xi)  # eq. (4)
    ula = wf.ula_step(x, pot, h, xi)  # eq. (2)
    snapshot = np.array([[1.5]])
    g = wf.svrg_direction(x, snapshot, pot.grad(snapshot), pot, minibatch)  # eq. (5)
    assert sgld[0, 0] == pytest.approx(1.9 + math.sqrt(0.2) * 0.5)
    assert round(sgld[0, 0], 4) == 2.1236
    assert round(ula[0, 0], 4) == 2.0236
    assert g[0, 0] == pytest.approx(2.0) == pot.grad(x)[0, 0]  # exact: equal curvatures
    # stationary variances with s^2 = Var(a_i) = 1, b = 1
    assert round(wf.sgld_stationary_var_1d(h, 1.0, 1), 4) == 1.1053
    assert round(wf.sgld_stationary_var_1d(h, 0.0, 1), 4) == 1.0526  # ULA
    assert round(wf.sgd_flow_stationary_var_1d(h, 1.0, 1), 4) == 1.05


def test_evidence_builds_the_records_fields():
    rows = np.array([[1, 0.1, 1.5, 1.5, 1.45, 1.45], [4, 0.2, 1.3, 1.3, 1.2, 1.2]] * 3, float)
    out = evidence.stationary_variance(rows, 100, 3.0)
    assert set(out) == {"measured", "text", "notes", "control"}
    assert out["measured"] == pytest.approx(0.0)
    assert out["control"].measured == pytest.approx(max(1.5 / 1.45, 1.3 / 1.2) - 1)
    slopes = {"langevin": -3.1, "svrg": -3.0, "sgld": -3.0}
    late = {"langevin": 0.001, "svrg": 0.002, "sgld": 0.01}
    rec = evidence.svrg_flow_lsi_rate(slopes, late, 1.55, 0.15, 0.001, 3000)
    assert rec["measured"] is True and rec["control"].measured is False
    with pytest.raises(TypeError, match="slopes"):
        evidence.gd_flow_lsi_rate(None, 1.0)
    with pytest.raises(ValueError, match="rows"):
        evidence.stationary_variance(np.ones((6, 5)), 100, 3.0)
