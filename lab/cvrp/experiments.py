"""The chapter's drivers: gap tables against PyVRP, seed comparisons, forced experts,
the route maps' solves and the shipped models (computed and cached here; figures draw)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab.core.checks import check_instance, check_int
from lab.core.memo import memo

from .problems import generate_cvrp
from .settings import ExpertSettings, GapSettings

__all__ = [
    "EXPERT_MODEL",
    "MODEL_NAMES",
    "gap_table",
    "training_table",
    "expert_lengths",
    "expert_table",
    "forced_expert_gaps",
    "checkpoint_expert_table",
    "expert_margins",
    "expert_sweep",
    "shipped_models",
    "solve_all",
]

#: The three models of the route maps and decoding comparisons (training seed 0).
MODEL_NAMES = {
    "fixed C = 30": "cvrp20_fixed30",
    "VCT": "cvrp20_vct",
    "VCT + MEM": "cvrp20_vct_mem3",
}


def gap_table(
    models: dict, test: GapSettings | None = None, reference: Sequence | None = None
) -> dict:
    """Mean gap (%) of each model to PyVRP at each capacity, on the same customers.

    For every capacity the same ``test.instances`` customer sets are solved by PyVRP
    (``test.seconds`` each, unless ``reference`` is given) and by each model (greedy POMO, as
    ``test.starts`` and ``test.augment`` say); with ``test.check`` every decoded solution is
    verified feasible and its length recomputed independently in float64.

    Parameters
    ----------
    models : dict
        ``{label: TinyPOMO}``.
    test : GapSettings
        The instances and the decoding.
    reference : sequence of arrays, optional
        PyVRP lengths per capacity from an earlier call (``out["reference_instances"]``) or
        from :func:`reference_lengths`, to compare several decodings against one reference.

    Returns
    -------
    dict
        ``capacities``, ``reference`` (mean PyVRP length per capacity), ``lengths``
        ``{label: [mean length per capacity]}``, ``gaps`` ``{label: [% per capacity]}``,
        ``gap_instances`` ``{label: array (capacities, instances)}``, ``max_recompute_error``,
        ``feasible`` (bool), ``pyvrp_seconds`` (wall time spent in PyVRP).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    test = GapSettings() if test is None else test
    if not isinstance(models, dict) or not models:
        raise TypeError("models must be a non-empty dict {label: model}")
    check_instance("test", test, GapSettings)
    caps = list(test.capacities)
    if reference is not None and len(reference) != len(caps):
        raise ValueError(f"reference must hold {len(caps)} arrays (got {len(reference)})")
    out = {"capacities": caps, "reference": [], "lengths": {k: [] for k in models}}
    out["reference_instances"] = []
    per = {k: [] for k in models}
    err, feasible, t_ref = 0.0, True, 0.0
    for j, c in enumerate(caps):
        b = generate_cvrp(test.instances, test.n, c, seed=test.seed)
        ref, dt = _reference_at(b, test, None if reference is None else reference[j], j)
        t_ref += dt
        out["reference_instances"].append(ref)
        out["reference"].append(float(ref.mean()))
        for k, m in models.items():
            L, e, ok = _decode_checked(m, b, c, test)
            err, feasible = max(err, e), feasible and ok
            per[k].append(100.0 * (L / ref - 1.0))
            out["lengths"][k].append(float(L.mean()))
    out["gap_instances"] = {k: np.array(v) for k, v in per.items()}
    out["gaps"] = {k: [float(g.mean()) for g in v] for k, v in per.items()}
    out["max_recompute_error"] = err
    out["feasible"] = bool(feasible)
    out["pyvrp_seconds"] = t_ref
    return out


def _reference_at(batch, test: GapSettings, stored, j: int) -> tuple:
    """PyVRP lengths of ``batch`` (solved now, or ``stored``) and the seconds spent."""
    import time

    from .solvers import reference_costs

    t0 = time.perf_counter()
    ref = reference_costs(batch, test.seconds) if stored is None else np.asarray(stored)
    if ref.shape != (test.instances,):
        raise ValueError(f"reference[{j}] must have shape ({test.instances},) (got {ref.shape})")
    return ref, time.perf_counter() - t0


def _decode_checked(model, batch, capacity, test: GapSettings) -> tuple:
    """Best greedy lengths of ``model`` on ``batch``, the largest recomputation error and
    whether every solution was feasible (both trivially so without ``test.check``)."""
    from .fast import actions_to_routes, best_tours
    from .reference import route_feasible, tour_length

    best, acts = best_tours(model, batch, test.augment, test.starts)
    L = best.cpu().double().numpy()
    err, feasible = 0.0, True
    if test.check:
        xy, q = batch.xy.double().numpy(), batch.demand.double().numpy()
        for i, a in enumerate(acts.cpu().numpy()):
            r = actions_to_routes(a)
            feasible &= route_feasible(r, q[i], capacity)
            err = max(err, abs(tour_length(r, xy[i]) - L[i]))
    return L, err, feasible


def expert_lengths(model, batch):
    """Best greedy POMO length of every instance under *each* expert (forced).

    Every instance is sent through each expert's transformer layers in turn (then the shared
    decoder). Shows whether the experts specialise: the routed expert should be the best one
    in its own capacity interval.

    Returns
    -------
    numpy.ndarray
        ``(experts, B)`` lengths.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    from .problems import CVRPBatch

    check_instance("batch", batch, CVRPBatch)
    if not len(getattr(model, "experts", ())):
        raise ValueError("model must have capacity experts (experts > 1)")
    dev = next(model.parameters()).device
    batch = batch.to(dev)
    with torch.no_grad():
        rows = [
            model(batch, greedy=True, expert=k)[0].min(dim=1).values
            for k in range(len(model.experts))
        ]
    return torch.stack(rows).cpu().double().numpy()


def forced_expert_gaps(models: dict, test: GapSettings, reference, expert: int) -> dict:
    """Mean gap (%) per capacity of each three-expert model with every instance sent through
    expert ``expert`` (MEM without its routing), on the instances of ``test``.

    Parameters
    ----------
    models : dict
        ``{label: TinyPOMO with experts}``.
    test : GapSettings
        The instances (POMO decoding from every start, no augmentation).
    reference : sequence of arrays
        PyVRP lengths per capacity (``reference_lengths(test)``).
    expert : int
        The expert every instance goes through.

    Returns
    -------
    dict
        ``{label: array (capacities,)}``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    if not isinstance(models, dict) or not models:
        raise TypeError("models must be a non-empty dict {label: model}")
    check_instance("test", test, GapSettings)
    if len(reference) != len(test.capacities):
        raise ValueError(f"reference must hold {len(test.capacities)} arrays")
    out = {k: [] for k in models}
    for j, c in enumerate(test.capacities):
        b = generate_cvrp(test.instances, test.n, c, seed=test.seed)
        for k, m in models.items():
            L = expert_lengths(m, b)[check_int("expert", expert, 0, len(m.experts) - 1)]
            out[k].append(float(np.mean(100.0 * (L / np.asarray(reference[j]) - 1.0))))
    return {k: np.array(v) for k, v in out.items()}


@memo
def shipped_models() -> dict:
    """The three ``MODEL_NAMES`` checkpoints (seed 0) under their display names (loaded once).

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    from .store import load_checkpoint

    return {k: load_checkpoint(v) for k, v in MODEL_NAMES.items()}


@memo
def solve_all(capacity: float, seed: int = 0, n: int = 20, seconds: float = 0.1) -> dict:
    """One instance (``seed``) at ``capacity``: PyVRP's and each shipped model's routes.

    Returns ``{"xy", "demand", "solutions": {name: (routes, length)}}``; every solution is
    checked feasible. Cached on the arguments (``solve_all.clear()``).

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    from .fast import decode_routes
    from .reference import route_feasible, tour_length
    from .solvers import solve_pyvrp

    b = generate_cvrp(1, n, capacity, seed=seed)  # validates capacity, n and seed
    xy, q = b.xy[0].double().numpy(), b.demand[0].double().numpy()
    sols = {"PyVRP": solve_pyvrp(xy, q, capacity, seconds)}
    for name, m in shipped_models().items():
        r = decode_routes(m, b)[0]
        sols[name] = (r, tour_length(r, xy))
    for name, (r, _) in sols.items():
        if not route_feasible(r, q, capacity):  # pragma: no cover - a bug, not a result
            raise RuntimeError(f"{name} returned an infeasible solution")
    return {"xy": xy, "demand": q, "solutions": sols}


def expert_table(model, settings: ExpertSettings | None = None) -> dict:
    """Forced-expert lengths of ``model`` per capacity (for ``figures.expert_figure``).

    Returns ``capacities``, ``labels`` (each expert's capacity interval), ``mean`` (mean
    length per expert), ``relative`` (% above the best expert) and ``routed`` (the expert
    ``route_to_expert`` picks) per capacity.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    settings = ExpertSettings() if settings is None else settings
    import torch

    if not isinstance(model, torch.nn.Module) or not len(getattr(model, "experts", ())):
        raise TypeError(f"model must be a TinyPOMO with experts (got {type(model).__name__})")
    check_instance("settings", settings, ExpertSettings)
    edges = model.config["edges"]
    bounds = [0, *edges, np.inf]
    labels = [f"C in ({bounds[k]:g}, {bounds[k + 1]:g}]" for k in range(len(edges) + 1)]
    caps = list(settings.capacities)
    out = {"capacities": caps, "labels": labels, "relative": [], "routed": [], "mean": []}
    for c in caps:
        b = generate_cvrp(settings.instances, settings.n, c, seed=settings.seed)
        L = expert_lengths(model, b).mean(axis=1)
        out["mean"].append(L)
        out["relative"].append(100 * (L / L.min() - 1))
        out["routed"].append(int(model.expert_of(torch.tensor([float(c)]))[0]))
    out["relative"] = np.array(out["relative"])
    return out


#: The three-expert checkpoint whose training seeds the specialisation sweep reads.
EXPERT_MODEL = "cvrp20_vct_mem3"


@memo
def checkpoint_expert_table(seed: int, settings: ExpertSettings) -> dict:
    """:func:`expert_table` of training seed ``seed`` of the shipped three-expert checkpoint
    (cached on the arguments).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    from .store import load_checkpoint

    return expert_table(load_checkpoint(EXPERT_MODEL, seed), settings)


def expert_margins(table: dict, within: float = 1.0, apart: float = 2.0) -> dict:
    """How far a forced-expert table is from "the routed expert is within ``within`` % of the
    best expert at every capacity, and the opposite-end expert more than ``apart`` % worse at
    the smallest and at the largest capacity".

    Returns ``routed_excess`` (the routed expert's largest excess over the best, %),
    ``far_tight`` / ``far_loose`` (the opposite-end expert's excess at the two ends, %) and
    ``slack`` (points; positive exactly when the statement holds).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    if not isinstance(table, dict) or not {"relative", "routed"} <= set(table):
        raise TypeError("table must be an expert_table result (a dict with 'relative', 'routed')")
    rel = np.asarray(table["relative"])
    excess = max(float(r[k]) for r, k in zip(rel, table["routed"], strict=True))
    far = (float(rel[0][-1]), float(rel[-1][0]))
    slack = min(within - excess, far[0] - apart, far[1] - apart)
    return {"routed_excess": excess, "far_tight": far[0], "far_loose": far[1], "slack": slack}


def expert_sweep(seeds: Sequence[int], test_seeds: Sequence[int], settings: ExpertSettings):
    """:func:`expert_margins` of every training seed of the three-expert checkpoint, each on a
    test set of its own (training seed ``seeds[i]`` on instance seed ``test_seeds[i]``).

    Returns
    -------
    lab.core.sweep.Sweep
        One row per training seed: ``routed_excess``, ``far_tight``, ``far_loose``, ``slack``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    from dataclasses import replace

    from lab.core.sweep import sweep

    seeds, test_seeds = list(seeds), list(test_seeds)
    if len(seeds) != len(test_seeds):
        raise ValueError(f"test_seeds must hold one seed per training seed (got {test_seeds})")
    check_instance("settings", settings, ExpertSettings)

    def margins(seed: int) -> dict:
        test = replace(settings, seed=test_seeds[seeds.index(seed)])
        return expert_margins(checkpoint_expert_table(seed, test))

    return sweep(margins, None, seeds=seeds, desc="experts")


def training_table(keys=None) -> list[dict]:
    """Training settings and wall time of shipped checkpoints, from their stored ``meta``.

    Parameters
    ----------
    keys : list of (name, seed), optional
        Default: every shipped checkpoint (``checkpoint_keys()``).

    Returns
    -------
    list of dict
        ``name``, ``seed``, ``capacity``, ``experts``, ``steps``, ``batch``, ``seconds``
        (training wall time on one CPU thread), ``command``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    from .store import checkpoint_keys, read_checkpoint

    if keys is None:
        keys = checkpoint_keys()
    if not isinstance(keys, list | tuple):
        raise TypeError(f"keys must be a list of (name, seed) pairs (got {type(keys).__name__})")
    rows = []
    for key in keys:
        if not isinstance(key, tuple | list) or len(key) != 2:
            raise TypeError(f"keys must hold (name, seed) pairs (got {key!r})")
        meta = read_checkpoint(key[0], key[1])["meta"]
        lo, hi = meta["capacity_range"]
        rows.append(
            {
                "name": key[0],
                "seed": int(key[1]),
                "capacity": f"{lo}" if lo == hi else f"U{{{lo}..{hi}}}",
                "experts": meta["experts"],
                "steps": meta["steps"],
                "batch": meta["batch"],
                "seconds": float(meta["seconds"]),
                "command": meta["command"],
            }
        )
    return rows
