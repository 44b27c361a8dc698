"""The compiled CPU kernel behind :func:`lab.halo.fwht`: row-parallel SIMD butterflies in C.

On CPU the FWHT is memory-bound: the fastest kernel reads each row once, runs all ``log2 n``
butterfly stages on it while it is in cache and writes it once, moving no more bytes than a
copy of the array. The C source (:data:`C_SOURCE`, generated below) runs the reference's
butterflies per contiguous row:

* **explicit SIMD**, AVX-512 and AVX2 paths picked at run time from the CPU's flags (a portable
  C path for other CPUs and rows shorter than a vector): the stages of stride below a vector
  run in registers as ``fma(x, ±1, permute(x))`` (exactly ``a + b`` and ``a - b``: the product
  by ±1 is exact, the FMA rounds once); the others on tiles of up to 16 vectors (radix 16, four
  stages per load and store; radix 8 with AVX2's 16 registers), the first sweep fused with the
  in-register stages: a row of 16384 float32 takes three sweeps, the first reading the source,
  the last writing the destination; rows over ``LAB_FWHT_BLOCK_BYTES`` are cache-blocked;
* **rows in flight**: the in-cache sweeps of a row prefetch the next row (and its destination);
* **streaming stores** out of place when ``src + dst`` exceed half the L3 cache: the row is
  transformed in a per-thread scratch row and the last sweep writes ``dst`` with non-temporal
  stores (no read-for-ownership); ``dst=None`` transforms in place (one read, one write);
* **threads**: rows are independent; ``threads`` workers (default ``torch.get_num_threads()``,
  one below 512 KB of work) take contiguous row ranges (pthreads).

Order of operations: each value goes through the reference's additions in its order (stage by
stage, smallest stride first: fusing stages in a tile only reorders independent operations),
and the normalisation is the reference's ``y / sqrt(n)``, folded into the last sweep's stores:
the division, or the product by ``2^-k`` when ``log2 n = 2k`` (exactly ``y / 2^k``). float64
rows are therefore bit-identical to :func:`lab.halo.reference.fwht` for every ``n = 2^p``;
float32 rows are bit-identical to the same butterflies run in float32 (then ``/ float32(sqrt
n)``), within ``(log2 n + 1) · 2^-24 · sum_j |x_j| / sqrt(n)`` of the float64 reference per
entry (``log2 n`` roundings of partial sums bounded by ``sum_j |x_j|``, one of the division).

Built on first use with the system C compiler (``$CC``, else ``cc``/``gcc``), cached under
``$LAB_CACHE_DIR`` (default ``~/.cache/optlab``) keyed on the source, the flags and the CPU.
No compiler, or a failed build: :func:`load` returns ``None`` and :func:`lab.halo.fwht` runs
its torch path; a compiler without the intrinsics builds the portable path alone.
``LAB_FWHT_ISA=generic|avx2|avx512`` (or ``isa=``) forces a path.

See: book/halo/02-fwht-kernel.ipynb
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from lab.core.checks import check_int, check_positive, check_real

__all__ = ["C_SOURCE", "build_error", "fwht_rows_", "load"]

_HEADER = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#if (defined(__x86_64__) || defined(__i386__)) && !defined(LAB_FWHT_NO_SIMD) \
    && (defined(__GNUC__) || defined(__clang__))
#define LAB_X86 1
#include <immintrin.h>
#else
#define LAB_X86 0
#endif
#ifndef LAB_FWHT_BLOCK_BYTES
#define LAB_FWHT_BLOCK_BYTES 131072
#endif
typedef void (*lab_rows_fn)(const void *, void *, int64_t, int64_t, int64_t, double, int, int);
typedef struct { const char *p, *pe, *w, *we; int64_t k; } lab_pf;
/* copy a row out of the scratch row with streaming stores (a destination off a vector) */
static void lab_copy(char *d, const char *s, size_t n) {
    size_t head = (64 - ((uintptr_t)d & 63)) & 63, body;
    if (head > n) head = n;
    memcpy(d, s, head); d += head; s += head; n -= head; body = n & ~(size_t)63;
#if LAB_X86
    for (size_t i = 0; i < body; i += 16)
        _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
#else
    memcpy(d, s, body);
#endif
    memcpy(d + body, s + body, n - body);
}
static int lab_log2(int64_t x) { int k = 0; while (((int64_t)1 << k) < x) k++; return k; }
static int lab_split(int s, int m, int *out) {  /* s stages in balanced sweeps of <= m */
    int parts = s > 0 ? (s + m - 1) / m : 0;
    for (int i = 0; i < parts; i++) out[i] = s / parts + (i < s % parts ? 1 : 0);
    return parts;
}
"""

# The portable path (any CPU, rows shorter than a vector): the previous kernel's butterflies,
# radix-8 (then 2) sweeps on L1-sized blocks; then the scale, in its own loop after the last.
_GENERIC = r"""
#define LAB_GENERIC(T, NAME)                                                            \
static inline void NAME##_k2(T *restrict p0, T *restrict p1, int64_t h) {               \
    for (int64_t j = 0; j < h; j++) { T a = p0[j], b = p1[j]; p0[j] = a + b; p1[j] = a - b; } \
}                                                                                        \
static inline void NAME##_k8(T *restrict p0, T *restrict p1, T *restrict p2,            \
                             T *restrict p3, T *restrict p4, T *restrict p5,             \
                             T *restrict p6, T *restrict p7, int64_t h) {                \
    for (int64_t j = 0; j < h; j++) {                                                    \
        T a0 = p0[j] + p1[j], a1 = p0[j] - p1[j], a2 = p2[j] + p3[j];                    \
        T a3 = p2[j] - p3[j], a4 = p4[j] + p5[j], a5 = p4[j] - p5[j];                    \
        T a6 = p6[j] + p7[j], a7 = p6[j] - p7[j];                                        \
        T b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;                        \
        T b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;                        \
        p0[j] = b0 + b4; p1[j] = b1 + b5; p2[j] = b2 + b6; p3[j] = b3 + b7;              \
        p4[j] = b0 - b4; p5[j] = b1 - b5; p6[j] = b2 - b6; p7[j] = b3 - b7;              \
    }                                                                                    \
}                                                                                        \
static void NAME##_stages(T *restrict x, int64_t len, int64_t h) {                      \
    for (; 8 * h <= len; h *= 8)                                                         \
        for (int64_t i = 0; i < len; i += 8 * h) {                                       \
            T *p = x + i;                                                                \
            NAME##_k8(p, p + h, p + 2 * h, p + 3 * h, p + 4 * h, p + 5 * h, p + 6 * h,   \
                      p + 7 * h, h);                                                     \
        }                                                                                \
    for (; 2 * h <= len; h *= 2)                                                         \
        for (int64_t i = 0; i < len; i += 2 * h) NAME##_k2(x + i, x + i + h, h);         \
}                                                                                        \
static void NAME##_rows(const void *src_, void *dst_, int64_t r0, int64_t r1, int64_t n,  \
                        double c, int op, int nt) {                                      \
    const T *src = (const T *)src_; T *dst = (T *)dst_; T cv = (T)c; (void)nt;           \
    int64_t B = 32768 / (int64_t)sizeof(T);                                              \
    if (B > n) B = n;                                                                    \
    for (int64_t r = r0; r < r1; r++) {                                                  \
        const T *s = src + r * n; T *d = dst + r * n;                                    \
        for (int64_t b = 0; b < n; b += B) {                                             \
            if (s != d) memcpy(d + b, s + b, (size_t)B * sizeof(T));                     \
            NAME##_stages(d + b, B, 1);                                                  \
        }                                                                                \
        NAME##_stages(d, n, B);                                                          \
        if (op == 1) for (int64_t j = 0; j < n; j++) d[j] = d[j] * cv;                   \
        else if (op == 2) for (int64_t j = 0; j < n; j++) d[j] = d[j] / cv;              \
    }                                                                                    \
}
LAB_GENERIC(float, lab_gen_f32)
LAB_GENERIC(double, lab_gen_f64)
"""

# One SIMD instantiation (ISA x dtype); SFX is replaced by its prefix, @F@ and @S@ by the
# generated tile sweeps. VT/V/LD/ST/... are #defined before it and #undef'd after.
_SIMD = r"""
static const T SFX_sg[LOGV * V] __attribute__((aligned(64))) = { SIGNS };
static inline ATTR VT SFX_inreg(VT x, const VT *s) { INREG return x; }
#define OUT(q, x) do { VT y_ = (x); if (op == 1) { y_ = MUL(y_, cv); }                  \
    else if (op == 2) { y_ = DIV(y_, cv); }                                             \
    if (nt) { STNT(q, y_); } else { ST(q, y_); } } while (0)
#define PF() do { for (int64_t k_ = 0; k_ < pk; k_++) {                                 \
    if (pp < ppe) { _mm_prefetch(pp, _MM_HINT_T1); pp += 64; }                          \
    if (pw < pwe) { __builtin_prefetch(pw, 1, 2); pw += 64; } } } while (0)
@F@
@S@
#undef OUT
#undef PF
typedef void (*SFX_ffn)(const T *, T *, int64_t, VT, int, int);
typedef void (*SFX_sfn)(const T *, T *, int64_t, int64_t, VT, int, int, lab_pf *);
static const SFX_ffn SFX_ftab[2][5] = { { FTAB0 }, { FTAB1 } };
static const SFX_sfn SFX_stab[2][5] = { { STAB0 }, { STAB1 } };
static ATTR void SFX_rows(const void *src_, void *dst_, int64_t r0, int64_t r1, int64_t n,
                         double c, int op, int nt) {
    const T *src = (const T *)src_; T *dst = (T *)dst_;
    VT cv = SET1((T)c);
    int64_t nb = LAB_FWHT_BLOCK_BYTES / (int64_t)sizeof(T);
    if (nb < V * RMAX) nb = V * RMAX;
    if (nb > n) nb = n;
    int lgN = lab_log2(n / V), lgB = lab_log2(nb / V), lgF = lgB < LGR ? lgB : LGR;
    int bs[16], xs[16];
    int nbs = lab_split(lgB - lgF, LGR, bs), nxs = lab_split(lgN - lgB, LGR, xs);
    int single = nbs == 0 && nxs == 0;
    /* nt: streaming stores, straight from the last sweep where dst is aligned to a vector,
       else through the scratch row and a streaming copy */
    int direct = nt && (uintptr_t)dst % (V * sizeof(T)) == 0, copy = nt && !direct;
    T *scr = NULL;
    if (copy || (nt && !single)) {
        scr = (T *)aligned_alloc(64, (size_t)n * sizeof(T) < 64 ? 64 : (size_t)n * sizeof(T));
        if (!scr) nt = direct = copy = 0;
    }
    int64_t tiles = 0;  /* tiles of the in-cache sweeps, over which the prefetches spread */
    for (int k = 0; k < nbs; k++) tiles += (n / nb) * (nb / (V << bs[k]));
    for (int k = 0; k < nxs; k++) tiles += n / (V << xs[k]);
    int64_t lines = (int64_t)(n * sizeof(T) / 64), pk = 0;
    int pfw = !nt && src != dst;  /* ordinary stores: prefetch the next dst row too */
    if (tiles) pk = (lines + tiles - 1) / tiles;
    for (int64_t r = r0; r < r1; r++) {
        const T *s = src + r * n; T *d0 = dst + r * n, *w = scr ? scr : d0;
        T *d = copy ? scr : d0;  /* copy-out: the last sweep writes the scratch row */
        lab_pf pf = { 0, 0, 0, 0, pk };
        if (r + 1 < r1) {
            pf.p = (const char *)(s + n); pf.pe = pf.p + lines * 64;
            if (pfw) { pf.w = (const char *)(d0 + n); pf.we = pf.w + lines * 64; }
        }
        for (int64_t b = 0; b < n; b += nb) {
            SFX_ftab[single][lgF](s + b, (single ? d : w) + b, nb, cv, op, direct);
            int64_t h = (int64_t)V << lgF;
            for (int k = 0; k < nbs; k++) {
                int fin = k == nbs - 1 && nxs == 0;
                SFX_stab[fin][bs[k]](w + b, (fin ? d : w) + b, nb, h, cv, op, direct, &pf);
                h <<= bs[k];
            }
        }
        int64_t h = nb;
        for (int k = 0; k < nxs; k++) {
            int fin = k == nxs - 1;
            SFX_stab[fin][xs[k]](w, fin ? d : w, n, h, cv, op, direct, &pf);
            h <<= xs[k];
        }
        if (copy) lab_copy((char *)d0, (const char *)scr, (size_t)n * sizeof(T));
    }
    if (nt) _mm_sfence();
    free(scr);
}
"""

_FOOTER = r"""
typedef struct { lab_rows_fn fn; const void *src; void *dst; int64_t r0, r1, n; double c;
                 int op, nt; } lab_job;
static void *lab_worker(void *a) {
    lab_job *j = (lab_job *)a;
    j->fn(j->src, j->dst, j->r0, j->r1, j->n, j->c, j->op, j->nt);
    return NULL;
}
/* bit 0: the portable path; bit 1: AVX2+FMA; bit 2: AVX-512 (compiled and on this CPU) */
int lab_fwht_isas(void) {
    int m = 1;
#if LAB_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) m |= 2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) m |= 4;
#endif
    return m;
}
/* dst = H(src) (op 0), H(src) * c (op 1) or H(src) / c (op 2), row by row; dst == src: in
   place. isa: 0 portable, 1 AVX2, 2 AVX-512 (the caller checks lab_fwht_isas). nt: streaming
   stores for the last sweep. Returns the ISA that ran. */
int lab_fwht(int f64, const void *src, void *dst, int64_t rows, int64_t n, double c, int op,
             int isa, int nt, int threads) {
    lab_rows_fn fn = f64 ? lab_gen_f64_rows : lab_gen_f32_rows;
    int used = 0;  /* rows shorter than a vector run the portable path */
#if LAB_X86
    if (isa && n * (f64 ? 8 : 4) >= (isa == 2 ? 64 : 32)) {
        used = isa;
        if (isa == 2) fn = f64 ? lab_avx512_f64_rows : lab_avx512_f32_rows;
        else fn = f64 ? lab_avx2_f64_rows : lab_avx2_f32_rows;
    }
#endif
    threads = threads > rows ? (int)rows : threads > 64 ? 64 : threads < 1 ? 1 : threads;
    lab_job jobs[64]; pthread_t tid[64]; int started[64] = { 0 };
    int64_t chunk = (rows + threads - 1) / threads;
    for (int t = 0; t < threads; t++) {
        int64_t r0 = t * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
        jobs[t] = (lab_job){ fn, src, dst, r0, r1 > r0 ? r1 : r0, n, c, op, nt };
        if (t > 0 && r1 > r0) started[t] = pthread_create(&tid[t], NULL, lab_worker, &jobs[t]) == 0;
    }
    lab_worker(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else if (jobs[t].r1 > jobs[t].r0) lab_worker(&jobs[t]);  /* no thread: run it here */
    }
    return used;
}
"""

# (ISA, dtype) -> (target attribute, vector type, lanes, intrinsic prefix and suffix, the
# in-register stages' permutations of x: stride 1, 2, 4, ... lanes)
_ISAS = {
    "avx512": ('__attribute__((target("avx512f,avx512dq,avx2,fma,prfchw")))', "__m512", 16),
    "avx2": ('__attribute__((target("avx2,fma,prfchw")))', "__m256", 8),
}
_PERMS = {
    ("avx512", "f32"): ["_mm512_permute_ps(x, 0xB1)", "_mm512_permute_ps(x, 0x4E)",
                        "_mm512_shuffle_f32x4(x, x, 0xB1)", "_mm512_shuffle_f32x4(x, x, 0x4E)"],
    ("avx512", "f64"): ["_mm512_permute_pd(x, 0x55)", "_mm512_shuffle_f64x2(x, x, 0xB1)",
                        "_mm512_shuffle_f64x2(x, x, 0x4E)"],
    ("avx2", "f32"): ["_mm256_permute_ps(x, 0xB1)", "_mm256_permute_ps(x, 0x4E)",
                      "_mm256_permute2f128_ps(x, x, 0x01)"],
    ("avx2", "f64"): ["_mm256_permute_pd(x, 0x5)", "_mm256_permute2f128_pd(x, x, 0x01)"],
}  # fmt: skip


def _bfly(R: int) -> str:
    """The stages of strides 1, 2, ..., R/2 (in vectors) on the registers v0..v{R-1}."""
    out, h = [], 1
    while h < R:
        for i in range(0, R, 2 * h):
            for j in range(i, i + h):
                out.append(f"t = v{j}; v{j} = ADD(t, v{j + h}); v{j + h} = SUB(t, v{j + h});")
        h *= 2
    return "\n        ".join(out)


def _addr(base: str, k: int) -> str:
    """``base + k·h`` in bytes with a base (``base``, ``base8`` = ``+8h``) and one scaled index
    (``h1``, ``h3``, ``h5``, ``h7`` times 1, 2, 4 or 8): x86 addressing, no extra registers."""
    b = base + ("8" if k >= 8 else "")
    k %= 8
    off = {0: "", 1: " + h1", 2: " + 2 * h1", 3: " + h3", 4: " + 4 * h1", 5: " + h5",
           6: " + 2 * h3", 7: " + h7"}[k]  # fmt: skip
    return b + off


def _stores(R: int, fin: bool, stride: str) -> str:
    put = "OUT" if fin else "ST"
    return " ".join(f"{put}(q + {k} * {stride}, v{k});" for k in range(R))


def _sweeps(rmax: int) -> tuple[str, str, list[str], list[str], list[str], list[str]]:
    fs, ss, ft, st = [], [], [[], []], [[], []]
    for lg in range(5):
        R = 1 << lg
        for fin in (0, 1):
            name = f"SFX_f{R}_{fin}"
            ft[fin].append(name if R <= rmax else "0")
            if R > rmax:
                continue
            loads = " ".join(f"VT v{k} = SFX_inreg(LD(p + {k} * V), sg);" for k in range(R))
            fs.append(
                f"static ATTR void {name}(const T *in, T *out, int64_t len, VT cv, int op, "
                f"int nt) {{\n    VT sg[LOGV]; (void)cv; (void)op; (void)nt;\n"
                f"    for (int k = 0; k < LOGV; k++) sg[k] = LD(SFX_sg + k * V);\n"
                f"    for (int64_t i = 0; i < len; i += {R} * V) {{\n"
                f"        const T *p = in + i; T *q = out + i; VT t; (void)t;\n"
                f"        {loads}\n        {_bfly(R)}\n        {_stores(R, fin, 'V')}\n"
                f"    }}\n}}"
            )
            name = f"SFX_s{R}_{fin}"
            st[fin].append(name if 1 < R <= rmax else "0")
            if R == 1 or R > rmax:
                continue
            loads = " ".join(f"VT v{k} = LD({_addr('p', k)});" for k in range(R))
            put = "OUT" if fin else "ST"
            stores = " ".join(f"{put}((T *)({_addr('q', k)}), v{k});" for k in range(R))
            ss.append(
                f"static ATTR void {name}(const T *in, T *out, int64_t len, int64_t h, VT cv, "
                f"int op, int nt, lab_pf *pf) {{\n    (void)cv; (void)op; (void)nt;\n"
                f"    const char *pp = pf->p, *ppe = pf->pe, *pw = pf->w, *pwe = pf->we;\n"
                f"    int64_t pk = pf->k, h1 = h * (int64_t)sizeof(T), h3 = 3 * h1, h5 = 5 * h1;\n"
                f"    int64_t h7 = 7 * h1, od = (const char *)out - (const char *)in;\n"
                f"    (void)h3; (void)h5; (void)h7;\n"
                f"    for (int64_t b = 0; b < len; b += {R} * h)\n"
                f"    for (int64_t j = 0; j < h; j += V) {{\n"
                f"        const char *p = (const char *)(in + b + j);\n"
                f'        __asm__("" : "+r"(p));  /* few base registers, no 2R pointers */\n'
                f"        const char *p8 = p + 8 * h1; char *q = (char *)p + od, *q8 = q + 8 * h1;\n"
                f"        (void)p8; (void)q8; VT t;\n"
                f"        {loads}\n        {_bfly(R)}\n        {stores}\n"
                f"        PF();\n    }}\n    pf->p = pp; pf->w = pw;\n}}"
            )
    return "\n".join(fs), "\n".join(ss), ft[0], ft[1], st[0], st[1]


def _simd_source() -> str:
    parts = ["#if LAB_X86"]
    for isa, (attr, vt, lanes32) in _ISAS.items():
        rmax = 16 if isa == "avx512" else 8  # registers: 32 zmm, 16 ymm
        for dt, ctype, suffix in (("f32", "float", "ps"), ("f64", "double", "pd")):
            lanes = lanes32 if dt == "f32" else lanes32 // 2
            vtype = vt if dt == "f32" else vt + "d"
            pre = "_mm512" if isa == "avx512" else "_mm256"
            perms = _PERMS[(isa, dt)]
            signs = ", ".join(
                "-1" if (lane >> k) & 1 else "1" for k in range(len(perms)) for lane in range(lanes)
            )
            inreg = " ".join(
                f"x = {pre}_fmadd_{suffix}(x, s[{k}], {p});" for k, p in enumerate(perms)
            )
            f, s, f0, f1, s0, s1 = _sweeps(rmax)
            defs = {
                "T": ctype, "VT": vtype, "V": str(lanes), "LOGV": str(len(perms)),
                "RMAX": str(rmax), "LGR": str(rmax.bit_length() - 1), "ATTR": attr,
                "LD(p)": f"{pre}_loadu_{suffix}((const {ctype} *)(p))",
                "ST(p, x)": f"{pre}_storeu_{suffix}(p, x)",
                "STNT(p, x)": f"{pre}_stream_{suffix}(p, x)",
                "ADD": f"{pre}_add_{suffix}", "SUB": f"{pre}_sub_{suffix}",
                "MUL": f"{pre}_mul_{suffix}", "DIV": f"{pre}_div_{suffix}",
                "SET1": f"{pre}_set1_{suffix}",
            }  # fmt: skip
            body = _SIMD.replace("@F@", f).replace("@S@", s)
            subs = {"SIGNS": signs, "INREG": inreg, "FTAB0": f0, "FTAB1": f1, "STAB0": s0,
                    "STAB1": s1, "SFX": f"lab_{isa}_{dt}"}  # fmt: skip
            for key, val in subs.items():
                body = body.replace(key, val if isinstance(val, str) else ", ".join(val))
            parts += [f"#define {k} {v}" for k, v in defs.items()]
            parts.append(body)
            parts += [f"#undef {k.split('(')[0]}" for k in defs]
    parts.append("#endif")
    return "\n".join(parts)


C_SOURCE = _HEADER + _GENERIC + _simd_source() + _FOOTER

_FLAGS = ("-O3", "-ffp-contract=off", "-fno-fast-math", "-pthread", "-shared", "-fPIC")
_RETRY = ("-DLAB_FWHT_NO_SIMD",)  # a compiler that cannot build the intrinsics: portable path
_ISA_CODES = {"generic": 0, "avx2": 1, "avx512": 2}
_LOCK = threading.Lock()
_STATE: dict = {}


def _cache_dir() -> Path:
    env = os.environ.get("LAB_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "optlab"


def _cpu_id() -> str:
    """The CPU (model and flags): the cached library is keyed on it."""
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
        for extra in ((), _RETRY):
            cmd = [cc, *_FLAGS, *extra, "-o", str(out), str(src)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
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
    target = _cache_dir() / f"lab_fwht_{key}{'.dylib' if sys.platform == 'darwin' else '.so'}"
    try:
        if not target.exists():
            _build(cc, target)
        lib = ctypes.CDLL(str(target))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return None, f"build or load failed: {exc}"
    lib.lab_fwht_isas.argtypes, lib.lab_fwht_isas.restype = [], ctypes.c_int
    i64, ci = ctypes.c_int64, ctypes.c_int
    lib.lab_fwht.argtypes = [ci, ctypes.c_void_p, ctypes.c_void_p, i64, i64, ctypes.c_double,
                             ci, ci, ci, ci]  # fmt: skip
    lib.lab_fwht.restype = ci
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


def _isas() -> list[str]:
    """The kernel's paths this CPU runs (``generic`` always; ``avx2``, ``avx512``)."""
    lib = load()
    if lib is None:
        return []
    mask = lib.lab_fwht_isas()
    return [name for name, code in _ISA_CODES.items() if mask >> code & 1]


@functools.cache
def _l3_bytes() -> int | None:
    """The L3 (last-level) cache size in bytes, from sysfs, read once; ``None`` where unknown."""
    try:
        for idx in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            if (idx / "level").read_text().strip() == "3":
                text = (idx / "size").read_text().strip().upper()
                mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
                return int(text.rstrip("KMG")) * mult
    except (OSError, ValueError):
        pass
    return None


def _pick_isa(isa) -> str:
    if isa is None:
        isa = os.environ.get("LAB_FWHT_ISA", "auto").strip().lower() or "auto"
        name = "LAB_FWHT_ISA"
    else:
        name = "isa"
    if not isinstance(isa, str) or isa not in ("auto", *_ISA_CODES):
        raise ValueError(f"{name} must be one of {['auto', *_ISA_CODES]} (got {isa!r})")
    have = _isas()
    if not have:
        raise RuntimeError(f"the compiled FWHT kernel is unavailable: {build_error()}")
    if isa == "auto":
        return have[-1]
    if isa not in have:
        raise ValueError(f"{name}={isa!r}: this CPU or build runs only {have}")
    return isa


def fwht_rows_(src, dst, scale: float = 1.0, *, divisor=None, threads=None, isa=None,
               stream=None) -> str:  # fmt: skip
    """``dst = (H src) · scale``, or ``(H src) / divisor``, row by row (``H`` unnormalised).

    Parameters
    ----------
    src : torch.Tensor
        ``(rows, n)``, contiguous, float32 or float64, on CPU; ``n`` a power of two.
    dst : torch.Tensor or None
        A separate buffer like ``src`` (out of place), or ``None``: transform ``src`` in place.
    scale : float
        Multiplies the result after the last butterfly stage (default 1).
    divisor : float, optional
        Divides the result after the last stage instead: ``sqrt(n)`` is the reference's
        normalisation, bit for bit (a power of two is applied as the exact product).
    threads : int, optional
        Workers over the rows (default ``torch.get_num_threads()``; one below 512 KB of work).
    isa : str, optional
        ``"auto"`` (default: ``$LAB_FWHT_ISA``, else the widest the CPU runs), ``"avx512"``,
        ``"avx2"`` or ``"generic"`` (the portable C path).
    stream : bool, optional
        Streaming (non-temporal) stores for ``dst`` (default: out of place and ``src + dst``
        over half the L3 cache).

    Returns
    -------
    str
        The path that ran (``"avx512"``, ``"avx2"``, or ``"generic"``, also for rows shorter
        than a vector).

    See: book/halo/02-fwht-kernel.ipynb
    """
    import torch

    for name, t in (("src", src), ("dst", src if dst is None else dst)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor (got {type(t).__name__})")
        if t.device.type != "cpu" or t.dtype not in (torch.float32, torch.float64) or t.ndim != 2:
            raise ValueError(f"{name} must be a 2-D float32/float64 CPU tensor")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    rows, n = src.shape
    nbytes = src.numel() * src.element_size()
    if dst is not None:
        if dst.shape != src.shape or dst.dtype != src.dtype:
            raise ValueError("src and dst must share shape and dtype")
        if abs(dst.data_ptr() - src.data_ptr()) < max(nbytes, 1):
            raise ValueError("dst must be a separate buffer from src (dst=None: in place)")
    if n & (n - 1) or n == 0:
        raise ValueError(f"the row length must be a power of two (got {n})")
    op, c = (0, 1.0) if check_real("scale", scale) == 1.0 else (1, float(scale))
    if divisor is not None:
        if op:
            raise ValueError("give scale or divisor, not both")
        divisor = check_positive("divisor", divisor)
        op, c = (1, 1.0 / divisor) if math.frexp(divisor)[0] == 0.5 else (2, divisor)
        op = 0 if divisor == 1.0 else op
    threads = check_int("threads", torch.get_num_threads() if threads is None else threads, 1)
    name = _pick_isa(isa)
    threads = max(1, min(threads, rows, nbytes // (512 << 10)))
    if stream is None:
        stream = dst is not None and 2 * nbytes > (_l3_bytes() or 32 << 20) // 2
    code = load().lab_fwht(
        int(src.dtype == torch.float64), src.data_ptr(), (src if dst is None else dst).data_ptr(),
        rows, n, c, op, _ISA_CODES[name], int(bool(stream)), threads,
    )  # fmt: skip
    return {v: k for k, v in _ISA_CODES.items()}[code]
