"""Reference kernels (numpy, float64): one step of each sampler, eqs. (2), (4)-(6), the runs,
and the SGD-flow SDE, eq. (3), with its noise written out.

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.wflows.distances import kl_gaussian, particle_moments, w2_gaussian
from lab.wflows.targets import FiniteSumQuadratic, check_particles, check_potential

__all__ = [
    "METHODS",
    "SamplerDraws",
    "SamplerHistory",
    "draw_noise",
    "ula_step",
    "sgld_step",
    "svrg_direction",
    "svrg_step",
    "step_schedule",
    "run_sampler",
    "sgd_flow_sde",
    "grad_evals_per_step",
]

METHODS = ("langevin", "sgld", "svrg")


# ---------------------------------------------------------------------------------------------
# One step of each sampler (reference kernels)
# ---------------------------------------------------------------------------------------------


def _check_step(potential, X, h, xi, **extra):
    """Validate the arguments of one sampler step; returns (potential, X, h, xi, *extra)."""
    potential = check_potential(potential)
    X = check_particles(X, potential.d, "X")
    h = check_positive("h", h)
    xi = check_array("xi", xi, shape=X.shape)
    out = [potential, X, h, xi]
    for name, value in extra.items():
        if name == "idx":
            idx = np.asarray(value)
            if idx.ndim != 2 or idx.shape[0] != X.shape[0] or idx.dtype.kind not in "iu":
                raise ValueError(
                    f"idx must be an integer array of shape ({X.shape[0]}, b) (got "
                    f"{getattr(value, 'shape', type(value).__name__)})"
                )
            if idx.size and (idx.min() < 0 or idx.max() >= potential.N):
                raise ValueError(f"idx must lie in [0, {potential.N}) (the component indices)")
            out.append(idx)
        else:  # snapshots Xs, Gs: same shape as X
            out.append(check_array(name, value, shape=X.shape))
    return out


def ula_step(X: np.ndarray, potential: FiniteSumQuadratic, h: float, xi: np.ndarray) -> np.ndarray:
    r"""One ULA step, eq. (2): $X - h\nabla V(X) + \sqrt{2h}\,\xi$ (``xi`` standard normal).

    See: book/wflows/01-three-samplers.ipynb
    """
    return _ula(*_check_step(potential, X, h, xi))


def _ula(potential, X, h, xi):
    return X - h * potential.grad(X) + math.sqrt(2 * h) * xi  # eq. (2)


def sgld_step(
    X: np.ndarray, potential: FiniteSumQuadratic, h: float, idx: np.ndarray, xi: np.ndarray
) -> np.ndarray:
    r"""One SGLD step, eq. (4): $X - h\,g_B(X) + \sqrt{2h}\,\xi$, minibatch ``idx[p]`` for
    particle ``p`` (independent minibatches per particle: the cloud then follows the SGD flow).

    See: book/wflows/01-three-samplers.ipynb
    """
    return _sgld(*_check_step(potential, X, h, xi, idx=idx))


def _sgld(potential, X, h, xi, idx):
    return X - h * potential.grad_batch(X, idx) + math.sqrt(2 * h) * xi  # eq. (4)


def svrg_direction(
    X: np.ndarray, Xs: np.ndarray, Gs: np.ndarray, potential: FiniteSumQuadratic, idx: np.ndarray
) -> np.ndarray:
    r"""The SVRG direction, eq. (5): $g_B(X) - g_B(\tilde X) + \tilde G$, per particle.

    Unbiased for $\nabla V(X)$ over the draw of ``idx``; exact when all ``A_i`` are equal.

    See: book/wflows/01-three-samplers.ipynb
    """
    potential, X, _, _, Xs, Gs, idx = _check_step(
        potential, X, 1.0, np.zeros(np.shape(X)), Xs=Xs, Gs=Gs, idx=idx
    )
    return _svrg_direction(potential, X, Xs, Gs, idx)


def _svrg_direction(potential, X, Xs, Gs, idx):
    return potential.grad_batch(X, idx) - potential.grad_batch(Xs, idx) + Gs  # eq. (5)


def svrg_step(
    X: np.ndarray,
    Xs: np.ndarray,
    Gs: np.ndarray,
    potential: FiniteSumQuadratic,
    h: float,
    idx: np.ndarray,
    xi: np.ndarray,
) -> np.ndarray:
    r"""One SVRG-LD step, eq. (6): $X - h\,(g_B(X) - g_B(\tilde X) + \tilde G) + \sqrt{2h}\,\xi$.

    See: book/wflows/01-three-samplers.ipynb
    """
    return _svrg(*_check_step(potential, X, h, xi, Xs=Xs, Gs=Gs, idx=idx))


def _svrg(potential, X, h, xi, Xs, Gs, idx):
    g = _svrg_direction(potential, X, Xs, Gs, idx)  # eq. (5)
    return X - h * g + math.sqrt(2 * h) * xi  # eq. (6)


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


class SamplerDraws(NamedTuple):
    """Pre-drawn randomness: ``indices`` (steps, P, b) and ``normals`` (steps, P, d).

    See: book/wflows/01-three-samplers.ipynb
    """

    indices: np.ndarray
    normals: np.ndarray


class SamplerRun(NamedTuple):
    """A checked run (``validate_run``'s answer, with ``rec`` and ``keep`` set by the caller):
    what the loops of the reference and the fast path read, unchecked.

    See: book/wflows/01-three-samplers.ipynb
    """

    method: str
    potential: FiniteSumQuadratic
    X0: np.ndarray
    h: np.ndarray  # (steps,) step sizes
    b: int | None  # minibatch size (SGLD, SVRG-LD)
    m: int | None  # snapshot period (SVRG-LD)
    seed: int
    draws: SamplerDraws | None
    rec: np.ndarray | None = None  # recorded steps
    keep: int = 0  # particles stored at each record


def draw_noise(
    steps: int, P: int, d: int, N: int, batch_size: int = 1, seed: int = 0
) -> SamplerDraws:
    """Draw all minibatch indices and Gaussian increments of a run in advance.

    Passing the same draws to ``run_sampler`` and ``fast.run_sampler`` makes them follow the
    same path (the cross-check of the fast path). Memory: ``steps * P * (b + d)`` numbers.

    See: book/wflows/01-three-samplers.ipynb
    """
    steps = check_int("steps", steps, 1)
    P = check_int("P", P, 1)
    d = check_int("d", d, 1)
    N = check_int("N", N, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**32 - 1))
    return SamplerDraws(
        rng.integers(0, N, size=(steps, P, batch_size)), rng.standard_normal((steps, P, d))
    )


@dataclass
class SamplerHistory:
    """What ``run_sampler`` records.

    Attributes
    ----------
    method : str
    X : ndarray (P, d)
        The final particles.
    step : ndarray (R,)
        Recorded step indices (0 = the start).
    time : ndarray (R,)
        Flow time ``t = sum of step sizes`` at the recorded steps.
    grad_evals : ndarray (R,)
        Component-gradient evaluations per particle up to each recorded step.
    mean, cov : ndarray (R, d), (R, d, d)
        Empirical moments of the cloud.
    kl, w2 : ndarray (R,)
        Gaussian-fit ``KL(N(mean, cov) || pi)`` and ``W2(N(mean, cov), pi)``.
    particles : ndarray (R, K, d)
        The first ``K`` particles at each recorded step (for plots and animations).
    batch_size, epoch_length : int or None
    seconds : float
        Wall time of the run.

    See: book/wflows/01-three-samplers.ipynb
    """

    method: str
    X: np.ndarray
    step: np.ndarray
    time: np.ndarray
    grad_evals: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    kl: np.ndarray
    w2: np.ndarray
    particles: np.ndarray
    batch_size: int | None = None
    epoch_length: int | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def at_budget(self, evals: float) -> int:
        """Index of the last record whose gradient count is ``<= evals`` (0 if none)."""
        return max(int(np.searchsorted(self.grad_evals, evals, side="right")) - 1, 0)


def grad_evals_per_step(
    method: str, N: int, batch_size: int | None = None, epoch_length: int | None = None
) -> float:
    """Amortised component-gradient evaluations per particle and step: ULA ``N``, SGLD ``b``,
    SVRG-LD ``2b + N/m``.

    See: book/wflows/01-three-samplers.ipynb
    """
    method = check_choice("method", method, METHODS)
    if method == "langevin":
        return float(N)
    if method == "sgld":
        return float(batch_size)
    return 2.0 * batch_size + N / epoch_length


def step_schedule(h0: float, steps: int, k0: float = 100.0, power: float = 1.0) -> np.ndarray:
    r"""Decreasing steps $h_k = h_0 / (1 + k/k_0)^{p}$, $k = 0..steps-1$ ($p = 1$ under LSI,
    $p = 1/2$ for the nonconvex rate).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    h0 = check_positive("h0", h0)
    steps = check_int("steps", steps, 1)
    k0 = check_positive("k0", k0)
    power = check_range("power", power, 0.0, 2.0)
    return h0 / (1.0 + np.arange(steps) / k0) ** power


def validate_run(method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws):
    method = check_choice("method", method, METHODS)
    potential = check_potential(potential)
    X0 = check_particles(X0, potential.d)
    steps = check_int("steps", steps, 1, 100_000_000)
    if np.ndim(step_size) == 0:
        h = np.full(steps, check_positive("step_size", step_size))
    else:
        h = check_array("step_size", step_size, shape=(steps,))
        if h.min() <= 0:
            raise ValueError(f"step_size must be > 0 at every step (got min {h.min():g})")
    if h.max() * potential.L >= 2.0:
        raise ValueError(
            f"step_size must be < 2/L = {2 / potential.L:.4g} for this potential "
            f"(got {h.max():g}); larger steps diverge"
        )
    if method == "langevin":
        if batch_size is not None or epoch_length is not None:
            raise ValueError("batch_size and epoch_length must be None for method='langevin'")
        b = m = None
    else:
        if batch_size is None:
            raise ValueError(f"batch_size is required for method={method!r} (an int in [1, N])")
        b = check_int("batch_size", batch_size, 1, potential.N)
        if method == "svrg":
            if epoch_length is None:
                raise ValueError("epoch_length is required for method='svrg' (an int >= 1)")
            m = check_int("epoch_length", epoch_length, 1)
        else:
            if epoch_length is not None:
                raise ValueError("epoch_length must be None for method='sgld'")
            m = None
    seed = check_int("seed", seed, 0, 2**32 - 1)
    if draws is not None:
        P, d = X0.shape
        if not isinstance(draws, SamplerDraws):
            raise TypeError(f"draws must be a SamplerDraws (got {type(draws).__name__})")
        if draws.normals.shape != (steps, P, d):
            raise ValueError(
                f"draws.normals must have shape {(steps, P, d)} (got {draws.normals.shape})"
            )
        if method != "langevin" and draws.indices.shape != (steps, P, b):
            raise ValueError(
                f"draws.indices must have shape {(steps, P, b)} (got {draws.indices.shape})"
            )
    return SamplerRun(method, potential, X0, h, b, m, seed, draws)


def record_steps(steps: int, record_every: int | None) -> np.ndarray:
    if record_every is None:
        record_every = max(1, steps // 100)
    record_every = check_int("record_every", record_every, 1)
    rec = np.arange(0, steps + 1, record_every)
    return rec if rec[-1] == steps else np.append(rec, steps)


def make_history(run: SamplerRun, X, moments, parts, seconds) -> SamplerHistory:
    """The history of a finished run: its records' moments, distances and gradient counts."""
    method, potential, h, b, m, rec = run.method, run.potential, run.h, run.b, run.m, run.rec
    N = potential.N
    time = np.concatenate([[0.0], np.cumsum(h)])[rec]
    if method == "langevin":
        evals = N * rec.astype(float)
    elif method == "sgld":
        evals = b * rec.astype(float)
    else:  # snapshots at steps 0, m, 2m, ... (each costs N), plus 2b per step
        evals = 2.0 * b * rec + N * np.ceil(rec / m)
    means = np.array([mm for mm, _ in moments])
    covs = np.array([cc for _, cc in moments])
    kl = np.array([kl_gaussian(mm, cc, potential.mean, potential.cov) for mm, cc in moments])
    w2 = np.array([w2_gaussian(mm, cc, potential.mean, potential.cov) for mm, cc in moments])
    return SamplerHistory(
        method=method,
        X=X,
        step=rec,
        time=time,
        grad_evals=evals,
        mean=means,
        cov=covs,
        kl=kl,
        w2=w2,
        particles=np.array(parts),
        batch_size=b,
        epoch_length=m,
        seconds=seconds,
    )


def run_sampler(
    method: str,
    potential: FiniteSumQuadratic,
    X0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
    epoch_length: int | None = None,
    seed: int = 0,
    *,
    record_every: int | None = None,
    keep: int = 300,
    draws: SamplerDraws | None = None,
) -> SamplerHistory:
    r"""Run ULA (``"langevin"``), SGLD (``"sgld"``) or SVRG-LD (``"svrg"``) on a cloud of
    particles (numpy reference, float64).

    Parameters
    ----------
    method : {"langevin", "sgld", "svrg"}
        Discretisation of the GD flow (eq. 2), the SGD flow (eq. 4) or the SVRG flow (eq. 6).
    potential : FiniteSumQuadratic
    X0 : array (P, d)
        Initial particles.
    step_size : float or array of shape (steps,)
        Step ``h`` (a schedule when an array); must be below ``2 / potential.L``.
    steps : int
        Number of steps.
    batch_size : int, optional
        Minibatch size ``b`` in ``[1, N]`` (SGLD and SVRG-LD; drawn with replacement,
        independently for every particle and step).
    epoch_length : int, optional
        SVRG snapshot period ``m`` in steps (SVRG-LD only).
    seed : int
        Seed of the numpy generator (ignored when ``draws`` is given).
    record_every : int, optional
        Record moments every this many steps (default ``steps // 100``); the last step is
        always recorded.
    keep : int
        Number of particles stored at each record (``history.particles``).
    draws : SamplerDraws, optional
        Pre-drawn indices and normals (see ``draw_noise``), for cross-checks.

    Returns
    -------
    SamplerHistory
        ``.X`` final particles; ``.grad_evals`` component-gradient evaluations per particle
        (ULA ``N`` per step, SGLD ``b``, SVRG-LD ``2b`` plus ``N`` per snapshot); ``.kl``,
        ``.w2`` Gaussian-fit distances to the target.

    Raises
    ------
    ValueError
        On bad arguments, or if the particles stop being finite (the step index is named).

    See: book/wflows/01-three-samplers.ipynb
    """
    run = validate_run(
        method, potential, X0, step_size, steps, batch_size, epoch_length, seed, draws
    )
    run = run._replace(rec=record_steps(steps, record_every), keep=check_int("keep", keep, 0))
    return _sample(run)


def _sample(run: SamplerRun) -> SamplerHistory:
    """The loop of ``run_sampler`` on a checked run: eqs. (2), (4), (6) step by step."""
    import time as _time

    method, potential, h, b, m, draws = run.method, run.potential, run.h, run.b, run.m, run.draws
    rec_set = set(run.rec.tolist())
    rng = np.random.default_rng(run.seed)
    X = run.X0.copy()
    P, d = X.shape
    N = potential.N
    Xs = Gs = None
    moments, parts = [particle_moments(X)], [X[: run.keep].copy()]
    t0 = _time.perf_counter()
    for k in range(h.size):
        if draws is not None:
            idx = draws.indices[k] if method != "langevin" else None
            xi = draws.normals[k]
        else:
            idx = rng.integers(0, N, size=(P, b)) if method != "langevin" else None
            xi = rng.standard_normal((P, d))
        if method == "langevin":
            X = _ula(potential, X, h[k], xi)  # eq. (2)
        elif method == "sgld":
            X = _sgld(potential, X, h[k], xi, idx)  # eq. (4)
        else:
            if k % m == 0:  # snapshot refresh: every particle stores X~ and grad V(X~)
                Xs, Gs = X.copy(), potential.grad(X)
            X = _svrg(potential, X, h[k], xi, Xs, Gs, idx)  # eq. (6)
        if k + 1 in rec_set:
            if not np.all(np.isfinite(X)):
                raise ValueError(f"particles became non-finite by step {k + 1} of {method}")
            moments.append(particle_moments(X))
            parts.append(X[: run.keep].copy())
    seconds = _time.perf_counter() - t0
    return make_history(run, X, moments, parts, seconds)


def sgd_flow_sde(
    potential: FiniteSumQuadratic,
    X0: Any,
    eta: float,
    batch_size: int,
    t_end: float,
    dt: float,
    seed: int = 0,
) -> np.ndarray:
    r"""Euler-Maruyama of the SGD-flow SDE (eq. 3) with its noise written out:
    $dX = -\nabla V\,dt + \sqrt2\,dW + \sqrt{\eta}\,\Sigma(X)^{1/2} dB$,
    $\Sigma(x) = \mathrm{Cov}_i[\nabla V_i(x)]/b$.

    Reference only: $\Sigma$ is built from all $N$ component gradients (O(N) per particle and
    step). With ``dt`` much smaller than ``eta`` it approximates the flow itself, which SGLD
    with step ``h = eta`` discretises. Returns the particles at ``t_end``.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = check_potential(potential)
    X = check_particles(X0, potential.d).copy()
    eta = check_positive("eta", eta, allow_zero=True)
    b = check_int("batch_size", batch_size, 1, potential.N)
    t_end = check_positive("t_end", t_end)
    dt = check_positive("dt", dt)
    if dt * potential.L >= 1.0:
        raise ValueError(f"dt must be < 1/L = {1 / potential.L:.4g} (got {dt:g})")
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**32 - 1))
    P, d = X.shape
    for _ in range(int(math.ceil(t_end / dt))):
        Sig = potential.noise_cov(X, b)  # (P, d, d)
        w, U = np.linalg.eigh(Sig)
        root = np.einsum("pij,pj,pkj->pik", U, np.sqrt(np.clip(w, 0.0, None)), U)  # Sigma^1/2
        dW = rng.standard_normal((P, d))
        dB = rng.standard_normal((P, d))
        X = (
            X
            - dt * potential.grad(X)  # drift -grad V
            + math.sqrt(2 * dt) * dW  # Brownian part (replaces -grad log mu)
            + math.sqrt(eta * dt) * np.einsum("pij,pj->pi", root, dB)  # eq. (3): minibatch noise
        )
    return X
