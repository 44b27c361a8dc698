"""The results the chapter's drivers return and its figures draw: small dataclasses of arrays.

``figures.py`` imports from here and from nowhere else in the chapter: a figure takes a result,
never a setting it would have to compute from (``figures.regime_figure(regime_run(settings))``).

See: book/eos/01-three-regimes.ipynb, book/eos/02-rates-and-bifurcation.ipynb,
book/eos/03-real-network.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ManifoldRuns",
    "DriftLaw",
    "RegimeRun",
    "CriticalFit",
    "Cobweb",
    "MLPRun",
]


@dataclass
class ManifoldRuns:
    """GD runs from several starts, in the coordinates of Sec. 4 (``manifold_runs``).

    Attributes
    ----------
    eta : float
    t : ndarray of int, shape (K,)
        Recorded steps: every step up to ``dense``, then about ``n_log`` log-spaced ones.
    distance : ndarray, shape (n, K)
        ``‖θ∥_t - θ∥*‖``, distance of the projection to the flattest minimiser (the paper's
        left panels; a chord, equal to the geodesic distance to first order).
    perp : ndarray, shape (n, K)
        Signed normal coordinate ``θ⊥_t`` (centre panels plot ``|θ⊥_t|``).
    sharpness : ndarray, shape (n, K)
        ``λ(θ∥_t)`` (right panels plot ``λ(θ∥_t) - λ*``).
    residual : ndarray, shape (n, steps + 1)
        ``f(θ_t) - y`` at every step.
    lambda_star : float
    theta_star : ndarray
    diverged : ndarray of bool, shape (n,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    eta: float
    t: np.ndarray
    distance: np.ndarray
    perp: np.ndarray
    sharpness: np.ndarray
    residual: np.ndarray
    lambda_star: float
    theta_star: np.ndarray = field(repr=False)
    diverged: np.ndarray = field(repr=False)

    @property
    def gap(self) -> np.ndarray:
        """Sharpness suboptimality ``λ(θ∥_t) - λ*``."""
        return self.sharpness - self.lambda_star

    def exit_times(self) -> np.ndarray:
        """Per start, the first recorded ``τ`` with ``η λ(θ∥_t) < 2`` for every later recorded
        ``t`` (Thm 5.1); ``-1`` when the run is still unstable at its end."""
        stable = self.eta * self.sharpness < 2.0
        out = np.full(stable.shape[0], -1)
        for i, row in enumerate(stable):
            if row[-1]:
                bad = np.nonzero(~row)[0]
                out[i] = self.t[bad[-1] + 1] if bad.size else self.t[0]
        return out


@dataclass
class DriftLaw:
    """The drift along ``M`` against Thm 4.1's prediction, chord by chord (``drift_law``).

    Thm 4.1: ``θ∥_{t+1} ≈ exp_{θ∥_t}(-κ (θ⊥_t)² ∇_M λ(θ∥_t))`` with ``κ = η / (2c(η, θ∥))``.
    Over a chord of ``period`` steps the predicted step is ``-κ Σ_s (θ⊥_s)² ∇_M λ``.

    Attributes
    ----------
    t : ndarray of int
        First step of each chord.
    kappa : ndarray
        Measured ``κ_t = -<θ∥_{t+period} - θ∥_t, ∇_M λ> / (Σ_s |θ⊥_s|^power ‖∇_M λ‖²)``: constant
        if the drift is proportional to ``Σ |θ⊥|^power`` and along ``-∇_M λ``.
    cosine : ndarray
        Cosine between the chord and ``-∇_M λ(θ∥_t)`` (1: Riemannian gradient descent on λ).
    perp : ndarray
        ``θ⊥_t`` at the first step of each chord.
    period : int
        Steps per chord: 2 is one period of the oscillation (the one-step chords carry an
        ``O(θ⊥)`` term that alternates with the sign of ``θ⊥`` and cancels over a period).
    power : float
        The exponent of ``|θ⊥|`` in the law (2 in Thm 4.1).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    t: np.ndarray
    kappa: np.ndarray
    cosine: np.ndarray
    perp: np.ndarray
    period: int = 2
    power: float = 2.0

    @property
    def spread(self) -> float:
        """``max κ / min κ - 1`` over the window (0 for an exact proportionality)."""
        return float(self.kappa.max() / self.kappa.min() - 1.0)


@dataclass(frozen=True)
class RegimeRun:
    """One xy-model run and its regime (``experiments.regime_run``).

    Attributes
    ----------
    eta : float
    regime : str
        ``classify_regime``'s verdict for the run's step and start.
    run : Trajectory
        The GD run (``reference.gd``).
    lambda_min : float
        Sharpness of the flattest minimiser (2 for xy).
    envelope : ndarray, shape (steps_run + 1,)
        ``max(|r_k|, |r_{k+1}|)``, the last entry ``|r_T|``.

    See: book/eos/01-three-regimes.ipynb
    """

    eta: float
    regime: str
    run: Any = field(repr=False)
    lambda_min: float
    envelope: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class CriticalFit:
    """A critical run's distance to the flattest minimiser and sharpness gap, with power laws
    fitted on a window of steps (``experiments.critical_fit``).

    Attributes
    ----------
    model : str
        The key of ``CRITICAL_MODELS``.
    eta : float
        The run's step.
    k, distance, excess : ndarray
        Steps ``1 .. T``, ``‖w_k − w_flat‖`` and ``λ_k − λ_min``.
    window : (float, float)
        The fit's steps ``(low, high)``.
    distance_fit, excess_fit : (float, float)
        ``(exponent p, prefactor c)`` of ``c k^(-p)``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    model: str
    eta: float
    k: np.ndarray = field(repr=False)
    distance: np.ndarray = field(repr=False)
    excess: np.ndarray = field(repr=False)
    window: tuple[float, float]
    distance_fit: tuple[float, float]
    excess_fit: tuple[float, float]


@dataclass(frozen=True)
class Cobweb:
    """The balanced xy map on a grid and one orbit of it (``experiments.cobweb``).

    Attributes
    ----------
    eta : float
    a, image, second : ndarray
        Grid points ``a``, ``F(a)`` and ``F(F(a))``.
    path_x, path_y : ndarray
        The cobweb's corners.
    multiplier : float
        ``F'(1) = 1 − 2η``.
    state : str
        What attracts: a fixed point, a 2-cycle, or neither.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    eta: float
    a: np.ndarray = field(repr=False)
    image: np.ndarray = field(repr=False)
    second: np.ndarray = field(repr=False)
    path_x: np.ndarray = field(repr=False)
    path_y: np.ndarray = field(repr=False)
    multiplier: float
    state: str


@dataclass
class MLPRun:
    """History of ``mlp_digits_gd``.

    Attributes
    ----------
    loss : ndarray, shape (steps_run + 1,)
        Full-batch MSE loss ``1/(2n) sum_i ||f(x_i) - y_i||^2``.
    sharpness : ndarray
        Top Hessian eigenvalue of the loss (HVP power iteration) at ``sharpness_steps``.
    sharpness_steps : ndarray of int
    accuracy : float
        Final training accuracy.
    diverged : bool
    eta : float
    n_params : int

    See: book/eos/03-real-network.ipynb
    """

    loss: np.ndarray
    sharpness: np.ndarray
    sharpness_steps: np.ndarray
    accuracy: float
    diverged: bool
    eta: float
    n_params: int
