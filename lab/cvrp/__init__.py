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

* (1) Features (capacity-normalised, the input that lets a model see tightness):
  customers ``(x, y, q_i / C)``, depot ``(x, y)``; decoder context
  ``[h_last, load / C]``.
* (2) Masking: a node is infeasible if already served or if ``q_i > load``; the depot is
  masked right after a depot visit unless every customer is served.
* (3) POMO: ``n`` rollouts per instance, rollout ``p`` forced to start at customer ``p``;
  REINFORCE with the shared baseline,
  ``grad = mean_p (L_p - mean_p' L_p') grad log p(tau_p)``.
* (4) VCT (varied capacity training): each training instance draws ``C ~ U{10..200}``.
* (5) MEM (multi-expert module): after the shared encoder layers, ``E`` stacks of transformer
  layers (the experts), then ONE shared decoder, as the official ``SINGLEModel.py`` does;
  instance with capacity ``C`` goes through expert ``k`` with ``e_k < C <= e_{k+1}`` (hard
  routing, no gate; ``route_to_expert``); sub-batches are scattered back in order
  (``mixture_forward``).
* (6) Decoder and inference: query from ``[h_last, load / C]``, one multi-head glimpse
  ``g``, pointer logits ``10 tanh(h_j . g / sqrt(d))`` over the feasible nodes; greedy rollouts from every start customer, keep the best; optional ``x8``
  symmetry augmentation.

## Deviations from the paper

* Backbone: the paper's CVRP model is LEHD (heavy decoder, supervised by HGS labels,
  ``n = 100``, ``C in [10, 500]``, ``d = 192``); here a tiny POMO (REINFORCE with the
  shared baseline, ``n = 20``, ``C in [10, 200]``, ``d = 64``, 2 encoder layers).
* Experts: the official expert is a stack of 3 transformer layers after the shared layers
  (``SINGLEModel.py``; in the LEHD model, 3 decoder layers + a linear head); here each expert
  is ONE transformer layer after the 2 shared encoder layers (3 experts, about 183k parameters
  with the shared decoder, against 84k for the single models), routing edges at the thirds of
  ``[10, 200]`` (73, 137).
* LayerNorm replaces POMO's instance norm.
* Tightening factor: the paper trains its fixed model at C = 50 with n = 100 (about ten
  customers per route) and tests at C = 10 (about two), a 5x tightening; at n = 20 the
  fixed C = 50 model (mean demand 5: about 50 / 5 = 10 customers per route, two routes) is
  the like-for-like model; the fixed C = 30 models (3x) are kept as a secondary measurement.
* Reference solver: PyVRP (HGS) with a short fixed time budget per instance, not HGS run to
  convergence; gaps are to that reference.
* Training budget: 5,000 steps of 32 instances per checkpoint on one CPU core (the paper:
  1M instances x 40 epochs on a GPU); three training seeds for the fixed C = 30, VCT and
  VCT + MEM models, one seed for the fixed C = 10, C = 50 and C = 200 models. The paper's
  fixed model is trained at C = 50 and tested up to C = 500; ours are trained at
  C = 10 / 30 / 50 / 200 and tested on ``C in {10..200}``.
* CVRPTW (time-window tightness) is not implemented.

## Code map

* ``problems.py``: instances (``CVRPBatch``, ``generate_cvrp``, ``augment8``,
  ``sample_capacity``).
* ``model.py``: ``TinyPOMO`` (an ``nn.Module``), its parts ``EncoderLayer``, ``MHA`` and
  ``PomoDecoder`` (whose ``forward`` is the batched rollout), ``node_features``,
  ``route_to_expert``, ``mixture_forward``.
* ``reference.py``: the lesson's equations in numpy, one function each (``tour_length`` and
  ``route_feasible`` for eq. (1), ``gate`` eq. (3), ``mixture`` eq. (2),
  ``normalised_features``, ``feasible_mask``, ``vct_capacities``, ``pomo_loss``,
  ``optimality_gap``) and ``greedy_rollout``, a float64 replay of one greedy rollout of a
  ``TinyPOMO`` (``fast.greedy_rollout`` is its batched torch path).
* ``fast.py``: the torch paths (CPU or CUDA) built on the model: ``train_pomo``, ``evaluate``,
  ``decode_routes``, ``actions_to_routes``.
* ``settings.py``: ``GapSettings``, ``TrainSettings``, ``ExpertSettings`` (validated once).
* ``solvers.py``: ``solve_pyvrp`` and ``reference_costs`` (the peer).
* ``reference_cache.py``: the stored PyVRP lengths of the test sets (``reference_lengths``).
* ``experiments.py``: the drivers (computed and cached here): ``gap_table``,
  ``training_table``, ``expert_lengths``, ``expert_table``, ``expert_sweep``, ``solve_all``,
  ``shipped_models``.
* ``comparisons.py``: the paired intervals the verdicts read (``seed_gaps``,
  ``seed_comparison``, ``instance_comparison``).
* ``parity.py``: ``official_parity``, our model on the official fixture
  (``lab/core/official/cvrp_official.json``).
* ``store.py`` / ``train.py``: the shipped checkpoints (``load_checkpoint(name, seed)``) and
  the script that made them (``lab artifacts build cvrp/checkpoint -- --name ... --seed ...``).
* ``figures.py``: plotly figure builders (they only draw).
"""

from __future__ import annotations

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
