r"""
# OMiSO: choosing microstimulation patterns from the current brain state

Minai, Soldado-Magraner, Yu, Smith. *OMiSO: Adaptive optimization of state-dependent brain
stimulation to shape neural population states.* NeurIPS 2025.
[arXiv:2507.07858](https://arxiv.org/abs/2507.07858)

**Read this first: what is simulated and what is reconstructed.** No OMiSO code is public and
no recordings can be downloaded. Everything here runs on a **simulated Utah array** designed
for this book (latent factors, state-dependent responses to stimulation, Poisson counts,
drift). The response model, its inversion and its online update are **reconstructed** from the
OMiSO abstract and from the predecessor MiSO (Minai et al., NeurIPS 2024), whose public
simulation code fixes the latent space (factor analysis), the per-pattern predictions, the
online rule ``pred <- pred - lr (pred - observed)`` and epsilon-greedy choice. No number of
the paper is quoted.

## Latent space (as in MiSO)

Counts $y \in \mathbb{N}^N$ of $N = 96$ channels; factor analysis fitted on no-stimulation
windows, $y = L z + \mu + e$, $z \sim N(0, I_q)$, $e \sim N(0, \Psi)$; the latent state of a
window is the posterior mean

$$E[z \mid y] = (I + L^\top \Psi^{-1} L)^{-1} L^\top \Psi^{-1} (y - \mu). \tag{1}$$

## State-dependent response model (reconstructed)

For each pattern $u$: $z_{\text{post}} = W_u \phi(z_{\text{pre}}) + \varepsilon$ with
$\phi(z) = [z; 1]$ (state-aware) or $\phi(z) = [1]$ (state-agnostic), ridge fit

$$W_u = Z_{\text{post},u}^\top \Phi_u (\Phi_u^\top \Phi_u + \lambda I)^{-1},
\qquad P_u = \sigma^2 (\Phi_u^\top \Phi_u + \lambda I)^{-1}. \tag{2}$$

Inverse (choice by enumeration over the pattern set $U$, target $z^*$ in the dimensions $K$):

$$u_t = \arg\min_{u \in U} \lVert (W_u \phi(z_{\text{pre},t}))_K - z^* \rVert^2. \tag{3}$$

Online update of the tried pattern only (Kalman filter on the parameters under a random walk):

$$P_u \leftarrow P_u + Q I\ \ \forall u,\quad
k = \frac{P_{u_t} x}{\sigma^2 + x^\top P_{u_t} x},\quad
W_{u_t} \leftarrow W_{u_t} + (z_{\text{post},t} - W_{u_t} x) k^\top,\quad
P_{u_t} \leftarrow P_{u_t} - k x^\top P_{u_t}. \tag{4}$$

MiSO (state-agnostic comparator): $\hat z_u \leftarrow \hat z_u - \eta(\hat z_u - z_{\text{post}})$
for the tried pattern, $\eta = 0.1$. (5)

## The simulator (a design for this book, not data)

96 electrodes on a 10x10 grid without corners; 12 candidate electrodes; patterns = their 66
pairs. Brain state $s_t = 0.98 s_{t-1} + 0.2 \xi_t$, $z_{\text{pre}} = s_t + 0.5 \nu_t$;
counts $y_i \sim \text{Poisson}(3\,\text{softplus}(L_i z + \mu_i))$; electrode effects
$\beta_e$ (smooth spatial fields per latent dimension) and state-dependence matrices
$\Gamma_e$; response to the pair $(a, b)$

$$z_{\text{post}} = a\, z_{\text{pre}} + g\,(\beta_a + \beta_b + \kappa (\Gamma_a + \Gamma_b)
z_{\text{pre}}) + o_t + 0.3\,\varepsilon_t, \tag{6}$$

with use-dependent adaptation $g$, a common-mode offset $o_t$ and a random-walk drift
$\beta_e \leftarrow \beta_e + \text{drift}\,N(0, I)$ per trial.

**Random streams.** All randomness of a session is drawn in numpy up front, in fixed chunks of
trials (:func:`trial_noise`, :func:`session_plan`); Poisson counts are made by the inverse CDF
of pre-drawn uniforms. The batched torch path (:mod:`lab.omiso.fast`) consumes the very same
arrays, so a numpy session and a torch session on the same seed agree to rounding.
Deviation (flagged): the Poisson rate is capped at 40 spikes per window and counts at 100
(never reached at the defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "UtahArraySim",
    "FAParams",
    "fit_fa",
    "fa_posterior_mean",
    "align_loadings",
    "StimResponseModel",
    "MiSOBaseline",
    "RandomChoice",
    "SessionLog",
    "run_session",
    "compare_methods",
    "make_method",
    "trial_noise",
    "session_plan",
    "poisson_icdf",
    "default_target",
    "METHODS",
    "array_positions",
]

METHODS = ("omiso", "static", "miso", "random")
RATE_MAX = 40.0  # deviation: Poisson rate cap (spikes per window)
COUNT_MAX = 100  # inverse-CDF search range 0..COUNT_MAX
CHUNK = 256  # trials per noise chunk
S_DECAY, S_DRIVE, Z_FAST, POST_NOISE = 0.98, 0.2, 0.5, 0.3


def array_positions(pitch_mm: float = 0.4) -> np.ndarray:
    """Positions (mm) of the 96 electrodes of a 10x10 Utah array without its corners.

    See: book/omiso/01-simulated-array.ipynb
    """
    pitch_mm = check_positive("pitch_mm", pitch_mm)
    ij = [(i, j) for i in range(10) for j in range(10) if (i, j) not in _CORNERS]
    return pitch_mm * np.array(ij, dtype=float)


_CORNERS = {(0, 0), (0, 9), (9, 0), (9, 9)}


def poisson_icdf(rate: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Poisson counts by the inverse CDF of uniforms ``u`` (same shape as ``rate``).

    ``count = #{k >= 0 : F(k; rate) < u}``, with ``F`` accumulated by the recurrence
    ``p_0 = exp(-r)``, ``p_k = p_{k-1} r / k`` (the torch path runs the same arithmetic); rates
    are capped at ``RATE_MAX`` and counts at ``COUNT_MAX``.

    See: book/omiso/01-simulated-array.ipynb
    """
    rate = np.minimum(np.asarray(rate, dtype=float), RATE_MAX)
    u = np.asarray(u, dtype=float)
    p = np.exp(-rate)  # P(X = 0)
    cdf = p.copy()
    count = np.zeros(rate.shape)
    for k in range(1, COUNT_MAX + 1):
        below = cdf < u
        if not below.any():
            break
        count += below
        p = p * rate / k  # P(X = k) = P(X = k - 1) r / k
        cdf = cdf + p
    return count


def trial_noise(
    seed: int, start: int, stop: int, q: int = 4, n_channels: int = 96, n_candidates: int = 12
) -> dict[str, np.ndarray]:
    """The simulator's per-trial noise for trials ``start..stop-1`` of session ``seed``.

    Chunk ``c`` (trials ``256 c .. 256 c + 255``) comes from ``default_rng([seed, 1, c])``, so
    any window of trials can be drawn independently (the torch path uses this).

    Returns a dict of arrays with leading axis ``stop - start``: ``xi``, ``nu`` (q),
    ``u_pre``, ``u_post`` (uniforms, n_channels), ``eps`` (q), ``dbeta`` (n_candidates, q).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    seed = check_int("seed", seed, 0, 2**32 - 1)
    start = check_int("start", start, 0)
    stop = check_int("stop", stop, start)
    q = check_int("q", q, 1, 64)
    n_channels = check_int("n_channels", n_channels, 2)
    n_candidates = check_int("n_candidates", n_candidates, 2)
    parts: dict[str, list] = {k: [] for k in ("xi", "nu", "u_pre", "eps", "u_post", "dbeta")}
    for c in range(start // CHUNK, (stop - 1) // CHUNK + 1 if stop > start else start // CHUNK):
        rng = np.random.default_rng([seed, 1, c])
        ch = {
            "xi": rng.standard_normal((CHUNK, q)),
            "nu": rng.standard_normal((CHUNK, q)),
            "u_pre": rng.random((CHUNK, n_channels)),
            "eps": rng.standard_normal((CHUNK, q)),
            "u_post": rng.random((CHUNK, n_channels)),
            "dbeta": rng.standard_normal((CHUNK, n_candidates, q)),
        }
        lo = max(start - c * CHUNK, 0)
        hi = min(stop - c * CHUNK, CHUNK)
        for k in parts:
            parts[k].append(ch[k][lo:hi])
    return {
        k: (
            np.concatenate(v)
            if v
            else np.zeros((0,) + {"dbeta": (n_candidates, q)}.get(k, (q,)), dtype=float)
        )
        for k, v in parts.items()
    }


def session_plan(seed: int, n_train: int, n_test: int, n_patterns: int) -> dict[str, np.ndarray]:
    """The controller's randomness of a session, drawn up front from ``default_rng([seed, 2])``.

    Returns ``train_u`` (random training patterns, ``n_train``), ``explore_draw`` (uniforms
    deciding epsilon-greedy exploration, ``n_test``) and ``explore_u`` (the pattern tried when
    exploring, also the random method's choice, ``n_test``).

    See: book/omiso/03-closing-the-loop.ipynb
    """
    seed = check_int("seed", seed, 0, 2**32 - 1)
    n_train = check_int("n_train", n_train, 0)
    n_test = check_int("n_test", n_test, 0)
    n_patterns = check_int("n_patterns", n_patterns, 1)
    rng = np.random.default_rng([seed, 2])
    return {
        "train_u": rng.integers(0, n_patterns, n_train),
        "explore_draw": rng.random(n_test),
        "explore_u": rng.integers(0, n_patterns, n_test),
    }


class UtahArraySim:
    """A simulated Utah-array population under paired-electrode microstimulation.

    Parameters
    ----------
    q : int
        Number of latent dimensions of the true population state.
    n_candidates : int
        Number of candidate electrodes; the patterns are all their pairs.
    kappa : float
        Strength of the state dependence of the response (``0``: none).
    a_auto : float
        Autonomous decay of the pre-stimulation state into the post-stimulation window.
    drift : float
        Per-trial random-walk standard deviation of the electrode effects ``beta``.
    adapt : float
        Use-dependent adaptation rate (gain ``exp(-adapt (n_a + n_b))``).
    ramp : float
        Common-mode offset added per trial (along a fixed unit vector).
    seed : int
        Seed of the generative parameters and of every trial's noise.
    n_channels : int
        Number of recorded channels (96 on the array; fewer uses the first ones).

    Attributes
    ----------
    positions : ndarray (96, 2)
        Electrode positions in mm. ``candidates`` indexes the stimulating electrodes,
        ``patterns`` is ``(n_patterns, 2)`` candidate indices, ``L``, ``mu`` the loadings and
        baselines, ``beta0``, ``gamma`` the effects of the candidate electrodes.

    See: book/omiso/01-simulated-array.ipynb
    """

    def __init__(
        self,
        q: int = 4,
        n_candidates: int = 12,
        kappa: float = 1.0,
        a_auto: float = 0.6,
        drift: float = 0.002,
        adapt: float = 0.0,
        ramp: float = 0.0,
        seed: int = 0,
        n_channels: int = 96,
    ):
        self.q = check_int("q", q, 1, 16)
        self.n_candidates = check_int("n_candidates", n_candidates, 2, 96)
        self.kappa = check_positive("kappa", kappa, allow_zero=True)
        self.a_auto = check_range("a_auto", a_auto, -1.0, 1.0)
        self.drift = check_positive("drift", drift, allow_zero=True)
        self.adapt = check_positive("adapt", adapt, allow_zero=True)
        self.ramp = check_real("ramp", ramp)
        self.seed = check_int("seed", seed, 0, 2**32 - 1)
        self.n_channels = check_int("n_channels", n_channels, self.q + 1, 96)
        rng = np.random.default_rng([self.seed, 0])
        self.positions = array_positions()
        grid = self.positions / 0.4  # electrode units
        # observation model: y_i ~ Poisson(3 softplus(L_i z + mu_i))
        self.L = 0.35 * rng.standard_normal((96, self.q))[: self.n_channels]
        self.mu = (1.5 + 0.4 * rng.standard_normal(96))[: self.n_channels]
        # smooth effect fields: beta_e[k] = 1.2 sign_k exp(-|pos_e - c_k|^2 / (2 w_k^2)) + noise
        self.centres = rng.uniform(0, 9, (self.q, 2))
        self.widths = rng.uniform(2, 4, self.q)
        self.signs = rng.choice([-1.0, 1.0], self.q)
        d2 = ((grid[:, None, :] - self.centres[None]) ** 2).sum(-1)  # (96, q)
        self.beta_field = 1.2 * self.signs * np.exp(-d2 / (2 * self.widths**2))
        self.beta_field = self.beta_field + 0.15 * rng.standard_normal((96, self.q))
        self.gamma_all = 0.35 * rng.standard_normal((96, self.q, self.q))
        self.candidates = np.sort(rng.choice(96, self.n_candidates, replace=False))
        a, b = np.triu_indices(self.n_candidates, 1)
        self.patterns = np.stack([a, b], 1)
        self.offset_dir = rng.standard_normal(self.q)
        self.offset_dir /= np.linalg.norm(self.offset_dir)
        self.beta0 = self.beta_field[self.candidates].copy()
        self.gamma = self.gamma_all[self.candidates]
        self.reset()

    @property
    def n_patterns(self) -> int:
        return len(self.patterns)

    def reset(self) -> UtahArraySim:
        """Back to trial 0 (same seed: the same session again)."""
        self.t = -1
        self.beta = self.beta0.copy()
        self.uses = np.zeros(self.n_candidates)
        # stationary start of the slow state: var = 0.2^2 / (1 - 0.98^2)
        r0 = np.random.default_rng([self.seed, 3])
        self.s = r0.standard_normal(self.q) * S_DRIVE / np.sqrt(1 - S_DECAY**2)
        self.z_pre = None
        self._noise: dict[str, np.ndarray] = {}
        self._chunk = -1
        return self

    def _trial_noise(self, t: int) -> dict[str, np.ndarray]:
        c = t // CHUNK
        if c != self._chunk:
            self._noise = trial_noise(
                self.seed, c * CHUNK, (c + 1) * CHUNK, self.q, self.n_channels, self.n_candidates
            )
            self._chunk = c
        return {k: v[t - c * CHUNK] for k, v in self._noise.items()}

    def rates(self, z: np.ndarray) -> np.ndarray:
        """Expected counts ``3 softplus(L z + mu)`` for latent states ``z`` (..., q)."""
        return 3.0 * np.logaddexp(0.0, np.asarray(z) @ self.L.T + self.mu)

    def pre(self, record: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Start a trial: advance the brain state and record the pre-stimulation window.

        With ``record=False`` no counts are drawn (``y`` is ``None``): the latent states and
        the random stream stay the same.

        Returns
        -------
        z : ndarray (q,)
            The true latent state (hidden from a controller).
        y : ndarray (n_channels,)
            Spike counts.

        See: book/omiso/01-simulated-array.ipynb
        """
        self.t += 1
        nz = self._trial_noise(self.t)
        if self.t > 0:
            # per-trial random-walk drift of the electrode effects
            self.beta = self.beta + self.drift * nz["dbeta"]
            self.uses = 0.99 * self.uses
        self.s = S_DECAY * self.s + S_DRIVE * nz["xi"]  # s_t = 0.98 s_{t-1} + 0.2 xi_t
        self.z_pre = self.s + Z_FAST * nz["nu"]  # z_pre = s_t + 0.5 nu_t
        y = poisson_icdf(self.rates(self.z_pre), nz["u_pre"]) if record else None
        self._nz = nz
        return self.z_pre.copy(), y

    def response_mean(self, z_pre: np.ndarray, u: int) -> np.ndarray:
        """Noise-free post-stimulation state of pattern ``u`` from ``z_pre`` (eq. 6)."""
        a, b = self.patterns[u]
        g = np.exp(-self.adapt * (self.uses[a] + self.uses[b]))
        effect = self.beta[a] + self.beta[b] + self.kappa * (self.gamma[a] + self.gamma[b]) @ z_pre
        return self.a_auto * z_pre + g * effect + self.ramp * max(self.t, 0) * self.offset_dir

    def stim(self, u: int, record: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Stimulate pattern ``u`` on the current trial and record the post window.

        Returns ``(z_post, y_post)``: the true latent state and the counts (``None`` with
        ``record=False``).

        See: book/omiso/01-simulated-array.ipynb
        """
        u = check_int("u", u, 0, self.n_patterns - 1)
        if self.z_pre is None:
            raise RuntimeError("call pre() before stim(u): every trial starts with pre()")
        # eq. (6): z_post = a z_pre + g (beta_a + beta_b + kappa (G_a + G_b) z_pre) + o_t + eps
        z_post = self.response_mean(self.z_pre, u) + POST_NOISE * self._nz["eps"]
        a, b = self.patterns[u]
        self.uses[a] += 1.0
        self.uses[b] += 1.0
        self.z_pre = None
        y = poisson_icdf(self.rates(z_post), self._nz["u_post"]) if record else None
        return z_post, y


# ------------------------------------------------------------------------------------------
# Factor analysis
# ------------------------------------------------------------------------------------------
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
# Response models
# ------------------------------------------------------------------------------------------
def _check_dims(dims: Any, q: int) -> np.ndarray:
    dims = np.atleast_1d(np.asarray(dims))
    if dims.ndim != 1 or len(dims) == 0 or not np.issubdtype(dims.dtype, np.integer):
        raise TypeError(f"dims must be a non-empty sequence of integers (got {dims!r})")
    if dims.min() < 0 or dims.max() >= q:
        raise ValueError(f"dims must lie in 0..{q - 1} (got {dims.tolist()})")
    return dims


class StimResponseModel:
    """Per-pattern linear-Gaussian response model, inverted by search, updated online (OMiSO).

    ``z_post = W_u phi(z_pre) + eps`` with ``phi(z) = [z; 1]`` (``state_aware=True``) or
    ``[1]``; ridge fit (eq. 2), choice by enumeration (eq. 3), Kalman/RLS update (eq. 4).

    Parameters
    ----------
    n_patterns : int
        Number of stimulation patterns.
    q : int
        Latent dimensions of the (estimated) state.
    state_aware : bool
        Use the pre-stimulation state as an input.
    lam : float
        Ridge prior precision (``>= 0``; ``0`` needs enough trials per pattern).
    q_proc : float
        Process noise of the random-walk parameter model (``0``: recursive least squares).
    sigma2 : float
        Observation noise variance.
    online : bool
        Update after each trial (``False``: the static state-aware comparator).

    See: book/omiso/02-inverting-the-model.ipynb
    """

    def __init__(
        self,
        n_patterns: int,
        q: int,
        state_aware: bool = True,
        lam: float = 1.0,
        q_proc: float = 0.002,
        sigma2: float = 1.0,
        online: bool = True,
    ):
        self.n_patterns = check_int("n_patterns", n_patterns, 1)
        self.q = check_int("q", q, 1)
        self.state_aware = check_bool("state_aware", state_aware)
        self.lam = check_positive("lam", lam, allow_zero=True)
        self.q_proc = check_positive("q_proc", q_proc, allow_zero=True)
        self.sigma2 = check_positive("sigma2", sigma2)
        self.online = check_bool("online", online)
        self.d = self.q + 1 if self.state_aware else 1
        self.reset()

    def reset(self) -> StimResponseModel:
        """Back to the prior: ``W = 0``, ``P = sigma2 / lam I``.

        See: book/omiso/02-inverting-the-model.ipynb
        """
        self.W = np.zeros((self.n_patterns, self.q, self.d))
        p0 = self.sigma2 / self.lam if self.lam > 0 else 1e12
        self.P = np.broadcast_to(p0 * np.eye(self.d), (self.n_patterns, self.d, self.d)).copy()
        return self

    def phi(self, z_pre: np.ndarray) -> np.ndarray:
        """Features ``[z; 1]`` or ``[1]`` (last axis).

        See: book/omiso/02-inverting-the-model.ipynb
        """
        z_pre = np.asarray(z_pre, dtype=float)
        one = np.ones(z_pre.shape[:-1] + (1,))
        return np.concatenate([z_pre, one], -1) if self.state_aware else one

    def fit(self, Z_pre: np.ndarray, U: np.ndarray, Z_post: np.ndarray) -> StimResponseModel:
        """Ridge fit of every ``W_u`` on training triples ``(z_pre, u, z_post)`` (eq. 2).

        See: book/omiso/02-inverting-the-model.ipynb
        """
        Z_pre = check_array("Z_pre", Z_pre, shape=(None, self.q))
        Z_post = check_array("Z_post", Z_post, shape=(len(Z_pre), self.q))
        U = _check_patterns("U", U, self.n_patterns, len(Z_pre))
        Phi = self.phi(Z_pre)
        eye = np.eye(self.d)
        for u in range(self.n_patterns):
            m = U == u
            A = Phi[m].T @ Phi[m] + self.lam * eye  # Phi_u^T Phi_u + lam I
            if self.lam == 0 and np.linalg.matrix_rank(A) < self.d:
                raise ValueError(f"pattern {u} has too few trials for lam = 0; use lam > 0")
            self.W[u] = np.linalg.solve(A, Phi[m].T @ Z_post[m]).T  # eq. (2)
            self.P[u] = self.sigma2 * np.linalg.inv(A)
        return self

    def predict(self, z_pre: np.ndarray) -> np.ndarray:
        """Predicted post-stimulation states of every pattern, ``(n_patterns, q)``.

        See: book/omiso/02-inverting-the-model.ipynb
        """
        z_pre = check_array("z_pre", z_pre, shape=(self.q,))
        return self.W @ self.phi(z_pre)

    def choose(
        self,
        z_pre: np.ndarray,
        target: np.ndarray,
        dims: Any = (0, 1),
        epsilon: float = 0.0,
        rng: np.random.Generator | None = None,
    ) -> int:
        """The pattern whose predicted outcome is nearest the target in ``dims`` (eq. 3).

        With probability ``epsilon`` a uniformly random pattern instead (needs ``rng``).

        See: book/omiso/02-inverting-the-model.ipynb
        """
        return _choose(self.predict(z_pre), target, dims, self.q, epsilon, rng, self.n_patterns)

    def update(self, u: int, z_pre: np.ndarray, z_post: np.ndarray) -> StimResponseModel:
        """Kalman/RLS update of ``W_u`` after observing ``z_post`` (eq. 4); no-op if static.

        See: book/omiso/02-inverting-the-model.ipynb
        """
        u = check_int("u", u, 0, self.n_patterns - 1)
        z_pre = check_array("z_pre", z_pre, shape=(self.q,))
        z_post = check_array("z_post", z_post, shape=(self.q,))
        if not self.online:
            return self
        if self.q_proc > 0:
            self.P += self.q_proc * np.eye(self.d)  # P_u <- P_u + Q I for all u
        x = self.phi(z_pre)
        P = self.P[u]
        Px = P @ x
        k = Px / (self.sigma2 + x @ Px)  # gain
        self.W[u] += np.outer(z_post - self.W[u] @ x, k)  # W <- W + (z_post - W x) k^T
        P = P - np.outer(k, Px)  # P <- P - k x^T P
        self.P[u] = 0.5 * (P + P.T)
        return self


class MiSOBaseline:
    """State-agnostic comparator in the style of MiSO: one predicted outcome per pattern,
    moved toward each observed outcome, ``pred_u <- pred_u - lr (pred_u - z_post)`` (eq. 5).

    Parameters
    ----------
    n_patterns, q : int
        Pattern count and latent dimensions.
    lr : float
        Online learning rate in ``[0, 1]``.
    epsilon : float
        Exploration probability used by :func:`run_session` when it is given this object.

    See: book/omiso/03-closing-the-loop.ipynb
    """

    def __init__(self, n_patterns: int, q: int, lr: float = 0.1, epsilon: float = 0.05):
        self.n_patterns = check_int("n_patterns", n_patterns, 1)
        self.q = check_int("q", q, 1)
        self.lr = check_range("lr", lr, 0.0, 1.0)
        self.epsilon = check_range("epsilon", epsilon, 0.0, 1.0)
        self.pred = np.zeros((self.n_patterns, self.q))

    def fit(self, Z_pre: np.ndarray, U: np.ndarray, Z_post: np.ndarray) -> MiSOBaseline:
        """Per-pattern mean of the training outcomes (0 for untried patterns).

        See: book/omiso/03-closing-the-loop.ipynb
        """
        Z_post = check_array("Z_post", Z_post, shape=(None, self.q))
        U = _check_patterns("U", U, self.n_patterns, len(Z_post))
        counts = np.bincount(U, minlength=self.n_patterns)
        sums = np.zeros((self.n_patterns, self.q))
        np.add.at(sums, U, Z_post)
        self.pred = sums / np.maximum(counts, 1)[:, None]
        return self

    def predict(self, z_pre: np.ndarray | None = None) -> np.ndarray:
        """The per-pattern predictions (the state is ignored), ``(n_patterns, q)``.

        See: book/omiso/02-inverting-the-model.ipynb
        """
        return self.pred.copy()

    def choose(self, z_pre, target, dims=(0, 1), epsilon: float = 0.0, rng=None) -> int:
        """Pattern with the predicted outcome nearest the target (eq. 3 without the state).

        See: book/omiso/02-inverting-the-model.ipynb
        """
        return _choose(self.pred, target, dims, self.q, epsilon, rng, self.n_patterns)

    def update(self, u: int, z_pre, z_post: np.ndarray) -> MiSOBaseline:
        """``pred_u <- pred_u - lr (pred_u - z_post)`` (eq. 5).

        See: book/omiso/03-closing-the-loop.ipynb
        """
        u = check_int("u", u, 0, self.n_patterns - 1)
        z_post = check_array("z_post", z_post, shape=(self.q,))
        self.pred[u] -= self.lr * (self.pred[u] - z_post)
        return self


class RandomChoice:
    """Random stimulation (the upper-bound comparator): ``choose`` is never consulted;
    :func:`run_session` uses the session's pre-drawn random patterns.

    See: book/omiso/03-closing-the-loop.ipynb
    """

    def __init__(self, n_patterns: int, q: int):
        self.n_patterns = check_int("n_patterns", n_patterns, 1)
        self.q = check_int("q", q, 1)

    def fit(self, Z_pre, U, Z_post) -> RandomChoice:
        return self

    def choose(self, z_pre, target, dims=(0, 1), epsilon: float = 1.0, rng=None) -> int:
        rng = rng if rng is not None else np.random.default_rng()
        return int(rng.integers(self.n_patterns))

    def update(self, u, z_pre, z_post) -> RandomChoice:
        return self


def _check_patterns(name: str, U: Any, n_patterns: int, n: int) -> np.ndarray:
    U = np.asarray(U)
    if U.shape != (n,) or not np.issubdtype(U.dtype, np.integer):
        raise ValueError(f"{name} must be {n} integer pattern indices (got shape {U.shape})")
    if n and (U.min() < 0 or U.max() >= n_patterns):
        raise ValueError(f"{name} must lie in 0..{n_patterns - 1} (got {U.min()}..{U.max()})")
    return U


def _choose(pred, target, dims, q, epsilon, rng, n_patterns) -> int:
    dims = _check_dims(dims, q)
    target = check_array("target", target, shape=(len(dims),))
    epsilon = check_range("epsilon", epsilon, 0.0, 1.0)
    if epsilon > 0:
        if rng is None:
            raise ValueError("epsilon > 0 needs rng (a numpy Generator)")
        if rng.random() < epsilon:
            return int(rng.integers(n_patterns))
    err = ((pred[:, dims] - target) ** 2).sum(1)  # eq. (3)
    return int(np.argmin(err))


def make_method(name: str, n_patterns: int, q: int, **kw: Any):
    """Build a comparator by name: ``omiso`` (state-aware, online), ``static`` (state-aware,
    no update), ``miso`` (state-agnostic, online, MiSO rule), ``random``.

    Keyword arguments ``lam``, ``q_proc``, ``lr`` are passed where they apply.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    name = check_choice("method", name, METHODS)
    if name == "omiso":
        return StimResponseModel(
            n_patterns, q, True, lam=kw.get("lam", 1.0), q_proc=kw.get("q_proc", 0.002)
        )
    if name == "static":
        return StimResponseModel(n_patterns, q, True, lam=kw.get("lam", 1.0), online=False)
    if name == "miso":
        return MiSOBaseline(n_patterns, q, lr=kw.get("lr", 0.1))
    return RandomChoice(n_patterns, q)


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
    n_cal: int = 600,
    n_train: int = 1500,
    n_test: int = 400,
    target: Any = None,
    dims: Any = (0, 1),
    epsilon: float = 0.05,
    q_fa: int | None = None,
    **method_kw: Any,
) -> SessionLog:
    """One closed-loop session (reference, numpy): calibrate FA on no-stimulation windows,
    train on random patterns, then choose a pattern on each of ``n_test`` trials.

    Parameters
    ----------
    sim : UtahArraySim
        The simulated array (reset to trial 0 first).
    method : str or model
        ``"omiso"``, ``"static"``, ``"miso"``, ``"random"`` (see :func:`make_method`), or an
        object with ``fit``, ``choose`` and ``update``.
    n_cal, n_train, n_test : int
        Calibration (no stimulation), training (random patterns) and closed-loop trials.
    target : array (len(dims),), optional
        Target in the *estimated* latent space (default :func:`default_target`).
    dims : sequence of int
        Latent dimensions ``K`` the target constrains.
    epsilon : float
        Epsilon-greedy exploration probability (ignored by ``"random"``).
    q_fa : int, optional
        FA dimensions (default ``sim.q``).

    Returns
    -------
    SessionLog

    See: book/omiso/03-closing-the-loop.ipynb
    """
    if not isinstance(sim, UtahArraySim):
        raise TypeError(f"sim must be a UtahArraySim (got {type(sim).__name__})")
    n_cal = check_int("n_cal", n_cal, 10)
    n_train = check_int("n_train", n_train, 1)
    n_test = check_int("n_test", n_test, 1)
    epsilon = check_range("epsilon", epsilon, 0.0, 1.0)
    q = sim.q if q_fa is None else check_int("q_fa", q_fa, 1, sim.n_channels - 1)
    dims = _check_dims(dims, q)
    target = default_target(dims) if target is None else target
    target = check_array("target", target, shape=(len(dims),))
    is_random = False
    if isinstance(method, str):
        is_random = method == "random"
        model = make_method(method, sim.n_patterns, q, **method_kw)
    else:
        model = method
        is_random = isinstance(model, RandomChoice)
        for attr in ("fit", "choose", "update"):
            if not callable(getattr(model, attr, None)):
                raise TypeError(f"method must have a callable .{attr} (got {type(model).__name__})")
    plan = session_plan(sim.seed, n_train, n_test, sim.n_patterns)
    sim.reset()
    # calibration: no-stimulation windows only -> FA
    Ycal = np.stack([sim.pre()[1] for _ in range(n_cal)])
    fa = fit_fa(Ycal, q)
    M = fa.posterior_matrix
    # training block: random patterns, store (z_pre, u, z_post) triples
    Zpre = np.empty((n_train, q))
    Zpost = np.empty((n_train, q))
    for t in range(n_train):
        Zpre[t] = M @ (sim.pre()[1] - fa.mu)  # eq. (1)
        Zpost[t] = M @ (sim.stim(int(plan["train_u"][t]))[1] - fa.mu)
    model.fit(Zpre, plan["train_u"], Zpost)
    # closed loop
    errors = np.empty(n_test)
    choices = np.empty(n_test, dtype=int)
    zp = np.empty((n_test, q))
    zq = np.empty((n_test, q))
    for t in range(n_test):
        z_pre = M @ (sim.pre()[1] - fa.mu)
        if is_random or plan["explore_draw"][t] < epsilon:
            u = int(plan["explore_u"][t])
        else:
            u = int(model.choose(z_pre, target, dims))  # eq. (3)
        z_post = M @ (sim.stim(u)[1] - fa.mu)
        errors[t] = np.linalg.norm(z_post[dims] - target)
        model.update(u, z_pre, z_post)  # eq. (4) / (5), the tried pattern only
        choices[t], zp[t], zq[t] = u, z_pre, z_post
    return SessionLog(
        errors,
        choices,
        zp,
        zq,
        target,
        fa,
        {"z_pre": Zpre, "u": plan["train_u"], "z_post": Zpost, "Y_cal": Ycal},
    )


def compare_methods(
    seeds: Any,
    methods: Any = METHODS,
    n_cal: int = 600,
    n_train: int = 1500,
    n_test: int = 400,
    target: Any = None,
    epsilon: float = 0.05,
    backend: str = "torch",
    device: Any = None,
    **sim_kwargs: Any,
):
    """Mean closed-loop error of each method on identical simulated sessions.

    Parameters
    ----------
    seeds : sequence of int
        One simulated session per seed; every method sees the same sessions.
    methods : sequence of str
        Names from ``METHODS``.
    backend : str
        ``"torch"`` (all sessions batched, :func:`lab.omiso.fast.simulate_batch`) or
        ``"numpy"`` (the reference :func:`run_session`, one at a time).
    device : torch device, optional
        For the torch backend (default :func:`lab.device`).
    **sim_kwargs
        Passed to :class:`UtahArraySim` (``kappa``, ``drift``, ``ramp``...).

    Returns
    -------
    pandas.DataFrame
        Columns ``seed``, ``method``, ``mean_error`` plus the simulator settings.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import pandas as pd

    seeds = [check_int("seeds[i]", s, 0, 2**32 - 1) for s in np.atleast_1d(seeds).tolist()]
    methods = [check_choice("methods[i]", m, METHODS) for m in methods]
    backend = check_choice("backend", backend, ("torch", "numpy"))
    rows = []
    if backend == "numpy":
        for s in seeds:
            for m in methods:
                log = run_session(
                    UtahArraySim(seed=s, **sim_kwargs),
                    m,
                    n_cal,
                    n_train,
                    n_test,
                    target,
                    epsilon=epsilon,
                )
                rows.append({"seed": s, "method": m, "mean_error": log.mean_error})
    else:
        from .fast import simulate_batch

        S = [s for s in seeds for _ in methods]
        Ms = [m for _ in seeds for m in methods]
        out = simulate_batch(
            S,
            Ms,
            n_cal=n_cal,
            n_train=n_train,
            n_test=n_test,
            target=target,
            epsilon=epsilon,
            device=device,
            **sim_kwargs,
        )
        err = out["errors"].mean(1)
        rows = [
            {"seed": s, "method": m, "mean_error": float(e)}
            for s, m, e in zip(S, Ms, err, strict=True)
        ]
    df = pd.DataFrame(rows)
    for k, v in sim_kwargs.items():
        df[k] = v
    return df
