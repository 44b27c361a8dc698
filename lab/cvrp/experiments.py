"""The chapter's drivers: gap tables against PyVRP, seed comparisons, forced experts,
the route maps' solves and the shipped models (computed and cached here; figures draw)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lab.core.checks import check_int, check_positive
from lab.core.memo import memo

from .problems import generate_cvrp

__all__ = [
    "CAPACITIES",
    "MODEL_NAMES",
    "REFERENCE_SETTINGS",
    "gap_table",
    "seed_gaps",
    "seed_rule",
    "seed_comparison",
    "instance_comparison",
    "reference_lengths",
    "training_table",
    "expert_lengths",
    "expert_table",
    "shipped_models",
    "solve_all",
]

#: The three models of the route maps and decoding comparisons (training seed 0).
MODEL_NAMES = {
    "fixed C = 30": "cvrp20_fixed30",
    "VCT": "cvrp20_vct",
    "VCT + MEM": "cvrp20_vct_mem3",
}

#: The capacity grid of the chapter's gap-vs-tightness curves.
CAPACITIES = (10, 20, 30, 50, 100, 200)


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

    from .fast import actions_to_routes, best_tours
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
            best, acts = best_tours(m, b, augment, starts)
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

    if not isinstance(batch, CVRPBatch):
        raise TypeError(f"batch must be a CVRPBatch (got {type(batch).__name__})")
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
    from .solvers import route_feasible, solve_pyvrp, tour_length

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


def expert_table(model, capacities, instances: int = 32, n: int = 20, seed: int = 4321) -> dict:
    """Forced-expert lengths of ``model`` per capacity (for ``figures.expert_figure``).

    Returns ``capacities``, ``labels`` (each expert's capacity interval), ``mean`` (mean
    length per expert), ``relative`` (% above the best expert) and ``routed`` (the expert
    ``route_to_expert`` picks) per capacity.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module) or not len(getattr(model, "experts", ())):
        raise TypeError(f"model must be a TinyPOMO with experts (got {type(model).__name__})")
    capacities = [check_positive("capacities", c) for c in capacities]
    edges = model.config["edges"]
    bounds = [0, *edges, np.inf]
    labels = [f"C in ({bounds[k]:g}, {bounds[k + 1]:g}]" for k in range(len(edges) + 1)]
    out = {
        "capacities": list(capacities),
        "labels": labels,
        "relative": [],
        "routed": [],
        "mean": [],
    }
    for c in capacities:
        L = expert_lengths(model, generate_cvrp(instances, n, c, seed=seed)).mean(axis=1)
        out["mean"].append(L)
        out["relative"].append(100 * (L / L.min() - 1))
        out["routed"].append(int(model.expert_of(torch.tensor([float(c)]))[0]))
    out["relative"] = np.array(out["relative"])
    return out


# ----------------------------------------------------------------------------------------
# Cached PyVRP references, seeds and training times
# ----------------------------------------------------------------------------------------
#: The shipped PyVRP reference: its settings (``reference_lengths`` recomputes on a mismatch).
REFERENCE_FILE = Path(__file__).with_name("data") / "pyvrp-reference.json"
REFERENCE_SETTINGS = {"n": 20, "instances": 32, "seed": 1234, "seconds": 0.2}


def _reference_file(instances: int, seed: int) -> Path:
    """Where the cached PyVRP lengths of ``generate_cvrp(instances, 20, C, seed)`` live."""
    s = REFERENCE_SETTINGS
    if (instances, seed) == (s["instances"], s["seed"]):
        return REFERENCE_FILE
    return REFERENCE_FILE.with_name(f"pyvrp-reference-{instances}x{seed}.json")


def _fingerprint(instances: int, n: int, seed: int) -> str:
    """A hash of the customers of ``generate_cvrp(instances, n, C, seed)`` (the same at every
    ``C``): a cached reference is only read for the instances it was solved on."""
    import hashlib

    b = generate_cvrp(instances, n, 10, seed=seed)
    xy = np.round(b.xy.double().numpy() * 1e6).astype(np.int64)
    q = b.demand.numpy().astype(np.int64)
    return hashlib.sha256(xy.tobytes() + q.tobytes()).hexdigest()[:16]


def _stored(caps, instances, n, seed, seconds, first) -> list | None:
    """The cached lengths of the first ``first`` instances per capacity, or None."""
    path = _reference_file(instances, seed)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    s = data["settings"]
    if (s["n"], s["instances"], s["seed"], s["seconds"]) != (n, instances, seed, seconds):
        return None
    stored = data["lengths"]
    if not all(len(stored.get(f"{c:g}", ())) >= first for c in caps):
        return None
    if "fingerprint" in data and data["fingerprint"] != _fingerprint(instances, n, seed):
        raise RuntimeError(
            f"{path.name} does not belong to generate_cvrp({instances}, {n}, C, seed={seed}) "
            "(the instance generator changed?): rerun `python -m lab.cvrp.experiments "
            f"--instances {instances} --seed {seed}`"
        )
    return [np.array(stored[f"{c:g}"][:first]) for c in caps]


def reference_lengths(
    capacities: Sequence[float] = CAPACITIES,
    instances: int = 32,
    n: int = 20,
    seed: int = 1234,
    seconds: float = 0.2,
    cache: bool = True,
    live: int | None = None,
) -> list:
    """PyVRP lengths of the test instances (``generate_cvrp(instances, n, C, seed)``) per ``C``.

    With ``cache`` the lengths come from the file of these settings in ``lab/cvrp/data`` when
    it holds every capacity (``REFERENCE_FILE`` for ``REFERENCE_SETTINGS``; the other sets of
    the chapter in ``pyvrp-reference-<instances>x<seed>.json``, each made by
    ``python -m lab.cvrp.experiments --instances ... --seed ...`` and checked against a hash of
    the instances); otherwise PyVRP runs ``seconds`` per instance. Either way only the first
    ``live`` instances (default all) are returned (the instances depend on ``instances``,
    since the generator draws the whole batch).

    Returns
    -------
    list of numpy.ndarray
        One ``(live,)`` array per capacity, for ``gap_table(..., reference=...)``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from .solvers import reference_costs

    caps = [check_positive("capacities", c) for c in capacities]
    instances = check_int("instances", instances, 1)
    n = check_int("n", n, 2)
    seed = check_int("seed", seed, 0)
    seconds = check_positive("seconds", seconds)
    live = instances if live is None else check_int("live", live, 1, instances)
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be a bool (got {type(cache).__name__})")
    stored = _stored(caps, instances, n, seed, seconds, live) if cache else None
    if stored is not None:
        return stored
    idx = list(range(live))
    return [
        reference_costs(generate_cvrp(instances, n, c, seed=seed).subset(idx), seconds)
        for c in caps
    ]


def seed_gaps(table: dict, name: str) -> np.ndarray:
    """Gaps (%) of every training seed of checkpoint ``name`` in a ``gap_table`` result.

    The table's models must be labelled ``"<name>-seed<k>"`` (as ``checkpoint_keys`` gives).

    Returns
    -------
    numpy.ndarray
        ``(seeds, capacities)``, seeds in increasing order.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    if not isinstance(table, dict) or "gaps" not in table:
        raise TypeError("table must be a gap_table result (a dict with 'gaps')")
    if not isinstance(name, str):
        raise TypeError(f"name must be a checkpoint name (got {type(name).__name__})")
    rows = sorted(
        (int(k.rsplit("-seed", 1)[1]), v)
        for k, v in table["gaps"].items()
        if k.rsplit("-seed", 1)[0] == name and "-seed" in k
    )
    if not rows:
        raise ValueError(f"name {name!r} has no '<name>-seed<k>' model in the table")
    return np.array([v for _, v in rows], dtype=float)


def seed_rule(better: str = "new", worse: str = "old"):
    """The verdict rule for "``better`` has a lower gap than ``worse``": a paired interval.

    The measured value is a paired interval (``lab.core.claims.paired``) of ``better - worse``:
    over training seeds (:func:`seed_comparison`) where both models have several, over test
    instances (:func:`instance_comparison`) where one has a single checkpoint. Reproduced when
    the whole 95% interval lies below zero; there is no qualitative tier (an ordering of means
    is a sign test).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    if not isinstance(better, str) or not isinstance(worse, str):
        raise TypeError("better and worse must be labels (strings)")
    return claims.rule(reproduced=claims.ci_below(0.0))


def _per_seed(name: str, values) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a sequence of numbers, one per seed") from e
    if v.ndim != 1 or v.size < 1 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a 1-d array of finite numbers, got shape {v.shape}")
    return v


def seed_comparison(better, worse) -> dict:
    """Paired interval over training seeds of ``better - worse`` (seed ``i`` with seed ``i``).

    A model with one checkpoint (one value) is paired with every seed of the other, so the
    interval then carries the other model's seed spread only.

    Parameters
    ----------
    better, worse : array_like, shape (seeds,)
        One value per training seed (average gap, spread...); equal lengths, or one of
        length 1; at least two pairs.

    Returns
    -------
    dict
        ``lab.core.claims.paired``'s interval (``estimate``, ``lo``, ``hi``, ``se``, ``n``).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    b, w = _per_seed("better", better), _per_seed("worse", worse)
    if b.size == 1:
        b = np.full(w.shape, b[0])
    if w.size == 1:
        w = np.full(b.shape, w[0])
    if b.size != w.size or b.size < 2:
        raise ValueError(
            f"better and worse must hold one value per seed (>= 2 pairs), got {b.size} and {w.size}"
        )
    return claims.paired(b, w)


def instance_comparison(table: dict, better: str, rivals: Sequence[str], capacity: int) -> dict:
    """The least favourable paired interval over test instances of ``better - rival``.

    For each rival model, the per-instance gaps of ``better`` and the rival at ``capacity`` (the
    same instances) give a paired interval of the difference; the one with the highest upper
    bound is returned, with ``"rival"`` naming it. Used where a model has one checkpoint, so
    no interval over training seeds exists: the interval carries instance noise only.

    Parameters
    ----------
    table : dict
        A :func:`gap_table` result (``gap_instances``, ``capacities``).
    better : str
        A model label of the table.
    rivals : sequence of str
        Other model labels of the table (at least one).
    capacity : int
        One of the table's capacities.

    Returns
    -------
    dict
        ``lab.core.claims.paired``'s interval plus ``"rival"``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from lab.core import claims

    if not isinstance(table, dict) or "gap_instances" not in table:
        raise TypeError("table must be a gap_table result (a dict with 'gap_instances')")
    labels = table["gap_instances"]
    if not isinstance(better, str) or better not in labels:
        raise ValueError(f"better must be a model label of the table, got {better!r}")
    if isinstance(rivals, str) or not isinstance(rivals, Sequence) or not rivals:
        raise TypeError("rivals must be a non-empty sequence of model labels")
    for r in rivals:
        if r not in labels or r == better:
            raise ValueError(f"rivals must be other model labels of the table, got {r!r}")
    caps = list(table["capacities"])
    if capacity not in caps:
        raise ValueError(f"capacity must be one of the table's capacities {caps}, got {capacity!r}")
    j = caps.index(capacity)
    out = [dict(claims.paired(labels[better][j], labels[r][j]), rival=r) for r in rivals]
    return max(out, key=lambda d: d["hi"])


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


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - one-off command
    """``python -m lab.cvrp.experiments [--instances I --seed S --capacities C ...]``: solve
    and store a PyVRP reference (default: the shipped ``REFERENCE_SETTINGS`` set)."""
    import argparse

    s = REFERENCE_SETTINGS
    p = argparse.ArgumentParser(prog="python -m lab.cvrp.experiments", description=main.__doc__)
    p.add_argument("--instances", type=int, default=s["instances"])
    p.add_argument("--seed", type=int, default=s["seed"])
    p.add_argument("--capacities", type=float, nargs="+", default=list(CAPACITIES))
    a = p.parse_args(argv)
    caps = [int(c) if c == int(c) else c for c in a.capacities]
    ref = reference_lengths(caps, a.instances, s["n"], a.seed, s["seconds"], False)
    path = _reference_file(a.instances, a.seed)
    path.parent.mkdir(exist_ok=True)
    settings = {"n": s["n"], "instances": a.instances, "seed": a.seed, "seconds": s["seconds"]}
    lengths = {f"{c:g}": [round(float(x), 6) for x in r] for c, r in zip(caps, ref, strict=True)}
    if path == REFERENCE_FILE:  # the shipped file's layout, unchanged
        payload = {
            "settings": {**settings, "capacities": caps},
            "command": "python -m lab.cvrp.experiments",
            "lengths": lengths,
        }
        path.write_text(json.dumps(payload, indent=1) + "\n")
    else:  # one line per capacity
        command = (
            f"python -m lab.cvrp.experiments --instances {a.instances} --seed {a.seed} "
            "--capacities " + " ".join(f"{c:g}" for c in caps)
        )
        head = {
            "settings": {**settings, "capacities": caps},
            "fingerprint": _fingerprint(a.instances, s["n"], a.seed),
            "command": command,
        }
        rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in lengths.items())
        path.write_text(json.dumps(head, indent=1)[:-2] + ',\n "lengths": {\n' + rows + "\n }\n}\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
