"""Drivers for the traceability notebooks: the sparse fingerprinting identity by Monte Carlo,
recall against excess risk on ``P_{k,p}``, the DP ceiling, and ERM's 1/n rate on the ℓ2
counterexample.

See: book/traceability/02-dp-and-tradeoff.ipynb, book/traceability/01-tracing-attack.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.runtime import smoke_steps
from lab.traceability import problems as P

__all__ = [
    "LEARNERS",
    "IdentityCheck",
    "RecallCurve",
    "L2Rate",
    "fit_learner",
    "identity_check",
    "recall_curve",
    "RECALL_SIGMAS",
    "recall_sweep",
    "l2_erm_rate",
]

#: learners of :func:`fit_learner` (name -> what it is)
LEARNERS = ("erm", "noisy", "dp", "constant")


def fit_learner(name: str, inst: P.SparseInstance, *, sigma=0.3, eps=1.0, delta=None, seed=0):
    """Fit one learner of :data:`LEARNERS` on ``inst.Z``: ERM, noisy ERM (noise ``sigma``), the
    (ε, δ)-DP Gaussian mechanism (δ defaults to 1/n²), or the constant 0.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    check_choice("name", name, LEARNERS)
    if not isinstance(inst, P.SparseInstance):
        raise TypeError(f"inst must be a SparseInstance, got {type(inst).__name__}")
    Z, p = inst.Z, inst.p
    if name == "erm":
        return P.erm_box(Z, p)
    if name == "noisy":
        return P.noisy_erm_box(Z, sigma, p, seed)
    if name == "dp":
        n = Z.shape[0]
        return P.dp_erm_box(Z, inst.k, eps, 1 / n**2 if delta is None else delta, p, seed)
    return P.constant_box(Z, p)


@dataclass(frozen=True)
class IdentityCheck:
    """Per learner: mean of Σᵢ ϕ_µ(θ̂, Zᵢ) (``lhs``), of (2βd/k) ⟨µ, θ̂⟩ (``rhs``) and the
    standard error of their paired difference (``se``), over ``reps`` draws of (µ, S)."""

    learners: tuple[str, ...]
    lhs: np.ndarray
    rhs: np.ndarray
    se: np.ndarray
    reps: int

    @property
    def z(self) -> np.ndarray:
        """(lhs − rhs)/se (0 where both sides vanish identically)."""
        diff = self.lhs - self.rhs
        return np.divide(diff, self.se, out=np.zeros_like(diff), where=self.se > 0)


def identity_check(
    n: int,
    d: int,
    k: int,
    alpha: float,
    p: float,
    learners: Sequence[str] = LEARNERS,
    reps: int = 1000,
    seed: int = 0,
    *,
    centre: str = "support",
) -> IdentityCheck:
    """Monte Carlo of Lemma 4.2: E Σᵢ ϕ_µ(θ̂, Zᵢ) = (2βd/k) E⟨µ, θ̂⟩, µ from the beta prior.

    ``centre="support"`` is the lemma's ϕ_µ; ``centre="dense"`` centres at µ on every
    coordinate (a wrong score, for k < d: the check must then fail).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    learners = tuple(check_choice("learners", name, LEARNERS) for name in learners)
    reps = smoke_steps(check_int("reps", reps, 2), small=2)  # LAB_SMOKE=1: two repetitions
    seed = check_int("seed", seed, 0)
    check_choice("centre", centre, ("support", "dense"))
    lhs = np.zeros((len(learners), reps))
    rhs = np.zeros((len(learners), reps))
    for r in range(reps):
        inst = P.sparse_instance(n, d, k, alpha, p, seed=seed * 1_000_003 + r)
        Z, mu = inst.Z, inst.mu
        centred = Z - (d / k) * mu * (Z != 0) if centre == "support" else Z - mu
        for i, name in enumerate(learners):
            theta = fit_learner(name, inst, seed=r)
            lhs[i, r] = (centred @ theta).sum()  # Σᵢ ϕ_µ(θ̂, Zᵢ)
            rhs[i, r] = 2 * inst.beta * d / k * (mu @ theta)  # (2βd/k) ⟨µ, θ̂⟩
    se = (lhs - rhs).std(axis=1, ddof=1) / math.sqrt(reps)
    return IdentityCheck(learners, lhs.mean(1), rhs.mean(1), se, reps)


@dataclass(frozen=True)
class RecallCurve:
    """Per learner setting: mean excess risk, traced fraction of the training sample (recall/n)
    and false-positive rate on fresh rows, with standard errors over repetitions."""

    labels: list
    excess: np.ndarray
    excess_se: np.ndarray
    traced: np.ndarray
    traced_se: np.ndarray
    fpr: np.ndarray
    fpr_se: np.ndarray
    n: int
    d: int
    k: int
    alpha: float
    p: float
    xi: float
    reps: int


def recall_curve(
    n: int,
    d: int,
    alpha: float,
    p: float,
    *,
    sigmas: Sequence[float] = (0.0,),
    eps: Sequence[float] = (),
    clip_scales: Sequence[float] = (),
    xi: float = 0.05,
    reps: int = 20,
    n_ref: int = 1000,
    k: int | None = None,
    seed: int = 0,
) -> RecallCurve:
    """Trace noisy ERM (noise levels ``sigmas``; 0 is ERM), the clipped mean (scales
    ``clip_scales``, :func:`lab.traceability.clipped_mean_box`) and the DP learner (levels
    ``eps``, δ = 1/n²; always last) on ``P_{k,p}`` with the paper's tracer: the score :func:`fingerprint_scores` with µ
    known, threshold = the (1 − ξ) quantile of the scores of ``n_ref`` fresh rows; the
    false-positive rate is measured on ``n_ref`` other fresh rows.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    k = P.paper_sparsity(d, alpha, p) if k is None else check_int("k", k, 1, d)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    reps = smoke_steps(check_int("reps", reps, 2), small=2)  # LAB_SMOKE=1: two repetitions
    n_ref = check_int("n_ref", n_ref, 10)
    sig = [check_positive("sigmas", s, allow_zero=True) for s in sigmas]
    eps = [check_positive("eps", e) for e in eps]
    clips = [check_positive("clip_scales", c) for c in clip_scales]
    labels = (
        [("noisy", s) for s in sig] + [("clipped", c) for c in clips] + [("dp", e) for e in eps]
    )
    if not labels:
        raise ValueError(
            "give at least one noise level in sigmas, one scale in clip_scales or one privacy "
            "level in eps"
        )
    exc, tr, fp = (np.zeros((len(labels), reps)) for _ in range(3))
    for r in range(reps):
        inst = P.sparse_instance(n, d, k, alpha, p, seed=seed * 1_000_003 + r)
        ref, fresh = inst.fresh(n_ref, seed=1), inst.fresh(n_ref, seed=2)
        for i, (kind, level) in enumerate(labels):
            if kind == "noisy":
                theta = fit_learner("noisy", inst, sigma=level, seed=r)
            elif kind == "clipped":
                theta = P.clipped_mean_box(inst.Z, p, level)
            else:
                theta = fit_learner("dp", inst, eps=level, seed=r)
            lam = np.quantile(P.fingerprint_scores(theta, ref, inst.mu, k, p), 1 - xi)
            exc[i, r] = P.excess_risk_box(theta, inst.mu, k, p)
            tr[i, r] = np.mean(P.fingerprint_scores(theta, inst.Z, inst.mu, k, p) > lam)
            fp[i, r] = np.mean(P.fingerprint_scores(theta, fresh, inst.mu, k, p) > lam)

    def se(a):
        return a.std(axis=1, ddof=1) / math.sqrt(reps)

    return RecallCurve(
        labels, exc.mean(1), se(exc), tr.mean(1), se(tr), fp.mean(1), se(fp),
        n, d, k, float(alpha), float(p), xi, reps,
    )  # fmt: skip


@dataclass(frozen=True)
class L2Rate:
    """ERM's mean excess risk per sample size on the ℓ2 counterexample (App. B.1)."""

    ns: np.ndarray
    excess: np.ndarray
    excess_per_rep: np.ndarray
    d: int


def l2_erm_rate(
    ns: Sequence[int], d: int = 500, reps: int = 20, seed: int = 0, sigma: float = 0.0
) -> L2Rate:
    """ERM ŵ = z̄/‖z̄‖ on Θ = B₂(1), z ∈ {±1/√d}^d, uniform prior on the mean: mean excess risk
    for each n in ``ns`` (the paper shows it is O(1/n), App. B.1).

    ``sigma`` > 0 runs noisy ERM instead (:func:`lab.traceability.noisy_erm_l2`, noise of norm
    about ``sigma`` on z̄, seeded per instance): the chapter's rival whose excess risk stalls.

    See: book/traceability/01-tracing-attack.ipynb
    """
    from lab.traceability.reference import (
        erm_l2,
        excess_risk_linear,
        l2_hard_instance,
        noisy_erm_l2,
    )

    ns = np.array([check_int("ns", m, 2) for m in ns])
    if ns.size < 2:
        raise ValueError("ns needs at least two sample sizes")
    d = check_int("d", d, 1)
    reps = smoke_steps(check_int("reps", reps, 1), small=2)  # LAB_SMOKE=1: two repetitions
    seed = check_int("seed", seed, 0)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    out = np.zeros((ns.size, reps))
    for j, m in enumerate(ns):
        for r in range(reps):
            inst = l2_hard_instance(int(m), d, seed * 1_000_003 + 1000 * j + r, n_ref=20, n_fresh=1)
            w = erm_l2(inst["Z"]) if sigma == 0 else noisy_erm_l2(inst["Z"], sigma, seed=r)
            out[j, r] = excess_risk_linear(w, inst["mu"], d)
    return L2Rate(ns, out.mean(1), out, d)


#: noise levels of the noisy-ERM family in :func:`recall_sweep` (and ``figures.recall_figure``)
RECALL_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0)


@memo(maxsize=64)
def recall_sweep(alpha: float, p: float, xi: float, n: int, d: int, reps: int, seed: int):
    """:func:`recall_curve` over :data:`RECALL_SIGMAS` and the (1, 1/n²)-DP learner, 500
    reference rows: what ``figures.recall_figure`` draws, memoised (``recall_sweep.clear()``).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    return recall_curve(
        n, d, alpha, p, sigmas=RECALL_SIGMAS, eps=(1.0,), xi=xi, reps=reps, n_ref=500, seed=seed
    )
