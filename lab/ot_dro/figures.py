"""Figure builders and small toy problems for the ``ot_dro`` chapter's widgets."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from lab.ot_dro.experiments import accuracy, make_spurious, train_method
from lab.ot_dro.fast import implied_radius, sinkhorn_dro_objective, worst_case_weights

__all__ = ["toy_2d", "toy_losses", "plan_figure", "lam_curve", "shift_curve", "shift_figure"]

W_FIXED = np.array([1.5, 0.3])  # the fixed linear model of notebook 1 (mostly uses x1)


def toy_2d(n: int = 40, m_per: int = 4, seed: int = 0):
    """Notebook 1's toy: P = n labelled 2-D points; nu = m_per candidates per point.

    Candidates are Gaussian jitters of their source, half of them with the second coordinate
    flipped (an augmentation the model should not care about). Returns
    ``(P [n, 2], yP [n], Q [n m_per, 2], yQ [n m_per])`` with labels in {-1, +1}.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    P = np.stack([y * 1.0, rng.normal(0, 1.0, n)], 1) + 0.5 * rng.standard_normal((n, 2))
    src = np.repeat(np.arange(n), m_per)
    Q = P[src] + 0.35 * rng.standard_normal((n * m_per, 2))
    flip = np.tile(np.arange(m_per) % 2 == 1, n)
    Q[flip, 1] = -Q[flip, 1]
    return P, y, Q, y[src]


def toy_losses(Q, yQ):
    """Logistic loss ``log(1 + exp(-y w.x))`` of each candidate under the fixed model.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return np.logaddexp(0.0, -yQ * (Q @ W_FIXED))


def toy_cost(P, Q):
    """Squared Euclidean cost between the training points and the candidates.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)


@lru_cache(maxsize=64)
def _lam_curve_cached(eps: float, seed: int):
    return lam_curve(np.geomspace(0.05, 20, 30), eps, seed)


def lam_curve(lams, eps: float, seed: int = 0):
    """Implied radius rho(lam) and robust objective R(lam) on the 2-D toy.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    P, _, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    rho = np.array([implied_radius(worst_case_weights(loss, C, lam, eps)[0], C) for lam in lams])
    R = np.array([sinkhorn_dro_objective(loss, C, lam, eps) for lam in lams])
    return rho, R


def plan_figure(lam: float = 1.0, eps: float = 0.1, n_arrows: int = 60, seed: int = 0):
    """Training points, candidates sized by Q, and the heaviest worst-case transport lines.

    Left: P (two classes), candidates (size ∝ Q), the ``n_arrows`` largest entries of π drawn
    as lines from p to q. Right: ρ(λ) and R(λ) for this ε with the current λ marked.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    P, yP, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    pi, Qw = worst_case_weights(loss, C, lam, eps)
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
    lams = np.geomspace(0.05, 20, 30)
    rho, R = _lam_curve_cached(float(eps), seed)
    fig.add_trace(go.Scatter(x=lams, y=rho, name="ρ(λ) radius"), 1, 2)
    fig.add_trace(go.Scatter(x=lams, y=R, name="R(λ) robust loss"), 1, 2)
    rho0 = float(implied_radius(pi, C))
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


SHIFTS = np.linspace(0.0, 1.0, 21)


@lru_cache(maxsize=16)
def _trained(method: str, tau: float, seed: int, steps: int):
    from . import AdaDROConfig

    return train_method(method, seed=seed, steps=steps, cfg=AdaDROConfig(tau=tau))[0]


@lru_cache(maxsize=16)
def _curve(method: str, tau: float, seed: int, steps: int):
    return shift_curve(_trained(method, tau, seed, steps))


def shift_curve(model, shifts=SHIFTS, n: int = 1000):
    """Accuracy of ``model`` on test sets whose spurious agreement is ``1 - shift``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    out = []
    for s in shifts:
        X, y = make_spurious(n, 1.0 - float(s), seed=99)
        out.append(accuracy(model, X, y))
    return np.array(out)


def shift_figure(tau: float = 0.1, shift: float = 0.9, seed: int = 0, steps: int = 300):
    """Accuracy versus shift strength for ERM, ERM on ν and AdaDRO (calibration temperature τ).

    Models are trained once and cached; the shift only changes the test set.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    names = {"erm": "ERM", "erm_nu": "ERM on ν (augmented)", "adadro": f"AdaDRO (τ = {tau:g})"}
    title = []
    for m, label in names.items():
        acc = _curve(m, float(tau) if m == "adadro" else 0.1, seed, steps)
        fig.add_trace(go.Scatter(x=SHIFTS, y=acc, mode="lines", name=label))
        a = float(np.interp(shift, SHIFTS, acc))
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
