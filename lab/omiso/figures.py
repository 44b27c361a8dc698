"""Figure builders for the OMiSO chapter (plotly for the widgets, matplotlib for static plots).

Each ``*_figure`` function is a ``compute`` for :func:`lab.core.explore.explore`: it returns a
plotly figure with the same number of traces for every value of its static control. The
simulations behind them are cached, so moving a live control redraws without re-simulating.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.omiso.array import UtahArraySim
from lab.omiso.models import METHODS

__all__ = [
    "COLORS",
    "array_map",
    "state_dependence",
    "kappa_figure",
    "target_sessions",
    "target_figure",
    "drift_sessions",
    "drift_figure",
    "precompute_drift_figure",
    "Q_VALUES",
]

COLORS = {"omiso": "#1f77b4", "static": "#2ca02c", "miso": "#ff7f0e", "random": "#7f7f7f"}
LABELS = {
    "omiso": "OMiSO (state-aware, online)",
    "static": "state-aware, static",
    "miso": "MiSO-like (state-agnostic, online)",
    "random": "random",
}


def array_map(ax, sim: UtahArraySim, dim: int = 0, pattern: int | None = None) -> None:
    """Draw the array (matplotlib): each electrode coloured by its effect ``beta_e[dim]``,
    candidate electrodes ringed, the electrodes of ``pattern`` starred.

    See: book/omiso/01-simulated-array.ipynb
    """
    pos = sim.positions
    m = float(np.abs(sim.beta_field[:, dim]).max())
    sc = ax.scatter(
        pos[:, 0], pos[:, 1], c=sim.beta_field[:, dim], cmap="RdBu_r", vmin=-m, vmax=m, s=60
    )
    cand = pos[sim.candidates]
    ax.scatter(cand[:, 0], cand[:, 1], facecolors="none", edgecolors="k", s=160, lw=1.5)
    if pattern is not None:
        e = sim.candidates[sim.patterns[pattern]]
        ax.scatter(pos[e, 0], pos[e, 1], marker="*", c="gold", edgecolors="k", s=260, zorder=3)
    ax.set(
        aspect="equal",
        xlabel="x (mm)",
        ylabel="y (mm)",
        title=f"effect on latent {dim} (true space)",
    )
    ax.figure.colorbar(sc, ax=ax, shrink=0.8, label=f"β[{dim}]")


@lru_cache(maxsize=64)
def state_dependence(
    kappa: float, seed: int = 0, patterns: tuple = (0, 30, 60), n_trials: int = 120
) -> dict:
    """Repeated stimulation of a few patterns in the simulator (true latent states).

    Returns ``z_pre``, ``z_post`` (len(patterns), n_trials, q) and the true slope matrices
    ``a I + kappa (G_a + G_b)`` of each pattern.

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
    return {"z_pre": zp, "z_post": zq, "slopes": slopes, "patterns": patterns}


def kappa_figure(kappa: float = 1.0, dim: int = 0, seed: int = 0):
    """Post- vs pre-stimulation state along latent ``dim`` for three patterns, with fitted
    lines: at ``kappa = 0`` every slope is the autonomous decay 0.6.

    See: book/omiso/01-simulated-array.ipynb
    """
    import plotly.graph_objects as go

    d = state_dependence(float(kappa), int(seed))
    fig = go.Figure()
    cols = ["#1f77b4", "#d62728", "#2ca02c"]
    xs = np.linspace(-3, 3, 2)
    for i, u in enumerate(d["patterns"]):
        x, y = d["z_pre"][i, :, dim], d["z_post"][i, :, dim]
        slope, icpt = np.polyfit(x, y, 1)
        fig.add_scatter(
            x=x,
            y=y,
            mode="markers",
            marker=dict(color=cols[i], size=5, opacity=0.6),
            name=f"pattern {u}",
        )
        fig.add_scatter(
            x=xs,
            y=icpt + slope * xs,
            mode="lines",
            line=dict(color=cols[i]),
            name=f"fit, slope {slope:.2f}",
        )
    fig.update_layout(
        title=f"κ = {kappa:.2f}: the same stimulation lands differently from different states",
        xaxis_title=f"pre-stimulation z[{dim}] (true latent)",
        yaxis_title=f"post-stimulation z[{dim}]",
        xaxis_range=[-3.2, 3.2],
        yaxis_range=[-5, 5],
        height=430,
    )
    return fig


@lru_cache(maxsize=16)
def target_sessions(
    radius: float,
    angles: tuple,
    seed: int = 0,
    n_train: int = 1000,
    n_test: int = 200,
    device: str | None = None,
) -> dict:
    """Closed-loop sessions of OMiSO and MiSO for targets on a circle (one batched run).

    See: book/omiso/02-inverting-the-model.ipynb
    """
    from lab.omiso.fast import simulate_batch

    th = np.radians(np.asarray(angles, dtype=float))
    tg = radius * np.stack([np.cos(th), np.sin(th)], 1)
    methods = ["omiso", "miso"]
    targets = np.repeat(tg, len(methods), 0)
    out = simulate_batch(
        [seed] * len(targets),
        methods * len(tg),
        n_train=n_train,
        n_test=n_test,
        target=targets,
        device=device,
        return_states=True,
    )
    return {"targets": tg, "methods": methods, **out}


TARGET_ANGLES = tuple(range(0, 360, 30))


def target_figure(angle: float = 60.0, radius: float = 1.5, n_show: int = 200):
    """The closed loop toward a target at ``angle`` (degrees) and ``radius`` in the estimated
    latent plane: the first ``n_show`` post-stimulation states of OMiSO and MiSO and their
    running errors.

    See: book/omiso/02-inverting-the-model.ipynb
    """
    from plotly.subplots import make_subplots

    angles = tuple(sorted(set(TARGET_ANGLES) | {float(angle)}))
    d = target_sessions(round(float(radius), 3), angles)
    j = angles.index(float(angle))
    tgt = d["targets"][j]
    n_show = int(max(1, min(n_show, d["errors"].shape[1])))
    fig = make_subplots(
        1, 2, column_widths=[0.5, 0.5], subplot_titles=("estimated latent plane", "running error")
    )
    for m_i, m in enumerate(d["methods"]):
        row = j * len(d["methods"]) + m_i
        z = d["z_post"][row, :n_show]
        fig.add_scatter(
            x=z[:, 0],
            y=z[:, 1],
            mode="markers",
            marker=dict(color=COLORS[m], size=5, opacity=0.55),
            name=LABELS[m],
            row=1,
            col=1,
        )
        e = d["errors"][row, :n_show]
        run = np.cumsum(e) / np.arange(1, n_show + 1)
        fig.add_scatter(
            x=np.arange(1, n_show + 1),
            y=run,
            mode="lines",
            line=dict(color=COLORS[m]),
            name=f"{m}: mean {run[-1]:.2f}",
            row=1,
            col=2,
        )
    fig.add_scatter(
        x=[tgt[0]],
        y=[tgt[1]],
        mode="markers",
        marker=dict(symbol="star", size=18, color="gold", line=dict(color="black", width=1)),
        name="target z*",
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text="ẑ₀", range=[-4, 4], row=1, col=1)
    fig.update_yaxes(title_text="ẑ₁", range=[-4, 4], row=1, col=1)
    fig.update_xaxes(title_text="closed-loop trial", row=1, col=2)
    fig.update_yaxes(title_text="mean ‖ẑ_post[K] − z*‖", range=[0, 3], row=1, col=2)
    fig.update_layout(title=f"target at {angle:.0f}°, radius {radius:.2f}", height=430)
    return fig


DRIFTS = (0.0, 0.01, 0.02, 0.03)


DRIFT_Q = 0.002  # the process noise the notebook's drift sessions use (drift_figure's default)
DRIFT_SEEDS = (0, 1, 2, 3)
#: the process noises the drift widget offers (a ``Dropdown``: all precomputed)
Q_VALUES = (1e-5, 1e-4, 1e-3, DRIFT_Q, 0.01, 0.1)
_Q_TABLE: dict[tuple, np.ndarray] = {}  # (drift, q_proc, seeds) -> OMiSO errors (seeds, n_test)


def precompute_drift_figure(
    q_values: tuple = Q_VALUES, drifts: tuple = (0.02,), seeds: tuple = DRIFT_SEEDS
) -> int:
    """Simulate OMiSO at the ``drifts`` (levels of ``DRIFTS``; default: the widget's default)
    for every process noise of ``q_values`` (but ``DRIFT_Q``, which :func:`drift_sessions` has)
    in one batched run, so that :func:`drift_figure` only redraws for them. Each session is
    simulated exactly as in :func:`drift_sessions` (rows of a batch are independent). Returns
    the number of sessions run.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    from lab.omiso.fast import simulate_batch

    if isinstance(q_values, (str, bytes)) or not hasattr(q_values, "__iter__"):
        raise TypeError(f"q_values must be a sequence of numbers >= 0 (got {q_values!r})")
    qs = [check_positive("q_values[i]", q, allow_zero=True) for q in q_values]
    seeds = tuple(int(check_int("seeds[i]", s, 0)) for s in np.atleast_1d(seeds).tolist())
    levels = []
    for dr in np.atleast_1d(drifts).tolist():
        level = next((x for x in DRIFTS if np.isclose(x, dr)), None)
        if level is None:
            raise ValueError(f"drifts must be levels of DRIFTS = {DRIFTS} (got {dr!r})")
        levels.append(level)
    rows = [
        (dr, q, s)
        for dr in dict.fromkeys(levels)
        for q in dict.fromkeys(qs)
        if q != DRIFT_Q and (dr, q, seeds) not in _Q_TABLE
        for s in seeds
    ]
    if rows:
        out = simulate_batch(
            [r[2] for r in rows],
            "omiso",
            n_test=400,
            drift=[r[0] for r in rows],
            q_proc=[r[1] for r in rows],
        )
        n = len(seeds)
        for i in range(0, len(rows), n):
            _Q_TABLE[(rows[i][0], rows[i][1], seeds)] = out["errors"][i : i + n]
    return len(rows)


def drift_sessions(
    q_proc: float, seeds: tuple = DRIFT_SEEDS, n_test: int = 400, device: str | None = None
) -> dict:
    """All four methods at every drift level of ``DRIFTS`` on the same sessions (batched).

    Memoised on the normalised arguments (``drift_sessions(0.002, (0, 1, 2, 3))`` and
    ``drift_sessions(0.002)`` are one run).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    q_proc = check_positive("q_proc", q_proc, allow_zero=True)
    seeds = tuple(int(check_int("seeds[i]", s, 0)) for s in np.atleast_1d(seeds).tolist())
    return _drift_sessions(q_proc, seeds, check_int("n_test", n_test, 1), device)


@lru_cache(maxsize=8)
def _drift_sessions(q_proc: float, seeds: tuple, n_test: int, device: str | None) -> dict:
    from lab.omiso.fast import simulate_batch

    rows = [(dr, s, m) for dr in DRIFTS for s in seeds for m in METHODS]
    out = simulate_batch(
        [r[1] for r in rows],
        [r[2] for r in rows],
        n_test=n_test,
        drift=[r[0] for r in rows],
        q_proc=q_proc,
        device=device,
    )
    return {"rows": rows, **out}


@lru_cache(maxsize=32)
def _omiso_drift_errors(drift: float, q_proc: float, seeds: tuple) -> np.ndarray:
    """OMiSO's closed-loop errors at one drift level: the only method that uses ``q_proc``
    (the sessions are independent, so these rows equal those of ``drift_sessions(q_proc)``)."""
    from lab.omiso.fast import simulate_batch

    out = simulate_batch(
        list(seeds), "omiso", n_test=400, drift=[drift] * len(seeds), q_proc=q_proc
    )
    return out["errors"]


def drift_figure(drift: float = 0.02, q_proc: float = 0.002):
    """Running mean error of the four methods at one drift level (mean over sessions).

    Static, MiSO and random do not use ``q_proc``: their rows come from the notebook's
    ``drift_sessions(DRIFT_Q)``, and a new ``q_proc`` reads OMiSO's sessions from
    :func:`precompute_drift_figure` (or, for a value it did not run, re-simulates OMiSO at this
    drift only).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import plotly.graph_objects as go

    q_proc = float(q_proc)
    level = next((x for x in DRIFTS if np.isclose(x, drift)), None)
    d = drift_sessions(DRIFT_Q if level is not None else q_proc)
    fig = go.Figure()
    n = d["errors"].shape[1]
    t = np.arange(1, n + 1)
    for m in METHODS:
        idx = [i for i, r in enumerate(d["rows"]) if np.isclose(r[0], drift) and r[2] == m]
        if m == "omiso" and level is not None and q_proc != DRIFT_Q:
            e = _Q_TABLE.get((level, q_proc, DRIFT_SEEDS))
            if e is None:  # a value precompute_drift_figure did not run
                e = _omiso_drift_errors(level, q_proc, DRIFT_SEEDS)
            e = e.mean(0)
        else:
            e = d["errors"][idx].mean(0)
        run = np.cumsum(e) / t
        fig.add_scatter(
            x=t[::2],
            y=run[::2],
            mode="lines",
            line=dict(color=COLORS[m]),
            name=f"{LABELS[m]}: {run[-1]:.2f}",
        )
    fig.update_layout(
        title=f"drift {drift:.3f} per trial, Q = {q_proc:.0e}",
        xaxis_title="closed-loop trial",
        yaxis_title="running mean ‖ẑ_post[K] − z*‖",
        yaxis_range=[0, 3],
        height=430,
    )
    return fig
