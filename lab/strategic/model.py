"""The paper's instance: agents ``x ~ N(0, I_d)`` with Massart labels (the equations it uses,
Lemma 1's best response and the exact regret, are in :mod:`lab.strategic.reference`).

Features ``x ~ N(0, I_d)`` (an isotropic log-concave law, so Assumption 2 holds), labels
``y = sgn(<w*, x>)`` flipped with probability ``eta(x) <= eta < 1/2`` (Assumption 1, no offset),
agents who pay ``2 ||x - r|| / gamma`` to report ``r`` (so they move at most ``gamma``), posted
rules ``h(r) = sgn(<w, r> + m)``. Here a rule is written by its direction ``w`` and threshold
``theta = -m``: "admit iff ``<w, r> >= theta``".

See: book/strategic/01-best-responses.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_range, check_real
from lab.strategic.reference import admits, best_response, rule_regret, unit_vector

__all__ = ["StrategicMassart"]


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
        self.w_star = unit_vector("w_star", self.w_star, self.d)

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
        w = unit_vector("w", w, self.d)
        return float(rule_regret(np.array([w @ self.w_star]), threshold, self.gamma, self.eta)[0])

    def regret_mc(self, w, threshold, n: int = 200_000, seed: int = 0) -> float:
        """Monte Carlo regret of a rule, through the agents' best responses (any noise)."""
        w = unit_vector("w", w, self.d)
        threshold = check_real("threshold", threshold)
        rng = np.random.default_rng(check_int("seed", seed, 0))
        X = rng.standard_normal((check_int("n", n, 100), self.d))
        R = best_response(X, w, -threshold, self.gamma)
        yhat = np.where(admits(R, w, -threshold), 1.0, -1.0)
        clean = np.where(X @ self.w_star >= 0, 1.0, -1.0)
        return float(np.mean((1 - 2 * self.eta_of(X)) * (yhat != clean)))
