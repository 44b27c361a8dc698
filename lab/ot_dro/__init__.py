r"""Entropic Wasserstein DRO with a semantically calibrated cost and a refined reference set.

*Bootstrap Your Uncertainty: Adaptive Robust Classification Driven by Optimal-Transport*
("AdaDRO"), NeurIPS 2025 (poster), https://openreview.net/forum?id=NFuoxl5CCc . Authors not
confirmed from a primary source; official code ``h305142/AdaDRO``.

Equations (numbering is this module's, the paper PDF was not available):

* (1) semantic cost ``C_ij = a_x (1 - cos(phi(x_i), phi(x'_j))) + a_y (1 - cos(W_{y_i}, W_{y'_j}))``;
* (2) worst-case plan ``pi_ij = softmax_j((l_j - lam C_ij) / (lam eps))`` (row-stochastic);
* (3) worst-case distribution on the reference set ``Q_j = (1/N) sum_i pi_ij``;
* (4) Sinkhorn-DRO dual value
  ``R = lam eps (1/N) sum_i log((1/M) sum_j exp((l_j - lam C_ij) / (lam eps)))``, grad R = sum_j Q_j grad l_j;
* (5) implied radius ``rho = (1/N) sum_ij pi_ij C_ij``;
* (6) inverse-OT calibration: ``KL(I/N || row-softmax(cos/tau)/N) = InfoNCE`` (semi-relaxed),
  or the balanced Sinkhorn plan (reconstructed option);
* (7) paired filter: keep ``q_j`` iff ``g_jj >= omega mean_l g_ll + (1-omega) max_{i!=j} g_ij``.

Reconstructed (see the chapter's warning): the numbering, the balanced IOT option, the
training loop constants at CPU scale (in-batch InfoNCE instead of a MoCo queue) and the
spurious-feature toy task. Deviation from the official loss: the cost is detached from the
gradient by default (``AdaDROConfig.detach_cost=True``), because otherwise the model can lower
the robust loss by pushing features apart instead of fitting hard candidates.

Every function takes numpy arrays or torch tensors; numpy in gives numpy out (float64), torch in
gives torch out on the input's device (differentiable where it makes sense).

Deviations from the paper:

* the cost is detached from the DRO gradient by default (above), and ``Q`` is held fixed: the
  gradient is the Sinkhorn-DRO one, ``sum_j Q_j grad l_j``. The official ``AdaDROLoss``
  back-propagates through ``Q`` as well (``Q`` depends on the losses and the cost), which
  ``detach_cost=False`` (the gradient of ``R``) does not reproduce either (``official_parity``);
* our default filter is the paired rule of the README (eq. 7, on the semi-relaxed plan); the
  official trainer filters with the unpaired rule (``utils/filtering_o1.py``, ours
  ``rule="unpaired"``, identical on the fixture), and the official paired rule
  (``utils/filtering.py``) compares raw cosines with the source's strongest other candidate;
* phase 1 (semantic calibration) runs ``calib_steps`` steps of IOT + CE before phase 2 in
  ``train_method`` (the code's 10-50 epochs of MoCo become an in-batch InfoNCE warm-up);
* the convergence check (``dro_descent``) runs full-batch gradient descent on the fixed-cost
  Sinkhorn-DRO objective of a linear model with an L2 term (a convex problem), not the paper's
  adaptive nonconvex process; the sample-complexity statement (MLMC, O(eps^-4 log^2(1/eps))) is
  probed only through the O(1/M) bias of the mini-batch objective (``nested_bias``); MLMC is
  not implemented.
* the shift experiments run on a synthetic spurious-feature toy (8 coordinates, a small MLP,
  in-batch negatives), not on the paper's Colored MNIST / CIFAR / Waterbirds benchmarks with a
  ResNet-18 and a MoCo queue.

## Files

| file | what it holds |
|---|---|
| ``reference.py`` | numpy float64, one problem: ``entropic_plan`` (Sinkhorn), ``worst_case_weights`` (eqs. 2-3), ``sinkhorn_dro_objective`` (eq. 4), ``implied_radius`` (eq. 5) |
| ``fast.py`` | batched torch, CPU/CUDA, the same names |
| ``calibration.py`` | the paper's objects: ``semantic_cost`` (eq. 1), ``iot_loss`` (eq. 6), ``refine_reference`` (eq. 7) |
| ``adadro.py`` | ``AdaDROConfig``, ``adadro_step`` (one phase-2 step) |
| ``task.py`` | the spurious-feature task and model of notebook 2: ``make_spurious``, ``flip_spurious``, ``make_model``, ``accuracy`` |
| ``toy.py`` | notebook 1's 2-D toy: ``toy_2d``, ``toy_losses``, ``toy_cost`` |
| ``experiments.py`` | settings (``TrainSettings``, ``CalibrationSettings``) and the drivers: ``train_method``, ``calibrate``, ``shift_sweep``, ``filter_run``, ``shift_curves``, ``toy_plan``, ``lam_curve``, ``dro_descent``, ``nested_bias`` |
| ``official.py`` | ``official_parity``: our kernels replayed on the official-code fixture |
| ``figures.py`` | results to figures (``plan_figure``, ``shift_figure``) |

See: book/ot_dro/01-worst-case-plans.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
