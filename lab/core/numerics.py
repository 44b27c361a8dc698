"""What decides this machine's floating-point results, and how to emulate another machine's.

Two CPUs that run the same code on the same seeds can round differently: torch's MKL picks its
kernels by CPU (``MKL_CBWR``), ATen its vectorised loops (``ATEN_CPU_CAPABILITY``), oneDNN its
convolutions (``ONEDNN_MAX_CPU_ISA``), and numpy's and scipy's OpenBLAS its level-3 kernels
(``OPENBLAS_CORETYPE``). A rounding difference re-draws a training trajectory the way a new seed
does, so a verdict must hold under every one of them (measured: a 3-seed coreset comparison took
three verdicts under three such modes of one Intel AVX-512 CPU).

- :data:`MODES`: the numerics modes the book's claims are checked under. Each sets **every**
  dispatcher together: ``native`` (nothing set), ``avx2`` (what an AVX2 machine computes) and
  ``baseline`` (the oldest kernels: SSE-class). Emulation only goes down: an AVX2 machine
  cannot compute what an AVX-512 one does, so :data:`SEED_SHIFTS` stand in for it.
- :func:`fingerprint`: one dictionary naming what decides numerics here (CPU model and the
  flags that matter, torch's CPU capability, the BLAS libraries and their kernels, the modes
  set, the thread counts) and a short ``key`` of it; ``claims.json``, the benchmark files and
  the book's execution cache carry it.
- :func:`seeds`: the registered seeds of a notebook, shifted by ``LAB_SEED_SHIFT`` (one of
  :data:`SEED_SHIFTS`) for the seed-shift check (``make test-numerics``).
- :func:`probe`: digests of a few products (numpy and torch matrix products, a torch
  transcendental, a convolution) and the dispatch state; the canary test compares them
  across modes, so a mode that is silently ignored fails.

See: ``lab.tooling.numerics`` (the check) and CONTRIBUTING.md ("Verdicts on every machine").
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from typing import Any

__all__ = [
    "DISPATCHERS",
    "MODES",
    "SEED_SHIFTS",
    "fingerprint",
    "mode_environment",
    "probe",
    "seed_shift",
    "seeds",
]

#: the environment variables that choose CPU kernels, in the order the modes list them
DISPATCHERS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE")

#: numerics modes: the value of every dispatcher (``native`` leaves them all unset)
MODES: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": dict(zip(DISPATCHERS, ("AVX2", "avx2", "AVX2", "Haswell"), strict=True)),
    "baseline": dict(zip(DISPATCHERS, ("COMPATIBLE", "default", "SSE41", "Prescott"), strict=True)),
}

#: registered seed shifts, fixed before any measurement (2026-12-06): ``0`` is the book's
#: seeds, ``1000`` the disjoint set of the seed-shift check; nothing else is accepted
SEED_SHIFTS = (0, 1000)

#: CPU flags that change which kernels run
_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile")


def mode_environment(mode: str) -> dict[str, str]:
    """The environment variables of numerics mode ``mode`` (every dispatcher; see :data:`MODES`).

    ``native`` maps each dispatcher to ``""``: the caller removes them from the child's
    environment, so that a variable set in the parent does not leak into the native run.
    """
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return {name: MODES[mode].get(name, "") for name in DISPATCHERS}


def seed_shift() -> int:
    """The registered seed shift in force (``LAB_SEED_SHIFT``, default 0)."""
    raw = os.environ.get("LAB_SEED_SHIFT", "0").strip() or "0"
    try:
        shift = int(raw)
    except ValueError:
        shift = None
    if shift not in SEED_SHIFTS:
        raise ValueError(
            f"LAB_SEED_SHIFT must be one of the registered shifts {SEED_SHIFTS}, got {raw!r}"
        )
    return shift


def seeds(*values: int) -> tuple[int, ...]:
    """A notebook's registered seeds, shifted by ``LAB_SEED_SHIFT`` (0 unless the seed-shift
    check runs): ``SEEDS = lab.seeds(0, 1, 2)``.

    A claim decided over seeds must keep its verdict on a disjoint seed set: the seed-shift
    check (``make test-numerics``) reruns the notebooks with ``LAB_SEED_SHIFT=1000``.
    """
    if not values:
        raise ValueError("seeds() needs at least one seed")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise TypeError(f"seeds must be integers >= 0, got {v!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"seeds must be distinct, got {values}")
    shift = seed_shift()
    return tuple(v + shift for v in values)


def _cpu() -> tuple[str | None, list[str]]:
    model, flags = None, []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    have = set(line.split(":", 1)[1].split())
                    flags = [f for f in _FLAGS if f in have]
    except OSError:
        pass
    return model or platform.processor() or platform.machine() or None, flags


def _blas() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - installed with scikit-learn
        return []
    out = []
    for lib in threadpool_info():
        out.append(
            {
                "library": lib.get("internal_api"),
                "file": os.path.basename(lib.get("filepath") or ""),
                "version": lib.get("version"),
                "kernel": lib.get("architecture"),
                "threads": lib.get("num_threads"),
            }
        )
    return sorted(out, key=lambda d: (str(d["library"]), d["file"]))


def _mode_name(settings: dict[str, str]) -> str:
    for name, values in MODES.items():
        if {k: v for k, v in settings.items() if v} == values:
            return name
    return "custom"


def fingerprint() -> dict[str, Any]:
    """What decides this process's floating-point results, as one dictionary.

    Keys: ``cpu`` (model), ``machine`` (architecture), ``cpu_flags`` (those of AVX2 / AVX-512 /
    AMX present), ``torch_capability`` (ATen's vectorised loops), ``torch_blas`` (torch's BLAS,
    MKL on the CPU wheels), ``blas`` (the BLAS/OpenMP libraries loaded, with their kernel and
    threads, from threadpoolctl), ``settings`` (the dispatchers as set), ``mode`` (the
    :data:`MODES` entry they match, or ``custom``), ``torch_threads``, ``seed_shift`` and ``key``
    (a 12-hex digest of what decides rounding: the rest less library files, versions and BLAS
    thread counts; two runs with the same key computed with the same kernels).
    """
    model, flags = _cpu()
    settings = {name: os.environ.get(name, "") for name in DISPATCHERS}
    out: dict[str, Any] = {
        "cpu": model,
        "machine": platform.machine(),
        "cpu_flags": flags,
        "settings": settings,
        "mode": _mode_name(settings),
    }
    try:
        import torch

        out["torch_capability"] = torch.backends.cpu.get_cpu_capability()
        out["torch_blas"] = "mkl" if torch.backends.mkl.is_available() else "other"
        out["torch_threads"] = torch.get_num_threads()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    out["blas"] = _blas()
    try:
        out["seed_shift"] = seed_shift()
    except ValueError:
        out["seed_shift"] = os.environ.get("LAB_SEED_SHIFT")
    # the key: what decides rounding (not file names, versions or BLAS thread counts)
    stable = {k: v for k, v in out.items() if k != "blas"}
    stable["kernels"] = sorted(f"{b['library']}:{b['kernel']}" for b in out["blas"] if b["kernel"])
    blob = json.dumps(stable, sort_keys=True, default=str).encode()
    out["key"] = hashlib.sha256(blob).hexdigest()[:12]
    return out


def _digest(x: Any) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]


def probe() -> dict[str, Any]:
    """Digests of four computations whose low bits depend on the dispatchers, and the state.

    ``numpy_matmul`` (OpenBLAS dgemm), ``torch_matmul`` (MKL sgemm), ``torch_exp`` (MKL's vector
    math), ``torch_conv`` (oneDNN), ``torch_capability``, ``openblas_kernel``. The canary test
    (``tests/test_numerics.py``) runs it under each mode in a fresh process.
    """
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((257, 263)), rng.standard_normal((263, 129))
    ta, tb = torch.from_numpy(a).float(), torch.from_numpy(b).float()
    x = torch.from_numpy(rng.standard_normal((8, 3, 32, 32))).float()
    w = torch.from_numpy(rng.standard_normal((16, 3, 3, 3))).float()
    kernels = [d["kernel"] for d in _blas() if d["library"] == "openblas"]
    with torch.no_grad():
        return {
            "numpy_matmul": _digest(a @ b),
            "torch_matmul": _digest((ta @ tb).numpy()),
            "torch_exp": _digest(ta.exp().numpy()),
            "torch_conv": _digest(torch.nn.functional.conv2d(x, w).numpy()),
            "torch_capability": torch.backends.cpu.get_cpu_capability(),
            "openblas_kernel": kernels[0] if kernels else None,
        }
