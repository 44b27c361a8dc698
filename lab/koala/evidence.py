"""What each registered claim of the koala chapter records: the measured value, the text of its
card, its measured rival and its diagnosis, built from the drivers' results so that a notebook
records a claim in one line, ``C[id].record(**evidence.<claim>_evidence(...))``.

Every control here is a separate measurement of the rival that :mod:`lab.koala.claims` names,
on the claim's own problems, seeds and protocol; stochastic comparisons carry the per-seed
differences *method - rival* (positive favours the method, except for the learning-rate drop,
where a lower ratio is the stronger response).

See: book/koala/01-kalman-view.ipynb, book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lab.core import claims
from lab.core.checks import check_array, check_int
from lab.core.rates import mean_ci
from lab.koala.figures import LABELS
from lab.koala.results import TrainRun

__all__ = [
    "beats_koalav_evidence",
    "closure_not_psd_evidence",
    "directional_covariance_evidence",
    "drop_ratios",
    "lr_drop_evidence",
    "step_change",
    "step_cost_evidence",
    "step_grows_ema_r_evidence",
    "step_shrinks_fixed_r_evidence",
    "tracks_ekf_evidence",
    "trains_on_par_evidence",
]

_TEST_IMAGES = 449  # the digits test split: one image is 0.22 points of accuracy


def _mapping(name: str, value: Any, *keys: Any) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} lacks the keys {missing}")
    return value


def _interval(m: dict) -> str:
    return f"{m['estimate']:+.4f} [{m['lo']:+.4f}, {m['hi']:+.4f}]"


# ------------------------------------------------------------------------------------------
# notebook 1: the quadratics
# ------------------------------------------------------------------------------------------
def tracks_ekf_evidence(track: Mapping) -> dict:
    """``tracks-ekf``: the worst distance of both closures to the EKF path at steps 5, 20, 60
    (n = 10 and 50), beside KOALA-V's. ``track[n][method]`` is `tracking_error`'s curve.

    See: book/koala/01-kalman-view.ipynb
    """
    _mapping("track", track, 10, 50)
    worst = max(
        float(track[n][m][[5, 20, 60]].max())
        for n in (10, 50)
        for m in ("koalapp", "koalapp_vanilla")
    )
    worst_koalav = max(float(track[n]["koalav"][[5, 20, 60]].max()) for n in (10, 50))
    at = " / ".join(f"{track[10]['koalapp'][k]:.3f}" for k in (5, 20, 60))
    return dict(
        measured=worst,
        text=f"{worst:.3f} ‖θ₀‖ at worst (n = 10, KOALA++: {at} at steps 5/20/60)",
        control=claims.control(
            "KOALA-V (scalar covariance)",
            worst_koalav,
            text=f"{worst_koalav:.3f} ‖θ₀‖ at worst: closer to the EKF's path than KOALA++",
        ),
        notes="our check of the closure; KOALA-V passes it too, so it does not separate the two",
    )


def directional_covariance_evidence(replay: Mapping, parity: Mapping) -> dict:
    """``directional-covariance``: the ratio of KOALA++'s mean angle to the EKF's
    preconditioned gradient over KOALA-V's (the worse of n = 10, 50), beside the vanilla
    closure's; ``parity`` (`official_parity`) backs the official-code diagnosis.

    See: book/koala/01-kalman-view.ipynb
    """
    _mapping("replay", replay, 10, 50)
    _mapping("parity", parity)

    def ratio(m: str) -> dict:
        return {
            n: replay[n]["angle_" + m].mean() / replay[n]["angle_koalav"].mean() for n in (10, 50)
        }

    angle, vanilla = ratio("koalapp"), ratio("koalapp_vanilla")
    official = [k for k in parity if k.startswith("KOALAPlusPlus")]
    worst_parity = max(float(parity[k].max()) for k in official)
    per_n = "; ".join(
        f"n = {n}: {replay[n]['angle_koalapp'].mean():.1f}° (KOALA++) vs "
        f"{replay[n]['angle_koalav'].mean():.1f}° (KOALA-V)"
        for n in (10, 50)
    )
    return dict(
        measured=max(angle.values()),
        text=f"angle ratio {max(angle.values()):.2f}: mean angle to the EKF's P̂ₖHₖᵀ, {per_n}",
        notes="the rank-≤2 closure drops the isotropic part of P, which dominates when Q is added "
        "every step; KOALA-V's trajectory is also the closer one on these quadratics",
        control=claims.control(
            "KOALA++ with the vanilla closure (β_k = 0)",
            max(vanilla.values()),
            text=f"angle ratio {max(vanilla.values()):.2f} against KOALA-V",
        ),
        diagnosis=claims.diagnosis(
            "official-code",
            f"our KoalaPP reproduces the authors' KOALAPlusPlus.update step for step (largest "
            f"difference {worst_parity:.0e} over {len(official)} official runs: both closures, "
            "with and without weight decay), so the reversal is the published method's, not our "
            "port's",
            fixture="koala_official.json",
            max_difference=worst_parity,
        ),
    )


def closure_not_psd_evidence(first_bad: Mapping, ekf_min_s: float) -> dict:
    """``closure-not-psd``: on how many problems KOALA++'s ``S_k`` turned non-positive
    (``first_bad[seed]``: the step, or None; `first_nonpositive_s`), beside the full EKF's
    smallest ``S_k`` over the same problems.

    See: book/koala/01-kalman-view.ipynb
    """
    _mapping("first_bad", first_bad)
    failing = {s: check_int(f"first_bad[{s}]", k, 1) for s, k in first_bad.items() if k is not None}
    ekf_min_s = float(ekf_min_s)
    n = len(first_bad)
    if failing:
        seed = min(failing)
        text = (
            f"S_k ≤ 0 on {len(failing)} of {n} problems (the first: step {failing[seed]}, seed "
            f"{seed}; σ₀ = 1, Q = 10⁻³, n = 10, κ = 100); the kernels raise"
        )
    else:
        text = f"never within 40 steps on {n} problems"
    return dict(
        measured=bool(failing),
        control=claims.control(
            "full-covariance EKF, same settings",
            bool(ekf_min_s <= 0),
            text=f"smallest S_k over 40 steps and {n} problems {ekf_min_s:.3g} > 0: the exact P "
            "stays positive definite",
        ),
        text=text,
    )


# ------------------------------------------------------------------------------------------
# notebook 2: digits
# ------------------------------------------------------------------------------------------
def trains_on_par_evidence(accs: Mapping) -> dict:
    """``trains-on-par``: KOALA++ minus the better (in mean) of SGD-momentum and Adam, paired
    over seeds, beside plain SGD under the same rule. ``accs[name]`` holds final test
    accuracies, one per seed.

    See: book/koala/02-training-digits.ipynb
    """
    _mapping("accs", accs, "koalapp", "sgd", "adam", "sgd_plain")
    mean = {name: float(np.mean(a)) for name, a in accs.items()}
    best = max(("sgd", "adam"), key=mean.get)
    on_par = claims.paired(accs["koalapp"], accs[best])
    plain = claims.paired(accs["sgd_plain"], accs[best])
    n = len(accs["koalapp"])
    return dict(
        measured=on_par,
        text=f"{_interval(on_par)}: KOALA++ {mean['koalapp']:.4f}, {LABELS[best]} "
        f"{mean[best]:.4f} ({n} seeds, paired)",
        notes="a 4.8k-weight MLP on 1348 images: on par is all this size can show; plain SGD "
        "passes the same rule, so the check does not single KOALA++ out (hence 'ours')",
        control=claims.control(
            "plain SGD (no momentum, lr 0.1)",
            plain,
            text=f"{_interval(plain)} (mean {mean['sgd_plain']:.4f})",
            paired=np.asarray(accs["koalapp"]) - np.asarray(accs["sgd_plain"]),
        ),
    )


def beats_koalav_evidence(accs: Mapping) -> dict:
    """``beats-koalav``: KOALA++ minus KOALA-V, paired over seeds, beside the vanilla closure
    against KOALA-V.

    See: book/koala/02-training-digits.ipynb
    """
    _mapping("accs", accs, "koalapp", "koalav", "koalapp_vanilla")
    mean = {name: float(np.mean(a)) for name, a in accs.items()}
    vs = claims.paired(accs["koalapp"], accs["koalav"])
    vanilla = claims.paired(accs["koalapp_vanilla"], accs["koalav"])
    n = len(accs["koalapp"])
    return dict(
        measured=vs,
        text=f"{_interval(vs)}: KOALA++ {mean['koalapp']:.4f}, KOALA-V {mean['koalav']:.4f} "
        f"({n} seeds, paired; authors' settings for both; "
        f"{vs['estimate'] * _TEST_IMAGES:.1f} of {_TEST_IMAGES} test images)",
        notes="KOALA-V at the authors' CIFAR settings (lr 0.1, Q = 1, weight decay 5e-4); until "
        "2026-12-06 the comparison ran over 5 seeds (not reproduced, a noise floor), before that "
        "KOALA-V ran at lr 1, Q = 0.1 and the rule read the sign of a mean difference",
        control=claims.control(
            "KOALA++ (vanilla closure) against KOALA-V",
            vanilla,
            text=f"{_interval(vanilla)} (mean {mean['koalapp_vanilla']:.4f})",
            paired=np.asarray(accs["koalapp"]) - np.asarray(accs["koalapp_vanilla"]),
        ),
    )


def step_change(run: TrainRun) -> tuple[float, float]:
    """The first layer's effective step ``||dtheta|| / ||H||``: (first epoch, last epoch).

    See: book/koala/02-training-digits.ipynb
    """
    if not isinstance(run, TrainRun):
        raise TypeError(f"run must be a TrainRun (train_digits), got {type(run).__name__}")
    return float(run.step_size[0, 0]), float(run.step_size[-1, 0])


def step_shrinks_fixed_r_evidence(fixed_r: TrainRun, online: TrainRun, epochs: int) -> dict:
    """``step-shrinks-fixed-r``: last over first epoch's step with R = 1, beside the same seed
    with the online R.

    See: book/koala/02-training-digits.ipynb
    """
    (f0, f1), (o0, o1) = step_change(fixed_r), step_change(online)
    return dict(
        measured=f1 / f0,
        text=f"{f0:.2g} → {f1:.2g} (×{f1 / f0:.2g}), first layer, epoch 1 → {epochs}, fixed R = 1",
        control=claims.control(
            "the same run with the authors' online R",
            o1 / o0,
            text=f"{o0:.2g} → {o1:.2g} (×{o1 / o0:.2g})",
        ),
    )


def step_grows_ema_r_evidence(online: Sequence[TrainRun], fixed: Sequence[TrainRun]) -> dict:
    """``step-grows-ema-r``: the paired interval of log(last/first epoch's step) with the online
    R, beside the same seeds with R = 1.

    See: book/koala/02-training-digits.ipynb
    """
    if isinstance(online, str) or isinstance(fixed, str):
        raise TypeError("online and fixed must be sequences of TrainRun (seed_runs)")
    on = np.array([step_change(r) for r in online]).reshape(-1, 2)
    fx = np.array([step_change(r) for r in fixed]).reshape(-1, 2)
    if len(on) < 2:
        raise ValueError(f"online must hold at least two seeds' runs, got {len(on)}")
    if on.shape != fx.shape:
        raise ValueError(f"online and fixed must hold the same seeds, got {len(on)} and {len(fx)}")
    growth = claims.paired(np.log(on[:, 1]), np.log(on[:, 0]))
    growth_fixed = claims.paired(np.log(fx[:, 1]), np.log(fx[:, 0]))
    return dict(
        measured=growth,
        text=f"log step last − first epoch {growth['estimate']:+.2f} [{growth['lo']:+.2f}, "
        f"{growth['hi']:+.2f}] ({len(on)} seeds; ×{np.exp(growth['estimate']):.2g}), online R",
        control=claims.control(
            "KOALA++ with a fixed R = 1",
            growth_fixed,
            text=f"{growth_fixed['estimate']:+.2f} [{growth_fixed['lo']:+.2f}, "
            f"{growth_fixed['hi']:+.2f}]",
            paired=np.diff(np.log(on), axis=1)[:, 0] - np.diff(np.log(fx), axis=1)[:, 0],
        ),
    )


def step_cost_evidence(counts: Mapping, small: Mapping, n_tensors: int) -> dict:
    """``step-cost``: the larger of KOALA++'s counted work and bytes over Adam's on the 1.9M
    MLP (``counts``, `step_counts` of "adam", "koalapp", "ekf"), beside the full EKF's;
    ``small`` holds the digits MLP's counts of "adam" and "koalapp".

    See: book/koala/02-training-digits.ipynb
    """
    _mapping("counts", counts, "adam", "koalapp", "ekf")
    _mapping("small", small, "adam", "koalapp")
    n_tensors = check_int("n_tensors", n_tensors, 1)
    over = {name: counts[name].over(counts["adam"]) for name in ("koalapp", "ekf")}
    cost = {name: max(r.values()) for name, r in over.items()}  # the larger of work and bytes
    dots = counts["koalapp"].by_op["dot"]  # (calls, work, bytes) of KOALA++'s dot products
    small_over = small["koalapp"].over(small["adam"])
    kpp, ekf = over["koalapp"], over["ekf"]
    return dict(
        measured=cost["koalapp"],
        text=f"{kpp['work']:.2f}× Adam's work and {kpp['bytes']:.2f}× its memory traffic per "
        "step on the 1.9M-weight MLP (counted; the larger decides)",
        notes="the measured quantity changed on 2026-12-06: until then the rule read the "
        "wall-time ratio of the KOALA++ step over the faster torch.optim.Adam step (median of "
        "blocks, CPU, one thread), timed at 1.53× and 1.86× an hour apart on one machine, 2.67× "
        "under load and 0.78× under an emulated numerics mode, beside a full-covariance EKF "
        "timed on another model (the digits MLP's first weight matrix, 872×); since then it "
        "reads counted work and bytes (koala.step_counts, meta device, the same on every "
        "machine), with the EKF counted on the same model. Wall time is "
        "benchmarks/bench_koala.py's.",
        control=claims.control(
            "full-covariance EKF step (a dense P per tensor), the same model",
            cost["ekf"],
            text=f"{ekf['work']:.3g}× Adam's work, {ekf['bytes']:.3g}× its memory traffic",
        ),
        diagnosis=claims.diagnosis(
            "open",
            f"KOALA++'s per-tensor loop makes {dots[0] // n_tensors} dot products per tensor, "
            f"{dots[1] / counts['koalapp'].work:.0%} of its work (two flops per entry each), "
            "where Adam makes only elementwise passes; the ratio is the same on the digits MLP "
            f"({small_over['work']:.2f}× work, {small_over['bytes']:.2f}× bytes), so the gap is "
            "the method's arithmetic, not the size. In memory traffic, what bounds a large-layer "
            f"step, it is {kpp['bytes']:.2f}× Adam's",
        ),
    )


def drop_ratios(drop_runs: Mapping, seed_runs: Mapping, drop: int) -> dict[str, np.ndarray]:
    """Seed by seed, the training loss at the end of epoch ``drop`` with the learning-rate drop
    over that of the constant-rate run of the same seed.

    See: book/koala/02-training-digits.ipynb
    """
    drop = check_int("drop", drop, 1)
    return {
        name: np.array(
            [
                d.train_loss[drop] / c.train_loss[drop]
                for d, c in zip(rs, seed_runs[name][: len(rs)], strict=True)
            ]
        )
        for name, rs in drop_runs.items()
    }


def lr_drop_evidence(ratios: Mapping, pace: float, drop: int) -> dict:
    """``lr-drop-response``: KOALA++'s loss ratio after the drop and its paired differences with
    SGD-momentum's and Adam's (`drop_ratios`), beside SGD-momentum in KOALA++'s place;
    ``pace`` is KOALA++'s loss ratio over epoch ``drop`` without the drop.

    See: book/koala/02-training-digits.ipynb
    """
    _mapping("ratios", ratios, "koalapp", "sgd", "adam")
    r = {name: check_array(f"ratios[{name!r}]", v, ndim=1) for name, v in ratios.items()}
    ci, sgd_ci = mean_ci(r["koalapp"]), mean_ci(r["sgd"])
    measured = {
        "koalapp": {"estimate": ci.mean, "lo": ci.low, "hi": ci.high, "se": ci.se, "n": ci.n},
        "vs sgd": claims.paired(r["koalapp"], r["sgd"]),
        "vs adam": claims.paired(r["koalapp"], r["adam"]),
    }
    sgd_in_place = {
        "koalapp": {"estimate": sgd_ci.mean, "lo": sgd_ci.low, "hi": sgd_ci.high, "se": sgd_ci.se},
        "vs sgd": claims.paired(r["sgd"], r["koalapp"]),
        "vs adam": claims.paired(r["sgd"], r["adam"]),
    }
    return dict(
        measured=measured,
        text=f"loss ×{ci.mean:.2f} [{ci.low:.2f}, {ci.high:.2f}] after the drop (SGD-momentum "
        f"×{r['sgd'].mean():.2f}, Adam ×{r['adam'].mean():.2f}; {len(r['koalapp'])} seeds)",
        notes="ten-fold drop at epoch 6 of 10 on digits; nobody is near a plateau there",
        control=claims.control(
            "SGD-momentum in KOALA++'s place",
            sgd_in_place,
            text=f"loss ×{r['sgd'].mean():.2f} after the drop, against KOALA++ and Adam",
            paired=r["sgd"] - r["koalapp"],  # a lower ratio is the stronger response
        ),
        diagnosis=claims.diagnosis(
            "deviation",
            f"on digits every optimizer is still improving when the rate drops (KOALA++'s loss "
            f"falls ×{pace:.2f} in epoch {drop} at the constant rate, mean over seeds): the drop "
            f"only slows it (×{ci.mean:.2f}); the paper's drops come after 30 epochs at a plateau "
            "on CIFAR-100",
            deviation="digits-for-cifar",
        ),
    )
