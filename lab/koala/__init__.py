r"""
# KOALA++: a Kalman-filter optimizer that tracks the gradient–covariance product

Zixuan Xia, Aram Davtyan, Paolo Favaro. *KOALA++: Efficient Kalman-Based Optimization with
Gradient-Covariance Products.* NeurIPS 2025.
[arXiv:2506.04432](https://arxiv.org/abs/2506.04432). Official code:
`Sumxiaa/KOALA_Plus_Plus`. Predecessor: KOALA (Davtyan et al., AAAI 2022,
[arXiv:2107.03331](https://arxiv.org/abs/2107.03331)).

**What was read, what is reconstructed.** The authors' optimizer, configs and README, the text
of the poster, the predecessor's code and the abstract; not the paper's result tables, and
not its equation numbering. The update equations below were re-derived from the extended
Kalman filter and agree term by term with the authors' optimizer; the first-step ("phantom")
initialisation and the measurement-noise estimate (an EMA of the mean *squared* per-sample
loss, started at 1) follow that code. The equations are therefore labelled by block (koala-ekf,
koala-recursion, koala-closure, koala-update), not by the paper's numbers; the lesson page
(book/koala/index.md) displays them with these labels and the reference kernels cite them.

## Training as filtering

The weights $\theta$ are a hidden state that drifts, $\theta_k = \theta_{k-1} + \epsilon_k$,
$\epsilon_k \sim N(0, QI)$, and each mini-batch loss is a noisy measurement of the target 0,
$0 = L_k(\theta_k) + \nu_k$, $\nu_k \sim N(0, R_k)$. Linearising with the row vector
$H_k = \nabla L_k(\theta_{k-1})$, the extended Kalman filter reads

$$\hat P_k = P_{k-1} + QI,\quad S_k = H_k \hat P_k H_k^\top + R_k,\quad
K_k = \hat P_k H_k^\top / S_k,$$
$$\theta_k = \theta_{k-1} - \eta\, K_k L_k(\theta_{k-1}),\quad
P_k = \hat P_k - K_k H_k \hat P_k. \tag{koala-ekf}$$

`ekf_full` runs it with the full $n\times n$ matrix $P$ (the exact reference).

## KOALA-V: a scalar covariance

$P = \sigma I$: predict $\sigma \leftarrow \sigma + Q$; step
$\theta \leftarrow \theta - \eta L\, \sigma H^\top / (\sigma\lVert H\rVert^2 + R)$; update
$\sigma \leftarrow \sigma - \sigma^2 \max_l \lVert H_l\rVert^2 / S_l$ (`koalav`,
`KoalaV`). All directional information in $P$ is lost.

## KOALA++: propagate $v_k = H_k P_{k-1}$ only

The step needs only $H_k \hat P_k = v_k + Q H_k$. Inserting the covariance update of (koala-ekf)
into $v_k$ gives the exact recursion

$$v_k = H_k P_{k-2} + Q H_k - \lambda_k (v_{k-1} + Q H_{k-1}),\qquad
\lambda_k = \frac{H_k v_{k-1}^\top + Q\, H_k H_{k-1}^\top}{S_{k-1}}. \tag{koala-recursion}$$

The unknown $H_k P_{k-2}$ is closed with the minimum-Frobenius-norm matrix $P$ that satisfies
$H_{k-1} P = v_{k-1}$ (vanilla), or that and $P = P^\top$ (symmetric). With
$x = \lVert H_{k-1}\rVert^2$, $y = H_{k-1} v_{k-1}^\top$, $a = H_k H_{k-1}^\top$,
$c = H_k v_{k-1}^\top$:

$$H_k P_{k-2} \approx \alpha_k v_{k-1} + \beta_k H_{k-1},\qquad \alpha_k = a/x,\qquad
\beta_k = c/x - a y / x^2 \ (\text{0 for vanilla}). \tag{koala-closure}$$

$$v_k = (\alpha_k - \lambda_k) v_{k-1} + Q (H_k - \lambda_k H_{k-1}) + \beta_k H_{k-1},\quad
g_k = v_k + Q H_k,\quad S_k = H_k g_k^\top + R_k,$$
$$\theta_k = \theta_{k-1} - \eta\, \tilde L_k\, g_k^\top / S_k,\qquad
\tilde L_k = L_k + \tfrac12 \mathrm{wd} \lVert\theta\rVert^2,\quad H_k \ni \mathrm{wd}\,\theta.
\tag{koala-update}$$

Every parameter tensor is filtered on its own (layer-wise; block-diagonal $P$ across tensors),
so $\theta$, $H_k$, $v_k$ and the $\lVert\theta\rVert^2$ of $\tilde L_k$ are those of one tensor.

Initialisation (from the authors' code): $v_0 = \sigma_0 H_1$, $H_0 = H_1$,
$S_0 = H_1(v_0 + QH_1)^\top + R$, then the recursion. This equals an EKF started at
$P = \sigma_0 I$ that makes one covariance-only ("phantom") update with $H_1$ before the first
step (`init="phantom"`, the default); `init="prior"` starts from $v_1 = \sigma_0 H_1$ instead.
In one dimension the closure is exact, so KOALA++ *is* the EKF.

Measurement noise: $R_k = \alpha_r R_{k-1} + (1 - \alpha_r)\,\overline{\ell^2}$ (mean squared
per-sample loss of the batch), $R_0 = 1$, or a fixed `r`.

## Deviations from the paper (its code)

* **Positivity.** The closure is not positive semidefinite in general (the paper leaves
  enforcing it to future work). Where $S_k \le 0$, `koalapp` and `KoalaPP` on CPU
  raise `FloatingPointError` instead of stepping uphill; on CUDA `KoalaPP` counts such events
  in ``optimizer.state["nonpositive_S"]`` (no host sync).
* **KOALA-V's step** uses $H_l = \nabla L + \mathrm{wd}\,\theta$ where the authors' code uses
  the gradient alone (the same at ``weight_decay = 0``).
* **KOALA-V's covariance update** is $\sigma \leftarrow \sigma - \sigma^2 \max_l
  \lVert H_l\rVert^2 / S_l$, the scalar EKF update. The authors' ``VanillaKOALA.update``
  squares $\lVert H_l\rVert^2$ a second time ($\max_l \lVert H_l\rVert^4 / S_l$) and adds
  $\tfrac12 \mathrm{wd} (\lVert\theta\rVert^2)^2$ to the loss: the first step agrees with
  theirs, later ones do not (the parity fixture, ``lab/core/official/koala_official.json``).
  ``KoalaPP`` matches their ``KOALAPlusPlus.update`` to float64 round-off.
* **Reference kernels** have no skip rule ($\lVert\nabla\rVert < \varepsilon$ skips a tensor
  in `KoalaPP` only); `koalapp_v_update` raises on $H_{k-1} = 0$.
* **Experiments.** Noisy quadratics (notebook 1) and scikit-learn's digits with a 4.8k-weight
  MLP (notebook 2) stand in for CIFAR-10/100, ImageNet-32 and WikiText-2; no triton kernel
  (the spec's optional one-pass kernel) is written.

## Files

| file | what it holds |
|---|---|
| ``reference.py`` | numpy float64: ``ekf_full`` (EKF), ``koalapp_v_update`` (recursion + closure), ``koalapp`` (the whole method, calling ``koalapp_v_update``), ``koalav``, ``adam`` |
| ``fast.py`` | torch: ``koalapp_foreach_`` (multi-tensor; on CPU host-side flags and ``torch._foreach_*`` ops, on CUDA one flat buffer without host syncs), ``init_state``, the per-tensor loop |
| ``optim.py`` | ``KoalaPP``, ``KoalaV`` (``torch.optim.Optimizer``), ``loss_statistics`` |
| ``evidence.py`` | what each claim records (measured value, card text, measured rival, diagnosis), built from the drivers' results: the notebooks record a claim in one line |
| ``problems.py`` | ``NoisyQuadratic``, the test problem of notebook 1 |
| ``training.py`` | ``DigitsSettings`` (the frozen settings of one digits run, checked once) and ``train_digits``: the digits MLP of notebook 2 with any of the five optimizers (memoised in process) |
| ``batched.py`` | ``train_digits_seeds``: the same runs for many seeds in one batch (stacked weights), what ``seed_runs(batched=True)`` calls |
| ``results.py`` | what the drivers return and the figures draw: ``TrainRun``, ``QuadraticPaths``, ``PATH_METHODS`` |
| ``experiments.py`` | the notebooks' drivers: ``run_quadratic``, ``quadratic_paths``, ``tracking_error``, ``covariance_replay``; ``seed_runs`` and ``final_accuracies`` (over seeds, through ``lab.core.sweep``), ``official_parity`` (the authors' optimizers, replayed from ``lab/core/official/koala_official.json``), ``step_times`` (the step alone, as the benchmark times it; shown, never a claim's measurement), ``state_floats`` |
| ``figures.py`` | plotly figures for the widgets and matplotlib figures of the notebooks; they take results (``results.py``) only |
| ``counting.py`` | ``step_counts`` (``StepCounts``): the work and memory traffic of one optimizer step, counted per aten op by ``OpCounter`` (a ``TorchDispatchMode``; on the meta device, so a dense-covariance EKF of a 1.9M-weight MLP is counted without allocating): the cost the claim ``koala/step-cost`` decides on |

See: book/koala/01-kalman-view.ipynb
"""

import lazy_loader as _lazy

#: reference -> fast pairs whose signatures differ: the reference runs KOALA++ on one vector
#: for ``steps`` steps; the fast path makes one in-place step on a list of tensors
PAIRS = {"koalapp": "koalapp_foreach_"}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
