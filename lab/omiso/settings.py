"""The settings of the chapter's closed-loop sessions: frozen dataclasses, validated once.

* :class:`SessionSettings`: the protocol every session of a run shares (how many calibration,
  training and closed-loop trials, the target dimensions, exploration, the ridge prior, MiSO's
  learning rate, the factor-analysis iteration);
* :class:`SessionBatch`: which sessions to run: one seed and one method per session, and the
  simulated brain and the process noise of each (a scalar for all sessions or one per session).

A notebook builds them and passes them whole to :func:`lab.omiso.fast.run_sessions` or
:func:`lab.omiso.reference.run_session`; the kernels trust them.

See: book/omiso/03-closing-the-loop.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range, set_field

__all__ = [
    "METHODS",
    "DRIFTS",
    "DRIFT_Q",
    "DRIFT_SEEDS",
    "Q_VALUES",
    "TARGET_ANGLES",
    "SessionBatch",
    "SessionSettings",
]

#: the four controllers (OMiSO, its static variant, the MiSO-like method, random)
METHODS = ("omiso", "static", "miso", "random")
#: the drift levels of notebook 3 (per-trial random-walk s.d. of the electrode effects)
DRIFTS = (0.0, 0.01, 0.02, 0.03)
#: the process noise of notebook 3's drift sessions (the drift widget's default)
DRIFT_Q = 0.002
#: the drift sessions' seeds (notebook 3's default ``SEEDS``), before the registered seed shift
DRIFT_SEEDS = tuple(range(8))
#: the process noises the drift widget offers (a ``Dropdown``: all precomputed)
Q_VALUES = (1e-5, 1e-4, 1e-3, DRIFT_Q, 0.01, 0.1)
#: the target angles (degrees) of notebook 2's target sweep and widget
TARGET_ANGLES = tuple(range(0, 360, 30))


def check_dims(dims: Any, q: int) -> np.ndarray:
    """Target dimensions ``K``: a non-empty sequence of integers in ``0..q-1``."""
    dims = np.atleast_1d(np.asarray(dims))
    if dims.ndim != 1 or len(dims) == 0 or not np.issubdtype(dims.dtype, np.integer):
        raise TypeError(f"dims must be a non-empty sequence of integers (got {dims!r})")
    if dims.min() < 0 or dims.max() >= q:
        raise ValueError(f"dims must lie in 0..{q - 1} (got {dims.tolist()})")
    return dims


#: the most latent dimensions a simulated brain may have (``UtahArraySim``'s ``q``)
Q_MAX = 16


@dataclass(frozen=True)
class SessionSettings:
    """The protocol of a closed-loop session (shared by every session of a batch).

    Parameters
    ----------
    n_cal : int
        No-stimulation calibration windows for factor analysis (``>= 10``).
    n_train : int
        Random-pattern training trials (``>= 1``).
    n_test : int
        Closed-loop trials (``>= 1``).
    dims : tuple of int
        Target dimensions ``K`` of the estimated latent space.
    epsilon : float
        Epsilon-greedy exploration probability, in ``[0, 1]``.
    lam : float
        Ridge prior precision ``lambda`` of eq. (2) (``> 0``).
    lr : float
        MiSO's learning rate ``eta`` of eq. (5), in ``[0, 1]``.
    fa_iter : int
        Factor-analysis iteration limit (``>= 1``).
    fa_tol : float
        Factor-analysis tolerance on the log-likelihood gain (``>= 0``).

    See: book/omiso/03-closing-the-loop.ipynb
    """

    n_cal: int = 600
    n_train: int = 1500
    n_test: int = 400
    dims: tuple[int, ...] = (0, 1)
    epsilon: float = 0.05
    lam: float = 1.0
    lr: float = 0.1
    fa_iter: int = 1000
    fa_tol: float = 1e-10

    def __post_init__(self) -> None:
        set_field(self, "n_cal", check_int("n_cal", self.n_cal, 10))
        set_field(self, "n_train", check_int("n_train", self.n_train, 1))
        set_field(self, "n_test", check_int("n_test", self.n_test, 1))
        set_field(self, "dims", tuple(int(d) for d in check_dims(self.dims, Q_MAX)))
        set_field(self, "epsilon", check_range("epsilon", self.epsilon, 0.0, 1.0))
        set_field(self, "lam", check_positive("lam", self.lam))
        set_field(self, "lr", check_range("lr", self.lr, 0.0, 1.0))
        set_field(self, "fa_iter", check_int("fa_iter", self.fa_iter, 1))
        set_field(self, "fa_tol", check_positive("fa_tol", self.fa_tol, allow_zero=True))


def _per_session(name: str, value: Any, B: int, low: float | None = None) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or one number per session (got {value!r})")
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=float), (B,))
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a number or {B} numbers (one per session), got {value!r}"
        ) from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (got {value!r})")
    if low is not None and np.any(arr < low):
        raise ValueError(f"{name} must be >= {low:g} (got min {arr.min():g})")
    return tuple(float(v) for v in arr)


@dataclass(frozen=True)
class SessionBatch:
    """Which sessions to run: ``B = len(seeds)`` sessions, each its own simulated array.

    Parameters
    ----------
    seeds : sequence of int
        One simulated session per entry (repeat a seed to run several methods on it).
    methods : str or sequence of str
        Per-session method from ``METHODS`` (``omiso``, ``static``, ``miso``, ``random``).
    target : array (K,) or (B, K), optional
        Targets in the estimated latent space (default :func:`lab.omiso.default_target`);
        ``K`` must match the settings' ``dims``.
    kappa, drift, a_auto, adapt, ramp : float or sequence
        The simulator's settings (:class:`lab.omiso.UtahArraySim`), scalar or one per session.
    q_proc : float or sequence
        Process noise ``Q`` of OMiSO's Kalman update (``>= 0``), scalar or one per session.
    q : int
        Latent dimensions of the simulated brain (and of the FA fit), ``1..16``.
    n_candidates : int
        Candidate electrodes (the patterns are their pairs), ``2..96``.

    See: book/omiso/03-closing-the-loop.ipynb
    """

    seeds: Any
    methods: Any = "omiso"
    target: Any = None
    kappa: Any = 1.0
    drift: Any = 0.002
    a_auto: Any = 0.6
    adapt: Any = 0.0
    ramp: Any = 0.0
    q_proc: Any = 0.002
    q: int = 4
    n_candidates: int = 12

    def __post_init__(self) -> None:
        if isinstance(self.seeds, (str, bytes)):
            raise TypeError(f"seeds must be a sequence of integers (got {self.seeds!r})")
        seeds = tuple(
            check_int("seeds[i]", s, 0, 2**32 - 1) for s in np.atleast_1d(self.seeds).tolist()
        )
        B = len(seeds)
        if B == 0:
            raise ValueError("seeds must hold at least one seed")
        methods = self.methods
        methods = (methods,) * B if isinstance(methods, str) else tuple(np.atleast_1d(methods))
        methods = tuple(str(check_choice("methods[i]", m, METHODS)) for m in methods)
        if len(methods) != B:
            raise ValueError(f"methods must have {B} entries (got {len(methods)})")
        set_field(self, "seeds", seeds)
        set_field(self, "methods", methods)
        set_field(self, "target", self._target(B))
        for name in ("kappa", "drift", "adapt", "q_proc"):
            set_field(self, name, _per_session(name, getattr(self, name), B, 0.0))
        set_field(self, "a_auto", _per_session("a_auto", self.a_auto, B, -1.0))
        if max(self.a_auto) > 1.0:
            raise ValueError(f"a_auto must lie in [-1, 1] (got max {max(self.a_auto):g})")
        set_field(self, "ramp", _per_session("ramp", self.ramp, B))
        set_field(self, "q", check_int("q", self.q, 1, Q_MAX))
        set_field(self, "n_candidates", check_int("n_candidates", self.n_candidates, 2, 96))

    def _target(self, B: int) -> tuple[tuple[float, ...], ...] | None:
        if self.target is None:
            return None
        try:
            t = np.asarray(self.target, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"target must be an array of numbers (got {self.target!r})") from None
        if t.ndim not in (1, 2) or (t.ndim == 2 and len(t) != B) or not np.all(np.isfinite(t)):
            raise ValueError(f"target must be finite, of shape (K,) or ({B}, K) (got {t.shape})")
        return tuple(tuple(float(v) for v in row) for row in np.broadcast_to(t, (B, t.shape[-1])))

    def __len__(self) -> int:
        return len(self.seeds)

    def world(self, i: int) -> dict[str, float]:
        """The simulator settings of session ``i`` (keyword arguments of ``UtahArraySim``)."""
        keys = ("kappa", "drift", "a_auto", "adapt", "ramp")
        return {k: getattr(self, k)[i] for k in keys}
