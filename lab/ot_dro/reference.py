"""Numpy float64 references of the chapter's equations, one problem at a time.

* :func:`entropic_plan`: log-domain Sinkhorn (the entropic OT plan the worst case is);
* :func:`worst_case_weights`: the worst-case plan and distribution, eqs. (2)-(3);
* :func:`sinkhorn_dro_objective`: the Sinkhorn-DRO dual value ``R``, eq. (4);
* :func:`implied_radius`: the transport budget the worst case spends, eq. (5).

Each public function validates its arguments once and calls its kernel (the ``*_unchecked``
twin, which the chapter's drivers call inside their loops). The batched torch twins have the
same names in :mod:`lab.ot_dro.fast`.

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive

__all__ = ["entropic_plan", "worst_case_weights", "sinkhorn_dro_objective", "implied_radius"]


def finite_float64(name: str, x: Any) -> np.ndarray:
    """``x`` as a finite float64 array (TypeError for non-numbers, ValueError for NaN or inf);
    the fast path converts numpy input the same way."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be array-like of numbers (got {type(x).__name__}): {exc}"
        ) from None
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return arr


def _matrix(name, x):
    arr = finite_float64(name, x)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"{name} must be a non-empty [N, M] array (got shape {arr.shape})")
    return arr


def _marginal(name, x, n):
    arr = np.asarray(x, dtype=np.float64)
    if arr.shape != (n,) or not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"{name} must be a positive vector of length {n} (got shape {arr.shape})")
    return arr


def check_dro_inputs(loss_q, C, lam, eps):
    """Validated ``(loss_q [M], C [N, M], lam, eps)`` of eqs. (2)-(4) as float64 numpy."""
    C = _matrix("C", C)
    lam, eps = check_positive("lam", lam), check_positive("eps", eps)
    try:
        loss_q = np.asarray(loss_q, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"loss_q must be array-like of numbers: {exc}") from None
    if loss_q.shape != (C.shape[1],) or not np.isfinite(loss_q).all():
        raise ValueError(
            f"loss_q must be a finite vector of length M = {C.shape[1]} (got {loss_q.shape})"
        )
    return loss_q, C, lam, eps


def entropic_plan(C, eps: float, a=None, b=None, n_iter: int = 1000, tol: float = 1e-9):
    """Log-domain Sinkhorn in plain numpy float64, one problem at a time (the reference).

    Parameters
    ----------
    C : array [N, M]
        Cost matrix.
    eps : float
        Entropic regularisation (> 0).
    a, b : array [N], array [M], optional
        Marginals (uniform by default).
    n_iter : int
        Maximum number of Sinkhorn sweeps.
    tol : float
        Stop when the L1 violation of the row marginal is below ``tol``.

    Returns
    -------
    array [N, M]
        The plan ``exp((f_i + g_j - C_ij) / eps)``.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    C = _matrix("C", C)
    eps = check_positive("eps", eps)
    n_iter = check_int("n_iter", n_iter, 1)
    tol = check_positive("tol", tol, allow_zero=True)
    n, m = C.shape
    a = np.full(n, 1.0 / n) if a is None else _marginal("a", a, n)
    b = np.full(m, 1.0 / m) if b is None else _marginal("b", b, m)
    return entropic_plan_unchecked(C, eps, a, b, n_iter, tol)


def entropic_plan_unchecked(C, eps, a, b, n_iter, tol):
    """:func:`entropic_plan` on validated arguments (marginals given)."""
    from scipy.special import logsumexp

    f, g = np.zeros(C.shape[0]), np.zeros(C.shape[1])
    for _ in range(n_iter):
        # f_i = eps log a_i - eps log sum_j exp((g_j - C_ij)/eps): rows match a
        f = eps * np.log(a) - eps * logsumexp((g[None, :] - C) / eps, axis=1)
        # g_j = eps log b_j - eps log sum_i exp((f_i - C_ij)/eps): columns match b
        g = eps * np.log(b) - eps * logsumexp((f[:, None] - C) / eps, axis=0)
        P = np.exp((f[:, None] + g[None, :] - C) / eps)
        if np.abs(P.sum(1) - a).sum() < tol:
            break
    return np.exp((f[:, None] + g[None, :] - C) / eps)


def worst_case_weights(loss_q, C, lam: float, eps: float):
    """Worst-case plan ``pi [N, M]`` and distribution ``Q [M]`` (eqs. 2-3), numpy float64.

    The reference of :func:`lab.ot_dro.fast.worst_case_weights` (one problem, explicit
    max-shift); the page shows :func:`worst_case_weights_unchecked`, its kernel.

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return worst_case_weights_unchecked(*check_dro_inputs(loss_q, C, lam, eps))


def worst_case_weights_unchecked(loss_q, C, lam, eps):
    """Eqs. (2)-(3) on validated float64 arrays: ``pi_ij = softmax_j((l_j - lam C_ij)/(lam eps))``,
    ``Q_j = mean_i pi_ij``."""
    # eq. (2): the logits (l_j - lam C_ij) / (lam eps) ...
    s = (loss_q[None, :] - lam * C) / (lam * eps)
    # ... shifted by their row maximum before exp (the softmax is unchanged)
    s = s - s.max(axis=1, keepdims=True)
    pi = np.exp(s)
    pi /= pi.sum(axis=1, keepdims=True)
    # eq. (3): Q_j = (1/N) sum_i pi_ij
    Q = pi.mean(axis=0)
    return pi, Q


def sinkhorn_dro_objective(loss_q, C, lam: float, eps: float) -> float:
    """Fixed-``lam`` Sinkhorn-DRO dual value ``R`` (eq. 4), numpy float64; ``dR/dl_j = Q_j``.

    ``R = lam eps (1/N) sum_i log((1/M) sum_j exp((l_j - lam C_ij) / (lam eps)))``: the
    reference of :func:`lab.ot_dro.fast.sinkhorn_dro_objective` (one problem).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    return sinkhorn_dro_objective_unchecked(*check_dro_inputs(loss_q, C, lam, eps))


def sinkhorn_dro_objective_unchecked(loss_q, C, lam, eps) -> float:
    """Eq. (4) on validated float64 arrays."""
    # eq. (4): the inner log-mean-exp over the candidates, stabilised by the row maximum
    s = (loss_q[None, :] - lam * C) / (lam * eps)
    s_max = s.max(axis=1)
    log_mean = s_max + np.log(np.exp(s - s_max[:, None]).mean(axis=1))
    # eq. (4): lam eps times the mean over the training points
    return float(lam * eps * log_mean.mean())


def implied_radius(pi, C) -> float:
    """Transport budget the worst case spends, ``rho = (1/N) sum_ij pi_ij C_ij`` (eq. 5).

    The numpy reference of :func:`lab.ot_dro.fast.implied_radius` (one problem).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
    pi, C = _matrix("pi", pi), _matrix("C", C)
    if pi.shape != C.shape:
        raise ValueError(f"pi and C must have the same shape (got {pi.shape} and {C.shape})")
    return implied_radius_unchecked(pi, C)


def implied_radius_unchecked(pi, C) -> float:
    """Eq. (5) on validated float64 arrays."""
    # eq. (5): the cost each training point pays under its row of pi, averaged over i
    return float((pi * C).sum(axis=1).mean())
