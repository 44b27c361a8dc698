"""The ACE engine: homotopy layers, primal-dual updates, equivariance error and the bounds.

Everything here is model-agnostic: any ``nn.Module`` that contains :class:`HomotopyLayer`
instances can be trained with :class:`ACE`. The SO(2) toy that the notebooks use lives in
:mod:`lab.ace.so2_toy`.

See: book/ace/01-homotopy-and-duals.ipynb
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ..core.checks import check_choice, check_int, check_positive, check_real

__all__ = [
    "ACE",
    "HomotopyLayer",
    "dual_step",
    "equivariance_error",
    "homotopy",
    "scalar_gda",
    "truncation_bound",
    "violation_bound",
]

MODES = ("equality", "resilient")


class HomotopyLayer(nn.Module):
    r"""One homotopy layer :math:`f^i(x) = f^{eq,i}(x) + \gamma_i f^{neq,i}(x)`.

    Parameters
    ----------
    eq : nn.Module
        A G-equivariant layer.
    neq : nn.Module
        An unconstrained layer with the same input and output shapes as ``eq``.
    gamma0 : float
        Initial homotopy coefficient (the paper starts at 1: the flexible end). With 0 the
        non-equivariant branch gets no gradient and the homotopy never starts.

    Attributes
    ----------
    gamma : nn.Parameter
        The scalar coefficient :math:`\gamma_i` (0-d).
    use_neq : bool
        ``False`` skips the non-equivariant branch (set by :meth:`ACE.truncate`), which
        makes the layer exactly ``eq``.

    See: book/ace/01-homotopy-and-duals.ipynb
    """

    def __init__(self, eq: nn.Module, neq: nn.Module, gamma0: float = 1.0):
        super().__init__()
        if not isinstance(eq, nn.Module):
            raise TypeError(f"eq must be an nn.Module (got {type(eq).__name__})")
        if not isinstance(neq, nn.Module):
            raise TypeError(f"neq must be an nn.Module (got {type(neq).__name__})")
        gamma0 = check_real("gamma0", gamma0)
        self.eq = eq
        self.neq = neq
        ref = next(iter(eq.parameters()), None)
        dtype = ref.dtype if ref is not None else torch.get_default_dtype()
        device = ref.device if ref is not None else None
        self.gamma = nn.Parameter(torch.tensor(gamma0, dtype=dtype, device=device))
        self.use_neq = True

    def forward(self, x, use_neq: bool = True):
        # homotopy layer: f^i(x) = f^{eq,i}(x) + gamma_i f^{neq,i}(x)
        out = self.eq(x)
        if not (use_neq and self.use_neq):
            return out
        side = self.neq(x)
        if side.shape != out.shape:
            raise ValueError(
                f"eq and neq must return the same shape (eq: {tuple(out.shape)}, "
                f"neq: {tuple(side.shape)})"
            )
        return out + self.gamma * side

    def extra_repr(self) -> str:
        return f"gamma={float(self.gamma.detach()):.4g}, use_neq={self.use_neq}"


def homotopy(model) -> list:
    """Every homotopy coefficient :math:`\\gamma_i` of ``model``, in module order.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (got {type(model).__name__})")
    return [m.gamma for m in model.modules() if isinstance(m, HomotopyLayer)]


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
    new = lam + eta_d * slack  # Alg. 1/2 dual step: lambda + eta_d * slack
    if kind == "inequality":
        new = np.maximum(new, 0.0)  # Alg. 2: projection onto lambda >= 0
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
    (optimum :math:`x^* = u^* = \lambda^* = 2a/(2+\rho)`; 4/3 for :math:`a=2,\rho=1`).

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
            gx = 2 * (x - a) + lam + 2 * aug * x  # d/dx [(x-a)^2 + lam x + c x^2]
            slack = x  # constraint x = 0
            x = x - eta_p * gx  # primal descent
            lam = float(dual_step(lam, slack, eta_d, "equality"))  # dual ascent (free sign)
        else:
            gx = 2 * (x - a) + lam * np.sign(x)  # d/dx [(x-a)^2 + lam |x|]
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
class ACE:
    r"""Adaptive constrained equivariance: primal-dual training of a homotopy model.

    ``equality`` (Algorithm 1): Lagrangian :math:`J_0 + \sum_i \lambda_i\gamma_i + c\gamma_i^2`,
    :math:`\lambda_i \leftarrow \lambda_i + \eta_d \gamma_i` (free sign).
    ``resilient`` (Algorithm 2): Lagrangian
    :math:`J_0 + \tfrac{\rho}{2}\lVert u\rVert^2 + \sum_i \lambda_i(|\gamma_i| - u_i)`,
    :math:`\lambda_i \leftarrow [\lambda_i + \eta_d(|\gamma_i| - u_i)]_+`.

    The step is *simultaneous* gradient descent-ascent: the dual step uses the slack at the
    point where the primal gradient was taken (before the primal update), as in Cooper's
    ``SimultaneousOptimizer``.

    Parameters
    ----------
    model : nn.Module
        Contains at least one :class:`HomotopyLayer`.
    primal_opt : torch.optim.Optimizer or sequence of them
        Optimizers over the model's parameters (the gammas included). In resilient mode the
        slacks ``u`` are added to the first optimizer as a new parameter group.
    mode : {"equality", "resilient"}
    dual_lr : float
        Dual step size :math:`\eta_d \ge 0` (0 freezes the multipliers at 0).
    rho : float
        Cost of relaxation in resilient mode, ``> 0``.
    aug : float
        Augmented-Lagrangian damping :math:`c \ge 0` (equality mode).
    dual_opt : {"sgd", "adam"}
        Plain dual ascent, or Adam on the multipliers (the official code's choice with Adam).

    See: book/ace/01-homotopy-and-duals.ipynb
    """

    def __init__(
        self,
        model,
        primal_opt,
        mode: str = "equality",
        dual_lr: float = 1e-2,
        rho: float = 1.0,
        aug: float = 0.0,
        dual_opt: str = "sgd",
    ):
        self.mode = check_choice("mode", mode, MODES)
        self.dual_lr = check_positive("dual_lr", dual_lr, allow_zero=True)
        self.rho = check_positive("rho", rho)
        self.aug = check_positive("aug", aug, allow_zero=True)
        self.dual_opt_kind = check_choice("dual_opt", dual_opt, ("sgd", "adam"))
        self.gammas = homotopy(model)
        if not self.gammas:
            raise ValueError(
                f"model has no HomotopyLayer (got {type(model).__name__}); wrap layers first"
            )
        opts = [primal_opt] if isinstance(primal_opt, torch.optim.Optimizer) else primal_opt
        if not isinstance(opts, Sequence) or not opts:
            raise TypeError(
                "primal_opt must be a torch.optim.Optimizer or a non-empty sequence of them "
                f"(got {type(primal_opt).__name__})"
            )
        for i, o in enumerate(opts):
            if not isinstance(o, torch.optim.Optimizer):
                raise TypeError(
                    f"primal_opt[{i}] must be a torch Optimizer (got {type(o).__name__})"
                )
        self.model = model
        self.primal_opts = list(opts)
        g0 = self.gammas[0]
        L = len(self.gammas)
        # multipliers lambda_i: start at 0 (no pressure at the flexible end of the homotopy)
        self.lam = torch.zeros(L, dtype=g0.dtype, device=g0.device)
        self.u = None
        if self.mode == "resilient":
            # slacks u_i >= |gamma_i| allowed per layer; start at 0 (strict)
            self.u = torch.nn.Parameter(torch.zeros(L, dtype=g0.dtype, device=g0.device))
            self.primal_opts[0].add_param_group({"params": [self.u]})
        self._lam_param = None
        self._dual = None
        if self.dual_opt_kind == "adam":
            self._lam_param = torch.nn.Parameter(self.lam)
            self._dual = torch.optim.Adam([self._lam_param], lr=max(self.dual_lr, 1e-30))
        self.steps = 0

    # -- the pieces ----------------------------------------------------------------------
    def gamma_vector(self):
        return torch.stack([g.reshape(()) for g in self.gammas])

    def slack(self):
        """Constraint slack per layer: ``gamma`` (equality) or ``|gamma| - u`` (resilient).

        See: book/ace/01-homotopy-and-duals.ipynb
        """
        g = self.gamma_vector()
        return g if self.mode == "equality" else g.abs() - self.u

    def lagrangian(self, loss):
        """The Lagrangian the primal step descends (multipliers held fixed)."""
        g = self.gamma_vector()
        lam = self.lam.detach()
        if self.mode == "equality":
            # Alg. 1: J0 + sum_i lambda_i gamma_i (+ c gamma_i^2, augmented option)
            return loss + (lam * g).sum() + self.aug * (g * g).sum()
        # Alg. 2: J0 + rho/2 ||u||^2 + sum_i lambda_i (|gamma_i| - u_i)
        return loss + 0.5 * self.rho * (self.u * self.u).sum() + (lam * (g.abs() - self.u)).sum()

    def _dual_update(self, slack) -> None:
        if self._dual is None:
            # dual ascent on the slack: lambda <- lambda + eta_d * slack (fused in place)
            self.lam.add_(slack, alpha=self.dual_lr)
        else:
            # the code's variant: an optimizer step on lambda with grad = -slack (ascent)
            with torch.no_grad():
                self._lam_param.copy_(self.lam)
            self._lam_param.grad = -slack.clone()
            self._dual.step()
            with torch.no_grad():
                self.lam.copy_(self._lam_param)
        if self.mode == "resilient":
            self.lam.clamp_(min=0.0)  # Alg. 2: projection onto lambda >= 0

    def step(self, loss) -> dict[str, np.ndarray]:
        """One primal-dual iteration on the mini-batch loss ``loss`` (a 0-d tensor with grad).

        Runs ``zero_grad``, ``backward`` of the Lagrangian, the primal step(s), then the dual
        step on the slack measured before the primal step. Returns ``gamma``, ``lam``, ``u``
        and ``slack`` (numpy, after the step) and the ``loss`` and ``lagrangian`` values.
        """
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
            raise ValueError(f"loss must be a 0-d tensor (got {type(loss).__name__})")
        for o in self.primal_opts:
            o.zero_grad(set_to_none=True)
        lag = self.lagrangian(loss)
        lag.backward()
        with torch.no_grad():
            slack = self.slack().detach().clone()
        for o in self.primal_opts:
            o.step()
        with torch.no_grad():
            if self.dual_lr > 0:
                self._dual_update(slack)
        self.steps += 1
        return {
            "loss": float(loss.detach()),
            "lagrangian": float(lag.detach()),
            "gamma": self.gamma_vector().detach().cpu().numpy().copy(),
            "lam": self.lam.detach().cpu().numpy().copy(),
            "u": None if self.u is None else self.u.detach().cpu().numpy().copy(),
            "slack": slack.cpu().numpy(),
        }

    def truncate(self):
        """A deep copy of the model with every gamma set to 0 and its branch switched off.

        The copy is exactly equivariant (only the ``eq`` branches run) when every ``eq`` is.
        """
        clone = copy.deepcopy(self.model)
        with torch.no_grad():
            for m in clone.modules():
                if isinstance(m, HomotopyLayer):
                    m.gamma.zero_()
                    m.use_neq = False
        return clone

    def state_dict(self) -> dict[str, Any]:
        """Multipliers, slacks, mode and hyperparameters (for checkpoints)."""
        return {
            "mode": self.mode,
            "dual_lr": self.dual_lr,
            "rho": self.rho,
            "aug": self.aug,
            "steps": self.steps,
            "lam": self.lam.detach().clone(),
            "u": None if self.u is None else self.u.detach().clone(),
        }


# ----------------------------------------------------------------------------------------
# Equivariance error (batched: every sampled group element in one forward pass)
# ----------------------------------------------------------------------------------------
def equivariance_error(
    f: Callable,
    x,
    group_sampler: Callable,
    rho_in: Callable,
    rho_out: Callable,
    n: int = 8,
    relative: bool = True,
) -> float:
    r"""Measured equivariance violation of ``f`` on the inputs ``x``.

    .. math:: E = \frac{\mathbb{E}_{g,x}\lVert f(\rho_{in}(g)x) - \rho_{out}(g) f(x)\rVert^2}
                       {\mathbb{E}_x \lVert f(x)\rVert^2}

    (``relative=False`` drops the denominator). All ``n`` sampled group elements go through
    ``f`` in one batched forward pass of size ``n * len(x)``.

    Parameters
    ----------
    f : callable
        Maps a ``(B, d_in)`` tensor to ``(B, d_out)``.
    x : torch.Tensor
        Inputs, shape ``(B, d_in)``.
    group_sampler : callable
        ``group_sampler(n)`` returns ``n`` group elements (anything ``rho_*`` accept).
    rho_in, rho_out : callable
        Map the sampled elements to a ``(n, d_in, d_in)`` / ``(n, d_out, d_out)`` tensor of
        representation matrices.
    n : int
        Number of group elements.

    See: book/ace/02-partial-symmetry.ipynb
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        raise ValueError(
            f"x must be a 2-d tensor (B, d_in) (got {getattr(x, 'shape', type(x).__name__)})"
        )
    for name, fn in (("f", f), ("group_sampler", group_sampler), ("rho_in", rho_in)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable (got {type(fn).__name__})")
    if not callable(rho_out):
        raise TypeError(f"rho_out must be callable (got {type(rho_out).__name__})")
    n = check_int("n", n, 1)
    g = group_sampler(n)
    Rin = torch.as_tensor(rho_in(g), dtype=x.dtype, device=x.device)
    Rout = torch.as_tensor(rho_out(g), dtype=x.dtype, device=x.device)
    B, d = x.shape
    if Rin.shape != (n, d, d):
        raise ValueError(f"rho_in must return shape {(n, d, d)} (got {tuple(Rin.shape)})")
    with torch.no_grad():
        fx = f(x)  # (B, d_out)
        gx = torch.einsum("gij,bj->gbi", Rin, x).reshape(n * B, d)  # rho_in(g) x, all g
        fgx = f(gx).reshape(n, B, -1)  # f(rho_in(g) x)
        gfx = torch.einsum("gij,bj->gbi", Rout, fx)  # rho_out(g) f(x)
        num = ((fgx - gfx) ** 2).sum(-1).mean()
        if not relative:
            return float(num)
        den = (fx**2).sum(-1).mean()
    return float(num / den) if float(den) > 0 else float("inf")


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
    L = check_int("L", L, 1)
    xn = np.asarray(x_norm, dtype=float)
    geo = sum((1 + gb) ** k for k in range(L))  # sum_{k=0}^{L-1} (1 + gamma_bar)^k
    out = geo * gb * B * M ** (L - 1) * xn
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
    L = check_int("L", L, 1)
    xn = np.asarray(x_norm, dtype=float)
    out = 2 * gb * (M + C * gb) ** (L - 1) * L * B**2 * xn
    return float(out) if out.ndim == 0 else out
