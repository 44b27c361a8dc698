"""The numbers of the ace lesson page (book/ace/index.md) that its text states: computed by
lab here, so the page's worked example can be checked by hand and by the code."""

from __future__ import annotations

import math

import pytest
import torch

from lab import ace


def test_worked_example_gda_by_hand():
    """book/ace/index.md, "A worked example", part 1: two steps of gradient descent-ascent on
    min (x - 2)^2 s.t. x = 0 from (x, lambda) = (1, 0), eta_p = eta_d = 0.05, no damping, and
    the contraction factor of the linear map (ace-gda-map) in three regimes."""
    run = ace.scalar_gda(eta_p=0.05, eta_d=0.05, aug=0.0, steps=2)
    assert run["x"].tolist() == pytest.approx([1.0, 1.1, 1.1875], abs=1e-12)
    assert run["lam"].tolist() == pytest.approx([0.0, 0.05, 0.105], abs=1e-12)
    # eta_d = eta_p: a double eigenvalue, trace / 2 = 0.95 (critically damped)
    assert ace.gda_spectral_radius(0.05, 0.05) == pytest.approx(0.95, abs=1e-6)
    # eta_d = 2 = 2(1 + c) at c = 0: a complex pair on the unit circle, det = 0.9 + 0.05 * 2
    assert ace.gda_spectral_radius(0.05, 2.0) == pytest.approx(1.0, abs=1e-12)
    # the augmented term c = 1 adds friction: det = 1 - 0.2 + 0.1 = 0.9
    assert ace.gda_spectral_radius(0.05, 2.0, aug=1.0) == pytest.approx(math.sqrt(0.9))
    assert ace.gda_spectral_radius(0.05, 2.0, aug=1.0) == pytest.approx(0.9487, abs=5e-5)
    # ... and the run reaches the KKT point (x, lambda) = (0, 2a) = (0, 4)
    long = ace.scalar_gda(eta_p=0.05, eta_d=0.05, steps=2000)
    assert (long["x"][-1], long["lam"][-1]) == pytest.approx((0.0, 4.0), abs=1e-6)


def test_worked_example_resilient_optimum():
    """Part 2: the resilient toy min (x - 2)^2 + rho/2 u^2 s.t. |x| <= u has its optimum at
    x = u = 4 / (2 + rho), lambda = rho u (4/3 each for rho = 1; 1, 1, 2 for rho = 2)."""
    for rho, want in ((1.0, (4 / 3, 4 / 3, 4 / 3)), (2.0, (1.0, 1.0, 2.0))):
        run = ace.scalar_gda(eta_p=0.05, eta_d=0.05, steps=4000, mode="resilient", rho=rho)
        got = (run["x"][-1], run["u"][-1], run["lam"][-1])
        assert got == pytest.approx(want, abs=1e-6)
        assert got[1] == pytest.approx(got[2] / rho, abs=1e-6)  # u* = lambda* / rho


def _one_layer(gamma: float) -> ace.HomotopyLayer:
    eq = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
    neq = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
    with torch.no_grad():
        eq.weight.copy_(torch.eye(2, dtype=torch.float64))  # commutes with every rotation
        neq.weight.copy_(torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64)))
    return ace.HomotopyLayer(eq, neq, gamma0=gamma)


def test_worked_example_one_homotopy_layer():
    """Part 3: f(x) = x + gamma D x with D = diag(1, -1), at x = e1, rotated by a quarter
    turn. Truncation gap gamma, violation 2 gamma, both equal to the bounds of Theorems 4.1
    and 4.2 with L = 1, B = M = 1; the relative squared error is 4 gamma^2 / (1 + gamma)^2."""
    gamma = 0.1
    layer = _one_layer(gamma)
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    quarter = torch.tensor([math.pi / 2], dtype=torch.float64)
    R = ace.rotation_matrices(quarter)[0]
    with torch.no_grad():
        fx = layer(x)
        assert fx[0].tolist() == pytest.approx([1.1, 0.0])
        gap = float((fx - layer(x, use_neq=False)).norm())
        violation = float((fx @ R.T - layer(x @ R.T)).norm())
    assert gap == pytest.approx(0.1)
    assert violation == pytest.approx(0.2)
    assert ace.truncation_bound([gamma], B=1.0, M=1.0, L=1, x_norm=1.0) == pytest.approx(gap)
    assert ace.violation_bound([gamma], B=1.0, M=1.0, C=0.0, L=1, x_norm=1.0) == pytest.approx(
        violation
    )
    err = ace.equivariance_error(
        layer, x, lambda n: quarter, ace.rotation_matrices, ace.rotation_matrices, n=1
    )
    assert err == pytest.approx(4 * gamma**2 / (1 + gamma) ** 2)
    assert err == pytest.approx(0.0331, abs=5e-5)
    # truncated (gamma's branch switched off): exactly equivariant
    layer.use_neq = False
    assert ace.equivariance_error(
        layer, x, lambda n: quarter, ace.rotation_matrices, ace.rotation_matrices, n=1
    ) == pytest.approx(0.0, abs=1e-30)


def test_the_pytorch_usage_block_settles_near_gamma_zero():
    """book/ace/index.md, "Using it in PyTorch": the page's code, run as written, ends with
    every homotopy coefficient near 0 (the page says it settles; with SGD on gamma the damping
    argument of (ace-gda-map) applies) and a truncated model."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "book" / "ace" / "index.md").read_text()
    section = page.split("## Using it in PyTorch", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    with torch.random.fork_rng(devices=[]):
        exec(compile(code, "book/ace/index.md", "exec"), scope)  # noqa: S102
    gammas = [float(g.detach()) for g in scope["gammas"]]
    assert len(gammas) == 3 and max(abs(g) for g in gammas) < 0.05, gammas
    assert scope["strict"] is not None
