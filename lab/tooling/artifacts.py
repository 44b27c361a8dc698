"""``lab artifacts``: list and rebuild every chapter's stored artifacts with one command.

``lab artifacts list``                     every artifact, where it lives and what it costs
``lab artifacts build <slug>/<name> [-- ARGS]``
                                           rebuild one (ARGS go to its builder; ``-- --help``
                                           lists them)

An artifact is something a chapter trains or records once and its notebooks load (the
train-or-load pattern of DESIGN.md): tiny checkpoints, a synthesised corpus, a solved
reference, a long sweep, recorded multi-process timelines. Each builder is a chapter function
``builder(argv) -> exit code``; it writes through :mod:`lab.core.artifacts` (provenance and
weights-only loading), and a missing artifact's error names the command here.
"""

from __future__ import annotations

import importlib
import sys
from typing import NamedTuple

__all__ = ["ARTIFACTS", "Artifact", "build", "cli", "describe"]


class Artifact(NamedTuple):
    """One rebuildable artifact: its builder (``"module:function"``), files and cost."""

    builder: str
    writes: str
    what: str


ARTIFACTS: dict[str, Artifact] = {
    "ace/sweep": Artifact(
        "lab.ace.stored_runs:build_sweep",
        "lab/ace/data/sweep.json",
        "the method x eps x N x seed sweep notebook 2 reads (minutes on 2 cores)",
    ),
    "ace/converged": Artifact(
        "lab.ace.stored_runs:build_long_runs",
        "lab/ace/data/converged.json",
        "the long runs of notebook 2 (trained until the constraint is met; minutes; --workers N)",
    ),
    "arecho/corpus": Artifact(
        "lab.arecho.corpus:main",
        "lab/arecho/data/corpus.npz",
        "the synthesised degraded-speech corpus (about 1 s per utterance)",
    ),
    "arecho/checkpoints": Artifact(
        "lab.arecho.checkpoint:main",
        "lab/arecho/data/{models,baselines}*.pt",
        "the chain and parallel models per seed; --baselines for UniVERSA(-T) (minutes each)",
    ),
    "cvrp/reference": Artifact(
        "lab.cvrp.reference_cache:write_reference",
        "lab/cvrp/data/pyvrp-reference*.json",
        "PyVRP's reference tour lengths for a test set (--instances, --seed, --capacities)",
    ),
    "cvrp/checkpoint": Artifact(
        "lab.cvrp.train:main",
        "lab/cvrp/checkpoints/<name>-seed<S>.pt",
        "one tiny POMO model (--name, --seed; about 10 minutes on 2 cores)",
    ),
    "splitfed/gloo-runs": Artifact(
        "lab.splitfed.dist:build_runs",
        "lab/splitfed/data/gloo_runs.json",
        "the four-process gloo timelines notebook 3 loads (about 20 s idle)",
    ),
}


def describe() -> str:
    """The table ``lab artifacts list`` prints."""
    width = max(map(len, ARTIFACTS))
    return "\n".join(
        f"{name:<{width}}  {a.writes}\n{'':<{width}}  {a.what}" for name, a in ARTIFACTS.items()
    )


def build(name: str, argv: list[str] | None = None) -> int:
    """Run the builder of artifact ``name`` with command-line ``argv``; its exit code."""
    if name not in ARTIFACTS:
        raise ValueError(f"artifact must be one of {sorted(ARTIFACTS)} (got {name!r})")
    if argv is not None and not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a list of strings")
    from lab.core.artifacts import building

    module, func = ARTIFACTS[name].builder.split(":")
    with building(name, list(argv or [])):
        return int(getattr(importlib.import_module(module), func)(list(argv or [])) or 0)


def cli(args) -> int:
    """``lab artifacts`` (parsed by ``lab.__main__``)."""
    if args.action == "list":
        print(describe())
        return 0
    if not args.name:
        print("lab artifacts build: name one of " + ", ".join(ARTIFACTS), file=sys.stderr)
        return 2
    return build(args.name, args.args)
