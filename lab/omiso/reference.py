"""The numpy reference: factor analysis (float64: the EM fit, the posterior mean of eq. (1), the
log-likelihood, the Procrustes alignment of loadings across sessions) and the closed loop of one
session (:func:`run_session`: calibration, training block, closed-loop trials with eqs. (1),
(3), (4)).

See: book/omiso/01-simulated-array.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_instance, check_int, check_positive
from lab.omiso.array import UtahArraySim, session_plan
from lab.omiso.models import RandomChoice, make_method
from lab.omiso.settings import SessionSettings, check_dims

__all__ = [
    "FAParams",
    "fit_fa",
    "fa_posterior_mean",
    "align_loadings",
    "SessionLog",
    "default_target",
    "run_session",
]


@dataclass
class FAParams:
    """Factor-analysis parameters: loadings ``L`` (N, q), mean ``mu`` (N), noise ``psi`` (N).

    See: book/omiso/01-simulated-array.ipynb
    """

    L: np.ndarray
    mu: np.ndarray
    psi: np.ndarray
    n_iter: int = 0

    @property
    def posterior_matrix(self) -> np.ndarray:
        """``(I + L^T Psi^-1 L)^-1 L^T Psi^-1`` (q, N), the map of eq. (1)."""
        LtPi = self.L.T / self.psi
        return np.linalg.solve(np.eye(self.L.shape[1]) + LtPi @ self.L, LtPi)

    def loglik(self, Y: np.ndarray) -> float:
        """Average log-likelihood per sample (as ``FactorAnalysis.score``)."""
        Y = check_array("Y", Y, ndim=2)
        C = self.L @ self.L.T + np.diag(self.psi)
        X = Y - self.mu
        _, logdet = np.linalg.slogdet(C)
        quad = np.einsum("ni,ni->n", X, np.linalg.solve(C, X.T).T)
        return float(np.mean(-0.5 * (Y.shape[1] * np.log(2 * np.pi) + logdet + quad)))


def fit_fa(Y: np.ndarray, q: int, n_iter: int = 1000, tol: float = 1e-10) -> FAParams:
    """Maximum-likelihood factor analysis (the SVD/eigen iteration of scikit-learn).

    Iterates ``C = Psi^-1/2 S Psi^-1/2``, top-``q`` eigenpairs ``(s2, V)``,
    ``L = Psi^1/2 V sqrt(max(s2 - 1, 0))``, ``Psi = diag(S - L L^T)`` until the average
    log-likelihood changes by less than ``tol``. Loadings are ordered by explained variance and
    each column is signed so that its largest-magnitude entry is positive (a canonical choice
    that the torch path repeats).

    Parameters
    ----------
    Y : array (n, N)
        Counts of no-stimulation windows (never stimulation trials).
    q : int
        Latent dimensions, ``1 <= q < N``.
    n_iter : int
        Maximum iterations.
    tol : float
        Stop when the log-likelihood gain falls below ``tol``.

    Returns
    -------
    FAParams

    See: book/omiso/01-simulated-array.ipynb
    """
    Y = check_array("Y", Y, ndim=2)
    n, N = Y.shape
    q = check_int("q", q, 1, N - 1)
    n_iter = check_int("n_iter", n_iter, 1)
    tol = check_positive("tol", tol, allow_zero=True)
    if n < 2:
        raise ValueError(f"Y must have at least 2 rows (got {n})")
    mu = Y.mean(0)
    X = Y - mu
    S = X.T @ X / n
    var = np.maximum(np.diag(S).copy(), 1e-12)
    psi = np.ones(N)
    old = -np.inf
    L = np.zeros((N, q))
    iters = 0
    for _ in range(n_iter):
        iters += 1
        sp = np.sqrt(psi)
        C = S / np.outer(sp, sp)
        s2, V = np.linalg.eigh(C)
        s2, V = s2[::-1][:q], V[:, ::-1][:, :q]
        L = sp[:, None] * V * np.sqrt(np.maximum(s2 - 1.0, 0.0))
        psi = np.maximum(var - (L**2).sum(1), 1e-12)
        ll = _fa_loglik_cov(S, L, psi)
        if ll - old < tol:
            break
        old = ll
    L = L * _canonical_sign(L)
    return FAParams(L=L, mu=mu, psi=psi, n_iter=iters)


def _canonical_sign(L: np.ndarray) -> np.ndarray:
    idx = np.abs(L).argmax(0)
    s = np.sign(L[idx, np.arange(L.shape[1])])
    return np.where(s == 0, 1.0, s)


def _fa_loglik_cov(S: np.ndarray, L: np.ndarray, psi: np.ndarray) -> float:
    C = L @ L.T + np.diag(psi)
    _, logdet = np.linalg.slogdet(C)
    return float(-0.5 * (len(psi) * np.log(2 * np.pi) + logdet + np.trace(np.linalg.solve(C, S))))


def fa_posterior_mean(Y: np.ndarray, params: FAParams) -> np.ndarray:
    """Latent states ``E[z | y]`` (eq. 1) of the rows of ``Y`` (n, N) or of one window (N,).

    See: book/omiso/01-simulated-array.ipynb
    """
    if not isinstance(params, FAParams):
        raise TypeError(f"params must be FAParams (got {type(params).__name__})")
    Y = check_array("Y", Y, ndim=(1, 2))
    if Y.shape[-1] != len(params.mu):
        raise ValueError(f"Y must have {len(params.mu)} columns (got {Y.shape[-1]})")
    return (Y - params.mu) @ params.posterior_matrix.T  # eq. (1)


def align_loadings(
    L_ref: np.ndarray, L_new: np.ndarray, channels: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Rotate ``L_new`` onto ``L_ref`` by orthogonal Procrustes (as MiSO aligns sessions).

    Parameters
    ----------
    L_ref, L_new : array (N, q)
        Loadings of the reference and of the new session (same channel order).
    channels : sequence of int, optional
        Channels usable in both sessions; the rotation is fitted on these rows only.

    Returns
    -------
    L_aligned : array (N, q)
        ``L_new @ R``.
    R : array (q, q)
        The orthogonal rotation.

    See: book/omiso/01-simulated-array.ipynb
    """
    L_ref = check_array("L_ref", L_ref, ndim=2)
    L_new = check_array("L_new", L_new, ndim=2, shape=L_ref.shape)
    rows = np.arange(len(L_ref)) if channels is None else np.asarray(channels)
    if rows.ndim != 1 or len(rows) < L_ref.shape[1] or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"channels must hold at least {L_ref.shape[1]} integer channel indices")
    if rows.min() < 0 or rows.max() >= len(L_ref):
        raise ValueError(
            f"channels must lie in 0..{len(L_ref) - 1} (got {rows.min()}..{rows.max()})"
        )
    U, _, Vt = np.linalg.svd(L_new[rows].T @ L_ref[rows])
    R = U @ Vt
    return L_new @ R, R


# ------------------------------------------------------------------------------------------
# the closed loop of one session
# ------------------------------------------------------------------------------------------
@dataclass
class SessionLog:
    """One closed-loop session: per-trial ``errors`` (n_test,), ``choices`` (n_test,),
    estimated states ``z_pre``, ``z_post`` (n_test, q), the ``target``, the FA fit ``fa``.

    See: book/omiso/03-closing-the-loop.ipynb
    """

    errors: np.ndarray
    choices: np.ndarray
    z_pre: np.ndarray
    z_post: np.ndarray
    target: np.ndarray
    fa: FAParams | None = None
    train: dict = field(default_factory=dict)

    @property
    def mean_error(self) -> float:
        return float(self.errors.mean())


def default_target(dims: Any = (0, 1)) -> np.ndarray:
    """The book's default target in the estimated latent space: ``1.0`` in each of ``dims``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    return np.full(len(np.atleast_1d(dims)), 1.0)


def run_session(
    sim: UtahArraySim,
    method: Any,
    settings: SessionSettings | None = None,
    *,
    target: Any = None,
    q_proc: float = 0.002,
) -> SessionLog:
    """One closed-loop session (reference, numpy): calibrate FA on no-stimulation windows,
    train on random patterns, then choose a pattern on each of ``settings.n_test`` trials.

    Parameters
    ----------
    sim : UtahArraySim
        The simulated array (reset to trial 0 first); FA uses its ``q`` dimensions.
    method : str or model
        ``"omiso"``, ``"static"``, ``"miso"``, ``"random"`` (see :func:`make_method`), or an
        object with ``fit``, ``choose`` and ``update``.
    settings : SessionSettings, optional
        The protocol: calibration, training and closed-loop trials, target dimensions ``K``,
        exploration, ridge prior, MiSO's rate (default ``SessionSettings()``).
    target : array (len(settings.dims),), optional
        Target in the *estimated* latent space (default :func:`default_target`).
    q_proc : float
        Process noise ``Q`` of OMiSO's Kalman update (``method="omiso"`` only).

    Returns
    -------
    SessionLog

    See: book/omiso/03-closing-the-loop.ipynb
    """
    check_instance("sim", sim, UtahArraySim)
    settings = SessionSettings() if settings is None else settings
    check_instance("settings", settings, SessionSettings)
    dims = check_dims(settings.dims, sim.q)
    target = default_target(dims) if target is None else target
    target = check_array("target", target, shape=(len(dims),))
    if isinstance(method, str):
        kw = {"lam": settings.lam, "q_proc": q_proc, "lr": settings.lr}
        model = make_method(method, sim.n_patterns, sim.q, **kw)
    else:
        model = method
        for attr in ("fit", "choose", "update"):
            if not callable(getattr(model, attr, None)):
                raise TypeError(f"method must have a callable .{attr} (got {type(model).__name__})")
    return _run_session(sim, model, settings, target)


def _run_session(sim, model, settings: SessionSettings, target) -> SessionLog:
    """:func:`run_session` on checked arguments: calibration, training block, closed loop."""
    s = settings
    plan = session_plan(sim.seed, s.n_train, s.n_test, sim.n_patterns)
    sim.reset()
    # calibration: no-stimulation windows only -> FA
    Ycal = np.stack([sim.pre()[1] for _ in range(s.n_cal)])
    fa = fit_fa(Ycal, sim.q, s.fa_iter, s.fa_tol)
    M = fa.posterior_matrix
    # training block: random patterns, store (z_pre, u, z_post) triples
    Zpre = np.empty((s.n_train, sim.q))
    Zpost = np.empty((s.n_train, sim.q))
    for t in range(s.n_train):
        Zpre[t] = M @ (sim.pre()[1] - fa.mu)  # eq. (1)
        Zpost[t] = M @ (sim.stim(int(plan["train_u"][t]))[1] - fa.mu)
    model.fit(Zpre, plan["train_u"], Zpost)
    log = _closed_loop(sim, model, plan, (fa, M), settings, target)
    log.train = {"z_pre": Zpre, "u": plan["train_u"], "z_post": Zpost, "Y_cal": Ycal}
    return log


def _closed_loop(sim, model, plan, fa_map, settings: SessionSettings, target) -> SessionLog:
    """The closed-loop trials of one session: choose (eq. 3, epsilon-greedy), stimulate, read
    the outcome (eq. 1), update the tried pattern (eq. 4 or 5)."""
    fa, M = fa_map
    dims, q, n_test = list(settings.dims), sim.q, settings.n_test
    is_random = isinstance(model, RandomChoice)
    errors = np.empty(n_test)
    choices = np.empty(n_test, dtype=int)
    zp = np.empty((n_test, q))
    zq = np.empty((n_test, q))
    for t in range(n_test):
        z_pre = M @ (sim.pre()[1] - fa.mu)  # eq. (1): the state before stimulation
        if is_random or plan["explore_draw"][t] < settings.epsilon:
            u = int(plan["explore_u"][t])  # epsilon-greedy: a random pattern
        else:
            u = int(model.choose(z_pre, target, dims))  # eq. (3): the inverse
        z_post = M @ (sim.stim(u)[1] - fa.mu)  # eq. (1): the outcome
        errors[t] = np.linalg.norm(z_post[dims] - target)  # the distance to the target
        model.update(u, z_pre, z_post)  # eq. (4) / (5), the tried pattern only
        choices[t], zp[t], zq[t] = u, z_pre, z_post
    return SessionLog(errors, choices, zp, zq, target, fa)
