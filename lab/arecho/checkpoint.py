"""Train-or-load: the chapter's trained chains and their compute-matched parallel baselines.

The tiny chain needs about 1,500 optimiser steps (minutes on a shared 2-core machine) before
the dependencies between metrics show; a notebook cannot afford that, so this project command
trains one pair per seed (``SEEDS``), with ``CHAIN_BINS`` = 32 bins per numerical metric (a
labelled scale-down of the paper's 500: notebook 1 measures both for token heads, and a
500-bin chain trained the same way, ``--bins 500``, decodes with a larger error), and commits the
weights (float16, one file of well under 1 MB per seed)::

    OMP_NUM_THREADS=1 python -m lab.arecho.checkpoint --steps 1500 --seeds 0 1 2

For each seed the command trains ``TinyARECHO`` for ``--steps`` steps, measures the CPU time
it used (``time.process_time``: one thread, insensitive to other processes), then trains the
``ParallelBaseline`` (standardised L1) for the **same CPU time** and records how many steps
that was. Both sets of weights and both budgets (the file's ``meta``) go into
``lab/arecho/data/models.pt`` (seed 0) or ``models-seed<k>.pt``, loaded with
``torch.load(..., weights_only=True)``. Rerunning gives the same chains exactly; a parallel
baseline is reproducible from its recorded step count (``--parallel-steps``).

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import argparse
import time

from .corpus import load_corpus
from .experiments import (
    CHAIN_BINS,
    MODELS_PATH,
    SEEDS,
    checkpoint_path,
    load_models,
    save_models,
    train_models,
)

__all__ = ["MODELS_PATH", "SEEDS", "checkpoint_path", "train_models", "load_models", "main"]


def main(argv: list[str] | None = None) -> int:
    """The ``python -m lab.arecho.checkpoint`` command (see the module docstring)."""
    import torch

    parser = argparse.ArgumentParser(prog="python -m lab.arecho.checkpoint", description=__doc__)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--bins", type=int, default=CHAIN_BINS)
    parser.add_argument("--parallel-steps", type=int, default=None)
    parser.add_argument("--out", default=None, help="output file (one seed only)")
    args = parser.parse_args(argv)
    if args.out is not None and len(args.seeds) != 1:
        parser.error("--out needs exactly one --seeds value")
    torch.set_num_threads(1)
    corpus = load_corpus()
    for seed in args.seeds:
        t0 = time.perf_counter()
        chain, par, meta = train_models(
            corpus, args.steps, seed, args.parallel_steps, n_bins=args.bins, progress=True
        )
        meta["wall_seconds"] = round(time.perf_counter() - t0, 1)
        out = save_models(chain, par, meta, args.out or checkpoint_path(seed))
        print(meta, f"{out}: {out.stat().st_size / 1024:.0f} KiB", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
