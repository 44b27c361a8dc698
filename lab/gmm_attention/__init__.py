r"""
# Attention-based clustering: attention heads find the centroids of a Gaussian mixture

Maulen-Soto, Boyer, Marion. *Attention-based clustering.* NeurIPS 2025.
[arXiv:2505.13112](https://arxiv.org/abs/2505.13112)

**Read this first: what is reconstructed.** Only the abstract of the paper could be read when
this module was written. Two of its statements are implemented here:

1. a two-head attention layer trained *without labels* on data from a Gaussian mixture puts its
   head parameters on the mixture's centroids (population-risk minimisers align with them);
2. an attention layer whose key, query and value matrices are the identity performs
   *in-context quantisation*: each token moves towards the mean of its own cluster in the
   sequence, even when the centroids change from one sequence to the next.

The **trainable two-head layer below is a reconstruction**: the smallest attention form that
matches every statement of the abstract (two heads with one parameter vector each, an
unsupervised population risk, minimisers on the centroids). It lives behind
:func:`head_attention` / :func:`train_heads`; if the paper's layer differs, only those change.
The identity-attention layer is fully determined by the abstract.

## The data

A mixture of :math:`K` Gaussians, :math:`z \sim \mathrm{Cat}(p)`,
:math:`x = \mu_z + \sigma \varepsilon`, :math:`\varepsilon \sim N(0, I_d)`.

## The two-head layer (reconstructed)

Heads :math:`\Theta = (\theta_1, \dots, \theta_H)`, :math:`\theta_h \in \mathbb{R}^d`, inverse
temperature :math:`\lambda > 0`. The input token :math:`x` is the query; head :math:`h` has key
and value :math:`\theta_h`; the softmax runs across the heads:

.. math::
    s_h(x) = \lambda \langle x, \theta_h\rangle \;\text{(dot)} \quad\text{or}\quad
    s_h(x) = -\tfrac{\lambda}{2}\lVert x - \theta_h\rVert^2 \;\text{(distance)}      \qquad (M1)

    w_h(x) = \frac{e^{s_h(x)}}{\sum_g e^{s_g(x)}}, \qquad
    A_\Theta(x) = \sum_h w_h(x)\, \theta_h                                          \qquad (M2)

Population risk (no labels): :math:`R(\Theta) = \mathbb{E}\,\lVert x - A_\Theta(x)\rVert^2`
(M3), minimised by SGD on fresh samples. With :math:`r = x - A_\Theta(x)`:

.. math::
    \nabla_{\theta_h} \lVert r\rVert^2 = -2 w_h r
        - 2\lambda w_h \big(\langle r, \theta_h\rangle - \langle r, A_\Theta(x)\rangle\big)\,
        \partial_\theta s \qquad (M4)

with :math:`\partial_\theta s = x` (dot) or :math:`x - \theta_h` (distance).

Symmetric case :math:`\mu_{1,2} = \pm\mu`, :math:`\theta_{1,2} = \pm t u`, angle :math:`\phi`
between :math:`u` and :math:`\mu`, dot score: :math:`A = \tanh(\lambda t s)\, t u` with
:math:`s = \langle x, u\rangle`, and

.. math::
    R(t, \phi) = \lVert\mu\rVert^2 + d\sigma^2 +
        \mathbb{E}_{s \sim N(\lVert\mu\rVert\cos\phi, \sigma^2)}
        \big[-2 t s \tanh(\lambda t s) + t^2 \tanh^2(\lambda t s)\big]            \qquad (M5)

(the even integrand makes the two mixture components give the same expectation), computed by
Gauss-Hermite quadrature. As :math:`\lambda \to \infty` the stationarity condition of (M3)
becomes Lloyd's fixed point :math:`\theta_h = \mathbb{E}[x \mid x \text{ assigned to } h]`.

## The identity-attention layer (from the abstract)

For one sequence :math:`X = (x_1, \dots, x_L)` and inverse temperature :math:`\beta \ge 0`:

.. math::
    T(X)_i = \sum_j \operatorname{softmax}_j\big(\beta \langle x_i, x_j\rangle\big)\, x_j  \qquad (M6)

applied ``n_layers`` times (one mean-shift-like step each). Quality: the mean squared distance
of :math:`T(X)_i` to the empirical mean of token :math:`i`'s own cluster in that sequence (M7, ours: the abstract defines no error measure).

**Equation labels.** (M1)-(M7) are this package's own numbering. The paper's text was not read, so
no equation, theorem or figure number of the paper is cited anywhere in ``lab.gmm_attention``;
(M1)-(M5) are the reconstruction, (M6) is fixed by the abstract, (M7) is ours.

## Deviations from the paper

* The trainable two-head layer (M1)-(M3) is a reconstruction (see above), not the paper's layer.
* The exact symmetric risk (M5), the temperature analysis, the in-context task (centroids
  :math:`\pm 3u` per sequence) and its error measure (M7) are ours.

## Files

========================  ===================================================================
``mixture.py``            data: ``sample_gmm``, ``symmetric_means``, ``sample_in_context``;
                          matching scores ``alignment``, ``centroid_error``
``reference.py``          numpy float64 kernels: ``head_attention`` (M1-M2), ``risk`` (M3),
                          ``risk_grad`` (M4), ``population_risk_symmetric`` (M5),
                          ``train_heads``, ``identity_attention`` (M6), ``in_context_error``
``settings.py``           ``TrainSettings``: the training protocol (σ, SGD), validated once
``fast.py``               torch (CPU/CUDA): ``train_heads`` (batched), ``identity_attention``
``attention.py``          the layers as ``torch.nn.Module``: ``HeadAttention``,
                          ``IdentityAttention``
``experiments.py``        drivers: ``seed_runs``, ``score_errors`` (seed sweeps),
                          ``kmeans_batched``, ``in_context_kmeans_error``, ``fit_baselines``
                          (scikit-learn), ``layer_sweep``, ``landscape``; the widgets' data
                          ``training_run``/``training_view``, ``temperature_curves``/
                          ``temperature_view`` (memoised)
``rivals.py``             the claims' measured rivals: ``kmeans_seed_runs``,
                          ``own_mean_heads_errors``, ``lloyd_error``
``claims.py``             ``CLAIMS``: the registry of the chapter's claims
``evidence.py``           what each claim records (measured value, card text, measured rival,
                          diagnosis) from the drivers' results: one-line records in notebooks
``figures.py``            results to figures (plotly for the widgets, matplotlib panels);
                          imports no driver or kernel
========================  ===================================================================

Reference kernels are numpy float64; the fast paths (``fast.train_heads``,
``fast.identity_attention``: the reference names) are batched torch on CPU or CUDA, tested
against them.

See: book/gmm_attention/01-heads-find-centroids.ipynb
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
