"""The model of MEDRO: a shared featurizer and ``m`` linear expert heads stored as one tensor.

See: book/medro/01-official-algorithm.ipynb
"""

from __future__ import annotations

import math
from typing import Any

from lab.core.checks import check_int

__all__ = ["MultiHeadNet", "make_featurizer"]


def make_featurizer(in_dim: int, hidden: int = 32, feat_dim: int = 16):
    """A small MLP featurizer ``Linear(in_dim, hidden) → ReLU → Linear(hidden, feat_dim) → ReLU``.

    Parameters
    ----------
    in_dim, hidden, feat_dim : int
        Input, hidden and feature widths (each >= 1).

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch.nn as nn

    in_dim = check_int("in_dim", in_dim, 1)
    hidden = check_int("hidden", hidden, 1)
    feat_dim = check_int("feat_dim", feat_dim, 1)
    return nn.Sequential(
        nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, feat_dim), nn.ReLU()
    )


def _module_base():
    import torch.nn as nn

    return nn.Module


class MultiHeadNet(_module_base()):
    """A shared featurizer ``φ`` followed by ``n_heads`` linear heads ``ω_k`` (the experts).

    The heads are one weight tensor ``[m, C, k]`` and one bias ``[m, C]``, applied by a single
    ``einsum`` (:meth:`head_logits`); :meth:`head_logits_reference` loops over the heads.

    Parameters
    ----------
    featurizer : nn.Module
        Maps ``[n, ...]`` inputs to ``[n, feat_dim]`` features.
    feat_dim : int
        Feature dimension ``k`` (>= 1).
    n_classes : int
        Number of classes ``C`` (>= 2).
    n_heads : int
        Number of experts ``m`` (>= 1); one per group (environment) for MEDRO.

    See: book/medro/01-official-algorithm.ipynb
    """

    def __init__(self, featurizer: Any, feat_dim: int, n_classes: int, n_heads: int):
        import torch
        import torch.nn as nn

        super().__init__()
        if not isinstance(featurizer, nn.Module):
            raise TypeError(
                f"featurizer must be a torch.nn.Module (got {type(featurizer).__name__})"
            )
        self.feat_dim = check_int("feat_dim", feat_dim, 1)
        self.n_classes = check_int("n_classes", n_classes, 2)
        self.n_heads = check_int("n_heads", n_heads, 1)
        self.featurizer = featurizer
        bound = 1.0 / math.sqrt(self.feat_dim)
        self.weight = nn.Parameter(
            torch.empty(self.n_heads, self.n_classes, self.feat_dim).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(self.n_heads, self.n_classes).uniform_(-bound, bound))

    def features(self, x):
        """``φ(x)``: ``[n, feat_dim]``."""
        return self.featurizer(x)

    def head_logits(self, z):
        """All heads on features ``z [n, k]`` → logits ``[m, n, C]`` (one einsum)."""
        import torch

        return torch.einsum("nk,mck->mnc", z, self.weight) + self.bias[:, None, :]

    def head_logits_reference(self, z):
        """Same as :meth:`head_logits`, one head at a time."""
        import torch

        return torch.stack([z @ self.weight[k].T + self.bias[k] for k in range(self.n_heads)])

    def forward(self, x):
        """``[m, n, C]`` logits of every head."""
        return self.head_logits(self.features(x))

    def tie_heads(self) -> None:
        """Copy head 0 into every head (identical experts: MEDRO then contains GroupDRO)."""
        import torch

        with torch.no_grad():
            self.weight.copy_(self.weight[:1].expand_as(self.weight))
            self.bias.copy_(self.bias[:1].expand_as(self.bias))


def check_model(model: Any) -> MultiHeadNet:
    if not isinstance(model, MultiHeadNet):
        raise TypeError(f"model must be a MultiHeadNet (got {type(model).__name__})")
    return model
