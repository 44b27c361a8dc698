"""Reference kernel (numpy, one run, cycle by cycle) of the paper's Algorithms 1-4.

Each statement carries the algorithm line or equation it implements (``# eq. (Alg. 3 l.4)``).
Every cycle's posted rule is recorded as ``(cos, threshold)`` with ``cos = <w, w*>``; the exact
expected regret of each cycle comes from :func:`lab.strategic.model.rule_regret`.

See: book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int, check_range
from lab.strategic.model import StrategicMassart, best_response, rule_regret

__all__ = [
    "ON_BAR",
    "Constants",
    "Phase",
    "Run",
    "draw_agents",
    "mirror_step",
    "pnorm_exponent",
    "project_cone_ball",
    "prox_step",
    "schedule",
    "strategic_massart_learner",
]

#: a reported feature within this distance of a posted boundary counts as "on" it (movers sit
#: TIE past the boundary, see :data:`lab.strategic.model.TIE`)
ON_BAR = 1e-6


@dataclass(frozen=True)
class Constants:
    """The absolute constants ``c0 .. c7`` of Propositions 2-4 (our choice; the paper gives only
    their App. A.5 forms in terms of Assumption 2's parameters).

    ``c0 = 2``: ``T_init = c0 ln T / (1 - 2 eta)^2``.
    ``c1 = 0.4``: the cone ``<w, w~0> >= c1 (1 - 2 eta)``; for Gaussian features
    ``E[y x] = (1 - 2 eta) sqrt(2 / pi) w*``, so ``<w*, w~0> ~ 0.8 (1 - 2 eta)``: ``c1`` is half.
    ``c2 = 0.5``: ``b0 = c2 (1 - 2 eta)^2``.
    ``c3 = 0.05``: ``T0 = c3 d ln d (ln T)^2 / (1 - 2 eta)^8``.
    ``c4 = 10``: ``alpha0 = c4 sqrt(d ln d) / (sqrt(T0) ln T)`` (square root as in ``alpha_k``).
    ``c5 = 0.5``: ``b_k = c5 (1 - 2 eta) 2^-k``.
    ``c6 = 0.1``: ``T_k = c6 4^k (gamma + 1) d ln d (ln T)^2 / (1 - 2 eta)^4``.
    ``c7 = 10``: ``alpha_k = c7 sqrt(d ln d) theta_k / (sqrt(T_k) ln T)``.
    ``cap = 1/8``: initialisation and refinement get at most ``cap T`` cycles (ours: without it ``T0`` alone
    exceeds ``T`` when ``eta = 0.4``).

    The steps are the usual online-mirror-descent tuning ``alpha ~ diameter / (G sqrt(n))`` with
    unit-size gradients; ``c6`` makes several batches fit in ``T = 50,000``.

    See: book/strategic/02-regret.ipynb
    """

    c0: float = 2.0
    c1: float = 0.4
    c2: float = 0.5
    c3: float = 0.05
    c4: float = 10.0
    c5: float = 0.5
    c6: float = 0.1
    c7: float = 10.0
    cap: float = 0.125

    def __post_init__(self):
        for name in ("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"):
            check_range(name, getattr(self, name), 0.0, 1e6, low_inclusive=False)
        check_range("cap", self.cap, 0.0, 1.0, low_inclusive=False)


@dataclass(frozen=True)
class Phase:
    """One batch of Algorithm 1: ``kind`` in {"init", "refine", "enhance"}, its index ``k``,
    ``iterations`` (each of ``cycles`` cycles), band ``b``, step ``alpha``, cone angle ``theta``;
    ``complete`` is False for a batch that the horizon cuts short."""

    kind: str
    k: int
    iterations: int
    cycles: int
    b: float
    alpha: float
    theta: float
    complete: bool = True


def pnorm_exponent(d: int) -> float:
    """``p = ln(8d) / (ln(8d) - 1)`` of the mirror map (Alg. 3 l.6)."""
    d = check_int("d", d, 1)
    q = math.log(8 * d)
    return q / (q - 1)  # eq. (Alg. 3 l.6): p = ln(8d) / (ln(8d) - 1)


def schedule(T: int, d: int, gamma: float, eta: float, constants: Constants | None = None):
    """The batches of Algorithm 1 that fit in ``T`` cycles (the last one cut at ``T``).

    Returns a list of :class:`Phase`. Lengths follow Props. 2-4 with :class:`Constants`; each is
    at least one iteration; initialisation and refinement get at most ``cap T`` cycles (ours).

    See: book/strategic/02-regret.ipynb
    """
    T = check_int("T", T, 4)
    d = check_int("d", d, 2)
    gamma = check_range("gamma", gamma, 0.0, 10.0)
    eta = check_range("eta", eta, 0.0, 0.5, high_inclusive=False)
    c = constants if constants is not None else Constants()
    if not isinstance(c, Constants):
        raise TypeError(f"constants must be a Constants (got {type(c).__name__})")
    lnT, a, dl = math.log(T), 1.0 - 2.0 * eta, d * math.log(d)
    cap = max(1, int(c.cap * T))

    def n_it(x, cycles, capped=True):
        n = max(1, math.ceil(x))
        return int(min(n, max(1, cap // cycles))) if capped else int(n)

    phases = [
        Phase("init", 0, n_it(c.c0 * lnT / a**2, 2), 2, 0.0, 0.0, math.pi / 2),  # eq. (Prop. 2)
    ]
    T0 = n_it(c.c3 * dl * lnT**2 / a**8, 1)  # eq. (Prop. 3): T0
    alpha0 = c.c4 * math.sqrt(dl) / (math.sqrt(T0) * lnT)  # eq. (Alg. 3): alpha_0 (deviation)
    phases.append(Phase("refine", 0, T0, 1, c.c2 * a**2, alpha0, math.pi / 2))
    used, k = sum(p.iterations * p.cycles for p in phases), 1
    while used < T:
        Tk = n_it(c.c6 * 4**k * (gamma + 1) * dl * lnT**2 / a**4, 2, False)  # eq. (Prop. 4): T_k
        theta = math.pi / 2 ** (k + 1)
        alpha = c.c7 * math.sqrt(dl) * theta / (math.sqrt(Tk) * lnT)  # eq. (Alg. 4): alpha_k
        phases.append(Phase("enhance", k, Tk, 2, c.c5 * a * 2.0**-k, alpha, theta))
        used += 2 * Tk
        k += 1
    # cut at T (a phase may end mid-way; an iteration of two cycles may lose its second cycle)
    out, left = [], T
    for p in phases:
        if left <= 0:
            break
        it = min(p.iterations, math.ceil(left / p.cycles))
        done = it == p.iterations and it * p.cycles <= left
        out.append(Phase(p.kind, p.k, it, p.cycles, p.b, p.alpha, p.theta, done))
        left -= it * p.cycles
    return out


def project_cone_ball(w, center, cos_min) -> np.ndarray:
    """Euclidean projection onto ``W = {||w|| <= 1, <w, center> >= cos_min}`` (unit ``center``).

    Exact: ``W`` is a circular segment in the plane of ``(<w, u>, ||w - <w, u> u||)``; try the
    ball, then the half-space, else the corner.
    """
    w = np.asarray(w, dtype=float)
    a = float(w @ center)
    v = w - a * center
    n = float(np.linalg.norm(v))
    c = float(cos_min)
    rad = math.hypot(a, n)
    if a >= c and rad <= 1.0:
        return w
    if rad > 1.0 and a / rad >= c:  # the ball's projection is feasible
        return w / rad
    if a < c and c * c + n * n <= 1.0:  # the half-space's projection is feasible
        return c * center + v
    s = math.sqrt(max(1.0 - c * c, 0.0))  # the corner
    return c * center + (s * v / n if n > 0 else 0.0 * v)


def _grad_half_sq_norm(v, r):
    """Gradient of ``||v||_r^2 / 2``: ``sign(v) |v|^(r-1) ||v||_r^(2-r)``."""
    nrm = float(np.sum(np.abs(v) ** r) ** (1.0 / r))
    if nrm == 0.0:
        return np.zeros_like(v)
    return np.sign(v) * np.abs(v) ** (r - 1) * nrm ** (2 - r)


def mirror_step(w, g, alpha, center, cos_min, p) -> np.ndarray:
    """Ablation (the chapter's earlier step, not the paper's): a mirror step then normalisation.

    Mirror descent with the regulariser ``psi(w) = ||w - center||_p^2 / (2 (p - 1))`` centred at
    the batch's start ``center`` = ``w_k``: ``grad psi(w_+) = grad psi(w_i) - alpha g``, i.e.
    ``w_+ = center + (p - 1) grad(||.||_q^2 / 2)(theta)`` with ``q = p / (p - 1)``, then the
    Euclidean projection onto ``W`` (:func:`project_cone_ball`). The paper's step
    (:func:`prox_step`) is proximal from the *current* iterate ``w_i``; in ``p = 2`` both coincide.
    Kept to show what the difference does (tests); the learners use :func:`prox_step`.
    """
    q = p / (p - 1.0)
    theta = _grad_half_sq_norm(w - center, p) / (p - 1.0) - alpha * g  # dual step
    w_hat = center + (p - 1.0) * _grad_half_sq_norm(theta, q)  # back to the primal
    w_hat = project_cone_ball(w_hat, center, cos_min)  # onto W (Euclidean)
    nrm = float(np.linalg.norm(w_hat))
    return w_hat / nrm if nrm > 0 else np.asarray(w, dtype=float)


def _hess_half_sq_norm(y, r):
    """Hessian of ``||y||_r^2 / 2`` (``r >= 2``: bounded, zero at ``y = 0``)."""
    n = float(np.sum(np.abs(y) ** r) ** (1.0 / r))
    if n == 0.0:
        return np.zeros((y.size, y.size))
    s = np.sign(y) * np.abs(y) ** (r - 1)
    return (r - 1) * n ** (2 - r) * np.diag(np.abs(y) ** (r - 2)) + (2 - r) * n ** (
        2 - 2 * r
    ) * np.outer(s, s)


def _prox_kkt(y, lam, mu, active, w_i, g, u, c, q, scale):
    w = w_i + scale * _grad_half_sq_norm(y, q)  # v = grad phi*(y): the primal point of y
    res = np.concatenate(
        [
            y + g + lam * w - mu * u,  # stationarity: grad phi(w - w_i) = y = -g - lam w + mu u
            [0.5 * (w @ w - 1.0) if active[0] else lam],  # ||w|| <= 1, or lam = 0
            [c - u @ w if active[1] else mu],  # <w, u> >= c, or mu = 0
        ]
    )
    return w, res


def _prox_newton(w_i, g, alpha, u, c, p, tol=1e-12):
    """Newton on the KKT system of the proximal step, in ``y = grad phi(w - w_i)`` (where
    ``phi*`` is smooth: ``q >= 2``), with an active set over the two constraints of ``W``.
    Returns ``(w, converged)``."""
    q, d = p / (p - 1.0), w_i.size
    scale = (p - 1.0) * alpha  # phi(v) = ||v||_p^2 / (2 scale); phi*(y) = scale ||y||_q^2 / 2
    y, lam, mu = -g.astype(float), 0.0, 0.0
    w = w_i + scale * _grad_half_sq_norm(y, q)  # the unconstrained minimiser
    active = [w @ w > 1.0 + 1e-14, w @ u < c - 1e-14]
    if not any(active):
        return w, True
    for _ in range(5):  # active-set rounds
        for _ in range(60):  # damped Newton
            w, res = _prox_kkt(y, lam, mu, active, w_i, g, u, c, q, scale)
            n_res = float(np.max(np.abs(res)))
            if n_res < tol:
                break
            H = scale * _hess_half_sq_norm(y, q)
            J = np.zeros((d + 2, d + 2))
            J[:d, :d], J[:d, d], J[:d, d + 1] = np.eye(d) + lam * H, w, -u
            if active[0]:
                J[d, :d] = H @ w
            else:
                J[d, d] = 1.0
            if active[1]:
                J[d + 1, :d] = -(H @ u)
            else:
                J[d + 1, d + 1] = 1.0
            step, t = np.linalg.lstsq(J, -res, rcond=None)[0], 1.0
            while t > 1e-6:  # backtracking on the residual
                y2, lam2, mu2 = y + t * step[:d], lam + t * step[d], mu + t * step[d + 1]
                _, res2 = _prox_kkt(y2, lam2, mu2, active, w_i, g, u, c, q, scale)
                if np.max(np.abs(res2)) < (1.0 - 1e-4 * t) * n_res:
                    break
                t /= 2.0
            y, lam, mu = y2, lam2, mu2
        w, res = _prox_kkt(y, lam, mu, active, w_i, g, u, c, q, scale)
        new = [
            (active[0] and lam > 0) or (not active[0] and w @ w > 1.0 + 1e-12),
            (active[1] and mu > 0) or (not active[1] and u @ w < c - 1e-12),
        ]
        if new == active:
            return w, bool(np.max(np.abs(res)) < 1e-10)
        active = new
        lam, mu = max(lam, 0.0) * active[0], max(mu, 0.0) * active[1]
    return w, False


def prox_argmin(w_i, g, alpha, u, c, p) -> np.ndarray:
    """``argmin_{w in W} <g, w> + ||w - w_i||_p^2 / (2 (p - 1) alpha)`` (no validation)."""
    if not np.any(g):
        return np.asarray(w_i, dtype=float).copy()  # the prox of 0 is w_i (w_i is in W)
    w, ok = _prox_newton(w_i, g, alpha, u, c, p)
    if ok:
        return w
    # rare (a thin cone with both constraints active): a general solver from Newton's point
    from scipy.optimize import minimize

    scale = (p - 1.0) * alpha
    res = minimize(
        lambda x: g @ x + float(np.sum(np.abs(x - w_i) ** p)) ** (2.0 / p) / (2.0 * scale),
        project_cone_ball(w, u, c),
        jac=lambda x: g + _grad_half_sq_norm(x - w_i, p) / scale,
        constraints=[
            {"type": "ineq", "fun": lambda x: 1.0 - x @ x, "jac": lambda x: -2.0 * x},
            {"type": "ineq", "fun": lambda x: u @ x - c, "jac": lambda x: u},
        ],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return project_cone_ball(res.x, u, c)


def prox_step(w, g, alpha, center, cos_min, p, *, normalise: bool = True) -> np.ndarray:
    """The paper's step, Alg. 3 l.6 / Alg. 4 l.8, then the normalisation of l.7 / l.9.

    ``w' = argmin_{v in W} <g, v> + ||v - w||_p^2 / (2 (p - 1) alpha)`` with
    ``W = {||v||_2 <= 1, <v, center> >= cos_min}``: a proximal step from the current iterate
    ``w`` in the ``p``-norm geometry, constrained to ``W``. Solved exactly (to 1e-12 on the KKT
    conditions) by Newton's method on the optimality conditions written in
    ``y = grad phi(v - w)`` (see ``_prox_newton``), with a general solver as a fallback.
    In ``p = 2`` it is the Euclidean projection of ``w - alpha g`` onto ``W`` (tested).

    Parameters
    ----------
    w : ndarray (d,)
        The current iterate ``w_{k,i}``, in ``W``.
    g : ndarray (d,)
        The gradient estimate.
    alpha : float
        Step (> 0).
    center : ndarray (d,)
        Unit vector of the cone (``w_k``; ``w~0 / ||w~0||`` in the refinement).
    cos_min : float
        The cone's bound, in ``[-1, 1]``.
    p : float
        The norm's exponent, in ``(1, 2]`` (:func:`pnorm_exponent`).
    normalise : bool
        Return ``w' / ||w'||`` (l.7 / l.9; default) or the minimiser ``w'`` itself.

    See: book/strategic/02-regret.ipynb
    """
    w = check_array("w", w, ndim=1)
    d = w.size
    g = check_array("g", g, shape=(d,))
    center = check_array("center", center, shape=(d,))
    if abs(float(np.linalg.norm(center)) - 1.0) > 1e-9:
        raise ValueError(f"center must be a unit vector (got norm {np.linalg.norm(center):.3g})")
    alpha = check_range("alpha", alpha, 0.0, math.inf, low_inclusive=False)
    cos_min = check_range("cos_min", cos_min, -1.0, 1.0)
    p = check_range("p", p, 1.0, 2.0, low_inclusive=False)
    w_new = prox_argmin(w, g, alpha, center, cos_min, p)  # eq. (Alg. 3 l.6 / Alg. 4 l.8)
    if not normalise:
        return w_new
    nrm = float(np.linalg.norm(w_new))
    return w_new / nrm if nrm > 0 else w.copy()  # eq. (Alg. 3 l.7 / Alg. 4 l.9)


def _prox_unit(w, g, alpha, center, cos_min, p) -> np.ndarray:
    """:func:`prox_step` without validation (the learners' inner loop)."""
    w_new = prox_argmin(w, g, alpha, center, cos_min, p)
    nrm = float(np.linalg.norm(w_new))
    return w_new / nrm if nrm > 0 else np.asarray(w, dtype=float)


def draw_agents(T: int, d: int, seed: int = 0):
    """The randomness of one run: true features ``X`` (T, d), label uniforms ``U`` (T,) and
    Gaussian directions ``G`` (T, d) for Algorithm 2's random classifiers."""
    T, d = check_int("T", T, 1), check_int("d", d, 2)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    return rng.standard_normal((T, d)), rng.random(T), rng.standard_normal((T, d))


@dataclass
class Run:
    """One run: per-cycle posted rules (``cos`` = ``<w_t, w*>``, ``threshold``), their exact
    ``regret``, the realised 0-1 ``loss``, the batch outputs ``w_out`` and ``angles``
    (angle to ``w*`` of ``w~0`` and of each batch's output), and the ``phases``."""

    cos: np.ndarray
    threshold: np.ndarray
    regret: np.ndarray
    loss: np.ndarray
    w_out: list
    angles: np.ndarray
    phases: list


def _angle(w, w_star) -> float:
    return float(np.arccos(np.clip(w @ w_star / np.linalg.norm(w), -1, 1)))


def strategic_massart_learner(
    env: StrategicMassart, T: int, seed: int = 0, constants: Constants | None = None, draws=None
) -> Run:
    """Algorithm 1 (Initialization, Refinement, Batched Enhancement), cycle by cycle.

    Parameters
    ----------
    env : StrategicMassart
    T : int
        Horizon (cycles), ``>= 4``; ``ln T`` enters the constants as in the paper.
    seed : int
        Seed of :func:`draw_agents` (ignored when ``draws`` is given).
    constants : Constants, optional
    draws : tuple (X, U, G), optional
        Pre-drawn randomness (the fast path is tested on the same draws).

    Returns
    -------
    Run

    See: book/strategic/02-regret.ipynb
    """
    if not isinstance(env, StrategicMassart):
        raise TypeError(f"env must be a StrategicMassart (got {type(env).__name__})")
    T = check_int("T", T, 4)
    X, U, G = draws if draws is not None else draw_agents(T, env.d, check_int("seed", seed, 0))
    X = check_array("X", X, ndim=2)
    if X.shape[0] < T:
        raise ValueError(f"draws must hold at least T = {T} agents (got {X.shape[0]})")
    eta, gamma, ws = env.eta, env.gamma, env.w_star
    p = pnorm_exponent(env.d)
    phases = schedule(T, env.d, gamma, eta, constants)
    c1 = (constants or Constants()).c1
    cos_t, thr_t, loss_t = np.zeros(T), np.zeros(T), np.zeros(T)
    w_out, t = [], 0

    def cycle(w, thr):
        """Post "admit iff <w, r> >= thr", one agent best-responds (Lemma 1); returns
        (r, y or 0 when not admitted)."""
        nonlocal t
        x, y = X[t : t + 1], env.labels(X[t : t + 1], U[t : t + 1])[0]
        r = best_response(x, w, -thr, gamma)[0]  # eq. (Lemma 1): the agent's best response
        admitted = r @ w - thr >= 0
        cos_t[t], thr_t[t], loss_t[t] = w @ ws, thr, float((1.0 if admitted else -1.0) != y)
        t += 1
        return r, (y if admitted else 0.0)  # one-sided feedback

    for ph in phases:
        if ph.kind == "init":  # Algorithm 2
            acc = np.zeros(env.d)
            for i in range(ph.iterations):
                w = G[i] / np.linalg.norm(G[i])  # eq. (Alg. 2 l.2): w_init,i uniform on the sphere
                for j in (1, 2):
                    if t >= T:
                        break
                    sgn = 1.0 if j == 1 else -1.0
                    r, y = cycle(sgn * w, 0.0)  # eq. (Alg. 2 l.4): (-1)^(j-1) sgn(<w_init,i, r>)
                    if sgn * (r @ w) > ON_BAR:  # eq. (Alg. 2 l.6): strictly above (truthful agents)
                        acc += y * r
            w_tilde0 = acc / ph.iterations  # eq. (Alg. 2 l.6)
            w_out.append(w_tilde0)
        elif ph.kind == "refine":  # Algorithm 3
            nrm0 = np.linalg.norm(w_tilde0)
            u0 = w_tilde0 / nrm0 if nrm0 > 0 else np.eye(env.d)[0]
            # W0 = {||w|| <= 1, <w, w~0> >= c1 (1 - 2 eta)}; deviation: cos clipped below 1
            cmin = min(c1 * (1 - 2 * eta) / max(nrm0, 1e-12), 0.99)
            w, total = u0.copy(), np.zeros(env.d)  # initialisation: w_0,1 = w~0 / ||w~0||
            for _ in range(ph.iterations):
                total += w
                r, y = cycle(w, 0.0)  # eq. (Alg. 3 l.2): sgn(<w_0,i, r>)
                s = r @ w
                band = (s > ON_BAR) and (s <= ph.b)  # eq. (Alg. 3 l.4): 0 < <w_0,i, r> <= b0
                g = (-eta * r * (y == 1) + (1 - eta) * r * (y == -1)) * band  # eq. (Alg. 3 l.4)
                w = _prox_unit(w, g, ph.alpha, u0, cmin, p)  # eq. (Alg. 3 l.6-7): prox, normalised
            w_k = total / np.linalg.norm(total)  # eq. (Alg. 3 l.8-9)
            w_out.append(w_k)
        else:  # Algorithm 4, batch k
            center, cmin = w_k.copy(), math.cos(ph.theta)  # W_k, theta_k = pi / 2^(k+1)
            w, total = w_k.copy(), np.zeros(env.d)
            for _ in range(ph.iterations):
                total += w
                g = np.zeros(env.d)
                for j, thr in ((1, gamma), (2, gamma + ph.b)):  # eq. (Alg. 4 l.2): h1, h2
                    if t >= T:
                        break
                    r, y = cycle(w, thr)  # eq. (Alg. 4 l.4-5)
                    s = r @ w
                    if j == 1:  # D^(1): gamma <= <w, r> <= gamma + b_k
                        inside = (s >= gamma - ON_BAR) and (s <= gamma + ph.b + ON_BAR)
                    else:  # D^(2): <w, r> = gamma + b_k (the movers)
                        inside = abs(s - gamma - ph.b) <= ON_BAR
                    if inside and y != 0:
                        plus = r + (ph.b - s) * w  # eq. (Alg. 4 l.6): Proj+ onto <w, x> = b_k
                        minus = r - s * w  # eq. (Alg. 4 l.6): Proj- onto <w, x> = 0
                        sign = 1.0 if j == 1 else -1.0  # eq. (Alg. 4 l.7): x^(1,.) - x^(2,.)
                        g += sign * (-eta * plus * (y == 1) + (1 - eta) * minus * (y == -1))
                w = _prox_unit(w, g, ph.alpha, center, cmin, p)  # eq. (Alg. 4 l.8-9)
            w_k = total / np.linalg.norm(total)  # eq. (Alg. 4 l.10-11)
            w_out.append(w_k)
    angles = np.array([_angle(w, ws) for w in w_out])
    regret = rule_regret(cos_t, thr_t, gamma, eta)  # eq. (1): Err(h_t) - Err(h*) per cycle
    return Run(cos_t, thr_t, regret, loss_t, w_out, angles, phases)
