"""The torch fast path: batched POMO rollouts, REINFORCE training and greedy inference.

Mirrors ``reference.greedy_rollout_ref`` (numpy float64) line by line; runs on CPU or CUDA.

See: book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

import math
import time

import numpy as np

from lab.core.checks import check_bool, check_int, check_positive

from .model import TANH_CLIP
from .problems import MAX_DEMAND, CVRPBatch, _sampler, augment8


def _rollout(dec, h, batch: CVRPBatch, greedy: bool, starts, generator):
    """POMO rollouts of one decoder on a sub-batch. Returns lengths, logp, actions."""
    import torch

    B, N, d = h.shape
    n = N - 1
    nh = dec.h
    dev = h.device
    if starts is None:
        starts = torch.arange(1, N, device=dev).expand(B, n)
    P = starts.shape[-1]
    cap = batch.capacity[:, None]  # (B, 1)
    q = batch.demand[:, None, :].expand(B, P, N)  # (B, P, N)
    # keys/values computed once per instance (the POMO "set_kv")
    K = dec.wk(h).view(B, N, nh, d // nh).transpose(1, 2)  # (B, nh, N, dk)
    V = dec.wv(h).view(B, N, nh, d // nh).transpose(1, 2)
    bidx = torch.arange(B, device=dev)[:, None].expand(B, P)

    cur = torch.zeros(B, P, dtype=torch.long, device=dev)  # at the depot
    load = cap.expand(B, P).clone()  # remaining load (raw units)
    visited = torch.zeros(B, P, N, dtype=torch.bool, device=dev)
    length = h.new_zeros(B, P)
    logp = h.new_zeros(B, P)
    actions = []
    xy = batch.xy
    t = 0
    while True:
        done = visited[..., 1:].all(-1)  # every customer served
        if t > 0 and bool((done & (cur == 0)).all()):
            break
        if t == 0:
            nxt = starts  # POMO: rollout p starts at customer p (forced, no log-prob)
        else:
            # feasibility mask: visited customers, demand > remaining load, depot twice
            infeas = visited | (q > load[..., None])
            infeas[..., 0] = (cur == 0) & ~done
            infeas[..., 1:] |= done[..., None]
            # decoder: query from [h_last, load / C]; glimpse; pointer with 10 tanh clipping
            ctx = torch.cat([h[bidx, cur], (load / cap)[..., None]], dim=-1)  # (B, P, d+1)
            Q = dec.wq(ctx).view(B, P, nh, d // nh).transpose(1, 2)  # (B, nh, P, dk)
            u = Q @ K.transpose(-1, -2) / math.sqrt(d // nh)  # (B, nh, P, N)
            u = u.masked_fill(infeas[:, None], float("-inf"))
            g = dec.wo((torch.softmax(u, -1) @ V).transpose(1, 2).reshape(B, P, d))
            logits = TANH_CLIP * torch.tanh(g @ h.transpose(1, 2) / math.sqrt(d))
            logits = logits.masked_fill(infeas, float("-inf"))
            lp_all = torch.log_softmax(logits, dim=-1)
            if greedy:
                nxt = lp_all.argmax(-1)
            else:
                probs = lp_all.exp().view(B * P, N)
                nxt = torch.multinomial(probs, 1, generator=generator).view(B, P)
            lp = lp_all.gather(-1, nxt[..., None])[..., 0]
            finished = done & (cur == 0)
            logp = logp + torch.where(finished, torch.zeros_like(lp), lp)
        step = (xy[bidx, nxt] - xy[bidx, cur]).norm(dim=-1)
        length = length + step
        is_depot = nxt == 0
        load = torch.where(is_depot, cap.expand(B, P), load - q.gather(-1, nxt[..., None])[..., 0])
        visited = visited.scatter(-1, nxt[..., None], True)
        visited[..., 0] = False
        cur = nxt
        actions.append(nxt)
        t += 1
        if t > 4 * N + 4:  # pragma: no cover - guarded by the mask
            raise RuntimeError("rollout did not terminate: masking bug")
    return length, logp, torch.stack(actions, dim=-1)


def train_pomo(
    model,
    n: int = 20,
    capacity=30,
    steps: int | None = 100,
    seconds: float | None = None,
    batch: int = 32,
    lr: float = 1e-3,
    seed: int = 0,
    log_every: int = 10,
    progress_bar: bool = False,
) -> dict:
    """REINFORCE with the POMO shared baseline on freshly generated instances.

    Each step draws ``batch`` instances with ``n`` customers and capacities from
    ``capacity`` (a number: fixed-capacity training; ``(lo, hi)``: varied-capacity training,
    VCT, one capacity per instance; or a callable ``(batch, generator) -> (batch,)``), runs
    ``n`` sampled rollouts per instance (one per start customer) and descends
    ``mean_p (L_p - mean_p' L_p') log p(tau_p)``; Adam, gradient norm clipped to 1.

    Parameters
    ----------
    model : TinyPOMO
    n : int
        Customers per training instance.
    capacity : float, (int, int) or callable
        Capacity sampler (see above).
    steps : int, optional
        Number of gradient steps (deterministic for a fixed ``seed``).
    seconds : float, optional
        Wall-clock budget instead of (or as well as) ``steps``.
    batch : int
        Instances per step.
    lr : float
        Adam learning rate.
    seed : int
        Seeds the instance and sampling generators and the initial weights are *not*
        touched (build the model after ``torch.manual_seed``).
    log_every : int
        Record the loss and mean length every ``log_every`` steps.
    progress_bar : bool
        Show a progress bar.

    Returns
    -------
    dict
        ``step``, ``loss``, ``length`` (lists), ``steps`` done and ``seconds`` used.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    from lab.core.progress import progress

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a TinyPOMO (got {type(model).__name__})")
    if steps is None and seconds is None:
        raise ValueError("give steps or seconds (got neither)")
    if steps is not None:
        steps = check_int("steps", steps, 1)
    if seconds is not None:
        seconds = check_positive("seconds", seconds)
    n = check_int("n", n, 2, 500)
    batch = check_int("batch", batch, 1)
    lr = check_positive("lr", lr)
    seed = check_int("seed", seed, 0, 2**31 - 1)
    log_every = check_int("log_every", log_every, 1)
    check_bool("progress_bar", progress_bar)
    sampler = _sampler(capacity)
    dev = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    gs = torch.Generator(device=dev).manual_seed(seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hist: dict = {"step": [], "loss": [], "length": []}
    model.train()
    t0 = time.perf_counter()
    total = steps if steps is not None else 10**9
    it = progress(range(total), desc="train", disable=not progress_bar)
    done = 0
    for s in it:
        if seconds is not None and time.perf_counter() - t0 > seconds:
            break
        cap = sampler(batch, g)
        xy = torch.rand(batch, n + 1, 2, generator=g)
        q = torch.randint(1, MAX_DEMAND + 1, (batch, n + 1), generator=g).float()
        q[:, 0] = 0.0
        inst = CVRPBatch(xy, q, cap.float()).to(dev)
        length, logp = model(inst, greedy=False, generator=gs)
        adv = length - length.mean(dim=1, keepdim=True)  # POMO shared baseline
        loss = (adv.detach() * logp).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        done = s + 1
        if s % log_every == 0:
            hist["step"].append(s)
            hist["loss"].append(float(loss.detach()))
            hist["length"].append(float(length.mean()))
    hist["steps"] = done
    hist["seconds"] = time.perf_counter() - t0
    model.eval()
    return hist


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
    return _best(model, batch, augment, starts)[0]


def _best(model, batch, augment=False, starts="all"):
    import torch

    if not isinstance(batch, CVRPBatch):
        raise TypeError(f"batch must be a CVRPBatch (got {type(batch).__name__})")
    check_bool("augment", augment)
    from lab.core.checks import check_choice

    check_choice("starts", starts, ["all", "single"])
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
    _, acts = _best(model, batch, augment)
    return [actions_to_routes(a) for a in acts.cpu().numpy()]
