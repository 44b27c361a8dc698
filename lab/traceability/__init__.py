r"""
# Traceability in ℓp stochastic convex optimisation

Voitovych, Haghifam, Attias, Dziugaite, Livni, Roy. *On Traceability in ℓp Stochastic Convex
Optimization.* NeurIPS 2025 (spotlight). [arXiv:2502.17384](https://arxiv.org/abs/2502.17384)

**Read this first: what is reconstructed.** The paper is pure theory and only its abstract
could be read. Its claims (below an excess-risk threshold every sample-efficient learner is
traceable on a constant fraction of its sample; for 1 ≤ p ≤ 2 the threshold is the DP rate)
are *not* checked by this module: a theorem about every learner cannot be measured. What is
implemented is the standard machinery the paper extends, on one hard instance and a handful of
learners, so that the statements become measurable curves:

* the dense fingerprinting lemma (exact, from the literature: Bun, Ullman & Vadhan 2014;
  Steinke & Ullman 2015);
* the ℓ2 fingerprinting SCO instance with a linear loss (reconstructed by us);
* ERM / noisy ERM / the (ε, δ)-DP Gaussian mechanism on that instance, and an ℓp version of
  ERM (the dual map) for the geometry panel (ours, illustrative);
* the fingerprinting tracer with a threshold calibrated on reference data;
* the DP ceiling on the traced fraction, e^ε ξ + δ (standard).

## Equations

Fingerprinting lemma. p ∼ Unif[−1, 1], x_1..x_n ∈ {±1} i.i.d. with mean p,
f: {±1}^n → [−1, 1]:

$$\mathbb E\Big[f(X)\sum_i (x_i - p)\Big] = \mathbb E[2 p f(X)] \quad (1)$$
$$\mathbb E\Big[f(X)\sum_i (x_i - p)\Big] + 2\,\mathbb E|f(X) - p| \ge 2/3. \quad (2)$$

Hard instance (p = 2). μ_j ∼ Unif[−1, 1]; z ∈ {±1/√d}^d with independent coordinates and
E z_j = μ_j/√d; loss f(w; z) = −⟨w, z⟩ on W = {‖w‖_p ≤ 1}. Population risk
F(w) = −⟨w, μ⟩/√d, so

$$\text{excess}(w) = \big(\lVert\mu\rVert_q - \langle w, \mu\rangle\big)/\sqrt d,
\quad 1/p + 1/q = 1. \quad (3)$$

Learners (v = z̄ + (σ/√d) g, g ∼ N(0, I_d); σ = 0 is ERM):

$$\hat w = \nabla\tfrac12\lVert v\rVert_q^2 / \lVert v\rVert_q:\quad
\hat w_j = \operatorname{sign}(v_j)\,|v_j|^{q-1} / \lVert v\rVert_q^{q-1}, \quad (4)$$

the maximiser of ⟨w, v⟩ over the ℓp ball (for p = 2: ŵ = v/‖v‖₂).

Gaussian mechanism. Replacing one sample moves z̄ by at most Δ = 2/n in ℓ2 (‖z‖₂ = 1). Noise
N(0, s² I) with the classic calibration (valid for ε < 1)

$$s = \sqrt{2\ln(1.25/\delta)}\,\Delta/\varepsilon \quad (5)$$

or the exact (analytic) calibration of Balle & Wang (2018): the smallest s with

$$\Phi\Big(\frac{\Delta}{2s} - \frac{\varepsilon s}{\Delta}\Big)
 - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2s} - \frac{\varepsilon s}{\Delta}\Big) \le \delta.
 \quad (6)$$

Tracer. Score s(z) = ⟨ŵ, z − m̂⟩ with m̂ the mean of the first half of the reference sample;
threshold τ = the (1 − ξ) quantile of the scores of the second half; IN iff s(z) > τ (7).
For an (ε, δ)-DP learner every tracer satisfies

$$\mathbb P[\text{IN}(z_i)] \le e^{\varepsilon}\xi + \delta. \quad (8)$$

Fast path: :func:`trace_batched` / ``tradeoff_curve(backend="torch")`` score all repetitions
and noise levels with batched matmuls (CPU or CUDA); the data are drawn with numpy so that
both backends see the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..core.checks import (
    check_array,
    check_bool,
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
    "trace_batched",
    "tradeoff_curve",
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


def _check_p(p: float) -> float:
    return check_range("p", p, 1.0, 10.0, low_inclusive=False)


def dual_map(v, p: float = 2.0) -> np.ndarray:
    """The maximiser of ⟨w, v⟩ over the unit ℓp ball, eq. (4) (p in (1, 10]).

    Accepts a vector (d,) or a batch (..., d). See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    v = check_array("v", v, ndim=(1, 2, 3), min_size=1)
    p = _check_p(p)
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
    return dual_map(Z.mean(axis=0), p)


def noisy_erm_lp(Z, sigma: float, p: float = 2.0, seed: int = 0) -> np.ndarray:
    """Noisy ERM over the ℓp ball: the dual map of z̄ + (σ/√d) g, g ∼ N(0, I_d).

    ``sigma`` is the expected noise norm (≥ 0; 0 gives ERM).
    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    Z = check_array("Z", Z, ndim=2, min_size=1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    seed = check_int("seed", seed, 0)
    return dual_map(_noisy_mean(Z, sigma, seed), p)


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
    s = gaussian_sigma(2.0 / n, eps, delta, method)
    return noisy_erm_l2(Z, math.sqrt(d) * s, seed)


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
    p = _check_p(p)
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
    return (Z - center) @ w


def calibrate_threshold(ref_scores, xi: float) -> float:
    """The (1 − ξ) quantile of scores of fresh reference samples (linear interpolation).

    See: book/traceability/01-tracing-attack.ipynb
    """
    ref_scores = check_array("ref_scores", ref_scores, ndim=1, min_size=2)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    return float(np.quantile(ref_scores, 1.0 - xi))


def _split(n_ref: int) -> int:
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
    if center is None:
        h = _split(Z_ref.shape[0])
        center, calib = Z_ref[:h].mean(axis=0), Z_ref[h:]  # m̂ from one half
    else:
        calib = Z_ref
    tau = calibrate_threshold(tracer_scores(w, calib, center), xi)  # τ from the other half
    return tracer_scores(w, Z_train, center) > tau  # IN iff s(z) > τ


def trace_batched(W, Z_train, Z_ref, xi: float, device=None):
    """Fast path of :func:`trace`: batched torch, one model per batch entry.

    Parameters
    ----------
    W : tensor or array (B, d)
        Released models.
    Z_train : (B, m, d)
        Candidate records per batch entry.
    Z_ref : (B, R, d)
        Reference samples per batch entry (split in halves as in :func:`trace`).
    xi : float
        False-positive rate in (0, 1).
    device : torch device, optional
        Defaults to the device of ``W`` when it is a tensor, else ``lab.device()``.

    Returns
    -------
    torch.Tensor of bool, shape (B, m)

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    import torch

    from ..core.runtime import device as lab_device

    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    if device is None:
        device = W.device if isinstance(W, torch.Tensor) else lab_device()
    W, Z_train, Z_ref = (torch.as_tensor(a, device=device) for a in (W, Z_train, Z_ref))
    if W.ndim != 2 or Z_train.ndim != 3 or Z_ref.ndim != 3:
        raise ValueError("W, Z_train, Z_ref must have shapes (B, d), (B, m, d), (B, R, d)")
    B, d = W.shape
    if Z_train.shape[0] != B or Z_train.shape[2] != d or Z_ref.shape[0] != B or Z_ref.shape[2] != d:
        raise ValueError(
            f"shape mismatch: W {tuple(W.shape)}, Z_train {tuple(Z_train.shape)}, "
            f"Z_ref {tuple(Z_ref.shape)}"
        )
    if Z_ref.shape[1] < 4:
        raise ValueError(f"Z_ref must have at least 4 rows (got {Z_ref.shape[1]})")
    h = _split(Z_ref.shape[1])
    center = Z_ref[:, :h].mean(dim=1, keepdim=True)  # (B, 1, d)
    w = W.unsqueeze(-1)  # (B, d, 1)
    ref_s = torch.bmm(Z_ref[:, h:] - center, w).squeeze(-1)  # (B, R − h)
    tau = torch.quantile(ref_s, 1.0 - xi, dim=1, keepdim=True)
    return torch.bmm(Z_train - center, w).squeeze(-1) > tau


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


# ----------------------------------------------------------------------------------------
# The sweep
# ----------------------------------------------------------------------------------------
def tradeoff_curve(
    n: int = 50,
    d: int = 2500,
    sigmas: Sequence[float] | None = None,
    *,
    eps: Sequence[float] | None = None,
    delta: float = 1e-5,
    xi: float = 0.05,
    reps: int = 5,
    seed: int = 0,
    p: float = 2.0,
    n_ref: int = 1000,
    n_fresh: int = 1000,
    backend: str = "torch",
    device=None,
    show_progress: bool = True,
) -> dict:
    """Excess risk, traced fraction and false-positive rate along a family of learners.

    Each repetition draws one instance (:func:`l2_hard_instance`, seed ``seed + r``) and one
    noise direction g; every learner of the family is fitted on the same training set with
    the same g (common random numbers, so the curve is smooth in σ), then traced.

    Parameters
    ----------
    n, d : int
        Training-set size and dimension.
    sigmas : sequence of float, optional
        Noise norms of noisy ERM (0 = ERM). Default ``[0, 0.1, 0.3, 1, 3]``.
    eps : sequence of float, optional
        If given, the learners are the (ε, δ)-DP Gaussian mechanisms for these ε instead
        (σ = √d · gaussian_sigma(2/n, ε, δ)); ``sigmas`` must then be None.
    delta : float
        δ of the DP learners.
    xi : float
        False-positive rate the threshold is calibrated to.
    reps : int
        Repetitions (instances).
    seed : int
        Base seed.
    p : float
        Geometry: learners are the ℓp dual map of the noisy mean, eq. (4).
    n_ref, n_fresh : int
        Reference samples for the tracer; fresh samples to measure false positives.
    backend : {"torch", "numpy"}
        Batched torch fast path or the numpy reference (:func:`trace` in a loop).
    device : optional
        Torch device for the fast path.
    show_progress : bool
        Show a progress bar over the repetitions.

    Returns
    -------
    dict of numpy arrays over the learners: ``sigma``, ``eps`` (NaN for noisy ERM),
    ``excess``, ``traced``, ``fpr``, ``excess_se``, ``traced_se``, ``fpr_se``; and the
    per-repetition arrays ``excess_all``, ``traced_all``, ``fpr_all`` of shape (L, reps).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    from ..core.progress import progress

    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    delta = check_range("delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    reps = check_int("reps", reps, 1)
    seed = check_int("seed", seed, 0)
    p = _check_p(p)
    check_choice("backend", backend, ("torch", "numpy"))
    show_progress = check_bool("show_progress", show_progress)
    if eps is not None:
        if sigmas is not None:
            raise ValueError("give either sigmas or eps, not both")
        eps_arr = np.array([check_positive("eps", e) for e in eps], dtype=float)
        sig = np.sqrt(d) * np.array([gaussian_sigma(2.0 / n, e, delta) for e in eps_arr])
    else:
        sigmas = [0.0, 0.1, 0.3, 1.0, 3.0] if sigmas is None else sigmas
        sig = np.array([check_positive("sigmas", s, allow_zero=True) for s in sigmas])
        eps_arr = np.full(sig.shape, np.nan)
    if sig.size == 0:
        raise ValueError("sigmas (or eps) must not be empty")
    L = sig.size
    exc = np.zeros((L, reps))
    trc = np.zeros((L, reps))
    fpr = np.zeros((L, reps))
    for r in progress(range(reps), desc="repetitions", disable=not show_progress or None):
        inst = l2_hard_instance(n, d, seed + r, n_ref, n_fresh)
        Z, Zr, Zf, mu = inst["Z"], inst["Z_ref"], inst["Z_fresh"], inst["mu"]
        # common random numbers: one noise direction g per repetition, shared by all learners
        g = np.random.default_rng(10_000 + seed + r).standard_normal(d)
        V = Z.mean(axis=0) + (sig[:, None] / math.sqrt(d)) * g  # v = z̄ + (σ/√d) g
        W = dual_map(V, p)  # (L, d), eq. (4)
        for i in range(L):
            exc[i, r] = excess_risk_linear(W[i], mu, d, p)
        if backend == "numpy":
            for i in range(L):
                trc[i, r] = trace(W[i], Z, Zr, xi).mean()
                fpr[i, r] = trace(W[i], Zf, Zr, xi).mean()
        else:
            import torch

            dev = device
            if dev is None:
                from ..core.runtime import device as lab_device

                dev = lab_device()
            Wt = torch.as_tensor(W, device=dev)
            cand = torch.as_tensor(np.concatenate([Z, Zf]), device=dev)
            Zrt = torch.as_tensor(Zr, device=dev)
            mask = trace_batched(
                Wt, cand.expand(L, -1, -1), Zrt.expand(L, -1, -1), xi, device=dev
            ).double()
            trc[:, r] = mask[:, :n].mean(dim=1).cpu().numpy()
            fpr[:, r] = mask[:, n:].mean(dim=1).cpu().numpy()

    def se(a):
        return a.std(axis=1, ddof=1) / math.sqrt(reps) if reps > 1 else np.zeros(L)

    return {
        "sigma": sig,
        "eps": eps_arr,
        "excess": exc.mean(axis=1),
        "traced": trc.mean(axis=1),
        "fpr": fpr.mean(axis=1),
        "excess_se": se(exc),
        "traced_se": se(trc),
        "fpr_se": se(fpr),
        "excess_all": exc,
        "traced_all": trc,
        "fpr_all": fpr,
        "n": n,
        "d": d,
        "xi": xi,
        "delta": delta,
        "p": p,
    }
