"""The notebooks' drivers: settings validated once, training runs, sweeps over seeds, caches.

Notebook 2 passes a :class:`TrainSettings` (or :class:`CalibrationSettings`) whole to the
drivers; seed loops go through :func:`lab.core.sweep.sweep` and trained results are kept by
:func:`lab.core.diskcache.disk_memo` (numbers only) or :func:`lab.core.memo.memo` (in process).
Notebook 1's drivers are in :mod:`lab.ot_dro.toy_runs`.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lab.core.checks import check_choice, check_instance, check_int, check_positive, check_range
from lab.core.diskcache import disk_memo
from lab.core.memo import memo
from lab.core.runtime import small_problem_threads, smoke, smoke_steps
from lab.ot_dro.adadro import AdaDROConfig, adadro_step_unchecked
from lab.ot_dro.calibration import calibration_step_unchecked
from lab.ot_dro.task import (
    accuracy,
    flip_spurious_unchecked,
    make_model_unchecked,
    make_spurious_unchecked,
)

__all__ = [
    "METHODS",
    "SHIFTS",
    "TrainSettings",
    "CalibrationSettings",
    "CalibrationCosts",
    "calibration_costs",
    "calibration_scores",
    "calibration_sweep",
    "train_method",
    "calibrate",
    "shift_scores",
    "shift_sweep",
    "FilterRun",
    "filter_run",
    "shift_curve",
    "ShiftCurves",
    "shift_curves",
]

METHODS = ("erm", "erm_nu", "sinkhorn_dro", "adadro_nofilter", "adadro")
SHIFTS = np.linspace(0.0, 1.0, 21)  # shift strengths of the shift widget
#: the shifted test set (spurious agreement 0.1) and the in-distribution one (0.95)
SHIFTED_TEST = (2000, 0.1, 99)
IN_DISTRIBUTION_TEST = (2000, 0.95, 98)


@dataclass(frozen=True)
class TrainSettings:
    """One training run on the spurious task (validated once, here).

    ``method`` one of :data:`METHODS`: ``erm`` (train set), ``erm_nu`` (ERM on the augmented
    set nu = A(P)), ``sinkhorn_dro`` (worst-case weights on nu with squared-Euclidean input
    cost, no IOT, no filter), ``adadro_nofilter`` and ``adadro`` (semantic cost + IOT, with the
    paired filter). ``steps`` phase-2 Adam steps of ``batch`` rows out of ``n_train``; ``cfg``
    the AdaDRO step's hyperparameters; ``corrupt`` the fraction of harmful candidates in nu;
    ``lr`` Adam's step; ``log_every`` phase-2 steps between history entries (0: none);
    ``calib_steps`` phase-1 (semantic calibration) steps of the AdaDRO methods (0 skips it).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """

    method: str = "adadro"
    steps: int = 300
    batch: int = 128
    n_train: int = 2000
    cfg: AdaDROConfig = field(default_factory=AdaDROConfig)
    corrupt: float = 0.0
    lr: float = 3e-3
    log_every: int = 0
    calib_steps: int = 100

    def __post_init__(self):
        check_choice("method", self.method, METHODS)
        check_int("steps", self.steps, 1)
        check_int("batch", self.batch, 2)
        check_int("n_train", self.n_train, 2)
        if not isinstance(self.cfg, AdaDROConfig):
            raise TypeError(f"cfg must be an AdaDROConfig (got {type(self.cfg).__name__})")
        check_range("corrupt", self.corrupt, 0.0, 1.0)
        check_positive("lr", self.lr)
        check_int("log_every", self.log_every, 0)
        check_int("calib_steps", self.calib_steps, 0)


@dataclass(frozen=True)
class CalibrationSettings:
    """Phase 1 alone (semantic calibration): ``steps`` Adam steps of ``batch`` rows out of
    ``n_train``, IOT temperature ``tau``, step ``lr``, weight ``ce_weight`` of the label IOT.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """

    steps: int = 150
    tau: float = 0.1
    batch: int = 128
    n_train: int = 2000
    lr: float = 3e-3
    ce_weight: float = 1.0

    def __post_init__(self):
        check_int("steps", self.steps, 1)
        check_positive("tau", self.tau)
        check_int("batch", self.batch, 2)
        check_int("n_train", self.n_train, 2)
        check_positive("lr", self.lr)
        check_positive("ce_weight", self.ce_weight, allow_zero=True)


def _task(n_train, corrupt, seed):
    import torch

    X, y = make_spurious_unchecked(n_train, 0.95, seed)
    Xq, bad = flip_spurious_unchecked(X, corrupt, seed)
    return torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Xq), bad


def train_method(settings: TrainSettings, seed: int = 0):
    """Train one method on the spurious task; return ``(model, history)``.

    The AdaDRO methods first run ``settings.calib_steps`` phase-1 steps (semantic calibration:
    IOT between P and nu plus CE, :func:`calibration_step`), then ``settings.steps`` phase-2
    steps. ``history`` holds, per logged phase-2 step, the keep-rate, the clean/corrupt
    keep-rates and the robust objective R of the batch, and the phase-1 IOT losses.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    return _train_threads(
        check_instance("settings", settings, TrainSettings), check_int("seed", seed, 0)
    )


def _train_threads(settings: TrainSettings, seed: int):
    with small_problem_threads(1):
        return _train(settings, seed)


def _step_config(s: TrainSettings) -> AdaDROConfig:
    if s.method == "sinkhorn_dro":
        return replace(s.cfg, cost="euclidean", kappa=0.0, filter_rule="none")
    if s.method == "adadro_nofilter":
        return replace(s.cfg, filter_rule="none")
    return s.cfg


def _train(s: TrainSettings, seed: int):
    import torch
    import torch.nn.functional as F

    Xt, yt, Xqt, bad = _task(s.n_train, s.corrupt, seed)
    model = make_model_unchecked(Xt.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    gen = torch.Generator().manual_seed(seed)
    cfg = _step_config(s)
    hist = {"step": [], "keep": [], "keep_clean": [], "keep_bad": [], "robust": [], "iot": []}
    badt = torch.as_tensor(bad)
    if s.method in ("adadro", "adadro_nofilter"):
        for _ in range(smoke_steps(s.calib_steps)):  # phase 1: semantic calibration on P and nu
            idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
            out = calibration_step_unchecked(model, Xt[idx], Xqt[idx], yt[idx], opt, cfg.tau, 1.0)
            hist["iot"].append(out["iot"])
    steps = smoke_steps(s.steps)
    for t in range(steps):
        idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
        if s.method in ("erm", "erm_nu"):
            _, logits = model(Xt[idx] if s.method == "erm" else Xqt[idx])
            loss = F.cross_entropy(logits, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            continue
        out = adadro_step_unchecked(model, Xt[idx], yt[idx], Xqt[idx], yt[idx], opt, cfg)
        if s.log_every and (t % s.log_every == 0 or t == steps - 1):
            km, bb = out["keep_mask"], badt[idx]
            hist["step"].append(t)
            hist["keep"].append(out["keep"])
            hist["robust"].append(out["robust"])
            hist["keep_clean"].append(float(km[~bb].float().mean()) if (~bb).any() else np.nan)
            hist["keep_bad"].append(float(km[bb].float().mean()) if bb.any() else np.nan)
    return model, hist


def calibrate(settings: CalibrationSettings | None = None, seed: int = 0):
    """Phase 1 (semantic calibration) on the spurious task: IOT between P and A(P) + CE.

    Returns ``(model_before, model_after, history)``; ``history["iot"]`` is the IOT loss per step.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import copy

    import torch

    s = check_instance(
        "settings", CalibrationSettings() if settings is None else settings, CalibrationSettings
    )
    seed = check_int("seed", seed, 0)
    with small_problem_threads(1):
        Xt, yt, Xqt, _ = _task(s.n_train, 0.0, seed)
        model = make_model_unchecked(Xt.shape[1], seed=seed)
        before = copy.deepcopy(model)
        opt = torch.optim.Adam(model.parameters(), lr=s.lr)
        gen = torch.Generator().manual_seed(seed)
        hist = []
        for _ in range(smoke_steps(s.steps)):
            idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
            out = calibration_step_unchecked(
                model, Xt[idx], Xqt[idx], yt[idx], opt, s.tau, s.ce_weight
            )
            hist.append(out["iot"])  # feature + label IOT
    return before, model, {"iot": hist}


def _mean_costs(C, y):
    """Mean cost to the own copy (diagonal), to the same class and to the other class."""
    import torch

    same = (y[:, None] == y[None, :]) & ~torch.eye(len(y), dtype=torch.bool)
    return (
        float(C.diagonal().mean()),
        float(C[same].mean()),
        float(C[y[:, None] != y[None, :]].mean()),
    )


@dataclass(frozen=True)
class CalibrationCosts:
    """The semantic cost (eq. 1) of ``n`` points ``X`` to their augmentations ``Xf`` before and
    after phase 1: the matrices ``C_before``/``C_after``, and ``(own copy, same class, other
    class)`` mean costs under the paper's cost (``semantic``), its feature term alone
    (``feature``) and the squared-Euclidean input cost (``euclidean``); ``label_distance`` is
    ``1 - cos(W_0, W_1)`` of the head's class rows before and after; ``iot`` phase 1's losses."""

    before: object
    after: object
    X: object
    Xf: object
    y: object
    C_before: object
    C_after: object
    semantic: dict
    feature: dict
    euclidean: tuple
    label_distance: tuple
    iot: list


def calibration_costs(settings: CalibrationSettings | None = None, seed: int = 0, n: int = 256):
    """Phase 1 (:func:`calibrate`), then the costs of ``n`` fresh points (seed 7) to their
    augmentations under the uncalibrated and the calibrated encoder.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch
    import torch.nn.functional as F

    from lab.ot_dro.calibration import semantic_cost_unchecked

    n = check_int("n", n, 2)
    before, after, hist = calibrate(settings, seed)
    X, y = make_spurious_unchecked(n, 0.95, 7)
    Xf, _ = flip_spurious_unchecked(X, 0.0, 0)
    Xt, yt, Xft = torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Xf)

    def cost(model, alpha_y):
        with torch.no_grad():
            zp, zq = model(Xt)[0], model(Xft)[0]
            return semantic_cost_unchecked(zp, yt, zq, yt, model.head.weight, 1.0, alpha_y)

    C0, C1 = cost(before, 1.0), cost(after, 1.0)
    semantic = {"before": _mean_costs(C0, yt), "after": _mean_costs(C1, yt)}
    feature = {k: _mean_costs(cost(m, 0.0), yt) for k, m in (("before", before), ("after", after))}
    euclidean = _mean_costs(torch.cdist(Xt, Xft) ** 2, yt)
    label = tuple(
        float(1 - F.cosine_similarity(m.head.weight[0], m.head.weight[1], dim=0).detach())
        for m in (before, after)
    )
    return CalibrationCosts(
        before, after, Xt, Xft, yt, C0, C1, semantic, feature, euclidean, label, hist["iot"]
    )


def _disk(fn):
    """``fn``'s disk tier, or ``fn`` itself in smoke mode: a smoke run's short results must
    never answer for a real run (the disk key does not see ``LAB_SMOKE``)."""
    return fn.uncached if smoke() else fn


def calibration_scores(settings: CalibrationSettings, seed: int) -> dict:
    """The cost ratios of :func:`calibration_costs` at ``seed``: ``own_copy`` (own copy over
    same class, after), ``blocks_before``/``blocks_after`` (other class over same class, the
    paper's cost) and ``feature_before``/``feature_after`` (the same, feature term alone).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    seed = check_int("seed", seed, 0)
    return _disk(_calibration_scores)(
        check_instance("settings", settings, CalibrationSettings), seed
    )


@disk_memo
def _calibration_scores(settings: CalibrationSettings, seed: int) -> dict:
    c = calibration_costs(settings, seed)
    (_, m0, d0), (s1, m1, d1) = c.semantic["before"], c.semantic["after"]
    (_, f_m0, f_d0), (_, f_m1, f_d1) = c.feature["before"], c.feature["after"]
    return {
        "own_copy": s1 / m1,
        "blocks_before": d0 / m0,
        "blocks_after": d1 / m1,
        "feature_before": f_d0 / f_m0,
        "feature_after": f_d1 / f_m1,
    }


def calibration_sweep(settings: CalibrationSettings, seeds):
    """:func:`calibration_scores` over ``seeds`` (a :class:`lab.core.sweep.Sweep`).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    from functools import partial

    from lab.core.sweep import sweep

    settings = check_instance("settings", settings, CalibrationSettings)
    return sweep(partial(calibration_scores, settings=settings), None, seeds=seeds, desc="seeds")


@memo(maxsize=64)
def _trained_model(settings: TrainSettings, seed: int):
    """One trained model per (settings, seed) in this process: the shift sweep and the shift
    widget share their ERM, ERM-on-nu and AdaDRO runs."""
    return _train_threads(settings, seed)[0]


@memo(maxsize=4)
def _test_sets():
    return make_spurious_unchecked(*SHIFTED_TEST), make_spurious_unchecked(*IN_DISTRIBUTION_TEST)


def shift_scores(method: str, settings: TrainSettings, seed: int) -> dict:
    """Shifted-test (agreement 0.1) and in-distribution (0.95) accuracy of ``method`` trained
    with ``settings`` (its ``method`` replaced) at ``seed``; kept on disk.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    method, seed = check_choice("method", method, METHODS), check_int("seed", seed, 0)
    return _disk(_shift_scores)(method, check_instance("settings", settings, TrainSettings), seed)


@disk_memo
def _shift_scores(method: str, settings: TrainSettings, seed: int) -> dict:
    model = _trained_model(replace(settings, method=method), seed)
    (Xs, ys), (Xi, yi) = _test_sets()
    return {"shifted": accuracy(model, Xs, ys), "in_distribution": accuracy(model, Xi, yi)}


def shift_sweep(settings: TrainSettings, methods, seeds):
    """:func:`shift_scores` of every method over ``seeds`` (paired seed by seed): a
    :class:`lab.core.sweep.Sweep` with one setting per method and outputs ``shifted`` and
    ``in_distribution``. Each method is its own sweep over the seeds, so that smoke mode keeps
    every method (and two seeds).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    from functools import partial

    from lab.core.sweep import Sweep, sweep

    settings = check_instance("settings", settings, TrainSettings)
    methods = [check_choice("methods", m, METHODS) for m in methods]
    runs = {
        m: sweep(partial(shift_scores, m, settings=settings), None, seeds, desc=m) for m in methods
    }
    rows = tuple({"method": m, **row} for m, run in runs.items() for row in run.rows)
    return Sweep(tuple({"method": m} for m in methods), runs[methods[0]].seeds, rows)


@dataclass(frozen=True)
class FilterRun:
    """Shifted-test accuracy per method with corrupt candidates, the filtered AdaDRO run's
    history (keep-rates of clean and corrupt candidates per logged step) and that of AdaDRO
    with the official trainer's unpaired filter (``adadro_unpaired``, the filter's rival)."""

    accuracy: dict
    history: dict
    history_unpaired: dict


def filter_run(settings: TrainSettings, seed: int, methods=("erm_nu", "adadro_nofilter", "adadro")):
    """Each of ``methods`` trained with ``settings`` (corrupt candidates, logged) at ``seed``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    methods = tuple(check_choice("methods", m, METHODS) for m in methods)
    seed = check_int("seed", seed, 0)
    return _disk(_filter_run)(check_instance("settings", settings, TrainSettings), seed, methods)


@disk_memo
def _filter_run(settings: TrainSettings, seed: int, methods) -> FilterRun:
    from lab.core.progress import progress

    (Xs, ys), _ = _test_sets()
    acc, hist = {}, None
    for m in progress(methods, desc="corrupt"):
        model, h = _train_threads(replace(settings, method=m), seed)
        acc[m] = accuracy(model, Xs, ys)
        hist = h if m == "adadro" else hist
    unpaired = replace(settings, method="adadro", cfg=replace(settings.cfg, filter_rule="unpaired"))
    model, h_unpaired = _train_threads(unpaired, seed)
    acc["adadro_unpaired"] = accuracy(model, Xs, ys)
    return FilterRun(acc, hist, h_unpaired)


def shift_curve(model, shifts=SHIFTS, n: int = 1000):
    """Accuracy of ``model`` on test sets whose spurious agreement is ``1 - shift``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    shifts = np.asarray(shifts, dtype=float)
    if shifts.ndim != 1 or not ((shifts >= 0) & (shifts <= 1)).all():
        raise ValueError(f"shifts must be a 1-d sequence in [0, 1] (got {shifts!r})")
    return _shift_curve(model, shifts, check_int("n", n, 1))


def _shift_curve(model, shifts=SHIFTS, n: int = 1000):
    return np.array(
        [accuracy(model, *make_spurious_unchecked(n, 1.0 - float(s), 99)) for s in shifts]
    )


@dataclass(frozen=True)
class ShiftCurves:
    """Accuracy over :data:`SHIFTS` of ERM, ERM on nu and AdaDRO (calibration temperature
    ``tau``): what the shift widget draws."""

    tau: float
    shifts: np.ndarray
    curves: dict


@memo(maxsize=16)
def _curve(settings: TrainSettings, seed: int):
    return _shift_curve(_trained_model(settings, seed))


def shift_curves(tau: float = 0.1, seed: int = 0, steps: int = 300) -> ShiftCurves:
    """:func:`shift_curve` of ERM, ERM on nu (``tau = 0.1``) and AdaDRO (``tau``), each
    trained once (cached: the shift widget of notebook 2 draws it).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    shown = TrainSettings(steps=steps, cfg=AdaDROConfig(tau=tau))  # validates steps and tau
    seed = check_int("seed", seed, 0)
    runs = {m: TrainSettings(method=m, steps=shown.steps) for m in METHODS_SHOWN if m != "adadro"}
    runs["adadro"] = shown
    curves = {m: _curve(runs[m], seed) for m in METHODS_SHOWN}
    return ShiftCurves(shown.cfg.tau, SHIFTS, curves)


METHODS_SHOWN = ("erm", "erm_nu", "adadro")
