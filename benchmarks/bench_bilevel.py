"""Bilevel (IZOM): oracle throughput and batched zeroth-order steps.

Two measurements:

1. **Hyper-cleaning oracle** (optimistic inner solve, evaluations per second) for a batch of
   ``B`` label corrections:

   * ``cvxpy (CLARABEL)``: the peer a user would pick, one QP per point (timed on a few points);
   * ``lab HyperCleaning.__call__``: the numpy reference, one dense KKT solve per point;
   * ``lab kkt_oracle_torch``: factorise once, one batched LU solve for all ``B`` points (CPU,
     and CUDA with ``--gpu``).

   Every path is checked against the numpy reference (1e-6 for cvxpy, 1e-10 otherwise).

2. **IZOM on Toy P** (run-steps per second): the numpy reference ``izom`` (one run at a time)
   vs ``izom_batched`` (all runs and directions of a step in one oracle batch). Checked: with
   the same directions and one run the two agree on a short horizon.

    python benchmarks/bench_bilevel.py            # CPU: n_train = 200, p = 400, B = 512
    python benchmarks/bench_bilevel.py --quick    # CPU, < 20 s: n_train = 50, p = 100, B = 128
    python benchmarks/bench_bilevel.py --gpu      # adds CUDA: n_train = 2000, p = 4000, B = 4096
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

from lab import bilevel as bl  # noqa: E402


def _timeit(fn, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_oracle(n_train: int, p: int, B: int, devices: list[str], cvx_points: int) -> list[dict]:
    H = bl.hyper_cleaning(n_train, p, 2 * p, 0.3, 0)
    X = np.random.default_rng(0).standard_normal((B, n_train))
    rows = []
    n_ref = min(B, 64)
    t = _timeit(lambda: [H(x) for x in X[:n_ref]], 1)
    ref = np.array([H(x) for x in X[:n_ref]])
    rows.append({"path": "lab HyperCleaning (numpy, per point)", "evals_per_s": n_ref / t})
    t0 = time.perf_counter()
    vals = []
    for x in X[:cvx_points]:
        w = bl.cvxpy_inner_solve(H, x)
        vals.append(H.validation_loss(w))
    t = time.perf_counter() - t0
    err = float(np.abs(np.array(vals) - ref[:cvx_points]).max())
    assert err < 1e-6, f"cvxpy disagrees with the KKT reference by {err}"
    rows.append({"path": "cvxpy CLARABEL (per point)", "evals_per_s": cvx_points / t, "err": err})
    for dev in devices:
        oracle = bl.kkt_oracle_torch(H.A, H.G, H.ytr, H.yval, device=dev)
        Xt = torch.tensor(X, device=dev)
        out = oracle(Xt)
        err = float(np.abs(out[:n_ref].cpu().numpy() - ref).max())
        assert err < 1e-8, f"kkt_oracle_torch ({dev}) disagrees by {err}"

        def run(oracle=oracle, Xt=Xt, dev=dev):
            oracle(Xt)
            if dev == "cuda":
                torch.cuda.synchronize()

        t = _timeit(run)
        rows.append({"path": f"lab kkt_oracle_torch ({dev}, batch {B})", "evals_per_s": B / t})
    base = rows[0]["evals_per_s"]
    for r in rows:
        r["speedup_vs_reference"] = r["evals_per_s"] / base
    return rows


def bench_izom(T: int, runs: int, n_dirs: int, devices: list[str]) -> list[dict]:
    P = bl.toy_pessimistic()
    x0 = np.array([1.5, -1.2])
    eta = 0.5 / np.sqrt(2 * T)
    rows = []
    n_ref = 3
    t = _timeit(lambda: [bl.izom(P, x0, T, eta, 1e-3, s, measure="none") for s in range(n_ref)], 1)
    rows.append({"path": "lab izom (numpy reference)", "run_steps_per_s": n_ref * T / t})
    U = bl.sphere_directions(np.random.default_rng(0), 40, 2)
    ref = bl.izom(P, x0, 40, 0.02, 1e-3, 0, measure="none", directions=U).x
    for dev in devices:
        chk = bl.izom_batched(P, x0, 40, 0.02, 1e-3, directions=U[:, None, None], device=dev)
        err = float(np.abs(chk.x[:, 0].cpu().numpy() - ref).max())
        assert err < 1e-9, f"izom_batched ({dev}) disagrees with izom by {err}"
        t = _timeit(
            lambda dev=dev: bl.izom_batched(
                P, x0, T, eta, 1e-3, n_dirs=n_dirs, runs=runs, record_every=T, device=dev
            ),
            1,
        )
        rows.append(
            {
                "path": f"lab izom_batched ({dev}, {runs} runs x {n_dirs} dirs)",
                "run_steps_per_s": runs * T / t,
                "evals_per_s": 2 * n_dirs * runs * T / t,
            }
        )
    base = rows[0]["run_steps_per_s"]
    for r in rows:
        r["speedup_vs_reference"] = r["run_steps_per_s"] / base
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, < 20 s on a CPU")
    ap.add_argument("--gpu", action="store_true", help="add CUDA rows (paper-scale sizes)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    devices = ["cpu"]
    if args.gpu:
        if not torch.cuda.is_available():
            raise SystemExit("--gpu given but CUDA is not available")
        devices.append("cuda")
        sizes = {"n_train": 2000, "p": 4000, "B": 4096, "T": 2000, "runs": 1024, "cvx": 3}
    elif args.quick:
        sizes = {"n_train": 50, "p": 100, "B": 128, "T": 300, "runs": 64, "cvx": 5}
    else:
        sizes = {"n_train": 200, "p": 400, "B": 512, "T": 2000, "runs": 256, "cvx": 10}
    t0 = time.time()
    oracle_rows = bench_oracle(sizes["n_train"], sizes["p"], sizes["B"], devices, sizes["cvx"])
    izom_rows = bench_izom(sizes["T"], sizes["runs"], 4, devices)
    print(f"\n### Hyper-cleaning oracle (n_train = {sizes['n_train']}, p = {sizes['p']})\n")
    print("| path | evaluations / s | vs numpy reference |")
    print("|---|---|---|")
    for r in oracle_rows:
        print(f"| {r['path']} | {r['evals_per_s']:.3g} | {r['speedup_vs_reference']:.2f}x |")
    print(f"\n### IZOM on Toy P (T = {sizes['T']})\n")
    print("| path | run-steps / s | vs numpy reference |")
    print("|---|---|---|")
    for r in izom_rows:
        print(f"| {r['path']} | {r['run_steps_per_s']:.3g} | {r['speedup_vs_reference']:.2f}x |")
    result = {
        "slug": "bilevel",
        "mode": "gpu" if args.gpu else ("quick" if args.quick else "full"),
        "machine": platform.platform(),
        "torch": torch.__version__,
        "sizes": sizes,
        "oracle": oracle_rows,
        "izom": izom_rows,
        "seconds": time.time() - t0,
    }
    out = (
        Path(__file__).resolve().parent / "results" / f"bilevel-{'gpu' if args.gpu else 'cpu'}.json"
    )
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out} ({result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
