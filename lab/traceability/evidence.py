"""What each registered claim records: the measured value, the card's text and the measured
rival, built from the drivers' results so that a notebook records a claim in one line,
``C[id].record(**evidence.<claim>(result))``.

Every control is a separate measurement of the rival that :mod:`lab.traceability.claims` names,
on the claim's own instances and tracer; per-instance comparisons carry the differences
*method − rival* (positive favours the method).

See: book/traceability/01-tracing-attack.ipynb, book/traceability/02-dp-and-tradeoff.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core import claims
from lab.core.checks import check_fields
from lab.core.rates import mean_ci, power_law_fit

__all__ = ["l2_rate", "identity", "recall", "recall_drop", "dp_ceiling"]

#: what the record builders take: a driver's result
_RESULT = "a result of lab.traceability.experiments"


def _curves(curves: Any) -> dict:
    if not isinstance(curves, dict) or not curves:
        raise TypeError(
            f"curves must be a dict p -> RecallCurve (lab.traceability.recall_curve), got "
            f"{type(curves).__name__}"
        )
    for r in curves.values():
        check_fields(
            "curves[p]", r, "labels", "traced", "traced_se", "traced_all", "fpr_all", kind=_RESULT
        )
    return curves


def _ci(values) -> dict:
    """The mean over instances and its 95% Student-t interval (what ``claims.ci_*`` read)."""
    m = mean_ci(np.asarray(values, dtype=float))
    return {"estimate": m.mean, "lo": m.low, "hi": m.high, "se": m.se, "n": m.n}


def l2_rate(rate, rival) -> dict:
    """``l2-counterexample-fast-rate``: ERM's fitted exponent of excess risk against n, and
    noisy ERM's (``rival``, :func:`lab.traceability.l2_erm_rate` with ``sigma`` > 0)."""
    check_fields("rate", rate, "ns", "excess", kind=_RESULT)
    check_fields("rival", rival, "ns", "excess", kind=_RESULT)
    fit, fit_rival = power_law_fit(rate.ns, rate.excess), power_law_fit(rival.ns, rival.excess)
    ns = rate.ns
    text = (
        f"d = {rate.d}, n from {ns[0]} to {ns[-1]}, {rate.excess_per_rep.shape[1]} instances "
        f"each: slope {fit.exponent:.3f} (n × excess from {ns[0] * rate.excess[0]:.3f} to "
        f"{ns[-1] * rate.excess[-1]:.3f})"
    )
    control = claims.control(
        "noisy ERM (noise of norm 0.3 on the mean)",
        fit_rival.exponent,
        text=f"slope {fit_rival.exponent:.3f}",
    )
    return {"measured": fit.exponent, "text": text, "control": control}


def identity(checks: dict, wrong) -> dict:
    """``sparse-fingerprinting-identity``: the largest absolute difference in SE units over ``checks`` (name ->
    ``IdentityCheck``), and the dense-centred score's (``wrong``)."""
    check_fields("wrong", wrong, "z", "learners", kind=_RESULT)
    if not isinstance(checks, dict) or not checks:
        raise TypeError(f"checks must be a dict name -> IdentityCheck, got {type(checks).__name__}")
    for c in checks.values():
        check_fields("checks[name]", c, "z", "learners", "reps", kind=_RESULT)
    worst = max(float(np.max(np.abs(c.z))) for c in checks.values())
    n_learners = max(len(c.learners) for c in checks.values())
    reps = min(c.reps for c in checks.values())
    text = (
        f"{len(checks)} instances × {n_learners} learners, {reps} draws each: largest "
        f"|difference| = {worst:.2f} standard errors"
    )
    control = claims.control(
        "the score centred on every coordinate (the dense lemma's, wrong when k < d)",
        float(abs(wrong.z[0])),
        text=f"ERM, k < d: |difference| = {abs(wrong.z[0]):.0f} standard errors",
    )
    notes = (
        "learners: ERM, sign of a noisy mean (σ = 0.3), the (1, 1/n²)-DP Gaussian mechanism, "
        "the constant 0"
    )
    return {"measured": worst, "text": text, "notes": notes, "control": control}


def _accurate(r) -> np.ndarray:
    """Indices of the α-learners (mean excess risk at most α), the DP learner excluded."""
    return np.array(
        [i for i, (kind, _) in enumerate(r.labels) if kind != "dp" and r.excess[i] <= r.alpha]
    )


def _name(label) -> str:
    kind, level = label
    return {"noisy": f"σ = {level:g}", "clipped": "clipped mean"}.get(kind, f"DP, ε = {level:g}")


def recall(r) -> dict:
    """``recall-p2`` / ``recall-p4``: the per-instance traced fraction of the α-learner traced
    least (its 95% interval), and the DP learner (the last) paired on the same instances."""
    check_fields("r", r, "labels", "traced_all", "excess", "alpha", kind=_RESULT)
    acc = _accurate(r)
    worst = int(acc[np.argmin(r.traced[acc])])
    value = _ci(r.traced_all[worst])
    dp = r.traced_all[-1]
    text = (
        f"α = {r.alpha:.3f}, k = {r.k}: {acc.size} α-learners ("
        + ", ".join(_name(r.labels[i]) for i in acc)
        + f"); traced least: {_name(r.labels[worst])}, {value['estimate']:.3f} "
        f"[{value['lo']:.3f}, {value['hi']:.3f}] over {r.reps} instances (ξ = {r.xi:g})"
    )
    control = claims.control(
        "the (1, 1/n²)-DP learner (Prop A.5 caps its recall)",
        _ci(dp),
        text=f"traced {dp.mean():.3f} at excess {r.excess[-1]:.3f}",
        paired=r.traced_all[worst] - dp,
    )
    notes = "our family only; the theorem is about every α-learner"
    return {"measured": value, "text": text, "notes": notes, "control": control}


def _drop(r, key: str) -> np.ndarray:
    """Per instance: ``key`` of ERM (σ = 0) minus that of the noisiest noisy ERM."""
    noisy = [i for i, (kind, _) in enumerate(r.labels) if kind == "noisy"]
    a = getattr(r, key)
    return a[noisy[0]] - a[noisy[-1]]


def recall_drop(curves: dict) -> dict:
    """``recall-falls-with-accuracy``: the paired interval of traced(ERM) − traced(σ_max) per p,
    the smaller lower end; the rival is the same drop in the false-positive rate."""
    curves = _curves(curves)
    drops = {p: _ci(_drop(r, "traced_all")) for p, r in curves.items()}
    fprs = {p: _ci(_drop(r, "fpr_all")) for p, r in curves.items()}
    p = min(drops, key=lambda q: drops[q]["lo"])
    q = min(fprs, key=lambda k: fprs[k]["lo"])
    text = "traced(ERM) − traced(σ = 3): " + ", ".join(
        f"p = {k:g}: {d['estimate']:.3f} [{d['lo']:.3f}, {d['hi']:.3f}]" for k, d in drops.items()
    )
    control = claims.control(
        "the same drop in the false-positive rate (fresh rows)",
        fprs[q],
        text=f"p = {q:g}: {fprs[q]['estimate']:+.3f} [{fprs[q]['lo']:.3f}, {fprs[q]['hi']:.3f}]",
    )
    return {"measured": drops[p], "text": text, "control": control}


def dp_ceiling(curves: dict, ceiling: float) -> dict:
    """``dp-ceiling``: the DP learner's traced fraction ± 3 SE (the larger over p), and ERM's
    on the same instances."""
    curves = _curves(curves)
    rows = [(r.traced[-1], r.traced_se[-1], r.excess[-1], p) for p, r in curves.items()]
    t, se, x, p = max(rows)
    erm, erm_se = curves[p].traced[0], curves[p].traced_se[0]
    text = (
        f"(1, 1/n²)-DP learner, {curves[p].reps} instances: traced {t:.3f} ± {se:.3f} (largest "
        f"over p, here p = {p:g}) at excess {x:.3f}; ceiling e^ε ξ + δ = {ceiling:.3f}"
    )
    control = claims.control(
        "ERM (not private), same geometry",
        (erm, erm - 3 * erm_se, erm + 3 * erm_se),
        text=f"traced {erm:.3f} ± {erm_se:.3f}",
    )
    return {"measured": (t, t - 3 * se, t + 3 * se), "text": text, "control": control}
