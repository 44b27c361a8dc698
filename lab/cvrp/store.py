"""Saving and loading the shipped tiny checkpoints (``torch.load(..., weights_only=True)``)."""

from __future__ import annotations

from pathlib import Path

from lab.core.checks import check_choice

CHECKPOINT_DIR = Path(__file__).with_name("checkpoints")

#: The shipped checkpoints and the settings that made them (``python -m lab.cvrp.train``).
CHECKPOINTS = {
    "cvrp20_fixed30": {"capacity": [30, 30], "experts": 1, "edges": []},
    "cvrp20_vct": {"capacity": [10, 200], "experts": 1, "edges": []},
    "cvrp20_vct_mem3": {"capacity": [10, 200], "experts": 3, "edges": [73.0, 137.0]},
}


def save_checkpoint(model, path, meta: dict) -> Path:
    """Write ``model``'s weights, architecture and ``meta`` (plain types only) to ``path``.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import json

    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    meta = json.loads(json.dumps(meta, default=str))  # plain types only (weights_only load)
    torch.save({"config": dict(model.config), "state_dict": state, "meta": dict(meta)}, path)
    return path


def read_checkpoint(name_or_path) -> dict:
    """The raw checkpoint dict (``config``, ``state_dict``, ``meta``), loaded weights-only.

    See: book/cvrp/03-vct-and-experts.ipynb
    """
    import torch

    path = Path(name_or_path)
    if not path.suffix:
        check_choice("name", str(name_or_path), sorted(CHECKPOINTS))
        path = CHECKPOINT_DIR / f"{name_or_path}.pt"
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint {path} not found; make it with `python -m lab.cvrp.train --name "
            f"{path.stem}`"
        )
    return torch.load(path, map_location="cpu", weights_only=True)


def load_checkpoint(name: str, device=None):
    """A shipped tiny model, ready for ``evaluate``.

    Parameters
    ----------
    name : str
        ``"cvrp20_fixed30"`` (trained at ``C = 30``), ``"cvrp20_vct"`` (``C`` uniform on
        ``{10..200}``) or ``"cvrp20_vct_mem3"`` (VCT with 3 capacity experts), or a path to a
        ``.pt`` file written by ``python -m lab.cvrp.train``.
    device : torch.device, optional
        Where to put the model (default CPU).

    Returns
    -------
    TinyPOMO
        In eval mode; its ``meta`` attribute holds the training settings and the command.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    from .model import TinyPOMO

    ck = read_checkpoint(name)
    model = TinyPOMO(**ck["config"])
    model.load_state_dict(ck["state_dict"])
    model.meta = ck["meta"]
    model.eval()
    return model if device is None else model.to(device)
