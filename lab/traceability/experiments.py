"""Drivers for the traceability notebooks: the sparse fingerprinting identity by Monte Carlo,
recall against excess risk on ``P_{k,p}``, the DP ceiling, and ERM's 1/n rate on the ℓ2
counterexample.

Each family has a frozen settings object, validated once when it is built and passed whole to
its driver; the repetitions run through :func:`lab.core.sweep.sweep` (repetition ``r`` is the
sweep's seed) and the results are kept by :func:`lab.core.diskcache.disk_memo` (the widget's
curves also in process, :func:`lab.core.memo.memo`).

See: book/traceability/02-dp-and-tradeoff.ipynb, book/traceability/01-tracing-attack.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from lab.core.checks import check_choice, check_instance, check_int, check_positive, check_range
from lab.core.diskcache import disk_memo
from lab.core.memo import memo
from lab.core.sweep import sweep
from lab.traceability import problems as P
from lab.traceability import reference as R

__all__ = [
    "LEARNERS",
    "IdentitySettings",
    "IdentityCheck",
    "RecallSettings",
    "RecallCurve",
    "L2RateSettings",
    "L2Rate",
    "ScoresSettings",
    "Scores",
    "fit_learner",
    "identity_check",
    "recall_curve",
    "RECALL_SIGMAS",
    "recall_widget",
    "l2_erm_rate",
    "tracer_scores_view",
]

#: learners of :func:`fit_learner` (name -> what it is)
LEARNERS = ("erm", "noisy", "dp", "constant")
#: how each learner of :data:`LEARNERS` is fitted by :meth:`SparseInstance.fit`
_FIT = {
    "erm": ("noisy", 0.0),
    "noisy": ("noisy", 0.3),
    "dp": ("dp", 1.0),
    "constant": ("constant", 0.0),
}


def _reps(reps, seed) -> tuple[int, int]:
    return check_int("reps", reps, 2), check_int("seed", seed, 0)


def _floats(name: str, values, *, allow_zero: bool) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    return tuple(check_positive(name, v, allow_zero=allow_zero) for v in values)


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


# ----------------------------------------------------------------------------------------
# Lemma 4.2 by Monte Carlo
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IdentitySettings:
    """One Monte Carlo check of Lemma 4.2: the problem ``P_{k,p}`` (``n``, ``d``, ``k``,
    ``alpha``, ``p``), the ``learners`` of :data:`LEARNERS`, and the score's ``centre``:
    ``"support"`` is the lemma's ϕ_µ, ``"dense"`` centres at µ on every coordinate (a wrong
    score when k < d: the check must then fail)."""

    n: int
    d: int
    k: int
    alpha: float
    p: float
    learners: tuple[str, ...] = LEARNERS
    centre: str = "support"

    def __post_init__(self):
        P.SparseProblem(self.n, self.d, self.k, self.alpha, self.p)  # validates the problem
        if isinstance(self.learners, str) or not isinstance(self.learners, Sequence):
            raise TypeError(f"learners must be a sequence of names of {LEARNERS}")
        learners = tuple(check_choice("learners", name, LEARNERS) for name in self.learners)
        if not learners:
            raise ValueError(f"learners must name at least one of {LEARNERS}")
        object.__setattr__(self, "learners", learners)
        check_choice("centre", self.centre, ("support", "dense"))

    @property
    def problem(self) -> P.SparseProblem:
        return P.SparseProblem(self.n, self.d, self.k, self.alpha, self.p)


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


def _identity_rep(settings: IdentitySettings, problem, base: int, seed: int) -> dict:
    """One draw of (µ, S), repetition ``seed``: both sides of Lemma 4.2 per learner."""
    inst = problem._draw(base * 1_000_003 + seed)
    Z, mu, d, k = inst.Z, inst.mu, inst.d, inst.k
    centred = Z - (d / k) * mu * (Z != 0) if settings.centre == "support" else Z - mu
    out = {}
    for i, name in enumerate(settings.learners):
        theta = inst.fit(*_FIT[name], seed)
        out[f"lhs{i}"] = (centred @ theta).sum()  # Σᵢ ϕ_µ(θ̂, Zᵢ)
        out[f"rhs{i}"] = 2 * inst.beta * d / k * (mu @ theta)  # (2βd/k) ⟨µ, θ̂⟩
    return out


def identity_check(settings: IdentitySettings, reps: int = 1000, seed: int = 0) -> IdentityCheck:
    """Monte Carlo of Lemma 4.2: E Σᵢ ϕ_µ(θ̂, Zᵢ) = (2βd/k) E⟨µ, θ̂⟩, µ from the beta prior,
    over ``reps`` (≥ 2) draws of (µ, S) from base ``seed``.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    check_instance("settings", settings, IdentitySettings)
    return _identity_run(settings, *_reps(reps, seed))


@disk_memo
def _identity_run(settings: IdentitySettings, reps: int, seed: int) -> IdentityCheck:
    one = partial(_identity_rep, settings, settings.problem, seed)
    s = sweep(one, None, seeds=range(reps), desc="draws of (µ, S)")
    m = len(settings.learners)
    lhs = np.stack([s.values(f"lhs{i}") for i in range(m)])
    rhs = np.stack([s.values(f"rhs{i}") for i in range(m)])
    n = lhs.shape[1]
    se = (lhs - rhs).std(axis=1, ddof=1) / math.sqrt(n)
    return IdentityCheck(settings.learners, lhs.mean(1), rhs.mean(1), se, n)


# ----------------------------------------------------------------------------------------
# Recall against excess risk on P_{k,p}
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallSettings:
    """The learners traced on ``P_{k,p}``: noisy ERM at noise levels ``sigmas`` (0 is ERM), the
    clipped mean at ``clip_scales`` (:func:`lab.traceability.clipped_mean_box`) and the DP
    learner at privacy levels ``eps`` (δ = 1/n², always last); the tracer's level ``xi`` in
    (0, 1) and ``n_ref`` (≥ 10) fresh rows to set its threshold (as many others measure false
    positives); ``k`` the sparsity (None: :func:`paper_sparsity`)."""

    n: int
    d: int
    alpha: float
    p: float
    sigmas: tuple[float, ...] = (0.0,)
    eps: tuple[float, ...] = ()
    clip_scales: tuple[float, ...] = ()
    xi: float = 0.05
    n_ref: int = 1000
    k: int | None = None

    def __post_init__(self):
        check_int("n", self.n, 2)
        check_int("d", self.d, 1)
        if self.k is None:
            P.paper_sparsity(self.d, self.alpha, self.p)
        else:
            check_int("k", self.k, 1, self.d)
        set_ = partial(object.__setattr__, self)
        set_("sigmas", _floats("sigmas", self.sigmas, allow_zero=True))
        set_("eps", _floats("eps", self.eps, allow_zero=False))
        set_("clip_scales", _floats("clip_scales", self.clip_scales, allow_zero=False))
        set_("xi", check_range("xi", self.xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False))
        check_int("n_ref", self.n_ref, 10)
        self.problem  # noqa: B018  (validates alpha and p)
        if not self.labels:
            raise ValueError(
                "give at least one noise level in sigmas, one scale in clip_scales or one "
                "privacy level in eps"
            )

    @property
    def sparsity(self) -> int:
        """k: as given, or the paper's choice for (d, alpha, p)."""
        return P.paper_sparsity(self.d, self.alpha, self.p) if self.k is None else self.k

    @property
    def problem(self) -> P.SparseProblem:
        return P.SparseProblem(self.n, self.d, self.sparsity, self.alpha, self.p)

    @property
    def labels(self) -> list[tuple[str, float]]:
        """(kind, level) of each learner, in the curve's order."""
        return (
            [("noisy", s) for s in self.sigmas]
            + [("clipped", c) for c in self.clip_scales]
            + [("dp", e) for e in self.eps]
        )


@dataclass(frozen=True)
class RecallCurve:
    """Per learner setting: mean excess risk, traced fraction of the training sample (recall/n)
    and false-positive rate on fresh rows, with standard errors over repetitions; ``ceiling``
    is the DP ceiling e^ε ξ + δ of the first DP level (NaN without one); ``excess_all``,
    ``traced_all``, ``fpr_all`` hold the per-instance values (learners × instances)."""

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
    ceiling: float = field(default=math.nan)
    excess_all: np.ndarray | None = None
    traced_all: np.ndarray | None = None
    fpr_all: np.ndarray | None = None


def _recall_rep(settings: RecallSettings, problem, base: int, seed: int) -> dict:
    """One instance, repetition ``seed``: every learner's excess risk, traced fraction and
    false-positive rate under the paper's tracer (threshold from fresh rows)."""
    inst = problem._draw(base * 1_000_003 + seed)
    ref, fresh = inst._fresh(settings.n_ref, 1), inst._fresh(settings.n_ref, 2)
    out = {}
    for i, (kind, level) in enumerate(settings.labels):
        theta = inst.fit(kind, level, seed)
        # soundness (traceability-def-2-4): λ at the (1 − ξ) quantile of fresh scores
        lam = np.quantile(inst.scores(theta, ref), 1 - settings.xi)
        out[f"excess{i}"] = inst.excess(theta)
        out[f"traced{i}"] = np.mean(inst.scores(theta, inst.Z) > lam)  # recall m / n
        out[f"fpr{i}"] = np.mean(inst.scores(theta, fresh) > lam)
    return out


def recall_curve(settings: RecallSettings, reps: int = 20, seed: int = 0) -> RecallCurve:
    """Trace the learners of ``settings`` on ``P_{k,p}`` with the paper's tracer (the score
    :func:`fingerprint_scores` with µ known, threshold = the (1 − ξ) quantile of the scores of
    ``n_ref`` fresh rows; false positives measured on ``n_ref`` other fresh rows), over
    ``reps`` (≥ 2) instances from base ``seed``.

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    check_instance("settings", settings, RecallSettings)
    return _recall_run(settings, *_reps(reps, seed))


@disk_memo
def _recall_run(settings: RecallSettings, reps: int, seed: int) -> RecallCurve:
    one = partial(_recall_rep, settings, settings.problem, seed)
    s = sweep(one, None, seeds=range(reps), desc="instances")
    L = len(settings.labels)
    exc, tr, fp = (
        np.stack([s.values(f"{k}{i}") for i in range(L)]) for k in ("excess", "traced", "fpr")
    )
    n = exc.shape[1]

    def se(a):
        return a.std(axis=1, ddof=1) / math.sqrt(n)

    ceiling = math.nan
    if settings.eps:
        ceiling = R.dp_trace_bound(settings.eps[0], 1 / settings.n**2, settings.xi)
    return RecallCurve(
        settings.labels, exc.mean(1), se(exc), tr.mean(1), se(tr), fp.mean(1), se(fp),
        settings.n, settings.d, settings.sparsity, settings.alpha, settings.p, settings.xi, n,
        ceiling, exc, tr, fp,
    )  # fmt: skip


#: noise levels of the noisy-ERM family in :func:`recall_widget` (and ``figures.recall_figure``)
RECALL_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0)


@memo(maxsize=64)
def recall_widget(alpha: float, p: float, xi: float, n: int, d: int, reps: int, seed: int):
    """:func:`recall_curve` over :data:`RECALL_SIGMAS` and the (1, 1/n²)-DP learner, 500
    reference rows: what ``figures.recall_figure`` draws, memoised (``recall_widget.clear()``).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    settings = RecallSettings(n, d, alpha, p, sigmas=RECALL_SIGMAS, eps=(1.0,), xi=xi, n_ref=500)
    return recall_curve(settings, reps=reps, seed=seed)


# ----------------------------------------------------------------------------------------
# The ℓ2 counterexample (App. B.1)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class L2RateSettings:
    """ERM's rate on the ℓ2 counterexample: sample sizes ``ns`` (at least two, each ≥ 2),
    dimension ``d`` (≥ 1), and ``sigma`` ≥ 0 (> 0 runs noisy ERM, noise of norm about
    ``sigma`` on z̄: the rival whose excess risk stalls)."""

    ns: tuple[int, ...]
    d: int = 500
    sigma: float = 0.0

    def __post_init__(self):
        if isinstance(self.ns, (str, bytes)) or not isinstance(self.ns, Sequence):
            raise TypeError(f"ns must be a sequence of sample sizes, got {type(self.ns).__name__}")
        ns = tuple(check_int("ns", m, 2) for m in self.ns)
        if len(ns) < 2:
            raise ValueError("ns needs at least two sample sizes")
        object.__setattr__(self, "ns", ns)
        check_int("d", self.d, 1)
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma, allow_zero=True))


@dataclass(frozen=True)
class L2Rate:
    """ERM's mean excess risk per sample size on the ℓ2 counterexample (App. B.1)."""

    ns: np.ndarray
    excess: np.ndarray
    excess_per_rep: np.ndarray
    d: int


def _l2_rep(settings: L2RateSettings, j: int, base: int, seed: int) -> float:
    m, d = settings.ns[j], settings.d
    inst = R.l2_hard_instance(m, d, base * 1_000_003 + 1000 * j + seed, n_ref=20, n_fresh=1)
    w = R.noisy_erm_l2(inst["Z"], settings.sigma, seed=seed)
    return R.excess_risk_linear(w, inst["mu"], d)


def l2_erm_rate(settings: L2RateSettings, reps: int = 20, seed: int = 0) -> L2Rate:
    """ERM ŵ = z̄/‖z̄‖ on Θ = B₂(1), z ∈ {±1/√d}^d, uniform prior on the mean: mean excess risk
    for each n in ``settings.ns`` over ``reps`` (≥ 2) instances (the paper shows it is O(1/n),
    App. B.1); noisy ERM when ``settings.sigma`` > 0.

    See: book/traceability/01-tracing-attack.ipynb
    """
    check_instance("settings", settings, L2RateSettings)
    return _l2_run(settings, *_reps(reps, seed))


@disk_memo
def _l2_run(settings: L2RateSettings, reps: int, seed: int) -> L2Rate:
    grid = [{"j": j} for j in range(len(settings.ns))]
    s = sweep(partial(_l2_rep, settings, base=seed), grid, seeds=range(reps), desc="n")
    out = np.stack([s.values("value", j=j) for j in range(len(settings.ns))])
    return L2Rate(np.array(settings.ns), out.mean(1), out, settings.d)


# ----------------------------------------------------------------------------------------
# The tracer's scores on the ℓ2 instance (the score widget)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoresSettings:
    """Noisy ERM (noise ``sigma`` ≥ 0) on the ℓ2 instance with ``n`` (≥ 2) rows in dimension
    ``d`` (≥ 1), traced at level ``xi`` in (0, 1)."""

    sigma: float = 0.1
    n: int = 50
    d: int = 2500
    xi: float = 0.05

    def __post_init__(self):
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma, allow_zero=True))
        check_int("n", self.n, 2)
        check_int("d", self.d, 1)
        xi = check_range("xi", self.xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
        object.__setattr__(self, "xi", xi)


@dataclass(frozen=True)
class Scores:
    """The tracer's scores of training and fresh rows, its threshold ``tau`` and the outcome:
    traced fraction, false-positive rate and excess risk."""

    settings: ScoresSettings
    train: np.ndarray
    fresh: np.ndarray
    tau: float
    traced: float
    fpr: float
    excess: float


@memo(maxsize=256)
def tracer_scores_view(settings: ScoresSettings, seed: int = 0) -> Scores:
    """What the score widget draws: noisy ERM on one ℓ2 instance (1000 reference rows, the
    first half estimating the centre, the second half the threshold; 1000 fresh rows).

    See: book/traceability/01-tracing-attack.ipynb
    """
    check_instance("settings", settings, ScoresSettings)
    seed = check_int("seed", seed, 0)
    inst = R.l2_hard_instance(settings.n, settings.d, seed, n_ref=1000, n_fresh=1000)
    Z, Zr, Zf = inst["Z"], inst["Z_ref"], inst["Z_fresh"]
    w = R.noisy_erm_l2(Z, settings.sigma, seed)
    h = R.centre_rows(Zr.shape[0])
    c = Zr[:h].mean(0)
    tau = float(np.quantile(R.tracer_scores(w, Zr[h:], c), 1 - settings.xi))
    return Scores(
        settings,
        R.tracer_scores(w, Z, c),
        R.tracer_scores(w, Zf, c),
        tau,
        float(R.trace(w, Z, Zr, settings.xi).mean()),
        float(R.trace(w, Zf, Zr, settings.xi).mean()),
        R.excess_risk_linear(w, inst["mu"], settings.d),
    )
