"""Stored runs that take longer than a notebook's budget: equality ACE trained until its
constraint is met, and the robustness of the trained models over seeds.

Two claims of notebook 2 need more than the sweep's 600 steps or more seeds than a live run:

* ``symmetric``: on fully symmetric data (``eps = 0``), equality ACE trained until its
  constraint is met (``max_i |gamma_i| < STOP_GAMMA``, checked every 100 steps, at most
  ``CONVERGED_STEPS``) before it is truncated, and the strict model trained for as many steps
  as its paired ACE run; the official code trains far longer and reports the truncated model;
* ``robustness``: the strict and the resilient model of notebook 2's live setting
  (``eps = 0.5``, ``N = 64``, the sweep's 600 steps) over ``ROBUST_SEEDS``, with the growth of
  the test MSE under Gaussian input noise (``input_robustness``).

The command that rebuilds ``lab/ace/data/converged.json`` (fixed seeds, one torch thread per
run, several runs in parallel; minutes on two cores)::

    lab artifacts build ace/converged

``tests/test_ace.py`` (marked ``slow``) regenerates entries and compares them with the file.

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.ace.experiments import (
    METHOD_SETTINGS,
    SWEEP_GRID,
    SWEEP_SETTINGS,
    input_robustness,
    train_toy,
)
from lab.core.checks import check_choice, check_int

__all__ = [
    "CONVERGED_PATH",
    "CONVERGED_STEPS",
    "ROBUST_SEEDS",
    "STOP_GAMMA",
    "converged_jobs",
    "converged_run",
    "load_converged",
    "run_converged",
]

CONVERGED_PATH = Path(__file__).with_name("data") / "converged.json"
#: the symmetric-data runs: equality ACE trains until max |gamma_i| < STOP_GAMMA (at most
#: CONVERGED_STEPS steps); the strict model as many steps as its paired ACE run
CONVERGED_STEPS = 8000
STOP_GAMMA = 1e-2
#: seeds of the robustness runs
ROBUST_SEEDS = (0, 1, 2, 3, 4)
ROBUST_SETTING = {"eps": 0.5, "N": 64, "sigma": 0.1, "draws": 8}


def converged_jobs() -> list[tuple[str, str, float, int, int]]:
    """Every stored run: ``(kind, method, eps, N, seed)``, kind ``symmetric`` or ``robustness``.

    See: book/ace/02-partial-symmetry.ipynb
    """
    jobs = [
        ("symmetric", m, 0.0, int(n), int(s))
        for m in ("strict", "equality")
        for n in SWEEP_GRID["N"]
        for s in SWEEP_GRID["seed"]
    ]
    jobs += [
        ("robustness", m, ROBUST_SETTING["eps"], ROBUST_SETTING["N"], s)
        for m in ("strict", "resilient")
        for s in ROBUST_SEEDS
    ]
    return jobs


def _key(kind: str, method: str, eps: float, N: int, seed: int) -> str:
    return f"{kind}|{method}|{eps:g}|{N}|{seed}"


def converged_run(
    kind: str, method: str, eps: float, N: int, seed: int, steps: int | None = None
) -> dict[str, Any]:
    """One stored run (see the module docstring). ``steps``: the step budget (default: the sweep's
    for ``robustness``; ``CONVERGED_STEPS`` for ``symmetric``, where equality ACE stops once its
    constraint is met and the strict model needs its paired run's count).

    Returns
    -------
    dict
        ``train_toy``'s final numbers (test MSE deployed and truncated, equivariance errors,
        gamma) plus ``steps`` and, for ``robustness``, ``clean``, ``perturbed``,
        ``degradation``.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import torch

    kind = check_choice("kind", kind, ("symmetric", "robustness"))
    method = check_choice("method", method, tuple(METHOD_SETTINGS))
    default = CONVERGED_STEPS if kind == "symmetric" else SWEEP_SETTINGS["steps"]
    steps = default if steps is None else check_int("steps", steps, 1)
    stop = STOP_GAMMA if kind == "symmetric" and method == "equality" else None
    with torch.random.fork_rng(devices=[]):
        out = train_toy(
            method,
            N=check_int("N", N, 1),
            eps=float(eps),
            seed=check_int("seed", seed, 0),
            record_every=10**9,
            stop_gamma=stop,
            **{**SWEEP_SETTINGS, "steps": steps},
            **METHOD_SETTINGS[method],
        )
    rec = dict(out["final"])
    if kind == "robustness":
        r = input_robustness(
            out, sigma=ROBUST_SETTING["sigma"], draws=ROBUST_SETTING["draws"], seed=seed
        )
        rec.update(clean=r.clean, perturbed=r.perturbed, degradation=r.degradation)
    return rec


def _job(job: tuple) -> tuple[str, dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    return _key(*job[:5]), converged_run(*job)


def run_converged(workers: int = 2, path: str | Path | None = None) -> dict[str, Any]:
    """Run every job of `converged_jobs` (``workers`` processes) and save the results to
    ``path`` (default ``CONVERGED_PATH``). Minutes on two cores.

    See: book/ace/02-partial-symmetry.ipynb
    """
    from concurrent.futures import ProcessPoolExecutor

    workers = check_int("workers", workers, 1, 64)
    if path is not None and not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path (got {type(path).__name__})")
    jobs = converged_jobs()
    first = [j for j in jobs if not (j[0] == "symmetric" and j[1] == "strict")]
    with ProcessPoolExecutor(workers) as pool:
        runs = dict(pool.map(_job, first))
        # the strict model trains as many steps as its paired equality-ACE run took
        paired = [
            (*j, runs[_key("symmetric", "equality", *j[2:])]["steps"])
            for j in jobs
            if j[0] == "symmetric" and j[1] == "strict"
        ]
        runs.update(pool.map(_job, paired))
    result = {
        "settings": {
            **SWEEP_SETTINGS,
            "symmetric_max_steps": CONVERGED_STEPS,
            "stop_gamma": STOP_GAMMA,
            "robust_seeds": list(ROBUST_SEEDS),
            "robustness": ROBUST_SETTING,
            "per_method": METHOD_SETTINGS,
        },
        "runs": runs,
    }
    p = CONVERGED_PATH if path is None else Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(result, indent=0, sort_keys=True))
    return result


def load_converged(path: str | Path | None = None) -> dict[str, Any]:
    """The stored runs (``lab/ace/data/converged.json`` by default).

    See: book/ace/02-partial-symmetry.ipynb
    """
    p = CONVERGED_PATH if path is None else Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no stored runs at {p}; run `lab artifacts build ace/converged`")
    return json.loads(p.read_text())


def build_converged(argv: list[str] | None = None) -> int:  # pragma: no cover - minutes
    """``lab artifacts build ace/converged [-- --workers N]``: rerun every stored run."""
    import argparse

    p = argparse.ArgumentParser(prog="lab artifacts build ace/converged")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    run_converged(p.parse_args(argv).workers)
    print(f"wrote {CONVERGED_PATH}")
    return 0
