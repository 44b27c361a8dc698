r"""
# Traceability in ℓp stochastic convex optimisation

Voitovych, Haghifam, Attias, Dziugaite, Livni, Roy. *On Traceability in ℓp Stochastic Convex
Optimization.* NeurIPS 2025 (spotlight). [arXiv:2502.17384](https://arxiv.org/abs/2502.17384)

A learner is (ξ, m)-traceable (Def. 2.4) if a tracer (a score ϕ and a reference distribution)
with some threshold λ flags a fresh sample with probability ≤ ξ (soundness) and flags m of
the n training samples in expectation (recall). Thms 2.5-2.7: for α in a range per p, on a
hard problem *every* α-learner has recall Ω(1/α²) (p ≤ 2) or Ω(1/(6α)^p) (p ≥ 2), the
sample complexity. Prop A.5: an (ε, δ)-DP learner has m ≤ n e^ε ξ + n δ. Thm 2.8: for p ≥ 2
every (ε, δ)-DP learner has α ≥ c min((d/(ε²n²))^(1/p), d^(1−1/p)/(εn), 1).

## The hard problem P_{k,p} (problems.py)

Sparse data (Def. 4.1): ``Z_k = {z ∈ {0, ±1}^d : ‖z‖₀ = k}``; D_{µ,k} draws a uniform
k-subset J, then z_j = ±1 with mean (d/k) µ_j for j ∈ J and 0 elsewhere, so E z = µ.
Prior: µ_j i.i.d. s-beta_[−k/d, k/d](β, β) (density ∝ (1 − (d µ/k)²)^(β−1)).
Problem (eq. (7)), q = p/(p − 1):

    Θ = B_∞(d^(−1/p)),   f(θ, z) = −k^(−1/q) ⟨θ, z⟩,
    excess(θ) = k^(−1/q) (d^(−1/p) ‖µ‖₁ − ⟨θ, µ⟩),

with k = d for p ≤ 2 and k = (6α)^p d ∨ 1 for p ≥ 2 (Thm 5.1), β ∝ α^(−2) (k/d)^(1/p), ≥ 1.
Sparse fingerprinting (Lemma 4.2), ϕ_µ(θ, Z) = ⟨θ, Z − (d/k) µ_supp(Z)⟩, for every learner:

    E_µ E Σᵢ ϕ_µ(θ̂, Zᵢ) = (2βd/k) E_µ ⟨µ, E θ̂⟩.

The tracer (Sec. 5) scores ϕ(θ, Z) = c d^(1/p)/√k · ϕ_µ(θ, Z), with µ known to it.

## Public names other code relies on

* ``sparse_instance(n, d, k, alpha, p, seed)`` → :class:`SparseInstance` with ``Z`` (n × d,
  entries in {0, ±1}, exactly k non-zeros per row), ``mu`` (d,), ``beta`` (and ``k``, ``p``,
  ``alpha``, ``fresh(m, seed)`` for reference / fresh rows).
* ``fingerprint_scores(theta, Z, mu, k, p)`` → one score per row of Z:
  c d^(1/p)/√k ⟨θ, Z_i − (d/k) µ_supp(Z_i)⟩ with **c = 1** (the paper's universal constant
  only makes the process 1-subgaussian; a threshold calibrated on fresh data does not depend
  on it).

## Deviations from the paper

* The paper fixes β only up to a constant: we take β = α^(−2) (k/d)^(1/p) / 16
  (:data:`PRIOR_CONSTANT`), so that accuracy α is not trivial (the zero learner's excess risk
  is about 2α), as the proof requires.
* The theorems quantify over *every* α-learner; we measure a family (ERM, sign of a noisy
  mean, the Gaussian-mechanism DP learner, the constant). The universal constants c of the
  theorems are unknown: ``alpha_range`` and ``dp_lower_bound`` take them as c = 1.
* For p ≤ 2 (k = d) the problems P_{d,p} coincide up to the parametrisation θ = d^(−1/p) u,
  so one instance serves all p ∈ (1, 2]. The p = 1 refinement (Thm 2.6, Θ = B₁ ∩ B_∞(1/s))
  is not built.
* The ℓ2 instance of reference.py (uniform prior, z ∈ {±1/√d}^d) is the paper's own
  counterexample (App. B.1): ERM's excess risk there is O(1/n), so it cannot show Ω(1/α²)
  recall. It is kept for that contrast and for the dense lemma (Lemma 4.2 with k = d, β = 1).

## The ℓ2 counterexample and the dense lemma (reference.py, fast.py)

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

Fast path: ``fast.trace`` (the batched ``trace``) / ``tradeoff_curve(backend="torch")`` score
all repetitions and noise levels with batched matmuls (CPU or CUDA); the data are drawn with
numpy so that both backends see the same numbers.

## File map

* ``problems.py`` — P_{k,p}: ``sparse_instance``, ``fingerprint_scores``, the box learners,
  ``excess_risk_box``, theorem formulas (``alpha_range``, ``dp_lower_bound``,
  ``minimax_rate``, ``conjectured_dp_rate``).
* ``experiments.py`` — settings objects and drivers: ``identity_check`` (Lemma 4.2 by Monte
  Carlo), ``recall_curve`` (recall vs excess risk, DP ceiling), ``recall_widget`` (its memoised
  widget curve), ``l2_erm_rate`` (App. B.1), ``tracer_scores_view`` (the score widget).
* ``reference.py`` — the dense lemma, the ℓ2 counterexample, its learners, the Gaussian
  mechanism, the tracer with an estimated centre, ``dp_trace_bound``.
* ``fast.py`` — ``trace`` (batched) and ``tradeoff_curve`` (batched torch, CPU or CUDA).
* ``figures.py`` — widget figures, drawn from the drivers' results.
* ``claims.py`` — the registered claims (rules, seeds, sizes, rivals, deviations);
  ``evidence.py`` — what each claim records (value, text, measured rival).
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
