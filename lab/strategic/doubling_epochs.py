r"""Explore-fit-shift in doubling epochs, a learner built from the paper's abstract alone (an
extra baseline, not the paper's algorithm): rounds that accept everyone give clean
labelled data, a 0-1 empirical risk minimiser (or logistic regression) is fitted on it and
announced shifted by the manipulation radius; the unshifted baseline and the log-log regret
slope. Runs on :mod:`lab.strategic.offset_game`. Equation (6): the doubling-epoch schedule.

See: book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_instance,
    check_int,
    check_positive,
)
from lab.core.progress import progress
from lab.core.rates import power_law_fit
from lab.strategic.offset_game import StrategicEnv

__all__ = [
    "epoch_schedule",
    "erm01_1d",
    "erm01_halfspace",
    "explore_fit_shift",
    "logistic_halfspace",
    "naive_unshifted",
    "regret_slope",
]


# ------------------------------------------------------------------------------------------
# Fitting a halfspace: 0-1 ERM (Massart-consistent) and logistic regression (not)
# ------------------------------------------------------------------------------------------
def erm01_1d(scores, y) -> tuple[float, int]:
    """Exact minimiser of the 0-1 loss of the rule ``score >= theta``.

    Candidate thresholds: below all scores, midpoints between consecutive distinct scores,
    above all. Returns ``(theta, errors)``; the first minimiser in increasing ``theta``.

    See: book/strategic/02-regret.ipynb
    """
    s = check_array("scores", scores, ndim=1, min_size=1)
    y = check_array("y", y, ndim=1, shape=(s.shape[0],))
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must contain only -1 and +1")
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    # errors when the first i sorted points are rejected: positives rejected + negatives kept
    pos_below = np.concatenate([[0], np.cumsum(yy > 0)])
    neg_below = np.concatenate([[0], np.cumsum(yy < 0)])
    err = pos_below + (neg_below[-1] - neg_below)
    valid = np.ones(len(ss) + 1, bool)
    valid[1:-1] = ss[1:] > ss[:-1]  # a cut only between distinct scores
    err = np.where(valid, err, np.iinfo(np.int64).max)
    i = int(np.argmin(err))
    if i == 0:
        theta = ss[0] - 1.0
    elif i == len(ss):
        theta = ss[-1] + 1.0
    else:
        theta = 0.5 * (ss[i - 1] + ss[i])
    return float(theta), int(err[i])


def _directions(n_dirs: int) -> np.ndarray:
    phi = 2 * np.pi * np.arange(n_dirs) / n_dirs
    return np.stack([np.cos(phi), np.sin(phi)], axis=1)


def _scan_numpy(X, y, W):
    S = X @ W.T  # [n, K]
    order = np.argsort(S, axis=0, kind="stable")
    Ss = np.take_along_axis(S, order, axis=0)
    ys = y[order]
    zero = np.zeros((1, W.shape[0]))
    pos_below = np.concatenate([zero, np.cumsum(ys > 0, axis=0)])
    neg_below = np.concatenate([zero, np.cumsum(ys < 0, axis=0)])
    err = pos_below + (neg_below[-1:] - neg_below)
    valid = np.ones_like(err, bool)
    valid[1:-1] = Ss[1:] > Ss[:-1]
    err = np.where(valid, err, np.inf)
    i = np.argmin(err, axis=0)  # best cut per direction
    best = err[i, np.arange(W.shape[0])]
    k = int(np.argmin(best))
    return k, int(i[k]), Ss[:, k], float(best[k])


def _scan_torch(X, y, W, device):
    import torch

    Xt = torch.as_tensor(X, dtype=torch.float64, device=device)
    yt = torch.as_tensor(y, dtype=torch.float64, device=device)
    Wt = torch.as_tensor(W, dtype=torch.float64, device=device)
    S = Xt @ Wt.T
    Ss, order = torch.sort(S, dim=0, stable=True)
    ys = yt[order]
    zero = torch.zeros((1, W.shape[0]), dtype=torch.float64, device=device)
    pos_below = torch.cat([zero, torch.cumsum((ys > 0).double(), 0)])
    neg_below = torch.cat([zero, torch.cumsum((ys < 0).double(), 0)])
    err = pos_below + (neg_below[-1:] - neg_below)
    valid = torch.ones_like(err, dtype=torch.bool)
    valid[1:-1] = Ss[1:] > Ss[:-1]
    err = torch.where(valid, err, torch.full_like(err, float("inf")))
    best, i = torch.min(err, dim=0)
    k = int(torch.argmin(best))  # first minimum, as numpy
    # torch.min may pick any minimiser along dim 0: take the first, as numpy does
    i_k = int(torch.nonzero(err[:, k] == best[k])[0])
    return k, i_k, Ss[:, k].cpu().numpy(), float(best[k])


def _cut(Ss, i):
    if i == 0:
        return Ss[0] - 1.0
    if i == len(Ss):
        return Ss[-1] + 1.0
    return 0.5 * (Ss[i - 1] + Ss[i])


def erm01_halfspace(
    X, y, n_dirs: int = 720, refine: bool = True, backend: str = "numpy", device=None
) -> tuple[np.ndarray, float]:
    """Empirical 0-1 loss minimiser over halfspaces ``<w, x> >= b`` in the plane.

    An angular grid of ``n_dirs`` unit directions with an exact threshold scan for each
    (``O(K n log n)``), then (``refine``) a second grid of 41 directions spanning one coarse
    step around the best one.

    Parameters
    ----------
    X : array, shape (n, 2)
    y : array, shape (n,), entries in {-1, +1}
    n_dirs : int
    refine : bool
    backend : {"numpy", "torch"}
        ``"torch"`` runs the batched scan in float64 on ``device`` (``None``: ``lab.device()``).

    Returns
    -------
    (w, b) : unit direction and offset.

    See: book/strategic/02-regret.ipynb
    """
    X = check_array("X", X, ndim=2, shape=(None, 2), min_size=2)
    y = check_array("y", y, ndim=1, shape=(X.shape[0],))
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must contain only -1 and +1")
    n_dirs = check_int("n_dirs", n_dirs, 4)
    backend = check_choice("backend", backend, ("numpy", "torch"))
    if backend == "torch":
        from lab.core.runtime import resolve_device

        dev = resolve_device(device)

        def scan(W):
            return _scan_torch(X, y, W, dev)
    else:

        def scan(W):
            return _scan_numpy(X, y, W)

    W = _directions(n_dirs)
    k, i, Ss, _ = scan(W)
    w, b = W[k], _cut(Ss, i)
    if refine:
        phi0 = 2 * np.pi * k / n_dirs
        step = 2 * np.pi / n_dirs
        phi = phi0 + np.linspace(-step, step, 41)
        W2 = np.stack([np.cos(phi), np.sin(phi)], axis=1)
        k2, i2, Ss2, _ = scan(W2)
        w, b = W2[k2], _cut(Ss2, i2)
    return w.copy(), float(b)


def logistic_halfspace(X, y, C: float = 1e4) -> tuple[np.ndarray, float]:
    """Logistic regression (scikit-learn) read as a halfspace ``<w, x> >= b``, ``|w| = 1``.

    A convex surrogate: not Massart-consistent, so under feature-dependent noise it lands on a
    different boundary than the Bayes one.

    See: book/strategic/02-regret.ipynb
    """
    from sklearn.linear_model import LogisticRegression

    X = check_array("X", X, ndim=2, min_size=2)
    y = check_array("y", y, ndim=1, shape=(X.shape[0],))
    C = check_positive("C", C)
    if len(np.unique(y)) < 2:
        return np.eye(X.shape[1])[0], float(-np.inf if y[0] > 0 else np.inf)
    m = LogisticRegression(C=C, max_iter=1000).fit(X, y)
    coef = m.coef_[0]
    nrm = float(np.linalg.norm(coef))
    return coef / nrm, float(-m.intercept_[0] / nrm)


# ------------------------------------------------------------------------------------------
# The online learner and the baselines
# ------------------------------------------------------------------------------------------
def epoch_schedule(T: int, L0: int = 64, c_e: float = 1.0, d: int = 2) -> list[tuple[int, int]]:
    """Doubling epochs ``(n_explore, n_exploit)`` that add up to ``T`` exactly, eq. (6).

    Epoch ``k`` has length ``L_k = L0 2^k`` (the last one truncated at ``T``) and
    ``n_k = min(ceil(c_e sqrt(d L_k)), length)`` exploration rounds.

    See: book/strategic/02-regret.ipynb
    """
    T = check_int("T", T, 1)
    L0 = check_int("L0", L0, 1)
    c_e = check_positive("c_e", c_e, allow_zero=True)
    d = check_int("d", d, 1)
    if T < L0:
        raise ValueError(f"T must be >= L0 = {L0} (got {T})")
    out, used, k = [], 0, 0
    while used < T:
        L = L0 * 2**k
        length = min(L, T - used)
        n = min(math.ceil(c_e * math.sqrt(d * L)), length)  # eq. (6)
        out.append((n, length - n))
        used += length
        k += 1
    return out


def explore_fit_shift(
    env: StrategicEnv,
    T: int,
    L0: int = 64,
    c_e: float = 1.0,
    fitter: str = "erm01",
    shift: bool = True,
    seed: int = 0,
    n_dirs: int = 720,
    backend: str = "numpy",
) -> dict:
    """Run the explore-fit-shift learner for ``T`` rounds (reconstructed, eq. (6)).

    Parameters
    ----------
    env : StrategicEnv
    T : int
        Horizon, ``>= L0``.
    L0, c_e : int, float
        First epoch length and exploration constant.
    fitter : {"erm01", "logistic"}
        How the clean exploration data are fitted (``"logistic"`` is the failing baseline).
    shift : bool
        Announce ``b_hat + r`` (True, the method) or ``b_hat`` (False: forgets manipulation).
    seed : int
        Seed of the agents and labels of this run.
    n_dirs, backend : passed to :func:`erm01_halfspace`.

    Returns
    -------
    dict with ``regret`` (per-round expected regret, eq. (4), shape ``(T,)``), ``loss``
    (realised 0-1 loss per round), ``seen`` (whether the round's label was revealed),
    ``explore`` (exploration-round mask), ``schedule``, ``w_hat``/``b_hat`` (per epoch),
    ``w_err``/``b_err`` (per epoch), ``n_clean`` (clean samples per fit).

    See: book/strategic/02-regret.ipynb
    """
    env = check_instance("env", env, StrategicEnv)
    T = check_int("T", T, 1)
    fitter = check_choice("fitter", fitter, ("erm01", "logistic"))
    shift = bool(shift)
    seed = check_int("seed", seed, 0)
    if env.d != 2:
        raise ValueError(
            f"explore_fit_shift fits halfspaces in the plane: env.d must be 2 (got {env.d})"
        )
    sched = epoch_schedule(T, L0, c_e, env.d)
    run = _EpochRun(env, T, np.random.default_rng(seed))
    for n_exp, n_exploit in progress(sched, desc="epochs"):
        run.explore_rounds(n_exp)
        run.fit(fitter, n_dirs, backend)
        run.exploit_rounds(n_exploit, shift)
    return run.result(sched)


class _EpochRun:
    """The state of one explore-fit-shift run: the per-round records, the clean data and the
    current estimate (eq. (6): explore, fit, shift)."""

    def __init__(self, env: StrategicEnv, T: int, rng: np.random.Generator):
        self.env, self.rng, self.t = env, rng, 0
        self.regret, self.loss = np.empty(T), np.empty(T)
        self.seen, self.explore = np.empty(T, bool), np.zeros(T, bool)
        self.Xc, self.yc = np.empty((0, 2)), np.empty(0)
        self.w_hat, self.b_hat = np.array([1.0, 0.0]), 0.0
        self.ws, self.bs, self.ns = [], [], []
        self.reg_all = env.regret(self.w_hat, -np.inf)  # accept-all rounds: no one moves

    def explore_rounds(self, n: int) -> None:
        """Rounds that accept everyone: nobody moves, every label is revealed."""
        if not n:
            return
        t = self.t
        Xt, ys, info = self.env.step(self.w_hat, -np.inf, self.rng, n)
        self.Xc = np.vstack([self.Xc, Xt])  # exact features: nobody manipulates when all pass
        self.yc = np.concatenate([self.yc, ys])  # every label revealed
        self.regret[t : t + n] = self.reg_all
        self.loss[t : t + n] = info["loss"]
        self.seen[t : t + n] = True
        self.explore[t : t + n] = True
        self.t += n

    def fit(self, fitter: str, n_dirs: int, backend: str) -> None:
        """The 0-1 ERM (or logistic) fit on all clean data so far."""
        if len(np.unique(self.yc)) == 2:
            if fitter == "erm01":
                self.w_hat, self.b_hat = erm01_halfspace(
                    self.Xc, self.yc, n_dirs=n_dirs, backend=backend
                )
            else:
                self.w_hat, self.b_hat = logistic_halfspace(self.Xc, self.yc)
        self.ws.append(self.w_hat.copy())
        self.bs.append(self.b_hat)
        self.ns.append(len(self.yc))

    def exploit_rounds(self, n: int, shift: bool) -> None:
        """Rounds that post the estimate, raised by the radius (or not, the ablation)."""
        if not n:
            return
        t, env = self.t, self.env
        tau = self.b_hat + env.r if shift else self.b_hat  # the shift by the manipulation radius
        _, ys, info = env.step(self.w_hat, tau, self.rng, n)
        self.regret[t : t + n] = env.regret(self.w_hat, tau)
        self.loss[t : t + n] = info["loss"]
        self.seen[t : t + n] = info["accepted"]  # labels of accepted agents only
        self.t += n

    def result(self, sched) -> dict:
        ws, bs = np.array(self.ws), np.array(self.bs)
        return {
            "regret": self.regret,
            "loss": self.loss,
            "seen": self.seen,
            "explore": self.explore,
            "schedule": sched,
            "w_hat": ws,
            "b_hat": bs,
            "w_err": np.linalg.norm(ws - self.env.w_star, axis=1),
            "b_err": np.abs(bs - self.env.b_star),
            "n_clean": np.array(self.ns),
        }


def naive_unshifted(env: StrategicEnv, T: int, seed: int = 0) -> dict:
    """Baseline: announce the *true* boundary ``(w*, b*)`` every round, without the shift.

    Returns a dict like :func:`explore_fit_shift`: ``regret`` (constant per round, eq. (5))
    and ``loss`` (realised).

    See: book/strategic/02-regret.ipynb
    """
    env = check_instance("env", env, StrategicEnv)
    T = check_int("T", T, 1)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    _, _, info = env.step(env.w_star, env.b_star, rng, T)
    return {
        "regret": np.full(T, env.regret(env.w_star, env.b_star)),
        "loss": info["loss"],
        "seen": info["accepted"],
    }


def regret_slope(T_grid, regrets) -> float:
    """Least-squares slope of ``log(regret)`` against ``log(T)``.

    Parameters
    ----------
    T_grid : array, shape (m,)
        Horizons (``> 0``, at least two distinct).
    regrets : array, shape (m,) or (seeds, m)
        Cumulative regret at each horizon (averaged over seeds first when 2-D); ``> 0``.

    Returns
    -------
    float : ``~0.5`` for ``sqrt(T)`` regret, ``~1`` for linear regret.

    See: book/strategic/02-regret.ipynb
    """
    T_grid = check_array("T_grid", T_grid, ndim=1, min_size=2)
    R = check_array("regrets", regrets, ndim=(1, 2))
    if R.ndim == 2:
        R = R.mean(axis=0)
    if R.shape[0] != T_grid.shape[0]:
        raise ValueError(f"regrets must have {T_grid.shape[0]} horizons (got {R.shape[0]})")
    if np.any(T_grid <= 0) or np.any(R <= 0):
        raise ValueError("T_grid and regrets must be > 0 for a log-log fit")
    if len(np.unique(T_grid)) < 2:
        raise ValueError("T_grid needs at least two distinct horizons")
    return power_law_fit(T_grid, R, nonpositive="raise").exponent
