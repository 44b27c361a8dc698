"""The simulated Utah array (a design for this book, not data): geometry, pre-drawn random
streams, the brain state, Poisson counts and the state-dependent response of eq. (6).

See: book/omiso/01-simulated-array.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "UtahArraySim",
    "array_positions",
    "trial_noise",
    "session_plan",
    "poisson_icdf",
]

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

    Raises ``ValueError`` for a negative or non-finite rate, a ``u`` outside ``[0, 1]`` or of
    another shape, and ``TypeError`` for what is not an array of numbers.

    See: book/omiso/01-simulated-array.ipynb
    """
    rate = check_array("rate", rate)  # None and NaN become NaN and are refused here
    u = check_array("u", u, shape=rate.shape)
    if rate.size and rate.min() < 0:
        raise ValueError(f"rate must be >= 0 (a Poisson mean), got minimum {rate.min():g}")
    if u.size and (u.min() < 0 or u.max() > 1):
        raise ValueError(f"u must lie in [0, 1] (uniforms), got [{u.min():g}, {u.max():g}]")
    return _poisson_icdf(rate, u)


def _poisson_icdf(rate: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`poisson_icdf` without the argument checks (the simulator's own calls)."""
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
        y = _poisson_icdf(self.rates(self.z_pre), nz["u_pre"]) if record else None
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
        y = _poisson_icdf(self.rates(z_post), self._nz["u_post"]) if record else None
        return z_post, y
