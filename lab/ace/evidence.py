"""What each registered claim of the ace chapter records: the measured value, the text of its
card, its measured rival and its diagnosis, built from the drivers' results so that a notebook
records a claim in one line, ``C[id].record(**evidence.<claim>_evidence(...))``.

Every control here is a measurement of the rival that :mod:`lab.ace.claims` names, on the
claim's own data, seeds and protocol.

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lab.core import claims

__all__ = [
    "gda_damping_evidence",
    "homotopy_evidence",
    "order_evidence",
    "resilient_tracks_evidence",
    "robustness_evidence",
    "slacks_locate_evidence",
    "symmetric_beats_strict_evidence",
    "tracking_ratios",
]


def _mapping(name: str, value: Any, keys: tuple[str, ...] = ()) -> Mapping:
    if not isinstance(value, Mapping) or not set(keys) <= set(value):
        raise TypeError(f"{name} must be a dict with keys {keys}, got {type(value).__name__}")
    return value


def gda_damping_evidence(damped: Mapping, free: Mapping, radius0: float, radius1: float) -> dict:
    """``gda-damping``: the damped scalar GDA run reaches the KKT point, the undamped one swings.

    ``damped`` / ``free``: :func:`lab.ace.scalar_gda` results (2,000 steps); ``radius0``,
    ``radius1``: the spectral radii at c = 0 and c = 1 (for the card).
    """
    _mapping("damped", damped, ("x", "lam"))
    _mapping("free", free, ("x", "lam"))
    swing = float(np.abs(free["x"][-500:]).max())
    kkt_gap = max(abs(damped["x"][-1]), abs(damped["lam"][-1] - 4))
    free_gap = max(abs(free["x"][-1]), abs(free["lam"][-1] - 4))
    return {
        "measured": bool(swing > 0.5 and kkt_gap < 1e-3),
        "control": claims.control(
            "GDA without the augmented term (c = 0, η_d = 2) in the damped run's place",
            bool(swing > 0.5 and free_gap < 1e-3),
            text=f"distance to the KKT point after 2000 steps {free_gap:.2f}: it never settles",
        ),
        "text": f"undamped max |x| {swing:.3f} over the last 500 steps; damped distance to "
        f"the KKT point {kkt_gap:.1e}; spectral radius {radius0:.6f} at c = 0, {radius1:.4f} "
        "at c = 1",
    }


def homotopy_evidence(damped: Mapping, undamped: Mapping, steps: int) -> dict:
    """``homotopy-network``: final ``max |γ_i|`` of the damped run after ``steps`` training steps;
    the undamped run is the rival."""
    _mapping("damped", damped, ("gamma",))
    _mapping("undamped", undamped, ("gamma",))
    settled = float(np.abs(damped["gamma"][-1]).max())
    free = float(np.abs(undamped["gamma"][-1]).max())
    return {
        "measured": settled,
        "control": claims.control(
            "undamped ACE (Adam on γ, c = 0)",
            free,
            text=f"final max_i |γ_i| {free:.3f}: still swinging",
        ),
        "text": f"damped (c = 1): final max_i |γ_i| {settled:.4f} after {steps} steps; undamped "
        f"γ_i swing in [{undamped['gamma'].min():.3f}, {undamped['gamma'].max():.3f}]",
        "notes": "undamped (Adam on γ, c = 0) the coefficients oscillate through zero",
    }


def order_evidence(name: str, slopes: Any, remainder: Mapping) -> dict:
    """``truncation-order`` / ``violation-order`` (``name``: "truncation" or "violation"): the
    held-out log-log slope of :func:`lab.ace.gamma_slopes`; the rival is the slope of the same
    gap without its first-order term (:func:`lab.ace.remainder_slopes`)."""
    if name not in ("truncation", "violation"):
        raise ValueError(f"name must be 'truncation' or 'violation', got {name!r}")
    slope = float(getattr(slopes, f"slope_{name}"))
    rival = float(_mapping("remainder", remainder, (f"slope_{name}",))[f"slope_{name}"])
    return {
        "measured": slope,
        "text": f"log-log slope {slope:.3f}",
        "notes": "held-out: 500 test points; constants on the other 500; window γ̄ in [1e-3, 0.1]",
        "control": claims.control(
            f"the second-order remainder of the {name} gap (first-order term removed)",
            rival,
            text=f"log-log slope {rival:.3f} on the same window",
        ),
    }


def robustness_evidence(growth: Mapping, sigma: float, steps: int) -> dict:
    """``robustness``: the paired interval over the stored seeds of the growth of the test MSE
    under input noise, resilient − strict (``growth``: one array per method)."""
    res, strict = (np.asarray(_mapping("growth", growth, ("resilient", "strict"))[m])
                   for m in ("resilient", "strict"))  # fmt: skip
    d = claims.paired(res, strict)
    ratios = ", ".join(f"{r:.2f}" for r in res / strict)
    return {
        "measured": d,
        "text": f"growth of the test MSE under input noise σ = {sigma:g}, resilient − strict: "
        f"{d['estimate']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] ({len(res)} seeds, paired; "
        f"per-seed ratios {ratios})",
        "notes": f"stored runs (lab artifacts build ace/converged): ε = 0.5, N = 64, {steps} "
        "steps; Gaussian noise on the test inputs, clean targets, 8 draws",
        "diagnosis": claims.diagnosis(
            "open",
            f"the paired difference {d['estimate']:+.4f} has a standard error of "
            f"{d['se']:.4f} over {len(res)} seeds and its interval holds 0; the paper states "
            "the gain without a margin we could read, so neither a noise floor nor a tight null "
            "can be checked against it",
            se=d["se"],
        ),
    }


def tracking_ratios(mse: Any, method: str, eps: float, Ns: Any) -> dict[int, float]:
    """``{N: MSE(method) / min(MSE(strict), MSE(unconstrained))}`` at ``eps`` (``mse``: a
    function ``(method, eps, N) -> mean test MSE``, e.g. a partial of ``sweep_mse``)."""
    if not callable(mse):
        raise TypeError("mse must be a function (method, eps, N) -> test MSE")
    return {
        int(n): mse(method, eps, n) / min(mse("strict", eps, n), mse("unconstrained", eps, n))
        for n in Ns
    }


def resilient_tracks_evidence(mse: Any, Ns: Any) -> dict:
    """``resilient-tracks``: the largest ratio resilient / better extreme over N at ε = 0.5;
    the rival is equality ACE read by the same ratio."""
    ratio = tracking_ratios(mse, "resilient", 0.5, Ns)
    rival = tracking_ratios(mse, "equality", 0.5, Ns)
    worst = max(ratio.values())
    return {
        "measured": worst,
        "text": "largest ratio resilient / better extreme over N at ε = 0.5: "
        + ", ".join(f"N = {n}: {r:.2f}" for n, r in ratio.items()),
        "notes": "stored sweep, one price ρ = 10 for every N; two seeds",
        "control": claims.control(
            "equality ACE (no slack), the same ratio",
            max(rival.values()),
            text=", ".join(f"N = {n}: {r:.2f}" for n, r in rival.items()),
        ),
        "diagnosis": claims.diagnosis(
            "open",
            f"one price ρ for every N: the ratio is {min(ratio.values()):.2f} at best and "
            f"{worst:.2f} at N = {max(ratio, key=ratio.get)}; ρ was not swept (a sweep of ρ "
            "costs a stored sweep per value), so we cannot tell a price that is wrong for large "
            "N from a relaxation that cannot track; the authors' resilient loop differs from "
            "the paper's form (deviation resilient-loop) and was not run on the toy",
        ),
    }


def _at_256(sweep: Mapping, method: str, eps: float, key: str) -> np.ndarray:
    runs = _mapping("sweep", sweep, ("runs",))["runs"]
    return np.mean([np.abs(runs[f"{method}|{eps:g}|256|{sd}"][key]) for sd in (0, 1)], axis=0)


def slacks_locate_evidence(sweep: Mapping) -> dict:
    """``slacks-locate``: the largest resilient slack at ε = 1 over ε = 0 (N = 256, two seeds);
    the rival is the unconstrained model's largest ``|γ_i|`` read the same way."""
    _mapping("sweep", sweep, ("runs", "grid"))
    u = {eps: _at_256(sweep, "resilient", eps, "u") for eps in sweep["grid"]["eps"]}
    free = {eps: _at_256(sweep, "unconstrained", eps, "gamma") for eps in (0.0, 1.0)}
    growth = float(u[1.0].max() / u[0.0].max())
    free_growth = float(free[1.0].max() / free[0.0].max())
    return {
        "measured": growth,
        "text": f"largest slack at ε = 1 over ε = 0 (N = 256): {growth:.2f}; u = "
        + "; ".join(f"ε = {e:g}: {np.round(v, 3).tolist()}" for e, v in u.items()),
        "control": claims.control(
            "the unconstrained model's largest |γ_i|, ε = 1 over ε = 0",
            free_growth,
            text=f"{free_growth:.2f}; |γ| = "
            + "; ".join(f"ε = {e:g}: {np.round(g, 3).tolist()}" for e, g in free.items()),
        ),
        "diagnosis": claims.diagnosis(
            "open",
            f"the largest slack grows ×{growth:.2f} from ε = 0 to ε = 1 at N = 256 (two "
            "seeds), short of the ×2 the rule asks; at ρ = 10 the optimal slack u* = λ*/ρ stays "
            "small, and ρ was not swept (a stored sweep per value), so a price too high to let "
            "the slacks move cannot be told from slacks that do not locate",
        ),
    }


def symmetric_beats_strict_evidence(sweep: Mapping, long_runs: Mapping) -> dict:
    """``symmetric-beats-strict``: the paired interval over (N, seed) of log strict − log
    truncated ACE on the stored long runs (ε = 0), with the sweep's 600-step gap beside it."""
    _mapping("sweep", sweep, ("runs", "grid", "settings"))
    Ns, seeds = sweep["grid"]["N"], sweep["grid"]["seed"]
    runs = _mapping("long_runs", long_runs, ("runs", "settings"))["runs"]
    sym = {
        m: np.array([[runs[f"symmetric|{m}|0|{n}|{s}"][key] for s in seeds] for n in Ns])
        for m, key in (("strict", "test_mse"), ("equality", "test_mse_truncated"))
    }
    ace_runs = [runs[f"symmetric|equality|0|{n}|{s}"] for n in Ns for s in seeds]
    gamma_final = max(max(abs(g) for g in r["gamma"]) for r in ace_runs)
    steps = [r["steps"] for r in ace_runs]
    gap_600 = float(np.mean([
        np.log(sweep["runs"][f"strict|0|{n}|{s}"]["test_mse"])
        - np.log(sweep["runs"][f"equality|0|{n}|{s}"]["test_mse_truncated"])
        for n in Ns for s in seeds
    ]))  # fmt: skip
    d = claims.paired(np.log(sym["strict"]).ravel(), np.log(sym["equality"]).ravel())
    wins = int(np.sum(sym["equality"].mean(1) < sym["strict"].mean(1)))
    return {
        "measured": d,
        "text": f"log(strict / truncated ACE) {d['estimate']:+.2f} [{d['lo']:+.2f}, "
        f"{d['hi']:+.2f}] over {d['n']} (N, seed) pairs; ACE better at {wins} of {len(Ns)} N; "
        f"final max |γ_i| {gamma_final:.1e} after {min(steps)}–{max(steps)} steps",
        "notes": "equality ACE (c = 1, Adam on γ) trained until max |γ_i| < "
        f"{long_runs['settings']['stop_gamma']:g} (checked every 100 steps), the strict model "
        "as many steps (stored runs, lab artifacts build ace/converged)",
        "diagnosis": claims.diagnosis(
            "open",
            f"the gap shrinks with the training budget: mean log(strict / truncated ACE) "
            f"{gap_600:+.2f} after the sweep's {sweep['settings']['steps']} steps, "
            f"{d['estimate']:+.2f} once the constraint is met (median "
            f"{int(np.median(steps))} steps), but two budgets fit no trend and a third was not "
            "run; the official code trains far longer (equality mode equals the authors' loop "
            "bit for bit: lab/core/official/ace_official.json)",
            sizes=[sweep["settings"]["steps"], float(np.median(steps))],
            values=[gap_600, d["estimate"]],
        ),
    }
