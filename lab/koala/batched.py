"""Many seeds of the digits MLP in one batch: `train_digits_seeds` (the weights of every seed
stacked, one optimizer step for all of them), what ``experiments.seed_runs(batched=True)`` calls.

See: book/koala/02-training-digits.ipynb
"""

from __future__ import annotations

import time

import numpy as np

from lab.core.checks import check_int
from lab.core.memo import memo
from lab.core.runtime import smoke_steps
from lab.koala.results import TrainRun
from lab.koala.training import DigitsSettings, StepClock, as_settings, make_optimizer

__all__ = ["train_digits_seeds"]


def train_digits_seeds(settings, seeds, *, device=None, **changes) -> list[TrainRun]:
    """`train_digits` for many seeds at once: the networks of all seeds in one batch.

    Seed ``s`` gets what ``train_digits(settings, seed=s)`` gets (its split, initialisation
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
    settings : DigitsSettings or str
        As in `train_digits` (a name and ``**changes`` build the settings).
    seeds : sequence of int
        Distinct seeds ``>= 0``.
    device : torch.device or str, optional
        As in `train_digits`.

    Returns
    -------
    list of TrainRun
        One per seed, in the order of ``seeds``.

    See: book/koala/02-training-digits.ipynb
    """
    from contextlib import nullcontext

    from lab.core.runtime import resolve_device, small_problem_threads

    s = as_settings(settings, changes).resolved()
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers (got {seeds!r})")
    seeds = [check_int("seeds[i]", x, 0) for x in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be non-empty and distinct (got {seeds})")
    dev = resolve_device(device)
    with small_problem_threads(1) if dev.type == "cpu" else nullcontext():
        return _train_seeds(s, tuple(seeds), dev)


def _stacked_data(seeds, dev, tdtype):
    """Every seed's split, stacked: (n, rows, 64) features and (n, rows) labels."""
    import torch

    from lab.core.data import digits

    splits = [tuple(digits(test_size=0.25, seed=s)) for s in seeds]
    Xtr, ytr, Xte, yte = (
        torch.stack([torch.as_tensor(sp[i]) for sp in splits]).to(dev) for i in range(4)
    )
    return Xtr.to(tdtype), ytr, Xte.to(tdtype), yte


def _stacked_params(seeds, hidden, dev, tdtype):
    """Each seed's initialisation, as train_digits draws it, stacked: W1 (n, hidden, 64),
    b1 (n, hidden), W2 (n, 10, hidden), b2 (n, 10)."""
    import torch

    layers = []
    for s in seeds:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            a, b = torch.nn.Linear(64, hidden), torch.nn.Linear(hidden, 10)
        layers.append([a.weight, a.bias, b.weight, b.bias])
    return [
        torch.stack([ls[j].detach() for ls in layers]).to(device=dev, dtype=tdtype).requires_grad_()
        for j in range(4)
    ]


class _SeedsStep:
    """The optimizer state of every seed (the online R, KOALA-V's sigma, KOALA++'s per-tensor
    state, or one torch optimizer for SGD and Adam) and its step on the stacked weights."""

    def __init__(self, s: DigitsSettings, params, n: int, dev, cd):
        import torch

        self.s, self.params, self.hp, self.lr = s, params, s.hp, s.lr
        self.R = torch.ones(n, device=dev, dtype=cd)  # R_0 = 1 per seed (the EMA), or a fixed r
        self.sigma = torch.full((n,), self.hp["sigma0"], device=dev, dtype=cd)  # KOALA-V
        self.states = [{} for _ in params]  # KOALA++: per tensor, its state for every seed
        first_order = s.optimizer in ("sgd", "adam")
        self.opt = make_optimizer(s, params) if first_order else None

    def drop_lr(self) -> None:
        self.lr = self.s.lr * self.s.lr_drop_factor
        for grp in self.opt.param_groups if self.opt is not None else ():
            grp["lr"] = self.lr

    def __call__(self, ls, cd, seeds) -> None:
        import torch

        hp, name = self.hp, self.s.optimizer
        loss = ls.detach().mean(1).to(cd)
        if self.opt is None and not bool(torch.isfinite(loss).all()):  # as KoalaPP/KoalaV
            raise FloatingPointError(f"non-finite loss for {name} (seeds {seeds})")
        if hp["r"] is None:  # EMA of the mean squared per-sample loss, per seed
            self.R = 0.9 * self.R + 0.1 * (ls.detach() ** 2).mean(1).to(cd)
        else:
            self.R = torch.full_like(self.R, hp["r"])
        if self.opt is not None:  # SGD, Adam: elementwise, one optimizer for every seed
            self.opt.step()
        elif name == "koalav":
            self.sigma = _koalav_seeds_(self.params, self.sigma, loss, self.R, self.lr, hp)
        else:
            _koalapp_seeds_(self.params, self.states, loss, self.R, self.lr, hp, name == "koalapp")


@memo(maxsize=16)
def _train_seeds(s: DigitsSettings, seeds, dev) -> list[TrainRun]:
    import torch

    n, tdtype = len(seeds), getattr(torch, s.dtype)
    Xtr, ytr, Xte, yte = _stacked_data(seeds, dev, tdtype)
    gens = [torch.Generator().manual_seed(x) for x in seeds]
    seed_rows = torch.arange(n, device=dev).unsqueeze(1)  # row i of a batch index: seed i
    params = _stacked_params(seeds, s.hidden, dev, tdtype)
    W1, b1, W2, b2 = params
    crit = torch.nn.CrossEntropyLoss(reduction="none")

    def logits(X):  # (n, rows, 10) outputs of every seed's network
        h = torch.tanh(torch.baddbmm(b1.unsqueeze(1), X, W1.transpose(1, 2)))
        return torch.baddbmm(b2.unsqueeze(1), h, W2.transpose(1, 2))

    def per_sample(X, y):  # (n, rows) losses of every seed's network
        return crit(logits(X).reshape(-1, 10), y.reshape(-1)).view(y.shape)

    def evaluate():
        with torch.no_grad():
            loss = per_sample(Xtr, ytr).mean(1)
            acc = (logits(Xte).argmax(-1) == yte).to(tdtype).mean(1)  # no test loss needed
        return loss.double().cpu().numpy(), acc.double().cpu().numpy()

    def batch_loss(idx):
        return per_sample(Xtr[seed_rows, idx], ytr[seed_rows, idx])

    cd = torch.float64 if tdtype == torch.float64 else torch.float32
    step = _SeedsStep(s, params, n, dev, cd)
    l0, a0 = evaluate()
    losses, accs, sizes = [l0], [a0], []
    clock = StepClock(torch.device("cpu"))  # no synchronisation (as before: host timings)
    rows = smoke_steps(Xtr.shape[1], small=3 * s.batch_size)
    t_start = time.perf_counter()
    for epoch in range(1, s.epochs + 1):
        if s.lr_drop_epoch is not None and epoch == s.lr_drop_epoch:
            step.drop_lr()
        perm = torch.stack([torch.randperm(Xtr.shape[1], generator=g) for g in gens]).to(dev)
        sizes.append(_seeds_epoch(s, step, batch_loss, perm, rows, clock, (cd, seeds)))
        lo, ac = evaluate()
        losses.append(lo)
        accs.append(ac)
    wall = time.perf_counter() - t_start
    losses, accs, sizes = np.stack(losses, 1), np.stack(accs, 1), np.stack(sizes, 1)
    return [
        TrainRun(
            optimizer=s.optimizer,
            lr=s.lr,
            train_loss=losses[k],
            test_acc=accs[k],
            step_time=clock.step / max(clock.n, 1) / n,
            iter_time=clock.iter / max(clock.n, 1) / n,
            step_size=sizes[k],
            steps=clock.n,
            wall=wall / n,
            finite=bool(np.isfinite(losses[k]).all()),
        )
        for k in range(n)
    ]


def _seeds_epoch(
    s, step: _SeedsStep, batch_loss, perm, rows, clock: StepClock, where
) -> np.ndarray:
    """One pass over every seed's batches; returns (n, 4) mean ``||dtheta|| / ||grad||``."""
    import torch

    cd, seeds = where
    params = step.params
    ratio = torch.zeros(len(seeds), 4, dtype=torch.float64)
    nb = 0
    for i in range(0, rows, s.batch_size):
        idx = perm[:, i : i + s.batch_size]
        before = [p.detach().clone() for p in params]
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        ls = batch_loss(idx)
        ls.mean(1).sum().backward()  # each seed's mean loss; the seeds do not mix
        t1 = time.perf_counter()
        with torch.no_grad():
            step(ls, cd, seeds)
        clock.count(t0, t1, time.perf_counter())
        with torch.no_grad():
            for j, (p, b) in enumerate(zip(params, before, strict=True)):
                dims = tuple(range(1, p.dim()))
                gn = torch.linalg.vector_norm(p.grad, dim=dims).double().clamp_min(1e-12)
                ratio[:, j] += (torch.linalg.vector_norm(p - b, dim=dims).double() / gn).cpu()
        nb += 1
    return (ratio / nb).numpy()


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
        if bool(new.any()):  # a first step for some seed (after it, the masks select the state)
            Vp = torch.where(new[:, None], sigma0 * H, st["v"])  # (koala-init) v_0 = sigma0 H_1
            Hp = torch.where(new[:, None], H, st["h_prev"])  # (koala-init) H_0 = H_1
        else:
            Vp, Hp = st["v"], st["h_prev"]
        x, y = (Hp * Hp).sum(1), (Hp * Vp).sum(1)  # ||H_{k-1}||^2, H_{k-1} v_{k-1}^T
        a, c = (H * Hp).sum(1), (H * Vp).sum(1)  # H_k H_{k-1}^T, H_k v_{k-1}^T
        gg, pp = (G * G).sum(1), (Pf * Pf).sum(1)  # skip rule, weight decay
        Sp = torch.where(new, y + q * x + R, st["S"])  # (koala-init) S_0 = H_1 (v_0 + Q H_1)^T + R
        lam = (c + q * a) / Sp  # (koala-recursion) lambda_k
        alpha = a / x  # (koala-closure) alpha_k
        w = c / x - a * y / (x * x) if symmetric else torch.zeros_like(x)  # (koala-closure) beta_k
        v = (alpha - lam)[:, None] * Vp + (w - q * lam)[:, None] * Hp + q * H  # (koala-recursion)
        g = v + q * H  # (koala-update) g_k = H_k P_hat_k
        S = (H * g).sum(1) + R  # (koala-update) S_k
        active = gg >= eps * eps  # skip rule: keep the old state
        scale = torch.where(active, -lr * (loss + 0.5 * wd * pp) / S, torch.zeros_like(S))
        p.data.add_((scale[:, None] * g).view_as(p).to(p.dtype))
        if bool((active & (S <= 0)).any()):
            raise FloatingPointError("KOALA++: S_k <= 0 for some tensor (as KoalaPP on CPU)")
        if bool(active.all()):  # every seed steps: no mask to apply
            st.update(v=v, h_prev=H, S=S, init=torch.ones_like(active))
            continue
        st["v"] = torch.where(active[:, None], v, st["v"])
        st["h_prev"] = torch.where(active[:, None], H, st["h_prev"])
        st["S"] = torch.where(active, S, st["S"])
        st["init"] = st["init"] | active
