r"""
# Set smoothness and Clarke hyper-stationarity in bilevel optimisation

He Chen, Jiajin Li, Anthony Man-Cho So. *Set Smoothness Unlocks Clarke Hyper-stationarity in
Bilevel Optimization.* NeurIPS 2025. [arXiv:2506.04587](https://arxiv.org/abs/2506.04587)

**Sources.** The paper's full text: Assumptions A1-A3 (lower level: smoothness, closed convex
solution sets, the error bound ``dist(y, S(x)) <= tau ||grad_y f||``) and B1-B2 (upper level),
Definition 3 (set smoothness, eqs. 4-5), Theorems 1-3 (weak convexity / concavity), Remark 4 and
Example 3 (a lower-level constraint breaks it), Algorithm 1 (IZOM) and Theorem 4 (rates). The
constants of the step and radii are the chapter's (Theorem 4 gives orders), the oracles are
exact, and every instance but Example 3 is the chapter's own: the paper has no experiments.

## Problem

Leader $x \in \mathbb{R}^m$, follower $y \in \mathbb{R}^n$ (unconstrained lower level):

$$S(x) = \arg\min_y f(x, y), \qquad
\varphi_o(x) = \min_{y \in S(x)} F(x, y), \qquad
\varphi_p(x) = \max_{y \in S(x)} F(x, y).$$

**Set smoothness** (Definition 3). $Y$ is $L$-smooth if for all $x_1, x_2$, $\theta\in[0,1]$
and every $y \in Y(\theta x_1 + (1-\theta)x_2)$ there are $y_i \in Y(x_i)$ with

$$\lVert \theta y_1 + (1-\theta) y_2 - y\rVert \le \tfrac L2 \theta(1-\theta)\lVert x_1-x_2\rVert^2
\quad (4), \qquad \lVert y_1 - y_2\rVert^2 \le L \lVert x_1 - x_2\rVert^2 \quad (5).$$

**Theorems 1-3.** $S$ set smooth and $F$ smooth $\Rightarrow$ $\varphi_p$ is
$\rho$-weakly convex ($\varphi_p + \tfrac\rho2\lVert x\rVert^2$ convex) and $\varphi_o$ is
$\rho$-weakly concave, $\rho = M_F L_S + L_F(1 + L_S)$ (Theorem 1 for a general $g$:
$\rho = M_g L_Y + L_g(1 + L_Y)$). The error bound (A3) implies set smoothness with
$L_S = \max\{2H_f\tau(1 + 9L_f^2\tau^2), 4L_f^2\tau^2\}$ (Theorem 2).

**Stationarity.** Pessimistic: the Moreau-envelope gradient
$\nabla\varphi_\gamma(x) = (x - \operatorname{prox}_{\gamma\varphi}(x))/\gamma$, $\gamma<1/\rho$
(small $\Rightarrow$ $x$ is close to a point with a small Clarke subgradient). Optimistic:
$(\varepsilon,\delta)$-Clarke, $\operatorname{dist}(0, \cup_{z\in B(x,\delta)}\partial_C
\varphi_o(z)) \le \varepsilon$.

**IZOM** (Algorithm 1). With $u_k$ uniform on the unit sphere,

$$g_k = \frac{m}{2\delta}\big(\hat\varphi(x_k + \delta u_k) - \hat\varphi(x_k - \delta u_k)\big)u_k
\quad (\text{eq. ZO}), \qquad x_{k+1} = x_k - \eta g_k \quad (\text{eq. step}),$$

output $x_R$ with $R$ uniform in $\{0, \dots, T-1\}$. Theorem 4: $\eta = \Theta(m^{-1/2}T^{-1/2})$,
smoothing radius $\delta$ (the paper's $\varepsilon$) $= O(T^{-1/2})$, oracle accuracy
$w = O(m^{-3/4}T^{-3/4})$; certificate ball $O(T^{-1/4})$ (optimistic); $\gamma < 1/(\rho+1)$.

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

The registry ``lab/bilevel/claims.py`` lists them (rendered on book/bilevel/reproduction.md):
the chapter's constants for the step and radii, exact oracles, the rate read on the median over
seeds, the sampled Clarke ball, locally checked assumptions, and the chapter's own instances.

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
