"""Many ``CoresetTrainer`` runs as one batched torch computation: the chapter's BatchNorm MLPs
stacked along a leading run axis, every SGD step, selection pass and evaluation of all runs at
once (one ``bmm`` per layer), and the per-class facility location of every run's pools in one
``per_class_facility_location_many`` call per feature size.

It follows ``CoresetTrainer.fit`` step for step (the same pools, noise draws, weighted loss,
SGD with momentum and weight decay, BatchNorm statistics and evaluation points); the stacked
float32 arithmetic may round differently from the one-model path, which
``tests/test_coreset.py`` bounds.

See: book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.core.progress import progress
from lab.coreset.models import History, balanced_pool, class_layout, make_mlp
from lab.coreset.reference import METHODS

__all__ = ["STACKED_WHERE", "RunSpec", "train_stacked"]

STACKED_WHERE = ("norm", "all", "last")
_PARAMS = ("W1", "b1", "g", "beta", "W2", "b2")  # model.parameters() order of make_mlp
_PERTURBED = {"norm": ("g", "beta"), "all": _PARAMS, "last": ("W2", "b2")}


@dataclass(frozen=True)
class RunSpec:
    """One run of ``train_stacked``: the method, its data and its posterior samples.

    ``X``, ``y`` (noisy labels), ``flipped``, ``X_test``, ``y_test`` are numpy arrays; every
    run of one call shares the input width and the number of classes.

    See: book/coreset/03-training-under-noise.ipynb
    """

    method: str
    seed: int
    X: Any
    y: Any
    X_test: Any
    y_test: Any
    flipped: Any = None
    K: int = 4
    sigma: float = 0.05
    where: str = "norm"


def _forward(P: dict, X, *, train: bool, stats: dict | None = None):
    """Stacked ``Linear - BatchNorm - ReLU - Linear`` on ``X`` of shape (R, n, d)."""
    import torch

    h = torch.baddbmm(P["b1"].unsqueeze(1), X, P["W1"].transpose(1, 2))
    if train:
        mean = h.mean(dim=1, keepdim=True)
        var = (h - mean).square().mean(dim=1, keepdim=True)
        if stats is not None:
            with torch.no_grad():
                n = h.shape[1]
                stats["mean"].mul_(0.9).add_(0.1 * mean.squeeze(1))
                stats["var"].mul_(0.9).add_(0.1 * var.squeeze(1) * n / (n - 1))
    else:
        mean, var = stats["mean"].unsqueeze(1), stats["var"].unsqueeze(1)
    h = (h - mean) / torch.sqrt(var + 1e-5) * P["g"].unsqueeze(1) + P["beta"].unsqueeze(1)
    h = torch.relu(h)
    return torch.baddbmm(P["b2"].unsqueeze(1), h, P["W2"].transpose(1, 2))


def _features(P, stats, X, y, noise, K):
    """Concatenated proxies ``softmax - onehot`` of ``K`` noisy copies (eval mode), eq. (6)."""
    import torch

    feats = []
    onehot = torch.nn.functional.one_hot(y, P["W2"].shape[1]).to(X.dtype)
    with torch.no_grad():
        if set(noise) <= {"g", "beta"}:
            # noise on the BatchNorm affine parameters only: the normalised first layer is
            # the same for every draw, computed once
            h = torch.baddbmm(P["b1"].unsqueeze(1), X, P["W1"].transpose(1, 2))
            h = (h - stats["mean"].unsqueeze(1)) / torch.sqrt(stats["var"].unsqueeze(1) + 1e-5)
            for k in range(K):
                g = P["g"] + noise["g"][:, k] if "g" in noise else P["g"]
                beta = P["beta"] + noise["beta"][:, k] if "beta" in noise else P["beta"]
                a = torch.relu(h * g.unsqueeze(1) + beta.unsqueeze(1))
                z = torch.baddbmm(P["b2"].unsqueeze(1), a, P["W2"].transpose(1, 2))
                feats.append(torch.softmax(z, dim=2) - onehot)
            return torch.cat(feats, dim=2)
        for k in range(K):
            Q = {name: P[name] + noise[name][:, k] if name in noise else P[name] for name in P}
            feats.append(torch.softmax(_forward(Q, X, train=False, stats=stats), dim=2) - onehot)
    return torch.cat(feats, dim=2)


def train_stacked(
    specs: Any,
    *,
    steps: int = 200,
    budget: int = 30,
    pool_size: int = 130,
    lr: float = 0.05,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    select_every: int = 10,
    eval_every: int = 20,
    hidden: int = 128,
) -> list[History]:
    """Train one BatchNorm MLP per ``RunSpec`` on mini-batch coresets, all runs at once.

    Parameters
    ----------
    specs : sequence of RunSpec
        Methods in {"posterior", "craig", "random", "full"}; ``where`` in {"norm", "all",
        "last"} (``"norm_out"`` runs go through ``CoresetTrainer``).
    steps, budget, pool_size, lr, momentum, weight_decay, select_every, eval_every, hidden :
        As in ``CoresetTrainer`` (selection is per class, as there).

    Returns
    -------
    list of History
        One per spec, as ``CoresetTrainer.fit`` records it (``select_seconds`` is the batched
        selection time split evenly over the coreset runs).

    See: book/coreset/03-training-under-noise.ipynb
    """
    import time

    import torch

    from lab.coreset.fast import per_class_facility_location_many

    specs = list(specs)
    if not specs or not all(isinstance(s, RunSpec) for s in specs):
        raise TypeError("specs must be a non-empty sequence of RunSpec")
    steps = check_int("steps", steps, 1)
    budget = check_int("budget", budget, 1)
    pool_size = check_int("pool_size", pool_size, budget)
    lr = check_positive("lr", lr)
    momentum = check_range("momentum", momentum, 0.0, 1.0, high_inclusive=False)
    weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
    select_every = check_int("select_every", select_every, 1)
    eval_every = check_int("eval_every", eval_every, 1)
    for s in specs:
        check_choice("method", s.method, (*METHODS, "full"))
        check_choice("where", s.where, STACKED_WHERE)
        check_int("K", s.K, 1)
        check_positive("sigma", s.sigma, allow_zero=True)
    R = len(specs)
    d_in = int(np.asarray(specs[0].X).shape[1])
    C = int(max(np.max(s.y) for s in specs)) + 1
    Xs = [torch.as_tensor(np.asarray(s.X), dtype=torch.float32) for s in specs]
    ys = [np.asarray(s.y, dtype=np.int64) for s in specs]
    Xv = torch.stack([torch.as_tensor(np.asarray(s.X_test), dtype=torch.float32) for s in specs])
    yv = torch.stack([torch.as_tensor(np.asarray(s.y_test), dtype=torch.long) for s in specs])
    models = [make_mlp(d_in, hidden, C, seed=s.seed) for s in specs]
    P = {
        name: torch.stack([list(m.parameters())[i].detach().clone() for m in models])
        for i, name in enumerate(_PARAMS)
    }
    for t in P.values():
        t.requires_grad_(True)
    stats = {"mean": torch.zeros(R, hidden), "var": torch.ones(R, hidden)}
    bufs: dict[str, Any] = {}
    hist = [History(s.method) for s in specs]
    shuffles = [np.random.default_rng(s.seed) for s in specs]
    orders = [np.empty(0, dtype=int) for _ in specs]
    queues: list[list] = [[] for _ in specs]
    shares: list[list] = [[] for _ in specs]
    coreset_runs = [r for r, s in enumerate(specs) if s.method != "full"]
    flips = [None if s.flipped is None else np.asarray(s.flipped, dtype=bool) for s in specs]
    layouts = [class_layout(y) for y in ys]
    for step in progress(range(1, steps + 1), desc="stacked runs"):
        if coreset_runs and not queues[coreset_runs[0]]:
            t0 = time.perf_counter()
            _select(
                specs,
                Xs,
                ys,
                layouts,
                P,
                stats,
                queues,
                coreset_runs,
                step,
                budget,
                pool_size,
                select_every,
                per_class_facility_location_many,
            )
            spent = (time.perf_counter() - t0) / len(coreset_runs)
            for r in coreset_runs:
                hist[r].select_seconds += spent
        batch, weights, targets = [], [], []
        for r, s in enumerate(specs):
            if s.method == "full":
                if orders[r].size < budget:
                    orders[r] = np.concatenate([orders[r], shuffles[r].permutation(len(ys[r]))])
                idx, w = orders[r][:budget], np.ones(budget)
                orders[r] = orders[r][budget:]
            else:
                idx, w = queues[r].pop(0)
                if flips[r] is not None:
                    shares[r].append(float((w * flips[r][idx]).sum() / np.sum(w)))  # noisy_share
            if len(idx) != budget:
                raise ValueError(
                    f"budget must give every run the same coreset size (run {r}: {len(idx)})"
                )
            batch.append(Xs[r][torch.as_tensor(idx)])
            targets.append(torch.as_tensor(ys[r][idx]))
            weights.append(torch.as_tensor(np.asarray(w, dtype=np.float32)))
        Xb, yb, wb = torch.stack(batch), torch.stack(targets), torch.stack(weights)
        logits = _forward(P, Xb, train=True, stats=stats)
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, C), yb.reshape(-1), reduction="none"
        ).reshape(R, budget)
        loss = ((wb * ce).sum(1) / wb.sum(1)).sum()  # eq. (7) per run; runs are independent
        grads = torch.autograd.grad(loss, [P[k] for k in _PARAMS])
        with torch.no_grad():
            for name, g in zip(_PARAMS, grads, strict=True):
                dp = g.add(P[name], alpha=weight_decay)
                if name in bufs:
                    bufs[name].mul_(momentum).add_(dp)
                else:
                    bufs[name] = dp.clone()
                P[name].add_(bufs[name], alpha=-lr)
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                acc = (_forward(P, Xv, train=False, stats=stats).argmax(2) == yv).float().mean(1)
            for r in range(R):
                hist[r].steps.append(step)
                hist[r].test_acc.append(float(acc[r]))
                hist[r].noisy_share.append(float(np.mean(shares[r])) if shares[r] else np.nan)
                shares[r] = []
    return hist


def _select(specs, Xs, ys, layouts, P, stats, queues, runs, step, budget, pool_size, rounds, fl_fn):
    """One selection round for the coreset runs (``select_minibatch_coresets``, batched)."""
    import torch

    groups: dict[tuple, list[int]] = {}
    pools, noises = {}, {}
    for r in runs:
        s = specs[r]
        seed = s.seed * 100003 + step
        rng = np.random.default_rng(seed)
        n = len(ys[r])
        size = min(pool_size, n)
        pools[r] = np.stack([balanced_pool(ys[r], size, rng, layouts[r]) for _ in range(rounds)])
        if s.method == "random":
            b = min(budget, pools[r].shape[1])
            queues[r] = [
                (p[rng.choice(p.size, b, replace=False)], np.ones(b, dtype=int)) for p in pools[r]
            ]
            continue
        K = s.K if s.method == "posterior" and s.sigma > 0 else 1
        if s.method == "posterior" and s.sigma > 0:
            gen = torch.Generator().manual_seed(seed)
            draws = {name: [] for name in _PERTURBED[s.where]}
            for _ in range(s.K):
                for name in _PERTURBED[s.where]:  # the draw order of posterior_features
                    shape = P[name].shape[1:]
                    draws[name].append(s.sigma * torch.randn(shape, generator=gen))
            noises[r] = {name: torch.stack(v) for name, v in draws.items()}
        groups.setdefault((K, s.where if r in noises else "none"), []).append(r)
    for (K, _), members in groups.items():
        names = set().union(*(noises.get(r, {}).keys() for r in members))
        noise = {}
        for name in names:
            shape = (K, *P[name].shape[1:])
            noise[name] = torch.stack(
                [noises[r][name] if r in noises else torch.zeros(shape) for r in members]
            )
        sub = {name: P[name].detach()[members] for name in P}
        st = {k: v[members] for k, v in stats.items()}
        flat = [torch.as_tensor(pools[r].ravel()) for r in members]
        X = torch.stack([Xs[r][f] for r, f in zip(members, flat, strict=True)])
        y = torch.stack([torch.as_tensor(ys[r])[f] for r, f in zip(members, flat, strict=True)])
        F = _features(sub, st, X, y, noise, K).double()
        F = F.reshape(len(members) * rounds, pools[members[0]].shape[1], -1)
        labels = np.concatenate([ys[r][pools[r]] for r in members])
        picks = fl_fn(F, labels, budget, device="cpu")
        for i, r in enumerate(members):
            queues[r] = [
                (pools[r][k][picks[i * rounds + k][0]], picks[i * rounds + k][1])
                for k in range(rounds)
            ]
