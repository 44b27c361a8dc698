"""Train-or-load: the chapter's trained chain and its compute-matched parallel baseline.

The tiny chain needs about 1,500 optimiser steps (minutes on a shared 2-core machine) before
the dependencies between metrics show; a notebook cannot afford that, so a project command
trains it once with fixed seeds and commits the weights (float16, about 0.4 MB)::

    OMP_NUM_THREADS=1 timeout 1800 python -m lab.arecho.checkpoint --steps 1500 \\
        --out lab/arecho/data/models.pt

The command trains ``TinyARECHO`` for ``--steps`` steps, measures the CPU time it used
(``time.process_time``: one thread, insensitive to other processes), then trains the
``ParallelBaseline`` (standardised L1) for the **same CPU time** and records how many steps
that was. Both sets of weights and both budgets go into one file, loaded with
``torch.load(..., weights_only=True)``. Rerunning gives the same chain exactly; the parallel
baseline is reproducible from its recorded step count (``--parallel-steps``).

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from ..core.checks import check_int
from .corpus import Corpus, load_corpus

__all__ = ["MODELS_PATH", "train_models", "load_models"]

MODELS_PATH = Path(__file__).resolve().parent / "data" / "models.pt"


def _half(state: dict) -> dict:
    return {k: v.detach().cpu().half() if v.is_floating_point() else v for k, v in state.items()}


def train_models(
    corpus: Corpus,
    steps: int = 1500,
    seed: int = 0,
    parallel_steps: int | None = None,
    n_bins: int = 32,
    progress: bool = False,
    device: Any = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Train the chain for ``steps`` steps and the parallel baseline for the same CPU time.

    Parameters
    ----------
    corpus : Corpus
    steps : int
        Optimiser steps of the chain (batch 64).
    seed : int
        Seed of weights, batches, orders and label dropout.
    parallel_steps : int, optional
        Train the parallel baseline for exactly this many steps instead of the chain's CPU
        time (to reproduce a committed file).
    n_bins : int
        Bins per numerical metric.
    progress : bool
        Progress bars.
    device : torch.device or str, optional
        Where to train (default CPU; the committed file is made on CPU).

    Returns
    -------
    (TinyARECHO, ParallelBaseline, dict)
        The models and ``meta`` (steps, CPU seconds of each, seed, n_bins).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    from .model import MetricTokenizer, ParallelBaseline, TinyARECHO, train

    steps = check_int("steps", steps, 1)
    seed = check_int("seed", seed, 0)
    tok = MetricTokenizer(n_bins).fit(corpus.labels[corpus.train], corpus.types, corpus.names)
    torch.manual_seed(seed)
    chain = TinyARECHO(tok, corpus.features.shape[1])
    if device is not None:
        chain = chain.to(device)
    h_c = train(chain, corpus, seconds=1e9, steps=steps, seed=seed, clock="cpu", progress=progress)
    torch.manual_seed(seed)
    par = ParallelBaseline(corpus.features.shape[1], len(corpus.names), "standardized")
    if device is not None:
        par = par.to(device)
    if parallel_steps is None:
        h_p = train(par, corpus, seconds=h_c["seconds"], seed=seed, clock="cpu")
    else:
        h_p = train(par, corpus, seconds=1e9, steps=parallel_steps, seed=seed, clock="cpu")
    meta = {
        "seed": seed,
        "n_bins": n_bins,
        "chain_steps": h_c["steps"],
        "chain_cpu_seconds": round(h_c["seconds"], 2),
        "parallel_steps": h_p["steps"],
        "parallel_cpu_seconds": round(h_p["seconds"], 2),
    }
    return chain, par, meta


def load_models(corpus: Corpus | None = None, path: str | os.PathLike = MODELS_PATH):
    """Load the committed chain and parallel baseline (float32, CPU, eval mode).

    Returns
    -------
    (TinyARECHO, ParallelBaseline, dict)

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    from .model import MetricTokenizer, ParallelBaseline, TinyARECHO

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no checkpoint at {path}; make it with `python -m lab.arecho.checkpoint --out {path}`"
        )
    corpus = load_corpus() if corpus is None else corpus
    blob = torch.load(path, map_location="cpu", weights_only=True)
    meta = {k: (v.item() if hasattr(v, "item") else v) for k, v in blob["meta"].items()}
    tok = MetricTokenizer(int(meta["n_bins"])).fit(
        corpus.labels[corpus.train], corpus.types, corpus.names
    )
    chain = TinyARECHO(tok, corpus.features.shape[1])
    chain.load_state_dict({k: v.float() for k, v in blob["chain"].items()})
    par = ParallelBaseline(corpus.features.shape[1], len(corpus.names), "standardized")
    par.load_state_dict({k: v.float() for k, v in blob["parallel"].items()})
    return chain.eval(), par.eval(), meta


def main(argv: list[str] | None = None) -> int:
    """The ``python -m lab.arecho.checkpoint`` command (see the module docstring)."""
    import torch

    parser = argparse.ArgumentParser(prog="python -m lab.arecho.checkpoint", description=__doc__)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parallel-steps", type=int, default=None)
    parser.add_argument("--out", default=str(MODELS_PATH))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    chain, par, meta = train_models(
        load_corpus(), args.steps, args.seed, args.parallel_steps, progress=True
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {"chain": _half(chain.state_dict()), "parallel": _half(par.state_dict()), "meta": meta},
        out,
    )
    print(meta, f"{time.perf_counter() - t0:.0f} s wall, {out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
