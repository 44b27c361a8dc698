r"""
# Set smoothness and Clarke hyper-stationarity in bilevel optimisation

He Chen, Jiajin Li, Anthony Man-Cho So. *Set Smoothness Unlocks Clarke Hyper-stationarity in
Bilevel Optimization.* NeurIPS 2025. [arXiv:2506.04587](https://arxiv.org/abs/2506.04587)

**Read this first: what is reconstructed.** The paper is theoretical, has no experiments and no
code, and its full text was not available when this module was written. The definitions and
theorem statements follow a detailed secondary summary (Definition 3, Theorems 1-4,
Algorithm 1). The step sizes, the smoothing radius, the inexactness condition and the
stationarity certificates below are **reconstructed** from the zeroth-order / weakly convex
literature (Nesterov & Spokoiny 2017; Davis & Drusvyatskiy 2019; Lin, Zheng & Jordan 2022).
The toy problems and the hyper-cleaning instance are this chapter's own.

## Problem

Leader $x \in \mathbb{R}^m$, follower $y \in \mathbb{R}^n$ (unconstrained lower level):

$$S(x) = \arg\min_y f(x, y), \qquad
\varphi_o(x) = \min_{y \in S(x)} F(x, y), \qquad
\varphi_p(x) = \max_{y \in S(x)} F(x, y).$$

**Set smoothness** (Definition 3). $Y$ is $L$-smooth if for all $x_1, x_2$, $\theta\in[0,1]$
and every $y \in Y(\theta x_1 + (1-\theta)x_2)$ there are $y_i \in Y(x_i)$ with

$$\lVert \theta y_1 + (1-\theta) y_2 - y\rVert \le \tfrac L2 \theta(1-\theta)\lVert x_1-x_2\rVert^2
\quad (\text{S1}), \qquad \lVert y_1 - y_2\rVert^2 \le L \lVert x_1 - x_2\rVert^2 \quad (\text{S2}).$$

**Theorems 1-3** (as summarised). $S$ set smooth and $F$ smooth $\Rightarrow$ $\varphi_p$ is
$\rho$-weakly convex ($\varphi_p + \tfrac\rho2\lVert x\rVert^2$ convex) and $\varphi_o$ is
$\rho$-weakly concave, $\rho = M_F L_S + L_F(1 + L_S)$. An error bound on $f$ implies set
smoothness.

**Stationarity.** Pessimistic: the Moreau-envelope gradient
$\nabla\varphi_\gamma(x) = (x - \operatorname{prox}_{\gamma\varphi}(x))/\gamma$, $\gamma<1/\rho$
(small $\Rightarrow$ $x$ is close to a point with a small Clarke subgradient). Optimistic:
$(\varepsilon,\delta)$-Clarke, $\operatorname{dist}(0, \cup_{z\in B(x,\delta)}\partial_C
\varphi_o(z)) \le \varepsilon$.

**IZOM** (Algorithm 1, details reconstructed). With $u_k$ uniform on the unit sphere,

$$g_k = \frac{m}{2\delta}\big(\hat\varphi(x_k + \delta u_k) - \hat\varphi(x_k - \delta u_k)\big)u_k
\quad (\text{eq. ZO}), \qquad x_{k+1} = x_k - \eta g_k \quad (\text{eq. step}),$$

output $x_R$ with $R$ uniform in $\{0, \dots, T-1\}$; $\eta = c/\sqrt{mT}$.

## The chapter's problems (ours, exact)

*Toy P* (pessimistic): $f = \tfrac12 (y_{m+1} - \sum_i x_i)^2$, so
$S(x) = \{y : y_{m+1} = \sum_i x_i\}$ is an affine set moving linearly ($L_S = 0$), and
$F = \sum_i [x_i y_i - (y_i^2-1)^2/4] + \tfrac12\lVert x-a\rVert^2 + \tfrac c2 y_{m+1}^2
- \tfrac\kappa2\lVert x\rVert^2$, hence

$$\varphi_p(x) = \sum_i \psi^*(x_i) + \tfrac12\lVert x - a\rVert^2 + \tfrac c2 (\textstyle\sum_i x_i)^2
- \tfrac\kappa2 \lVert x\rVert^2,\qquad \psi^*(u) = \max_t\, ut - (t^2-1)^2/4,$$

with a convex kink of $\psi^*$ at $u=0$ (slopes $\mp1$). Defaults $a = (0.5, -0.3)$, $c = 0.2$,
$\kappa = 0$: the minimiser (Clarke stationary point) is $x^\star = 0$, on both kinks.
*Toy O* flips the double-well sign and takes the min: $\varphi_o = -\sum_i\psi^*(x_i) + \dots$,
concave kinks. *Hyper-cleaning*: an overparametrised least-squares follower
($S(x) = \{w : A w = y_{tr} + x\}$, affine, non-singleton) and a validation loss leader.

## Deviations from the paper

- The full text was not available: constants, step sizes, the smoothing radius and the
  inexactness condition are reconstructions (see above), not the paper's.
- The optimistic certificate samples the ``delta``-ball with finite-difference gradients (an
  upper bound on the distance in the definition); ``experiments.clarke_distance_toy`` adds the
  exact Clarke subdifferential on the kinks of Toy O.
- The rate of Thm 4 (``izom-rate``) is read on the median over seeds of the squared Moreau
  gradient at ``x_R``, not on its expectation (a few seeds whose ``R`` is an early iterate
  carry the mean); the rule has no reproduced tier for that reason.
- The paper has no experiments: every problem here (Toy P/O, the curved map of
  ``problems.toy_curved``, the rotating-line lower level, the constrained counterexample,
  hyper-cleaning) is the chapter's own.

## Files

- ``reference.py``: numpy float64 kernels (``psi_star``, set-smoothness and weak-convexity
  estimators, certificates, the two-point estimator, ``izom``); each public function validates
  its arguments once and calls an unchecked twin that the drivers call directly.
- ``problems.py``: the paper's objects (``BilevelProblem``, Toy P/O, the curved set-smooth
  problem, the example set-valued maps, the error-bound lower level of Theorem 2, the
  constrained counterexample, ``ProjectedAscentOracle``).
- ``cleaning.py``: the hyper-cleaning application (KKT / cvxpy inner solves).
- ``baselines.py``: finite-difference descent and the gradient-free Goldstein method.
- ``fast.py``: torch fast path (``psi_star``, ``kkt_oracle``, ``izom_many``), CPU or CUDA.
- ``settings.py``: the frozen settings of each experiment family, validated once.
- ``experiments.py``: the drivers of the notebooks (settings in, small results out; seed
  loops through ``lab.core.sweep``, results in ``lab.core.memo``).
- ``figures.py``: results to figures, nothing else.

See: book/bilevel/01-kinks-and-stationarity.ipynb, book/bilevel/02-hyper-cleaning.ipynb
"""

from __future__ import annotations

import lazy_loader as _lazy

#: reference name -> fast name where the batched signature differs (many runs, averaged directions)
PAIRS = {"izom": "izom_many"}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
