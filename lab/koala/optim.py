r"""KOALA++ and KOALA-V as ``torch.optim.Optimizer`` classes (the kernels of KOALA++'s step, the
multi-tensor path and the per-tensor loop, are in ``lab.koala.fast``).

How the loss reaches the optimizer
----------------------------------
A Kalman step needs the *loss value* (it is the measurement residual, target 0) and, for the
online estimate of the measurement noise ``R``, the mean of the *squared per-sample losses*
of the batch. Compute the per-sample losses with ``reduction="none"`` and pass both:

>>> per_sample = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
>>> loss = per_sample.mean()
>>> opt.zero_grad(); loss.backward()
>>> opt.step_with_loss(loss.detach(), (per_sample.detach() ** 2).mean())

or give ``step`` a closure (as for ``torch.optim.LBFGS``) that zeroes the gradients, runs the
backward pass and returns ``(loss_mean, per_sample_losses)``. With a fixed ``r=...`` the second
argument may be omitted. ``step()`` without losses raises ``TypeError``.

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from lab.core.checks import check_bool, check_choice, check_positive, check_range
from lab.koala.fast import (
    KoalaStep,
    as_scalar,
    compute_dtype,
    init_state,
    koalapp_foreach_,
    koalapp_loop_,
)

__all__ = ["KoalaPP", "KoalaV", "loss_statistics"]

_NO_LOSS = (
    "{name}.step() needs the loss: call step_with_loss(loss, loss_sq_mean) after "
    "loss.backward(), where loss is the batch-mean loss and loss_sq_mean the mean of the "
    "squared per-sample losses, or pass step(closure) with a closure that runs backward and "
    "returns (loss_mean, per_sample_losses)"
)


def loss_statistics(per_sample_losses: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, mean of squares)`` of a batch of per-sample losses (detached, no host sync).

    See: book/koala/02-training-digits.ipynb
    """
    if not isinstance(per_sample_losses, torch.Tensor):
        raise TypeError(
            "per_sample_losses must be a torch.Tensor (use reduction='none'), got "
            f"{type(per_sample_losses).__name__}"
        )
    x = per_sample_losses.detach()
    return x.mean(), (x * x).mean()


class _KalmanBase(torch.optim.Optimizer):
    """Shared plumbing: the loss API, the measurement-noise EMA, input checks."""

    def _check_common(self, lr, sigma0, q, r, alpha_r, weight_decay, eps):
        lr = check_positive("lr", lr)
        sigma0 = check_positive("sigma0", sigma0, allow_zero=True)
        q = check_positive("q", q, allow_zero=True)
        if r is not None:
            r = check_positive("r", r, allow_zero=True)
        alpha_r = check_range("alpha_r", alpha_r, 0.0, 1.0, high_inclusive=False)
        weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
        eps = check_positive("eps", eps, allow_zero=True)
        return lr, sigma0, q, r, alpha_r, weight_decay, eps

    def _first_param(self) -> torch.Tensor:
        for group in self.param_groups:
            for p in group["params"]:
                return p
        raise ValueError("the optimizer has no parameters")

    def _measurement_noise(self, loss_sq_mean: Any) -> torch.Tensor:
        """``R_k``: fixed, or ``alpha_r R_{k-1} + (1 - alpha_r) mean(l^2)`` with ``R_0 = 1``."""
        p = self._first_param()
        like = torch.empty((), device=p.device, dtype=compute_dtype(p))
        if self.r is not None:
            return torch.tensor(self.r, device=like.device, dtype=like.dtype)
        if loss_sq_mean is None:
            raise TypeError(
                f"{type(self).__name__} with r=None estimates R from the loss: pass "
                "loss_sq_mean, the mean of the squared per-sample losses "
                "(see lab.koala.loss_statistics), or construct it with a fixed r"
            )
        lsq = as_scalar("loss_sq_mean", loss_sq_mean, like)
        R_prev = self.state.get("R")
        if R_prev is None:
            R_prev = torch.ones((), device=like.device, dtype=like.dtype)  # R_0 = 1
        R = self.alpha_r * R_prev + (1.0 - self.alpha_r) * lsq  # EMA of mean squared loss
        self.state["R"] = R
        return R

    def _loss_ok(self, loss: torch.Tensor) -> bool:
        """Finite-loss guard (checked on CPU only: on CUDA it would cost a host sync)."""
        if loss.device.type != "cpu":
            return True
        if math.isfinite(float(loss)):
            return True
        if self.skip_nonfinite:
            return False
        raise FloatingPointError(
            f"non-finite loss {float(loss)} passed to {type(self).__name__}; "
            "construct it with skip_nonfinite=True to skip such steps"
        )

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        """Run ``closure`` (which must do the backward pass and return
        ``(loss_mean, per_sample_losses)``) and make one Kalman step; returns ``loss_mean``.

        See: book/koala/02-training-digits.ipynb
        """
        if closure is None:
            raise TypeError(_NO_LOSS.format(name=type(self).__name__))
        with torch.enable_grad():
            out = closure()
        if not (isinstance(out, tuple | list) and len(out) == 2):
            raise TypeError(
                f"the closure must return (loss_mean, per_sample_losses); got {type(out).__name__}"
            )
        loss_mean, per_sample = out
        _, lsq = loss_statistics(per_sample)
        self.step_with_loss(loss_mean.detach(), lsq)
        return loss_mean

    def _grads(self, group) -> tuple[list, list]:
        params, grads = [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise NotImplementedError(
                    f"{type(self).__name__} does not support sparse gradients"
                )
            params.append(p)
            grads.append(p.grad)
        return params, grads


#: On CPU, ``KoalaPP(foreach=None)`` takes the multi-tensor path for a parameter group whose
#: tensors hold at most this many elements on average, the per-tensor loop above it (see
#: ``foreach`` in `KoalaPP`; between the 64-tensor and the 1.9M-parameter models measured).
FOREACH_MAX_MEAN_NUMEL = 1 << 16


class KoalaPP(_KalmanBase):
    r"""KOALA++: a Kalman-filter optimizer that propagates ``v_k = H_k P_{k-1}`` per tensor.

    Each parameter tensor is filtered on its own (block-diagonal covariance across tensors).
    Per step and tensor: the recursion and closure of :mod:`lab.koala` for ``v_k``, then
    ``theta -= lr * L~ * (v_k + Q H_k) / S_k``. State per tensor: ``v``, ``h_prev`` (flat),
    ``S`` and an ``initialized`` flag, all device tensors (no ``.item()`` in the update).

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups (``lr``, ``sigma0``, ``q``, ``weight_decay``,
        ``symmetric`` may differ per group).
    lr : float
        Step multiplier ``eta > 0`` (1-2 in the paper's CNN configs; not comparable to SGD's).
    sigma0 : float
        Prior covariance scale ``sigma_0 >= 0`` (``P_0 = sigma_0 I``).
    q : float
        Process noise ``Q >= 0``.
    r : float, optional
        Fixed measurement noise ``R >= 0``; ``None`` (default) estimates it as an EMA of the
        mean squared per-sample loss, started at 1.
    alpha_r : float
        EMA coefficient for ``R``, in ``[0, 1)``.
    weight_decay : float
        ``wd >= 0``, added to the gradient and (as ``wd/2 ||p||^2``, per tensor) to the loss.
    symmetric : bool
        Symmetric least-squares closure (default) or the vanilla one.
    init : {"phantom", "prior"}
        First-step initialisation: the authors' (an EKF with one covariance-only update) or
        ``v_1 = sigma_0 H_1``.
    eps : float
        Tensors with ``||grad|| < eps`` are skipped and keep their state.
    foreach : bool, optional
        Use the multi-tensor path `koalapp_foreach_` (``lab.koala.fast``) or the per-tensor
        loop. Default: the multi-tensor path on CUDA (one flat buffer, about 30 kernels per
        step, no host syncs); on CPU, the multi-tensor path for a group whose tensors hold
        at most `FOREACH_MAX_MEAN_NUMEL` elements on average, else the loop. On CPU the
        multi-tensor path reads its per-tensor flags on the host and runs ``torch._foreach_*``
        ops: faster than the loop on the digits MLP (4 tensors, per-call overhead dominates),
        about equal on 64 tensors of 256 x 256, and slower than the loop on the
        784-1024-1024-10 MLP, whose few large tensors the loop keeps in cache one at a time
        (``benchmarks/bench_koala.py``; the latest ratios to Adam's step are in
        ``benchmarks/results/koala-cpu.json``, shown on the book's performance page). Both give
        the same numbers
        (bit for bit without weight decay; in float32 with weight decay to about 1e-8).
    skip_nonfinite : bool
        Skip the step on a non-finite loss instead of raising ``FloatingPointError``.

    Notes
    -----
    The loss must be supplied: ``step_with_loss(loss, loss_sq_mean)`` or ``step(closure)``;
    see the module docstring of ``lab.koala.optim``. ``S_k <= 0`` (the closure is not
    guaranteed positive semidefinite) raises ``FloatingPointError`` on CPU; on CUDA the count
    of such events is kept in ``optimizer.state["nonpositive_S"]`` without a host sync.

    See: book/koala/02-training-digits.ipynb
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        sigma0: float = 0.1,
        q: float = 0.1,
        r: float | None = None,
        alpha_r: float = 0.9,
        weight_decay: float = 0.0,
        symmetric: bool = True,
        init: str = "phantom",
        eps: float = 1e-9,
        foreach: bool | None = None,
        skip_nonfinite: bool = False,
    ):
        lr, sigma0, q, r, alpha_r, weight_decay, eps = self._check_common(
            lr, sigma0, q, r, alpha_r, weight_decay, eps
        )
        symmetric = check_bool("symmetric", symmetric)
        init = check_choice("init", init, ("phantom", "prior"))
        self.r, self.alpha_r, self.eps = r, alpha_r, eps
        self.foreach = None if foreach is None else check_bool("foreach", foreach)
        self.skip_nonfinite = check_bool("skip_nonfinite", skip_nonfinite)
        defaults = dict(
            lr=lr, sigma0=sigma0, q=q, weight_decay=weight_decay, symmetric=symmetric, init=init
        )
        super().__init__(params, defaults)

    def _state(self, p: torch.Tensor) -> dict:
        return init_state(p, self.state[p])

    @torch.no_grad()
    def step_with_loss(self, loss: Any, loss_sq_mean: Any = None) -> None:
        """One KOALA++ step from the gradients currently in each ``p.grad``.

        Parameters
        ----------
        loss : float or 0-d tensor
            The batch-mean loss ``L_k`` (the measurement; target 0).
        loss_sq_mean : float or 0-d tensor, optional
            Mean of the squared per-sample losses (for the ``R`` EMA; not needed with a
            fixed ``r``).

        See: book/koala/02-training-digits.ipynb
        """
        p0 = self._first_param()
        loss = as_scalar("loss", loss, torch.empty((), device=p0.device, dtype=compute_dtype(p0)))
        if not self._loss_ok(loss):
            return
        R = self._measurement_noise(loss_sq_mean)
        for group in self.param_groups:
            params, grads = self._grads(group)
            if not params:
                continue
            states = [self._state(p) for p in params]
            hp = {k: group[k] for k in ("lr", "sigma0", "q", "weight_decay", "symmetric", "init")}
            foreach = self.foreach
            if foreach is None:  # measured: flat path on CUDA; on CPU see FOREACH_MAX_MEAN_NUMEL
                foreach = params[0].device.type != "cpu" or sum(
                    p.numel() for p in params
                ) <= FOREACH_MAX_MEAN_NUMEL * len(params)
            if foreach:
                bad = koalapp_foreach_(params, grads, states, loss=loss, R=R, eps=self.eps, **hp)
            else:
                step = KoalaStep(loss=loss, R=R, eps=self.eps, **hp)
                bad = koalapp_loop_(params, grads, states, step)
            if bad is not None:
                if bad.device.type == "cpu":
                    if bool(bad.any()):
                        raise FloatingPointError(
                            "KoalaPP: S_k <= 0 for some tensor (the least-squares closure "
                            "is not positive semidefinite here); lower q/sigma0 or use r > 0"
                        )
                else:
                    cnt = self.state.get("nonpositive_S")
                    self.state["nonpositive_S"] = bad.sum() if cnt is None else cnt + bad.sum()


class KoalaV(_KalmanBase):
    r"""KOALA-V: the Kalman optimizer with a scalar covariance ``P = sigma I`` (KOALA, 2022).

    Per step: predict ``sigma += q``; per tensor ``S_l = sigma ||H_l||^2 + R`` and
    ``p -= lr * L~_l * sigma / S_l * H_l``; then ``sigma -= sigma^2 max_l ||H_l||^2 / S_l``.
    ``sigma`` is shared by all tensors (``optimizer.state["sigma"]``, a device tensor).

    Deviation: the authors' code multiplies the step by ``p.grad`` and not by
    ``p.grad + wd p``; here the step uses ``H_l`` (they agree at ``weight_decay = 0``).

    Parameters are those of `KoalaPP` without ``symmetric``/``init``; the loss is supplied
    the same way (``step_with_loss(loss, loss_sq_mean)`` or ``step(closure)``).

    See: book/koala/02-training-digits.ipynb
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        sigma0: float = 0.1,
        q: float = 0.1,
        r: float | None = None,
        alpha_r: float = 0.9,
        weight_decay: float = 0.0,
        eps: float = 1e-9,
        skip_nonfinite: bool = False,
    ):
        lr, sigma0, q, r, alpha_r, weight_decay, eps = self._check_common(
            lr, sigma0, q, r, alpha_r, weight_decay, eps
        )
        self.r, self.alpha_r, self.eps = r, alpha_r, eps
        self.sigma0 = sigma0
        self.skip_nonfinite = check_bool("skip_nonfinite", skip_nonfinite)
        super().__init__(params, dict(lr=lr, q=q, weight_decay=weight_decay))

    @torch.no_grad()
    def step_with_loss(self, loss: Any, loss_sq_mean: Any = None) -> None:
        """One KOALA-V step (predict, then update) from the gradients currently in each ``p.grad``.

        See: book/koala/02-training-digits.ipynb
        """
        p0 = self._first_param()
        cd = compute_dtype(p0)
        loss = as_scalar("loss", loss, torch.empty((), device=p0.device, dtype=cd))
        if not self._loss_ok(loss):
            return
        R = self._measurement_noise(loss_sq_mean)
        sigma = self.state.get("sigma")
        if sigma is None:
            sigma = torch.tensor(self.sigma0, device=p0.device, dtype=cd)
        sigma = sigma + self.defaults["q"]  # predict: P_hat = (sigma + Q) I
        shrink = []
        for group in self.param_groups:
            params, grads = self._grads(group)
            if not params:
                continue
            wd = group["weight_decay"]
            Hs = [g.to(cd) + wd * p.to(cd) for p, g in zip(params, grads, strict=True)]
            hh = torch.stack(torch._foreach_norm(Hs)) ** 2  # ||H_l||^2
            gn = torch.stack(torch._foreach_norm([g.to(cd) for g in grads]))
            pp = torch.stack(torch._foreach_norm([p.to(cd) for p in params])) ** 2
            active = gn >= self.eps
            S = sigma * hh + R  # S_l = sigma ||H_l||^2 + R
            L_t = loss + 0.5 * wd * pp
            scale = torch.where(active, -group["lr"] * L_t * sigma / S, torch.zeros_like(S))
            torch._foreach_add_(
                params,
                [(s * h).to(p.dtype) for s, h, p in zip(scale.unbind(), Hs, params, strict=True)],
            )
            shrink.append(torch.where(active, hh / S, torch.zeros_like(S)))
        if shrink:
            sigma = sigma - sigma**2 * torch.cat(shrink).max()  # P = P_hat - sigma^2 max ||H||^2/S
        self.state["sigma"] = sigma
