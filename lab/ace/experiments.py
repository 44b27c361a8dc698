"""Drivers of the notebooks: training the SO(2) toy, the gaps behind Theorems 4.1/4.2, the
slope in gamma on held-out points, robustness to input noise, and the stored sweep.

The partial-symmetry sweep (methods x eps x N x seeds) behind notebook 2 takes minutes on two
cores, more than a notebook's budget, so it is run once with fixed seeds and committed as a
small JSON file (``lab/ace/data/sweep.json``). ``load_sweep`` reads it; ``run_sweep``
regenerates it or any part of it. The command that rebuilds the whole file (minutes on two
cores, one thread)::

    lab artifacts build ace/sweep            # rewrites lab/ace/data/sweep.json

``tests/test_ace.py`` (marked ``slow``) regenerates every entry behind a recorded claim and
compares it with the stored numbers.

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lab.ace.fast import equivariance_error
from lab.ace.layer import HomotopyLayer, homotopy
from lab.ace.models import make_toy_model, rotation_matrices, swirl_dataset
from lab.ace.optim import ACE
from lab.ace.reference import (
    gda_spectral_radius,
    scalar_gda,
    truncation_bound_unchecked,
    violation_bound_unchecked,
)
from lab.ace.settings import ToySettings
from lab.core.checks import check_int, check_positive
from lab.core.progress import progress
from lab.core.runtime import smoke_steps

__all__ = [
    "GammaSlopes",
    "Robustness",
    "gamma_slopes",
    "input_robustness",
    "layer_constants",
    "remainder_slopes",
    "scalar_dynamics",
    "so2_equivariance_error",
    "train_toy",
    "truncation_gap",
    "violation_gap",
]


def _check_model(name: str, model: Any) -> torch.nn.Module:
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module (got {type(model).__name__})")
    return model


def _check_points(name: str, x: Any) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, 2) (got {type(x).__name__})")
    if x.ndim != 2 or x.shape[-1] != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape (B, 2) with B >= 1 (got {tuple(x.shape)})")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite")
    return x


def so2_equivariance_error(model, x, n: int = 16, seed: int = 0) -> float:
    """:func:`equivariance_error` of a ``(B, 2) -> (B, 2)`` map under ``n`` random rotations.

    See: book/ace/02-partial-symmetry.ipynb
    """
    if not callable(model):
        raise TypeError(f"model must be callable (got {type(model).__name__})")
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))

    def sampler(k):
        return 2 * math.pi * torch.rand(k, generator=gen, dtype=torch.float64)

    return equivariance_error(model, x, sampler, rotation_matrices, rotation_matrices, n=n)


def scalar_dynamics(eta_d: float = 0.05, aug: float = 0.0, steps: int = 2000) -> dict[str, Any]:
    """GDA on the scalar problem min (x-2)^2 s.t. x = 0 (``eta_p = 0.05``): the iterates of
    :func:`~lab.ace.reference.scalar_gda` with the step sizes and the spectral radius of the
    linear map (:func:`~lab.ace.reference.gda_spectral_radius`), what
    :func:`~lab.ace.figures.dual_dynamics_figure` draws.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    eta_d = check_positive("eta_d", eta_d)
    aug = check_positive("aug", aug, allow_zero=True)
    steps = check_int("steps", steps, 10)
    with np.errstate(over="ignore", invalid="ignore"):
        r = scalar_gda(eta_p=0.05, eta_d=eta_d, aug=aug, steps=steps)
    return {**r, "eta_d": eta_d, "aug": aug, "radius": gda_spectral_radius(0.05, eta_d, aug)}


# ----------------------------------------------------------------------------------------
# Bounds: plug-in constants and measured gaps
# ----------------------------------------------------------------------------------------
def layer_constants(model, x) -> dict[str, float]:
    """Plug-in constants for Theorems 4.1/4.2 on the inputs ``x`` (data-dependent).

    ``M``: max over layers of the spectral norm of the equivariant linear map times the
    largest slope of its norm gate over the observed pre-activations (at least 1).
    ``B``: max over layers and samples of ``||f_neq,i(h_{i-1})|| / ||x||`` along the
    homotopy model's forward pass. These are estimates on the data, not certified global
    constants.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    _check_model("model", model)
    _check_points("x", x)
    if not hasattr(model, "layers") or not hasattr(model, "hidden"):
        raise TypeError("model must be a toy model of make_toy_model (with .layers and .hidden)")
    return _layer_constants(model, x)


def _layer_constants(model, x) -> dict[str, float]:
    M, B = 1.0, 0.0
    with torch.no_grad():
        hs = model.hidden(x)
        xn = x.norm(dim=-1).clamp_min(1e-12)
        for i, layer in enumerate(model.layers):
            eq = layer.eq if isinstance(layer, HomotopyLayer) else layer
            # real matrix of V -> W1 V + W2 J V on R^{2 cin}
            J = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=eq.W1.dtype)
            I2 = torch.eye(2, dtype=eq.W1.dtype)
            A = torch.kron(eq.W1, I2) + torch.kron(eq.W2, J)
            s = float(torch.linalg.matrix_norm(A, ord=2))
            slope = 1.0
            if eq.gate:
                z = eq.linear(hs[i]).norm(dim=-1)  # (B, cout)
                sg = torch.sigmoid(eq.a * z + eq.b)
                slope = float((sg + eq.a.abs() * z * sg * (1 - sg)).max())
            M = max(M, s * slope)
            if isinstance(layer, HomotopyLayer):
                nb = layer.neq(hs[i]).flatten(1).norm(dim=-1) / xn
                B = max(B, float(nb.max()))
    return {"M": M, "B": B}


def truncation_gap(model, truncated, x) -> np.ndarray:
    """Per-sample ``||f_gamma(x) - f_0(x)||`` (what Theorem 4.1 bounds).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    _check_model("model", model)
    _check_model("truncated", truncated)
    _check_points("x", x)
    return _truncation_gap(model, truncated, x)


def _truncation_gap(model, truncated, x) -> np.ndarray:
    with torch.no_grad():
        return (model(x) - truncated(x)).norm(dim=-1).cpu().numpy()


def violation_gap(model, x, n: int = 16, seed: int = 0) -> np.ndarray:
    """Per-sample ``max_g ||R f(x) - f(R x)||`` over ``n`` random rotations (Theorem 4.2).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    _check_model("model", model)
    _check_points("x", x)
    return _violation_gap(model, x, check_int("n", n, 1), check_int("seed", seed, 0))


def _violation_gap(model, x, n: int, seed: int) -> np.ndarray:
    gen = torch.Generator().manual_seed(seed)
    th = 2 * math.pi * torch.rand(n, generator=gen, dtype=torch.float64)
    R = rotation_matrices(th).to(x.dtype)
    B = x.shape[0]
    with torch.no_grad():
        fx = model(x)
        fgx = model(torch.einsum("gij,bj->gbi", R, x).reshape(n * B, 2)).reshape(n, B, 2)
        gfx = torch.einsum("gij,bj->gbi", R, fx)
        return (fgx - gfx).norm(dim=-1).amax(0).cpu().numpy()


# ----------------------------------------------------------------------------------------
# Training (full batch) for the four methods
# ----------------------------------------------------------------------------------------
def _so2_error(model, x) -> float:
    """The recorded equivariance error: 8 rotations, seed 0 (unchecked)."""
    gen = torch.Generator().manual_seed(0)

    def sampler(k):
        return 2 * math.pi * torch.rand(k, generator=gen, dtype=torch.float64)

    return equivariance_error(model, x, sampler, rotation_matrices, rotation_matrices, n=8)


def _setup(s: ToySettings) -> dict[str, Any]:
    """Data, model, optimisers and (for ACE) the primal-dual engine of one run."""
    x, y = swirl_dataset(s.N, s.eps, s.seed, noise=s.noise)
    xt, yt = swirl_dataset(s.test_N, s.eps, s.seed + 1_000_003, noise=0.0)
    torch.manual_seed(s.seed)
    model = make_toy_model(s.C, s.layers, homotopy=s.method != "strict", hidden=s.hidden,
                           seed=s.seed).to(s.dtype)  # fmt: skip
    gammas = homotopy(model)
    gids = {id(g) for g in gammas}
    weights = [p for p in model.parameters() if id(p) not in gids]
    if not gammas or s.gamma_opt == "adam":
        opts = [torch.optim.Adam(list(model.parameters()), lr=s.lr)]
    else:
        opts = [torch.optim.Adam(weights, lr=s.lr), torch.optim.SGD(gammas, lr=s.sgd_gamma_lr)]
    ace = None
    if s.method in ("equality", "resilient"):
        ace = ACE(model, opts, mode=s.method, dual_lr=s.dual_lr, rho=s.rho, aug=s.aug,
                  dual_opt=s.dual_opt)  # fmt: skip
    as_t = lambda a: torch.tensor(a, dtype=s.dtype)  # noqa: E731
    return {"X": as_t(x), "Y": as_t(y), "Xt": as_t(xt), "Yt": as_t(yt), "model": model,
            "gammas": gammas, "opts": opts, "ace": ace}  # fmt: skip


def _recorder(run: dict[str, Any]):
    """The histories of a run and the function that appends one point to them."""
    model, gammas, ace, Xt, Yt = (run[k] for k in ("model", "gammas", "ace", "Xt", "Yt"))
    L = len(gammas)
    hist: dict[str, list] = {k: [] for k in ("step", "gamma", "lam", "u", "test_mse", "eq_error")}

    def record(k):
        with torch.no_grad():
            hist["step"].append(k)
            hist["gamma"].append([float(g) for g in gammas] if L else [])
            hist["lam"].append(ace.lam.tolist() if ace is not None else [0.0] * L)
            u = ace.u.detach().tolist() if ace is not None and ace.u is not None else [0.0] * L
            hist["u"].append(u)
            hist["test_mse"].append(float(((model(Xt) - Yt) ** 2).sum(-1).mean()))
            hist["eq_error"].append(_so2_error(model, Xt[:200]))

    return hist, record


def _train_loop(s: ToySettings, run: dict[str, Any], record, show_progress: bool) -> int:
    """Full-batch steps until ``s.steps`` (or ``stop_gamma``); returns the last step."""
    model, gammas, ace, opts, X, Y = (run[k] for k in ("model", "gammas", "ace", "opts", "X", "Y"))
    record(0)
    steps = smoke_steps(s.steps)  # LAB_SMOKE=1: a few steps (FULL's code paths on a CPU)
    it = progress(range(1, steps + 1), desc=s.method, disable=None if show_progress else True)
    for k in it:
        loss = ((model(X) - Y) ** 2).sum(-1).mean()
        if ace is not None:
            ace.step(loss)
        else:
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            for o in opts:
                o.step()
        done = s.stop_gamma is not None and k % 100 == 0 and gammas
        done = done and max(abs(float(g.detach())) for g in gammas) < s.stop_gamma
        if k % s.record_every == 0 or k == steps or done:
            record(k)
        if done:
            return k
    return steps


def _final(run: dict[str, Any], last: int) -> dict[str, Any]:
    """The truncated model and the final numbers of a trained run."""
    model, gammas, ace, Xt, Yt = (run[k] for k in ("model", "gammas", "ace", "Xt", "Yt"))
    if ace is not None:
        truncated = ace.truncate()
    elif gammas:
        truncated = ACE(model, [torch.optim.SGD(list(model.parameters()), lr=0.0)]).truncate()
    else:
        truncated = model
    with torch.no_grad():
        mse = float(((model(Xt) - Yt) ** 2).sum(-1).mean())
        mse_t = float(((truncated(Xt) - Yt) ** 2).sum(-1).mean())
    final = {
        "test_mse": mse,
        "test_mse_truncated": mse_t,
        "eq_error": _so2_error(model, Xt[:200]),
        "eq_error_truncated": _so2_error(truncated, Xt[:200]),
        "gamma": [float(g.detach()) for g in gammas],
        "steps": int(last),
    }
    return {"final": final, "truncated": truncated}


def train_toy(settings: ToySettings, *, show_progress: bool = False) -> dict[str, Any]:
    """Train one toy model as ``settings`` (a :class:`~lab.ace.settings.ToySettings`) says and
    record the dynamics; torch's global generator is left as it was (the run seeds a fork).

    Methods: ``strict`` (equivariant layers only), ``unconstrained`` (homotopy model, gamma
    trained freely), ``equality`` (ACE, Algorithm 1), ``resilient`` (ACE, Algorithm 2).
    Adam on the weights; gamma on Adam (same ``lr``) or on SGD (``gamma_lr``, default
    ``100 * lr``). With ``stop_gamma``, training stops at the first multiple of 100 steps where
    ``max_i |gamma_i| < stop_gamma`` (``steps`` is then the cap; ``final["steps"]`` says when).

    Returns
    -------
    dict with ``step``, ``gamma``, ``lam``, ``u`` (recorded histories), ``test_mse``,
    ``eq_error`` (histories), ``final`` (test MSE and equivariance error of the deployed and
    the truncated model), ``model``, ``truncated`` and ``ace`` (or None).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    if not isinstance(settings, ToySettings):
        raise TypeError(f"settings must be a ToySettings (got {type(settings).__name__})")
    with torch.random.fork_rng(devices=[]):
        run = _setup(settings)
        hist, record = _recorder(run)
        last = _train_loop(settings, run, record, show_progress)
        out: dict[str, Any] = {k: np.asarray(v, dtype=float) for k, v in hist.items()}
        out.update(_final(run, last))
    out.update(model=run["model"], ace=run["ace"], x_test=run["Xt"], y_test=run["Yt"])
    return out


# ----------------------------------------------------------------------------------------
# Theorems 4.1/4.2: the order in gamma_bar on held-out points (the bounds as an illustration)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GammaSlopes:
    """Truncation and violation gaps of a trained model with its ``gamma`` rescaled.

    ``truncation`` / ``violation``: worst case over the held-out points of the gap divided by
    ``||x||``; ``*_bound``: the plug-in bounds of Theorems 4.1/4.2 with ``B``, ``M`` estimated on
    the *fit* points (``C = 1``), an illustration; ``slope_*``: log-log slope of the held-out
    gaps against ``gamma_bar`` over ``window`` (the small-``gamma_bar`` regime).
    """

    gamma_bar: np.ndarray
    truncation: np.ndarray
    violation: np.ndarray
    truncation_bound: np.ndarray
    violation_bound: np.ndarray
    slope_truncation: float
    slope_violation: float
    window: tuple[float, float]


def gamma_slopes(
    run: dict[str, Any],
    scales: Sequence[float] | None = None,
    n_fit: int = 500,
    window: tuple[float, float] = (1e-3, 0.1),
) -> GammaSlopes:
    """Rescale the trained ``gamma`` of ``run`` (a :func:`train_toy` result) by ``scales`` and
    measure the gaps of Theorems 4.1/4.2 on held-out test points.

    The first ``n_fit`` test points estimate the plug-in constants (:func:`layer_constants`);
    the remaining ones measure the gaps, whose log-log slope in ``gamma_bar`` is the check that
    can fail (the theorems make both gaps first order in ``gamma_bar``). The model's ``gamma``
    is restored on return.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    from lab.core.rates import power_law_fit

    if not isinstance(run, dict) or not {"model", "truncated", "x_test"} <= set(run):
        raise TypeError("run must be a train_toy result (with 'model', 'truncated', 'x_test')")
    model, truncated, x = run["model"], run["truncated"], _check_points("x_test", run["x_test"])
    n_fit = check_int("n_fit", n_fit, 1, x.shape[0] - 1)
    s = np.geomspace(1e-3, 1, 13) if scales is None else _seq("scales", scales)
    s = np.asarray([check_positive("scales", v) for v in s])
    lo, hi = (check_positive("window", w) for w in _seq("window", window))
    gam = homotopy(model)
    if not gam:
        raise ValueError("the run's model has no homotopy layer (strict model)")
    g0 = torch.stack([g.detach().clone() for g in gam])
    x_fit, x_held = x[:n_fit], x[n_fit:]
    xn = x_held.norm(dim=-1).clamp_min(1e-12).cpu().numpy()
    gb, tr, vi, tb, vb = [], [], [], [], []
    L = len(gam)
    try:
        for sc in s:
            with torch.no_grad():
                for g, v in zip(gam, g0, strict=True):
                    g.copy_(sc * v)
            gammas = [float(g.detach()) for g in gam]
            k = _layer_constants(model, x_fit)
            gb.append(max(abs(v) for v in gammas))
            tr.append(float((_truncation_gap(model, truncated, x_held) / xn).max()))
            vi.append(float((_violation_gap(model, x_held, 16, 0) / xn).max()))
            tb.append(truncation_bound_unchecked(gb[-1], k["B"], k["M"], L, 1.0))
            vb.append(violation_bound_unchecked(gb[-1], k["B"], k["M"], 1.0, L, 1.0))
    finally:
        with torch.no_grad():
            for g, v in zip(gam, g0, strict=True):
                g.copy_(v)
    gb_a, tr_a, vi_a = np.array(gb), np.array(tr), np.array(vi)
    return GammaSlopes(
        gamma_bar=gb_a,
        truncation=tr_a,
        violation=vi_a,
        truncation_bound=np.array(tb),
        violation_bound=np.array(vb),
        slope_truncation=power_law_fit(gb_a, tr_a, window=(lo, hi)).exponent,
        slope_violation=power_law_fit(gb_a, vi_a, window=(lo, hi)).exponent,
        window=(lo, hi),
    )


# ----------------------------------------------------------------------------------------
# Robustness to input perturbations
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Robustness:
    """Test MSE of a model on clean inputs and on inputs with Gaussian noise of std ``sigma``
    (the target stays the clean one); ``degradation = perturbed - clean``."""

    sigma: float
    clean: float
    perturbed: float
    degradation: float


def input_robustness(run: dict[str, Any], sigma: float = 0.1, draws: int = 8, seed: int = 0):
    """Robustness of a :func:`train_toy` result's deployed model to input noise.

    Averages ``||f(x + delta) - F(x)||^2`` over the test points and ``draws`` draws of
    ``delta ~ N(0, sigma^2 I)`` (a local generator seeded by ``seed``).

    See: book/ace/02-partial-symmetry.ipynb
    """
    if not isinstance(run, dict) or not {"model", "x_test", "y_test"} <= set(run):
        raise TypeError("run must be a train_toy result (with 'model', 'x_test', 'y_test')")
    sigma = check_positive("sigma", sigma)
    draws = check_int("draws", draws, 1)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    model, x, y = run["model"], _check_points("x_test", run["x_test"]), run["y_test"]
    with torch.no_grad():
        clean = float(((model(x) - y) ** 2).sum(-1).mean())
        pert = 0.0
        for _ in range(draws):
            d = sigma * torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
            pert += float(((model(x + d) - y) ** 2).sum(-1).mean()) / draws
    return Robustness(sigma=sigma, clean=clean, perturbed=pert, degradation=pert - clean)


def _seq(name: str, value: Any) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(f"{name} must be a non-empty sequence (got {value!r})")
    return list(value)


class _Remainder(torch.nn.Module):
    """``f_{s gamma}(x) - f_0(x) - s J(x)``: the gap with its first-order term removed."""

    def __init__(self, model, gam, g0, s: float, h: float) -> None:
        super().__init__()
        self.model, self.gam, self.g0, self.s, self.h = model, gam, g0, s, h

    def _at(self, scale: float, x):
        with torch.no_grad():
            for g, v in zip(self.gam, self.g0, strict=True):
                g.copy_(scale * v)
        return self.model(x)

    def forward(self, x):
        jac = (self._at(self.h, x) - self._at(-self.h, x)) / (2 * self.h)
        return self._at(self.s, x) - self._at(0.0, x) - self.s * jac


def remainder_slopes(
    run: dict[str, Any],
    scales: Sequence[float] | None = None,
    n_fit: int = 500,
    window: tuple[float, float] = (1e-3, 0.1),
) -> dict[str, Any]:
    """The rival of the order claims: the truncation and violation gaps of :func:`gamma_slopes`
    with their first-order term ``s J(x)`` removed (``J = d f_{s gamma} / ds`` at ``s = 0``, a
    central difference on a float64 copy of the model), on the same held-out points, scales and
    window. A second-order quantity: a slope test that read it as first order would be empty.

    Returns ``{"gamma_bar", "truncation", "violation", "slope_truncation", "slope_violation"}``.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    import copy

    from lab.core.rates import power_law_fit

    if not isinstance(run, dict) or not {"model", "x_test"} <= set(run):
        raise TypeError("run must be a train_toy result (with 'model', 'x_test')")
    x = _check_points("x_test", run["x_test"])
    n_fit = check_int("n_fit", n_fit, 1, x.shape[0] - 1)
    s = np.geomspace(1e-3, 1, 13) if scales is None else _seq("scales", scales)
    s = np.asarray([check_positive("scales", v) for v in s])
    lo, hi = (check_positive("window", w) for w in _seq("window", window))
    model = copy.deepcopy(run["model"]).double()
    gam = homotopy(model)
    if not gam:
        raise ValueError("the run's model has no homotopy layer (strict model)")
    g0 = [g.detach().clone() for g in gam]
    x_held = x[n_fit:].double()
    xn = x_held.norm(dim=-1).clamp_min(1e-12).cpu().numpy()
    gb = float(max(abs(float(v)) for v in g0)) * s
    tr, vi = [], []
    for sc in s:
        rem = _Remainder(model, gam, g0, float(sc), 1e-5)
        with torch.no_grad():
            tr.append(float((rem(x_held).norm(dim=-1).cpu().numpy() / xn).max()))
        vi.append(float((_violation_gap(rem, x_held, 16, 0) / xn).max()))
    tr_a, vi_a = np.array(tr), np.array(vi)
    return {
        "gamma_bar": gb,
        "truncation": tr_a,
        "violation": vi_a,
        "slope_truncation": power_law_fit(gb, tr_a, window=(lo, hi)).exponent,
        "slope_violation": power_law_fit(gb, vi_a, window=(lo, hi)).exponent,
    }
