"""The drivers of the notebooks: filters on the noisy quadratic (notebook 1); accuracies over
seeds and optimizer step times on digits-sized and larger models (notebook 2). They return
plain dicts and small result dataclasses.

See: book/koala/01-kalman-view.ipynb, book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int, check_positive, check_range
from lab.core.fixtures import official_fixture
from lab.core.memo import memo
from lab.core.sweep import sweep
from lab.koala.batched import train_digits_seeds
from lab.koala.problems import NoisyQuadratic
from lab.koala.reference import adam, ekf_full, koalapp, koalav
from lab.koala.results import PATH_METHODS, QuadraticPaths, TrainRun
from lab.koala.training import DigitsSettings, as_settings, train_digits

__all__ = [
    "METHODS",
    "run_quadratic",
    "quadratic_paths",
    "tracking_error",
    "covariance_replay",
    "first_nonpositive_s",
    "final_accuracies",
    "seed_runs",
    "OFFICIAL_FIXTURE",
    "official_parity",
    "MLP_1M9",
    "StepTimes",
    "step_times",
    "state_floats",
]

# ---------------------------------------------------------------------------------------------
# The noisy quadratic (notebook 1)
# ---------------------------------------------------------------------------------------------

METHODS = ("ekf", "koalapp", "koalapp_vanilla", "koalav", "adam")


def run_quadratic(
    problem: NoisyQuadratic,
    method: str,
    *,
    steps: int = 60,
    lr: float = 1.0,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: float = 0.5,
    adam_lr: float = 0.3,
    theta0: Any = None,
) -> dict[str, np.ndarray]:
    """Run one method on a `NoisyQuadratic` and return its trajectory.

    ``method`` is one of ``"ekf"`` (full covariance, phantom start), ``"koalapp"``,
    ``"koalapp_vanilla"``, ``"koalav"`` or ``"adam"`` (learning rate ``adam_lr``). The dict has
    ``theta`` (steps+1, n) and ``loss`` (steps+1,) the noise-free loss along the path.

    See: book/koala/01-kalman-view.ipynb
    """
    if not isinstance(problem, NoisyQuadratic):
        raise TypeError(f"problem must be a NoisyQuadratic (got {type(problem).__name__})")
    method = check_choice("method", method, METHODS)
    steps = check_int("steps", steps, 1, problem.max_steps)
    theta0 = (
        problem.start() if theta0 is None else check_array("theta0", theta0, shape=(problem.n,))
    )
    f, g = problem.loss, problem.grad
    if method == "ekf":
        out = ekf_full(theta0, f, g, sigma0, q, r, steps, lr=lr, phantom=True)
    elif method in ("koalapp", "koalapp_vanilla"):
        out = koalapp(
            theta0,
            f,
            g,
            steps=steps,
            lr=lr,
            sigma0=sigma0,
            q=q,
            r=r,
            symmetric=method == "koalapp",
        )
    elif method == "koalav":
        out = koalav(theta0, f, g, steps=steps, lr=lr, sigma0=sigma0, q=q, r=r)
    else:
        out = adam(theta0, g, steps=steps, lr=adam_lr)
    out = dict(out)
    out["mean_loss"] = problem.mean_loss(out["theta"])
    return out


@memo(maxsize=256)
def quadratic_paths(
    kappa: float = 100.0,
    noise: float = 0.1,
    q: float = 0.1,
    r: float = 0.5,
    sigma0: float = 0.1,
    steps: int = 40,
) -> QuadraticPaths:
    """EKF / KOALA++ / KOALA-V / Adam on a 2-D `NoisyQuadratic` with condition number
    ``kappa`` (seed 0), memoised on the arguments (the quadratic widget's driver).

    See: book/koala/01-kalman-view.ipynb
    """
    kappa = check_range("kappa", kappa, 1.0, 1e6)
    noise = check_positive("noise", noise, allow_zero=True)
    steps = check_int("steps", steps, 1, 2000)
    prob = NoisyQuadratic(n=2, kappa=kappa, noise=noise, seed=0, max_steps=max(steps, 10))
    runs: dict[str, dict[str, np.ndarray] | None] = {}
    for m in PATH_METHODS:
        try:
            runs[m] = run_quadratic(
                prob, m, steps=steps, sigma0=float(sigma0), q=float(q), r=float(r)
            )
        except FloatingPointError:  # the KOALA++ closure lost positivity: show no path
            runs[m] = None
    return QuadraticPaths(prob, runs, float(kappa), float(noise), int(steps))


def _trajectory(name: str, run: Any) -> np.ndarray:
    if not isinstance(run, Mapping):
        raise TypeError(
            f"{name} must be a run dict with a 'theta' array, as run_quadratic returns "
            f"(got {type(run).__name__})"
        )
    if "theta" not in run:
        raise ValueError(f"{name} has no 'theta' entry (keys: {sorted(run)})")
    return check_array(f"{name}['theta']", run["theta"], ndim=2, min_size=1)


def tracking_error(run: dict, reference: dict) -> np.ndarray:
    """``||theta_k - theta_k^ref|| / ||theta_0||`` along two trajectories of equal length.

    Parameters
    ----------
    run, reference : dict
        Runs as `run_quadratic` returns them (their ``theta`` arrays, (steps+1, n), are used).

    Returns
    -------
    array (steps+1,)
        The distance at each step, relative to the norm of the reference's start.

    See: book/koala/01-kalman-view.ipynb
    """
    a = _trajectory("run", run)
    b = _trajectory("reference", reference)
    if b.shape != a.shape:
        raise ValueError(
            f"run and reference must have trajectories of one shape (got {a.shape}, {b.shape})"
        )
    return np.linalg.norm(a - b, axis=1) / max(np.linalg.norm(b[0]), 1e-300)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def covariance_replay(
    problem: NoisyQuadratic,
    *,
    steps: int = 60,
    sigma0: float = 0.1,
    q: float = 0.1,
    r: float = 0.5,
) -> dict[str, np.ndarray]:
    """How well KOALA++ and KOALA-V reproduce the EKF's ``H_k P_hat_k`` on the same gradients.

    The full EKF runs on ``problem``; its gradients ``H_k`` are then *replayed* to KOALA++
    (symmetric and vanilla) and KOALA-V, so all filters see identical measurements and only
    the covariance model differs. Returned, per step: ``rel_*`` the relative error
    ``||g_k - g_k^EKF|| / ||g_k^EKF||`` of ``g_k = H_k P_hat_k`` (KOALA-V: ``(sigma + Q) H_k``),
    and ``angle_*`` the angle in degrees between the step directions.

    See: book/koala/01-kalman-view.ipynb
    """
    if not isinstance(problem, NoisyQuadratic):
        raise TypeError(f"problem must be a NoisyQuadratic (got {type(problem).__name__})")
    steps = check_int("steps", steps, 1, problem.max_steps)
    th0 = problem.start()
    ekf = ekf_full(th0, problem.loss, problem.grad, sigma0, q, r, steps)
    Hs = np.array([problem.grad(ekf["theta"][k - 1], k) for k in range(1, steps + 1)])
    g_true = ekf["v_true"] + q * Hs  # H_k P_hat_k of the full filter

    def replay_h(theta, k):
        return Hs[k - 1]

    def no_loss(theta, k):  # L = 0: the filters do not move, only their covariance evolves
        return 0.0

    out: dict[str, np.ndarray] = {}
    for name, sym in (("koalapp", True), ("koalapp_vanilla", False)):
        kp = koalapp(th0, no_loss, replay_h, steps=steps, sigma0=sigma0, q=q, r=r, symmetric=sym)
        out[f"rel_{name}"] = np.linalg.norm(kp["g"] - g_true, axis=1) / np.linalg.norm(
            g_true, axis=1
        )
        out[f"angle_{name}"] = _angle_deg(kp["g"], g_true)
    kv = koalav(th0, no_loss, replay_h, steps=steps, sigma0=sigma0, q=q, r=r)
    g_v = (kv["sigma"][:-1] + q)[:, None] * Hs
    out["rel_koalav"] = np.linalg.norm(g_v - g_true, axis=1) / np.linalg.norm(g_true, axis=1)
    out["angle_koalav"] = _angle_deg(g_v, g_true)
    return out


def first_nonpositive_s(
    problem: NoisyQuadratic,
    *,
    steps: int = 40,
    sigma0: float = 1.0,
    q: float = 1e-3,
    r: float = 0.5,
) -> int | None:
    """The first step at which KOALA++'s ``S_k <= 0`` on ``problem`` (where `koalapp` raises:
    the closure lost positive definiteness), or None if it runs ``steps`` steps.

    See: book/koala/01-kalman-view.ipynb
    """
    if not isinstance(problem, NoisyQuadratic):
        raise TypeError(f"problem must be a NoisyQuadratic (got {type(problem).__name__})")
    steps = check_int("steps", steps, 1, problem.max_steps)

    def fails(k: int) -> bool:
        try:
            koalapp(problem.start(), problem.loss, problem.grad, steps=k, sigma0=sigma0, q=q, r=r)
        except FloatingPointError:
            return True
        return False

    if not fails(steps):
        return None
    lo, hi = 0, steps  # runs of lo steps pass, runs of hi steps fail: bisect the first failure
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fails(mid) else (mid, hi)
    return hi


# ---------------------------------------------------------------------------------------------
# Digits MLP (notebook 2): seeds and step times (the training loop is in training.py)
# ---------------------------------------------------------------------------------------------


def seed_runs(
    settings: Any = "koalapp",
    seeds: Any = (0, 1, 2),
    *,
    device=None,
    known: Mapping[int, TrainRun] | None = None,
    batched: bool = False,
    **changes: Any,
) -> list[TrainRun]:
    """`train_digits` runs of one setting, one per seed (the same seeds pair two optimizers).

    Parameters
    ----------
    settings : DigitsSettings or str
        The runs' settings, or an optimizer name from ``OPTIMIZERS`` (then ``**changes`` are
        the other `DigitsSettings` fields: ``epochs``, ``lr``, ``q``, ``r``...).
    seeds : sequence of int
        Seeds (split, initialisation and batch order all change with the seed).
    device : str or torch.device, optional
        As in `train_digits`.
    known : dict, optional
        ``{seed: TrainRun}`` already trained with these settings (not re-run).
    batched : bool
        Train all seeds at once (``batched.train_digits_seeds``: the networks of every seed
        stacked, the same runs to rounding, a fraction of the time for many seeds); no
        ``known``.

    Returns
    -------
    list of TrainRun
        One per seed, in the order of ``seeds``.

    See: book/koala/02-training-digits.ipynb
    """
    s = as_settings(settings, changes)
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers (got {seeds!r})")
    seeds = [check_int("seeds[i]", x, 0) for x in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    if batched is not False and batched is not True:
        raise TypeError(f"batched must be a bool (got {type(batched).__name__})")
    if batched:
        if known:
            raise ValueError("known runs cannot be mixed into a batched run (batched=True)")
        return train_digits_seeds(s, seeds, device=device)
    known = {} if known is None else dict(known)
    return [known[x] if x in known else train_digits(s, seed=x, device=device) for x in seeds]


def final_accuracies(
    optimizers: Any = ("sgd", "adam", "koalav", "koalapp"),
    seeds: Any = (0, 1, 2),
    *,
    epochs: int = 10,
    device=None,
    known: Mapping[tuple[str, int], TrainRun] | None = None,
) -> dict[str, np.ndarray]:
    """Final test accuracy of `train_digits` per optimizer and seed (defaults otherwise).

    Parameters
    ----------
    optimizers : sequence of str
        Names from ``OPTIMIZERS``.
    seeds : sequence of int
        Seeds (split, initialisation and batch order all change with the seed).
    epochs : int
        Epochs per run.
    device : str or torch.device, optional
        As in `train_digits`.
    known : dict, optional
        ``{(optimizer, seed): TrainRun}`` already trained with these settings (not re-run).

    Returns
    -------
    dict
        ``optimizer -> array (len(seeds),)`` of final test accuracies.

    See: book/koala/02-training-digits.ipynb
    """
    if isinstance(optimizers, str) or not hasattr(optimizers, "__iter__"):
        raise TypeError(f"optimizers must be a sequence of names (got {optimizers!r})")
    optimizers = list(optimizers)  # each name is checked by DigitsSettings
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers (got {seeds!r})")
    if not optimizers:
        raise ValueError("optimizers and seeds must not be empty")
    known = {} if known is None else dict(known)
    settings = {name: DigitsSettings(name, epochs=epochs) for name in optimizers}

    def final_accuracy(optimizer: str, seed: int) -> float:
        run = known.get((optimizer, seed))
        if run is None:
            run = train_digits(settings[optimizer], seed=seed, device=device)
        return float(run.test_acc[-1])

    runs = sweep(final_accuracy, {"optimizer": optimizers}, seeds, desc="final accuracies")
    return {name: runs.values("value", optimizer=name) for name in optimizers}


# ---------------------------------------------------------------------------------------------
# Parity with the authors' code
# ---------------------------------------------------------------------------------------------

#: outputs of the authors' ``KOALAPlusPlus.update`` / ``VanillaKOALA.update`` on a small shared
#: instance, with their provenance (package data: notebook 1 reads it outside a checkout too)
OFFICIAL_FIXTURE = official_fixture("koala_official.json")


def official_parity(path: str | Path | None = None) -> dict[str, np.ndarray]:
    """Run `KoalaPP` / `KoalaV` on the instance of the official-code fixture, step for step.

    The fixture holds a tanh MLP 5-4-3, its data and initial weights, and the parameters after
    each step of the authors' optimizers (float64), fed as their training loop feeds them
    (``update(loss_mean, mean(per_sample ** 2))``). Ours gets the same batches.

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).

    Returns
    -------
    dict
        ``case name -> array (steps,)``: the largest ``|theta_ours - theta_official|`` after each
        step. Case names: ``"KOALAPlusPlus symmetric wd=0"``, ..., ``"VanillaKOALA wd=0"``.

    See: book/koala/01-kalman-view.ipynb
    """

    import torch

    from lab.core.fixtures import load_fixture
    from lab.koala.optim import KoalaPP, KoalaV

    data = load_fixture(path, OFFICIAL_FIXTURE)
    inst = data["instance"]
    X = torch.tensor(inst["X"], dtype=torch.float64)
    y = torch.tensor(inst["y"])
    shapes = [(4, 5), (4,), (3, 4), (3,)]
    out = {}
    for case in data["cases"]:
        ps = [
            torch.nn.Parameter(torch.tensor(a, dtype=torch.float64).reshape(s))
            for a, s in zip(inst["init"], shapes, strict=True)
        ]
        common = dict(lr=case["lr"], sigma0=case["sigma"], q=case["q"], alpha_r=case["alpha_r"])
        common["weight_decay"] = case["weight_decay"]
        if case["optimizer"] == "KOALAPlusPlus":
            opt = KoalaPP(ps, symmetric=case["is_symmetric"], **common)
            name = "symmetric" if case["is_symmetric"] else "vanilla"
            name = f"KOALAPlusPlus {name} wd={case['weight_decay']:g}"
        else:
            opt = KoalaV(ps, **common)
            name = f"VanillaKOALA wd={case['weight_decay']:g}"
        errors = []
        for k, ref in enumerate(case["params"]):
            i0 = (k * inst["batch"]) % len(y)
            w1, b1, w2, b2 = ps
            logits = torch.tanh(X[i0 : i0 + inst["batch"]] @ w1.T + b1) @ w2.T + b2
            per_sample = torch.nn.functional.cross_entropy(
                logits, y[i0 : i0 + inst["batch"]], reduction="none"
            )
            opt.zero_grad()
            per_sample.mean().backward()
            opt.step_with_loss(per_sample.mean().detach(), (per_sample.detach() ** 2).mean())
            ref = ref["params"] if isinstance(ref, dict) else ref
            ours = torch.cat([p.detach().ravel() for p in ps]).numpy()
            errors.append(float(np.max(np.abs(ours - np.concatenate(ref)))))
        out[name] = np.array(errors)
    return out


#: the benchmark's 1.9M-weight MLP 784-1024-1024-10 (large layers: the step is memory-bound)
MLP_1M9 = ((1024, 784), (1024,), (1024, 1024), (1024,), (10, 1024), (10,))


@dataclass
class StepTimes:
    """Seconds per ``optimizer.step`` (median over blocks) for one list of tensor shapes.

    See: book/koala/02-training-digits.ipynb
    """

    shapes: tuple
    parameters: int
    seconds: dict[str, float]

    def ratio(self, name: str, to: str = "adam") -> float:
        """``seconds[name] / seconds[to]``."""
        return self.seconds[name] / self.seconds[to]


def step_times(
    shapes: Any = MLP_1M9,
    *,
    optimizers: Any = ("adam", "koalapp"),
    blocks: int = 5,
    steps: int = 5,
    seed: int = 0,
    device=None,
) -> StepTimes:
    """Time the optimizer step alone on fixed random gradients (as ``benchmarks/bench_koala.py``).

    Each optimizer gets parameters of the given shapes (float32) with fixed gradients; after one
    warm-up block, ``blocks`` blocks of ``steps`` steps are timed and the median per step is kept.
    ``"adam"`` is ``torch.optim.Adam`` with its defaults (on CPU its single-tensor loop),
    ``"adam_foreach"`` the same with ``foreach=True``, ``"sgd"`` SGD with momentum 0.9,
    ``"koalapp"`` / ``"koalav"`` the lab optimizers (loss 0.5, fixed ``r = 1``), ``"ekf"`` the
    full-covariance EKF step that KOALA++ approximates (one dense ``n x n`` ``P`` per tensor:
    tensors of at most 8,192 entries). On CPU one torch thread is used.

    Returns
    -------
    StepTimes

    See: book/koala/02-training-digits.ipynb
    """

    from lab.core.runtime import resolve_device, small_problem_threads

    if isinstance(shapes, str) or not hasattr(shapes, "__iter__"):
        raise TypeError(f"shapes must be a sequence of tensor shapes (got {shapes!r})")
    shapes = tuple(tuple(check_int("shape entry", d, 1) for d in s) for s in shapes)
    if not shapes:
        raise ValueError("shapes must not be empty")
    if isinstance(optimizers, str) or not hasattr(optimizers, "__iter__"):
        raise TypeError(f"optimizers must be a sequence of names (got {optimizers!r})")
    names = ("adam", "adam_foreach", "sgd", "koalav", "koalapp", "ekf")
    optimizers = [check_choice("optimizers[i]", o, names) for o in optimizers]
    if "ekf" in optimizers and max(int(np.prod(s)) for s in shapes) > 8192:
        raise ValueError(
            "optimizers: 'ekf' keeps a dense n x n covariance per tensor; tensors of at most "
            f"8,192 entries (got {max(int(np.prod(s)) for s in shapes)})"
        )
    blocks = check_int("blocks", blocks, 1, 1000)
    steps = check_int("steps", steps, 1, 100_000)
    seed = check_int("seed", seed, 0)
    dev = resolve_device(device)
    threads = small_problem_threads(1) if dev.type == "cpu" else contextlib.nullcontext()
    with threads:
        seconds = {
            name: _time_step(name, shapes, (blocks, steps), seed, dev) for name in optimizers
        }
    n = int(sum(np.prod(s) for s in shapes))
    return StepTimes(shapes=shapes, parameters=n, seconds=seconds)


def _dense_ekf_step(params, dev):
    """eq. (koala-ekf) per tensor, with a dense covariance ``P`` per tensor (``n x n``)."""
    import torch

    covs = [0.1 * torch.eye(p.numel(), device=dev) for p in params]

    def step():
        with torch.no_grad():
            for p, P in zip(params, covs, strict=True):
                h = p.grad.reshape(-1)
                P.diagonal().add_(0.1)  # P_hat = P + Q I
                g = P @ h  # P_hat H^T
                s = h @ g + 1.0  # S = H P_hat H^T + R
                p.sub_((1e-6 * 0.5 / s * g).reshape(p.shape))
                P.sub_(torch.outer(g, g) / s)  # P = P_hat - K H P_hat

    return step


def _step_of(name: str, params, dev):
    import torch

    from lab.koala.optim import KoalaPP, KoalaV

    if name in ("adam", "adam_foreach"):
        return torch.optim.Adam(params, lr=1e-6, foreach=name == "adam_foreach" or None).step
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-6, momentum=0.9).step
    if name == "ekf":
        return _dense_ekf_step(params, dev)
    loss = torch.tensor(0.5, device=dev)
    opt = (KoalaV if name == "koalav" else KoalaPP)(params, lr=1e-6, r=1.0)
    return lambda: opt.step_with_loss(loss)


def _time_step(name: str, shapes, blocks_steps, seed: int, dev) -> float:
    """Median seconds per step of optimizer ``name`` over ``blocks`` blocks of ``steps``."""
    import torch

    blocks, steps = blocks_steps
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(seed)
    params = []
    for s in shapes:
        p = torch.nn.Parameter(0.05 * torch.randn(s, generator=g).to(dev))
        p.grad = 0.01 * torch.randn(s, generator=g).to(dev)
        params.append(p)
    step = _step_of(name, params, dev)
    times = []
    for b in range(blocks + 1):
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        if b:  # block 0 warms up
            times.append((time.perf_counter() - t0) / steps)
    return float(np.median(times))


def state_floats(optimizer: Any) -> int:
    """The number of floats an optimizer keeps as state (every tensor in ``optimizer.state``).

    See: book/koala/02-training-digits.ipynb
    """
    import torch

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer (got {type(optimizer).__name__})"
        )
    total = 0
    for entry in optimizer.state.values():
        values = entry.values() if isinstance(entry, Mapping) else [entry]
        total += sum(v.numel() for v in values if isinstance(v, torch.Tensor))
    return int(total)
