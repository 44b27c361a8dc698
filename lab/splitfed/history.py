"""The record of a MU-SplitFed run (:class:`History`) and the bytes a round sends (:func:`round_bytes`).

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["History"]


@dataclass
class History:
    """What a run recorded, one entry per round unless stated.

    Attributes
    ----------
    tau, clock, batch_loss, bytes_up, bytes_down, server_steps, participants : list
        Per round: the ``tau`` used, the (simulated or measured) time at the end of the round,
        the mean participant batch loss, bytes sent up / down, server ZO steps taken, and the
        client indices that were aggregated.
    eval_round, loss, acc : list
        Rounds at which ``eval_fn`` ran and its ``loss`` / ``acc`` values.
    xc, xs : torch.Tensor
        Final flat client and server parameters.
    lost : list
        Clients (0-based) that were lost during the run (distributed engine).
    events : list
        Timeline records ``(who, what, round, start, end)`` (distributed engine).
    info : dict
        Anything else (wall time, engine, world size).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """

    tau: list = field(default_factory=list)
    clock: list = field(default_factory=list)
    batch_loss: list = field(default_factory=list)
    bytes_up: list = field(default_factory=list)
    bytes_down: list = field(default_factory=list)
    server_steps: list = field(default_factory=list)
    participants: list = field(default_factory=list)
    eval_round: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    xc: Any = None
    xs: Any = None
    lost: list = field(default_factory=list)
    events: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The per-round and per-evaluation lists as numpy arrays."""
        keys = ["tau", "clock", "batch_loss", "bytes_up", "bytes_down", "server_steps"]
        keys += ["eval_round", "loss", "acc"]
        return {k: np.asarray(getattr(self, k), dtype=float) for k in keys}


def round_bytes(cfg, dc, hdim, itemsize, n):
    """Bytes up and down in a round with ``n`` clients: ``h, h+-`` and labels, ``x_c``; ``delta_c``."""
    up = n * (3 * cfg.batch * hdim * itemsize + cfg.batch * 8 + dc * itemsize)
    down = n * (dc * itemsize + itemsize)
    return up, down


def record_round(hist, tau, clock, losses, up, down, steps, part, dead):
    """Append one round's bookkeeping to ``hist`` (the engines' shared record)."""
    hist.tau.append(tau)
    hist.clock.append(clock)
    hist.batch_loss.append(float(np.mean(losses)) if losses else float("nan"))
    hist.bytes_up.append(up)
    hist.bytes_down.append(down)
    hist.server_steps.append(steps)
    hist.participants.append([m for m in part if m not in dead])


def maybe_eval(hist, eval_fn, cfg, t, xc, xs) -> bool:
    """Evaluate every ``cfg.eval_every`` rounds and after the last; ``True`` when the run
    should stop (``cfg.stop_loss`` reached)."""
    if eval_fn is None or not ((t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds):
        return False
    res = eval_fn(xc, xs)
    hist.eval_round.append(t + 1)
    hist.loss.append(float(res.get("loss", float("nan"))))
    hist.acc.append(float(res.get("acc", float("nan"))))
    return cfg.stop_loss is not None and hist.loss[-1] <= cfg.stop_loss
