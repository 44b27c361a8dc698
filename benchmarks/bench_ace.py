"""ACE: cost of the primal-dual engine and of the batched equivariance check.

Two cases on the SO(2) toy (3 homotopy layers, width 16, N training points):

* time per training step (mean over the steps of one run, after the first): fast =
  ``lab.ace.ACE`` (equality; resilient as a second row), reference = the same homotopy model
  trained with plain Adam (no constraint: the floor ACE's overhead is measured against) and
  the strict equivariant model, peer = Cooper's ``SimultaneousOptimizer`` (Lagrangian
  formulation, one equality constraint per gamma), the library a user would pick for the
  primal-dual part. Check: the ACE and Cooper gamma trajectories agree;
* the equivariance check: fast = ``lab.ace.fast.equivariance_error`` (all rotations in one batched
  forward), reference = a loop with one forward per rotation; checked to agree to 1e-9.

    python benchmarks/bench_ace.py            # CPU: N = 256, 300 steps, 64 rotations
    python benchmarks/bench_ace.py --quick    # CPU, < 20 s: N = 64, 100 steps
    python benchmarks/bench_ace.py --gpu      # adds CUDA timings of the same runs
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import ace  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


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


def equivariance_case(bench, N: int, n: int, device) -> None:
    model = ace.make_toy_model(dtype=torch.float64).to(device)
    x = torch.tensor(ace.swirl_dataset(N, 0.0, 1)[0], device=device)
    th = torch.linspace(0, 2 * math.pi, n + 1, dtype=torch.float64)[:-1].to(device)
    sync = device.type if device.type == "cuda" else None
    with bench.case(
        f"equivariance check, {n} rotations x {N} points ({device.type})",
        rotations=n,
        N=N,
        device=device.type,
    ) as case:
        ref = case.time(
            "reference",
            "loop, one forward per rotation",
            lambda: equivariance_loop(model, x, th),
            device=sync,
        )
        batched = case.time(
            "fast",
            "lab.ace.equivariance_error (batched)",
            lambda: ace.fast.equivariance_error(
                model, x, lambda k: th[:k], ace.rotation_matrices, ace.rotation_matrices, n=n
            ),
            device=sync,
        )
        assert abs(batched - ref) < 1e-9 * max(1.0, ref), (batched, ref)
        case.metric("abs_diff_fast_vs_reference", abs(batched - ref))


RUNS = (
    ("reference", "unconstrained", "homotopy model, plain Adam (no constraint)"),
    ("reference", "strict", "strict equivariant model, Adam"),
    ("fast", "equality", "lab.ace.ACE (equality)"),
    ("fast", "resilient", "lab.ace.ACE (resilient)"),
    ("peer", "cooper", "Cooper SimultaneousOptimizer (Lagrangian)"),
)


def main() -> None:
    bench = Benchmark("ace", __doc__)
    N, steps, n_rot, N_eq = (64, 100, 32, 500) if bench.quick else (256, 300, 64, 2000)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if bench.gpu else [])
    for dev in devices:
        with bench.case(
            f"training step, N = {N}, {steps} steps ({dev.type})", N=N, steps=steps
        ) as case:
            traj = {}
            for role, kind, label in RUNS:
                s, traj[kind] = time_training(kind, N, steps, dev)
                case.record(
                    role, label, seconds=s, device=dev.type, note=f"mean of {steps - 1} steps"
                )
            agree = float(np.abs(traj["equality"] - traj["cooper"]).max())
            case.metric("ace_vs_cooper_max_gamma_diff", agree)
        equivariance_case(bench, N_eq, n_rot, dev)
    bench.finish()


if __name__ == "__main__":
    main()
