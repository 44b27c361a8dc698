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

## Deviations from the paper

* Backbone: the paper's CVRP model is LEHD (heavy decoder, supervised by HGS labels,
  ``n = 100``, ``C in [10, 500]``, ``d = 192``); here a tiny POMO (REINFORCE with the
  shared baseline, ``n = 20``, ``C in [10, 200]``, ``d = 64``, 2 encoder layers).
* Experts: the paper's expert is 3 decoder layers + a linear head; here each expert is one
  whole POMO decoder (query, glimpse, pointer), routing edges at the thirds of ``[10, 200]``
  (73, 137).
* LayerNorm replaces POMO's instance norm.
* Expert placement: in the official model (``SINGLEModel.py``, ``VRPModel.py`` of
  CIAM-Group/Rethinking_Constraint_Tightness) each expert is a stack of transformer layers
  after the shared layers, with one shared decoder; here the experts are light POMO decoders
  behind one shared encoder, so they cannot re-encode the instance per capacity interval.
* Tightening factor: the fixed model is trained at C = 30 with n = 20 and tested down to
  C = 10, a 3x tightening (about six customers per route at training, two at test); the paper
  trains at C = 50 with n = 100 and tests at C = 10, a 5x tightening (about ten customers per
  route to two).
* Reference solver: PyVRP (HGS) with a short fixed time budget per instance, not HGS run to
  convergence; gaps are to that reference.
* Training budget: 5,000 steps of 32 instances per checkpoint on one CPU core (the paper:
  1M instances x 40 epochs on a GPU); three training seeds for the fixed C = 30, VCT and
  VCT + MEM models, one seed for the fixed C = 10 and C = 200 models. The paper's fixed model
  is trained at C = 50 and tested up to C = 500; ours are trained at C = 10 / 30 / 200 and
  tested on ``C in {10..200}``.
* CVRPTW (time-window tightness) is not implemented.

## Code map

* ``problems.py``: instances (``CVRPBatch``, ``generate_cvrp``, ``augment8``,
  ``sample_capacity``).
* ``model.py``: ``TinyPOMO``, ``node_features``, ``route_to_expert``.
* ``fast.py``: the batched torch path (CPU or CUDA): rollouts, ``train_pomo``, ``evaluate``,
  ``decode_routes``, ``actions_to_routes``.
* ``reference.py``: ``greedy_rollout_ref``, numpy float64 mirror of one greedy rollout.
* ``solvers.py``: ``tour_length``, ``route_feasible`` (numpy), ``solve_pyvrp`` (the peer).
* ``experiments.py``: ``gap_table``, ``seed_gaps``, ``training_table``, ``expert_lengths``,
  ``mixture_forward``.
* ``store.py`` / ``train.py``: the shipped checkpoints (``load_checkpoint(name, seed)``) and
  the script that made them (``python -m lab.cvrp.train --name ... --seed ...``).
* ``figures.py``: plotly figure builders.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["figures"],
    submod_attrs={
        "problems": ["CVRPBatch", "generate_cvrp", "augment8", "sample_capacity"],
        "model": ["TinyPOMO", "node_features", "route_to_expert"],
        "fast": ["train_pomo", "evaluate", "decode_routes", "actions_to_routes"],
        "reference": ["greedy_rollout_ref"],
        "solvers": ["tour_length", "route_feasible", "solve_pyvrp", "reference_costs"],
        "experiments": [
            "CAPACITIES",
            "gap_table",
            "seed_gaps",
            "seed_rule",
            "seed_comparison",
            "instance_comparison",
            "reference_lengths",
            "REFERENCE_SETTINGS",
            "training_table",
            "expert_lengths",
            "mixture_forward",
        ],
        "store": [
            "CHECKPOINTS",
            "TRAIN_STEPS",
            "checkpoint_keys",
            "load_checkpoint",
            "read_checkpoint",
        ],
    },
)
