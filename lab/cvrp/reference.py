"""Numpy float64 reference of one greedy POMO rollout (mirrors ``model.PomoDecoder.forward``)."""

from __future__ import annotations

import math

import numpy as np

from lab.core.checks import check_array, check_int, check_positive

from .model import TANH_CLIP, route_to_expert

__all__ = ["greedy_rollout"]


def _lin(p, name, x):
    y = x @ p[name + ".weight"].T
    b = p.get(name + ".bias")
    return y if b is None else y + b


def _ln(p, name, x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def _softmax(u):
    u = u - u.max(-1, keepdims=True)
    e = np.exp(u)
    return e / e.sum(-1, keepdims=True)


def _layer(p, a, h, nh):
    """One transformer layer (prefix ``a``) in float64."""
    N, d = h.shape
    dk = d // nh
    Q, K, V = (_lin(p, a + "att.w" + w, h).reshape(N, nh, dk).transpose(1, 0, 2) for w in "qkv")
    att = _softmax(Q @ K.transpose(0, 2, 1) / math.sqrt(dk))  # softmax(Q K^T / sqrt(dk))
    mha = _lin(p, a + "att.wo", (att @ V).transpose(1, 0, 2).reshape(N, d))
    h = _ln(p, a + "n1", h + mha)  # residual + LayerNorm
    ffo = _lin(p, a + "ff2", np.maximum(_lin(p, a + "ff1", h), 0.0))
    return _ln(p, a + "n2", h + ffo)


def greedy_rollout(params: dict, config: dict, xy, demand, capacity, start: int):
    """One greedy rollout of a ``TinyPOMO`` in numpy float64, for checking the fast path.

    Parameters
    ----------
    params : dict
        ``{name: ndarray}`` from ``model.state_dict()``.
    config : dict
        ``model.config`` (``d``, ``heads``, ``layers``, ``experts``, ``edges``).
    xy : array-like
        ``(n + 1, 2)``, depot first.
    demand : array-like
        ``(n + 1,)``, ``demand[0] = 0``.
    capacity : float
    start : int
        First customer (``1..n``).

    Returns
    -------
    actions : list of int
        Visited nodes after leaving the depot, ending with the depot.
    length : float

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    if not isinstance(params, dict) or not params:
        raise TypeError(f"params must be a non-empty dict of weights (got {type(params).__name__})")
    if not isinstance(config, dict) or not {"d", "heads", "layers"} <= set(config):
        raise TypeError("config must be a TinyPOMO config dict (keys d, heads, layers, ...)")
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    xy = check_array("xy", xy, ndim=2)
    q = check_array("demand", demand, ndim=1)
    C = check_positive("capacity", capacity)
    N = len(q)
    start = check_int("start", start, 1, N - 1)
    d, nh = config["d"], config["heads"]
    dk = d // nh
    # eq. (1): features (x, y, q / C), the capacity-normalised demand (the VCT input)
    f = np.concatenate([xy, (q / C)[:, None]], axis=1)
    h = np.concatenate([_lin(p, "embed_depot", f[:1, :2]), _lin(p, "embed_cust", f[1:])], 0)
    for i in range(config["layers"]):  # shared encoder layers
        h = _layer(p, f"encoder.{i}.", h, nh)
    if config.get("experts", 1) > 1:  # eq. (5): MEM, hard routing on C, then its layers
        k = int(route_to_expert(np.array([C]), config["edges"])[0])
        for j in range(config.get("expert_layers", 1)):
            h = _layer(p, f"experts.{k}.{j}.", h, nh)
    dec = "decoder."  # one shared decoder
    K = _lin(p, dec + "wk", h).reshape(N, nh, dk).transpose(1, 0, 2)
    V = _lin(p, dec + "wv", h).reshape(N, nh, dk).transpose(1, 0, 2)
    cur, load, visited = start, C - q[start], np.zeros(N, bool)
    visited[start] = True
    length = float(np.linalg.norm(xy[start] - xy[0]))
    actions = [start]
    while not (visited[1:].all() and cur == 0):
        done = visited[1:].all()
        infeas = visited | (q > load)  # eq. (2): served, or demand above the remaining load
        infeas[0] = cur == 0 and not done  # no depot twice in a row
        if done:
            infeas[1:] = True  # all served: only the depot
        ctx = np.concatenate([h[cur], [load / C]])  # eq. (6): query from [h_last, load / C]
        Qd = _lin(p, dec + "wq", ctx).reshape(nh, 1, dk)
        u = Qd @ K.transpose(0, 2, 1) / math.sqrt(dk)  # (nh, 1, N)
        u = np.where(infeas[None, None], -np.inf, u)
        g = _lin(p, dec + "wo", (_softmax(u) @ V).reshape(d))  # glimpse
        logits = TANH_CLIP * np.tanh(h @ g / math.sqrt(d))  # eq. (6): pointer, 10 tanh clip
        logits = np.where(infeas, -np.inf, logits)
        nxt = int(np.argmax(logits))  # eq. (6): greedy (eq. (3) samples here when training)
        length += float(np.linalg.norm(xy[nxt] - xy[cur]))
        load = C if nxt == 0 else load - q[nxt]
        if nxt:
            visited[nxt] = True
        cur = nxt
        actions.append(nxt)
    return actions, length
