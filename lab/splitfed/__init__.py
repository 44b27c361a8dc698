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

* (4) client $m$: $h = h(x_c)$, $h^\pm = h(x_c \pm \lambda u_c)$, sent with the labels;
* (5) server, $i = 0..\tau-1$, on the **clean** $h$:
  $x_{s,m}^{i+1} = x_{s,m}^{i} - \eta_s \frac{F(x_{s,m}^i + \lambda u_s^i; h) - F(x_{s,m}^i - \lambda u_s^i; h)}{2\lambda} u_s^i$;
* (6) $\delta_c = F(x_{s,m}^{\tau}; h^+) - F(x_{s,m}^{\tau}; h^-)$ with the **updated** server;
* (6) client step: $x_{c,m} = x_c - \eta_c \frac{\delta_c}{2\lambda} u_c$;
* (7) $x_c \leftarrow x_c + \eta_g \sum_m w_m (x_{c,m} - x_c)$, the same for $x_s$ with the replicas
  $x_{s,m}^\tau$.

Theory (structure only): rate $O(\sqrt{d/(\tau T)})$ for one client (Corollary 4.2) and
$O(\sqrt{d/(\tau T M)})$ with $\eta_g = \sqrt{\tau M}$ (Corollary 4.4); with
$\tau = t_\text{straggler}/t_\text{server}$ the wall-clock time stops depending on the straggler.

## Deviations from the paper (and what is reconstructed)

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
* **Server step coupled to tau as the theory couples it.** Each of the ``tau`` server steps
  takes ``eta_s / sqrt(tau)`` (``MUSplitFedConfig(coupling="sqrt")``, the default), the
  coupling ``eta ∝ tau^(-1/2)`` of Corollaries 4.2 (``eta <= 1/sqrt(d tau T)``) and 4.4
  (``eta <= 1/(L tau sqrt(dT))`` with ``eta_g = sqrt(tau M)``); ``eta_s`` is vanilla's
  (``tau = 1``) step. The paper's experiments (Table 6) use one ``eta_s`` for every
  ``tau <= 4`` (``coupling="fixed"``), which with a large or adaptive ``tau`` diverges after a
  few hundred rounds here. The client step ``eta_c`` stays fixed (Theorem 4.1 writes
  ``eta_c = tau eta``, which would grow it as ``sqrt(tau)``).
* **The client holds most of the parameters.** The chapter's split (cut after block 1 of the
  64-32-32-10 MLP: ``d_c = 2080``, ``d_s = 1386``) is far from Corollary 4.2's
  ``d_c = sqrt(d)/tau`` (about ``59/tau``); the client's zeroth-order block gets no speed-up
  from ``tau``.
* **Digits with small MLPs** stand in for AlexNet on CIFAR-10/100, CINIC-10 and Fashion-MNIST
  and OPT-1.3B on SST-2 (no downloads, a CPU budget): the claims on those tables and figures
  are at most qualitative.
* Client memory (:func:`client_memory`) is measured on our digits MLP, not OPT-1.3B.

## File map

| file | what it holds |
|---|---|
| ``hyperparams.py`` | ``MUSplitFedConfig``, the hyper-parameters (with the step coupling ``steps(tau)``) |
| ``history.py`` | ``History``, the record of a run, and ``round_bytes``, what a round sends |
| ``draws.py`` | the seeded draws of a round: participants, batches, directions ``u_c``, ``u_s`` |
| ``stragglers.py`` | ``StragglerModel`` (the simulated clock), ``choose_tau`` and the adaptive schedule |
| ``models.py`` | ``make_mlp``, ``split_model``, ``load_digits_clients``, ``evaluator``, the loss, flat parameters |
| ``zo.py`` | the two-point sphere estimator: ``sphere_direction``, ``spsa``, ``spsa_error`` |
| ``reference.py`` | :func:`simulate`, the reference loop, one helper per equation (4-7) |
| ``fast.py`` | :func:`lab.splitfed.fast.simulate` (the same name as the reference), batched over clients and perturbations (``vmap`` / ``bmm``, CPU or CUDA) |
| ``ranks.py`` | the gloo engine's two roles: the client loop and the split server (rank 0) |
| ``dist.py`` | the ``torch.distributed`` (gloo) engine: ``GlooSettings``, ``launch_local``, ``run_rank`` |
| ``memory.py`` | ``client_memory``: the peak memory of a zeroth- or first-order client update |
| ``experiments.py`` | the drivers on settings (``DigitsRun``, ``StragglerStudy``), ``rounds_to_target``, ``retime``, ``fedavg_first_order`` |
| ``claims.py`` | ``CLAIMS``: the chapter's claims, registered before the notebooks measure them |
| ``evidence.py`` | what each claim records (value, card text, measured rival, diagnosis) |
| ``figures.py`` | results to figures |

See: book/splitfed/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
