"""Reference kernels: the dual step, the scalar toy problem, Theorems 4.1/4.2 (numpy, float64),
and the equivariance error measured with one forward pass per group element (a loop; the fast
path, :func:`lab.ace.fast.equivariance_error`, batches every element into one pass).

See: book/ace/01-homotopy-and-duals.ipynb
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_real

__all__ = [
    "MODES",
    "dual_step",
    "scalar_gda",
    "gda_spectral_radius",
    "truncation_bound",
    "violation_bound",
    "equivariance_error",
]

MODES = ("equality", "resilient")


# ----------------------------------------------------------------------------------------
# Reference kernels (numpy, float64): the dual step and the scalar toy problem
# ----------------------------------------------------------------------------------------
def dual_step(lam, slack, eta_d: float, kind: str = "equality") -> np.ndarray:
    """One dual-ascent step on the multipliers (reference kernel, numpy).

    ``equality``: :math:`\\lambda \\leftarrow \\lambda + \\eta_d\\, s` (free sign);
    ``inequality``: :math:`\\lambda \\leftarrow [\\lambda + \\eta_d\\, s]_+`.

    Parameters
    ----------
    lam, slack : array-like
        Current multipliers and constraint slacks (``gamma`` or ``|gamma| - u``), same shape.
    eta_d : float
        Dual step size, ``>= 0``.
    kind : {"equality", "inequality"}

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    eta_d = check_positive("eta_d", eta_d, allow_zero=True)
    kind = check_choice("kind", kind, ("equality", "inequality"))
    lam = np.asarray(lam, dtype=float)
    slack = np.asarray(slack, dtype=float)
    if lam.shape != slack.shape:
        raise ValueError(f"lam and slack must have the same shape (got {lam.shape}, {slack.shape})")
    new = lam + eta_d * slack  # eq. (Alg. 1/2, dual step): lambda + eta_d * slack
    if kind == "inequality":
        new = np.maximum(new, 0.0)  # eq. (Alg. 2): projection onto lambda >= 0
    return new


def scalar_gda(
    eta_p: float = 0.05,
    eta_d: float = 0.05,
    aug: float = 0.0,
    steps: int = 2000,
    mode: str = "equality",
    rho: float = 1.0,
    x0: float = 1.0,
    target: float = 2.0,
) -> dict[str, np.ndarray]:
    r"""Simultaneous gradient descent-ascent on the textbook problem (reference, numpy).

    ``equality``: :math:`\min_x (x - a)^2` s.t. :math:`x = 0`, Lagrangian
    :math:`(x-a)^2 + \lambda x + c x^2` (KKT point :math:`x^* = 0, \lambda^* = 2a`).
    ``resilient``: :math:`\min_{x,u} (x-a)^2 + \tfrac{\rho}{2}u^2` s.t. :math:`|x| \le u`
    (optimum :math:`x^* = u^* = 2a/(2+\rho)`, :math:`\lambda^* = \rho u^*`; 4/3 for
    :math:`a=2,\rho=1`).

    Returns
    -------
    dict with arrays ``x``, ``lam``, ``u`` of length ``steps + 1``.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    eta_p = check_positive("eta_p", eta_p)
    eta_d = check_positive("eta_d", eta_d, allow_zero=True)
    aug = check_positive("aug", aug, allow_zero=True)
    steps = check_int("steps", steps, 1)
    mode = check_choice("mode", mode, MODES)
    rho = check_positive("rho", rho)
    x, lam, u = check_real("x0", x0), 0.0, 0.0
    a = check_real("target", target)
    xs, lams, us = [x], [lam], [u]
    for _ in range(steps):
        if mode == "equality":
            gx = 2 * (x - a) + lam + 2 * aug * x  # eq. (Alg. 1): d/dx [(x-a)^2 + lam x + c x^2]
            slack = x  # constraint x = 0
            x = x - eta_p * gx  # primal descent
            lam = float(dual_step(lam, slack, eta_d, "equality"))  # dual ascent (free sign)
        else:
            gx = 2 * (x - a) + lam * np.sign(x)  # eq. (Alg. 2): d/dx [(x-a)^2 + lam |x|]
            gu = rho * u - lam  # d/du [rho/2 u^2 - lam u]
            slack = abs(x) - u  # constraint |x| <= u
            x, u = x - eta_p * gx, u - eta_p * gu
            lam = float(dual_step(lam, slack, eta_d, "inequality"))
        xs.append(x)
        lams.append(lam)
        us.append(u)
    return {"x": np.array(xs), "lam": np.array(lams), "u": np.array(us)}


# ----------------------------------------------------------------------------------------
# The ACE wrapper (torch)
# ----------------------------------------------------------------------------------------


def gda_spectral_radius(eta_p: float, eta_d: float, aug: float = 0.0) -> float:
    """Spectral radius of the linear GDA update on min (x-2)^2 + c x^2 s.t. x = 0.

    The map is (x, λ) -> A (x, λ) + const with A = [[1 - 2η_p(1+c), -η_p], [η_d, 1]].

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    eta_p = check_positive("eta_p", eta_p)
    eta_d = check_positive("eta_d", eta_d, allow_zero=True)
    aug = check_positive("aug", aug, allow_zero=True)
    A = np.array([[1 - 2 * eta_p * (1 + aug), -eta_p], [eta_d, 1.0]])
    return float(np.abs(np.linalg.eigvals(A)).max())


# ----------------------------------------------------------------------------------------
# Theorems 4.1 and 4.2 (as stated in the summary the spec read)
# ----------------------------------------------------------------------------------------
def _gamma_bar(gammas) -> float:
    g = np.abs(np.asarray([float(v) for v in np.ravel(np.asarray(gammas, dtype=object))]))
    if g.size == 0:
        raise ValueError("gammas must be non-empty")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"gammas must be finite (got {g})")
    return float(g.max())


def truncation_bound(gammas, B: float, M: float, L: int, x_norm) -> float | np.ndarray:
    r"""Theorem 4.1: :math:`\lVert f_{\theta,\gamma}(x) - f_{\theta,0}(x)\rVert \le
    [\sum_{k=0}^{L-1}(1+\bar\gamma)^k]\,\bar\gamma\, B\, M^{L-1} \lVert x\rVert`.

    ``x_norm`` may be an array (one bound per sample).

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    gb = _gamma_bar(gammas)
    B = check_positive("B", B, allow_zero=True)
    M = check_positive("M", M, allow_zero=True)
    return truncation_bound_unchecked(gb, B, M, check_int("L", L, 1), x_norm)


def truncation_bound_unchecked(gb: float, B: float, M: float, L: int, x_norm) -> float | np.ndarray:
    """Theorem 4.1 at ``gamma_bar = gb`` (unchecked)."""
    xn = np.asarray(x_norm, dtype=float)
    geo = sum((1 + gb) ** k for k in range(L))  # sum_{k=0}^{L-1} (1 + gamma_bar)^k
    out = geo * gb * B * M ** (L - 1) * xn  # eq. (Thm 4.1)
    return float(out) if out.ndim == 0 else out


def violation_bound(gammas, B: float, M: float, C: float, L: int, x_norm) -> float | np.ndarray:
    r"""Theorem 4.2: :math:`\lVert\rho_Y(g) f(x) - f(\rho_X(g)x)\rVert \le
    2\bar\gamma (M + C\bar\gamma)^{L-1} L B^2 \lVert x\rVert`.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    gb = _gamma_bar(gammas)
    B = check_positive("B", B, allow_zero=True)
    M = check_positive("M", M, allow_zero=True)
    C = check_positive("C", C, allow_zero=True)
    return violation_bound_unchecked(gb, B, M, C, check_int("L", L, 1), x_norm)


def violation_bound_unchecked(
    gb: float, B: float, M: float, C: float, L: int, x_norm
) -> float | np.ndarray:
    """Theorem 4.2 at ``gamma_bar = gb`` (unchecked)."""
    xn = np.asarray(x_norm, dtype=float)
    out = 2 * gb * (M + C * gb) ** (L - 1) * L * B**2 * xn  # eq. (Thm 4.2)
    return float(out) if out.ndim == 0 else out


# ----------------------------------------------------------------------------------------
# The measured equivariance error (torch models; one forward pass per group element)
# ----------------------------------------------------------------------------------------
def check_equivariance_args(f, x, group_sampler, rho_in, rho_out, n) -> int:
    """Validate the arguments of :func:`equivariance_error` (both paths); returns ``n``."""
    import torch

    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        raise ValueError(
            f"x must be a 2-d tensor (B, d_in) (got {getattr(x, 'shape', type(x).__name__)})"
        )
    for name, fn in (("f", f), ("group_sampler", group_sampler), ("rho_in", rho_in)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable (got {type(fn).__name__})")
    if not callable(rho_out):
        raise TypeError(f"rho_out must be callable (got {type(rho_out).__name__})")
    return check_int("n", n, 1)


def equivariance_error(
    f: Callable,
    x,
    group_sampler: Callable,
    rho_in: Callable,
    rho_out: Callable,
    n: int = 8,
    relative: bool = True,
) -> float:
    r"""Measured equivariance violation of ``f`` on the inputs ``x`` (reference: a loop).

    .. math:: E = \frac{\mathbb{E}_{g,x}\lVert f(\rho_{in}(g)x) - \rho_{out}(g) f(x)\rVert^2}
                       {\mathbb{E}_x \lVert f(x)\rVert^2}

    (``relative=False`` drops the denominator), with one forward pass of ``f`` per sampled
    group element. Arguments as :func:`lab.ace.fast.equivariance_error`, which batches the
    ``n`` passes into one.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import torch

    n = check_equivariance_args(f, x, group_sampler, rho_in, rho_out, n)
    g = group_sampler(n)
    Rin = torch.as_tensor(rho_in(g), dtype=x.dtype, device=x.device)
    Rout = torch.as_tensor(rho_out(g), dtype=x.dtype, device=x.device)
    d = x.shape[1]
    if Rin.shape != (n, d, d):
        raise ValueError(f"rho_in must return shape {(n, d, d)} (got {tuple(Rin.shape)})")
    with torch.no_grad():
        fx = f(x)  # (B, d_out)
        num = 0.0
        for k in range(n):
            # eq. (E): || f(rho_in(g) x) - rho_out(g) f(x) ||^2, averaged over x, then over g
            num += float(((f(x @ Rin[k].T) - fx @ Rout[k].T) ** 2).sum(-1).mean()) / n
        if not relative:
            return num
        den = float((fx**2).sum(-1).mean())
    return num / den if den > 0 else float("inf")
