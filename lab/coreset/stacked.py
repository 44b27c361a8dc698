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

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_instance, check_int
from lab.core.progress import progress
from lab.coreset.fast import per_class_many_unchecked
from lab.coreset.models import History, balanced_pool, class_layout, make_mlp
from lab.coreset.settings import METHODS, PosteriorSettings, TrainSettings

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
    posterior: PosteriorSettings = field(default_factory=PosteriorSettings)

    def __post_init__(self) -> None:
        check_choice("method", self.method, (*METHODS, "full"))
        check_int("seed", self.seed, 0)
        if not isinstance(self.posterior, PosteriorSettings):
            raise TypeError(
                f"posterior must be a PosteriorSettings (got {type(self.posterior).__name__})"
            )
        check_choice("where", self.posterior.where, STACKED_WHERE)


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


def train_stacked(specs: Any, train: TrainSettings | None = None, *, hidden: int = 128):
    """Train one BatchNorm MLP per ``RunSpec`` on mini-batch coresets, all runs at once.

    Parameters
    ----------
    specs : sequence of RunSpec
        Methods in {"posterior", "craig", "random", "full"}; ``where`` in {"norm", "all",
        "last"} (``"norm_out"`` runs go through ``CoresetTrainer``).
    train : TrainSettings, optional
        As in ``CoresetTrainer`` (selection is per class, as there).
    hidden : int
        Width of the hidden layer.

    Returns
    -------
    list of History
        One per spec, as ``CoresetTrainer.fit`` records it (``select_seconds`` is the batched
        selection time split evenly over the coreset runs).

    See: book/coreset/03-training-under-noise.ipynb
    """
    specs = list(specs) if hasattr(specs, "__iter__") else specs
    if not isinstance(specs, list) or not specs or not all(isinstance(s, RunSpec) for s in specs):
        raise TypeError("specs must be a non-empty sequence of RunSpec")
    train = TrainSettings() if train is None else train
    check_instance("train", train, TrainSettings)
    return train_stacked_unchecked(specs, train, check_int("hidden", hidden, 1))


def train_stacked_unchecked(specs: list, train: TrainSettings, hidden: int = 128) -> list:
    """``train_stacked`` without the checks (its callers validated the settings)."""
    import time

    import torch

    st = _Stack.build(specs, hidden)
    hist = [History(s.method) for s in specs]
    coreset_runs = [r for r, s in enumerate(specs) if s.method != "full"]
    for step in progress(range(1, train.steps + 1), desc="stacked runs"):
        if coreset_runs and not st.queues[coreset_runs[0]]:
            t0 = time.perf_counter()
            _select(st, coreset_runs, step, train)
            spent = (time.perf_counter() - t0) / len(coreset_runs)
            for r in coreset_runs:
                hist[r].select_seconds += spent
        Xb, yb, wb = _batch(st, train.budget)
        logits = _forward(st.P, Xb, train=True, stats=st.stats)
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, st.C), yb.reshape(-1), reduction="none"
        ).reshape(len(specs), train.budget)
        loss = ((wb * ce).sum(1) / wb.sum(1)).sum()  # eq. (7) per run; runs are independent
        _sgd_step(st, torch.autograd.grad(loss, [st.P[k] for k in _PARAMS]), train)
        if step % train.eval_every == 0 or step == train.steps:
            _evaluate(st, step, hist)
    return hist


@dataclass
class _Stack:
    """The state of a stacked training: parameters, BatchNorm statistics, momentum buffers,
    data and the per-run queues of the selection rounds."""

    specs: list
    C: int
    P: dict
    stats: dict
    Xs: list
    ys: list
    Xv: Any
    yv: Any
    layouts: list
    flips: list
    bufs: dict = field(default_factory=dict)
    queues: list = field(default_factory=list)
    shares: list = field(default_factory=list)
    shuffles: list = field(default_factory=list)
    orders: list = field(default_factory=list)

    @classmethod
    def build(cls, specs: list, hidden: int) -> _Stack:
        import torch

        R = len(specs)
        d_in = int(np.asarray(specs[0].X).shape[1])
        C = int(max(np.max(s.y) for s in specs)) + 1
        ys = [np.asarray(s.y, dtype=np.int64) for s in specs]
        models = [make_mlp(d_in, hidden, C, seed=s.seed) for s in specs]
        P = {
            name: torch.stack([list(m.parameters())[i].detach().clone() for m in models])
            for i, name in enumerate(_PARAMS)
        }
        for t in P.values():
            t.requires_grad_(True)
        return cls(
            specs=specs,
            C=C,
            P=P,
            stats={"mean": torch.zeros(R, hidden), "var": torch.ones(R, hidden)},
            Xs=[torch.as_tensor(np.asarray(s.X), dtype=torch.float32) for s in specs],
            ys=ys,
            Xv=torch.stack(
                [torch.as_tensor(np.asarray(s.X_test), dtype=torch.float32) for s in specs]
            ),
            yv=torch.stack(
                [torch.as_tensor(np.asarray(s.y_test), dtype=torch.long) for s in specs]
            ),
            layouts=[class_layout(y) for y in ys],
            flips=[None if s.flipped is None else np.asarray(s.flipped, dtype=bool) for s in specs],
            queues=[[] for _ in specs],
            shares=[[] for _ in specs],
            shuffles=[np.random.default_rng(s.seed) for s in specs],
            orders=[np.empty(0, dtype=int) for _ in specs],
        )


def _batch(st: _Stack, budget: int):
    """Every run's next mini-batch (coreset or shuffled pass), stacked: ``(X, y, weights)``."""
    import torch

    batch, weights, targets = [], [], []
    for r, s in enumerate(st.specs):
        if s.method == "full":
            if st.orders[r].size < budget:
                st.orders[r] = np.concatenate(
                    [st.orders[r], st.shuffles[r].permutation(len(st.ys[r]))]
                )
            idx, w = st.orders[r][:budget], np.ones(budget)
            st.orders[r] = st.orders[r][budget:]
        else:
            idx, w = st.queues[r].pop(0)
            if st.flips[r] is not None:
                st.shares[r].append(float((w * st.flips[r][idx]).sum() / np.sum(w)))  # noisy_share
        if len(idx) != budget:
            raise ValueError(
                f"budget must give every run the same coreset size (run {r}: {len(idx)})"
            )
        batch.append(st.Xs[r][torch.as_tensor(idx)])
        targets.append(torch.as_tensor(st.ys[r][idx]))
        weights.append(torch.as_tensor(np.asarray(w, dtype=np.float32)))
    return torch.stack(batch), torch.stack(targets), torch.stack(weights)


def _sgd_step(st: _Stack, grads, train: TrainSettings) -> None:
    """SGD with momentum and weight decay, as ``torch.optim.SGD`` takes it."""
    import torch

    with torch.no_grad():
        for name, g in zip(_PARAMS, grads, strict=True):
            dp = g.add(st.P[name], alpha=train.weight_decay)
            if name in st.bufs:
                st.bufs[name].mul_(train.momentum).add_(dp)
            else:
                st.bufs[name] = dp.clone()
            st.P[name].add_(st.bufs[name], alpha=-train.lr)


def _evaluate(st: _Stack, step: int, hist: list) -> None:
    import torch

    with torch.no_grad():
        acc = (_forward(st.P, st.Xv, train=False, stats=st.stats).argmax(2) == st.yv).float()
        acc = acc.mean(1)
    for r in range(len(st.specs)):
        hist[r].steps.append(step)
        hist[r].test_acc.append(float(acc[r]))
        hist[r].noisy_share.append(float(np.mean(st.shares[r])) if st.shares[r] else np.nan)
        st.shares[r] = []


def _pools_and_noise(st: _Stack, r: int, step: int, train: TrainSettings):
    """Run ``r``'s pools of one round, and its posterior noise draws (``None`` if it has none);
    a random run's coresets go straight into its queue."""
    import torch

    s = st.specs[r]
    seed = s.seed * 100003 + step
    rng = np.random.default_rng(seed)
    size = min(train.pool_size, len(st.ys[r]))
    rounds = train.select_every
    pools = np.stack([balanced_pool(st.ys[r], size, rng, st.layouts[r]) for _ in range(rounds)])
    if s.method == "random":
        b = min(train.budget, pools.shape[1])
        st.queues[r] = [
            (p[rng.choice(p.size, b, replace=False)], np.ones(b, dtype=int)) for p in pools
        ]
        return pools, None
    post = s.posterior
    if s.method != "posterior" or post.sigma <= 0:
        return pools, None
    gen = torch.Generator().manual_seed(seed)
    draws = {name: [] for name in _PERTURBED[post.where]}
    for _ in range(post.K):
        for name in _PERTURBED[post.where]:  # the draw order of posterior_features
            shape = st.P[name].shape[1:]
            draws[name].append(post.sigma * torch.randn(shape, generator=gen))
    return pools, {name: torch.stack(v) for name, v in draws.items()}


def _select(st: _Stack, runs: list, step: int, train: TrainSettings) -> None:
    """One selection round for the coreset runs (``select_minibatch_coresets``, batched)."""
    groups: dict[tuple, list[int]] = {}
    pools, noises = {}, {}
    for r in runs:
        pools[r], noise = _pools_and_noise(st, r, step, train)
        if st.specs[r].method == "random":
            continue
        if noise is not None:
            noises[r] = noise
        K = st.specs[r].posterior.K if noise is not None else 1
        groups.setdefault((K, st.specs[r].posterior.where if noise is not None else "none"), [])
        groups[(K, st.specs[r].posterior.where if noise is not None else "none")].append(r)
    for (K, _), members in groups.items():
        _select_group(st, members, K, pools, noises, train)


def _select_group(st, members, K, pools, noises, train: TrainSettings) -> None:
    """Features of one group of runs (same ``K`` and perturbed block) and their per-class
    facility location, one batched call."""
    import torch

    rounds = train.select_every
    names = set().union(*(noises.get(r, {}).keys() for r in members))
    noise = {}
    for name in names:
        shape = (K, *st.P[name].shape[1:])
        noise[name] = torch.stack(
            [noises[r][name] if r in noises else torch.zeros(shape) for r in members]
        )
    sub = {name: st.P[name].detach()[members] for name in st.P}
    stats = {k: v[members] for k, v in st.stats.items()}
    flat = [torch.as_tensor(pools[r].ravel()) for r in members]
    X = torch.stack([st.Xs[r][f] for r, f in zip(members, flat, strict=True)])
    y = torch.stack([torch.as_tensor(st.ys[r])[f] for r, f in zip(members, flat, strict=True)])
    F = _features(sub, stats, X, y, noise, K).double()
    F = F.reshape(len(members) * rounds, pools[members[0]].shape[1], -1)
    labels = np.concatenate([st.ys[r][pools[r]] for r in members])
    picks = per_class_many_unchecked(F, labels, train.budget)
    for i, r in enumerate(members):
        st.queues[r] = [
            (pools[r][k][picks[i * rounds + k][0]], picks[i * rounds + k][1]) for k in range(rounds)
        ]
