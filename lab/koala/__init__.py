r"""
# KOALA++: a Kalman-filter optimizer that tracks the gradient–covariance product

Zixuan Xia, Aram Davtyan, Paolo Favaro. *KOALA++: Efficient Kalman-Based Optimization with
Gradient-Covariance Products.* NeurIPS 2025.
[arXiv:2506.04432](https://arxiv.org/abs/2506.04432). Predecessor: KOALA (Davtyan et al.,
AAAI 2022, [arXiv:2107.03331](https://arxiv.org/abs/2107.03331)).

**What is reconstructed.** The paper's result tables were not read. The update equations
below were re-derived from the extended Kalman filter and agree term by term with the
authors' public optimizer; the first-step ("phantom") initialisation and the measurement
noise estimate (an EMA of the mean *squared* per-sample loss, started at 1) follow that
code. Every number quoted in the chapter is measured with this module.

## Training as filtering

The weights $\theta$ are a hidden state that drifts, $\theta_k = \theta_{k-1} + w_k$,
$w_k \sim N(0, QI)$, and each mini-batch loss is a noisy measurement of the target 0,
$0 = L_k(\theta_k) + \nu_k$, $\nu_k \sim N(0, R_k)$. Linearising with the row vector
$H_k = \nabla L_k(\theta_{k-1})$, the extended Kalman filter (EKF) reads

$$\hat P_k = P_{k-1} + QI,\quad S_k = H_k \hat P_k H_k^\top + R_k,\quad
K_k = \hat P_k H_k^\top / S_k, \tag{1}$$
$$\theta_k = \theta_{k-1} - \eta\, K_k L_k(\theta_{k-1}),\quad
P_k = \hat P_k - K_k H_k \hat P_k. \tag{2}$$

`ekf_full` runs (1)-(2) with the full $n\times n$ matrix $P$ (the exact reference).

## KOALA-V: a scalar covariance

$P = \sigma I$: predict $\sigma \leftarrow \sigma + Q$; step
$\theta \leftarrow \theta - \eta L\, \sigma H^\top / (\sigma\lVert H\rVert^2 + R)$; update
$\sigma \leftarrow \sigma - \sigma^2 \max_l \lVert H_l\rVert^2 / S_l$ (`koalav_reference`,
`KoalaV`). All directional information in $P$ is lost.

## KOALA++: propagate $v_k = H_k P_{k-1}$ only

The step needs only $H_k \hat P_k = v_k + Q H_k$. Inserting (2) into $v_k$ gives the exact
recursion

$$v_k = H_k P_{k-2} + Q H_k - \lambda_k (v_{k-1} + Q H_{k-1}),\qquad
\lambda_k = \frac{H_k v_{k-1}^\top + Q\, H_k H_{k-1}^\top}{S_{k-1}}. \tag{3}$$

The unknown $H_k P_{k-2}$ is closed with the minimum-Frobenius-norm matrix $P$ that satisfies
$H_{k-1} P = v_{k-1}$ (vanilla), or that and $P = P^\top$ (symmetric). With
$x = \lVert H_{k-1}\rVert^2$, $y = H_{k-1} v_{k-1}^\top$, $a = H_k H_{k-1}^\top$,
$c = H_k v_{k-1}^\top$:

$$H_k P_{k-2} \approx \alpha_k v_{k-1} + w_k H_{k-1},\qquad \alpha_k = a/x,\qquad
w_k = c/x - a y / x^2 \ (\text{0 for vanilla}). \tag{4}$$

$$v_k = (\alpha_k - \lambda_k) v_{k-1} + Q (H_k - \lambda_k H_{k-1}) + w_k H_{k-1},\quad
g_k = v_k + Q H_k,\quad S_k = H_k g_k^\top + R_k, \tag{5}$$
$$\theta_k = \theta_{k-1} - \eta\, \tilde L_k\, g_k^\top / S_k,\qquad
\tilde L_k = L_k + \tfrac12 \mathrm{wd} \lVert\theta\rVert^2,\quad H_k \ni \mathrm{wd}\,\theta. \tag{6}$$

Initialisation (from the authors' code): $v_0 = \sigma_0 H_1$, $H_0 = H_1$,
$S_0 = H_1(v_0 + QH_1)^\top + R$, then (3)-(6). This equals an EKF started at
$P = \sigma_0 I$ that makes one covariance-only ("phantom") update with $H_1$ before the first
step (`init="phantom"`, the default); `init="prior"` starts from $v_1 = \sigma_0 H_1$ instead.
In one dimension the closure (4) is exact, so KOALA++ *is* the EKF.

Measurement noise: $R_k = \alpha_r R_{k-1} + (1 - \alpha_r)\,\overline{\ell^2}$ (mean squared
per-sample loss of the batch), $R_0 = 1$, or a fixed `r`.

## What lives here

* `ekf_full`, `koalapp_reference`, `koalav_reference`: numpy float64 reference kernels;
  `koalapp_v_update`: the recursion (3)-(5) alone.
* `KoalaPP`, `KoalaV`: real `torch.optim.Optimizer` classes; `koalapp_foreach_`: the
  multi-tensor fast path (one flat buffer, segment reductions, no host syncs; CPU or CUDA).
* `NoisyQuadratic`, `run_quadratic`: the small problems of notebook 1; `train_digits`: the
  scikit-learn digits MLP of notebook 2.

See: book/koala/01-kalman-view.ipynb
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "KoalaPP",
    "KoalaV",
    "koalapp_foreach_",
    "loss_statistics",
    "ekf_full",
    "koalapp_reference",
    "koalav_reference",
    "koalapp_v_update",
    "adam_reference",
    "NoisyQuadratic",
    "run_quadratic",
    "tracking_error",
    "covariance_replay",
    "TrainRun",
    "train_digits",
    "digits_data",
    "OPTIMIZERS",
]

NB1 = "book/koala/01-kalman-view.ipynb"
NB2 = "book/koala/02-training-digits.ipynb"

_LAZY = {"KoalaPP", "KoalaV", "koalapp_foreach_", "loss_statistics"}


def __getattr__(name: str):  # torch is imported only when an optimizer is first used
    if name in _LAZY:
        from . import optim

        return getattr(optim, name)
    raise AttributeError(f"module 'lab.koala' has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# Helpers for the reference kernels
# ---------------------------------------------------------------------------------------------


def _stepwise(fn: Callable, name: str) -> Callable[[np.ndarray, int], Any]:
    """Accept ``fn(theta)`` or ``fn(theta, k)``; return ``f(theta, k)``.

    ``fn`` is called with the step index when its second positional parameter has no default
    or is named ``k`` (so ``lambda t, a=a: ...`` stays a one-argument function).
    """
    if not callable(fn):
        raise TypeError(f"{name} must be callable (got {type(fn).__name__})")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    two = any(p.kind == p.VAR_POSITIONAL for p in params)
    if len(positional) >= 2:
        second = positional[1]
        two = two or second.default is inspect.Parameter.empty or second.name == "k"
    if two:
        return fn
    return lambda theta, k: fn(theta)


def _noise_sequence(name: str, r: Any, steps: int) -> np.ndarray:
    """``r`` as a length-``steps`` array of measurement noises (scalar or per step)."""
    arr = np.asarray(r, dtype=np.float64)
    if arr.ndim == 0:
        check_positive(name, float(arr), allow_zero=True)
        return np.full(steps, float(arr))
    arr = check_array(name, arr, ndim=1, shape=(steps,))
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 at every step (got min {arr.min():g})")
    return arr


def _theta0(theta0: Any) -> np.ndarray:
    return check_array("theta0", theta0, ndim=1, min_size=1).copy()


# ---------------------------------------------------------------------------------------------
# Reference kernels (numpy float64)
# ---------------------------------------------------------------------------------------------


def ekf_full(
    theta0: Any,
    loss_fn: Callable,
    grad_fn: Callable,
    P0: Any,
    Q: float,
    R: Any,
    steps: int,
    *,
    lr: float = 1.0,
    phantom: bool = True,
) -> dict[str, np.ndarray]:
    """The extended Kalman filter with the full covariance on the scalar-loss measurement.

    Parameters
    ----------
    theta0 : array (n,)
        Initial weights (the prior mean).
    loss_fn, grad_fn : callable
        ``loss_fn(theta[, k]) -> float`` and ``grad_fn(theta[, k]) -> (n,)``, the measured
        loss of step ``k`` (1-based) and its gradient; the measurement target is 0.
    P0 : float or array (n, n)
        Prior covariance (a float means ``P0 * I``); symmetric positive semidefinite.
    Q : float
        Process noise (``Q I`` is added in every predict step), ``>= 0``.
    R : float or array (steps,)
        Measurement noise, fixed or one value per step, ``>= 0``.
    steps : int
        Number of parameter updates.
    lr : float
        The step multiplier ``eta`` of eq. (2), ``> 0`` (1 is the textbook EKF).
    phantom : bool
        Make one covariance-only update with ``H_1`` before the first step, as KOALA++'s
        initialisation does (default ``True``).

    Returns
    -------
    dict
        ``theta`` (steps+1, n), ``P`` (steps+1, n, n) (``P[k]`` after step ``k``; ``P[0]`` after
        the phantom update), ``v_true`` (steps, n) with ``v_true[k-1] = H_k P_{k-1}``, ``S``
        (steps,), ``loss`` (steps,) the measured losses.

    See: book/koala/01-kalman-view.ipynb
    """
    theta = _theta0(theta0)
    n = theta.size
    steps = check_int("steps", steps, 1, 10_000_000)
    Q = check_positive("Q", Q, allow_zero=True)
    lr = check_positive("lr", lr)
    phantom = check_bool("phantom", phantom)
    Rs = _noise_sequence("R", R, steps)
    if np.ndim(P0) == 0:
        P = check_positive("P0", P0, allow_zero=True) * np.eye(n)
    else:
        P = check_array("P0", P0, shape=(n, n)).copy()
        if not np.allclose(P, P.T):
            raise ValueError("P0 must be symmetric")
    loss_fn = _stepwise(loss_fn, "loss_fn")
    grad_fn = _stepwise(grad_fn, "grad_fn")
    I = np.eye(n)

    if phantom:  # covariance-only update with H_1 (KOALA++'s first-step initialisation)
        H = np.asarray(grad_fn(theta, 1), dtype=np.float64)
        P_hat = P + Q * I  # eq. (1): predict
        S = H @ P_hat @ H + Rs[0]  # eq. (1): innovation variance
        K = P_hat @ H / S  # eq. (1): Kalman gain
        P = P_hat - np.outer(K, H @ P_hat)  # eq. (2): covariance update, no state step

    thetas, Ps, vs, Ss, losses = [theta.copy()], [P.copy()], [], [], []
    for k in range(1, steps + 1):
        H = np.asarray(grad_fn(theta, k), dtype=np.float64)  # H_k = grad L_k(theta_{k-1})
        L = float(loss_fn(theta, k))
        vs.append(H @ P)  # v_k = H_k P_{k-1} (the quantity KOALA++ tracks)
        P_hat = P + Q * I  # eq. (1): predict
        S = float(H @ P_hat @ H) + Rs[k - 1]  # eq. (1): S_k = H P_hat H^T + R_k
        K = P_hat @ H / S  # eq. (1): K_k = P_hat H^T / S_k
        theta = theta - lr * K * L  # eq. (2): state update towards L = 0
        P = P_hat - np.outer(K, H @ P_hat)  # eq. (2): P_k = P_hat - K H P_hat
        P = 0.5 * (P + P.T)  # keep exact symmetry against round-off
        thetas.append(theta.copy())
        Ps.append(P.copy())
        Ss.append(S)
        losses.append(L)
    return {
        "theta": np.array(thetas),
        "P": np.array(Ps),
        "v_true": np.array(vs),
        "S": np.array(Ss),
        "loss": np.array(losses),
    }


def koalapp_v_update(
    v_prev: Any,
    h_prev: Any,
    h: Any,
    S_prev: float,
    Q: float,
    symmetric: bool = True,
) -> np.ndarray:
    """One step of KOALA++'s recursion for ``v_k ~ H_k P_{k-1}`` (eqs. 3-5).

    Parameters
    ----------
    v_prev, h_prev, h : array (n,)
        ``v_{k-1}``, ``H_{k-1}`` and ``H_k`` (flattened), with ``H_{k-1} != 0``.
    S_prev : float
        ``S_{k-1} > 0``.
    Q : float
        Process noise, ``>= 0``.
    symmetric : bool
        Use the symmetric least-squares closure (default) or the vanilla one.

    Returns
    -------
    array (n,)
        ``v_k``.

    See: book/koala/01-kalman-view.ipynb
    """
    v_prev = check_array("v_prev", v_prev, ndim=1)
    h_prev = check_array("h_prev", h_prev, shape=v_prev.shape)
    h = check_array("h", h, shape=v_prev.shape)
    S_prev = check_positive("S_prev", S_prev)
    Q = check_positive("Q", Q, allow_zero=True)
    symmetric = check_bool("symmetric", symmetric)
    x = h_prev @ h_prev  # x = ||H_{k-1}||^2
    if x == 0.0:
        raise ValueError("h_prev must be nonzero (the closure divides by ||H_{k-1}||^2)")
    y = h_prev @ v_prev  # y = H_{k-1} v_{k-1}^T
    a = h @ h_prev  # a = H_k H_{k-1}^T
    c = h @ v_prev  # c = H_k v_{k-1}^T
    lam = (c + Q * a) / S_prev  # eq. (3): lambda_k
    alpha = a / x  # eq. (4): alpha_k
    w = (c / x - a * y / x**2) if symmetric else 0.0  # eq. (4): w_k (0 for vanilla)
    return (alpha - lam) * v_prev + Q * (h - lam * h_prev) + w * h_prev  # eq. (5): v_k


def koalapp_reference(
    theta0: Any,
    loss_fn: Callable,
    grad_fn: Callable,
    *,
    steps: int,
    lr: float = 1.0,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: Any = 1.0,
    weight_decay: float = 0.0,
    symmetric: bool = True,
    init: str = "phantom",
) -> dict[str, np.ndarray]:
    """KOALA++ on one parameter vector, a literal transcription of eqs. (3)-(6), numpy float64.

    Parameters
    ----------
    theta0 : array (n,)
        Initial weights.
    loss_fn, grad_fn : callable
        ``loss_fn(theta[, k])`` and ``grad_fn(theta[, k])`` for step ``k`` (1-based), without
        weight decay (it is added here).
    steps : int
        Number of updates.
    lr, sigma0, q : float
        ``eta > 0``, ``sigma_0 >= 0``, ``Q >= 0``.
    r : float or array (steps,)
        Measurement noise ``R_k`` (fixed or per step; ``KoalaPP``'s EMA is a per-step sequence).
    weight_decay : float
        ``wd >= 0``: ``H`` gets ``wd * theta`` and the loss ``wd/2 ||theta||^2`` (eq. 6).
    symmetric : bool
        Symmetric (default) or vanilla closure.
    init : {"phantom", "prior"}
        First-step initialisation (see the module docstring).

    Returns
    -------
    dict
        ``theta`` (steps+1, n), ``v`` (steps, n), ``g`` (steps, n) with ``g = H P_hat``,
        ``S`` (steps,), ``loss`` (steps,) (``L~_k``, with weight decay).

    See: book/koala/01-kalman-view.ipynb
    """
    theta = _theta0(theta0)
    steps = check_int("steps", steps, 1, 10_000_000)
    lr = check_positive("lr", lr)
    sigma0 = check_positive("sigma0", sigma0, allow_zero=True)
    Q = check_positive("q", q, allow_zero=True)
    wd = check_positive("weight_decay", weight_decay, allow_zero=True)
    symmetric = check_bool("symmetric", symmetric)
    init = check_choice("init", init, ("phantom", "prior"))
    Rs = _noise_sequence("r", r, steps)
    loss_fn = _stepwise(loss_fn, "loss_fn")
    grad_fn = _stepwise(grad_fn, "grad_fn")

    v_prev = h_prev = S_prev = None
    thetas, vs, gs, Ss, losses = [theta.copy()], [], [], [], []
    for k in range(1, steps + 1):
        R = Rs[k - 1]
        H = np.asarray(grad_fn(theta, k), dtype=np.float64) + wd * theta  # H_k incl. wd
        L = float(loss_fn(theta, k)) + 0.5 * wd * float(theta @ theta)  # eq. (6): L~_k
        if v_prev is None and init == "prior":
            v = sigma0 * H  # v_1 = H_1 P_0 with P_0 = sigma0 I (no phantom update)
        else:
            if v_prev is None:  # phantom: v_0 = sigma0 H_1, H_0 = H_1, S_0 = H_1 (v_0+Q H_1)^T + R
                v_prev, h_prev = sigma0 * H, H.copy()
                S_prev = float(h_prev @ (v_prev + Q * h_prev)) + R
            x = h_prev @ h_prev  # x = ||H_{k-1}||^2
            y = h_prev @ v_prev  # y = H_{k-1} v_{k-1}^T
            a = H @ h_prev  # a = H_k H_{k-1}^T
            c = H @ v_prev  # c = H_k v_{k-1}^T
            lam = (c + Q * a) / S_prev  # eq. (3): lambda_k
            alpha = a / x  # eq. (4): alpha_k
            w = (c / x - a * y / x**2) if symmetric else 0.0  # eq. (4): w_k
            v = (alpha - lam) * v_prev + Q * (H - lam * h_prev) + w * h_prev  # eq. (5): v_k
        g = v + Q * H  # eq. (5): g_k = H_k P_hat_k
        S = float(H @ g) + R  # eq. (5): S_k = H_k g_k^T + R_k
        if not S > 0:
            raise FloatingPointError(f"S_k = {S:g} <= 0 at step {k}: the closure lost PSD")
        theta = theta - lr * L * g / S  # eq. (6): theta_k
        v_prev, h_prev, S_prev = v, H, S  # store v_k, H_k, S_k
        thetas.append(theta.copy())
        vs.append(v)
        gs.append(g)
        Ss.append(S)
        losses.append(L)
    return {
        "theta": np.array(thetas),
        "v": np.array(vs),
        "g": np.array(gs),
        "S": np.array(Ss),
        "loss": np.array(losses),
    }


def koalav_reference(
    theta0: Any,
    loss_fn: Callable,
    grad_fn: Callable,
    *,
    steps: int,
    lr: float = 1.0,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: Any = 1.0,
    weight_decay: float = 0.0,
) -> dict[str, np.ndarray]:
    """KOALA-V (scalar covariance ``P = sigma I``) on one parameter vector, numpy float64.

    Predict ``sigma += Q``; step ``theta -= lr L~ sigma H / (sigma ||H||^2 + R)``; update
    ``sigma -= sigma^2 ||H||^2 / S``. Arguments as in `koalapp_reference`.

    Returns
    -------
    dict
        ``theta`` (steps+1, n), ``sigma`` (steps+1,), ``loss`` (steps,).

    See: book/koala/01-kalman-view.ipynb
    """
    theta = _theta0(theta0)
    steps = check_int("steps", steps, 1, 10_000_000)
    lr = check_positive("lr", lr)
    sigma = check_positive("sigma0", sigma0, allow_zero=True)
    Q = check_positive("q", q, allow_zero=True)
    wd = check_positive("weight_decay", weight_decay, allow_zero=True)
    Rs = _noise_sequence("r", r, steps)
    loss_fn = _stepwise(loss_fn, "loss_fn")
    grad_fn = _stepwise(grad_fn, "grad_fn")
    thetas, sigmas, losses = [theta.copy()], [sigma], []
    for k in range(1, steps + 1):
        H = np.asarray(grad_fn(theta, k), dtype=np.float64) + wd * theta
        L = float(loss_fn(theta, k)) + 0.5 * wd * float(theta @ theta)
        sigma = sigma + Q  # predict: P_hat = (sigma + Q) I
        hh = float(H @ H)
        S = sigma * hh + Rs[k - 1]  # S = sigma ||H||^2 + R
        theta = theta - lr * L * sigma * H / S  # K = sigma H^T / S
        sigma = sigma - sigma**2 * hh / S  # P = P_hat - sigma^2 ||H||^2 / S (scalar)
        thetas.append(theta.copy())
        sigmas.append(sigma)
        losses.append(L)
    return {"theta": np.array(thetas), "sigma": np.array(sigmas), "loss": np.array(losses)}


def adam_reference(
    theta0: Any,
    grad_fn: Callable,
    *,
    steps: int,
    lr: float = 0.1,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> dict[str, np.ndarray]:
    """Adam (Kingma & Ba) in numpy float64, the same arithmetic as ``torch.optim.Adam``.

    Returns ``{"theta": (steps+1, n)}``.

    See: book/koala/01-kalman-view.ipynb
    """
    theta = _theta0(theta0)
    steps = check_int("steps", steps, 1, 10_000_000)
    lr = check_positive("lr", lr)
    b1 = check_range("betas[0]", betas[0], 0.0, 1.0, high_inclusive=False)
    b2 = check_range("betas[1]", betas[1], 0.0, 1.0, high_inclusive=False)
    eps = check_positive("eps", eps)
    grad_fn = _stepwise(grad_fn, "grad_fn")
    m = np.zeros_like(theta)
    s = np.zeros_like(theta)
    out = [theta.copy()]
    for k in range(1, steps + 1):
        g = np.asarray(grad_fn(theta, k), dtype=np.float64)
        m = b1 * m + (1 - b1) * g
        s = b2 * s + (1 - b2) * g * g
        denom = np.sqrt(s) / math.sqrt(1 - b2**k) + eps
        theta = theta - (lr / (1 - b1**k)) * m / denom
        out.append(theta.copy())
    return {"theta": np.array(out)}


# ---------------------------------------------------------------------------------------------
# The noisy quadratic of notebook 1
# ---------------------------------------------------------------------------------------------


@dataclass
class NoisyQuadratic:
    """``L_k(theta) = 1/2 (theta - xi_k)^T A (theta - xi_k)``, ``xi_k ~ N(0, noise^2 I)``.

    ``A`` has eigenvalues geometrically spaced in ``[1/kappa, 1]`` (condition number
    ``kappa``) in a random orthonormal basis (``rotate=True``) or the coordinate axes. The
    minimum of the mean loss is at 0 with value ``noise^2 tr(A) / 2``; every method sees the
    same ``xi_k`` sequence (seeded). The loss is non-negative, as the Kalman view needs (target 0).

    See: book/koala/01-kalman-view.ipynb
    """

    n: int = 10
    kappa: float = 100.0
    noise: float = 0.0
    seed: int = 0
    rotate: bool = True
    max_steps: int = 2000
    A: np.ndarray = field(init=False, repr=False)
    xi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.n = check_int("n", self.n, 1, 2000)
        self.kappa = check_range("kappa", self.kappa, 1.0, 1e8)
        self.noise = check_positive("noise", self.noise, allow_zero=True)
        self.seed = check_int("seed", self.seed, 0)
        self.rotate = check_bool("rotate", self.rotate)
        self.max_steps = check_int("max_steps", self.max_steps, 1, 10_000_000)
        rng = np.random.default_rng(self.seed)
        eig = np.geomspace(1.0 / self.kappa, 1.0, self.n) if self.n > 1 else np.ones(1)
        if self.rotate and self.n > 1:
            U, _ = np.linalg.qr(rng.standard_normal((self.n, self.n)))
        else:
            U = np.eye(self.n)
        self.A = (U * eig) @ U.T
        self.A = 0.5 * (self.A + self.A.T)
        self.xi = self.noise * rng.standard_normal((self.max_steps + 2, self.n))

    def loss(self, theta: np.ndarray, k: int = 0) -> float:
        """Measured loss of step ``k`` (``k = 0``: the noise-free loss)."""
        d = np.asarray(theta, dtype=np.float64) - self.xi[k]
        return 0.5 * float(d @ self.A @ d)

    def grad(self, theta: np.ndarray, k: int = 0) -> np.ndarray:
        """Gradient of the measured loss of step ``k``."""
        return self.A @ (np.asarray(theta, dtype=np.float64) - self.xi[k])

    def mean_loss(self, theta: np.ndarray) -> np.ndarray:
        """Noise-free loss ``1/2 theta^T A theta`` for a point or a trajectory (rows)."""
        t = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        out = 0.5 * np.einsum("ij,jk,ik->i", t, self.A, t)
        return out if np.ndim(theta) > 1 else float(out[0])

    def start(self, scale: float = 3.0) -> np.ndarray:
        """A fixed starting point of norm ``scale`` (seeded, spread over all eigen-directions)."""
        rng = np.random.default_rng(self.seed + 1)
        t = rng.standard_normal(self.n)
        return scale * t / np.linalg.norm(t)


METHODS = ("ekf", "koalapp", "koalapp_vanilla", "koalav", "adam")


def run_quadratic(
    problem: NoisyQuadratic,
    method: str,
    *,
    steps: int = 60,
    lr: float = 1.0,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: float = 0.5,
    adam_lr: float = 0.3,
    theta0: Any = None,
) -> dict[str, np.ndarray]:
    """Run one method on a `NoisyQuadratic` and return its trajectory.

    ``method`` is one of ``"ekf"`` (full covariance, phantom start), ``"koalapp"``,
    ``"koalapp_vanilla"``, ``"koalav"`` or ``"adam"`` (learning rate ``adam_lr``). The dict has
    ``theta`` (steps+1, n) and ``loss`` (steps+1,) the noise-free loss along the path.

    See: book/koala/01-kalman-view.ipynb
    """
    if not isinstance(problem, NoisyQuadratic):
        raise TypeError(f"problem must be a NoisyQuadratic (got {type(problem).__name__})")
    method = check_choice("method", method, METHODS)
    steps = check_int("steps", steps, 1, problem.max_steps)
    theta0 = (
        problem.start() if theta0 is None else check_array("theta0", theta0, shape=(problem.n,))
    )
    f, g = problem.loss, problem.grad
    if method == "ekf":
        out = ekf_full(theta0, f, g, sigma0, q, r, steps, lr=lr, phantom=True)
    elif method in ("koalapp", "koalapp_vanilla"):
        out = koalapp_reference(
            theta0,
            f,
            g,
            steps=steps,
            lr=lr,
            sigma0=sigma0,
            q=q,
            r=r,
            symmetric=method == "koalapp",
        )
    elif method == "koalav":
        out = koalav_reference(theta0, f, g, steps=steps, lr=lr, sigma0=sigma0, q=q, r=r)
    else:
        out = adam_reference(theta0, g, steps=steps, lr=adam_lr)
    out = dict(out)
    out["mean_loss"] = problem.mean_loss(out["theta"])
    return out


def tracking_error(run: dict, reference: dict) -> np.ndarray:
    """``||theta_k - theta_k^ref|| / ||theta_0||`` along two trajectories of equal length.

    See: book/koala/01-kalman-view.ipynb
    """
    a = check_array("run['theta']", run["theta"], ndim=2)
    b = check_array("reference['theta']", reference["theta"], shape=a.shape)
    return np.linalg.norm(a - b, axis=1) / max(np.linalg.norm(b[0]), 1e-300)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def covariance_replay(
    problem: NoisyQuadratic,
    *,
    steps: int = 60,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: float = 0.5,
) -> dict[str, np.ndarray]:
    """How well KOALA++ and KOALA-V reproduce the EKF's ``H_k P_hat_k`` on the same gradients.

    The full EKF runs on ``problem``; its gradients ``H_k`` are then *replayed* to KOALA++
    (symmetric and vanilla) and KOALA-V, so all filters see identical measurements and only
    the covariance model differs. Returned, per step: ``rel_*`` the relative error
    ``||g_k - g_k^EKF|| / ||g_k^EKF||`` of ``g_k = H_k P_hat_k`` (KOALA-V: ``(sigma + Q) H_k``),
    and ``angle_*`` the angle in degrees between the step directions.

    See: book/koala/01-kalman-view.ipynb
    """
    if not isinstance(problem, NoisyQuadratic):
        raise TypeError(f"problem must be a NoisyQuadratic (got {type(problem).__name__})")
    steps = check_int("steps", steps, 1, problem.max_steps)
    th0 = problem.start()
    ekf = ekf_full(th0, problem.loss, problem.grad, sigma0, q, r, steps)
    Hs = np.array([problem.grad(ekf["theta"][k - 1], k) for k in range(1, steps + 1)])
    g_true = ekf["v_true"] + q * Hs  # H_k P_hat_k of the full filter

    def replay_h(theta, k):
        return Hs[k - 1]

    def no_loss(theta, k):  # L = 0: the filters do not move, only their covariance evolves
        return 0.0

    out: dict[str, np.ndarray] = {}
    for name, sym in (("koalapp", True), ("koalapp_vanilla", False)):
        kp = koalapp_reference(
            th0, no_loss, replay_h, steps=steps, sigma0=sigma0, q=q, r=r, symmetric=sym
        )
        out[f"rel_{name}"] = np.linalg.norm(kp["g"] - g_true, axis=1) / np.linalg.norm(
            g_true, axis=1
        )
        out[f"angle_{name}"] = _angle_deg(kp["g"], g_true)
    kv = koalav_reference(th0, no_loss, replay_h, steps=steps, sigma0=sigma0, q=q, r=r)
    g_v = (kv["sigma"][:-1] + q)[:, None] * Hs
    out["rel_koalav"] = np.linalg.norm(g_v - g_true, axis=1) / np.linalg.norm(g_true, axis=1)
    out["angle_koalav"] = _angle_deg(g_v, g_true)
    return out


# ---------------------------------------------------------------------------------------------
# Digits MLP (notebook 2)
# ---------------------------------------------------------------------------------------------

OPTIMIZERS = ("sgd", "adam", "koalav", "koalapp", "koalapp_vanilla")

#: default learning rates per optimizer (tuned coarsely once on seed 0, then frozen)
DEFAULT_LR = {"sgd": 0.1, "adam": 3e-3, "koalav": 1.0, "koalapp": 1.0, "koalapp_vanilla": 1.0}


def digits_data(seed: int = 0, test_fraction: float = 0.25):
    """scikit-learn's bundled digits (1797 images 8x8, no download), standardised, split.

    Returns ``(X_train, y_train, X_test, y_test)`` as float32/int64 numpy arrays.

    See: book/koala/02-training-digits.ipynb
    """
    from sklearn.datasets import load_digits

    seed = check_int("seed", seed, 0)
    test_fraction = check_range("test_fraction", test_fraction, 0.05, 0.9)
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = idx[:n_test], idx[n_test:]
    X = X / 16.0
    mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-3
    X = (X - mu) / sd
    return (
        X[tr].astype(np.float32),
        y[tr].astype(np.int64),
        X[te].astype(np.float32),
        y[te].astype(np.int64),
    )


@dataclass
class TrainRun:
    """One training run on digits: per-epoch curves and timings.

    ``train_loss`` and ``test_acc`` have one entry per epoch (index 0 is before training);
    ``step_time`` is the mean seconds of ``optimizer.step`` alone, ``iter_time`` of the whole
    iteration (forward, backward, step); ``step_size`` the mean per-layer ``||dtheta|| / ||H||``
    per epoch (one row per epoch, one column per parameter tensor).

    See: book/koala/02-training-digits.ipynb
    """

    optimizer: str
    lr: float
    train_loss: np.ndarray
    test_acc: np.ndarray
    step_time: float
    iter_time: float
    step_size: np.ndarray
    steps: int
    wall: float
    finite: bool = True

    def epochs_to(self, accuracy: float) -> int | None:
        """First epoch whose test accuracy reaches ``accuracy`` (None if never)."""
        hit = np.nonzero(self.test_acc >= accuracy)[0]
        return int(hit[0]) if hit.size else None

    def time_to(self, accuracy: float) -> float | None:
        """Seconds of training (iterations only) until ``accuracy`` is first reached."""
        e = self.epochs_to(accuracy)
        if e is None:
            return None
        return e * (self.steps / max(len(self.test_acc) - 1, 1)) * self.iter_time


def _make_optimizer(name: str, params, lr: float, hp: dict):
    import torch

    from .optim import KoalaPP, KoalaV

    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "koalav":
        return KoalaV(params, lr=lr, sigma0=hp["sigma0"], q=hp["q"], r=hp["r"])
    return KoalaPP(
        params,
        lr=lr,
        sigma0=hp["sigma0"],
        q=hp["q"],
        r=hp["r"],
        weight_decay=hp["weight_decay"],
        symmetric=name == "koalapp",
    )


def train_digits(
    optimizer: str = "koalapp",
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float | None = None,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: float | None = None,
    weight_decay: float = 0.0,
    lr_drop_epoch: int | None = None,
    lr_drop_factor: float = 0.1,
    hidden: int = 64,
    seed: int = 0,
    device=None,
    dtype: str = "float32",
) -> TrainRun:
    """Train a 64-``hidden``-10 tanh MLP on scikit-learn digits with one optimizer.

    Parameters
    ----------
    optimizer : {"sgd", "adam", "koalav", "koalapp", "koalapp_vanilla"}
        SGD with momentum 0.9, ``torch.optim.Adam``, `KoalaV`, `KoalaPP` (symmetric) or
        `KoalaPP` (vanilla closure).
    epochs, batch_size : int
        Passes over the 1348 training images, mini-batch size.
    lr : float, optional
        Learning rate (default: ``DEFAULT_LR[optimizer]``).
    sigma0, q, r, weight_decay : float
        KOALA hyperparameters (``r=None``: EMA of the mean squared per-sample loss).
    lr_drop_epoch : int, optional
        Multiply the learning rate by ``lr_drop_factor`` from this epoch on.
    hidden : int
        Hidden width.
    seed : int
        Seeds the split, the initialisation and the batch order.
    device : torch.device or str, optional
        Default ``lab.device()``.
    dtype : {"float32", "float64"}
        Parameter dtype.

    Returns
    -------
    TrainRun

    See: book/koala/02-training-digits.ipynb
    """
    import torch

    from ..core.runtime import device as lab_device

    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    epochs = check_int("epochs", epochs, 1, 10_000)
    batch_size = check_int("batch_size", batch_size, 1, 100_000)
    lr = DEFAULT_LR[optimizer] if lr is None else check_positive("lr", lr)
    hp = {
        "sigma0": check_positive("sigma0", sigma0, allow_zero=True),
        "q": check_positive("q", q, allow_zero=True),
        "r": None if r is None else check_positive("r", r, allow_zero=True),
        "weight_decay": check_positive("weight_decay", weight_decay, allow_zero=True),
    }
    if lr_drop_epoch is not None:
        lr_drop_epoch = check_int("lr_drop_epoch", lr_drop_epoch, 1, epochs)
    lr_drop_factor = check_range("lr_drop_factor", lr_drop_factor, 0.0, 1.0, low_inclusive=False)
    hidden = check_int("hidden", hidden, 1, 100_000)
    seed = check_int("seed", seed, 0)
    dtype = check_choice("dtype", dtype, ("float32", "float64"))
    dev = lab_device() if device is None else torch.device(device)
    tdtype = getattr(torch, dtype)

    if dev.type == "cpu":  # one thread: per-op overhead dominates at this size
        from ..core.runtime import small_problem_threads

        with small_problem_threads(1):
            return _train_digits(
                optimizer,
                epochs,
                batch_size,
                lr,
                hp,
                lr_drop_epoch,
                lr_drop_factor,
                hidden,
                seed,
                dev,
                tdtype,
            )
    return _train_digits(
        optimizer,
        epochs,
        batch_size,
        lr,
        hp,
        lr_drop_epoch,
        lr_drop_factor,
        hidden,
        seed,
        dev,
        tdtype,
    )


def _train_digits(
    optimizer, epochs, batch_size, lr, hp, lr_drop_epoch, lr_drop_factor, hidden, seed, dev, tdtype
) -> TrainRun:
    import torch

    Xtr, ytr, Xte, yte = digits_data(seed)
    Xtr = torch.as_tensor(Xtr, dtype=tdtype, device=dev)
    Xte = torch.as_tensor(Xte, dtype=tdtype, device=dev)
    ytr = torch.as_tensor(ytr, device=dev)
    yte = torch.as_tensor(yte, device=dev)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 10)
    ).to(device=dev, dtype=tdtype)
    params = list(model.parameters())
    opt = _make_optimizer(optimizer, params, lr, hp)
    is_koala = optimizer.startswith("koala")
    crit = torch.nn.CrossEntropyLoss(reduction="none")

    def evaluate():
        with torch.no_grad():
            loss = crit(model(Xtr), ytr).mean().item()
            acc = (model(Xte).argmax(1) == yte).float().mean().item()
        return loss, acc

    l0, a0 = evaluate()
    losses, accs, sizes = [l0], [a0], []
    step_t = iter_t = 0.0
    n_steps = 0
    finite = True
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    t_start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        if lr_drop_epoch is not None and epoch == lr_drop_epoch:
            for grp in opt.param_groups:
                grp["lr"] = lr * lr_drop_factor
        perm = torch.randperm(len(ytr), generator=g).to(dev)
        ratio = np.zeros(len(params))
        nb = 0
        for i in range(0, len(ytr), batch_size):
            idx = perm[i : i + batch_size]
            before = [p.detach().clone() for p in params]
            sync()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            per_sample = crit(model(Xtr[idx]), ytr[idx])
            loss = per_sample.mean()
            loss.backward()
            sync()
            t1 = time.perf_counter()
            if is_koala:
                opt.step_with_loss(loss.detach(), (per_sample.detach() ** 2).mean())
            else:
                opt.step()
            sync()
            t2 = time.perf_counter()
            step_t += t2 - t1
            iter_t += t2 - t0
            n_steps += 1
            with torch.no_grad():
                for j, (p, b) in enumerate(zip(params, before, strict=True)):
                    gn = float(p.grad.norm()) if p.grad is not None else 0.0
                    ratio[j] += float((p - b).norm()) / max(gn, 1e-12)
            nb += 1
        sizes.append(ratio / nb)
        lo, ac = evaluate()
        if not math.isfinite(lo):
            finite = False
        losses.append(lo)
        accs.append(ac)
    return TrainRun(
        optimizer=optimizer,
        lr=lr,
        train_loss=np.array(losses),
        test_acc=np.array(accs),
        step_time=step_t / n_steps,
        iter_time=iter_t / n_steps,
        step_size=np.array(sizes),
        steps=n_steps,
        wall=time.perf_counter() - t_start,
        finite=finite,
    )
