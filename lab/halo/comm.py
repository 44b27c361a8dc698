"""Low-precision weight all-gather (HALO's HQ-FSDP idea) on ``torch.distributed``.

FSDP keeps ``1/N`` of every weight on each rank and all-gathers the full weight before each
layer. HQ-FSDP moves the rotation and the quantization *before* the all-gather, so the wire
carries ``Q(WH)`` in 8 bits (half of BF16, a quarter of FP32):

1. each rank owns whole rows of ``W`` (shard boundaries aligned to rows) and rotates them
   locally, ``W_r H`` (``fwht`` over the in-features);
2. the ranks agree on one per-tensor scale: all-reduce MAX of the local absmax (one scalar);
3. each rank quantizes its rows with that scale and the 8-bit codes are all-gathered;
4. the gathered ``Q(WH)`` feeds HALO-1/2's forward ``Q(XH) Q(WH)ᵀ`` directly.

Gradients are averaged in FP32 (HALO keeps the reduce-scatter in BF16; reconstructed).

Why not ``torch.distributed.fsdp.fully_shard``: FSDP2 runs on CPU with gloo in this torch (a
2-process check passed), but changing *what* it all-gathers needs a tensor-subclass parameter
that implements ``fsdp_pre_all_gather``/``fsdp_post_all_gather`` (the route torchao's float8
training takes), and FSDP1 (``FullyShardedDataParallel``) refuses to run without an
accelerator. This module implements the communication step itself on plain
``torch.distributed`` (gloo on CPU, NCCL on GPU), plus a small sharded data-parallel training
loop that uses it.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

import math
import os
import socket

from lab.core.checks import check_bool, check_choice, check_int, check_range

__all__ = ["quantized_allgather", "allgather_bytes", "run_sharded_training", "free_port"]

WIRE_FORMATS = ("int8", "fp8_e4m3", "bf16", "fp32")


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

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch
    import torch.distributed as dist

    from .formats import QTensor
    from .hadamard import fwht

    if not isinstance(shard, torch.Tensor) or shard.ndim != 2:
        raise ValueError("shard must be a 2-D torch.Tensor (rows_local, m)")
    check_choice("fmt", fmt, ("int8", "fp8_e4m3"))
    rotate = check_bool("rotate", rotate)
    if not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialized (call init_process_group)")
    v = fwht(shard.detach().float(), dim=-1) if rotate else shard.detach().float()  # W_r H
    amax = v.abs().amax().reshape(1)
    dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=group)  # one shared scale
    top = 127.0 if fmt == "int8" else 448.0
    scale = (amax[0] / top).clamp(min=1e-5 / 127.0)  # s = max over ranks of |W H| / fmax
    codes = _codes_with_scale(v, scale, fmt)
    wire = codes.view(torch.uint8) if codes.dtype != torch.int8 else codes
    world = dist.get_world_size(group)
    out = [torch.empty_like(wire) for _ in range(world)]
    dist.all_gather(out, wire.contiguous(), group=group)  # 1 byte per element on the wire
    full = torch.cat(out, 0)
    if codes.dtype != torch.int8:
        full = full.view(codes.dtype)
    return QTensor(full, scale, fmt, "tensor", tuple(full.shape), shard.dtype)


def _codes_with_scale(v, scale, fmt):
    import torch

    from .formats import _round_minifloat

    y = v / scale
    if fmt == "int8":
        return torch.round(y).clamp(-127, 127).to(torch.int8)
    return _round_minifloat(y, fmt).to(torch.float8_e4m3fn)


def allgather_bytes(numel: int, world_size: int, fmt: str) -> int:
    """Bytes one rank receives in an all-gather of a ``numel``-element weight.

    ``(world_size − 1)/world_size · numel`` elements at 1 byte (int8, fp8), 2 (bf16) or 4
    (fp32), plus one 4-byte scale per peer for the 8-bit formats.

    See: book/halo/03-quantized-finetune.ipynb
    """
    numel = check_int("numel", numel, 0)
    world_size = check_int("world_size", world_size, 1)
    check_choice("fmt", fmt, WIRE_FORMATS)
    size = {"int8": 1, "fp8_e4m3": 1, "bf16": 2, "fp32": 4}[fmt]
    peers = world_size - 1
    return peers * (numel // world_size) * size + (4 * peers if size == 1 else 0)


def free_port() -> int:
    """A free TCP port on the loopback interface.

    See: book/halo/03-quantized-finetune.ipynb
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


def _train(rank, world, fmt, steps, width, lr, seed):
    """Sharded data-parallel regression with a 2-layer MLP: each rank owns ``1/world`` of the
    rows of every weight, all-gathers the full weights in ``fmt`` before the forward, and
    averages the FP32 gradients (all-reduce, then keeps its own rows)."""
    import torch
    import torch.distributed as dist

    from .formats import fake_quant
    from .hadamard import fwht

    g = torch.Generator().manual_seed(seed)  # same teacher and init on every rank
    d_in, d_out = width, 16
    teacher = torch.randn(d_out, d_in, generator=g) / math.sqrt(d_in)
    W1 = torch.randn(width, d_in, generator=g) / math.sqrt(d_in)
    W2 = torch.randn(d_out, width, generator=g) / math.sqrt(width)
    full = [W1, W2]
    shards = [w.chunk(world, 0)[rank].clone().requires_grad_(True) for w in full]
    opt = torch.optim.Adam(shards, lr=lr)
    data_g = torch.Generator().manual_seed(seed + 1 + rank)  # each rank its own batches
    losses, wire = [], 0
    for _ in range(steps):
        gathered = []
        for s in shards:
            if fmt in ("int8", "fp8_e4m3"):
                q = quantized_allgather(s, fmt=fmt, rotate=True)  # Q(WH), 8 bits on the wire
                gathered.append(fwht(q.dequantize().float(), dim=-1, inverse=True))
            else:
                dt = torch.bfloat16 if fmt == "bf16" else torch.float32
                parts = [torch.empty_like(s, dtype=dt) for _ in range(world)]
                dist.all_gather(parts, s.detach().to(dt).contiguous())
                gathered.append(torch.cat(parts, 0).float())
            wire += allgather_bytes(gathered[-1].numel(), world, fmt)
        Wf = [w.requires_grad_(True) for w in gathered]
        x = torch.randn(64, d_in, generator=data_g)
        y = x @ teacher.T
        h = torch.relu(fake_quant(x, None) @ Wf[0].T)
        pred = h @ Wf[1].T
        loss = ((pred - y) ** 2).mean()
        grads = torch.autograd.grad(loss, Wf)
        for s, gr in zip(shards, grads, strict=True):
            gr = gr.contiguous()
            dist.all_reduce(gr)  # FP32 gradient average (a reduce-scatter in FSDP)
            s.grad = (gr / world).chunk(world, 0)[rank].clone()
        opt.step()
        opt.zero_grad()
        lt = loss.detach().reshape(1)
        dist.all_reduce(lt)
        losses.append(float(lt) / world)
    return {"loss": losses, "wire_bytes": wire}


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
        one shared scale), ``"bf16"`` or ``"fp32"``. A tuple runs each format in turn in the
        same processes (one start-up).
    steps, width, lr, seed
        The regression problem (teacher ``16 × width``, MLP ``width → width → 16``).
    timeout : float
        Seconds before the workers are terminated and ``TimeoutError`` is raised.

    Returns
    -------
    dict
        ``loss`` (mean over ranks, per step) and ``wire_bytes`` (bytes received by one rank in
        all-gathers); for a tuple ``fmt``, a dict of those per format.

    See: book/halo/03-quantized-finetune.ipynb
    """
    import torch.multiprocessing as mp

    from .hadamard import _check_size

    world_size = check_int("world_size", world_size, 1, 8)
    fmts = (fmt,) if isinstance(fmt, str) else tuple(fmt)
    if not fmts:
        raise ValueError("fmt must be a format or a non-empty tuple of formats")
    for f in fmts:
        check_choice("fmt", f, WIRE_FORMATS)
    steps = check_int("steps", steps, 1)
    width = check_int("width", width, 2)
    _check_size("width", width)
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
    results = {}
    import queue as _q
    import time

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
    return results[0][fmt] if isinstance(fmt, str) else results[0]
