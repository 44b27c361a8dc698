"""The tiny POMO model: capacity-normalised features, encoder, capacity experts, decoder.

See ``lab/cvrp/__init__.py`` for the equations. The model follows the official MoE layout
(``SINGLEModel.py`` of CIAM-Group/Rethinking_Constraint_Tightness): shared encoder layers,
then one stack of transformer layers per capacity interval (the experts, ``mixture_forward``
routes each instance to one), then ONE shared POMO decoder. ``PomoDecoder.forward`` is the
batched rollout; training and inference live in ``fast.py``, the numpy mirror of one greedy
rollout in ``reference.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn

from lab.core.checks import check_instance, check_int, check_positive

from .problems import CVRPBatch

__all__ = [
    "TANH_CLIP",
    "route_to_expert",
    "mixture_forward",
    "node_features",
    "MHA",
    "EncoderLayer",
    "PomoDecoder",
    "TinyPOMO",
]

TANH_CLIP = 10.0  # logits = 10 tanh(u), as in POMO


def route_to_expert(capacity, edges: Sequence[float] | None):
    """Expert index of each instance from its capacity (hard routing, no learned gate).

    Intervals ``(0, e_1], (e_1, e_2], ..., (e_k, inf)``: a capacity on a boundary goes to
    the lower interval (as the official ``capacitysss`` comparison ``lo < C <= hi``).

    Parameters
    ----------
    capacity : torch.Tensor or array-like
        ``(B,)`` capacities.
    edges : sequence of float or None
        Increasing interval boundaries; ``None`` or empty means one expert.

    Returns
    -------
    torch.LongTensor
        ``(B,)`` expert indices in ``[0, len(edges)]``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    if capacity is None or isinstance(capacity, str):
        raise TypeError(f"capacity must be a tensor of capacities (got {type(capacity).__name__})")
    cap = torch.as_tensor(capacity)
    if cap.is_floating_point() and bool(torch.isnan(cap).any()):
        raise ValueError("capacity must not contain NaN")
    if not edges:
        return torch.zeros(cap.shape, dtype=torch.long, device=cap.device)
    e = [check_positive(f"edges[{i}]", v) for i, v in enumerate(edges)]
    if any(b <= a for a, b in zip(e, e[1:], strict=False)):
        raise ValueError(f"edges must be strictly increasing (got {list(edges)})")
    bounds = torch.tensor(e, dtype=cap.dtype if cap.is_floating_point() else torch.float64)
    return torch.bucketize(cap.to(bounds.dtype), bounds.to(cap.device), right=False)


def mixture_forward(x, capacity, experts: Sequence[Callable], edges: Sequence[float]):
    """Send each instance to the expert of its capacity interval and scatter results back.

    Parameters
    ----------
    x : torch.Tensor
        ``(B, ...)`` per-instance inputs.
    capacity : torch.Tensor
        ``(B,)`` capacities.
    experts : sequence of callables
        ``len(edges) + 1`` functions mapping a sub-batch ``(b, ...)`` to ``(b, ...)``.
    edges : sequence of float
        Interval boundaries (see ``route_to_expert``).

    Returns
    -------
    torch.Tensor
        Outputs in the original instance order; an expert with no instance is never called.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    if len(experts) != len(edges) + 1:
        raise ValueError(
            f"experts must hold len(edges) + 1 = {len(edges) + 1} callables (got {len(experts)})"
        )
    if capacity.shape[0] != x.shape[0]:
        raise ValueError(f"capacity must have shape ({x.shape[0]},) (got {tuple(capacity.shape)})")
    k = route_to_expert(capacity, edges)
    out = None
    for e, f in enumerate(experts):
        idx = torch.nonzero(k == e).flatten()
        if idx.numel() == 0:
            continue
        y = f(x[idx])
        if out is None:
            out = y.new_zeros((x.shape[0], *y.shape[1:]))
        out[idx] = y  # scatter back: the pitfall is forgetting this reorder
    return out


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
    check_instance("batch", batch, CVRPBatch)
    return torch.cat([batch.xy, (batch.demand / batch.capacity[:, None])[..., None]], dim=-1)


def _dims(d, heads) -> tuple[int, int]:
    d = check_int("d", d, 4, 1024)
    heads = check_int("heads", heads, 1, 64)
    if d % heads:
        raise ValueError(f"d must be divisible by heads (got d={d}, heads={heads})")
    return d, heads


class MHA(nn.Module):
    """Multi-head self-attention ``W_o softmax(Q K^T / sqrt(d_k)) V``."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        d, heads = _dims(d, heads)
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
    """Transformer layer: attention, residual, LayerNorm, ReLU feed-forward, residual, LayerNorm."""

    def __init__(self, d: int, heads: int, ff: int):
        super().__init__()
        d, heads = _dims(d, heads)
        ff = check_int("ff", ff, 1, 8192)
        self.att = MHA(d, heads)
        self.n1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.n2 = nn.LayerNorm(d)

    def forward(self, x):
        x = self.n1(x + self.att(x))
        return self.n2(x + self.ff2(torch.relu(self.ff1(x))))


class PomoDecoder(nn.Module):
    """POMO decoder: query from (last node, remaining load / C), one glimpse, pointer.

    ``forward(h, batch, greedy, starts, generator)`` runs the batched POMO rollouts on node
    embeddings ``h`` ``(B, n + 1, d)`` and returns tour lengths, summed log-probabilities
    (both ``(B, P)``) and the actions ``(B, P, T)``.
    """

    def __init__(self, d: int, heads: int):
        super().__init__()
        d, heads = _dims(d, heads)
        self.h = heads
        self.wq = nn.Linear(d + 1, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d)

    def forward(self, h, batch: CVRPBatch, greedy: bool = True, starts=None, generator=None):
        B, N, d = h.shape
        n = N - 1
        nh = self.h
        dev = h.device
        if starts is None:
            starts = torch.arange(1, N, device=dev).expand(B, n)
        P = starts.shape[-1]
        cap = batch.capacity[:, None]  # (B, 1)
        q = batch.demand[:, None, :].expand(B, P, N)  # (B, P, N)
        # keys/values computed once per instance (the POMO "set_kv")
        K = self.wk(h).view(B, N, nh, d // nh).transpose(1, 2)  # (B, nh, N, dk)
        V = self.wv(h).view(B, N, nh, d // nh).transpose(1, 2)
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
                # query from [h_last, load / C]; glimpse; pointer with 10 tanh clipping
                ctx = torch.cat([h[bidx, cur], (load / cap)[..., None]], dim=-1)  # (B, P, d+1)
                Q = self.wq(ctx).view(B, P, nh, d // nh).transpose(1, 2)  # (B, nh, P, dk)
                u = Q @ K.transpose(-1, -2) / math.sqrt(d // nh)  # (B, nh, P, N)
                u = u.masked_fill(infeas[:, None], float("-inf"))
                g = self.wo((torch.softmax(u, -1) @ V).transpose(1, 2).reshape(B, P, d))
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
            load = torch.where(
                is_depot, cap.expand(B, P), load - q.gather(-1, nxt[..., None])[..., 0]
            )
            visited = visited.scatter(-1, nxt[..., None], True)
            visited[..., 0] = False
            cur = nxt
            actions.append(nxt)
            t += 1
            if t > 4 * N + 4:  # pragma: no cover - guarded by the mask
                raise RuntimeError("rollout did not terminate: masking bug")
        return length, logp, torch.stack(actions, dim=-1)


class TinyPOMO(nn.Module):
    """A tiny POMO-style attention model for CVRP, optionally with capacity experts (MEM).

    Encoder: linear embeddings of the depot ``(x, y)`` and of customers ``(x, y, q / C)``,
    then ``layers`` shared transformer layers. With ``experts > 1`` each instance then goes
    through the ``expert_layers`` transformer layers of its capacity interval
    (``route_to_expert``, dispatched by ``mixture_forward``), as the official MoE does. One
    shared decoder (``PomoDecoder``): query from the last node's embedding and the remaining
    load as a fraction of ``C``, one multi-head glimpse, a single-head pointer with
    ``10 tanh`` clipping and the feasibility mask.

    ``model(batch, greedy=False, starts=None, generator=None, return_actions=False)``
    returns tour lengths and sums of log-probabilities, both ``(B, P)`` for ``P`` POMO
    rollouts (default: one start at each customer), and the actions if asked.

    Parameters
    ----------
    d, heads, layers, ff : int
        Embedding size, attention heads, shared encoder layers, feed-forward width.
    experts : int
        Number of capacity experts (1 = plain POMO, no expert layers).
    edges : sequence of float, optional
        ``experts - 1`` increasing capacity boundaries (required when ``experts > 1``).
    expert_layers : int
        Transformer layers per expert (used when ``experts > 1``).

    See: book/cvrp/03-vct-and-experts.ipynb
    """

    def __init__(
        self,
        d: int = 64,
        heads: int = 4,
        layers: int = 2,
        ff: int = 128,
        experts: int = 1,
        edges: Sequence[float] | None = None,
        expert_layers: int = 1,
    ):
        super().__init__()
        d, heads = _dims(d, heads)
        layers = check_int("layers", layers, 0, 12)
        ff = check_int("ff", ff, 1, 8192)
        experts = check_int("experts", experts, 1, 16)
        expert_layers = check_int("expert_layers", expert_layers, 1, 12)
        edges = [] if edges is None else [check_positive("edges", e) for e in edges]
        if len(edges) != experts - 1:
            raise ValueError(
                f"edges must hold experts - 1 = {experts - 1} boundaries (got {len(edges)})"
            )
        if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
            raise ValueError(f"edges must be strictly increasing (got {edges})")
        self.config = {
            "d": d,
            "heads": heads,
            "layers": layers,
            "ff": ff,
            "experts": experts,
            "edges": list(edges),
            "expert_layers": expert_layers,
        }
        self.embed_depot = nn.Linear(2, d)  # (x, y)
        self.embed_cust = nn.Linear(3, d)  # (x, y, q / C): capacity-normalised demand
        self.encoder = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))
        n_stacks = experts if experts > 1 else 0
        self.experts = nn.ModuleList(
            nn.Sequential(*(EncoderLayer(d, heads, ff) for _ in range(expert_layers)))
            for _ in range(n_stacks)
        )
        self.decoder = PomoDecoder(d, heads)

    def encode(self, batch, expert: int | None = None):
        """Node embeddings ``(B, n + 1, d)``: shared layers, then the routed expert's layers.

        ``expert`` forces every instance through one expert (to see whether they specialise).
        """
        f = node_features(batch)
        h = torch.cat([self.embed_depot(f[:, :1, :2]), self.embed_cust(f[:, 1:])], dim=1)
        for layer in self.encoder:
            h = layer(h)
        if not len(self.experts):
            return h
        if expert is not None:
            expert = check_int("expert", expert, 0, len(self.experts) - 1)
            return self.experts[expert](h)
        return mixture_forward(h, batch.capacity, list(self.experts), self.config["edges"])

    def expert_of(self, capacity):
        """Expert index of each capacity (``route_to_expert`` on the model's edges)."""
        return route_to_expert(capacity, self.config["edges"])

    def forward(
        self, batch, greedy=False, starts=None, generator=None, return_actions=False, expert=None
    ):
        check_instance("batch", batch, CVRPBatch)
        length, logp, actions = self.decoder(
            self.encode(batch, expert), batch, greedy, starts, generator
        )
        return (length, logp, actions) if return_actions else (length, logp)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """As ``nn.Module.load_state_dict``; also reads the single-expert checkpoints written
        before the experts moved into the encoder (their one decoder was ``decoders.0``)."""
        old = "decoders.0."
        if self.config["experts"] == 1 and any(k.startswith(old) for k in state_dict):
            state_dict = {
                ("decoder." + k[len(old) :] if k.startswith(old) else k): v
                for k, v in state_dict.items()
            }
        return super().load_state_dict(state_dict, strict=strict, assign=assign)
