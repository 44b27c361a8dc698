"""The notebooks' drivers: settings validated once, training runs, sweeps over seeds, caches.

Notebook 2 passes a :class:`TrainSettings` (or :class:`CalibrationSettings`) whole to the
drivers; seed loops go through :func:`lab.core.sweep.sweep` and trained results are kept by
:func:`lab.core.diskcache.disk_memo` (numbers only) or :func:`lab.core.memo.memo` (in process).
Notebook 1's drivers: the 2-D toy's worst case and radius curves, gradient descent on the
convex fixed-cost objective, the bias of the nested objective.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.diskcache import disk_memo
from lab.core.memo import memo
from lab.core.runtime import small_problem_threads
from lab.ot_dro.adadro import AdaDROConfig, adadro_step_unchecked
from lab.ot_dro.calibration import iot_loss_unchecked
from lab.ot_dro.task import accuracy, flip_spurious, make_model, make_spurious
from lab.ot_dro.toy import toy_2d, toy_cost, toy_losses

__all__ = [
    "METHODS",
    "SHIFTS",
    "TrainSettings",
    "CalibrationSettings",
    "train_method",
    "calibrate",
    "calibration_step",
    "shift_scores",
    "shift_sweep",
    "FilterRun",
    "filter_run",
    "shift_curve",
    "ShiftCurves",
    "shift_curves",
    "LAMS",
    "lam_curve",
    "ToyPlan",
    "toy_plan",
    "DescentRun",
    "dro_descent",
    "NestedBias",
    "nested_bias",
]

METHODS = ("erm", "erm_nu", "sinkhorn_dro", "adadro_nofilter", "adadro")
SHIFTS = np.linspace(0.0, 1.0, 21)  # shift strengths of the shift widget
LAMS = np.geomspace(0.05, 20, 30)  # the lambda grid of the radius panel
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


def _settings(settings, kind):
    if not isinstance(settings, kind):
        raise TypeError(f"settings must be a {kind.__name__} (got {type(settings).__name__})")
    return settings


def _task(n_train, corrupt, seed):
    import torch

    X, y = make_spurious(n_train, 0.95, seed)
    Xq, bad = flip_spurious(X, corrupt, seed)
    return torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Xq), bad


def calibration_step(model, x_a, x_b, y, opt, tau: float = 0.1, ce_weight: float = 1.0) -> dict:
    """One phase-1 step: feature IOT (InfoNCE) between two views + label IOT (cross-entropy).

    Parameters
    ----------
    model : torch.nn.Module
        ``model(x) -> (features, logits)``.
    x_a, x_b : Tensor [N, d]
        The two views (``x_b[i]`` the augmentation of ``x_a[i]``).
    y : LongTensor [N]
    opt : torch.optim.Optimizer
    tau, ce_weight : float
        InfoNCE temperature (> 0) and weight of the CE term (>= 0).

    Returns
    -------
    dict with ``iot`` and ``ce``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    tau = check_positive("tau", tau)
    ce_weight = check_positive("ce_weight", ce_weight, allow_zero=True)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"opt must be a torch optimizer (got {type(opt).__name__})")
    for name, t in (("x_a", x_a), ("x_b", x_b), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (got {type(t).__name__})")
    return calibration_step_unchecked(model, x_a, x_b, y, opt, tau, ce_weight)


def calibration_step_unchecked(model, x_a, x_b, y, opt, tau, ce_weight) -> dict:
    """:func:`calibration_step` on validated arguments (the training loops' step)."""
    import torch.nn.functional as F

    za, logits = model(x_a)
    zb, _ = model(x_b)
    iot = iot_loss_unchecked(za, zb, tau)
    ce = F.cross_entropy(logits, y)
    opt.zero_grad()
    (iot + ce_weight * ce).backward()
    opt.step()
    return {"iot": float(iot.detach()), "ce": float(ce.detach())}


def train_method(settings: TrainSettings, seed: int = 0):
    """Train one method on the spurious task; return ``(model, history)``.

    The AdaDRO methods first run ``settings.calib_steps`` phase-1 steps (semantic calibration:
    IOT between P and nu plus CE, :func:`calibration_step`), then ``settings.steps`` phase-2
    steps. ``history`` holds, per logged phase-2 step, the keep-rate, the clean/corrupt
    keep-rates and the robust objective R of the batch, and the phase-1 IOT losses.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    settings = _settings(settings, TrainSettings)
    seed = check_int("seed", seed, 0)
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
    model = make_model(Xt.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    gen = torch.Generator().manual_seed(seed)
    cfg = _step_config(s)
    hist = {"step": [], "keep": [], "keep_clean": [], "keep_bad": [], "robust": [], "iot": []}
    badt = torch.as_tensor(bad)
    if s.method in ("adadro", "adadro_nofilter"):
        for _ in range(s.calib_steps):  # phase 1: semantic calibration on P and nu
            idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
            out = calibration_step_unchecked(model, Xt[idx], Xqt[idx], yt[idx], opt, cfg.tau, 1.0)
            hist["iot"].append(out["iot"])
    for t in range(s.steps):
        idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
        if s.method in ("erm", "erm_nu"):
            _, logits = model(Xt[idx] if s.method == "erm" else Xqt[idx])
            loss = F.cross_entropy(logits, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            continue
        out = adadro_step_unchecked(model, Xt[idx], yt[idx], Xqt[idx], yt[idx], opt, cfg)
        if s.log_every and (t % s.log_every == 0 or t == s.steps - 1):
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

    s = _settings(CalibrationSettings() if settings is None else settings, CalibrationSettings)
    seed = check_int("seed", seed, 0)
    with small_problem_threads(1):
        Xt, yt, Xqt, _ = _task(s.n_train, 0.0, seed)
        model = make_model(Xt.shape[1], seed=seed)
        before = copy.deepcopy(model)
        opt = torch.optim.Adam(model.parameters(), lr=s.lr)
        gen = torch.Generator().manual_seed(seed)
        hist = []
        for _ in range(s.steps):
            idx = torch.randint(0, s.n_train, (s.batch,), generator=gen)
            out = calibration_step_unchecked(
                model, Xt[idx], Xqt[idx], yt[idx], opt, s.tau, s.ce_weight
            )
            hist.append(out["iot"])  # feature + label IOT
    return before, model, {"iot": hist}


@memo(maxsize=4)
def _test_sets():
    return make_spurious(*SHIFTED_TEST[:2], seed=SHIFTED_TEST[2]), make_spurious(
        *IN_DISTRIBUTION_TEST[:2], seed=IN_DISTRIBUTION_TEST[2]
    )


@disk_memo
def shift_scores(method: str, settings: TrainSettings, seed: int) -> dict:
    """Shifted-test (agreement 0.1) and in-distribution (0.95) accuracy of ``method`` trained
    with ``settings`` (its ``method`` replaced) at ``seed``; kept on disk.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    model, _ = train_method(replace(_settings(settings, TrainSettings), method=method), seed)
    (Xs, ys), (Xi, yi) = _test_sets()
    return {"shifted": accuracy(model, Xs, ys), "in_distribution": accuracy(model, Xi, yi)}


def shift_sweep(settings: TrainSettings, methods, seeds):
    """:func:`shift_scores` of every method over ``seeds`` (paired seed by seed): a
    :class:`lab.core.sweep.Sweep` with outputs ``shifted`` and ``in_distribution``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    from functools import partial

    from lab.core.sweep import sweep

    settings = _settings(settings, TrainSettings)
    methods = [check_choice("methods", m, METHODS) for m in methods]
    run = partial(shift_scores, settings=settings)
    return sweep(run, {"method": methods}, seeds=seeds, desc="methods")


@dataclass(frozen=True)
class FilterRun:
    """Shifted-test accuracy per method with corrupt candidates, and the filtered AdaDRO run's
    history (keep-rates of clean and corrupt candidates per logged step)."""

    accuracy: dict
    history: dict


@disk_memo
def filter_run(settings: TrainSettings, seed: int, methods=("erm_nu", "adadro_nofilter", "adadro")):
    """Each of ``methods`` trained with ``settings`` (corrupt candidates, logged) at ``seed``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    from lab.core.progress import progress

    settings = _settings(settings, TrainSettings)
    (Xs, ys), _ = _test_sets()
    acc, hist = {}, None
    for m in progress(methods, desc="corrupt"):
        model, h = train_method(replace(settings, method=check_choice("methods", m, METHODS)), seed)
        acc[m] = accuracy(model, Xs, ys)
        hist = h if m == "adadro" else hist
    return FilterRun(acc, hist)


def shift_curve(model, shifts=SHIFTS, n: int = 1000):
    """Accuracy of ``model`` on test sets whose spurious agreement is ``1 - shift``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    return np.array([accuracy(model, *make_spurious(n, 1.0 - float(s), seed=99)) for s in shifts])


@dataclass(frozen=True)
class ShiftCurves:
    """Accuracy over :data:`SHIFTS` of ERM, ERM on nu and AdaDRO (calibration temperature
    ``tau``): what the shift widget draws."""

    tau: float
    shifts: np.ndarray
    curves: dict


@memo(maxsize=16)
def _curve(method: str, tau: float, seed: int, steps: int):
    s = TrainSettings(method=method, steps=steps, cfg=AdaDROConfig(tau=tau))
    return shift_curve(train_method(s, seed)[0])


def shift_curves(tau: float = 0.1, seed: int = 0, steps: int = 300) -> ShiftCurves:
    """:func:`shift_curve` of ERM, ERM on nu (``tau = 0.1``) and AdaDRO (``tau``), each
    trained once (cached: the shift widget of notebook 2 draws it).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    tau = check_positive("tau", tau)
    seed, steps = check_int("seed", seed, 0), check_int("steps", steps, 1)
    curves = {m: _curve(m, tau if m == "adadro" else 0.1, seed, steps) for m in METHODS_SHOWN}
    return ShiftCurves(tau, SHIFTS, curves)


METHODS_SHOWN = ("erm", "erm_nu", "adadro")


# ---------------------------------------------------------------------------------------------
# notebook 1: the 2-D toy's worst case, the convex fixed-cost objective, the nested bias
# ---------------------------------------------------------------------------------------------
@memo
def lam_curve(lams, eps: float, seed: int = 0):
    """Implied radius rho(lam) (eq. 5) and robust objective R(lam) (eq. 4) on the 2-D toy.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    from lab.ot_dro.fast import (
        implied_radius_unchecked,
        sinkhorn_dro_objective_unchecked,
        worst_case_weights_unchecked,
    )

    eps = check_positive("eps", eps)
    lams = [check_positive("lams", lam) for lam in np.atleast_1d(lams)]
    P, _, Q, yQ = toy_2d(seed=seed)
    loss = torch.as_tensor(toy_losses(Q, yQ))
    C = torch.as_tensor(toy_cost(P, Q))
    rho = [float(implied_radius_unchecked(worst_case_weights_unchecked(loss, C, lam, eps)[0], C))
           for lam in lams]  # fmt: skip
    R = [float(sinkhorn_dro_objective_unchecked(loss, C, lam, eps)) for lam in lams]
    return np.array(rho), np.array(R)


@dataclass(frozen=True)
class ToyPlan:
    """The 2-D toy's worst case at one ``(lam, eps)``: points, losses, cost, plan ``pi``,
    weights ``Q`` and implied radius ``rho``; ``rho_curve``/``R_curve`` over ``lams``."""

    lam: float
    eps: float
    P: np.ndarray
    yP: np.ndarray
    Q: np.ndarray
    yQ: np.ndarray
    loss: np.ndarray
    C: np.ndarray
    pi: np.ndarray
    Qw: np.ndarray
    rho: float
    lams: np.ndarray
    rho_curve: np.ndarray
    R_curve: np.ndarray


@memo
def toy_plan(lam: float = 1.0, eps: float = 0.1, seed: int = 0) -> ToyPlan:
    """The worst-case plan of the 2-D toy at ``(lam, eps)`` and the radius curve of ``eps``
    (cached: the widget of notebook 1 draws it).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    from lab.ot_dro.fast import implied_radius, worst_case_weights

    P, yP, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    pi, Qw = worst_case_weights(loss, C, lam, eps)
    rho_curve, R_curve = lam_curve(LAMS, float(eps), seed)
    rho = float(implied_radius(pi, C))
    return ToyPlan(lam, eps, P, yP, Q, yQ, loss, C, pi, Qw, rho, LAMS, rho_curve, R_curve)


@dataclass
class DescentRun:
    """Full-batch gradient descent on a Sinkhorn-DRO objective: ``grad_norm[t]``, ``objective[t]``."""

    grad_norm: np.ndarray
    objective: np.ndarray
    lr: float
    smoothness: float
    mu: float


def dro_descent(X, y, C, lam: float = 1.0, eps: float = 0.1, mu: float = 0.5, steps: int = 3000):
    """Gradient descent on ``F(w) = R(w) + mu/2 |w|^2``, ``R`` the Sinkhorn-DRO dual (eq. 4).

    ``R(w) = lam eps mean_i log mean_j exp((l_j(w) - lam C_ij) / (lam eps))`` with the logistic
    loss ``l_j(w) = log(1 + exp(-y_j <w, x_j>))`` of the candidates ``(X, y)`` (labels +-1) and
    a fixed cost ``C [N, M]``. ``F`` is convex and ``mu``-strongly convex; the step is ``1/L``
    with the bound ``L = max_j |x_j|^2 (1/4 + 1/(lam eps)) + mu``, so the gradient norm should
    fall geometrically. ``grad R = sum_j Q_j grad l_j`` with ``Q`` of eq. (3).

    Returns
    -------
    DescentRun

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    from lab.ot_dro.reference import (
        sinkhorn_dro_objective_unchecked,
        worst_case_weights_unchecked,
    )

    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    mu = check_positive("mu", mu)
    steps = check_int("steps", steps, 1)
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X and y must be array-like of numbers: {exc}") from None
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],) or not np.isfinite(X).all():
        raise ValueError(f"X must be a finite [M, d] array and y [M] (got {X.shape}, {y.shape})")
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[1] != X.shape[0] or not np.isfinite(C).all():
        raise ValueError(f"C must be a finite [N, M = {X.shape[0]}] array (got {C.shape})")
    L = float((X**2).sum(1).max()) * (0.25 + 1.0 / (lam * eps)) + mu
    lr = 1.0 / L
    w = np.zeros(X.shape[1])
    gn, obj = np.empty(steps + 1), np.empty(steps + 1)
    for t in range(steps + 1):
        margin = y * (X @ w)
        loss = np.logaddexp(0.0, -margin)
        _, Q = worst_case_weights_unchecked(loss, C, lam, eps)
        R = sinkhorn_dro_objective_unchecked(loss, C, lam, eps)
        dl = -(y / (1.0 + np.exp(margin)))[:, None] * X  # grad l_j
        g = Q @ dl + mu * w
        gn[t], obj[t] = np.linalg.norm(g), R + 0.5 * mu * float(w @ w)
        if t < steps:
            w = w - lr * g
    return DescentRun(gn, obj, lr, L, mu)


@dataclass
class NestedBias:
    """Bias of the mini-batch Sinkhorn-DRO objective against the full reference pool."""

    M: np.ndarray
    bias: np.ndarray
    stderr: np.ndarray
    full: float


def nested_bias(
    loss_pool, C_pool, Ms, lam: float = 1.0, eps: float = 0.1, reps: int = 400, seed: int = 0
):
    """``E[R_M] - R_full`` for inner batches of ``M`` candidates drawn from the pool.

    ``R`` is a mean over training points of a log of an inner mean (eq. 4), so a plug-in inner
    mean over ``M`` samples is biased downwards by about ``Var / (2 M)`` (Jensen): the reason
    why the authors' rate needs an MLMC estimator. ``Ms`` are the inner batch sizes.

    Returns
    -------
    NestedBias

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    import torch

    from lab.ot_dro.fast import sinkhorn_dro_objective_unchecked as objective

    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    reps = check_int("reps", reps, 2)
    seed = check_int("seed", seed, 0)
    loss_pool = torch.as_tensor(np.asarray(loss_pool, dtype=np.float64))
    C_pool = torch.as_tensor(np.asarray(C_pool, dtype=np.float64))
    if C_pool.ndim != 2 or loss_pool.shape != (C_pool.shape[1],):
        raise ValueError(f"C_pool must be [N, P] and loss_pool [P] (got {tuple(C_pool.shape)})")
    if not bool(torch.isfinite(C_pool).all() and torch.isfinite(loss_pool).all()):
        raise ValueError("loss_pool and C_pool must be finite (found NaN or inf)")
    Ms = np.asarray([check_int("M", int(m), 1) for m in np.atleast_1d(Ms)])
    full = float(objective(loss_pool, C_pool, lam, eps))
    gen = torch.Generator().manual_seed(seed)
    bias, se = [], []
    with small_problem_threads(1):
        for m in Ms:
            idx = torch.randint(0, C_pool.shape[1], (reps, int(m)), generator=gen)
            vals = objective(loss_pool[idx], C_pool[:, idx].permute(1, 0, 2), lam, eps)
            bias.append(float(vals.mean()) - full)
            se.append(float(vals.std()) / np.sqrt(reps))
    return NestedBias(Ms, np.array(bias), np.array(se), full)
