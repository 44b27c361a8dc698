"""Train-or-load: the chapter's trained chains and their compute-matched parallel baselines.

The tiny chain needs about 1,500 optimiser steps (minutes on a shared 2-core machine) before
the dependencies between metrics show; a notebook cannot afford that, so this project command
trains one pair per seed (``SEEDS``), with ``CHAIN_BINS`` = 32 bins per numerical metric (a
labelled scale-down of the paper's 500: notebook 1 measures both for token heads, and a
500-bin chain trained the same way, ``--bins 500``, decodes with a larger error), and commits the
weights (float16, one file of well under 1 MB per seed)::

    OMP_NUM_THREADS=1 lab artifacts build arecho/checkpoints -- --steps 1500 --seeds 0 1 2

For each seed the command trains ``TinyARECHO`` for ``--steps`` steps, measures the CPU time
it used (``time.process_time``: one thread, insensitive to other processes), then trains the
``ParallelBaseline`` (standardised L1) for the **same CPU time** and records how many steps
that was. Both sets of weights and both budgets (the file's ``meta``) go into
``lab/arecho/data/models.pt`` (seed 0) or ``models-seed<k>.pt``, loaded with
``torch.load(..., weights_only=True)``. Rerunning gives the same chains exactly; a parallel
baseline is reproducible from its recorded step count (``--parallel-steps``).

The paper's two baselines, trained for each seed's chain CPU time (read from the committed
chain file), go into ``baselines.pt`` / ``baselines-seed<k>.pt``::

    OMP_NUM_THREADS=1 lab artifacts build arecho/checkpoints -- --baselines --seeds 0 1 2

``universa`` is the official UniVERSA loss (raw-scale L1 per numerical metric, cross-entropy
per class; ``ParallelBaseline(target="universa")``) and ``tokens`` is UniVERSA-T (the same
encoder with per-metric classification over the chain's 32 bins).

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from lab.core.artifacts import load_weights, save_weights
from lab.core.checks import check_instance, check_int

from .corpus import Corpus, load_corpus
from .reference import MetricTokenizer
from .settings import TrainSettings

__all__ = [
    "SEEDS",
    "CHAIN_BINS",
    "MODELS_PATH",
    "BASELINES",
    "checkpoint_path",
    "baselines_path",
    "train_models",
    "save_models",
    "load_models",
    "train_baselines",
    "load_baselines",
]

SEEDS = (0, 1, 2)  # the committed training seeds
#: bins per numerical metric of the committed chains: a labelled scale-down of the paper's 500
#: (notebook 1 measures both: on 800 training utterances the 500-bin heads learn more slowly,
#: and a 500-bin chain trained the same way decodes with a larger error than a 32-bin one)
CHAIN_BINS = 32
DATA = Path(__file__).resolve().parent / "data"
MODELS_PATH = DATA / "models.pt"  # seed 0; seeds 1, 2 in models-seed<k>.pt


def checkpoint_path(seed: int = 0) -> Path:
    """Path of the committed chain + parallel pair trained with ``seed``."""
    seed = check_int("seed", seed, 0)
    return MODELS_PATH if seed == 0 else DATA / f"models-seed{seed}.pt"


#: the paper's parallel baselines, trained for the chain's CPU time (name -> ParallelBaseline target)
BASELINES = {"universa": "universa", "tokens": "tokens"}


def baselines_path(seed: int = 0) -> Path:
    """Path of the committed UniVERSA and UniVERSA-T baselines trained with ``seed``."""
    seed = check_int("seed", seed, 0)
    return DATA / ("baselines.pt" if seed == 0 else f"baselines-seed{seed}.pt")


def _half(state: dict) -> dict:
    return {k: v.detach().cpu().half() if v.is_floating_point() else v for k, v in state.items()}


def train_models(
    corpus: Corpus,
    steps: int = 1500,
    seed: int = 0,
    parallel_steps: int | None = None,
    n_bins: int = CHAIN_BINS,
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
        Seed of weights, batches, orders and label dropout (local generators only).
    parallel_steps : int, optional
        Train the parallel baseline for exactly this many steps instead of the chain's CPU
        time (to reproduce a committed file).
    n_bins : int
        Bins per numerical metric (default ``CHAIN_BINS`` = 32, a scale-down of the paper's 500).
    progress : bool
        Progress bars.
    device : torch.device or str, optional
        Where to train (default CPU; the committed files are made on CPU).

    Returns
    -------
    (TinyARECHO, ParallelBaseline, dict)
        The models and ``meta`` (steps, CPU seconds of each, seed, n_bins).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    from .models import ParallelBaseline, TinyARECHO, train

    check_instance("corpus", corpus, Corpus)
    steps = check_int("steps", steps, 1)
    seed = check_int("seed", seed, 0)
    n_bins = check_int("n_bins", n_bins, 2, 1024)
    if parallel_steps is not None:
        parallel_steps = check_int("parallel_steps", parallel_steps, 1)
    tok = MetricTokenizer(n_bins).fit(corpus.labels[corpus.train], corpus.types, corpus.names)
    with torch.random.fork_rng(devices=[]):  # initial weights from a local seed
        torch.manual_seed(seed)
        chain = TinyARECHO(tok, corpus.features.shape[1])
        par = ParallelBaseline(corpus.features.shape[1], len(corpus.names), "standardized")
    if device is not None:
        chain, par = chain.to(device), par.to(device)
    cpu = {"seed": seed, "clock": "cpu"}
    h_c = train(chain, corpus, TrainSettings(1e9, steps, progress=progress, **cpu))
    if parallel_steps is None:
        h_p = train(par, corpus, TrainSettings(h_c["seconds"], **cpu))
    else:
        h_p = train(par, corpus, TrainSettings(1e9, parallel_steps, **cpu))
    meta = {
        "seed": seed,
        "n_bins": n_bins,
        "chain_steps": h_c["steps"],
        "chain_cpu_seconds": round(h_c["seconds"], 2),
        "parallel_steps": h_p["steps"],
        "parallel_cpu_seconds": round(h_p["seconds"], 2),
    }
    return chain, par, meta


def save_models(chain: Any, parallel: Any, meta: dict, path: str | os.PathLike) -> Path:
    """Write a chain + parallel pair in float16 (the committed format).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .models import ParallelBaseline, TinyARECHO

    if not isinstance(chain, TinyARECHO) or not isinstance(parallel, ParallelBaseline):
        raise TypeError("chain must be a TinyARECHO and parallel a ParallelBaseline")
    check_instance("meta", meta, dict)
    blob = {"chain": _half(chain.state_dict()), "parallel": _half(parallel.state_dict())}
    return save_weights(path, blob, meta, "arecho/checkpoints")


def _open_file(path: Path, corpus: Corpus | None) -> tuple[Corpus, dict, dict, Any]:
    """A committed file's tensors and ``meta``, with the tokenizer its models were trained with
    (refitted on the corpus's training rows: it is deterministic)."""
    corpus = load_corpus() if corpus is None else corpus
    check_instance("corpus", corpus, Corpus)
    blob = load_weights(path, "arecho/checkpoints")
    meta = {k: (v.item() if hasattr(v, "item") else v) for k, v in blob["meta"].items()}
    tok = MetricTokenizer(int(meta["n_bins"])).fit(
        corpus.labels[corpus.train], corpus.types, corpus.names
    )
    return corpus, blob, meta, tok


def load_models(corpus: Corpus | None = None, path: str | os.PathLike | None = None, seed: int = 0):
    """Load a committed chain and parallel baseline (float32, CPU, eval mode).

    Parameters
    ----------
    corpus : Corpus, optional
        The corpus the tokenizer is fitted on (default: the committed corpus).
    path : path, optional
        A checkpoint file (default: the committed file of ``seed``).
    seed : int
        Which committed training seed (``SEEDS``).

    Returns
    -------
    (TinyARECHO, ParallelBaseline, dict)

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    from .models import ParallelBaseline, TinyARECHO

    path = checkpoint_path(seed) if path is None else Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no checkpoint at {path}; make it with `lab artifacts build arecho/checkpoints -- --out {path}`"
        )
    corpus, blob, meta, tok = _open_file(path, corpus)
    chain = TinyARECHO(tok, corpus.features.shape[1])
    chain.load_state_dict({k: v.float() for k, v in blob["chain"].items()})
    par = ParallelBaseline(corpus.features.shape[1], len(corpus.names), "standardized")
    par.load_state_dict({k: v.float() for k, v in blob["parallel"].items()})
    return chain.eval(), par.eval(), meta


def train_baselines(
    corpus: Corpus,
    cpu_seconds: float,
    seed: int = 0,
    steps: dict[str, int] | None = None,
    n_bins: int = CHAIN_BINS,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train UniVERSA (``target="universa"``) and UniVERSA-T (``"tokens"``) for a CPU budget.

    Parameters
    ----------
    corpus : Corpus
    cpu_seconds : float
        The budget of each model (the chain's CPU seconds of the same seed).
    seed : int
        Seed of weights and batches (local generators only).
    steps : dict, optional
        ``name -> steps`` to reproduce a committed file exactly instead of the CPU budget.
    n_bins : int
        Bins of the tokenizer (the chain's).

    Returns
    -------
    (dict, dict)
        ``name -> ParallelBaseline`` and ``meta`` (steps and CPU seconds of each).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    from .models import ParallelBaseline, train

    check_instance("corpus", corpus, Corpus)
    if isinstance(cpu_seconds, bool) or not isinstance(cpu_seconds, (int, float)):
        raise TypeError(f"cpu_seconds must be a number (got {type(cpu_seconds).__name__})")
    if not cpu_seconds > 0:
        raise ValueError(f"cpu_seconds must be > 0 (got {cpu_seconds})")
    seed = check_int("seed", seed, 0)
    if steps is not None and (not isinstance(steps, dict) or set(steps) != set(BASELINES)):
        raise ValueError(f"steps must be a dict with the keys {sorted(BASELINES)} (got {steps!r})")
    tok = MetricTokenizer(n_bins).fit(corpus.labels[corpus.train], corpus.types, corpus.names)
    models, meta = {}, {"seed": seed, "n_bins": n_bins, "budget_cpu_seconds": float(cpu_seconds)}
    for name, target in BASELINES.items():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = ParallelBaseline(corpus.features.shape[1], len(corpus.names), target, tok)
        if steps is None:
            h = train(model, corpus, TrainSettings(float(cpu_seconds), seed=seed, clock="cpu"))
        else:
            h = train(model, corpus, TrainSettings(1e9, steps[name], seed=seed, clock="cpu"))
        models[name] = model
        meta[f"{name}_steps"] = h["steps"]
        meta[f"{name}_cpu_seconds"] = round(h["seconds"], 2)
    return models, meta


def load_baselines(corpus: Corpus | None = None, seed: int = 0) -> tuple[dict[str, Any], dict]:
    """Load the committed UniVERSA and UniVERSA-T baselines of ``seed`` (float32, CPU, eval).

    Returns
    -------
    (dict, dict)
        ``name -> ParallelBaseline`` (``BASELINES``) and the file's ``meta``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    from .models import ParallelBaseline

    path = baselines_path(seed)
    if not path.exists():
        raise FileNotFoundError(
            f"no baselines at {path}; make them with "
            f"`lab artifacts build arecho/checkpoints -- --baselines --seeds {seed}`"
        )
    corpus, blob, meta, tok = _open_file(path, corpus)
    models = {}
    for name, target in BASELINES.items():
        m = ParallelBaseline(corpus.features.shape[1], len(corpus.names), target, tok)
        m.load_state_dict({k: v.float() for k, v in blob[name].items()})
        models[name] = m.eval()
    return models, meta


def main(argv: list[str] | None = None) -> int:
    """The ``lab artifacts build arecho/checkpoints`` command (see the module docstring)."""
    import torch

    parser = argparse.ArgumentParser(
        prog="lab artifacts build arecho/checkpoints", description=__doc__
    )
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--bins", type=int, default=CHAIN_BINS)
    parser.add_argument("--parallel-steps", type=int, default=None)
    parser.add_argument("--baselines", action="store_true", help="train UniVERSA and UniVERSA-T")
    parser.add_argument("--out", default=None, help="output file (one seed only)")
    args = parser.parse_args(argv)
    if args.out is not None and len(args.seeds) != 1:
        parser.error("--out needs exactly one --seeds value")
    torch.set_num_threads(1)
    corpus = load_corpus()
    for seed in args.seeds:
        t0 = time.perf_counter()
        if args.baselines:
            _, _, chain_meta = load_models(corpus, seed=seed)
            models, meta = train_baselines(corpus, chain_meta["chain_cpu_seconds"], seed)
            meta["wall_seconds"] = round(time.perf_counter() - t0, 1)
            out = Path(args.out or baselines_path(seed))
            out.parent.mkdir(parents=True, exist_ok=True)
            blob = {k: _half(m.state_dict()) for k, m in models.items()}
            save_weights(out, blob, meta, "arecho/checkpoints")
        else:
            chain, par, meta = train_models(
                corpus, args.steps, seed, args.parallel_steps, n_bins=args.bins, progress=True
            )
            meta["wall_seconds"] = round(time.perf_counter() - t0, 1)
            out = save_models(chain, par, meta, args.out or checkpoint_path(seed))
        print(meta, f"{out}: {out.stat().st_size / 1024:.0f} KiB", flush=True)
    return 0
