"""The torch fast path: batched POMO rollouts, REINFORCE training and greedy inference.

The rollout itself is ``model.PomoDecoder.forward`` (mirrored by ``reference.greedy_rollout``
in numpy float64); runs on CPU or CUDA.

See: book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

import time

import numpy as np

from lab.core.checks import check_bool, check_choice, check_instance

from .problems import MAX_DEMAND, CVRPBatch, augment8, capacity_sampler
from .settings import TrainSettings

__all__ = ["greedy_rollout", "train_pomo", "evaluate", "decode_routes", "actions_to_routes"]


def greedy_rollout(model, batch: CVRPBatch, starts=None, device=None):
    """Greedy POMO rollouts, batched: the fast path of ``reference.greedy_rollout``.

    Parameters
    ----------
    model : TinyPOMO
    batch : CVRPBatch
    starts : torch.LongTensor, optional
        ``(B, P)`` first customers (default: every customer, ``P = n``).
    device : torch.device, optional
        Where to run (default: the model's device).

    Returns
    -------
    tuple of torch.Tensor
        Tour lengths ``(B, P)`` and actions ``(B, P, T)`` (depot = 0, padded with 0).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a TinyPOMO (got {type(model).__name__})")
    check_instance("batch", batch, CVRPBatch)
    dev = next(model.parameters()).device if device is None else torch.device(device)
    model = model.to(dev)
    was = model.training
    model.eval()
    with torch.no_grad():
        st = None if starts is None else starts.to(dev)
        length, _, actions = model(batch.to(dev), greedy=True, starts=st, return_actions=True)
    model.train(was)
    return length, actions


def train_pomo(model, settings: TrainSettings | None = None) -> dict:
    """REINFORCE with the POMO shared baseline on freshly generated instances.

    Each step draws ``settings.batch`` instances with ``settings.n`` customers and capacities
    from ``settings.capacity`` (a number: fixed-capacity training; ``(lo, hi)``: varied
    capacity training, VCT, one capacity per instance; or a callable), runs ``n`` sampled
    rollouts per instance (one per start customer) and descends the loss of
    ``reference.pomo_loss``, ``mean_p (L_p - mean_p' L_p') log p(tau_p)``; Adam, gradient
    norm clipped to 1. The generators are seeded from ``settings.seed``; the initial weights
    are not touched (build the model after ``torch.manual_seed``).

    Parameters
    ----------
    model : TinyPOMO
    settings : TrainSettings

    Returns
    -------
    dict
        ``step``, ``loss``, ``length`` (lists), ``steps`` done and ``seconds`` used.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    settings = TrainSettings() if settings is None else settings
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a TinyPOMO (got {type(model).__name__})")
    check_instance("settings", settings, TrainSettings)
    return _train(model, settings)


def _train(model, s: TrainSettings) -> dict:
    """``train_pomo``'s loop (arguments trusted)."""
    import torch

    from lab.core.progress import progress

    sampler = capacity_sampler(s.capacity)
    dev = next(model.parameters()).device
    g = torch.Generator().manual_seed(s.seed)
    gs = torch.Generator(device=dev).manual_seed(s.seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    hist: dict = {"step": [], "loss": [], "length": []}
    model.train()
    t0 = time.perf_counter()
    total = s.steps if s.steps is not None else 10**9
    done = 0
    for step in progress(range(total), desc="train", disable=not s.progress_bar):
        if s.seconds is not None and time.perf_counter() - t0 > s.seconds:
            break
        loss, length = _train_step(model, opt, sampler(s.batch, g), s, g, gs, dev)
        done = step + 1
        if step % s.log_every == 0:
            hist["step"].append(step)
            hist["loss"].append(float(loss.detach()))
            hist["length"].append(float(length.mean()))
    hist["steps"] = done
    hist["seconds"] = time.perf_counter() - t0
    model.eval()
    return hist


def _train_step(model, opt, cap, s: TrainSettings, g, gs, dev) -> tuple:
    """One REINFORCE step on a fresh batch with capacities ``cap``: (loss, lengths)."""
    import torch

    xy = torch.rand(s.batch, s.n + 1, 2, generator=g)
    q = torch.randint(1, MAX_DEMAND + 1, (s.batch, s.n + 1), generator=g).float()
    q[:, 0] = 0.0
    inst = CVRPBatch(xy, q, cap.float()).to(dev)
    length, logp = model(inst, greedy=False, generator=gs)
    adv = length - length.mean(dim=1, keepdim=True)  # POMO shared baseline, eq. (cvrp-pomo)
    loss = (adv.detach() * logp).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss, length


def evaluate(model, batch: CVRPBatch, augment: bool = False, starts: str = "all"):
    """Greedy POMO evaluation: best tour over all start customers (and 8 augmentations).

    Parameters
    ----------
    model : TinyPOMO
    batch : CVRPBatch
    augment : bool
        Also decode the 8 symmetric copies of each instance and keep the best.
    starts : {"all", "single"}
        ``"all"``: one greedy rollout from each customer (POMO); ``"single"``: one rollout
        starting at customer 1 (a plain greedy decoder).

    Returns
    -------
    torch.Tensor
        ``(B,)`` best tour length per instance.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    _check_decoding(batch, augment, starts)
    return best_tours(model, batch, augment, starts)[0]


def _check_decoding(batch, augment, starts) -> None:
    check_instance("batch", batch, CVRPBatch)
    check_bool("augment", augment)
    check_choice("starts", starts, ["all", "single"])


def best_tours(model, batch, augment=False, starts="all"):
    """Best greedy POMO length and its actions per instance (arguments trusted)."""
    import torch

    dev = next(model.parameters()).device
    batch = batch.to(dev)
    B = len(batch)
    if augment:
        batch = CVRPBatch(augment8(batch.xy), batch.demand.repeat(8, 1), batch.capacity.repeat(8))
    st = None
    if starts == "single":
        st = torch.ones(len(batch), 1, dtype=torch.long, device=dev)
    was = model.training
    model.eval()
    with torch.no_grad():
        length, _, actions = model(batch, greedy=True, starts=st, return_actions=True)
    model.train(was)
    P, T = length.shape[1], actions.shape[-1]
    length = length.view(-1, B, P).permute(1, 0, 2).reshape(B, -1)
    actions = actions.view(-1, B, P, T).permute(1, 0, 2, 3).reshape(B, -1, T)
    best, arg = length.min(dim=1)
    return best, actions[torch.arange(B, device=dev), arg]


def actions_to_routes(actions) -> list[list[int]]:
    """Split one action sequence (depot = 0) into routes of customer indices.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    routes, cur = [], []
    for a in np.asarray(actions).tolist():
        if a == 0:
            if cur:
                routes.append(cur)
            cur = []
        else:
            cur.append(int(a))
    if cur:
        routes.append(cur)
    return routes


def decode_routes(model, batch: CVRPBatch, augment: bool = False) -> list[list[list[int]]]:
    """The model's best greedy POMO solution of each instance, as routes.

    Each solution is a list of routes; a route lists customer indices (``1..n``) in visiting
    order, the depot at both ends implicit.

    Parameters
    ----------
    model : TinyPOMO
    batch : CVRPBatch
    augment : bool
        Use the 8 augmentations as well.

    Returns
    -------
    list
        ``B`` solutions.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    _check_decoding(batch, augment, "all")
    _, acts = best_tours(model, batch, augment)
    return [actions_to_routes(a) for a in acts.cpu().numpy()]
