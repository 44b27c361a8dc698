"""Parity with the official code: replay ``lab/core/official/cvrp_official.json``.

The fixture holds the official MVMoE-style CVRP model of CIAM-Group/Rethinking_Constraint_Tightness
(``SINGLE_Encoder``, ``SINGLE_Decoder``, ``CVRPEnv``) run in float64 on a small instance with
random weights; ``official_parity`` loads those weights into a ``TinyPOMO`` and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["official_parity", "official_weights"]

_LAYER = {  # official EncoderLayer -> ours
    "Wq": "att.wq",
    "Wk": "att.wk",
    "Wv": "att.wv",
    "multi_head_combine": "att.wo",
    "addAndNormalization1.norm": "n1",
    "feedForward.W1": "ff1",
    "feedForward.W2": "ff2",
    "addAndNormalization2.norm": "n2",
}
_DECODER = {"Wq_last": "wq", "Wk": "wk", "Wv": "wv", "multi_head_combine": "wo"}


def _rename(key: str) -> str | None:
    parts = key.split(".")
    if key.startswith("decoder."):
        body, leaf = ".".join(parts[1:-1]), parts[-1]
        return f"decoder.{_DECODER[body]}.{leaf}" if body in _DECODER else None
    if parts[0] in ("embedding_depot", "embedding_node"):
        return ("embed_depot." if parts[0] == "embedding_depot" else "embed_cust.") + parts[1]
    if parts[0] == "layers":
        return f"encoder.{parts[1]}.{_LAYER['.'.join(parts[2:-1])]}.{parts[-1]}"
    if parts[0] == "heads":
        return f"experts.{parts[1]}.{parts[2]}.{_LAYER['.'.join(parts[3:-1])]}.{parts[-1]}"
    return None


def official_weights(weights: dict) -> dict:
    """The official state dict renamed to ``TinyPOMO``'s keys (float64 tensors).

    The official node embedding reads ``(x, y, q / C, tw_start, tw_end)``; with the time
    windows at 0 only its first three columns act, which is our ``embed_cust``.

    See: book/cvrp/index.md
    """
    import torch

    if not isinstance(weights, dict) or not weights:
        raise TypeError(f"weights must be a non-empty dict (got {type(weights).__name__})")
    out = {}
    for k, v in weights.items():
        name = _rename(k)
        if name is None:
            raise ValueError(f"weights holds an official key with no counterpart: {k!r}")
        t = torch.tensor(v, dtype=torch.float64)
        out[name] = t[:, :3].contiguous() if name == "embed_cust.weight" else t
    return out


def official_parity(path) -> dict:
    """Replay the official fixture with our code; the largest deviations and agreements.

    Returns
    -------
    dict
        ``routing`` (our expert index per instance equals the official head), ``encoded``
        (max abs difference of the node embeddings after the shared layer and the routed
        expert's 3 layers), ``distance`` (max abs difference of the greedy POMO tour
        lengths), ``log_prob`` (of the summed log-probabilities of the greedy tours),
        ``actions`` (every greedy action sequence equal), ``augment`` (max abs difference of
        the 8-fold augmentation, copies matched as a set) and ``augment_same_order``.

    See: book/cvrp/index.md
    """
    import torch

    from .model import TinyPOMO
    from .problems import CVRPBatch, augment8

    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a path to the fixture (got {type(path).__name__})")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path {path} does not exist")
    fx = json.loads(path.read_text())
    ins, out = fx["instance"], fx["outputs"]
    per = float(ins["capacity_per_scale"])
    model = TinyPOMO(
        d=ins["d"],
        heads=ins["heads"],
        layers=1,
        ff=ins["ff"],
        experts=len(ins["scale_edges"]) + 1,
        edges=[per * e for e in ins["scale_edges"]],  # official routing key: C / 100
        expert_layers=ins["expert_layers"],
    ).double()
    model.load_state_dict(official_weights(ins["weights"]))
    model.eval()
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    xy = torch.cat([t(ins["depot_xy"]), t(ins["node_xy"])], dim=1)
    q = torch.cat([torch.zeros(xy.shape[0], 1, dtype=torch.float64), t(ins["demand"])], dim=1)
    batch = CVRPBatch(xy, q, t(ins["capacity"]))
    with torch.no_grad():
        h = model.encode(batch)
        length, logp, acts = model(batch, greedy=True, return_actions=True)
    off = np.asarray(out["actions"])[:, :, 1:]  # the official rollout starts with the depot
    T = acts.shape[-1]
    same = bool(np.array_equal(off[:, :, :T], acts.numpy()) and not off[:, :, T:].any())
    return {
        "routing": model.expert_of(batch.capacity).tolist() == out["head_of_instance"],
        "encoded": float(np.max(np.abs(h.numpy() - np.asarray(out["encoded"])))),
        "distance": float(np.max(np.abs(length.numpy() - np.asarray(out["travel_distance"])))),
        "log_prob": float(np.max(np.abs(logp.numpy() - np.asarray(out["sum_log_prob"])))),
        "actions": same,
        "augment": _augment_gap(augment8(xy).numpy(), np.asarray(out["augmented_xy"]), len(xy)),
        "augment_same_order": bool(
            np.allclose(augment8(xy).numpy(), np.asarray(out["augmented_xy"]), atol=1e-15)
        ),
    }


def _augment_gap(ours, theirs, B):
    """Max abs difference after matching each official copy to our nearest copy (the 8
    symmetries as a set; the order of the copies does not matter to the best-of-8)."""
    a, b = ours.reshape(8, B, -1), theirs.reshape(8, B, -1)
    return float(max(min(np.max(np.abs(x - y)) for x in a) for y in b))
