"""The tiny POMO model: capacity-normalised features, encoder, decoders and expert routing.

See ``lab/cvrp/__init__.py`` for the equations; the batched rollout, training and inference
(the torch fast path) live in ``fast.py``, the numpy reference rollout in ``reference.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lab.core.checks import check_int, check_positive

from .problems import CVRPBatch

TANH_CLIP = 10.0  # logits = 10 tanh(u), as in POMO


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

    from .fast import _rollout  # the batched rollout (fast path)

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
