"""Fast path: Algorithm 1 and the paper's baselines batched over seeds (torch, CPU or CUDA).

Every operation of :func:`lab.strategic.reference.strategic_massart_learner` acts on a batch of
``S`` independent runs at once (tensors ``[S, d]``); the loop over cycles stays (the algorithm is
sequential). With the same draws it reproduces the reference run (tested). The paper's proximal
step (Alg. 3 l.6 / Alg. 4 l.8) of the runs that have a gradient is solved on the CPU, all of
them at once, by the reference's Newton method on the KKT conditions, batched over the runs
(``_prox_rows``). The same engine runs
the non-strategic Massart learner of Zhang et al. (2020) (``variant="zhang-partial"`` /
``"zhang-full"``: thresholds at 0, bands around the posted boundary). The Strategic Perceptron
(Ahmadi et al. 2021) is :func:`strategic_perceptron`.

See: book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from lab.core.checks import check_choice, check_instance, check_int
from lab.core.runtime import resolve_device
from lab.strategic.model import StrategicMassart
from lab.strategic.prox import prox_argmin
from lab.strategic.reference import (
    ON_BAR,
    TIE,
    Constants,
    Phase,
    constants_or_default,
    draw_agents,
    pnorm_exponent,
    rule_regret_unchecked,
    schedule_unchecked,
)

__all__ = ["BatchRun", "draw_streams", "strategic_massart_many", "strategic_perceptron"]

VARIANTS = ("ours", "zhang-partial", "zhang-full")


@dataclass
class BatchRun:
    """``S`` runs: per-cycle ``cos`` and ``threshold`` ``[S, T]``, exact ``regret`` ``[S, T]``,
    batch-output ``angles`` ``[S, n_outputs]`` (``w~0`` first), the ``phases``."""

    cos: np.ndarray
    threshold: np.ndarray
    regret: np.ndarray
    angles: np.ndarray
    phases: list


def draw_streams(T: int, d: int, seeds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The random streams of ``S`` runs: :func:`lab.strategic.reference.draw_agents` for each
    seed, stacked: ``[S, T, d]``, ``[S, T]``, ``[S, T, d]`` (not a method of the paper)."""
    seeds = [check_int("seed", s, 0) for s in np.atleast_1d(np.asarray(seeds)).tolist()]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    out = [draw_agents(T, d, s) for s in seeds]
    return tuple(np.stack([o[i] for o in out]) for i in range(3))


def _check(env, T, seeds, draws):
    check_instance("env", env, StrategicMassart)
    T = check_int("T", T, 4)
    if draws is None:
        draws = draw_streams(T, env.d, seeds)
    X, U, G = draws
    if X.ndim != 3 or X.shape[1] < T or X.shape[2] != env.d:
        raise ValueError(f"draws must have X of shape (S, >= {T}, {env.d}) (got {X.shape})")
    return T, X, U, G


def _ghalf_rows(y, r):
    """Gradient of ``||y||_r^2 / 2`` for each row (zero at ``y = 0``)."""
    n = np.sum(np.abs(y) ** r, axis=-1, keepdims=True) ** (1.0 / r)
    safe = np.where(n > 0, n, 1.0)
    return np.where(n > 0, np.sign(y) * np.abs(y) ** (r - 1) * safe ** (2 - r), 0.0)


def _hess_rows(y, r):
    """Hessian of ``||y||_r^2 / 2`` for each row, ``r >= 2``."""
    n = np.sum(np.abs(y) ** r, axis=-1, keepdims=True) ** (1.0 / r)
    safe = np.where(n > 0, n, 1.0)
    s = np.sign(y) * np.abs(y) ** (r - 1)
    diag = (r - 1) * safe ** (2 - r) * np.abs(y) ** (r - 2)
    H = diag[..., None] * np.eye(y.shape[-1]) + (2 - r) * (safe ** (2 - 2 * r))[..., None] * (
        s[..., :, None] * s[..., None, :]
    )
    return np.where(n[..., None] > 0, H, 0.0)


def _project_rows(w, u, c):
    """:func:`lab.strategic.reference.project_cone_ball` for each row (numpy)."""
    a = np.sum(w * u, -1, keepdims=True)
    v = w - a * u
    nv = np.linalg.norm(v, axis=-1, keepdims=True)
    cc = c[:, None]
    rad = np.sqrt(a * a + nv * nv)
    corner = cc * u + np.sqrt(np.maximum(1 - cc * cc, 0.0)) * v / np.where(nv > 0, nv, 1.0)
    out = np.where((cc * cc + nv * nv <= 1.0) & (a < cc), cc * u + v, corner)
    out = np.where((rad > 1.0) & (a / rad >= cc), w / rad, out)
    return np.where((a >= cc) & (rad <= 1.0), w, out)


class _Rows:
    """The proximal problems of many rows (:class:`lab.strategic.reference._ProxProblem`, one
    per row), with each row's active set ``act`` ``[n, 2]``."""

    def __init__(self, w_i, g, u, c, q, scale, act):
        self.w_i, self.g, self.u, self.c, self.q, self.scale, self.act = w_i, g, u, c, q, scale, act

    def kkt(self, y, lam, mu):
        w = self.w_i + self.scale * _ghalf_rows(y, self.q)
        act, u = self.act, self.u
        F = np.concatenate(
            [
                y + self.g + lam[:, None] * w - mu[:, None] * u,
                np.where(act[:, 0], 0.5 * (np.sum(w * w, -1) - 1.0), lam)[:, None],
                np.where(act[:, 1], self.c - np.sum(u * w, -1), mu)[:, None],
            ],
            1,
        )
        return w, F

    def jacobian(self, y, lam, w, live):
        n, d = w.shape
        act, u = self.act, self.u
        H = self.scale * _hess_rows(y, self.q)
        J = np.zeros((n, d + 2, d + 2))
        J[:, :d, :d] = np.eye(d) + lam[:, None, None] * H
        J[:, :d, d], J[:, :d, d + 1] = w, -u
        J[:, d, :d] = np.where(act[:, :1], np.einsum("nij,nj->ni", H, w), 0.0)
        J[:, d, d] = np.where(act[:, 0], 0.0, 1.0)
        J[:, d + 1, :d] = np.where(act[:, 1:], -np.einsum("nij,nj->ni", H, u), 0.0)
        J[:, d + 1, d + 1] = np.where(act[:, 1], 0.0, 1.0)
        J[~live] = np.eye(d + 2)  # frozen rows take no step
        return J


def _warm_start(rows: _Rows, w, done, p):
    """Warm start (same KKT solution, fewer iterations): the Euclidean projection of the
    unconstrained minimiser onto W as the primal guess, ``y = grad phi(w - w_i)`` there and the
    multipliers of its active constraints by least squares on the stationarity equation."""
    act, u = rows.act, rows.u
    guess = _project_rows(w, u, rows.c)
    y = np.where(done[:, None], -rows.g, _ghalf_rows(guess - rows.w_i, p) / rows.scale)
    r = -(y + rows.g)  # = lam w - mu u
    A = np.stack([guess * act[:, :1], -u * act[:, 1:]], 2)  # (n, d, 2)
    AtA = np.einsum("ndi,ndj->nij", A, A) + 1e-12 * np.eye(2)
    lm = np.linalg.solve(AtA, np.einsum("ndi,nd->ni", A, r)[..., None])[..., 0]
    return y, np.maximum(lm[:, 0], 0.0) * act[:, 0], np.maximum(lm[:, 1], 0.0) * act[:, 1]


def _newton_rows(rows: _Rows, y, lam, mu, live, tol):
    """Damped Newton on the live rows' KKT residuals for their active sets."""
    n, d = y.shape
    w, F = rows.kkt(y, lam, mu)
    for _ in range(60):
        nF = np.max(np.abs(F), 1)
        live &= nF >= tol
        if not live.any():
            break
        J = rows.jacobian(y, lam, w, live)
        try:
            step = np.linalg.solve(J, -F[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = np.stack(
                [np.linalg.lstsq(Ji, -Fi, rcond=None)[0] for Ji, Fi in zip(J, F, strict=True)]
            )
        step[~live] = 0.0
        t = np.ones(n)
        pending = live.copy()
        for _ in range(20):  # backtracking on the residual, per row
            y2 = y + t[:, None] * step[:, :d]
            lam2, mu2 = lam + t * step[:, d], mu + t * step[:, d + 1]
            w2, F2 = rows.kkt(y2, lam2, mu2)
            better = np.max(np.abs(F2), 1) < (1.0 - 1e-4 * t) * nF
            pending &= ~better
            if not pending.any():
                break
            t = np.where(pending, t / 2.0, t)
        y, lam, mu, w, F = y2, lam2, mu2, w2, F2
    return y, lam, mu, w, F


def _prox_rows(w_i, g, alpha, u, c, p, tol=1e-12):
    """:func:`lab.strategic.reference._prox_newton` for many rows at once (numpy): the same
    damped Newton on the KKT conditions in ``y``, one active set per row; returns the minimisers
    and a mask of the rows that converged (the others go to the reference's fallback)."""
    q, scale = p / (p - 1.0), (p - 1.0) * alpha
    w = w_i + scale * _ghalf_rows(-g, q)
    act = np.stack([np.sum(w * w, -1) > 1 + 1e-14, np.sum(w * u, -1) < c - 1e-14], 1)
    rows = _Rows(w_i, g, u, c, q, scale, act)
    done = ~act.any(1)
    ok = done.copy()
    y, lam, mu = _warm_start(rows, w, done, p)
    for _ in range(5):  # active-set rounds
        y, lam, mu, w, F = _newton_rows(rows, y, lam, mu, ~done, tol)
        rest = ~done
        sq, dot = np.sum(w * w, -1), np.sum(w * u, -1)
        new = np.stack(
            [
                np.where(rows.act[:, 0], lam > 0, sq > 1 + 1e-12),
                np.where(rows.act[:, 1], mu > 0, dot < c - 1e-12),
            ],
            1,
        )
        same = np.all(new == rows.act, 1) & rest
        ok |= same & (np.max(np.abs(F), 1) < 1e-10)
        done |= same
        if done.all():
            break
        moved = rest & ~same
        rows.act = np.where(moved[:, None], new, rows.act)
        lam = np.where(moved, np.maximum(lam, 0.0) * rows.act[:, 0], lam)
        mu = np.where(moved, np.maximum(mu, 0.0) * rows.act[:, 1], mu)
    return w, ok


def _prox(w, g, alpha, center, c, p):
    """The paper's proximal step (:func:`lab.strategic.reference.prox_step`, normalised) for each
    run: a run with ``g = 0`` stays where it is; the others solve their KKT systems together
    (:func:`_prox_rows`, numpy on the CPU: ``d``-dimensional problems), and a row where Newton's
    method does not converge takes the reference's own solver."""
    import torch

    g_np = g.detach().cpu().numpy()
    w_np = w.detach().cpu().numpy()
    out = w_np / np.linalg.norm(w_np, axis=-1, keepdims=True)
    rows = np.flatnonzero(np.any(g_np != 0.0, axis=-1))
    if rows.size:
        centers = center.detach().cpu().numpy()[rows]
        cos_min = c.detach().cpu().numpy().reshape(-1)[rows]
        sol, ok = _prox_rows(w_np[rows], g_np[rows], alpha, centers, cos_min, p)
        for j in np.flatnonzero(~ok):
            sol[j] = prox_argmin(w_np[rows[j]], g_np[rows[j]], alpha, centers[j], cos_min[j], p)
        norms = np.linalg.norm(sol, axis=-1, keepdims=True)
        out[rows] = np.where(norms > 0, sol / np.where(norms > 0, norms, 1.0), out[rows])
    return torch.as_tensor(out, dtype=w.dtype, device=w.device)


class _BatchGame:
    """The cycles of ``S`` runs at once: posted rules, best responses (Lemma 1), feedback
    (partial, or full for Zhang et al.'s full-feedback variant) and the per-cycle records."""

    def __init__(self, env: StrategicMassart, T: int, draws, full: bool, dev):
        import torch

        self.f64 = dict(dtype=torch.float64, device=dev)
        self.X, self.U, self.G = (
            torch.as_tensor(np.ascontiguousarray(a), **self.f64) for a in draws
        )
        self.S, self.d, self.T, self.t, self.full = self.X.shape[0], env.d, T, 0, full
        self.eta, self.gamma = env.eta, env.gamma
        self.ws = torch.as_tensor(env.w_star, **self.f64)
        self.cos = torch.zeros(self.S, T, **self.f64)
        self.threshold = torch.zeros(self.S, T, **self.f64)

    def cycle(self, w, thr):
        import torch

        t = self.t
        x, u = self.X[:, t], self.U[:, t]
        clean = torch.where(x @ self.ws >= 0, 1.0, -1.0).to(x)
        y = torch.where(u < self.eta, -clean, clean)  # uniform Massart flips
        s = (x * w).sum(-1) - thr
        move = (s >= -self.gamma) & (s < 0)  # Lemma 1
        r = torch.where(move[:, None], x - (s - TIE)[:, None] * w, x)
        admitted = (r * w).sum(-1) - thr >= 0
        self.cos[:, t], self.threshold[:, t] = w @ self.ws, thr
        self.t += 1
        seen = y if self.full else torch.where(admitted, y, torch.zeros_like(y))
        return r, seen


def _batch_initialization(game: _BatchGame, ph: Phase, c1: float):
    """Algorithm 2 for every run; returns ``(w~0, u0, cmin)``: the output, the refinement's
    cone axis and bound."""
    import torch

    acc = torch.zeros(game.S, game.d, **game.f64)
    for i in range(ph.iterations):
        w = game.G[:, i] / game.G[:, i].norm(dim=-1, keepdim=True)
        for sgn in (1.0, -1.0):
            if game.t >= game.T:
                break
            r, y = game.cycle(sgn * w, 0.0)
            above = sgn * (r * w).sum(-1) > ON_BAR
            keep = torch.ones_like(above) if game.full else above
            acc = acc + torch.where(keep[:, None], y[:, None] * r, torch.zeros_like(r))
    w0 = acc / ph.iterations
    nrm0 = w0.norm(dim=-1, keepdim=True)
    e1 = torch.zeros_like(w0)
    e1[:, 0] = 1.0
    u0 = torch.where(nrm0 > 0, w0 / torch.where(nrm0 > 0, nrm0, 1.0), e1)
    cmin = torch.clamp(c1 * (1 - 2 * game.eta) / torch.clamp(nrm0, min=1e-12), max=0.99)
    return w0, u0, cmin


def _band_gradient(game: _BatchGame, ph: Phase, w):
    """Alg. 3 l.2-4 (and Zhang et al.'s step): post ``sgn(<w, r>)``, the band gradient."""
    r, y = game.cycle(w, 0.0)
    s = (r * w).sum(-1)
    band = (s.abs() <= ph.b) if game.full else (s > ON_BAR) & (s <= ph.b)
    coef = (-game.eta * (y == 1) + (1 - game.eta) * (y == -1)) * band
    return coef[:, None] * r


def _contrastive_gradient(game: _BatchGame, ph: Phase, w):
    """Alg. 4 l.2-7 for every run: h1, h2, the proxies and the contrastive gradient."""
    import torch

    eta, gamma = game.eta, game.gamma
    g = torch.zeros(game.S, game.d, **game.f64)
    for j, thr in ((1, gamma), (2, gamma + ph.b)):
        if game.t >= game.T:
            break
        r, y = game.cycle(w, thr)
        s = (r * w).sum(-1)
        if j == 1:
            inside = (s >= gamma - ON_BAR) & (s <= gamma + ph.b + ON_BAR)
        else:
            inside = (s - gamma - ph.b).abs() <= ON_BAR
        inside = inside & (y != 0)
        plus = r + (ph.b - s)[:, None] * w
        minus = r - s[:, None] * w
        sign = 1.0 if j == 1 else -1.0
        cp = (-eta * (y == 1) * inside)[:, None]
        cm = ((1 - eta) * (y == -1) * inside)[:, None]
        g = g + sign * (cp * plus + cm * minus)
    return g


def _batch_phase(game: _BatchGame, ph: Phase, w_k, cone, p: float, contrastive: bool):
    """One refinement or enhancement batch for every run: proximal steps in the cone
    ``(center, cmin)``; returns the normalised average."""
    import torch

    center, cmin = cone
    w, total = w_k.clone(), torch.zeros(game.S, game.d, **game.f64)
    for _ in range(ph.iterations):
        if game.t >= game.T:
            break
        total = total + w
        if contrastive:
            g = _contrastive_gradient(game, ph, w)
        else:
            g = _band_gradient(game, ph, w)
        w = _prox(w, g, ph.alpha, center, cmin, p)
    return total / total.norm(dim=-1, keepdim=True)


def strategic_massart_many_unchecked(
    env: StrategicMassart, T: int, draws, c: Constants, variant: str, dev
):
    """:func:`strategic_massart_many` on checked inputs."""
    import torch

    phases = schedule_unchecked(T, env.d, env.gamma, env.eta, c)
    strategic = variant == "ours"
    if not strategic:  # one cycle per iteration after initialisation, as many cycles
        phases = [
            replace(ph, iterations=ph.iterations * 2, cycles=1) if ph.kind == "enhance" else ph
            for ph in phases
        ]
    game, p, outs = (
        _BatchGame(env, T, draws, variant == "zhang-full", dev),
        pnorm_exponent(env.d),
        [],
    )
    for ph in phases:
        if ph.kind == "init":
            w0, w_k, cmin = _batch_initialization(game, ph, c.c1)
            outs.append(w0)
            center = w_k
            continue
        if ph.kind == "enhance":
            center, cmin = w_k, torch.full((game.S, 1), math.cos(ph.theta), **game.f64)
        contrastive = ph.kind == "enhance" and strategic
        w_k = _batch_phase(game, ph, w_k, (center, cmin), p, contrastive)
        outs.append(w_k)
    cos_np, thr_np = game.cos.cpu().numpy(), game.threshold.cpu().numpy()
    ws = game.ws
    ang = np.stack(
        [np.arccos(np.clip((o @ ws / o.norm(dim=-1)).cpu().numpy(), -1, 1)) for o in outs], 1
    )
    regret = rule_regret_unchecked(cos_np.ravel(), thr_np.ravel(), env.gamma, env.eta)
    return BatchRun(cos_np, thr_np, regret.reshape(cos_np.shape), ang, phases)


def strategic_massart_many(
    env: StrategicMassart,
    T: int,
    seeds=(0,),
    constants: Constants | None = None,
    variant: str = "ours",
    draws=None,
    device=None,
) -> BatchRun:
    """Algorithm 1 for ``S`` seeds at once (or the Zhang et al. 2020 baseline).

    Parameters
    ----------
    env : StrategicMassart
    T : int
        Horizon (cycles), ``>= 4``.
    seeds : sequence of int
        One run per seed (:func:`draw_streams`); ignored when ``draws`` is given.
    constants : Constants, optional
    variant : {"ours", "zhang-partial", "zhang-full"}
        The paper's algorithm, or the non-strategic learner of Zhang et al. (2020) (thresholds at
        0; partial feedback and band ``0 < <w, r> <= b``, or full feedback and band
        ``|<w, r>| <= b``).
    draws : tuple, optional
        Pre-drawn ``(X, U, G)`` of shapes ``[S, T, d]``, ``[S, T]``, ``[S, T, d]``.
    device : str or torch.device, optional
        Default: :func:`lab.device`.

    Returns
    -------
    BatchRun

    See: book/strategic/02-regret.ipynb
    """
    variant = check_choice("variant", variant, VARIANTS)
    T, X, U, G = _check(env, T, seeds, draws)
    c = constants_or_default(constants)
    return strategic_massart_many_unchecked(env, T, (X, U, G), c, variant, resolve_device(device))


def strategic_perceptron(
    env: StrategicMassart, T: int, seeds=(0,), feedback: str = "full", draws=None
) -> BatchRun:
    """The Strategic Perceptron (Ahmadi et al. 2021; the paper's Alg. 5 and 6), batched (numpy).

    The first agent is admitted without a rule (``w_2 = y_1 r_1 / ||r_1||``); then the rule
    ``sgn(<w_t, r> - gamma)`` is posted and a mistake updates ``w <- w + y x~`` (normalised),
    with the proxy ``x~ = r - gamma w`` for an agent on the boundary with ``y = -1`` (eq. 2).
    ``feedback="partial"`` updates only on admitted agents with ``y = -1`` (Alg. 6).

    See: book/strategic/02-regret.ipynb
    """
    feedback = check_choice("feedback", feedback, ("full", "partial"))
    T, X, U, _ = _check(env, T, seeds, draws)
    return strategic_perceptron_unchecked(env, T, X, U, feedback)


def strategic_perceptron_unchecked(env: StrategicMassart, T: int, X, U, feedback: str) -> BatchRun:
    """:func:`strategic_perceptron` on checked inputs."""
    eta, gamma, ws = env.eta, env.gamma, env.w_star
    clean = np.where(X[:, :T] @ ws >= 0, 1.0, -1.0)
    Y = np.where(U[:, :T] < eta, -clean, clean)
    S = X.shape[0]
    cos_t, thr_t = np.zeros((S, T)), np.zeros((S, T))
    thr_t[:, 0] = -np.inf  # the first agent is admitted without a rule
    cos_t[:, 0] = 1.0
    w = Y[:, 0, None] * X[:, 0]
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    for t in range(1, T):
        x, y = X[:, t], Y[:, t]
        cos_t[:, t], thr_t[:, t] = w @ ws, gamma
        s = np.sum(x * w, 1) - gamma
        move = (s >= -gamma) & (s < 0)
        r = np.where(move[:, None], x - (s - TIE)[:, None] * w, x)
        yhat = np.where(np.sum(r * w, 1) - gamma >= 0, 1.0, -1.0)
        on_bar = np.abs(np.sum(r * w, 1) - gamma) <= ON_BAR
        proxy = np.where((on_bar & (y < 0))[:, None], r - gamma * w, r)  # eq. (2)
        upd = yhat != y if feedback == "full" else (yhat > 0) & (y < 0)
        w_new = w + y[:, None] * proxy
        w_new /= np.linalg.norm(w_new, axis=1, keepdims=True)
        w = np.where(upd[:, None], w_new, w)
    regret = rule_regret_unchecked(cos_t.ravel(), thr_t.ravel(), gamma, eta).reshape(S, T)
    ang = np.arccos(np.clip(w @ ws, -1, 1))[:, None]
    return BatchRun(cos_t, thr_t, regret, ang, [])
