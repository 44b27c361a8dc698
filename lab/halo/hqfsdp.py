"""Low-precision weight all-gather (HALO's HQ-FSDP idea) on ``torch.distributed``.

FSDP keeps ``1/N`` of every weight on each rank and all-gathers the full weight before each
layer. HQ-FSDP moves the rotation and the quantization *before* the all-gather, so the wire
carries ``Q(WH)`` in 8 bits (half of BF16, a quarter of FP32):

1. each rank owns whole rows of ``W`` (shard boundaries aligned to rows) and rotates them
   locally, ``W_r H`` (``fwht`` over the in-features);
2. the ranks agree on one per-tensor scale: all-reduce MAX of the local absmax (one scalar);
3. each rank quantizes its rows with that scale and the 8-bit codes are all-gathered;
4. the gathered ``Q(WH)`` feeds HALO-1/2's forward ``Q(XH) Q(WH)ᵀ`` and the backward
   ``E_X`` product directly (:func:`lab.halo.layer.halo_linear` with ``qweight``): no float
   copy of ``W`` is materialised.

Gradients are averaged in FP32 (HALO keeps the reduce-scatter in BF16; reconstructed).

What crosses the process boundary is *counted*, not computed from a size formula: every
collective of this module goes through one wrapper that, inside :func:`wire_log`, records the
dtype, the element count and the bytes of the tensor handed to torch.distributed
(:class:`WireRecord`).

Why not ``torch.distributed.fsdp.fully_shard``: FSDP2 runs on CPU with gloo in this torch (a
2-process check passed), but changing *what* it all-gathers needs a tensor-subclass parameter
that implements ``fsdp_pre_all_gather``/``fsdp_post_all_gather`` (the route torchao's float8
training takes), and FSDP1 (``FullyShardedDataParallel``) refuses to run without an
accelerator. This module implements the communication step itself on plain
``torch.distributed`` (gloo on CPU, NCCL on GPU), plus a small sharded data-parallel training
loop that uses it.

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from dataclasses import dataclass

from lab.core.checks import check_bool, check_choice, check_int, check_range

__all__ = [
    "WireRecord",
    "wire_log",
    "quantized_allgather",
    "allgather_bytes",
    "run_sharded_training",
    "free_port",
]

WIRE_FORMATS = ("int8", "fp8_e4m3", "bf16", "fp32")
_LOG: list | None = None


@dataclass(frozen=True)
class WireRecord:
    """One collective call as this rank handed it to ``torch.distributed``.

    ``op`` (``"all_gather"`` or ``"all_reduce"``), the ``dtype`` and element count ``numel``
    of the tensor this rank contributes, its ``element_size`` in bytes and the group's
    ``world`` size. ``received`` is what the other ranks' contributions add up to in
    bytes (``(world − 1) · numel · element_size``): for an all-gather, exactly the bytes of
    the peers' shards that land in this rank's output.
    """

    op: str
    dtype: str
    numel: int
    element_size: int
    world: int

    @property
    def nbytes(self) -> int:
        return self.numel * self.element_size

    @property
    def received(self) -> int:
        return (self.world - 1) * self.nbytes


@contextlib.contextmanager
def wire_log():
    """Record every collective of this module made inside the ``with`` block.

    Yields the list that fills with :class:`WireRecord` (one per call, in order).

    Examples
    --------
    >>> with wire_log() as log:  # doctest: +SKIP
    ...     q = quantized_allgather(shard)
    >>> sum(r.received for r in log if r.op == "all_gather")  # doctest: +SKIP

    See: book/halo/02-fwht-kernel.ipynb
    """
    global _LOG
    prev, _LOG = _LOG, []
    try:
        yield _LOG
    finally:
        _LOG = prev


def _note(op, t, group):
    import torch.distributed as dist

    if _LOG is not None:
        dtype = str(t.dtype).removeprefix("torch.")
        _LOG.append(WireRecord(op, dtype, t.numel(), t.element_size(), dist.get_world_size(group)))


def _all_gather(out, inp, group=None):
    """``out`` (``world·rows × …``) ← every rank's ``inp``, counted in the wire log."""
    import torch.distributed as dist

    _note("all_gather", inp, group)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    gather(out, inp, group=group)
    return out


def _all_reduce(t, op=None, group=None):
    import torch.distributed as dist

    _note("all_reduce", t, group)
    dist.all_reduce(t, op=dist.ReduceOp.SUM if op is None else op, group=group)
    return t


def quantized_allgather(shard, group=None, fmt: str = "int8", rotate: bool = True):
    """All-gather row shards of a weight as ``Q(WH)`` with one shared per-tensor scale.

    Parameters
    ----------
    shard : torch.Tensor
        ``(rows_local, m)`` float rows of ``W`` owned by this rank (the same shape on every
        rank); ``m`` must be a Hadamard size when ``rotate``.
    group : process group, optional
        Default: the world.
    fmt : str
        ``"int8"`` or ``"fp8_e4m3"`` (sent as one byte per element).
    rotate : bool
        Rotate the rows (``W H``) before quantizing (HQ-FSDP); ``False`` quantizes ``W``.

    Returns
    -------
    QTensor
        Codes of the full ``(world·rows_local, m)`` weight in rank order, with the shared
        scale: ``.dequantize()`` approximates ``W H`` (or ``W``).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch
    import torch.distributed as dist

    from .formats import QTensor
    from .reference import fwht

    if not isinstance(shard, torch.Tensor) or shard.ndim != 2:
        raise ValueError("shard must be a 2-D torch.Tensor (rows_local, m)")
    check_choice("fmt", fmt, ("int8", "fp8_e4m3"))
    rotate = check_bool("rotate", rotate)
    if not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialized (call init_process_group)")
    v = fwht(shard.detach().float(), dim=-1) if rotate else shard.detach().float()  # W_r H
    amax = v.abs().amax().reshape(1)
    _all_reduce(amax, dist.ReduceOp.MAX, group)  # one shared scale (4 bytes)
    top = 127.0 if fmt == "int8" else 448.0
    scale = (amax[0] / top).clamp(min=1e-5 / 127.0)  # s = max over ranks of |W H| / fmax
    codes = _codes_with_scale(v, scale, fmt)
    wire = codes.view(torch.uint8) if codes.dtype != torch.int8 else codes
    world = dist.get_world_size(group)
    full = wire.new_empty((world * wire.shape[0], wire.shape[1]))
    _all_gather(full, wire.contiguous(), group)  # 1 byte per element on the wire
    if codes.dtype != torch.int8:
        full = full.view(codes.dtype)
    return QTensor(full, scale, fmt, "tensor", tuple(full.shape), shard.dtype)


def _codes_with_scale(v, scale, fmt):
    import torch

    from .formats import round_minifloat

    y = v / scale
    if fmt == "int8":
        return torch.round(y).clamp(-127, 127).to(torch.int8)
    return round_minifloat(y, fmt).to(torch.float8_e4m3fn)


def allgather_bytes(numel: int, world_size: int, fmt: str) -> int:
    """Bytes one rank should receive in an all-gather of a ``numel``-element weight (the
    size formula; the measured counterpart is :func:`wire_log`).

    ``(world_size − 1)/world_size · numel`` elements at 1 byte (int8, fp8), 2 (bf16) or 4
    (fp32), plus one 4-byte scale per peer for the 8-bit formats.

    See: book/halo/02-fwht-kernel.ipynb
    """
    numel = check_int("numel", numel, 0)
    world_size = check_int("world_size", world_size, 1)
    check_choice("fmt", fmt, WIRE_FORMATS)
    size = {"int8": 1, "fp8_e4m3": 1, "bf16": 2, "fp32": 4}[fmt]
    peers = world_size - 1
    return peers * (numel // world_size) * size + (4 * peers if size == 1 else 0)


def free_port() -> int:
    """A free TCP port on the loopback interface.

    See: book/halo/02-fwht-kernel.ipynb
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank, world, port, fmt, steps, width, lr, seed, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world)
        out = {f: _train(rank, world, f, steps, width, lr, seed) for f in fmt}
        queue.put((rank, out))
    except Exception as exc:  # pragma: no cover - reported to the parent
        queue.put((rank, {"error": repr(exc)}))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


#: HALO level fed by each 8-bit wire format (INT8 needs HALO-2, FP8 HALO-1)
WIRE_LEVEL = {"int8": 2, "fp8_e4m3": 1}


def _train(rank, world, fmt, steps, width, lr, seed):
    """Sharded data-parallel regression with a 2-layer MLP: each rank owns ``1/world`` of the
    rows of every weight and all-gathers the full weights in ``fmt`` before the forward.

    8-bit formats: the gathered ``Q(WH)`` feeds HALO-2 (INT8) or HALO-1 (FP8) products
    directly (forward, ``E_X`` and ``G`` all in ``fmt``). ``bf16``/``fp32``: the gathered
    weight (cast to FP32) runs a plain FP32 forward. Gradients: FP32 all-reduce, each rank
    keeps its rows. The collectives are counted by :func:`wire_log`."""
    import torch

    from .layer import halo_linear

    g = torch.Generator().manual_seed(seed)  # same teacher and init on every rank
    d_in, d_out = width, 16
    teacher = torch.randn(d_out, d_in, generator=g) / math.sqrt(d_in)
    W1 = torch.randn(width, d_in, generator=g) / math.sqrt(d_in)
    W2 = torch.randn(d_out, width, generator=g) / math.sqrt(width)
    full = [W1, W2]
    shards = [w.chunk(world, 0)[rank].clone().requires_grad_(True) for w in full]
    opt = torch.optim.Adam(shards, lr=lr)
    data_g = torch.Generator().manual_seed(seed + 1 + rank)  # each rank its own batches
    losses, gather, reduce_ = [], [], []
    lowp = fmt in WIRE_LEVEL
    for _ in range(steps):
        x = torch.randn(64, d_in, generator=data_g)
        y = x @ teacher.T
        with wire_log() as log:
            if lowp:  # HQ-FSDP: Q(WH) on the wire and into the HALO products
                qs = [quantized_allgather(s, fmt=fmt, rotate=True) for s in shards]
                sinks = [torch.zeros(q.shape, requires_grad=True) for q in qs]  # receive G

                def layer(inp, i, qs=qs, sinks=sinks):
                    return halo_linear(inp, sinks[i], level=WIRE_LEVEL[fmt], fmt=fmt, qweight=qs[i])
            else:
                dt = torch.bfloat16 if fmt == "bf16" else torch.float32
                sinks = []
                for s in shards:
                    wire = s.detach().to(dt).contiguous()
                    out = wire.new_empty((world * wire.shape[0], wire.shape[1]))
                    sinks.append(_all_gather(out, wire).float().requires_grad_(True))

                def layer(inp, i, sinks=sinks):
                    return inp @ sinks[i].T  # FP32 forward

        gather.append(sum(r.received for r in log if r.op == "all_gather"))
        reduce_.append(sum(r.received for r in log if r.op == "all_reduce"))
        wire_dtypes = sorted({r.dtype for r in log if r.op == "all_gather"})
        pred = layer(torch.relu(layer(x, 0)), 1)
        loss = ((pred - y) ** 2).mean()
        grads = torch.autograd.grad(loss, sinks)
        for s, gr in zip(shards, grads, strict=True):
            gr = gr.contiguous()
            _all_reduce(gr)  # FP32 gradient average (a reduce-scatter in FSDP)
            s.grad = (gr / world).chunk(world, 0)[rank].clone()
        opt.step()
        opt.zero_grad()
        lt = loss.detach().reshape(1)
        _all_reduce(lt)
        losses.append(float(lt) / world)
    return {
        "loss": losses,
        "wire_bytes": int(sum(gather)),
        "scale_bytes": int(sum(reduce_)),
        "wire_dtypes": wire_dtypes,
        "weight_numel": int(sum(w.numel() for w in full)),
        "level": WIRE_LEVEL.get(fmt),
    }


def run_sharded_training(
    world_size: int = 2,
    fmt: str | tuple = "int8",
    steps: int = 60,
    width: int = 256,
    lr: float = 3e-3,
    seed: int = 0,
    timeout: float = 120.0,
) -> dict:
    """Spawn ``world_size`` processes on localhost (gloo, ``127.0.0.1``) that train a sharded
    MLP with weights all-gathered in ``fmt``.

    Parameters
    ----------
    world_size : int
    fmt : str or tuple of str
        Wire format of the weight all-gather: ``"int8"``, ``"fp8_e4m3"`` (HQ-FSDP: rotated,
        one shared scale, fed to HALO-2 resp. HALO-1 products), ``"bf16"`` or ``"fp32"``
        (FP32 forward). A tuple runs each format in turn in the
        same processes (one start-up).
    steps, width, lr, seed
        The regression problem (teacher ``16 × width``, MLP ``width → width → 16``).
    timeout : float
        Seconds before the workers are terminated and ``TimeoutError`` is raised.

    Returns
    -------
    dict
        ``loss`` (mean over ranks, per step); ``wire_bytes``: bytes of the weight all-gathers
        that rank 0 received, *counted* from the tensors handed to the collective
        (:func:`wire_log`); ``scale_bytes``: the same for the scale all-reduce (8-bit formats);
        ``wire_dtypes``: the dtypes that were all-gathered; ``weight_numel``; ``level``: the
        HALO level the gathered ``Q(WH)`` fed (``None`` for the FP32 forward of ``bf16`` and
        ``fp32``). For a tuple ``fmt``, a dict of those per format.

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch.multiprocessing as mp

    from .hadamard import check_size

    world_size = check_int("world_size", world_size, 1, 8)
    fmts = (fmt,) if isinstance(fmt, str) else tuple(fmt)
    if not fmts:
        raise ValueError("fmt must be a format or a non-empty tuple of formats")
    for f in fmts:
        check_choice("fmt", f, WIRE_FORMATS)
    steps = check_int("steps", steps, 1)
    width = check_int("width", width, 2)
    check_size("width", width)
    if width % world_size:
        raise ValueError(f"width = {width} must be divisible by world_size = {world_size}")
    lr = check_range("lr", lr, 0.0, 1.0, low_inclusive=False)
    timeout = check_range("timeout", timeout, 1.0, 3600.0)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(target=_worker, args=(r, world_size, port, fmts, steps, width, lr, seed, queue))
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    results = _collect(procs, queue, world_size, timeout)
    return results[0][fmt] if isinstance(fmt, str) else results[0]


def _collect(procs: list, queue, world_size: int, timeout: float) -> dict:
    """Every rank's results from ``queue``; the workers joined (terminated past ``timeout``)."""
    import queue as _q
    import time

    results = {}
    deadline = time.monotonic() + timeout
    try:
        while len(results) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"sharded training did not finish in {timeout:g} s")
            try:
                rank, out = queue.get(timeout=min(left, 1.0))
            except _q.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise RuntimeError("a worker process died") from None
                continue
            if "error" in out:
                raise RuntimeError(f"rank {rank} failed: {out['error']}")
            results[rank] = out
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()
    return results
