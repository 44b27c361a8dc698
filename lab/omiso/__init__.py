r"""
# OMiSO: choosing microstimulation patterns from the current brain state

Minai, Soldado-Magraner, Yu, Smith. *OMiSO: Adaptive optimization of state-dependent brain
stimulation to shape neural population states.* NeurIPS 2025.
[arXiv:2507.07858](https://arxiv.org/abs/2507.07858)

**Read this first: what is simulated and what is reconstructed.** No OMiSO code is public and
no recordings can be downloaded. Everything here runs on a **simulated Utah array** designed
for this book (latent factors, state-dependent responses to stimulation, Poisson counts,
drift). The response model, its inversion and its online update are **reconstructed** from the
OMiSO abstract and from the predecessor MiSO (Minai et al., NeurIPS 2024), whose public
simulation code fixes the latent space (factor analysis), the per-pattern predictions, the
online rule ``pred <- pred - lr (pred - observed)``, epsilon-greedy choice and an **L1**
distance to the target (we use L2: see the deviations). No number of the paper is quoted.

## Latent space (as in MiSO)

Counts $y \in \mathbb{N}^N$ of $N = 96$ channels; factor analysis fitted on no-stimulation
windows, $y = L z + \mu + e$, $z \sim N(0, I_q)$, $e \sim N(0, \Psi)$; the latent state of a
window is the posterior mean

$$E[z \mid y] = (I + L^\top \Psi^{-1} L)^{-1} L^\top \Psi^{-1} (y - \mu). \tag{1}$$

## State-dependent response model (reconstructed)

For each pattern $u$: $z_{\text{post}} = W_u \phi(z_{\text{pre}}) + \varepsilon$ with
$\phi(z) = [z; 1]$ (state-aware) or $\phi(z) = [1]$ (state-agnostic), ridge fit

$$W_u = Z_{\text{post},u}^\top \Phi_u (\Phi_u^\top \Phi_u + \lambda I)^{-1},
\qquad P_u = \sigma^2 (\Phi_u^\top \Phi_u + \lambda I)^{-1}. \tag{2}$$

Inverse (choice by enumeration over the pattern set $U$, target $z^*$ in the dimensions $K$):

$$u_t = \arg\min_{u \in U} \lVert (W_u \phi(z_{\text{pre},t}))_K - z^* \rVert^2. \tag{3}$$

Online update of the tried pattern only (Kalman filter on the parameters under a random walk):

$$P_u \leftarrow P_u + Q I\ \ \forall u,\quad
k = \frac{P_{u_t} x}{\sigma^2 + x^\top P_{u_t} x},\quad
W_{u_t} \leftarrow W_{u_t} + (z_{\text{post},t} - W_{u_t} x) k^\top,\quad
P_{u_t} \leftarrow P_{u_t} - k x^\top P_{u_t}. \tag{4}$$

MiSO (state-agnostic comparator): $\hat z_u \leftarrow \hat z_u - \eta(\hat z_u - z_{\text{post}})$
for the tried pattern, $\eta = 0.1$. (5)

## The simulator (a design for this book, not data)

96 electrodes on a 10x10 grid without corners; 12 candidate electrodes; patterns = their 66
pairs. Brain state $s_t = 0.98 s_{t-1} + 0.2 \xi_t$, $z_{\text{pre}} = s_t + 0.5 \nu_t$;
counts $y_i \sim \text{Poisson}(3\,\text{softplus}(L_i z + \mu_i))$; electrode effects
$\beta_e$ (smooth spatial fields per latent dimension) and state-dependence matrices
$\Gamma_e$; response to the pair $(a, b)$

$$z_{\text{post}} = a\, z_{\text{pre}} + g\,(\beta_a + \beta_b + \kappa (\Gamma_a + \Gamma_b)
z_{\text{pre}}) + o_t + 0.3\,\varepsilon_t, \tag{6}$$

with use-dependent adaptation $g$, a common-mode offset $o_t$ and a random-walk drift
$\beta_e \leftarrow \beta_e + \text{drift}\,N(0, I)$ per trial.

**Random streams.** All randomness of a session is drawn in numpy up front, in fixed chunks of
trials (:func:`trial_noise`, :func:`session_plan`); Poisson counts are made by the inverse CDF
of pre-drawn uniforms. The batched torch path (:mod:`lab.omiso.fast`) consumes the very same
arrays, so a numpy session and a torch session on the same seed agree to rounding.
Deviation (flagged): the Poisson rate is capped at 40 spikes per window and counts at 100
(never reached at the defaults).
## Deviations from the paper (and from MiSO's code)

* **The method is reconstructed** from the OMiSO abstract: the per-pattern linear-Gaussian
  model, its inversion by enumeration and the Kalman update (eqs. 2-4) are our reading, not
  the paper's model.
* **Distance to the target**: MiSO's public code measures the distance to the target in the
  two target dimensions with the **L1** norm; we use the Euclidean (L2) norm everywhere, for
  the choice of eq. (3) (its square) and for the reported error of a trial. On the 2-D target
  plane the two norms differ by at most a factor $\sqrt 2$; the choice can differ between
  patterns whose predicted outcomes are at nearly equal distance.
* **Poisson caps**: rate at 40 spikes per window, counts at 100 (never reached at the defaults).
* **Not implemented**: the electrode-additive model over all pairs, a neural-network response
  model, Bayesian optimisation (the spec's "full" options).

## Files

| file | what it holds |
|---|---|
| ``array.py`` | the simulator: ``UtahArraySim``, ``array_positions``, ``trial_noise``, ``session_plan``, ``poisson_icdf`` (eq. 6) |
| ``settings.py`` | ``SessionSettings`` (the protocol), ``SessionBatch`` (which sessions), ``METHODS`` and the notebooks' grids (``DRIFTS``, ``Q_VALUES``, ``TARGET_ANGLES``) |
| ``reference.py`` | numpy factor analysis: ``FAParams``, ``fit_fa``, ``fa_posterior_mean`` (eq. 1), ``align_loadings``; the numpy closed loop: ``run_session``, ``SessionLog``, ``default_target`` |
| ``models.py`` | ``StimResponseModel`` (eqs. 2-4), ``MiSOBaseline`` (eq. 5), ``RandomChoice``, ``make_method`` |
| ``experiments.py`` | drivers: ``compare_methods`` (numpy or torch), the memoised sessions behind the widgets (``state_dependence``, ``target_view``, ``drift_curves``) |
| ``fast.py`` | torch: ``run_sessions`` (a ``SessionBatch`` batched, CPU or CUDA, same random streams), split along the session's stages |
| ``claims.py`` | ``CLAIMS``: the chapter's registered claims (rules, seeds, sizes, rivals) and its deviations |
| ``evidence.py`` | what each claim records (value, card text, measured rival), from the notebooks' runs |
| ``figures.py`` | results to figures (matplotlib panels, plotly widgets); draws drivers' results only |

See: book/omiso/03-closing-the-loop.ipynb
"""

import lazy_loader as _lazy

#: reference name -> fast name where the batched signature differs (seeds, not simulators)
PAIRS = {"run_session": "run_sessions"}

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
