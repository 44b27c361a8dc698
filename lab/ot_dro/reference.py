"""Numpy float64 references of the worst-case plan and of Sinkhorn (one problem at a time).

The batched torch twins have the same names in :mod:`lab.ot_dro.fast`.

See: book/ot_dro/01-worst-case-plans.ipynb
"""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_int, check_positive

__all__ = ["entropic_plan", "worst_case_weights"]


def _matrix(name, x):
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be array-like of numbers (got {type(x).__name__}): {exc}"
        ) from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"{name} must be a non-empty [N, M] array (got shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return arr


def _marginal(name, x, n):
    arr = np.asarray(x, dtype=np.float64)
    if arr.shape != (n,) or not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"{name} must be a positive vector of length {n} (got shape {arr.shape})")
    return arr


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
    from scipy.special import logsumexp

    C = _matrix("C", C)
    eps = check_positive("eps", eps)
    n_iter = check_int("n_iter", n_iter, 1)
    tol = check_positive("tol", tol, allow_zero=True)
    n, m = C.shape
    a = np.full(n, 1.0 / n) if a is None else _marginal("a", a, n)
    b = np.full(m, 1.0 / m) if b is None else _marginal("b", b, m)
    f, g = np.zeros(n), np.zeros(m)
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
    """Numpy float64 reference of :func:`lab.ot_dro.fast.worst_case_weights` (one problem,
    explicit max-shift).

    See: book/ot_dro/01-worst-case-plans.ipynb
    """
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
    # eq. (2): logits (l_j - lam C_ij) / (lam eps), shifted by the row max before exp
    s = (loss_q[None, :] - lam * C) / (lam * eps)
    s = s - s.max(axis=1, keepdims=True)
    pi = np.exp(s)
    pi /= pi.sum(axis=1, keepdims=True)
    # eq. (3): Q_j = mean_i pi_ij
    return pi, pi.mean(axis=0)
