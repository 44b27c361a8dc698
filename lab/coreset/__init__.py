r"""
# Stable coresets: gradient matching averaged over posterior weight samples

Wei-Kai Chang, Rajiv Khanna. *Stable Coresets via Posterior Sampling: Aligning Induced and
Full Loss Landscapes.* NeurIPS 2025. [arXiv:2511.17399](https://arxiv.org/abs/2511.17399)

**Read this first: what is reconstructed.** Only the abstract, a summary of the paper
(definitions, theorem statements, tables) and the official code's trainer were read. The
selection objective below, facility location on *posterior-averaged* gradient distances, is
**reconstructed** from the stability definition; it agrees with the code, which concatenates
the last-layer gradient proxies of K noisy copies of the model before running facility
location. Everything numerical in the chapter is measured by this module, not read from the
paper.

## Coresets by facility location (CRAIG)

A pool $V$ of $n$ examples with per-example gradients $g_i(w)$. Assign every $i$ to a medoid
$\varphi(i) \in S$ and give each medoid the weight $\gamma_j = |\varphi^{-1}(j)|$. Then

$$\Big\lVert \tfrac1n \sum_{j \in S} \gamma_j g_j - \tfrac1n \sum_{i \in V} g_i \Big\rVert
  \le \tfrac1n \sum_{i \in V} \lVert g_{\varphi(i)} - g_i \rVert, \tag{1}$$

so a good coreset minimises the right-hand side: a $k$-medoids problem, written as the
monotone submodular **facility-location** maximisation

$$F(S) = \sum_{i \in V} \max_{j \in S} s_{ij}, \qquad s_{ij} = d_{\max} - d_{ij},
  \qquad d_{ij} = \lVert G_i - G_j \rVert, \tag{2}$$

solved greedily, which is within $1 - 1/e$ of the optimum:

$$j_t = \arg\max_{j \notin S_{t-1}} F(S_{t-1} \cup \{j\}) - F(S_{t-1}), \qquad
  \gamma_j = \big|\{i : \arg\max_{j' \in S} s_{ij'} = j\}\big|. \tag{3}$$

For networks, $G_i$ is CRAIG's last-layer proxy $g_i = \mathrm{softmax}(z_i) - e_{y_i}$ (4).

## Posterior sampling (the paper)

A subset is $(\sigma, \varepsilon, \bar w)$-stable if
$\mathbb{E}_{w \sim N(\bar w, \sigma^2 I)} \lVert \nabla\ell_S(w) - \nabla\ell(w)\rVert^2 \le
\varepsilon$ (5). By Jensen, as in (1), it suffices to make
$d_\sigma(i, j)^2 = \mathbb{E}_w \lVert g_i(w) - g_j(w) \rVert^2$ small; with $K$ draws
$w_1, \dots, w_K$,

$$d_\sigma(i, j)^2 \approx \tfrac1K \sum_{k=1}^K \lVert g_i(w_k) - g_j(w_k) \rVert^2
  = \tfrac1K \lVert G_i - G_j \rVert^2, \quad G_i = [g_i(w_1), \dots, g_i(w_K)], \tag{6}$$

so posterior selection is facility location (2) on the **concatenated** features $G_i$. With
$K = 1$, $\sigma = 0$ it is CRAIG. In networks the noise goes on the normalisation layers'
affine parameters only (the paper's default), the passes run in eval mode, and the
parameters are restored afterwards. Training uses the unperturbed model and the weighted
loss $\tfrac1B \sum_j \hat\gamma_j \ell_j$ with $\hat\gamma$ normalised to mean 1 (7).

Theorem 3.2 of the paper: stability forces the Hessians to align too,
$\lVert H_S - H \rVert = O(\varepsilon^{1/2})$. ``alignment_errors`` measures the gradient,
Hessian and Newton-step gaps exactly on multinomial logistic regression, where the
per-example gradient is $(p_i - e_{y_i}) \otimes \tilde x_i$ and the per-example Hessian is
$(\mathrm{diag}\,p_i - p_i p_i^\top) \otimes \tilde x_i \tilde x_i^\top$ (8).

The reference kernel ``greedy_facility_location`` is numpy float64 and reads like (2)-(3);
the fast path ``facility_location`` runs the same greedy on a batch of pools at once
(CPU or CUDA), breaking ties the same way (lowest index first). As in the official code,
selection runs inside every class with ``ceil(B / C)`` medoids each
(``per_class_facility_location``, batched: ``per_class_facility_location_many``).

See: book/coreset/01-facility-location.ipynb

## Deviations from the paper

- The selection objective (facility location on concatenated posterior features) is
  reconstructed from the stability definition and the official code, not from the proofs.
- Digits (logistic regression with exact Hessians; a 64-128(BN)-10 MLP) stand in for CIFAR,
  TinyImageNet, ImageNet and SNLI; CREST's dropping of learned examples is not implemented.
- ``alignment_study`` perturbs every logistic-regression weight (the model has no
  normalisation layer); the network path perturbs the normalisation layers as the paper does.
- The similarity of facility location is eq. (2), ``d_max - d`` (CRAIG's); the official
  selection (CREST's ``get_orders_and_weights`` through submodlib) uses ``exp(-d / m)`` with
  ``m`` the feature dimension. Both are available (``similarity="exp"`` reproduces the official
  picks, ``lab/core/official/coreset_official.json``); the chapter's runs use eq. (2).
  Selection is per class with the budget split equally, as the official code does.
- The Newton-step error of ``alignment_study`` compares the steps inside the range of the
  coreset Hessian (a coreset of ``B`` points gives a Hessian of rank at most ``B (c - 1)``,
  below the dimension ``c (d + 1)``); Theorem 3.2 assumes invertible Hessians.

## File map

- ``settings.py``: the frozen settings of every experiment family (``PosteriorSettings``,
  ``TrainSettings``, ``RunSettings``, ``AlignmentSettings``, ``ToySettings``,
  ``SweepSettings``, ``AblationSettings``), validated once.
- ``reference.py``: numpy kernels: distances, greedy / brute-force facility location,
  logistic regression with exact gradients and Hessians, alignment errors.
- ``labels.py``: label noise, the weighted noisy share of a coreset, the random coreset.
- ``fast.py``: ``facility_location`` and ``per_class_facility_location_many``, the
  batched torch paths (CPU or CUDA).
- ``stacked.py``: ``train_stacked``, many ``CoresetTrainer`` runs as one batched computation.
- ``models.py``: the paper's objects: gradient proxy, ``posterior_features``, ``coreset_loss``,
  ``make_mlp``, ``select_minibatch_coresets``, ``CoresetTrainer``.
- ``experiments.py``: ``alignment_study``, ``digits_run``, ``digits_runs``, ``noise_sweep``, and
  the widgets' memoised drivers (``digits_alignment``, ``precompute_alignment``,
  ``method_runs``, ``precompute_training``).
- ``ablation.py``: ``perturbation_ablation``, the paper's Table 2 at our size (notebook 2).
- ``toy.py``: ``toy_problem`` and ``toy_selection``, the 2-D toy problem of notebook 1.
- ``figures.py``: results to figures (draws only).
- ``claims.py``: the chapter's registered claims (``CLAIMS``) and deviations.
- ``evidence.py``: what each claim records (value, card text, measured rival or diagnosis),
  built from the drivers' results.
"""

import lazy_loader as _lazy

#: reference kernel -> its batched fast path (features or a batch of pools: another signature)
PAIRS = {
    "greedy_facility_location": "facility_location",
    "per_class_facility_location": "per_class_facility_location_many",
}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
