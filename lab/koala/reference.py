"""Reference kernels (numpy float64): the full EKF, KOALA++, KOALA-V and Adam on one vector.

Each statement sits beside the block of the method it implements. The paper's equation
numbers were not read (the chapter was written from the authors' code, README and poster;
see the package docstring), so the ``# eq. (...)`` comments cite the labels of the lesson page
(book/koala/index.md), which name blocks instead of numbers:

* ``(koala-ekf)``: the extended Kalman filter on the scalar-loss measurement (target 0);
* ``(koala-recursion)``: the exact recursion ``v_k = H_k P_{k-2} + Q H_k - lambda_k (v_{k-1} +
  Q H_{k-1})`` for ``v_k = H_k P_{k-1}``;
* ``(koala-closure)``: the least-squares estimate ``H_k P_{k-2} ~ alpha_k v_{k-1} + beta_k
  H_{k-1}`` (vanilla: ``beta_k = 0``);
* ``(koala-update)``: the KOALA++ step ``g_k = v_k + Q H_k``, ``S_k``, ``theta_k``;
* ``(koala-init)``: the first step of the authors' code (the "phantom" covariance update);
* ``(koalav)``: the scalar-covariance filter of the predecessor.

``# deviation:`` marks where we differ from the authors' code.

See: book/koala/01-kalman-view.ipynb
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)

__all__ = [
    "ekf_full",
    "koalapp_v_update",
    "koalapp",
    "koalav",
    "adam",
]


# ---------------------------------------------------------------------------------------------
# Argument helpers
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
    try:
        arr = np.asarray(r, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers (got {r!r})") from None
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
# The full-covariance EKF (the exact reference)
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
        The step multiplier ``eta`` of the state update, ``> 0`` (1 is the textbook EKF).
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
    return _ekf_full(theta, (loss_fn, grad_fn), P, Q, Rs, lr=lr, phantom=phantom)


def _ekf_full(theta, fns, P, Q, Rs, *, lr, phantom) -> dict[str, np.ndarray]:
    """`ekf_full` on checked arguments (``Rs`` one noise per step, ``fns`` (loss, grad))."""
    loss_fn, grad_fn = fns
    I = np.eye(theta.size)

    if phantom:  # eq. (koala-init) covariance-only update with H_1, no state step
        H = np.asarray(grad_fn(theta, 1), dtype=np.float64)
        P_hat = P + Q * I  # eq. (koala-ekf) predict
        S = H @ P_hat @ H + Rs[0]  # eq. (koala-ekf) innovation variance
        K = P_hat @ H / S  # eq. (koala-ekf) gain
        P = P_hat - np.outer(K, H @ P_hat)  # eq. (koala-ekf) covariance update

    thetas, Ps, vs, Ss, losses = [theta.copy()], [P.copy()], [], [], []
    for k in range(1, len(Rs) + 1):
        H = np.asarray(grad_fn(theta, k), dtype=np.float64)  # H_k = grad L_k(theta_{k-1})
        L = float(loss_fn(theta, k))
        vs.append(H @ P)  # v_k = H_k P_{k-1} (the quantity KOALA++ tracks)
        P_hat = P + Q * I  # eq. (koala-ekf) predict: P_hat_k = P_{k-1} + Q I
        S = float(H @ P_hat @ H) + Rs[k - 1]  # eq. (koala-ekf) S_k = H_k P_hat_k H_k^T + R_k
        K = P_hat @ H / S  # eq. (koala-ekf) K_k = P_hat_k H_k^T / S_k
        theta = theta - lr * K * L  # eq. (koala-ekf) theta_k = theta_{k-1} - eta K_k L_k (target 0)
        P = P_hat - np.outer(K, H @ P_hat)  # eq. (koala-ekf) P_k = P_hat_k - K_k H_k P_hat_k
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


# ---------------------------------------------------------------------------------------------
# KOALA++
# ---------------------------------------------------------------------------------------------


def koalapp_v_update(
    v_prev: Any,
    h_prev: Any,
    h: Any,
    S_prev: float,
    Q: float,
    symmetric: bool = True,
) -> np.ndarray:
    """One step of KOALA++'s recursion for ``v_k ~ H_k P_{k-1}`` (recursion + closure).

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
    return _koalapp_v_update(v_prev, h_prev, h, S_prev, Q, symmetric)


def _koalapp_v_update(v_prev, h_prev, h, S_prev, Q, symmetric) -> np.ndarray:
    """`koalapp_v_update` on checked arguments: the recursion closed by least squares."""
    x = h_prev @ h_prev  # x = ||H_{k-1}||^2
    if x == 0.0:
        raise ValueError("h_prev must be nonzero (the closure divides by ||H_{k-1}||^2)")
    y = h_prev @ v_prev  # y = H_{k-1} v_{k-1}^T
    a = h @ h_prev  # a = H_k H_{k-1}^T
    c = h @ v_prev  # c = H_k v_{k-1}^T
    lam = (c + Q * a) / S_prev  # eq. (koala-lambda) lambda_k = (c + Q a) / S_{k-1}
    alpha = a / x  # eq. (koala-closure) alpha_k = a / x
    beta = (c / x - a * y / x**2) if symmetric else 0.0  # eq. (koala-closure) beta_k; vanilla: 0
    # eq. (koala-v-update), i.e. eq. (koala-recursion) closed by (koala-closure):
    #   v_k = (alpha_k - lambda_k) v_{k-1} + Q (H_k - lambda_k H_{k-1}) + beta_k H_{k-1}
    return (alpha - lam) * v_prev + Q * (h - lam * h_prev) + beta * h_prev


def koalapp(
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
    """KOALA++ on one parameter vector: `koalapp_v_update` and the update step, numpy float64.

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
        ``wd >= 0``: ``H`` gets ``wd * theta`` and the loss ``wd/2 ||theta||^2``.
    symmetric : bool
        Symmetric (default) or vanilla closure.
    init : {"phantom", "prior"}
        First-step initialisation (see the package docstring).

    Returns
    -------
    dict
        ``theta`` (steps+1, n), ``v`` (steps, n), ``g`` (steps, n) with ``g = H P_hat``,
        ``S`` (steps,), ``loss`` (steps,) (``L~_k``, with weight decay).

    Raises
    ------
    FloatingPointError
        When ``S_k <= 0`` (the closure is not positive semidefinite in general).

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
    fns = (_stepwise(loss_fn, "loss_fn"), _stepwise(grad_fn, "grad_fn"))
    return _koalapp(
        theta, fns, Rs, lr=lr, sigma0=sigma0, Q=Q, wd=wd, symmetric=symmetric, init=init
    )


def _koalapp(theta, fns, Rs, *, lr, sigma0, Q, wd, symmetric, init) -> dict[str, np.ndarray]:
    """`koalapp` on checked arguments (``Rs`` one noise per step, ``fns`` (loss, grad))."""
    loss_fn, grad_fn = fns

    v_prev = h_prev = S_prev = None
    thetas, vs, gs, Ss, losses = [theta.copy()], [], [], [], []
    for k in range(1, len(Rs) + 1):
        R = Rs[k - 1]
        H = np.asarray(grad_fn(theta, k), dtype=np.float64) + wd * theta  # H_k incl. wd theta
        L = float(loss_fn(theta, k)) + 0.5 * wd * float(theta @ theta)  # eq. (koala-update) L~_k
        if v_prev is None and init == "prior":
            v = sigma0 * H  # v_1 = H_1 P_0 with P_0 = sigma0 I (no phantom update)
        else:
            if (
                v_prev is None
            ):  # eq. (koala-init) v_0 = sigma0 H_1, H_0 = H_1, S_0 = H_1 (v_0 + Q H_1)^T + R
                v_prev, h_prev = sigma0 * H, H.copy()
                S_prev = float(h_prev @ (v_prev + Q * h_prev)) + R
            v = _koalapp_v_update(v_prev, h_prev, H, S_prev, Q, symmetric)  # eq. (koala-v-update)
        g = v + Q * H  # eq. (koala-update) g_k = v_k + Q H_k = H_k P_hat_k
        S = float(H @ g) + R  # eq. (koala-update) S_k = H_k g_k^T + R_k
        if not S > 0:  # deviation: the authors' code steps on; we stop (never step uphill)
            raise FloatingPointError(f"S_k = {S:g} <= 0 at step {k}: the closure lost PSD")
        theta = (
            theta - lr * L * g / S
        )  # eq. (koala-update) theta_k = theta_{k-1} - eta L~_k g_k^T / S_k
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


# ---------------------------------------------------------------------------------------------
# KOALA-V and Adam (the baselines)
# ---------------------------------------------------------------------------------------------


def koalav(
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
    ``sigma -= sigma^2 ||H||^2 / S``. Arguments as in `koalapp`.

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
        sigma = sigma + Q  # eq. (koalav) predict: P_hat = (sigma + Q) I
        hh = float(H @ H)
        S = sigma * hh + Rs[k - 1]  # eq. (koalav) S = sigma ||H||^2 + R
        theta = theta - lr * L * sigma * H / S  # eq. (koalav) K = sigma H^T / S
        sigma = sigma - sigma**2 * hh / S  # eq. (koalav) P = P_hat - sigma^2 ||H||^2 / S
        thetas.append(theta.copy())
        sigmas.append(sigma)
        losses.append(L)
    return {"theta": np.array(thetas), "sigma": np.array(sigmas), "loss": np.array(losses)}


def adam(
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
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    b1 = check_range("betas[0]", betas[0], 0.0, 1.0, high_inclusive=False)
    b2 = check_range("betas[1]", betas[1], 0.0, 1.0, high_inclusive=False)
    eps = check_positive("eps", eps)
    grad_fn = _stepwise(grad_fn, "grad_fn")
    m = np.zeros_like(theta)
    s = np.zeros_like(theta)
    out = [theta.copy()]
    for k in range(1, steps + 1):
        g = np.asarray(grad_fn(theta, k), dtype=np.float64)
        m = b1 * m + (1 - b1) * g  # first moment
        s = b2 * s + (1 - b2) * g * g  # second moment
        denom = np.sqrt(s) / math.sqrt(1 - b2**k) + eps  # bias-corrected, as torch does
        theta = theta - (lr / (1 - b1**k)) * m / denom
        out.append(theta.copy())
    return {"theta": np.array(out)}
