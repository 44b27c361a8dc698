r"""
# MEDRO: multi-expert distributionally robust optimisation

Jeong, Kahng, Kim. *Multi-Expert Distributionally Robust Optimization for Out-of-Distribution
Generalization.* NeurIPS 2025. [OpenReview Lz5BUjArK4](https://openreview.net/forum?id=Lz5BUjArK4).
Official code: the GitHub repository jyjeongku/MEDRO (built on SubpopBench; not readable from
this book's build, its facts are taken from the chapter's spec).

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
  every head trained with the GroupDRO loss under one group adversary.
* The convex case uses fixed random ReLU features and logistic heads; cvxpy is the peer.
* The official code (``jyjeongku/MEDRO``) could not be fetched here: its details (gamma = 1,
  the averaged diagonal term) come from the spec's reading of it; how the gate mixes the heads
  (a gate-weighted sum of logits) is our choice.

## Files

| file | what it holds |
|---|---|
| ``models.py`` | ``MultiHeadNet`` (heads as one tensor), ``make_featurizer`` |
| ``reference.py`` | ``eg_update``, ``medro_objective`` (paper / code), loop risks, ``gated_predict`` |
| ``fast.py`` | ``group_risks`` (one scatter-add), ``risk_matrix`` (one featurizer pass), ``train_stacked`` (many runs in one batched loop) |
| ``data.py`` | ``water_digits``, ``make_rotated_spurious_envs`` (exercises) |
| ``convex.py`` | Eq. 6 on frozen features: ``solve_cvxpy`` vs ``online_convex`` |
| ``experiments.py`` | ``train``, ``train_runs`` (batched), ``predict``, ``fit_gate``, ``choose_inference``, ``compare``, ``gamma_sweep`` |
| ``figures.py`` | figures of the notebooks |

See: book/medro/01-official-algorithm.ipynb, book/medro/02-water-digits.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["figures"],
    submod_attrs={
        "models": ["MultiHeadNet", "make_featurizer"],
        "reference": [
            "eg_update",
            "update_pair_weights",
            "medro_objective",
            "group_risks_reference",
            "risk_matrix_reference",
            "gated_predict",
        ],
        "fast": ["group_risks", "risk_matrix", "stack_models", "train_stacked"],
        "data": [
            "WATERBIRDS_TRAIN",
            "GroupSplit",
            "WaterDigits",
            "water_digits",
            "make_rotated_spurious_envs",
        ],
        "convex": [
            "frozen_features",
            "convex_risks",
            "convex_value",
            "solve_cvxpy",
            "online_convex",
        ],
        "experiments": [
            "TrainResult",
            "train",
            "train_runs",
            "predict",
            "fit_gate",
            "choose_inference",
            "group_accuracy",
            "compare",
            "gamma_sweep",
            "contains_groupdro",
            "paired_ci",
        ],
    },
)
