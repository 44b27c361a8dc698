"""Closed forms and exact moment recursions of the samplers on quadratic targets.

See: book/wflows/02-rates-and-variance.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
    check_range,
)
from lab.core.rates import exponential_fit, power_law_fit
from lab.wflows.targets import FiniteSumQuadratic, check_potential

__all__ = [
    "ula_stationary_cov",
    "sgld_stationary_cov",
    "sgld_stationary_var_1d",
    "sgd_flow_stationary_var_1d",
    "sgld_moments",
    "fit_log_slope",
]

# ---------------------------------------------------------------------------------------------
# Closed forms and exact moment recursions for quadratic targets
# ---------------------------------------------------------------------------------------------


def ula_stationary_cov(Abar: Any, h: float) -> np.ndarray:
    r"""Stationary covariance of ULA on a quadratic $V$: $(\bar A - h \bar A^2/2)^{-1}$.

    (From $S = (I - h\bar A) S (I - h\bar A) + 2h I$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    Abar = np.atleast_2d(check_array("Abar", Abar))
    h = check_positive("h", h)
    return np.linalg.inv(Abar - 0.5 * h * Abar @ Abar)


def sgd_flow_stationary_var_1d(eta: float, s: float, batch_size: int) -> float:
    r"""SGD flow on ``shifted_quadratic_1d``: stationary variance $1 + \eta s^2 / (2b)$.

    (Constant diffusion $D = 1 + \frac{\eta}{2} s^2/b$, drift $-x$: $\mu_\infty = \mathcal N(0, D)$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    eta = check_positive("eta", eta, allow_zero=True)
    s = check_positive("s", s, allow_zero=True)
    b = check_int("batch_size", batch_size, 1)
    return 1.0 + eta * s * s / (2 * b)


def sgld_stationary_var_1d(h: float, s: float, batch_size: int) -> float:
    r"""SGLD on ``shifted_quadratic_1d``: stationary variance $(1 + h s^2/(2b)) / (1 - h/2)$.

    (From $v = (1-h)^2 v + h^2 s^2 / b + 2h$.)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    h = check_range("h", h, 0.0, 2.0, low_inclusive=False, high_inclusive=False)
    s = check_positive("s", s, allow_zero=True)
    b = check_int("batch_size", batch_size, 1)
    return (1.0 + h * s * s / (2 * b)) / (1.0 - h / 2)


def sgld_moments(
    potential: FiniteSumQuadratic,
    mean0: Any,
    cov0: Any,
    step_size: float | Any,
    steps: int,
    batch_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact mean and covariance of the SGLD (or, with ``batch_size=None``, ULA) law on a
    quadratic finite sum, by the moment recursion of eq. (4) (no particles, no sampling error).

    With $X' = (I - hA_B)X + h c_B + \sqrt{2h}\xi$ and $Q = E[XX^\top]$:
    $Q' = E[(I-hA_B)Q(I-hA_B)] + h E[(I-hA_B)\mu c_B^\top] + h E[c_B\mu^\top(I-hA_B)]
    + h^2 E[c_B c_B^\top] + 2hI$, where for minibatch means with replacement
    $E[f_B g_B^\top] = \bar f \bar g^\top + (E_i[f_i g_i^\top] - \bar f\bar g^\top)/b$.

    Returns
    -------
    means : ndarray (steps + 1, d)
    covs : ndarray (steps + 1, d, d)

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = check_potential(potential)
    d = potential.d
    mu = np.atleast_1d(check_array("mean0", mean0)).reshape(d)
    S = np.atleast_2d(check_array("cov0", cov0)).reshape(d, d)
    steps = check_int("steps", steps, 1, 10_000_000)
    if np.ndim(step_size) == 0:
        h = np.full(steps, check_positive("step_size", step_size))
    else:
        h = check_array("step_size", step_size, shape=(steps,))
    inv_b = 0.0 if batch_size is None else 1.0 / check_int("batch_size", batch_size, 1, None)
    A, c, Abar, cbar = potential.A, potential.c, potential.Abar, potential.cbar
    N = potential.N
    I = np.eye(d)
    Ecc = cbar[:, None] * cbar[None] + inv_b * (c.T @ c / N - np.outer(cbar, cbar))
    # precomputed averages: E_i[A_i kron A_i] (acts on vec Q) and E_i[A_i[j, l] c_i[k]]
    EAA = np.einsum("nij,nkl->ikjl", A, A).reshape(d * d, d * d) / N
    EAc = np.einsum("njl,nk->jlk", A, c) / N
    means, covs = [mu.copy()], [S.copy()]
    Q = S + np.outer(mu, mu)
    for k in range(steps):
        hk = h[k]
        # E[A_B Q A_B] and E[A_B mu c_B^T] for minibatch means with replacement
        AQA = Abar @ Q @ Abar
        EAQA = AQA + inv_b * ((EAA @ Q.reshape(-1)).reshape(d, d) - AQA)
        Amc = np.outer(Abar @ mu, cbar)
        EAmc = Amc + inv_b * (np.einsum("jlk,l->jk", EAc, mu) - Amc)
        cross = np.outer(mu, cbar) - hk * EAmc  # E[(I - h A_B) mu c_B^T]
        Q = Q - hk * (Abar @ Q + Q @ Abar) + hk**2 * EAQA  # E[(I-hA_B) Q (I-hA_B)]
        Q = Q + hk * (cross + cross.T) + hk**2 * Ecc + 2 * hk * I
        mu = mu - hk * (Abar @ mu - cbar)  # eq. (4) in mean: E[g_B] = grad V
        means.append(mu.copy())
        covs.append(Q - np.outer(mu, mu))
    return np.array(means), np.array(covs)


def sgld_stationary_cov(
    potential: FiniteSumQuadratic, h: float, batch_size: int | None = None
) -> np.ndarray:
    r"""Exact stationary covariance of SGLD (ULA with ``batch_size=None``) on a quadratic
    finite sum. The stationary mean is the target mean $m_*$ (SGLD is unbiased in the mean
    here); with $e_i = \nabla V_i(m_*)$ and $C = \mathrm{Cov}_i(e_i)$ the covariance solves
    $h(\bar A S + S\bar A) - h^2 E[A_B S A_B] = h^2 C/b + 2h I$, a $d^2 \times d^2$ linear
    system. In 1-D with $A_i = 1$ it is $(1 + h s^2/(2b))/(1 - h/2)$.

    See: book/wflows/02-rates-and-variance.ipynb
    """
    potential = check_potential(potential)
    h = check_positive("h", h)
    if h * potential.L >= 2.0:
        raise ValueError(f"h must be < 2/L = {2 / potential.L:.4g} (got {h:g})")
    inv_b = 0.0 if batch_size is None else 1.0 / check_int("batch_size", batch_size, 1, None)
    A, Abar, d, N = potential.A, potential.Abar, potential.d, potential.N
    I = np.eye(d)
    e = potential.grad_components(potential.mean[None])[0]  # (N, d), mean zero
    C = e.T @ e / N
    # vec(A S B) = (B^T kron A) vec(S); A_i symmetric
    EAA = np.einsum("nij,nkl->ikjl", A, A).reshape(d * d, d * d) / N
    AA = np.kron(Abar, Abar)
    lhs = h * (np.kron(I, Abar) + np.kron(Abar, I)) - h * h * (AA + inv_b * (EAA - AA))
    rhs = (h * h * inv_b * C + 2 * h * I).reshape(-1)
    S = np.linalg.solve(lhs, rhs).reshape(d, d)
    return 0.5 * (S + S.T)


def fit_log_slope(x: Any, y: Any, *, loglog: bool = False) -> float:
    """Least-squares slope of ``log y`` against ``x`` (or ``log x`` with ``loglog``).

    See: book/wflows/02-rates-and-variance.ipynb
    """
    x = check_array("x", x, ndim=1, min_size=2)
    y = check_array("y", y, shape=(x.shape[0],))
    if np.any(y <= 0) or (loglog and np.any(x <= 0)):
        raise ValueError("y (and x with loglog) must be > 0 to take logs")
    if loglog:
        return power_law_fit(x, y, nonpositive="raise").exponent
    return exponential_fit(x, y, nonpositive="raise").rate
