"""The ACE engine: primal-dual training of a homotopy model (Algorithms 1 and 2, torch).

Any ``nn.Module`` that contains :class:`~lab.ace.layer.HomotopyLayer` instances can be trained
with :class:`ACE`; the numpy reference of its dual step is :func:`lab.ace.reference.dual_step`.

See: book/ace/01-homotopy-and-duals.ipynb
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lab.ace.layer import HomotopyLayer, homotopy
from lab.ace.reference import MODES
from lab.core.checks import check_choice, check_positive

__all__ = ["ACE"]


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
