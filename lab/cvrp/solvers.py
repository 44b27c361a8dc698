"""The PyVRP peer: the chapter's reference solver (hybrid genetic search)."""

from __future__ import annotations

import numpy as np

from lab.core.checks import check_array, check_instance, check_int, check_positive
from lab.core.runtime import smoke

from .reference import tour_length

__all__ = ["PYVRP_SCALE", "solve_pyvrp", "reference_costs"]

PYVRP_SCALE = 10_000  # PyVRP works on integers: coordinates x 10^4, distances rounded
_OFFSET = 1  # PyVRP 0.14 numbers clients 0..n-1 in activities; our customers are 1..n


def solve_pyvrp(xy, demand, capacity, seconds: float = 0.1, seed: int = 0):
    """Solve one CVRP instance with PyVRP (hybrid genetic search), the chapter's reference.

    Coordinates are scaled by ``10^4`` and edge lengths rounded to integers, as PyVRP needs;
    the returned length is recomputed in float64 from the routes (``tour_length``).

    Parameters
    ----------
    xy : array-like
        ``(n + 1, 2)`` coordinates, depot first.
    demand : array-like
        ``(n + 1,)`` integer demands, ``demand[0] = 0``.
    capacity : float
        Vehicle capacity (an integer value); unlimited vehicles.
    seconds : float
        PyVRP run time (``MaxRuntime``).
    seed : int
        PyVRP's seed.

    Returns
    -------
    routes : list of list of int
        Customer indices ``1..n`` per route.
    length : float

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    from pyvrp import Model
    from pyvrp.stop import MaxRuntime

    xy = check_array("xy", xy, ndim=2)
    demand = check_array("demand", demand, ndim=1)
    capacity = check_positive("capacity", capacity)
    seconds = check_positive("seconds", seconds)
    if smoke():  # LAB_SMOKE=1: a hundredth of a second per instance (FULL's code paths on a CPU)
        seconds = min(seconds, 0.01)
    seed = check_int("seed", seed, 0, 2**31 - 1)
    if xy.shape != (len(demand), 2):
        raise ValueError(f"xy must have shape ({len(demand)}, 2) (got {xy.shape})")
    if np.any(demand != np.round(demand)) or np.any(demand[1:] <= 0) or demand[0] != 0:
        raise ValueError("demand must be positive integers with demand[0] = 0 (the depot)")
    if capacity != round(capacity):
        raise ValueError(f"capacity must be an integer value for PyVRP (got {capacity:g})")
    if demand.max() > capacity:
        raise ValueError(f"a demand of {demand.max():g} exceeds capacity {capacity:g}")
    n = len(demand) - 1
    m = Model()
    P = np.round(xy * PYVRP_SCALE).astype(np.int64)
    locs = [m.add_location(x=int(P[i, 0]), y=int(P[i, 1])) for i in range(n + 1)]
    m.add_depot(locs[0])  # PyVRP: depots first, so client j is our customer j
    for i in range(1, n + 1):
        m.add_client(locs[i], delivery=[int(demand[i])])
    m.add_vehicle_type(num_available=n, capacity=[int(capacity)])
    D = np.round(np.linalg.norm(P[:, None, :] - P[None, :, :], axis=-1)).astype(np.int64)
    for i in range(n + 1):
        for j in range(n + 1):
            if i != j:
                m.add_edge(locs[i], locs[j], distance=int(D[i, j]))
    res = m.solve(stop=MaxRuntime(seconds), seed=seed, display=False, collect_stats=False)
    if not res.is_feasible():  # pragma: no cover - HGS finds a feasible CVRP solution
        raise RuntimeError("PyVRP returned an infeasible solution")
    routes = [[int(a.idx) + _OFFSET for a in r if a.is_client()] for r in res.best.routes()]
    for r, pr in zip(routes, res.best.routes(), strict=True):  # index convention self-check
        if int(demand[r].sum()) != int(pr.delivery()[0]):  # pragma: no cover
            raise RuntimeError("PyVRP client numbering differs from the expected convention")
    return routes, tour_length(routes, xy)


def reference_costs(batch, seconds: float = 0.1, seed: int = 0):
    """PyVRP tour lengths (float64, recomputed) of every instance of ``batch``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from .problems import CVRPBatch

    check_instance("batch", batch, CVRPBatch)
    xy = batch.xy.detach().cpu().double().numpy()
    q = batch.demand.detach().cpu().double().numpy()
    c = batch.capacity.detach().cpu().double().numpy()
    return np.array([solve_pyvrp(xy[i], q[i], c[i], seconds, seed)[1] for i in range(len(c))])
