"""Tests of lab.ace: closed forms, dual feasibility, exact equivariance, reductions, Cooper."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from lab import ace
from lab.ace.settings import ToySettings
from lab.ace.stored_runs import load_long_runs, load_sweep, long_run, run_sweep, sweep_mse
from lab.core.fixtures import official_fixture


class _Const(nn.Module):
    """A layer that ignores its input and returns a fixed value (shape (1,))."""

    def __init__(self, value: float):
        super().__init__()
        self.register_buffer("value", torch.tensor([value], dtype=torch.float64))

    def forward(self, x):
        return self.value.expand(x.shape[0])


def _scalar_model(gamma0=1.0):
    # f(x) = 0 + gamma * 1, so the homotopy output *is* gamma
    return ace.HomotopyLayer(_Const(0.0), _Const(1.0), gamma0=gamma0).double()


def _scalar_ace_run(eta_p, eta_d, steps, aug=0.0, mode="equality", rho=1.0):
    layer = _scalar_model()
    opt = torch.optim.SGD(layer.parameters(), lr=eta_p)
    eng = ace.ACE(layer, opt, mode=mode, dual_lr=eta_d, aug=aug, rho=rho)
    if mode == "resilient":
        eng.primal_opts[0].param_groups[-1]["lr"] = eta_p
    z = torch.zeros(1, dtype=torch.float64)
    xs, lams = [1.0], [0.0]
    for _ in range(steps):
        out = eng.step(((layer(z) - 2.0) ** 2).sum())
        xs.append(float(out["gamma"][0]))
        lams.append(float(out["lam"][0]))
    return np.array(xs), np.array(lams), eng


# ---------------------------------------------------------------- closed forms (reference)
def test_scalar_equality_kkt():
    r = ace.scalar_gda(eta_p=0.05, eta_d=0.05, aug=1.0, steps=2000)
    assert abs(r["x"][-1]) < 1e-3 and abs(r["lam"][-1] - 4.0) < 1e-3


def test_scalar_resilient_optimum():
    r = ace.scalar_gda(eta_p=0.05, eta_d=0.05, steps=4000, mode="resilient", rho=1.0)
    for k in ("x", "u", "lam"):
        assert abs(r[k][-1] - 4 / 3) < 1e-3, k
    assert np.all(r["lam"] >= 0)


def test_undamped_gda_oscillates_damped_converges():
    free = ace.scalar_gda(eta_p=0.05, eta_d=0.5, aug=0.0, steps=400)
    damped = ace.scalar_gda(eta_p=0.05, eta_d=0.5, aug=1.0, steps=400)
    assert np.sign(free["x"][50:]).min() < 0 < np.sign(free["x"][50:]).max()  # swings
    assert abs(damped["x"][-1]) < abs(free["x"][-100:]).max()


def test_dual_step_kinds():
    lam = np.array([0.1, -0.2, 0.0])
    s = np.array([-1.0, 0.5, 2.0])
    assert np.allclose(ace.dual_step(lam, s, 0.1), lam + 0.1 * s)
    assert np.all(ace.dual_step(lam, s, 1.0, "inequality") >= 0)
    with pytest.raises(ValueError, match="same shape"):
        ace.dual_step(lam, s[:2], 0.1)


# ---------------------------------------------------------------- torch engine vs reference
@pytest.mark.parametrize("aug", [0.0, 1.0])
def test_ace_equals_numpy_reference(aug):
    xs, lams, _ = _scalar_ace_run(0.05, 0.05, 300, aug=aug)
    r = ace.scalar_gda(eta_p=0.05, eta_d=0.05, aug=aug, steps=300)
    np.testing.assert_allclose(xs, r["x"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lams, r["lam"], rtol=1e-10, atol=1e-12)


def test_ace_resilient_equals_reference_and_feasible():
    xs, lams, eng = _scalar_ace_run(0.05, 0.05, 300, mode="resilient")
    r = ace.scalar_gda(eta_p=0.05, eta_d=0.05, steps=300, mode="resilient")
    np.testing.assert_allclose(xs, r["x"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lams, r["lam"], rtol=1e-9, atol=1e-12)
    assert np.all(lams >= 0)
    assert abs(float(eng.u.detach()[0]) - r["u"][-1]) < 1e-10


def test_lambda_integrates_gamma_when_loss_ignores_it():
    layer = _scalar_model(gamma0=0.7)
    layer.gamma.requires_grad_(False)  # gamma frozen, loss independent of gamma
    eng = ace.ACE(layer, torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), dual_lr=0.3)
    g = float(layer.gamma)
    for k in range(1, 11):
        out = eng.step(torch.zeros((), requires_grad=True))
        assert abs(out["lam"][0] - 0.3 * g * k) < 1e-12


def test_cooper_simultaneous_gda_agrees():
    cooper = pytest.importorskip("cooper")

    class Problem(cooper.ConstrainedMinimizationProblem):
        def __init__(self):
            super().__init__()
            mult = cooper.multipliers.DenseMultiplier(num_constraints=1, dtype=torch.float64)
            self.c = cooper.Constraint(
                constraint_type=cooper.ConstraintType.EQUALITY,
                formulation_type=cooper.formulations.Lagrangian,
                multiplier=mult,
            )

        def compute_cmp_state(self, x):
            loss = ((x - 2.0) ** 2).sum()
            return cooper.CMPState(
                loss=loss, observed_constraints={self.c: cooper.ConstraintState(violation=x)}
            )

    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    cmp = Problem()
    opt = cooper.optim.SimultaneousOptimizer(
        cmp=cmp,
        primal_optimizers=torch.optim.SGD([x], lr=0.05),
        dual_optimizers=torch.optim.SGD(cmp.dual_parameters(), lr=0.05, maximize=True),
    )
    cx, cl = [], []
    for _ in range(200):
        opt.roll(compute_cmp_state_kwargs={"x": x})
        cx.append(float(x.detach()))
        cl.append(float(cmp.c.multiplier.weight.detach().reshape(-1)[0]))
    xs, lams, _ = _scalar_ace_run(0.05, 0.05, 200)
    np.testing.assert_allclose(xs[1:], cx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lams[1:], cl, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- equivariance
def _x(n=256, seed=0):
    x, _ = ace.swirl_dataset(n, 0.0, seed)
    return torch.tensor(x)


def test_strict_and_truncated_are_exactly_equivariant():
    strict = ace.make_toy_model(homotopy=False, dtype=torch.float64)
    assert ace.so2_equivariance_error(strict, _x(), n=64) < 1e-10
    model = ace.make_toy_model(dtype=torch.float64)
    eng = ace.ACE(model, torch.optim.SGD(model.parameters(), lr=0.0))
    assert ace.so2_equivariance_error(eng.truncate(), _x(), n=64) < 1e-10
    assert ace.so2_equivariance_error(model, _x(), n=64) > 1e-3  # gamma = 1: broken


def test_trained_truncated_model_is_exactly_equivariant():
    """The code check that replaced the claim ``truncated-equivariant`` (true by construction:
    the truncated model runs only the equivariant branches), on a trained float32 run."""
    from lab.ace.claims import CLAIMS

    assert "truncated-equivariant" not in CLAIMS.specs
    run = ace.train_toy(ToySettings("equality", N=16, steps=20, record_every=20, test_N=50))
    assert run["final"]["eq_error_truncated"] < 1e-10 < 1e-6 < run["final"]["eq_error"]


def test_neq_branch_alone_is_not_equivariant():
    branch = ace.NeqBranch(1, 1).double()

    def f(x):
        return branch(x.reshape(-1, 1, 2)).reshape(-1, 2)

    assert ace.so2_equivariance_error(f, _x(), n=32) > 1e-2


def test_pair_equivariance_error():
    """The pair: reference.equivariance_error (a loop, one forward per rotation) ==
    fast.equivariance_error (one batched forward), and both equal the closed form."""
    A = torch.diag(torch.tensor([1.0, 2.0], dtype=torch.float64))
    x = _x(64, 3)
    th = torch.tensor([0.3, 1.1, 2.0, 4.0], dtype=torch.float64)
    args = (lambda v: v @ A.T, x, lambda n: th[:n], ace.rotation_matrices, ace.rotation_matrices)
    got = ace.fast.equivariance_error(*args, n=4)
    loop = ace.reference.equivariance_error(*args, n=4)
    R = ace.rotation_matrices(th)
    num = np.mean([float(((x @ (A @ r - r @ A).T) ** 2).sum(-1).mean()) for r in R])
    den = float(((x @ A.T) ** 2).sum(-1).mean())
    assert abs(got - num / den) < 1e-12 and abs(loop - num / den) < 1e-12
    assert abs(ace.fast.equivariance_error(*args, n=4, relative=False) - num) < 1e-12
    assert abs(ace.reference.equivariance_error(*args, n=4, relative=False) - num) < 1e-12
    for path in (ace.reference, ace.fast):
        with pytest.raises(ValueError, match="x must be"):
            path.equivariance_error(args[0], np.zeros((3, 2)), *args[2:])
        with pytest.raises(TypeError, match="rho_out"):
            path.equivariance_error(*args[:4], "no")


def test_truncation_bound_holds_on_toy():
    model = ace.make_toy_model(dtype=torch.float64, gamma0=0.2)
    x = _x(1000, 5)
    eng = ace.ACE(model, torch.optim.SGD(model.parameters(), lr=0.0))
    k = ace.layer_constants(model, x)
    gap = ace.truncation_gap(model, eng.truncate(), x)
    bound = ace.truncation_bound([0.2] * 3, k["B"], k["M"], 3, x.norm(dim=-1).numpy())
    assert np.all(gap <= bound + 1e-12)


def test_bounds_closed_form_and_linear_in_gamma():
    assert math.isclose(
        ace.truncation_bound([0.1, -0.2], 2.0, 1.5, 2, 3.0),
        1 * 0.2 * 2 * 1.5 * 3 + 1.2 * 0.2 * 2 * 1.5 * 3,
    )
    assert math.isclose(ace.violation_bound([0.1], 2.0, 1.5, 1.0, 1, 1.0), 2 * 0.1 * 4.0)
    assert ace.truncation_bound([0.0], 1.0, 1.0, 3, 1.0) == 0.0


# ---------------------------------------------------------------- reductions and determinism
def test_ace_with_zero_dual_lr_is_unconstrained_bit_for_bit():
    a = ace.train_toy(ToySettings("unconstrained", N=32, steps=30, record_every=10))
    b = ace.train_toy(ToySettings("equality", N=32, steps=30, dual_lr=0.0, record_every=10))
    np.testing.assert_array_equal(a["test_mse"], b["test_mse"])
    np.testing.assert_array_equal(a["gamma"], b["gamma"])


def test_gamma_frozen_at_zero_is_strict_bit_for_bit():
    x, y = ace.swirl_dataset(32, 0.3, 0)
    X, Y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    strict = ace.make_toy_model(homotopy=False)
    hom = ace.make_toy_model(gamma0=0.0)
    for layer in hom.layers:
        layer.gamma.requires_grad_(False)
        layer.use_neq = False
    eqp = [p for n, p in hom.named_parameters() if ".eq." in n]
    o1 = torch.optim.Adam(strict.parameters(), lr=1e-2)
    o2 = torch.optim.Adam(eqp, lr=1e-2)
    eng = ace.ACE(hom, o2, dual_lr=0.1)
    for _ in range(20):
        o1.zero_grad()
        l1 = ((strict(X) - Y) ** 2).sum(-1).mean()
        l1.backward()
        o1.step()
        l2 = ((hom(X) - Y) ** 2).sum(-1).mean()
        eng.step(l2)
        assert float(l1.detach()) == float(l2.detach())


def test_train_toy_deterministic():
    a = ace.train_toy(ToySettings("resilient", N=32, eps=0.5, steps=20, record_every=5))
    b = ace.train_toy(ToySettings("resilient", N=32, eps=0.5, steps=20, record_every=5))
    np.testing.assert_array_equal(a["gamma"], b["gamma"])
    np.testing.assert_array_equal(a["lam"], b["lam"])
    assert np.all(a["lam"] >= 0)


def test_stored_sweep_regenerates():
    stored = load_sweep()
    short = run_sweep(["strict"], [0.5], [32], [0])
    key = "strict|0.5|32|0"
    assert abs(short["runs"][key]["test_mse"] - stored["runs"][key]["test_mse"]) < 1e-4
    assert sweep_mse(stored, "strict", 0.5, 32) > 0


#: the stored sweep's entries behind notebook 2's recorded claims: (methods, eps values, N values)
CLAIM_CELLS = [
    # resilient-tracks: resilient vs the two extremes at eps = 0.5, every N
    (("strict", "unconstrained", "resilient"), (0.5,), (16, 32, 64, 128, 256)),
    # symmetric-beats-strict: truncated equality ACE vs strict at eps = 0, every N
    (("strict", "equality"), (0.0,), (16, 32, 64, 128, 256)),
    # slacks-locate: the resilient slacks at N = 256 for every eps (eps = 0.5 is above)
    (("resilient",), (0.0, 1.0), (256,)),
]


#: The measured spread of the stored runs across the numerics configurations (native AVX-512,
#: avx2, baseline; tests/fixtures/ace_numerics_spread.json, 2026-12-06): the code reproduces
#: itself bit for bit within a configuration (also the code that stored the files, commit
#: 71509d4), but the kernels' rounding differs and 600 steps of training amplify it: test MSEs
#: of one entry differ by up to a factor 5 (strict|0|16|1: 0.0121 native, 0.0036 avx2, 0.0024
#: baseline, 0.0022 stored). The stored files were built under another configuration and
#: record none, so no per-entry tolerance below that spread can hold across machines; the slow
#: tests check what the claims read: their verdicts recomputed from the regenerated entries,
#: and the slacks within three times their measured spread.
SPREAD = json.loads((Path(__file__).parent / "fixtures" / "ace_numerics_spread.json").read_text())


def _tracks_verdict(sweep):
    from lab.ace.claims import CLAIMS

    Ns = sweep["grid"]["N"]
    worst = max(
        sweep_mse(sweep, "resilient", 0.5, n)
        / min(sweep_mse(sweep, "strict", 0.5, n), sweep_mse(sweep, "unconstrained", 0.5, n))
        for n in Ns
    )
    return CLAIMS["resilient-tracks"].rule.decide(worst)


def _slacks_verdict(sweep):
    from lab.ace.claims import CLAIMS

    u = {e: np.mean([sweep["runs"][f"resilient|{e:g}|256|{s}"]["u"] for s in (0, 1)], 0)
         for e in (0.0, 1.0)}  # fmt: skip
    return CLAIMS["slacks-locate"].rule.decide(float(u[1.0].max() / u[0.0].max()))


def _gap_600_sign(sweep):
    runs = sweep["runs"]
    gaps = [np.log(runs[f"strict|0|{n}|{s}"]["test_mse"])
            - np.log(runs[f"equality|0|{n}|{s}"]["test_mse_truncated"])
            for n in sweep["grid"]["N"] for s in (0, 1)]  # fmt: skip
    return np.sign(np.mean(gaps))


#: what each claim cell's regenerated entries must keep: the verdict (or the diagnosis' sign)
CELL_CHECKS = [_tracks_verdict, _gap_600_sign, _slacks_verdict]


@pytest.mark.slow
@pytest.mark.parametrize("cell", range(len(CLAIM_CELLS)))
def test_claim_entries_of_the_stored_sweep_regenerate(cell):
    """Every stored entry behind a recorded claim of notebook 2 comes back from its command
    (the whole file: ``lab artifacts build ace/sweep``) as far as numerics allow (SPREAD): the
    claim read from the regenerated entries keeps its verdict."""
    import copy

    methods, eps_values, N_values = CLAIM_CELLS[cell]
    stored = load_sweep()
    fresh = run_sweep(methods, eps_values, N_values, stored["grid"]["seed"])
    assert fresh["settings"] == stored["settings"]
    merged = copy.deepcopy(stored)
    merged["runs"].update(fresh["runs"])
    for key, run in fresh["runs"].items():
        if key.startswith("resilient"):  # the slacks, within three times their measured spread
            np.testing.assert_allclose(
                run["u"], stored["runs"][key]["u"], atol=3 * SPREAD["u_abs_max"], err_msg=key
            )
    assert CELL_CHECKS[cell](merged) == CELL_CHECKS[cell](stored)


def test_gamma_slopes_first_order_and_restores_gamma():
    run = ace.train_toy(
        ToySettings("equality", N=32, eps=0.0, steps=40, record_every=40, test_N=200)
    )
    g0 = [float(g) for g in ace.homotopy(run["model"])]
    sl = ace.gamma_slopes(run, n_fit=100)
    assert [float(g) for g in ace.homotopy(run["model"])] == g0
    # a smooth map of gamma vanishing at gamma = 0: first order (the claim's check can fail:
    # a squared gap would give 2)
    assert abs(sl.slope_truncation - 1) < 0.1 and abs(sl.slope_violation - 1) < 0.1
    # the plug-in bounds are loose upper bounds here
    assert np.all(sl.truncation <= sl.truncation_bound)
    with pytest.raises(ValueError, match="strict"):
        ace.gamma_slopes(ace.train_toy(ToySettings("strict", N=16, steps=2, test_N=20)), n_fit=10)


def test_remainder_slopes_are_second_order():
    """The rival of the order claims: the gaps without their first-order term are second order
    (slope 2), on the same run, points and window as gamma_slopes; gamma is left untouched."""
    run = ace.train_toy(
        ToySettings("equality", N=32, eps=0.0, steps=40, record_every=40, test_N=200)
    )
    g0 = [float(g) for g in ace.homotopy(run["model"])]
    rem = ace.remainder_slopes(run, n_fit=100)
    assert [float(g) for g in ace.homotopy(run["model"])] == g0
    assert abs(rem["slope_truncation"] - 2) < 0.2 and abs(rem["slope_violation"] - 2) < 0.2
    sl = ace.gamma_slopes(run, n_fit=100)
    np.testing.assert_allclose(rem["gamma_bar"], sl.gamma_bar, rtol=1e-6)
    assert np.all(rem["truncation"][:6] < sl.truncation[:6])
    with pytest.raises(TypeError, match="run"):
        ace.remainder_slopes({"model": None})
    with pytest.raises(ValueError, match="n_fit"):
        ace.remainder_slopes(run, n_fit=0)
    with pytest.raises(ValueError, match="strict"):
        ace.remainder_slopes(
            ace.train_toy(ToySettings("strict", N=16, steps=2, test_N=20)), n_fit=10
        )


def test_input_robustness():
    run = ace.train_toy(ToySettings("strict", N=16, steps=5, record_every=5, test_N=50))
    r = ace.input_robustness(run, sigma=1e-9, draws=2)
    assert abs(r.perturbed - r.clean) < 1e-6
    big = ace.input_robustness(run, sigma=1.0, draws=2)
    assert big.degradation == pytest.approx(big.perturbed - big.clean)
    with pytest.raises(ValueError, match="sigma"):
        ace.input_robustness(run, sigma=-1.0)


# ---------------------------------------------------------------- bad input
def test_bad_inputs():
    model = ace.make_toy_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="mode"):
        ace.ACE(model, opt, mode="inequality")
    with pytest.raises(ValueError, match="dual_lr"):
        ace.ACE(model, opt, dual_lr=-1.0)
    with pytest.raises(ValueError, match="rho"):
        ace.ACE(model, opt, mode="resilient", rho=0.0)
    strict = ace.make_toy_model(homotopy=False)
    with pytest.raises(ValueError, match="HomotopyLayer"):
        ace.ACE(strict, torch.optim.SGD(strict.parameters(), lr=0.1))
    bad = ace.HomotopyLayer(nn.Linear(2, 3), nn.Linear(2, 4))
    with pytest.raises(ValueError, match=r"\(5, 3\).*\(5, 4\)"):
        bad(torch.zeros(5, 2))
    with pytest.raises(TypeError, match="eq"):
        ace.HomotopyLayer("not a module", nn.Linear(2, 2))
    with pytest.raises(ValueError, match="N"):
        ace.swirl_dataset(0, 0.1, 0)
    with pytest.raises(ValueError, match="method"):
        ToySettings("penalty")
    with pytest.raises(TypeError, match="settings"):
        ace.train_toy("equality")
    with pytest.raises(ValueError, match="eps"):
        ToySettings(eps=-1.0)
    with pytest.raises(TypeError, match="unknown setting"):
        ToySettings().replace(step=3)
    with pytest.raises(ValueError, match="x must be a 2-d"):
        ace.so2_equivariance_error(model, torch.zeros(3))
    with pytest.raises(TypeError, match="model"):
        ace.layer_constants(None, torch.zeros(3, 2))
    with pytest.raises(TypeError, match="x"):
        ace.violation_gap(model, None)
    with pytest.raises(ValueError, match="theta"):
        ace.rotation_matrices(np.array([np.nan]))
    with pytest.raises(ValueError, match="x"):
        ace.swirl_field(np.zeros(3))
    with pytest.raises(TypeError, match="sweep"):
        ace.sweep_mse([], "strict", 0.5, 32)
    with pytest.raises(ValueError, match="methods"):
        ace.run_sweep(methods=["penalty"])


@pytest.mark.cuda
def test_cuda_matches_cpu_trajectory():
    torch.manual_seed(0)
    res = {}
    for dev in ("cpu", "cuda"):
        model = ace.make_toy_model(dtype=torch.float64).to(dev)
        x, y = ace.swirl_dataset(64, 0.5, 0)
        X = torch.tensor(x, device=dev)
        Y = torch.tensor(y, device=dev)
        eng = ace.ACE(model, torch.optim.SGD(model.parameters(), lr=1e-2), dual_lr=0.05, aug=1.0)
        gs = [eng.step(((model(X) - Y) ** 2).sum(-1).mean())["gamma"] for _ in range(200)]
        res[dev] = np.array(gs)
    np.testing.assert_allclose(res["cuda"], res["cpu"], rtol=1e-5, atol=1e-8)


# ----------------------------------------------------------------------------------------
# Parity with the authors' code (lab/core/official/ace_official.json)
# ----------------------------------------------------------------------------------------
OFFICIAL = official_fixture("ace_official.json")


def test_official_fixture_has_its_provenance():
    prov = json.loads(OFFICIAL.read_text())["provenance"]
    assert prov["repository"] == "andreimano/ACE" and len(prov["commit"]) == 40
    for key in ("file", "functions", "setup", "command", "versions"):
        assert prov[key], key


def test_equality_ace_reproduces_the_official_loop():
    """Equality mode: our coefficients and multipliers equal the authors' run_epoch over 12
    steps (Adam with c = 0 and c = 1, SGD); tolerance 1e-12 (measured: bit for bit)."""
    parity = ace.official_parity(OFFICIAL)
    equality = {k: v for k, v in parity.items() if k.startswith("equality")}
    assert len(equality) == 3
    for name, diff in equality.items():
        assert diff["gamma"].max() < 1e-12 and diff["lambda"].max() < 1e-12, name


def test_resilient_ace_differs_from_the_official_loop():
    """Resilient mode follows the paper (rho/2 ||u||^2, ascent on |gamma| - u); the authors'
    loop does not (a listed deviation): the same first step, different ones after."""
    diff = ace.official_parity(OFFICIAL)["resilient adam"]
    assert diff["gamma"][0] < 1e-12 and diff["gamma"][-1] > 1e-3


def test_official_parity_rejects_bad_paths(tmp_path):
    with pytest.raises(TypeError, match="path"):
        ace.official_parity(3)
    with pytest.raises(FileNotFoundError):
        ace.official_parity(tmp_path / "missing.json")


# ----------------------------------------------------------------------------------------
# The stored long runs (lab/ace/data/converged.json)
# ----------------------------------------------------------------------------------------
def test_stored_long_runs_regenerate_short():
    """One stored robustness entry (the strict model, 600 steps) comes back from its command.

    Tolerance 5e-3 (relative): 600 float32 steps carry the CPU's rounding into the result; the
    stored entry came back within 8e-4 natively, 3.4e-3 under the AVX2 numerics mode and 7e-4
    under the baseline one (Intel AVX-512 machine), while the entry of the next seed differs by
    6.4% (test MSE) and 1.3% (degradation): a wrong command still fails."""
    stored = load_long_runs()
    key = "robustness|strict|0.5|64|0"
    fresh = long_run("robustness", "strict", 0.5, 64, 0)
    for field in ("test_mse", "degradation"):
        np.testing.assert_allclose(fresh[field], stored["runs"][key][field], rtol=5e-3)
        other = stored["runs"]["robustness|strict|0.5|64|1"][field]
        assert abs(other / stored["runs"][key][field] - 1) > 1e-2  # the tolerance can fail
    assert set(stored["runs"]) == {
        "|".join([k, m, f"{e:g}", str(n), str(s)]) for k, m, e, n, s in ace.long_run_jobs()
    }


@pytest.mark.slow
def test_claim_entries_of_the_stored_long_runs_regenerate():
    """Every stored long run comes back from its command (``lab artifacts build ace/converged``)
    as far as numerics allow (SPREAD): the two claims read from the regenerated runs keep their
    verdicts."""
    from lab.ace.claims import CLAIMS
    from lab.core import claims

    stored = load_long_runs()
    fresh = {}
    for job in ace.long_run_jobs():
        key = "|".join([job[0], job[1], f"{job[2]:g}", str(job[3]), str(job[4])])
        steps = stored["runs"][key]["steps"] if job[:2] == ("symmetric", "strict") else None
        fresh[key] = long_run(*job, steps=steps)

    def verdicts(runs):
        seeds = stored["settings"]["robust_seeds"]
        g = {m: [runs[f"robustness|{m}|0.5|64|{s}"]["degradation"] for s in seeds]
             for m in ("resilient", "strict")}  # fmt: skip
        keys = [(n, s) for n in (16, 32, 64, 128, 256) for s in (0, 1)]
        sym = claims.paired(
            [np.log(runs[f"symmetric|strict|0|{n}|{s}"]["test_mse"]) for n, s in keys],
            [np.log(runs[f"symmetric|equality|0|{n}|{s}"]["test_mse_truncated"]) for n, s in keys],
        )
        return (
            CLAIMS["robustness"].rule.decide(claims.paired(g["resilient"], g["strict"])),
            CLAIMS["symmetric-beats-strict"].rule.decide(sym),
        )

    assert verdicts(fresh) == verdicts(stored["runs"])


def test_long_run_bad_inputs():
    with pytest.raises(ValueError, match="kind"):
        long_run("long", "strict", 0.0, 16, 0)
    with pytest.raises(ValueError, match="method"):
        long_run("symmetric", "adam", 0.0, 16, 0)
    with pytest.raises(ValueError, match="steps"):
        long_run("symmetric", "strict", 0.0, 16, 0, steps=0)


# ----------------------------------------------------------------------------------------
# The run layer: figures draw results, settings are validated once
# ----------------------------------------------------------------------------------------
def test_figures_draw_results_only():
    """figures.py imports no driver or kernel of the chapter; its figures take results."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(ace.figures.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.startswith("lab.ace")}
    fig = ace.dual_dynamics_figure(ace.scalar_dynamics(eta_d=2.0, aug=0.0, steps=100))
    assert "spectral radius 1.0000 (undamped)" in fig.layout.title.text
    cells = ace.cell_runs(load_sweep(), 0.5, 32)
    assert set(cells) == set(ace.METHODS) and len(cells["strict"]) == 2
    ace.partial_symmetry_figure(cells, 0.5, 32, source="stored sweep")
    with pytest.raises(TypeError, match="cells"):
        ace.partial_symmetry_figure({}, 0.5, 32)


def test_sweep_settings_are_the_stored_runs_settings():
    s = ace.sweep_settings("resilient", N=64, eps=0.5)
    assert (s.steps, s.lr, s.noise, s.C, s.layers) == (600, 1e-2, 0.05, 16, 3)
    assert (s.dual_lr, s.rho) == (0.05, 10.0)
    assert load_sweep()["settings"]["per_method"] == ace.METHOD_SETTINGS
