"""Batched fast paths (torch, CPU or CUDA): the Monte Carlo check of eq. (1) and the decoder,
many cost vectors at once, tested against :mod:`lab.lp_sufficiency.reference`.

There is no GPU MILP (branch and bound does not map to a GPU); what batches is everything
that only needs ``argmin_v c^T v`` over the vertex list of ``X``.

See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
"""

from __future__ import annotations

import numpy as np

__all__ = ["violation_flags", "decode"]


def violation_flags(V, c1, c2, *, device=None, chunk: int = 4096) -> np.ndarray:
    """For each pair ``(c1[i], c2[i])``: whether the optimal vertices differ (eq. (1) violated).

    Parameters
    ----------
    V : array_like, shape (n_vertices, d)
        The vertex list of ``X`` (``Polytope.vertices()``).
    c1, c2 : array_like, shape (trials, d)
        Cost pairs (e.g. from ``sample_equivalent_pairs``).
    device : torch device, optional
        Default: follows ``lab.device()``.
    chunk : int
        Costs per batch.

    Returns
    -------
    ndarray of bool, shape (trials,)

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    import torch

    from lab.core.checks import check_array, check_int
    from lab.core.runtime import resolve_device

    V = check_array("V", V, ndim=2, min_size=1)
    c1 = check_array("c1", c1, ndim=2)
    c2 = check_array("c2", c2, shape=c1.shape)
    if c1.shape[1] != V.shape[1]:
        raise ValueError(f"c1 must have {V.shape[1]} columns like V (got shape {c1.shape})")
    chunk = check_int("chunk", chunk, 1)

    dev = resolve_device(device)
    Vt = torch.as_tensor(V, dtype=torch.float64, device=dev)
    out = []
    for s in range(0, c1.shape[0], chunk):
        a = torch.as_tensor(c1[s : s + chunk], dtype=torch.float64, device=dev)
        b = torch.as_tensor(c2[s : s + chunk], dtype=torch.float64, device=dev)
        ia = torch.argmin(a @ Vt.T, dim=1)  # X*(c): the best vertex
        ib = torch.argmin(b @ Vt.T, dim=1)
        out.append((ia != ib).cpu().numpy())
    return np.concatenate(out)


def decode(
    D, S, X, C, *, device=None, max_iter: int = 5000, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray]:
    """The decoder for many observation vectors at once.

    For each row ``s`` of ``S``: the projection of the box centre onto
    ``{c : D c = s} ∩ [lo + margin, hi - margin]`` (Dykstra's alternating projections, batched,
    the same point as :func:`lab.lp_sufficiency.decode`'s cvxpy projection), then the optimal
    vertex ``argmin_v c~^T v`` over ``X.vertices()``.

    Parameters
    ----------
    D : array_like, shape (N, d)
        The dataset (``N = 0`` decodes every row at the box centre).
    S : array_like, shape (trials, N)
        Observations, one row per true cost.
    X, C : Polytope, BoxSet
        ``X`` must be small enough for ``X.vertices()``.
    device : torch device, optional
    max_iter : int
        Dykstra iterations at most.
    tol : float
        Stop when ``max |D c~ - s|`` and the step are below ``tol``.

    Returns
    -------
    (x, c_tilde) : optimal vertices ``(trials, d)`` and the decoded costs ``(trials, d)``.

    Raises ``ValueError`` when some ``s`` matches no cost of ``C`` (residual above ``1e-6``).

    See: book/lp_sufficiency/02-hiring-and-monte-carlo.ipynb
    """
    import torch

    from lab.core.checks import check_array, check_int, check_positive
    from lab.core.runtime import resolve_device
    from lab.lp_sufficiency.problems import check_dataset, check_pair

    check_pair(X, C)
    D = check_dataset(D, X.dim)
    S = check_array("S", S, ndim=2)
    if S.shape[1] != D.shape[0]:
        raise ValueError(f"S must have {D.shape[0]} columns, one per row of D (got {S.shape})")
    max_iter = check_int("max_iter", max_iter, 1)
    tol = check_positive("tol", tol)
    dev = resolve_device(device)
    f64 = {"dtype": torch.float64, "device": dev}
    clo, chi = (torch.as_tensor(a, **f64) for a in C.inner())
    c = torch.as_tensor(C.center, **f64).expand(S.shape[0], -1).clone()
    if D.shape[0]:
        _, sv, Vt = np.linalg.svd(D, full_matrices=False)
        Q = torch.as_tensor(Vt[sv > 1e-10 * sv[0]], **f64)  # orthonormal rows: span D
        Dt = torch.as_tensor(D, **f64)
        St = torch.as_tensor(S, **f64)
        cp = St @ torch.as_tensor(np.linalg.pinv(D).T, **f64)  # a particular solution

        def affine(v):  # projection onto {c : D c = s}
            return v - ((v - cp) @ Q.T) @ Q

        p = torch.zeros_like(c)
        q = torch.zeros_like(c)
        for _ in range(max_iter):  # Dykstra: converges to the projection of the centre
            y = affine(c + p)
            p = c + p - y
            c_new = torch.minimum(torch.maximum(y + q, clo), chi)
            q = y + q - c_new
            step = (c_new - c).abs().max()
            c = c_new
            if step <= tol and (c @ Dt.T - St).abs().max() <= tol * (1 + St.abs().max()):
                break
        resid = float((c @ Dt.T - St).abs().max())
        if resid > 1e-6:
            raise ValueError(f"no cost in C matches some observations (residual {resid:.2e})")
    V = torch.as_tensor(X.vertices(), **f64)
    idx = torch.argmin(c @ V.T, dim=1)  # X*(c~): the best vertex
    return V[idx].cpu().numpy(), c.cpu().numpy()
