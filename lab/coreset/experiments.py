"""Drivers the notebooks call: the logistic-regression alignment study and the perturbation
ablation on the BatchNorm MLP (notebook 2), and the digits training runs under label noise
(notebook 3).

See: book/coreset/02-label-noise.ipynb
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import check_array, check_choice, check_int, check_positive, check_range
from lab.core.progress import progress
from lab.core.rates import mean_ci
from lab.core.runtime import smoke_steps
from lab.coreset.models import WHERE, CoresetTrainer, History, make_mlp
from lab.coreset.reference import (
    METHODS,
    _balanced_pool,
    corrupt_labels,
    greedy_facility_location,
    logreg_example_gradients,
    logreg_hessian,
    logreg_posterior_features,
    noisy_share,
    pairwise_distances,
    random_coreset,
    softmax_regression_fit,
)


def digits_split(test_size: int = 597, seed: int = 0):
    """sklearn's bundled digits, scaled to [0, 1], split into train and (clean) test.

    Returns ``X_train, y_train, X_test, y_test`` as numpy arrays.

    See: book/coreset/02-label-noise.ipynb
    """
    from lab.core.data import N_DIGITS, digits

    test_size = check_int("test_size", test_size, 1, N_DIGITS - 1)
    seed = check_int("seed", seed, 0)
    return tuple(digits(test_size=test_size, seed=seed, standardize=False, dtype="float64"))


def _alignment_trial(
    t, X, y, flipped, W, rng, pool_size, budget, K, sigma, eval_draws, seed, out, pool_noise
):
    pool = _balanced_pool(y, pool_size, rng)
    Xp, yp, fp = X[pool], y[pool], flipped[pool]
    pool_noise.append(fp.mean())
    sel = {
        "random": random_coreset(pool_size, budget, seed + 100 + t),
        "craig": greedy_facility_location(
            pairwise_distances(logreg_example_gradients(W, Xp, yp).reshape(pool_size, -1)),
            budget,
        ),
        "posterior": greedy_facility_location(
            pairwise_distances(logreg_posterior_features(W, Xp, yp, K, sigma, seed + 200 + t)),
            budget,
        ),
    }
    errs = _alignment_errors_shared(W, Xp, yp, sel, sigma, eval_draws, seed + 300 + t)
    for m, (idx, w) in sel.items():
        for k in ("grad", "hess", "newton"):
            out[k][m].append(errs[m][k])
        out["share"][m].append(noisy_share(fp, idx, w))


def _alignment_errors_shared(W, X, y, sel, sigma, draws, seed, l2=1e-2):
    """``alignment_errors`` of several coresets of one pool, bit for bit, computing what they
    share (the posterior draws' full gradients, the pool's Hessian and Newton step) once."""
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
    H = logreg_hessian(W, X, y)
    g = logreg_example_gradients(W, X, y).reshape(len(y), -1)
    gfull = g.mean(axis=0)
    eye = l2 * np.eye(H.shape[0])
    N = np.linalg.solve(H + eye, gfull)
    out = {}
    for m, (idx, _) in sel.items():
        HS = logreg_hessian(W, X[idx], y[idx], gams[m])
        NS = np.linalg.solve(HS + eye, gams[m] @ g[idx])
        out[m] = {
            "grad": float(num[m] / den),
            "hess": float(np.linalg.norm(HS - H) / np.linalg.norm(H)),
            "newton": float(np.linalg.norm(NS - N) / np.linalg.norm(N)),
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
) -> AlignmentStudy:
    """Random vs CRAIG vs posterior coresets on logistic regression with exact Hessians.

    Labels are corrupted (symmetric noise), ``w_bar`` is ``fit_steps`` of full-batch GD on the
    noisy data, and each trial draws a class-balanced pool, selects three coresets of size
    ``budget`` and scores them with ``alignment_errors`` (fresh posterior draws).

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
    y, flipped = corrupt_labels(y_clean, noise, C, seed)
    W = _fitted_weights(X, y, C, check_int("fit_steps", fit_steps, 0))
    out = {k: {m: [] for m in METHODS} for k in ("grad", "hess", "newton", "share")}
    pool_noise = []
    rng = np.random.default_rng(seed + 1)
    with threadpool_limits(1):  # small dense algebra: one BLAS thread is faster on 2 cores
        for t in progress(range(trials), desc="trials"):
            _alignment_trial(
                t,
                X,
                y,
                flipped,
                W,
                rng,
                pool_size,
                budget,
                K,
                sigma,
                eval_draws,
                seed,
                out,
                pool_noise,
            )
    arr = {k: {m: np.asarray(v) for m, v in d.items()} for k, d in out.items()}
    return AlignmentStudy(
        METHODS, arr["grad"], arr["hess"], arr["newton"], arr["share"], np.asarray(pool_noise)
    )


@functools.lru_cache(maxsize=512)
def _cached_run(
    method, noise, seed, steps, K, sigma, eval_every, budget, select_every, where="norm"
):
    Xtr, ytr, Xte, yte = digits_split(seed=seed)
    yn, fl = corrupt_labels(ytr, noise, 10, seed)
    trainer = CoresetTrainer(
        method,
        seed=seed,
        K=K,
        sigma=sigma,
        where=where,
        budget=budget,
        select_every=select_every,
    )
    return trainer.fit(
        make_mlp(seed=seed), Xtr, yn, Xte, yte, steps=steps, flipped=fl, eval_every=eval_every
    )


def digits_run(
    method: str,
    noise: float,
    seed: int = 0,
    *,
    steps: int = 200,
    K: int = 4,
    sigma: float = 0.05,
    budget: int = 32,
    select_every: int = 10,
    eval_every: int = 20,
    where: str = "norm",
) -> History:
    """One training run on digits with symmetric label noise (memoised: same inputs, same run).

    The digits split and the noise depend on ``seed``; the test labels stay clean. ``where``
    picks the parameters the posterior samples perturb (see ``posterior_features``).

    See: book/coreset/03-training-under-noise.ipynb
    """
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
    key = (*args[:3], *args[4:])
    horizon = _HORIZONS.get(key, 0)
    if args[3] < horizon and args[3] % args[6] == 0:
        # a prefix of a longer run: the same steps, evaluated at the same multiples of
        # eval_every (the loop does not depend on the number of steps), so the same history
        return _prefix(_cached_run(*args[:3], horizon, *args[4:]), args[3])
    if args[3] > horizon:
        _HORIZONS[key] = args[3]
    return _cached_run(*args)


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
    for m, b, c in progress(jobs, desc="runs"):
        h = digits_run(m, noises[b], seeds[c], steps=steps, K=K, sigma=sigma)
        out[m][b, c] = h.final_acc
        out[f"share/{m}"][b, c] = np.nanmean(h.noisy_share) if m != "full" else np.nan
    return out


ABLATION_WHERE = ("norm", "all", "last")


@dataclass
class PerturbationAblation:
    """Clean test accuracy of posterior coresets per perturbed block, σ and seed.

    ``acc[i, j, k]`` and ``share[i, j, k]`` belong to ``wheres[i]``, ``sigmas[j]`` and
    ``seeds[k]`` (``perturbation_ablation``); ``share`` is the weighted share of mislabeled
    examples in the coresets over the last evaluation window.

    See: book/coreset/02-label-noise.ipynb
    """

    wheres: tuple[str, ...]
    sigmas: tuple[float, ...]
    seeds: tuple[int, ...]
    acc: np.ndarray
    share: np.ndarray

    def at(self, where: str, sigma: float) -> np.ndarray:
        """Accuracy per seed of one variant, shape ``(len(seeds),)``.

        See: book/coreset/02-label-noise.ipynb
        """
        i = self.wheres.index(check_choice("where", where, self.wheres))
        matches = [j for j, s in enumerate(self.sigmas) if math.isclose(s, float(sigma))]
        if not matches:
            raise ValueError(f"sigma must be one of {self.sigmas} (got {sigma!r})")
        return self.acc[i, matches[0]]

    def mean(self) -> np.ndarray:
        """Mean accuracy over seeds, shape ``(len(wheres), len(sigmas))``.

        See: book/coreset/02-label-noise.ipynb
        """
        return self.acc.mean(axis=2)


def perturbation_ablation(
    wheres: Any = ABLATION_WHERE,
    sigmas: Any = (0.1, 0.01, 0.001),
    seeds: Any = (0, 1, 2),
    *,
    noise: float = 0.5,
    steps: int = 200,
    K: int = 4,
    budget: int = 32,
    select_every: int = 10,
) -> PerturbationAblation:
    """The paper's Table 2 ablation at our size: which parameters the posterior samples perturb.

    For every perturbed block in ``wheres`` (``"norm"``: the BatchNorm affine parameters,
    the paper's default; ``"all"``: every parameter; ``"last"``: the final linear layer),
    every σ in ``sigmas`` and every seed, trains the chapter's BatchNorm MLP on digits with
    a share ``noise`` of the training labels redrawn, on posterior mini-batch coresets
    (``digits_run(method="posterior", where=...)``: the same split, noise, initialisation
    and pools for every variant of a seed, so variants compare seed by seed). The runs use
    one CPU thread (tiny matrices: threads only contend) and are memoised.

    Parameters
    ----------
    wheres : sequence of {"norm", "all", "last", "norm_out"}
        Distinct perturbed blocks.
    sigmas : sequence of float
        Distinct noise scales (``>= 0``); the paper validates over {0.1, 0.01, 0.001}.
    seeds : sequence of int
        Distinct seeds (``>= 0``).
    noise : float
        Label-noise ratio in [0, 1] (the paper's Table 2 uses 0.5).
    steps, K, budget, select_every : int
        As in ``digits_run``.

    Returns
    -------
    PerturbationAblation

    See: book/coreset/02-label-noise.ipynb
    """
    import torch

    def _distinct(name, values, check):
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"{name} must be a sequence (got {type(values).__name__})")
        out = tuple(check(v) for v in values)
        if not out:
            raise ValueError(f"{name} must not be empty")
        if len(set(out)) != len(out):
            raise ValueError(f"{name} must hold distinct values (got {out})")
        return out

    wheres = _distinct("wheres", wheres, lambda w: check_choice("where", w, WHERE))
    sigmas = _distinct(
        "sigmas", sigmas, lambda s: float(check_positive("sigma", s, allow_zero=True))
    )
    seeds = _distinct("seeds", seeds, lambda s: check_int("seed", s, 0))
    noise = check_range("noise", noise, 0.0, 1.0)
    kw = {
        "steps": check_int("steps", steps, 1),
        "K": check_int("K", K, 1),
        "budget": check_int("budget", budget, 1),
        "select_every": check_int("select_every", select_every, 1),
    }
    acc = np.zeros((len(wheres), len(sigmas), len(seeds)))
    share = np.full_like(acc, np.nan)
    jobs = [
        (i, j, k) for i in range(len(wheres)) for j in range(len(sigmas)) for k in range(len(seeds))
    ]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            for i, j, k in progress(jobs, desc="ablation runs"):
                h = digits_run("posterior", noise, seeds[k], sigma=sigmas[j], where=wheres[i], **kw)
                acc[i, j, k] = h.final_acc
                share[i, j, k] = h.noisy_share[-1]
    finally:
        torch.set_num_threads(threads)
    return PerturbationAblation(wheres, sigmas, seeds, acc, share)


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
