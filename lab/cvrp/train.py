"""Train the chapter's tiny checkpoints: ``lab artifacts build cvrp/checkpoint -- --name cvrp20_vct``.

Deterministic for a given ``--seed`` and ``--steps`` on CPU with one thread; the checkpoint
records the exact command, the settings and the first logged losses (a fingerprint that
``tests/test_cvrp.py`` reproduces with a short rerun).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from lab.core.checks import check_instance

from .settings import TrainSettings
from .store import CHECKPOINTS, TRAIN_STEPS, checkpoint_file, save_checkpoint

__all__ = ["build_and_train"]

FINGERPRINT_STEPS = 21  # the first logged steps (0, 10, 20) are stored in the checkpoint


def build_and_train(name: str, settings: TrainSettings, d: int = 64, layers: int = 2):
    """Build the model of checkpoint ``name`` from ``settings.seed`` and train it with
    ``fast.train_pomo``; the capacity of ``settings`` is replaced by the checkpoint's (a fixed
    value or its VCT range).

    Parameters
    ----------
    name : str
        A key of ``CHECKPOINTS``.
    settings : TrainSettings
        Steps or seconds, batch, learning rate, ``n``, seed (``log_every`` is set to 10, the
        logging the stored fingerprint was made with).
    d, layers : int
        Embedding width and shared encoder layers.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    from lab.core.checks import check_choice

    from .fast import train_pomo
    from .model import TinyPOMO

    check_choice("name", name, sorted(CHECKPOINTS))
    check_instance("settings", settings, TrainSettings)
    spec = CHECKPOINTS[name]
    with torch.random.fork_rng(devices=[]):  # the initial weights depend on seed only
        torch.manual_seed(settings.seed)
        model = TinyPOMO(
            d=d,
            layers=layers,
            ff=2 * d,
            experts=spec["experts"],
            edges=spec["edges"],
            expert_layers=spec.get("expert_layers", 1),
        )
    lo, hi = spec["capacity"]
    cap = lo if lo == hi else (lo, hi)
    return model, train_pomo(model, replace(settings, capacity=cap, log_every=10))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lab artifacts build cvrp/checkpoint", description=__doc__)
    p.add_argument("--name", required=True, choices=sorted(CHECKPOINTS))
    p.add_argument("--steps", type=int, default=TRAIN_STEPS)
    p.add_argument("--seconds", type=float, default=None, help="optional wall-clock cap")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--out", default=None, help="output file (default: the shipped path)")
    a = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    t0 = time.time()
    settings = TrainSettings(a.n, 30, a.steps, a.seconds, a.batch, a.lr, a.seed, 10, True)
    model, hist = build_and_train(a.name, settings)
    done = hist["steps"]
    cmd = (
        f"lab artifacts build cvrp/checkpoint -- --name {a.name} --steps {done} --seed {a.seed} "
        f"--n {a.n} --batch {a.batch} --lr {a.lr:g}"
    )
    spec = CHECKPOINTS[a.name]
    meta = {
        "name": a.name,
        "command": cmd,
        "invoked_as": " ".join(shlex.quote(x) for x in sys.argv),
        "seed": a.seed,
        "n": a.n,
        "batch": a.batch,
        "lr": a.lr,
        "steps": done,
        "capacity_range": list(spec["capacity"]),
        "experts": spec["experts"],
        "edges": list(spec["edges"]),
        "expert_layers": spec.get("expert_layers", 1) if spec["experts"] > 1 else 0,
        "architecture": "shared encoder layers, one transformer stack per capacity expert, "
        "one shared POMO decoder (the official SINGLEModel layout)",
        "seconds": round(hist["seconds"], 1),
        "torch": str(torch.__version__),
        "fingerprint_loss": hist["loss"][:3],
        "fingerprint_length": hist["length"][:3],
        "final_length": float(sum(hist["length"][-20:]) / max(1, len(hist["length"][-20:]))),
        "history_step": hist["step"][::5],
        "history_length": [round(x, 4) for x in hist["length"][::5]],
    }
    out = Path(a.out) if a.out else checkpoint_file(a.name, a.seed)
    path = save_checkpoint(model, out, meta)
    print(f"{a.name}: {done} steps in {time.time() - t0:.0f} s -> {path} ({path.stat().st_size} B)")
    return 0
