r"""
# Online strategic classification with Massart noise and partial feedback

Tianrun Zhao, Xiaojie Mao, Yong Liang. *Online Strategic Classification With Noise and Partial
Feedback.* NeurIPS 2025 (spotlight). [OpenReview Oo9KXaM6Mu](https://openreview.net/forum?id=Oo9KXaM6Mu)

The paper's full text was read (its equations partly lost in extraction; the algorithms,
propositions and Theorem 1 survive). No code was released. Everything below is written from it;
where we had to choose, the choice is listed under "Deviations".

## Model (Section 2)

Cycle $t$: an agent $(x_t, y_t)$, i.i.d.; **Assumption 1**: $y = h^*(x) = \mathrm{sgn}(\langle
w^*, x\rangle)$ with probability $1 - \eta(x)$, flipped otherwise, $\eta(x) \le \eta < 1/2$,
$\lVert w^*\rVert_2 = 1$ (no offset). Features: here $x \sim N(0, I_d)$ (log-concave, so
Assumption 2 holds). The principal posts $h(r) = \mathrm{sgn}(\langle w, r\rangle + m)$; the
agent reports $r$ at cost $2\lVert x - r\rVert/\gamma$ (utility $\pm 1$), so by **Lemma 1**

$$r^*(x) = x - (\langle w, x\rangle + m)\,w \ \text{ if } -\gamma \le \langle w, x\rangle + m < 0,
\qquad r^*(x) = x \text{ otherwise.}$$

The principal sees every $r_t$ and $y_t$ only when $h_t(r_t) = +1$. **Proposition 1**: posting
$\mathrm{sgn}(\langle w, r\rangle + m - \gamma)$ classifies true features like
$\mathrm{sgn}(\langle w, x\rangle + m)$; **Corollary 1**: the clairvoyant rule is
$h^*(r) = \mathrm{sgn}(\langle w^*, r\rangle - \gamma)$. Regret, eq. (1):
$\mathrm{Reg}_T = \sum_t \mathrm{Err}(h_t) - T\,\mathrm{Err}(h^*)$.

## Algorithm 1 = Algorithms 2, 3, 4

* **Initialization** (Alg. 2, $T_{init} = c_0 \ln T/(1-2\eta)^2$ iterations of 2 cycles): draw
  $w_{init,i}$ uniformly on the sphere, post $\mathrm{sgn}(\langle w_{init,i}, r\rangle)$ and its
  negation; $\tilde w_0 = \frac1{T_{init}}\sum_{i,j} y\, r\, 1[(-1)^{j-1}\langle w_{init,i},
  r\rangle > 0]$ (agents strictly above a boundary did not move). **Prop. 2**: $\langle w^*,
  \tilde w_0\rangle > c_1(1-2\eta)$.
* **Refinement** (Alg. 3, $T_0 = c_3 d\ln d(\ln T)^2/(1-2\eta)^8$ cycles): post
  $\mathrm{sgn}(\langle w_{0,i}, r\rangle)$; gradient
  $g = [-\eta r\,1(y=1) + (1-\eta) r\,1(y=-1)]\,1(0 < \langle w_{0,i}, r\rangle \le b_0)$,
  $b_0 = c_2(1-2\eta)^2$; online mirror descent on $W_0 = \{\lVert w\rVert \le 1, \langle w,
  \tilde w_0\rangle \ge c_1(1-2\eta)\}$ with the regulariser
  $\lVert w - \cdot\rVert_p^2/(2(p-1))$, $p = \ln(8d)/(\ln(8d) - 1)$, step
  $\alpha_0$; iterates normalised; output the normalised average. **Prop. 3**: angle
  $\le \pi/4$.
* **Batched enhancement** (Alg. 4, batch $k = 1..K$, $T_k = c_6 4^k(\gamma+1)d\ln d(\ln
  T)^2/(1-2\eta)^4$ iterations of 2 cycles): post $h_1 = \mathrm{sgn}(\langle w_{k,i}, r\rangle -
  \gamma)$ and $h_2 = \mathrm{sgn}(\langle w_{k,i}, r\rangle - \gamma - b_k)$, $b_k =
  c_5(1-2\eta)2^{-k}$; keep the agents reporting $\langle w, r\rangle \in [\gamma, \gamma + b_k]$
  under $h_1$ and $\langle w, r\rangle = \gamma + b_k$ under $h_2$; proxies
  $\mathrm{Proj}^+(r) = r + (b_k - \langle w, r\rangle)w$ ($y = +1$),
  $\mathrm{Proj}^-(r) = r - \langle w, r\rangle w$ ($y = -1$); contrastive gradient
  $\hat g = -\eta(\tilde x^{(1,+)} - \tilde x^{(2,+)}) + (1-\eta)(\tilde x^{(1,-)} -
  \tilde x^{(2,-)})$; proximal (mirror-descent) steps on
  $W_k = \{\lVert w\rVert \le 1, \langle w, w_k\rangle \ge
  \cos\theta_k\}$, $\theta_k = \pi/2^{k+1}$, step $\alpha_k = c_7\sqrt{d\ln d}\,\theta_k/(\sqrt{T_k}
  \ln T)$. **Prop. 4**: the angle halves per batch, $\theta(w^*, w_{k+1}) \le \theta_k/2$.

**Theorem 1** (square root restored from its proof):
$E[\mathrm{Reg}_T] = O\big(d\ln d(\ln T)^2/(1-2\eta)^8 + \sqrt{(\gamma+1)d\ln d\,T}\,\ln T/(1-2\eta)^2\big)$.

**Baselines (App. A.2)**: the Strategic Perceptron of Ahmadi et al. (2021), full and partial
feedback (Alg. 5, 6, proxy eq. (2)); the non-strategic Massart learner of Zhang et al. (2020)
(thresholds at 0, bands $|\langle w, r\rangle| \le b_k$ with full or $0 < \langle w, r\rangle \le
b_k$ with partial feedback). Extra baseline (ours, labelled as such): explore-fit-shift in
doubling epochs, a learner built from the abstract alone (:mod:`lab.strategic.doubling_epochs`,
on the simulator :mod:`lab.strategic.offset_game`).

## Deviations from the paper

* The constants $c_0..c_7$ have no values in the paper (only App. A.5 forms in Assumption 2's
  parameters): ours are in :class:`Constants` with their reasons; a sensitivity sweep over $c_6$
  is in notebook 3. Initialisation and refinement are capped at $T/8$ cycles each (without it
  $T_0$ alone exceeds $T$ at $\eta = 0.4$).
* $\alpha_0$ is printed as $c_4 d\ln d/(\sqrt{T_0}\ln T)$; we use $c_4\sqrt{d\ln d}/(\sqrt{T_0}\ln
  T)$, by analogy with $\alpha_k$.
* The step of Alg. 3 l.6 / Alg. 4 l.8 is the paper's proximal step
  $\arg\min_{w\in W}\langle g, w\rangle + \lVert w - w_{k,i}\rVert_p^2/(2(p-1)\alpha)$, solved
  to $10^{-12}$ on its optimality conditions (:func:`prox_step`); not a deviation. The cone of
  $W_0$ is clipped at $\cos \le 0.99$ (it is empty when $\lVert\tilde w_0\rVert < c_1(1-2\eta)$).
* Movers are placed $10^{-9}$ past the boundary (floating point) and "on the boundary" means
  within $10^{-6}$.
* The last batch is cut at $T$. Regret is the exact expected regret of each posted rule (Owen's
  $T$ function for Gaussian features and uniform noise), not a realised count.
* Zhang et al.'s enhancement is run with the same cone constraint and lengths as ours (one cycle
  per iteration, twice the iterations); its full-feedback gradient uses the label, as in Alg. 3.

## Files

| file | what it holds |
|---|---|
| `model.py` | `StrategicMassart`, the paper's instance (Gaussian features, Massart labels) |
| `reference.py` | the equations: `best_response` (Lemma 1), `admits`, `clairvoyant_rule` (Cor. 1), exact regret (`rule_regret`, eq. (1)); `Constants`, `schedule`, `prox_step` (Alg. 3 l.6 / Alg. 4 l.8), `strategic_massart_learner` (numpy, cycle by cycle); `mirror_step`, the earlier step, as an ablation |
| `prox.py` | the solver of the proximal step: projection onto `W`, Newton on its KKT conditions |
| `fast.py` | `strategic_massart_many` (the reference's `strategic_massart_learner` in torch, seeds batched, the proximal steps solved together; also Zhang et al.), `strategic_perceptron` (the baseline, batched), `draw_streams` (`draw_agents` per seed, stacked) |
| `offset_game.py` | a game simulator more general than the paper's model (an offset `b*`, Monte Carlo losses) |
| `doubling_epochs.py` | the extra baseline, explore-fit-shift in doubling epochs, with 0-1 ERM and logistic fitters |
| `settings.py` | one frozen settings dataclass per experiment family, validated once |
| `experiments.py` | drivers of the notebooks (settings in, results out); `prop4_outcomes` (Prop. 4 on the complete batches) |
| `figures.py` | results -> figures |

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb,
book/strategic/03-sweeps.ipynb
"""

import lazy_loader as _lazy

SUBMODULE_ONLY = ("offset_game", "doubling_epochs")
#: reference name -> fast name (the fast one adds seeds batched, ``variant=`` and ``device=``)
PAIRS = {"strategic_massart_learner": "strategic_massart_many"}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
