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
bounds a partial tree by sums of per-node/per-state terms (:func:`bound_children`; the
batched torch twin of the same name is in ``fast.py``). The state weights ``w_k``
(``"optimal"`` occupancy of the unconstrained optimum by default), the warm start from ``Q*``
and the stopping rule are **our reconstruction**, not read from the paper. Each improvement step is globally
optimal; the loop is a heuristic.

**Deviations from the paper** (only its abstract and secondary summaries could be read; its
code is not public):

1. The state weights ``w_k`` (occupancy of the unconstrained optimum plus ``eps / n`` by
   default; ``"occupancy"``, ``"mix"``, ``"uniform"``, ``"portfolio"`` as alternatives), the
   warm start from the best tree for ``Q*`` and the stopping rule (a repeated policy) are ours.
2. The branch-and-bound details are ours: branching on the split of the nodes on levels
   ``0 .. D-2``, the exact depth-1 parse of the last level, the state-wise relaxation above
   it, best-first search, duplicate partitions dropped.
3. HiGHS (``scipy.optimize.milp``) stands in for Gurobi in the OMDT MILP, always with a time
   limit; a capped solve is reported with its status and bound.
4. The benchmark MDPs are gymnasium's frozen lake and a simplified system administrator (the
   chapter spec's variant); the paper's PRISM models are not built.
5. ``exhaustive_tree`` (a certificate for depth <= 2), ``greedy_tree`` (CART imitation of
   the optimal policy, VIPER-style) and ``greedy_split_tree`` (the improvement step answered
   top-down, no search) are our baselines, not the paper's; the best-known trees that define
   "the exact approach's quality" at 64 states (``experiments.REFERENCE_TREES``: certified
   optima, else the MILP's incumbent after 32 s in HiGHS) are ours too.

**Files.** ``reference.py`` (numpy kernels: depth-1 parse, bounds), ``fast.py`` (the batched
torch ``bound_children``), ``mdp.py`` (tabular MDPs, exact evaluation, occupancy,
weights), ``tree.py`` (the tree policy and its candidate splits), ``milp.py`` (OMDT and
improvement MILPs), ``search.py`` (``bound_frontier``, ``rsbb`` and the ``spot`` loop),
``baselines.py`` (CART tree, greedy top-down step, exhaustive search), ``experiments.py`` (the
notebooks' settings and drivers), ``figures.py`` (figures drawn from results), ``claims.py`` (the
registered claims) and ``evidence.py`` (their records).

See: book/spot/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
