"""Fast path: many simulated closed-loop sessions batched in torch (CPU or CUDA).

Every session of :func:`run_sessions` runs the same program as
:func:`lab.omiso.reference.run_session` (the pair declared in ``lab.omiso.PAIRS``; FA
calibration, random-pattern training block, ridge fit, closed loop with the inverse model and
the online update), with the per-session work as batched tensor operations: the FA iteration
(``eigh`` on ``(B, N, N)``), the E-step of eq. (1), the predictions of all patterns
(``einsum("buqd,bd->buq")``), the argmin of eq. (3) and the rank-one updates of eq. (4).

The work is split along the session's own stages: :func:`_worlds` (the simulated arrays, their
brain states and every trial's noise), :func:`_calibrate` (FA on the no-stimulation windows),
:func:`_train` (the random-pattern block and the ridge fit of eq. 2) and :func:`_closed_loop`
(eqs. 3-5 trial by trial).

The randomness is the numpy stream of the reference (:func:`lab.omiso.trial_noise`,
:func:`lab.omiso.session_plan`), drawn chunk by chunk (256 trials) for all sessions and moved
to the device, so a torch session equals the numpy session of the same seed to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_instance
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
from lab.omiso.reference import default_target
from lab.omiso.settings import SessionBatch, SessionSettings, check_dims

__all__ = ["run_sessions"]


def run_sessions(
    batch: SessionBatch,
    settings: SessionSettings | None = None,
    device: Any = None,
    return_states: bool = False,
) -> dict[str, np.ndarray]:
    """Run the ``B = len(batch)`` closed-loop sessions of ``batch`` at once (torch, float64).

    Parameters
    ----------
    batch : SessionBatch
        The sessions: seeds, methods, targets, simulator settings, process noise.
    settings : SessionSettings, optional
        The protocol shared by the sessions (default ``SessionSettings()``).
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
    from lab.core.checks import check_bool
    from lab.core.runtime import resolve_device

    check_instance("batch", batch, SessionBatch)
    settings = SessionSettings() if settings is None else settings
    check_instance("settings", settings, SessionSettings)
    return_states = check_bool("return_states", return_states)
    dims = check_dims(settings.dims, batch.q)
    target = default_target(dims) if batch.target is None else np.asarray(batch.target)
    if target.shape[-1] != len(dims):
        raise ValueError(
            f"target must have {len(dims)} entries per session, one per target dimension "
            f"(got {target.shape[-1]})"
        )
    w = _worlds(batch, settings, resolve_device(device))
    fa_mu, M, Zhat_pre = _calibrate(w, settings)
    fit = _train(w, settings, fa_mu, M, Zhat_pre)
    return _closed_loop(w, batch, settings, fit, (fa_mu, M, Zhat_pre), target, return_states)


@dataclass
class _Worlds:
    """The simulated arrays of a batch as tensors: sessions that share a seed and the
    simulator settings share one world (everything before the closed loop)."""

    index: Any  # (B,) world of each session
    seeds: list  # the seed of each world
    L: Any  # (W, N, q) true loadings
    mu: Any  # (W, N)
    gamma: Any  # (W, C, q, q)
    pa: Any  # (U,) first electrode of each pattern
    pb: Any
    odir: Any  # (W, q) common-mode offset direction
    prm: dict  # kappa, drift, a_auto, adapt, ramp: (W,)
    noise: dict  # every trial's noise, (W, n_all, ...)
    z_true: Any  # (W, n_all, q) true pre-stimulation states
    beta_path: Any  # (W, n_all, C, q) electrode effects per trial
    n_candidates: int


def _tensor(x, dev):
    import torch

    return torch.as_tensor(np.array(x, dtype=float), dtype=torch.float64, device=dev)


def _worlds(batch: SessionBatch, settings: SessionSettings, dev) -> _Worlds:
    """Worlds: the distinct simulated arrays, their brain states and every trial's noise."""
    import torch

    keys = [(s, *batch.world(i).values()) for i, s in enumerate(batch.seeds)]
    names = list(batch.world(0))
    uniq = list(dict.fromkeys(keys))
    index = torch.as_tensor([uniq.index(k) for k in keys], device=dev)
    sims = [
        UtahArraySim(
            q=batch.q,
            n_candidates=batch.n_candidates,
            seed=k[0],
            **dict(zip(names, k[1:], strict=True)),
        )
        for k in uniq
    ]
    q, N, C = batch.q, sims[0].n_channels, batch.n_candidates
    n_all = settings.n_cal + settings.n_train + settings.n_test
    pat = torch.as_tensor(sims[0].patterns, device=dev)  # (U, 2), the same for every session
    # every trial's noise of every world (the numpy stream of the reference)
    nz = [trial_noise(k[0], 0, n_all, q, N, C) for k in uniq]
    # one key at a time, each world's arrays released as they are stacked (memory)
    noise = {
        k: torch.as_tensor(
            np.stack([p.pop(k) for p in nz]).astype(float, copy=False),
            dtype=torch.float64,
            device=dev,
        )
        for k in list(nz[0])
    }
    del nz
    # brain state: s_t = 0.98 s_{t-1} + 0.2 xi_t; z_pre = s_t + 0.5 nu_t (independent of stim)
    s_state = _tensor(np.stack([s.s for s in sims]), dev)
    z_true = torch.empty(len(uniq), n_all, q, dtype=torch.float64, device=dev)
    for t in range(n_all):
        s_state = S_DECAY * s_state + S_DRIVE * noise["xi"][:, t]
        z_true[:, t] = s_state + Z_FAST * noise["nu"][:, t]
    prm = {k: _tensor([s_.__dict__[k] for s_ in sims], dev) for k in names}
    # electrode effects: beta_t = beta_0 + drift * sum_{j=1..t} dbeta_j (the reference adds
    # them one trial at a time: equal up to rounding)
    steps = noise["dbeta"].clone()
    steps[:, 0] = 0.0
    beta_path = _tensor(np.stack([s.beta0 for s in sims]), dev)[:, None] + prm["drift"][
        :, None, None, None
    ] * torch.cumsum(steps, 1)
    return _Worlds(
        index=index,
        seeds=[k[0] for k in uniq],
        L=_tensor(np.stack([s.L for s in sims]), dev),
        mu=_tensor(np.stack([s.mu for s in sims]), dev),
        gamma=_tensor(np.stack([s.gamma for s in sims]), dev),
        pa=pat[:, 0],
        pb=pat[:, 1],
        odir=_tensor(np.stack([s.offset_dir for s in sims]), dev),
        prm=prm,
        noise=noise,
        z_true=z_true,
        beta_path=beta_path,
        n_candidates=C,
    )


def _poisson(rate, u):
    """Poisson counts by the inverse CDF of the uniforms ``u`` (as ``poisson_icdf``)."""
    import torch

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


def _counts(w: _Worlds, z, u, widx, chunk: int = 64):
    """Poisson counts of latent states z (W', T', q) of worlds widx, in trial chunks."""
    import torch

    zero = torch.zeros((), dtype=z.dtype, device=z.device)
    out = []
    for i in range(0, z.shape[1], chunk):
        zz = z[:, i : i + chunk]
        rate = 3.0 * torch.logaddexp(zero, zz @ w.L[widx].transpose(1, 2) + w.mu[widx, None])
        out.append(_poisson(rate, u[:, i : i + chunk]))
    return torch.cat(out, 1)


def _response(w: _Worlds, widx, t_abs, z, u, beta_t, uses):
    """Noise-free eq. (6). Shapes: widx (R,), t_abs and u (R, T'), z (R, T', q),
    beta_t (R, T', C, q), uses (R, T', C)."""
    import torch

    q = z.shape[-1]
    a, b = w.pa[u], w.pb[u]
    n_ab = uses.gather(-1, a[..., None])[..., 0] + uses.gather(-1, b[..., None])[..., 0]
    g = torch.exp(-w.prm["adapt"][widx, None] * n_ab)  # adaptation gain
    G = w.gamma[widx[:, None], a] + w.gamma[widx[:, None], b]  # (R, T', q, q)
    ia = a[..., None, None].expand(*a.shape, 1, q)
    ib = b[..., None, None].expand(*b.shape, 1, q)
    bsum = beta_t.gather(-2, ia)[..., 0, :] + beta_t.gather(-2, ib)[..., 0, :]
    effect = bsum + w.prm["kappa"][widx, None, None] * _bmv(G, z)
    off = (w.prm["ramp"][widx, None] * t_abs)[..., None] * w.odir[widx, None]
    return w.prm["a_auto"][widx, None, None] * z + g[..., None] * effect + off


def _calibrate(w: _Worlds, settings: SessionSettings):
    """FA on the calibration windows (batched, same iteration and stopping rule as fit_fa);
    returns its means, the posterior maps M of eq. (1) and every trial's estimated state."""
    import torch

    Wn = len(w.seeds)
    Y_pre = _counts(w, w.z_true, w.noise.pop("u_pre"), torch.arange(Wn, device=w.z_true.device))
    fa_mu, M = _fit_fa_batch(Y_pre[:, : settings.n_cal], w.z_true.shape[-1], settings)
    Zhat_pre = (Y_pre - fa_mu[:, None]) @ M.transpose(1, 2)  # eq. (1), every trial
    return fa_mu, M, Zhat_pre


def _training_uses(w: _Worlds, settings: SessionSettings, tu):
    """Use counts of the candidate electrodes before each training trial and at its end
    (zeros without adaptation: they only enter through the adaptation gain)."""
    import torch

    Wn, n_cal, n_train = len(w.seeds), settings.n_cal, settings.n_train
    dev, C = w.z_true.device, w.n_candidates
    uses_path = torch.zeros(Wn, n_train, C, dtype=torch.float64, device=dev)
    if not bool((w.prm["adapt"] > 0).any()):
        return uses_path, torch.zeros(Wn, C, dtype=torch.float64, device=dev)
    w_all = torch.arange(Wn, device=dev)
    uses = torch.zeros(Wn, C, dtype=torch.float64, device=dev)
    for t in range(n_cal + n_train):
        if t > 0:
            uses = 0.99 * uses
        if n_cal <= t < n_cal + n_train:
            uses_path[:, t - n_cal] = uses
            uses = uses.clone()
            uses[w_all, w.pa[tu[:, t - n_cal]]] += 1.0
            uses[w_all, w.pb[tu[:, t - n_cal]]] += 1.0
    return uses_path, uses


def _train(w: _Worlds, settings: SessionSettings, fa_mu, M, Zhat_pre) -> dict:
    """The training block (random patterns, pre-drawn, vectorised over trials), the ridge fit
    of eq. (2) per world and MiSO's per-pattern means."""
    import torch

    Wn, n_cal, n_train = len(w.seeds), settings.n_cal, settings.n_train
    dev, f64, q = w.z_true.device, torch.float64, w.z_true.shape[-1]
    U = len(w.pa)
    plans = {s: session_plan(s, n_train, settings.n_test, U) for s in w.seeds}
    w_all = torch.arange(Wn, device=dev)
    tu = torch.as_tensor(np.stack([plans[s]["train_u"] for s in w.seeds]), device=dev)
    tr = slice(n_cal, n_cal + n_train)
    uses_path, uses_end = _training_uses(w, settings, tu)
    t_idx = torch.arange(n_cal, n_cal + n_train, dtype=f64, device=dev)[None].expand(Wn, -1)
    zpost_true = _response(w, w_all, t_idx, w.z_true[:, tr], tu, w.beta_path[:, tr], uses_path)
    zpost_true = zpost_true + POST_NOISE * w.noise["eps"][:, tr]
    Y_post = _counts(w, zpost_true, w.noise["u_post"][:, tr], w_all)
    Zpre_tr = Zhat_pre[:, tr]
    Zpost_tr = (Y_post - fa_mu[:, None]) @ M.transpose(1, 2)
    d = q + 1
    onehot = torch.nn.functional.one_hot(tu, U).to(f64)  # (W, n_train, U)
    Phi = torch.cat([Zpre_tr, torch.ones(Wn, n_train, 1, dtype=f64, device=dev)], -1)
    eye = torch.eye(d, dtype=f64, device=dev)
    A = torch.einsum("btu,btd,bte->bude", onehot, Phi, Phi) + settings.lam * eye
    rhs = torch.einsum("btu,btd,btq->budq", onehot, Phi, Zpost_tr)
    W_ridge = torch.linalg.solve(A, rhs).transpose(-1, -2)  # eq. (2): (W, U, q, d)
    P0 = torch.linalg.inv(A)  # sigma2 = 1
    P0 = 0.5 * (P0 + P0.transpose(-1, -2))
    cnt = onehot.sum(1)
    means = torch.einsum("btu,btq->buq", onehot, Zpost_tr) / torch.clamp(cnt, min=1)[..., None]
    return {"W": W_ridge, "P": P0, "means": means, "uses": uses_end, "plans": plans}


def _start(w: _Worlds, batch: SessionBatch, fit: dict) -> dict:
    """The closed loop's starting models, one row per session: OMiSO and static rows start
    at the ridge fit, MiSO rows at the per-pattern means (zero state weights)."""
    import torch

    dev, q = w.z_true.device, w.z_true.shape[-1]
    rows = {
        m: torch.as_tensor([x == m for x in batch.methods], device=dev)
        for m in ("miso", "omiso", "random")
    }
    W = fit["W"][w.index].clone()
    Wm = torch.zeros_like(W)
    Wm[..., q] = fit["means"][w.index]
    rows["W"] = torch.where(rows["miso"][:, None, None, None], Wm, W)
    rows["P"] = fit["P"][w.index].clone()
    rows["uses"] = fit["uses"][w.index].clone()
    return rows


def _update(state: dict, u, x, z_post, q_t, settings: SessionSettings) -> None:
    """Eqs. (4)-(5) on the tried pattern of each session, in place of ``state``."""
    import torch

    W, P, bidx = state["W"], state["P"], torch.arange(len(u), device=u.device)
    q, d = W.shape[-2], W.shape[-1]
    # eq. (4), OMiSO sessions: P <- P + Q I (all patterns), rank-one update of W_u, P_u
    if state["has_q"]:
        eye = torch.eye(d, dtype=W.dtype, device=W.device)
        P = torch.where(state["q_rows"][:, None, None, None], P + q_t[:, None, None, None] * eye, P)
    Pu = P[bidx, u]
    Wu = W[bidx, u]
    Px = _bmv(Pu, x)
    k = Px / (1.0 + (x * Px).sum(-1, keepdim=True))
    W_rls = Wu + (z_post - _bmv(Wu, x))[:, :, None] * k[:, None, :]
    P_new = Pu - k[:, :, None] * Px[:, None, :]
    P_new = 0.5 * (P_new + P_new.transpose(-1, -2))
    # eq. (5), MiSO sessions: pred_u <- pred_u - lr (pred_u - z_post)
    W_miso = Wu.clone()
    W_miso[..., q] = Wu[..., q] - settings.lr * (Wu[..., q] - z_post)
    is_omiso, is_miso = state["omiso"][:, None, None], state["miso"][:, None, None]
    W_new = torch.where(is_omiso, W_rls, torch.where(is_miso, W_miso, Wu))
    state["W"] = W.clone()
    state["W"][bidx, u] = W_new
    state["P"] = P.clone()
    state["P"][bidx, u] = torch.where(is_omiso, P_new, Pu)


def _closed_loop(w, batch, settings, fit, fa, target, return_states) -> dict:
    """The closed loop, one row per session: choose by eq. (3) (epsilon-greedy), stimulate,
    read the outcome through eq. (1), update by eqs. (4)-(5)."""
    import torch

    fa_mu, M, Zhat_pre = fa
    B, q, dev, f64 = len(batch), w.z_true.shape[-1], w.z_true.device, torch.float64
    n_test, t0 = settings.n_test, settings.n_cal + settings.n_train
    state = _start(w, batch, fit)
    q_t = torch.as_tensor(batch.q_proc, dtype=f64, device=dev)
    state["q_rows"] = state["omiso"] & (q_t > 0)  # P <- P + Q I only where Q > 0 (else RLS)
    state["has_q"] = bool(state["q_rows"].any())
    plans, wi = fit["plans"], w.index
    draw = _tensor(np.stack([plans[s]["explore_draw"] for s in batch.seeds]), dev)
    explore_u = torch.as_tensor(np.stack([plans[s]["explore_u"] for s in batch.seeds]), device=dev)
    tgt = _tensor(np.broadcast_to(target, (B, target.shape[-1])), dev)
    dims_t = torch.as_tensor(check_dims(settings.dims, q), device=dev)
    bidx, one = torch.arange(B, device=dev), torch.ones(B, 1, dtype=f64, device=dev)
    zero = torch.zeros((), dtype=f64, device=dev)
    out = {k: torch.empty(B, n_test, dtype=f64, device=dev) for k in ("errors",)}
    out["choices"] = torch.empty(B, n_test, dtype=torch.long, device=dev)
    out["z_pre"] = torch.empty(B, n_test, q, dtype=f64, device=dev)
    out["z_post"] = torch.empty_like(out["z_pre"])
    test = slice(t0, t0 + n_test)  # per-session copies of the closed loop's trials only
    eps_u, eps_z = w.noise["u_post"][:, test][wi], w.noise["eps"][:, test][wi]
    w.noise = {}
    for i in range(n_test):
        t = t0 + i
        state["uses"] = 0.99 * state["uses"]
        z_pre = Zhat_pre[wi, t]
        x = torch.cat([z_pre, one], -1)  # phi = [z; 1] (MiSO rows have zero state weights)
        pred = torch.einsum("buqd,bd->buq", state["W"], x)  # every pattern's predicted outcome
        dist = ((pred[..., dims_t] - tgt[:, None, :]) ** 2).sum(-1)
        u = torch.argmin(dist, 1)  # eq. (3)
        explore = state["random"] | (draw[:, i] < settings.epsilon)
        u = torch.where(explore, explore_u[:, i], u)
        tt = torch.full((B, 1), float(t), dtype=f64, device=dev)
        zt = _response(
            w,
            wi,
            tt,
            w.z_true[wi, t][:, None],
            u[:, None],
            w.beta_path[wi, t][:, None],
            state["uses"][:, None],
        )  # eq. (6) of the chosen patterns
        zt = zt[:, 0] + POST_NOISE * eps_z[:, i]
        state["uses"] = state["uses"].clone()
        state["uses"][bidx, w.pa[u]] += 1.0
        state["uses"][bidx, w.pb[u]] += 1.0
        rate = 3.0 * torch.logaddexp(zero, _bmv(w.L[wi], zt) + w.mu[wi])
        z_post = _bmv(M[wi], _poisson(rate, eps_u[:, i]) - fa_mu[wi])  # eq. (1)
        out["errors"][:, i] = torch.linalg.vector_norm(z_post[:, dims_t] - tgt, dim=-1)
        out["choices"][:, i], out["z_pre"][:, i], out["z_post"][:, i] = u, z_pre, z_post
        _update(state, u, x, z_post, q_t, settings)
    keys = ("errors", "choices", "z_pre", "z_post") if return_states else ("errors", "choices")
    return {k: out[k].cpu().numpy() for k in keys}


def _bmv(A, x):
    """Batched matrix-vector product ``A @ x`` over leading axes."""
    return (A @ x[..., None])[..., 0]


def _fit_fa_batch(Y, q: int, settings: SessionSettings):
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
    for _ in range(settings.fa_iter):
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
        done = done | (ll - old < settings.fa_tol)
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
