"""The compiled CPU kernel behind :func:`lab.halo.fwht`: in-place iterative butterflies in C.

On CPU the FWHT is memory-bound: the fastest way is to bring each row in once (copy and
scale), run all ``log2 n`` butterfly stages on it while it is in cache, and write it out once.
The C source below does exactly the algorithm of the reference kernel, per contiguous row, with
three locality tricks:

* cache blocking: the row is cut into blocks of ``B`` values (32 KB: 4096 float64 or 8192
  float32, which sit in the L1 data cache); each block is copied and scaled, then goes through
  every stage of stride ``< B`` while it is in L1; only the stages of stride ``B .. n/2`` sweep
  the whole row (one sweep at n = 16384 float64, instead of six);
* the first three stages (strides 1, 2, 4) run in registers on groups of 8 values;
* the other stages are fused in threes (radix 8: strides ``h``, ``2h``, ``4h`` in one sweep),
  then in a pair (radix 4) or alone (radix 2) for the leftover; the inner loops take
  ``restrict`` pointer arguments, so the compiler vectorises them without runtime alias checks
  (``-O3 -march=native``).

Every value goes through the same additions in the same order as in the reference (stage by
stage, smallest stride first), so the result is the reference's up to the place of the
``1/sqrt(n)`` scale (applied first here, in its own loop so that no compiler fuses it into the
first addition).

The library is built on first use with the system C compiler (``$CC``, else ``cc``/``gcc``)
and cached under ``$LAB_CACHE_DIR`` (default ``~/.cache/optlab``), keyed on the source, the
flags and the CPU. No compiler, or a failed build, is not an error: :func:`load` returns
``None`` and :func:`lab.halo.fwht` falls back to its torch path (a plain ``pip install``
without a compiler works). :func:`lab.halo.fwht_backend` says which implementation runs.

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["C_SOURCE", "build_error", "fwht_rows_", "load"]

C_SOURCE = r"""
#include <stdint.h>
#include <string.h>

/* One butterfly sweep over x[0:len) fusing the stages h, 2h (radix 4) or h, 2h, 4h
   (radix 8); each value goes through the same additions as in stage-by-stage order. */
#define FWHT_SWEEPS(T, NAME)                                                          \
static inline void NAME##_k2(T *restrict p0, T *restrict p1, int64_t h) {            \
    for (int64_t j = 0; j < h; j++) {                                                 \
        T a = p0[j], b = p1[j];                                                       \
        p0[j] = a + b; p1[j] = a - b;                                                 \
    }                                                                                 \
}                                                                                     \
static inline void NAME##_k4(T *restrict p0, T *restrict p1, T *restrict p2,         \
                             T *restrict p3, int64_t h) {                             \
    for (int64_t j = 0; j < h; j++) {                                                 \
        T a = p0[j], b = p1[j], c = p2[j], d = p3[j];                                 \
        T s = a + b, t = a - b, u = c + d, w = c - d;                                 \
        p0[j] = s + u; p1[j] = t + w; p2[j] = s - u; p3[j] = t - w;                   \
    }                                                                                 \
}                                                                                     \
static inline void NAME##_k8(T *restrict p0, T *restrict p1, T *restrict p2,         \
                             T *restrict p3, T *restrict p4, T *restrict p5,          \
                             T *restrict p6, T *restrict p7, int64_t h) {             \
    for (int64_t j = 0; j < h; j++) {                                                 \
        T a0 = p0[j] + p1[j], a1 = p0[j] - p1[j], a2 = p2[j] + p3[j];                 \
        T a3 = p2[j] - p3[j], a4 = p4[j] + p5[j], a5 = p4[j] - p5[j];                 \
        T a6 = p6[j] + p7[j], a7 = p6[j] - p7[j];                                     \
        T b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;                     \
        T b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;                     \
        p0[j] = b0 + b4; p1[j] = b1 + b5; p2[j] = b2 + b6; p3[j] = b3 + b7;           \
        p4[j] = b0 - b4; p5[j] = b1 - b5; p6[j] = b2 - b6; p7[j] = b3 - b7;           \
    }                                                                                 \
}                                                                                     \
static void NAME##_r2(T *x, int64_t len, int64_t h) {                                \
    for (int64_t i = 0; i < len; i += 2 * h) NAME##_k2(x + i, x + i + h, h);          \
}                                                                                     \
static void NAME##_r4(T *x, int64_t len, int64_t h) {                                \
    for (int64_t i = 0; i < len; i += 4 * h)                                          \
        NAME##_k4(x + i, x + i + h, x + i + 2 * h, x + i + 3 * h, h);                 \
}                                                                                     \
static void NAME##_r8(T *x, int64_t len, int64_t h) {                                \
    for (int64_t i = 0; i < len; i += 8 * h) {                                        \
        T *p = x + i;                                                                 \
        NAME##_k8(p, p + h, p + 2 * h, p + 3 * h, p + 4 * h, p + 5 * h, p + 6 * h,    \
                  p + 7 * h, h);                                                      \
    }                                                                                 \
}                                                                                     \
/* the stages with strides h, 2h, ... < len: radix 8 while three remain, then 4 or 2 */\
static void NAME##_stages(T *restrict x, int64_t len, int64_t h) {                   \
    for (; 8 * h <= len; h *= 8) NAME##_r8(x, len, h);                                \
    if (4 * h <= len) NAME##_r4(x, len, h);                                           \
    else if (2 * h <= len) NAME##_r2(x, len, h);                                      \
}                                                                                     \
/* copy and scale one block (a separate loop: the scale is never fused into the first  \
   addition), then the strides 1, 2, 4 in registers on groups of 8, then strides < len */\
static void NAME##_first(const T *restrict s, T *restrict d, int64_t len, T scale) { \
    for (int64_t j = 0; j < len; j++) d[j] = s[j] * scale;                            \
    if (len < 8) { NAME##_stages(d, len, 1); return; }                                \
    for (int64_t i = 0; i < len; i += 8) {                                            \
        T *v = d + i;                                                                 \
        T a0 = v[0] + v[1], a1 = v[0] - v[1], a2 = v[2] + v[3], a3 = v[2] - v[3];     \
        T a4 = v[4] + v[5], a5 = v[4] - v[5], a6 = v[6] + v[7], a7 = v[6] - v[7];     \
        T b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;                     \
        T b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;                     \
        v[0] = b0 + b4; v[1] = b1 + b5; v[2] = b2 + b6; v[3] = b3 + b7;               \
        v[4] = b0 - b4; v[5] = b1 - b5; v[6] = b2 - b6; v[7] = b3 - b7;               \
    }                                                                                 \
    NAME##_stages(d, len, 8);                                                         \
}                                                                                     \
void NAME(const T *src, T *dst, int64_t rows, int64_t n, T scale) {                   \
    /* cache blocking: all strides < B inside blocks of B values that sit in L1, then \
       the strides B .. n/2 across the blocks (one radix-8/4/2 sweep per 3 stages) */ \
    int64_t B = LAB_FWHT_BLOCK_BYTES / (int64_t)sizeof(T);                            \
    if (B > n) B = n;                                                                 \
    for (int64_t r = 0; r < rows; r++) {                                              \
        const T *s = src + r * n;                                                     \
        T *d = dst + r * n;                                                           \
        for (int64_t b = 0; b < n; b += B) NAME##_first(s + b, d + b, B, scale);      \
        NAME##_stages(d, n, B);                                                       \
    }                                                                                 \
}

#ifndef LAB_FWHT_BLOCK_BYTES
#define LAB_FWHT_BLOCK_BYTES 32768
#endif
FWHT_SWEEPS(float, lab_fwht_f32)
FWHT_SWEEPS(double, lab_fwht_f64)
"""

_FLAGS = ("-O3", "-march=native", "-shared", "-fPIC", "-std=c99")
_FALLBACK_FLAGS = ("-O3", "-shared", "-fPIC", "-std=c99")  # compilers without -march=native
_LOCK = threading.Lock()
_STATE: dict = {}


def _cache_dir() -> Path:
    env = os.environ.get("LAB_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "optlab"


def _cpu_id() -> str:
    """The CPU (model and flags): a library built with -march=native is only valid on it."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags"))][:2]
        return "".join(lines)
    except OSError:
        return platform.processor() or platform.machine()


def _compiler() -> str | None:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def _build(cc: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        src = Path(tmp) / "fwht.c"
        src.write_text(C_SOURCE)
        out = Path(tmp) / target.name
        err = ""
        for flags in (_FLAGS, _FALLBACK_FLAGS):
            proc = subprocess.run(
                [cc, *flags, "-o", str(out), str(src)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if proc.returncode == 0:
                os.replace(out, target)  # atomic: concurrent builders never see half a file
                return
            err = proc.stderr.strip()[-500:]
        raise RuntimeError(f"{cc} failed: {err}")


def _load_uncached():
    if sys.platform == "win32":
        return None, "the compiled kernel is built on POSIX systems only"
    cc = _compiler()
    if cc is None:
        return None, "no C compiler found (set CC)"
    key = hashlib.sha256(
        "\n".join([C_SOURCE, " ".join(_FLAGS), cc, _cpu_id(), platform.machine()]).encode()
    ).hexdigest()[:16]
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    target = _cache_dir() / f"lab_fwht_{key}{suffix}"
    try:
        if not target.exists():
            _build(cc, target)
        lib = ctypes.CDLL(str(target))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return None, f"build or load failed: {exc}"
    for name, scalar in (("lab_fwht_f32", ctypes.c_float), ("lab_fwht_f64", ctypes.c_double)):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, scalar]
        fn.restype = None
    return lib, None


def load():
    """The compiled library (``ctypes.CDLL``), built and cached on first use; ``None`` when it
    cannot be built here (see :func:`build_error`).

    See: book/halo/02-fwht-kernel.ipynb
    """
    if "lib" not in _STATE:
        with _LOCK:
            if "lib" not in _STATE:
                _STATE["lib"], _STATE["error"] = _load_uncached()
    return _STATE["lib"]


def build_error() -> str | None:
    """Why the compiled kernel is unavailable (``None`` when it loaded).

    See: book/halo/02-fwht-kernel.ipynb
    """
    load()
    return _STATE["error"]


def fwht_rows_(src, dst, scale: float) -> None:
    """``dst = H^(±1) (scale * src)`` row by row: contiguous 2-D CPU tensors, float32 or
    float64, same shape and dtype, a power-of-two row length (the caller checks all of this);
    ``dst`` is a separate buffer (the kernel reads ``src`` once and never writes it).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    for name, t in (("src", src), ("dst", dst)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (got {type(t).__name__})")
        if t.device.type != "cpu" or t.dtype not in (torch.float32, torch.float64) or t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D float32/float64 CPU tensor")
    if dst.shape != src.shape or dst.dtype != src.dtype or not src.is_contiguous():
        raise ValueError("src and dst must share shape and dtype, src contiguous")
    n = src.shape[1]
    if n & (n - 1) or n == 0:
        raise ValueError(f"the row length must be a power of two (got {n})")
    if dst.data_ptr() == src.data_ptr():
        raise ValueError("fwht_rows_: dst must be a separate buffer from src (not in place)")
    lib = load()
    fn = lib.lab_fwht_f64 if src.dtype == torch.float64 else lib.lab_fwht_f32
    rows, n = src.shape
    fn(src.data_ptr(), dst.data_ptr(), rows, n, scale)
