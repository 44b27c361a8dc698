r"""
# MEDRO: multi-expert distributionally robust optimisation

Jeong, Kahng, Kim. *Multi-Expert Distributionally Robust Optimization for Out-of-Distribution
Generalization.* NeurIPS 2025. [OpenReview Lz5BUjArK4](https://openreview.net/forum?id=Lz5BUjArK4).
Official code: the GitHub repository jyjeongku/MEDRO (built on SubpopBench); its ``MEDRO``,
``GroupDRO`` and ``MEDRO_gate`` classes were run on a shared instance and our kernels reproduce
them to round-off (`official_parity`, ``lab/core/official/medro_official.json``).

## Method (Sec. 3.5, Algorithm 1 in App. A.3)

A shared featurizer $\phi$ and one linear head $\omega_i$ per environment; on subpopulation
data an environment is a group $g = 2y + a$ (label × attribute), so $m = 4$ heads. The risk of
head $i$ on group $j$ is $R_{ij}(\theta) = \mathbb E_{P_j}\,\ell(\omega_i\circ\phi(x), y)$, and

$$\min_\theta\ \sum_k R_{kk}(\theta) + \gamma \max_{\Lambda\in\Delta_{m^2}} \sum_{ij}\lambda_{ij}R_{ij}(\theta)
\qquad (6)$$

Algorithm 1: $\Lambda_0 = 1/m^2$; at each step estimate every $\hat R_{ij}$ (group-$j$ rows of the
minibatch through head $i$), update $\lambda_{ij} \leftarrow \lambda_{ij}\exp(\eta_\Lambda \hat R_{ij})$
renormalised over all $m^2$ cells (`eg_update`), then descend
$\sum_k \hat R_{kk} + \gamma\sum_{ij}\lambda_{ij}\hat R_{ij}$. The official code uses
$\gamma = 1$ and averages the diagonal term over the groups present (``variant="code"``);
the paper's controlled runs use $\gamma = 0.5$ (``variant="paper"``).

With identical heads the worst-cell term is GroupDRO's loss with weights the column sums of
$\Lambda$, and the diagonal weights $\Lambda = \mathrm{diag}(q)$ give GroupDRO exactly
(`contains_groupdro`). Inference: the mean of the heads' **logits**; or a gate, a
zero-initialised linear layer on frozen features and heads fitted afterwards on a labelled
validation split (`fit_gate`); gate vs ensemble chosen on validation data
(`choose_inference`).

## Public names other code relies on

* ``eg_update(weights, risks, step)`` → the ``m × m`` weights after one exponentiated-gradient
  step, ``λ ⊙ exp(step · R)`` normalised over all ``m²`` entries (log space; risks detached).

## Deviations from the paper (our choices at this size)

* Data: *water digits* (`water_digits`), a Waterbirds-like spurious-correlation set from
  the bundled digits: label ``digit >= 5``, a background-patch attribute, training group sizes
  Waterbirds' 3,498 / 184 / 56 / 1,057 scaled by 0.15; balanced validation and test groups.
* Full-batch Adam on an MLP featurizer; multi-head GroupDRO (the paper's Table 7 control) is
  every head trained with the GroupDRO loss under one group adversary; ``"medro_groups"``
  (MEDRO with its cell weights tied to group weights, ``λ_ij = q_j / m``) is the ablation of
  MEDRO's expanded uncertainty set.
* The convex case uses fixed random ReLU features and logistic heads; cvxpy is the peer.
* The official code (``jyjeongku/MEDRO``) was read from a code index (no snapshot could be
  fetched) and its SubpopBench classes run in a scratch folder: its loss (``variant="code"``:
  gamma = 1, the diagonal averaged over the groups present), its weight step (with
  ``groupdro_eta``) and its gate (a gate-weighted sum of the heads' logits) are ours to
  round-off; its SGD with momentum 0.9 and minibatches are replaced by full-batch Adam in the
  notebooks, and the exercise's ``gated_predict`` mixes probabilities, not logits.

## Files

| file | what it holds |
|---|---|
| ``models.py`` | ``MultiHeadNet`` (heads as one tensor), ``make_featurizer`` |
| ``reference.py`` | ``eg_update``, ``medro_objective`` (paper / code), loop risks, ``gated_predict`` |
| ``fast.py`` | ``group_risks`` (one scatter-add), ``risk_matrix`` (one featurizer pass), ``train_stacked`` (many runs in one batched loop) |
| ``data.py`` | ``water_digits``, ``make_rotated_spurious_envs`` (exercises) |
| ``settings.py`` | ``TrainSettings``: how every run is trained, validated once |
| ``training.py`` | ``train``, ``train_runs`` (batched over seeds, ``γ`` and methods) |
| ``inference.py`` | ``predict``, ``fit_gate``, ``choose_inference``, ``group_accuracy`` |
| ``convex.py`` | Eq. 6 on frozen features: ``solve_cvxpy`` vs ``online_convex`` |
| ``official.py`` | ``official_parity``: our kernels replayed on the official-code fixture |
| ``experiments.py`` | ``compare`` and ``gamma_sweep`` (seeds scored through ``lab.core.sweep``, kept on disk), ``contains_groupdro``, ``paired_ci`` |
| ``claims.py`` | ``CLAIMS``: the registered claims (rules, seeds, rivals, revisions) and deviations |
| ``evidence.py`` | what each claim records: its value, its rival's measurement, its diagnosis |
| ``figures.py`` | figures of the notebooks |

See: book/medro/01-official-algorithm.ipynb, book/medro/02-water-digits.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
