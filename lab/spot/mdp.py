"""Tabular MDPs, exact policy evaluation and the two benchmark families of the chapter.

See: book/spot/01-tree-policies.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_instance, check_int, check_range

__all__ = [
    "TabularMDP",
    "frozen_lake",
    "sysadmin",
    "value_iteration",
    "evaluate",
    "occupancy",
    "state_weights",
    "LAKE_MAPS",
    "LAKE_ACTIONS",
]

#: gymnasium's FrozenLake maps (S start, F frozen, H hole, G goal).
LAKE_MAPS = {
    "4x4": ["SFFF", "FHFH", "FFFH", "HFFG"],
    "8x8": [
        "SFFFFFFF",
        "FFFFFFFF",
        "FFFHFFFF",
        "FFFFFHFF",
        "FFFHFFFF",
        "FHHFFFHF",
        "FHFFHFHF",
        "FFFHFFFG",
    ],
}
#: gymnasium's action order: 0 left, 1 down, 2 right, 3 up.
LAKE_ACTIONS = ("left", "down", "right", "up")
_MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))


@dataclass
class TabularMDP:
    """A finite MDP with a feature vector per state (what a tree policy reads).

    Parameters
    ----------
    P : array (n, m, n)
        ``P[s, a, s']``: transition probabilities, each ``P[s, a]`` sums to 1.
    R : array (n, m)
        Expected reward ``R[s, a]`` of playing ``a`` in ``s``.
    X : array (n, F)
        Features of each state.
    p0 : array (n,)
        Initial distribution.
    gamma : float
        Discount factor in ``(0, 1)``.
    feature_names, action_names : list of str, optional
        Labels used by ``Tree.to_text`` and the figures.
    layout : array (n, 2) of int, optional
        Grid cell (row, column) of each state, for drawing.
    cell_kind : list of str, optional
        One letter per state (``S``, ``F``, ``H``, ``G``) for drawing a lake.

    See: book/spot/01-tree-policies.ipynb
    """

    P: np.ndarray
    R: np.ndarray
    X: np.ndarray
    p0: np.ndarray
    gamma: float
    feature_names: list[str] | None = None
    action_names: list[str] | None = None
    layout: np.ndarray | None = None
    cell_kind: list[str] | None = None
    name: str = "mdp"
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]

    def validate(self) -> TabularMDP:
        """Check shapes, row-stochastic ``P``, ``0 < gamma < 1``; raise ``ValueError``."""
        self.P = check_array("P", self.P, ndim=3, min_size=1)
        n, m, n2 = self.P.shape
        if n2 != n:
            raise ValueError(f"P must have shape (n, m, n) (got {self.P.shape})")
        if np.any(self.P < -1e-12):
            raise ValueError("P must be non-negative (got a negative probability)")
        err = np.abs(self.P.sum(axis=2) - 1.0).max()
        if err > 1e-8:
            raise ValueError(f"every row P[s, a] must sum to 1 (max deviation {err:.2e})")
        self.R = check_array("R", self.R, shape=(n, m))
        self.X = check_array("X", self.X, ndim=2)
        if self.X.shape[0] != n:
            raise ValueError(f"X must have one row per state: shape ({n}, F) (got {self.X.shape})")
        self.p0 = check_array("p0", self.p0, shape=(n,))
        if np.any(self.p0 < 0) or abs(self.p0.sum() - 1.0) > 1e-8:
            raise ValueError(f"p0 must be a probability vector (sum {self.p0.sum():.6g})")
        self.gamma = check_range(
            "gamma", self.gamma, 0.0, 1.0, low_inclusive=False, high_inclusive=False
        )
        if self.feature_names is None:
            self.feature_names = [f"x{j}" for j in range(self.X.shape[1])]
        if self.action_names is None:
            self.action_names = [f"a{a}" for a in range(m)]
        return self


def check_mdp(mdp: Any) -> TabularMDP:
    """``mdp`` itself if it is a :class:`TabularMDP`, else a ``TypeError`` naming the argument."""
    check_instance("mdp", mdp, TabularMDP)
    return mdp


def frozen_lake(
    desc: str | list[str] | None = None, slip: float = 1 / 3, gamma: float = 0.99
) -> TabularMDP:
    """gymnasium's FrozenLake as a tabular MDP with (row, col) features.

    Parameters
    ----------
    desc : ``"4x4"``, ``"8x8"`` or a list of row strings, optional
        The map (default ``"4x4"``); letters ``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal.
    slip : float in ``[0, 0.5]``
        Probability of each of the two perpendicular moves; the intended move has
        ``1 - 2 slip``. ``1/3`` is gymnasium's ``is_slippery=True``, ``0`` the deterministic lake.
    gamma : float
        Discount factor.

    Reward 1 on entering the goal; holes and the goal are absorbing (reward 0 afterwards).

    See: book/spot/01-tree-policies.ipynb
    """
    if desc is None:
        desc = "4x4"
    if isinstance(desc, str):
        check_choice("desc", desc, list(LAKE_MAPS))
        rows = LAKE_MAPS[desc]
    else:
        rows = [str(r) for r in desc]
        if not rows or len({len(r) for r in rows}) != 1 or set("".join(rows)) - set("SFHG"):
            raise ValueError("desc must be equal-length rows over the letters S, F, H, G")
    slip = check_range("slip", slip, 0.0, 0.5)
    nr, nc = len(rows), len(rows[0])
    n = nr * nc
    kind = [c for r in rows for c in r]
    P = np.zeros((n, 4, n))
    R = np.zeros((n, 4))
    for s in range(n):
        r, c = divmod(s, nc)
        if kind[s] in "HG":  # absorbing
            P[s, :, s] = 1.0
            continue
        for a in range(4):
            for b, prob in (((a - 1) % 4, slip), (a, 1 - 2 * slip), ((a + 1) % 4, slip)):
                if prob == 0:
                    continue
                dr, dc = _MOVES[b]
                r2, c2 = min(max(r + dr, 0), nr - 1), min(max(c + dc, 0), nc - 1)
                s2 = r2 * nc + c2
                P[s, a, s2] += prob
                R[s, a] += prob * (kind[s2] == "G")  # R[s,a] = sum_s' P r(s,a,s')
    p0 = np.array([k == "S" for k in kind], dtype=float)
    layout = np.array([divmod(s, nc) for s in range(n)])
    return TabularMDP(
        P,
        R,
        layout.astype(float),
        p0 / p0.sum(),
        gamma,
        feature_names=["row", "col"],
        action_names=list(LAKE_ACTIONS),
        layout=layout,
        cell_kind=kind,
        name=f"frozen lake {nr}x{nc}" + ("" if slip > 0 else " (not slippery)"),
        meta={"slip": slip, "desc": rows},
    )


def sysadmin(n_machines: int = 6, gamma: float = 0.99) -> TabularMDP:
    """Simplified system-administrator MDP on a ring of machines (the spec's variant).

    States are the up/down bits of ``n_machines`` machines (features = the bits, bit ``i`` of
    the state index is machine ``i``); actions ``0 .. n-1`` reboot machine ``i``, action ``n``
    does nothing. Machines evolve independently given the state: a rebooted machine is up
    next step; an up machine stays up with probability ``0.95 (0.9 if its left neighbour is
    up else 0.6)``; a down machine comes back with probability 0.05. Reward: number of
    machines up in the current state, minus 0.5 when rebooting. Start: all up.

    See: book/spot/03-spot-loop.ipynb
    """
    k = check_int("n_machines", n_machines, 2, 12)
    n, m = 2**k, k + 1
    bits = (np.arange(n)[:, None] >> np.arange(k)[None, :]) & 1  # (n, k)
    left = bits[:, (np.arange(k) - 1) % k]
    p_up = np.where(bits == 1, 0.95 * np.where(left == 1, 0.9, 0.6), 0.05)  # (n, k)
    P = np.zeros((n, m, n))
    R = np.zeros((n, m))
    for a in range(m):
        q = p_up.copy()
        if a < k:
            q[:, a] = 1.0
        # P[s, a, s'] = prod_i q_i^{s'_i} (1 - q_i)^{1 - s'_i}
        P[:, a, :] = np.prod(
            np.where(bits[None, :, :] == 1, q[:, None, :], 1 - q[:, None, :]), axis=2
        )
        R[:, a] = bits.sum(1) - (0.5 if a < k else 0.0)
    p0 = np.zeros(n)
    p0[n - 1] = 1.0
    side = 2 ** (k // 2)
    layout = np.stack([np.arange(n) // side, np.arange(n) % side], axis=1)
    return TabularMDP(
        P,
        R,
        bits.astype(float),
        p0,
        gamma,
        feature_names=[f"up{i}" for i in range(k)],
        action_names=[f"reboot {i}" for i in range(k)] + ["wait"],
        layout=layout,
        name=f"sysadmin {k}",
    )


def _policy_actions(mdp: TabularMDP, policy: Any) -> np.ndarray:
    if hasattr(policy, "act"):
        pi = policy.act(mdp.X)
    else:
        pi = check_array("policy", policy, ndim=1, dtype=None)
        if pi.shape != (mdp.n_states,) or not np.issubdtype(pi.dtype, np.integer):
            raise ValueError(
                f"policy must be {mdp.n_states} integer actions or a Tree (got {pi.dtype} "
                f"array of shape {pi.shape})"
            )
    pi = np.asarray(pi, dtype=np.int64)
    if pi.min() < 0 or pi.max() >= mdp.n_actions:
        raise ValueError(
            f"policy actions must lie in [0, {mdp.n_actions - 1}] (got {pi.min()}..{pi.max()})"
        )
    return pi


def evaluate(mdp: TabularMDP, policy: Any) -> tuple[float, np.ndarray]:
    """Exact evaluation of a deterministic policy (an action per state, or a ``Tree``).

    ``V = (I - gamma P_pi)^(-1) R_pi`` by a dense linear solve; ``J = p0 . V``.

    Returns
    -------
    J : float
    V : array (n,)

    See: book/spot/01-tree-policies.ipynb
    """
    mdp = check_mdp(mdp)
    pi = _policy_actions(mdp, policy)
    idx = np.arange(mdp.n_states)
    P_pi, R_pi = mdp.P[idx, pi], mdp.R[idx, pi]
    # V^pi = (I - gamma P_pi)^{-1} R_pi
    V = np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * P_pi, R_pi)
    return float(mdp.p0 @ V), V


def occupancy(mdp: TabularMDP, policy: Any) -> np.ndarray:
    """Discounted state occupancy ``d = (I - gamma P_pi^T)^(-1) p0`` (sums to ``1/(1-gamma)``).

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    pi = _policy_actions(mdp, policy)
    P_pi = mdp.P[np.arange(mdp.n_states), pi]
    return np.linalg.solve(np.eye(mdp.n_states) - mdp.gamma * P_pi.T, mdp.p0)


# ----------------------------------------------------------------------------------------
# Deterministic ties. Symmetric MDPs (the system administrator is a ring: rotating the
# machines maps the MDP to itself) have actions whose values are equal in exact arithmetic,
# e.g. "reboot machine i" and "reboot machine j" in the all-down state. Computed, they differ
# by a few ulps, and the sign of that difference depends on the BLAS/LAPACK kernels (measured:
# 15 of the 64 states of ``sysadmin(6)`` have two actions within 1.7e-13 of each other, and
# AVX-512 and SSE kernels pick different ones; the next smallest gap is 4.8e-2). A plain
# ``argmax`` then lets the CPU choose the optimal policy, hence the weights and every tree of
# the loop. ``first_max`` decides such ties by index instead: the lowest action within a
# tolerance of the maximum, a tolerance larger than the rounding error of the compared values
# and far below any real gap.
# ----------------------------------------------------------------------------------------
def first_max(values: np.ndarray, tol: float) -> np.ndarray:
    """Along the last axis, the lowest index whose entry is within ``tol`` of the maximum.

    The comparison ``values >= max - tol`` counts entries whose computed difference is below
    ``tol`` as tied and breaks the tie by index, so perturbing the entries by much less than
    ``tol`` (the rounding of another CPU's kernels) picks the same index, unless a real gap is
    itself within the perturbation of ``tol``.
    """
    values = np.asarray(values, dtype=float)
    return np.argmax(values >= values.max(-1, keepdims=True) - tol, axis=-1)


def value_tolerance(mdp: TabularMDP) -> float:
    """Tie tolerance for action values ``Q = R + gamma P V`` and policy values ``J = p0 . V``.

    Error analysis (``eps`` = float64 machine epsilon ``2u``, ``n`` states, ``Rmax =
    max |R|``, so ``|V| <= Vmax = Rmax / (1 - gamma)``):

    * one Bellman product ``fl(R + gamma P V)``: ``P[s, a]`` is a probability row, so any
      summation order (any BLAS kernel) errs by at most ``(n + 2) u (Rmax + Vmax)``;
    * value iteration accumulates that error through a ``gamma``-contraction: at most
      ``1 / (1 - gamma)`` times it in ``V``; the exact solve of ``evaluate`` (LU, backward
      stable) errs by ``kappa * O(n u) * Vmax`` with ``kappa(I - gamma P_pi) <= (1 + gamma) /
      (1 - gamma) < 2 / (1 - gamma)``;
    * two computed values are compared, doubling the bound.

    ``tol = 4 n eps (Rmax + Vmax) / (1 - gamma)`` covers these with a factor of about two to
    spare (``sysadmin(6)``: 3.4e-9, against measured ties within 1.7e-13 and a smallest real
    gap of 4.8e-2; the lakes: 5.7e-10).
    """
    r_max = float(np.abs(mdp.R).max())
    v_max = r_max / (1.0 - mdp.gamma)
    eps = float(np.finfo(float).eps)
    return 4.0 * mdp.n_states * eps * (r_max + v_max) / (1.0 - mdp.gamma)


def value_iteration(
    mdp: TabularMDP, tol: float = 1e-10, max_iter: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """Unconstrained optimum: value iteration, then exact policy-iteration polish.

    Returns
    -------
    V : array (n,)
        Optimal values ``V*`` (exact for the returned policy).
    pi : array (n,) of int
        A greedy optimal policy; among actions whose values tie up to round-off, the lowest
        index (the same policy under every CPU's kernels).

    See: book/spot/01-tree-policies.ipynb
    """
    mdp = check_mdp(mdp)
    tol = check_range("tol", tol, 0.0, 1.0, low_inclusive=False)
    max_iter = check_int("max_iter", max_iter, 1)
    V = np.zeros(mdp.n_states)
    for _ in range(max_iter):
        Q = mdp.R + mdp.gamma * mdp.P @ V  # Bellman optimality operator
        V_new = Q.max(1)
        if np.abs(V_new - V).max() < 1e-6:
            V = V_new
            break
        V = V_new
    # greedy actions: ties (within the rounding of Q, ``value_tolerance``) go to the lowest
    # action index, so that every CPU's kernels pick the same optimal policy
    tie = value_tolerance(mdp)
    pi = first_max(mdp.R + mdp.gamma * mdp.P @ V, tie)
    for _ in range(100):  # policy iteration polish: exact V for the greedy policy
        _, V = evaluate(mdp, pi)
        Q = mdp.R + mdp.gamma * mdp.P @ V
        better = Q.max(1) > Q[np.arange(mdp.n_states), pi] + max(tol, tie)
        if not better.any():
            break
        pi = np.where(better, first_max(Q, tie), pi)
    return V, pi


def state_weights(
    mdp: TabularMDP,
    kind: str,
    policy: Any = None,
    eps: float = 1e-3,
    optimal_policy: np.ndarray | None = None,
) -> np.ndarray:
    """State weights ``w`` of the SPOT-style improvement step (reconstructed), summing to 1.

    ``"optimal"``: ``d*/|d*|_1 + eps/n`` (occupancy of the unconstrained optimum);
    ``"occupancy"``: the same for ``policy``; ``"mix"``: their average; ``"uniform"``: ``1/n``.

    See: book/spot/03-spot-loop.ipynb
    """
    mdp = check_mdp(mdp)
    check_choice("kind", kind, ["optimal", "occupancy", "mix", "uniform"])
    eps = check_range("eps", eps, 0.0, 1.0)
    n = mdp.n_states

    def occ(pi):
        d = occupancy(mdp, pi)
        w = d / d.sum() + eps / n
        return w / w.sum()

    if kind == "uniform":
        return np.full(n, 1.0 / n)
    if kind in ("optimal", "mix"):
        pi_star = optimal_policy if optimal_policy is not None else value_iteration(mdp)[1]
        w_opt = occ(pi_star)
        if kind == "optimal":
            return w_opt
    if policy is None:
        raise ValueError(f"kind={kind!r} needs the current policy (got policy=None)")
    w_cur = occ(policy)
    return w_cur if kind == "occupancy" else 0.5 * (w_opt + w_cur)
