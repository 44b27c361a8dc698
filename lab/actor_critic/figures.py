"""Figures of the actor_critic chapter (plotly, for ``lab.core.explore``; matplotlib for the
static figures of notebook 2).

Kept out of the notebooks so that each notebook cell stays a sentence of code, and kept out
of the reference kernel so that it reads like the algorithm.

See: book/actor_critic/01-gap-vs-samples.ipynb, book/actor_critic/02-schedules-and-critic-lag.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_array

__all__ = [
    "exact_pg_figure",
    "exponent_figure",
    "lag_figure",
    "phase_figure",
    "schedule_figure",
    "stall_figure",
    "tuning_figure",
]


def _check_run(run, need_pg: bool) -> None:
    """A figure draws a ``ScheduleRun`` (duck-typed: figures import no driver)."""
    if not all(hasattr(run, f) for f in ("history", "pg", "config", "settings", "slope")):
        raise TypeError(f"run must be a ScheduleRun (got {type(run).__name__})")
    if need_pg and run.pg is None:
        raise ValueError("run has no exact policy-gradient ascent: build it with with_pg=True")


def _slope_guides(go, K: int, g0: float) -> list:
    """Reference lines of slope -1/3 and -1/2 through the gap at ``K / 10``."""
    ref = np.geomspace(K / 10, K, 20)
    return [
        go.Scatter(x=ref, y=g0 * (ref / ref[0]) ** (-p), name=name, line=dict(color=c, dash=d))
        for p, name, c, d in ((1 / 3, "slope −1/3", "gray", "dash"),
                              (1 / 2, "slope −1/2", "black", "dashdot"))
    ]  # fmt: skip


def schedule_figure(run):
    """Gap ``J* - J(pi_k)`` and critic error against samples for one pair of schedules.

    Five traces: actor-critic gap (mean over runs), the perfect-critic gap (exact policy
    gradient with the same actor schedule), the critic error, and two reference slopes.

    Parameters
    ----------
    run : ScheduleRun
        :func:`lab.actor_critic.experiments.schedule_run`'s result, with ``pg``.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _check_run(run, need_pg=True)
    hist, pg, slope = run.history, run.pg, run.slope
    p_actor, p_critic, c_actor, c_critic = run.config
    K = run.settings.K
    x = np.maximum(hist.samples, 1.0)
    g0 = hist.gap[np.searchsorted(hist.samples, K / 10)]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("optimality gap J* − J(π_k)", "critic error ‖Q_k − Q^π_k‖ (d·π weighted)"),
    )
    fig.add_trace(
        go.Scatter(x=x, y=hist.gap, name="actor-critic (mean of runs)", line_color="#0072B2"), 1, 1
    )
    fig.add_trace(
        go.Scatter(
            x=np.maximum(pg.k, 1),
            y=pg.gap,
            name="exact PG, same η_k (perfect critic)",
            line=dict(color="#009E73", dash="dot"),
        ),
        1,
        1,
    )
    for trace in _slope_guides(go, K, g0):
        fig.add_trace(trace, 1, 1)
    fig.add_trace(
        go.Scatter(x=x, y=hist.critic_error, name="critic error", line_color="#D55E00"), 1, 2
    )
    fig.update_xaxes(type="log", title_text="samples k")
    fig.update_yaxes(type="log", row=1, col=1, range=[-3, 1.2])
    fig.update_yaxes(type="log", row=1, col=2, range=[-1.5, 1.2])
    fig.update_layout(
        title_text=(
            f"η_k = {c_actor:.3g}·k^−{p_actor:.3g}, β_k = {c_critic:.3g}·k^−{p_critic:.3g}: "
            f"final gap {hist.gap[-1]:.3f}, fitted slope {slope:.2f}"
        ),
        height=420,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def stall_figure(run):
    """Gap against samples and the probability of the optimal action in each state.

    ``1 + n_states`` traces (the run's random MDP): with a large actor constant the policy
    commits early to sub-optimal actions and the gap stalls.

    Parameters
    ----------
    run : ScheduleRun
        :func:`lab.actor_critic.experiments.schedule_run`'s result.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _check_run(run, need_pg=False)
    hist, c_actor = run.history, run.config[2]
    x = np.maximum(hist.samples, 1.0)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("optimality gap J* − J(π_k)", "π_k(a*(s) | s), mean of runs"),
    )
    fig.add_trace(go.Scatter(x=x, y=hist.gap, name="gap", line_color="#0072B2"), 1, 1)
    for s in range(hist.optimal_action_prob.shape[1]):
        fig.add_trace(go.Scatter(x=x, y=hist.optimal_action_prob[:, s], name=f"state {s}"), 1, 2)
    fig.update_xaxes(type="log", title_text="samples k")
    fig.update_yaxes(type="log", row=1, col=1, range=[-1.5, 1.0])
    fig.update_yaxes(row=1, col=2, range=[0, 1])
    fig.update_layout(
        title_text=f"actor constant c_a = {c_actor:.3g}: final gap {hist.gap[-1]:.3f}",
        height=400,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def _interval(go, label, q, lo, hi, colour, symbol):
    """One exponent interval as a marker with an error bar (clipped at 10)."""
    q_plot = min(q, 10.0)
    return go.Scatter(
        x=[q_plot],
        y=[label],
        mode="markers",
        marker=dict(color=colour, size=10, symbol=symbol),
        error_x=dict(
            type="data", symmetric=False, array=[min(hi, 10.0) - q_plot], arrayminus=[q_plot - lo]
        ),
        showlegend=False,
    )


def exponent_figure(study):
    """Mean gap over MDPs against samples for each schedule of an :class:`ExponentStudy` and for
    its exact-gradient baseline (same actor steps, no critic, no noise; dashed), and the
    sample-complexity exponent intervals of both beside the paper's 3 and the prior art's 4.

    Two traces per schedule, two per distinct baseline and two reference lines.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not all(hasattr(study, f) for f in ("histories", "eps_exponent", "exact_gap", "window")):
        raise TypeError(f"study must be an ExponentStudy (got {type(study).__name__})")
    colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00"]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        subplot_titles=("gap J* − J(π_k), mean over MDPs", "samples ∝ ε^−q: interval of q"),
    )

    labels, seen = [], {}
    for i, name in enumerate(study.histories):
        h = study.histories[name]
        c = colours[i % len(colours)]
        fig.add_trace(
            go.Scatter(x=np.maximum(h.k, 1), y=h.mdp_gap.mean(0), name=name, line_color=c), 1, 1
        )
        fig.add_trace(_interval(go, name, *study.eps_exponent[name], c, "circle"), 1, 2)
        labels.append(name)
        actor = h.config["actor"]
        if name in study.exact_gap and actor not in seen:
            seen[actor] = name
            label = f"exact gradient, actor {actor.label()}"
            fig.add_trace(
                go.Scatter(
                    x=np.maximum(h.k, 1),
                    y=study.exact_gap[name].mean(0),
                    name=label,
                    line=dict(color=c, dash="dash"),
                ),
                1,
                1,
            )
            fig.add_trace(
                _interval(go, label, *study.exact_eps_exponent[name], c, "circle-open"), 1, 2
            )
            labels.append(label)
    for q, dash in ((3, "dash"), (4, "dot")):
        fig.add_trace(
            go.Scatter(
                x=[q, q],
                y=[labels[0], labels[-1]],
                mode="lines",
                line=dict(color="gray", dash=dash),
                name=f"q = {q}",
            ),
            1,
            2,
        )
    fig.add_vrect(x0=study.window[0], x1=study.window[1], opacity=0.08, line_width=0, row=1, col=1)
    fig.update_xaxes(type="log", title_text="samples k", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text="exponent q (95% interval over MDPs)", row=1, col=2)
    fig.update_yaxes(showticklabels=False, row=1, col=2)
    fig.update_layout(height=460, legend=dict(orientation="h", y=-0.25))
    return fig


def lag_figure(runs: dict):
    """Critic error and optimality gap against samples, one line per run of ``runs``.

    Parameters
    ----------
    runs : dict label -> ACHistory
        Histories of :func:`lab.actor_critic.single_timescale_ac` (``samples``,
        ``critic_error``, ``gap``).

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a non-empty dict of label -> ACHistory")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, h in runs.items():
        x = np.maximum(h.samples, 1)
        axes[0].loglog(x, h.critic_error, label=name)
        axes[1].loglog(x, h.gap, label=name)
    axes[0].set(xlabel="samples k", ylabel=r"$\|Q_k - Q^{\pi_k}\|_{d\pi}$", title="critic error")
    axes[1].set(xlabel="samples k", ylabel=r"$J^\star - J(\pi_k)$", title="optimality gap")
    axes[0].legend(fontsize=8)
    return fig


def tuning_figure(c_grid, final: dict, K: int):
    """Final gap against the actor constant, one line per actor exponent.

    Parameters
    ----------
    c_grid : sequence of float
        The actor constants swept.
    final : dict exponent -> array
        The final gap for each constant of ``c_grid``.
    K : int
        Samples per run (the axis label).

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(final, dict) or not final:
        raise TypeError("final must be a non-empty dict of exponent -> final gaps")
    c_grid = check_array("c_grid", c_grid, ndim=1, min_size=1)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for p, gaps in final.items():
        if len(gaps) != len(c_grid):
            raise ValueError(f"final[{p}] has {len(gaps)} gaps for {len(c_grid)} constants")
        ax.semilogx(c_grid, gaps, "o-", label=f"p_a = {p:.3g}")
    ax.set(xlabel="actor constant $c_a$", ylabel=f"gap after {K} samples")
    ax.set_title("tuning the actor constant")
    ax.legend()
    return fig


def phase_figure(phase, p_actor, p_critic, K: int):
    """Heat map of the final gap over actor exponents (rows) and critic exponents (columns).

    Parameters
    ----------
    phase : ndarray (len(p_actor), len(p_critic))
        Final gaps.
    p_actor, p_critic : sequence of float
        The exponents of the rows and columns (a critic exponent 0 is a constant step).
    K : int
        Samples per run (the title).

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    from fractions import Fraction

    import matplotlib.pyplot as plt

    phase = np.asarray(phase, dtype=float)
    if phase.shape != (len(p_actor), len(p_critic)):
        raise ValueError(f"phase has shape {phase.shape}, not ({len(p_actor)}, {len(p_critic)})")
    name = lambda p: "0 (const)" if p == 0 else str(Fraction(p).limit_denominator(6))  # noqa: E731
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    im = ax.imshow(phase, cmap="viridis_r", origin="lower")
    for i in range(phase.shape[0]):
        for j in range(phase.shape[1]):
            colour = "k" if phase[i, j] < 0.6 * phase.max() else "w"
            ax.text(j, i, f"{phase[i, j]:.2f}", ha="center", va="center", color=colour, fontsize=9)
    ax.set_xticks(range(len(p_critic)), [name(p) for p in p_critic])
    ax.set_yticks(range(len(p_actor)), [name(p) for p in p_actor])
    ax.set(xlabel="critic exponent $p_c$", ylabel="actor exponent $p_a$")
    ax.set_title(f"gap after {K} samples")
    ax.grid(False)
    fig.colorbar(im, ax=ax)
    return fig


def exact_pg_figure(runs: dict, window: tuple[float, float] | None = None):
    """Gap of exact policy-gradient ascent against iterations, one line per step rule.

    Parameters
    ----------
    runs : dict label -> PGHistory
        Histories of :func:`lab.actor_critic.exact_pg_ascent` (``k``, ``gap``).
    window : (float, float), optional
        The fit window, shaded.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    import matplotlib.pyplot as plt

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a non-empty dict of label -> PGHistory")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, h in runs.items():
        keep = h.k >= 1
        ax.loglog(h.k[keep], h.gap[keep], label=name)
    if window is not None:
        ax.axvspan(*window, color="gray", alpha=0.1, lw=0)
    ax.set(xlabel="iteration k", ylabel=r"$J^\star - J(\pi_k)$")
    ax.set_title("exact policy-gradient ascent (a perfect critic)")
    ax.legend()
    return fig
