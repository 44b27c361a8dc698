r"""
# ACE: adaptive constrained equivariance

Manolache, Chamon, Niepert. *Learning (Approximately) Equivariant Networks via Constrained
Optimization.* NeurIPS 2025 (oral). [arXiv:2505.13631](https://arxiv.org/abs/2505.13631)

**What is reconstructed.** The update equations, the Lagrangians and the statements of
Theorems 4.1/4.2 come from a detailed summary of the paper cross-checked against the
official code (`andreimano/ACE`), not from the full text. The SO(2) vector-field toy, its
data and every number in the chapter are ours.

## Homotopy model

Each layer mixes an equivariant and an unconstrained branch,

$$f^i_{\theta,\gamma}(x) = f^{eq,i}_\theta(x) + \gamma_i f^{neq,i}_\theta(x),$$

so that $\gamma = 0$ is an exactly equivariant network. Training starts at $\gamma = 1$.

## Algorithm 1 (equality constraints, fully symmetric data)

$\min_{\theta,\gamma} J_0(\theta,\gamma)$ s.t. $\gamma_i = 0$. Lagrangian
$J_0 + \sum_i \lambda_i\gamma_i$ (optionally $+\,c\,\gamma_i^2$, the augmented term),
simultaneous gradient descent-ascent:

$$\theta \leftarrow \theta - \eta_p\nabla_\theta J_0,\quad
\gamma_i \leftarrow \gamma_i - \eta_p(\partial_{\gamma_i}J_0 + \lambda_i + 2c\gamma_i),\quad
\lambda_i \leftarrow \lambda_i + \eta_d\gamma_i .$$

## Algorithm 2 (resilient constraints, partially symmetric data)

$\min_{\theta,\gamma,u} J_0 + \tfrac\rho2\lVert u\rVert^2$ s.t. $|\gamma_i| \le u_i$,
$\lambda_i \leftarrow [\lambda_i + \eta_d(|\gamma_i| - u_i)]_+$; at the optimum
$u_i^* = \lambda_i^*/\rho$.

## Theorems (as stated in the summary)

With $\bar\gamma = \max_i|\gamma_i|$, $M$ a Lipschitz bound of the layers, $B$ a bound of
the non-equivariant branches:

* 4.1: $\lVert f_{\theta,\gamma}(x) - f_{\theta,0}(x)\rVert \le
  [\sum_{k<L}(1+\bar\gamma)^k]\,\bar\gamma B M^{L-1}\lVert x\rVert$;
* 4.2: $\lVert\rho_Y(g)f(x) - f(\rho_X(g)x)\rVert \le 2\bar\gamma(M + C\bar\gamma)^{L-1}LB^2\lVert x\rVert$.

## Deviations

* The dual step uses the slack measured *before* the primal step (simultaneous GDA, as
  Cooper's ``SimultaneousOptimizer``). The official loop does the same: on the parity fixture
  (``lab/core/official/ace_official.json``) our equality-mode coefficients and multipliers
  equal the authors' bit for bit, with Adam or SGD and with or without the augmented term.
* The resilient cost is $\tfrac\rho2\lVert u\rVert^2$ and the multipliers ascend on
  $|\gamma_i| - u_i$ (the paper's form). The official loop prices $\rho\lVert u\rVert^2$,
  also subtracts $u_i(|\gamma_i| - u_i)$ in the primal loss and feeds each multiplier the
  gradient $-(|\gamma_i| - 2u_i)$: its resilient trajectories differ from ours (the fixture).
* Equality ACE on the toy is trained for at most ``SYMMETRIC_MAX_STEPS`` steps before it is
  truncated on symmetric data (``lab/ace/data/converged.json``), the sweep's runs for 600; the
  official code trains far longer and reports the truncated model.

## Files

* `reference.py`: numpy references (float64): :func:`dual_step`, :func:`scalar_gda` and
  its :func:`gda_spectral_radius`, the bounds of Theorems 4.1/4.2 (:func:`truncation_bound`,
  :func:`violation_bound`);
* `fast.py`: the batched equivariance check :func:`equivariance_error` (every sampled group
  element in one forward pass);
* `layer.py`: :class:`HomotopyLayer` and :func:`homotopy`; `optim.py`: the primal-dual engine
  :class:`ACE` (CPU or CUDA, follows its model's device);
* `models.py`: the SO(2) toy (vector-neuron layers, MLP branches, the swirl data);
* `settings.py`: :class:`ToySettings`, one training run's settings, validated once, and
  :func:`sweep_settings` (those of the stored runs);
* `experiments.py`: training (:func:`train_toy`), the gaps behind the theorems, the held-out
  slope in :math:`\bar\gamma`, robustness to input noise, the scalar GDA's dynamics;
* `stored_runs.py`: the stored runs notebook 2 reads: the sweep (`lab artifacts build ace/sweep`
  rebuilds `lab/ace/data/sweep.json`) and the runs longer than a notebook's budget (symmetric
  data until the constraint is met, robustness over seeds; `lab artifacts build ace/converged`
  rebuilds `lab/ace/data/converged.json`);
* `official.py`: :func:`official_parity`, our engine replayed on the official-code fixture;
* `figures.py`: the explorable figures (they draw results; they run nothing).

See: book/ace/01-homotopy-and-duals.ipynb, book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
