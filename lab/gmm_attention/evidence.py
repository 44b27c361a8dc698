"""What each registered claim of the gmm_attention chapter records: the measured value, the text
of its card, its measured rival and its diagnosis, built from the drivers' results so that a
notebook records a claim in one line, ``C[id].record(**evidence.<claim>_evidence(...))``.

Every control here is a measurement of the rival that :mod:`lab.gmm_attention.claims` names, made
in the notebook (or, for the overlap deviation, the exact risk of eq. M5) on the claim's own data,
seeds and protocol; seed-paired comparisons carry the per-seed differences.

See: book/gmm_attention/01-heads-find-centroids.ipynb,
book/gmm_attention/02-temperature-and-baselines.ipynb
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lab.core import claims
from lab.core.sweep import Sweep

from .experiments import LayerSweep
from .reference import population_risk_symmetric

__all__ = [
    "KMEANS_RIVAL",
    "dot_score_bias_evidence",
    "fixed_heads_evidence",
    "heads_align_evidence",
    "kmeans_beats_layer_evidence",
    "landscape_minimiser_evidence",
    "layers_no_gain_evidence",
    "lloyd_fixed_point_evidence",
    "on_centroids_evidence",
    "quantisation_evidence",
    "risk_minimal_evidence",
    "sklearn_overlapping_evidence",
    "sklearn_separated_evidence",
    "stacking_evidence",
    "symmetric_saddle_evidence",
    "temperature_optimum_evidence",
    "temperature_u_shape_evidence",
]

#: The rival of the three seed-paired claims of notebook 1.
KMEANS_RIVAL = "k-means (scikit-learn) on 10⁴ samples per seed"


def _mapping(name: str, value: Any) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    return value


def _typed(name: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _landscape_min(grid: tuple) -> tuple[float, float, float]:
    """``(t*, φ*, R min)`` of a :func:`~lab.gmm_attention.experiments.landscape` triple."""
    if not isinstance(grid, tuple) or len(grid) != 3:
        raise TypeError("a landscape must be the (t, phi, R) triple of ga.landscape")
    t, phi, R = grid
    i, j = np.unravel_index(np.argmin(R), R.shape)
    return float(t[j]), float(phi[i]), float(R.min())


# ------------------------------------------------------------------------------------------
# notebook 1: two heads find the centroids
# ------------------------------------------------------------------------------------------
def landscape_minimiser_evidence(grid: tuple, hot: tuple, mu_norm: float) -> dict:
    """``landscape-minimiser``: ``|t* − ‖μ‖|`` of the exact risk's grid minimiser when it lies
    on ``φ = 0`` (infinite otherwise); the rival is the same quadrature at ``λ = 0.1``
    (``hot``)."""
    t_star, phi_star, r_min = _landscape_min(grid)
    t_hot, phi_hot, _ = _landscape_min(hot)
    return dict(
        measured=abs(t_star - mu_norm) if phi_star == 0.0 else float("inf"),
        control=claims.control(
            "the same quadrature at λ = 0.1",
            abs(t_hot - mu_norm) if phi_hot == 0.0 else float("inf"),
            text=f"minimiser φ = {np.degrees(phi_hot):.1f}°, t = {t_hot:.3f}",
        ),
        text=f"|t* − ‖μ‖| on a 100 × 200 (φ, t) quadrature grid: minimiser φ = "
        f"{np.degrees(phi_star):.1f}°, t = {t_star:.3f}, R = {r_min:.3f}",
        notes="the measured value is |t* − ‖μ‖| when the minimiser has φ = 0, infinite otherwise",
    )


def heads_align_evidence(per_seed: Any, km: Any) -> dict:
    """``heads-align``: the worst final alignment over the seeds, paired with k-means."""
    per_seed, km = _typed("per_seed", per_seed, Sweep), _typed("km", km, Sweep)
    align, km_align = per_seed.values("alignment"), km.values("alignment")
    return dict(
        measured=float(align.min()),
        text=f"worst alignment over {align.size} seeds {align.min():.5f} (best {align.max():.5f})",
        control=claims.control(KMEANS_RIVAL, float(km_align.min()), paired=align - km_align),
    )


def on_centroids_evidence(runs: Mapping, per_seed: Any, km: Any, mu_norm: float) -> dict:
    """``heads-on-centroids``: the worst ``| ‖θ_h‖ / ‖μ‖ − 1 |`` over seeds and heads."""
    per_seed, km = _typed("per_seed", per_seed, Sweep), _typed("km", km, Sweep)
    norms = np.array([np.linalg.norm(r.Theta, axis=1) for r in _mapping("runs", runs).values()])
    km_norm = km.values("norm_error")
    return dict(
        measured=float(np.max(np.abs(norms / mu_norm - 1))),
        text=f"head norms {norms.min():.3f}-{norms.max():.3f} vs ‖μ‖ = {mu_norm:g}",
        control=claims.control(
            KMEANS_RIVAL, float(km_norm.max()), paired=km_norm - per_seed.values("norm_error")
        ),
    )


def risk_minimal_evidence(per_seed: Any, km: Any, r_min: float, n_mc: int) -> dict:
    """``trained-risk-minimal``: the worst relative gap of the seeds' Monte Carlo risks to the
    landscape's minimum ``r_min``."""
    per_seed, km = _typed("per_seed", per_seed, Sweep), _typed("km", km, Sweep)
    risk = per_seed.values("risk")
    gap, km_gap = np.abs(risk / r_min - 1), np.abs(km.values("risk") / r_min - 1)
    return dict(
        measured=float(np.max(gap)),
        text=f"Monte Carlo risk ({n_mc} samples) {risk.min():.3f}-{risk.max():.3f} "
        f"vs landscape minimum {r_min:.3f}",
        control=claims.control(KMEANS_RIVAL, float(km_gap.max()), paired=km_gap - gap),
    )


def temperature_optimum_evidence(lam_sweep: Mapping, mu_norm: float) -> dict:
    """``temperature-optimum``: the worst ``| ‖θ‖ / t*(λ) − 1 |`` over the temperatures; the
    rival predicts ``‖μ‖`` instead of ``t*(λ)``. ``lam_sweep``: ``λ -> (alignment, head norm,
    t*, Lloyd residual)``."""
    rows = _mapping("lam_sweep", lam_sweep)
    gaps = [abs(nrm / t_opt - 1) for _, nrm, t_opt, _ in rows.values()]
    lloyd_gaps = [abs(nrm / mu_norm - 1) for _, nrm, _, _ in rows.values()]
    return dict(
        measured=float(max(gaps)),
        control=claims.control("the centroid norm ‖μ‖ as the prediction", float(max(lloyd_gaps))),
        text="‖θ‖ vs t*: "
        + ", ".join(f"{v[1]:.3f} vs {v[2]:.3f} (λ = {k:g})" for k, v in rows.items())
        + f"; alignment ≥ {min(v[0] for v in rows.values()):.4f}",
    )


def lloyd_fixed_point_evidence(lam_sweep: Mapping) -> dict:
    """``lloyd-fixed-point``: the Lloyd residual at ``λ = 1`` and ``50``; rival ``λ = 0.1``."""
    res = {lam: v[3] for lam, v in _mapping("lam_sweep", lam_sweep).items()}
    return dict(
        measured=float(max(res[1.0], res[50.0])),
        control=claims.control("the same residual at λ = 0.1", float(res[0.1])),
        text=f"residual on 2·10⁵ points: {res[50.0]:.3f} (λ = 50), {res[1.0]:.3f} "
        f"(λ = 1); {res[0.1]:.3f} at λ = 0.1, where the optimum overshoots",
    )


def symmetric_saddle_evidence(escaped: Any, stayed: Any, risks: Mapping) -> dict:
    """``symmetric-saddle``: the kicked run escapes (alignment > 0.999 and a risk 1 below the
    symmetric point's); the rival is the same run without the kick. ``risks``: the Monte Carlo
    risks ``symmetric``, ``kicked``, ``unkicked``."""
    r = _mapping("risks", risks)
    sym = r["symmetric"]
    return dict(
        measured=bool(escaped.alignment[-1] > 0.999 and r["kicked"] < sym - 1),
        control=claims.control(
            "the same 300 steps without the kick",
            bool(stayed.alignment[-1] > 0.999 and r["unkicked"] < sym - 1),
            text=f"alignment {stayed.alignment[-1]:.5f}, risk {r['unkicked']:.3f}",
        ),
        text=f"symmetric run: risk {sym:.3f}; after the kick: alignment "
        f"{escaped.alignment[-1]:.5f}, risk {r['kicked']:.3f}",
        notes="the gap θ₁ − θ₂ staying exactly 0 is an assertion below (a code check), not evidence",
    )


def dot_score_bias_evidence(general: Any, centred: Any) -> dict:
    """``dot-score-bias``: on uncentred centroids the distance score is accurate (< 0.15) and the
    dot score more than twice as far; the rival is the same test on centroids ``±μ``. Both
    arguments: :func:`~lab.gmm_attention.experiments.score_errors` sweeps (seeds 0, 1)."""

    def test(sweep):
        dot, dist = sweep.values("error", score="dot"), sweep.values("error", score="distance")
        return bool(max(dist) < 0.15 and min(dot) > 2 * max(dist)), dot, dist

    ok, dot, dist = test(_typed("general", general, Sweep))
    c_ok, c_dot, c_dist = test(_typed("centred", centred, Sweep))
    return dict(
        measured=ok,
        control=claims.control(
            "the same scores and seeds on centroids ±μ",
            c_ok,
            text=f"dot {c_dot[0]:.3f}, {c_dot[1]:.3f}; distance {c_dist[0]:.3f}, {c_dist[1]:.3f}",
        ),
        text=f"mean head-to-centroid distance: dot {dot[0]:.3f}, {dot[1]:.3f}; "
        f"distance {dist[0]:.3f}, {dist[1]:.3f} (seeds 0, 1)",
    )


# ------------------------------------------------------------------------------------------
# notebook 2: in context, and against k-means and EM
# ------------------------------------------------------------------------------------------
def fixed_heads_evidence(per_fixed: Any, per_raw: Any, per_own: Any) -> dict:
    """``fixed-heads-fail-in-context``: the per-sequence error of heads trained on one mixture
    minus the raw tokens', paired over the sequences; the rival is heads placed on each
    sequence's own cluster means, paired the same way."""
    per_fixed, per_raw = np.asarray(per_fixed, float), np.asarray(per_raw, float)
    d_fixed = claims.paired(per_fixed, per_raw)  # sequence b of one paired with b of the other
    d_own = claims.paired(np.asarray(per_own, float), per_raw)
    fixed_error, raw_error = float(per_fixed.mean()), float(per_raw.mean())
    return dict(
        measured=d_fixed,
        control=claims.control(
            "heads on each sequence's own cluster means",
            d_own,
            text=f"difference {d_own['estimate']:+.2f} [{d_own['lo']:+.2f}, {d_own['hi']:+.2f}]",
        ),
        text=f"heads trained on one mixture {fixed_error:.2f} vs raw tokens {raw_error:.2f}: "
        f"difference {d_fixed['estimate']:+.2f}, 95% interval [{d_fixed['lo']:+.2f}, "
        f"{d_fixed['hi']:+.2f}] over {d_fixed['n']} sequences",
        notes="The rule used to be 'ratio to the raw error ≥ 1' on one number (a sign test); now "
        "the per-sequence difference with its paired interval over the sequences.",
    )


def quantisation_evidence(sweep: Any, err_02: float, fixed_error: float) -> dict:
    """``in-context-quantisation``: the best one-layer error over the raw tokens'; the rival is
    the heads trained on one fixed mixture (``fixed_error``)."""
    raw_error = _typed("sweep", sweep, LayerSweep).raw_error
    b1, e1 = sweep.best(1)
    return dict(
        measured=e1 / raw_error,
        text=f"raw tokens {raw_error:.2f}; one layer at β = 0.2: {err_02:.2f}; best β = {b1:.3f}: "
        f"{e1:.3f} ({raw_error / e1:.1f}× smaller)",
        control=claims.control(
            "two heads trained on one fixed mixture (no in-context adaptation)",
            fixed_error / raw_error,
            text=f"{fixed_error:.2f} vs raw tokens {raw_error:.2f}",
        ),
    )


def temperature_u_shape_evidence(sweep: Any, err_5: float) -> dict:
    """``temperature-u-shape``: the best β is inside the grid, β = 5 is worse than the raw tokens
    and the coldest β more than twice the best error (no rival: see the registry)."""
    sweep = _typed("sweep", sweep, LayerSweep)
    betas, raw_error, cold = sweep.betas, sweep.raw_error, sweep.errors[1][0]
    b1, e1 = sweep.best(1)
    return dict(
        measured=bool(betas[0] < b1 < betas[-1] and err_5 > raw_error and cold > 2 * e1),
        text=f"best β = {b1:.3f} inside [{betas[0]:g}, {betas[-1]:g}] ({len(betas)}-point log "
        f"grid); β = 5: {err_5:.2f} vs raw {raw_error:.2f}; β = {betas[0]:g}: {cold:.2f}",
    )


def layers_no_gain_evidence(sweep: Any, n_layers: int, lloyd: Mapping) -> dict:
    """``two-layers-no-gain`` / ``five-layers-no-gain``: the best ``n_layers`` error over the
    best one-layer error; the rival is as many Lloyd steps against one (``lloyd``: steps ->
    error)."""
    lloyd, sweep = _mapping("lloyd", lloyd), _typed("sweep", sweep, LayerSweep)
    (b1, e1), (bn, en) = sweep.best(1), sweep.best(n_layers)
    return dict(
        measured=en / e1,
        text=f"best {n_layers}-layer error {en:.3f} at β = {bn:.3f} vs one layer "
        f"{e1:.3f} at β = {b1:.3f}",
        notes="the first pass of the chapter printed these errors without a rule; the rule "
        "(within 25% of one layer) states 'no gain from depth', it was not fitted to them",
        control=claims.control(f"{n_layers} Lloyd steps against one", lloyd[n_layers] / lloyd[1]),
    )


def kmeans_beats_layer_evidence(sweep: Any, oracle: float, lloyd: Mapping) -> dict:
    """``kmeans-beats-layer``: per-sequence k-means error over the best layer's; the rival is
    one Lloyd step from random tokens."""
    e1 = _typed("sweep", sweep, LayerSweep).best(1)[1]
    return dict(
        measured=oracle / e1,
        control=claims.control(
            "one Lloyd step from random tokens", _mapping("lloyd", lloyd)[1] / e1
        ),
        text=f"per-sequence k-means {oracle:.3f} vs best layer {e1:.3f}",
        notes="The rule's second tier (ratio ≤ 1, parity) was dropped: a threshold at parity on "
        "one ratio is a sign test, and 'not worse' is not the claim.",
    )


def stacking_evidence(depth: Mapping, separation: float) -> dict:
    """``stacking-merges-clusters``: the 10-layer error over ``‖μ‖²``; rival: one layer."""
    depth = _mapping("depth", depth)
    return dict(
        measured=depth[10] / separation**2,
        control=claims.control("one layer at β = 0.1", depth[1] / separation**2),
        text="β = 0.1: "
        + ", ".join(f"{e:.3f} ({n} layer{'s' * (n > 1)})" for n, e in depth.items())
        + f"; ‖μ‖² = {separation**2:g}",
    )


def _parity(res: Mapping) -> float:
    return res["attention"]["error"] / min(res["k-means"]["error"], res["EM"]["error"])


def sklearn_separated_evidence(table: Mapping) -> dict:
    """``sklearn-parity-separated``: the heads' centroid error over the better of k-means and
    EM, worst of ``‖μ‖/σ = 3, 4`` (``table``: separation -> ``fit_baselines`` result)."""
    table = _mapping("table", table)
    rows = "; ".join(
        f"‖μ‖/σ = {s:g}: {table[s]['attention']['error']:.3f} / {table[s]['k-means']['error']:.3f}"
        f" / {table[s]['EM']['error']:.3f}"
        for s in (3.0, 4.0)
    )
    return dict(
        measured=max(_parity(table[3.0]), _parity(table[4.0])),
        text=f"centroid error (heads / k-means / EM): {rows}; heads see "
        f"{table[3.0]['attention']['samples']} samples, scikit-learn 10000",
    )


def sklearn_overlapping_evidence(table: Mapping) -> dict:
    """``sklearn-parity-overlapping``: the same ratio at ``‖μ‖/σ = 1``, diagnosed as the
    reconstructed layer's deviation: the exact risk (M5) at ``‖μ‖ = σ = 1`` (λ = 1, d = 10) is
    smallest off the centroid."""
    r1 = _mapping("table", table)[1.0]
    t_grid = np.linspace(0, 4, 801)
    t_overlap = float(t_grid[np.argmin(population_risk_symmetric(t_grid, 0.0, 1.0, 1.0, 10, 1.0))])
    return dict(
        measured=_parity(r1),
        text=f"‖μ‖/σ = 1: heads {r1['attention']['error']:.3f}, k-means "
        f"{r1['k-means']['error']:.3f}, EM {r1['EM']['error']:.3f}",
        notes="at λ = 1 the soft-assignment optimum is not the centroid when the components "
        "overlap; EM models the overlap",
        diagnosis=claims.diagnosis(
            "deviation",
            f"our layer's exact symmetric risk at ‖μ‖/σ = 1 (λ = 1, d = 10) is smallest at "
            f"t* = {t_overlap:.2f}, not at ‖μ‖ = 1: trained heads go where the risk is smallest, "
            "which is off the centroids when the components overlap",
            deviation="reconstructed-layer",
            t_star=t_overlap,
        ),
    )
