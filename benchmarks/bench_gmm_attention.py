"""Attention-based clustering: fast paths vs the numpy reference vs scikit-learn.

Two tables.

1. **Identity attention** (the kernel of in-context quantisation), ``B`` sequences of ``L``
   tokens in ``d = 64``: ``lab.gmm_attention.identity_attention`` (numpy float64, builds the
   ``L x L`` weights), a naive torch version that also builds them, and
   ``identity_attention_sdpa`` (``scaled_dot_product_attention``: fused kernels on a GPU,
   no ``L x L`` matrix). Outputs are checked against the reference.
2. **Finding the centroids** of the symmetric mixture (``d = 10``, ``||mu|| / sigma = 3``):
   the numpy SGD reference ``train_heads`` (one run at a time), the batched torch fast path
   ``train_heads_batched`` (``R`` runs at once), and the peers a user would pick instead,
   scikit-learn's ``KMeans`` and ``GaussianMixture`` (EM) on 1e4 samples: centroid error and
   wall time per run.

A markdown table is printed and the numbers go to ``benchmarks/results/gmm_attention-<cpu|gpu>.json``.

    python benchmarks/bench_gmm_attention.py            # CPU
    python benchmarks/bench_gmm_attention.py --quick    # CPU, < 20 s
    python benchmarks/bench_gmm_attention.py --gpu      # adds CUDA sizes (L up to 16k)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import gmm_attention as ga  # noqa: E402


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return out, best


def naive_torch(X, beta):
    P = torch.softmax(beta * X @ X.transpose(-1, -2), dim=-1)  # materialises B x L x L
    return P @ X


def attention_table(sizes, device, dtype, B, d=64, beta=0.05):
    rows = []
    rng = np.random.default_rng(0)
    for L in sizes:
        X = rng.normal(size=(B, L, d))
        Xt = torch.as_tensor(X, dtype=dtype, device=device)
        row = {"L": L, "B": B, "d": d, "device": device, "dtype": str(dtype).split(".")[-1]}
        flops = 4.0 * B * L * L * d
        ref = None
        if device == "cpu" and L <= 2048:
            ref, row["numpy_s"] = timed(lambda X=X: ga.identity_attention(X, beta), 2)
        out_n = None
        try:
            out_n, row["naive_torch_s"] = timed(lambda Xt=Xt: naive_torch(Xt, beta), 2)
        except RuntimeError as exc:  # out of memory at long L
            row["naive_torch_s"] = f"failed: {str(exc)[:40]}"
        out_f, row["sdpa_s"] = timed(lambda Xt=Xt: ga.identity_attention_sdpa(Xt, beta), 2)
        row["sdpa_tflops"] = flops / row["sdpa_s"] / 1e12
        if ref is not None:
            row["sdpa_max_err_vs_numpy"] = float(np.abs(out_f.double().cpu().numpy() - ref).max())
        if out_n is not None:
            row["sdpa_max_err_vs_naive"] = float((out_f - out_n).abs().max().item())
        rows.append(row)
    return rows


def training_table(R, steps, device):
    mu = ga.symmetric_means(10, 3.0, seed=0)
    out = {"R": R, "steps": steps, "batch": 1024, "device": device}
    n_ref = min(R, 3)
    _, t_ref = timed(lambda: [ga.train_heads(mu, 1.0, steps, 0.1, 1024, s) for s in range(n_ref)])
    out["numpy_per_run_s"] = t_ref / n_ref
    hist = ga.train_heads(mu, 1.0, steps, 0.1, 1024, 0)
    out["numpy_error"] = ga.centroid_error(hist.Theta, mu)
    ga.train_heads_batched(mu, 1.0, 2, 0.1, 1024, seeds=R, device=device)  # warm-up
    heads, t_fast = timed(
        lambda: ga.train_heads_batched(mu, 1.0, steps, 0.1, 1024, seeds=R, device=device)
    )
    out["torch_batched_per_run_s"] = t_fast / R
    errs = [ga.centroid_error(h.cpu().numpy(), mu) for h in heads]
    out["torch_batched_error_median"] = float(np.median(errs))
    out["torch_batched_min_alignment"] = float(
        min(ga.alignment(h.cpu().numpy(), mu) for h in heads)
    )
    ga.fit_baselines(mu, n=2000, steps=2)  # warm-up (imports, thread pools)
    res = ga.fit_baselines(mu, 1.0, 10_000, 0, steps=steps)
    for name in ("k-means", "EM"):
        out[f"{name}_s"] = res[name]["seconds"]
        out[f"{name}_error"] = res[name]["error"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu", action="store_true", help="also time the CUDA sizes")
    parser.add_argument("--quick", action="store_true", help="small CPU sizes (< 20 s)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu given but torch sees no CUDA device")
    torch.set_num_threads(args.threads)

    sizes = [256, 512] if args.quick else [256, 1024, 2048]
    att = attention_table(sizes, "cpu", torch.float64, B=4 if args.quick else 8)
    train = [training_table(8 if args.quick else 32, 100 if args.quick else 300, "cpu")]
    if args.gpu:
        att += attention_table([1024, 4096, 16384], "cuda", torch.float16, B=64)
        train.append(training_table(256, 300, "cuda"))

    print("\n### Identity attention (B sequences, d = 64)\n")
    print(
        "| device | dtype | L | B | numpy ref (s) | naive torch (s) | sdpa (s) | sdpa TFLOP/s | max err |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in att:
        err = r.get("sdpa_max_err_vs_numpy", r.get("sdpa_max_err_vs_naive", float("nan")))
        num = f"{r['numpy_s']:.4f}" if "numpy_s" in r else "-"
        nai = r.get("naive_torch_s", "-")
        nai = f"{nai:.4f}" if isinstance(nai, float) else nai
        print(
            f"| {r['device']} | {r['dtype']} | {r['L']} | {r['B']} | {num} | {nai} | "
            f"{r['sdpa_s']:.4f} | {r['sdpa_tflops']:.3f} | {err:.1e} |"
        )
    print("\n### Finding the centroids (d = 10, separation 3)\n")
    print(
        "| device | runs | steps | numpy SGD / run (s) | torch batched / run (s) | speed-up | "
        "k-means (s) | EM (s) | error: SGD / k-means / EM |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for t in train:
        print(
            f"| {t['device']} | {t['R']} | {t['steps']} | {t['numpy_per_run_s']:.4f} | "
            f"{t['torch_batched_per_run_s']:.4f} | "
            f"{t['numpy_per_run_s'] / t['torch_batched_per_run_s']:.1f}x | {t['k-means_s']:.4f} | "
            f"{t['EM_s']:.4f} | {t['torch_batched_error_median']:.3f} / {t['k-means_error']:.3f} / "
            f"{t['EM_error']:.3f} |"
        )

    result = {
        "machine": platform.platform(),
        "torch": torch.__version__,
        "threads": args.threads,
        "quick": args.quick,
        "identity_attention": att,
        "training": train,
    }
    out = (
        Path(__file__).resolve().parent
        / "results"
        / f"gmm_attention-{'gpu' if args.gpu else 'cpu'}.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
