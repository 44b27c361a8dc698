"""Instances, the tiny POMO model (fast path, batched torch) and its REINFORCE training.

See ``lab/cvrp/__init__.py`` for the equations; this module is the torch fast path. The
numpy reference rollout that mirrors it line by line lives in ``lab/cvrp/reference.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_int, check_positive

MAX_DEMAND = 9  # demands are uniform on {1, ..., 9} (the POMO / LEHD generator)
TANH_CLIP = 10.0  # logits = 10 tanh(u), as in POMO


# ----------------------------------------------------------------------------------------
# Instances
# ----------------------------------------------------------------------------------------
@dataclass
class CVRPBatch:
    """A batch of CVRP instances; node 0 is the depot.

    Attributes
    ----------
    xy : torch.Tensor
        ``(B, n + 1, 2)`` coordinates in the unit square, depot first.
    demand : torch.Tensor
        ``(B, n + 1)`` integer-valued demands (float tensor), ``demand[:, 0] = 0``.
    capacity : torch.Tensor
        ``(B,)`` vehicle capacity per instance.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """

    xy: Any
    demand: Any
    capacity: Any

    def __post_init__(self) -> None:
        import torch

        xy, demand, cap = self.xy, self.demand, self.capacity
        for name, t in (("xy", xy), ("demand", demand), ("capacity", cap)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor (got {type(t).__name__})")
        if xy.ndim != 3 or xy.shape[-1] != 2 or xy.shape[1] < 2:
            raise ValueError(
                f"xy must have shape (B, n + 1, 2) with n >= 1 (got {tuple(xy.shape)})"
            )
        if demand.shape != xy.shape[:2]:
            raise ValueError(
                f"demand must have shape {tuple(xy.shape[:2])} (got {tuple(demand.shape)})"
            )
        if cap.shape != xy.shape[:1]:
            raise ValueError(f"capacity must have shape ({xy.shape[0]},) (got {tuple(cap.shape)})")
        if not bool(torch.isfinite(xy).all()):
            raise ValueError("xy must be finite (got NaN or inf coordinates)")
        if not bool(torch.isfinite(demand).all()) or bool((demand[:, 1:] <= 0).any()):
            raise ValueError("demand must be finite and > 0 for every customer")
        if bool((demand[:, 0] != 0).any()):
            raise ValueError("demand[:, 0] is the depot and must be 0")
        if not bool(torch.isfinite(cap).all()) or bool((cap <= 0).any()):
            raise ValueError(f"capacity must be > 0 (got min {float(cap.min()):g})")
        worst = demand.max(dim=1).values
        if bool((worst > cap).any()):
            i = int(torch.nonzero(worst > cap)[0, 0])
            raise ValueError(
                f"instance {i} is infeasible: a demand of {float(worst[i]):g} exceeds "
                f"capacity {float(cap[i]):g} (every demand must be <= capacity)"
            )

    @property
    def n(self) -> int:
        """Number of customers."""
        return int(self.xy.shape[1]) - 1

    def __len__(self) -> int:
        return int(self.xy.shape[0])

    def to(self, device) -> CVRPBatch:
        """The same batch on ``device``."""
        return CVRPBatch(self.xy.to(device), self.demand.to(device), self.capacity.to(device))

    def subset(self, index) -> CVRPBatch:
        """Instances ``index`` (a slice, list or index tensor)."""
        return CVRPBatch(self.xy[index], self.demand[index], self.capacity[index])

    def with_capacity(self, capacity) -> CVRPBatch:
        """The same customers with another capacity (scalar or ``(B,)``)."""
        return CVRPBatch(self.xy, self.demand, _capacity_tensor(capacity, len(self), self.xy))


def _capacity_tensor(capacity, batch: int, like):
    import torch

    if isinstance(capacity, torch.Tensor):
        cap = capacity.to(dtype=like.dtype, device=like.device).reshape(-1)
    elif np.ndim(capacity) == 0:
        cap = torch.full((batch,), check_positive("capacity", capacity), dtype=like.dtype)
    else:
        cap = torch.as_tensor(np.asarray(capacity, dtype=np.float64), dtype=like.dtype)
    cap = cap.to(like.device)
    if cap.numel() == 1 and batch > 1:
        cap = cap.expand(batch).clone()
    if cap.shape != (batch,):
        raise ValueError(
            f"capacity must be a scalar or have shape ({batch},) (got {tuple(cap.shape)})"
        )
    return cap


def generate_cvrp(batch: int, n: int, capacity, seed: int = 0, device=None) -> CVRPBatch:
    """Random CVRP instances: uniform depot and customers, demands uniform on ``{1..9}``.

    Parameters
    ----------
    batch : int
        Number of instances.
    n : int
        Customers per instance.
    capacity : float or array-like
        Vehicle capacity, a scalar or one value per instance; must be ``>= 9`` (the largest
        possible demand), otherwise an instance could be infeasible.
    seed : int
        Seed of the instance generator (a ``torch.Generator``); the same seed gives the same
        customers for every capacity, so one instance can be solved at many tightness degrees.
    device : torch.device, optional
        Where the tensors live (default CPU).

    Returns
    -------
    CVRPBatch

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    import torch

    batch = check_int("batch", batch, 1)
    n = check_int("n", n, 1, 10_000)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(batch, n + 1, 2, generator=g)
    q = torch.randint(1, MAX_DEMAND + 1, (batch, n + 1), generator=g).float()
    q[:, 0] = 0.0
    cap = _capacity_tensor(capacity, batch, xy)
    if bool((cap < MAX_DEMAND).any()) or not bool(torch.isfinite(cap).all()):
        raise ValueError(
            f"capacity must be finite and >= {MAX_DEMAND} (the largest demand) "
            f"(got min {float(cap.min()):g})"
        )
    out = CVRPBatch(xy, q, cap)
    return out if device is None else out.to(device)


def augment8(xy):
    """The 8 symmetries of the unit square applied to ``xy`` ``(B, N, 2)`` -> ``(8B, N, 2)``.

    Distances are preserved, so tour lengths are unchanged; POMO decodes all 8 copies.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import torch

    x, y = xy[..., :1], xy[..., 1:]
    views = [(x, y), (1 - x, y), (x, 1 - y), (1 - x, 1 - y)]
    views += [(b, a) for a, b in views]
    return torch.cat([torch.cat(v, dim=-1) for v in views], dim=0)


# ----------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------
def route_to_expert(capacity, edges: Sequence[float] | None):
    """Expert index of each instance from its capacity (hard routing, no learned gate).

    Intervals ``(0, e_1], (e_1, e_2], ..., (e_k, inf)``: a capacity on a boundary goes to
    the lower interval.

    Parameters
    ----------
    capacity : torch.Tensor
        ``(B,)`` capacities.
    edges : sequence of float or None
        Increasing interval boundaries; ``None`` or empty means one expert.

    Returns
    -------
    torch.LongTensor
        ``(B,)`` expert indices in ``[0, len(edges)]``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    cap = torch.as_tensor(capacity)
    if not edges:
        return torch.zeros(cap.shape, dtype=torch.long, device=cap.device)
    e = [check_positive(f"edges[{i}]", v) for i, v in enumerate(edges)]
    if any(b <= a for a, b in zip(e, e[1:], strict=False)):
        raise ValueError(f"edges must be strictly increasing (got {list(edges)})")
    bounds = torch.tensor(e, dtype=cap.dtype if cap.is_floating_point() else torch.float64)
    return torch.bucketize(cap.to(bounds.dtype), bounds.to(cap.device), right=False)


def _make_modules():
    import torch
    from torch import nn

    class MHA(nn.Module):
        def __init__(self, d: int, heads: int):
            super().__init__()
            self.h = heads
            self.wq = nn.Linear(d, d, bias=False)
            self.wk = nn.Linear(d, d, bias=False)
            self.wv = nn.Linear(d, d, bias=False)
            self.wo = nn.Linear(d, d)

        def forward(self, x):
            B, N, d = x.shape
            h = self.h

            def split(t):
                return t.view(B, N, h, d // h).transpose(1, 2)

            q, k, v = split(self.wq(x)), split(self.wk(x)), split(self.wv(x))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
            return self.wo((att @ v).transpose(1, 2).reshape(B, N, d))

    class EncoderLayer(nn.Module):
        def __init__(self, d: int, heads: int, ff: int):
            super().__init__()
            self.att = MHA(d, heads)
            self.n1 = nn.LayerNorm(d)
            self.ff1 = nn.Linear(d, ff)
            self.ff2 = nn.Linear(ff, d)
            self.n2 = nn.LayerNorm(d)

        def forward(self, x):
            x = self.n1(x + self.att(x))
            return self.n2(x + self.ff2(torch.relu(self.ff1(x))))

    class Decoder(nn.Module):
        """POMO decoder: query from (last node, remaining load / C), one glimpse, pointer."""

        def __init__(self, d: int, heads: int):
            super().__init__()
            self.h = heads
            self.wq = nn.Linear(d + 1, d, bias=False)
            self.wk = nn.Linear(d, d, bias=False)
            self.wv = nn.Linear(d, d, bias=False)
            self.wo = nn.Linear(d, d)

    return MHA, EncoderLayer, Decoder


_MODULES = None


def _modules():
    global _MODULES
    if _MODULES is None:
        _MODULES = _make_modules()
    return _MODULES


_CLASS = None


def _tinypomo_class():
    global _CLASS
    if _CLASS is None:
        _CLASS = _build_tinypomo_class()
    return _CLASS


def _build_tinypomo_class():
    import torch
    from torch import nn

    _, EncoderLayer, Decoder = _modules()

    class _TinyPOMO(nn.Module):
        """The module built by ``TinyPOMO`` (defined lazily so importing lab.cvrp stays cheap)."""

        def __init__(self, d, heads, layers, ff, experts, edges):
            super().__init__()
            self.config = {
                "d": d,
                "heads": heads,
                "layers": layers,
                "ff": ff,
                "experts": experts,
                "edges": list(edges),
            }
            self.embed_depot = nn.Linear(2, d)  # (x, y)
            self.embed_cust = nn.Linear(3, d)  # (x, y, q / C): capacity-normalised demand
            self.encoder = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))
            self.decoders = nn.ModuleList(Decoder(d, heads) for _ in range(experts))

        # ---- encoder ------------------------------------------------------------------
        def encode(self, batch):
            f = node_features(batch)
            h = torch.cat([self.embed_depot(f[:, :1, :2]), self.embed_cust(f[:, 1:])], dim=1)
            for layer in self.encoder:
                h = layer(h)
            return h

        def expert_of(self, capacity):
            return route_to_expert(capacity, self.config["edges"])

        # ---- full forward: encode once, dispatch sub-batches to experts, scatter back --
        def forward(self, batch, greedy=False, starts=None, generator=None, return_actions=False):
            h = self.encode(batch)
            B, N = batch.xy.shape[:2]
            P = N - 1 if starts is None else int(starts.shape[-1])
            expert = self.expert_of(batch.capacity)
            outs = [None] * len(self.decoders)
            for k, dec in enumerate(self.decoders):
                idx = torch.nonzero(expert == k).flatten()
                if idx.numel() == 0:
                    continue  # an expert with no instance is never called
                st = None if starts is None else starts[idx]
                outs[k] = (idx, _rollout(dec, h[idx], batch.subset(idx), greedy, st, generator))
            length = h.new_zeros(B, P)
            logp = h.new_zeros(B, P)
            T = max(o[1][2].shape[-1] for o in outs if o is not None)
            actions = torch.zeros(B, P, T, dtype=torch.long, device=h.device)
            for o in outs:
                if o is None:
                    continue
                idx, (ln, lp, act) = o
                length[idx], logp[idx] = ln, lp  # scatter back in the original order
                actions[idx, :, : act.shape[-1]] = act
            return (length, logp, actions) if return_actions else (length, logp)

    return _TinyPOMO


def node_features(batch):
    """Node features ``(x, y, q / C)``; the depot's third feature is 0.

    Dividing by the capacity is what lets the model perceive tightness: the same customers
    with doubled demands and doubled capacity give identical features.

    Parameters
    ----------
    batch : CVRPBatch

    Returns
    -------
    torch.Tensor
        ``(B, n + 1, 3)``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import torch

    if not isinstance(batch, CVRPBatch):
        raise TypeError(f"batch must be a CVRPBatch (got {type(batch).__name__})")
    return torch.cat([batch.xy, (batch.demand / batch.capacity[:, None])[..., None]], dim=-1)


def TinyPOMO(
    d: int = 64,
    heads: int = 4,
    layers: int = 2,
    ff: int = 128,
    experts: int = 1,
    edges: Sequence[float] | None = None,
):
    """A tiny POMO-style attention model for CVRP, optionally with a multi-expert decoder.

    Encoder: linear embeddings of the depot ``(x, y)`` and of customers ``(x, y, q / C)``,
    then ``layers`` transformer layers (multi-head attention, residual, LayerNorm, ReLU
    feed-forward). Decoder (one per expert): query from the last node's embedding and the
    remaining load as a fraction of ``C``, one multi-head glimpse, a single-head pointer with
    ``10 tanh`` clipping and the feasibility mask. With ``experts > 1`` each instance goes
    to the decoder of its capacity interval (``route_to_expert``); the encoder is shared.

    Calling the model: ``model(batch, greedy=False, starts=None)`` returns tour lengths and
    sum of log-probabilities, both ``(B, P)`` for ``P`` POMO rollouts (default: one start at
    each customer).

    Parameters
    ----------
    d, heads, layers, ff : int
        Embedding size, attention heads, encoder layers, feed-forward width.
    experts : int
        Number of decoder heads (1 = plain POMO).
    edges : sequence of float, optional
        ``experts - 1`` increasing capacity boundaries (required when ``experts > 1``).

    Returns
    -------
    torch.nn.Module

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    d = check_int("d", d, 4, 1024)
    heads = check_int("heads", heads, 1, 64)
    if d % heads:
        raise ValueError(f"d must be divisible by heads (got d={d}, heads={heads})")
    layers = check_int("layers", layers, 0, 12)
    ff = check_int("ff", ff, 1, 8192)
    experts = check_int("experts", experts, 1, 16)
    edges = [] if edges is None else [check_positive("edges", e) for e in edges]
    if len(edges) != experts - 1:
        raise ValueError(
            f"edges must hold experts - 1 = {experts - 1} boundaries (got {len(edges)})"
        )
    if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"edges must be strictly increasing (got {edges})")
    return _tinypomo_class()(d, heads, layers, ff, experts, edges)


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


# ----------------------------------------------------------------------------------------
# Capacity samplers and training
# ----------------------------------------------------------------------------------------
def sample_capacity(batch: int, lo: int, hi: int, generator=None):
    """Per-instance capacities uniform on the integers ``{lo, ..., hi}`` (VCT).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import torch

    batch = check_int("batch", batch, 1)
    lo = check_int("lo", lo, MAX_DEMAND)
    hi = check_int("hi", hi, lo)
    return torch.randint(lo, hi + 1, (batch,), generator=generator).float()


def _sampler(capacity) -> Callable:
    if callable(capacity):
        return capacity
    if isinstance(capacity, tuple | list):
        if len(capacity) != 2:
            raise ValueError(f"capacity range must be (lo, hi) (got {capacity})")
        lo, hi = int(capacity[0]), int(capacity[1])
        check_int("capacity[0]", capacity[0], MAX_DEMAND)
        check_int("capacity[1]", capacity[1], lo)
        return lambda b, g: sample_capacity(b, lo, hi, g)
    c = check_positive("capacity", capacity)
    if c < MAX_DEMAND:
        raise ValueError(f"capacity must be >= {MAX_DEMAND} (got {c:g})")
    import torch

    return lambda b, g: torch.full((b,), c)


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
