r"""
# Sufficient decision datasets for linear programs

Omar Bennouna, Amine Bennouna, Saurabh Amin, Asuman Ozdaglar. *What Data Enables Optimal
Decisions? An Exact Characterization for Linear Optimization.* NeurIPS 2025.
[arXiv:2505.21692](https://arxiv.org/abs/2505.21692)

**Read this first: what is reconstructed.** Only the abstract, the opening of the
introduction and secondary summaries could be read. The definition of a sufficient decision
dataset and the statement "sufficient iff the span of the data contains the relevant
directions" come from them. The MILP that finds one relevant direction, the iterative
construction, the least-cost MILP, the decoder and the top-k closed form are
**reconstructed** by us and checked numerically against each other; equation numbers below
are ours, not the paper's.

## Problem

A linear program $\min_{x \in X} c^\top x$ over a known polytope
$X = \{x : Gx \le h,\ Ax = b\}$ with an unknown cost $c$ in an open convex set $C$
(here a box). A dataset $D = \{q_1, \dots, q_N\}$ reveals $s = (q_i^\top c)_i$. $D$ is
*sufficient* when the observations determine the optimal set $X^*(c)$ for every $c \in C$:

$$\text{(1)}\quad c, c' \in C,\ c - c' \perp \operatorname{span} D
\;\Rightarrow\; X^*(c) = X^*(c').$$

## Characterisation

$$\text{(2)}\quad \Delta(X, C) = \{x - x' : x, x' \in X^*(c) \text{ for some } c \in C\},
\qquad S^* = \operatorname{span} \Delta(X, C),$$
$$\text{(3)}\quad D \text{ sufficient} \iff S^* \subseteq \operatorname{span} D,
\qquad d^* = \dim S^* \text{ is the size of a minimal sufficient dataset.}$$

## One relevant direction by MILP (reconstructed)

For a direction $w$ maximise $w^\top (x - x')$ over $c \in C$ (closed inner box, margin
$10^{-6}$), $x, x' \in X$ and one dual certificate shared by both:

$$\text{(4)}\quad c + G^\top \lambda + A^\top \mu = 0,\ \lambda \ge 0,\quad
\lambda_i \le M^\lambda z_i,\quad h_i - G_i x \le M^s_i (1 - z_i),\quad
h_i - G_i x' \le M^s_i (1 - z_i),\quad z \in \{0, 1\}^m,$$

with $M^s_i = \max_{x \in X} (h_i - G_i x)$ (one LP per row). The optimum is positive iff
some reachable optimal face has width along $w$. Repeating with $w \perp \operatorname{span} D$
and adding $\delta = x - x'$ to $D$ builds a basis of $S^*$ in $d^* + 1$ MILPs.

## Hiring (top-k, closed form, ours)

$X = \{x \in [0, 1]^n : \sum x = k\}$, values $v \in \prod (l_i, u_i)$, cost $c = -v$.
Candidates $i, j$ are a *relevant pair* iff some $t \in (\max(l_i, l_j), \min(u_i, u_j))$ has

$$\text{(5)}\quad F(t) \le k - 1 \le F(t) + U(t),\quad
F(t) = \#\{\ell \ne i, j : l_\ell \ge t\},\quad U(t) = \#\{\ell \ne i, j : l_\ell < t < u_\ell\}.$$

$S^* = \operatorname{span}\{e_i - e_j : (i, j) \text{ relevant}\}$ and $d^*$ = #vertices
$-$ #components of the relevant graph.

## Prices and refutation (ours)

$$\text{(6)}\quad \min_{y \in \{0,1\}^K} \sum_j \kappa_j y_j \ \text{ s.t. }
\sum_j \alpha_{jl} q_j = b_l,\ |\alpha_{jl}| \le M y_j \qquad \text{(the least-cost MILP)},$$
$$\text{(7)}\quad \hat r = \frac{1}{T} \sum_t \mathbb 1\{X^*(c_t) \ne X^*(c'_t)\},
\qquad c'_t - c_t \perp \operatorname{span} D \qquad \text{(the Monte Carlo violation rate)}.$$

The lesson, book/lp_sufficiency/index.md, displays (1)-(7) with the labels
``lp_sufficiency-eq1`` ... ``lp_sufficiency-eq7``; the kernels' ``# eq. (n)`` comments cite them.


## Transportation (the scaling example, ours)

An $r \times s$ transportation polytope
$X = \{x \ge 0 : \sum_j x_{ij} = a_i,\ \sum_i x_{ij} = b_j\}$ has dimension $(r-1)(s-1)$:
the minimal dataset size when $C = \mathbb{R}^d$ (Prop. 4). With a box $C$ of growing
half-width around a fixed cost, $d^*$ climbs from $0$ to $(r-1)(s-1)$.

## Deviations from the paper

* The MILP (4), the stopping rule, the least-cost MILP, the decoder and the hiring closed
  forms are reconstructed (the paper body could not be read); equation numbers are ours.
* $C$ is open; the MILP works on the closed inner box with margin $10^{-6}$.
* The transportation instance (supplies, demands, cost centre) is ours: the spec's
  $d^* = 0 \to 3 \to 9 \to 12$ was measured on an instance it does not give, so we test the
  shape (from $0$ up to $(r-1)(s-1)$, monotone), not the intermediate values.

## Files

| file | what it holds |
|---|---|
| ``problems.py`` | ``Polytope``, ``BoxSet``, ``topk_problem``, ``transportation_problem``, the instances ``regular_polygon``, ``hiring_instance`` and ``relevant_edges_2d``; the top-k closed form (5): ``topk_relevant_pairs``, ``topk_sdd``, ``topk_least_cost`` |
| ``reference.py`` | numpy + HiGHS: ``find_direction`` (4), ``minimal_sdd``, ``is_sufficient`` (3), ``least_cost_sdd``, ``decode``, ``sample_equivalent_pairs`` and ``violation_rate_mc`` (1), ``span_rank``, ``same_span`` |
| ``fast.py`` | torch, batched over costs: ``violation_flags``, ``decode`` (the batched ``reference.decode``) |
| ``settings.py`` | the frozen settings of each experiment family, validated once: ``GeometrySettings``, ``TransportSettings``, ``SpanSettings``, ``HiringSettings``, ``WidthSettings``, ``DecoderSettings`` |
| ``experiments.py`` | drivers for the notebooks, each taking a settings object or a problem: ``transportation_sweep``, ``span_agreement`` (one hiring instance per seed, through ``lab.core.sweep``), ``width_curve``, ``deletion_check``, ``smallest_interview_set``, ``price_check``, ``decision_margin``, ``random_hiring_instance``, ``decoder_check``, and the widgets' ``geometry_view``, ``hiring_view`` |
| ``claims.py`` | the registry of the chapter's claims, rivals and deviations |
| ``evidence.py`` | what each claim records (value, text, measured rival), built from the drivers' results: one ``*_evidence`` function per claim |
| ``figures.py`` | results to figures (plotly for the widgets, matplotlib panels); imports nothing from the chapter |

See: book/lp_sufficiency/index.md
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
