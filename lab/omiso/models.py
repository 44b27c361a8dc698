"""The response models and comparators: OMiSO's state-aware per-pattern model (eqs. 2-4), its
static variant, the MiSO-like state-agnostic model (eq. 5) and random choice.

See: book/omiso/02-inverting-the-model.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.omiso.settings import METHODS, check_dims

__all__ = [
    "StimResponseModel",
    "MiSOBaseline",
    "RandomChoice",
    "make_method",
]


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
        if self.online:
            self._kalman_update(u, self.phi(z_pre), z_post)
        return self

    def _kalman_update(self, u: int, x: np.ndarray, z_post: np.ndarray) -> None:
        """Eq. (4) on checked arguments: the Kalman step of pattern ``u`` with features ``x``."""
        if self.q_proc > 0:
            self.P += self.q_proc * np.eye(self.d)  # eq. (4): P_v <- P_v + Q I for all v
        P = self.P[u]
        Px = P @ x
        k = Px / (self.sigma2 + x @ Px)  # eq. (4): the gain k
        self.W[u] += np.outer(z_post - self.W[u] @ x, k)  # eq. (4): W_u <- W_u + (z - W_u x) k^T
        P = P - np.outer(k, Px)  # eq. (4): P_u <- P_u - k x^T P_u
        self.P[u] = 0.5 * (P + P.T)  # kept symmetric against rounding


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
    dims = check_dims(dims, q)
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
