"""Reference kernel (numpy) of the paper's equations: the agents' best response (Lemma 1), the
raised rule (Prop. 1, Cor. 1), the exact regret of a posted rule (eq. (1)), and Algorithms 1-4,
one run, cycle by cycle.

Each statement carries the equation it implements, by its label on the lesson page
(``# eq. (strategic-alg3-grad)``, book/strategic/index.md) or the algorithm line
(``# eq. (Alg. 3 l.2)``).
Every cycle's posted rule is recorded as ``(cos, threshold)`` with ``cos = <w, w*>``; the exact
expected regret of each cycle comes from :func:`rule_regret`. A rule is written by its
direction ``w`` and threshold ``theta = -m``: "admit iff ``<w, r> >= theta``".

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_fields, check_int, check_range, check_real
from lab.strategic.prox import grad_half_sq_norm, project_cone_ball, prox_argmin

__all__ = [
    "TIE",
    "ON_BAR",
    "admits",
    "best_response",
    "clairvoyant_rule",
    "disagreement",
    "rule_regret",
    "Constants",
    "Phase",
    "Run",
    "draw_agents",
    "mirror_step",
    "pnorm_exponent",
    "prox_step",
    "schedule",
    "strategic_massart_learner",
]

#: movers are placed this far past the boundary so that rounding never rejects them
TIE = 1e-9


def unit_vector(name: str, w, d: int | None = None) -> np.ndarray:
    w = check_array(name, w, ndim=1, min_size=1)
    if d is not None and w.shape[0] != d:
        raise ValueError(f"{name} must have length d = {d} (got {w.shape[0]})")
    nrm = float(np.linalg.norm(w))
    if nrm == 0.0:
        raise ValueError(f"{name} must be nonzero (got norm 0)")
    return w / nrm


def best_response(X, w, m, gamma, tie: float = TIE) -> np.ndarray:
    """Reported features under the posted rule ``sgn(<w, r> + m)`` (the paper's Lemma 1).

    ``r = x - (<w, x> + m) w`` when ``-gamma <= <w, x> + m < 0`` (the agent moves straight onto
    the boundary, a distance ``<= gamma``), ``r = x`` otherwise. Movers are pushed ``tie`` past
    the boundary so that ``<w, r> + m >= 0`` holds in floating point.

    Parameters
    ----------
    X : array, shape (n, d)
        True features.
    w : array, shape (d,)
        Direction of the rule (normalised here).
    m : float
        Offset of the rule; the threshold is ``-m``.
    gamma : float
        Largest manipulation distance, ``>= 0``.
    tie : float
        Nudge past the boundary, ``>= 0``.

    Returns
    -------
    ndarray, shape (n, d)

    See: book/strategic/01-best-responses.ipynb
    """
    X = check_array("X", X, ndim=2)
    w = check_array("w", w, ndim=1, min_size=1)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w must have length d = {X.shape[1]} (got {w.shape[0]})")
    if float(np.linalg.norm(w)) == 0.0:
        raise ValueError("w must be nonzero (got norm 0)")
    m = check_real("m", m)
    gamma = check_range("gamma", gamma, 0.0, math.inf)
    tie = check_range("tie", tie, 0.0, 1e-3)
    return best_response_unchecked(X, w, m, gamma, tie)


def best_response_unchecked(X, w, m, gamma, tie: float = TIE) -> np.ndarray:
    """:func:`best_response` on checked inputs (``w`` nonzero, normalised here)."""
    w = w / float(np.linalg.norm(w))
    s = X @ w + m
    move = (s >= -gamma) & (s < 0)  # eq. (strategic-lemma1): only agents within gamma move
    R = X.copy()
    R[move] -= (s[move] - tie)[:, None] * w[
        None, :
    ]  # eq. (strategic-lemma1): r = x - (<w, x> + m) w
    return R


def admits(R, w, m) -> np.ndarray:
    """The posted rule on reported features: ``<w, r> + m >= 0`` (``w`` normalised).

    See: book/strategic/01-best-responses.ipynb
    """
    R = check_array("R", R, ndim=2)
    w = unit_vector("w", w, R.shape[1])
    m = check_real("m", m)
    return R @ w + m >= 0


def disagreement(cos, c) -> np.ndarray:
    """``P(sgn(<w, x> - c) != sgn(<w*, x>))`` for ``x ~ N(0, I)`` and ``<w, w*> = cos``.

    Closed form with Owen's T function: ``1/2 - 2 T(c, cos / sqrt(1 - cos^2))``
    (``arccos(cos) / pi`` at ``c = 0``). Vectorised over ``cos`` and ``c``.

    See: book/strategic/02-regret.ipynb
    """
    cos = check_array("cos", cos, min_size=0)
    c = np.asarray(c, dtype=float)
    if np.isnan(c).any():
        raise ValueError("c must not contain NaN")
    return disagreement_unchecked(cos, c)


def disagreement_unchecked(cos, c) -> np.ndarray:
    """:func:`disagreement` on checked inputs."""
    from scipy.special import owens_t

    cos = np.clip(np.asarray(cos, dtype=float), -1.0, 1.0)
    c = np.asarray(c, dtype=float)
    s = np.sqrt(np.maximum(1.0 - cos**2, 0.0))
    a = np.where(s > 0, cos / np.where(s > 0, s, 1.0), np.sign(cos) * 1e15)
    c = np.clip(c, -40.0, 40.0)
    return 0.5 - 2.0 * owens_t(c, a)


def rule_regret(cos, threshold, gamma: float, eta: float) -> np.ndarray:
    """Expected regret per cycle, ``Err(h) - Err(h*)``, of the rule "admit iff ``<w, r> >= theta``".

    By Proposition 1 the rule admits exactly the agents with ``<w, x> >= theta - gamma``, so with
    uniform noise ``eta`` its regret is ``(1 - 2 eta) P(sgn(<w, x> - theta + gamma) !=
    sgn(<w*, x>))`` (:func:`disagreement`). ``threshold = -inf`` admits everyone.

    See: book/strategic/02-regret.ipynb
    """
    gamma = check_range("gamma", gamma, 0.0, math.inf)
    eta = check_range("eta", eta, 0.0, 0.5, high_inclusive=False)
    cos = check_array("cos", cos, min_size=0)
    th = np.asarray(threshold, dtype=float)
    if np.isnan(th).any():
        raise ValueError("threshold must not contain NaN")
    return rule_regret_unchecked(cos, th, gamma, eta)


def rule_regret_unchecked(cos, threshold, gamma: float, eta: float) -> np.ndarray:
    """:func:`rule_regret` on checked inputs."""
    th = np.asarray(threshold, dtype=float)
    return (1.0 - 2.0 * eta) * disagreement_unchecked(
        cos, th - gamma
    )  # eq. (strategic-rule-regret)


def clairvoyant_rule(w_star, gamma) -> tuple[np.ndarray, float]:
    """The clairvoyant optimal rule ``sgn(<w*, r> - gamma)`` (Corollary 1) as ``(w*, m = -gamma)``.

    See: book/strategic/01-best-responses.ipynb
    """
    gamma = check_range("gamma", gamma, 0.0, math.inf)
    return unit_vector("w_star", w_star), -gamma


#: a reported feature within this distance of a posted boundary counts as "on" it (movers sit
#: TIE past the boundary, see :data:`TIE`)
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


def constants_or_default(constants) -> Constants:
    c = constants if constants is not None else Constants()
    if not isinstance(c, Constants):
        raise TypeError(f"constants must be a Constants (got {type(c).__name__})")
    return c


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
    return schedule_unchecked(T, d, gamma, eta, constants_or_default(constants))


def schedule_unchecked(T: int, d: int, gamma: float, eta: float, c: Constants) -> list[Phase]:
    """:func:`schedule` on checked inputs."""
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
    return _cut_at(phases, T)


def _cut_at(phases: list[Phase], T: int) -> list[Phase]:
    """The phases cut at ``T`` (a phase may end mid-way; an iteration of two cycles may lose its
    second cycle)."""
    out, left = [], T
    for p in phases:
        if left <= 0:
            break
        it = min(p.iterations, math.ceil(left / p.cycles))
        done = it == p.iterations and it * p.cycles <= left
        out.append(Phase(p.kind, p.k, it, p.cycles, p.b, p.alpha, p.theta, done))
        left -= it * p.cycles
    return out


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
    theta = grad_half_sq_norm(w - center, p) / (p - 1.0) - alpha * g  # dual step
    w_hat = center + (p - 1.0) * grad_half_sq_norm(theta, q)  # back to the primal
    w_hat = project_cone_ball(w_hat, center, cos_min)  # onto W (Euclidean)
    nrm = float(np.linalg.norm(w_hat))
    return w_hat / nrm if nrm > 0 else np.asarray(w, dtype=float)


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
    w_new = prox_argmin(w, g, alpha, center, cos_min, p)  # eq. (strategic-prox)
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


class _Game:
    """The cycles of one run: the posted rules, the agents' best responses and the one-sided
    feedback, with the per-cycle records (no validation: the learner checked its inputs)."""

    def __init__(self, env, T: int, X, U):
        self.env, self.X, self.U, self.T, self.t = env, X, U, T, 0
        self.cos, self.threshold, self.loss = np.zeros(T), np.zeros(T), np.zeros(T)

    def cycle(self, w, thr):
        """Post "admit iff <w, r> >= thr", one agent best-responds (Lemma 1); returns
        (r, y or 0 when not admitted)."""
        t, env = self.t, self.env
        x, y = self.X[t : t + 1], env.labels(self.X[t : t + 1], self.U[t : t + 1])[0]
        r = best_response_unchecked(x, w, -thr, env.gamma)[
            0
        ]  # eq. (Lemma 1): the agent's best response
        admitted = r @ w - thr >= 0
        self.cos[t], self.threshold[t] = w @ env.w_star, thr
        self.loss[t] = float((1.0 if admitted else -1.0) != y)
        self.t += 1
        return r, (y if admitted else 0.0)  # one-sided feedback


def _initialization(game: _Game, ph: Phase, G) -> np.ndarray:
    """Algorithm 2: pairs of opposite random classifiers; returns w~0."""
    acc = np.zeros(game.env.d)
    for i in range(ph.iterations):
        w = G[i] / np.linalg.norm(G[i])  # eq. (Alg. 2 l.2): w_init,i uniform on the sphere
        for j in (1, 2):
            if game.t >= game.T:
                break
            sgn = 1.0 if j == 1 else -1.0
            r, y = game.cycle(sgn * w, 0.0)  # eq. (Alg. 2 l.4): (-1)^(j-1) sgn(<w_init,i, r>)
            if sgn * (r @ w) > ON_BAR:  # eq. (strategic-alg2): strictly above (truthful)
                acc += y * r
    return acc / ph.iterations  # eq. (strategic-alg2)


def _refinement(game: _Game, ph: Phase, w_tilde0, c1: float, p: float) -> np.ndarray:
    """Algorithm 3: proximal steps on the band gradient at threshold 0; returns w_0."""
    eta, d = game.env.eta, game.env.d
    nrm0 = np.linalg.norm(w_tilde0)
    u0 = w_tilde0 / nrm0 if nrm0 > 0 else np.eye(d)[0]
    # W0 = {||w|| <= 1, <w, w~0> >= c1 (1 - 2 eta)}; deviation: cos clipped below 1
    cmin = min(c1 * (1 - 2 * eta) / max(nrm0, 1e-12), 0.99)
    w, total = u0.copy(), np.zeros(d)  # initialisation: w_0,1 = w~0 / ||w~0||
    for _ in range(ph.iterations):
        total += w
        r, y = game.cycle(w, 0.0)  # eq. (Alg. 3 l.2): sgn(<w_0,i, r>)
        s = r @ w
        band = (s > ON_BAR) and (s <= ph.b)  # eq. (Alg. 3 l.4): 0 < <w_0,i, r> <= b0
        g = (-eta * r * (y == 1) + (1 - eta) * r * (y == -1)) * band  # eq. (strategic-alg3-grad)
        w = _prox_unit(w, g, ph.alpha, u0, cmin, p)  # eq. (strategic-prox), normalised
    return total / np.linalg.norm(total)  # eq. (Alg. 3 l.8-9)


def _contrastive_gradient(game: _Game, ph: Phase, w) -> np.ndarray:
    """Algorithm 4 l.2-7: post h1 and h2, keep the agents in D^(1) and D^(2), build the proxies
    and the contrastive gradient."""
    eta, gamma = game.env.eta, game.env.gamma
    g = np.zeros(game.env.d)
    for j, thr in ((1, gamma), (2, gamma + ph.b)):  # eq. (Alg. 4 l.2): h1, h2
        if game.t >= game.T:
            break
        r, y = game.cycle(w, thr)  # eq. (Alg. 4 l.4-5)
        s = r @ w
        if j == 1:  # D^(1): gamma <= <w, r> <= gamma + b_k
            inside = (s >= gamma - ON_BAR) and (s <= gamma + ph.b + ON_BAR)
        else:  # D^(2): <w, r> = gamma + b_k (the movers)
            inside = abs(s - gamma - ph.b) <= ON_BAR
        if inside and y != 0:
            plus = r + (ph.b - s) * w  # eq. (strategic-alg4-proxy): Proj+
            minus = r - s * w  # eq. (strategic-alg4-proxy): Proj-
            sign = 1.0 if j == 1 else -1.0  # eq. (strategic-alg4-grad): x^(1,.) - x^(2,.)
            g += sign * (-eta * plus * (y == 1) + (1 - eta) * minus * (y == -1))
    return g


def _enhancement(game: _Game, ph: Phase, w_k, p: float) -> np.ndarray:
    """Algorithm 4, batch k: proximal steps on the contrastive gradient in the cone W_k."""
    center, cmin = w_k.copy(), math.cos(ph.theta)  # W_k, theta_k = pi / 2^(k+1)
    w, total = w_k.copy(), np.zeros(game.env.d)
    for _ in range(ph.iterations):
        total += w
        g = _contrastive_gradient(game, ph, w)
        w = _prox_unit(w, g, ph.alpha, center, cmin, p)  # eq. (strategic-prox), normalised
    return total / np.linalg.norm(total)  # eq. (Alg. 4 l.10-11)


def _learner(env, T: int, draws, constants: Constants) -> Run:
    """Algorithm 1 on checked inputs (:func:`strategic_massart_learner` without validation)."""
    X, U, G = draws
    p = pnorm_exponent(env.d)
    phases = schedule_unchecked(T, env.d, env.gamma, env.eta, constants)
    game, w_out = _Game(env, T, X, U), []
    for ph in phases:
        if ph.kind == "init":  # Algorithm 2
            w_out.append(_initialization(game, ph, G))
        elif ph.kind == "refine":  # Algorithm 3
            w_out.append(_refinement(game, ph, w_out[-1], constants.c1, p))
        else:  # Algorithm 4, batch k
            w_out.append(_enhancement(game, ph, w_out[-1], p))
    angles = np.array([_angle(w, env.w_star) for w in w_out])
    # eq. (strategic-eq1): Err(h_t) - Err(h*) per cycle
    regret = rule_regret_unchecked(game.cos, game.threshold, env.gamma, env.eta)
    return Run(game.cos, game.threshold, regret, game.loss, w_out, angles, phases)


def strategic_massart_learner(
    env, T: int, seed: int = 0, constants: Constants | None = None, draws=None
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
    check_fields("env", env, "d", "gamma", "eta", "w_star", "labels", kind="a StrategicMassart")
    T = check_int("T", T, 4)
    seed = check_int("seed", seed, 0)
    constants = constants_or_default(constants)
    X, U, G = draws if draws is not None else draw_agents(T, env.d, seed)
    X = check_array("X", X, ndim=2)
    if X.shape[0] < T:
        raise ValueError(f"draws must hold at least T = {T} agents (got {X.shape[0]})")
    return _learner(env, T, (X, U, G), constants)
