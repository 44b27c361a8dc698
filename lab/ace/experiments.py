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

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lab.ace.fast import equivariance_error
from lab.ace.layer import HomotopyLayer, homotopy
from lab.ace.models import METHODS, make_toy_model, rotation_matrices, swirl_dataset
from lab.ace.optim import ACE
from lab.core.checks import check_choice, check_int, check_positive, check_real
from lab.core.memo import memo
from lab.core.progress import progress
from lab.core.runtime import smoke_steps

__all__ = [
    "GammaSlopes",
    "Robustness",
    "gamma_slopes",
    "input_robustness",
    "METHOD_SETTINGS",
    "SWEEP_GRID",
    "SWEEP_PATH",
    "SWEEP_SETTINGS",
    "layer_constants",
    "live_cell",
    "load_sweep",
    "run_sweep",
    "so2_equivariance_error",
    "sweep_mse",
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
    with torch.no_grad():
        return (model(x) - truncated(x)).norm(dim=-1).cpu().numpy()


def violation_gap(model, x, n: int = 16, seed: int = 0) -> np.ndarray:
    """Per-sample ``max_g ||R f(x) - f(R x)||`` over ``n`` random rotations (Theorem 4.2).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    _check_model("model", model)
    _check_points("x", x)
    n = check_int("n", n, 1)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
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
def _keeps_global_rng(fn):
    """Run ``fn`` on a fork of torch's global generator: its ``torch.manual_seed`` stays inside."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)

    return wrapper


@_keeps_global_rng
def train_toy(
    method: str = "equality",
    N: int = 64,
    eps: float = 0.0,
    steps: int = 600,
    seed: int = 0,
    lr: float = 1e-2,
    dual_lr: float = 1e-2,
    aug: float = 0.0,
    rho: float = 1.0,
    gamma_opt: str = "adam",
    gamma_lr: float | None = None,
    dual_opt: str = "sgd",
    noise: float = 0.05,
    C: int = 16,
    layers: int = 3,
    hidden: int = 32,
    test_N: int = 1000,
    record_every: int = 10,
    stop_gamma: float | None = None,
    dtype=torch.float32,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Train one toy model on ``swirl_dataset(N, eps, seed)`` and record the dynamics.

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
    method = check_choice("method", method, METHODS)
    N = check_int("N", N, 1)
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    gamma_opt = check_choice("gamma_opt", gamma_opt, ("adam", "sgd"))
    gamma_lr = 100 * lr if gamma_lr is None else check_positive("gamma_lr", gamma_lr)
    record_every = check_int("record_every", record_every, 1)
    if stop_gamma is not None:
        stop_gamma = check_positive("stop_gamma", stop_gamma)
    x, y = swirl_dataset(N, eps, seed, noise=noise)
    xt, yt = swirl_dataset(test_N, eps, seed + 1_000_003, noise=0.0)
    X, Y = torch.tensor(x, dtype=dtype), torch.tensor(y, dtype=dtype)
    Xt, Yt = torch.tensor(xt, dtype=dtype), torch.tensor(yt, dtype=dtype)
    torch.manual_seed(seed)
    model = make_toy_model(C, layers, homotopy=method != "strict", hidden=hidden, seed=seed)
    model = model.to(dtype)
    gammas = homotopy(model)
    gids = {id(g) for g in gammas}
    weights = [p for p in model.parameters() if id(p) not in gids]
    if not gammas or gamma_opt == "adam":
        opts = [torch.optim.Adam(list(model.parameters()), lr=lr)]
    else:
        opts = [torch.optim.Adam(weights, lr=lr), torch.optim.SGD(gammas, lr=gamma_lr)]
    ace = None
    if method in ("equality", "resilient"):
        ace = ACE(model, opts, mode=method, dual_lr=dual_lr, rho=rho, aug=aug, dual_opt=dual_opt)
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
            hist["eq_error"].append(so2_equivariance_error(model, Xt[:200], n=8))

    record(0)
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few steps (FULL's code paths on a CPU)
    it = progress(range(1, steps + 1), desc=method, disable=None if show_progress else True)
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
        done = stop_gamma is not None and k % 100 == 0 and gammas
        done = done and max(abs(float(g.detach())) for g in gammas) < stop_gamma
        if k % record_every == 0 or k == steps or done:
            record(k)
        if done:
            break
    else:
        k = steps
    out: dict[str, Any] = {k: np.asarray(v, dtype=float) for k, v in hist.items()}
    if ace is not None:
        truncated = ace.truncate()
    elif L:
        truncated = ACE(model, [torch.optim.SGD(list(model.parameters()), lr=0.0)]).truncate()
    else:
        truncated = model
    with torch.no_grad():
        mse = float(((model(Xt) - Yt) ** 2).sum(-1).mean())
        mse_t = float(((truncated(Xt) - Yt) ** 2).sum(-1).mean())
    out["final"] = {
        "test_mse": mse,
        "test_mse_truncated": mse_t,
        "eq_error": so2_equivariance_error(model, Xt[:200], n=8),
        "eq_error_truncated": so2_equivariance_error(truncated, Xt[:200], n=8),
        "gamma": [float(g.detach()) for g in gammas],
        "steps": int(k),
    }
    out.update(model=model, truncated=truncated, ace=ace, x_test=Xt, y_test=Yt)
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
    from lab.ace.reference import truncation_bound, violation_bound
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
            k = layer_constants(model, x_fit)
            gb.append(max(abs(v) for v in gammas))
            tr.append(float((truncation_gap(model, truncated, x_held) / xn).max()))
            vi.append(float((violation_gap(model, x_held) / xn).max()))
            tb.append(truncation_bound(gammas, k["B"], k["M"], L, 1.0))
            vb.append(violation_bound(gammas, k["B"], k["M"], 1.0, L, 1.0))
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


SWEEP_PATH = Path(__file__).with_name("data") / "sweep.json"

# the settings every sweep run shares (also used by notebook 2's live runs)
SWEEP_SETTINGS: dict[str, Any] = {"steps": 600, "lr": 1e-2, "noise": 0.05, "C": 16, "layers": 3}
# per-method settings: equality ACE is damped (augmented term c = 1, Adam on gamma); SGD on
# gamma (notebook 1's fastest-settling regime) diverged in most sweep runs at this step size
METHOD_SETTINGS: dict[str, dict[str, Any]] = {
    "strict": {},
    "unconstrained": {},
    "equality": {"dual_lr": 0.05, "aug": 1.0},
    "resilient": {"dual_lr": 0.05, "rho": 10.0},
}
SWEEP_GRID: dict[str, Sequence] = {
    "method": ("strict", "unconstrained", "equality", "resilient"),
    "eps": (0.0, 0.5, 1.0),
    "N": (16, 32, 64, 128, 256),
    "seed": (0, 1),
}


def _seq(name: str, value: Any) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(f"{name} must be a non-empty sequence (got {value!r})")
    return list(value)


def sweep_key(method: str, eps: float, N: int, seed: int) -> str:
    """The key of one run in a sweep's ``runs`` (``method|eps|N|seed``)."""
    return f"{method}|{eps:g}|{N}|{seed}"


@memo(maxsize=64)
def live_cell(method: str, eps: float, N: int, steps: int) -> dict:
    """One (method, eps, N) cell off the stored grid, trained live: one seed, ``steps`` steps,
    the sweep's settings. Returns the final metrics with the per-layer ``u`` and ``lam`` (what
    :func:`~lab.ace.figures.partial_symmetry_figure` draws).

    See: book/ace/02-partial-symmetry.ipynb
    """
    method = check_choice("method", method, tuple(METHOD_SETTINGS))
    eps = check_real("eps", eps)
    N = check_int("N", N, 1)
    steps = check_int("steps", steps, 1)
    settings = {**SWEEP_SETTINGS, "steps": steps}
    out = train_toy(method, N=N, eps=eps, record_every=10**9, **settings, **METHOD_SETTINGS[method])
    ace = out["ace"]
    return {
        **out["final"],
        "u": [] if ace is None or ace.u is None else ace.u.detach().tolist(),
        "lam": [] if ace is None else ace.lam.tolist(),
    }


def run_sweep(
    methods: Sequence[str] = SWEEP_GRID["method"],
    eps_values: Sequence[float] = SWEEP_GRID["eps"],
    N_values: Sequence[int] = SWEEP_GRID["N"],
    seeds: Sequence[int] = SWEEP_GRID["seed"],
    steps: int | None = None,
    path: str | Path | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train every combination with :func:`train_toy` and return (and optionally save) the
    final numbers: test MSE (deployed and truncated), equivariance error, gamma, u, lambda.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import itertools

    import torch

    methods = [check_choice("methods", m, METHODS) for m in _seq("methods", methods)]
    eps_values = [check_real("eps_values", e) for e in _seq("eps_values", eps_values)]
    N_values = [check_int("N_values", n, 1) for n in _seq("N_values", N_values)]
    seeds = [check_int("seeds", s, 0) for s in _seq("seeds", seeds)]
    settings = dict(SWEEP_SETTINGS)
    if steps is not None:
        settings["steps"] = check_int("steps", steps, 1)
    combos = list(itertools.product(methods, eps_values, N_values, seeds))
    runs: dict[str, Any] = {}
    with torch.random.fork_rng(devices=[]):
        for method, eps, N, seed in progress(
            combos, desc="ACE sweep", disable=None if show_progress else True
        ):
            out = train_toy(
                method,
                N=int(N),
                eps=float(eps),
                seed=int(seed),
                record_every=10**9,
                **settings,
                **METHOD_SETTINGS[method],
            )
            ace = out["ace"]
            runs[sweep_key(method, eps, N, seed)] = {
                **out["final"],
                "lam": [] if ace is None else ace.lam.tolist(),
                "u": [] if ace is None or ace.u is None else ace.u.detach().tolist(),
            }
    result = {
        "settings": {**settings, "per_method": METHOD_SETTINGS},
        "grid": {
            "method": list(methods),
            "eps": [float(e) for e in eps_values],
            "N": [int(n) for n in N_values],
            "seed": [int(s) for s in seeds],
        },
        "runs": runs,
    }
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(result, indent=0, sort_keys=True))
    return result


def load_sweep(path: str | Path | None = None) -> dict[str, Any]:
    """The stored sweep (``lab/ace/data/sweep.json`` by default).

    See: book/ace/02-partial-symmetry.ipynb
    """
    p = Path(path) if path is not None else SWEEP_PATH
    if not p.exists():
        raise FileNotFoundError(f"no sweep at {p}; run `lab artifacts build ace/sweep` to make it")
    return json.loads(p.read_text())


def sweep_mse(sweep: dict[str, Any], method: str, eps: float, N: int, key: str = "test_mse"):
    """Seed-averaged ``key`` of one (method, eps, N) cell of a sweep.

    See: book/ace/02-partial-symmetry.ipynb
    """
    if not isinstance(sweep, dict) or "runs" not in sweep or "grid" not in sweep:
        raise TypeError("sweep must be a dict from load_sweep or run_sweep (with 'runs', 'grid')")
    method = check_choice("method", method, METHODS)
    eps = check_real("eps", eps)
    N = check_int("N", N, 1)
    key = check_choice(
        "key", key, ("test_mse", "test_mse_truncated", "eq_error", "eq_error_truncated")
    )
    vals = [
        sweep["runs"][sweep_key(method, eps, N, s)][key]
        for s in sweep["grid"]["seed"]
        if sweep_key(method, eps, N, s) in sweep["runs"]
    ]
    if not vals:
        raise ValueError(f"no runs for method={method!r}, eps={eps:g}, N={N} in the sweep")
    return sum(vals) / len(vals)


def build_sweep(argv: list[str] | None = None) -> int:  # pragma: no cover - hours
    """``lab artifacts build ace/sweep``: rerun the whole sweep into ``SWEEP_PATH``."""
    import argparse

    import torch

    argparse.ArgumentParser(prog="lab artifacts build ace/sweep").parse_args(argv)
    torch.set_num_threads(1)
    run_sweep(path=SWEEP_PATH)
    print(f"wrote {SWEEP_PATH}")
    return 0
