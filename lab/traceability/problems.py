"""The paper's hard problem ``P_{k,p}`` (eq. (7)), its sparse data ``D_{µ,k}`` (Def. 4.1), the beta
prior, the fingerprinting tracer (Lemma 4.2, Sec. 5), learners on the box Θ = B_∞(d^(-1/p)),
and the theorem formulas (Thms 2.5-2.8, Thm A.1, Prop A.5).

See: book/traceability/02-dp-and-tradeoff.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_int, check_positive, check_range, check_real

__all__ = [
    "PRIOR_CONSTANT",
    "SparseInstance",
    "SparseProblem",
    "paper_sparsity",
    "prior_scale",
    "sparse_instance",
    "draw_sparse",
    "fingerprint_scores",
    "box_radius",
    "excess_risk_box",
    "erm_box",
    "noisy_erm_box",
    "clipped_mean_box",
    "dp_erm_box",
    "constant_box",
    "alpha_range",
    "dp_lower_bound",
    "minimax_rate",
    "conjectured_dp_rate",
]


def _check_p(p) -> float:
    return check_range("p", p, 1.0, math.inf, low_inclusive=False, high_inclusive=False)


def _check_alpha(alpha) -> float:
    return check_range("alpha", alpha, 0.0, 1.0, low_inclusive=False)


def paper_sparsity(d: int, alpha: float, p: float) -> int:
    """The sparsity k of Thm 5.1: ``k = d`` for p ≤ 2 and ``k = (6α)^p d ∨ 1`` for p ≥ 2.

    Rounded to the nearest integer and clipped to ``[1, d]``.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    d = check_int("d", d, 1)
    alpha = check_range("alpha", alpha, 0.0, 1 / 6, low_inclusive=False)
    p = _check_p(p)
    if p <= 2:
        return d
    return int(min(d, max(1, round((6 * alpha) ** p * d))))


#: our constant in β = c α^(-2) (k/d)^(1/p) (the paper's is not given; see prior_scale)
PRIOR_CONSTANT = 1 / 16


def prior_scale(d: int, k: int, alpha: float, p: float) -> float:
    """β = c α^(-2) (k/d)^(1/p), at least 1 (Sec. 5), with c = :data:`PRIOR_CONSTANT` = 1/16.

    The paper fixes only the proportionality; its proof needs β small enough that accuracy α
    is not trivial (E d^(-1/p) ``‖µ‖₁`` > k^(1/q) α). With c = 1/16 the trivial excess risk (of
    θ̂ = 0), ``(k/d)^(1/p) E|X|``, is about 2α for k = d and for k = (6α)^p d.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    d = check_int("d", d, 1)
    k = check_int("k", k, 1, d)
    alpha = _check_alpha(alpha)
    p = _check_p(p)
    return _prior_scale(d, k, alpha, p)


def _prior_scale(d: int, k: int, alpha: float, p: float) -> float:
    return max(1.0, PRIOR_CONSTANT * alpha**-2 * (k / d) ** (1 / p))


@dataclass(frozen=True)
class SparseInstance:
    """One draw of the hard problem ``P_{k,p}``: the mean µ from the prior and n training rows.

    Attributes: ``Z`` (n, d) in {0, ±1} with k non-zeros per row; ``mu`` (d,) in
    [−k/d, k/d]; ``beta``, ``k``, ``p``, ``alpha``, ``d``, ``seed``.
    """

    Z: np.ndarray
    mu: np.ndarray
    beta: float
    k: int
    p: float
    alpha: float
    d: int
    seed: int

    def fresh(self, m: int, seed: int = 1) -> np.ndarray:
        """``m`` new rows from the same ``D_{µ,k}`` (reference or fresh data for the tracer)."""
        m = check_int("m", m, 1)
        seed = check_int("seed", seed, 0)
        return self._fresh(m, seed)

    def _fresh(self, m: int, seed: int) -> np.ndarray:
        return _draw_sparse(self.mu, self.k, m, np.random.default_rng([self.seed, 7919, seed]))

    # the instance's arrays were validated when it was drawn: these run unchecked
    def scores(self, theta: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """:func:`fingerprint_scores` of the rows ``Z`` against ``theta`` on this instance."""
        return _fingerprint_scores(theta, Z, self.mu, self.k, self.p)

    def excess(self, theta: np.ndarray) -> float:
        """:func:`excess_risk_box` of ``theta`` on this instance."""
        return _excess_risk_box(theta, self.mu, self.k, self.p)

    def fit(self, kind: str, level: float, seed: int) -> np.ndarray:
        """A learner of the box on ``Z``, its level checked by the caller's settings:
        ``"noisy"`` (noise σ = ``level``; 0 is ERM), ``"clipped"`` (scale ``level``), ``"dp"``
        (ε = ``level``, δ = 1/n²) or ``"constant"`` (θ̂ = 0)."""
        if kind == "noisy":
            return _box(self.Z, self.p, level, seed)
        if kind == "clipped":
            return _clipped(self.Z, self.p, level)
        if kind == "dp":
            return _dp(self.Z, self.k, level, 1 / self.Z.shape[0] ** 2, self.p, seed)
        if kind == "constant":
            return np.zeros(self.d)
        raise ValueError(f"kind must be one of noisy, clipped, dp, constant; got {kind!r}")


def draw_sparse(mu, k: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """m rows of ``D_{µ,k}`` (Def. 4.1): support J uniform among k-subsets, z_j = ±1 with mean
    (d/k) µ_j on J, 0 elsewhere.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    mu = check_array("mu", mu, ndim=1)
    d = mu.size
    k = check_int("k", k, 1, d)
    m = check_int("m", m, 1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if np.any(np.abs(mu) > k / d + 1e-12):
        raise ValueError(f"mu must lie in [-k/d, k/d] = [-{k / d:g}, {k / d:g}]")
    return _draw_sparse(mu, k, m, rng)


def _draw_sparse(mu: np.ndarray, k: int, m: int, rng: np.random.Generator) -> np.ndarray:
    # D_{µ,k} of Definition 4.1 (the data of eq. traceability-eq-7)
    d = mu.size
    if k == d:
        J = np.broadcast_to(np.arange(d), (m, d))
    else:
        J = np.argpartition(rng.random((m, d)), k - 1, axis=1)[:, :k]  # (i) J ~ unif(k-subsets)
    x = (d / k) * mu[J]  # (ii) mean (d/k) µ_j on the support
    signs = np.where(rng.random(J.shape) < (1 + x) / 2, 1.0, -1.0)
    Z = np.zeros((m, d))
    np.put_along_axis(Z, np.asarray(J), signs, axis=1)  # (iii) zero off the support
    return Z


@dataclass(frozen=True)
class SparseProblem:
    """The hard problem ``P_{k,p}`` (eq. (7)) at one size, validated once: ``n`` rows (≥ 1) in
    dimension ``d`` (≥ 1), ``k`` non-zeros per row (``1 ≤ k ≤ d``), target accuracy ``alpha``
    in (0, 1] (sets β = :func:`prior_scale`), geometry ``p`` > 1. :meth:`draw` gives one
    instance per seed.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """

    n: int
    d: int
    k: int
    alpha: float
    p: float

    def __post_init__(self):
        check_int("n", self.n, 1)
        check_int("d", self.d, 1)
        check_int("k", self.k, 1, self.d)
        object.__setattr__(self, "alpha", _check_alpha(self.alpha))
        object.__setattr__(self, "p", _check_p(self.p))

    def draw(self, seed: int = 0) -> SparseInstance:
        """Draw µ from the prior ``s-beta_[−k/d, k/d](β, β)^{⊗d}`` and n rows of ``D_{µ,k}``."""
        return self._draw(check_int("seed", seed, 0))

    def _draw(self, seed: int) -> SparseInstance:
        n, d, k, alpha, p = self.n, self.d, self.k, self.alpha, self.p
        beta = _prior_scale(d, k, alpha, p)
        rng = np.random.default_rng([seed, 104729])
        mu = (k / d) * (2 * rng.beta(beta, beta, size=d) - 1)  # s-beta on [−k/d, k/d]
        Z = _draw_sparse(mu, k, n, rng)
        return SparseInstance(Z, mu, float(beta), k, float(p), float(alpha), d, seed)


def sparse_instance(
    n: int, d: int, k: int, alpha: float, p: float, seed: int = 0
) -> SparseInstance:
    """Draw µ from the prior ``s-beta_[−k/d, k/d](β, β)^{⊗d}`` and n rows of ``D_{µ,k}`` (``P_{k,p}``, eq. (7)).

    Parameters
    ----------
    n, d : int
        Sample size (≥ 1) and dimension (≥ 1).
    k : int
        Non-zeros per row, ``1 ≤ k ≤ d`` (:func:`paper_sparsity` gives the paper's choice).
    alpha : float in (0, 1]
        Target accuracy; sets β = :func:`prior_scale` ``(d, k, alpha, p)``.
    p : float > 1
        The ℓp geometry (Θ = B_∞(d^(−1/p)), loss −k^(−1/q) ⟨θ, z⟩).
    seed : int ≥ 0

    Returns
    -------
    SparseInstance
        ``Z`` (n, d) in {0, ±1} with exactly k non-zeros per row, ``mu`` (d,), ``beta``.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    return SparseProblem(n, d, k, alpha, p).draw(seed)


def fingerprint_scores(theta, Z, mu, k: int, p: float) -> np.ndarray:
    """The tracer's score ϕ(θ, Z_i) = c d^(1/p)/√k ⟨θ, Z_i − (d/k) µ_supp(Z_i)⟩, one per row (Sec. 5).

    We take c = 1: the paper's universal constant only makes the process 1-subgaussian, and a
    tracer's decision (a threshold calibrated on fresh data) does not depend on it. Without the
    factor c d^(1/p)/√k this is ϕ_µ of Lemma 4.2.

    Parameters
    ----------
    theta : array (d,)
    Z : array (m, d), rows in {0, ±1}^d with k non-zeros
    mu : array (d,), the mean (known to the tracer)
    k : int, ``1 ≤ k ≤ d``
    p : float > 1

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    theta = check_array("theta", theta, ndim=1)
    Z = check_array("Z", Z, ndim=2)
    mu = check_array("mu", mu, ndim=1)
    d = theta.size
    if Z.shape[1] != d or mu.size != d:
        raise ValueError(
            f"theta, Z and mu must share the dimension d; got {d}, {Z.shape[1]}, {mu.size}"
        )
    k = check_int("k", k, 1, d)
    p = _check_p(p)
    return _fingerprint_scores(theta, Z, mu, k, p)


def _fingerprint_scores(theta, Z, mu, k: int, p: float) -> np.ndarray:
    d = theta.size
    centred = Z - (d / k) * mu * (Z != 0)  # Z − (d/k) µ_supp(Z): ϕ_µ, eq. traceability-lemma-4-2
    return d ** (1 / p) / math.sqrt(k) * (centred @ theta)  # eq. traceability-score, c = 1


# ----------------------------------------------------------------------------------------
# Learners on Θ = B_∞(d^(-1/p)) and the excess risk
# ----------------------------------------------------------------------------------------
def box_radius(d: int, p: float) -> float:
    """d^(−1/p): Θ = B_∞(d^(−1/p)) is the largest ℓ∞ ball inside the unit ℓp ball (eq. (7))."""
    return check_int("d", d, 1) ** (-1 / _check_p(p))


def excess_risk_box(theta, mu, k: int, p: float) -> float:
    """F(θ) − min_Θ F with F(θ) = −k^(−1/q) ⟨θ, µ⟩: ``k^(−1/q) (d^(−1/p) ‖µ‖₁ − ⟨θ, µ⟩)``.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    theta = check_array("theta", theta, ndim=1)
    mu = check_array("mu", mu, ndim=1)
    if theta.size != mu.size:
        raise ValueError(f"theta and mu must have the same length, got {theta.size}, {mu.size}")
    k = check_int("k", k, 1, mu.size)
    p = _check_p(p)
    return _excess_risk_box(theta, mu, k, p)


def _excess_risk_box(theta, mu, k: int, p: float) -> float:
    q = p / (p - 1)
    return float(k ** (-1 / q) * (mu.size ** (-1 / p) * np.abs(mu).sum() - theta @ mu))


def erm_box(Z, p: float) -> np.ndarray:
    """ERM on ``P_{k,p}``: the loss is linear, so θ̂ = d^(−1/p) sign(z̄) (ties at 0).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    return _box(Z, _check_p(p), 0.0, 0)


def _box(Z: np.ndarray, p: float, sigma: float, seed: int) -> np.ndarray:
    """θ̂ = d^(−1/p) sign(z̄ + σ g): ERM for σ = 0, noisy ERM otherwise (unchecked)."""
    d = Z.shape[1]
    if sigma == 0:
        return d ** (-1 / p) * np.sign(Z.mean(axis=0))
    g = np.random.default_rng([seed, 31337]).standard_normal(d)
    return d ** (-1 / p) * np.sign(Z.mean(axis=0) + sigma * g)


def noisy_erm_box(Z, sigma: float, p: float, seed: int = 0) -> np.ndarray:
    """θ̂ = d^(−1/p) sign(z̄ + σ g), g ~ N(0, I): noise σ trades accuracy for less correlation.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    g = np.random.default_rng([seed, 31337]).standard_normal(Z.shape[1])
    return box_radius(Z.shape[1], p) * np.sign(Z.mean(axis=0) + sigma * g)


def clipped_mean_box(Z, p: float, scale: float = 3.0) -> np.ndarray:
    """θ̂ = d^(−1/p) clip(scale √n z̄, −1, 1): a learner that is not a vertex of the box.

    Coordinates whose mean exceeds ``1/(scale √n)`` in size (``scale`` > 0 standard errors of
    one sign) saturate as in ERM; the others stay proportional to z̄. Another α-learner than
    ERM when ``scale`` is a few units.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    return _clipped(Z, _check_p(p), check_positive("scale", scale))


def _clipped(Z: np.ndarray, p: float, scale: float) -> np.ndarray:
    n, d = Z.shape
    return d ** (-1 / p) * np.clip(scale * math.sqrt(n) * Z.mean(axis=0), -1.0, 1.0)


def dp_erm_box(Z, k: int, eps: float, delta: float, p: float, seed: int = 0) -> np.ndarray:
    """(ε, δ)-DP learner: the Gaussian mechanism on z̄, then the sign map (post-processing).

    Replacing one row moves z̄ by at most ``2√k/n`` in ℓ2 (‖z‖₂ = √k); the noise is the
    analytic calibration of :func:`lab.traceability.gaussian_sigma` (which checks ε and δ).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    k = check_int("k", k, 1, Z.shape[1])
    return _dp(Z, k, eps, delta, _check_p(p), check_int("seed", seed, 0))


def _dp(Z: np.ndarray, k: int, eps: float, delta: float, p: float, seed: int) -> np.ndarray:
    from lab.traceability.reference import gaussian_sigma

    n, d = Z.shape
    s = gaussian_sigma(2 * math.sqrt(k) / n, eps, delta)
    g = np.random.default_rng([seed, 2718]).standard_normal(d)
    return d ** (-1 / p) * np.sign(Z.mean(axis=0) + s * g)


def constant_box(Z, p: float) -> np.ndarray:
    """The learner that ignores its data: θ̂ = 0 (perfectly private, excess risk trivial)."""
    Z = check_array("Z", Z, ndim=2, min_size=1)
    _check_p(p)
    return np.zeros(Z.shape[1])


# ----------------------------------------------------------------------------------------
# Theorem formulas
# ----------------------------------------------------------------------------------------
def alpha_range(n: int, d: int, p: float, xi: float, c: float = 1.0) -> tuple[float, float]:
    """The range of α in which Thms 2.5 (p ≤ 2) and 2.7 (p ≥ 2) guarantee tracing.

    p ≤ 2: ``c/√n ≤ α ≤ min(c √d / (n √log(1/ξ)), 1/6)``;
    p ≥ 2: ``(1/6) min(n^(−1/p), d^(1/2−1/p)/√n) ≤ α ≤ min(c (d/(n² log(1/ξ)))^(1/p), 1/6)``.
    The universal constant c is not given in the paper; ``c`` exposes it (default 1).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    p = _check_p(p)
    xi = check_range("xi", xi, 0.0, 1 / math.e, low_inclusive=False, high_inclusive=False)
    c = check_positive("c", c)
    L = math.log(1 / xi)
    if p <= 2:
        return c / math.sqrt(n), min(c * math.sqrt(d) / (n * math.sqrt(L)), 1 / 6)
    lo = min(n ** (-1 / p), d ** (0.5 - 1 / p) / math.sqrt(n)) / 6
    return lo, min(c * (d / (n**2 * L)) ** (1 / p), 1 / 6)


def dp_lower_bound(n, d, p: float, eps: float, c: float = 1.0):
    """Thm 2.8 (p ≥ 2, ε ≤ 1): ``α ≥ c min((d/(ε² n²))^(1/p), d^(1−1/p)/(ε n), 1)``.

    ``n`` and ``d`` may be arrays (broadcast). See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    p = check_range("p", p, 2.0, math.inf, high_inclusive=False)
    eps = check_range("eps", eps, 0.0, 1.0, low_inclusive=False)
    c = check_positive("c", c)
    n = check_array("n", n)
    d = check_array("d", d)
    if np.any(n < 1) or np.any(d < 1):
        raise ValueError("n and d must be >= 1")
    out = np.minimum(np.minimum((d / (eps * n) ** 2) ** (1 / p), d ** (1 - 1 / p) / (eps * n)), 1.0)
    return c * out


def minimax_rate(n, d, p: float):
    """Non-private minimax excess risk for 2 ≤ p < ∞ (Thm A.1): ``d^(1/2−1/p)/√n ∧ n^(−1/p)``."""
    p = check_range("p", p, 2.0, math.inf, high_inclusive=False)
    n = check_array("n", n)
    d = check_array("d", d)
    return np.minimum(d ** (0.5 - 1 / p) / np.sqrt(n), n ** (-1 / p))


def conjectured_dp_rate(n, d, p: float, eps: float):
    """The paper's conjectured optimal DP-SCO rate for p > 2 (Sec. "Limitations"):
    ``minimax_rate + min(d^(1−1/p)/(n ε), (d/(ε² n²))^(1/p))``."""
    eps = check_real("eps", eps)
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    stat = minimax_rate(n, d, p)
    n = np.asarray(n, float)
    d = np.asarray(d, float)
    return stat + np.minimum(d ** (1 - 1 / p) / (n * eps), (d / (eps * n) ** 2) ** (1 / p))
