"""Fast path (batched torch, CPU or CUDA) of the ℓ2 tracing experiment: all repetitions and
noise levels scored with batched matmuls, checked against :mod:`lab.traceability.reference`.

See: book/traceability/01-tracing-attack.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from lab.core.checks import (
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)
from lab.traceability import reference
from lab.traceability.reference import (
    centre_rows,
    check_p,
    dual_map,
    excess_risk_linear,
    gaussian_sigma,
    l2_hard_instance,
)

__all__ = ["trace", "TradeoffSettings", "tradeoff_curve"]


def trace(W, Z_train, Z_ref, xi: float, device=None):
    """Fast path of :func:`~lab.traceability.reference.trace` (same name): batched torch, one
    model per batch entry.

    Parameters
    ----------
    W : tensor or array (B, d)
        Released models.
    Z_train : (B, m, d)
        Candidate records per batch entry.
    Z_ref : (B, R, d)
        Reference samples per batch entry (split in halves as in
        :func:`~lab.traceability.reference.trace`).
    xi : float
        False-positive rate in (0, 1).
    device : torch device, optional
        Defaults to the device of ``W`` when it is a tensor, else ``lab.device()``.

    Returns
    -------
    torch.Tensor of bool, shape (B, m)

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    device = resolve_device(device, W)
    W, Z_train, Z_ref = (torch.as_tensor(a, device=device) for a in (W, Z_train, Z_ref))
    if W.ndim != 2 or Z_train.ndim != 3 or Z_ref.ndim != 3:
        raise ValueError("W, Z_train, Z_ref must have shapes (B, d), (B, m, d), (B, R, d)")
    B, d = W.shape
    if Z_train.shape[0] != B or Z_train.shape[2] != d or Z_ref.shape[0] != B or Z_ref.shape[2] != d:
        raise ValueError(
            f"shape mismatch: W {tuple(W.shape)}, Z_train {tuple(Z_train.shape)}, "
            f"Z_ref {tuple(Z_ref.shape)}"
        )
    if Z_ref.shape[1] < 4:
        raise ValueError(f"Z_ref must have at least 4 rows (got {Z_ref.shape[1]})")
    return _trace(W, Z_train, Z_ref, xi)


def _trace(W, Z_train, Z_ref, xi: float):
    import torch

    h = centre_rows(Z_ref.shape[1])
    center = Z_ref[:, :h].mean(dim=1, keepdim=True)  # (B, 1, d)
    w = W.unsqueeze(-1)  # (B, d, 1)
    ref_s = torch.bmm(Z_ref[:, h:] - center, w).squeeze(-1)  # (B, R − h)
    tau = torch.quantile(ref_s, 1.0 - xi, dim=1, keepdim=True)
    return torch.bmm(Z_train - center, w).squeeze(-1) > tau


# ----------------------------------------------------------------------------------------
# The sweep
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TradeoffSettings:
    """A family of learners on the ℓ2 instance (:func:`l2_hard_instance`), validated once.

    ``n`` (≥ 2) training rows in dimension ``d`` (≥ 1); ``sigmas``: noise norms of noisy ERM
    (0 = ERM; default ``(0, 0.1, 0.3, 1, 3)``), or ``eps``: the (ε, δ)-DP Gaussian mechanisms
    instead (σ = √d · gaussian_sigma(2/n, ε, δ); then ``sigmas`` must be None); ``delta`` in
    (0, 1); the tracer's level ``xi`` in (0, 1); geometry ``p`` in (1, 10] (learners are the ℓp
    dual map of the noisy mean, eq. (4)); ``n_ref`` reference rows for the tracer (≥ 4) and
    ``n_fresh`` fresh rows (≥ 1) to measure false positives.
    """

    n: int = 50
    d: int = 2500
    sigmas: tuple[float, ...] | None = None
    eps: tuple[float, ...] | None = None
    delta: float = 1e-5
    xi: float = 0.05
    p: float = 2.0
    n_ref: int = 1000
    n_fresh: int = 1000

    def __post_init__(self):
        check_int("n", self.n, 2)
        check_int("d", self.d, 1)
        set_ = partial(object.__setattr__, self)
        open_unit = {"low_inclusive": False, "high_inclusive": False}
        set_("delta", check_range("delta", self.delta, 0.0, 1.0, **open_unit))
        set_("xi", check_range("xi", self.xi, 0.0, 1.0, **open_unit))
        set_("p", check_p(self.p))
        check_int("n_ref", self.n_ref, 4)
        check_int("n_fresh", self.n_fresh, 1)
        if self.eps is not None:
            if self.sigmas is not None:
                raise ValueError("give either sigmas or eps, not both")
            set_("eps", tuple(check_positive("eps", e) for e in _seq("eps", self.eps)))
            if not self.eps:
                raise ValueError("eps must not be empty")
        else:
            sig = (0.0, 0.1, 0.3, 1.0, 3.0) if self.sigmas is None else self.sigmas
            sig = tuple(check_positive("sigmas", s, allow_zero=True) for s in _seq("sigmas", sig))
            set_("sigmas", sig)
            if not self.sigmas:
                raise ValueError("sigmas (or eps) must not be empty")

    def noise(self) -> np.ndarray:
        """The noise norm σ of each learner (for the DP learners, from the calibration)."""
        if self.eps is None:
            return np.array(self.sigmas, dtype=float)
        s = [gaussian_sigma(2.0 / self.n, e, self.delta) for e in self.eps]
        return np.sqrt(self.d) * np.array(s)


def _seq(name: str, values) -> tuple:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    return tuple(values)


def _rep(settings: TradeoffSettings, sig: np.ndarray, backend: str, dev, seed: int) -> dict:
    """One repetition: one instance and one noise direction g shared by every learner."""
    n, d, p = settings.n, settings.d, settings.p
    inst = l2_hard_instance(n, d, seed, settings.n_ref, settings.n_fresh)
    Z, Zr, Zf, mu = inst["Z"], inst["Z_ref"], inst["Z_fresh"], inst["mu"]
    # common random numbers: one noise direction g per repetition, shared by all learners
    g = np.random.default_rng(10_000 + seed).standard_normal(d)
    V = Z.mean(axis=0) + (sig[:, None] / math.sqrt(d)) * g  # v = z̄ + (σ/√d) g
    W = dual_map(V, p)  # (L, d), eq. (4)
    L = sig.size
    out = {f"excess{i}": excess_risk_linear(W[i], mu, d, p) for i in range(L)}
    if backend == "numpy":
        for i in range(L):
            out[f"traced{i}"] = reference.trace(W[i], Z, Zr, settings.xi).mean()
            out[f"fpr{i}"] = reference.trace(W[i], Zf, Zr, settings.xi).mean()
        return out
    import torch

    Wt = torch.as_tensor(W, device=dev)
    cand = torch.as_tensor(np.concatenate([Z, Zf]), device=dev)
    Zrt = torch.as_tensor(Zr, device=dev)
    mask = _trace(Wt, cand.expand(L, -1, -1), Zrt.expand(L, -1, -1), settings.xi).double()
    trc, fpr = mask[:, :n].mean(dim=1).cpu().numpy(), mask[:, n:].mean(dim=1).cpu().numpy()
    out.update({f"traced{i}": trc[i] for i in range(L)})
    out.update({f"fpr{i}": fpr[i] for i in range(L)})
    return out


def tradeoff_curve(
    settings: TradeoffSettings, *, reps: int = 5, seed: int = 0, backend: str = "torch", device=None
) -> dict:
    """Excess risk, traced fraction and false-positive rate along a family of learners.

    Each repetition ``r`` (``reps`` ≥ 1 of them) draws one instance (:func:`l2_hard_instance`,
    seed ``seed + r``) and one noise direction g; every learner of the family is fitted on the
    same training set with the same g (common random numbers, so the curve is smooth in σ),
    then traced: by the batched torch fast path (``backend="torch"``, on ``device``, default
    ``lab.device()``) or the numpy reference (``"numpy"``: :func:`reference.trace` in a loop).

    Returns
    -------
    dict of numpy arrays over the learners: ``sigma``, ``eps`` (NaN for noisy ERM),
    ``excess``, ``traced``, ``fpr``, ``excess_se``, ``traced_se``, ``fpr_se``; and the
    per-repetition arrays ``excess_all``, ``traced_all``, ``fpr_all`` of shape (L, reps).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    from lab.core.runtime import resolve_device
    from lab.core.sweep import sweep

    check_instance("settings", settings, TradeoffSettings)
    reps, seed = check_int("reps", reps, 1), check_int("seed", seed, 0)
    check_choice("backend", backend, ("torch", "numpy"))
    dev = resolve_device(device) if backend == "torch" else None
    sig = settings.noise()
    one = partial(_rep, settings, sig, backend, dev)
    s = sweep(one, None, seeds=[seed + r for r in range(reps)], desc="repetitions")
    L = sig.size
    exc, trc, fpr = (
        np.stack([s.values(f"{k}{i}") for i in range(L)]) for k in ("excess", "traced", "fpr")
    )
    m = exc.shape[1]

    def se(a):
        return a.std(axis=1, ddof=1) / math.sqrt(m) if m > 1 else np.zeros(L)

    eps_arr = np.full(L, np.nan) if settings.eps is None else np.array(settings.eps, dtype=float)
    return {
        "sigma": sig, "eps": eps_arr,
        "excess": exc.mean(axis=1), "traced": trc.mean(axis=1), "fpr": fpr.mean(axis=1),
        "excess_se": se(exc), "traced_se": se(trc), "fpr_se": se(fpr),
        "excess_all": exc, "traced_all": trc, "fpr_all": fpr,
        "n": settings.n, "d": settings.d, "xi": settings.xi, "delta": settings.delta,
        "p": settings.p,
    }  # fmt: skip
