"""Reference kernels (numpy) of the traceability chapter: the dense fingerprinting lemma and
the ℓ2 instance of Bassily, Smith & Thakurta / Dwork et al., kept as the paper's own
counterexample (App. B.1), with its learners, the DP Gaussian mechanism and the tracer.

Equation numbers ``(1)``-``(8)`` refer to the list in :mod:`lab.traceability`.

See: book/traceability/01-tracing-attack.ipynb
"""

from __future__ import annotations

import math

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "ESTIMATORS",
    "fingerprint_terms",
    "l2_hard_instance",
    "dual_map",
    "erm_l2",
    "noisy_erm_l2",
    "erm_lp",
    "noisy_erm_lp",
    "gaussian_sigma",
    "dp_gaussian_l2",
    "excess_risk_linear",
    "tracer_scores",
    "calibrate_threshold",
    "trace",
    "dp_trace_bound",
    "binomial_interval",
]

ESTIMATORS = ("mean", "noisy mean", "median", "constant")


# ----------------------------------------------------------------------------------------
# The fingerprinting lemma
# ----------------------------------------------------------------------------------------
def fingerprint_terms(
    estimator: str = "mean",
    n: int = 50,
    trials: int = 100_000,
    seed: int = 0,
    noise: float = 0.3,
) -> dict:
    """Monte Carlo estimate of the two sides of the fingerprinting lemma, eqs. (1)-(2).

    Parameters
    ----------
    estimator : {"mean", "noisy mean", "median", "constant"}
        f(X): the sample mean, the mean plus N(0, noise²) clipped to [−1, 1], the sample
        median of the ±1 coins (0 on ties), or the constant 0.
    n : int
        Number of coins (≥ 1).
    trials : int
        Number of independent draws of p (≥ 100).
    seed : int
        Seed of the numpy generator.
    noise : float
        Standard deviation of the noise of ``"noisy mean"`` (≥ 0).

    Returns
    -------
    dict
        ``corr`` = E[f Σ(x_i − p)], ``acc`` = 2 E|f − p|, ``identity`` = E[2pf], ``total`` =
        corr + acc, and the standard errors ``corr_se``, ``acc_se``, ``total_se``, ``diff_se``
        (of corr − identity).

    See: book/traceability/01-tracing-attack.ipynb
    """
    check_choice("estimator", estimator, ESTIMATORS)
    n = check_int("n", n, 1)
    trials = check_int("trials", trials, 100)
    seed = check_int("seed", seed, 0)
    noise = check_positive("noise", noise, allow_zero=True)
    rng = np.random.default_rng(seed)
    p = rng.uniform(-1.0, 1.0, size=trials)
    k = rng.binomial(n, (1.0 + p) / 2.0)  # number of +1 coins
    s = 2.0 * k - n  # Σ x_i
    if estimator == "mean":
        f = s / n
    elif estimator == "noisy mean":
        f = np.clip(s / n + noise * rng.standard_normal(trials), -1.0, 1.0)
    elif estimator == "median":
        f = np.sign(s)
    else:
        f = np.zeros(trials)
    corr_i = f * (s - n * p)  # eq. (1) left: f(X) Σ (x_i − p)
    ident_i = 2.0 * p * f  # eq. (1) right: 2 p f(X)
    acc_i = 2.0 * np.abs(f - p)  # eq. (2): accuracy term
    tot_i = corr_i + acc_i
    sq = math.sqrt(trials)
    return {
        "corr": float(corr_i.mean()),
        "acc": float(acc_i.mean()),
        "identity": float(ident_i.mean()),
        "total": float(tot_i.mean()),
        "corr_se": float(corr_i.std() / sq),
        "acc_se": float(acc_i.std() / sq),
        "total_se": float(tot_i.std() / sq),
        "diff_se": float((corr_i - ident_i).std() / sq),
    }


# ----------------------------------------------------------------------------------------
# The ℓ2 hard instance and the learners
# ----------------------------------------------------------------------------------------
def l2_hard_instance(n: int, d: int, seed: int = 0, n_ref: int = 1000, n_fresh: int = 1000):
    """The ℓ2 fingerprinting SCO instance: z ∈ {±1/√d}^d, E z = μ/√d, μ ∼ Unif[−1, 1]^d.

    Parameters
    ----------
    n, d : int
        Training-set size (≥ 2) and dimension (≥ 1).
    seed : int
        Seed of the numpy generator (μ and all samples).
    n_ref : int
        Reference samples from the same distribution, given to the tracer (≥ 20).
    n_fresh : int
        Further fresh samples, used only to measure the false-positive rate (≥ 1).

    Returns
    -------
    dict
        ``Z`` (n, d), ``Z_ref`` (n_ref, d), ``Z_fresh`` (n_fresh, d), ``mu`` (d,), ``d``.

    See: book/traceability/01-tracing-attack.ipynb
    """
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    seed = check_int("seed", seed, 0)
    n_ref = check_int("n_ref", n_ref, 20)
    n_fresh = check_int("n_fresh", n_fresh, 1)
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-1.0, 1.0, size=d)
    prob = (1.0 + mu) / 2.0  # P[z_j = +1/√d]
    scale = 1.0 / math.sqrt(d)

    def draw(m):
        return np.where(rng.random((m, d)) < prob, scale, -scale)

    return {"Z": draw(n), "Z_ref": draw(n_ref), "Z_fresh": draw(n_fresh), "mu": mu, "d": d}


def check_p(p: float) -> float:
    """``p`` of the ℓp geometry, validated to (1, 10]."""
    return check_range("p", p, 1.0, 10.0, low_inclusive=False)


def dual_map(v, p: float = 2.0) -> np.ndarray:
    """The maximiser of ⟨w, v⟩ over the unit ℓp ball, eq. (4) (p in (1, 10]).

    Accepts a vector (d,) or a batch (..., d). See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    v = check_array("v", v, ndim=(1, 2, 3), min_size=1)
    return _dual_map(v, check_p(p))


def _dual_map(v: np.ndarray, p: float) -> np.ndarray:
    q = p / (p - 1.0)
    a = np.abs(v)
    amax = a.max(axis=-1, keepdims=True)
    amax = np.where(amax > 0, amax, 1.0)
    r = a / amax  # rescale before the power to avoid overflow
    num = np.sign(v) * r ** (q - 1.0)
    nq = np.sum(r**q, axis=-1, keepdims=True) ** (1.0 / q)
    nq = np.where(nq > 0, nq, 1.0)
    return num / nq ** (q - 1.0)  # eq. (4): sign(v)|v|^{q−1} / ‖v‖_q^{q−1}


def _noisy_mean(Z: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    d = Z.shape[1]
    zbar = Z.mean(axis=0)
    if sigma == 0:
        return zbar
    g = np.random.default_rng(seed).standard_normal(d)
    return zbar + (sigma / math.sqrt(d)) * g  # v = z̄ + (σ/√d) g


def erm_lp(Z, p: float = 2.0) -> np.ndarray:
    """ERM of the linear loss −⟨w, z⟩ over the unit ℓp ball: the dual map of z̄, eq. (4).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    return _dual_map(Z.mean(axis=0), check_p(p))


def noisy_erm_lp(Z, sigma: float, p: float = 2.0, seed: int = 0) -> np.ndarray:
    """Noisy ERM over the ℓp ball: the dual map of z̄ + (σ/√d) g, g ∼ N(0, I_d).

    ``sigma`` is the expected noise norm (≥ 0; 0 gives ERM).
    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    return _dual_map(_noisy_mean(Z, sigma, seed), check_p(p))


def erm_l2(Z) -> np.ndarray:
    """ERM on the ℓ2 instance: ŵ = z̄/‖z̄‖₂ (the minimiser of the empirical linear loss).

    Parameters
    ----------
    Z : array (n, d)
        Training samples.

    Returns
    -------
    ndarray (d,)

    See: book/traceability/01-tracing-attack.ipynb
    """
    return erm_lp(Z, 2.0)


def noisy_erm_l2(Z, sigma: float, seed: int = 0) -> np.ndarray:
    """Noisy ERM on the ℓ2 instance: ŵ = v/‖v‖₂, v = z̄ + (σ/√d) g, g ∼ N(0, I_d).

    Parameters
    ----------
    Z : array (n, d)
        Training samples.
    sigma : float
        Noise norm (≥ 0; ‖(σ/√d) g‖ ≈ σ). 0 gives ERM.
    seed : int
        Seed of the noise.

    See: book/traceability/01-tracing-attack.ipynb
    """
    return noisy_erm_lp(Z, sigma, 2.0, seed)


def gaussian_sigma(sensitivity: float, eps: float, delta: float, method: str = "analytic") -> float:
    """Per-coordinate noise standard deviation of the (ε, δ)-DP Gaussian mechanism.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ (> 0).
    eps : float
        ε > 0 (the classic formula needs ε < 1 to be a proof; it is returned anyway).
    delta : float
        δ in (0, 1).
    method : {"analytic", "classic"}
        ``"classic"``: eq. (5), s = √(2 ln(1.25/δ)) Δ/ε. ``"analytic"``: the smallest s
        satisfying eq. (6) (Balle & Wang 2018), found by bisection; exact for every ε.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    eps = check_positive("eps", eps)
    delta = check_range("delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    check_choice("method", method, ("analytic", "classic"))
    if method == "classic":
        return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / eps  # eq. (5)
    return sensitivity * _analytic_unit_sigma(eps, delta)


def _privacy_profile(s: float, eps: float) -> float:
    """δ(ε) of the Gaussian mechanism with Δ = 1 and noise std s, eq. (6)."""
    from scipy.special import ndtr

    a, b = 1.0 / (2.0 * s), eps * s
    return float(ndtr(a - b) - math.exp(eps) * ndtr(-a - b))


def _analytic_unit_sigma(eps: float, delta: float) -> float:
    lo, hi = 1e-6, 1.0
    while _privacy_profile(hi, eps) > delta:  # δ(s) decreases in s
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _privacy_profile(mid, eps) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def dp_gaussian_l2(
    Z, eps: float, delta: float = 1e-5, seed: int = 0, method: str = "analytic"
) -> np.ndarray:
    """(ε, δ)-DP learner on the ℓ2 instance: Gaussian mechanism on z̄, then ŵ = v/‖v‖₂.

    The ℓ2 sensitivity of z̄ under replacement of one sample is Δ = 2/n (each ‖z‖₂ = 1);
    the normalisation is post-processing. Equivalent to :func:`noisy_erm_l2` with
    σ = √d · s, s = :func:`gaussian_sigma` (2/n, ε, δ).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    n, d = Z.shape
    seed = check_int("seed", seed, 0)
    s = gaussian_sigma(2.0 / n, eps, delta, method)
    return _dual_map(_noisy_mean(Z, math.sqrt(d) * s, seed), 2.0)


def excess_risk_linear(w, mu, d: int, p: float = 2.0) -> float:
    """Excess population risk of ŵ on the linear instance, eq. (3): (‖μ‖_q − ⟨w, μ⟩)/√d.

    Parameters
    ----------
    w : array (d,)
        A point of the unit ℓp ball (checked to 1e-9).
    mu : array (d,)
        The instance's mean parameter (√d · E z).
    d : int
        Dimension (must match ``w`` and ``mu``).
    p : float
        Geometry of the ball (default 2).

    See: book/traceability/01-tracing-attack.ipynb
    """
    d = check_int("d", d, 1)
    w = check_array("w", w, shape=(d,))
    mu = check_array("mu", mu, shape=(d,))
    p = check_p(p)
    q = p / (p - 1.0)
    norm_p = float(np.sum(np.abs(w) ** p) ** (1.0 / p))
    if norm_p > 1.0 + 1e-9:
        raise ValueError(f"w must lie in the unit l{p:g} ball (got norm {norm_p:.6g})")
    mu_q = float(np.sum(np.abs(mu) ** q) ** (1.0 / q))
    return (mu_q - float(w @ mu)) / math.sqrt(d)  # eq. (3)


# ----------------------------------------------------------------------------------------
# The tracer
# ----------------------------------------------------------------------------------------
def tracer_scores(w, Z, center) -> np.ndarray:
    """Fingerprinting scores s(z) = ⟨ŵ, z − m̂⟩ for each row of ``Z``, eq. (7).

    See: book/traceability/01-tracing-attack.ipynb
    """
    w = check_array("w", w, ndim=1, min_size=1)
    Z = check_array("Z", Z, shape=(None, w.shape[0]))
    center = check_array("center", center, shape=(w.shape[0],))
    return _scores(w, Z, center)


def _scores(w: np.ndarray, Z: np.ndarray, center: np.ndarray) -> np.ndarray:
    return (Z - center) @ w  # eq. (7): s(z) = ⟨ŵ, z − m̂⟩


def calibrate_threshold(ref_scores, xi: float) -> float:
    """The (1 − ξ) quantile of scores of fresh reference samples (linear interpolation).

    See: book/traceability/01-tracing-attack.ipynb
    """
    ref_scores = check_array("ref_scores", ref_scores, ndim=1, min_size=2)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    return float(np.quantile(ref_scores, 1.0 - xi))


def centre_rows(n_ref: int) -> int:
    """How many of ``n_ref`` reference rows estimate the centre in :func:`trace` (the rest
    calibrate the threshold)."""
    return n_ref // 2


def trace(w, Z_train, Z_ref, xi: float, center=None) -> np.ndarray:
    """The fingerprinting tracer: which rows of ``Z_train`` it flags IN, eq. (7).

    Parameters
    ----------
    w : array (d,)
        The released model ŵ.
    Z_train : array (m, d)
        Candidate records (training samples, or fresh ones to measure false positives).
    Z_ref : array (R, d)
        Fresh reference samples (R ≥ 4), never the training set. Without ``center`` the first
        ⌊R/2⌋ estimate the centre m̂ and the rest calibrate the threshold, so that no reference
        point scores against a centre it helped to build.
    xi : float
        Target false-positive rate, in (0, 1).
    center : array (d,), optional
        A known centre (e.g. the oracle μ/√d); then all of ``Z_ref`` calibrates.

    Returns
    -------
    ndarray of bool, shape (m,)

    See: book/traceability/01-tracing-attack.ipynb
    """
    w = check_array("w", w, ndim=1, min_size=1)
    d = w.shape[0]
    Z_train = check_array("Z_train", Z_train, shape=(None, d))
    Z_ref = check_array("Z_ref", Z_ref, shape=(None, d))
    if Z_ref.shape[0] < 4:
        raise ValueError(f"Z_ref must have at least 4 rows (got {Z_ref.shape[0]})")
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    if center is not None:
        center = check_array("center", center, shape=(d,))
    return _trace(w, Z_train, Z_ref, xi, center)


def _trace(w, Z_train, Z_ref, xi: float, center=None) -> np.ndarray:
    if center is None:
        h = centre_rows(Z_ref.shape[0])
        center, calib = Z_ref[:h].mean(axis=0), Z_ref[h:]  # m̂ from one half
    else:
        calib = Z_ref
    # soundness (eq. traceability-def-2-4): τ is the (1 − ξ) quantile of reference scores
    tau = float(np.quantile(_scores(w, calib, center), 1.0 - xi))
    return _scores(w, Z_train, center) > tau  # eq. (7): IN iff s(z) > τ


def binomial_interval(k: int, m: int, z: float = 2.576) -> tuple[float, float]:
    """Wilson score interval for a proportion k/m (default 99%).

    See: book/traceability/01-tracing-attack.ipynb
    """
    m = check_int("m", m, 1)
    k = check_int("k", k, 0, m)
    z = check_positive("z", z)
    ph = k / m
    den = 1.0 + z * z / m
    c = (ph + z * z / (2 * m)) / den
    half = z * math.sqrt(ph * (1 - ph) / m + z * z / (4 * m * m)) / den
    return max(0.0, c - half), min(1.0, c + half)


def dp_trace_bound(eps: float, delta: float, xi: float) -> float:
    """The DP ceiling on the probability that a training sample is traced, eq. (8).

    min(1, e^ε ξ + δ) for an (ε, δ)-DP learner and a tracer of false-positive rate ξ.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    eps = check_positive("eps", eps, allow_zero=True)
    delta = check_range("delta", delta, 0.0, 1.0, high_inclusive=False)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    return min(1.0, math.exp(eps) * xi + delta)
