"""Drivers the notebooks call: the logistic-regression alignment study and the perturbation
ablation on the BatchNorm MLP (notebook 2), and the digits training runs under label noise
(notebook 3).

See: book/coreset/02-label-noise.ipynb
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.core.memo import memo
from lab.core.progress import progress
from lab.core.rates import mean_ci
from lab.core.runtime import smoke_steps
from lab.coreset.models import WHERE, CoresetTrainer, History, balanced_pool, make_mlp
from lab.coreset.reference import (
    METHODS,
    corrupt_labels,
    logreg_example_gradients,
    logreg_hessian,
    logreg_posterior_features,
    newton_steps,
    noisy_share,
    per_class_facility_location,
    random_coreset,
    softmax_regression_fit,
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
    "TRAINING_CHOICES",
    "precompute_training",
]


def digits_split(test_size: int = 597, seed: int = 0):
    """sklearn's bundled digits, scaled to [0, 1], split into train and (clean) test.

    Returns ``X_train, y_train, X_test, y_test`` as numpy arrays.

    See: book/coreset/02-label-noise.ipynb
    """
    from lab.core.data import N_DIGITS, digits

    test_size = check_int("test_size", test_size, 1, N_DIGITS - 1)
    seed = check_int("seed", seed, 0)
    return tuple(digits(test_size=test_size, seed=seed, standardize=False, dtype="float64"))


def _alignment_trial(t, X, y, flipped, W, rng, sizes, K, sigma, eval_draws, seed, out, pool_noise):
    pool_size, budget, hessians = sizes
    pool = balanced_pool(y, pool_size, rng)
    Xp, yp, fp = X[pool], y[pool], flipped[pool]
    pool_noise.append(fp.mean())
    # the paper's protocol: facility location per (noisy) class, the budget split equally
    sel = {
        "random": random_coreset(pool_size, budget, seed + 100 + t),
        "craig": per_class_facility_location(
            logreg_example_gradients(W, Xp, yp).reshape(pool_size, -1), yp, budget
        ),
        "posterior": per_class_facility_location(
            logreg_posterior_features(W, Xp, yp, K, sigma, seed + 200 + t), yp, budget
        ),
    }
    errs = _alignment_errors_shared(W, Xp, yp, sel, sigma, eval_draws, seed + 300 + t, hessians)
    for m, (idx, w) in sel.items():
        for k in ("grad", "hess", "newton", "rank"):
            out[k][m].append(errs[m][k])
        out["share"][m].append(noisy_share(fp, idx, w))


def _alignment_errors_shared(W, X, y, sel, sigma, draws, seed, hessians=True, l2=1e-2,
                             newton="range"):  # fmt: skip
    """``alignment_errors`` of several coresets of one pool, bit for bit, computing what they
    share (the posterior draws' full gradients, the pool's Hessian and Newton step) once;
    ``hessians=False``: the gradient errors only (Hessian and Newton errors NaN, rank 0)."""
    rng = np.random.default_rng(seed)
    gams = {}
    for m, (_, w) in sel.items():
        gam = np.asarray(w, dtype=float)
        gams[m] = gam / gam.sum()
    num = dict.fromkeys(sel, 0.0)
    den = 0.0
    for _ in range(draws):
        Wk = W + sigma * rng.standard_normal(W.shape)
        Gk = logreg_example_gradients(Wk, X, y).reshape(len(y), -1)
        full = Gk.mean(axis=0)
        for m, (idx, _) in sel.items():
            num[m] += np.sum((gams[m] @ Gk[idx] - full) ** 2)  # eq. (5)
        den += np.sum(full**2)
    if not hessians:
        nan = {"hess": np.nan, "newton": np.nan, "rank": 0}
        return {m: {"grad": float(num[m] / den), **nan} for m in sel}
    H = logreg_hessian(W, X, y)
    g = logreg_example_gradients(W, X, y).reshape(len(y), -1)
    gfull = g.mean(axis=0)
    out = {}
    for m, (idx, _) in sel.items():
        HS = logreg_hessian(W, X[idx], y[idx], gams[m])
        N, NS, rank = newton_steps(H, gfull, HS, gams[m] @ g[idx], newton=newton, l2=l2)
        out[m] = {
            "grad": float(num[m] / den),
            "hess": float(np.linalg.norm(HS - H) / np.linalg.norm(H)),
            "newton": float(np.linalg.norm(NS - N) / np.linalg.norm(N)),
            "rank": rank,
        }
    return out


# w_bar per (data, labels, classes, steps): the fit depends on none of the selection settings
_FITS: OrderedDict[tuple, np.ndarray] = OrderedDict()


def _fitted_weights(X: np.ndarray, y: np.ndarray, C: int, steps: int) -> np.ndarray:
    """``softmax_regression_fit(X, y, C, steps=steps)``, memoised on the arrays' contents."""
    key = (
        X.shape,
        X.dtype.str,
        hashlib.blake2b(np.ascontiguousarray(X).tobytes(), digest_size=16).digest(),
        hashlib.blake2b(np.ascontiguousarray(y, dtype=np.int64).tobytes(), digest_size=16).digest(),
        C,
        steps,
    )
    if key in _FITS:
        _FITS.move_to_end(key)
    else:
        W = softmax_regression_fit(X, y, C, steps=steps)
        W.setflags(write=False)
        _FITS[key] = W
        while len(_FITS) > 32:
            _FITS.popitem(last=False)
    return _FITS[key]


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
    X: Any,
    y_clean: Any,
    *,
    noise: float = 0.4,
    pool_size: int = 300,
    budget: int = 30,
    K: int = 8,
    sigma: float = 0.05,
    trials: int = 5,
    fit_steps: int = 30,
    eval_draws: int = 8,
    seed: int = 0,
    hessians: bool = True,
) -> AlignmentStudy:
    """Random vs CRAIG vs posterior coresets on logistic regression with exact Hessians.

    Labels are corrupted (symmetric noise), ``w_bar`` is ``fit_steps`` of full-batch GD on the
    noisy data, and each trial draws a class-balanced pool, selects three coresets of size
    ``budget`` and scores them with ``alignment_errors`` (fresh posterior draws, the same for
    the three). ``hessians=False`` scores the gradient error and the share only (``hess`` and
    ``newton`` NaN), a tenth of the cost; trial ``t`` draws the same pool, selections and
    posterior draws either way, so its gradient errors are the same.

    See: book/coreset/02-label-noise.ipynb
    """
    X = check_array("X", X, ndim=2, min_size=1)
    y_clean = np.asarray(y_clean, dtype=int)
    C = int(y_clean.max()) + 1
    noise = check_range("noise", noise, 0.0, 1.0)
    pool_size = check_int("pool_size", pool_size, 2, X.shape[0])
    budget = check_int("budget", budget, 1, pool_size)
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    sizes = (pool_size, budget, check_bool("hessians", hessians))
    y, flipped = corrupt_labels(y_clean, noise, C, seed)
    W = _fitted_weights(X, y, C, check_int("fit_steps", fit_steps, 0))
    out = {k: {m: [] for m in METHODS} for k in ("grad", "hess", "newton", "rank", "share")}
    pool_noise = []
    rng = np.random.default_rng(seed + 1)
    with threadpool_limits(1):  # small dense algebra: one BLAS thread is faster on 2 cores
        for t in progress(range(trials), desc="trials"):
            _alignment_trial(
                t, X, y, flipped, W, rng, sizes, K, sigma, eval_draws, seed, out, pool_noise
            )
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


def _train_runs(keys: list[tuple]) -> None:
    """Train the runs ``keys`` (``_run_key`` tuples) not memoised yet, batched: runs that share
    steps, evaluation, budget and selection rounds go through one ``train_stacked`` call
    (``where="norm_out"`` runs through ``CoresetTrainer``, one at a time)."""
    from lab.coreset.stacked import STACKED_WHERE, RunSpec, train_stacked

    groups: dict[tuple, list[tuple]] = {}
    for key in dict.fromkeys(keys):
        if key not in _RUNS:
            method, noise, seed, steps, K, sigma, eval_every, budget, select_every, where = key
            groups.setdefault(
                (steps, eval_every, budget, select_every, where in STACKED_WHERE), []
            ).append(key)
    for (steps, eval_every, budget, select_every, stacked), members in groups.items():
        specs = []
        for method, noise, seed, _, K, sigma, _, _, _, where in members:
            Xtr, ytr, Xte, yte = digits_split(seed=seed)
            yn, fl = corrupt_labels(ytr, noise, 10, seed)
            specs.append(
                RunSpec(method, seed, Xtr, yn, Xte, yte, fl, K=K, sigma=sigma, where=where)
            )
        if stacked:
            hists = train_stacked(
                specs,
                steps=steps,
                budget=budget,
                pool_size=_POOL_SIZE,
                select_every=select_every,
                eval_every=eval_every,
            )
        else:
            hists = [
                CoresetTrainer(
                    s.method,
                    seed=s.seed,
                    K=s.K,
                    sigma=s.sigma,
                    where=s.where,
                    budget=budget,
                    pool_size=_POOL_SIZE,
                    select_every=select_every,
                ).fit(
                    make_mlp(seed=s.seed),
                    s.X,
                    s.y,
                    s.X_test,
                    s.y_test,
                    steps=steps,
                    flipped=s.flipped,
                    eval_every=eval_every,
                )
                for s in specs
            ]
        for key, h in zip(members, hists, strict=True):
            _RUNS[key] = h
            while len(_RUNS) > 512:
                _RUNS.popitem(last=False)


# memoised runs (digits_run), keyed by _run_key; the longest run per setting (_HORIZONS)
_RUNS: OrderedDict[tuple, History] = OrderedDict()
_POOL_SIZE = 130  # class-balanced pools: 13 per digit, so per-class selection is balanced


def _run_key(method, noise, seed, steps, K, sigma, budget, select_every, eval_every, where):
    """(the run to train, the steps to read from it) for one ``digits_run`` request."""
    method = check_choice("method", method, (*METHODS, "full"))
    noise = check_range("noise", noise, 0.0, 1.0)
    args = [
        method,
        round(noise, 6),
        check_int("seed", seed, 0),
        check_int("steps", steps, 1),
        check_int("K", K, 1),
        round(check_positive("sigma", sigma, allow_zero=True), 9),
        check_int("eval_every", eval_every, 1),
        check_int("budget", budget, 1),
        check_int("select_every", select_every, 1),
        check_choice("where", where, WHERE),
    ]
    # LAB_SMOKE=1: one evaluation's worth of steps (every request maps to the same short run)
    args[3] = smoke_steps(args[3], small=args[6])
    if method != "posterior":
        # K, sigma and where only shape the posterior samples: the other methods share a run
        args[4], args[5], args[9] = 4, 0.05, "norm"
    setting = (*args[:3], *args[4:])
    horizon = _HORIZONS.get(setting, 0)
    if args[3] < horizon and args[3] % args[6] == 0:
        # a prefix of a longer run: the same steps, evaluated at the same multiples of
        # eval_every (the loop does not depend on the number of steps), so the same history
        key = (*args[:3], horizon, *args[4:])
        if key in _RUNS:
            return key, args[3]
    return tuple(args), None


def digits_run(
    method: str,
    noise: float,
    seed: int = 0,
    *,
    steps: int = 200,
    K: int = 4,
    sigma: float = 0.05,
    budget: int = 30,
    select_every: int = 10,
    eval_every: int = 20,
    where: str = "norm",
) -> History:
    """One training run on digits with symmetric label noise (memoised: same inputs, same run).

    The digits split and the noise depend on ``seed``; the test labels stay clean. ``where``
    picks the parameters the posterior samples perturb (see ``posterior_features``). Runs are
    trained by the stacked trainer (``lab.coreset.stacked``); ``digits_runs`` trains many at
    once.

    See: book/coreset/03-training-under-noise.ipynb
    """
    return digits_runs(
        [{"method": method, "noise": noise, "seed": seed, "K": K, "sigma": sigma, "where": where}],
        steps=steps,
        budget=budget,
        select_every=select_every,
        eval_every=eval_every,
    )[0]


def digits_runs(
    jobs: Any,
    *,
    steps: int = 200,
    budget: int = 30,
    select_every: int = 10,
    eval_every: int = 20,
) -> list[History]:
    """``digits_run`` for many settings, the missing runs trained as one batched computation.

    Parameters
    ----------
    jobs : sequence of dict
        Each with ``method`` and ``noise``, optionally ``seed`` (0), ``K`` (4), ``sigma``
        (0.05) and ``where`` ("norm").
    steps, budget, select_every, eval_every : int
        As in ``digits_run``, shared by all jobs.

    Returns
    -------
    list of History, one per job

    See: book/coreset/03-training-under-noise.ipynb
    """
    if isinstance(jobs, (str, bytes, dict)) or not hasattr(jobs, "__iter__"):
        raise TypeError(f"jobs must be a sequence of dicts (got {type(jobs).__name__})")
    resolved = []
    for job in jobs:
        if not isinstance(job, dict):
            raise TypeError(f"jobs must hold dicts (got {type(job).__name__})")
        unknown = set(job) - {"method", "noise", "seed", "K", "sigma", "where"}
        if unknown or not {"method", "noise"} <= set(job):
            raise ValueError(
                f"jobs must have keys method, noise [, seed, K, sigma, where] (got {sorted(job)})"
            )
        resolved.append(
            _run_key(
                job["method"],
                job["noise"],
                job.get("seed", 0),
                steps,
                job.get("K", 4),
                job.get("sigma", 0.05),
                budget,
                select_every,
                eval_every,
                job.get("where", "norm"),
            )
        )
    _train_runs([key for key, _ in resolved])
    out = []
    for key, prefix in resolved:
        setting = (*key[:3], *key[4:])
        _HORIZONS[setting] = max(_HORIZONS.get(setting, 0), key[3])
        _RUNS.move_to_end(key)
        out.append(_RUNS[key] if prefix is None else _prefix(_RUNS[key], prefix))
    return out


# the longest run memoised per setting (digits_run serves shorter runs as its prefixes)
_HORIZONS: dict[tuple, int] = {}


def _prefix(h: History, steps: int) -> History:
    """The history of the first ``steps`` steps of ``h`` (``steps`` one of its points)."""
    k = h.steps.index(steps) + 1
    return History(
        h.method,
        h.steps[:k],
        h.test_acc[:k],
        h.noisy_share[:k],
        h.select_seconds * steps / h.steps[-1],
    )


def noise_sweep(
    noises: Any = (0.0, 0.25, 0.5),
    methods: Any = ("random", "craig", "posterior", "full"),
    seeds: Any = (0, 1, 2),
    *,
    steps: int = 200,
    K: int = 4,
    sigma: float = 0.05,
) -> dict[str, np.ndarray]:
    """Final clean test accuracy on digits for every (method, noise, seed).

    Returns ``{method: array (len(noises), len(seeds))}`` and ``{"share/" + method: ...}``,
    the weighted share of mislabeled examples in the coresets over the last evaluation window
    (NaN for ``"full"``).

    See: book/coreset/03-training-under-noise.ipynb
    """
    noises = [check_range("noise", v, 0.0, 1.0) for v in noises]
    methods = [check_choice("method", m, (*METHODS, "full")) for m in methods]
    seeds = [check_int("seed", s, 0) for s in seeds]
    out: dict[str, np.ndarray] = {}
    for m in methods:
        out[m] = np.zeros((len(noises), len(seeds)))
        out[f"share/{m}"] = np.full((len(noises), len(seeds)), np.nan)
    jobs = [(m, b, c) for m in methods for b in range(len(noises)) for c in range(len(seeds))]
    hists = digits_runs(
        [
            {"method": m, "noise": noises[b], "seed": seeds[c], "K": K, "sigma": sigma}
            for m, b, c in jobs
        ],
        steps=steps,
    )
    for (m, b, c), h in zip(jobs, hists, strict=True):
        out[m][b, c] = h.final_acc
        out[f"share/{m}"][b, c] = np.nanmean(h.noisy_share) if m != "full" else np.nan
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
def digits_alignment(
    noise: float, budget: int = 30, K: int = 8, sigma: float = 0.2, trials: int = 2, seed: int = 0
) -> AlignmentStudy:
    """``alignment_study`` on the digits split of ``seed`` (memoised; the notebook-2 widget's
    driver).

    See: book/coreset/02-label-noise.ipynb
    """
    X, y, _, _ = digits_split(seed=seed)
    return alignment_study(
        X, y, noise=noise, budget=budget, K=K, sigma=sigma, trials=trials, seed=seed
    )


# The live values of the notebook-2 widget's budget, K and σ controls (a slider whose step is
# its grid spacing, and dropdowns): ``precompute_alignment`` runs every one-control move.
ALIGNMENT_CHOICES = {
    "budget": (10, 30, 50, 70, 90),
    "K": (1, 2, 4, 8, 16),
    "sigma": (0.0, 0.01, 0.05, 0.2, 1.0),
}


def precompute_alignment(
    noise: float = 0.4, budget: int = 30, K: int = 8, sigma: float = 0.2, trials: int = 2
) -> int:
    """Run (once, memoised) the studies of ``alignment_figure`` for every value of
    ``ALIGNMENT_CHOICES`` with the other settings at the given defaults, so that moving one
    control of the live widget only redraws. Returns the number of settings.

    See: book/coreset/02-label-noise.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    base = {
        "budget": check_int("budget", budget, 1, 300),
        "K": check_int("K", K, 1),
        "sigma": float(check_positive("sigma", sigma, allow_zero=True)),
    }
    trials = check_int("trials", trials, 1)
    settings = {tuple(base.values())}
    for key, values in ALIGNMENT_CHOICES.items():
        settings |= {tuple({**base, key: v}.values()) for v in values}
    for b, k, s in sorted(settings):
        digits_alignment(round(noise, 6), int(b), int(k), float(s), trials, 0)
    return len(settings)


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


def precompute_training(
    noise: float = 0.5, K: int = 4, sigma: float = 0.05, steps: int = 200
) -> int:
    """Run (once, memoised by ``digits_run``) the seed-0 posterior runs of ``training_figure``
    for every value of ``TRAINING_CHOICES`` with the other settings at the given defaults, so
    that moving one control of the live widget only redraws. Returns the number of settings.

    See: book/coreset/03-training-under-noise.ipynb
    """
    noise = check_range("noise", noise, 0.0, 1.0)
    K = check_int("K", K, 1)
    sigma = float(check_positive("sigma", sigma, allow_zero=True))
    steps = check_int("steps", steps, 1)
    settings = {(K, sigma)} | {(k, sigma) for k in TRAINING_CHOICES["K"]}
    settings |= {(K, s) for s in TRAINING_CHOICES["sigma"]}
    jobs = [
        {"method": "posterior", "noise": noise, "K": k, "sigma": s} for k, s in sorted(settings)
    ]
    with one_thread():
        digits_runs(jobs, steps=steps)
    return len(settings)
