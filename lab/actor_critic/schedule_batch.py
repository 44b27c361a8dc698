"""Many step-size schedules on one MDP in one batch: the engines of
:func:`lab.actor_critic.experiments.run_grid` (the widgets' precomputed runs).

``ac_many_schedules`` runs the reference steps of
:func:`~lab.actor_critic.reference.single_timescale_ac` for ``C`` schedules at once, on the
reference's own draws; ``pg_many_schedules`` runs :func:`~lab.actor_critic.reference.exact_pg_ascent`
for ``C`` actor schedules at once. Both are bit-equal to the one-schedule kernels (tested). They
take arguments ``run_grid`` has checked (``RunSettings``), so they check nothing: their public
face is ``run_grid``, and nothing here is exported.

See: book/actor_critic/01-gap-vs-samples.ipynb
"""

from __future__ import annotations

import numpy as np

from .mdp import evaluate_pi, gradient_pi, occupancy_pi, optimum
from .reference import (
    ACHistory,
    PGHistory,
    ac_update_inplace,
    categorical,
    log_eval_points,
)

__all__: list[str] = []


def ac_many_schedules(mdp, K, actors, critics, runs, seed, eval_points):
    """:func:`single_timescale_ac` (occupancy sampler) for ``C`` schedules on one MDP: rows
    ``c * runs .. (c + 1) * runs - 1`` are schedule ``c``'s runs, all on ``seed``'s uniforms."""
    C = len(actors)
    B = C * runs
    S, A, g = mdp.n_states, mdp.n_actions, mdp.gamma
    J_star, a_star = optimum(mdp)
    rng = np.random.default_rng(seed)
    rows = np.tile(np.arange(runs), C)  # the run (column of the uniforms) of each row
    eta = np.repeat(np.stack([a(np.arange(K)) for a in actors], 1), runs, 1)  # (K, B)
    beta = np.repeat(np.stack([c(np.arange(K)) for c in critics], 1), runs, 1)
    theta, Q = np.zeros((B, S, A)), np.zeros((B, S, A))
    ks = log_eval_points(K, eval_points)
    rec_gap, rec_err, rec_p = [], [], []

    def record():
        pi = np.exp(theta - theta.max(-1, keepdims=True))
        pi /= pi.sum(-1, keepdims=True)
        V, Q_pi = evaluate_pi(mdp, pi)
        d = occupancy_pi(mdp, pi)
        rec_gap.append(J_star - V @ mdp.rho)
        rec_err.append(np.sqrt(np.sum(d[..., None] * pi * (Q - Q_pi) ** 2, axis=(-2, -1))))
        rec_p.append(pi[:, np.arange(S), a_star].reshape(C, runs, S).mean(1))

    chunk, j = 4096, 0
    for k in range(K):
        while j < len(ks) and ks[j] == k:
            record()
            j += 1
        if k % chunk == 0:  # the reference's draws, shared by every schedule
            block = rng.random((min(chunk, K - k), runs, 4))[:, rows]
        u = block[k % chunk]
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)
        R_idx = np.arange(B)
        s = categorical(occupancy_pi(mdp, pi), u[:, 0])
        a = categorical(pi[R_idx, s], u[:, 1])
        s1 = categorical(mdp.P[s, a], u[:, 2])
        a1 = categorical(pi[R_idx, s1], u[:, 3])
        ac_update_inplace(theta, Q, pi, s, a, s1, a1, mdp.R[s, a], g, eta[k][:, None], beta[k])
    while j < len(ks):
        record()
        j += 1
    gaps = np.stack(rec_gap, 1).reshape(C, runs, -1)
    errs = np.stack(rec_err, 1).reshape(C, runs, -1)
    p_opt = np.stack(rec_p, 1)  # (C, n_eval, S)
    th, Qs = theta.reshape(C, runs, S, A), Q.reshape(C, runs, S, A)
    return [
        ACHistory(k=ks.astype(float), samples=ks.astype(float), gaps=gaps[c],
                  critic_errors=errs[c], optimal_action_prob=p_opt[c], theta=th[c], Q=Qs[c],
                  J_star=J_star, config=dict(actor=actors[c], critic=critics[c], runs=runs,
                                             seed=seed, sampler="occupancy", K=K))
        for c in range(C)
    ]  # fmt: skip


def pg_many_schedules(mdp, K, actors, eval_points):
    """:func:`exact_pg_ascent` with ``C`` actor schedules at once (theta of shape (C, S, A))."""
    C = len(actors)
    S, A = mdp.n_states, mdp.n_actions
    steps = np.stack([a(np.arange(K)) for a in actors], 1)  # (K, C)
    theta = np.zeros((C, S, A))
    J_star, a_star = optimum(mdp)
    ks = log_eval_points(K, eval_points)
    gaps, norms, p_opt = [], [], []
    j = 0
    for k in range(K + 1):
        z = np.exp(theta - theta.max(-1, keepdims=True))
        pi = z / z.sum(-1, keepdims=True)
        grad = gradient_pi(mdp, pi)
        while j < len(ks) and ks[j] == k:
            V, _ = evaluate_pi(mdp, pi)
            gaps.append([J_star - v @ mdp.rho for v in V])  # as the reference, per row
            norms.append([np.linalg.norm(gr) for gr in grad])
            p_opt.append(pi[:, np.arange(S), a_star])
            j += 1
        if k < K:
            theta = theta + steps[k][:, None, None] * grad
    gaps, norms, p_opt = np.stack(gaps, 1), np.asarray(norms).T, np.stack(p_opt, 1)
    return [
        PGHistory(k=ks.astype(float), gap=gaps[c], grad_norm=norms[c],
                  optimal_action_prob=p_opt[c], theta=theta[c], J_star=J_star)
        for c in range(C)
    ]  # fmt: skip
