r"""
# SGD and SVRG flows in Wasserstein space, and their Langevin samplers

Mingyang Yi, Bohan Wang. *Continuous-time Riemannian SGD and SVRG Flows on Wasserstein
Probabilistic Space.* NeurIPS 2025. [arXiv:2401.13530](https://arxiv.org/abs/2401.13530)

**Read this first: what is reconstructed.** Only the abstract and a summary of the rates could
be read. The SDEs below are the standard stochastic-modified-equation construction that the
abstract points to (Jordan-Kinderlehrer-Otto 1998; Li, Tai & E 2017; Welling & Teh 2011;
Dubey et al. 2016); the paper's exact definitions, constants and schedules may differ. Every
number in the chapter is measured with this module, not read from the paper.

## Problem

A finite-sum potential $V(x) = \frac1N \sum_{i=1}^N V_i(x)$ on $\mathbb{R}^d$ and its target
$\pi \propto e^{-V}$. Sampling is the minimisation of $F(\mu) = \mathrm{KL}(\mu \,\|\, \pi)$ over
probability measures with the Wasserstein-2 geometry; the Wasserstein gradient of $F$ at $\mu$
is the vector field $\nabla \log(\mu / \pi) = \nabla \log \mu + \nabla V$.

* **GD flow** (Fokker-Planck of Langevin), eq. (1):
  $\partial_t \mu = \nabla\cdot(\mu \nabla V) + \Delta \mu$; particles
  $dX = -\nabla V(X)\,dt + \sqrt2\,dW$; Euler-Maruyama = ULA, eq. (2):
  $X_{k+1} = X_k - h \nabla V(X_k) + \sqrt{2h}\,\xi_k$.
* **SGD flow** (reconstructed), eq. (3): the minibatch gradient
  $g_B(x) = \frac1b \sum_{i\in B} \nabla V_i(x)$ has covariance
  $\Sigma(x) = \mathrm{Cov}_i[\nabla V_i(x)] / b$; matching one step over time $\eta$ gives
  $dX = -\nabla V\,dt + \sqrt2\,dW + \sqrt{\eta}\,\Sigma(X)^{1/2} dB$, i.e.
  $\partial_t \mu = \nabla\cdot(\mu\nabla V) + \Delta\mu + \frac{\eta}{2}\sum_{jl}\partial_j\partial_l(\Sigma_{jl}\mu)$.
  Its discretisation with $h = \eta$ is SGLD, eq. (4):
  $X_{k+1} = X_k - h\, g_{B_k}(X_k) + \sqrt{2h}\,\xi_k$, one minibatch per particle.
* **SVRG flow** (reconstructed), eq. (5): each particle keeps a snapshot $\tilde X$ and
  $\tilde G = \nabla V(\tilde X)$, refreshed every $m$ steps; the direction
  $g(x) = g_B(x) - g_B(\tilde X) + \tilde G$ is unbiased with covariance
  $\mathrm{Cov}_i[\nabla V_i(x) - \nabla V_i(\tilde X)]/b \le L^2 \lVert x - \tilde X\rVert^2 / b$.
  Discretisation: SVRG-Langevin (SVRG-LD), eq. (6):
  $X_{k+1} = X_k - h\, g(X_k) + \sqrt{2h}\,\xi_k$.

Cost model (component-gradient evaluations per particle): ULA $N$ per step, SGLD $b$,
SVRG-LD $2b$ per step plus $N$ at each snapshot refresh.

Rates as the paper states them (reconstructed summary): SGD flow $O(1/\sqrt T)$ in relative
Fisher information (nonconvex), $O(1/T)$ in KL under a log-Sobolev inequality with a decreasing
step; SVRG flow $O(N^{2/3}/\varepsilon)$ gradient complexity (nonconvex) and exponential KL
decay under LSI.

## The chapter's target (exact, chosen by us)

Quadratic components $V_i(x) = \frac12 (x - a_i)^\top A_i (x - a_i)$ with random SPD $A_i$, so
$\pi = \mathcal N(m_*, \bar A^{-1})$ with $\bar A = \frac1N\sum A_i$,
$m_* = \bar A^{-1} \frac1N \sum A_i a_i$ (``.mean``, ``.cov``). Closed forms shipped here:
ULA's stationary covariance $(\bar A - h\bar A^2/2)^{-1}$, SGLD's exact moment recursion and
stationary covariance (a $d^2 \times d^2$ linear solve), and in 1-D with $A_i = 1$,
$\operatorname{Var}(a_i) = s^2$: SGD flow $1 + \eta s^2/(2b)$, SGLD
$(1 + h s^2/(2b)) / (1 - h/2)$.

The numpy kernels are the reference (float64, particles vectorised, one statement per
equation); ``fast.run_sampler`` is the batched torch fast path (CPU or CUDA) and agrees with
the reference to round-off when both are fed the same draws (``draw_noise``).

## Deviations from the paper

* The flows' SDEs are reconstructed (see above): the paper's constants and schedules may differ.
* Targets are ours: quadratic finite sums (exact Gaussian targets) and, for the nonconvex
  Fisher-information rate, a 1-D two-component Gaussian mixture solved by the PDE on a grid
  (the paper's experiments could not be read).

## Files

* ``targets.py``: the finite-sum quadratic targets and the 1-D Gaussian mixture.
* ``reference.py``: the numpy samplers, eqs. (2), (4)-(6), runs and the SGD-flow SDE, eq. (3).
* ``fast.py``: ``run_sampler``, the batched torch path (CPU or CUDA).
* ``flows.py``: the 1-D Fokker-Planck solver of the GD and SGD flows, eqs. (1), (3).
* ``distances.py``: Gaussian KL / W2, POT's empirical W2, KL and Fisher information on a grid.
* ``stationary.py``: closed forms and exact moment recursions on quadratic targets.
* ``settings.py``: the frozen settings of each experiment family, validated once.
* ``experiments.py``: the drivers of the notebooks and widgets, taking a settings object
  (``fisher_rate_1d``, ``flow_1d_data``, ``sgld_variance_sample``, ``equal_budget_window``:
  the seed loop through ``lab.core.sweep``; memoised).
* ``claims.py``: the chapter's claims (``CLAIMS``), registered before the notebooks record
  them: rules, seeds, sizes, rivals and the deviations from the paper.
* ``evidence.py``: what each claim records (value, card text, measured rival or diagnosis),
  built from what a notebook computed, so that it records a claim in one line.
* ``figures.py``: results -> figures (a widget is ``figures.f(experiments.g(settings))``; the
  notebooks' static panels too).

See: book/wflows/01-three-samplers.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
