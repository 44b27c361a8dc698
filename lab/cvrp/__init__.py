r"""Neural CVRP under varying capacity tightness: varied-capacity training and capacity experts.

Fu Luo, Yaoxin Wu, Zhi Zheng, Zhenkun Wang. *Rethinking Neural Combinatorial Optimization for
Vehicle Routing Problems with Different Constraint Tightness Degrees.* NeurIPS 2025.
[arXiv:2505.24627](https://arxiv.org/abs/2505.24627); official code
``CIAM-Group/Rethinking_Constraint_Tightness``.

## Problem

A depot (node 0) and ``n`` customers ``x_i`` in the unit square with integer demands
``q_i in {1..9}``; vehicles of capacity ``C`` leave the depot, serve customers and return;
minimise the total Euclidean length subject to every route's load ``<= C``. The *tightness*
is ``C`` relative to the demands: at ``C = 10`` a vehicle serves about two customers (a
star of short trips); at ``C >= sum q`` one vehicle serves everyone (a travelling salesman
tour).

## The method (POMO backbone; the paper's CVRP backbone is LEHD, reconstructed here as POMO)

* Features (capacity-normalised, the input that lets a model see tightness):
  customers ``(x, y, q_i / C)``, depot ``(x, y)``; decoder context
  ``[h_last, load / C]``.
* Masking: a node is infeasible if already served or if ``q_i > load``; the depot is
  masked right after a depot visit unless every customer is served.
* POMO: ``n`` rollouts per instance, rollout ``p`` forced to start at customer ``p``;
  REINFORCE with the shared baseline,
  ``grad = mean_p (L_p - mean_p' L_p') grad log p(tau_p)``.
* VCT (varied capacity training): each training instance draws ``C ~ U{10..200}``.
* MEM (multi-expert module): ``E`` decoder heads behind a shared encoder; instance with
  capacity ``C`` uses head ``k`` with ``e_k < C <= e_{k+1}`` (hard routing, no gate;
  ``route_to_expert``); sub-batches are scattered back in order.
* Inference: greedy rollouts from every start customer, keep the best; optional ``x8``
  symmetry augmentation.

**Deviations (flagged).** The paper's CVRP model is LEHD (heavy decoder, supervised by HGS
labels, ``n = 100``, ``C in [10, 500]``) with each expert = 3 decoder layers + a linear
head; here the backbone is a tiny POMO (RL, ``n = 20``, ``C in [10, 200]``, ``d = 64``, 2
encoder layers) and each expert is one POMO decoder (query, glimpse, pointer), with routing
edges at the thirds of ``[10, 200]`` (73, 137). LayerNorm replaces POMO's instance norm.
CVRPTW (time-window tightness) is not implemented.

## Code map

* ``model.py``: instances (``generate_cvrp``), ``TinyPOMO``, ``train_pomo``, ``evaluate``,
  ``decode_routes`` (torch fast path, CPU or CUDA).
* ``reference.py``: ``greedy_rollout_ref``, numpy float64 mirror of one greedy rollout.
* ``solvers.py``: ``tour_length``, ``route_feasible`` (numpy), ``solve_pyvrp`` (the peer).
* ``store.py`` / ``train.py``: the shipped checkpoints (``load_checkpoint``) and the script
  that made them (``python -m lab.cvrp.train --name ...``).
"""

from __future__ import annotations

from .experiments import CAPACITIES, expert_lengths, gap_table, mixture_forward
from .model import (
    CVRPBatch,
    TinyPOMO,
    actions_to_routes,
    augment8,
    decode_routes,
    evaluate,
    generate_cvrp,
    node_features,
    route_to_expert,
    sample_capacity,
    train_pomo,
)
from .reference import greedy_rollout_ref
from .solvers import reference_costs, route_feasible, solve_pyvrp, tour_length
from .store import CHECKPOINTS, load_checkpoint, read_checkpoint

__all__ = [
    "CVRPBatch",
    "generate_cvrp",
    "node_features",
    "sample_capacity",
    "TinyPOMO",
    "route_to_expert",
    "mixture_forward",
    "train_pomo",
    "evaluate",
    "decode_routes",
    "actions_to_routes",
    "augment8",
    "greedy_rollout_ref",
    "tour_length",
    "route_feasible",
    "solve_pyvrp",
    "reference_costs",
    "load_checkpoint",
    "read_checkpoint",
    "CHECKPOINTS",
    "CAPACITIES",
    "gap_table",
    "expert_lengths",
]
