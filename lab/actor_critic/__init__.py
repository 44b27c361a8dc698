r"""
# Single-timescale actor-critic: global convergence with $k^{-2/3}$ steps

Kumar, Agrawal, Ramponi, Levy, Mannor. *On the Convergence of Single-Timescale
Actor-Critic.* NeurIPS 2025. [arXiv:2410.08868](https://arxiv.org/abs/2410.08868)

**Read this first: what is reconstructed.** Only the abstract (and a partial third-party
summary) of the paper could be read. The claim - a tabular softmax actor-critic whose actor and
critic both take one step per sample, with step sizes decaying like $k^{-2/3}$, reaches an
$\varepsilon$-optimal policy after $O(\varepsilon^{-3})$ samples - is the paper's. The
algorithm below is the standard single-timescale actor-critic of this literature (Konda &
Tsitsiklis; Sutton et al.; Agarwal et al. 2021; Mei et al. 2020), **reconstructed**: the exact
actor estimator (critic advantage), the critic form (SARSA(0) on $Q$) and all constants may
differ from the paper's. Every number printed by the chapter is our own measurement.

## Objects

Finite MDP $(S, A, P, r, \gamma, \rho)$; softmax policy
$\pi_\theta(a\mid s) = e^{\theta_{sa}} / \sum_b e^{\theta_{sb}}$; objective
$J(\theta) = \rho^\top V^{\pi_\theta}$; discounted occupancy
$d^\pi_\rho = (1-\gamma)\,\rho^\top (I - \gamma P_\pi)^{-1}$. Exact gradient (eq. PG):

$$\frac{\partial J}{\partial \theta_{sa}} = \frac{1}{1-\gamma}\, d^\pi_\rho(s)\, \pi(a\mid s)\,
A^\pi(s, a), \qquad A^\pi = Q^\pi - V^\pi.$$

## The algorithm (one sample per iteration)

With $\eta_k = c_a (k+1)^{-p_a}$ and $\beta_k = c_c (k+1)^{-p_c}$ (default $p_a = p_c = 2/3$):

* (S) $s_k \sim d^{\pi_k}_\rho$, $a_k \sim \pi_k(\cdot\mid s_k)$,
  $s'_k \sim P(\cdot\mid s_k, a_k)$, $a'_k \sim \pi_k(\cdot\mid s'_k)$;
* (ADV) $\hat A_k = Q_k(s_k, a_k) - \sum_b \pi_k(b\mid s_k) Q_k(s_k, b)$;
* (ACTOR) $\theta_{k+1}(s_k, \cdot) = \theta_k(s_k, \cdot) + \frac{\eta_k}{1-\gamma}
  (e_{a_k} - \pi_k(\cdot\mid s_k))\, \hat A_k$;
* (CRITIC) $Q_{k+1}(s_k, a_k) = Q_k(s_k, a_k) + \beta_k \big(r(s_k, a_k) + \gamma Q_k(s'_k, a'_k)
  - Q_k(s_k, a_k)\big)$.

With a perfect critic ($Q_k = Q^{\pi_k}$) the actor direction is an unbiased estimate of
$\eta_k \nabla J$: averaging (ACTOR) over $s \sim d$, $a \sim \pi$ gives exactly eq. (PG).

**Claim (paper).** $J^\star - J(\pi_k) \le \varepsilon$ after $O(\varepsilon^{-3})$ samples,
i.e. a gap decaying like $k^{-1/3}$ in the worst case.

Peers shipped here: value iteration (:func:`optimal_values`, ground truth), exact softmax
policy-gradient ascent (:func:`exact_pg_ascent`, the perfect critic) and gymnasium's toy-text
environments as tabular MDPs (:func:`from_gymnasium`).

Reference kernel: :func:`single_timescale_ac` (numpy, float64, vectorised over independent
runs). Fast path: :func:`single_timescale_ac_torch` (torch, CPU or CUDA, the same operations in
the same order; with the same uniforms both give the same trajectory).

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)
from ..core.progress import progress

__all__ = [
    "TabularMDP",
    "StepSchedule",
    "ACHistory",
    "PGHistory",
    "random_mdp",
    "from_gymnasium",
    "softmax_policy",
    "policy_evaluation",
    "optimal_values",
    "expected_return",
    "occupancy",
    "exact_policy_gradient",
    "critic_error",
    "ac_update",
    "single_timescale_ac",
    "single_timescale_ac_torch",
    "exact_pg_ascent",
    "fit_rate",
    "samples_to_epsilon",
]

NB1 = "book/actor_critic/01-gap-vs-samples.ipynb"
NB2 = "book/actor_critic/02-schedules-and-critic-lag.ipynb"
SAMPLERS = ("occupancy", "restart")


# ---------------------------------------------------------------------------------------------
# The MDP
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TabularMDP:
    """A finite discounted MDP.

    Attributes
    ----------
    P : ndarray, shape (S, A, S)
        ``P[s, a, t]`` = probability of moving to ``t`` from ``s`` under ``a``; rows sum to 1.
    R : ndarray, shape (S, A)
        Expected one-step reward ``r(s, a)``.
    gamma : float
        Discount factor in (0, 1).
    rho : ndarray, shape (S,)
        Start distribution (full support is what the convergence theory assumes).
    name : str
        A label for figures.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    P: np.ndarray
    R: np.ndarray
    gamma: float
    rho: np.ndarray
    name: str = "mdp"

    def __post_init__(self):
        P = check_array("P", self.P, ndim=3)
        S, A, S2 = P.shape
        if S2 != S or S < 1 or A < 1:
            raise ValueError(f"P must have shape (S, A, S) (got {P.shape})")
        if np.any(P < 0):
            raise ValueError("P must be non-negative (got a negative transition probability)")
        row_err = float(np.max(np.abs(P.sum(-1) - 1.0)))
        if row_err > 1e-8:
            raise ValueError(f"P rows must sum to 1 within 1e-8 (got max deviation {row_err:.3g})")
        R = check_array("R", self.R, shape=(S, A))
        gamma = check_range(
            "gamma", self.gamma, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        rho = check_array("rho", self.rho, shape=(S,))
        if np.any(rho < 0) or abs(rho.sum() - 1.0) > 1e-8:
            raise ValueError(
                f"rho must be a probability vector (got min {rho.min():.3g}, sum {rho.sum():.6g})"
            )
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "rho", rho)

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]

    def __hash__(self):  # arrays are not hashable; identity is enough for caches
        return id(self)

    def __eq__(self, other):
        return self is other


def random_mdp(
    n_states: int = 6,
    n_actions: int = 3,
    gamma: float = 0.9,
    seed: int = 0,
    concentration: float = 0.5,
) -> TabularMDP:
    """A random MDP: ``P(.|s, a) ~ Dirichlet(concentration)``, ``r ~ U[0, 1]``, uniform ``rho``.

    Parameters
    ----------
    n_states, n_actions : int
        Sizes (``n_states >= 1``, ``n_actions >= 2``).
    gamma : float
        Discount in (0, 1).
    seed : int
        Seed of the numpy generator; the same seed gives the same MDP.
    concentration : float
        Dirichlet parameter (> 0); small values give sparse, nearly deterministic transitions.

    Returns
    -------
    TabularMDP

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    n_states = check_int("n_states", n_states, 1, 10_000)
    n_actions = check_int("n_actions", n_actions, 2, 1000)
    gamma = check_range("gamma", gamma, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    concentration = check_positive("concentration", concentration)
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(n_states, concentration), size=(n_states, n_actions))
    P = P / P.sum(-1, keepdims=True)
    R = rng.uniform(0.0, 1.0, size=(n_states, n_actions))
    rho = np.full(n_states, 1.0 / n_states)
    return TabularMDP(P, R, gamma, rho, name=f"random MDP |S|={n_states}, |A|={n_actions}")


def from_gymnasium(env: Any, gamma: float = 0.9, rho: str = "uniform", **make_kwargs) -> TabularMDP:
    """A gymnasium toy-text environment (``FrozenLake``, ``Taxi``, ``CliffWalking``) as a table.

    Reads ``env.unwrapped.P[s][a] = [(prob, next_state, reward, terminated), ...]``. A transition
    with ``terminated=True`` goes to one extra absorbing state (the last index) with reward 0,
    so the discounted value is the episodic return. Nothing is downloaded.

    Parameters
    ----------
    env : str or gymnasium.Env
        An environment or its id (e.g. ``"FrozenLake-v1"``), made with ``make_kwargs``.
    gamma : float
        Discount in (0, 1).
    rho : {"uniform", "initial"}
        ``"uniform"``: uniform over the environment's states (full support, as the theory
        assumes); ``"initial"``: the environment's own start distribution.

    Returns
    -------
    TabularMDP

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    gamma = check_range("gamma", gamma, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    rho = check_choice("rho", rho, ["uniform", "initial"])
    name = env if isinstance(env, str) else type(getattr(env, "unwrapped", env)).__name__
    if isinstance(env, str):
        import gymnasium  # optional dependency, imported only here

        env = gymnasium.make(env, **make_kwargs)
    base = getattr(env, "unwrapped", env)
    table = getattr(base, "P", None)
    if not isinstance(table, dict):
        raise TypeError(f"env must expose a toy-text transition table env.unwrapped.P (got {name})")
    n = len(table)
    n_actions = len(table[0])
    S = n + 1  # one absorbing end state
    P = np.zeros((S, n_actions, S))
    R = np.zeros((S, n_actions))
    for s in range(n):
        for a in range(n_actions):
            for prob, nxt, reward, terminated in table[s][a]:
                P[s, a, n if terminated else int(nxt)] += prob
                R[s, a] += prob * reward
    P[n, :, n] = 1.0
    P = P / P.sum(-1, keepdims=True)
    start = np.zeros(S)
    if rho == "uniform":
        start[:n] = 1.0 / n
    else:
        start[:n] = np.asarray(base.initial_state_distrib, dtype=float)
        start /= start.sum()
    return TabularMDP(P, R, gamma, start, name=str(name))


# ---------------------------------------------------------------------------------------------
# Exact quantities (linear algebra)
# ---------------------------------------------------------------------------------------------
def softmax_policy(theta: np.ndarray) -> np.ndarray:
    """``pi(a|s) = exp(theta[s, a]) / sum_b exp(theta[s, b])`` on the last axis (max-subtracted).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    theta = check_array("theta", theta, ndim=(2, 3))
    z = np.exp(theta - theta.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _check_policy(mdp: TabularMDP, pi: Any) -> np.ndarray:
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP (got {type(mdp).__name__})")
    pi = check_array("pi", pi, ndim=(2, 3))
    if pi.shape[-2:] != (mdp.n_states, mdp.n_actions):
        raise ValueError(
            f"pi must have shape (..., {mdp.n_states}, {mdp.n_actions}) (got {pi.shape})"
        )
    if np.any(pi < -1e-12) or np.max(np.abs(pi.sum(-1) - 1.0)) > 1e-8:
        raise ValueError("pi rows must be probability vectors (non-negative, summing to 1)")
    return pi


def _evaluate(mdp: TabularMDP, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched policy evaluation without validation: pi (..., S, A) -> V (..., S), Q (..., S, A)."""
    S = mdp.n_states
    P_pi = np.einsum("...sa,sat->...st", pi, mdp.P)  # P_pi(s, t) = sum_a pi(a|s) P(t|s, a)
    r_pi = np.einsum("...sa,sa->...s", pi, mdp.R)  # r_pi(s) = sum_a pi(a|s) r(s, a)
    # Bellman: V = r_pi + gamma P_pi V  <=>  (I - gamma P_pi) V = r_pi
    V = np.linalg.solve(np.eye(S) - mdp.gamma * P_pi, r_pi[..., None])[..., 0]
    Q = mdp.R + mdp.gamma * np.einsum("sat,...t->...sa", mdp.P, V)  # Q = r + gamma P V
    return V, Q


def _occupancy(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    S = mdp.n_states
    P_pi = np.einsum("...sa,sat->...st", pi, mdp.P)
    # d = (1 - gamma) rho^T (I - gamma P_pi)^{-1}  <=>  (I - gamma P_pi^T) d = (1 - gamma) rho
    A = np.eye(S) - mdp.gamma * np.swapaxes(P_pi, -1, -2)
    b = np.broadcast_to((1.0 - mdp.gamma) * mdp.rho, P_pi.shape[:-1])[..., None]
    d = np.linalg.solve(A, b)[..., 0]
    return np.clip(d, 0.0, None)


def policy_evaluation(mdp: TabularMDP, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(V^pi, Q^pi)`` by one linear solve, ``V = (I - gamma P_pi)^{-1} r_pi``.

    Parameters
    ----------
    mdp : TabularMDP
    pi : ndarray, shape (S, A) or (B, S, A)
        A (batch of) stochastic policies.

    Returns
    -------
    V : ndarray, shape (S,) or (B, S)
    Q : ndarray, shape (S, A) or (B, S, A)

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    pi = _check_policy(mdp, pi)
    return _evaluate(mdp, pi)


def expected_return(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray | float:
    """``J(pi) = rho . V^pi`` (a float, or one value per policy of a batch).

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    V, _ = policy_evaluation(mdp, pi)
    J = V @ mdp.rho
    return float(J) if np.ndim(J) == 0 else J


def occupancy(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """Discounted state occupancy ``d^pi_rho(s) = (1 - gamma) sum_t gamma^t Pr(s_t = s)``.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    pi = _check_policy(mdp, pi)
    return _occupancy(mdp, pi)


def optimal_values(
    mdp: TabularMDP, tol: float = 1e-12, max_iter: int = 1_000_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value iteration: ``V*``, ``Q*`` and a greedy optimal policy.

    Iterates ``V <- max_a [r + gamma P V]`` until the sup-norm change is below
    ``tol (1 - gamma) / (2 gamma)`` (so ``V`` is ``tol``-accurate), then evaluates the greedy
    policy exactly, so that ``J* = rho . V*`` is exact to rounding.

    Returns
    -------
    V : ndarray (S,)
    Q : ndarray (S, A)
    policy : ndarray (S, A)
        The greedy deterministic policy as a one-hot matrix (pass it to
        :func:`policy_evaluation`); ``policy.argmax(1)`` gives the actions.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP (got {type(mdp).__name__})")
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, 1)
    g = mdp.gamma
    V = np.zeros(mdp.n_states)
    threshold = tol * (1.0 - g) / (2.0 * g)
    for _ in range(max_iter):
        Q = mdp.R + g * mdp.P @ V  # Bellman optimality operator
        V_new = Q.max(1)
        done = np.max(np.abs(V_new - V)) < threshold
        V = V_new
        if done:
            break
    policy = np.eye(mdp.n_actions)[np.argmax(mdp.R + g * mdp.P @ V, axis=1)]
    V, Q = _evaluate(mdp, policy)  # exact value of the greedy policy
    return V, Q, policy


@functools.lru_cache(maxsize=64)
def _optimum(mdp: TabularMDP) -> tuple[float, np.ndarray]:
    V, _, policy = optimal_values(mdp)
    return float(V @ mdp.rho), policy.argmax(1)


def exact_policy_gradient(mdp: TabularMDP, theta: np.ndarray) -> np.ndarray:
    """``dJ/dtheta[s, a] = d(s) pi(a|s) A(s, a) / (1 - gamma)`` for the softmax policy.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    theta = check_array("theta", theta, ndim=(2, 3))
    pi = _check_policy(mdp, softmax_policy(theta))
    return _gradient(mdp, pi)


def _gradient(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    V, Q = _evaluate(mdp, pi)
    d = _occupancy(mdp, pi)
    # eq. (PG): gradient = d(s) pi(a|s) (Q(s, a) - V(s)) / (1 - gamma)
    return d[..., None] * pi * (Q - V[..., None]) / (1.0 - mdp.gamma)


def critic_error(mdp: TabularMDP, pi: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Critic tracking error ``sqrt(sum_{s,a} d^pi(s) pi(a|s) (Q(s,a) - Q^pi(s,a))^2)``.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    pi = _check_policy(mdp, pi)
    Q = check_array("Q", Q, shape=pi.shape)
    _, Q_pi = _evaluate(mdp, pi)
    d = _occupancy(mdp, pi)
    return np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(-2, -1)))


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


def _as_schedule(name: str, value: Any) -> StepSchedule:
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


def _eval_points(K: int, n: int) -> np.ndarray:
    return np.unique(np.concatenate([[0], np.geomspace(1, K, n).round().astype(int)]))


def _categorical(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw: the first index whose cumulative probability exceeds ``u``."""
    idx = (np.cumsum(probs, axis=-1) < u[..., None]).sum(-1)
    return np.minimum(idx, probs.shape[-1] - 1)


def _record(mdp, J_star, a_star, theta, Q):
    pi = softmax_policy(theta)
    V, Q_pi = _evaluate(mdp, pi)
    d = _occupancy(mdp, pi)
    gap = J_star - V @ mdp.rho
    err = np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(-2, -1)))
    p_opt = pi[:, np.arange(mdp.n_states), a_star].mean(0)
    return gap, err, p_opt


def _check_ac_args(mdp, K, actor, critic, runs, seed, sampler, eval_points):
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"mdp must be a TabularMDP (got {type(mdp).__name__})")
    K = check_int("K", K, 1, 10**9)
    actor = _as_schedule("actor", actor)
    critic = _as_schedule("critic", critic)
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
    K, actor, critic, runs, seed, sampler, eval_points = _check_ac_args(
        mdp, K, actor, critic, runs, seed, sampler, eval_points
    )
    if uniforms is not None:
        if sampler != "occupancy":
            raise ValueError("uniforms can only be injected with sampler='occupancy'")
        uniforms = check_array("uniforms", uniforms, shape=(K, runs, 4))
    rng = np.random.default_rng(seed)
    S, A, g = mdp.n_states, mdp.n_actions, mdp.gamma
    J_star, a_star = _optimum(mdp)
    R_idx = np.arange(runs)
    theta = np.zeros((runs, S, A))  # theta_0 = 0: uniform policy
    Q = np.zeros((runs, S, A))  # Q_0 = 0
    ks = _eval_points(K, eval_points)
    etas, betas = actor(np.arange(K)), critic(np.arange(K))
    rec_gap, rec_err, rec_p, rec_samples = [], [], [], []
    transitions = np.zeros(runs)
    chunk = 4096
    it = progress(
        range(K), desc="actor-critic", disable=None if show_progress is None else not show_progress
    )
    j = 0
    for k in it:
        while j < len(ks) and ks[j] == k:
            gap, err, p_opt = _record(mdp, J_star, a_star, theta, Q)
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
        # (S): s_k ~ d^{pi_k}_rho
        if sampler == "occupancy":
            d = _occupancy(mdp, pi)
            s = _categorical(d, u[:, 0])
        else:
            s, n_steps = _restart_draw(mdp, pi, rng)
            transitions += n_steps + 1
        a = _categorical(pi[R_idx, s], u[:, 1])  # a_k ~ pi_k(.|s_k)
        s1 = _categorical(mdp.P[s, a], u[:, 2])  # s'_k ~ P(.|s_k, a_k)
        a1 = _categorical(pi[R_idx, s1], u[:, 3])  # a'_k ~ pi_k(.|s'_k)
        r = mdp.R[s, a]
        _ac_update_inplace(theta, Q, pi, s, a, s1, a1, r, g, etas[k], betas[k])
    while j < len(ks):  # the final point(s), k = K
        gap, err, p_opt = _record(mdp, J_star, a_star, theta, Q)
        rec_gap.append(gap), rec_err.append(err), rec_p.append(p_opt)
        rec_samples.append(K if sampler == "occupancy" else transitions.mean())
        j += 1
    return ACHistory(
        k=ks.astype(float),
        samples=np.asarray(rec_samples, dtype=float),
        gaps=np.stack(rec_gap, 1),
        critic_errors=np.stack(rec_err, 1),
        optimal_action_prob=np.stack(rec_p, 0),
        theta=theta,
        Q=Q,
        J_star=J_star,
        config=dict(actor=actor, critic=critic, runs=runs, seed=seed, sampler=sampler, K=K),
    )


def _ac_update_inplace(theta, Q, pi, s, a, s1, a1, r, gamma, eta, beta):
    """One actor + one critic step on a batch of runs (arrays (runs, S, A)), in place."""
    R_idx = np.arange(theta.shape[0])
    pi_s = pi[R_idx, s]  # pi_k(.|s_k), (runs, A)
    q_s = Q[R_idx, s]  # Q_k(s_k, .), a copy (fancy indexing)
    q_sa = q_s[R_idx, a]
    # (ADV): A_k = Q_k(s, a) - sum_b pi_k(b|s) Q_k(s, b)
    adv = q_sa - np.sum(pi_s * q_s, axis=-1)
    # (ACTOR): theta(s, .) += eta_k / (1 - gamma) (e_a - pi(.|s)) A_k
    score = -pi_s
    score[R_idx, a] += 1.0
    theta[R_idx, s] += (eta / (1.0 - gamma)) * score * adv[:, None]
    # (CRITIC): Q(s, a) += beta_k (r(s, a) + gamma Q_k(s', a') - Q_k(s, a))
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

    Returns new ``(theta, Q)`` (inputs are not modified): steps (ADV), (ACTOR) and (CRITIC) of
    the module docstring, with the policy ``pi = softmax(theta)`` and the critic ``Q`` taken
    *before* the update.

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
    _ac_update_inplace(th, q, pi, *idx, np.array([reward]), gamma, eta, beta)
    return th[0], q[0]


def _restart_draw(mdp: TabularMDP, pi: np.ndarray, rng: np.random.Generator):
    """``s ~ d^pi_rho`` by simulation: start at ``rho``, continue with probability gamma."""
    runs = pi.shape[0]
    R_idx = np.arange(runs)
    s = _categorical(np.broadcast_to(mdp.rho, (runs, mdp.n_states)), rng.random(runs))
    alive = rng.random(runs) < mdp.gamma
    n_steps = np.zeros(runs)
    while alive.any():
        a = _categorical(pi[R_idx, s], rng.random(runs))
        s_next = _categorical(mdp.P[s, a], rng.random(runs))
        s = np.where(alive, s_next, s)
        n_steps += alive
        alive &= rng.random(runs) < mdp.gamma
    return s, n_steps


# ---------------------------------------------------------------------------------------------
# Fast path (torch, CPU or CUDA)
# ---------------------------------------------------------------------------------------------
def single_timescale_ac_torch(
    mdp: TabularMDP,
    K: int = 20_000,
    actor: StepSchedule | tuple = StepSchedule(0.1, 2 / 3),
    critic: StepSchedule | tuple = StepSchedule(1.0, 2 / 3),
    runs: int = 8,
    seed: int = 0,
    *,
    eval_points: int = 100,
    uniforms: Any = None,
    device: Any = None,
    dtype: Any = None,
    show_progress: bool | None = None,
) -> ACHistory:
    """The same algorithm as :func:`single_timescale_ac` (occupancy sampler) in batched torch.

    All runs advance together; the occupancy is a batched linear solve and the sampled entries
    are gathers. It pays on CUDA with thousands of runs; on a small CPU numpy is faster.

    Parameters
    ----------
    mdp, K, actor, critic, runs, seed, eval_points
        As in :func:`single_timescale_ac`.
    uniforms : ndarray or Tensor (K, runs, 4), optional
        Injected uniforms; with the same uniforms the trajectory equals the reference's.
    device : torch.device or str, optional
        Default: the device of ``uniforms`` if it is a tensor, else ``lab.device()``.
    dtype : torch.dtype, optional
        Default float64.

    Returns
    -------
    ACHistory
        Same fields, as numpy arrays.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import torch

    from ..core.runtime import device as default_device

    K, actor, critic, runs, seed, _, eval_points = _check_ac_args(
        mdp, K, actor, critic, runs, seed, "occupancy", eval_points
    )
    if device is None:
        device = uniforms.device if isinstance(uniforms, torch.Tensor) else default_device()
    device = torch.device(device)
    dtype = torch.float64 if dtype is None else dtype
    if uniforms is not None:
        if not isinstance(uniforms, torch.Tensor):
            uniforms = torch.as_tensor(check_array("uniforms", uniforms, shape=(K, runs, 4)))
        elif tuple(uniforms.shape) != (K, runs, 4):
            raise ValueError(
                f"uniforms must have shape ({K}, {runs}, 4) (got {tuple(uniforms.shape)})"
            )
        uniforms = uniforms.to(device=device, dtype=dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    S, A, g = mdp.n_states, mdp.n_actions, mdp.gamma
    J_star, a_star = _optimum(mdp)
    P = torch.as_tensor(mdp.P, device=device, dtype=dtype)
    Rw = torch.as_tensor(mdp.R, device=device, dtype=dtype)
    rho = torch.as_tensor(mdp.rho, device=device, dtype=dtype)
    eye = torch.eye(S, device=device, dtype=dtype)
    rhs = ((1.0 - g) * rho).expand(runs, S).unsqueeze(-1)
    etas = torch.as_tensor(actor(np.arange(K)) / (1.0 - g), device=device, dtype=dtype)
    betas = torch.as_tensor(critic(np.arange(K)), device=device, dtype=dtype)
    theta = torch.zeros(runs, S, A, device=device, dtype=dtype)
    Q = torch.zeros(runs, S, A, device=device, dtype=dtype)
    r_idx = torch.arange(runs, device=device)
    ks = _eval_points(K, eval_points)
    rec_gap, rec_err, rec_p = [], [], []

    def cat(probs, u):
        idx = (torch.cumsum(probs, -1) < u.unsqueeze(-1)).sum(-1)
        return idx.clamp_max(probs.shape[-1] - 1)

    def record():
        gap, err, p_opt = _record(mdp, J_star, a_star, theta.cpu().numpy(), Q.cpu().numpy())
        rec_gap.append(gap), rec_err.append(err), rec_p.append(p_opt)

    chunk = 4096
    j = 0
    it = progress(
        range(K),
        desc="actor-critic (torch)",
        disable=None if show_progress is None else not show_progress,
    )
    for k in it:
        while j < len(ks) and ks[j] == k:
            record()
            j += 1
        if uniforms is not None:
            u = uniforms[k]
        else:
            if k % chunk == 0:
                block = torch.rand(
                    min(chunk, K - k), runs, 4, generator=gen, device=device, dtype=dtype
                )
            u = block[k % chunk]
        pi = torch.softmax(theta, -1)
        P_pi = torch.einsum("rsa,sat->rst", pi, P)
        d = torch.linalg.solve(eye - g * P_pi.transpose(1, 2), rhs).squeeze(-1).clamp_min(0.0)
        s = cat(d, u[:, 0])
        pi_s = pi[r_idx, s]
        a = cat(pi_s, u[:, 1])
        s1 = cat(P[s, a], u[:, 2])
        a1 = cat(pi[r_idx, s1], u[:, 3])
        q_s = Q[r_idx, s]
        q_sa = q_s[r_idx, a]
        adv = q_sa - (pi_s * q_s).sum(-1)
        score = -pi_s
        score[r_idx, a] += 1.0
        theta[r_idx, s] += etas[k] * score * adv.unsqueeze(-1)
        td = Rw[s, a] + g * Q[r_idx, s1, a1] - q_sa
        Q[r_idx, s, a] += betas[k] * td
    while j < len(ks):
        record()
        j += 1
    return ACHistory(
        k=ks.astype(float),
        samples=ks.astype(float),
        gaps=np.stack(rec_gap, 1),
        critic_errors=np.stack(rec_err, 1),
        optimal_action_prob=np.stack(rec_p, 0),
        theta=theta.cpu().numpy(),
        Q=Q.cpu().numpy(),
        J_star=J_star,
        config=dict(actor=actor, critic=critic, runs=runs, seed=seed, sampler="occupancy", K=K),
    )


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
    K = check_int("K", K, 1, 10**8)
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
    J_star, a_star = _optimum(mdp)
    ks = _eval_points(K, eval_points)
    gaps, norms, p_opt = [], [], []
    j = 0
    for k in range(K + 1):
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)
        grad = _gradient(mdp, pi)  # eq. (PG)
        while j < len(ks) and ks[j] == k:
            V, _ = _evaluate(mdp, pi)
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
    samples = check_array("samples", samples, ndim=1)
    gap = check_array("gap", gap, shape=(samples.size,))
    lo, hi = (1.0, np.inf) if window is None else window
    keep = (samples >= lo) & (samples <= hi) & (gap > 0)
    if keep.sum() < 2:
        raise ValueError(f"window {window} keeps fewer than 2 points with a positive gap")
    slope, _ = np.polyfit(np.log(samples[keep]), np.log(gap[keep]), 1)
    return float(slope)


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
