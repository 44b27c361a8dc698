"""Figures of the actor_critic chapter (plotly, for ``lab.core.explore``).

Kept out of the notebooks so that each notebook cell stays a sentence of code, and kept out
of the reference kernel so that it reads like the algorithm.

See: book/actor_critic/01-gap-vs-samples.ipynb, book/actor_critic/02-schedules-and-critic-lag.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_positive, check_range

from .experiments import cached_run
from .reference import fit_rate

__all__ = ["exponent_figure", "schedule_figure", "stall_figure"]


def schedule_figure(
    p_actor: float = 2 / 3,
    p_critic: float = 2 / 3,
    c_actor: float = 0.1,
    c_critic: float = 1.0,
    K: int = 3000,
    runs: int = 4,
    seed: int = 0,
):
    """Gap ``J* - J(pi_k)`` and critic error against samples for one pair of schedules.

    Five traces: actor-critic gap (mean over runs), the perfect-critic gap (exact policy
    gradient with the same actor schedule), the critic error, and two reference slopes.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    p_actor = check_range("p_actor", p_actor, 0.0, 1.0)
    p_critic = check_range("p_critic", p_critic, 0.0, 1.0)
    c_actor = check_positive("c_actor", c_actor)
    c_critic = check_positive("c_critic", c_critic)
    K = check_int("K", K, 10)
    hist, pg = cached_run(
        round(p_actor, 6), round(p_critic, 6), float(c_actor), float(c_critic), K, runs, seed
    )
    x = np.maximum(hist.samples, 1.0)
    slope = fit_rate(hist.samples, hist.gap, (K / 10, K))
    g0 = hist.gap[np.searchsorted(hist.samples, K / 10)]
    ref = np.geomspace(K / 10, K, 20)
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
    fig.add_trace(
        go.Scatter(
            x=ref,
            y=g0 * (ref / ref[0]) ** (-1 / 3),
            name="slope −1/3",
            line=dict(color="gray", dash="dash"),
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=ref,
            y=g0 * (ref / ref[0]) ** (-1 / 2),
            name="slope −1/2",
            line=dict(color="black", dash="dashdot"),
        ),
        1,
        1,
    )
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


def stall_figure(
    c_actor: float = 0.1, p_actor: float = 2 / 3, K: int = 5000, runs: int = 4, seed: int = 0
):
    """Gap against samples and the probability of the optimal action in each state.

    ``1 + n_states`` traces (the MDP is ``random_mdp(6, 3, 0.9, seed)``): with a large actor
    constant the policy commits early to sub-optimal actions and the gap stalls.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    c_actor = check_positive("c_actor", c_actor)
    hist, _ = cached_run(
        round(p_actor, 6), round(2 / 3, 6), float(c_actor), 1.0, K, runs, seed, with_pg=False
    )
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


def exponent_figure(study):
    """Mean gap over MDPs against samples for each schedule of an :class:`ExponentStudy` and for
    its exact-gradient baseline (same actor steps, no critic, no noise; dashed), and the
    sample-complexity exponent intervals of both beside the paper's 3 and the prior art's 4.

    Two traces per schedule, two per distinct baseline and two reference lines.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .experiments import ExponentStudy

    if not isinstance(study, ExponentStudy):
        raise TypeError(f"study must be an ExponentStudy (got {type(study).__name__})")
    colours = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00"]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        subplot_titles=("gap J* − J(π_k), mean over MDPs", "samples ∝ ε^−q: interval of q"),
    )

    def interval(label, q, lo, hi, colour, symbol):
        q_plot = min(q, 10.0)
        return go.Scatter(
            x=[q_plot],
            y=[label],
            mode="markers",
            marker=dict(color=colour, size=10, symbol=symbol),
            error_x=dict(
                type="data",
                symmetric=False,
                array=[min(hi, 10.0) - q_plot],
                arrayminus=[q_plot - lo],
            ),
            showlegend=False,
        )

    labels, seen = [], {}
    for i, name in enumerate(study.histories):
        h = study.histories[name]
        c = colours[i % len(colours)]
        fig.add_trace(
            go.Scatter(x=np.maximum(h.k, 1), y=h.mdp_gap.mean(0), name=name, line_color=c), 1, 1
        )
        fig.add_trace(interval(name, *study.eps_exponent[name], c, "circle"), 1, 2)
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
            fig.add_trace(interval(label, *study.exact_eps_exponent[name], c, "circle-open"), 1, 2)
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
