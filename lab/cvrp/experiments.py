"""Gap tables against PyVRP and the generic expert dispatch."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lab.core.checks import check_int, check_positive

from .model import generate_cvrp, route_to_expert

#: The capacity grid of the chapter's gap-vs-tightness curves.
CAPACITIES = (10, 20, 30, 50, 100, 200)


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
    import torch

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


def gap_table(
    models: dict,
    capacities: Sequence[float] = CAPACITIES,
    instances: int = 32,
    n: int = 20,
    seconds: float = 0.05,
    seed: int = 1234,
    augment: bool = False,
    starts: str = "all",
    check: bool = True,
    reference: Sequence | None = None,
) -> dict:
    """Mean gap (%) of each model to PyVRP at each capacity, on the same customers.

    For every capacity the same ``instances`` customer sets (``generate_cvrp(..., seed)``) are
    solved by PyVRP (``seconds`` each) and by each model (greedy POMO); with ``check`` every
    decoded solution is verified feasible and its length recomputed independently in float64.

    Parameters
    ----------
    models : dict
        ``{label: TinyPOMO}``.
    capacities : sequence of float
    instances, n : int
    seconds : float
        PyVRP time per instance.
    seed : int
        Instance seed.
    augment : bool
        x8 augmentation at inference.
    starts : {"all", "single"}
    check : bool
        Verify feasibility and recompute the lengths.
    reference : sequence of arrays, optional
        PyVRP lengths per capacity from an earlier call (``out["reference_instances"]``),
        to compare several decodings against one fixed reference.

    Returns
    -------
    dict
        ``capacities``, ``reference`` (mean PyVRP length per capacity), ``lengths``
        ``{label: [mean length per capacity]}``, ``gaps`` ``{label: [% per capacity]}``,
        ``gap_instances`` ``{label: array (capacities, instances)}``, ``max_recompute_error``,
        ``feasible`` (bool), ``pyvrp_seconds`` (wall time spent in PyVRP).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import time

    from .model import _best, actions_to_routes
    from .solvers import reference_costs, route_feasible, tour_length

    if not isinstance(models, dict) or not models:
        raise TypeError("models must be a non-empty dict {label: model}")
    instances = check_int("instances", instances, 1)
    n = check_int("n", n, 2)
    seconds = check_positive("seconds", seconds)
    caps = [check_positive("capacities", c) for c in capacities]
    out = {"capacities": caps, "reference": [], "lengths": {k: [] for k in models}}
    out["reference_instances"] = []
    per = {k: [] for k in models}
    err, feasible, t_ref = 0.0, True, 0.0
    if reference is not None and len(reference) != len(caps):
        raise ValueError(f"reference must hold {len(caps)} arrays (got {len(reference)})")
    for j, c in enumerate(caps):
        b = generate_cvrp(instances, n, c, seed=seed)
        t0 = time.perf_counter()
        ref = reference_costs(b, seconds) if reference is None else np.asarray(reference[j])
        t_ref += time.perf_counter() - t0
        if ref.shape != (instances,):
            raise ValueError(f"reference[{j}] must have shape ({instances},) (got {ref.shape})")
        out["reference_instances"].append(ref)
        out["reference"].append(float(ref.mean()))
        xy, q = b.xy.double().numpy(), b.demand.double().numpy()
        for k, m in models.items():
            best, acts = _best(m, b, augment, starts)
            L = best.cpu().double().numpy()
            if check:
                for i, a in enumerate(acts.cpu().numpy()):
                    r = actions_to_routes(a)
                    feasible &= route_feasible(r, q[i], c)
                    err = max(err, abs(tour_length(r, xy[i]) - L[i]))
            per[k].append(100.0 * (L / ref - 1.0))
            out["lengths"][k].append(float(L.mean()))
    out["gap_instances"] = {k: np.array(v) for k, v in per.items()}
    out["gaps"] = {k: [float(g.mean()) for g in v] for k, v in per.items()}
    out["max_recompute_error"] = err
    out["feasible"] = bool(feasible)
    out["pyvrp_seconds"] = t_ref
    return out


def expert_lengths(model, batch):
    """Best greedy POMO length of every instance under *each* expert decoder (forced).

    Shows whether the experts specialise: the routed expert should be the best one in its
    own capacity interval.

    Returns
    -------
    numpy.ndarray
        ``(experts, B)`` lengths.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    from .model import CVRPBatch, _rollout

    if not isinstance(batch, CVRPBatch):
        raise TypeError(f"batch must be a CVRPBatch (got {type(batch).__name__})")
    dev = next(model.parameters()).device
    batch = batch.to(dev)
    with torch.no_grad():
        h = model.encode(batch)
        rows = [
            _rollout(dec, h, batch, True, None, None)[0].min(dim=1).values for dec in model.decoders
        ]
    return torch.stack(rows).cpu().double().numpy()
