"""The stored runs of notebook 2: the partial-symmetry sweep and the runs longer than a
notebook's budget, each rebuilt by one command and read back by the notebook.

* the **sweep** (``lab/ace/data/sweep.json``): methods x ε x N x seeds at the sweep's 600 steps
  (``lab artifacts build ace/sweep``, minutes on two cores, one thread);
* the **long runs** (``lab/ace/data/converged.json``, ``lab artifacts build ace/converged``):

  - ``symmetric``: on fully symmetric data (``eps = 0``), equality ACE trained until its
    constraint is met (``max_i |gamma_i| < STOP_GAMMA``, checked every 100 steps, at most
    ``SYMMETRIC_MAX_STEPS``) before it is truncated, and the strict model trained for as many
    steps as its paired ACE run; the official code trains far longer and reports the truncated
    model;
  - ``robustness``: the strict and the resilient model of notebook 2's live setting
    (``eps = 0.5``, ``N = 64``, the sweep's 600 steps) over ``ROBUST_SEEDS``, with the growth of
    the test MSE under Gaussian input noise (``input_robustness``).

Both files carry their provenance (:mod:`lab.core.artifacts`). ``tests/test_ace.py`` (marked
``slow``) regenerates every entry behind a recorded claim and compares it with the files.

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.ace.experiments import input_robustness, train_toy
from lab.ace.models import METHODS
from lab.ace.settings import METHOD_SETTINGS, SWEEP_SETTINGS, ToySettings, sweep_settings
from lab.core.artifacts import load_json, save_json
from lab.core.checks import check_choice, check_int, check_range, check_real
from lab.core.memo import memo

__all__ = [
    "LONG_RUNS_PATH",
    "ROBUST_SEEDS",
    "STOP_GAMMA",
    "SWEEP_GRID",
    "SWEEP_PATH",
    "SYMMETRIC_MAX_STEPS",
    "cell_runs",
    "load_long_runs",
    "load_sweep",
    "long_run",
    "long_run_jobs",
    "run_long_runs",
    "run_sweep",
    "sweep_key",
    "sweep_mse",
]

SWEEP_PATH = Path(__file__).with_name("data") / "sweep.json"
SWEEP_GRID: dict[str, Sequence] = {
    "method": ("strict", "unconstrained", "equality", "resilient"),
    "eps": (0.0, 0.5, 1.0),
    "N": (16, 32, 64, 128, 256),
    "seed": (0, 1),
}
LONG_RUNS_PATH = Path(__file__).with_name("data") / "converged.json"
#: the symmetric-data runs: equality ACE trains until max |gamma_i| < STOP_GAMMA (at most
#: SYMMETRIC_MAX_STEPS steps); the strict model as many steps as its paired ACE run
SYMMETRIC_MAX_STEPS = 8000
STOP_GAMMA = 1e-2
#: seeds of the robustness runs
ROBUST_SEEDS = (0, 1, 2, 3, 4)
ROBUST_SETTING = {"eps": 0.5, "N": 64, "sigma": 0.1, "draws": 8}
_METRICS = ("test_mse", "test_mse_truncated", "eq_error", "eq_error_truncated")


# ----------------------------------------------------------------------------------------
# The sweep
# ----------------------------------------------------------------------------------------
def _seq(name: str, value: Any) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(f"{name} must be a non-empty sequence (got {value!r})")
    return list(value)


def sweep_key(method: str, eps: float, N: int, seed: int) -> str:
    """The key of one run in a sweep's ``runs`` (``method|eps|N|seed``)."""
    return f"{method}|{eps:g}|{N}|{seed}"


def _record(out: dict[str, Any]) -> dict[str, Any]:
    """The stored numbers of a :func:`train_toy` result: final metrics, ``lam`` and ``u``."""
    ace = out["ace"]
    return {
        **out["final"],
        "lam": [] if ace is None else ace.lam.tolist(),
        "u": [] if ace is None or ace.u is None else ace.u.detach().tolist(),
    }


def _flat(record: dict[str, Any]) -> dict[str, float]:
    """A record as numbers only (``gamma_0``, ``lam_0``, ...), what :func:`lab.core.sweep.sweep`
    carries; :func:`_unflat` inverts it."""
    out = {k: float(record[k]) for k in (*_METRICS, "steps")}
    for name in ("gamma", "lam", "u"):
        out.update({f"{name}_{i}": float(v) for i, v in enumerate(record[name])})
    return out


def _unflat(row: dict[str, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = {k: row[k] for k in _METRICS}
    rec["steps"] = int(row["steps"])
    for name in ("gamma", "lam", "u"):
        n = sum(1 for k in row if k.startswith(f"{name}_"))
        rec[name] = [row[f"{name}_{i}"] for i in range(n)]
    return rec


def _sweep_point(method: str, eps: float, N: int, seed: int, budget: int) -> dict[str, float]:
    """One sweep run (``budget`` steps) as numbers (:func:`_flat`)."""
    settings = sweep_settings(method, N=int(N), eps=float(eps), seed=int(seed), steps=budget)
    return _flat(_record(train_toy(settings)))


def run_sweep(
    methods: Sequence[str] = SWEEP_GRID["method"],
    eps_values: Sequence[float] = SWEEP_GRID["eps"],
    N_values: Sequence[int] = SWEEP_GRID["N"],
    seeds: Sequence[int] = SWEEP_GRID["seed"],
    steps: int | None = None,
    path: str | Path | None = None,
) -> dict[str, Any]:
    """Train every combination with :func:`~lab.ace.experiments.train_toy` (the settings of
    :func:`~lab.ace.settings.sweep_settings`, one :func:`lab.core.sweep.sweep` over the seeds)
    and return (and optionally save) the final numbers: test MSE (deployed and truncated),
    equivariance error, gamma, u, lambda.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import itertools

    from lab.core.sweep import sweep

    methods = [check_choice("methods", m, METHODS) for m in _seq("methods", methods)]
    eps_values = [check_real("eps_values", e) for e in _seq("eps_values", eps_values)]
    N_values = [check_int("N_values", n, 1) for n in _seq("N_values", N_values)]
    seeds = [check_int("seeds", s, 0) for s in _seq("seeds", seeds)]
    steps = SWEEP_SETTINGS["steps"] if steps is None else check_int("steps", steps, 1)
    grid = [{"method": m, "eps": e, "N": n, "budget": steps}
            for m, e, n in itertools.product(methods, eps_values, N_values)]  # fmt: skip
    done = sweep(_sweep_point, grid, seeds=seeds, desc="ACE sweep")
    runs = {sweep_key(r["method"], r["eps"], r["N"], r["seed"]): _unflat(r) for r in done.rows}
    result = {
        "settings": {**SWEEP_SETTINGS, "steps": steps, "per_method": METHOD_SETTINGS},
        "grid": {"method": list(methods), "eps": [float(e) for e in eps_values],
                 "N": [int(n) for n in N_values], "seed": [int(s) for s in seeds]},
        "runs": runs,
    }  # fmt: skip
    if path is not None:
        save_json(path, result, "ace/sweep", indent=0)
    return result


def load_sweep(path: str | Path | None = None) -> dict[str, Any]:
    """The stored sweep (``lab/ace/data/sweep.json`` by default).

    See: book/ace/02-partial-symmetry.ipynb
    """
    return load_json(SWEEP_PATH if path is None else path, "ace/sweep")


def _check_sweep(sweep: Any) -> dict[str, Any]:
    if not isinstance(sweep, dict) or "runs" not in sweep or "grid" not in sweep:
        raise TypeError("sweep must be a dict from load_sweep or run_sweep (with 'runs', 'grid')")
    return sweep


def sweep_mse(sweep: dict[str, Any], method: str, eps: float, N: int, key: str = "test_mse"):
    """Seed-averaged ``key`` of one (method, eps, N) cell of a sweep.

    See: book/ace/02-partial-symmetry.ipynb
    """
    _check_sweep(sweep)
    method = check_choice("method", method, METHODS)
    eps = check_real("eps", eps)
    N = check_int("N", N, 1)
    key = check_choice("key", key, _METRICS)
    vals = [
        sweep["runs"][sweep_key(method, eps, N, s)][key]
        for s in sweep["grid"]["seed"]
        if sweep_key(method, eps, N, s) in sweep["runs"]
    ]
    if not vals:
        raise ValueError(f"no runs for method={method!r}, eps={eps:g}, N={N} in the sweep")
    return sum(vals) / len(vals)


@memo(maxsize=64)
def _off_grid_run(method: str, eps: float, N: int, steps: int) -> dict[str, Any]:
    return _record(train_toy(sweep_settings(method, N=N, eps=eps, steps=steps)))


def cell_runs(sweep: dict[str, Any], eps: float, N: int, steps: int = 300) -> dict[str, list]:
    """The runs of the four methods at one (ε, N): the stored sweep's seeds when the cell is on
    its grid, otherwise one seed trained now for ``steps`` steps (the sweep's settings; kept in
    memory). Each run is a dict of final numbers with ``gamma``, ``u`` and ``lam``, what
    :func:`~lab.ace.figures.partial_symmetry_figure` draws.

    See: book/ace/02-partial-symmetry.ipynb
    """
    _check_sweep(sweep)
    eps = float(check_range("eps", eps, 0.0, 10.0))
    N = check_int("N", N, 1)
    steps = check_int("steps", steps, 1)
    on_grid = eps in sweep["grid"]["eps"] and N in sweep["grid"]["N"]
    cells = {}
    for m in SWEEP_GRID["method"]:
        if on_grid:
            keys = [sweep_key(m, eps, N, s) for s in sweep["grid"]["seed"]]
            cells[m] = [sweep["runs"][k] for k in keys if k in sweep["runs"]]
        else:
            cells[m] = [_off_grid_run(m, eps, N, steps)]
    return cells


# ----------------------------------------------------------------------------------------
# The long runs
# ----------------------------------------------------------------------------------------
def long_run_jobs() -> list[tuple[str, str, float, int, int]]:
    """Every stored long run: ``(kind, method, eps, N, seed)``, kind ``symmetric`` or
    ``robustness``.

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


def _long_key(kind: str, method: str, eps: float, N: int, seed: int) -> str:
    return f"{kind}|{method}|{eps:g}|{N}|{seed}"


def long_run(
    kind: str, method: str, eps: float, N: int, seed: int, steps: int | None = None
) -> dict[str, Any]:
    """One stored long run (see the module docstring). ``steps``: the step budget (default: the
    sweep's for ``robustness``; ``SYMMETRIC_MAX_STEPS`` for ``symmetric``, where equality ACE
    stops once its constraint is met and the strict model needs its paired run's count).

    Returns
    -------
    dict
        ``train_toy``'s final numbers (test MSE deployed and truncated, equivariance errors,
        gamma) plus ``steps`` and, for ``robustness``, ``clean``, ``perturbed``,
        ``degradation``.

    See: book/ace/02-partial-symmetry.ipynb
    """
    kind = check_choice("kind", kind, ("symmetric", "robustness"))
    method = check_choice("method", method, tuple(METHOD_SETTINGS))
    default = SYMMETRIC_MAX_STEPS if kind == "symmetric" else SWEEP_SETTINGS["steps"]
    steps = default if steps is None else check_int("steps", steps, 1)
    stop = STOP_GAMMA if kind == "symmetric" and method == "equality" else None
    settings: ToySettings = sweep_settings(
        method, N=check_int("N", N, 1), eps=float(eps), seed=check_int("seed", seed, 0),
        steps=steps, stop_gamma=stop,
    )  # fmt: skip
    out = train_toy(settings)
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
    return _long_key(*job[:5]), long_run(*job)


def run_long_runs(workers: int = 2, path: str | Path | None = None) -> dict[str, Any]:
    """Run every job of :func:`long_run_jobs` (``workers`` processes; each job seeds itself,
    so the pool's order does not matter) and save the results to ``path`` (default
    ``LONG_RUNS_PATH``). Minutes on two cores.

    See: book/ace/02-partial-symmetry.ipynb
    """
    from concurrent.futures import ProcessPoolExecutor

    workers = check_int("workers", workers, 1, 64)
    if path is not None and not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path (got {type(path).__name__})")
    jobs = long_run_jobs()
    first = [j for j in jobs if not (j[0] == "symmetric" and j[1] == "strict")]
    with ProcessPoolExecutor(workers) as pool:
        runs = dict(pool.map(_job, first))
        # the strict model trains as many steps as its paired equality-ACE run took
        paired = [
            (*j, runs[_long_key("symmetric", "equality", *j[2:])]["steps"])
            for j in jobs
            if j[0] == "symmetric" and j[1] == "strict"
        ]
        runs.update(pool.map(_job, paired))
    result = {
        "settings": {
            **SWEEP_SETTINGS,
            "symmetric_max_steps": SYMMETRIC_MAX_STEPS,
            "stop_gamma": STOP_GAMMA,
            "robust_seeds": list(ROBUST_SEEDS),
            "robustness": ROBUST_SETTING,
            "per_method": METHOD_SETTINGS,
        },
        "runs": runs,
    }
    save_json(LONG_RUNS_PATH if path is None else path, result, "ace/converged", indent=0)
    return result


def load_long_runs(path: str | Path | None = None) -> dict[str, Any]:
    """The stored long runs (``lab/ace/data/converged.json`` by default).

    See: book/ace/02-partial-symmetry.ipynb
    """
    return load_json(LONG_RUNS_PATH if path is None else path, "ace/converged")


# ----------------------------------------------------------------------------------------
# The two builders (lab artifacts build ace/sweep, ace/converged)
# ----------------------------------------------------------------------------------------
def build_sweep(argv: list[str] | None = None) -> int:  # pragma: no cover - minutes
    """``lab artifacts build ace/sweep``: rerun the whole sweep into ``SWEEP_PATH``."""
    import argparse

    import torch

    argparse.ArgumentParser(prog="lab artifacts build ace/sweep").parse_args(argv)
    torch.set_num_threads(1)
    run_sweep(path=SWEEP_PATH)
    print(f"wrote {SWEEP_PATH}")
    return 0


def build_long_runs(argv: list[str] | None = None) -> int:  # pragma: no cover - minutes
    """``lab artifacts build ace/converged [-- --workers N]``: rerun every stored long run."""
    import argparse

    p = argparse.ArgumentParser(prog="lab artifacts build ace/converged")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    run_long_runs(p.parse_args(argv).workers)
    print(f"wrote {LONG_RUNS_PATH}")
    return 0
