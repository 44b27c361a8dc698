"""Train-or-load: the partial-symmetry sweep (methods x eps x N x seeds) behind notebook 2.

The full sweep takes minutes on two cores, more than a notebook's budget, so it is run once
by a project command with fixed seeds and committed as a small JSON file
(``lab/ace/data/sweep.json``). ``load_sweep`` reads it; ``run_sweep`` regenerates it (or a
short version, which a test compares with the stored numbers).

    python -m lab.ace.sweep            # regenerate lab/ace/data/sweep.json

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.checks import check_int

SWEEP_PATH = Path(__file__).with_name("data") / "sweep.json"

# the settings every sweep run shares (also used by notebook 2's live runs)
SWEEP_SETTINGS: dict[str, Any] = {"steps": 600, "lr": 1e-2, "noise": 0.05, "C": 16, "layers": 3}
# per-method settings: equality ACE is damped (augmented term c = 1, Adam on gamma); SGD on
# gamma (notebook 1's fastest-settling regime) diverged in most sweep runs at this step size
METHOD_SETTINGS: dict[str, dict[str, Any]] = {
    "strict": {},
    "unconstrained": {},
    "equality": {"dual_lr": 0.05, "aug": 1.0},
    "resilient": {"dual_lr": 0.05, "rho": 10.0},
}
SWEEP_GRID: dict[str, Sequence] = {
    "method": ("strict", "unconstrained", "equality", "resilient"),
    "eps": (0.0, 0.5, 1.0),
    "N": (16, 32, 64, 128, 256),
    "seed": (0, 1),
}


def _key(method: str, eps: float, N: int, seed: int) -> str:
    return f"{method}|{eps:g}|{N}|{seed}"


def run_sweep(
    methods: Sequence[str] = SWEEP_GRID["method"],
    eps_values: Sequence[float] = SWEEP_GRID["eps"],
    N_values: Sequence[int] = SWEEP_GRID["N"],
    seeds: Sequence[int] = SWEEP_GRID["seed"],
    steps: int | None = None,
    path: str | Path | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train every combination with :func:`train_toy` and return (and optionally save) the
    final numbers: test MSE (deployed and truncated), equivariance error, gamma, u, lambda.

    See: book/ace/02-partial-symmetry.ipynb
    """
    import itertools

    import torch

    from ..core.progress import progress
    from .so2_toy import train_toy

    settings = dict(SWEEP_SETTINGS)
    if steps is not None:
        settings["steps"] = check_int("steps", steps, 1)
    combos = list(itertools.product(methods, eps_values, N_values, seeds))
    runs: dict[str, Any] = {}
    with torch.random.fork_rng(devices=[]):
        for method, eps, N, seed in progress(
            combos, desc="ACE sweep", disable=None if show_progress else True
        ):
            out = train_toy(
                method,
                N=int(N),
                eps=float(eps),
                seed=int(seed),
                record_every=10**9,
                **settings,
                **METHOD_SETTINGS[method],
            )
            ace = out["ace"]
            runs[_key(method, eps, N, seed)] = {
                **out["final"],
                "lam": [] if ace is None else ace.lam.tolist(),
                "u": [] if ace is None or ace.u is None else ace.u.detach().tolist(),
            }
    result = {
        "settings": {**settings, "per_method": METHOD_SETTINGS},
        "grid": {
            "method": list(methods),
            "eps": [float(e) for e in eps_values],
            "N": [int(n) for n in N_values],
            "seed": [int(s) for s in seeds],
        },
        "runs": runs,
    }
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(result, indent=0, sort_keys=True))
    return result


def load_sweep(path: str | Path | None = None) -> dict[str, Any]:
    """The stored sweep (``lab/ace/data/sweep.json`` by default).

    See: book/ace/02-partial-symmetry.ipynb
    """
    p = Path(path) if path is not None else SWEEP_PATH
    if not p.exists():
        raise FileNotFoundError(f"no sweep at {p}; run `python -m lab.ace.sweep` to make it")
    return json.loads(p.read_text())


def sweep_mse(sweep: dict[str, Any], method: str, eps: float, N: int, key: str = "test_mse"):
    """Seed-averaged ``key`` of one (method, eps, N) cell of a sweep.

    See: book/ace/02-partial-symmetry.ipynb
    """
    vals = [
        sweep["runs"][_key(method, eps, N, s)][key]
        for s in sweep["grid"]["seed"]
        if _key(method, eps, N, s) in sweep["runs"]
    ]
    if not vals:
        raise KeyError(f"no runs for method={method!r}, eps={eps:g}, N={N} in the sweep")
    return sum(vals) / len(vals)


if __name__ == "__main__":  # pragma: no cover - the project command
    import torch

    torch.set_num_threads(1)
    run_sweep(path=SWEEP_PATH)
    print(f"wrote {SWEEP_PATH}")
