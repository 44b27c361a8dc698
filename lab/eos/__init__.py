r"""
# Gradient descent at the edge of stability: rates on overparametrised least squares

MacDonald, Min, Palma, Tarmoun, Xu, Vidal. *Convergence Rates for Gradient Descent on the
Edge of Stability in Overparametrised Least Squares.* NeurIPS 2025.
[arXiv:2510.17506](https://arxiv.org/abs/2510.17506)

**Read this first: what is reconstructed.** The full text of the paper was not available
when this module was written. The *claims* (three regimes: subcritical, critical,
supercritical) come from the abstract. The general setting below (a least-squares loss
whose zero set is a manifold), the regime thresholds ($2/\lambda(w_0)$, $2/\lambda_{\min}$,
the supercritical window), the local normal/tangential decomposition and every constant are
**reconstructed** from the abstract plus the literature it builds on (Cohen et al. 2021;
Arora, Li & Panigrahi 2022; Damian, Nichani & Lee 2023; Kreisler et al. 2023; Zhu et al.
2023; Chen & Bruna 2023) and were checked by simulation on the models shipped here, not read
from the paper. Where the paper's constants differ, the paper wins.

## Problem

Parameters $w \in \mathbb{R}^D$, a smooth scalar model $f: \mathbb{R}^D \to \mathbb{R}$
(every model here has scalar output, $n = 1$), a target $y \neq 0$:

$$L(w) = \tfrac12 (f(w) - y)^2, \qquad M = \{w : f(w) = y\}, \qquad r = f(w) - y.$$

$M$ is a $(D-1)$-dimensional manifold of global minimisers. At $p \in M$ the Hessian of $L$
is $\nabla f(p) \nabla f(p)^\top$, so the **sharpness** of the minimiser $p$ is

$$\lambda(p) = \lVert \nabla f(p) \rVert^2, \qquad \lambda_{\min} = \min_{p \in M} \lambda(p).$$

Gradient descent with constant step $\eta$: $w_{k+1} = w_k - \eta\, r_k \nabla f(w_k)$.

## The decomposition (reconstructed)

* Across $M$ the residual obeys a quadratic map,
  $r_{k+1} = (1 - \eta \lambda(p_k))\, r_k + c(p_k)\, r_k^2 + O(r_k^3)$: stable iff
  $\eta\lambda < 2$, a flip (period-doubling) bifurcation at $\eta\lambda = 2$.
* Along $M$ the projected minimiser moves like Riemannian gradient descent on the sharpness
  with a step proportional to the oscillation energy:
  $p_{k+1} \approx p_k - c'\, \eta^2 r_k^2\, \nabla_M \lambda(p_k)$.
* Regimes, with $\lambda_0 = \lambda(w_0)$: **stable** $\eta < 2/\lambda_0$;
  **subcritical** $2/\lambda_0 < \eta < 2/\lambda_{\min}$ (transient oscillation, then
  linear convergence at rate $|1 - \eta\lambda_\infty|$ to a minimiser with
  $\lambda_{\min} < \lambda_\infty < 2/\eta$); **critical** $\eta = 2/\lambda_{\min}$
  (oscillation forever, power-law convergence to the flattest minimiser); **supercritical**
  $2/\lambda_{\min} < \eta < \eta_{\max}$ (linear convergence to a period-2 orbit that
  straddles the flattest minimiser).

## The running example (exact, not reconstructed)

Scalar factorisation $f(x, y) = xy$, target 1, imbalance $d = x^2 - y^2$:

$$r' = r - \eta r (x^2 + y^2) + \eta^2 r^2 (r + 1), \qquad d' = d\,(1 - \eta^2 r^2),$$
$$\lambda_M = \sqrt{d^2 + 4}, \qquad \lambda_{\min} = 2 \text{ at } \pm(1, 1), \qquad
\eta_c = 1, \qquad a' = a(1 + \eta - \eta a^2) \text{ on } x = y = a.$$

Measured here (not from the paper): the balanced 2-cycle loses stability by period doubling
at $\eta = \sqrt5 - 1 \approx 1.2361$ (its multiplier is $1 - 8\epsilon - 2\epsilon^2$ with
$\epsilon = \eta - 1$; the transverse multiplier is $3 - 2\eta$), which closes the
supercritical window for the xy model. The 2-cycle itself is explicit: with
$u_\pm = \tfrac12\big(1 + \eta \pm \sqrt{(1+\eta)^2 - 4}\big)$ (the nontrivial roots of
$(1 - \eta r_1)(1 - \eta r_2) = 1$ on $x = y$), $r_\pm = (1 - u_\mp)/\eta$, so the amplitude
is $\tfrac12 (r_+ - r_-) = \sqrt{(\eta - 1)(\eta + 3)}/(2\eta) \approx \sqrt{\eta - 1}$.

Measured with this module (float64, start on $M$ with sharpness $\lambda_0$, residual
$10^{-3}$; reproduced by ``tests/test_eos.py``):

| regime | $\eta$ | $\lambda_0$ | outcome |
|---|---|---|---|
| subcritical | 0.85 | 2.6 | last $\lvert r\rvert \ge 10^{-3}$ at $k = 82$; $\lambda_\infty = 2.2237 < 2/\eta$; tail rate $0.89016 = \lvert 1 - \eta\lambda_\infty\rvert$ |
| critical | 1.00 | 2.3 | $\lvert x - y\rvert \sim k^{-0.501}$, $\lambda - 2 \sim k^{-1.001}$ on $k \in [10^3, 10^5]$ |
| supercritical | 1.05 | 2.6 | $\lvert x-y\rvert < 10^{-10}$ from $k = 412$; 2-cycle $r \in \{4/21, -5/21\}$ |
| divergent | $> 4/\lambda_0 = 1.538$ | 2.6 | $\lvert r\rvert > 10^6$: blow-up iff $\eta\lambda_0 > 4$ (to $10^{-6}$), the catapult bound |
| beyond the window | $(\sqrt5 - 1, 4/\lambda_0)$ | 2.6 | period doubling of the 2-cycle, then chaos; bounded |

Generalisations shipped: the depth-$q$ product $f(w) = \prod_i w_i$
($\lambda_{\min} = q|y|^{2-2/q}$) and the two-layer scalar model $f(u, v) = \langle u, v\rangle$
($\lambda_{\min} = 2|y|$). A tiny MLP on scikit-learn's digits is the "real network" contrast.

Reference kernels are numpy float64 and each line sits beside the equation it implements.
The fast path ``gd_batched`` runs many trajectories at once in torch (CPU or CUDA) with the
same operation order, so it agrees with ``gd`` bit for bit on CPU.

See: book/eos/01-three-regimes.ipynb
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.optimize import brentq

from ..core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)

__all__ = [
    "ScalarModel",
    "XYModel",
    "ProductModel",
    "InnerProductModel",
    "Trajectory",
    "BatchedTrajectory",
    "RegimeThresholds",
    "MLPRun",
    "DIVERGENCE_THRESHOLD",
    "gd",
    "gd_batched",
    "sharpness_on_manifold",
    "hessian_sharpness",
    "lambda_min",
    "point_on_manifold",
    "distance_to_flattest",
    "classify_regime",
    "regime_thresholds",
    "fit_power_law",
    "fit_linear_rate",
    "period_two_orbit",
    "tangential_normal_split",
    "imbalance",
    "envelope",
    "sharpness_hvp",
    "mlp_digits_gd",
]

NB1 = "book/eos/01-three-regimes.ipynb"
NB2 = "book/eos/02-rates-and-bifurcation.ipynb"
NB3 = "book/eos/03-real-network.ipynb"

#: ``gd`` stops and flags ``diverged`` once ``|r|`` exceeds this (or becomes non-finite).
DIVERGENCE_THRESHOLD = 1e6

Regime = Literal["stable", "subcritical", "critical", "supercritical", "divergent"]


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


def _check_target(target: Any) -> float:
    target = check_real("target", target)
    if target == 0.0:
        raise ValueError(
            "target must be nonzero (got 0.0): at y = 0 the zero set {f = 0} contains the "
            "origin, where grad f = 0, so it is not a manifold"
        )
    return target


class ScalarModel:
    """A scalar-output model whose zero-residual set ``M = {f = target}`` is a manifold.

    Subclasses (``XYModel``, ``ProductModel``, ``InnerProductModel``) provide ``f``,
    ``grad``, ``hessian`` (of ``f``), closed forms for the flattest minimiser, the projection
    onto ``M`` along the gradient-flow invariants, and the 1-D map on the balanced set.
    Instances are small, immutable in practice and picklable.

    See: book/eos/01-three-regimes.ipynb
    """

    name: str = "scalar"
    dim: int = 0
    target: float = 1.0

    # -- the model ----------------------------------------------------------------------------
    def f(self, w: np.ndarray) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def grad(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def hessian(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def f_torch(self, w):  # pragma: no cover - abstract
        """``f`` on a torch tensor of shape ``(..., dim)`` (differentiable)."""
        raise NotImplementedError

    # -- the loss -----------------------------------------------------------------------------
    def residual(self, w: np.ndarray) -> float:
        """``r = f(w) - y``."""
        return self.f(w) - self.target

    def loss(self, w: np.ndarray) -> float:
        """``L(w) = 1/2 r^2``."""
        r = self.residual(w)
        return 0.5 * r * r

    def loss_hessian(self, w: np.ndarray) -> np.ndarray:
        """Full Hessian of ``L``: ``grad f grad f^T + r * hess f``."""
        g = self.grad(w)
        return np.outer(g, g) + self.residual(w) * self.hessian(w)  # eq: H = J^T J + r D^2 f

    # -- geometry (closed forms, implemented by subclasses) -----------------------------------
    def flattest(self) -> tuple[float, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def with_value(self, w: np.ndarray, value: float) -> np.ndarray:  # pragma: no cover
        """The point on the gradient-flow line through ``w`` where ``f = value``."""
        raise NotImplementedError

    def project(self, w: np.ndarray) -> np.ndarray:
        """Projection onto ``M`` along the gradient-flow line through ``w``.

        Gradient flow conserves the model's balancedness invariants and crosses ``M``
        orthogonally, so this is the minimiser that gradient flow from ``w`` reaches.
        """
        return self.with_value(w, self.target)

    def manifold_sharpness(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """``||grad f(p)||^2`` at ``p = project(w)``, vectorised over rows of ``w``."""
        raise NotImplementedError

    def sharpness_point(self, sharpness: float) -> np.ndarray:  # pragma: no cover - abstract
        """A point of ``M`` with the given sharpness (``>= lambda_min``)."""
        raise NotImplementedError

    def balanced(self, a: float) -> np.ndarray:  # pragma: no cover - abstract
        """The point of the balanced (GD-invariant) line with scalar coordinate ``a``."""
        raise NotImplementedError

    def balanced_map(self, a: float, eta: float) -> float:  # pragma: no cover - abstract
        """One GD step restricted to the balanced line, ``a -> F(a)``."""
        raise NotImplementedError

    def balanced_fixed_point(self) -> float:  # pragma: no cover - abstract
        """The coordinate ``a*`` of the flattest minimiser on the balanced line."""
        raise NotImplementedError

    def imbalance(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def distance_to_flattest(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def with_target(self, target: float) -> ScalarModel:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- GD kernels ---------------------------------------------------------------------------
    def _gd_loop(self, w0: np.ndarray, eta: float, steps: int):  # pragma: no cover
        raise NotImplementedError

    def _torch_split(self, W):  # pragma: no cover - abstract
        raise NotImplementedError

    def _torch_residual(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _torch_update(self, state, er):  # pragma: no cover - abstract
        raise NotImplementedError

    def _torch_join(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- plumbing -----------------------------------------------------------------------------
    def _key(self) -> tuple:
        return (type(self).__name__, self.dim, self.target)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScalarModel) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class _BilinearModel(ScalarModel):
    """``f(u, v) = <u, v>`` with ``u, v`` in ``R^m``; ``w = (u, v)``.

    Gradient flow and GD both scale ``a = u + v`` and ``b = u - v`` along fixed directions:
    ``a' = (1 - eta r) a``, ``b' = (1 + eta r) b`` (exact). Hence ``f = (|a|^2 - |b|^2)/4``,
    the invariant ``|a| |b|`` is multiplied by ``|1 - eta^2 r^2|`` per step, and on ``M`` the
    sharpness is ``||u||^2 + ||v||^2 = sqrt(4 y^2 + |a|^2 |b|^2)``.
    """

    m: int = 1

    def f(self, w):
        m = self.m
        return float(np.dot(w[:m], w[m:]))  # eq: f = <u, v>

    def grad(self, w):
        m = self.m
        return np.concatenate([w[m:], w[:m]])  # eq: grad f = (v, u)

    def hessian(self, w):
        m = self.m
        h = np.zeros((2 * m, 2 * m))
        h[:m, m:] = np.eye(m)  # eq: d^2 f / du dv = I
        h[m:, :m] = np.eye(m)
        return h

    def f_torch(self, w):
        m = self.m
        return (w[..., :m] * w[..., m:]).sum(-1)

    def flattest(self):
        y, m = self.target, self.m
        s = math.copysign(1.0, y)
        c = math.sqrt(abs(y) / m)
        # eq: lambda_min = 2|y| at u = s v, ||u||^2 = |y|
        return 2.0 * abs(y), np.concatenate([np.full(m, c), np.full(m, s * c)])

    def with_value(self, w, value):
        m = self.m
        w = np.asarray(w, dtype=np.float64)
        a, b = w[..., :m] + w[..., m:], w[..., :m] - w[..., m:]
        A, B = np.sum(a * a, -1), np.sum(b * b, -1)
        # eq: f(s a, b / s) = (s^2 A - B / s^2) / 4 = value  ->  A t^2 - 4 value t - B = 0
        S = np.sqrt(16.0 * value * value + 4.0 * A * B)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (4.0 * value + S) / (2.0 * A) if value >= 0 else 2.0 * B / (S - 4.0 * value)
        if not np.all(np.isfinite(t) & (t > 0)):
            raise ValueError(
                "the gradient-flow line through w never reaches f = "
                f"{value:g} (u + v = 0 or u - v = 0 on the wrong side)"
            )
        s = np.sqrt(t)[..., None]
        a, b = s * a, b / s  # eq: GD/GF rescale a = u + v and b = u - v
        return np.concatenate([(a + b) / 2.0, (a - b) / 2.0], -1)

    def manifold_sharpness(self, w):
        m = self.m
        w = np.asarray(w, dtype=np.float64)
        a, b = w[..., :m] + w[..., m:], w[..., :m] - w[..., m:]
        AB = np.sum(a * a, -1) * np.sum(b * b, -1)
        return np.sqrt(4.0 * self.target**2 + AB)  # eq: lambda_M = sqrt(4 y^2 + |a|^2 |b|^2)

    def sharpness_point(self, sharpness):
        y, m = self.target, self.m
        # eq: alpha beta = |y|, alpha^2 + beta^2 = lambda, alpha >= beta  (u = alpha e, v = beta e)
        alpha2 = 0.5 * (sharpness + math.sqrt(max(sharpness * sharpness - 4.0 * y * y, 0.0)))
        alpha = math.sqrt(alpha2)
        beta = abs(y) / alpha
        e = np.full(m, 1.0 / math.sqrt(m))
        return np.concatenate([alpha * e, math.copysign(beta, y) * e])

    def balanced(self, a):
        m = self.m
        e = np.full(m, 1.0 / math.sqrt(m))
        return np.concatenate([a * e, math.copysign(1.0, self.target) * a * e])

    def balanced_map(self, a, eta):
        return a * (1.0 - eta * (a * a - abs(self.target)))  # eq: a' = a (1 - eta (a^2 - |y|))

    def balanced_fixed_point(self):
        return math.sqrt(abs(self.target))

    def imbalance(self, w):
        m = self.m
        w = np.asarray(w, dtype=np.float64)
        a, b = w[..., :m] + w[..., m:], w[..., :m] - w[..., m:]
        sign = np.where(np.sum(a * b, -1) >= 0, 1.0, -1.0)
        # eq: d = sign(<a, b>) |a| |b|  (= ||u||^2 - ||v||^2 when a || b, e.g. m = 1)
        return sign * np.sqrt(np.sum(a * a, -1) * np.sum(b * b, -1))

    def distance_to_flattest(self, w):
        m, y = self.m, self.target
        w = np.asarray(w, dtype=np.float64)
        u, v = w[..., :m], w[..., m:]
        s = math.copysign(1.0, y)
        c = u + s * v  # the flattest set is {u = s v, ||u||^2 = |y|}: nearest z along u + s v
        nc = np.linalg.norm(c, axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(nc > 0, c / nc, 1.0 / math.sqrt(m)) * math.sqrt(abs(y))
        return np.sqrt(np.sum((u - z) ** 2, -1) + np.sum((v - s * z) ** 2, -1))

    def _gd_loop(self, w0, eta, steps):
        m, y = self.m, self.target
        u, v = w0[:m].copy(), w0[m:].copy()
        ws, rs = [w0.copy()], [float(np.sum(u * v)) - y]
        r, diverged = rs[0], False
        for _ in range(steps):
            er = eta * r  # eq: w' = w - eta r grad f
            u, v = u - er * v, v - er * u  # eq: u' = u - eta r v,  v' = v - eta r u
            r = float(np.sum(u * v)) - y  # eq: r = <u, v> - y
            if not abs(r) <= DIVERGENCE_THRESHOLD:
                diverged = True
                if not math.isfinite(r):
                    break
            ws.append(np.concatenate([u, v]))
            rs.append(r)
            if diverged:
                break
        return np.array(ws), np.array(rs), diverged

    def _torch_split(self, W):
        m = self.m
        return [W[:, :m], W[:, m:]]

    def _torch_residual(self, state):
        u, v = state
        return (u * v).sum(-1) - self.target

    def _torch_update(self, state, er):
        u, v = state
        er = er[:, None]
        return [u - er * v, v - er * u]

    def _torch_join(self, state):
        import torch

        return torch.cat(state, dim=1)

    def _key(self):
        return (type(self).__name__, self.m, self.target)


class XYModel(_BilinearModel):
    """Scalar factorisation ``f(x, y) = x y`` (target 1 by default): the chapter's example.

    ``M = {x y = 1}``, sharpness on ``M`` is ``x^2 + y^2 = sqrt(d^2 + 4)`` with imbalance
    ``d = x^2 - y^2``, ``lambda_min = 2`` at ``+-(1, 1)``, critical step ``eta_c = 1``.

    Parameters
    ----------
    target : float, optional
        Nonzero target ``y`` (default 1.0). ``lambda_min = 2|y|``.

    See: book/eos/01-three-regimes.ipynb
    """

    name = "xy"

    def __init__(self, target: float = 1.0) -> None:
        self.target = _check_target(target)
        self.m = 1
        self.dim = 2

    def f(self, w):
        return float(w[0] * w[1])  # eq: f = x y

    def imbalance(self, w):
        w = np.asarray(w, dtype=np.float64)
        return w[..., 0] ** 2 - w[..., 1] ** 2  # eq: d = x^2 - y^2

    def manifold_sharpness(self, w):
        d = self.imbalance(w)
        return np.sqrt(d * d + 4.0 * self.target**2)  # eq: lambda_M = sqrt(d^2 + 4 y^2)

    def _gd_loop(self, w0, eta, steps):
        # A tight loop on Python floats: ~0.3 us per step, faster than numpy for D = 2.
        t = self.target
        x, y = float(w0[0]), float(w0[1])
        r = x * y - t  # eq: r = x y - 1
        xs, ys, rs = [x], [y], [r]
        diverged = False
        for _ in range(steps):
            er = eta * r
            x, y = x - er * y, y - er * x  # eq: x' = x - eta r y,  y' = y - eta r x
            r = x * y - t  # eq: r' = r - eta r (x^2+y^2) + eta^2 r^2 (r+1)  (same value)
            if not abs(r) <= DIVERGENCE_THRESHOLD:  # also catches NaN / inf
                diverged = True
                if not math.isfinite(r):
                    break
            xs.append(x)
            ys.append(y)
            rs.append(r)
            if diverged:
                break
        return np.column_stack([xs, ys]), np.array(rs), diverged

    def with_target(self, target):
        return XYModel(target)

    def __repr__(self) -> str:
        return f"XYModel(target={self.target!r})"


class InnerProductModel(_BilinearModel):
    """Two-layer scalar-output model ``f(u, v) = <u, v>``, ``u, v`` in ``R^m``, ``w = (u, v)``.

    Sharpness on ``M`` is ``||u||^2 + ||v||^2``, ``lambda_min = 2|y|`` at ``u = sign(y) v``,
    ``||u||^2 = |y|`` (a sphere of flattest minimisers when ``m > 1``). ``m = 1`` is the
    xy model.

    Parameters
    ----------
    m : int
        Width, ``>= 1``.
    target : float
        Nonzero target ``y``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    name = "inner_product"

    def __init__(self, m: int, target: float = 1.0) -> None:
        self.m = check_int("m", m, 1, 10_000)
        self.target = _check_target(target)
        self.dim = 2 * self.m

    def with_target(self, target):
        return InnerProductModel(self.m, target)

    def __repr__(self) -> str:
        return f"InnerProductModel(m={self.m}, target={self.target!r})"


class ProductModel(ScalarModel):
    """Depth-``q`` scalar product ``f(w) = prod_i w_i`` (a depth-``q`` scalar network).

    On ``M``, ``lambda = sum_i prod_{j != i} w_j^2 = y^2 sum_i 1/w_i^2``, minimised at the
    balanced point ``|w_i| = |y|^(1/q)``: ``lambda_min = q |y|^(2 - 2/q)`` (= ``q`` for
    ``y = 1``). Gradient flow conserves every ``w_i^2 - w_j^2``; GD multiplies it by
    ``1 - eta^2 r^2 f^2 / (w_i^2 w_j^2)`` (exact).

    Parameters
    ----------
    depth : int
        Number of factors ``q >= 2`` (``q = 2`` is the xy model).
    target : float
        Nonzero target ``y``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    name = "product"

    def __init__(self, depth: int, target: float = 1.0) -> None:
        self.depth = check_int("depth", depth, 2, 64)
        self.target = _check_target(target)
        self.dim = self.depth
        self.name = f"product{self.depth}"

    # prefix/suffix products: prod_{j != i} w_j without dividing (safe at w_i = 0)
    @staticmethod
    def _others(w: list[float]) -> tuple[float, list[float]]:
        q = len(w)
        pre = [1.0] * q
        for i in range(1, q):
            pre[i] = pre[i - 1] * w[i - 1]
        suf = [1.0] * q
        for i in range(q - 2, -1, -1):
            suf[i] = suf[i + 1] * w[i + 1]
        return pre[q - 1] * w[q - 1], [pre[i] * suf[i] for i in range(q)]

    def f(self, w):
        return float(self._others([float(x) for x in w])[0])  # eq: f = prod_i w_i

    def grad(self, w):
        return np.array(self._others([float(x) for x in w])[1])  # eq: df/dw_i = prod_{j!=i} w_j

    def hessian(self, w):
        q = self.depth
        w = np.asarray(w, dtype=np.float64)
        h = np.zeros((q, q))
        for i in range(q):
            for j in range(q):
                if i != j:
                    mask = np.ones(q, bool)
                    mask[[i, j]] = False
                    h[i, j] = np.prod(w[mask])  # eq: d^2 f / dw_i dw_j = prod_{k != i, j} w_k
        return h

    def f_torch(self, w):
        return w.prod(-1)

    def flattest(self):
        q, y = self.depth, self.target
        c = abs(y) ** (1.0 / q)
        w = np.full(q, c)
        w[0] = math.copysign(c, y)
        return q * abs(y) ** (2.0 - 2.0 / q), w  # eq: lambda_min = q |y|^(2 - 2/q)

    def _flow_coordinates(self, w):
        """Solve prod_i (t + c_i) = value^2 for t = min_i w_i^2 along the flow line."""
        w = np.asarray(w, dtype=np.float64)
        w2 = w * w
        c = w2 - w2.min(-1, keepdims=True)  # eq: c_i = w_i^2 - min_j w_j^2 (flow invariants)
        return w, c

    def _solve_t(self, c, value):
        # eq: h(s) = sum_i log(e^s + c_i) - log(value^2) = 0,  t = e^s. h is convex and
        # increasing with h' in [1, q], so Newton converges from any start (monotonically
        # after the first step).
        logv2 = math.log(value * value)
        s = np.full(c.shape[:-1], logv2 / self.depth)
        for _ in range(200):
            e = np.exp(s)[..., None]
            h = np.sum(np.log(e + c), -1) - logv2
            dh = np.sum(e / (e + c), -1)
            step = h / dh
            s = s - step
            if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(s))):
                break
        return np.exp(s)

    def with_value(self, w, value):
        w, c = self._flow_coordinates(w)
        if value == 0.0:
            t = np.zeros(c.shape[:-1])
        else:
            t = self._solve_t(c, value)
        sigma = np.where(w >= 0, 1.0, -1.0)
        # the flow line passes through w_min = 0: flip the smallest factor if the sign of the
        # product does not match the sign of the value
        wrong = np.prod(sigma, -1) * math.copysign(1.0, value) < 0
        if np.any(wrong):
            idx = np.argmin(np.abs(w), -1)
            flip = np.where(wrong, -1.0, 1.0)
            np.put_along_axis(
                sigma,
                np.asarray(idx)[..., None],
                np.take_along_axis(sigma, np.asarray(idx)[..., None], -1) * flip[..., None],
                -1,
            )
        return sigma * np.sqrt(t[..., None] + c)  # eq: p_i^2 = t + c_i

    def manifold_sharpness(self, w):
        w, c = self._flow_coordinates(w)
        t = self._solve_t(c, self.target)
        p2 = t[..., None] + c
        return self.target**2 * np.sum(1.0 / p2, -1)  # eq: lambda_M = y^2 sum_i 1 / p_i^2

    def sharpness_point(self, sharpness):
        q, y = self.depth, self.target
        b_star = abs(y) ** (1.0 / q)
        lam_min = q * abs(y) ** (2.0 - 2.0 / q)
        if sharpness <= lam_min * (1.0 + 1e-15):
            return self.flattest()[1]

        # w = (a, b, ..., b), a b^(q-1) = |y|, a >= b:  lambda(b) = b^(2q-2) + (q-1) y^2 / b^2
        def lam(b):
            return b ** (2 * q - 2) + (q - 1) * y * y / (b * b) - sharpness

        b_lo = math.sqrt((q - 1) * y * y / sharpness)
        b = brentq(lam, b_lo, b_star, xtol=1e-15, rtol=4 * np.finfo(float).eps)
        w = np.full(q, b)
        w[0] = math.copysign(abs(y) / b ** (q - 1), y)
        return w

    def balanced(self, a):
        w = np.full(self.depth, float(a))
        w[0] = math.copysign(1.0, self.target) * a
        return w

    def balanced_map(self, a, eta):
        q = self.depth
        # eq: a' = a - eta (a^q - |y|) a^(q-1)
        return a - eta * (a**q - abs(self.target)) * a ** (q - 1)

    def balanced_fixed_point(self):
        return abs(self.target) ** (1.0 / self.depth)

    def imbalance(self, w):
        w2 = np.asarray(w, dtype=np.float64) ** 2
        return w2.max(-1) - w2.min(-1)  # eq: spread max_i w_i^2 - min_i w_i^2 (= |x^2 - y^2|)

    def distance_to_flattest(self, w):
        w = np.asarray(w, dtype=np.float64)
        c = abs(self.target) ** (1.0 / self.depth)
        sigma = np.where(w >= 0, 1.0, -1.0)
        wrong = np.prod(sigma, -1) * math.copysign(1.0, self.target) < 0
        # nearest balanced minimiser: keep the signs, flip the smallest factor if needed
        dist2 = np.sum((w - sigma * c) ** 2, -1)
        fix = 4.0 * c * np.min(np.abs(w), -1)  # |(-|w_i| - c)|^2 - (|w_i| - c)^2 = 4 c |w_i|
        return np.sqrt(dist2 + np.where(wrong, fix, 0.0))

    def _gd_loop(self, w0, eta, steps):
        t = self.target
        w = [float(x) for x in w0]
        f, others = self._others(w)
        r = f - t  # eq: r = prod_i w_i - y
        ws, rs = [list(w)], [r]
        diverged = False
        for _ in range(steps):
            er = eta * r
            w = [
                wi - er * oi for wi, oi in zip(w, others, strict=True)
            ]  # eq: w_i' = w_i - eta r prod_{j!=i} w_j
            f, others = self._others(w)
            r = f - t
            if not abs(r) <= DIVERGENCE_THRESHOLD:
                diverged = True
                if not math.isfinite(r):
                    break
            ws.append(w)
            rs.append(r)
            if diverged:
                break
        return np.array(ws, dtype=np.float64), np.array(rs), diverged

    def _torch_split(self, W):
        return [W[:, i] for i in range(self.depth)]

    def _torch_prefix(self, state):
        q = len(state)
        pre = [None] * q
        pre[1] = state[0]
        for i in range(2, q):
            pre[i] = pre[i - 1] * state[i - 1]
        suf = [None] * q
        suf[q - 2] = state[q - 1]
        for i in range(q - 3, -1, -1):
            suf[i] = suf[i + 1] * state[i + 1]
        others = [suf[0]] + [pre[i] * suf[i] for i in range(1, q - 1)] + [pre[q - 1]]
        return pre[q - 1] * state[q - 1], others

    def _torch_residual(self, state):
        return self._torch_prefix(state)[0] - self.target

    def _torch_update(self, state, er):
        _, others = self._torch_prefix(state)
        return [wi - er * oi for wi, oi in zip(state, others, strict=True)]

    def _torch_join(self, state):
        import torch

        return torch.stack(state, dim=1)

    def with_target(self, target):
        return ProductModel(self.depth, target)

    def _key(self):
        return ("ProductModel", self.depth, self.target)

    def __repr__(self) -> str:
        return f"ProductModel(depth={self.depth}, target={self.target!r})"


# ---------------------------------------------------------------------------------------------
# Argument checks shared by the public functions
# ---------------------------------------------------------------------------------------------


def _check_model(model: Any) -> ScalarModel:
    if not isinstance(model, ScalarModel) or type(model) is ScalarModel:
        raise TypeError(
            "model must be an XYModel, ProductModel or InnerProductModel "
            f"(got {type(model).__name__})"
        )
    return model


def _check_point(model: ScalarModel, name: str, w: Any, *, batch: bool = False) -> np.ndarray:
    ndim = (1, 2) if batch else 1
    arr = check_array(name, w, ndim=ndim)
    if arr.shape[-1] != model.dim:
        raise ValueError(
            f"{name} must have {model.dim} entries per point for {model!r} (got shape {arr.shape})"
        )
    return arr


def _model_for_target(model: ScalarModel, target: Any) -> ScalarModel:
    if target is None:
        return model
    target = _check_target(target)
    return model if target == model.target else model.with_target(target)


# ---------------------------------------------------------------------------------------------
# Reference GD
# ---------------------------------------------------------------------------------------------


@dataclass
class Trajectory:
    """One GD run. Arrays have ``steps_run + 1`` rows; no NaN is ever stored.

    Attributes
    ----------
    w : ndarray, shape (steps_run + 1, D)
        Iterates ``w_0 .. w_{steps_run}``.
    residual : ndarray, shape (steps_run + 1,)
        ``r_k = f(w_k) - y`` (signed; oscillates in sign at the edge of stability).
    loss : ndarray, shape (steps_run + 1,)
        ``L(w_k) = r_k^2 / 2``.
    sharpness : ndarray, shape (steps_run + 1,)
        Sharpness of the *projected minimiser*: ``||grad f(p_k)||^2`` with ``p_k`` the
        projection of ``w_k`` onto ``M`` along the gradient-flow line (for xy:
        ``sqrt(d_k^2 + 4)``). Not the Hessian eigenvalue at ``w_k`` itself, which oscillates
        with ``r_k`` (see ``hessian_sharpness``).
    diverged : bool
        ``|r|`` exceeded ``DIVERGENCE_THRESHOLD`` (the last stored row is that state) or
        became non-finite (the run stops before that state).
    steps_run : int
        Number of GD steps stored.
    eta, target : float
        Step size and target of the run.

    See: book/eos/01-three-regimes.ipynb
    """

    w: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    sharpness: np.ndarray
    diverged: bool
    steps_run: int
    eta: float
    target: float
    model: ScalarModel = field(repr=False)

    @property
    def k(self) -> np.ndarray:
        """Step indices ``0 .. steps_run``."""
        return np.arange(self.steps_run + 1)


def gd(
    model: ScalarModel,
    w0: Any,
    eta: float,
    steps: int,
    target: float | None = None,
) -> Trajectory:
    """Plain full-batch gradient descent on ``L(w) = 1/2 (f(w) - y)^2`` (numpy float64).

    ``w_{k+1} = w_k - eta * (f(w_k) - y) * grad f(w_k)``. Stops early and sets
    ``diverged=True`` when ``|r| > 1e6`` or ``r`` becomes non-finite; arrays are truncated to
    the steps actually run, so no NaN is returned.

    Parameters
    ----------
    model : ScalarModel
        ``XYModel()``, ``ProductModel(q)`` or ``InnerProductModel(m, y)``.
    w0 : array_like, shape (D,)
        Finite initial point (use ``point_on_manifold`` for an EoS start, not a far point: far
        starts with large steps are catapults).
    eta : float
        Step size, ``> 0``.
    steps : int
        Number of steps, ``>= 1``.
    target : float, optional
        Nonzero target ``y``; defaults to ``model.target`` (1.0 for xy/product).

    Returns
    -------
    Trajectory
        ``.w``, ``.residual``, ``.loss``, ``.sharpness`` (sharpness of the projected
        minimiser, i.e. ``||grad f||^2`` at the projection of ``w_k`` onto ``M``),
        ``.diverged``, ``.steps_run``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = _model_for_target(_check_model(model), target)
    w0 = _check_point(model, "w0", w0)
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1, 100_000_000)
    W, r, diverged = model._gd_loop(w0, eta, steps)
    with np.errstate(all="ignore"):
        lam = model.manifold_sharpness(W)
    return Trajectory(
        w=W,
        residual=r,
        loss=0.5 * r * r,  # eq: L = r^2 / 2
        sharpness=lam,
        diverged=bool(diverged),
        steps_run=int(W.shape[0] - 1),
        eta=eta,
        target=model.target,
        model=model,
    )


# ---------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------


def sharpness_on_manifold(model: ScalarModel, w: Any) -> float | np.ndarray:
    """Sharpness of the minimiser reached from ``w`` along the gradient-flow line.

    ``lambda_M(w) = ||grad f(p)||^2`` with ``p`` the projection of ``w`` onto ``M`` along the
    gradient-flow invariants (closed form ``sqrt(d^2 + 4 y^2)`` for xy, ``sqrt(4 y^2 +
    |u+v|^2 |u-v|^2)`` for ``<u, v>``, a 1-D Newton solve for the product model). This is the
    quantity the rate fits use; it does not oscillate with ``r``.

    Parameters
    ----------
    model : ScalarModel
    w : array_like, shape (D,) or (N, D)

    Returns
    -------
    float or ndarray of shape (N,)

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    arr = _check_point(model, "w", w, batch=True)
    lam = model.manifold_sharpness(arr)
    return float(lam) if arr.ndim == 1 else lam


def hessian_sharpness(model: ScalarModel, w: Any) -> float:
    """Top eigenvalue of the full Hessian of ``L = 1/2 (f - y)^2`` at ``w`` (numpy eigvalsh).

    Off ``M`` this is ``lambda_max(grad f grad f^T + r hess f)`` and oscillates with ``r``;
    on ``M`` it equals ``sharpness_on_manifold``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    w = _check_point(model, "w", w)
    return float(np.linalg.eigvalsh(model.loss_hessian(w))[-1])


def lambda_min(model: ScalarModel) -> tuple[float, np.ndarray]:
    """The optimal flatness ``lambda_min = min_{p in M} lambda(p)`` and one flattest minimiser.

    Closed forms: xy ``(2|y|, (sqrt|y|, sign(y) sqrt|y|))``; product ``q |y|^(2-2/q)`` at
    ``|w_i| = |y|^(1/q)``; ``<u, v>`` ``2|y|`` at ``u = sign(y) v``, ``||u||^2 = |y|``.
    The flattest minimiser is not unique (e.g. ``+-(1, 1)`` for xy); any one is returned.

    See: book/eos/01-three-regimes.ipynb
    """
    value, w = _check_model(model).flattest()
    return float(value), w


def point_on_manifold(model: ScalarModel, sharpness: float, offset: float = 0.0) -> np.ndarray:
    """A start point whose projected minimiser has the prescribed sharpness, off ``M`` by ``offset``.

    Picks a canonical minimiser ``p`` with ``lambda(p) = sharpness`` (xy: ``x >= y > 0``;
    product: ``(a, b, ..., b)`` with ``a >= b``; ``<u, v>``: ``u, v`` along ``(1, ..., 1)``)
    and moves along the gradient-flow line through ``p`` (which crosses ``M`` orthogonally)
    until ``f - y = offset``. Hence ``sharpness_on_manifold(model, w0) == sharpness`` and
    ``f(w0) - y == offset`` up to round-off.

    Parameters
    ----------
    model : ScalarModel
    sharpness : float
        ``>= lambda_min``.
    offset : float
        The residual of the returned point, ``|offset| < |y|``.

    Raises
    ------
    ValueError
        ``"no minimiser has sharpness below lambda_min = ..."`` when ``sharpness <
        lambda_min``.

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    sharpness = check_positive("sharpness", sharpness)
    lam_min, _ = model.flattest()
    if sharpness < lam_min * (1.0 - 1e-12):
        raise ValueError(
            f"no minimiser has sharpness below lambda_min = {lam_min:g} "
            f"(got sharpness={sharpness:g}) for {model!r}"
        )
    y = model.target
    offset = check_range(
        "offset", offset, -abs(y), abs(y), low_inclusive=False, high_inclusive=False
    )
    p = model.sharpness_point(max(sharpness, lam_min))
    return p if offset == 0.0 else model.with_value(p, y + offset)


def distance_to_flattest(model: ScalarModel, w: Any) -> float | np.ndarray:
    """Euclidean distance from ``w`` to the nearest flattest minimiser (all symmetric copies).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = _check_model(model)
    arr = _check_point(model, "w", w, batch=True)
    d = model.distance_to_flattest(arr)
    return float(d) if arr.ndim == 1 else d


def imbalance(model: ScalarModel, w: Any) -> float | np.ndarray:
    """The balancedness coordinate across the valley of minimisers.

    * xy: ``d = x^2 - y^2`` (signed). Exactly ``d' = d (1 - eta^2 r^2)`` under GD, conserved
      by gradient flow, and ``lambda_M = sqrt(d^2 + 4 y^2)``.
    * ``<u, v>``: ``sign(<u+v, u-v>) |u+v| |u-v|``; it obeys the same identity and formula
      and equals ``||u||^2 - ||v||^2`` when ``u+v`` and ``u-v`` are parallel (always for
      ``m = 1``). Zero iff the projected minimiser is flattest.
    * product: the spread ``max_i w_i^2 - min_i w_i^2 >= 0`` (``|x^2 - y^2|`` for depth 2);
      zero iff balanced. Pairwise, ``w_i^2 - w_j^2`` is multiplied by
      ``1 - eta^2 r^2 f^2 / (w_i^2 w_j^2)`` per step.

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    arr = _check_point(model, "w", w, batch=True)
    d = model.imbalance(arr)
    return float(d) if arr.ndim == 1 else d


def tangential_normal_split(
    model: ScalarModel, w_k: Any, w_k1: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Split the GD step ``w_k1 - w_k`` into parts tangent and normal to ``M``.

    The normal is ``n = grad f(p) / ||grad f(p)||`` at ``p``, the projection of ``w_k`` onto
    ``M``; ``dnorm = <dw, n> n`` and ``dpar = dw - dnorm``. Near ``M`` the normal part is the
    oscillation (size ``~ eta |r|``) and the tangential part the sharpness-reducing drift
    (size ``~ eta^2 r^2``).

    Returns
    -------
    (dpar, dnorm) : tuple of ndarray, shape (D,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = _check_model(model)
    w_k = _check_point(model, "w_k", w_k)
    w_k1 = _check_point(model, "w_k1", w_k1)
    p = model.project(w_k)
    n = model.grad(p)
    n = n / np.linalg.norm(n)  # eq: normal space of M at p = span(grad f(p))
    dw = w_k1 - w_k
    dnorm = float(np.dot(dw, n)) * n
    return dw - dnorm, dnorm


def envelope(r: Any) -> np.ndarray:
    """Oscillation envelope ``e_k = max(|r_k|, |r_{k+1}|)`` (length ``len(r) - 1``).

    Fit rates on this (or on ``|x - y|``), never on the sign-alternating ``r_k``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    r = check_array("r", r, ndim=1, min_size=2)
    a = np.abs(r)
    return np.maximum(a[:-1], a[1:])


# ---------------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------------


def _is_float32(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and str(dt).replace("torch.", "") == "float32"


def _window_mask(k: np.ndarray, window: Any, name: str = "window") -> np.ndarray:
    if window is None:
        return np.ones(k.shape, bool)
    win = check_array(name, window, shape=(2,))
    lo, hi = float(win[0]), float(win[1])
    if not lo <= hi:
        raise ValueError(f"{name} must be (low, high) with low <= high (got {tuple(win)})")
    return (k >= lo) & (k <= hi)


def fit_power_law(k: Any, err: Any, window: Any = None) -> tuple[float, float]:
    """Least-squares fit of ``err ~ c k^(-p)`` in log-log space.

    Parameters
    ----------
    k : array_like, shape (N,)
        Step indices (only ``k > 0`` are used).
    err : array_like, shape (N,)
        Error signal (only ``err > 0`` are used), e.g. ``|x_k - y_k|`` or
        ``lambda_k - lambda_min``. Warns when ``err`` is float32.
    window : (low, high), optional
        Restrict the fit to ``low <= k <= high``.

    Returns
    -------
    (exponent, prefactor) : tuple of float
        ``p`` (positive for decay) and ``c``.

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    if _is_float32(err):
        warnings.warn(
            "float32 cannot resolve the critical power law beyond ~1e4 steps; use float64",
            RuntimeWarning,
            stacklevel=2,
        )
    k = check_array("k", k, ndim=1)
    err = check_array("err", err, ndim=1)
    if k.shape != err.shape:
        raise ValueError(f"k and err must have the same shape (got {k.shape} and {err.shape})")
    mask = _window_mask(k, window) & (k > 0) & (err > 0)
    if mask.sum() < 2:
        raise ValueError(
            f"fit_power_law needs at least 2 points with k > 0 and err > 0 in the window (got {int(mask.sum())})"
        )
    # eq: log err = log c - p log k
    slope, intercept = np.polyfit(np.log(k[mask]), np.log(err[mask]), 1)
    return float(-slope), float(np.exp(intercept))


def fit_linear_rate(err: Any, window: Any = None) -> float:
    """Linear (geometric) rate ``rho`` of ``|err_k| ~ C rho^k``, least squares on ``log|err_k|``.

    Parameters
    ----------
    err : array_like, shape (N,)
        Signal indexed by step ``k = 0..N-1`` (absolute values are used, so a sign-alternating
        residual is fine); zeros are skipped.
    window : (low, high), optional
        Restrict to steps ``low <= k <= high``; choose it above the round-off floor.

    Returns
    -------
    float
        ``rho`` (``< 1`` for convergence).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    err = np.abs(check_array("err", err, ndim=1))
    k = np.arange(err.size, dtype=np.float64)
    mask = _window_mask(k, window) & (err > 0)
    if mask.sum() < 2:
        raise ValueError(
            f"fit_linear_rate needs at least 2 nonzero points in the window (got {int(mask.sum())})"
        )
    slope, _ = np.polyfit(k[mask], np.log(err[mask]), 1)  # eq: log|err_k| = log C + k log rho
    return float(np.exp(slope))


# ---------------------------------------------------------------------------------------------
# Period-2 orbit and the supercritical window
# ---------------------------------------------------------------------------------------------


def _balanced_fixed_point(model: ScalarModel) -> float:
    return float(model.balanced_fixed_point())


def _balanced_two_cycle(model: ScalarModel, eta: float) -> tuple[float, float] | None:
    """Solve F(F(a)) = a, a != a*, on the balanced line; None when there is no such root."""
    a_star = _balanced_fixed_point(model)

    def G(a: float) -> float:  # eq: G(a) = F(F(a)) - a
        with np.errstate(all="ignore"):
            return float(model.balanced_map(model.balanced_map(np.float64(a), eta), eta) - a)

    # scan outward from a* on a log grid of offsets; the outer cycle point is the first
    # + -> - sign change of G (G > 0 just above a* when the fixed point is a flip-unstable)
    grid = a_star * (1.0 + np.geomspace(1e-9, 2.0, 3000))
    with np.errstate(all="ignore"):
        g = model.balanced_map(model.balanced_map(grid, eta), eta) - grid
    idx = np.nonzero((g[:-1] > 0) & (g[1:] <= 0) & np.isfinite(g[1:]))[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    a1 = brentq(G, grid[i], grid[i + 1], xtol=1e-16, rtol=4 * np.finfo(float).eps, maxiter=200)
    a2 = float(model.balanced_map(np.float64(a1), eta))
    return float(a1), a2


def _two_cycle_multiplier(model: ScalarModel, eta: float, a1: float, a2: float) -> float:
    """Spectral radius of the Jacobian of the two-step GD map at the 2-cycle."""
    eye = np.eye(model.dim)
    j1 = eye - eta * model.loss_hessian(model.balanced(a1))  # eq: D(GD) = I - eta H
    j2 = eye - eta * model.loss_hessian(model.balanced(a2))
    return float(np.max(np.abs(np.linalg.eigvals(j2 @ j1))))


@functools.lru_cache(maxsize=64)
def _period_doubling_eta(model: ScalarModel) -> float:
    """Upper end of the supercritical window: where the 2-cycle's multiplier reaches -1.

    Measured by root finding on the spectral radius of the two-step Jacobian (xy: exactly
    sqrt(5) - 1; the transverse multiplier 3 - 2 eta stays inside the unit disk there).
    """
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min

    def rho(eta: float) -> float:
        cyc = _balanced_two_cycle(model, eta)
        if cyc is None:
            return 2.0
        # the margin ignores neutral multipliers (exactly 1): for <u, v> with m > 1 the
        # directions of u + v and u - v are conserved, so the 2-cycles form a family
        return _two_cycle_multiplier(model, eta, *cyc) - 1.0 - 1e-9

    etas = eta_c * (1.0 + np.linspace(1e-3, 1.0, 101))
    prev = etas[0]
    for e in etas[1:]:
        if rho(e) >= 0:
            return float(brentq(rho, prev, e, xtol=1e-13))
        prev = e
    return float(etas[-1])


def period_two_orbit(
    model: ScalarModel, eta: float, *, allow_unstable: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The period-2 orbit of GD on the balanced set, centred on the flattest minimiser.

    On the balanced line (xy: ``x = y = a``; product: all ``|w_i| = a``) GD reduces to a
    1-D map ``F`` (xy: ``a' = a (1 + eta - eta a^2)``). The 2-cycle solves
    ``F(F(a)) = a``, ``a != a*``; it is found by a sign scan and ``scipy.optimize.brentq``.
    For xy it is also explicit: ``r_+- = (1 - u_-+) / eta`` with
    ``u_+- = (1 + eta +- sqrt((1 + eta)^2 - 4)) / 2`` (e.g. ``{4/21, -5/21}`` at
    ``eta = 1.05``), amplitude ``sqrt((eta - 1)(eta + 3)) / (2 eta)``.

    Parameters
    ----------
    model : ScalarModel
    eta : float
        Must lie in the supercritical window ``2/lambda_min < eta < eta_max``
        (``eta_max = sqrt(5) - 1`` for xy; see ``regime_thresholds``).
    allow_unstable : bool
        Return the (unstable) cycle for ``eta >= eta_max`` as well.

    Returns
    -------
    (w_plus, w_minus) : tuple of ndarray, shape (D,)
        The two points; ``w_plus`` is the one with positive residual.

    Raises
    ------
    ValueError
        For ``eta <= 2/lambda_min`` (the flattest minimiser is stable, no 2-cycle) or
        ``eta >= eta_max`` (the cycle has period-doubled; GD does not converge to it).

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    model = _check_model(model)
    eta = check_positive("eta", eta)
    allow_unstable = check_bool("allow_unstable", allow_unstable)
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    if eta <= eta_c:
        raise ValueError(
            f"no period-2 orbit for eta = {eta:g} <= 2/lambda_min = {eta_c:g}: the flattest "
            "minimiser is stable (subcritical or critical regime)"
        )
    eta_max = _period_doubling_eta(model)
    if eta >= eta_max and not allow_unstable:
        raise ValueError(
            f"eta = {eta:g} is outside the supercritical window ({eta_c:g}, {eta_max:.6g}): "
            "the 2-cycle has period-doubled and GD does not converge to it "
            "(pass allow_unstable=True to get it anyway)"
        )
    cyc = _balanced_two_cycle(model, eta)
    if cyc is None:
        raise ValueError(f"no period-2 orbit found on the balanced set for eta = {eta:g}")
    a1, a2 = cyc
    w1, w2 = model.balanced(a1), model.balanced(a2)
    if model.residual(w1) < model.residual(w2):
        w1, w2 = w2, w1
    return w1, w2


# ---------------------------------------------------------------------------------------------
# Regimes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegimeThresholds:
    """Step-size boundaries of the regimes for one model and start point.

    Attributes
    ----------
    lambda0, lambda_min : float
        Sharpness of the start's projected minimiser and the optimal flatness.
    eta_stable : float
        ``2 / lambda0``: below it the start is stable (no EoS phase).
    eta_critical : float
        ``2 / lambda_min``.
    critical_band : (float, float)
        Steps labelled "critical": ``|eta lambda_min / 2 - 1| <= critical_rtol``.
    eta_period_doubling : float
        End of the supercritical window: the balanced 2-cycle period-doubles
        (``sqrt(5) - 1 = 1.2361`` for xy).
    eta_blowup : float
        Smallest step at which GD from ``w0`` blows up (``|r| > 1e6``) within
        ``probe_steps``, by bisection (``inf`` if none up to ``2 * eta_period_doubling``).
        For xy started near ``M`` this is ``4 / lambda0`` (measured to 1e-6).
    eta_divergent : float
        ``min(eta_period_doubling, eta_blowup)``: the badge says "divergent" from here.

    See: book/eos/01-three-regimes.ipynb
    """

    lambda0: float
    lambda_min: float
    eta_stable: float
    eta_critical: float
    critical_band: tuple[float, float]
    eta_period_doubling: float
    eta_blowup: float
    eta_divergent: float


def _blows_up(model: ScalarModel, w0: np.ndarray, eta: float, probe_steps: int) -> bool:
    _, _, diverged = model._gd_loop(w0, eta, probe_steps)
    return bool(diverged)


def classify_regime(
    model: ScalarModel,
    eta: float,
    w0: Any,
    *,
    critical_rtol: float = 1e-3,
    probe_steps: int = 2000,
) -> Regime:
    """Which regime GD from ``w0`` with step ``eta`` is in.

    With ``lambda0 = sharpness_on_manifold(model, w0)``, ``eta_c = 2 / lambda_min`` and
    ``eta_max`` the period-doubling step of the balanced 2-cycle (``sqrt(5) - 1`` for xy):

    * ``"divergent"``: ``eta >= eta_max`` (beyond the theorem: period-4, chaos, then
      blow-up), or GD from ``w0`` actually blows up (``|r| > 1e6``) within ``probe_steps``
      steps (a catapult from a sharp start). Measured for xy started near ``M``: GD blows
      up iff ``eta > 4 / lambda0`` (to 1e-6, for ``lambda0`` in ``[2.05, 5]``, ``r0`` =
      1e-3 or 1e-6), the catapult bound of Lewkowycz et al. 2020; so from ``lambda0 = 3.5``
      it blows up for ``eta > 1.143``, inside the supercritical window;
    * ``"critical"``: ``|eta / eta_c - 1| <= critical_rtol`` (default 1e-3, i.e. a band of
      +-0.001 around ``eta_c = 1`` for xy);
    * ``"stable"``: ``eta < 2 / lambda0``;
    * ``"subcritical"``: ``2 / lambda0 <= eta < eta_c``;
    * ``"supercritical"``: ``eta_c < eta < eta_max``.

    ``probe_steps=0`` disables the blow-up probe.

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    eta = check_positive("eta", eta)
    w0 = _check_point(model, "w0", w0)
    critical_rtol = check_range("critical_rtol", critical_rtol, 0.0, 0.5)
    probe_steps = check_int("probe_steps", probe_steps, 0, 10_000_000)
    lam0 = float(model.manifold_sharpness(w0))
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    if eta >= _period_doubling_eta(model):
        return "divergent"
    if probe_steps and _blows_up(model, w0, eta, probe_steps):
        return "divergent"
    if abs(eta / eta_c - 1.0) <= critical_rtol:
        return "critical"
    if eta * lam0 < 2.0:
        return "stable"
    if eta < eta_c:
        return "subcritical"
    return "supercritical"


def regime_thresholds(
    model: ScalarModel,
    w0: Any,
    *,
    critical_rtol: float = 1e-3,
    probe_steps: int = 2000,
) -> RegimeThresholds:
    """The step-size boundaries used by ``classify_regime`` (for a widget badge).

    ``eta_blowup`` is found by bisection on ``[eta_stable / 2, 2 eta_period_doubling]``,
    assuming the blow-up set is an interval ``[eta_blowup, inf)`` (checked for xy on a 0.005
    grid of ``eta`` for ``lambda0`` in ``[2.05, 4]``). ``probe_steps=0`` skips it (``inf``).

    See: book/eos/01-three-regimes.ipynb
    """
    model = _check_model(model)
    w0 = _check_point(model, "w0", w0)
    critical_rtol = check_range("critical_rtol", critical_rtol, 0.0, 0.5)
    probe_steps = check_int("probe_steps", probe_steps, 0, 10_000_000)
    lam0 = float(model.manifold_sharpness(w0))
    lam_min, _ = model.flattest()
    eta_c = 2.0 / lam_min
    eta_pd = _period_doubling_eta(model)
    eta_blow = math.inf
    if probe_steps:
        lo, hi = 0.5 * 2.0 / lam0, 2.0 * eta_pd
        if _blows_up(model, w0, hi, probe_steps):
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                if _blows_up(model, w0, mid, probe_steps):
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-6 * hi:
                    break
            eta_blow = hi
    return RegimeThresholds(
        lambda0=lam0,
        lambda_min=lam_min,
        eta_stable=2.0 / lam0,
        eta_critical=eta_c,
        critical_band=(eta_c * (1.0 - critical_rtol), eta_c * (1.0 + critical_rtol)),
        eta_period_doubling=eta_pd,
        eta_blowup=eta_blow,
        eta_divergent=min(eta_pd, eta_blow),
    )


# ---------------------------------------------------------------------------------------------
# Fast path: many trajectories at once in torch
# ---------------------------------------------------------------------------------------------


@dataclass
class BatchedTrajectory:
    """Result of ``gd_batched`` (torch tensors on the run's device).

    Attributes
    ----------
    w : Tensor, shape (n_rec, B, D)
        Recorded iterates at steps ``steps_recorded``.
    residual, loss : Tensor, shape (n_rec, B)
    steps_recorded : Tensor, shape (n_rec,)
        ``0, record_every, 2 record_every, ...`` and the last step.
    diverged : Tensor, shape (B,), bool
        Rows whose ``|r|`` exceeded ``1e6`` or became non-finite. Such rows are frozen at
        their last finite state (never NaN), exactly where ``gd`` stops.
    steps_run : Tensor, shape (B,), int64
        Steps each row actually took (``gd``'s ``steps_run``).
    eta : Tensor, shape (B,)

    See: book/eos/02-rates-and-bifurcation.ipynb
    """

    w: Any
    residual: Any
    loss: Any
    steps_recorded: Any
    diverged: Any
    steps_run: Any
    eta: Any
    model: ScalarModel = field(repr=False)

    def sharpness(self):
        """Sharpness of the projected minimiser for every recorded state (numpy, (n_rec, B))."""
        import torch

        W = self.w.detach().cpu().to(dtype=torch.float64).numpy()
        with np.errstate(all="ignore"):
            return self.model.manifold_sharpness(W)


def _resolve_device(device: Any, *tensors: Any):
    import torch

    from ..core.runtime import device as default_device

    if device is not None:  # validated: a clear error for "cuda" without a GPU
        try:
            return default_device(str(device))
        except ValueError as exc:
            raise ValueError(str(exc).replace("prefer", "device", 1)) from None
    for t in tensors:
        if isinstance(t, torch.Tensor):
            return t.device
    return default_device()


def _gd_batched_exact(model, state, r, E, steps_run, n):
    """n GD steps with ``gd``'s exact stopping rule, row by row in lockstep.

    A step is accepted iff the new residual is finite; after a step with ``|r| > 1e6`` the
    row is frozen. Returns the final state, residual, alive mask, step counts and the
    states after every local step ``i = 1..n`` (for patching the records).
    """
    import torch

    alive = torch.ones(r.shape[0], dtype=torch.bool, device=r.device)
    recs = {}
    for i in range(1, n + 1):
        er = E * r
        new = model._torch_update(state, er)  # eq: w' = w - eta r grad f
        rn = model._torch_residual(new)
        ok = alive & torch.isfinite(rn)  # accept a step iff it stays finite (gd's rule)
        okc = ok[:, None] if new[0].ndim == 2 else ok
        state = [torch.where(okc, a, b) for a, b in zip(new, state, strict=True)]
        r = torch.where(ok, rn, r)
        steps_run = steps_run + ok
        alive = ok & (rn.abs() <= DIVERGENCE_THRESHOLD)  # freeze after |r| > 1e6
        recs[i] = (model._torch_join(state), r)
    return state, r, alive, steps_run, recs


def gd_batched(
    model: ScalarModel,
    w0: Any,
    eta: Any,
    steps: int,
    record_every: int = 1,
    device: Any = None,
    dtype: Any = None,
) -> BatchedTrajectory:
    """GD for a whole batch of starts and step sizes at once (torch, CPU or CUDA).

    Same update and the same operation order as ``gd``, so float64 runs agree with it to
    round-off (bitwise on CPU for xy and product models). Diverged rows (``|r| > 1e6`` or
    non-finite) are frozen at their last finite state, so nothing is NaN.

    Implementation: steps run in chunks of ``>= 32`` steps with the bare update (9 tensor
    ops per step for xy) while tracking ``max |r|``; rows that crossed the divergence
    threshold inside a chunk are replayed from the chunk start with ``gd``'s exact per-step
    stopping rule, and frozen rows step with ``eta = 0`` (which leaves them unchanged). This
    halves the per-step work against freezing at every step. On CPU the numpy vectorised
    loop is faster still (per-op overhead); this path is for CUDA
    (``benchmarks/bench_eos.py``).

    Parameters
    ----------
    model : ScalarModel
    w0 : array_like or Tensor, shape (B, D) or (D,)
        Starts (a single start is broadcast over ``eta``).
    eta : float or array_like or Tensor, shape (B,)
        Step sizes, ``> 0``.
    steps : int
        ``>= 1``.
    record_every : int
        Record every this many steps (the last step is always recorded).
    device : str or torch.device, optional
        Defaults to the device of ``w0``/``eta`` if a tensor, else ``lab.device()``.
    dtype : torch.dtype, optional
        ``torch.float64`` (default) or ``torch.float32`` (not for the critical regime).

    Returns
    -------
    BatchedTrajectory

    See: book/eos/02-rates-and-bifurcation.ipynb
    """
    import torch

    model = _check_model(model)
    dtype = torch.float64 if dtype is None else dtype
    check_choice("dtype", dtype, [torch.float64, torch.float32])
    steps = check_int("steps", steps, 1, 100_000_000)
    record_every = check_int("record_every", record_every, 1, steps)
    dev = _resolve_device(device, w0, eta)

    if isinstance(w0, torch.Tensor):
        W = w0.detach().to(device=dev, dtype=dtype)
        if W.ndim not in (1, 2) or W.shape[-1] != model.dim:
            raise ValueError(
                f"w0 must have shape (B, {model.dim}) or ({model.dim},) (got {tuple(W.shape)})"
            )
        if not bool(torch.isfinite(W).all()):
            raise ValueError("w0 must contain only finite values (got NaN or inf)")
    else:
        W = torch.as_tensor(_check_point(model, "w0", w0, batch=True), dtype=dtype, device=dev)
    if isinstance(eta, torch.Tensor):
        E = eta.detach().to(device=dev, dtype=dtype).reshape(-1)
        if not bool(torch.isfinite(E).all()) or not bool((E > 0).all()):
            raise ValueError("eta must be finite and > 0 everywhere")
    else:
        e = check_array("eta", eta, ndim=(0, 1))
        if np.any(e <= 0):
            raise ValueError(f"eta must be > 0 (got min {float(np.min(e)):g})")
        E = torch.as_tensor(e.reshape(-1), dtype=dtype, device=dev)
    if W.ndim == 1:
        W = W.expand(E.shape[0], -1)
    B = W.shape[0]
    if E.shape[0] == 1:
        E = E.expand(B)
    if E.shape[0] != B:
        raise ValueError(
            f"eta must be a scalar or have shape ({B},) to match w0 (got {tuple(E.shape)})"
        )
    W = W.contiguous().clone()

    rec_steps = list(range(0, steps + 1, record_every))
    if rec_steps[-1] != steps:
        rec_steps.append(steps)
    n_rec = len(rec_steps)
    w_rec = torch.empty((n_rec, B, model.dim), dtype=dtype, device=dev)
    r_rec = torch.empty((n_rec, B), dtype=dtype, device=dev)

    state = [s.contiguous() for s in model._torch_split(W)]
    r = model._torch_residual(state)  # eq: r = f(w) - y
    alive = torch.ones(B, dtype=torch.bool, device=dev)  # like gd, w0 itself is not checked
    steps_run = torch.zeros(B, dtype=torch.int64, device=dev)
    w_rec[0] = W
    r_rec[0] = r
    rec_index = {k: j for j, k in enumerate(rec_steps)}

    # Chunked fast path. Inside a chunk every row takes the plain update (9 tensor ops per
    # step for xy instead of ~18 with per-step freezing) and only the running max of |r| is
    # tracked. Rows frozen in an earlier chunk step with eta = 0, which leaves them unchanged.
    # Rows that crossed |r| > 1e6 (or went non-finite) inside the chunk are rolled back to the
    # chunk start and replayed with the exact per-step rule of ``gd`` (_gd_batched_exact).
    chunk = record_every * max(1, math.ceil(32 / record_every))
    eta_eff = E.clone()
    k0 = 0
    while k0 < steps:
        n = min(chunk, steps - k0)
        snap_state, snap_r, snap_run = [t.clone() for t in state], r.clone(), steps_run.clone()
        r_max = torch.zeros_like(r)
        for i in range(1, n + 1):
            er = eta_eff * r
            state = model._torch_update(state, er)  # eq: w' = w - eta r grad f
            r = model._torch_residual(state)  # eq: r' = f(w') - y
            r_max = torch.maximum(r_max, r.abs())  # NaN propagates, so NaN rows count as bad
            j = rec_index.get(k0 + i)
            if j is not None:
                w_rec[j] = model._torch_join(state)
                r_rec[j] = r
        bad = alive & ~(r_max <= DIVERGENCE_THRESHOLD)
        steps_run = torch.where(alive, snap_run + n, snap_run)
        if bool(bad.any()):
            idx = torch.nonzero(bad).squeeze(1)
            sub = _gd_batched_exact(
                model,
                [t[idx] for t in snap_state],
                snap_r[idx],
                E[idx],
                snap_run[idx],
                n,
            )
            sub_state, sub_r, sub_alive, sub_run, sub_recs = sub
            for t, st in zip(state, sub_state, strict=True):
                t[idx] = st
            r[idx] = sub_r
            steps_run[idx] = sub_run
            alive[idx] = sub_alive
            eta_eff[idx] = torch.where(sub_alive, E[idx], torch.zeros_like(sub_r))
            for i, (w_i, r_i) in sub_recs.items():
                j = rec_index.get(k0 + i)
                if j is not None:
                    w_rec[j, idx] = w_i
                    r_rec[j, idx] = r_i
        k0 += n
    return BatchedTrajectory(
        w=w_rec,
        residual=r_rec,
        loss=0.5 * r_rec * r_rec,
        steps_recorded=torch.tensor(rec_steps, dtype=torch.int64, device=dev),
        diverged=~alive,
        steps_run=steps_run,
        eta=E,
        model=model,
    )


# ---------------------------------------------------------------------------------------------
# Real network: sharpness by Hessian-vector products, a tiny MLP on digits
# ---------------------------------------------------------------------------------------------


def sharpness_hvp(loss_fn: Any, params: Any, iters: int = 50, *, seed: int = 0) -> float:
    """Top Hessian eigenvalue of ``loss_fn`` at ``params`` by power iteration on HVPs.

    Hessian-vector products are forward-over-reverse (``torch.func.jvp`` of
    ``torch.func.grad``); the Hessian is never formed. Power iteration finds the
    eigenvalue of largest magnitude; if that is negative, a second run on ``H - mu I``
    returns the top (algebraic) eigenvalue instead.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(params) -> scalar tensor``.
    params : Tensor or tuple of Tensors
        Where to evaluate (a pytree of tensors; not modified).
    iters : int
        Power-iteration steps (``>= 1``).
    seed : int
        Seed of the random start vector.

    Returns
    -------
    float

    See: book/eos/03-real-network.ipynb
    """
    import torch
    from torch.func import grad, jvp

    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable (got {type(loss_fn).__name__})")
    iters = check_int("iters", iters, 1, 100_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    single = isinstance(params, torch.Tensor)
    leaves = (params,) if single else tuple(params)
    if not leaves or not all(isinstance(p, torch.Tensor) for p in leaves):
        raise TypeError("params must be a torch.Tensor or a tuple of torch.Tensors")
    leaves = tuple(p.detach() for p in leaves)

    def f(ps):
        return loss_fn(ps[0] if single else ps)

    g = grad(f)

    def hvp(vs):
        return jvp(g, (leaves,), (vs,))[1]  # eq: H v = d/dt grad L(w + t v) at t = 0

    def dot(a, b):
        return sum(torch.sum(x * y) for x, y in zip(a, b, strict=True))

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def power(shift: float) -> float:
        v = tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device) for p in leaves)
        nv = torch.sqrt(dot(v, v))
        v = tuple(x / nv for x in v)
        lam = 0.0
        for _ in range(iters):
            hv = hvp(v)
            if shift:
                hv = tuple(h - shift * x for h, x in zip(hv, v, strict=True))
            lam = float(dot(v, hv))  # eq: Rayleigh quotient v^T H v
            n = torch.sqrt(dot(hv, hv))
            if float(n) == 0.0:
                return lam
            v = tuple(h / n for h in hv)  # eq: v <- H v / ||H v||
        return lam

    mu = power(0.0)
    if mu < 0:
        return power(mu) + mu
    return mu


@dataclass
class MLPRun:
    """History of ``mlp_digits_gd``.

    Attributes
    ----------
    loss : ndarray, shape (steps_run + 1,)
        Full-batch MSE loss ``1/(2n) sum_i ||f(x_i) - y_i||^2``.
    sharpness : ndarray
        Top Hessian eigenvalue of the loss (HVP power iteration) at ``sharpness_steps``.
    sharpness_steps : ndarray of int
    accuracy : float
        Final training accuracy.
    diverged : bool
    eta : float
    n_params : int

    See: book/eos/03-real-network.ipynb
    """

    loss: np.ndarray
    sharpness: np.ndarray
    sharpness_steps: np.ndarray
    accuracy: float
    diverged: bool
    eta: float
    n_params: int


def mlp_digits_gd(
    eta: float,
    steps: int = 500,
    width: int = 32,
    n_samples: int = 200,
    track_every: int = 25,
    seed: int = 0,
    device: Any = None,
    *,
    classes: tuple[int, int] = (3, 8),
    hvp_iters: int = 20,
) -> MLPRun:
    """Full-batch GD with MSE on a 64-``width``-2 tanh MLP, two digit classes from sklearn.

    The data are scikit-learn's bundled ``load_digits`` (no download): the first
    ``n_samples`` images of the two ``classes`` (default 3 vs 8), pixels scaled to ``[0, 1]``,
    one-hot targets, PyTorch-default uniform initialisation. Runs in float64 with one torch
    thread on CPU (per-op overhead dominates at this size).

    Measured at the defaults (2146 parameters, seed 0): with ``eta = 0.2`` the sharpness
    rises from 7.2 past ``2/eta = 10`` within ~150 steps and then oscillates around it
    (between 9.4 and 10.9 up to step 1000: the edge of stability of Cohen et al. 2021);
    with ``eta = 0.1`` it is still sharpening (15.4 < 20 at step 1000). Unlike the scalar models, the network never settles on a
    flatter minimiser in this budget.

    Parameters
    ----------
    eta : float
        Step size ``> 0``.
    steps : int
        GD steps ``>= 1``.
    width : int
        Hidden width ``>= 1``.
    n_samples : int
        Number of images, ``>= 2`` and at most the number of images of the two classes
        (357 for 3 and 8).
    track_every : int
        Sharpness every this many steps (``0``: never).
    seed : int
        Initialisation seed.
    device : str or torch.device, optional
        Defaults to ``lab.device()``.
    classes : (int, int)
        The two digit classes.
    hvp_iters : int
        Power-iteration steps per sharpness estimate.

    Returns
    -------
    MLPRun

    See: book/eos/03-real-network.ipynb
    """
    import torch
    from sklearn.datasets import load_digits
    from torch.func import grad

    from ..core.runtime import small_problem_threads

    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1, 10_000_000)
    width = check_int("width", width, 1, 100_000)
    n_samples = check_int("n_samples", n_samples, 2, 1797)
    track_every = check_int("track_every", track_every, 0, 10_000_000)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    hvp_iters = check_int("hvp_iters", hvp_iters, 1, 10_000)
    if not (isinstance(classes, tuple | list) and len(classes) == 2):
        raise TypeError(f"classes must be a pair of digits (got {classes!r})")
    c0 = check_int("classes[0]", classes[0], 0, 9)
    c1 = check_int("classes[1]", classes[1], 0, 9)
    if c0 == c1:
        raise ValueError(f"classes must be two different digits (got {classes!r})")
    dev = _resolve_device(device)

    X, labels = load_digits(return_X_y=True)
    keep = np.nonzero((labels == c0) | (labels == c1))[0]
    if n_samples > keep.size:
        raise ValueError(
            f"n_samples must be <= {keep.size} for classes {classes!r} (got {n_samples})"
        )
    keep = keep[:n_samples]
    x = torch.as_tensor(X[keep] / 16.0, dtype=torch.float64, device=dev)
    yi = (labels[keep] == c1).astype(np.int64)
    y = torch.nn.functional.one_hot(torch.as_tensor(yi), 2).to(torch.float64).to(dev)

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def init(fan_in: int, fan_out: int):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_in, fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        return w.to(dev), b.to(dev)

    params = (*init(64, width), *init(width, 2))
    n_params = sum(p.numel() for p in params)

    def loss_fn(ps):
        w1, b1, w2, b2 = ps
        out = torch.tanh(x @ w1 + b1) @ w2 + b2
        return 0.5 * ((out - y) ** 2).sum() / x.shape[0]  # eq: L = 1/(2n) sum ||f(x) - y||^2

    g = grad(loss_fn)
    losses, sharp, sharp_steps = [], [], []
    diverged = False
    ctx = small_problem_threads(1) if dev.type == "cpu" else contextlib.nullcontext()
    with ctx:
        for k in range(steps + 1):
            lv = float(loss_fn(params))
            if not math.isfinite(lv) or lv > 1e6:
                diverged = True
                break
            losses.append(lv)
            if track_every and k % track_every == 0:
                sharp.append(sharpness_hvp(loss_fn, params, iters=hvp_iters, seed=seed))
                sharp_steps.append(k)
            if k == steps:
                break
            grads = g(params)
            params = tuple(p - eta * gp for p, gp in zip(params, grads, strict=True))  # eq: GD
        w1, b1, w2, b2 = params
        pred = (torch.tanh(x @ w1 + b1) @ w2 + b2).argmax(1).cpu().numpy()
    return MLPRun(
        loss=np.array(losses),
        sharpness=np.array(sharp),
        sharpness_steps=np.array(sharp_steps, dtype=np.int64),
        accuracy=float(np.mean(pred == yi)),
        diverged=diverged,
        eta=eta,
        n_params=int(n_params),
    )
