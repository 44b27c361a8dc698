"""Figure builders of the ``ot_dro`` chapter's widgets: results in, figure out. They draw what
:mod:`lab.ot_dro.experiments` computes and caches (a ``ToyPlan`` from ``toy_plan``, a
``ShiftCurves`` from ``shift_curves``); a widget is ``figures.f(experiments.g(...))``."""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_range

__all__ = ["plan_figure", "shift_figure"]


def plan_figure(res, n_arrows: int = 60):
    """Training points, candidates sized by Q, and the heaviest worst-case transport lines.

    ``res`` is a ``ToyPlan`` (:func:`lab.ot_dro.experiments.toy_plan`). Left: P (two classes),
    candidates (size ∝ Q), the ``n_arrows`` largest entries of π drawn as lines from p to q.
    Right: ρ(λ) and R(λ) for this ε with the current λ marked.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    for name in ("P", "Q", "pi", "Qw", "lams", "rho_curve", "R_curve"):
        if not hasattr(res, name):
            raise TypeError(f"res must be a ToyPlan (toy_plan(...)), got {type(res).__name__}")
    n_arrows = check_int("n_arrows", n_arrows, 1)
    lam, eps = res.lam, res.eps
    P, yP, Q, yQ, loss, pi, Qw = res.P, res.yP, res.Q, res.yQ, res.loss, res.pi, res.Qw
    n = len(P)
    flat = np.argsort(pi.ravel())[::-1][:n_arrows]
    xs, ys = [], []
    for f in flat:
        i, j = divmod(int(f), pi.shape[1])
        xs += [P[i, 0], Q[j, 0], None]
        ys += [P[i, 1], Q[j, 1], None]
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.6, 0.4], subplot_titles=("worst-case plan π", "λ ↔ radius")
    )
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="gray", width=1), name="π (top)"),
        1,
        1,
    )
    size = 4 + 400 * Qw
    fig.add_trace(
        go.Scatter(
            x=Q[:, 0],
            y=Q[:, 1],
            mode="markers",
            marker=dict(size=np.minimum(size, 40), color=yQ, colorscale="RdBu", opacity=0.5),
            name="candidates ν (size ∝ Q)",
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=P[:, 0],
            y=P[:, 1],
            mode="markers",
            marker=dict(size=8, color=yP, colorscale="RdBu", symbol="x", line=dict(width=1)),
            name="training points P",
        ),
        1,
        1,
    )
    fig.add_trace(go.Scatter(x=res.lams, y=res.rho_curve, name="ρ(λ) radius"), 1, 2)
    fig.add_trace(go.Scatter(x=res.lams, y=res.R_curve, name="R(λ) robust loss"), 1, 2)
    rho0 = res.rho
    fig.add_trace(
        go.Scatter(x=[lam], y=[rho0], mode="markers", marker=dict(size=12), name="current λ"),
        1,
        2,
    )
    fig.update_xaxes(type="log", title_text="λ", row=1, col=2)
    fig.update_xaxes(title_text="x₁ (core)", row=1, col=1)
    fig.update_yaxes(title_text="x₂ (nuisance)", row=1, col=1)
    fig.update_layout(
        title=f"λ = {lam:.3g}, ε = {eps:.3g}: ρ = {rho0:.3f}, mean loss under Q = "
        f"{float(Qw @ loss):.3f} (uniform: {loss.mean():.3f}), n = {n}",
        height=430,
    )
    return fig


def shift_figure(res, shift: float = 0.9):
    """Accuracy versus shift strength for ERM, ERM on ν and AdaDRO (calibration temperature τ).

    ``res`` is a ``ShiftCurves`` (:func:`lab.ot_dro.experiments.shift_curves`): models trained
    once; the shift only changes the test set, marked by a dotted line at ``shift``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import plotly.graph_objects as go

    if not all(hasattr(res, n) for n in ("tau", "shifts", "curves")):
        raise TypeError(f"res must be a ShiftCurves (shift_curves(...)), got {type(res).__name__}")
    shift = check_range("shift", shift, 0.0, 1.0)
    fig = go.Figure()
    names = {"erm": "ERM", "erm_nu": "ERM on ν (augmented)", "adadro": f"AdaDRO (τ = {res.tau:g})"}
    title = []
    for m, label in names.items():
        acc = res.curves[m]
        fig.add_trace(go.Scatter(x=res.shifts, y=acc, mode="lines", name=label))
        a = float(np.interp(shift, res.shifts, acc))
        title.append(f"{label.split(' (')[0]} {a:.2f}")
    fig.add_trace(
        go.Scatter(
            x=[shift, shift], y=[0.4, 1.0], mode="lines", line=dict(dash="dot"), name="shift"
        )
    )
    fig.update_layout(
        title=f"shift {shift:.2f} (test agreement {1 - shift:.2f}): " + ", ".join(title),
        xaxis_title="shift strength (1 − spurious agreement at test)",
        yaxis_title="test accuracy",
        yaxis_range=[0.4, 1.0],
        height=420,
    )
    return fig
