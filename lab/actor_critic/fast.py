"""The fast path: batched torch (CPU or CUDA), the same operations in the same order as
:func:`lab.actor_critic.reference.single_timescale_ac`; with the same uniforms both give the same
trajectory. :func:`single_timescale_ac_many` runs many MDPs x many runs in one computation
(numpy on a CPU, torch on CUDA): the engine of the exponent study. Many step-size schedules
on one MDP at once (the widgets' precomputed runs) are in :mod:`lab.actor_critic.schedule_batch`.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from lab.core.checks import check_array, check_choice
from lab.core.progress import progress

from .mdp import TabularMDP, optimum
from .reference import (
    ACHistory,
    StepSchedule,
    check_ac_args,
    log_eval_points,
    record_metrics,
)

__all__ = [
    "BatchHistory",
    "exact_pg_many",
    "single_timescale_ac",
    "single_timescale_ac_many",
]


def _torch_uniforms(uniforms: Any, K: int, runs: int, device: Any, dtype: Any) -> Any:
    """Injected uniforms as a ``(K, runs, 4)`` tensor on ``device`` (``None`` stays ``None``)."""
    import torch

    if uniforms is None:
        return None
    if not isinstance(uniforms, torch.Tensor):
        uniforms = torch.as_tensor(check_array("uniforms", uniforms, shape=(K, runs, 4)))
    elif tuple(uniforms.shape) != (K, runs, 4):
        raise ValueError(f"uniforms must have shape ({K}, {runs}, 4) (got {tuple(uniforms.shape)})")
    return uniforms.to(device=device, dtype=dtype)


def _torch_tables(mdp, K, actor, critic, runs, device, dtype) -> dict:
    """The MDP's tables and the step sizes as tensors (what every step of the loop reads)."""
    import torch

    S, g = mdp.n_states, mdp.gamma
    rho = torch.as_tensor(mdp.rho, device=device, dtype=dtype)
    return dict(
        P=torch.as_tensor(mdp.P, device=device, dtype=dtype),
        Rw=torch.as_tensor(mdp.R, device=device, dtype=dtype),
        g=g,
        eye=torch.eye(S, device=device, dtype=dtype),
        rhs=((1.0 - g) * rho).expand(runs, S).unsqueeze(-1),
        etas=torch.as_tensor(actor(np.arange(K)) / (1.0 - g), device=device, dtype=dtype),
        betas=torch.as_tensor(critic(np.arange(K)), device=device, dtype=dtype),
        r_idx=torch.arange(runs, device=device),
    )


def _cat_torch(probs, u):
    """Inverse-CDF draw of one index per row, as in the reference."""
    import torch

    idx = (torch.cumsum(probs, -1) < u.unsqueeze(-1)).sum(-1)
    return idx.clamp_max(probs.shape[-1] - 1)


def _torch_step(T: dict, theta, Q, u, k: int) -> None:
    """One sample and one actor + one critic step on every run, in place."""
    import torch

    P, g, r_idx = T["P"], T["g"], T["r_idx"]
    pi = torch.softmax(theta, -1)
    P_pi = torch.einsum("rsa,sat->rst", pi, P)
    d = torch.linalg.solve(T["eye"] - g * P_pi.transpose(1, 2), T["rhs"]).squeeze(-1)
    s = _cat_torch(d.clamp_min(0.0), u[:, 0])  # (S): s_k ~ d^{pi_k}_rho
    pi_s = pi[r_idx, s]
    a = _cat_torch(pi_s, u[:, 1])  # a_k ~ pi_k(.|s_k)
    s1 = _cat_torch(P[s, a], u[:, 2])  # s'_k ~ P(.|s_k, a_k)
    a1 = _cat_torch(pi[r_idx, s1], u[:, 3])  # a'_k ~ pi_k(.|s'_k)
    q_s = Q[r_idx, s]
    q_sa = q_s[r_idx, a]
    adv = q_sa - (pi_s * q_s).sum(-1)  # (ac-adv)
    score = -pi_s
    score[r_idx, a] += 1.0
    theta[r_idx, s] += T["etas"][k] * score * adv.unsqueeze(-1)  # (ac-actor)
    td = T["Rw"][s, a] + g * Q[r_idx, s1, a1] - q_sa
    Q[r_idx, s, a] += T["betas"][k] * td  # (ac-critic)


def single_timescale_ac(
    mdp: TabularMDP,
    K: int = 20_000,
    actor: StepSchedule | tuple = StepSchedule(0.1, 2 / 3),  # noqa: B008
    critic: StepSchedule | tuple = StepSchedule(1.0, 2 / 3),  # noqa: B008
    runs: int = 8,
    seed: int = 0,
    *,
    eval_points: int = 100,
    uniforms: Any = None,
    device: Any = None,
    dtype: Any = None,
    show_progress: bool | None = None,
) -> ACHistory:
    """The same algorithm as :func:`single_timescale_ac` (occupancy sampler) in batched torch.

    All runs advance together; the occupancy is a batched linear solve and the sampled entries
    are gathers. It pays on CUDA with thousands of runs; on a small CPU numpy is faster. Returns
    an :class:`ACHistory` (the same fields, as numpy arrays).

    Parameters
    ----------
    mdp, K, actor, critic, runs, seed, eval_points
        As in :func:`single_timescale_ac`.
    uniforms : ndarray or Tensor (K, runs, 4), optional
        Injected uniforms; with the same uniforms the trajectory equals the reference's.
    device : torch.device or str, optional
        Default: the device of ``uniforms`` if it is a tensor, else ``lab.device()``.
    dtype : torch.dtype, optional
        Default float64.

    See: book/actor_critic/02-schedules-and-critic-lag.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    K, actor, critic, runs, seed, _, eval_points = check_ac_args(
        mdp, K, actor, critic, runs, seed, "occupancy", eval_points
    )
    device = resolve_device(device, uniforms)
    dtype = torch.float64 if dtype is None else dtype
    uniforms = _torch_uniforms(uniforms, K, runs, device, dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    S, A = mdp.n_states, mdp.n_actions
    J_star, a_star = optimum(mdp)
    T = _torch_tables(mdp, K, actor, critic, runs, device, dtype)
    theta = torch.zeros(runs, S, A, device=device, dtype=dtype)
    Q = torch.zeros(runs, S, A, device=device, dtype=dtype)
    ks = log_eval_points(K, eval_points)
    rec_gap, rec_err, rec_p = [], [], []

    def record():
        gap, err, p_opt = record_metrics(mdp, J_star, a_star, theta.cpu().numpy(), Q.cpu().numpy())
        rec_gap.append(gap), rec_err.append(err), rec_p.append(p_opt)

    chunk, j = 4096, 0
    disable = None if show_progress is None else not show_progress
    for k in progress(range(K), desc="actor-critic (torch)", disable=disable):
        while j < len(ks) and ks[j] == k:
            record()
            j += 1
        if uniforms is not None:
            u = uniforms[k]
        else:
            if k % chunk == 0:
                n = min(chunk, K - k)
                block = torch.rand(n, runs, 4, generator=gen, device=device, dtype=dtype)
            u = block[k % chunk]
        _torch_step(T, theta, Q, u, k)
    while j < len(ks):
        record()
        j += 1
    return ACHistory(
        k=ks.astype(float), samples=ks.astype(float), gaps=np.stack(rec_gap, 1),
        critic_errors=np.stack(rec_err, 1), optimal_action_prob=np.stack(rec_p, 0),
        theta=theta.cpu().numpy(), Q=Q.cpu().numpy(), J_star=J_star,
        config=dict(actor=actor, critic=critic, runs=runs, seed=seed, sampler="occupancy", K=K),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Many MDPs x many runs in one computation
# ---------------------------------------------------------------------------------------------
@dataclass
class BatchHistory:
    """What :func:`single_timescale_ac_many` recorded, for ``M`` MDPs x ``runs`` runs.

    Attributes
    ----------
    k : ndarray (n_eval,)
        Iterations (= samples, occupancy sampler) at the evaluation points.
    gaps : ndarray (M, runs, n_eval)
        Exact optimality gap ``J* - J(pi_k)`` of every run of every MDP.
    critic_errors : ndarray (M, runs, n_eval)
        ``d^pi x pi``-weighted RMS of ``Q_k - Q^{pi_k}`` (see :func:`critic_error`).
    J_star : ndarray (M,)
        Optimal value of each MDP.
    config : dict
        The schedules, sizes and seed.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """

    k: np.ndarray
    gaps: np.ndarray
    critic_errors: np.ndarray
    J_star: np.ndarray
    config: dict = field(default_factory=dict)

    @property
    def mdp_gap(self) -> np.ndarray:
        """Mean gap over the runs of each MDP, shape (M, n_eval)."""
        return self.gaps.mean(1)

    @property
    def mdp_critic_error(self) -> np.ndarray:
        """Mean critic error over the runs of each MDP, shape (M, n_eval)."""
        return self.critic_errors.mean(1)


def _check_mdps(mdps: Any) -> list[TabularMDP]:
    if isinstance(mdps, TabularMDP):
        return [mdps]
    if isinstance(mdps, (str, bytes)) or not hasattr(mdps, "__len__") or len(mdps) == 0:
        raise TypeError(f"mdps must be a TabularMDP or a non-empty sequence of them (got {mdps!r})")
    mdps = list(mdps)
    for i, m in enumerate(mdps):
        if not isinstance(m, TabularMDP):
            raise TypeError(f"mdps[{i}] must be a TabularMDP (got {type(m).__name__})")
        same = (m.n_states, m.n_actions, m.gamma) == (
            mdps[0].n_states,
            mdps[0].n_actions,
            mdps[0].gamma,
        )
        if not same:
            raise ValueError(
                f"mdps must share n_states, n_actions and gamma (mdps[{i}] has "
                f"{(m.n_states, m.n_actions, m.gamma)}, mdps[0] has "
                f"{(mdps[0].n_states, mdps[0].n_actions, mdps[0].gamma)})"
            )
    return mdps


def single_timescale_ac_many(
    mdps: Any,
    K: int = 20_000,
    actor: StepSchedule | tuple = StepSchedule(0.1, 2 / 3),  # noqa: B008
    critic: StepSchedule | tuple = StepSchedule(20.0, 2 / 3, cap=1.0),  # noqa: B008
    runs: int = 4,
    seed: int = 0,
    *,
    eval_points: int = 40,
    uniforms: Any = None,
    backend: str = "auto",
    device: Any = None,
    show_progress: bool | None = None,
) -> BatchHistory:
    """Single-timescale actor-critic on ``M`` MDPs x ``runs`` runs in one batched computation.

    The same steps as :func:`single_timescale_ac` (occupancy sampler), with every array carrying
    a leading batch axis of size ``M * runs`` (the runs of MDP ``i`` are rows
    ``i * runs .. (i + 1) * runs - 1``). With injected uniforms, the rows of MDP ``i`` follow
    exactly the trajectory of ``single_timescale_ac(mdps[i], ..., uniforms=u[:, rows])``.

    Parameters
    ----------
    mdps : TabularMDP or sequence of TabularMDP
        MDPs sharing ``n_states``, ``n_actions`` and ``gamma``.
    K, actor, critic, runs, seed, eval_points
        As in :func:`single_timescale_ac` (the default critic is the fast, capped one:
        ``min(1, 20 (k + 1)^(-2/3))``).
    uniforms : ndarray or Tensor (K, M * runs, 4), optional
        Injected uniforms for the draws of ``s, a, s', a'``.
    backend : {"auto", "numpy", "torch"}
        ``"auto"``: numpy on a CPU (faster for these tiny tables), torch when ``device`` (or
        ``lab.device()``) is CUDA.
    device : torch.device or str, optional
        For the torch backend (default ``lab.device()``).
    show_progress : bool, optional
        Progress bar (default: on unless ``LAB_PROGRESS=0``).

    Returns
    -------
    BatchHistory

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    mdps = _check_mdps(mdps)
    K, actor, critic, runs, seed, _, eval_points = check_ac_args(
        mdps[0], K, actor, critic, runs, seed, "occupancy", eval_points
    )
    backend = check_choice("backend", backend, ["auto", "numpy", "torch"])
    if backend == "auto":
        from lab.core.runtime import resolve_device

        backend = "torch" if resolve_device(device, uniforms).type == "cuda" else "numpy"
    M = len(mdps)
    B = M * runs
    if uniforms is not None and backend == "numpy":
        uniforms = check_array("uniforms", np.asarray(uniforms), shape=(K, B, 4))
    J_star = np.array([optimum(m)[0] for m in mdps])
    a_star = np.stack([optimum(m)[1] for m in mdps])
    P = np.stack([m.P for m in mdps])
    R = np.stack([m.R for m in mdps])
    rho = np.stack([m.rho for m in mdps])
    ks = log_eval_points(K, eval_points)
    etas = actor(np.arange(K)) / (1.0 - mdps[0].gamma)
    betas = critic(np.arange(K))
    disable = None if show_progress is None else not show_progress
    kernel = _batch_numpy if backend == "numpy" else _batch_torch
    batch = _Batch(P, R, rho, mdps[0].gamma, J_star, runs, ks, etas, betas)
    gaps, errs = kernel(batch, K, seed, uniforms, device, disable)
    n = len(ks)
    return BatchHistory(
        k=ks.astype(float),
        gaps=gaps.reshape(n, M, runs).transpose(1, 2, 0),
        critic_errors=errs.reshape(n, M, runs).transpose(1, 2, 0),
        J_star=J_star,
        config=dict(actor=actor, critic=critic, runs=runs, seed=seed, K=K, M=M, backend=backend,
                    a_star=a_star),
    )  # fmt: skip


class _Batch(NamedTuple):
    """The stacked MDPs and the step sizes of one batched run (``M`` MDPs x ``runs`` runs)."""

    P: np.ndarray  # (M, S, A, S)
    R: np.ndarray  # (M, S, A)
    rho: np.ndarray  # (M, S)
    g: float  # gamma, shared
    J_star: np.ndarray  # (M,)
    runs: int
    ks: np.ndarray  # the evaluation points
    etas: np.ndarray  # eta_k / (1 - gamma), (K,)
    betas: np.ndarray  # beta_k, (K,)


def _batch_numpy(batch: _Batch, K, seed, uniforms, device, disable):
    P, R, rho, g, J_star, runs, ks, etas, betas = batch
    M, S, A, _ = P.shape
    B = M * runs
    mi = np.repeat(np.arange(M), runs)  # the MDP of each row
    Pb, Rb, rhob, Jb = P[mi], R[mi], rho[mi], J_star[mi]
    eye = np.eye(S)
    bi = np.arange(B)
    theta = np.zeros((B, S, A))  # theta_0 = 0
    Q = np.zeros((B, S, A))  # Q_0 = 0
    rng = np.random.default_rng(seed)
    gaps, errs = [], []

    def cat(probs, u):  # inverse-CDF draw, as in the reference
        return np.minimum((np.cumsum(probs, -1) < u[:, None]).sum(-1), probs.shape[-1] - 1)

    chunk, j = 4096, 0
    for k in progress(range(K + 1), desc="actor-critic (batch)", disable=disable):
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)  # pi_k = softmax(theta_k)
        P_pi = np.einsum("bsa,bsat->bst", pi, Pb)
        d = np.linalg.solve(eye - g * np.swapaxes(P_pi, 1, 2), ((1 - g) * rhob)[..., None])[..., 0]
        d = np.clip(d, 0.0, None)  # d^{pi_k}_rho
        while j < len(ks) and ks[j] == k:
            r_pi = np.einsum("bsa,bsa->bs", pi, Rb)
            V = np.linalg.solve(eye - g * P_pi, r_pi[..., None])[..., 0]
            Q_pi = Rb + g * np.einsum("bsat,bt->bsa", Pb, V)
            gaps.append(Jb - (V * rhob).sum(-1))
            errs.append(np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(1, 2))))
            j += 1
        if k == K:
            break
        if uniforms is not None:
            u = uniforms[k]
        else:
            if k % chunk == 0:
                block = rng.random((min(chunk, K - k), B, 4))
            u = block[k % chunk]
        s = cat(d, u[:, 0])  # (S): s_k ~ d^{pi_k}_rho
        pi_s = pi[bi, s]
        a = cat(pi_s, u[:, 1])  # a_k ~ pi_k(.|s_k)
        s1 = cat(Pb[bi, s, a], u[:, 2])  # s'_k ~ P(.|s_k, a_k)
        a1 = cat(pi[bi, s1], u[:, 3])  # a'_k ~ pi_k(.|s'_k)
        q_s = Q[bi, s]
        q_sa = q_s[bi, a]
        adv = q_sa - np.sum(pi_s * q_s, -1)  # (ac-adv)
        score = -pi_s
        score[bi, a] += 1.0
        theta[bi, s] += etas[k] * score * adv[:, None]  # (ac-actor), eta_k / (1 - gamma) folded in
        Q[bi, s, a] += betas[k] * (Rb[bi, s, a] + g * Q[bi, s1, a1] - q_sa)  # (ac-critic)
    return np.stack(gaps), np.stack(errs)


def _batch_torch(batch: _Batch, K, seed, uniforms, device, disable):
    import torch

    P, R, rho, g, J_star, runs, ks, etas, betas = batch

    from lab.core.runtime import resolve_device

    device = resolve_device(device, uniforms)
    dt = torch.float64
    M, S, A, _ = P.shape
    B = M * runs
    mi = torch.arange(M, device=device).repeat_interleave(runs)
    Pb = torch.as_tensor(P, device=device, dtype=dt)[mi]
    Rb = torch.as_tensor(R, device=device, dtype=dt)[mi]
    rhob = torch.as_tensor(rho, device=device, dtype=dt)[mi]
    Jb = torch.as_tensor(J_star, device=device, dtype=dt)[mi]
    if uniforms is not None:
        uniforms = torch.as_tensor(uniforms, dtype=dt).to(device)
        if tuple(uniforms.shape) != (K, B, 4):
            raise ValueError(
                f"uniforms must have shape ({K}, {B}, 4) (got {tuple(uniforms.shape)})"
            )
    etas_t = torch.as_tensor(etas, device=device, dtype=dt)
    betas_t = torch.as_tensor(betas, device=device, dtype=dt)
    eye = torch.eye(S, device=device, dtype=dt)
    bi = torch.arange(B, device=device)
    theta = torch.zeros(B, S, A, device=device, dtype=dt)
    Q = torch.zeros(B, S, A, device=device, dtype=dt)
    gen = torch.Generator(device=device).manual_seed(seed)
    gaps, errs = [], []

    def cat(probs, u):
        return (torch.cumsum(probs, -1) < u.unsqueeze(-1)).sum(-1).clamp_max(probs.shape[-1] - 1)

    chunk, j = 4096, 0
    for k in progress(range(K + 1), desc="actor-critic (batch, torch)", disable=disable):
        pi = torch.softmax(theta, -1)
        P_pi = torch.einsum("bsa,bsat->bst", pi, Pb)
        rhs = ((1 - g) * rhob).unsqueeze(-1)
        d = torch.linalg.solve(eye - g * P_pi.transpose(1, 2), rhs).squeeze(-1).clamp_min(0.0)
        while j < len(ks) and ks[j] == k:
            r_pi = (pi * Rb).sum(-1)
            V = torch.linalg.solve(eye - g * P_pi, r_pi.unsqueeze(-1)).squeeze(-1)
            Q_pi = Rb + g * torch.einsum("bsat,bt->bsa", Pb, V)
            gaps.append((Jb - (V * rhob).sum(-1)).cpu().numpy())
            err = torch.sqrt((d.unsqueeze(-1) * pi * (Q - Q_pi) ** 2).sum((1, 2)))
            errs.append(err.cpu().numpy())
            j += 1
        if k == K:
            break
        if uniforms is not None:
            u = uniforms[k]
        else:
            if k % chunk == 0:
                block = torch.rand(min(chunk, K - k), B, 4, generator=gen, device=device, dtype=dt)
            u = block[k % chunk]
        s = cat(d, u[:, 0])
        pi_s = pi[bi, s]
        a = cat(pi_s, u[:, 1])
        s1 = cat(Pb[bi, s, a], u[:, 2])
        a1 = cat(pi[bi, s1], u[:, 3])
        q_s = Q[bi, s]
        q_sa = q_s[bi, a]
        adv = q_sa - (pi_s * q_s).sum(-1)
        score = -pi_s
        score[bi, a] += 1.0
        theta[bi, s] += etas_t[k] * score * adv.unsqueeze(-1)
        Q[bi, s, a] += betas_t[k] * (Rb[bi, s, a] + g * Q[bi, s1, a1] - q_sa)
    return np.stack(gaps), np.stack(errs)


# ---------------------------------------------------------------------------------------------
# The exact-gradient baseline on many MDPs at once (the exponent study's "no critic, no noise")
# ---------------------------------------------------------------------------------------------
def exact_pg_many(
    mdps: Any,
    K: int = 20_000,
    actor: StepSchedule | tuple = StepSchedule(0.1, 2 / 3),  # noqa: B008
    *,
    eval_points: int = 40,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact softmax policy-gradient ascent with the actor's steps on ``M`` MDPs at once.

    ``theta_{k+1} = theta_k + eta_k grad J(theta_k)`` (eq. (ac-pg)), ``eta_k = actor(k)``: what the
    actor of :func:`single_timescale_ac_many` does in expectation with a perfect critic and no
    sampling noise. Its gap is the exponent study's baseline: with the same steps, it tells how
    much of the actor-critic's rate is the steps' own (``1 / sum_j eta_j``) and how much the
    critic costs. MDP ``i`` follows :func:`~lab.actor_critic.reference.exact_pg_ascent` exactly
    (tested).

    Parameters
    ----------
    mdps : TabularMDP or sequence of TabularMDP
        MDPs sharing ``n_states``, ``n_actions`` and ``gamma``.
    K : int
        Steps (>= 1).
    actor : StepSchedule or (c, p)
        The actor's step schedule.
    eval_points : int
        Evaluation points, log-spaced as in :func:`single_timescale_ac_many` (same ``k``).

    Returns
    -------
    k : ndarray (n_eval,)
        Steps at the evaluation points.
    gaps : ndarray (M, n_eval)
        Exact optimality gap ``J* - J(pi_k)`` of each MDP.

    See: book/actor_critic/01-gap-vs-samples.ipynb
    """
    from lab.core.checks import check_int

    from .reference import as_schedule

    mdps = _check_mdps(mdps)
    K = check_int("K", K, 1, 10**9)
    actor = as_schedule("actor", actor)
    eval_points = check_int("eval_points", eval_points, 2, 10_000)
    S, g = mdps[0].n_states, mdps[0].gamma
    P = np.stack([m.P for m in mdps])  # (M, S, A, S)
    R = np.stack([m.R for m in mdps])
    rho = np.stack([m.rho for m in mdps])
    J_star = np.array([optimum(m)[0] for m in mdps])
    I = np.eye(S)
    steps = actor(np.arange(K))
    ks = log_eval_points(K, eval_points)
    theta, gaps, j = np.zeros(R.shape), [], 0
    for k in range(K + 1):
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)
        P_pi = np.einsum("msa,msat->mst", pi, P)
        r_pi = np.einsum("msa,msa->ms", pi, R)
        V = np.linalg.solve(I - g * P_pi, r_pi[..., None])[..., 0]  # Bellman
        while j < len(ks) and ks[j] == k:
            gaps.append(J_star - np.einsum("ms,ms->m", V, rho))
            j += 1
        if k == K:
            break
        Q = R + g * np.einsum("msat,mt->msa", P, V)
        # occupancy: (I - gamma P_pi^T) d = (1 - gamma) rho
        d = np.linalg.solve(I - g * np.swapaxes(P_pi, -1, -2), ((1 - g) * rho)[..., None])[..., 0]
        d = np.clip(d, 0.0, None)
        # eq. (ac-pg): d(s) pi(a|s) (Q(s, a) - V(s)) / (1 - gamma), ascended with the actor's step
        theta = theta + steps[k] * d[..., None] * pi * (Q - V[..., None]) / (1.0 - g)
    return ks.astype(float), np.stack(gaps, 1)
