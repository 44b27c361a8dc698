"""CVRP instances: the batch container, the generator, x8 symmetry and the VCT capacity sampler.

See: book/cvrp/01-same-customers-different-problem.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_int, check_positive

__all__ = ["MAX_DEMAND", "CVRPBatch", "generate_cvrp", "augment8", "sample_capacity"]

MAX_DEMAND = 9  # demands are uniform on {1, ..., 9} (the POMO / LEHD generator)


# ----------------------------------------------------------------------------------------
# Instances
# ----------------------------------------------------------------------------------------
@dataclass
class CVRPBatch:
    """A batch of CVRP instances; node 0 is the depot.

    Attributes
    ----------
    xy : torch.Tensor
        ``(B, n + 1, 2)`` coordinates in the unit square, depot first.
    demand : torch.Tensor
        ``(B, n + 1)`` integer-valued demands (float tensor), ``demand[:, 0] = 0``.
    capacity : torch.Tensor
        ``(B,)`` vehicle capacity per instance.

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """

    xy: Any
    demand: Any
    capacity: Any

    def __post_init__(self) -> None:
        import torch

        xy, demand, cap = self.xy, self.demand, self.capacity
        for name, t in (("xy", xy), ("demand", demand), ("capacity", cap)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor (got {type(t).__name__})")
        if xy.ndim != 3 or xy.shape[-1] != 2 or xy.shape[1] < 2:
            raise ValueError(
                f"xy must have shape (B, n + 1, 2) with n >= 1 (got {tuple(xy.shape)})"
            )
        if demand.shape != xy.shape[:2]:
            raise ValueError(
                f"demand must have shape {tuple(xy.shape[:2])} (got {tuple(demand.shape)})"
            )
        if cap.shape != xy.shape[:1]:
            raise ValueError(f"capacity must have shape ({xy.shape[0]},) (got {tuple(cap.shape)})")
        if not bool(torch.isfinite(xy).all()):
            raise ValueError("xy must be finite (got NaN or inf coordinates)")
        if not bool(torch.isfinite(demand).all()) or bool((demand[:, 1:] <= 0).any()):
            raise ValueError("demand must be finite and > 0 for every customer")
        if bool((demand[:, 0] != 0).any()):
            raise ValueError("demand[:, 0] is the depot and must be 0")
        if not bool(torch.isfinite(cap).all()) or bool((cap <= 0).any()):
            raise ValueError(f"capacity must be > 0 (got min {float(cap.min()):g})")
        worst = demand.max(dim=1).values
        if bool((worst > cap).any()):
            i = int(torch.nonzero(worst > cap)[0, 0])
            raise ValueError(
                f"instance {i} is infeasible: a demand of {float(worst[i]):g} exceeds "
                f"capacity {float(cap[i]):g} (every demand must be <= capacity)"
            )

    @property
    def n(self) -> int:
        """Number of customers."""
        return int(self.xy.shape[1]) - 1

    def __len__(self) -> int:
        return int(self.xy.shape[0])

    def to(self, device) -> CVRPBatch:
        """The same batch on ``device``."""
        return CVRPBatch(self.xy.to(device), self.demand.to(device), self.capacity.to(device))

    def subset(self, index) -> CVRPBatch:
        """Instances ``index`` (a slice, list or index tensor)."""
        return CVRPBatch(self.xy[index], self.demand[index], self.capacity[index])

    def with_capacity(self, capacity) -> CVRPBatch:
        """The same customers with another capacity (scalar or ``(B,)``)."""
        return CVRPBatch(self.xy, self.demand, _capacity_tensor(capacity, len(self), self.xy))


def _capacity_tensor(capacity, batch: int, like):
    """``capacity`` (scalar or ``(B,)``) as a ``(B,)`` tensor, checked once here: finite and
    ``>= MAX_DEMAND`` (so no generated demand can exceed it)."""
    import torch

    if isinstance(capacity, torch.Tensor):
        cap = capacity.to(dtype=like.dtype, device=like.device).reshape(-1)
    elif isinstance(capacity, bool | str) or capacity is None:
        raise TypeError(f"capacity must be a number or an array (got {type(capacity).__name__})")
    else:
        cap = torch.as_tensor(np.asarray(capacity, dtype=np.float64), dtype=like.dtype).reshape(-1)
    cap = cap.to(like.device)
    if cap.numel() == 1 and batch > 1:
        cap = cap.expand(batch).clone()
    if cap.shape != (batch,):
        raise ValueError(
            f"capacity must be a scalar or have shape ({batch},) (got {tuple(cap.shape)})"
        )
    if not bool(torch.isfinite(cap).all()) or bool((cap < MAX_DEMAND).any()):
        raise ValueError(
            f"capacity must be finite and >= {MAX_DEMAND} (the largest demand) "
            f"(got min {float(cap.min()):g})"
        )
    return cap


def generate_cvrp(batch: int, n: int, capacity, seed: int = 0, device=None) -> CVRPBatch:
    """Random CVRP instances: uniform depot and customers, demands uniform on ``{1..9}``.

    Parameters
    ----------
    batch : int
        Number of instances.
    n : int
        Customers per instance.
    capacity : float or array-like
        Vehicle capacity, a scalar or one value per instance; must be ``>= 9`` (the largest
        possible demand), otherwise an instance could be infeasible.
    seed : int
        Seed of the instance generator (a ``torch.Generator``); the same seed gives the same
        customers for every capacity, so one instance can be solved at many tightness degrees.
    device : torch.device, optional
        Where the tensors live (default CPU).

    Returns
    -------
    CVRPBatch

    See: book/cvrp/01-same-customers-different-problem.ipynb
    """
    import torch

    batch = check_int("batch", batch, 1)
    n = check_int("n", n, 1, 10_000)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(batch, n + 1, 2, generator=g)
    q = torch.randint(1, MAX_DEMAND + 1, (batch, n + 1), generator=g).float()
    q[:, 0] = 0.0
    cap = _capacity_tensor(capacity, batch, xy)  # the one check of a generated capacity
    out = CVRPBatch(xy, q, cap)
    return out if device is None else out.to(device)


def augment8(xy):
    """The 8 symmetries of the unit square applied to ``xy`` ``(B, N, 2)`` -> ``(8B, N, 2)``.

    Distances are preserved, so tour lengths are unchanged; POMO decodes all 8 copies.

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import torch

    x, y = xy[..., :1], xy[..., 1:]
    views = [(x, y), (1 - x, y), (x, 1 - y), (1 - x, 1 - y)]
    views += [(b, a) for a, b in views]
    return torch.cat([torch.cat(v, dim=-1) for v in views], dim=0)


# ----------------------------------------------------------------------------------------
# Capacity samplers and training
# ----------------------------------------------------------------------------------------
def sample_capacity(batch: int, lo: int, hi: int, generator=None):
    """Per-instance capacities uniform on the integers ``{lo, ..., hi}`` (VCT).

    See: book/cvrp/02-gap-vs-tightness.ipynb
    """
    import torch

    batch = check_int("batch", batch, 1)
    lo = check_int("lo", lo, MAX_DEMAND)
    hi = check_int("hi", hi, lo)
    return torch.randint(lo, hi + 1, (batch,), generator=generator).float()


def capacity_sampler(capacity) -> Callable:
    """``(batch, generator) -> (batch,)`` capacities from a number, a ``(lo, hi)`` range (VCT)
    or a callable (returned as is); used by ``fast.train_pomo``."""
    if callable(capacity):
        return capacity
    if isinstance(capacity, tuple | list):
        if len(capacity) != 2:
            raise ValueError(f"capacity range must be (lo, hi) (got {capacity})")
        lo, hi = int(capacity[0]), int(capacity[1])
        check_int("capacity[0]", capacity[0], MAX_DEMAND)
        check_int("capacity[1]", capacity[1], lo)
        return lambda b, g: sample_capacity(b, lo, hi, g)
    c = check_positive("capacity", capacity)
    if c < MAX_DEMAND:
        raise ValueError(f"capacity must be >= {MAX_DEMAND} (got {c:g})")
    import torch

    return lambda b, g: torch.full((b,), c)
