"""Training the digits MLP of notebook 2 with one optimizer: `DigitsSettings` (one frozen,
validated settings object) and `train_digits` (one seed; many seeds in one batch are
``batched.train_digits_seeds``).

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.memo import memo
from lab.core.runtime import smoke_steps
from lab.koala.results import TrainRun

__all__ = [
    "OPTIMIZERS",
    "DEFAULT_LR",
    "DEFAULT_SETTINGS",
    "DigitsSettings",
    "TrainRun",
    "train_digits",
]


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


@dataclass(frozen=True)
class DigitsSettings:
    """The settings of one digits training run (a 64-``hidden``-10 tanh MLP on scikit-learn
    digits), checked once when made.

    Parameters
    ----------
    optimizer : {"sgd", "adam", "koalav", "koalapp", "koalapp_vanilla"}
        SGD with momentum, ``torch.optim.Adam``, `KoalaV`, `KoalaPP` (symmetric) or `KoalaPP`
        (vanilla closure).
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
    dtype : {"float32", "float64"}
        Parameter dtype.

    ``resolved()`` fills every default in (two settings that train the same run compare equal
    after it).

    See: book/koala/02-training-digits.ipynb
    """

    optimizer: str = "koalapp"
    epochs: int = 10
    batch_size: int = 64
    lr: float | None = None
    sigma0: float | None = None
    q: float | None = None
    r: float | None = None
    weight_decay: float | None = None
    momentum: float | None = None
    lr_drop_epoch: int | None = None
    lr_drop_factor: float = 0.1
    hidden: int = 64
    dtype: str = "float32"

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "optimizer", check_choice("optimizer", self.optimizer, OPTIMIZERS))
        put(self, "epochs", check_int("epochs", self.epochs, 1, 10_000))
        put(self, "batch_size", check_int("batch_size", self.batch_size, 1, 100_000))
        if self.lr is not None:
            put(self, "lr", check_positive("lr", self.lr))
        for k in ("sigma0", "q", "r", "weight_decay"):
            if getattr(self, k) is not None:
                put(self, k, check_positive(k, getattr(self, k), allow_zero=True))
        if self.momentum is not None:
            if self.optimizer != "sgd":
                raise ValueError(
                    f"momentum is SGD's only, got momentum={self.momentum!r} for {self.optimizer!r}"
                )
            m = check_range("momentum", self.momentum, 0.0, 1.0, high_inclusive=False)
            put(self, "momentum", m)
        if self.lr_drop_epoch is not None:
            put(
                self,
                "lr_drop_epoch",
                check_int("lr_drop_epoch", self.lr_drop_epoch, 1, self.epochs),
            )
        f = check_range("lr_drop_factor", self.lr_drop_factor, 0.0, 1.0, low_inclusive=False)
        put(self, "lr_drop_factor", f)
        put(self, "hidden", check_int("hidden", self.hidden, 1, 100_000))
        put(self, "dtype", check_choice("dtype", self.dtype, ("float32", "float64")))

    def resolved(self) -> DigitsSettings:
        """These settings with ``DEFAULT_SETTINGS[optimizer]`` filled in for every ``None``
        (``r`` stays ``None``: the online estimate)."""
        base = {"sigma0": 0.1, "q": 0.1, "weight_decay": 0.0, "momentum": 0.9}
        base.update(DEFAULT_SETTINGS[self.optimizer])
        fill = {k: v for k, v in base.items() if getattr(self, k) is None}
        if self.optimizer != "sgd":
            fill.pop("momentum", None)
        return replace(self, **fill) if fill else self

    @property
    def hp(self) -> dict:
        """The optimizer's settings (``sigma0, q, r, weight_decay, momentum``), defaults in."""
        s = self.resolved()
        m = 0.9 if s.momentum is None else s.momentum
        return dict(sigma0=s.sigma0, q=s.q, r=s.r, weight_decay=s.weight_decay, momentum=m)


def as_settings(settings, changes: dict) -> DigitsSettings:
    """``settings`` as a `DigitsSettings`: an optimizer name and ``changes`` build one."""
    if isinstance(settings, DigitsSettings):
        if changes:
            raise TypeError(
                f"settings: pass a DigitsSettings or an optimizer name with keyword settings, "
                f"not both (got {sorted(changes)})"
            )
        return settings
    if isinstance(settings, str):
        return DigitsSettings(settings, **changes)
    raise TypeError(
        f"settings must be a DigitsSettings or an optimizer name (got {type(settings).__name__})"
    )


def make_optimizer(s: DigitsSettings, params):
    import torch

    from lab.koala.optim import KoalaPP, KoalaV

    hp = s.hp
    if s.optimizer == "sgd":
        return torch.optim.SGD(params, lr=s.lr, momentum=hp["momentum"])
    if s.optimizer == "adam":
        return torch.optim.Adam(params, lr=s.lr)
    kw = dict(lr=s.lr, sigma0=hp["sigma0"], q=hp["q"], r=hp["r"], weight_decay=hp["weight_decay"])
    if s.optimizer == "koalav":
        return KoalaV(params, **kw)
    return KoalaPP(params, symmetric=s.optimizer == "koalapp", **kw)


def train_digits(settings="koalapp", *, seed: int = 0, device=None, **changes) -> TrainRun:
    """Train a 64-``hidden``-10 tanh MLP on scikit-learn digits with one optimizer.

    Parameters
    ----------
    settings : DigitsSettings or str
        The run's settings, or an optimizer name (then ``**changes`` are the other
        `DigitsSettings` fields: ``train_digits("sgd", epochs=3)``).
    seed : int
        Seeds the split, the initialisation and the batch order.
    device : torch.device or str, optional
        Default ``lab.device()``.

    Returns
    -------
    TrainRun
        Memoised on the resolved settings, the seed and the device (in process).

    See: book/koala/02-training-digits.ipynb
    """
    from lab.core.runtime import resolve_device

    s = as_settings(settings, changes).resolved()
    seed = check_int("seed", seed, 0)
    return _train_digits(s, seed, resolve_device(device))


@memo(maxsize=64)
def _train_digits(s: DigitsSettings, seed: int, dev) -> TrainRun:
    from contextlib import nullcontext

    from lab.core.runtime import small_problem_threads

    # one thread on the CPU: per-op overhead dominates at this size
    with small_problem_threads(1) if dev.type == "cpu" else nullcontext():
        return _train_one(s, seed, dev)


def _digits_tensors(seed: int, dev, tdtype):
    import torch

    from lab.core.data import digits

    Xtr, ytr, Xte, yte = digits(test_size=0.25, seed=seed)  # standardised with train rows only
    Xtr = torch.as_tensor(Xtr, dtype=tdtype, device=dev)
    Xte = torch.as_tensor(Xte, dtype=tdtype, device=dev)
    return Xtr, torch.as_tensor(ytr, device=dev), Xte, torch.as_tensor(yte, device=dev)


def _train_one(s: DigitsSettings, seed: int, dev) -> TrainRun:
    import torch

    tdtype = getattr(torch, s.dtype)
    Xtr, ytr, Xte, yte = _digits_tensors(seed, dev, tdtype)
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # seed the initialisation, not the caller's RNG
        torch.manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, s.hidden), torch.nn.Tanh(), torch.nn.Linear(s.hidden, 10)
        ).to(device=dev, dtype=tdtype)
    params = list(model.parameters())
    opt = make_optimizer(s, params)
    crit = torch.nn.CrossEntropyLoss(reduction="none")

    def evaluate():
        with torch.no_grad():
            loss = crit(model(Xtr), ytr).mean().item()
            acc = (model(Xte).argmax(1) == yte).float().mean().item()
        return loss, acc

    def batch_loss(idx):
        per_sample = crit(model(Xtr[idx]), ytr[idx])
        return per_sample.mean(), per_sample

    l0, a0 = evaluate()
    losses, accs, sizes = [l0], [a0], []
    clock = StepClock(dev)
    finite = True
    t_start = time.perf_counter()
    rows = smoke_steps(len(ytr), small=3 * s.batch_size)  # LAB_SMOKE=1: three batches an epoch
    for epoch in range(1, s.epochs + 1):
        if s.lr_drop_epoch is not None and epoch == s.lr_drop_epoch:
            for grp in opt.param_groups:
                grp["lr"] = s.lr * s.lr_drop_factor
        perm = torch.randperm(len(ytr), generator=g).to(dev)
        sizes.append(_epoch(s, opt, params, batch_loss, perm, rows, clock))
        lo, ac = evaluate()
        if not math.isfinite(lo):
            finite = False
        losses.append(lo)
        accs.append(ac)
    return TrainRun(
        optimizer=s.optimizer,
        lr=s.lr,
        train_loss=np.array(losses),
        test_acc=np.array(accs),
        step_time=clock.step / clock.n,
        iter_time=clock.iter / clock.n,
        step_size=np.array(sizes),
        steps=clock.n,
        wall=time.perf_counter() - t_start,
        finite=finite,
    )


class StepClock:
    """Seconds of the optimizer step and of the whole iteration, and the steps counted."""

    def __init__(self, dev):
        import torch

        self.sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        self.step = self.iter = 0.0
        self.n = 0

    def count(self, t0: float, t1: float, t2: float) -> None:
        """One iteration that started at ``t0`` and stepped from ``t1`` to ``t2``."""
        self.step += t2 - t1
        self.iter += t2 - t0
        self.n += 1


def _epoch(s: DigitsSettings, opt, params, batch_loss, perm, rows, clock: StepClock) -> np.ndarray:
    """One pass over the batches of ``perm``; returns the mean ``||dtheta|| / ||grad||`` per
    tensor."""
    import torch

    is_koala = s.optimizer.startswith("koala")
    ratio = np.zeros(len(params))
    nb = 0
    for i in range(0, rows, s.batch_size):
        idx = perm[i : i + s.batch_size]
        before = [p.detach().clone() for p in params]
        clock.sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss, per_sample = batch_loss(idx)
        loss.backward()
        clock.sync()
        t1 = time.perf_counter()
        if is_koala:
            opt.step_with_loss(loss.detach(), (per_sample.detach() ** 2).mean())
        else:
            opt.step()
        clock.sync()
        clock.count(t0, t1, time.perf_counter())
        with torch.no_grad():
            for j, (p, b) in enumerate(zip(params, before, strict=True)):
                gn = float(p.grad.norm()) if p.grad is not None else 0.0
                ratio[j] += float((p - b).norm()) / max(gn, 1e-12)
        nb += 1
    return ratio / nb
