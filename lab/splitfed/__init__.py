r"""
# MU-SplitFed: straggler-resilient split federated learning by unbalanced updates

Liang, Zhang, Chen, Li, Li, Yang. *Towards Straggler-Resilient Split Federated Learning: An
Unbalanced Update Approach.* NeurIPS 2025. [arXiv:2510.21155](https://arxiv.org/abs/2510.21155)

## Problem

A model $x = (x_c, x_s)$ is split after block $L_c$: each of $M$ clients runs the first
blocks $x_c \in \mathbb{R}^{d_c}$ on its private data and sends the cut-layer embedding
$h = h(x_c; \xi)$; a split server runs the rest, $x_s \in \mathbb{R}^{d_s}$, and computes the
loss $F(x_s; h, y)$. Objective $f(x) = \sum_m w_m f_m(x)$, $w_m = 1/M$. Every round waits for the
slowest client (the straggler). MU-SplitFed lets the server take $\tau$ zeroth-order steps on
its half per client round, while it waits, and both sides use forward-only (SPSA) estimates.

## Algorithm 1, one round $t$ (restated in our notation)

With $u$ uniform on the sphere of radius $\sqrt{d'}$ and perturbation $\lambda$:

* (C) client $m$: $h = h(x_c)$, $h^\pm = h(x_c \pm \lambda u_c)$, sent with the labels;
* (S) server, $i = 0..\tau-1$, on the **clean** $h$:
  $x_{s,m}^{i+1} = x_{s,m}^{i} - \eta_s \frac{F(x_{s,m}^i + \lambda u_s^i; h) - F(x_{s,m}^i - \lambda u_s^i; h)}{2\lambda} u_s^i$;
* (D) $\delta_c = F(x_{s,m}^{\tau}; h^+) - F(x_{s,m}^{\tau}; h^-)$ with the **updated** server;
* (U) client: $x_{c,m} = x_c - \eta_c \frac{\delta_c}{2\lambda} u_c$;
* (A) $x_c \leftarrow x_c + \eta_g \sum_m w_m (x_{c,m} - x_c)$, the same for $x_s$ with the replicas
  $x_{s,m}^\tau$.

Theory (structure only): rate $O(\sqrt{d/(\tau T)})$ for one client (Corollary 4.2) and
$O(\sqrt{d/(\tau T M)})$ with $\eta_g = \sqrt{\tau M}$ (Corollary 4.4); with
$\tau = t_\text{straggler}/t_\text{server}$ the wall-clock time stops depending on the straggler.

## What is reconstructed, and deviations

* The estimators and the aggregation are restated from the paper's text (the displayed
  formulas and the constants of the bounds are not reproduced). Scoring $h^\pm$ with the
  server *after* its $\tau$ steps follows an independent re-implementation.
* Directions are regenerated from seeds ``(seed, round, client)`` (client) and
  ``(seed, round, client)`` drawing $\tau$ rows (server), so that the in-process reference, the
  batched fast path and the gloo processes produce the same numbers.
* The simulated clock (:class:`StragglerModel`) and the adaptive rule
  ``tau = clip(round(wait / (P t_server)), 1, tau_max)``, with ``wait`` the EMA of the gap
  between the first and last arrival, are **ours**: the paper states the rule for one client.
* The book's runs use $\eta_s = 0.02$, $\eta_c = 0.01$, $\eta_g = 1$ (plain averaging) instead
  of Table 6's 0.01, 0.005, 0.3: with Table 6's values the digits MLP barely moves in a CPU
  budget of rounds; ``MUSplitFedConfig`` keeps Table 6's values as defaults.
* Reference kernel: :func:`simulate` (torch, client by client, float32 or float64); fast path:
  :func:`simulate_vectorized` (all participants and perturbations batched, ``vmap`` or a
  batched-matmul MLP, CPU or CUDA); distributed engine: :func:`launch_local` (gloo).

See: book/splitfed/index.md
"""

from .algorithm import (
    History,
    MUSplitFedConfig,
    StragglerModel,
    choose_tau,
    evaluator,
    load_digits_clients,
    make_mlp,
    retime,
    rounds_to_target,
    simulate,
    simulate_vectorized,
    split_model,
)
from .dist import free_port, launch_local, run_rank
from .zo import sphere_direction, spsa, spsa_error

__all__ = [
    "MUSplitFedConfig",
    "History",
    "StragglerModel",
    "choose_tau",
    "split_model",
    "make_mlp",
    "load_digits_clients",
    "evaluator",
    "simulate",
    "simulate_vectorized",
    "rounds_to_target",
    "retime",
    "launch_local",
    "run_rank",
    "free_port",
    "sphere_direction",
    "spsa",
    "spsa_error",
]
