r"""
# Gradient descent at the edge of stability: rates on overparametrised least squares

MacDonald, Min, Palma, Tarmoun, Xu, Vidal. *Convergence Rates for Gradient Descent on the
Edge of Stability for Overparametrised Least Squares.* NeurIPS 2025.
[arXiv:2510.17506](https://arxiv.org/abs/2510.17506)

## Setting (Sec. 3, codimension 1)

A scalar model $f: \mathbb{R}^p \to \mathbb{R}$, a target $y$, and gradient descent with a
constant step $\eta$:

$$\ell(\theta) = \tfrac12 (f(\theta) - y)^2 \quad (5), \qquad
\theta_{t+1} = \theta_t - \eta \nabla \ell(\theta_t) \quad (6).$$

$y$ is a regular value (A3.1), so $M = f^{-1}\{y\}$ is a $(p-1)$-manifold of global minimisers.
On $M$ the Hessian is $\nabla f \nabla f^\top$: the **sharpness** is $\lambda = \lVert\nabla f\rVert^2$
and the normal is $n = \nabla f / \lVert\nabla f\rVert$. Near $M$ write
$\theta = \theta^\parallel + \theta^\perp n(\theta^\parallel)$ (Sec. 4).

## Normal form (Thm 4.1)

Along $M$, GD is Riemannian gradient descent on the sharpness with a step proportional to the
oscillation energy, $\theta^\parallel_{t+1} \approx \exp_{\theta^\parallel_t}\!\big(-\tfrac{\eta
(\theta^\perp_t)^2}{2 c(\eta, \theta^\parallel_t)} \nabla_M \lambda(\theta^\parallel_t)\big)$; across
$M$, $\theta^\perp$ follows the normal form of a period-doubling (flip) bifurcation at
$\eta\lambda = 2$.

## Theorems (Sec. 5), with $\lambda^* = \lambda(\theta^\parallel_*)$ the optimal flatness

* **Thm 5.1, subcritical** $2/\lambda(\theta^\parallel_0) < \eta < 2/\lambda^*$: after a finite exit
  time $\tau$, $\eta < 2/\lambda(\theta^\parallel_t)$, and GD converges at the rate $O(\beta^t)$,
  $\beta = 1 - (2 - \eta\lambda(\theta^\parallel_\tau))$, to a minimiser of suboptimal sharpness.
* **Thm 5.2, critical** $\eta = 2/\lambda^*$: $d_M(\theta^\parallel_t, \theta^\parallel_*) =
  \Theta(t^{-1/2})$ and $|\theta^\perp_t| = \Theta(t^{-1/2})$.
* **Thm 5.3, supercritical** $\eta$ slightly above $2/\lambda^*$: linear convergence, at the
  rate $O((1 - C_3(\eta\lambda^* - 2))^t)$, to a period-2 orbit
  $(\theta^\parallel_*, \pm(\eta\lambda^* - 2)^{1/2} + O(\eta\lambda^* - 2))$ in the coordinates of
  Thm 4.1.

## The paper's example: deep scalar factorisation (App. B)

$f(\theta) = \theta_p \cdots \theta_1$, $y > 0$, $M$ its positive-orthant component. The flattest
minimiser is $\theta^\parallel_* = y^{1/p} 1_p$ with $\lambda^* = p\, y^{2 - 2/p}$; the line
$L = \mathrm{span}(1_p)$ is GD-invariant (Prop B.2); the Riemannian Hessian of $\lambda$ at
$\theta^\parallel_*$ is $\nu I$, $\nu = 4 y^{2 - 4/p}$ (Prop B.7); $\lambda$ is geodesically
strongly convex with modulus $2$ on all of $M$ for $p = 2$ and $1.33\, y^{2-4/p}$ on the
geodesic ball of radius $0.15\, y^{1/p}$ for $p \ge 3$ (Prop B.6). The experiments (Figs 2-4)
use $p = 5$, $y = 1$: $\lambda^* = 5$, critical step $0.4$. The projection onto $M$
(App. F) solves the KKT conditions: each coordinate is a root of a quadratic and the scalar
multiplier solves a monotone equation, by bisection.

## The teaching model

$f(x, y) = xy$ with target 1 ($p = 2$, the paper's Fig. 1): imbalance $d = x^2 - y^2$,

$$r' = r - \eta r (x^2 + y^2) + \eta^2 r^2 (r + 1), \qquad d' = d\,(1 - \eta^2 r^2),
\qquad \lambda_M = \sqrt{d^2 + 4},$$

$\lambda^* = 2$ at $\pm(1, 1)$, critical step $1$; on the balanced line $x = y = a$,
$a' = a(1 + \eta - \eta a^2)$. The 2-cycle is explicit (amplitude
$\sqrt{(\eta - 1)(\eta + 3)}/(2\eta)$ in the residual) and period-doubles at $\eta = \sqrt5 - 1$.

## Deviations from the paper

* **Distance along $M$**: we plot the chord $\lVert\theta^\parallel_t - \theta^\parallel_*\rVert$,
  not the geodesic distance $d_M$ (equal to first order; the same rate).
* **Normal coordinate**: $\theta^\perp$ is the Euclidean normal coordinate of Sec. 4; the paper
  plots the intermediate coordinate of its Prop C.5 (an analytic change of coordinates: the
  same rates) and states the orbit amplitude in the coordinates of Thm 4.1. So we test the
  amplitude's law $(\eta\lambda^* - 2)^{1/2}$ (its exponent), not its prefactor.
* **Starting points**: the paper's five initialisations per regime are only in its code
  (App. F, not read); ours are five seeded random directions on $M$ at a prescribed sharpness.
* **Sharpness of a run**: ``Trajectory.sharpness`` is the sharpness of the minimiser reached by
  *gradient flow* from $\theta_t$ (closed forms, cheap); the paper's curves use the orthogonal
  projection (``project_to_manifold``). They agree to first order in $\theta^\perp$.
* **Our additions**: the xy period-doubling step $\sqrt5 - 1$ and the chaos beyond it (Sec. 6
  leaves higher periods open), the depth-4 product with $y = 2$ among the critical models, and
  the small network of notebook 3 (the contrast with Cohen et al. 2021). The two-layer model
  $\langle u, v\rangle$ stays in the package but backs no claim: GD moves $u \pm v$ along fixed
  directions, so its runs are the xy model's after a rotation (the same numbers, not evidence).

## Files

| file | what it holds |
|---|---|
| ``models.py`` | ``XYModel``, ``ProductModel``, ``InnerProductModel``: ``f``, ``∇f``, ``∇²f``, closed forms, the one GD kernel |
| ``reference.py`` | numpy float64: ``gd`` (eq. 6), sharpness, ``project_to_manifold`` (App. F), ``manifold_coordinates`` (Sec. 4) |
| ``geometry.py`` | App. B: ``flattest_constants``, ``riemannian_hessian``, ``convexity_modulus``, ``geodesic_ball_points``, ``euclidean_tangent_hessian`` (a control) |
| ``regimes.py`` | Sec. 5: ``classify_regime``, ``regime_thresholds``, ``period_two_orbit``; beyond: ``attractor`` |
| ``fast.py`` | torch: ``gd`` (batched, CPU/CUDA, same kernel as ``reference.gd``), ``sharpness_hvp`` |
| ``settings.py`` | frozen settings, validated once: ``RegimeSettings``, ``CriticalSettings`` (and ``CRITICAL_MODELS``), ``CobwebSettings``, ``NetworkSettings`` |
| ``experiments.py`` | drivers for the notebooks, on settings: rate fits, ``manifold_runs`` (Figs 2-4), ``drift_law`` (chords over one period), ``critical_run``/``critical_fit``, ``regime_run``, ``cobweb`` |
| ``outcomes.py`` | what the claims judge, for a run and its control alike: ``tail_rates``, ``subcritical_outcome``, ``supercritical_outcome`` |
| ``network.py`` | notebook 3: ``mlp_digits_gd(NetworkSettings)`` (full-batch GD on a small MLP, sharpness by HVPs) |
| ``results.py`` | the drivers' result dataclasses (``ManifoldRuns``, ``DriftLaw``, ``RegimeRun``, ``CriticalFit``, ``Cobweb``, ``MLPRun``) |
| ``figures.py`` | results to figures (plotly for the widgets, matplotlib panels); imports only ``results`` |
| ``claims.py`` | the registry: every claim's statement, source, rule, expected verdict, seeds, size and rival (``CLAIMS``), and the deviations |
| ``evidence.py`` | what each claim records: its measured value, the card's text and its measured rival (``C[id].record(**evidence.f(...))``) |

See: book/eos/01-three-regimes.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
