"""The paper's objects: CRAIG's gradient proxy, posterior features of a network (noise on
the normalisation layers), the weighted coreset loss, the chapter's BatchNorm MLP, mini-batch
coreset selection and the CREST-style trainer.

See: book/coreset/03-training-under-noise.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_instance, check_int, check_positive
from lab.core.progress import progress
from lab.coreset.fast import facility_location, per_class_facility_location_many
from lab.coreset.labels import noisy_share
from lab.coreset.settings import METHODS, WHERE, PosteriorSettings, TrainSettings

__all__ = [
    "gradient_proxy",
    "posterior_features",
    "coreset_loss",
    "make_mlp",
    "select_minibatch_coresets",
    "History",
    "CoresetTrainer",
]


def class_layout(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, starts)`` of the labels ``y`` in class order: what ``balanced_pool`` needs."""
    _, counts = np.unique(y, return_counts=True)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return counts, starts


def balanced_pool(
    y: np.ndarray, size: int, rng: np.random.Generator, layout: tuple | None = None
) -> np.ndarray:
    """A class-balanced random pool: ``size // C`` uniform draws without replacement from every
    class (all of a smaller class), the remainder filled uniformly from the rest.

    One uniform key per example: the pool takes, in every class, the examples with the
    smallest keys. ``layout`` (``class_layout(y)``, optional) saves recomputing it.
    """
    counts, starts = class_layout(y) if layout is None else layout
    per = size // len(counts)
    keys = rng.random(y.size)
    ranked = np.lexsort((keys, y))  # by class, then by key: a random order inside each class
    take = np.minimum(per, counts)
    pool = ranked[np.concatenate([s + np.arange(t) for s, t in zip(starts, take, strict=True)])]
    extra = size - pool.size
    if extra > 0:
        free = np.ones(y.size, dtype=bool)
        free[pool] = False
        rest = np.flatnonzero(free)
        pool = np.concatenate([pool, rng.choice(rest, size=min(extra, rest.size), replace=False)])
    return np.sort(pool)


def gradient_proxy(logits: Any, y: Any):
    """CRAIG's last-layer gradient proxy ``softmax(z_i) - onehot(y_i)``, eq. (4).

    Parameters
    ----------
    logits : Tensor, shape (n, C)
    y : Tensor or array of int, shape (n,)

    Returns
    -------
    Tensor, shape (n, C)

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    z = logits if isinstance(logits, torch.Tensor) else torch.as_tensor(np.asarray(logits))
    if z.ndim != 2:
        raise ValueError(f"logits must have shape (n, C) (got {tuple(z.shape)})")
    if not torch.isfinite(z).all():
        raise ValueError("logits must contain only finite values (got NaN or inf)")
    yy = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y, device=z.device)
    if yy.shape != (z.shape[0],):
        raise ValueError(f"y must have shape ({z.shape[0]},) (got {tuple(yy.shape)})")
    yy = yy.long()
    if yy.numel() and (yy.min() < 0 or yy.max() >= z.shape[1]):
        raise ValueError(f"y must lie in [0, {z.shape[1] - 1}]")
    onehot = torch.nn.functional.one_hot(yy, z.shape[1]).to(z.dtype)
    return torch.softmax(z, dim=1) - onehot  # eq. (4)


def _norm_modules(model):
    import torch.nn as nn

    kinds = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)
    return [m for m in model.modules() if isinstance(m, kinds)]


def _perturbed_params(model, where: str) -> list:
    import torch.nn as nn

    if where == "all":
        return [p for p in model.parameters()]
    if where == "last":
        lin = [m for m in model.modules() if isinstance(m, nn.Linear)]
        if not lin:
            raise ValueError('where="last" needs an nn.Linear layer in the model')
        return [p for p in lin[-1].parameters()]
    norms = [m for m in _norm_modules(model) if getattr(m, "weight", None) is not None]
    if not norms:
        raise ValueError(
            f'where="{where}" needs normalization layers with affine parameters '
            '(BatchNorm/LayerNorm/GroupNorm); use where="last" or where="all" for this model'
        )
    return [p for m in norms for p in (m.weight, m.bias) if p is not None]


def posterior_features(
    model: Any,
    X: Any,
    y: Any,
    K: int = 4,
    sigma: float = 0.01,
    *,
    where: str = "norm",
    generator: Any = None,
):
    """Concatenated gradient proxies of ``K`` posterior samples of the model, eq. (6).

    Each sample adds ``N(0, sigma^2)`` noise to the chosen parameters, runs the model in eval
    mode without gradients, and records ``softmax - onehot``. The exact parameters and the
    train/eval mode are restored afterwards (bit for bit).

    Parameters
    ----------
    model : torch.nn.Module
        Maps ``X`` to logits of shape (n, C).
    X : Tensor, shape (n, ...)
    y : Tensor or array of int, shape (n,)
    K : int
        Number of posterior samples (``>= 1``).
    sigma : float
        Noise scale (``>= 0``; ``0`` with any ``K`` repeats CRAIG's features).
    where : {"norm", "all", "last", "norm_out"}
        ``"norm"`` (the paper's default): the affine parameters of the BatchNorm/LayerNorm/
        GroupNorm layers; ``"all"``: every parameter; ``"last"``: the last linear layer;
        ``"norm_out"``: noise added to the outputs of the normalization layers (as the
        official code does for transformers).
    generator : torch.Generator, optional
        Source of the noise (a fixed one gives deterministic features).

    Returns
    -------
    Tensor, shape (n, K * C)

    See: book/coreset/01-facility-location.ipynb
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    K = check_int("K", K, 1)
    sigma = check_positive("sigma", sigma, allow_zero=True)
    where = check_choice("where", where, WHERE)
    return posterior_features_unchecked(model, X, y, K, sigma, where, generator)


def _noise_targets(model, where: str) -> tuple[list, list]:
    """``(parameters to perturb, normalisation modules whose outputs get noise)``."""
    if where != "norm_out":
        return _perturbed_params(model, where), []
    norms = _norm_modules(model)
    if not norms:
        raise ValueError(
            'where="norm_out" needs normalization layers in the model; use where="last"'
        )
    return [], norms


def posterior_features_unchecked(model, X, y, K: int, sigma: float, where: str, generator):
    """``posterior_features`` without the argument checks (its callers validated them)."""
    import torch

    params, norms = _noise_targets(model, where)
    was_training = model.training
    saved = [p.detach().clone() for p in params]
    feats = []
    hooks = []

    def _noise_like(t):
        return torch.randn(t.shape, generator=generator, dtype=t.dtype, device="cpu").to(t.device)

    try:
        model.eval()
        if norms and sigma > 0:
            hooks = [
                m.register_forward_hook(lambda _m, _i, out: out + sigma * _noise_like(out))
                for m in norms
            ]
        with torch.no_grad():
            for _ in range(K):
                if sigma > 0:
                    for p, p0 in zip(params, saved, strict=True):
                        p.copy_(p0 + sigma * _noise_like(p0))  # w_k ~ N(w_bar, sigma^2 I)
                feats.append(gradient_proxy(model(X), y))  # g_i(w_k), eq. (4)
    finally:
        for h in hooks:
            h.remove()
        with torch.no_grad():
            for p, p0 in zip(params, saved, strict=True):
                p.copy_(p0)
        model.train(was_training)
    return torch.cat(feats, dim=1)  # eq. (6): G_i = [g_i(w_1), ..., g_i(w_K)]


def coreset_loss(logits: Any, y: Any, gamma: Any):
    """Weighted cross-entropy of a mini-batch coreset, weights normalised to mean 1, eq. (7).

    ``coreset_loss(z, y, ones) == F.cross_entropy(z, y)``; duplicating a row and splitting its
    weight leaves the loss and its gradient unchanged.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch
    import torch.nn.functional as F

    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor (got {type(logits).__name__})")
    g = torch.as_tensor(gamma, dtype=logits.dtype, device=logits.device)
    if g.shape != (logits.shape[0],):
        raise ValueError(f"gamma must have shape ({logits.shape[0]},) (got {tuple(g.shape)})")
    if (g < 0).any() or g.sum() <= 0:
        raise ValueError("gamma must be non-negative with a positive sum")
    yy = torch.as_tensor(y, device=logits.device).long()
    ce = F.cross_entropy(logits, yy, reduction="none")
    return (g * ce).sum() / g.sum()  # = mean_j (gamma_j / mean gamma) * ce_j


# ---------------------------------------------------------------------------------------------
# Mini-batch coresets for a network (CREST-style) and training
# ---------------------------------------------------------------------------------------------
def make_mlp(d_in: int = 64, hidden: int = 128, num_classes: int = 10, seed: int = 0):
    """The chapter's network: ``Linear - BatchNorm - ReLU - Linear``.

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch
    import torch.nn as nn

    d_in = check_int("d_in", d_in, 1)
    hidden = check_int("hidden", hidden, 1)
    num_classes = check_int("num_classes", num_classes, 2)
    torch.manual_seed(check_int("seed", seed, 0))
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, num_classes)
    )


def select_minibatch_coresets(
    model: Any,
    X: Any,
    y: Any,
    *,
    method: str = "posterior",
    posterior: PosteriorSettings | None = None,
    train: TrainSettings | None = None,
    steps: int = 4,
    seed: int = 0,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One coreset per upcoming training step, each from its own class-balanced random pool.

    With ``train.per_class`` (the paper's protocol, CREST's ``equal_num=True``) facility
    location runs in every class of the pool separately, ``ceil(B / C)`` medoids each
    (``per_class_facility_location``); otherwise over the whole pool.

    Parameters
    ----------
    model : torch.nn.Module
        The current (unperturbed) network; it is left exactly as it was.
    X, y : Tensor, array
        The training set (noisy labels).
    method : {"posterior", "craig", "random"}
        Features for facility location: ``K`` posterior samples, the plain proxy, or none.
    posterior : PosteriorSettings, optional
        ``K``, ``σ`` and the perturbed parameters (``posterior_features``).
    train : TrainSettings, optional
        Its ``pool_size``, ``budget`` (``B``) and ``per_class``.
    steps : int
        How many coresets to select.
    seed : int

    Returns
    -------
    list of (idx, weights)
        Indices into the training set and integer weights (``random``: all ones).

    See: book/coreset/03-training-under-noise.ipynb
    """
    import torch

    posterior, train = _settings(posterior, train)
    steps = check_int("steps", steps, 1)
    method = check_choice("method", method, METHODS)
    seed = check_int("seed", seed, 0)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    y_np = _integer_labels(y)
    n_x = X.shape[0] if isinstance(X, torch.Tensor) else check_array("X", X, ndim=2).shape[0]
    if n_x != y_np.size:
        raise ValueError(f"X must have one row per label ({y_np.size}) (got {n_x})")
    return select_unchecked(model, X, y_np, method, posterior, train, steps, seed)


def _settings(posterior: Any, train: Any) -> tuple[PosteriorSettings, TrainSettings]:
    posterior = PosteriorSettings() if posterior is None else posterior
    train = TrainSettings() if train is None else train
    check_instance("posterior", posterior, PosteriorSettings)
    check_instance("train", train, TrainSettings)
    return posterior, train


def _integer_labels(y: Any) -> np.ndarray:
    import torch

    y_np = check_array(
        "y", y.cpu().numpy() if isinstance(y, torch.Tensor) else y, ndim=1, dtype=None, min_size=1
    )
    if not np.issubdtype(y_np.dtype, np.integer):
        if np.issubdtype(y_np.dtype, np.floating) and np.all(y_np == np.round(y_np)):
            y_np = y_np.astype(int)
        else:
            raise TypeError(f"y must hold integer labels (got dtype {y_np.dtype})")
    if y_np.min() < 0:
        raise ValueError(f"y must hold non-negative labels (got {y_np.min()})")
    return y_np


def select_unchecked(model, X, y_np, method, posterior, train, steps, seed):
    """``select_minibatch_coresets`` without the argument checks (its callers made them)."""
    import torch

    rng = np.random.default_rng(seed)
    size = min(train.pool_size, y_np.size)
    pools = np.stack([balanced_pool(y_np, size, rng) for _ in range(steps)])
    if method == "random":
        b = min(train.budget, pools.shape[1])
        return [(p[rng.choice(p.size, b, replace=False)], np.ones(b, dtype=int)) for p in pools]
    Xt = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
    yt = torch.as_tensor(y_np, device=Xt.device)
    flat = torch.as_tensor(pools.ravel(), device=Xt.device)
    if method == "craig":
        F = posterior_features_unchecked(model, Xt[flat], yt[flat], 1, 0.0, "all", None)
    else:
        gen = torch.Generator().manual_seed(seed)
        K, sigma, where = posterior.K, posterior.sigma, posterior.where
        F = posterior_features_unchecked(model, Xt[flat], yt[flat], K, sigma, where, gen)
    F = F.double().reshape(steps, pools.shape[1], -1)
    if train.per_class:
        picks = per_class_facility_location_many(F, y_np[pools], train.budget, device="cpu")
        return [(pools[s][i], w) for s, (i, w) in enumerate(picks)]
    idx, w = facility_location(F, train.budget)
    return [(pools[s][idx[s]], w[s]) for s in range(steps)]


@dataclass
class History:
    """What ``CoresetTrainer.fit`` records: clean test accuracy and the coresets' noisy share.

    See: book/coreset/03-training-under-noise.ipynb
    """

    method: str
    steps: list[int] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    noisy_share: list[float] = field(default_factory=list)
    select_seconds: float = 0.0

    @property
    def final_acc(self) -> float:
        return self.test_acc[-1] if self.test_acc else float("nan")


class CoresetTrainer:
    """Train a network on mini-batch coresets (CREST-style loop, posterior selection).

    Every ``train.select_every`` steps the trainer selects the next ``select_every`` mini-batch
    coresets at once (``select_minibatch_coresets``; pools drawn class-balanced from the
    training set), then takes one SGD step per coreset with the weighted loss (7). The noise
    of the posterior samples is used for selection only; training steps see the unperturbed
    model. ``method="full"`` is full-data training with the same step budget and the same
    mini-batch size: plain SGD on shuffled passes over the whole training set (like with like:
    the coreset methods differ from it only in which ``budget`` examples a step sees).

    Parameters
    ----------
    method : {"posterior", "craig", "random", "full"}
    posterior : PosteriorSettings, optional
        ``K``, ``σ`` and the perturbed parameters (see ``posterior_features``).
    train : TrainSettings, optional
        Steps, budget ``B`` (with ``per_class``, ``ceil(B / C)`` per class: make ``C`` divide
        ``B`` so every method trains on ``B`` examples a step), pools, SGD, selection rounds
        and evaluation points.
    seed : int

    See: book/coreset/03-training-under-noise.ipynb
    """

    def __init__(
        self,
        method: str = "posterior",
        *,
        posterior: PosteriorSettings | None = None,
        train: TrainSettings | None = None,
        seed: int = 0,
    ):
        self.method = check_choice("method", method, (*METHODS, "full"))
        self.posterior, self.train = _settings(posterior, train)
        self.seed = check_int("seed", seed, 0)

    def fit(
        self, model: Any, X: Any, y: Any, X_test: Any, y_test: Any, *, flipped: Any = None
    ) -> History:
        """Run ``train.steps`` SGD steps; record clean test accuracy every ``train.eval_every``.

        ``flipped`` (bool mask over the training set) lets the history record the weighted
        share of mislabeled examples the coresets picked.
        """
        import torch

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
        dev = next(model.parameters()).device
        Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32, device=dev)
        yt = torch.as_tensor(np.asarray(y), dtype=torch.long, device=dev)
        test = (
            torch.as_tensor(np.asarray(X_test), dtype=torch.float32, device=dev),
            torch.as_tensor(np.asarray(y_test), dtype=torch.long, device=dev),
        )
        fl = None if flipped is None else np.asarray(flipped, dtype=bool)
        torch.manual_seed(self.seed)
        tr = self.train
        opt = torch.optim.SGD(
            model.parameters(), lr=tr.lr, momentum=tr.momentum, weight_decay=tr.weight_decay
        )
        hist = History(self.method)
        batches = self._batches(model, Xt, yt, fl, hist)
        shares: list[float] = []
        for s in progress(range(1, tr.steps + 1), desc=self.method):
            model.train()
            it, w, share = batches(s)
            if share is not None:
                shares.append(share)
            out = model(Xt[it])
            if w is None:
                loss = torch.nn.functional.cross_entropy(out, yt[it])
            else:
                loss = coreset_loss(out, yt[it], torch.as_tensor(w, device=dev))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if s % tr.eval_every == 0 or s == tr.steps:
                _evaluate(model, test, s, hist, shares)
                shares = []
        return hist

    def _batches(self, model, Xt, yt, fl, hist):
        """``batch(step) -> (indices, weights or None, noisy share or None)`` for this method."""
        import time

        import torch

        dev, budget = Xt.device, self.train.budget
        if self.method == "full":
            # full data, like with like: an SGD step on the next `budget` examples of a
            # shuffled pass over the whole (noisy) training set, unweighted
            shuffle = np.random.default_rng(self.seed)
            order = [np.empty(0, dtype=int)]

            def full(_step):
                if order[0].size < budget:
                    order[0] = np.concatenate([order[0], shuffle.permutation(Xt.shape[0])])
                it = torch.as_tensor(order[0][:budget], device=dev)
                order[0] = order[0][budget:]
                return it, None, None

            return full
        queue: list[tuple[np.ndarray, np.ndarray]] = []
        y_np = yt.cpu().numpy()

        def coreset(step):
            if not queue:
                t0 = time.perf_counter()
                queue.extend(
                    select_unchecked(
                        model, Xt, y_np, self.method, self.posterior, self.train,
                        self.train.select_every, self.seed * 100003 + step,
                    )
                )  # fmt: skip
                hist.select_seconds += time.perf_counter() - t0
            idx, w = queue.pop(0)
            share = None if fl is None else noisy_share(fl, idx, w)
            return torch.as_tensor(idx, device=dev), w, share

        return coreset


def _evaluate(model, test, step: int, hist: History, shares: list) -> None:
    """Clean test accuracy and the window's noisy share, appended to ``hist``."""
    import torch

    Xv, yv = test
    model.eval()
    with torch.no_grad():
        acc = (model(Xv).argmax(1) == yv).float().mean().item()
    hist.steps.append(step)
    hist.test_acc.append(acc)
    hist.noisy_share.append(float(np.mean(shares)) if shares else float("nan"))
