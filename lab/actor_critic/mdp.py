"""The paper's objects: a finite discounted MDP, the softmax policy and the exact quantities
(values, occupancy, the policy gradient, the critic's tracking error), all by linear solves.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.core.memo import memo

__all__ = [
    "TabularMDP",
    "random_mdp",
    "from_gymnasium",
    "softmax_policy",
    "policy_evaluation",
    "optimal_values",
    "expected_return",
    "occupancy",
    "exact_policy_gradient",
    "critic_error",
]


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

        try:
            env = gymnasium.make(env, **make_kwargs)
        except gymnasium.error.Error as exc:
            raise ValueError(f"env must name a gymnasium environment (got {env!r}): {exc}") from exc
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


def evaluate_pi(mdp: TabularMDP, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched policy evaluation without validation: pi (..., S, A) -> V (..., S), Q (..., S, A)."""
    S = mdp.n_states
    P_pi = np.einsum("...sa,sat->...st", pi, mdp.P)  # P_pi(s, t) = sum_a pi(a|s) P(t|s, a)
    r_pi = np.einsum("...sa,sa->...s", pi, mdp.R)  # r_pi(s) = sum_a pi(a|s) r(s, a)
    # Bellman: V = r_pi + gamma P_pi V  <=>  (I - gamma P_pi) V = r_pi
    V = np.linalg.solve(np.eye(S) - mdp.gamma * P_pi, r_pi[..., None])[..., 0]
    Q = mdp.R + mdp.gamma * np.einsum("sat,...t->...sa", mdp.P, V)  # Q = r + gamma P V
    return V, Q


def occupancy_pi(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
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
    return evaluate_pi(mdp, pi)


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
    return occupancy_pi(mdp, pi)


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
    V, Q = evaluate_pi(mdp, policy)  # exact value of the greedy policy
    return V, Q, policy


@memo(maxsize=64)
def optimum(mdp: TabularMDP) -> tuple[float, np.ndarray]:
    V, _, policy = optimal_values(mdp)
    return float(V @ mdp.rho), policy.argmax(1)


def exact_policy_gradient(mdp: TabularMDP, theta: np.ndarray) -> np.ndarray:
    """``dJ/dtheta[s, a] = d(s) pi(a|s) A(s, a) / (1 - gamma)`` for the softmax policy.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    theta = check_array("theta", theta, ndim=(2, 3))
    pi = _check_policy(mdp, softmax_policy(theta))
    return gradient_pi(mdp, pi)


def gradient_pi(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    V, Q = evaluate_pi(mdp, pi)
    d = occupancy_pi(mdp, pi)
    # eq. (ac-pg): gradient = d(s) pi(a|s) (Q(s, a) - V(s)) / (1 - gamma)
    return d[..., None] * pi * (Q - V[..., None]) / (1.0 - mdp.gamma)


def critic_error(mdp: TabularMDP, pi: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Critic tracking error ``sqrt(sum_{s,a} d^pi(s) pi(a|s) (Q(s,a) - Q^pi(s,a))^2)``.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    pi = _check_policy(mdp, pi)
    Q = check_array("Q", Q, shape=pi.shape)
    _, Q_pi = evaluate_pi(mdp, pi)
    d = occupancy_pi(mdp, pi)
    return np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(-2, -1)))
