"""Drivers: the comparison of the four controllers on identical sessions, and the memoised
simulations behind the widgets (``figures.py`` only draws what these return). The numpy closed
loop itself, :func:`~lab.omiso.reference.run_session`, is in ``reference.py``; the batched one,
:func:`~lab.omiso.fast.run_sessions`, in ``fast.py``.

See: book/omiso/03-closing-the-loop.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.sweep import sweep
from lab.omiso.array import UtahArraySim
from lab.omiso.fast import run_sessions
from lab.omiso.reference import run_session
from lab.omiso.settings import (
    DRIFT_Q,
    DRIFT_SEEDS,
    DRIFTS,
    METHODS,
    Q_VALUES,
    TARGET_ANGLES,
    SessionBatch,
    SessionSettings,
    check_dims,
)

__all__ = [
    "compare_methods",
    "design_statistics",
    "state_models",
    "held_out_errors",
    "state_dependence",
    "target_sessions",
    "target_view",
    "drift_sessions",
    "drift_table",
    "static_pairs",
    "drift_curves",
    "omiso_drift_errors",
    "precompute_drift_figure",
]


def compare_methods(
    seeds: Any,
    methods: Any = METHODS,
    settings: SessionSettings | None = None,
    *,
    backend: str = "torch",
    device: Any = None,
    **sim_kwargs: Any,
):
    """Mean closed-loop error of each method on identical simulated sessions.

    Parameters
    ----------
    seeds : sequence of int
        One simulated session per seed; every method sees the same sessions.
    methods : sequence of str
        Names from ``METHODS``.
    settings : SessionSettings, optional
        The sessions' protocol (default ``SessionSettings()``).
    backend : str
        ``"torch"`` (all sessions batched, :func:`lab.omiso.fast.run_sessions`) or
        ``"numpy"`` (the reference :func:`run_session`, one at a time).
    device : torch device, optional
        For the torch backend (default :func:`lab.device`).
    **sim_kwargs
        Simulator settings of :class:`SessionBatch` (``kappa``, ``drift``, ``ramp``...).

    Returns
    -------
    pandas.DataFrame
        Columns ``seed``, ``method``, ``mean_error`` plus the simulator settings.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import pandas as pd

    methods = [check_choice("methods[i]", m, METHODS) for m in methods]
    backend = check_choice("backend", backend, ("torch", "numpy"))
    settings = SessionSettings() if settings is None else settings
    seeds = list(np.atleast_1d(seeds).tolist())
    S = [s for s in seeds for _ in methods]
    Ms = [m for _ in seeds for m in methods]
    batch = SessionBatch(S, Ms, **sim_kwargs)  # validates seeds and the simulator settings
    if backend == "numpy":

        def mean_error(method: str, seed: int) -> float:
            i = batch.seeds.index(seed)
            sim = UtahArraySim(
                seed=seed, q=batch.q, n_candidates=batch.n_candidates, **batch.world(i)
            )
            return run_session(sim, method, settings, q_proc=batch.q_proc[i]).mean_error

        uniq = list(dict.fromkeys(batch.seeds))
        runs = sweep(mean_error, {"method": list(dict.fromkeys(methods))}, seeds=uniq)
        err = [runs.values("value", method=m)[uniq.index(s)] for s, m in zip(S, Ms, strict=True)]
    else:
        err = run_sessions(batch, settings, device=device)["errors"].mean(1)
    df = pd.DataFrame(
        [
            {"seed": s, "method": m, "mean_error": float(e)}
            for s, m, e in zip(S, Ms, err, strict=True)
        ]
    )
    for k, v in sim_kwargs.items():
        df[k] = v
    return df


def design_statistics(seeds: Any, n_windows: int = 2000, count_seed: int = 1) -> dict:
    """The simulator's statistics against its design values: latent variance, variance of
    one-trial changes and lag-1 autocorrelation (each session of ``seeds``, no drift, averaged
    over the sessions), the Fano factor of the counts and the largest channel-mean gap
    (``n_windows`` windows of session ``count_seed``), and the s.d. of the post-stimulation
    noise (500 stimulation trials of that session).

    See: book/omiso/01-simulated-array.ipynb
    """
    from lab.omiso.array import S_DECAY, S_DRIVE, Z_FAST

    n_windows = check_int("n_windows", n_windows, 10)

    def latent(seed: int) -> dict:
        sim = UtahArraySim(seed=seed, drift=0.0)
        Z = np.stack([sim.pre(record=False)[0] for _ in range(n_windows)])
        ac = np.mean([np.corrcoef(Z[1:, k], Z[:-1, k])[0, 1] for k in range(sim.q)])
        return {"var": Z.var(0).mean(), "dvar": np.diff(Z, axis=0).var(0).mean(), "ac": ac}

    runs = sweep(latent, None, seeds=seeds, desc="simulator statistics")
    slow = S_DRIVE**2 / (1 - S_DECAY**2)  # stationary variance of the slow state
    out = {
        "var_theory": slow + Z_FAST**2,
        "ac_theory": S_DECAY * slow / (slow + Z_FAST**2),
        "dvar_theory": 2 * slow * (1 - S_DECAY) + 2 * Z_FAST**2,
        "n_sessions": len(runs.seeds),
        "n_windows": n_windows,
    }
    for key in ("var", "dvar", "ac"):
        out[key] = float(runs.values(key).mean())
    sim = UtahArraySim(seed=count_seed, drift=0.0)
    Z, Y = np.empty((n_windows, sim.q)), np.empty((n_windows, sim.n_channels))
    for t in range(n_windows):
        Z[t], Y[t] = sim.pre()
    rate = sim.rates(Z)
    out["fano"] = float(((Y - rate) ** 2).sum() / rate.sum())
    out["mean_gap"] = float(np.abs(Y.mean(0) - rate.mean(0)).max() / rate.mean())
    resid = []
    for t in range(500):
        z_pre, _ = sim.pre(record=False)
        mean = sim.response_mean(z_pre, t % sim.n_patterns)
        resid.append(sim.stim(t % sim.n_patterns, record=False)[0] - mean)
    out["post_sd"] = float(np.std(resid))
    return out


@memo(maxsize=4)
def state_models(seed: int = 0, n_train: int = 1500) -> dict:
    """The training block of one session (:func:`run_session`), the state-aware and the
    state-agnostic response models (eq. 2) fitted on its first two thirds: ``z_pre``, ``u``,
    ``z_post`` (n_train, ...), ``n_fit``, ``aware``, ``agnostic``.

    See: book/omiso/02-inverting-the-model.ipynb
    """
    from lab.omiso.models import StimResponseModel

    sim = UtahArraySim(seed=seed)
    log = run_session(sim, "omiso", SessionSettings(n_train=n_train))
    Zp, U, Zq = log.train["z_pre"], log.train["u"], log.train["z_post"]
    n_fit = 2 * n_train // 3
    fit = (Zp[:n_fit], U[:n_fit], Zq[:n_fit])
    q, n_pat = Zp.shape[1], sim.n_patterns
    aware = StimResponseModel(n_pat, q, state_aware=True).fit(*fit)
    agnostic = StimResponseModel(n_pat, q, state_aware=False).fit(*fit)
    return {"z_pre": Zp, "u": U, "z_post": Zq, "n_fit": n_fit, "aware": aware, "agnostic": agnostic}


def held_out_errors(d: dict, model: Any, dims: tuple = (0, 1)) -> np.ndarray:
    """Squared prediction errors of ``model`` on the held-out trials of :func:`state_models`'
    result ``d`` (after its first ``n_fit``), summed over ``dims``.

    See: book/omiso/02-inverting-the-model.ipynb
    """
    if not isinstance(d, dict) or any(k not in d for k in ("z_pre", "u", "z_post", "n_fit")):
        raise TypeError(f"d must be state_models' result (a dict), got {type(d).__name__}")
    if not callable(getattr(model, "predict", None)):
        raise TypeError(f"model must have a callable .predict (got {type(model).__name__})")
    K = [int(k) for k in check_dims(dims, d["z_pre"].shape[1])]
    n = d["n_fit"]
    pred = np.stack([model.predict(z)[u] for z, u in zip(d["z_pre"][n:], d["u"][n:], strict=True)])
    return ((d["z_post"][n:, K] - pred[:, K]) ** 2).sum(1)


# ------------------------------------------------------------------------------------------
# the memoised sessions behind the widgets (figures.py draws them)
# ------------------------------------------------------------------------------------------
@memo(maxsize=64)
def state_dependence(
    kappa: float, seed: int = 0, patterns: tuple = (0, 30, 60), n_trials: int = 120
) -> dict:
    """Repeated stimulation of a few patterns in the simulator (true latent states).

    Returns ``z_pre``, ``z_post`` (len(patterns), n_trials, q), the true slope matrices
    ``a I + kappa (G_a + G_b)`` of each pattern, the ``patterns`` and ``kappa``.

    See: book/omiso/01-simulated-array.ipynb
    """
    sim = UtahArraySim(kappa=kappa, drift=0.0, seed=seed)
    zp = np.empty((len(patterns), n_trials, sim.q))
    zq = np.empty_like(zp)
    for i, u in enumerate(patterns):
        for t in range(n_trials):
            zp[i, t] = sim.pre(record=False)[0]
            zq[i, t] = sim.stim(u, record=False)[0]
    slopes = np.stack(
        [
            sim.a_auto * np.eye(sim.q) + kappa * (sim.gamma[a] + sim.gamma[b])
            for a, b in sim.patterns[list(patterns)]
        ]
    )
    return {"z_pre": zp, "z_post": zq, "slopes": slopes, "patterns": patterns, "kappa": kappa}


@memo(maxsize=16)
def target_sessions(
    radius: float,
    angles: tuple,
    seed: int = 0,
    n_train: int = 1000,
    n_test: int = 200,
    device: str | None = None,
    methods: tuple = ("omiso", "miso"),
) -> dict:
    """Closed-loop sessions of ``methods`` (default OMiSO and MiSO) for targets on a circle
    (one batched run; rows ordered target by target, then method).

    See: book/omiso/02-inverting-the-model.ipynb
    """
    th = np.radians(np.asarray(angles, dtype=float))
    tg = radius * np.stack([np.cos(th), np.sin(th)], 1)
    methods = [check_choice("methods[i]", m, METHODS) for m in methods]
    targets = np.repeat(tg, len(methods), 0)
    batch = SessionBatch([seed] * len(targets), methods * len(tg), target=targets)
    settings = SessionSettings(n_train=n_train, n_test=n_test)
    out = run_sessions(batch, settings, device=device, return_states=True)
    return {"targets": tg, "methods": methods, **out}


def target_view(angle: float = 60.0, radius: float = 1.5) -> dict:
    """The sessions of :func:`target_sessions` at ``radius`` (in ``(0, 3]``) for
    ``TARGET_ANGLES`` and ``angle`` (degrees, in ``[0, 360)``), with ``angle`` and the index
    ``j`` of its target (the target widget).

    See: book/omiso/02-inverting-the-model.ipynb
    """
    angle = check_range("angle", angle, 0.0, 360.0, high_inclusive=False)
    radius = check_range("radius", radius, 0.0, 3.0, low_inclusive=False)
    angles = tuple(sorted(set(TARGET_ANGLES) | {angle}))
    d = target_sessions(round(radius, 3), angles)
    return {**d, "angle": angle, "radius": radius, "j": angles.index(angle)}


def drift_seeds() -> tuple[int, ...]:
    """``DRIFT_SEEDS`` as registered (``lab.seeds``: shifted under ``LAB_SEED_SHIFT``), the
    default seeds of the drift sessions and of the drift widget."""
    from lab.core.numerics import seeds

    return seeds(*DRIFT_SEEDS)


def _seed_tuple(seeds: Any) -> tuple[int, ...]:
    if seeds is None:
        return drift_seeds()
    return tuple(int(check_int("seeds[i]", s, 0)) for s in np.atleast_1d(seeds).tolist())


def _drift_level(drift: Any, name: str = "drift") -> float:
    from lab.core.checks import check_real

    drift = check_real(name, drift)
    level = next((x for x in DRIFTS if np.isclose(x, drift)), None)
    if level is None:
        raise ValueError(f"{name} must be levels of DRIFTS = {DRIFTS} (got {drift!r})")
    return level


def precompute_drift_figure(
    q_values: tuple = Q_VALUES, drifts: tuple = (0.02,), seeds: tuple | None = None
) -> int:
    """Simulate OMiSO at the ``drifts`` (levels of ``DRIFTS``; default: the widget's default)
    for every process noise of ``q_values`` (but ``DRIFT_Q``, which :func:`drift_sessions` has)
    in one batched run, stored as :func:`omiso_drift_errors`' results, so that
    :func:`drift_curves` only reads them. Each session is simulated exactly as in
    :func:`drift_sessions` (rows of a batch are independent). Returns the number of sessions
    run. ``seeds`` default: ``drift_seeds()``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    if isinstance(q_values, (str, bytes)) or not hasattr(q_values, "__iter__"):
        raise TypeError(f"q_values must be a sequence of numbers >= 0 (got {q_values!r})")
    qs = [check_positive("q_values[i]", q, allow_zero=True) for q in q_values]
    seeds = _seed_tuple(seeds)
    levels = [_drift_level(dr, "drifts") for dr in np.atleast_1d(drifts).tolist()]
    rows = [
        (dr, q, s)
        for dr in dict.fromkeys(levels)
        for q in dict.fromkeys(qs)
        if q != DRIFT_Q and ((dr, q, seeds), {}) not in omiso_drift_errors
        for s in seeds
    ]
    if rows:
        batch = SessionBatch(
            [r[2] for r in rows], "omiso", drift=[r[0] for r in rows], q_proc=[r[1] for r in rows]
        )
        out = run_sessions(batch, SessionSettings(n_test=400))
        n = len(seeds)
        for i in range(0, len(rows), n):
            omiso_drift_errors.put(out["errors"][i : i + n], rows[i][0], rows[i][1], seeds)
    return len(rows)


def drift_sessions(
    q_proc: float, seeds: tuple | None = None, n_test: int = 400, device: str | None = None
) -> dict:
    """All four methods at every drift level of ``DRIFTS`` on the same sessions (batched).

    Memoised on the normalised arguments (``drift_sessions(0.002, lab.seeds(*range(8)))`` and
    ``drift_sessions(0.002)`` are one run: ``seeds`` default ``drift_seeds()``).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    q_proc = check_positive("q_proc", q_proc, allow_zero=True)
    seeds = _seed_tuple(seeds)
    return _drift_run(q_proc, seeds, check_int("n_test", n_test, 1), device)


@memo(maxsize=8)
def _drift_run(q_proc: float, seeds: tuple, n_test: int, device: str | None) -> dict:
    rows = [(dr, s, m) for dr in DRIFTS for s in seeds for m in METHODS]
    batch = SessionBatch(
        [r[1] for r in rows], [r[2] for r in rows], drift=[r[0] for r in rows], q_proc=q_proc
    )
    out = run_sessions(batch, SessionSettings(n_test=n_test), device=device)
    return {"rows": rows, **out}


def drift_table(seeds: tuple, q_proc: float = DRIFT_Q) -> dict:
    """The mean closed-loop error of each session of :func:`drift_sessions` on ``seeds`` (a
    sequence of distinct seeds, e.g. ``lab.seeds(*range(8))``): method -> array
    (len(DRIFTS), len(seeds)).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    from lab.core.checks import check_ints

    res = drift_sessions(q_proc, check_ints("seeds", seeds, 0))
    return {
        m: np.array(
            [
                [
                    res["errors"][i].mean()
                    for i, r in enumerate(res["rows"])
                    if r[0] == d and r[2] == m
                ]
                for d in DRIFTS
            ]
        )
        for m in METHODS
    }


def static_pairs(pair_seeds: dict, seeds: tuple, table: dict, device: Any = None) -> dict:
    """OMiSO against the static model on more sessions: drift -> (log mean error of the
    static model, of OMiSO) over ``pair_seeds[drift]``, whose first sessions are ``seeds``
    (read from ``table``, :func:`drift_table`'s result); the others run here, 24 seeds per
    batch (a batch's memory grows with its sessions).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    if not isinstance(pair_seeds, dict) or not set(pair_seeds) <= set(DRIFTS):
        raise TypeError(
            f"pair_seeds must map drift levels of {DRIFTS} to seeds (got {pair_seeds!r})"
        )
    seeds = _seed_tuple(seeds)
    if not isinstance(table, dict) or any(m not in table for m in ("static", "omiso")):
        raise TypeError(f"table must be drift_table's result (got {type(table).__name__})")
    if not all(tuple(s[: len(seeds)]) == seeds for s in pair_seeds.values()):
        raise ValueError("pair_seeds must start with the table's seeds for every drift")
    more = [(d, s) for d, ss in pair_seeds.items() for s in ss[len(seeds) :]]
    extra = np.concatenate(
        [np.empty(0)]
        + [
            run_sessions(
                SessionBatch(
                    [s for _, s in part for _ in range(2)],
                    ["static", "omiso"] * len(part),
                    drift=[d for d, _ in part for _ in range(2)],
                ),
                device=device,
            )["errors"].mean(1)
            for part in (more[k : k + 24] for k in range(0, len(more), 24))
        ]
    )
    out = {}
    for d in pair_seeds:
        i, j = DRIFTS.index(d), [2 * k for k, (dk, _) in enumerate(more) if dk == d]
        out[d] = (
            np.log(np.r_[table["static"][i], extra[j]]),
            np.log(np.r_[table["omiso"][i], extra[np.add(j, 1)]]),
        )
    return out


@memo(maxsize=64)
def omiso_drift_errors(drift: float, q_proc: float, seeds: tuple | None = None) -> np.ndarray:
    """OMiSO's closed-loop errors (seeds, 400) at one drift level: the only method that uses
    ``q_proc`` (the sessions are independent, so these rows equal those of
    ``drift_sessions(q_proc)``); :func:`precompute_drift_figure` fills it in one batched run.
    ``seeds`` default: ``drift_seeds()`` (``DRIFT_SEEDS`` as registered).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    seeds = _seed_tuple(seeds)
    batch = SessionBatch(list(seeds), "omiso", drift=[drift] * len(seeds), q_proc=q_proc)
    return run_sessions(batch, SessionSettings(n_test=400))["errors"]


def drift_curves(drift: float = 0.02, q_proc: float = DRIFT_Q) -> dict:
    """The mean per-trial error (over the drift sessions) of each method at one drift level,
    OMiSO's with process noise ``q_proc`` (the drift widget).

    Static, MiSO and random do not use ``q_proc``: their rows come from
    ``drift_sessions(DRIFT_Q)``; another ``q_proc`` reads OMiSO's sessions from
    :func:`precompute_drift_figure` (or, for a value it did not run, re-simulates OMiSO at this
    drift only).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    q_proc = check_positive("q_proc", q_proc, allow_zero=True)
    level = _drift_level(drift)
    d = drift_sessions(DRIFT_Q)
    curves = {}
    for m in METHODS:
        idx = [i for i, r in enumerate(d["rows"]) if np.isclose(r[0], level) and r[2] == m]
        if m == "omiso" and q_proc != DRIFT_Q:
            curves[m] = omiso_drift_errors(level, q_proc, drift_seeds()).mean(0)
        else:
            curves[m] = d["errors"][idx].mean(0)
    return {"drift": level, "q_proc": q_proc, "curves": curves}
