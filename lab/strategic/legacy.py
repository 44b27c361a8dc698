r"""The chapter's first reconstruction, kept as a labelled extra baseline.

Before the paper's full text could be read, the chapter reconstructed a learner from the
abstract: *explore-fit-shift in doubling epochs* (rounds that accept everyone give clean
labelled data, a 0-1 empirical risk minimiser is fitted on it and announced shifted by the
manipulation radius). It is **not** the paper's algorithm (that one lives in
:mod:`lab.strategic.reference` and :mod:`lab.strategic.fast`); it stays here as an extra
baseline, together with the game simulator it runs on.

The simulator is more general than the paper's model: an offset ``b*`` (the paper has
``b* = 0``), a rule "accept iff ``<w, x> >= tau``" (the paper's ``sgn(<w, r> + m)`` with
``tau = -m``) and a radius ``r`` (the paper's ``gamma``). With ``b_star=0`` and ``r=gamma`` it
is the paper's game.

Equations (numbered as in the first version of the chapter): (1) best response, (2) expected
loss given ``x``, (3) clairvoyant rule ``(w*, b* + r)``, (4) regret, (5) the unshifted rule's
loss gap, (6) the doubling-epoch schedule.

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.core.progress import progress
from lab.core.rates import power_law_fit

__all__ = [
    "NOISE_PROFILES",
    "StrategicEnv",
    "accepts",
    "best_response",
    "clairvoyant",
    "closed_form_unshifted_gap",
    "epoch_schedule",
    "erm01_1d",
    "erm01_halfspace",
    "explore_fit_shift",
    "logistic_halfspace",
    "naive_unshifted",
    "regret_slope",
]

NOISE_PROFILES = ("none", "uniform", "asymmetric", "margin")
TIE = 1e-9


def _unit(name: str, w, d: int | None = None) -> np.ndarray:
    w = check_array(name, w, ndim=1, min_size=1)
    if d is not None and w.shape[0] != d:
        raise ValueError(f"{name} must have length d = {d} (got {w.shape[0]})")
    nrm = float(np.linalg.norm(w))
    if nrm == 0.0:
        raise ValueError(f"{name} must be nonzero (got norm 0)")
    return w / nrm


# ------------------------------------------------------------------------------------------
# The agents
# ------------------------------------------------------------------------------------------
def accepts(X, w, tau) -> np.ndarray:
    """The announced rule on (reported) features: ``<w, x> >= tau`` with ``w`` normalised.

    Uses the same dot product as :func:`best_response`, so a mover nudged over the bar is
    accepted here. ``tau = -inf`` accepts everyone.

    See: book/strategic/01-best-responses.ipynb
    """
    X = check_array("X", X, ndim=2)
    w = _unit("w", w, X.shape[1])
    tau = float(tau)
    if math.isnan(tau):
        raise ValueError("tau must not be NaN")
    return X @ w >= tau


def best_response(X, w, tau, r, tie: float = TIE) -> np.ndarray:
    """Agents' reported features under the rule ``<w, x> >= tau`` and manipulation radius r.

    Parameters
    ----------
    X : array, shape (n, d)
        True features.
    w : array, shape (d,)
        Announced direction (normalised here, so ``tau`` is read in units of ``w/|w|``).
    tau : float
        Announced threshold; ``-inf`` accepts all (no one moves), ``+inf`` rejects all.
    r : float
        Manipulation radius ``1/c`` (Euclidean cost), ``>= 0``.
    tie : float
        Extra push past the bar, ``>= 0``. With ``tie = 0`` a mover lands *on* the bar and
        rounding leaves about half of them a hair below it: rejected after paying.

    Returns
    -------
    array, shape (n, d)
        ``x + (tau - <w, x> + tie) w`` for agents with ``tau - r <= <w, x> < tau``, eq. (1);
        the others unchanged.

    See: book/strategic/01-best-responses.ipynb
    """
    X = check_array("X", X, ndim=2)
    w = _unit("w", w, X.shape[1])
    tau = float(tau)
    if math.isnan(tau):
        raise ValueError("tau must not be NaN")
    r = check_positive("r", r, allow_zero=True)
    tie = check_positive("tie", tie, allow_zero=True)
    s = X @ w
    if not math.isfinite(tau):
        return X.copy()
    move = (s >= tau - r) & (s < tau)  # eq. (1): within reach and not yet accepted
    Xt = X.copy()
    Xt[move] += (tau - s[move] + tie)[:, None] * w[None, :]  # eq. (1): project onto the bar
    return Xt


# ------------------------------------------------------------------------------------------
# The environment
# ------------------------------------------------------------------------------------------
@dataclass
class StrategicEnv:
    """Agents ``x ~ N(0, I_d)``, a halfspace ``(w*, b*)`` with Massart noise, radius ``r``.

    Parameters
    ----------
    w_star : array, shape (d,)
        True direction (normalised on construction). Default: angle 0.6 rad in the plane.
    b_star : float
        True offset; the Bayes rule is ``<w*, x> >= b*``.
    r : float
        Manipulation radius, ``>= 0``.
    noise : {"none", "uniform", "asymmetric", "margin"}
        Noise profile ``eta(x)``: 0; ``eta_max``; ``0.05 + (eta_max - 0.05) 1[x_1 > 0]``
        (feature dependent, the default); ``eta_max exp(-|<w*, x> - b*| / 0.5)`` (noisiest at
        the boundary).
    eta_max : float
        Massart bound, in ``[0, 0.5)``.
    n_mc : int
        Size of the fixed Monte Carlo pool used for expected losses and regrets.
    seed : int
        Seed of the pool (agents of a run use the run's own seed).

    See: book/strategic/01-best-responses.ipynb
    """

    w_star: np.ndarray = field(default_factory=lambda: np.array([math.cos(0.6), math.sin(0.6)]))
    b_star: float = 0.3
    r: float = 0.5
    noise: str = "asymmetric"
    eta_max: float = 0.35
    n_mc: int = 200_000
    seed: int = 0

    def __post_init__(self):
        self.w_star = _unit("w_star", self.w_star)
        self.b_star = check_range("b_star", self.b_star, -5.0, 5.0)
        self.r = check_positive("r", self.r, allow_zero=True)
        self.noise = check_choice("noise", self.noise, NOISE_PROFILES)
        self.eta_max = check_range("eta_max", self.eta_max, 0.0, 0.5, high_inclusive=False)
        self.n_mc = check_int("n_mc", self.n_mc, 1000)
        self.seed = check_int("seed", self.seed, 0)
        if self.noise == "asymmetric" and self.eta_max < 0.05:
            raise ValueError(f"eta_max must be >= 0.05 for noise='asymmetric' (got {self.eta_max})")
        self._pool = None

    @property
    def d(self) -> int:
        return int(self.w_star.shape[0])

    def eta(self, X) -> np.ndarray:
        """Flip probability ``eta(x)`` of the chosen profile (always ``< 1/2``)."""
        X = check_array("X", X, ndim=2)
        n = X.shape[0]
        if self.noise == "none":
            return np.zeros(n)
        if self.noise == "uniform":
            return np.full(n, self.eta_max)
        if self.noise == "asymmetric":
            return 0.05 + (self.eta_max - 0.05) * (X[:, 0] > 0)
        u = X @ self.w_star - self.b_star
        return self.eta_max * np.exp(-np.abs(u) / 0.5)

    def bayes(self, X) -> np.ndarray:
        """``s(x) = +1`` iff ``<w*, x> >= b*``, else ``-1``."""
        X = check_array("X", X, ndim=2)
        return np.where(X @ self.w_star >= self.b_star, 1, -1)

    def sample(self, n: int, rng: np.random.Generator):
        """``n`` agents: true features ``X`` and noisy labels ``y`` (Massart)."""
        n = check_int("n", n, 0)
        X = rng.standard_normal((n, self.d))
        flip = rng.random(n) < self.eta(X)
        y = np.where(flip, -self.bayes(X), self.bayes(X))
        return X, y

    @property
    def pool(self) -> np.ndarray:
        if self._pool is None:
            self._pool = np.random.default_rng(10_000 + self.seed).standard_normal(
                (self.n_mc, self.d)
            )
        return self._pool

    def step(self, w, tau, rng: np.random.Generator, n: int = 1):
        """Play ``n`` rounds of the same announced rule.

        Returns ``(X_tilde, y_seen, info)``: the reported features, the labels with ``0`` where
        the agent was rejected (label not revealed), and a dict with ``X``, ``y``,
        ``accepted``, ``loss`` (realised 0-1 loss per round).
        """
        X, y = self.sample(n, rng)
        Xt = best_response(X, w, tau, self.r)
        acc = accepts(Xt, w, tau)
        yhat = np.where(acc, 1, -1)
        seen = np.where(acc, y, 0)  # one-sided feedback: labels only for accepted agents
        return Xt, seen, {"X": X, "y": y, "accepted": acc, "loss": (yhat != y).astype(float)}

    def expected_loss(self, w, tau, tie: float = TIE) -> float:
        """``E[1(yhat != y)]`` of the announced rule on the Monte Carlo pool, eq. (2)."""
        X = self.pool
        acc = accepts(best_response(X, w, tau, self.r, tie), w, tau)
        eta = self.eta(X)
        wrong = np.where(acc, 1, -1) != self.bayes(X)
        return float(np.mean(eta + (1 - 2 * eta) * wrong))  # eq. (2)

    def regret(self, w, tau, tie: float = TIE) -> float:
        """Per-round expected regret against the clairvoyant rule, eq. (4)."""
        X = self.pool
        acc = accepts(best_response(X, w, tau, self.r, tie), w, tau)
        eta = self.eta(X)
        wrong = np.where(acc, 1, -1) != self.bayes(X)
        return float(np.mean((1 - 2 * eta) * wrong))  # eq. (4)


def clairvoyant(env: StrategicEnv) -> tuple[np.ndarray, float]:
    """The optimal announced rule ``(w*, b* + r)``, eq. (3).

    See: book/strategic/01-best-responses.ipynb
    """
    if not isinstance(env, StrategicEnv):
        raise TypeError(f"env must be a StrategicEnv (got {type(env).__name__})")
    return env.w_star.copy(), env.b_star + env.r


def closed_form_unshifted_gap(env: StrategicEnv) -> float:
    """Per-round regret of announcing ``(w*, b*)``, eq. (5), by 1-D quadrature (no sampling).

    With ``u = <w*, x>`` and ``v`` the orthogonal coordinate, ``x_1 = u cos(phi) - v sin(phi)``
    (in d = 2), so ``P(x_1 > 0 | u) = Phi(u cos(phi) / sin(phi))``.

    See: book/strategic/02-regret.ipynb
    """
    from scipy import integrate
    from scipy.stats import norm

    if not isinstance(env, StrategicEnv):
        raise TypeError(f"env must be a StrategicEnv (got {type(env).__name__})")
    lo, hi = env.b_star - env.r, env.b_star
    if env.noise == "none":
        return float(norm.cdf(hi) - norm.cdf(lo))
    if env.noise == "uniform":
        return float((1 - 2 * env.eta_max) * (norm.cdf(hi) - norm.cdf(lo)))
    if env.noise == "margin":

        def f(u):
            return norm.pdf(u) * (1 - 2 * env.eta_max * math.exp(-abs(u - env.b_star) / 0.5))

        return float(integrate.quad(f, lo, hi)[0])
    if env.d != 2:
        raise ValueError(f"the asymmetric closed form needs d = 2 (got d = {env.d})")
    c, s = env.w_star
    a, bump = 0.05, env.eta_max - 0.05

    def p_pos(u):  # P(x_1 > 0 | <w*, x> = u)
        if abs(s) < 1e-15:
            return float(u * c > 0)
        return float(norm.cdf(u * c / s)) if s > 0 else float(norm.cdf(-u * c / s))

    def g(u):
        return norm.pdf(u) * (1 - 2 * (a + bump * p_pos(u)))

    return float(integrate.quad(g, lo, hi, points=[0.0] if lo < 0 < hi else None)[0])


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


def _check_env(env):
    if not isinstance(env, StrategicEnv):
        raise TypeError(f"env must be a StrategicEnv (got {type(env).__name__})")
    return env


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
    env = _check_env(env)
    T = check_int("T", T, 1)
    fitter = check_choice("fitter", fitter, ("erm01", "logistic"))
    shift = bool(shift)
    seed = check_int("seed", seed, 0)
    if env.d != 2:
        raise ValueError(
            f"explore_fit_shift fits halfspaces in the plane: env.d must be 2 (got {env.d})"
        )
    sched = epoch_schedule(T, L0, c_e, env.d)
    rng = np.random.default_rng(seed)
    regret = np.empty(T)
    loss = np.empty(T)
    seen = np.empty(T, bool)
    explore = np.zeros(T, bool)
    Xc, yc = np.empty((0, 2)), np.empty(0)
    w_hat, b_hat = np.array([1.0, 0.0]), 0.0
    ws, bs, ns = [], [], []
    reg_all = env.regret(w_hat, -np.inf)  # accept-all rounds: no one moves
    t = 0
    for n_exp, n_exploit in progress(sched, desc="epochs"):
        if n_exp:
            Xt, ys, info = env.step(w_hat, -np.inf, rng, n_exp)
            Xc = np.vstack([Xc, Xt])  # exact features: nobody manipulates when all pass
            yc = np.concatenate([yc, ys])  # every label revealed
            regret[t : t + n_exp] = reg_all
            loss[t : t + n_exp] = info["loss"]
            seen[t : t + n_exp] = True
            explore[t : t + n_exp] = True
            t += n_exp
        if len(np.unique(yc)) == 2:
            if fitter == "erm01":
                w_hat, b_hat = erm01_halfspace(Xc, yc, n_dirs=n_dirs, backend=backend)
            else:
                w_hat, b_hat = logistic_halfspace(Xc, yc)
        ws.append(w_hat.copy())
        bs.append(b_hat)
        ns.append(len(yc))
        if n_exploit:
            tau = b_hat + env.r if shift else b_hat  # the shift by the manipulation radius
            _, ys, info = env.step(w_hat, tau, rng, n_exploit)
            regret[t : t + n_exploit] = env.regret(w_hat, tau)
            loss[t : t + n_exploit] = info["loss"]
            seen[t : t + n_exploit] = info["accepted"]  # labels of accepted agents only
            t += n_exploit
    ws = np.array(ws)
    bs = np.array(bs)
    return {
        "regret": regret,
        "loss": loss,
        "seen": seen,
        "explore": explore,
        "schedule": sched,
        "w_hat": ws,
        "b_hat": bs,
        "w_err": np.linalg.norm(ws - env.w_star, axis=1),
        "b_err": np.abs(bs - env.b_star),
        "n_clean": np.array(ns),
    }


def naive_unshifted(env: StrategicEnv, T: int, seed: int = 0) -> dict:
    """Baseline: announce the *true* boundary ``(w*, b*)`` every round, without the shift.

    Returns a dict like :func:`explore_fit_shift`: ``regret`` (constant per round, eq. (5))
    and ``loss`` (realised).

    See: book/strategic/02-regret.ipynb
    """
    env = _check_env(env)
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
