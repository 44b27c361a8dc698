"""Reference kernels (numpy, float64): the single-timescale actor-critic loop, one update, the
perfect-critic baseline (exact policy-gradient ascent) and the rate helpers.

Each statement of the loop sits beside the equation of the lesson page
(book/actor_critic/index.md) that it implements: (S) sampling, (ac-adv) the critic's
advantage, (ac-actor), (ac-critic); ``# eq. (ac-pg)`` marks the exact policy gradient.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)
from lab.core.progress import progress
from lab.core.runtime import smoke_steps

from .mdp import (
    TabularMDP,
    evaluate_pi,
    gradient_pi,
    occupancy_pi,
    optimum,
    softmax_policy,
)

__all__ = [
    "StepSchedule",
    "ACHistory",
    "PGHistory",
    "ac_update",
    "single_timescale_ac",
    "exact_pg_ascent",
    "fit_rate",
    "samples_to_epsilon",
]

SAMPLERS = ("occupancy", "restart")


# ---------------------------------------------------------------------------------------------
# Step sizes
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSchedule:
    """Step size ``k -> c (k + k0)^(-p)``, optionally capped at ``cap``.

    Parameters
    ----------
    c : float
        Constant (> 0).
    p : float
        Exponent in [0, 1]. ``p = 2/3`` is the paper's schedule; ``1/2`` the classical
        single-timescale one; ``1`` the Robbins-Monro schedule of a slow actor;
        ``0`` a constant step (outside the theorem; the arXiv v1 variant for the critic).
    k0 : float
        Offset (>= 1 keeps the first step equal to ``c``).
    cap : float, optional
        Upper bound on the step (e.g. 1 for a TD critic with a large constant).

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """

    c: float
    p: float = 2.0 / 3.0
    k0: float = 1.0
    cap: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "c", check_positive("c", self.c))
        object.__setattr__(self, "p", check_range("p", self.p, 0.0, 1.0))
        object.__setattr__(self, "k0", check_range("k0", self.k0, 1.0))
        if self.cap is not None:
            object.__setattr__(self, "cap", check_positive("cap", self.cap))

    def __call__(self, k):
        step = self.c * (np.asarray(k, dtype=float) + self.k0) ** (-self.p)
        if self.cap is not None:
            step = np.minimum(step, self.cap)
        return float(step) if np.ndim(step) == 0 else step

    def label(self) -> str:
        frac = {2 / 3: "2/3", 1 / 2: "1/2", 1 / 3: "1/3", 1.0: "1", 0.0: "0"}
        p = next((v for k, v in frac.items() if abs(k - self.p) < 1e-9), f"{self.p:.3g}")
        return f"{self.c:g}·k^-{p}"


def as_schedule(name: str, value: Any) -> StepSchedule:
    if isinstance(value, StepSchedule):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return StepSchedule(*value)
    raise TypeError(f"{name} must be a StepSchedule or a (c, p) pair (got {value!r})")


# ---------------------------------------------------------------------------------------------
# Histories
# ---------------------------------------------------------------------------------------------
@dataclass
class ACHistory:
    """What :func:`single_timescale_ac` recorded at log-spaced iterations.

    Attributes
    ----------
    k : ndarray (n_eval,)
        Iterations (number of actor/critic updates done) at the evaluation points.
    samples : ndarray (n_eval,)
        Samples used so far: iterations for the ``occupancy`` sampler; simulator transitions
        (mean over runs) for the ``restart`` sampler.
    gaps : ndarray (runs, n_eval)
        Exact optimality gap ``J* - J(pi_k)`` of every run.
    gap : ndarray (n_eval,)
        Mean gap over runs.
    critic_errors : ndarray (runs, n_eval)
        ``d^pi x pi``-weighted RMS of ``Q_k - Q^{pi_k}`` (see :func:`critic_error`).
    optimal_action_prob : ndarray (n_eval, S)
        Mean over runs of ``pi_k(a*(s)|s)``.
    theta, Q : ndarray (runs, S, A)
        Final actor and critic.
    J_star : float

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    k: np.ndarray
    samples: np.ndarray
    gaps: np.ndarray
    critic_errors: np.ndarray
    optimal_action_prob: np.ndarray
    theta: np.ndarray
    Q: np.ndarray
    J_star: float
    config: dict = field(default_factory=dict)

    @property
    def gap(self) -> np.ndarray:
        return self.gaps.mean(0)

    @property
    def critic_error(self) -> np.ndarray:
        return self.critic_errors.mean(0)


@dataclass
class PGHistory:
    """What :func:`exact_pg_ascent` recorded: iterations ``k``, ``gap``, ``grad_norm``,
    ``optimal_action_prob`` (n_eval, S) and the final ``theta``.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    k: np.ndarray
    gap: np.ndarray
    grad_norm: np.ndarray
    optimal_action_prob: np.ndarray
    theta: np.ndarray
    J_star: float

    @property
    def samples(self) -> np.ndarray:  # exact gradients: one "iteration" each
        return self.k


def log_eval_points(K: int, n: int) -> np.ndarray:
    return np.unique(np.concatenate([[0], np.geomspace(1, K, n).round().astype(int)]))


def categorical(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw: the first index whose cumulative probability exceeds ``u``."""
    idx = (np.cumsum(probs, axis=-1) < u[..., None]).sum(-1)
    return np.minimum(idx, probs.shape[-1] - 1)


def record_metrics(mdp, J_star, a_star, theta, Q):
    pi = softmax_policy(theta)
    V, Q_pi = evaluate_pi(mdp, pi)
    d = occupancy_pi(mdp, pi)
    gap = J_star - V @ mdp.rho
    err = np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(-2, -1)))
    p_opt = pi[:, np.arange(mdp.n_states), a_star].mean(0)
    return gap, err, p_opt


def check_ac_args(mdp, K, actor, critic, runs, seed, sampler, eval_points):
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP (got {type(mdp).__name__})")
    K = smoke_steps(check_int("K", K, 1, 10**9), small=2000)  # LAB_SMOKE=1: 2,000
    actor = as_schedule("actor", actor)
    critic = as_schedule("critic", critic)
    runs = check_int("runs", runs, 1, 10**7)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    sampler = check_choice("sampler", sampler, SAMPLERS)
    eval_points = check_int("eval_points", eval_points, 2, 10_000)
    return K, actor, critic, runs, seed, sampler, eval_points


# ---------------------------------------------------------------------------------------------
# Reference kernel
# ---------------------------------------------------------------------------------------------
def single_timescale_ac(
    mdp: TabularMDP,
    K: int = 20_000,
    actor: StepSchedule | tuple = StepSchedule(0.1, 2 / 3),
    critic: StepSchedule | tuple = StepSchedule(1.0, 2 / 3),
    runs: int = 8,
    seed: int = 0,
    *,
    sampler: str = "occupancy",
    eval_points: int = 100,
    uniforms: np.ndarray | None = None,
    show_progress: bool | None = None,
) -> ACHistory:
    """Tabular softmax actor-critic, one sample and one actor + one critic step per iteration.

    Reference kernel (numpy, float64), vectorised over ``runs`` independent runs; each line of
    the loop sits beside the step it implements (see the module docstring).

    Parameters
    ----------
    mdp : TabularMDP
    K : int
        Iterations (>= 1).
    actor, critic : StepSchedule or (c, p)
        Step-size schedules ``eta_k``, ``beta_k``.
    runs : int
        Independent runs (vectorised).
    seed : int
        Seed of the random numbers (ignored when ``uniforms`` is given).
    sampler : {"occupancy", "restart"}
        ``"occupancy"``: draw ``s_k ~ d^{pi_k}_rho`` exactly (the analysis' oracle; one sample
        per iteration). ``"restart"``: simulate from ``s ~ rho`` and stop with probability
        ``1 - gamma`` per step (simulator only; counts transitions).
    eval_points : int
        About this many log-spaced iterations at which ``J(pi_k)`` is computed exactly.
    uniforms : ndarray (K, runs, 4), optional
        The uniforms for the draws of ``s, a, s', a'`` (occupancy sampler only): inject them to
        compare implementations step by step.
    show_progress : bool, optional
        Progress bar (default: on unless ``LAB_PROGRESS=0``).

    Returns
    -------
    ACHistory

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    K, actor, critic, runs, seed, sampler, eval_points = check_ac_args(
        mdp, K, actor, critic, runs, seed, sampler, eval_points
    )
    if uniforms is not None:
        if sampler != "occupancy":
            raise ValueError("uniforms can only be injected with sampler='occupancy'")
        uniforms = check_array("uniforms", uniforms, shape=(K, runs, 4))
    disable = None if show_progress is None else not show_progress
    loop = ACLoop(sampler, eval_points, uniforms, disable)
    return run_ac(mdp, K, actor, critic, runs, seed, loop)


class ACLoop(NamedTuple):
    """How :func:`run_ac` samples and records: the sampler, the evaluation points, injected
    uniforms (or ``None``) and whether the progress bar is off (``None``: the default)."""

    sampler: str = "occupancy"
    eval_points: int = 100
    uniforms: np.ndarray | None = None
    disable: bool | None = None


def _draw(mdp, pi, u, sampler, rng):
    """(S): ``s_k ~ d^{pi_k}_rho``, ``a_k ~ pi_k(.|s_k)``, ``s'_k ~ P(.|s_k, a_k)``,
    ``a'_k ~ pi_k(.|s'_k)``, and the transitions the draw of ``s_k`` cost."""
    R_idx = np.arange(pi.shape[0])
    if sampler == "occupancy":
        d = occupancy_pi(mdp, pi)
        s, n_steps = categorical(d, u[:, 0]), 0
    else:
        s, n_steps = _restart_draw(mdp, pi, rng)
    a = categorical(pi[R_idx, s], u[:, 1])  # a_k ~ pi_k(.|s_k)
    s1 = categorical(mdp.P[s, a], u[:, 2])  # s'_k ~ P(.|s_k, a_k)
    a1 = categorical(pi[R_idx, s1], u[:, 3])  # a'_k ~ pi_k(.|s'_k)
    return s, a, s1, a1, n_steps


def run_ac(mdp, K, actor, critic, runs, seed, loop: ACLoop) -> ACHistory:
    """:func:`single_timescale_ac` on arguments it has checked (the walked path: no re-check)."""
    sampler, eval_points, uniforms, disable = loop
    rng = np.random.default_rng(seed)
    g = mdp.gamma
    J_star, a_star = optimum(mdp)
    theta = np.zeros((runs, mdp.n_states, mdp.n_actions))  # theta_0 = 0: uniform policy
    Q = np.zeros((runs, mdp.n_states, mdp.n_actions))  # Q_0 = 0
    ks = log_eval_points(K, eval_points)
    etas, betas = actor(np.arange(K)), critic(np.arange(K))
    rec_gap, rec_err, rec_p, rec_samples = [], [], [], []
    transitions = np.zeros(runs)
    chunk, j = 4096, 0
    for k in progress(range(K), desc="actor-critic", disable=disable):
        while j < len(ks) and ks[j] == k:
            gap, err, p_opt = record_metrics(mdp, J_star, a_star, theta, Q)
            rec_gap.append(gap), rec_err.append(err), rec_p.append(p_opt)
            rec_samples.append(k if sampler == "occupancy" else transitions.mean())
            j += 1
        if uniforms is not None:
            u = uniforms[k]
        else:
            if k % chunk == 0:
                block = rng.random((min(chunk, K - k), runs, 4))
            u = block[k % chunk]
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)  # pi_k = softmax(theta_k)
        s, a, s1, a1, n_steps = _draw(mdp, pi, u, sampler, rng)  # (S)
        if sampler != "occupancy":
            transitions += n_steps + 1
        ac_update_inplace(theta, Q, pi, s, a, s1, a1, mdp.R[s, a], g, etas[k], betas[k])
    while j < len(ks):  # the final point(s), k = K
        gap, err, p_opt = record_metrics(mdp, J_star, a_star, theta, Q)
        rec_gap.append(gap), rec_err.append(err), rec_p.append(p_opt)
        rec_samples.append(K if sampler == "occupancy" else transitions.mean())
        j += 1
    return ACHistory(
        k=ks.astype(float), samples=np.asarray(rec_samples, dtype=float),
        gaps=np.stack(rec_gap, 1), critic_errors=np.stack(rec_err, 1),
        optimal_action_prob=np.stack(rec_p, 0), theta=theta, Q=Q, J_star=J_star,
        config=dict(actor=actor, critic=critic, runs=runs, seed=seed, sampler=sampler, K=K),
    )  # fmt: skip


def ac_update_inplace(theta, Q, pi, s, a, s1, a1, r, gamma, eta, beta):
    """One actor + one critic step on a batch of runs (arrays (runs, S, A)), in place."""
    R_idx = np.arange(theta.shape[0])
    pi_s = pi[R_idx, s]  # pi_k(.|s_k), (runs, A)
    q_s = Q[R_idx, s]  # Q_k(s_k, .), a copy (fancy indexing)
    q_sa = q_s[R_idx, a]
    # eq. (ac-adv): A_k = Q_k(s, a) - sum_b pi_k(b|s) Q_k(s, b)
    adv = q_sa - np.sum(pi_s * q_s, axis=-1)
    # eq. (ac-actor): theta(s, .) += eta_k / (1 - gamma) (e_a - pi(.|s)) A_k
    score = -pi_s
    score[R_idx, a] += 1.0
    theta[R_idx, s] += (eta / (1.0 - gamma)) * score * adv[:, None]
    # eq. (ac-critic): Q(s, a) += beta_k (r(s, a) + gamma Q_k(s', a') - Q_k(s, a))
    td = r + gamma * Q[R_idx, s1, a1] - q_sa
    Q[R_idx, s, a] += beta * td


def ac_update(
    theta: np.ndarray,
    Q: np.ndarray,
    s: int,
    a: int,
    s_next: int,
    a_next: int,
    reward: float,
    gamma: float,
    eta: float,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One single-timescale actor-critic update from one sample ``(s, a, r, s', a')``.

    Returns new ``(theta, Q)`` (inputs are not modified): eqs. (ac-adv), (ac-actor) and
    (ac-critic) of the lesson page, with the policy ``pi = softmax(theta)`` and the critic ``Q``
    taken *before* the update.

    Parameters
    ----------
    theta, Q : ndarray (S, A)
    s, a, s_next, a_next : int
        The sample: state, action, next state, next action.
    reward : float
        ``r(s, a)``.
    gamma : float
        Discount in (0, 1).
    eta, beta : float
        Actor and critic steps (> 0).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    theta = check_array("theta", theta, ndim=2).copy()
    Q = check_array("Q", Q, shape=theta.shape).copy()
    S, A = theta.shape
    s, s_next = check_int("s", s, 0, S - 1), check_int("s_next", s_next, 0, S - 1)
    a, a_next = check_int("a", a, 0, A - 1), check_int("a_next", a_next, 0, A - 1)
    reward = check_real("reward", reward)
    gamma = check_range("gamma", gamma, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    eta, beta = check_positive("eta", eta), check_positive("beta", beta)
    th, q = theta[None], Q[None]
    pi = softmax_policy(th)
    idx = (np.array([s]), np.array([a]), np.array([s_next]), np.array([a_next]))
    ac_update_inplace(th, q, pi, *idx, np.array([reward]), gamma, eta, beta)
    return th[0], q[0]


def _restart_draw(mdp: TabularMDP, pi: np.ndarray, rng: np.random.Generator):
    """``s ~ d^pi_rho`` by simulation: start at ``rho``, continue with probability gamma."""
    runs = pi.shape[0]
    R_idx = np.arange(runs)
    s = categorical(np.broadcast_to(mdp.rho, (runs, mdp.n_states)), rng.random(runs))
    alive = rng.random(runs) < mdp.gamma
    n_steps = np.zeros(runs)
    while alive.any():
        a = categorical(pi[R_idx, s], rng.random(runs))
        s_next = categorical(mdp.P[s, a], rng.random(runs))
        s = np.where(alive, s_next, s)
        n_steps += alive
        alive &= rng.random(runs) < mdp.gamma
    return s, n_steps


# ---------------------------------------------------------------------------------------------
# Peer: exact policy-gradient ascent (the perfect critic)
# ---------------------------------------------------------------------------------------------
def exact_pg_ascent(
    mdp: TabularMDP,
    K: int = 2000,
    step: float | StepSchedule | None = None,
    *,
    theta0: np.ndarray | None = None,
    eval_points: int = 100,
) -> PGHistory:
    """Softmax policy-gradient ascent with exact gradients (a perfect critic, infinite samples).

    ``theta_{k+1} = theta_k + step_k grad J(theta_k)``. The default constant step
    ``(1 - gamma)^3 / 8`` is the safe ``1/L`` of Mei et al. (2020); larger steps usually work.

    Returns
    -------
    PGHistory

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP (got {type(mdp).__name__})")
    K = smoke_steps(check_int("K", K, 1, 10**8), small=2000)  # LAB_SMOKE=1: 2,000
    eval_points = check_int("eval_points", eval_points, 2, 10_000)
    if step is None:
        step = (1.0 - mdp.gamma) ** 3 / 8.0
    if isinstance(step, StepSchedule):
        steps = step(np.arange(K))
    else:
        steps = np.full(K, check_positive("step", step))
    S, A = mdp.n_states, mdp.n_actions
    theta = (
        np.zeros((S, A)) if theta0 is None else check_array("theta0", theta0, shape=(S, A)).copy()
    )
    J_star, a_star = optimum(mdp)
    ks = log_eval_points(K, eval_points)
    gaps, norms, p_opt = [], [], []
    j = 0
    for k in range(K + 1):
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)
        grad = gradient_pi(mdp, pi)  # eq. (ac-pg)
        while j < len(ks) and ks[j] == k:
            V, _ = evaluate_pi(mdp, pi)
            gaps.append(J_star - V @ mdp.rho)
            norms.append(np.linalg.norm(grad))
            p_opt.append(pi[np.arange(S), a_star])
            j += 1
        if k < K:
            theta = theta + steps[k] * grad  # ascent on J with the exact gradient
    return PGHistory(
        k=ks.astype(float),
        gap=np.asarray(gaps),
        grad_norm=np.asarray(norms),
        optimal_action_prob=np.stack(p_opt),
        theta=theta,
        J_star=J_star,
    )


# ---------------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------------
def fit_rate(
    samples: np.ndarray, gap: np.ndarray, window: tuple[float, float] | None = None
) -> float:
    """Least-squares slope of ``log gap`` against ``log samples`` (negative for a decaying gap).

    Parameters
    ----------
    samples, gap : array (n,)
    window : (low, high), optional
        Keep the points with ``low <= samples <= high`` (default: ``samples >= 1``).

    Returns
    -------
    float
        The fitted log-log slope; ``-1/3`` is the paper's worst-case rate.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    from lab.core.rates import power_law_fit

    samples = check_array("samples", samples, ndim=1)
    gap = check_array("gap", gap, shape=(samples.size,))
    window = (1.0, np.inf) if window is None else window
    return power_law_fit(samples, gap, window=window).exponent


def samples_to_epsilon(samples: np.ndarray, gap: np.ndarray, eps: float) -> float:
    """The first recorded sample count after which the gap stays ``<= eps`` (``inf`` if never).

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    samples = check_array("samples", samples, ndim=1)
    gap = check_array("gap", gap, shape=(samples.size,))
    eps = check_positive("eps", eps)
    above = np.nonzero(gap > eps)[0]
    if above.size == 0:
        return float(samples[0])
    if above[-1] == samples.size - 1:
        return float("inf")
    return float(samples[above[-1] + 1])
