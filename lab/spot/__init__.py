r"""SPOT: optimal decision-tree policies for finite MDPs (SPOT-style reconstruction + OMDT MILP).

Xuyuan Xiong, Pedro Chumpitaz-Flores, Kaixun Hua, Cheng Hua. *SPOT: Scalable Policy
Optimization with Trees for Markov Decision Processes.* NeurIPS 2025.
https://arxiv.org/abs/2510.19241

A depth-``D`` tree reads state features, follows threshold tests ``x[j] > theta`` and plays
the action of the leaf it reaches. The goal is ``max_T J(pi_T)`` with
``J(pi) = p0 . V^pi`` and ``V^pi = (I - gamma P_pi)^(-1) R_pi``.

**Exact reference (OMDT, Vos & Verwer 2023)** -- :func:`omdt_milp`: one MILP with occupancy
variables ``y[s, a]``, flow rows ``sum_a y[s,a] - gamma sum_{s',a} P[s',a,s] y[s',a] = p0(s)``,
the tight big-M ``y[s,a] <= z[s,a] / (1 - gamma)`` and binary tree variables (split choice
``u``, leaf action ``c``, routing ``g``, state action ``z``), solved by HiGHS
(``scipy.optimize.milp``) under a time limit.

**SPOT-style decomposition (reconstructed: the paper's code is not public)** --
:func:`spot`: policy iteration whose improvement step

``T_{k+1} = argmax_T sum_s G[s, pi_T(s)]``,  ``G = w_k[:, None] * Q_k``,  ``Q_k = R + gamma P V_k``

is solved to certified optimality by a reduced-space branch-and-bound (:func:`rsbb`) that
branches only on the split choice of nodes on levels ``0 .. D-2``, parses level ``D-1`` nodes
exactly (:func:`depth1_parse`: ``max(leaf(M), max_k [max_a Lsum[k] + max_a Rsum[k]])``) and
bounds a partial tree by sums of per-node/per-state terms (:func:`bound_children`, batched in
torch). The state weights ``w_k`` (``"optimal"`` occupancy of the unconstrained optimum by
default), the warm start from ``Q*`` and the stopping rule are **our reconstruction**, not
read from the paper. Each improvement step is globally optimal; the loop is a heuristic.

See: book/spot/index.md
"""

from .mdp import (
    LAKE_ACTIONS,
    LAKE_MAPS,
    TabularMDP,
    evaluate,
    frozen_lake,
    occupancy,
    state_weights,
    sysadmin,
    value_iteration,
)
from .milp import TreeResult, improvement_milp, omdt_milp, quiet_highs
from .search import (
    WEIGHTINGS,
    RSBBStats,
    SpotResult,
    bound_children,
    depth1_parse,
    exhaustive_tree,
    greedy_tree,
    rsbb,
    spot,
)
from .tree import Tree, candidate_splits, enumerate_trees, split_matrix

__all__ = [
    "TabularMDP",
    "frozen_lake",
    "sysadmin",
    "value_iteration",
    "evaluate",
    "occupancy",
    "state_weights",
    "Tree",
    "candidate_splits",
    "split_matrix",
    "enumerate_trees",
    "TreeResult",
    "omdt_milp",
    "improvement_milp",
    "quiet_highs",
    "depth1_parse",
    "bound_children",
    "rsbb",
    "RSBBStats",
    "spot",
    "SpotResult",
    "greedy_tree",
    "exhaustive_tree",
    "WEIGHTINGS",
    "LAKE_MAPS",
    "LAKE_ACTIONS",
]
