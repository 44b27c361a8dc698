"""Fast path (batched torch, CPU or CUDA) of the ℓ2 tracing experiment: all repetitions and
noise levels scored with batched matmuls, checked against :mod:`lab.traceability.reference`.

See: book/traceability/01-tracing-attack.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
)
from lab.core.runtime import smoke_steps
from lab.traceability import reference
from lab.traceability.reference import (
    centre_rows,
    check_p,
    dual_map,
    excess_risk_linear,
    gaussian_sigma,
    l2_hard_instance,
)

__all__ = ["trace", "tradeoff_curve"]


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
    h = centre_rows(Z_ref.shape[1])
    center = Z_ref[:, :h].mean(dim=1, keepdim=True)  # (B, 1, d)
    w = W.unsqueeze(-1)  # (B, d, 1)
    ref_s = torch.bmm(Z_ref[:, h:] - center, w).squeeze(-1)  # (B, R − h)
    tau = torch.quantile(ref_s, 1.0 - xi, dim=1, keepdim=True)
    return torch.bmm(Z_train - center, w).squeeze(-1) > tau


# ----------------------------------------------------------------------------------------
# The sweep
# ----------------------------------------------------------------------------------------
def tradeoff_curve(
    n: int = 50,
    d: int = 2500,
    sigmas: Sequence[float] | None = None,
    *,
    eps: Sequence[float] | None = None,
    delta: float = 1e-5,
    xi: float = 0.05,
    reps: int = 5,
    seed: int = 0,
    p: float = 2.0,
    n_ref: int = 1000,
    n_fresh: int = 1000,
    backend: str = "torch",
    device=None,
    show_progress: bool = True,
) -> dict:
    """Excess risk, traced fraction and false-positive rate along a family of learners.

    Each repetition draws one instance (:func:`l2_hard_instance`, seed ``seed + r``) and one
    noise direction g; every learner of the family is fitted on the same training set with
    the same g (common random numbers, so the curve is smooth in σ), then traced.

    Parameters
    ----------
    n, d : int
        Training-set size and dimension.
    sigmas : sequence of float, optional
        Noise norms of noisy ERM (0 = ERM). Default ``[0, 0.1, 0.3, 1, 3]``.
    eps : sequence of float, optional
        If given, the learners are the (ε, δ)-DP Gaussian mechanisms for these ε instead
        (σ = √d · gaussian_sigma(2/n, ε, δ)); ``sigmas`` must then be None.
    delta : float
        δ of the DP learners.
    xi : float
        False-positive rate the threshold is calibrated to.
    reps : int
        Repetitions (instances).
    seed : int
        Base seed.
    p : float
        Geometry: learners are the ℓp dual map of the noisy mean, eq. (4).
    n_ref, n_fresh : int
        Reference samples for the tracer; fresh samples to measure false positives.
    backend : {"torch", "numpy"}
        Batched torch fast path or the numpy reference
        (:func:`~lab.traceability.reference.trace` in a loop).
    device : optional
        Torch device for the fast path.
    show_progress : bool
        Show a progress bar over the repetitions.

    Returns
    -------
    dict of numpy arrays over the learners: ``sigma``, ``eps`` (NaN for noisy ERM),
    ``excess``, ``traced``, ``fpr``, ``excess_se``, ``traced_se``, ``fpr_se``; and the
    per-repetition arrays ``excess_all``, ``traced_all``, ``fpr_all`` of shape (L, reps).

    See: book/traceability/02-dp-and-tradeoff.ipynb
    """
    from lab.core.progress import progress

    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    delta = check_range("delta", delta, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    xi = check_range("xi", xi, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    reps = smoke_steps(check_int("reps", reps, 1), small=2)  # LAB_SMOKE=1: two repetitions
    seed = check_int("seed", seed, 0)
    p = check_p(p)
    check_choice("backend", backend, ("torch", "numpy"))
    show_progress = check_bool("show_progress", show_progress)
    if eps is not None:
        if sigmas is not None:
            raise ValueError("give either sigmas or eps, not both")
        eps_arr = np.array([check_positive("eps", e) for e in eps], dtype=float)
        sig = np.sqrt(d) * np.array([gaussian_sigma(2.0 / n, e, delta) for e in eps_arr])
    else:
        sigmas = [0.0, 0.1, 0.3, 1.0, 3.0] if sigmas is None else sigmas
        sig = np.array([check_positive("sigmas", s, allow_zero=True) for s in sigmas])
        eps_arr = np.full(sig.shape, np.nan)
    if sig.size == 0:
        raise ValueError("sigmas (or eps) must not be empty")
    L = sig.size
    exc = np.zeros((L, reps))
    trc = np.zeros((L, reps))
    fpr = np.zeros((L, reps))
    for r in progress(range(reps), desc="repetitions", disable=not show_progress or None):
        inst = l2_hard_instance(n, d, seed + r, n_ref, n_fresh)
        Z, Zr, Zf, mu = inst["Z"], inst["Z_ref"], inst["Z_fresh"], inst["mu"]
        # common random numbers: one noise direction g per repetition, shared by all learners
        g = np.random.default_rng(10_000 + seed + r).standard_normal(d)
        V = Z.mean(axis=0) + (sig[:, None] / math.sqrt(d)) * g  # v = z̄ + (σ/√d) g
        W = dual_map(V, p)  # (L, d), eq. (4)
        for i in range(L):
            exc[i, r] = excess_risk_linear(W[i], mu, d, p)
        if backend == "numpy":
            for i in range(L):
                trc[i, r] = reference.trace(W[i], Z, Zr, xi).mean()
                fpr[i, r] = reference.trace(W[i], Zf, Zr, xi).mean()
        else:
            import torch

            from lab.core.runtime import resolve_device

            dev = resolve_device(device)
            Wt = torch.as_tensor(W, device=dev)
            cand = torch.as_tensor(np.concatenate([Z, Zf]), device=dev)
            Zrt = torch.as_tensor(Zr, device=dev)
            mask = trace(Wt, cand.expand(L, -1, -1), Zrt.expand(L, -1, -1), xi, device=dev).double()
            trc[:, r] = mask[:, :n].mean(dim=1).cpu().numpy()
            fpr[:, r] = mask[:, n:].mean(dim=1).cpu().numpy()

    def se(a):
        return a.std(axis=1, ddof=1) / math.sqrt(reps) if reps > 1 else np.zeros(L)

    return {
        "sigma": sig,
        "eps": eps_arr,
        "excess": exc.mean(axis=1),
        "traced": trc.mean(axis=1),
        "fpr": fpr.mean(axis=1),
        "excess_se": se(exc),
        "traced_se": se(trc),
        "fpr_se": se(fpr),
        "excess_all": exc,
        "traced_all": trc,
        "fpr_all": fpr,
        "n": n,
        "d": d,
        "xi": xi,
        "delta": delta,
        "p": p,
    }
