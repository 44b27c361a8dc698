"""The paper's objects: scalar-output models whose solution set ``M = {f = y}`` is a manifold.

* ``XYModel``: ``f(x, y) = x y`` (the chapter's teaching model, the paper's Fig. 1; depth 2);
* ``ProductModel(p)``: deep scalar factorisation ``f(θ) = θ_p ⋯ θ_1`` (the paper's App. B and
  its experiments, ``p = 5``, ``y = 1``);
* ``InnerProductModel(m)``: ``f(u, v) = <u, v>`` (ours: a two-layer scalar model whose
  flattest minimisers form a sphere).

Each model carries, besides ``f``, ``grad`` and ``hessian``, the closed forms the chapter uses
(the flattest minimiser, the gradient-flow projection, the 1-D map on the GD-invariant balanced
line) and the **one** GD kernel that both the numpy reference loop (``reference.gd_loop``)
and the batched torch path (``fast.gd``) run: ``_split`` a point into components,
``_residual`` and ``_step`` on the components, ``_join`` them back. The same arithmetic on
Python floats and on torch tensors is why the two paths agree bit for bit on CPU.

See: book/eos/01-three-regimes.ipynb
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq

from lab.core.checks import check_array, check_int, check_real

__all__ = ["ScalarModel", "XYModel", "ProductModel", "InnerProductModel", "DIVERGENCE_THRESHOLD"]

#: ``gd`` stops and flags ``diverged`` once ``|r|`` exceeds this (or becomes non-finite).
DIVERGENCE_THRESHOLD = 1e6


def check_target(target: Any) -> float:
    target = check_real("target", target)
    if target == 0.0:
        raise ValueError(
            "target must be nonzero (got 0.0): at y = 0 the zero set {f = 0} contains the "
            "origin, where grad f = 0, so it is not a manifold"
        )
    return target


def check_model(model: Any) -> ScalarModel:
    if not isinstance(model, ScalarModel) or type(model) is ScalarModel:
        raise TypeError(
            "model must be an XYModel, ProductModel or InnerProductModel "
            f"(got {type(model).__name__})"
        )
    return model


def check_point(model: ScalarModel, name: str, w: Any, *, batch: bool = False) -> np.ndarray:
    ndim = (1, 2) if batch else 1
    arr = check_array(name, w, ndim=ndim)
    if arr.shape[-1] != model.dim:
        raise ValueError(
            f"{name} must have {model.dim} entries per point for {model!r} (got shape {arr.shape})"
        )
    return arr


def model_for_target(model: ScalarModel, target: Any) -> ScalarModel:
    if target is None:
        return model
    target = check_target(target)
    return model if target == model.target else model.with_target(target)


def _col(er: Any) -> Any:
    """``er`` as a column, so that it scales rows of ``(B, m)`` blocks (numpy or torch)."""
    return np.float64(er)[None] if isinstance(er, float) else er[..., None]


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

    # -- the GD kernel, shared by the numpy reference and the torch fast path -----------------
    # A point is split into components (scalars for xy and the product, blocks for <u, v>);
    # ``_residual`` and ``_step`` use only +, -, * on them, so the same code runs on Python
    # floats (reference.gd_loop) and on (B,)-shaped torch tensors (fast.gd).
    def _split(self, W):  # pragma: no cover - abstract: components of W along the last axis
        raise NotImplementedError

    def _residual(self, state):  # pragma: no cover - abstract: r = f(w) - y from the components
        raise NotImplementedError

    def _step(self, state, er):  # pragma: no cover - abstract: w - er grad f(w), er = eta r
        raise NotImplementedError

    def _join(self, state):  # pragma: no cover - abstract: torch components to (B, dim)
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
        w = np.asarray(w, dtype=np.float64)
        out = np.sum(w[..., :m] * w[..., m:], -1)  # eq: f = <u, v>
        return float(out) if out.ndim == 0 else out

    def grad(self, w):
        m = self.m
        w = np.asarray(w, dtype=np.float64)
        return np.concatenate([w[..., m:], w[..., :m]], -1)  # eq: grad f = (v, u)

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

    def _split(self, W):
        m = self.m
        return [W[..., :m], W[..., m:]]

    def _residual(self, state):
        u, v = state
        return (u * v).sum(-1) - self.target  # eq. (5): r = <u, v> - y

    def _step(self, state, er):
        u, v = state
        er = _col(er)
        return [u - er * v, v - er * u]  # eq. (6): u' = u - eta r v,  v' = v - eta r u

    def _join(self, state):
        import torch

        return torch.cat(state, dim=-1)


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
        self.target = check_target(target)
        self.m = 1
        self.dim = 2

    def f(self, w):
        w = np.asarray(w, dtype=np.float64)
        out = w[..., 0] * w[..., 1]  # eq: f = x y
        return float(out) if out.ndim == 0 else out

    def imbalance(self, w):
        w = np.asarray(w, dtype=np.float64)
        return w[..., 0] ** 2 - w[..., 1] ** 2  # eq: d = x^2 - y^2

    def manifold_sharpness(self, w):
        d = self.imbalance(w)
        return np.sqrt(d * d + 4.0 * self.target**2)  # eq: lambda_M = sqrt(d^2 + 4 y^2)

    def _split(self, W):
        return [W[..., 0], W[..., 1]]

    def _residual(self, state):
        x, y = state
        return x * y - self.target  # eq. (5): r = x y - 1

    def _step(self, state, er):
        x, y = state
        # eq. (6): x' = x - eta r y,  y' = y - eta r x; equivalently (exact, used in the tests)
        # r' = r - eta r (x^2 + y^2) + eta^2 r^2 (r + 1)  and  d' = d (1 - eta^2 r^2)
        return [x - er * y, y - er * x]

    def _join(self, state):
        import torch

        return torch.stack(state, dim=-1)

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
        self.target = check_target(target)
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
        self.target = check_target(target)
        self.dim = self.depth
        self.name = f"product{self.depth}"

    def f(self, w):
        w = np.asarray(w, dtype=np.float64)
        out = np.prod(w, -1)  # eq: f = prod_i w_i
        return float(out) if out.ndim == 0 else out

    def grad(self, w):
        # eq: df/dw_i = prod_{j != i} w_j, as prefix x suffix products (safe at w_i = 0)
        w = np.asarray(w, dtype=np.float64)
        one = np.ones(w.shape[:-1] + (1,))
        pre = np.cumprod(np.concatenate([one, w[..., :-1]], -1), -1)
        suf = np.cumprod(np.concatenate([one, w[..., :0:-1]], -1), -1)[..., ::-1]
        return pre * suf

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

    def _split(self, W):
        return [W[..., i] for i in range(self.depth)]

    @staticmethod
    def _others(state):
        """``prod_{j != i} w_j`` for every ``i`` by prefix and suffix products (no division)."""
        q = len(state)
        pre = [None] * q
        pre[1] = state[0]
        for i in range(2, q):
            pre[i] = pre[i - 1] * state[i - 1]
        suf = [None] * q
        suf[q - 2] = state[q - 1]
        for i in range(q - 3, -1, -1):
            suf[i] = suf[i + 1] * state[i + 1]
        return [suf[0]] + [pre[i] * suf[i] for i in range(1, q - 1)] + [pre[q - 1]]

    def _residual(self, state):
        f = state[0]
        for w in state[1:]:
            f = f * w  # eq. (5): f = theta_p ... theta_1 (left to right, same order in torch)
        return f - self.target

    def _step(self, state, er):
        others = self._others(state)
        # eq. (6): theta_i' = theta_i - eta r prod_{j != i} theta_j
        return [wi - er * oi for wi, oi in zip(state, others, strict=True)]

    def _join(self, state):
        import torch

        return torch.stack(state, dim=-1)

    def with_target(self, target):
        return ProductModel(self.depth, target)

    def __repr__(self) -> str:
        return f"ProductModel(depth={self.depth}, target={self.target!r})"
