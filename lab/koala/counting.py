"""The cost of one optimizer step, counted instead of timed: arithmetic work and memory traffic.

A wall-clock ratio of two optimizer steps measures the BLAS path, the vector width and the load
of the machine as much as the method (the same KOALA++/Adam ratio was timed at 0.8x to 2.7x on
one machine). `step_counts` instead runs one step under `OpCounter`, a
``TorchDispatchMode`` that sees every aten op the step dispatches and adds up, from shapes and
dtypes alone,

* **work**: for a matrix product (``dot``, ``vdot``, ``mv``, ``addmv``, ``outer`` and every op
  of ``torch.utils.flop_counter``'s registry: ``mm``, ``addmm``, ``bmm``...) its flops by that
  module's convention, two per multiply-add (a dot product of ``n`` entries is ``2n``); for
  every other op one operation per element of its largest operand or result (an elementwise op
  counts its output elements, a reduction its input elements; a fused op such as ``addcmul_``
  counts once); for a multi-tensor ``_foreach_*`` op the sum over its tensors;
* **bytes**: every tensor argument read once (the same tensor passed twice is read twice;
  ``copy_``/``fill_``/``zero_`` do not read their destination) plus every result written once
  (an in-place op writes the tensor it mutates); views (``view``, ``reshape`` of a contiguous
  tensor, ``detach``...) and allocations (``empty*``) cost nothing.

The counts depend on the shapes, the dtypes and the code of the step (torch's version for
``torch.optim``), never on the values, the machine, the BLAS or the load. On the ``meta``
device nothing is allocated, so a dense-covariance EKF of a 1.9M-weight network can be
counted; a value read on the host (``float(t)``, ``.item()``) of a meta tensor answers
``meta_item`` (1.0: every KOALA++ tensor initialised and active, the steady-state branch).

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_bool, check_choice, check_int

__all__ = ["OpCounter", "COUNTED_OPTIMIZERS", "StepCounts", "step_counts"]

#: ops that overwrite their first argument without reading it
_WRITE_ONLY = frozenset(
    {"copy_", "fill_", "zero_", "_foreach_copy_", "_foreach_zero_", "normal_", "uniform_"}
)
#: allocations without a write
_ALLOC = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
#: matrix products outside flop_counter's registry: flops from the operands' shapes
_PRODUCTS = {
    "dot": lambda a, b, *_: 2 * a.numel(),
    "vdot": lambda a, b, *_: 2 * a.numel(),
    "mv": lambda m, v, *_: 2 * m.numel(),
    "addmv": lambda x, m, v, *_: 2 * m.numel() + x.numel(),
    "outer": lambda a, b, *_: a.numel() * b.numel(),
}


def _tensors(tree: Any) -> list:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


class OpCounter:
    """Counts the work and memory traffic of every aten op run inside it (see the module doc).

    >>> with OpCounter() as c:
    ...     x.add_(y)            # n float32 elements: work n, bytes 3 * 4 * n
    >>> c.work, c.bytes

    Attributes
    ----------
    work, bytes : int
        Totals (operations, bytes read + written).
    ops : int
        Aten ops that touched data (views and allocations left out).
    host_reads : int
        Values read on the host (``.item()``, ``float(t)``).
    by_op : dict
        ``{op name: [calls, work, bytes]}``.
    """

    def __init__(self, meta_item: float = 1.0):
        from torch.utils._python_dispatch import TorchDispatchMode

        if isinstance(meta_item, bool) or not isinstance(meta_item, int | float):
            raise TypeError(f"meta_item must be a number (got {type(meta_item).__name__})")
        self.meta_item = float(meta_item)
        self.work = self.bytes = self.ops = self.host_reads = 0
        self.by_op: dict[str, list[int]] = {}
        counter = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return counter._dispatch(func, args, kwargs or {})

        self._mode = _Mode()

    def __enter__(self) -> OpCounter:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)

    def _add(self, name: str, work: int, nbytes: int) -> None:
        self.work += work
        self.bytes += nbytes
        self.ops += 1
        entry = self.by_op.setdefault(name, [0, 0, 0])
        entry[0] += 1
        entry[1] += work
        entry[2] += nbytes

    def _dispatch(self, func, args, kwargs):
        import torch

        name = func._overloadpacket.__name__
        if func is torch.ops.aten._local_scalar_dense.default:
            (t,) = args
            self.host_reads += 1
            self._add(name, 0, _nbytes(t))
            if t.device.type == "meta":
                if t.dtype == torch.bool:
                    return bool(self.meta_item)
                return self.meta_item if t.dtype.is_floating_point else int(self.meta_item)
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        if func.namespace != "aten" or func.is_view or name in _ALLOC:
            return out
        schema = func._schema.arguments
        written = [a for i, a in enumerate(args) if i < len(schema) and _is_write(schema[i])] + [
            v for k, v in kwargs.items() if k == "out"
        ]
        written = _tensors(written)
        read_args = list(args[1:]) if name in _WRITE_ONLY else list(args)
        reads = _tensors((read_args, {k: v for k, v in kwargs.items() if k != "out"}))
        results = [t for t in _tensors(out) if not any(t is w for w in written)]
        writes = written + results
        nbytes = sum(_nbytes(t) for t in reads) + sum(_nbytes(t) for t in writes)
        self._add(name, self._work(func, name, args, kwargs, out, reads + writes), nbytes)
        return out

    @staticmethod
    def _work(func, name, args, kwargs, out, touched) -> int:
        from torch.utils.flop_counter import flop_registry

        if name in _PRODUCTS:
            return int(_PRODUCTS[name](*args))
        if func._overloadpacket in flop_registry:
            return int(flop_registry[func._overloadpacket](*args, **kwargs, out_val=out))
        if name.startswith("_foreach_"):
            return sum(t.numel() for t in _tensors(args[0]))
        return max((t.numel() for t in touched), default=0)


def _is_write(arg) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


#: what `step_counts` can count (see its docstring)
COUNTED_OPTIMIZERS = ("adam", "adam_foreach", "sgd", "koalav", "koalapp", "ekf")


@dataclass(frozen=True)
class StepCounts:
    """The counted cost of one optimizer step (`step_counts`).

    See: book/koala/02-training-digits.ipynb
    """

    optimizer: str
    shapes: tuple
    parameters: int
    device: str
    work: int
    bytes: int
    ops: int
    host_reads: int
    by_op: dict = field(default_factory=dict, repr=False, compare=False)

    def over(self, other: StepCounts) -> dict[str, float]:
        """``{"work": ..., "bytes": ...}``: this step's counts over ``other``'s."""
        if not isinstance(other, StepCounts):
            raise TypeError(f"other must be a StepCounts (got {type(other).__name__})")
        return {"work": self.work / other.work, "bytes": self.bytes / other.bytes}


def _ekf_step_(params, covs, *, loss: float, q: float, r: float, lr: float) -> None:
    """One full-covariance EKF step per tensor (eq. (koala-ekf) with a dense ``P``), in place."""
    import torch

    with torch.no_grad():
        for p, P in zip(params, covs, strict=True):
            h = p.grad.reshape(-1)
            P.diagonal().add_(q)  # P_hat = P + Q I
            g = P @ h  # P_hat H^T
            s = h @ g + r  # S = H P_hat H^T + R
            p.sub_((lr * loss / s * g).reshape(p.shape))
            P.sub_(torch.outer(g, g) / s)  # P = P_hat - K H P_hat


def _shapes(model_or_shapes: Any) -> tuple:
    import torch

    if isinstance(model_or_shapes, torch.nn.Module):
        shapes = [tuple(p.shape) for p in model_or_shapes.parameters() if p.requires_grad]
    elif isinstance(model_or_shapes, str | bytes) or not hasattr(model_or_shapes, "__iter__"):
        raise TypeError(
            "model_or_shapes must be a torch.nn.Module or a sequence of tensor shapes "
            f"(got {type(model_or_shapes).__name__})"
        )
    else:
        shapes = []
        for s in model_or_shapes:
            if isinstance(s, str | bytes) or not hasattr(s, "__iter__"):
                raise TypeError(
                    f"model_or_shapes must hold tensor shapes such as (64, 64) (got {s!r})"
                )
            shapes.append(tuple(check_int("model_or_shapes entry", d, 1) for d in s))
    if not shapes:
        raise ValueError("model_or_shapes must have at least one parameter tensor")
    return tuple(shapes)


def _make_step(name: str, params: list, device) -> Callable[[], None]:
    import torch

    from lab.koala.optim import KoalaPP, KoalaV

    loss = torch.tensor(0.5, device=device)
    if name in ("adam", "adam_foreach"):
        return torch.optim.Adam(params, lr=1e-6, foreach=name == "adam_foreach" or None).step
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-6, momentum=0.9).step
    if name == "ekf":
        covs = [0.1 * torch.eye(p.numel(), device=device) for p in params]
        return lambda: _ekf_step_(params, covs, loss=0.5, q=0.1, r=1.0, lr=1e-6)
    if name == "koalav":
        opt = KoalaV(params, lr=1e-6, r=1.0)
    else:  # the per-tensor loop: KoalaPP's CPU default for large tensors (see its foreach)
        opt = KoalaPP(params, lr=1e-6, r=1.0, foreach=False)
    return lambda: opt.step_with_loss(loss)


def step_counts(
    model_or_shapes: Any,
    optimizer: str,
    *,
    device: str = "meta",
    warmup: bool = True,
    seed: int = 0,
) -> StepCounts:
    """Count the work and memory traffic of one optimizer step (`OpCounter` conventions).

    Parameters
    ----------
    model_or_shapes : torch.nn.Module or sequence of shapes
        The parameters (float32) that the step updates, e.g. ``lab.koala.MLP_1M9``.
    optimizer : str
        One of `COUNTED_OPTIMIZERS`: ``"adam"`` (``torch.optim.Adam``, its defaults: on CPU
        and meta the single-tensor loop), ``"adam_foreach"`` (``foreach=True``), ``"sgd"``
        (momentum 0.9), ``"koalav"``, ``"koalapp"`` (``KoalaPP(foreach=False)``, the
        per-tensor loop that ``KoalaPP`` runs on CPU for large tensors; fixed ``r = 1``) or
        ``"ekf"`` (the full-covariance EKF step that KOALA++ avoids: a dense ``n x n`` ``P``
        per tensor, a matrix-vector product and a rank-one update).
    device : {"meta", "cpu"}
        ``"meta"`` (default) allocates nothing; ``"cpu"`` runs the step on seeded random
        values (``"ekf"``: tensors of at most 8,192 entries).
    warmup : bool
        Count the second step (the steady state, after the optimizer made its state), not the
        first.
    seed : int
        Seed of the CPU values (the counts do not depend on it).

    Returns
    -------
    StepCounts

    See: book/koala/02-training-digits.ipynb
    """
    import torch

    shapes = _shapes(model_or_shapes)
    if not isinstance(optimizer, str):
        raise TypeError(f"optimizer must be a string (got {type(optimizer).__name__})")
    optimizer = check_choice("optimizer", optimizer, COUNTED_OPTIMIZERS)
    device = check_choice("device", device, ("meta", "cpu"))
    warmup = check_bool("warmup", warmup)
    seed = check_int("seed", seed, 0)
    largest = max(int(np.prod(s)) for s in shapes)
    if optimizer == "ekf" and device == "cpu" and largest > 8192:
        raise ValueError(
            "device: 'ekf' on 'cpu' keeps a dense n x n covariance per tensor; tensors of at "
            f"most 8,192 entries there (got {largest}); count it on 'meta'"
        )
    g = torch.Generator().manual_seed(seed)
    params = []
    for s in shapes:
        if device == "meta":
            p = torch.nn.Parameter(torch.empty(s, device="meta"))
            p.grad = torch.empty(s, device="meta")
        else:
            p = torch.nn.Parameter(0.05 * torch.randn(s, generator=g))
            p.grad = 0.01 * torch.randn(s, generator=g)
        params.append(p)
    step = _make_step(optimizer, params, device)
    if warmup:
        with OpCounter():  # answers the host reads of meta tensors; not kept
            step()
    with OpCounter() as c:
        step()
    return StepCounts(
        optimizer=optimizer,
        shapes=shapes,
        parameters=int(sum(np.prod(s) for s in shapes)),
        device=device,
        work=int(c.work),
        bytes=int(c.bytes),
        ops=int(c.ops),
        host_reads=int(c.host_reads),
        by_op={k: tuple(v) for k, v in sorted(c.by_op.items())},
    )
