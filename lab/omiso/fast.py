"""Fast path: many simulated closed-loop sessions batched in torch (CPU or CUDA).

Every session of :func:`run_sessions` runs the same program as
:func:`lab.omiso.reference.run_session` (the pair declared in ``lab.omiso.PAIRS``; FA
calibration, random-pattern training block, ridge fit, closed loop with the inverse model and
the online update), with the per-session work as batched tensor operations: the FA iteration
(``eigh`` on ``(B, N, N)``), the E-step of eq. (1), the predictions of all patterns
(``einsum("buqd,bd->buq")``), the argmin of eq. (3) and the rank-one updates of eq. (4).

The randomness is the numpy stream of the reference (:func:`lab.omiso.trial_noise`,
:func:`lab.omiso.session_plan`), drawn chunk by chunk (256 trials) for all sessions and moved
to the device, so a torch session equals the numpy session of the same seed to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.omiso.array import (
    COUNT_MAX,
    POST_NOISE,
    RATE_MAX,
    S_DECAY,
    S_DRIVE,
    Z_FAST,
    UtahArraySim,
    session_plan,
    trial_noise,
)
from lab.omiso.models import METHODS, check_dims
from lab.omiso.reference import default_target

__all__ = ["run_sessions"]


def _per_session(name: str, value: Any, B: int, low: float | None = None) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=float), (B,)).copy()
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (got {value!r})")
    if low is not None and np.any(arr < low):
        raise ValueError(f"{name} must be >= {low:g} (got min {arr.min():g})")
    return arr


def run_sessions(
    seeds: Any,
    methods: Any = "omiso",
    n_cal: int = 600,
    n_train: int = 1500,
    n_test: int = 400,
    target: Any = None,
    dims: Any = (0, 1),
    epsilon: float = 0.05,
    kappa: Any = 1.0,
    drift: Any = 0.002,
    a_auto: Any = 0.6,
    adapt: Any = 0.0,
    ramp: Any = 0.0,
    q: int = 4,
    n_candidates: int = 12,
    lam: float = 1.0,
    q_proc: Any = 0.002,
    lr: float = 0.1,
    fa_iter: int = 1000,
    fa_tol: float = 1e-10,
    device: Any = None,
    return_states: bool = False,
) -> dict[str, np.ndarray]:
    """Run ``B = len(seeds)`` closed-loop sessions at once (torch, float64).

    Parameters
    ----------
    seeds : sequence of int
        One simulated session per entry (repeat a seed to run several methods on it).
    methods : str or sequence of str
        Per-session method from ``METHODS`` (``omiso``, ``static``, ``miso``, ``random``).
    n_cal, n_train, n_test : int
        Calibration, training and closed-loop trials (as :func:`lab.omiso.run_session`).
    target : array (len(dims),) or (B, len(dims)), optional
        Targets in the estimated latent space (default :func:`lab.omiso.default_target`).
    dims : sequence of int
        Target dimensions ``K``.
    epsilon : float
        Epsilon-greedy exploration probability.
    kappa, drift, a_auto, adapt, ramp : float or sequence
        Simulator settings, scalar or one per session.
    q, n_candidates : int
        Latent dimensions, candidate electrodes (patterns: their pairs).
    lam, lr : float
        Ridge prior precision, MiSO learning rate.
    q_proc : float or sequence
        Process noise of OMiSO's Kalman update (>= 0), scalar or one per session.
    fa_iter, fa_tol : int, float
        FA iteration limit and tolerance (as :func:`lab.omiso.fit_fa`).
    device : torch device, optional
        Default :func:`lab.device`.
    return_states : bool
        Also return ``z_pre``, ``z_post`` (B, n_test, q).

    Returns
    -------
    dict of ndarray
        ``errors`` (B, n_test), ``choices`` (B, n_test), optionally ``z_pre``/``z_post``.

    See: book/omiso/03-closing-the-loop.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    seeds = [check_int("seeds[i]", s, 0, 2**32 - 1) for s in np.atleast_1d(seeds).tolist()]
    B = len(seeds)
    if B == 0:
        raise ValueError("seeds must hold at least one seed")
    if isinstance(methods, str):
        methods = [methods] * B
    methods = [check_choice("methods[i]", m, METHODS) for m in methods]
    if len(methods) != B:
        raise ValueError(f"methods must have {B} entries (got {len(methods)})")
    n_cal = check_int("n_cal", n_cal, 10)
    n_train = check_int("n_train", n_train, 1)
    n_test = check_int("n_test", n_test, 1)
    epsilon = check_range("epsilon", epsilon, 0.0, 1.0)
    q = check_int("q", q, 1, 16)
    n_candidates = check_int("n_candidates", n_candidates, 2, 96)
    lam = check_positive("lam", lam)
    q_proc = _per_session("q_proc", q_proc, B, 0.0)
    lr = check_range("lr", lr, 0.0, 1.0)
    fa_iter = check_int("fa_iter", fa_iter, 1)
    fa_tol = check_positive("fa_tol", fa_tol, allow_zero=True)
    dims_np = check_dims(dims, q)
    K = len(dims_np)
    target = default_target(dims_np) if target is None else target
    target = np.asarray(target, dtype=float)
    if target.shape not in ((K,), (B, K)) or not np.all(np.isfinite(target)):
        raise ValueError(f"target must have shape ({K},) or ({B}, {K}) (got {target.shape})")
    kw = {
        "kappa": _per_session("kappa", kappa, B, 0.0),
        "drift": _per_session("drift", drift, B, 0.0),
        "a_auto": _per_session("a_auto", a_auto, B),
        "adapt": _per_session("adapt", adapt, B, 0.0),
        "ramp": _per_session("ramp", ramp, B),
    }
    dev = resolve_device(device)
    f64 = torch.float64

    def T(x):
        return torch.as_tensor(np.array(x, dtype=float), dtype=f64, device=dev)

    # ---- worlds: sessions that share a seed and the simulator settings share everything
    # before the closed loop (calibration, training block, pre-stimulation windows)
    keys = [(s, *(float(kw[k][i]) for k in kw)) for i, s in enumerate(seeds)]
    uniq = list(dict.fromkeys(keys))
    world = torch.as_tensor([uniq.index(k) for k in keys], device=dev)
    sims = [
        UtahArraySim(q=q, n_candidates=n_candidates, seed=k[0], **dict(zip(kw, k[1:], strict=True)))
        for k in uniq
    ]
    Wn = len(uniq)
    N = sims[0].n_channels
    U = sims[0].n_patterns
    n_all = n_cal + n_train + n_test
    L_true = T(np.stack([s.L for s in sims]))  # (W, N, q)
    mu_true = T(np.stack([s.mu for s in sims]))
    gamma = T(np.stack([s.gamma for s in sims]))  # (W, C, q, q)
    pat = torch.as_tensor(sims[0].patterns, device=dev)  # (U, 2), the same for every session
    pa, pb = pat[:, 0], pat[:, 1]
    odir = T(np.stack([s.offset_dir for s in sims]))
    prm = {
        k: T([s_.__dict__[k] for s_ in sims]) for k in ("kappa", "drift", "a_auto", "adapt", "ramp")
    }
    zero = torch.zeros((), dtype=f64, device=dev)

    def poisson(rate, u):
        # same recurrence as lab.omiso.poisson_icdf: p_0 = exp(-r), p_k = p_{k-1} r / k. The
        # CDF never decreases, so an entry that stops counting never counts again: once fewer
        # than a quarter of the carried entries still count, only those are carried on (the
        # same arithmetic per entry and the same counts, on shrinking tensors past the bulk)
        shape = rate.shape
        rate = torch.clamp(rate, max=RATE_MAX).reshape(-1)
        u = u.reshape(-1)
        p = torch.exp(-rate)
        cdf = p.clone()
        count = torch.zeros_like(rate)  # the counts of the carried entries
        out, live = None, None  # once some are dropped: every count, the carried entries
        below = torch.empty_like(u, dtype=torch.bool)
        for k in range(1, COUNT_MAX + 1):
            torch.lt(cdf, u, out=below)
            n = int(below.sum())  # one host sync per step
            if n == 0:
                break
            if 4 * n < below.numel():
                idx = below.nonzero().squeeze(1)
                if out is None:
                    out, live = count, idx
                else:
                    out[live] = count
                    live = live[idx]
                count, rate, u, p, cdf = count[idx], rate[idx], u[idx], p[idx], cdf[idx]
                below = below[idx]
            count += below
            p.mul_(rate).div_(k)  # in place: the same two roundings as p * rate / k
            cdf.add_(p)
        if out is None:
            return count.reshape(shape)
        out[live] = count
        return out.reshape(shape)

    def counts(z, u, widx, chunk=64):
        """Poisson counts of latent states z (W', T', q) of worlds widx, in trial chunks."""
        out = []
        for i in range(0, z.shape[1], chunk):
            zz = z[:, i : i + chunk]
            rate = 3.0 * torch.logaddexp(
                zero, zz @ L_true[widx].transpose(1, 2) + mu_true[widx, None]
            )
            out.append(poisson(rate, u[:, i : i + chunk]))
        return torch.cat(out, 1)

    # every trial's noise of every world (the numpy stream of the reference)
    nz = [trial_noise(k[0], 0, n_all, q, N, n_candidates) for k in uniq]
    # one key at a time, each world's arrays released as they are stacked (memory)
    noise = {
        k: torch.as_tensor(
            np.stack([p.pop(k) for p in nz]).astype(float, copy=False), dtype=f64, device=dev
        )
        for k in list(nz[0])
    }
    del nz
    # brain state: s_t = 0.98 s_{t-1} + 0.2 xi_t; z_pre = s_t + 0.5 nu_t (independent of stim)
    s_state = T(np.stack([s.s for s in sims]))
    z_true = torch.empty(Wn, n_all, q, dtype=f64, device=dev)
    for t in range(n_all):
        s_state = S_DECAY * s_state + S_DRIVE * noise["xi"][:, t]
        z_true[:, t] = s_state + Z_FAST * noise["nu"][:, t]
    # electrode effects: beta_t = beta_0 + drift * sum_{j=1..t} dbeta_j (the reference adds
    # them one trial at a time: equal up to rounding)
    steps = noise["dbeta"].clone()
    steps[:, 0] = 0.0
    beta_path = T(np.stack([s.beta0 for s in sims]))[:, None] + prm["drift"][
        :, None, None, None
    ] * torch.cumsum(steps, 1)
    Y_pre = counts(z_true, noise.pop("u_pre"), torch.arange(Wn, device=dev))  # (W, n_all, N)

    # calibration -> batched FA (same iteration and stopping rule as fit_fa)
    fa_mu, M = _fit_fa_batch(Y_pre[:, :n_cal], q, fa_iter, fa_tol)
    Zhat_pre = (Y_pre - fa_mu[:, None]) @ M.transpose(1, 2)  # eq. (1), every trial
    del Y_pre  # memory: what a batch holds grows with its worlds

    def response(widx, t_abs, z, u, beta_t, uses):
        """Noise-free eq. (6). Shapes: widx (R,), t_abs and u (R, T'), z (R, T', q),
        beta_t (R, T', C, q), uses (R, T', C)."""
        a, b = pa[u], pb[u]
        n_ab = uses.gather(-1, a[..., None])[..., 0] + uses.gather(-1, b[..., None])[..., 0]
        g = torch.exp(-prm["adapt"][widx, None] * n_ab)  # adaptation gain
        G = gamma[widx[:, None], a] + gamma[widx[:, None], b]  # (R, T', q, q)
        ia = a[..., None, None].expand(*a.shape, 1, q)
        ib = b[..., None, None].expand(*b.shape, 1, q)
        bsum = beta_t.gather(-2, ia)[..., 0, :] + beta_t.gather(-2, ib)[..., 0, :]
        effect = bsum + prm["kappa"][widx, None, None] * _bmv(G, z)
        off = (prm["ramp"][widx, None] * t_abs)[..., None] * odir[widx, None]
        return prm["a_auto"][widx, None, None] * z + g[..., None] * effect + off

    # training block (random patterns, pre-drawn): vectorised over trials
    plans = {k[0]: session_plan(k[0], n_train, n_test, U) for k in uniq}
    w_all = torch.arange(Wn, device=dev)
    tu = torch.as_tensor(
        np.stack([plans[k[0]]["train_u"] for k in uniq]), device=dev
    )  # (W, n_train)
    tr = slice(n_cal, n_cal + n_train)
    uses_path = torch.zeros(Wn, n_train, n_candidates, dtype=f64, device=dev)
    if bool((prm["adapt"] > 0).any()):
        uses = torch.zeros(Wn, n_candidates, dtype=f64, device=dev)
        for t in range(n_cal + n_train):
            if t > 0:
                uses = 0.99 * uses
            if n_cal <= t < n_cal + n_train:
                uses_path[:, t - n_cal] = uses
                uses = uses.clone()
                uses[w_all, pa[tu[:, t - n_cal]]] += 1.0
                uses[w_all, pb[tu[:, t - n_cal]]] += 1.0
        uses_end = uses
    else:
        uses_end = torch.zeros(Wn, n_candidates, dtype=f64, device=dev)
    t_idx = torch.arange(n_cal, n_cal + n_train, dtype=f64, device=dev)[None].expand(Wn, -1)
    zpost_true = response(w_all, t_idx, z_true[:, tr], tu, beta_path[:, tr], uses_path)
    zpost_true = zpost_true + POST_NOISE * noise["eps"][:, tr]
    Y_post = counts(zpost_true, noise["u_post"][:, tr], w_all)
    Zpre_tr = Zhat_pre[:, tr]
    Zpost_tr = (Y_post - fa_mu[:, None]) @ M.transpose(1, 2)

    # ridge fit per world (eq. 2) and MiSO's per-pattern means
    d = q + 1
    onehot = torch.nn.functional.one_hot(tu, U).to(f64)  # (W, n_train, U)
    Phi = torch.cat([Zpre_tr, torch.ones(Wn, n_train, 1, dtype=f64, device=dev)], -1)
    eye = torch.eye(d, dtype=f64, device=dev)
    A = torch.einsum("btu,btd,bte->bude", onehot, Phi, Phi) + lam * eye
    rhs = torch.einsum("btu,btd,btq->budq", onehot, Phi, Zpost_tr)
    W_ridge = torch.linalg.solve(A, rhs).transpose(-1, -2)  # (W, U, q, d)
    P0 = torch.linalg.inv(A)  # sigma2 = 1
    P0 = 0.5 * (P0 + P0.transpose(-1, -2))
    cnt = onehot.sum(1)
    means = torch.einsum("btu,btq->buq", onehot, Zpost_tr) / torch.clamp(cnt, min=1)[..., None]
    del onehot, Phi, Y_post

    # ---- closed loop, one row per session
    is_miso = torch.as_tensor([m == "miso" for m in methods], device=dev)
    is_omiso = torch.as_tensor([m == "omiso" for m in methods], device=dev)
    is_random = torch.as_tensor([m == "random" for m in methods], device=dev)
    q_t = torch.as_tensor(q_proc, dtype=f64, device=dev)
    q_rows = is_omiso & (q_t > 0)  # P <- P + Q I only where Q > 0 (Q = 0: plain RLS)
    has_q = bool(q_rows.any())
    W = W_ridge[world].clone()
    Wm = torch.zeros_like(W)
    Wm[..., q] = means[world]
    W = torch.where(is_miso[:, None, None, None], Wm, W)
    P = P0[world].clone()
    uses = uses_end[world].clone()
    explore_draw = T(np.stack([plans[s]["explore_draw"] for s in seeds]))
    explore_u = torch.as_tensor(np.stack([plans[s]["explore_u"] for s in seeds]), device=dev)
    tgt = T(np.broadcast_to(target, (B, K)))
    dims_t = torch.as_tensor(dims_np, device=dev)
    bidx = torch.arange(B, device=dev)
    errors = torch.empty(B, n_test, dtype=f64, device=dev)
    choices = torch.empty(B, n_test, dtype=torch.long, device=dev)
    zs_pre = torch.empty(B, n_test, q, dtype=f64, device=dev)
    zs_post = torch.empty_like(zs_pre)
    one = torch.ones(B, 1, dtype=f64, device=dev)
    test = slice(n_cal + n_train, n_all)  # per-session copies of the closed loop's trials only
    eps_u = noise["u_post"][:, test][world]
    eps_z = noise["eps"][:, test][world]
    del noise
    for i in range(n_test):
        t = n_cal + n_train + i
        uses = 0.99 * uses
        z_pre = Zhat_pre[world, t]
        x = torch.cat([z_pre, one], -1)  # phi = [z; 1] (MiSO rows have zero state weights)
        pred = torch.einsum("buqd,bd->buq", W, x)  # every pattern's predicted outcome
        dist = ((pred[..., dims_t] - tgt[:, None, :]) ** 2).sum(-1)
        u = torch.argmin(dist, 1)  # eq. (3)
        explore = is_random | (explore_draw[:, i] < epsilon)
        u = torch.where(explore, explore_u[:, i], u)
        tt = torch.full((B,), float(t), dtype=f64, device=dev)
        zt = (
            response(
                world,
                tt[:, None],
                z_true[world, t][:, None],
                u[:, None],
                beta_path[world, t][:, None],
                uses[:, None],
            )[:, 0]
            + POST_NOISE * eps_z[:, i]
        )
        uses = uses.clone()
        uses[bidx, pa[u]] += 1.0
        uses[bidx, pb[u]] += 1.0
        rate = 3.0 * torch.logaddexp(zero, _bmv(L_true[world], zt) + mu_true[world])
        y_post = poisson(rate, eps_u[:, i])
        z_post = _bmv(M[world], y_post - fa_mu[world])  # eq. (1)
        errors[:, i] = torch.linalg.vector_norm(z_post[:, dims_t] - tgt, dim=-1)
        choices[:, i], zs_pre[:, i], zs_post[:, i] = u, z_pre, z_post
        # eq. (4), OMiSO sessions: P <- P + Q I (all patterns), rank-one update of W_u, P_u
        if has_q:
            P = torch.where(q_rows[:, None, None, None], P + q_t[:, None, None, None] * eye, P)
        Pu = P[bidx, u]
        Wu = W[bidx, u]
        Px = _bmv(Pu, x)
        k = Px / (1.0 + (x * Px).sum(-1, keepdim=True))
        W_rls = Wu + (z_post - _bmv(Wu, x))[:, :, None] * k[:, None, :]
        P_new = Pu - k[:, :, None] * Px[:, None, :]
        P_new = 0.5 * (P_new + P_new.transpose(-1, -2))
        # eq. (5), MiSO sessions: pred_u <- pred_u - lr (pred_u - z_post)
        W_miso = Wu.clone()
        W_miso[..., q] = Wu[..., q] - lr * (Wu[..., q] - z_post)
        W_new = torch.where(
            is_omiso[:, None, None], W_rls, torch.where(is_miso[:, None, None], W_miso, Wu)
        )
        W = W.clone()
        W[bidx, u] = W_new
        P = P.clone()
        P[bidx, u] = torch.where(is_omiso[:, None, None], P_new, Pu)
    out = {"errors": errors.cpu().numpy(), "choices": choices.cpu().numpy()}
    if return_states:
        out["z_pre"] = zs_pre.cpu().numpy()
        out["z_post"] = zs_post.cpu().numpy()
    return out


def _bmv(A, x):
    """Batched matrix-vector product ``A @ x`` over leading axes."""
    return (A @ x[..., None])[..., 0]


def _fit_fa_batch(Y, q: int, n_iter: int, tol: float):
    """Batched :func:`lab.omiso.fit_fa` (same iteration, per-session stopping, same signs).

    Returns the means (B, N) and the posterior maps ``M`` (B, q, N) of eq. (1).
    """
    import torch

    B, n, N = Y.shape
    mu = Y.mean(1)
    X = Y - mu[:, None]
    S = X.transpose(1, 2) @ X / n
    var = torch.clamp(torch.diagonal(S, dim1=1, dim2=2), min=1e-12)
    psi = torch.ones(B, N, dtype=Y.dtype, device=Y.device)
    L = torch.zeros(B, N, q, dtype=Y.dtype, device=Y.device)
    old = torch.full((B,), -float("inf"), dtype=Y.dtype, device=Y.device)
    done = torch.zeros(B, dtype=torch.bool, device=Y.device)
    for _ in range(n_iter):
        sp = torch.sqrt(psi)
        C = S / (sp[:, :, None] * sp[:, None, :])
        s2, V = torch.linalg.eigh(C)
        s2, V = s2.flip(-1)[:, :q], V.flip(-1)[:, :, :q]
        L_new = sp[:, :, None] * V * torch.sqrt(torch.clamp(s2 - 1.0, min=0.0))[:, None, :]
        psi_new = torch.clamp(var - (L_new**2).sum(-1), min=1e-12)
        Cm = L_new @ L_new.transpose(1, 2) + torch.diag_embed(psi_new)
        ll = -0.5 * (
            N * np.log(2 * np.pi)
            + torch.linalg.slogdet(Cm)[1]
            + torch.diagonal(torch.linalg.solve(Cm, S), dim1=1, dim2=2).sum(-1)
        )
        keep = ~done
        L = torch.where(keep[:, None, None], L_new, L)
        psi = torch.where(keep[:, None], psi_new, psi)
        done = done | (ll - old < tol)
        old = torch.where(keep, ll, old)
        if bool(done.all()):
            break
    idx = L.abs().argmax(1)  # (B, q): canonical sign, largest entry positive
    sgn = torch.sign(torch.gather(L, 1, idx[:, None, :]))[:, 0]
    sgn = torch.where(sgn == 0, torch.ones_like(sgn), sgn)
    L = L * sgn[:, None, :]
    LtPi = L.transpose(1, 2) / psi[:, None, :]
    M = torch.linalg.solve(torch.eye(q, dtype=Y.dtype, device=Y.device) + LtPi @ L, LtPi)
    return mu, M
