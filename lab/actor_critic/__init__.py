r"""
# Single-timescale actor-critic: global convergence with $k^{-2/3}$ steps

Kumar, Agrawal, Ramponi, Levy, Mannor. *On the Convergence of Single-Timescale
Actor-Critic.* NeurIPS 2025. [arXiv:2410.08868](https://arxiv.org/abs/2410.08868)

**Read this first: what is reconstructed.** Only the abstract (and a partial third-party
summary) of the paper could be read. The claim - a tabular softmax actor-critic whose actor and
critic both take one step per sample, with step sizes decaying like $k^{-2/3}$, reaches an
$\varepsilon$-optimal policy after $O(\varepsilon^{-3})$ samples - is the paper's. The
algorithm below is the standard single-timescale actor-critic of this literature (Konda &
Tsitsiklis; Sutton et al.; Agarwal et al. 2021; Mei et al. 2020), **reconstructed**: the exact
actor estimator (critic advantage), the critic form (SARSA(0) on $Q$) and all constants may
differ from the paper's. Every number printed by the chapter is our own measurement.

## Objects

Finite MDP $(S, A, P, r, \gamma, \rho)$; softmax policy
$\pi_\theta(a\mid s) = e^{\theta_{sa}} / \sum_b e^{\theta_{sb}}$; objective
$J(\theta) = \rho^\top V^{\pi_\theta}$; discounted occupancy
$d^\pi_\rho = (1-\gamma)\,\rho^\top (I - \gamma P_\pi)^{-1}$. Exact gradient (eq. (ac-pg) of the
lesson page):

$$\frac{\partial J}{\partial \theta_{sa}} = \frac{1}{1-\gamma}\, d^\pi_\rho(s)\, \pi(a\mid s)\,
A^\pi(s, a), \qquad A^\pi = Q^\pi - V^\pi.$$

## The algorithm (one sample per iteration)

With $\eta_k = c_a (k+1)^{-p_a}$ and $\beta_k = c_c (k+1)^{-p_c}$ (default $p_a = p_c = 2/3$):

* (S) $s_k \sim d^{\pi_k}_\rho$, $a_k \sim \pi_k(\cdot\mid s_k)$,
  $s'_k \sim P(\cdot\mid s_k, a_k)$, $a'_k \sim \pi_k(\cdot\mid s'_k)$;
* (ac-adv) $\hat A_k = Q_k(s_k, a_k) - \sum_b \pi_k(b\mid s_k) Q_k(s_k, b)$;
* (ac-actor) $\theta_{k+1}(s_k, \cdot) = \theta_k(s_k, \cdot) + \frac{\eta_k}{1-\gamma}
  (e_{a_k} - \pi_k(\cdot\mid s_k))\, \hat A_k$;
* (ac-critic) $Q_{k+1}(s_k, a_k) = Q_k(s_k, a_k) + \beta_k \big(r(s_k, a_k) + \gamma Q_k(s'_k, a'_k)
  - Q_k(s_k, a_k)\big)$.

With a perfect critic ($Q_k = Q^{\pi_k}$) the actor direction is an unbiased estimate of
$\eta_k \nabla J$: averaging (ac-actor) over $s \sim d$, $a \sim \pi$ gives exactly eq. (ac-pg).

**Claim (paper).** $J^\star - J(\pi_k) \le \varepsilon$ after $O(\varepsilon^{-3})$ samples,
i.e. a gap decaying like $k^{-1/3}$ in the worst case.

Peers shipped here: value iteration (:func:`optimal_values`, ground truth), exact softmax
policy-gradient ascent (:func:`exact_pg_ascent`, the perfect critic) and gymnasium's toy-text
environments as tabular MDPs (:func:`from_gymnasium`).

Reference kernel: :func:`single_timescale_ac` (numpy, float64, vectorised over independent
runs). Fast path: :func:`lab.actor_critic.fast.single_timescale_ac` (the same name; torch, CPU or CUDA, the same operations in
the same order; with the same uniforms both give the same trajectory) and
:func:`single_timescale_ac_many` (many MDPs x many runs in one computation: numpy on a CPU,
torch on CUDA), the engine of the exponent study (:func:`exponent_study`, configured by :class:`StudySettings`).

## Deviations from the paper

* The paper's full text was not read: the estimator (score x critic advantage), the critic
  (one expected-SARSA(0)-style step on $Q$), the occupancy oracle and all constants are ours.
* The chapter's critic constant is large and capped, $\beta_k = \min(1, 20 (k+1)^{-2/3})$, so
  that the critic actually tracks $Q^{\pi_k}$ at CPU sizes (with $c_c = 1$, the spec's
  default and still this module's default for :func:`single_timescale_ac`, it barely learns).
  The exponent is the paper's; the cap only acts in the first ~90 iterations.
* "Prior art" is represented by a schedule, not by the prior papers' algorithms: the
  $k^{-1/2}$ single-timescale schedule of the $\varepsilon$-stationarity analyses, run by the
  same code. The $\varepsilon^{-3}$ against $\varepsilon^{-4}$ comparison is between the two
  proofs' bounds and is not measured; the exponent study compares each schedule with exact
  policy gradient at the same actor steps (:func:`exact_pg_many`).

## Files

| file | what it holds |
|---|---|
| `mdp.py` | `TabularMDP`, random and gymnasium MDPs, exact values, occupancy, eq. (ac-pg), critic error |
| `reference.py` | `StepSchedule`, the numpy reference loop, one update, exact PG ascent, rate helpers |
| `fast.py` | the torch path and the batched many-MDP engine |
| `schedule_batch.py` | many step-size schedules on one MDP in one batch (behind `run_grid`) |
| `settings.py` | `StudySettings`, `RunSettings`: the experiments' settings, validated once |
| `experiments.py` | drivers the notebooks call (the exponent study, memoised schedule runs) |
| `figures.py` | results -> figures (plotly, for `lab.core.explore`) |
"""

import lazy_loader as _lazy

#: reference name -> fast name where the batched signature differs (many MDPs at once)
PAIRS = {"exact_pg_ascent": "exact_pg_many"}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
