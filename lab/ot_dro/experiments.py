"""The spurious-feature toy task (ours) and the drivers of the notebooks.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.runtime import small_problem_threads
from lab.ot_dro.adadro import AdaDROConfig, adadro_step
from lab.ot_dro.calibration import iot_loss
from lab.ot_dro.fast import implied_radius, sinkhorn_dro_objective, worst_case_weights

__all__ = [
    "METHODS",
    "make_spurious",
    "flip_spurious",
    "make_model",
    "accuracy",
    "train_method",
    "calibrate",
    "calibration_step",
    "dro_descent",
    "nested_bias",
    "DescentRun",
    "NestedBias",
    "W_FIXED",
    "LAMS",
    "SHIFTS",
    "toy_2d",
    "toy_losses",
    "toy_cost",
    "lam_curve",
    "ToyPlan",
    "toy_plan",
    "shift_curve",
    "shift_accuracy",
]

METHODS = ("erm", "erm_nu", "sinkhorn_dro", "adadro_nofilter", "adadro")


def make_spurious(
    n: int, agree: float = 0.95, seed: int = 0, core_noise: float = 1.0, n_noise: int = 5
):
    """Binary task: 2 noisy core coordinates, 1 clean spurious coordinate, ``n_noise`` noise.

    The spurious coordinate equals ``+-1`` and agrees with the label sign with probability
    ``agree`` (0.95 in training; the shifted test uses a low value). Returns float32
    ``X [n, 3 + n_noise]`` and int64 ``y [n]``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    n = check_int("n", n, 1)
    agree = check_range("agree", agree, 0.0, 1.0)
    seed = check_int("seed", seed, 0)
    core_noise = check_positive("core_noise", core_noise)
    n_noise = check_int("n_noise", n_noise, 0)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = 2.0 * y - 1.0
    core = s[:, None] * np.array([1.0, 1.0]) + core_noise * rng.standard_normal((n, 2))
    spur = np.where(rng.random(n) < agree, s, -s)[:, None]
    noise = rng.standard_normal((n, n_noise))
    X = np.concatenate([core, spur, noise], axis=1).astype(np.float32)
    return X, y.astype(np.int64)


def flip_spurious(X, corrupt: float = 0.0, seed: int = 0, p_flip: float = 0.5):
    """The prior augmentation A: flip the sign of the spurious coordinate (index 2).

    Each row is flipped with probability ``p_flip`` (0.5: the augmented set carries no
    spurious signal; 1.0 flips every row and builds the *reversed* correlation). A fraction
    ``corrupt`` of the rows is replaced by a harmful candidate (core coordinates negated: it
    keeps its label but now looks like the other class) that the filter should drop. Returns
    ``(X_aug, is_corrupt)``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    corrupt = check_range("corrupt", corrupt, 0.0, 1.0)
    p_flip = check_range("p_flip", p_flip, 0.0, 1.0)
    try:
        X = np.array(X, dtype=np.float32, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"X must be array-like of numbers (got {type(X).__name__}): {exc}"
        ) from None
    if X.ndim != 2 or X.shape[1] < 3:
        raise ValueError(f"X must be [n, d] with d >= 3 (got shape {X.shape})")
    if not np.isfinite(X).all():
        raise ValueError("X must be finite (found NaN or inf)")
    rng = np.random.default_rng(check_int("seed", seed, 0) + 12345)
    flip = rng.random(X.shape[0]) < p_flip
    X[flip, 2] = -X[flip, 2]
    bad = rng.random(X.shape[0]) < corrupt
    X[bad, :2] = -X[bad, :2]
    return X, bad


def make_model(d_in: int = 8, hidden: int = 32, k: int = 16, n_classes: int = 2, seed: int = 0):
    """MLP encoder ``d_in -> hidden -> k`` plus a linear head; ``forward -> (z, logits)``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch
    from torch import nn

    d_in = check_int("d_in", d_in, 1)
    hidden = check_int("hidden", hidden, 1)
    k = check_int("k", k, 1)
    n_classes = check_int("n_classes", n_classes, 2)
    seed = check_int("seed", seed, 0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, k))
            self.head = nn.Linear(k, n_classes)

        def forward(self, x):
            z = self.enc(x)
            return z, self.head(torch.relu(z))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # local: the global generator is restored on exit
        return Net()


def accuracy(model, X, y) -> float:
    """Classification accuracy of ``model`` on numpy ``X, y``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    try:
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X and y must be array-like: {exc}") from None
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be [n, d] with n >= 1 and y [n] (got {X.shape}, {y.shape})")
    with torch.no_grad():
        _, logits = model(torch.as_tensor(X))
        return float((logits.argmax(1).numpy() == y).mean())


def train_method(
    method: str,
    seed: int = 0,
    steps: int = 300,
    batch: int = 128,
    n_train: int = 2000,
    cfg: AdaDROConfig | None = None,
    corrupt: float = 0.0,
    lr: float = 3e-3,
    log_every: int = 0,
    calib_steps: int = 100,
):
    """Train one method on the spurious task; return ``(model, history)``.

    Methods: ``erm`` (train set), ``erm_nu`` (ERM on the augmented set nu = A(P)),
    ``sinkhorn_dro`` (worst-case weights on nu with squared-Euclidean input cost, no IOT, no
    filter), ``adadro_nofilter`` and ``adadro`` (semantic cost + IOT, with the paired filter).
    The AdaDRO methods first run ``calib_steps`` phase-1 steps (semantic calibration: IOT
    between P and nu plus CE, :func:`calibration_step`), then ``steps`` phase-2 steps; 0 skips
    phase 1. ``history`` holds, per logged phase-2 step, the keep-rate, the clean/corrupt
    keep-rates and the robust objective R of the batch.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    method = check_choice("method", method, METHODS)
    steps = check_int("steps", steps, 1)
    batch = check_int("batch", batch, 2)
    cfg = AdaDROConfig() if cfg is None else cfg
    if not isinstance(cfg, AdaDROConfig):
        raise TypeError(f"cfg must be an AdaDROConfig (got {type(cfg).__name__})")
    corrupt = check_range("corrupt", corrupt, 0.0, 1.0)
    lr = check_positive("lr", lr)
    log_every = check_int("log_every", log_every, 0)
    seed = check_int("seed", seed, 0)
    n_train = check_int("n_train", n_train, 2)
    calib_steps = check_int("calib_steps", calib_steps, 0)
    with small_problem_threads(1):
        return _train(method, seed, steps, batch, n_train, cfg, corrupt, lr, log_every, calib_steps)


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
    import torch.nn.functional as F

    tau = check_positive("tau", tau)
    ce_weight = check_positive("ce_weight", ce_weight, allow_zero=True)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"opt must be a torch optimizer (got {type(opt).__name__})")
    for name, t in (("x_a", x_a), ("x_b", x_b), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (got {type(t).__name__})")
    za, logits = model(x_a)
    zb, _ = model(x_b)
    iot = iot_loss(za, zb, tau)
    ce = F.cross_entropy(logits, y)
    opt.zero_grad()
    (iot + ce_weight * ce).backward()
    opt.step()
    return {"iot": float(iot.detach()), "ce": float(ce.detach())}


def _train(method, seed, steps, batch, n_train, cfg, corrupt, lr, log_every, calib_steps=0):
    import torch
    import torch.nn.functional as F

    X, y = make_spurious(n_train, 0.95, seed)
    Xq, bad = flip_spurious(X, corrupt, seed)
    Xt, yt, Xqt = torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Xq)
    model = make_model(X.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    if method == "sinkhorn_dro":
        cfg = AdaDROConfig(**{**cfg.__dict__, "cost": "euclidean", "kappa": 0.0})
        cfg.filter_rule = "none"
    elif method == "adadro_nofilter":
        cfg = AdaDROConfig(**{**cfg.__dict__, "filter_rule": "none"})
    hist = {"step": [], "keep": [], "keep_clean": [], "keep_bad": [], "robust": [], "iot": []}
    badt = torch.as_tensor(bad)
    if method in ("adadro", "adadro_nofilter"):
        for _ in range(calib_steps):  # phase 1: semantic calibration on P and nu
            idx = torch.randint(0, n_train, (batch,), generator=gen)
            out = calibration_step(model, Xt[idx], Xqt[idx], yt[idx], opt, cfg.tau)
            hist["iot"].append(out["iot"])
    for t in range(steps):
        idx = torch.randint(0, n_train, (batch,), generator=gen)
        if method in ("erm", "erm_nu"):
            xb = Xt[idx] if method == "erm" else Xqt[idx]
            _, logits = model(xb)
            loss = F.cross_entropy(logits, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            continue
        out = adadro_step(model, (Xt[idx], yt[idx]), (Xqt[idx], yt[idx]), opt, cfg)
        if log_every and (t % log_every == 0 or t == steps - 1):
            km, bb = out["keep_mask"], badt[idx]
            hist["step"].append(t)
            hist["keep"].append(out["keep"])
            hist["robust"].append(out["robust"])
            hist["keep_clean"].append(float(km[~bb].float().mean()) if (~bb).any() else np.nan)
            hist["keep_bad"].append(float(km[bb].float().mean()) if bb.any() else np.nan)
    return model, hist


def calibrate(
    steps: int = 150,
    tau: float = 0.1,
    seed: int = 0,
    batch: int = 128,
    n_train: int = 2000,
    lr: float = 3e-3,
    ce_weight: float = 1.0,
):
    """Phase 1 (semantic calibration) on the spurious task: IOT between P and A(P) + CE.

    Returns ``(model_before, model_after, history)``; ``history["iot"]`` is the IOT loss per step.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    import copy

    import torch

    steps = check_int("steps", steps, 1)
    tau = check_positive("tau", tau)
    batch = check_int("batch", batch, 2)
    ce_weight = check_positive("ce_weight", ce_weight, allow_zero=True)
    with small_problem_threads(1):
        X, y = make_spurious(n_train, 0.95, seed)
        Xq, _ = flip_spurious(X, 0.0, seed)
        Xt, yt, Xqt = torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Xq)
        model = make_model(X.shape[1], seed=seed)
        before = copy.deepcopy(model)
        opt = torch.optim.Adam(model.parameters(), lr=check_positive("lr", lr))
        gen = torch.Generator().manual_seed(seed)
        hist = []
        for _ in range(steps):
            idx = torch.randint(0, n_train, (batch,), generator=gen)
            out = calibration_step(model, Xt[idx], Xqt[idx], yt[idx], opt, tau, ce_weight)
            hist.append(out["iot"])  # feature + label IOT
    return before, model, {"iot": hist}


# ----------------------------------------------------------------------------------------
# convergence and the bias of the nested objective
# ----------------------------------------------------------------------------------------
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
    fall geometrically. Uses :func:`lab.ot_dro.reference.worst_case_weights` (``grad R = sum_j Q_j grad l_j``).

    Returns
    -------
    DescentRun

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    from lab.ot_dro.reference import worst_case_weights

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
    if C.ndim != 2 or C.shape[1] != X.shape[0]:
        raise ValueError(f"C must be [N, M = {X.shape[0]}] (got {C.shape})")
    L = float((X**2).sum(1).max()) * (0.25 + 1.0 / (lam * eps)) + mu
    lr = 1.0 / L
    w = np.zeros(X.shape[1])
    gn, obj = np.empty(steps + 1), np.empty(steps + 1)
    for t in range(steps + 1):
        margin = y * (X @ w)
        loss = np.logaddexp(0.0, -margin)
        _, Q = worst_case_weights(loss, C, lam, eps)
        s = (loss[None, :] - lam * C) / (lam * eps)
        smax = s.max(1, keepdims=True)
        R = lam * eps * float(np.mean(smax[:, 0] + np.log(np.exp(s - smax).mean(1))))
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

    from lab.ot_dro.fast import sinkhorn_dro_objective

    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    reps = check_int("reps", reps, 2)
    seed = check_int("seed", seed, 0)
    loss_pool = torch.as_tensor(np.asarray(loss_pool, dtype=np.float64))
    C_pool = torch.as_tensor(np.asarray(C_pool, dtype=np.float64))
    if C_pool.ndim != 2 or loss_pool.shape != (C_pool.shape[1],):
        raise ValueError(f"C_pool must be [N, P] and loss_pool [P] (got {tuple(C_pool.shape)})")
    Ms = np.asarray([check_int("M", int(m), 1) for m in np.atleast_1d(Ms)])
    full = float(sinkhorn_dro_objective(loss_pool, C_pool, lam, eps))
    gen = torch.Generator().manual_seed(seed)
    bias, se = [], []
    with small_problem_threads(1):
        for m in Ms:
            idx = torch.randint(0, C_pool.shape[1], (reps, int(m)), generator=gen)
            vals = sinkhorn_dro_objective(loss_pool[idx], C_pool[:, idx].permute(1, 0, 2), lam, eps)
            bias.append(float(vals.mean()) - full)
            se.append(float(vals.std()) / np.sqrt(reps))
    return NestedBias(Ms, np.array(bias), np.array(se), full)


# ---------------------------------------------------------------------------------------------
# Notebook 1's 2-D toy and the widgets' drivers (computed and cached here; figures.py draws)
# ---------------------------------------------------------------------------------------------
W_FIXED = np.array([1.5, 0.3])  # the fixed linear model of notebook 1 (mostly uses x1)
LAMS = np.geomspace(0.05, 20, 30)  # the lambda grid of the radius panel
SHIFTS = np.linspace(0.0, 1.0, 21)  # shift strengths of the shift widget


def toy_2d(n: int = 40, m_per: int = 4, seed: int = 0):
    """Notebook 1's toy: P = n labelled 2-D points; nu = m_per candidates per point.

    Candidates are Gaussian jitters of their source, half of them with the second coordinate
    flipped (an augmentation the model should not care about). Returns
    ``(P [n, 2], yP [n], Q [n m_per, 2], yQ [n m_per])`` with labels in {-1, +1}.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    P = np.stack([y * 1.0, rng.normal(0, 1.0, n)], 1) + 0.5 * rng.standard_normal((n, 2))
    src = np.repeat(np.arange(n), m_per)
    Q = P[src] + 0.35 * rng.standard_normal((n * m_per, 2))
    flip = np.tile(np.arange(m_per) % 2 == 1, n)
    Q[flip, 1] = -Q[flip, 1]
    return P, y, Q, y[src]


def toy_losses(Q, yQ):
    """Logistic loss ``log(1 + exp(-y w.x))`` of each candidate under the fixed model.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return np.logaddexp(0.0, -yQ * (Q @ W_FIXED))


def toy_cost(P, Q):
    """Squared Euclidean cost between the training points and the candidates.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    P = check_array("P", P, ndim=2, min_size=1)
    Q = check_array("Q", Q, ndim=2, shape=(None, P.shape[1]), min_size=1)
    return ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)


@memo
def lam_curve(lams, eps: float, seed: int = 0):
    """Implied radius rho(lam) and robust objective R(lam) on the 2-D toy (cached).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    P, _, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    rho = np.array([implied_radius(worst_case_weights(loss, C, lam, eps)[0], C) for lam in lams])
    R = np.array([sinkhorn_dro_objective(loss, C, lam, eps) for lam in lams])
    return rho, R


@dataclass(frozen=True)
class ToyPlan:
    """The 2-D toy's worst case at one ``(lam, eps)``: points, losses, cost, plan ``pi``,
    weights ``Q`` and implied radius ``rho``; ``rho_curve``/``R_curve`` over :data:`LAMS`."""

    P: np.ndarray
    yP: np.ndarray
    Q: np.ndarray
    yQ: np.ndarray
    loss: np.ndarray
    C: np.ndarray
    pi: np.ndarray
    Qw: np.ndarray
    rho: float
    rho_curve: np.ndarray
    R_curve: np.ndarray


@memo
def toy_plan(lam: float = 1.0, eps: float = 0.1, seed: int = 0) -> ToyPlan:
    """The worst-case plan of the 2-D toy at ``(lam, eps)`` and the radius curve of ``eps``
    (cached: the widget of notebook 1 draws it).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    P, yP, Q, yQ = toy_2d(seed=seed)
    loss, C = toy_losses(Q, yQ), toy_cost(P, Q)
    pi, Qw = worst_case_weights(loss, C, lam, eps)
    rho_curve, R_curve = lam_curve(LAMS, float(eps), seed)
    rho = float(implied_radius(pi, C))
    return ToyPlan(P, yP, Q, yQ, loss, C, pi, Qw, rho, rho_curve, R_curve)


def shift_curve(model, shifts=SHIFTS, n: int = 1000):
    """Accuracy of ``model`` on test sets whose spurious agreement is ``1 - shift``.

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    out = []
    for s in shifts:
        X, y = make_spurious(n, 1.0 - float(s), seed=99)
        out.append(accuracy(model, X, y))
    return np.array(out)


@memo(maxsize=16)
def shift_accuracy(method: str, tau: float, seed: int, steps: int):
    """:func:`shift_curve` over :data:`SHIFTS` of ``method`` trained once with calibration
    temperature ``tau`` (cached: the shift widget of notebook 2 draws it).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    method = check_choice("method", method, METHODS)
    cfg = AdaDROConfig(tau=check_positive("tau", tau))
    seed, steps = check_int("seed", seed, 0), check_int("steps", steps, 1)
    model = train_method(method, seed=seed, steps=steps, cfg=cfg)[0]
    return shift_curve(model)
