"""Training the digits MLP of notebook 2 with one optimizer: `train_digits` and `TrainRun`.

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.runtime import smoke_steps

__all__ = ["OPTIMIZERS", "DEFAULT_LR", "DEFAULT_SETTINGS", "TrainRun", "train_digits"]


OPTIMIZERS = ("sgd", "adam", "koalav", "koalapp", "koalapp_vanilla")

#: default settings per optimizer. SGD-momentum and Adam: learning rates tuned coarsely once on
#: seed 0, then frozen. KOALA-V and KOALA++: the authors' CIFAR settings
#: (``Task1_Image_Classification/train.py`` of ``Sumxiaa/KOALA_Plus_Plus``: KOALA-V lr 0.1,
#: sigma 0.1, q 1; KOALA++ lr 1, sigma 0.1, q 0.1; both weight decay 5e-4).
DEFAULT_SETTINGS = {
    "sgd": {"lr": 0.1, "momentum": 0.9},
    "adam": {"lr": 3e-3},
    "koalav": {"lr": 0.1, "sigma0": 0.1, "q": 1.0, "weight_decay": 5e-4},
    "koalapp": {"lr": 1.0, "sigma0": 0.1, "q": 0.1, "weight_decay": 5e-4},
    "koalapp_vanilla": {"lr": 1.0, "sigma0": 0.1, "q": 0.1, "weight_decay": 5e-4},
}
#: default learning rate per optimizer (``DEFAULT_SETTINGS[name]["lr"]``)
DEFAULT_LR = {name: hp["lr"] for name, hp in DEFAULT_SETTINGS.items()}


@dataclass
class TrainRun:
    """One training run on digits: per-epoch curves and timings.

    ``train_loss`` and ``test_acc`` have one entry per epoch (index 0 is before training);
    ``step_time`` is the mean seconds of ``optimizer.step`` alone, ``iter_time`` of the whole
    iteration (forward, backward, step); ``step_size`` the mean per-layer ``||dtheta|| / ||H||``
    per epoch (one row per epoch, one column per parameter tensor).

    See: book/koala/02-training-digits.ipynb
    """

    optimizer: str
    lr: float
    train_loss: np.ndarray
    test_acc: np.ndarray
    step_time: float
    iter_time: float
    step_size: np.ndarray
    steps: int
    wall: float
    finite: bool = True

    def epochs_to(self, accuracy: float) -> int | None:
        """First epoch whose test accuracy reaches ``accuracy`` (None if never)."""
        hit = np.nonzero(self.test_acc >= accuracy)[0]
        return int(hit[0]) if hit.size else None

    def time_to(self, accuracy: float) -> float | None:
        """Seconds of training (iterations only) until ``accuracy`` is first reached."""
        e = self.epochs_to(accuracy)
        if e is None:
            return None
        return e * (self.steps / max(len(self.test_acc) - 1, 1)) * self.iter_time


def _make_optimizer(name: str, params, lr: float, hp: dict):
    import torch

    from lab.koala.optim import KoalaPP, KoalaV

    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=hp["momentum"])
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "koalav":
        return KoalaV(
            params,
            lr=lr,
            sigma0=hp["sigma0"],
            q=hp["q"],
            r=hp["r"],
            weight_decay=hp["weight_decay"],
        )
    return KoalaPP(
        params,
        lr=lr,
        sigma0=hp["sigma0"],
        q=hp["q"],
        r=hp["r"],
        weight_decay=hp["weight_decay"],
        symmetric=name == "koalapp",
    )


def train_digits(
    optimizer: str = "koalapp",
    *,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float | None = None,
    sigma0: float | None = None,
    q: float | None = None,
    r: float | None = None,
    weight_decay: float | None = None,
    momentum: float | None = None,
    lr_drop_epoch: int | None = None,
    lr_drop_factor: float = 0.1,
    hidden: int = 64,
    seed: int = 0,
    device=None,
    dtype: str = "float32",
) -> TrainRun:
    """Train a 64-``hidden``-10 tanh MLP on scikit-learn digits with one optimizer.

    Parameters
    ----------
    optimizer : {"sgd", "adam", "koalav", "koalapp", "koalapp_vanilla"}
        SGD with momentum 0.9, ``torch.optim.Adam``, `KoalaV`, `KoalaPP` (symmetric) or
        `KoalaPP` (vanilla closure).
    epochs, batch_size : int
        Passes over the 1348 training images, mini-batch size.
    lr : float, optional
        Learning rate (default: ``DEFAULT_LR[optimizer]``).
    sigma0, q, r, weight_decay : float, optional
        KOALA hyperparameters (``r=None``: EMA of the mean squared per-sample loss); ``None``
        takes ``DEFAULT_SETTINGS[optimizer]`` (the authors' settings; ``weight_decay`` is 0
        for SGD and Adam).
    momentum : float, optional
        SGD's momentum in ``[0, 1)`` (default 0.9; 0 is plain SGD); only for ``"sgd"``.
    lr_drop_epoch : int, optional
        Multiply the learning rate by ``lr_drop_factor`` from this epoch on.
    hidden : int
        Hidden width.
    seed : int
        Seeds the split, the initialisation and the batch order.
    device : torch.device or str, optional
        Default ``lab.device()``.
    dtype : {"float32", "float64"}
        Parameter dtype.

    Returns
    -------
    TrainRun

    See: book/koala/02-training-digits.ipynb
    """
    import torch

    from lab.core.runtime import resolve_device

    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    epochs = check_int("epochs", epochs, 1, 10_000)
    batch_size = check_int("batch_size", batch_size, 1, 100_000)
    lr = DEFAULT_LR[optimizer] if lr is None else check_positive("lr", lr)
    base = {"sigma0": 0.1, "q": 0.1, "weight_decay": 0.0, "momentum": 0.9}
    base.update({k: v for k, v in DEFAULT_SETTINGS[optimizer].items() if k != "lr"})
    given = {"sigma0": sigma0, "q": q, "weight_decay": weight_decay}
    hp = {
        k: check_positive(k, base[k] if v is None else v, allow_zero=True) for k, v in given.items()
    }
    hp["r"] = None if r is None else check_positive("r", r, allow_zero=True)
    if momentum is not None and optimizer != "sgd":
        raise ValueError(f"momentum is SGD's only, got momentum={momentum!r} for {optimizer!r}")
    hp["momentum"] = check_range(
        "momentum",
        base["momentum"] if momentum is None else momentum,
        0.0,
        1.0,
        high_inclusive=False,
    )
    if lr_drop_epoch is not None:
        lr_drop_epoch = check_int("lr_drop_epoch", lr_drop_epoch, 1, epochs)
    lr_drop_factor = check_range("lr_drop_factor", lr_drop_factor, 0.0, 1.0, low_inclusive=False)
    hidden = check_int("hidden", hidden, 1, 100_000)
    seed = check_int("seed", seed, 0)
    dtype = check_choice("dtype", dtype, ("float32", "float64"))
    dev = resolve_device(device)
    tdtype = getattr(torch, dtype)

    # one thread on the CPU: per-op overhead dominates at this size
    from contextlib import nullcontext

    from lab.core.runtime import small_problem_threads

    with small_problem_threads(1) if dev.type == "cpu" else nullcontext():
        return _train_digits(
            optimizer,
            epochs,
            batch_size,
            lr,
            hp,
            lr_drop_epoch,
            lr_drop_factor,
            hidden,
            seed,
            dev,
            tdtype,
        )


def _train_digits(
    optimizer, epochs, batch_size, lr, hp, lr_drop_epoch, lr_drop_factor, hidden, seed, dev, tdtype
) -> TrainRun:
    import torch

    from lab.core.data import digits

    Xtr, ytr, Xte, yte = digits(test_size=0.25, seed=seed)  # standardised with train rows only
    Xtr = torch.as_tensor(Xtr, dtype=tdtype, device=dev)
    Xte = torch.as_tensor(Xte, dtype=tdtype, device=dev)
    ytr = torch.as_tensor(ytr, device=dev)
    yte = torch.as_tensor(yte, device=dev)
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # seed the initialisation, not the caller's RNG
        torch.manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 10)
        ).to(device=dev, dtype=tdtype)
    params = list(model.parameters())
    opt = _make_optimizer(optimizer, params, lr, hp)
    is_koala = optimizer.startswith("koala")
    crit = torch.nn.CrossEntropyLoss(reduction="none")

    def evaluate():
        with torch.no_grad():
            loss = crit(model(Xtr), ytr).mean().item()
            acc = (model(Xte).argmax(1) == yte).float().mean().item()
        return loss, acc

    l0, a0 = evaluate()
    losses, accs, sizes = [l0], [a0], []
    step_t = iter_t = 0.0
    n_steps = 0
    finite = True
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    t_start = time.perf_counter()
    rows = smoke_steps(len(ytr), small=3 * batch_size)  # LAB_SMOKE=1: three batches an epoch
    for epoch in range(1, epochs + 1):
        if lr_drop_epoch is not None and epoch == lr_drop_epoch:
            for grp in opt.param_groups:
                grp["lr"] = lr * lr_drop_factor
        perm = torch.randperm(len(ytr), generator=g).to(dev)
        ratio = np.zeros(len(params))
        nb = 0
        for i in range(0, rows, batch_size):
            idx = perm[i : i + batch_size]
            before = [p.detach().clone() for p in params]
            sync()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            per_sample = crit(model(Xtr[idx]), ytr[idx])
            loss = per_sample.mean()
            loss.backward()
            sync()
            t1 = time.perf_counter()
            if is_koala:
                opt.step_with_loss(loss.detach(), (per_sample.detach() ** 2).mean())
            else:
                opt.step()
            sync()
            t2 = time.perf_counter()
            step_t += t2 - t1
            iter_t += t2 - t0
            n_steps += 1
            with torch.no_grad():
                for j, (p, b) in enumerate(zip(params, before, strict=True)):
                    gn = float(p.grad.norm()) if p.grad is not None else 0.0
                    ratio[j] += float((p - b).norm()) / max(gn, 1e-12)
            nb += 1
        sizes.append(ratio / nb)
        lo, ac = evaluate()
        if not math.isfinite(lo):
            finite = False
        losses.append(lo)
        accs.append(ac)
    return TrainRun(
        optimizer=optimizer,
        lr=lr,
        train_loss=np.array(losses),
        test_acc=np.array(accs),
        step_time=step_t / n_steps,
        iter_time=iter_t / n_steps,
        step_size=np.array(sizes),
        steps=n_steps,
        wall=time.perf_counter() - t_start,
        finite=finite,
    )
