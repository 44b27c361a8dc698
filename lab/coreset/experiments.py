"""Drivers the notebooks call: the logistic-regression alignment study (notebook 2), the
digits training runs under label noise and their noise sweep (notebook 3), and the widgets'
memoised drivers.

Every driver takes a settings object of :mod:`lab.coreset.settings` (validated there, once)
and calls the unchecked kernels. Results are cached by :func:`lab.core.memo.memo`: the fitted
``w̄`` on the data's contents, each training run on its :class:`RunSettings` (a batch of
missing runs trains as one stacked computation and stores each), the widgets' studies on
their settings. Seed loops go through :func:`lab.core.sweep.sweep`.

See: book/coreset/02-label-noise.ipynb, book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import check_array, check_choice, check_instance, check_int, check_range
from lab.core.memo import memo
from lab.core.progress import progress
from lab.core.rates import mean_ci
from lab.core.runtime import smoke_steps
from lab.core.sweep import sweep
from lab.coreset.labels import corrupt_labels, noisy_share, random_coreset
from lab.coreset.models import CoresetTrainer, History, balanced_pool, make_mlp
from lab.coreset.reference import (
    logreg_example_gradients,
    logreg_hessian,
    logreg_posterior_features,
    newton_steps,
    per_class_unchecked,
    softmax_regression_fit,
)
from lab.coreset.settings import (
    METHODS,
    AlignmentSettings,
    PosteriorSettings,
    RunSettings,
    SweepSettings,
    TrainSettings,
)

__all__ = [
    "digits_split",
    "AlignmentStudy",
    "alignment_study",
    "digits_run",
    "digits_runs",
    "noise_sweep",
    "paired_difference_ci",
    "digits_alignment",
    "ALIGNMENT_CHOICES",
    "precompute_alignment",
    "method_runs",
    "TRAINING_CHOICES",
    "precompute_training",
]


def digits_split(test_size: int = 597, seed: int = 0):
    """sklearn's bundled digits, scaled to [0, 1], split into train and (clean) test.

    Returns ``X_train, y_train, X_test, y_test`` as numpy arrays.

    See: book/coreset/02-label-noise.ipynb
    """
    from lab.core.data import N_DIGITS

    test_size = check_int("test_size", test_size, 1, N_DIGITS - 1)
    return _digits_split(test_size, check_int("seed", seed, 0))


def _digits_split(test_size: int, seed: int):
    from lab.core.data import digits

    return tuple(digits(test_size=test_size, seed=seed, standardize=False, dtype="float64"))


@memo(maxsize=32)
def fitted_weights(X: np.ndarray, y: np.ndarray, C: int, steps: int) -> np.ndarray:
    """``w̄``: ``softmax_regression_fit(X, y, C, steps=steps)``, memoised on the arrays'
    contents (read-only: every study of the same data shares it)."""
    W = softmax_regression_fit(X, y, C, steps=steps)
    W.setflags(write=False)
    return W


# ---------------------------------------------------------------------------------------------
# Notebook 2: the alignment study on logistic regression
# ---------------------------------------------------------------------------------------------
@dataclass
class AlignmentStudy:
    """Per-trial alignment errors and noisy shares of each method (``alignment_study``).

    See: book/coreset/02-label-noise.ipynb
    """

    methods: tuple[str, ...]
    grad: dict[str, np.ndarray]
    hess: dict[str, np.ndarray]
    newton: dict[str, np.ndarray]
    share: dict[str, np.ndarray]
    pool_noise: np.ndarray
    rank: dict[str, np.ndarray] | None = None  # dimension the Newton steps are compared in

    def mean(self, what: str) -> dict[str, float]:
        """Mean over trials of ``what`` in {"grad", "hess", "newton", "share"}.

        See: book/coreset/02-label-noise.ipynb
        """
        table = getattr(self, check_choice("what", what, ("grad", "hess", "newton", "share")))
        return {m: float(np.mean(v)) for m, v in table.items()}


def alignment_study(
    X: Any, y_clean: Any, settings: AlignmentSettings | None = None
) -> AlignmentStudy:
    """Random vs CRAIG vs posterior coresets on logistic regression with exact Hessians.

    Labels are corrupted (symmetric noise), ``w_bar`` is ``fit_steps`` of full-batch GD on the
    noisy data, and each trial draws a class-balanced pool, selects three coresets of size
    ``budget`` (CRAIG and posterior per class, as the official code) and scores them with the
    errors of ``alignment_errors`` (fresh posterior draws, the same for the three).
    ``hessians=False`` scores the gradient error and the share only (``hess`` and ``newton``
    NaN), a tenth of the cost; ``newton=False`` skips the Newton steps; trial ``t`` draws the
    same pool, selections and posterior draws either way, so its errors are the same.

    Parameters
    ----------
    X : array, shape (n, d)
    y_clean : array of int, shape (n,)
    settings : AlignmentSettings, optional

    See: book/coreset/02-label-noise.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    y_clean = np.asarray(y_clean, dtype=int)
    if y_clean.shape != (X.shape[0],):
        raise ValueError(f"y_clean must have shape ({X.shape[0]},) (got {y_clean.shape})")
    settings = AlignmentSettings() if settings is None else settings
    check_instance("settings", settings, AlignmentSettings)
    if settings.pool_size > X.shape[0]:
        raise ValueError(
            f"settings.pool_size must be in [2, {X.shape[0]}] (got {settings.pool_size})"
        )
    return _alignment_study(X, y_clean, settings)


def _alignment_study(X: np.ndarray, y_clean: np.ndarray, s: AlignmentSettings) -> AlignmentStudy:
    C = int(y_clean.max()) + 1
    y, flipped = corrupt_labels(y_clean, s.noise, C, s.seed)
    W = fitted_weights(X, y, C, s.fit_steps)
    out = {k: {m: [] for m in METHODS} for k in ("grad", "hess", "newton", "rank", "share")}
    pool_noise = []
    rng = np.random.default_rng(s.seed + 1)
    with threadpool_limits(1):  # small dense algebra: one BLAS thread is faster on 2 cores
        for t in progress(range(s.trials), desc="trials"):
            pool_noise.append(_alignment_trial(t, (X, y, flipped), W, rng, s, out))
    arr = {k: {m: np.asarray(v) for m, v in d.items()} for k, d in out.items()}
    return AlignmentStudy(
        METHODS,
        arr["grad"],
        arr["hess"],
        arr["newton"],
        arr["share"],
        np.asarray(pool_noise),
        arr["rank"],
    )


def _alignment_trial(t: int, data: tuple, W, rng, s: AlignmentSettings, out: dict) -> float:
    """Trial ``t``: a pool, its three coresets, their errors appended to ``out``; returns the
    pool's mislabeled share."""
    X, y, flipped = data
    pool = balanced_pool(y, s.pool_size, rng)
    Xp, yp, fp = X[pool], y[pool], flipped[pool]
    # the paper's protocol: facility location per (noisy) class, the budget split equally
    grads = logreg_example_gradients(W, Xp, yp).reshape(s.pool_size, -1)
    post = logreg_posterior_features(W, Xp, yp, s.K, s.sigma, s.seed + 200 + t)
    sel = {
        "random": random_coreset(s.pool_size, s.budget, s.seed + 100 + t),
        "craig": per_class_unchecked(grads, yp, s.budget),
        "posterior": per_class_unchecked(post, yp, s.budget),
    }
    errs = _shared_errors(W, (Xp, yp), sel, s, s.seed + 300 + t)
    for m, (idx, w) in sel.items():
        for k in ("grad", "hess", "newton", "rank"):
            out[k][m].append(errs[m][k])
        out["share"][m].append(noisy_share(fp, idx, w))
    return float(fp.mean())


def _shared_errors(W, pool: tuple, sel: dict, s: AlignmentSettings, seed: int) -> dict:
    """``alignment_errors`` of several coresets of one pool, bit for bit, computing what they
    share (the posterior draws' full gradients, the pool's Hessian and Newton step) once;
    ``s.hessians=False``: the gradient errors only (Hessian and Newton errors NaN, rank 0)."""
    X, y = pool
    gams = {}
    for m, (_, w) in sel.items():
        gam = np.asarray(w, dtype=float)
        gams[m] = gam / gam.sum()
    grad = _gradient_errors(W, pool, sel, gams, s, seed)
    if not s.hessians:
        return {m: {"grad": grad[m], "hess": np.nan, "newton": np.nan, "rank": 0} for m in sel}
    H = logreg_hessian(W, X, y)
    g = logreg_example_gradients(W, X, y).reshape(len(y), -1)
    gfull = g.mean(axis=0)
    out = {}
    for m, (idx, _) in sel.items():
        HS = logreg_hessian(W, X[idx], y[idx], gams[m])
        out[m] = {"grad": grad[m], "hess": float(np.linalg.norm(HS - H) / np.linalg.norm(H))}
        if not s.newton:
            out[m].update(newton=np.nan, rank=0)
            continue
        N, NS, rank = newton_steps(H, gfull, HS, gams[m] @ g[idx], newton="range", l2=1e-2)
        out[m].update(newton=float(np.linalg.norm(NS - N) / np.linalg.norm(N)), rank=rank)
    return out


def _gradient_errors(W, pool: tuple, sel: dict, gams: dict, s: AlignmentSettings, seed: int):
    """Eq. (5) of every coreset of ``sel``, on the same ``s.eval_draws`` posterior draws."""
    X, y = pool
    rng = np.random.default_rng(seed)
    num = dict.fromkeys(sel, 0.0)
    den = 0.0
    for _ in range(s.eval_draws):
        Wk = W + s.sigma * rng.standard_normal(W.shape)
        Gk = logreg_example_gradients(Wk, X, y).reshape(len(y), -1)
        full = Gk.mean(axis=0)
        for m, (idx, _) in sel.items():
            num[m] += np.sum((gams[m] @ Gk[idx] - full) ** 2)  # eq. (5)
        den += np.sum(full**2)
    return {m: float(num[m] / den) for m in sel}


# ---------------------------------------------------------------------------------------------
# Notebook 3: training runs on digits under label noise
# ---------------------------------------------------------------------------------------------
@memo(maxsize=512)
def _trained(run: RunSettings) -> History:
    """One run's history (``digits_runs`` trains missing runs in batches and stores each)."""
    return _train_group([run], run.train)[0]


def _train_group(runs: list[RunSettings], train: TrainSettings) -> list[History]:
    """Train ``runs`` (all with the settings ``train``): the stacked trainer where it applies,
    else ``CoresetTrainer`` one run at a time."""
    from lab.coreset.stacked import STACKED_WHERE, RunSpec, train_stacked_unchecked

    specs = []
    for r in runs:
        Xtr, ytr, Xte, yte = _digits_split(597, r.seed)
        yn, fl = corrupt_labels(ytr, r.noise, 10, r.seed)
        specs.append(RunSpec(r.method, r.seed, Xtr, yn, Xte, yte, fl, posterior=r.posterior))
    if all(r.posterior.where in STACKED_WHERE for r in runs):
        return train_stacked_unchecked(specs, train)
    return [
        CoresetTrainer(s.method, posterior=s.posterior, train=train, seed=s.seed).fit(
            make_mlp(seed=s.seed), s.X, s.y, s.X_test, s.y_test, flipped=s.flipped
        )
        for s in specs
    ]


def _resolved(run: Any) -> RunSettings:
    """The run that answers ``run``: its canonical form, shortened in smoke mode."""
    if not isinstance(run, RunSettings):
        raise TypeError(f"runs must hold RunSettings (got {type(run).__name__})")
    run = run.canonical()
    # LAB_SMOKE=1: one evaluation's worth of steps (every request maps to the same short run)
    steps = smoke_steps(run.train.steps, small=run.train.eval_every)
    if steps != run.train.steps:
        run = run.replace(train=run.train.replace(steps=steps))
    return run


def digits_runs(runs: Any) -> list[History]:
    """``digits_run`` for many settings, the missing runs trained as one batched computation
    (runs that share their ``TrainSettings`` and a stackable perturbed block go through one
    ``train_stacked`` call).

    Parameters
    ----------
    runs : sequence of RunSettings

    Returns
    -------
    list of History, one per run

    See: book/coreset/03-training-under-noise.ipynb
    """
    from lab.coreset.stacked import STACKED_WHERE

    if isinstance(runs, (str, bytes, dict, RunSettings)) or not hasattr(runs, "__iter__"):
        raise TypeError(f"runs must be a sequence of RunSettings (got {type(runs).__name__})")
    runs = [_resolved(r) for r in runs]
    groups: dict[tuple, list[RunSettings]] = {}
    for r in dict.fromkeys(runs):
        if ((r,), {}) not in _trained:
            key = (r.train, r.posterior.where in STACKED_WHERE)
            groups.setdefault(key, []).append(r)
    for (train, _), members in groups.items():
        for r, h in zip(members, _train_group(members, train), strict=True):
            _trained.put(h, r)
    return [_trained(r) for r in runs]


def digits_run(run: RunSettings) -> History:
    """One training run on digits with symmetric label noise (memoised: same settings, same
    run; see :class:`RunSettings`). Trained by the stacked trainer (``lab.coreset.stacked``);
    ``digits_runs`` trains many at once.

    See: book/coreset/03-training-under-noise.ipynb
    """
    return digits_runs([run])[0]


def noise_sweep(settings: SweepSettings) -> dict[str, np.ndarray]:
    """Final clean test accuracy on digits for every (method, noise, seed).

    Returns ``{method: array (len(noises), len(seeds))}`` and ``{"share/" + method: ...}``,
    the weighted share of mislabeled examples in the coresets over the run (NaN for
    ``"full"``). All runs train as one batched computation, then a
    :func:`lab.core.sweep.sweep` over (method, noise) and the seeds reads them.

    See: book/coreset/03-training-under-noise.ipynb
    """
    s = settings
    if not isinstance(s, SweepSettings):
        raise TypeError(f"settings must be a SweepSettings (got {type(s).__name__})")
    runs = {
        (m, nz, sd): RunSettings(m, nz, sd, s.posterior, s.train)
        for m in s.methods
        for nz in s.noises
        for sd in s.seeds
    }
    digits_runs(list(runs.values()))

    def final(method: str, noise: float, seed: int) -> dict:
        h = digits_run(runs[(method, noise, seed)])
        share = np.nanmean(h.noisy_share) if method != "full" else np.nan
        return {"acc": h.final_acc, "share": share}

    table = sweep(final, {"method": list(s.methods), "noise": list(s.noises)}, seeds=s.seeds)
    out: dict[str, np.ndarray] = {}
    for m in s.methods:
        out[m] = np.stack([table.values("acc", method=m, noise=nz) for nz in s.noises])
        out[f"share/{m}"] = np.stack([table.values("share", method=m, noise=nz) for nz in s.noises])
    return out


def paired_difference_ci(a: Any, b: Any, *, level: float = 0.95) -> dict[str, float]:
    """Mean of ``a - b`` over paired runs (seeds or pools), its standard error and Student-t interval.

    Returns ``{"mean", "se", "lo", "hi", "n"}``; the ``ci_*`` conditions of ``lab.core.claims``
    read ``lo`` and ``hi``. With one pair the standard error and the interval are infinite.

    See: book/coreset/02-label-noise.ipynb
    """
    a = check_array("a", a, ndim=1, min_size=1)
    b = check_array("b", b, ndim=1, min_size=1)
    if a.shape != b.shape:
        raise ValueError(f"b must have the shape of a {a.shape} (got {b.shape})")
    level = check_range("level", level, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    d = a - b
    m = float(d.mean())
    if d.size < 2:
        return {"mean": m, "se": math.inf, "lo": -math.inf, "hi": math.inf, "n": 1}
    ci = mean_ci(d, level=level)
    return {"mean": ci.mean, "se": ci.se, "lo": ci.low, "hi": ci.high, "n": ci.n}


# ---------------------------------------------------------------------------------------------
# The widgets' drivers (memoised: the figures only draw what these return)
# ---------------------------------------------------------------------------------------------
@memo(maxsize=128)
def digits_alignment(settings: AlignmentSettings) -> AlignmentStudy:
    """``alignment_study`` on the digits split of ``settings.seed`` (memoised; the notebook-2
    widget's driver).

    See: book/coreset/02-label-noise.ipynb
    """
    check_instance("settings", settings, AlignmentSettings)
    X, y, _, _ = _digits_split(597, settings.seed)
    return _alignment_study(X, y, settings)


# The live values of the notebook-2 widget's budget, K and σ controls (a slider whose step is
# its grid spacing, and dropdowns): ``precompute_alignment`` runs every one-control move.
ALIGNMENT_CHOICES = {
    "budget": (10, 30, 50, 70, 90),
    "K": (1, 2, 4, 8, 16),
    "sigma": (0.0, 0.01, 0.05, 0.2, 1.0),
}


def precompute_alignment(settings: AlignmentSettings) -> int:
    """Run (once, memoised) the studies of the notebook-2 widget for every value of
    ``ALIGNMENT_CHOICES`` with the other settings as given, so that moving one control of the
    live widget only redraws. Returns the number of settings.

    See: book/coreset/02-label-noise.ipynb
    """
    check_instance("settings", settings, AlignmentSettings)
    moves = {settings}
    for key, values in ALIGNMENT_CHOICES.items():
        moves |= {settings.replace(**{key: v}) for v in values}
    for s in moves:
        digits_alignment(s)
    return len(moves)


# The live values of the notebook-3 widget's K and σ menus: ``precompute_training`` runs the
# posterior run of every one-control move (the other methods do not depend on K or σ).
TRAINING_CHOICES = {"K": (1, 4, 8), "sigma": (0.005, 0.05, 0.5)}


@contextlib.contextmanager
def one_thread():
    """Tiny matrices: one torch / BLAS thread (threads only contend, badly under load)."""
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(threads)


def method_runs(run: RunSettings) -> dict[str, History]:
    """The runs of every method (random, CRAIG, posterior, full) in the setting of ``run``
    (its noise, seed, posterior samples and training), trained once and memoised: the
    notebook-3 widget's driver.

    See: book/coreset/03-training-under-noise.ipynb
    """
    check_instance("run", run, RunSettings)
    methods = (*METHODS, "full")
    with one_thread():
        hists = digits_runs([run.replace(method=m) for m in methods])
    return dict(zip(methods, hists, strict=True))


def precompute_training(run: RunSettings) -> int:
    """Train (once, memoised by ``digits_run``) the posterior runs of the notebook-3 widget for
    every value of ``TRAINING_CHOICES`` with the other settings of ``run``, so that moving one
    control of the live widget only redraws. Returns the number of settings.

    See: book/coreset/03-training-under-noise.ipynb
    """
    check_instance("run", run, RunSettings)
    p = run.posterior
    settings = {(p.K, p.sigma)} | {(k, p.sigma) for k in TRAINING_CHOICES["K"]}
    settings |= {(p.K, s) for s in TRAINING_CHOICES["sigma"]}
    jobs = [
        run.replace(method="posterior", posterior=PosteriorSettings(k, s, p.where))
        for k, s in sorted(settings)
    ]
    with one_thread():
        digits_runs(jobs)
    return len(settings)
