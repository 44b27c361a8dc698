"""The chapter's test sets and their PyVRP reference lengths, solved once and stored in
``lab/cvrp/data`` (``lab artifacts build cvrp/reference -- --instances I --seed S``), each file
checked against a hash of the instances it was solved on.

See: book/cvrp/02-gap-vs-tightness.ipynb
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lab.core.checks import check_instance, check_int

from .problems import generate_cvrp
from .settings import CAPACITIES, GapSettings

__all__ = ["REFERENCE_SETTINGS", "reference_lengths"]

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
            "(the instance generator changed?): rerun `lab artifacts build cvrp/reference -- "
            f"--instances {instances} --seed {seed}`"
        )
    return [np.array(stored[f"{c:g}"][:first]) for c in caps]


def reference_lengths(
    test: GapSettings | None = None, cache: bool = True, live: int | None = None
) -> list:
    """PyVRP lengths of the test instances of ``test``, one array per capacity.

    With ``cache`` the lengths come from the file of these settings in ``lab/cvrp/data`` when
    it holds every capacity (``REFERENCE_FILE`` for ``REFERENCE_SETTINGS``; the other sets of
    the chapter in ``pyvrp-reference-<instances>x<seed>.json``, each made by
    ``lab artifacts build cvrp/reference -- --instances ... --seed ...`` and checked against a hash of
    the instances); otherwise PyVRP runs ``test.seconds`` per instance. Either way only the
    first ``live`` instances (default all) are returned (the instances depend on
    ``test.instances``, since the generator draws the whole batch).

    Returns
    -------
    list of numpy.ndarray
        One ``(live,)`` array per capacity, for ``gap_table(..., reference=...)``.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    test = GapSettings() if test is None else test
    from .solvers import reference_costs

    check_instance("test", test, GapSettings)
    t = test
    live = t.instances if live is None else check_int("live", live, 1, t.instances)
    check_instance("cache", cache, bool)
    caps = list(t.capacities)
    stored = _stored(caps, t.instances, t.n, t.seed, t.seconds, live) if cache else None
    if stored is not None:
        return stored
    idx = list(range(live))
    return [
        reference_costs(generate_cvrp(t.instances, t.n, c, seed=t.seed).subset(idx), t.seconds)
        for c in caps
    ]


def write_reference(argv: list[str] | None = None) -> int:  # pragma: no cover
    """``lab artifacts build cvrp/reference [-- --instances I --seed S --capacities C ...]``: solve
    and store a PyVRP reference (default: the shipped ``REFERENCE_SETTINGS`` set)."""
    import argparse

    s = REFERENCE_SETTINGS
    p = argparse.ArgumentParser(
        prog="lab artifacts build cvrp/reference", description=write_reference.__doc__
    )
    p.add_argument("--instances", type=int, default=s["instances"])
    p.add_argument("--seed", type=int, default=s["seed"])
    p.add_argument("--capacities", type=float, nargs="+", default=list(CAPACITIES))
    a = p.parse_args(argv)
    caps = [int(c) if c == int(c) else c for c in a.capacities]
    test = GapSettings(tuple(caps), a.instances, s["n"], a.seed, s["seconds"])
    ref = reference_lengths(test, cache=False)
    path = _reference_file(a.instances, a.seed)
    path.parent.mkdir(exist_ok=True)
    settings = {"n": s["n"], "instances": a.instances, "seed": a.seed, "seconds": s["seconds"]}
    lengths = {f"{c:g}": [round(float(x), 6) for x in r] for c, r in zip(caps, ref, strict=True)}
    if path == REFERENCE_FILE:  # the shipped file's layout, unchanged
        payload = {
            "settings": {**settings, "capacities": caps},
            "command": "lab artifacts build cvrp/reference",
            "lengths": lengths,
        }
        path.write_text(json.dumps(payload, indent=1) + "\n")
    else:  # one line per capacity
        command = (
            f"lab artifacts build cvrp/reference -- --instances {a.instances} --seed {a.seed} "
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
