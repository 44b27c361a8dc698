"""Saving and loading the shipped tiny checkpoints (``torch.load(..., weights_only=True)``)."""

from __future__ import annotations

from pathlib import Path

from lab.core.artifacts import load_weights, save_weights
from lab.core.checks import check_choice, check_instance

__all__ = [
    "CHECKPOINT_DIR",
    "CHECKPOINTS",
    "TRAIN_STEPS",
    "checkpoint_file",
    "save_checkpoint",
    "checkpoint_keys",
    "read_checkpoint",
    "load_checkpoint",
]

CHECKPOINT_DIR = Path(__file__).with_name("checkpoints")

#: The shipped checkpoints and the settings that made them (``lab artifacts build cvrp/checkpoint``).
CHECKPOINTS = {
    "cvrp20_fixed10": {"capacity": [10, 10], "experts": 1, "edges": [], "seeds": [0]},
    "cvrp20_fixed30": {"capacity": [30, 30], "experts": 1, "edges": [], "seeds": [0, 1, 2]},
    "cvrp20_fixed50": {"capacity": [50, 50], "experts": 1, "edges": [], "seeds": [0]},
    "cvrp20_fixed200": {"capacity": [200, 200], "experts": 1, "edges": [], "seeds": [0]},
    "cvrp20_vct": {"capacity": [10, 200], "experts": 1, "edges": [], "seeds": [0, 1, 2]},
    "cvrp20_vct_mem3": {
        "capacity": [10, 200],
        "experts": 3,
        "edges": [73.0, 137.0],
        "expert_layers": 1,
        "seeds": [0, 1, 2],
    },
}

#: Training steps of every shipped checkpoint (the spec's prototype used about 5,500).
TRAIN_STEPS = 5000


def checkpoint_file(name: str, seed: int = 0) -> Path:
    """Where the shipped checkpoint ``name`` trained from ``seed`` lives."""
    return CHECKPOINT_DIR / f"{name}-seed{seed}.pt"


def save_checkpoint(model, path, meta: dict) -> Path:
    """Write ``model``'s weights, architecture and ``meta`` (plain types only) to ``path``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a TinyPOMO (got {type(model).__name__})")
    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a file path (got {type(path).__name__})")
    check_instance("meta", meta, dict)
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    payload = {"config": dict(model.config), "state_dict": state}
    return save_weights(path, payload, meta, "cvrp/checkpoint")


def checkpoint_keys(names=None, available: bool = False) -> list[tuple[str, int]]:
    """Every shipped ``(name, seed)`` pair (of ``names``, default all), in ``CHECKPOINTS`` order.

    With ``available`` only the pairs whose file exists (while training is under way).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    if names is None:
        names = list(CHECKPOINTS)
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise TypeError(f"names must be a list of checkpoint names (got {type(names).__name__})")
    for nm in names:
        check_choice("names", nm, sorted(CHECKPOINTS))
    check_instance("available", available, bool)
    keys = [(nm, s) for nm in names for s in CHECKPOINTS[nm]["seeds"]]
    return [k for k in keys if not available or checkpoint_file(*k).exists()]


def _path(name_or_path, seed) -> Path:
    if not isinstance(name_or_path, str | Path):
        raise TypeError(
            f"name must be a checkpoint name or a path (got {type(name_or_path).__name__})"
        )
    path = Path(name_or_path)
    if path.suffix:
        return path
    check_choice("name", str(name_or_path), sorted(CHECKPOINTS))
    seeds = CHECKPOINTS[str(name_or_path)]["seeds"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed not in seeds:
        raise ValueError(f"seed must be one of {seeds} for {name_or_path} (got {seed!r})")
    return checkpoint_file(str(name_or_path), seed)


def read_checkpoint(name_or_path, seed: int = 0) -> dict:
    """The raw checkpoint dict (``config``, ``state_dict``, ``meta``), loaded weights-only.

    Parameters
    ----------
    name_or_path : str or Path
        A name of ``CHECKPOINTS`` or a ``.pt`` file written by ``lab artifacts build cvrp/checkpoint``.
    seed : int
        The training seed (one of ``CHECKPOINTS[name]["seeds"]``; ignored for a path).

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    path = _path(name_or_path, seed)
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint {path} not found; make it with `lab artifacts build cvrp/checkpoint -- --name "
            f"{name_or_path} --seed {seed}`"
        )
    return load_weights(path, "cvrp/checkpoint")


def load_checkpoint(name, seed: int = 0, device=None):
    """A shipped tiny model, ready for ``evaluate``.

    Parameters
    ----------
    name : str
        ``"cvrp20_fixed10"``, ``"cvrp20_fixed30"``, ``"cvrp20_fixed50"``,
        ``"cvrp20_fixed200"`` (trained at one capacity), ``"cvrp20_vct"`` (``C`` uniform on
        ``{10..200}``) or ``"cvrp20_vct_mem3"`` (VCT with 3 capacity experts, each a
        transformer layer before the shared decoder), or a path to a ``.pt`` file written by
        ``lab artifacts build cvrp/checkpoint``.
    seed : int
        The training seed (see ``CHECKPOINTS[name]["seeds"]``).
    device : torch.device, optional
        Where to put the model (default CPU).

    Returns
    -------
    TinyPOMO
        In eval mode; its ``meta`` attribute holds the training settings, the training wall
        time (``seconds``) and the command.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from .model import TinyPOMO

    ck = read_checkpoint(name, seed)
    model = TinyPOMO(**ck["config"])
    model.load_state_dict(ck["state_dict"])
    model.meta = ck["meta"]
    model.eval()
    return model if device is None else model.to(device)
