"""The split model: MLP blocks, the cut, flat-parameter evaluation and the digits clients.

See: book/splitfed/01-zeroth-order-split.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)

from .hyperparams import MUSplitFedConfig
from .stragglers import StragglerModel

__all__ = ["make_mlp", "split_model", "load_digits_clients", "evaluator"]


def make_mlp(widths: tuple[int, ...] = (64, 32, 32, 10), seed: int = 0):
    """An MLP as ``nn.Sequential`` of blocks (``Linear + ReLU``, last block ``Linear``).

    Parameters
    ----------
    widths : tuple of int
        Layer widths, input first; ``len(widths) - 1`` blocks.
    seed : int
        Initialisation seed.

    Returns
    -------
    torch.nn.Sequential

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    import torch
    from torch import nn

    widths = tuple(check_int(f"widths[{i}]", w, 1) for i, w in enumerate(widths))
    if len(widths) < 3:
        raise ValueError(f"widths needs at least 3 entries (2 blocks) (got {widths})")
    seed = check_int("seed", seed, 0)
    blocks = []
    with torch.random.fork_rng(devices=[]):  # a local seed: the global generator is left alone
        torch.manual_seed(seed)
        for i in range(len(widths) - 1):
            lin = nn.Linear(widths[i], widths[i + 1])
            blocks.append(lin if i == len(widths) - 2 else nn.Sequential(lin, nn.ReLU()))
    return nn.Sequential(*blocks)


def split_model(model: Any, cut: int) -> tuple[Any, Any]:
    """Split an ``nn.Sequential`` after ``cut`` blocks: ``(client half, server half)``.

    Parameters
    ----------
    model : torch.nn.Sequential
        The full model.
    cut : int
        Blocks kept on the client, in ``[1, len(model) - 1]``.

    Returns
    -------
    (torch.nn.Sequential, torch.nn.Sequential)

    See: book/splitfed/01-zeroth-order-split.ipynb
    """
    from torch import nn

    if not isinstance(model, nn.Sequential):
        raise TypeError(f"model must be a torch.nn.Sequential (got {type(model).__name__})")
    cut = check_int("cut", cut, 1, len(model) - 1)
    return nn.Sequential(*list(model)[:cut]), nn.Sequential(*list(model)[cut:])


def load_digits_clients(
    clients: int = 10,
    *,
    split: str = "iid",
    alpha: float = 0.3,
    test_size: float = 0.25,
    seed: int = 0,
    dtype: str = "float32",
    standardize: bool = False,
) -> dict[str, Any]:
    """scikit-learn's digits (bundled, no download), split over ``clients``.

    Parameters
    ----------
    clients : int
        Number of clients.
    split : {"iid", "dirichlet"}
        Uniform shuffle, or label proportions per client from ``Dirichlet(alpha)``.
    alpha : float
        Dirichlet concentration (only for ``split="dirichlet"``).
    test_size : float
        Held-out fraction.
    seed : int
        Seed of the split.
    dtype : {"float32", "float64"}
        Of the features (scaled to ``[0, 1]``).
    standardize : bool
        Also standardise every feature with the training set's mean and standard deviation
        (:func:`lab.core.data.digits`); the split is the same either way.

    Returns
    -------
    dict
        ``clients`` (list of ``(X, y)`` tensors), ``train`` and ``test`` (``(X, y)``).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch

    from lab.core.data import digits

    clients = check_int("clients", clients, 1)
    check_choice("split", split, ["iid", "dirichlet"])
    alpha = check_positive("alpha", alpha)
    test_size = check_range(
        "test_size", test_size, 0.0, 1.0, low_inclusive=False, high_inclusive=False
    )
    seed = check_int("seed", seed, 0)
    check_choice("dtype", dtype, ["float32", "float64"])
    standardize = check_bool("standardize", standardize)
    # one generator for the split and the Dirichlet draws that follow it
    rng = np.random.default_rng(seed)
    data = digits(test_size=test_size, seed=rng, standardize=standardize, dtype="float64")
    tr = data.train_index  # rows of load_digits; position i of the training set is row tr[i]
    pos = np.arange(len(tr))
    if clients > len(tr):
        raise ValueError(f"clients must be <= {len(tr)} training points (got {clients})")
    if split == "iid":
        parts = np.array_split(pos, clients)
    else:
        parts = dirichlet_parts(rng, data.y_train, tr, clients, alpha)
    dt = getattr(torch, dtype)

    def pair(X, y):
        return torch.tensor(X, dtype=dt), torch.tensor(y, dtype=torch.int64)

    return {
        "clients": [pair(data.X_train[p], data.y_train[p]) for p in parts],
        "train": pair(data.X_train, data.y_train),
        "test": pair(data.X_test, data.y_test),
    }


def dirichlet_parts(rng, labels, rows, clients, alpha):
    """Training positions per client, label proportions from ``Dirichlet(alpha)`` (>= 8 each)."""
    pos = np.arange(len(rows))
    for _ in range(100):
        parts = [[] for _ in range(clients)]
        for k in range(10):
            idx = pos[labels == k]
            p = rng.dirichlet(alpha * np.ones(clients))
            cuts = (np.cumsum(p)[:-1] * len(idx)).astype(int)
            for m, chunk in enumerate(np.split(idx, cuts)):
                parts[m].extend(chunk.tolist())
        if min(len(p) for p in parts) >= 8:
            break
    # each client's points in load_digits row order
    return [np.array(sorted(p, key=rows.__getitem__), dtype=np.int64) for p in parts]


def ce_loss(logits: Any, y: Any):
    """The training loss ``F``: mean cross-entropy, ``log_softmax`` + ``gather`` (fast under vmap)."""
    return -logits.log_softmax(-1).gather(-1, y[..., None]).mean()


# ----------------------------------------------------------------------------------------
# flat-parameter plumbing shared by the simulator, the fast path and the gloo engine
# ----------------------------------------------------------------------------------------
class FlatParams:
    """Evaluate a module at a flat parameter vector (``torch.func.functional_call``)."""

    def __init__(self, module: Any):
        self.module = module
        self.names = [n for n, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        self.sizes = [p.numel() for _, p in module.named_parameters()]
        self.dim = int(sum(self.sizes))

    def init(self, dtype: Any):
        import torch

        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters()]).to(dtype)

    def __call__(self, flat: Any, x: Any):
        from torch.func import functional_call

        params, o = {}, 0
        for n, s, k in zip(self.names, self.shapes, self.sizes, strict=True):
            params[n] = flat[o : o + k].view(s)
            o += k
        return functional_call(self.module, params, (x,))


def plain_mlp(module: Any) -> list | None:
    """``[(in, out, relu), ...]`` if ``module`` is a stack of Linear(+ReLU) blocks, else None."""
    from torch import nn

    layers = []
    for blk in module:
        mods = list(blk) if isinstance(blk, nn.Sequential) else [blk]
        for mod in mods:
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                layers.append([mod.in_features, mod.out_features, False])
            elif isinstance(mod, nn.ReLU) and layers and not layers[-1][2]:
                layers[-1][2] = True
            else:
                return None
    return layers


def bmm_forward(layers: list, W: Any, X: Any):
    """Batched MLP: flat parameters ``W [N, d]`` on inputs ``X [N, B, in]`` -> ``[N, B, out]``.

    Parameter order as ``nn.Linear`` stores it (weight ``[out, in]`` row-major, then bias).
    """
    import torch

    o, z = 0, X
    for n_in, n_out, relu in layers:
        w = W[:, o : o + n_in * n_out].view(-1, n_out, n_in)
        o += n_in * n_out
        b = W[:, o : o + n_out]
        o += n_out
        z = torch.baddbmm(b[:, None, :], z, w.transpose(1, 2))
        if relu:
            z = z.clamp_min(0)
    return z


def ce_loss_rows(logits: Any, y: Any):
    """Per-row mean cross-entropy: ``[N, B, C]``, ``[N, B]`` -> ``[N]``."""
    return -logits.log_softmax(-1).gather(-1, y[..., None]).squeeze(-1).mean(-1)


def evaluator(client_net: Any, server_net: Any, train: Any, test: Any):
    """``eval_fn(xc, xs) -> {"loss": train loss, "acc": test accuracy}`` for the split model.

    Parameters
    ----------
    client_net, server_net : torch.nn.Module
        The two halves (their own parameters are ignored; flat vectors are passed in).
    train, test : tuple of tensors
        ``(X, y)`` pairs.

    Returns
    -------
    callable

    See: book/splitfed/02-unbalanced-updates.ipynb
    """
    import torch
    from torch import nn

    for name, net in (("client_net", client_net), ("server_net", server_net)):
        if not isinstance(net, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module (got {type(net).__name__})")
    for name, pair in (("train", train), ("test", test)):
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(isinstance(t, torch.Tensor) for t in pair)
            or len(pair[0]) != len(pair[1])
            or len(pair[0]) == 0
        ):
            raise TypeError(f"{name} must be a non-empty (X, y) pair of tensors of equal length")
    fc, fs = FlatParams(client_net), FlatParams(server_net)

    def eval_fn(xc, xs):
        with torch.no_grad():
            Xtr, ytr = train[0].to(xc.dtype), train[1]
            Xte, yte = test[0].to(xc.dtype), test[1]
            loss = float(ce_loss(fs(xs, fc(xc, Xtr)), ytr))
            acc = float((fs(xs, fc(xc, Xte)).argmax(1) == yte).double().mean())
        return {"loss": loss, "acc": acc}

    return eval_fn


def check_inputs(client_net, server_net, client_datasets, cfg, straggler=None):
    """The public simulators' inputs, checked once (``straggler``: None or a StragglerModel)."""
    from torch import nn

    check_instance("cfg", cfg, MUSplitFedConfig)
    if straggler is not None:
        check_instance("straggler", straggler, StragglerModel)
    for name, net in (("client_net", client_net), ("server_net", server_net)):
        if not isinstance(net, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module (got {type(net).__name__})")
    if not isinstance(client_datasets, list | tuple) or len(client_datasets) < cfg.clients:
        n = len(client_datasets) if isinstance(client_datasets, list | tuple) else None
        raise ValueError(
            f"client_datasets must hold at least cfg.clients = {cfg.clients} (X, y) pairs (got {n})"
        )
