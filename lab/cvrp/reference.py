"""The method in numpy, one function per equation of the lesson (book/cvrp/index.md).

The paper (Luo et al., NeurIPS 2025) numbers four equations: (1) the routing problem
``min f(pi)`` over the feasible solutions ``Omega``; (2) the multi-expert module's output
``P_t = sum_i G(C_k)_i E_i(H_t)``; (3) the gate, a one-hot vector of the capacity's interval;
(4) an expert layer. The lesson adds what the paper takes from its backbones and labels them by
name: ``(cvrp-features)`` the capacity-normalised inputs, ``(cvrp-mask)`` the feasibility mask,
``(cvrp-vct)`` varied-constraint-tightness sampling, ``(cvrp-pomo)`` the REINFORCE loss with
POMO's shared baseline, ``(cvrp-gap)`` the optimality gap; the paper's (1)-(3) are labelled
``cvrp-problem``, ``cvrp-mixture`` and ``cvrp-gate`` on the page. ``greedy_rollout`` replays one greedy rollout
of a ``TinyPOMO`` in float64, the check of the torch fast path.

See: book/cvrp/index.md, book/cvrp/03-vct-and-experts.ipynb
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from lab.core.checks import check_array, check_int, check_positive

from .model import TANH_CLIP

__all__ = [
    "tour_length",
    "route_feasible",
    "normalised_features",
    "feasible_mask",
    "vct_capacities",
    "gate",
    "mixture",
    "pomo_loss",
    "optimality_gap",
    "greedy_rollout",
]


def _routes_ok(routes) -> list[list[int]]:
    if not isinstance(routes, list | tuple):
        raise TypeError(
            f"routes must be a list of lists of customer indices (got {type(routes).__name__})"
        )
    out = []
    for r in routes:
        if not isinstance(r, list | tuple | np.ndarray):
            raise TypeError(
                f"each route must be a list of customer indices (got {type(r).__name__})"
            )
        out.append([int(i) for i in r])
    return out


def tour_length(routes, xy) -> float:
    """The objective of eq. (1): total Euclidean length of a CVRP solution, in float64.

    Parameters
    ----------
    routes : list of list of int
        Customer indices (``1..n``) per route; every route starts and ends at the depot
        (node 0), which is not listed.
    xy : array-like
        ``(n + 1, 2)`` coordinates, depot first.

    Returns
    -------
    float

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    xy = check_array("xy", xy, ndim=2)
    if xy.shape[1] != 2:
        raise ValueError(f"xy must have shape (n + 1, 2) (got {xy.shape})")
    total = 0.0
    for r in _routes_ok(routes):
        if any(i < 0 or i >= len(xy) for i in r):
            raise ValueError(f"route {r} has an index outside [0, {len(xy) - 1}]")
        path = [0, *r, 0]  # depot -> customers -> depot
        total += float(np.linalg.norm(np.diff(xy[path], axis=0), axis=1).sum())
    return total


def route_feasible(routes, demand, capacity) -> bool:
    """Is ``routes`` in the feasible set ``Omega`` of eq. (1)?

    Every customer ``1..n`` is visited exactly once, no route lists the depot (each route
    starts and ends there implicitly) or is empty, and each route's load is ``<= capacity``.

    Parameters
    ----------
    routes : list of list of int
    demand : array-like
        ``(n + 1,)`` demands, depot first (``demand[0] = 0``).
    capacity : float

    Returns
    -------
    bool

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    demand = check_array("demand", demand, ndim=1, min_size=2)
    capacity = check_positive("capacity", capacity)
    routes = _routes_ok(routes)
    n = len(demand) - 1
    seen = [i for r in routes for i in r]
    if sorted(seen) != list(range(1, n + 1)):
        return False  # a customer missing, repeated, or the depot inside a route
    return all(len(r) > 0 and demand[r].sum() <= capacity + 1e-9 for r in routes)


def normalised_features(xy, demand, capacity):
    """Capacity-normalised node features ``(x_i, y_i, q_i / C)``, depot first (its ``q = 0``).

    The same customers with demands and capacity both doubled give the same features: what
    the network sees is the tightness, not the units.

    Parameters
    ----------
    xy : array-like
        ``(n + 1, 2)`` coordinates, depot first.
    demand : array-like
        ``(n + 1,)`` demands, ``demand[0] = 0``.
    capacity : float
        ``C > 0``.

    Returns
    -------
    numpy.ndarray
        ``(n + 1, 3)``.

    See: book/cvrp/index.md
    """
    xy = check_array("xy", xy, ndim=2, shape=(None, 2))
    q = check_array("demand", demand, ndim=1, shape=(len(xy),))
    C = check_positive("capacity", capacity)
    return np.concatenate([xy, (q / C)[:, None]], axis=1)  # eq. (cvrp-features)


def feasible_mask(visited, demand, load: float, at_depot: bool):
    """Which nodes the decoder may pick next, eq. (cvrp-mask).

    A customer is feasible if it is not served and its demand fits the remaining load; the
    depot is feasible unless the vehicle is at it with customers left (no empty trip); once
    every customer is served only the depot is.

    Parameters
    ----------
    visited : array-like of bool
        ``(n + 1,)``, served customers (entry 0, the depot, is ignored).
    demand : array-like
        ``(n + 1,)`` demands.
    load : float
        Remaining load of the vehicle (``>= 0``).
    at_depot : bool
        Whether the last node visited is the depot.

    Returns
    -------
    numpy.ndarray of bool
        ``(n + 1,)``, True where the node may be chosen.

    See: book/cvrp/index.md
    """
    v = np.asarray(visited, dtype=bool)
    q = check_array("demand", demand, ndim=1, shape=(len(v),))
    load = check_positive("load", load, allow_zero=True)
    return _feasible(v, q, load, bool(at_depot))


def _feasible(v, q, load, at_depot):
    done = bool(v[1:].all())
    ok = ~v & (q <= load)  # eq. (cvrp-mask): unserved and within the remaining load
    ok[0] = done or not at_depot  # the depot: not twice in a row while customers remain
    if done:
        ok[1:] = False  # all served: only the depot
    return ok


def vct_capacities(batch: int, c_min: int, c_max: int, rng=None):
    """Varied-constraint-tightness training, eq. (cvrp-vct): one capacity per training instance,
    ``C ~ U{c_min, ..., c_max}`` (Sec. 4.2 of the paper; per instance, not per batch).

    Parameters
    ----------
    batch : int
        Instances (>= 1).
    c_min, c_max : int
        The capacity range, ``1 <= c_min <= c_max``.
    rng : numpy.random.Generator or int, optional

    Returns
    -------
    numpy.ndarray
        ``(batch,)`` integer capacities.

    See: book/cvrp/index.md
    """
    batch = check_int("batch", batch, 1)
    c_min = check_int("c_min", c_min, 1)
    c_max = check_int("c_max", c_max, c_min)
    return np.random.default_rng(rng).integers(c_min, c_max + 1, size=batch)  # eq. (cvrp-vct)


def gate(capacity, edges: Sequence[float]):
    """The gate of the multi-expert module, eq. (3): a one-hot vector per instance.

    Expert ``i`` takes the capacities of its interval ``(e_{i-1}, e_i]`` with ``e_0 = 0`` and
    ``e_m = inf`` (a capacity on an edge goes to the lower interval, as the official code).

    Parameters
    ----------
    capacity : array-like
        ``(B,)`` capacities.
    edges : sequence of float
        The ``m - 1`` increasing inner edges.

    Returns
    -------
    numpy.ndarray
        ``(B, m)`` one-hot rows.

    See: book/cvrp/index.md
    """
    C = check_array("capacity", capacity, ndim=1)
    e = np.asarray([check_positive("edges", v) for v in edges], dtype=float)
    if np.any(np.diff(e) <= 0):
        raise ValueError(f"edges must be strictly increasing (got {list(edges)})")
    return _gate(C, e)


def _gate(C, e):
    index = np.searchsorted(e, C, side="left")  # eq. (3) (cvrp-gate): the interval holding C
    return np.eye(len(e) + 1)[index]


def mixture(H, capacity, experts: Sequence[Callable], edges: Sequence[float]):
    """The multi-expert module's output, eq. (2): ``P = sum_i G(C)_i E_i(H)``, computed as
    written (every expert on every instance, weighted by the one-hot gate).

    ``model.mixture_forward`` is its fast path: each expert runs only on its own instances.

    Parameters
    ----------
    H : array-like
        ``(B, ...)`` per-instance inputs (node embeddings).
    capacity : array-like
        ``(B,)`` capacities.
    experts : sequence of callables
        ``m`` expert layers, each ``(B, ...) -> (B, ...)``.
    edges : sequence of float
        The gate's ``m - 1`` inner edges.

    Returns
    -------
    numpy.ndarray
        ``(B, ...)``.

    See: book/cvrp/index.md
    """
    H = np.asarray(H, dtype=float)
    G = gate(capacity, edges)
    if G.shape != (len(H), len(experts)):
        raise ValueError(f"experts must hold {G.shape[1]} callables for {len(edges)} edges")
    return _mixture(H, G, experts)


def _mixture(H, G, experts):
    out = [np.asarray(E(H), dtype=float) for E in experts]  # every expert on every instance
    shape = (len(H),) + (1,) * (out[0].ndim - 1)
    return sum(G[:, i].reshape(shape) * out[i] for i in range(len(out)))  # eq. (2) (cvrp-mixture)


def pomo_loss(lengths, logp) -> float:
    """REINFORCE with POMO's shared baseline, eq. (cvrp-pomo): the mean over instances ``b`` and
    start customers ``p`` of ``(L_bp - mean_p' L_bp') log p(tau_bp)``.

    Its gradient is the policy-gradient estimate (the advantage is a constant); a rollout
    shorter than its instance's average gets its probability raised.

    Parameters
    ----------
    lengths, logp : array-like
        ``(B, P)`` tour lengths and log-probabilities of the ``P`` rollouts per instance.

    Returns
    -------
    float

    See: book/cvrp/index.md
    """
    L = check_array("lengths", lengths, ndim=2)
    lp = check_array("logp", logp, ndim=2, shape=L.shape)
    return _pomo_loss(L, lp)


def _pomo_loss(L, logp):
    advantage = L - L.mean(axis=1, keepdims=True)  # eq. (cvrp-pomo): the shared baseline
    return float((advantage * logp).mean())  # mean over instances and rollouts


def optimality_gap(length, reference):
    """The optimality gap in percent, eq. (cvrp-gap): ``100 (L / L_ref - 1)``.

    See: book/cvrp/index.md
    """
    L = check_array("length", length)
    ref = check_array("reference", reference, shape=L.shape)
    if np.any(ref <= 0):
        raise ValueError("reference must hold positive lengths")
    return 100.0 * (L / ref - 1.0)  # eq. (cvrp-gap)


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
    f = np.concatenate([xy, (q / C)[:, None]], axis=1)  # eq. (cvrp-features)
    h = np.concatenate([_lin(p, "embed_depot", f[:1, :2]), _lin(p, "embed_cust", f[1:])], 0)
    for i in range(config["layers"]):  # shared encoder layers
        h = _layer(p, f"encoder.{i}.", h, nh)
    if (
        config.get("experts", 1) > 1
    ):  # eqs. (2)-(3), (cvrp-mixture) and (cvrp-gate): the gate picks one expert
        k = int(_gate(np.array([C]), np.asarray(config["edges"], float)).argmax(1)[0])
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
        infeas = ~_feasible(visited, q, load, cur == 0)  # eq. (cvrp-mask)
        ctx = np.concatenate([h[cur], [load / C]])  # decoder query from [h_last, load / C]
        Qd = _lin(p, dec + "wq", ctx).reshape(nh, 1, dk)
        u = Qd @ K.transpose(0, 2, 1) / math.sqrt(dk)  # (nh, 1, N)
        u = np.where(infeas[None, None], -np.inf, u)
        g = _lin(p, dec + "wo", (_softmax(u) @ V).reshape(d))  # glimpse
        logits = TANH_CLIP * np.tanh(h @ g / math.sqrt(d))  # pointer logits, 10 tanh clip
        logits = np.where(infeas, -np.inf, logits)
        nxt = int(np.argmax(logits))  # greedy (training samples here)
        length += float(np.linalg.norm(xy[nxt] - xy[cur]))
        load = C if nxt == 0 else load - q[nxt]
        if nxt:
            visited[nxt] = True
        cur = nxt
        actions.append(nxt)
    return actions, length
