"""ACE: cost of the primal-dual engine and of the batched equivariance check.

Reports, on the SO(2) toy (3 homotopy layers, width 16, N training points):

* time per training step of the strict model, the unconstrained homotopy model (plain Adam),
  ``lab.ace.ACE`` (equality and resilient) and the peer a user would pick for the primal-dual
  part, Cooper's ``SimultaneousOptimizer`` (Lagrangian formulation, one equality constraint
  per gamma); the ACE and Cooper trajectories are checked to agree;
* the equivariance check: ``lab.ace.equivariance_error`` (all rotations in one batched
  forward) against the reference loop (one forward per rotation).

    python benchmarks/bench_ace.py            # CPU: N = 256, 300 steps, 64 rotations
    python benchmarks/bench_ace.py --quick    # CPU, < 20 s: N = 64, 100 steps
    python benchmarks/bench_ace.py --gpu      # adds CUDA timings of the same runs
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import ace  # noqa: E402


def _data(N, device, dtype=torch.float32):
    x, y = ace.swirl_dataset(N, 0.5, 0, noise=0.05)
    return torch.tensor(x, dtype=dtype, device=device), torch.tensor(y, dtype=dtype, device=device)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_training(kind: str, N: int, steps: int, device) -> tuple[float, np.ndarray]:
    """Seconds per step and the gamma trajectory (for the agreement check)."""
    X, Y = _data(N, device)
    model = ace.make_toy_model(homotopy=kind != "strict").to(device)
    gam = []
    if kind == "cooper":
        import cooper

        gammas = ace.homotopy(model)

        class Problem(cooper.ConstrainedMinimizationProblem):
            def __init__(self):
                super().__init__()
                mult = cooper.multipliers.DenseMultiplier(
                    num_constraints=len(gammas), device=device
                )
                self.c = cooper.Constraint(
                    constraint_type=cooper.ConstraintType.EQUALITY,
                    formulation_type=cooper.formulations.Lagrangian,
                    multiplier=mult,
                )

            def compute_cmp_state(self):
                loss = ((model(X) - Y) ** 2).sum(-1).mean()
                viol = torch.stack([g.reshape(()) for g in gammas])
                return cooper.CMPState(
                    loss=loss, observed_constraints={self.c: cooper.ConstraintState(violation=viol)}
                )

        cmp = Problem()
        opt = cooper.optim.SimultaneousOptimizer(
            cmp=cmp,
            primal_optimizers=torch.optim.Adam(model.parameters(), lr=1e-2),
            dual_optimizers=torch.optim.SGD(cmp.dual_parameters(), lr=0.05, maximize=True),
        )

        def step():
            opt.roll()
            gam.append([float(g.detach()) for g in gammas])

    else:
        adam = torch.optim.Adam(model.parameters(), lr=1e-2)
        eng = None
        if kind in ("equality", "resilient"):
            eng = ace.ACE(model, adam, mode=kind, dual_lr=0.05)

        def step():
            loss = ((model(X) - Y) ** 2).sum(-1).mean()
            if eng is not None:
                gam.append(eng.step(loss)["gamma"].tolist())
            else:
                adam.zero_grad()
                loss.backward()
                adam.step()

    step()
    _sync(device)
    t = time.perf_counter()
    for _ in range(steps - 1):
        step()
    _sync(device)
    return (time.perf_counter() - t) / (steps - 1), np.array(gam)


def equivariance_loop(f, x, thetas):
    """Reference: one forward pass per rotation."""
    with torch.no_grad():
        fx = f(x)
        num = 0.0
        for R in ace.rotation_matrices(thetas).to(x.dtype):
            num += float(((f(x @ R.T) - fx @ R.T) ** 2).sum(-1).mean())
        return num / len(thetas) / float((fx**2).sum(-1).mean())


def time_equivariance(N: int, n: int, device, repeats: int = 5):
    model = ace.make_toy_model(dtype=torch.float64).to(device)
    x = torch.tensor(ace.swirl_dataset(N, 0.0, 1)[0], device=device)
    th = torch.linspace(0, 2 * math.pi, n + 1, dtype=torch.float64)[:-1].to(device)
    batched = ace.equivariance_error(
        model, x, lambda k: th[:k], ace.rotation_matrices, ace.rotation_matrices, n=n
    )
    ref = equivariance_loop(model, x, th)
    assert abs(batched - ref) < 1e-9 * max(1.0, ref), (batched, ref)
    out = {}
    for name, fn in (
        (
            "batched",
            lambda: ace.equivariance_error(
                model, x, lambda k: th[:k], ace.rotation_matrices, ace.rotation_matrices, n=n
            ),
        ),
        ("loop", lambda: equivariance_loop(model, x, th)),
    ):
        fn()
        _sync(device)
        t = time.perf_counter()
        for _ in range(repeats):
            fn()
        _sync(device)
        out[name] = (time.perf_counter() - t) / repeats
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    N, steps, n_rot, N_eq = (64, 100, 32, 500) if args.quick else (256, 300, 64, 2000)
    devices = [torch.device("cpu")]
    if args.gpu:
        if not torch.cuda.is_available():
            raise SystemExit("--gpu given but torch sees no CUDA device")
        devices.append(torch.device("cuda"))
    results = {"N": N, "steps": steps, "platform": platform.platform(), "rows": []}
    print("| device | run | ms / step | vs strict |\n|---|---|---|---|")
    for dev in devices:
        per = {}
        traj = {}
        for kind in ("strict", "unconstrained", "equality", "resilient", "cooper"):
            per[kind], traj[kind] = time_training(kind, N, steps, dev)
        agree = float(np.abs(traj["equality"] - traj["cooper"]).max())
        for kind, s in per.items():
            print(f"| {dev.type} | {kind} | {1e3 * s:.2f} | {s / per['strict']:.2f}x |")
            results["rows"].append(
                {"device": dev.type, "run": kind, "s_per_step": s, "vs_strict": s / per["strict"]}
            )
        print(f"ACE equality vs Cooper simultaneous GDA: max |gamma difference| {agree:.2e}")
        results[f"ace_vs_cooper_max_gamma_diff_{dev.type}"] = agree
        eq = time_equivariance(N_eq, n_rot, dev)
        print(
            f"| {dev.type} | equivariance check, {n_rot} rotations x {N_eq} points | "
            f"batched {1e3 * eq['batched']:.2f} ms, loop {1e3 * eq['loop']:.2f} ms | "
            f"{eq['loop'] / eq['batched']:.2f}x |"
        )
        results[f"equivariance_{dev.type}"] = {**eq, "speedup": eq["loop"] / eq["batched"]}
    out = Path(__file__).parent / "results" / f"ace-{'gpu' if args.gpu else 'cpu'}.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
