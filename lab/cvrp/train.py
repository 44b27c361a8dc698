"""Train the chapter's tiny checkpoints: ``python -m lab.cvrp.train --name cvrp20_vct``.

Deterministic for a given ``--seed`` and ``--steps`` on CPU with one thread; the checkpoint
records the exact command, the settings and the first logged losses (a fingerprint that
``tests/test_cvrp.py`` reproduces with a short rerun).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from .store import CHECKPOINTS, TRAIN_STEPS, checkpoint_file, save_checkpoint

__all__ = ["build_and_train"]

FINGERPRINT_STEPS = 21  # the first logged steps (0, 10, 20) are stored in the checkpoint


def build_and_train(
    name: str,
    steps: int,
    seed: int = 0,
    n: int = 20,
    batch: int = 32,
    lr: float = 1e-3,
    seconds: float | None = None,
    d: int = 64,
    layers: int = 2,
    progress_bar: bool = False,
):
    """Build the model of checkpoint ``name`` from ``seed`` and train it (see ``train_pomo``).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    from lab.core.checks import check_choice

    from .fast import train_pomo
    from .model import TinyPOMO

    check_choice("name", name, sorted(CHECKPOINTS))
    spec = CHECKPOINTS[name]
    with torch.random.fork_rng(devices=[]):  # the initial weights depend on seed only
        torch.manual_seed(seed)
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
    hist = train_pomo(
        model,
        n=n,
        capacity=cap,
        steps=steps,
        seconds=seconds,
        batch=batch,
        lr=lr,
        seed=seed,
        log_every=10,
        progress_bar=progress_bar,
    )
    return model, hist


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.cvrp.train", description=__doc__)
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
    model, hist = build_and_train(
        a.name, a.steps, a.seed, a.n, a.batch, a.lr, a.seconds, progress_bar=True
    )
    done = hist["steps"]
    cmd = (
        f"python -m lab.cvrp.train --name {a.name} --steps {done} --seed {a.seed} "
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


if __name__ == "__main__":
    raise SystemExit(main())
