r"""The offset game: a simulator more general than the paper's model, on which the extra
baseline :mod:`lab.strategic.doubling_epochs` runs.

An offset ``b*`` (the paper has ``b* = 0``), a rule "accept iff ``<w, x> >= tau``" (the paper's
``sgn(<w, r> + m)`` with ``tau = -m``) and a radius ``r`` (the paper's ``gamma``). With
``b_star=0`` and ``r=gamma`` it is the paper's game. Equations (numbered as in the first version
of this module): (1) best response, (2) expected loss given ``x``, (3) clairvoyant rule
``(w*, b* + r)``, (4) regret, (5) the unshifted rule's loss gap.

See: book/strategic/01-best-responses.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)
from lab.strategic.reference import TIE, unit_vector

__all__ = [
    "NOISE_PROFILES",
    "TIE",
    "StrategicEnv",
    "accepts",
    "best_response",
    "clairvoyant",
    "closed_form_unshifted_gap",
]

NOISE_PROFILES = ("none", "uniform", "asymmetric", "margin")


def _rule(X, w, tau) -> tuple[np.ndarray, np.ndarray, float]:
    """``(X, w / |w|, tau)`` of the rule ``<w, x> >= tau`` on the features ``X``, validated."""
    X = check_array("X", X, ndim=2)
    w = unit_vector("w", w, X.shape[1])
    tau = float(tau)
    if math.isnan(tau):
        raise ValueError("tau must not be NaN")
    return X, w, tau


# ------------------------------------------------------------------------------------------
# The agents
# ------------------------------------------------------------------------------------------
def accepts(X, w, tau) -> np.ndarray:
    """The announced rule on (reported) features: ``<w, x> >= tau`` with ``w`` normalised.

    Uses the same dot product as :func:`best_response`, so a mover nudged over the bar is
    accepted here. ``tau = -inf`` accepts everyone.

    See: book/strategic/01-best-responses.ipynb
    """
    X, w, tau = _rule(X, w, tau)
    return X @ w >= tau


def best_response(X, w, tau, r, tie: float = TIE) -> np.ndarray:
    """Agents' reported features under the rule ``<w, x> >= tau`` and manipulation radius r.

    Parameters
    ----------
    X : array, shape (n, d)
        True features.
    w : array, shape (d,)
        Announced direction (normalised here, so ``tau`` is read in units of ``w/|w|``).
    tau : float
        Announced threshold; ``-inf`` accepts all (no one moves), ``+inf`` rejects all.
    r : float
        Manipulation radius ``1/c`` (Euclidean cost), ``>= 0``.
    tie : float
        Extra push past the bar, ``>= 0``. With ``tie = 0`` a mover lands *on* the bar and
        rounding leaves about half of them a hair below it: rejected after paying.

    Returns
    -------
    array, shape (n, d)
        ``x + (tau - <w, x> + tie) w`` for agents with ``tau - r <= <w, x> < tau``, eq. (1);
        the others unchanged.

    See: book/strategic/01-best-responses.ipynb
    """
    X, w, tau = _rule(X, w, tau)
    r = check_positive("r", r, allow_zero=True)
    tie = check_positive("tie", tie, allow_zero=True)
    s = X @ w
    if not math.isfinite(tau):
        return X.copy()
    move = (s >= tau - r) & (s < tau)  # eq. (1): within reach and not yet accepted
    Xt = X.copy()
    Xt[move] += (tau - s[move] + tie)[:, None] * w[None, :]  # eq. (1): project onto the bar
    return Xt


# ------------------------------------------------------------------------------------------
# The environment
# ------------------------------------------------------------------------------------------
@dataclass
class StrategicEnv:
    """Agents ``x ~ N(0, I_d)``, a halfspace ``(w*, b*)`` with Massart noise, radius ``r``.

    Parameters
    ----------
    w_star : array, shape (d,)
        True direction (normalised on construction). Default: angle 0.6 rad in the plane.
    b_star : float
        True offset; the Bayes rule is ``<w*, x> >= b*``.
    r : float
        Manipulation radius, ``>= 0``.
    noise : {"none", "uniform", "asymmetric", "margin"}
        Noise profile ``eta(x)``: 0; ``eta_max``; ``0.05 + (eta_max - 0.05) 1[x_1 > 0]``
        (feature dependent, the default); ``eta_max exp(-|<w*, x> - b*| / 0.5)`` (noisiest at
        the boundary).
    eta_max : float
        Massart bound, in ``[0, 0.5)``.
    n_mc : int
        Size of the fixed Monte Carlo pool used for expected losses and regrets.
    seed : int
        Seed of the pool (agents of a run use the run's own seed).

    See: book/strategic/01-best-responses.ipynb
    """

    w_star: np.ndarray = field(default_factory=lambda: np.array([math.cos(0.6), math.sin(0.6)]))
    b_star: float = 0.3
    r: float = 0.5
    noise: str = "asymmetric"
    eta_max: float = 0.35
    n_mc: int = 200_000
    seed: int = 0

    def __post_init__(self):
        self.w_star = unit_vector("w_star", self.w_star)
        self.b_star = check_range("b_star", self.b_star, -5.0, 5.0)
        self.r = check_positive("r", self.r, allow_zero=True)
        self.noise = check_choice("noise", self.noise, NOISE_PROFILES)
        self.eta_max = check_range("eta_max", self.eta_max, 0.0, 0.5, high_inclusive=False)
        self.n_mc = check_int("n_mc", self.n_mc, 1000)
        self.seed = check_int("seed", self.seed, 0)
        if self.noise == "asymmetric" and self.eta_max < 0.05:
            raise ValueError(f"eta_max must be >= 0.05 for noise='asymmetric' (got {self.eta_max})")
        self._pool = None

    @property
    def d(self) -> int:
        return int(self.w_star.shape[0])

    def eta(self, X) -> np.ndarray:
        """Flip probability ``eta(x)`` of the chosen profile (always ``< 1/2``)."""
        X = check_array("X", X, ndim=2)
        n = X.shape[0]
        if self.noise == "none":
            return np.zeros(n)
        if self.noise == "uniform":
            return np.full(n, self.eta_max)
        if self.noise == "asymmetric":
            return 0.05 + (self.eta_max - 0.05) * (X[:, 0] > 0)
        u = X @ self.w_star - self.b_star
        return self.eta_max * np.exp(-np.abs(u) / 0.5)

    def bayes(self, X) -> np.ndarray:
        """``s(x) = +1`` iff ``<w*, x> >= b*``, else ``-1``."""
        X = check_array("X", X, ndim=2)
        return np.where(X @ self.w_star >= self.b_star, 1, -1)

    def sample(self, n: int, rng: np.random.Generator):
        """``n`` agents: true features ``X`` and noisy labels ``y`` (Massart)."""
        n = check_int("n", n, 0)
        X = rng.standard_normal((n, self.d))
        flip = rng.random(n) < self.eta(X)
        y = np.where(flip, -self.bayes(X), self.bayes(X))
        return X, y

    @property
    def pool(self) -> np.ndarray:
        if self._pool is None:
            self._pool = np.random.default_rng(10_000 + self.seed).standard_normal(
                (self.n_mc, self.d)
            )
        return self._pool

    def step(self, w, tau, rng: np.random.Generator, n: int = 1):
        """Play ``n`` rounds of the same announced rule.

        Returns ``(X_tilde, y_seen, info)``: the reported features, the labels with ``0`` where
        the agent was rejected (label not revealed), and a dict with ``X``, ``y``,
        ``accepted``, ``loss`` (realised 0-1 loss per round).
        """
        X, y = self.sample(n, rng)
        Xt = best_response(X, w, tau, self.r)
        acc = accepts(Xt, w, tau)
        yhat = np.where(acc, 1, -1)
        seen = np.where(acc, y, 0)  # one-sided feedback: labels only for accepted agents
        return Xt, seen, {"X": X, "y": y, "accepted": acc, "loss": (yhat != y).astype(float)}

    def expected_loss(self, w, tau, tie: float = TIE) -> float:
        """``E[1(yhat != y)]`` of the announced rule on the Monte Carlo pool, eq. (2)."""
        X = self.pool
        acc = accepts(best_response(X, w, tau, self.r, tie), w, tau)
        eta = self.eta(X)
        wrong = np.where(acc, 1, -1) != self.bayes(X)
        return float(np.mean(eta + (1 - 2 * eta) * wrong))  # eq. (2)

    def regret(self, w, tau, tie: float = TIE) -> float:
        """Per-round expected regret against the clairvoyant rule, eq. (4)."""
        X = self.pool
        acc = accepts(best_response(X, w, tau, self.r, tie), w, tau)
        eta = self.eta(X)
        wrong = np.where(acc, 1, -1) != self.bayes(X)
        return float(np.mean((1 - 2 * eta) * wrong))  # eq. (4)


def clairvoyant(env: StrategicEnv) -> tuple[np.ndarray, float]:
    """The optimal announced rule ``(w*, b* + r)``, eq. (3).

    See: book/strategic/01-best-responses.ipynb
    """
    check_instance("env", env, StrategicEnv)
    return env.w_star.copy(), env.b_star + env.r


def closed_form_unshifted_gap(env: StrategicEnv) -> float:
    """Per-round regret of announcing ``(w*, b*)``, eq. (5), by 1-D quadrature (no sampling).

    With ``u = <w*, x>`` and ``v`` the orthogonal coordinate, ``x_1 = u cos(phi) - v sin(phi)``
    (in d = 2), so ``P(x_1 > 0 | u) = Phi(u cos(phi) / sin(phi))``.

    See: book/strategic/02-regret.ipynb
    """
    from scipy import integrate
    from scipy.stats import norm

    check_instance("env", env, StrategicEnv)
    lo, hi = env.b_star - env.r, env.b_star
    if env.noise == "none":
        return float(norm.cdf(hi) - norm.cdf(lo))
    if env.noise == "uniform":
        return float((1 - 2 * env.eta_max) * (norm.cdf(hi) - norm.cdf(lo)))
    if env.noise == "margin":

        def f(u):
            return norm.pdf(u) * (1 - 2 * env.eta_max * math.exp(-abs(u - env.b_star) / 0.5))

        return float(integrate.quad(f, lo, hi)[0])
    if env.d != 2:
        raise ValueError(f"the asymmetric closed form needs d = 2 (got d = {env.d})")
    c, s = env.w_star
    a, bump = 0.05, env.eta_max - 0.05

    def p_pos(u):  # P(x_1 > 0 | <w*, x> = u)
        if abs(s) < 1e-15:
            return float(u * c > 0)
        return float(norm.cdf(u * c / s)) if s > 0 else float(norm.cdf(-u * c / s))

    def g(u):
        return norm.pdf(u) * (1 - 2 * (a + bump * p_pos(u)))

    return float(integrate.quad(g, lo, hi, points=[0.0] if lo < 0 < hi else None)[0])
