"""The compiled CPU kernel behind :func:`lab.halo.fwht`: in-place iterative butterflies in C.

On CPU the FWHT is memory-bound: a row of ``n = 4096`` float64 values (32 KB) fits in the L1/L2
cache, so the fastest way is to bring each row in once (copy and scale), run all ``log2 n``
butterfly stages on it while it is in cache, and write it out once. The C source below does
exactly the algorithm of the reference kernel, per contiguous row, with two locality tricks:

* the first three stages (strides 1, 2, 4) run in registers on blocks of 8 values;
* the remaining stages are fused in pairs (radix 4: strides ``h`` and ``2h`` in one sweep over
  the row), so a row of ``2^p`` values is swept ``ceil((p - 3) / 2)`` times, not ``p``; the
  inner loops are contiguous and vectorised by the compiler (``-O3 -march=native``).

The additions happen in the same order as in the reference (stage by stage), so the result is
the reference's up to the place of the ``1/sqrt(n)`` scale (applied first here).

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

#define FWHT_KERNEL(T, NAME)                                                          \
static void NAME##_row(T *restrict x, int64_t n) {                                   \
    int64_t h = 1;                                                                    \
    if (n >= 8) { /* strides 1, 2, 4 in registers, on blocks of 8 */                 \
        for (int64_t i = 0; i < n; i += 8) {                                          \
            T *v = x + i;                                                             \
            T a0 = v[0] + v[1], a1 = v[0] - v[1], a2 = v[2] + v[3], a3 = v[2] - v[3];\
            T a4 = v[4] + v[5], a5 = v[4] - v[5], a6 = v[6] + v[7], a7 = v[6] - v[7];\
            T b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;                 \
            T b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;                 \
            v[0] = b0 + b4; v[1] = b1 + b5; v[2] = b2 + b6; v[3] = b3 + b7;           \
            v[4] = b0 - b4; v[5] = b1 - b5; v[6] = b2 - b6; v[7] = b3 - b7;           \
        }                                                                             \
        h = 8;                                                                        \
    }                                                                                 \
    for (; 4 * h <= n; h *= 4) { /* radix 4: strides h and 2h in one sweep */        \
        for (int64_t i = 0; i < n; i += 4 * h) {                                      \
            T *restrict p0 = x + i, *restrict p1 = p0 + h;                           \
            T *restrict p2 = p1 + h, *restrict p3 = p2 + h;                           \
            for (int64_t j = 0; j < h; j++) {                                         \
                T a = p0[j], b = p1[j], c = p2[j], d = p3[j];                         \
                T s = a + b, t = a - b, u = c + d, w = c - d;                         \
                p0[j] = s + u; p1[j] = t + w; p2[j] = s - u; p3[j] = t - w;           \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
    for (; h < n; h *= 2) { /* radix 2: the last stride when log2 n is odd */        \
        for (int64_t i = 0; i < n; i += 2 * h) {                                      \
            T *restrict p0 = x + i, *restrict p1 = p0 + h;                           \
            for (int64_t j = 0; j < h; j++) {                                         \
                T a = p0[j], b = p1[j];                                               \
                p0[j] = a + b; p1[j] = a - b;                                         \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
}                                                                                     \
void NAME(const T *src, T *dst, int64_t rows, int64_t n, T scale) {                   \
    for (int64_t r = 0; r < rows; r++) {                                              \
        const T *s = src + r * n;                                                     \
        T *d = dst + r * n;                                                           \
        if (scale == (T)1) { if (d != s) memcpy(d, s, (size_t)n * sizeof(T)); }       \
        else for (int64_t j = 0; j < n; j++) d[j] = s[j] * scale;                     \
        NAME##_row(d, n);                                                             \
    }                                                                                 \
}

FWHT_KERNEL(float, lab_fwht_f32)
FWHT_KERNEL(double, lab_fwht_f64)
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
    float64, same shape and dtype, a power-of-two row length (the caller checks all of this).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    lib = load()
    fn = lib.lab_fwht_f64 if src.dtype == torch.float64 else lib.lab_fwht_f32
    rows, n = src.shape
    fn(src.data_ptr(), dst.data_ptr(), rows, n, scale)
