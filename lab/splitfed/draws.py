"""MU-SplitFed's seeded draws: participants, batches and the ZO directions of a round.

Every draw is a function of ``(seed, round, client)`` only, so that the reference loop
(:mod:`lab.splitfed.reference`), the batched fast path (:mod:`lab.splitfed.fast`) and the gloo
processes (:mod:`lab.splitfed.dist`) draw the same numbers, and a client regenerates its
direction ``u_c`` from the seed instead of receiving it.

See: book/splitfed/01-zeroth-order-split.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__: list[str] = []


def draw_participants(cfg: Any, t: int, available: list[int] | None = None) -> list[int]:
    """Clients sampled in round ``t`` (sorted); ``available`` restricts the pool."""
    pool = list(range(cfg.clients)) if available is None else list(available)
    k = min(cfg.participants, len(pool))
    rng = np.random.default_rng([cfg.seed, t, 104729])
    return sorted(int(pool[i]) for i in rng.choice(len(pool), size=k, replace=False))


def draw_batch(cfg: Any, t: int, m: int, n: int) -> np.ndarray:
    """Indices of client ``m``'s batch in round ``t`` (``n`` points held by the client)."""
    rng = np.random.default_rng([cfg.seed, t, m, 1])
    return rng.choice(n, size=cfg.batch, replace=n < cfg.batch)


def sphere_rows(rng: np.random.Generator, shape: tuple, dtype: Any):
    """Rows uniform on the ``sqrt(d)``-sphere, drawn in float64 by numpy (fast) -> torch."""
    import torch

    g = rng.standard_normal(shape)
    g *= np.sqrt(shape[-1]) / np.linalg.norm(g, axis=-1, keepdims=True)
    return torch.from_numpy(g).to(dtype)


def client_direction(cfg: Any, t: int, m: int, d: int, dtype: Any):
    """``u_c`` of client ``m`` in round ``t``: seeded by ``(seed, t, m)``, never sent."""
    return sphere_rows(np.random.default_rng([cfg.seed, t, m, 2]), (d,), dtype)


def server_directions(cfg: Any, t: int, m: int, tau: int, d: int, dtype: Any):
    """``u_s^{t,0..tau-1}`` of replica ``m`` in round ``t`` (shape ``[tau, d]``)."""
    return sphere_rows(np.random.default_rng([cfg.seed, t, m, 3]), (tau, d), dtype)
