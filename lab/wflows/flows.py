"""The flows of densities in 1-D: the Fokker-Planck equation of the GD flow, eq. (1), and of the
SGD flow, eq. (3), by conservative finite volumes.

See: book/wflows/01-three-samplers.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_array,
    check_int,
    check_positive,
)
from lab.wflows.targets import FiniteSumQuadratic, check_potential

__all__ = [
    "fokker_planck_1d",
    "sgd_flow_density",
]

# ---------------------------------------------------------------------------------------------
# The 1-D Fokker-Planck flow
# ---------------------------------------------------------------------------------------------


def _on_grid(name: str, f: Any, x: np.ndarray) -> np.ndarray:
    vals = f(x) if callable(f) else f
    vals = np.broadcast_to(check_array(name, vals), x.shape).astype(float)
    return vals


def fokker_planck_1d(
    Vprime: Any,
    D: Any,
    x_grid: Any,
    mu0: Any,
    t_grid: Any,
    *,
    dt: float = 5e-3,
) -> np.ndarray:
    r"""Solve $\partial_t \mu = \partial_x(\mu V') + \partial_x^2(D\mu)$ on a uniform grid
    (conservative finite volumes, zero-flux boundaries, backward Euler).

    The flux through the face between cells $j$ and $j+1$ is
    $J_{j+\frac12} = -V'_{j+\frac12}\frac{\mu_j+\mu_{j+1}}{2} - \frac{D_{j+1}\mu_{j+1} - D_j\mu_j}{\Delta x}$
    and $\partial_t\mu_j = -(J_{j+\frac12} - J_{j-\frac12})/\Delta x$, so total mass is
    conserved exactly. With $D = 1$ this is the GD flow (eq. 1); with
    $D = 1 + \frac{\eta}{2}\Sigma(x)$ the SGD flow (eq. 3).

    Parameters
    ----------
    Vprime, D : callable or array
        Drift potential derivative and diffusion coefficient at the cell centres (``D > 0``).
    x_grid : array (n,)
        Uniformly spaced cell centres, ``n >= 3``.
    mu0 : array (n,)
        Initial density (normalised to mass one on the grid).
    t_grid : array (T,)
        Increasing output times starting at 0 or later.
    dt : float
        Largest internal time step.

    Returns
    -------
    ndarray (T, n)
        Densities at the output times.

    See: book/wflows/01-three-samplers.ipynb
    """
    x = check_array("x_grid", x_grid, ndim=1, min_size=3)
    dx = x[1] - x[0]
    if dx <= 0 or not np.allclose(np.diff(x), dx, rtol=1e-8, atol=0):
        raise ValueError("x_grid must be increasing and uniformly spaced")
    n = x.size
    vp = _on_grid("Vprime", Vprime, x)
    Dv = _on_grid("D", D, x)
    if Dv.min() <= 0:
        raise ValueError(f"D must be > 0 on the grid (got min {Dv.min():g})")
    mu = check_array("mu0", mu0, shape=(n,)).copy()
    if mu.min() < 0 or mu.sum() <= 0:
        raise ValueError("mu0 must be nonnegative with positive mass")
    mu /= mu.sum() * dx
    t = check_array("t_grid", t_grid, ndim=1, min_size=1)
    if t[0] < 0 or np.any(np.diff(t) < 0):
        raise ValueError("t_grid must be nonnegative and nondecreasing")
    dt = check_positive("dt", dt)
    return _fokker_planck(vp, Dv, dx, mu, t, dt)


def _bands(a: np.ndarray, c: np.ndarray, dx: float, tau: float) -> np.ndarray:
    """(I - tau * Lop) in banded form, Lop mu_j = -(J_{j+1/2} - J_{j-1/2}) / dx."""
    n = a.size + 1
    ab = np.zeros((3, n))
    diag = np.ones(n)
    diag[:-1] += tau * a / dx  # -(-a_j mu_j)... contribution of J_{j+1/2} to cell j
    diag[1:] -= tau * c / dx  # contribution of J_{j-1/2} to cell j
    ab[1] = diag
    ab[0, 1:] = tau * c / dx  # coefficient of mu_{j+1} in row j
    ab[2, :-1] = -tau * a / dx  # coefficient of mu_{j-1} in row j
    return ab


def _fokker_planck(vp, Dv, dx, mu, t, dt) -> np.ndarray:
    """Backward Euler of eqs. (1) / (3) on checked, normalised inputs (``fokker_planck_1d``)."""
    from scipy.linalg import solve_banded

    vf = 0.5 * (vp[:-1] + vp[1:])  # V' at the faces
    # flux J_{j+1/2} = a_j mu_j + c_j mu_{j+1}; d mu_j/dt = -(J_{j+1/2} - J_{j-1/2}) / dx
    a = -0.5 * vf + Dv[:-1] / dx
    c = -0.5 * vf - Dv[1:] / dx
    full = None  # the bands of a full step (tau = dt to 14 digits), built once
    out = np.empty((t.size, mu.size))
    now = 0.0
    for i, target in enumerate(t):
        while now < target - 1e-14:
            tau = min(dt, target - now)
            if round(tau, 14) != round(dt, 14):
                ab = _bands(a, c, dx, tau)  # a shorter step to land on an output time
            else:
                full = _bands(a, c, dx, tau) if full is None else full
                ab = full
            mu = solve_banded((1, 1), ab, mu)
            now += tau
        out[i] = mu
    return out


def sgd_flow_density(
    potential: FiniteSumQuadratic,
    eta: float,
    batch_size: int,
    x_grid: Any,
    mu0: Any,
    t_grid: Any,
    *,
    dt: float = 5e-3,
) -> np.ndarray:
    r"""The SGD flow (eq. 3) of a 1-D finite sum: ``fokker_planck_1d`` with $V'$ of the
    potential and $D(x) = 1 + \frac{\eta}{2}\Sigma(x)$, $\Sigma(x) = \mathrm{Var}_i[V_i'(x)]/b$.
    ``eta = 0`` is the GD flow.

    See: book/wflows/01-three-samplers.ipynb
    """
    potential = check_potential(potential)
    if potential.d != 1:
        raise ValueError(f"potential must be 1-D for sgd_flow_density (got d={potential.d})")
    eta = check_positive("eta", eta, allow_zero=True)
    b = check_int("batch_size", batch_size, 1, potential.N)
    x = check_array("x_grid", x_grid, ndim=1, min_size=3)
    vp = potential.grad(x[:, None])[:, 0]
    sigma = potential.noise_cov(x[:, None], b)[:, 0, 0]
    return fokker_planck_1d(vp, 1.0 + 0.5 * eta * sigma, x, mu0, t_grid, dt=dt)
