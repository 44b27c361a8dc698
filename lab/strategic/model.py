"""The paper's model: agents, best responses (Lemma 1), Massart labels and exact regret.

Features ``x ~ N(0, I_d)`` (an isotropic log-concave law, so Assumption 2 holds), labels
``y = sgn(<w*, x>)`` flipped with probability ``eta(x) <= eta < 1/2`` (Assumption 1, no offset),
agents who pay ``2 ||x - r|| / gamma`` to report ``r`` (so they move at most ``gamma``), posted
rules ``h(r) = sgn(<w, r> + m)``. Here a rule is written by its direction ``w`` and threshold
``theta = -m``: "admit iff ``<w, r> >= theta``".

See: book/strategic/01-best-responses.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_range, check_real

__all__ = [
    "TIE",
    "StrategicMassart",
    "admits",
    "best_response",
    "clairvoyant_rule",
    "disagreement",
    "rule_regret",
]

#: movers are placed this far past the boundary so that rounding never rejects them
TIE = 1e-9


def _unit(name: str, w, d: int | None = None) -> np.ndarray:
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
    w = _unit("w", w, X.shape[1])
    m = check_real("m", m)
    gamma = check_range("gamma", gamma, 0.0, math.inf)
    tie = check_range("tie", tie, 0.0, 1e-3)
    s = X @ w + m
    move = (s >= -gamma) & (s < 0)  # Lemma 1: only agents within gamma of the boundary move
    R = X.copy()
    R[move] -= (s[move] - tie)[:, None] * w[None, :]  # Lemma 1: r = x - (<w, x> + m) w
    return R


def admits(R, w, m) -> np.ndarray:
    """The posted rule on reported features: ``<w, r> + m >= 0`` (``w`` normalised).

    See: book/strategic/01-best-responses.ipynb
    """
    R = check_array("R", R, ndim=2)
    w = _unit("w", w, R.shape[1])
    m = check_real("m", m)
    return R @ w + m >= 0


def disagreement(cos, c) -> np.ndarray:
    """``P(sgn(<w, x> - c) != sgn(<w*, x>))`` for ``x ~ N(0, I)`` and ``<w, w*> = cos``.

    Closed form with Owen's T function: ``1/2 - 2 T(c, cos / sqrt(1 - cos^2))``
    (``arccos(cos) / pi`` at ``c = 0``). Vectorised over ``cos`` and ``c``.

    See: book/strategic/02-regret.ipynb
    """
    from scipy.special import owens_t

    cos = np.clip(check_array("cos", cos, min_size=0), -1.0, 1.0)
    c = np.asarray(c, dtype=float)
    if np.isnan(c).any():
        raise ValueError("c must not contain NaN")
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
    th = np.asarray(threshold, dtype=float)
    return (1.0 - 2.0 * eta) * disagreement(cos, th - gamma)  # eq. (1), Prop. 1


def clairvoyant_rule(w_star, gamma) -> tuple[np.ndarray, float]:
    """The clairvoyant optimal rule ``sgn(<w*, r> - gamma)`` (Corollary 1) as ``(w*, m = -gamma)``.

    See: book/strategic/01-best-responses.ipynb
    """
    gamma = check_range("gamma", gamma, 0.0, math.inf)
    return _unit("w_star", w_star), -gamma


@dataclass
class StrategicMassart:
    """The paper's instance: ``x ~ N(0, I_d)``, ``y = sgn(<w*, x>)`` with Massart flips.

    Parameters
    ----------
    d : int
        Dimension, ``>= 2``.
    gamma : float
        Largest manipulation distance (cost ``2 ||x - r|| / gamma``), ``> 0``.
    eta : float
        Massart bound, in ``[0, 1/2)``; the algorithms get it as an input.
    noise : {"uniform", "boundary"}
        ``eta(x) = eta`` (the regret then has a closed form), or
        ``eta(x) = eta exp(-|<w*, x>|)`` (feature dependent, noisiest at the boundary).
    w_star : array, optional
        True direction; default ``e_1`` (the paper's experiments).

    See: book/strategic/01-best-responses.ipynb
    """

    d: int = 2
    gamma: float = 0.2
    eta: float = 0.2
    noise: str = "uniform"
    w_star: np.ndarray | None = field(default=None)

    def __post_init__(self):
        self.d = check_int("d", self.d, 2, 1000)
        self.gamma = check_range("gamma", self.gamma, 0.0, 10.0, low_inclusive=False)
        self.eta = check_range("eta", self.eta, 0.0, 0.5, high_inclusive=False)
        self.noise = check_choice("noise", self.noise, ("uniform", "boundary"))
        if self.w_star is None:
            self.w_star = np.eye(self.d)[0]
        self.w_star = _unit("w_star", self.w_star, self.d)

    def eta_of(self, X) -> np.ndarray:
        """The flip probability ``eta(x) <= eta``."""
        X = check_array("X", X, ndim=2)
        if self.noise == "uniform":
            return np.full(X.shape[0], self.eta)
        return self.eta * np.exp(-np.abs(X @ self.w_star))

    def labels(self, X, uniforms) -> np.ndarray:
        """Noisy labels from true features and one uniform per agent (Assumption 1)."""
        X = check_array("X", X, ndim=2)
        u = check_array("uniforms", uniforms, ndim=1)
        clean = np.where(X @ self.w_star >= 0, 1.0, -1.0)  # h*(x) = sgn(<w*, x>)
        return np.where(u < self.eta_of(X), -clean, clean)  # flipped w.p. eta(x)

    def sample(self, n: int, seed: int = 0):
        """``n`` agents ``(X, y)`` from a local generator."""
        n = check_int("n", n, 0)
        rng = np.random.default_rng(check_int("seed", seed, 0))
        X = rng.standard_normal((n, self.d))
        return X, self.labels(X, rng.random(n))

    def regret(self, w, threshold) -> float:
        """Expected regret per cycle of "admit iff ``<w, r> >= threshold``" (uniform noise).

        For ``noise="boundary"`` use :meth:`regret_mc`.
        """
        if self.noise != "uniform":
            raise ValueError("regret() has a closed form for noise='uniform' only; use regret_mc()")
        w = _unit("w", w, self.d)
        return float(rule_regret(np.array([w @ self.w_star]), threshold, self.gamma, self.eta)[0])

    def regret_mc(self, w, threshold, n: int = 200_000, seed: int = 0) -> float:
        """Monte Carlo regret of a rule, through the agents' best responses (any noise)."""
        w = _unit("w", w, self.d)
        threshold = check_real("threshold", threshold)
        rng = np.random.default_rng(check_int("seed", seed, 0))
        X = rng.standard_normal((check_int("n", n, 100), self.d))
        R = best_response(X, w, -threshold, self.gamma)
        yhat = np.where(admits(R, w, -threshold), 1.0, -1.0)
        clean = np.where(X @ self.w_star >= 0, 1.0, -1.0)
        return float(np.mean((1 - 2 * self.eta_of(X)) * (yhat != clean)))
