"""Attention-based clustering: fast paths vs the numpy reference vs scikit-learn.

1. **Identity attention** (the kernel of in-context quantisation), ``B`` sequences of ``L``
   tokens in ``d = 64``, one case per ``L``: reference ``lab.gmm_attention.identity_attention``
   (numpy float64, builds the ``L x L`` weights; CPU, L <= 2048), fast
   ``fast.identity_attention`` (``scaled_dot_product_attention``: fused kernels on a GPU, no
   ``L x L`` matrix), peer: the naive torch version that builds the weights. Checks: max abs
   error of the fast path vs the reference (and vs the naive peer); sdpa TFLOP/s.
2. **Finding the centroids** of the symmetric mixture (``d = 10``, ``||mu|| / sigma = 3``),
   seconds per run: reference = the numpy SGD ``train_heads`` (one run at a time, timed on 3
   runs), fast = ``fast.train_heads`` (``R`` runs in one call, total / R), peers =
   scikit-learn's ``KMeans`` and ``GaussianMixture`` (EM) on 1e4 samples. Centroid errors are
   recorded with the rows.

    python benchmarks/bench_gmm_attention.py            # CPU: L in (256, 1024, 2048), B = 8; R = 32
    python benchmarks/bench_gmm_attention.py --quick    # CPU, < 20 s
    python benchmarks/bench_gmm_attention.py --gpu      # adds CUDA (float16, L up to 16k; R = 256)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import gmm_attention as ga  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def naive_torch(X, beta):
    P = torch.softmax(beta * X @ X.transpose(-1, -2), dim=-1)  # materialises B x L x L
    return P @ X


def attention_cases(bench, sizes, device, dtype, B, d=64, beta=0.05):
    rng = np.random.default_rng(0)
    reps = bench.args.reps or (2 if bench.quick else 3)
    dev = device if device != "cpu" else None
    dt = str(dtype).split(".")[-1]
    for L in sizes:
        X = rng.normal(size=(B, L, d))
        Xt = torch.as_tensor(X, dtype=dtype, device=device)
        label = f"identity attention, L = {L}, B = {B}, d = {d} ({device}, {dt})"
        with bench.case(label, L=L, B=B, d=d, device=device, dtype=dt) as case:
            ref = None
            if device == "cpu" and L <= 2048:
                ref = case.time(
                    "reference",
                    "lab identity_attention (numpy float64)",
                    lambda X=X: ga.identity_attention(X, beta),
                    reps=reps,
                )
            out_f = case.time(
                "fast",
                "lab fast.identity_attention",
                lambda Xt=Xt: ga.fast.identity_attention(Xt, beta),
                reps=reps,
                device=dev,
            )
            case.metric("sdpa_tflops", 4.0 * B * L * L * d / case.rows[-1]["seconds"] / 1e12)
            try:
                out_n = case.time(
                    "peer",
                    "naive torch (softmax(X X^T) X)",
                    lambda Xt=Xt: naive_torch(Xt, beta),
                    reps=reps,
                    device=dev,
                )
                case.metric("max_err_vs_naive", float((out_f - out_n).abs().max().item()))
            except RuntimeError as exc:  # out of memory at long L
                case.metric("naive_failed", str(exc)[:60])
            if ref is not None:
                err = float(np.abs(out_f.double().cpu().numpy() - ref).max())
                case.metric("max_err_vs_reference", err)


def training_case(bench, R, steps, device):
    mu = ga.symmetric_means(10, 3.0, seed=0)
    with bench.case(
        f"find the centroids, d = 10, separation 3, {steps} steps ({device}), per run",
        R=R,
        steps=steps,
        batch=1024,
        device=device,
    ) as case:
        n_ref = min(R, 3)
        t0 = time.perf_counter()
        for s in range(n_ref):
            hist = ga.train_heads(mu, ga.TrainSettings(steps=steps), s)
            if s == 0:
                err0 = ga.centroid_error(hist.Theta, mu)
        case.record(
            "reference",
            "lab train_heads (numpy SGD, one run)",
            seconds=(time.perf_counter() - t0) / n_ref,
            error=err0,
            note=f"mean over {n_ref} runs timed once",
        )
        ga.fast.train_heads(mu, ga.TrainSettings(steps=2), R, device=device)  # warm-up
        t0 = time.perf_counter()
        heads = ga.fast.train_heads(mu, ga.TrainSettings(steps=steps), R, device=device)
        if device != "cpu":
            torch.cuda.synchronize()
        t_fast = time.perf_counter() - t0
        errs = [ga.centroid_error(h.cpu().numpy(), mu) for h in heads]
        case.record(
            "fast",
            "lab fast.train_heads (torch)",
            seconds=t_fast / R,
            device=device,
            error=float(np.median(errs)),
            note=f"{R} runs in one call, timed once; error = median over runs",
        )
        case.metric(
            "fast_min_alignment", float(min(ga.alignment(h.cpu().numpy(), mu) for h in heads))
        )
        ga.fit_baselines(mu, ga.TrainSettings(steps=2), n=2000)  # warm-up (imports, threads)
        res = ga.fit_baselines(mu, ga.TrainSettings(steps=steps), 0)
        for name, label in (("k-means", "sklearn KMeans"), ("EM", "sklearn GaussianMixture (EM)")):
            case.record(
                "peer",
                label,
                seconds=res[name]["seconds"],
                error=res[name]["error"],
                note="one fit on 1e4 samples",
            )


def main() -> None:
    bench = Benchmark("gmm_attention", __doc__)
    sizes = [256, 512] if bench.quick else [256, 1024, 2048]
    attention_cases(bench, sizes, "cpu", torch.float64, B=4 if bench.quick else 8)
    if bench.gpu:
        attention_cases(bench, [1024, 4096, 16384], "cuda", torch.float16, B=64)
    training_case(bench, 8 if bench.quick else 32, 100 if bench.quick else 300, "cpu")
    if bench.gpu:
        training_case(bench, 256, 300, "cuda")
    bench.finish()


if __name__ == "__main__":
    main()
