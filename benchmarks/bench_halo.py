"""HALO: the FWHT fast path against the numpy reference, a dense Hadamard matmul and the FWHT
packages a user would install (``hadamard-transform``, pure torch; ``pyfwht``, C), on CPU;
with ``--gpu`` the triton kernel's bandwidth against the device's peak, the INT8 GEMM
against bf16, and a HaloLinear layer (fwd+bwd) against ``nn.Linear`` in bf16.

Every row is cross-checked against ``lab.halo.fwht`` (max abs difference as a metric; the
peers' normalization is matched first). The bandwidth cases (issue 41) time the compiled
kernel on ~34 MB arrays (in L3 here) and, without ``--quick``, on 671 MB arrays (DRAM) beside
``numpy.copyto`` of the same array, the limit: rounds alternate the contenders, best of each;
effective bandwidth = one read + one write of the array per transform. They record the share
of memcpy's bandwidth (out of place into a preallocated output, in place, the public
``lab.halo.fwht`` that allocates its output), the speed-up of 2 threads over 1 and pyfwht's
time; the results file's ``machine`` carries the CPU's SIMD flags and its L3 size. The CPU cases compare like with like: float64 against
pyfwht (float64 only on CPU; the copy of the input it transforms in place is timed with it),
float32 against the dense matmul; each records which implementation the fast path ran
(``fwht_backend``: the compiled C kernel, or torch without a compiler).

    python benchmarks/bench_halo.py            # CPU: n = 1024, 4096, 16384 (float64), 256 rows
    python benchmarks/bench_halo.py --quick    # CPU, < 20 s: 64 rows, 34 MB bandwidth cases
    python benchmarks/bench_halo.py --gpu      # adds the CUDA cases
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import halo  # noqa: E402
from lab.halo import fwht_cpu  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402

# HBM peak bandwidth (bytes/s) of GPUs we may meet; None elsewhere (then no fraction)
PEAK_BW = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.0e12, "4090": 1.0e12, "L40": 0.86e12}


def _torch_path(x):
    """The torch (Kronecker-factor) path that ``fwht`` falls back to without a C compiler."""
    return halo.fast._fwht_torch(x, True, False)


def cpu_cases(bench: Benchmark) -> None:
    """Like with like: float64 against pyfwht (which has no float32 CPU path; its input copy is
    included, as it transforms in place), float32 against the dense matmul and
    hadamard-transform. The fast path's implementation (``fwht_backend``) is recorded."""
    rows = 64 if bench.quick else 256
    for n in (1024, 4096, 16384):
        g = torch.Generator().manual_seed(0)
        x64 = torch.randn(rows, n, generator=g, dtype=torch.float64)
        xn = x64.numpy()
        backend = halo.fwht_backend(x64)
        with bench.case(
            f"FWHT float64, n = {n}, {rows} rows (1 thread)",
            target=">= 1x pyfwht (float64, its input copy included)",
            n=n,
            rows=rows,
            dtype="float64",
        ) as case:
            ref = case.time(
                "reference", "lab.halo.fwht (numpy butterflies)", partial(halo.fwht, xn)
            )
            fast = case.time("fast", f"lab.halo.fwht (backend {backend})", partial(halo.fwht, x64))
            case.metric("fwht_backend", backend)
            case.metric("max_abs_diff_fast_vs_reference", float(np.abs(fast.numpy() - ref).max()))
            if backend != "torch":
                case.time("peer", "lab.halo.fwht torch fallback (Kronecker factors)",
                          partial(_torch_path, x64))  # fmt: skip
            try:
                import pyfwht

                y = case.time(
                    "peer",
                    "pyfwht (C, float64, backend=cpu, incl. input copy)",
                    lambda xn=xn: pyfwht.fwht(xn.copy(), backend="cpu"),
                )
                case.metric("max_abs_diff_pyfwht", float(np.abs(y / math.sqrt(n) - ref).max()))
            except ImportError:
                pass
    for n in (4096, 1024):
        g = torch.Generator().manual_seed(0)
        xt = torch.randn(rows, n, generator=g)
        ref = halo.fwht(xt.double().numpy())
        H = halo.hadamard_matrix(n, torch.float32)
        backend = halo.fwht_backend(xt)
        with bench.case(
            f"FWHT float32, n = {n}, {rows} rows (1 thread)",
            target=">= 20x vs dense Hadamard matmul" if n == 4096 else None,
            n=n,
            rows=rows,
            dtype="float32",
        ) as case:
            fast = case.time("fast", f"lab.halo.fwht (backend {backend})", partial(halo.fwht, xt))
            case.metric("fwht_backend", backend)
            dense = case.time("peer", "dense x @ H (BLAS)", partial(torch.matmul, xt, H))
            if backend != "torch":
                case.time("peer", "lab.halo.fwht torch fallback (Kronecker factors)",
                          partial(_torch_path, xt))  # fmt: skip
            case.metric("max_abs_diff_fast_vs_reference", float(np.abs(fast.numpy() - ref).max()))
            case.metric("max_abs_diff_dense_vs_reference", float(np.abs(dense.numpy() - ref).max()))
            try:
                import hadamard_transform as ht

                y = case.time(
                    "peer", "hadamard-transform (torch)", partial(ht.hadamard_transform, xt)
                )
                ys = y.numpy()
                scale = 1.0 if np.allclose(ys, ref, atol=1e-3) else 1 / math.sqrt(n)
                case.metric(
                    "max_abs_diff_hadamard_transform", float(np.abs(ys * scale - ref).max())
                )
            except ImportError:
                pass


def cpu_features() -> dict:
    """The CPU's SIMD flags (avx2, avx512f, amx), its L3 size, the kernel paths it runs and the
    SMT siblings of CPU 0 (two vCPUs of one core would halve the 2-thread speed-up)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])  # fmt: skip
    except OSError:
        flags = []
    try:
        sib = Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").read_text()
    except OSError:
        sib = None
    return {
        "avx2": "avx2" in flags,
        "avx512f": "avx512f" in flags,
        "amx": any(fl.startswith("amx") for fl in flags),
        "l3_bytes": fwht_cpu._l3_bytes(),
        "fwht_kernel_paths": fwht_cpu._isas(),
        "cpu0_thread_siblings": sib.strip() if sib else None,
    }


class HaloBenchmark(Benchmark):
    def results(self):
        res = super().results()
        res["machine"].update(cpu_features())
        return res


def _best_alternating(fns: dict, rounds: int) -> dict:
    """Best time of each callable, rounds alternating them (two calls per turn)."""
    best = dict.fromkeys(fns, math.inf)
    for f in fns.values():
        f()  # warm-up: page faults, the kernel's build
    for _ in range(rounds):
        for name, f in fns.items():
            for _ in range(2):
                t0 = time.perf_counter()
                f()
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _mirror(x: np.ndarray) -> np.ndarray:
    """The reference's butterflies in ``x``'s own dtype (then ``/ sqrt(n)`` in that dtype)."""
    y = x.copy()
    rows, n = y.shape
    h = 1
    while h < n:
        v = y.reshape(rows, n // (2 * h), 2, h)
        a, b = v[..., 0, :].copy(), v[..., 1, :]
        v[..., 0, :] += b
        v[..., 1, :] = a - b
        h *= 2
    return y / x.dtype.type(math.sqrt(n))


def bandwidth_cases(bench: Benchmark) -> None:
    """The kernel against memcpy (numpy.copyto of the same array, the bandwidth limit)."""
    sizes = [1 << 25] if bench.quick else [1 << 25, 640 << 20]
    rounds = 2 if bench.quick else 5
    for nbytes in sizes:
        for dtype in (np.float32, np.float64):
            for n in (4096, 16384):
                _bandwidth_case(bench, nbytes, np.dtype(dtype), n, rounds)


def _bandwidth_case(bench, nbytes, dtype, n, rounds) -> None:
    rows = nbytes // (n * dtype.itemsize)
    x = np.random.default_rng(0).standard_normal((rows, n), dtype=dtype)
    # the kernel's output as lab.halo.fwht allocates it: numpy (huge pages), 64-byte aligned
    dst, cp, work = (
        halo.fast._aligned_empty(x.shape, dtype == np.float64),
        np.empty_like(x),
        x.copy(),
    )
    xt, dt, wt = torch.from_numpy(x), torch.from_numpy(dst), torch.from_numpy(work)
    mb, div = x.nbytes / 1e6, math.sqrt(n)
    fns = {
        "memcpy": partial(np.copyto, cp, x),
        "oop": partial(fwht_cpu.fwht_rows_, xt, dt, divisor=div, threads=1),
        "inplace": partial(fwht_cpu.fwht_rows_, wt, None, divisor=div, threads=1),
        "oop2": partial(fwht_cpu.fwht_rows_, xt, dt, divisor=div, threads=2),
        "public": partial(halo.fwht, xt),
    }
    try:
        import pyfwht

        if dtype == np.float64:
            fns["pyfwht"] = partial(pyfwht.fwht, x, backend="cpu")
    except ImportError:
        pass
    best = _best_alternating(fns, rounds)
    gbs = {k: 2 * x.nbytes / v / 1e9 for k, v in best.items()}
    name = f"FWHT bandwidth {dtype.name}, n = {n} x {rows} rows ({mb:.0f} MB, 1 thread)"
    with bench.case(name, target=">= 50% of memcpy bandwidth", n=n, rows=rows,
                    dtype=dtype.name, MB=round(mb, 1)) as case:  # fmt: skip
        labels = {
            "oop": ("fast", "fwht_rows_ out of place, preallocated aligned output"),
            "memcpy": ("peer", "numpy.copyto (memcpy: the bandwidth limit)"),
            "inplace": ("peer", "fwht_rows_ in place"),
            "oop2": ("peer", "fwht_rows_ out of place, 2 threads"),
            "public": ("peer", "lab.halo.fwht (allocates its output)"),
            "pyfwht": ("peer", "pyfwht (C, float64, backend=cpu)"),
        }
        for key, (role, label) in labels.items():
            if key in best:
                case.record(role, label, best[key], GB_per_s=round(gbs[key], 2),
                            share_of_memcpy=round(best["memcpy"] / best[key], 3))  # fmt: skip
        case.metric("kernel_path", fwht_cpu.fwht_rows_(xt[:1], dt[:1], divisor=div))
        case.metric("memcpy_GB_per_s", gbs["memcpy"])
        case.metric("fwht_GB_per_s", gbs["oop"])
        case.metric("share_of_memcpy", best["memcpy"] / best["oop"])
        case.metric("share_in_place", best["memcpy"] / best["inplace"])
        case.metric("threads2_speedup", best["oop"] / best["oop2"])
        if "pyfwht" in best:
            case.metric("speedup_vs_pyfwht", best["pyfwht"] / best["oop"])
        head = x[:32]
        fwht_cpu.fwht_rows_(xt, dt, divisor=div)
        if dtype == np.float64:  # bit for bit
            case.metric(
                "max_abs_diff_vs_reference", float(np.abs(dst[:32] - halo.fwht(head)).max())
            )
        else:  # bit for bit against the butterflies in float32; bounded against float64
            case.metric("max_abs_diff_vs_float32_butterflies",
                        float(np.abs(dst[:32] - _mirror(head)).max()))  # fmt: skip
            err = np.abs(dst[:32] - halo.fwht(head.astype(np.float64)))
            bound = (math.log2(n) + 1) * 2.0**-24 * np.abs(head).sum(1, keepdims=True) / div
            case.metric("error_over_bound_vs_float64_reference", float((err / bound).max()))


def layer_cpu_case(bench: Benchmark) -> None:
    b, m, n = (256, 512, 512) if bench.quick else (512, 1024, 1024)
    x = torch.randn(b, m, requires_grad=True)
    lin = torch.nn.Linear(m, n)
    with bench.case(
        f"simulated HaloLinear fwd+bwd, {b}×{m}→{n} (CPU simulation cost, not a speed claim)",
        b=b,
        m=m,
        n=n,
    ) as case:
        case.time("reference", "nn.Linear fp32", lambda: lin(x).sum().backward())
        for level in (0, 1, 2):
            h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8")
            case.time(
                "peer",
                f"HaloLinear level {level} INT8 (simulated)",
                lambda h=h: h(x).sum().backward(),
            )


def gpu_cases(bench: Benchmark) -> None:  # pragma: no cover - needs a GPU
    dev = "cuda"
    name = torch.cuda.get_device_name(0)
    peak = next((v for k, v in PEAK_BW.items() if k in name), None)
    for rows in (4096, 16384, 65536):
        for n in (4096, 16384):
            x = torch.randn(rows, n, device=dev, dtype=torch.bfloat16)
            with bench.case(
                f"GPU FWHT, {rows}×{n} bf16", target=">= 70% of HBM bandwidth", rows=rows, n=n
            ) as case:
                y = case.time(
                    "fast", "lab.halo.fwht_triton", partial(halo.fwht_triton, x), device=dev
                )
                sec = case.rows[-1]["seconds"]
                gbs = 2 * x.numel() * 2 / sec
                case.metric("GB_per_s", gbs / 1e9)
                if peak:
                    case.metric("fraction_of_peak", gbs / peak)
                case.time(
                    "peer",
                    "lab.halo.fwht (torch matmul factors)",
                    partial(halo.fwht, x),
                    device=dev,
                )
                Hm = halo.hadamard_matrix(n, torch.bfloat16).to(dev)
                case.time(
                    "peer", "dense x @ H (bf16 GEMM)", partial(torch.matmul, x, Hm), device=dev
                )
                case.time("peer", "fused FWHT + INT8 quant (per-tensor, 2 passes)",
                          partial(halo.fwht_quant_triton, x, "int8"), device=dev)  # fmt: skip
                ref = halo.fwht(x.float())
                case.metric(
                    "max_rel_err_bf16", float((y.float() - ref).abs().max() / ref.abs().max())
                )
    M, K, N = 4096, 4096, 14336
    a = torch.randint(-127, 128, (M, K), device=dev, dtype=torch.int8)
    bt = torch.randint(-127, 128, (N, K), device=dev, dtype=torch.int8)
    af, bf = a.bfloat16(), bt.bfloat16()
    with bench.case(f"GPU GEMM {M}×{K}×{N}", target="INT8 up to 2x bf16", M=M, K=K, N=N) as case:
        case.time("peer", "bf16 matmul", lambda: af @ bf.T, device=dev)
        case.time(
            "fast", "torch._int_mm (int8, int32 acc)", lambda: torch._int_mm(a, bt.T), device=dev
        )
    b, m, n = 4096, 4096, 14336
    x = torch.randn(b, m, device=dev, dtype=torch.bfloat16, requires_grad=True)
    lin = torch.nn.Linear(m, n, device=dev, dtype=torch.bfloat16)
    with bench.case(
        f"GPU layer fwd+bwd {b}×{m}→{n}",
        target="paper: up to 1.82x per module (RTX 4090)",
        b=b,
        m=m,
        n=n,
    ) as case:
        case.time("reference", "nn.Linear bf16", lambda: lin(x).sum().backward(), device=dev)
        for level in (0, 1, 2):
            h = halo.HaloLinear.from_linear(lin, level=level, fmt="int8", exact=False)
            case.time("fast" if level == 2 else "peer", f"HaloLinear level {level} INT8 (real GEMMs)",
                      lambda h=h: h(x).sum().backward(), device=dev)  # fmt: skip


def main() -> None:
    bench = HaloBenchmark("halo", __doc__)
    cpu_cases(bench)
    bandwidth_cases(bench)
    layer_cpu_case(bench)
    if bench.gpu:
        gpu_cases(bench)
    bench.finish()


if __name__ == "__main__":
    main()
