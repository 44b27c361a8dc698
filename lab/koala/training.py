"""Training the digits MLP of notebook 2 with one optimizer: `train_digits` and `TrainRun`;
`train_digits_seeds`, the same runs for many seeds in one batch.

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
# train_digits_seeds (many seeds at once) is public through experiments.seed_runs(batched=True)


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
    from contextlib import nullcontext

    from lab.core.runtime import small_problem_threads

    a = _checked(optimizer, epochs, batch_size, lr, sigma0, q, r, weight_decay, momentum,
                 lr_drop_epoch, lr_drop_factor, hidden, device, dtype)  # fmt: skip
    seed = check_int("seed", seed, 0)
    # one thread on the CPU: per-op overhead dominates at this size
    with small_problem_threads(1) if a["dev"].type == "cpu" else nullcontext():
        return _train_digits(
            a["optimizer"], a["epochs"], a["batch_size"], a["lr"], a["hp"], a["lr_drop_epoch"],
            a["lr_drop_factor"], a["hidden"], seed, a["dev"], a["tdtype"],
        )  # fmt: skip


def _checked(optimizer, epochs, batch_size, lr, sigma0, q, r, weight_decay, momentum,
             lr_drop_epoch, lr_drop_factor, hidden, device, dtype) -> dict:  # fmt: skip
    """`train_digits`'s arguments checked, with the optimizer's settings filled in (``hp``)."""
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
    dtype = check_choice("dtype", dtype, ("float32", "float64"))
    return dict(optimizer=optimizer, epochs=epochs, batch_size=batch_size, lr=lr, hp=hp,
                lr_drop_epoch=lr_drop_epoch, lr_drop_factor=lr_drop_factor, hidden=hidden,
                dev=resolve_device(device), tdtype=getattr(torch, dtype))  # fmt: skip


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


def train_digits_seeds(
    optimizer: str,
    seeds,
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
    device=None,
    dtype: str = "float32",
) -> list[TrainRun]:
    """`train_digits` for many seeds at once: the networks of all seeds in one batch.

    Seed ``s`` gets what ``train_digits(optimizer, seed=s)`` gets (its split, initialisation
    and batch order) and the same optimizer, stepped for every seed in one call: the weights
    of all seeds are stacked (one ``(n_seeds, ...)`` tensor per layer, batched matrix
    products). SGD and Adam are ``torch.optim``'s on the stacked tensors (their updates are
    elementwise, so the seeds do not mix); KOALA++ and KOALA-V make `KoalaPP`'s and `KoalaV`'s
    step with a leading seed dimension (the per-tensor dot products, scalars and masks of
    ``koalapp_foreach_``'s sync-free path, one per seed; KOALA-V's scalar covariance one per
    seed). The runs agree with `train_digits` to rounding (sums in another order;
    ``tests/test_koala_optim.py`` checks float64). Timings are the batched step's, divided by
    the number of seeds.

    Parameters
    ----------
    optimizer : {"sgd", "adam", "koalav", "koalapp", "koalapp_vanilla"}
        As in `train_digits`.
    seeds : sequence of int
        Distinct seeds ``>= 0``.
    epochs, batch_size, lr, sigma0, q, r, weight_decay, momentum, lr_drop_epoch, lr_drop_factor
        As in `train_digits`.
    hidden, device, dtype
        As in `train_digits`.

    Returns
    -------
    list of TrainRun
        One per seed, in the order of ``seeds``.

    See: book/koala/02-training-digits.ipynb
    """
    from contextlib import nullcontext

    from lab.core.runtime import small_problem_threads

    a = _checked(optimizer, epochs, batch_size, lr, sigma0, q, r, weight_decay, momentum,
                 lr_drop_epoch, lr_drop_factor, hidden, device, dtype)  # fmt: skip
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers (got {seeds!r})")
    seeds = [check_int("seeds[i]", s, 0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be non-empty and distinct (got {seeds})")
    with small_problem_threads(1) if a["dev"].type == "cpu" else nullcontext():
        return _train_digits_seeds(seeds, **a)


def _train_digits_seeds(
    seeds, optimizer, epochs, batch_size, lr, hp, lr_drop_epoch, lr_drop_factor, hidden, dev, tdtype
):
    import torch

    from lab.core.data import digits

    n = len(seeds)
    splits = [tuple(digits(test_size=0.25, seed=s)) for s in seeds]
    Xtr, ytr, Xte, yte = (
        torch.stack([torch.as_tensor(sp[i]) for sp in splits]).to(dev)
        for i in range(4)  # (n, rows, 64) features and (n, rows) labels
    )
    Xtr, Xte = Xtr.to(tdtype), Xte.to(tdtype)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    seed_rows = torch.arange(n, device=dev).unsqueeze(1)  # row i of a batch index: seed i
    layers = []
    for s in seeds:  # each seed's initialisation, as train_digits draws it
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            a, b = torch.nn.Linear(64, hidden), torch.nn.Linear(hidden, 10)
        layers.append([a.weight, a.bias, b.weight, b.bias])
    params = [
        torch.stack([ls[j].detach() for ls in layers]).to(device=dev, dtype=tdtype).requires_grad_()
        for j in range(4)
    ]  # W1 (n, hidden, 64), b1 (n, hidden), W2 (n, 10, hidden), b2 (n, 10)
    W1, b1, W2, b2 = params
    crit = torch.nn.CrossEntropyLoss(reduction="none")

    def per_sample(X, y):  # (n, rows) losses of every seed's network
        h = torch.tanh(torch.baddbmm(b1.unsqueeze(1), X, W1.transpose(1, 2)))
        out = torch.baddbmm(b2.unsqueeze(1), h, W2.transpose(1, 2))
        return crit(out.reshape(-1, 10), y.reshape(-1)).view(y.shape), out

    def evaluate():
        with torch.no_grad():
            loss = per_sample(Xtr, ytr)[0].mean(1)
            acc = (per_sample(Xte, yte)[1].argmax(-1) == yte).to(tdtype).mean(1)
        return loss.double().cpu().numpy(), acc.double().cpu().numpy()

    cd = torch.float64 if tdtype == torch.float64 else torch.float32
    R = torch.ones(n, device=dev, dtype=cd)  # R_0 = 1 per seed (the EMA), or a fixed r
    sigma = torch.full((n,), hp["sigma0"], device=dev, dtype=cd)  # KOALA-V's P = sigma I
    states = [{} for _ in params]  # KOALA++: per tensor, its state for every seed
    opt = _make_optimizer(optimizer, params, lr, hp) if optimizer in ("sgd", "adam") else None
    step_lr = lr
    l0, a0 = evaluate()
    losses, accs, sizes = [l0], [a0], []
    step_t = iter_t = 0.0
    n_steps = 0
    rows = smoke_steps(Xtr.shape[1], small=3 * batch_size)
    t_start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        if lr_drop_epoch is not None and epoch == lr_drop_epoch:
            step_lr = lr * lr_drop_factor
            for grp in opt.param_groups if opt is not None else ():
                grp["lr"] = step_lr
        perm = torch.stack([torch.randperm(Xtr.shape[1], generator=g) for g in gens]).to(dev)
        ratio = torch.zeros(n, 4, dtype=torch.float64)
        nb = 0
        for i in range(0, rows, batch_size):
            idx = perm[:, i : i + batch_size]
            before = [p.detach().clone() for p in params]
            t0 = time.perf_counter()
            for p in params:
                p.grad = None
            ls = per_sample(Xtr[seed_rows, idx], ytr[seed_rows, idx])[0]
            ls.mean(1).sum().backward()  # each seed's mean loss; the seeds do not mix
            t1 = time.perf_counter()
            with torch.no_grad():
                loss = ls.detach().mean(1).to(cd)
                if opt is None and not bool(torch.isfinite(loss).all()):  # as KoalaPP/KoalaV
                    raise FloatingPointError(f"non-finite loss for {optimizer} (seeds {seeds})")
                if hp["r"] is None:  # EMA of the mean squared per-sample loss, per seed
                    R = 0.9 * R + 0.1 * (ls.detach() ** 2).mean(1).to(cd)
                else:
                    R = torch.full_like(R, hp["r"])
                if opt is not None:  # SGD, Adam: elementwise, one optimizer for every seed
                    opt.step()
                elif optimizer == "koalav":
                    sigma = _koalav_seeds_(params, sigma, loss, R, step_lr, hp)
                else:
                    _koalapp_seeds_(params, states, loss, R, step_lr, hp, optimizer == "koalapp")
            t2 = time.perf_counter()
            step_t += t2 - t1
            iter_t += t2 - t0
            n_steps += 1
            with torch.no_grad():
                for j, (p, b) in enumerate(zip(params, before, strict=True)):
                    dims = tuple(range(1, p.dim()))
                    gn = torch.linalg.vector_norm(p.grad, dim=dims).double().clamp_min(1e-12)
                    ratio[:, j] += (torch.linalg.vector_norm(p - b, dim=dims).double() / gn).cpu()
            nb += 1
        sizes.append((ratio / nb).numpy())
        lo, ac = evaluate()
        losses.append(lo)
        accs.append(ac)
    wall = time.perf_counter() - t_start
    losses, accs, sizes = np.stack(losses, 1), np.stack(accs, 1), np.stack(sizes, 1)
    return [
        TrainRun(
            optimizer=optimizer,
            lr=lr,
            train_loss=losses[k],
            test_acc=accs[k],
            step_time=step_t / max(n_steps, 1) / n,
            iter_time=iter_t / max(n_steps, 1) / n,
            step_size=sizes[k],
            steps=n_steps,
            wall=wall / n,
            finite=bool(np.isfinite(losses[k]).all()),
        )
        for k in range(n)
    ]


def _koalav_seeds_(params, sigma, loss, R, lr, hp):
    """One `KoalaV` step for every seed at once (dimension 0 of each parameter is the seed):
    predict ``sigma += q``, then per seed and tensor the step and the scalar-covariance update.
    Returns the new ``sigma`` (one per seed)."""
    import torch

    wd, eps = hp["weight_decay"], 1e-9
    sigma = sigma + hp["q"]  # predict: P_hat = (sigma + Q) I
    cd = sigma.dtype
    shrink = []
    for p in params:
        dims = tuple(range(1, p.dim()))
        G, P = p.grad.to(cd), p.detach().to(cd)
        H = G + wd * P  # H_l = grad + wd theta
        hh = torch.linalg.vector_norm(H, dim=dims) ** 2  # ||H_l||^2 per seed
        gn = torch.linalg.vector_norm(G, dim=dims)
        pp = torch.linalg.vector_norm(P, dim=dims) ** 2
        active = gn >= eps  # skip rule
        S = sigma * hh + R  # S_l = sigma ||H_l||^2 + R
        L_t = loss + 0.5 * wd * pp
        scale = torch.where(active, -lr * L_t * sigma / S, torch.zeros_like(S))
        p.data.add_((scale.view(-1, *([1] * len(dims))) * H).to(p.dtype))
        shrink.append(torch.where(active, hh / S, torch.zeros_like(S)))
    return sigma - sigma**2 * torch.stack(shrink, 1).amax(1)  # sigma^2 max_l ||H_l||^2 / S_l


def _koalapp_seeds_(params, states, loss, R, lr, hp, symmetric):
    """One `KoalaPP` step (phantom initialisation) for every seed at once: per parameter
    tensor (dimension 0 is the seed) the equations of ``koalapp_foreach_``'s sync-free path,
    its per-tensor dot products taken per seed (``states[j]`` holds tensor ``j``'s state of
    every seed)."""
    import torch

    q, sigma0, wd, eps = hp["q"], hp["sigma0"], hp["weight_decay"], 1e-9
    cd = loss.dtype
    for p, st in zip(params, states, strict=True):
        n = p.shape[0]
        G, Pf = p.grad.reshape(n, -1).to(cd), p.detach().reshape(n, -1).to(cd)
        H = G + wd * Pf if wd else G  # H_k incl. wd * theta
        if not st:
            st.update(v=torch.zeros_like(H), h_prev=torch.zeros_like(H),
                      S=torch.ones_like(loss), init=torch.zeros_like(loss, dtype=torch.bool))  # fmt: skip
        new = ~st["init"]
        Vp = torch.where(new[:, None], sigma0 * H, st["v"])  # (init) v_0 = sigma0 H_1
        Hp = torch.where(new[:, None], H, st["h_prev"])  # (init) H_0 = H_1
        x, y = (Hp * Hp).sum(1), (Hp * Vp).sum(1)  # ||H_{k-1}||^2, H_{k-1} v_{k-1}^T
        a, c = (H * Hp).sum(1), (H * Vp).sum(1)  # H_k H_{k-1}^T, H_k v_{k-1}^T
        gg, pp = (G * G).sum(1), (Pf * Pf).sum(1)  # skip rule, weight decay
        Sp = torch.where(new, y + q * x + R, st["S"])  # (init) S_0 = H_1 (v_0 + Q H_1)^T + R
        lam = (c + q * a) / Sp  # (recursion) lambda_k
        alpha = a / x  # (closure) alpha_k
        w = c / x - a * y / (x * x) if symmetric else torch.zeros_like(x)  # (closure) w_k
        v = (alpha - lam)[:, None] * Vp + (w - q * lam)[:, None] * Hp + q * H  # (recursion)
        g = v + q * H  # (update) g_k = H_k P_hat_k
        S = (H * g).sum(1) + R  # (update) S_k
        active = gg >= eps * eps  # skip rule: keep the old state
        scale = torch.where(active, -lr * (loss + 0.5 * wd * pp) / S, torch.zeros_like(S))
        p.data.add_((scale[:, None] * g).view_as(p).to(p.dtype))
        if bool((active & (S <= 0)).any()):
            raise FloatingPointError("KOALA++: S_k <= 0 for some tensor (as KoalaPP on CPU)")
        st["v"] = torch.where(active[:, None], v, st["v"])
        st["h_prev"] = torch.where(active[:, None], H, st["h_prev"])
        st["S"] = torch.where(active, S, st["S"])
        st["init"] = st["init"] | active
