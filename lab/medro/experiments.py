r"""Training and evaluation on grouped data: ERM, GroupDRO, multi-head GroupDRO and MEDRO.

* :func:`train` runs Algorithm 1 (``method="medro"``, ``variant="paper"`` Eq. 6 with ``γ``, or
  ``variant="code"`` as in the official code) or a baseline on the training split;
* :func:`predict` infers without group labels: the mean of the heads' logits (``"ensemble"``),
  a gate's mixture of the heads' logits (``"gate"``), or one head;
* :func:`fit_gate` fits the zero-initialised linear gate on a labelled validation split (frozen
  featurizer and heads); :func:`choose_inference` picks gate or ensemble on validation data;
* :func:`group_accuracy`, :func:`compare`, :func:`gamma_sweep` and :func:`contains_groupdro`
  are the chapter's experiments.

Our choices where the paper leaves freedom at this size: full-batch Adam steps on the 720
training rows, an MLP featurizer, the same ``η`` for GroupDRO and MEDRO; multi-head GroupDRO
trains every head with the GroupDRO loss under one group adversary (fed the heads' mean risks).

See: book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive
from lab.core.rates import mean_ci
from lab.core.runtime import resolve_device, smoke_steps

from .data import GroupSplit, WaterDigits
from .fast import group_risks, per_run, train_stacked
from .models import MultiHeadNet, check_model, make_featurizer
from .reference import VARIANTS, eg_update, medro_objective, update_pair_weights

__all__ = [
    "METHODS",
    "MODES",
    "TrainResult",
    "choose_inference",
    "compare",
    "contains_groupdro",
    "fit_gate",
    "gamma_sweep",
    "group_accuracy",
    "paired_ci",
    "predict",
    "train",
    "train_runs",
]

METHODS = ("erm", "groupdro", "groupdro_heads", "medro")
MODES = ("ensemble", "gate", "head")


@dataclass
class TrainResult:
    """A trained model with its adversary's history (``weights[t]`` every ``record_every`` steps)."""

    model: Any
    method: str
    variant: str
    gamma: float
    weights: np.ndarray
    risks: np.ndarray
    seconds: float
    info: dict = field(default_factory=dict)


def _check_data(data: Any) -> WaterDigits:
    if not isinstance(data, WaterDigits):
        raise TypeError(
            f"data must be a WaterDigits (lab.medro.water_digits), got {type(data).__name__}"
        )
    return data


def train(
    data: Any,
    method: str = "medro",
    *,
    variant: str = "paper",
    gamma: float = 0.5,
    eta: float = 0.05,
    steps: int = 300,
    lr: float = 1e-3,
    weight_decay: float = 1e-3,
    hidden: int = 64,
    feat_dim: int = 32,
    seed: int = 0,
    device: Any = "cpu",
    record_every: int = 10,
) -> TrainResult:
    """Train one method on ``data.train`` with full-batch Adam steps.

    Parameters
    ----------
    data : WaterDigits
    method : {"erm", "groupdro", "groupdro_heads", "medro"}
    variant : {"paper", "code"}
        MEDRO's loss: Eq. 6 with ``gamma`` (paper) or the official code's (γ = 1, averaged diagonal).
    gamma : float (>= 0)
    eta : float (>= 0)
        The adversary's exponentiated-gradient step (GroupDRO's and MEDRO's).
    steps : int (>= 1)
    lr, weight_decay : float (> 0, >= 0)
    hidden, feat_dim : int (>= 1)
    seed : int (>= 0)
    device : str or torch.device
    record_every : int (>= 1)

    Returns
    -------
    TrainResult

    See: book/medro/02-water-digits.ipynb
    """
    import torch
    import torch.nn.functional as F

    data = _check_data(data)
    method = check_choice("method", method, METHODS)
    variant = check_choice("variant", variant, VARIANTS)
    gamma = check_positive("gamma", gamma, allow_zero=True)
    eta = check_positive("eta", eta, allow_zero=True)
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
    hidden = check_int("hidden", hidden, 1)
    feat_dim = check_int("feat_dim", feat_dim, 1)
    seed = check_int("seed", seed, 0)
    record_every = check_int("record_every", record_every, 1)
    dev = resolve_device(device)
    x, y, g = data.train.tensors(dev)
    G = data.n_groups
    m = 1 if method in ("erm", "groupdro") else G
    model = _init_model(data, m, hidden, feat_dim, seed, dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    W = torch.full((m, G), 1.0 / (m * G), dtype=torch.float64, device=dev)  # Λ_0 = 1/m²
    q = torch.full((G,), 1.0 / G, dtype=torch.float64, device=dev)
    hist_w, hist_r = [], []
    t0 = time.perf_counter()
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for t in range(steps):
        logits = model(x)
        R, present = group_risks(logits, y, g, G)
        if method == "erm":
            loss = F.cross_entropy(logits[0], y)
            adv = q
        elif method == "groupdro":
            q = update_pair_weights(q, R[0], eta)
            loss = (q.to(R.dtype) * R[0]).sum()
            adv = q
        elif method == "groupdro_heads":
            q = update_pair_weights(q, R.mean(0), eta)
            loss = (q.to(R.dtype)[None, :] * R).sum(1).mean()
            adv = q
        else:
            W = eg_update(W, R, eta)  # λ ← λ exp(η R̂), / Σ over m² cells
            loss = medro_objective(R, W, gamma=gamma, variant=variant, present=present)
            adv = W
        if t % record_every == 0 or t == steps - 1:
            hist_w.append(adv.detach().cpu().numpy().copy())
            hist_r.append(R.detach().cpu().numpy().copy())
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return TrainResult(
        model,
        method,
        variant,
        float(gamma),
        np.array(hist_w),
        np.array(hist_r),
        time.perf_counter() - t0,
        {"eta": eta, "steps": steps, "seed": seed, "record_every": record_every},
    )


def _init_model(data: WaterDigits, m: int, hidden: int, feat_dim: int, seed: int, dev: Any):
    """The model :func:`train` starts from: drawn on the CPU right after ``manual_seed(seed)``."""
    import torch

    torch.manual_seed(seed)
    in_dim = data.train.x.shape[1]
    return MultiHeadNet(make_featurizer(in_dim, hidden, feat_dim), feat_dim, data.n_classes, m).to(
        dev
    )


#: the most runs :func:`train_runs` stacks in one loop: per run and step, a stack of about eight
#: cost the least on one CPU thread (fewer pay the per-op overhead, more leave the cache);
#: timings in benchmarks/bench_medro.py and benchmarks/results/medro-cpu.json
_BATCH = 8


def train_runs(
    data: Any,
    method: Any = "medro",
    *,
    seeds: Any = (0, 1, 2),
    gamma: Any = 0.5,
    variant: Any = "paper",
    eta: float = 0.05,
    steps: int = 300,
    lr: float = 1e-3,
    weight_decay: float = 1e-3,
    hidden: int = 64,
    feat_dim: int = 32,
    device: Any = "cpu",
    record_every: int = 10,
) -> list:
    """Many :func:`train` runs at once, batched (:func:`lab.medro.fast.train_stacked`):
    ``[train(data, method_i, seed=seed_i, gamma=γ_i, variant=variant_i, ...) for each i]``, the
    same runs up to rounding (the test checks the parameters within 2e-3; 3.3e-4 measured).

    Parameters
    ----------
    seeds : sequence of int (>= 0)
        One run per entry (repeats allowed, e.g. one per ``γ``).
    method, variant, gamma : one value, or a sequence with one entry per seed
        As in :func:`train`. Runs with one head (``"erm"``, ``"groupdro"``) and runs with one
        head per group are stacked in separate loops, at most 8 runs each.
    data, eta, steps, lr, weight_decay, hidden, feat_dim, device, record_every
        As in :func:`train`, shared by the runs.

    Returns
    -------
    list of TrainResult
        In the order of ``seeds``; ``seconds`` is each loop's time divided among its runs.

    See: book/medro/02-water-digits.ipynb
    """
    data = _check_data(data)
    if isinstance(seeds, str | bytes) or not hasattr(seeds, "__len__"):
        raise TypeError("seeds must be a sequence of integers")
    seeds = [check_int("seeds", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    B = len(seeds)

    methods = per_run("method", method, B, lambda k, v: check_choice(k, v, METHODS), "seed")
    variants = per_run("variant", variant, B, lambda k, v: check_choice(k, v, VARIANTS), "seed")
    gammas = per_run("gamma", gamma, B, lambda k, v: check_positive(k, v, allow_zero=True), "seed")
    hidden = check_int("hidden", hidden, 1)
    feat_dim = check_int("feat_dim", feat_dim, 1)
    dev = resolve_device(device)
    x, y, g = data.train.tensors(dev)
    G = data.n_groups
    heads = [1 if mth in ("erm", "groupdro") else G for mth in methods]
    results: list = [None] * B
    chunks = []  # runs of one head count, at most _BATCH per loop (larger ones gain nothing)
    for m in dict.fromkeys(heads):
        same = [i for i in range(B) if heads[i] == m]
        k = -(-len(same) // _BATCH)  # k contiguous near-equal pieces: methods stay in blocks
        cuts = [round(j * len(same) / k) for j in range(k + 1)]
        chunks += [(m, same[cuts[j] : cuts[j + 1]]) for j in range(k)]
    for m, idx in chunks:
        models = [_init_model(data, m, hidden, feat_dim, seeds[i], dev) for i in idx]
        out = train_stacked(
            models,
            x,
            y,
            g,
            G,
            method=[methods[i] for i in idx],
            variant=[variants[i] for i in idx],
            gamma=[gammas[i] for i in idx],
            eta=eta,
            steps=steps,
            lr=lr,
            weight_decay=weight_decay,
            record_every=record_every,
        )
        for b, (i, model) in enumerate(zip(idx, models, strict=True)):
            model.eval()
            info = {"eta": eta, "steps": steps, "seed": seeds[i], "record_every": record_every}
            results[i] = TrainResult(
                model,
                methods[i],
                variants[i],
                float(gammas[i]),
                out["weights"][b],
                out["risks"][:, b],
                out["seconds"] / len(idx),
                {**info, "batched": len(idx)},
            )
    return results


def _model_of(model: Any):
    return check_model(model.model if isinstance(model, TrainResult) else model)


def predict(model: Any, x: Any, mode: str = "ensemble", *, gate: Any = None, head: int = 0):
    """Logits ``[n, C]`` without group labels.

    ``"ensemble"``: the mean of the heads' logits (the paper's default); ``"gate"``:
    ``Σ_k softmax(gate(φ(x)))_k · logits_k`` with a gate from :func:`fit_gate`; ``"head"``: one head.

    See: book/medro/02-water-digits.ipynb
    """
    import torch

    net = _model_of(model)
    mode = check_choice("mode", mode, MODES)
    if not torch.is_tensor(x) or x.ndim != 2:
        raise ValueError("x must be a 2-D tensor of inputs")
    with torch.no_grad():
        z = net.features(x)
        logits = net.head_logits(z)
        if mode == "ensemble":
            return logits.mean(0)
        if mode == "head":
            head = check_int("head", head, 0, net.n_heads - 1)
            return logits[head]
        if not isinstance(gate, torch.nn.Linear) or gate.out_features != net.n_heads:
            raise ValueError(f"mode='gate' needs gate=fit_gate(...) with {net.n_heads} outputs")
        p = torch.softmax(gate(z), dim=1)  # [n, m]
        return torch.einsum("nm,mnc->nc", p, logits)


def fit_gate(model: Any, split: Any, *, steps: int = 200, lr: float = 0.5):
    """The gate: one zero-initialised linear layer features → heads, fitted with SGD (no weight
    decay) to predict the group of a labelled split, featurizer and heads frozen.

    See: book/medro/02-water-digits.ipynb
    """
    net = _model_of(model)
    if not isinstance(split, GroupSplit):
        raise TypeError(f"split must be a GroupSplit, got {type(split).__name__}")
    steps = check_int("steps", steps, 1)
    lr = check_positive("lr", lr)
    return _fit_gates([net], [split], steps=steps, lr=lr)[0]


def _fit_gates(nets: list, splits: list, *, steps: int = 200, lr: float = 0.5) -> list:
    """:func:`fit_gate` for many models at once (``splits[b]`` for ``nets[b]``, all splits of one
    size): the gates stacked ``[B, m, k]``, one batched product per step. The gradient of the
    mean cross-entropy is written out, ``(softmax - onehot) / n`` (what autograd computes for a
    linear layer), and plain SGD steps on it."""
    import torch
    import torch.nn.functional as F

    m = nets[0].n_heads
    dev = nets[0].weight.device
    if any(net.n_heads != m for net in nets) or len({len(s.g) for s in splits}) != 1:
        raise ValueError("the gates fitted together need one head count and one split size")
    zs, gs = [], []
    for net, split in zip(nets, splits, strict=True):
        x, _, g = split.tensors(dev)
        if int(g.max()) >= m:
            raise ValueError("the gate needs one head per group")
        with torch.no_grad():
            zs.append(net.features(x))
        gs.append(g)
    z = torch.stack(zs)  # [B, n, k]
    onehot = F.one_hot(torch.stack(gs), m).to(z.dtype)  # [B, n, m]
    B, n, k = z.shape
    w = z.new_zeros(B, m, k)
    b = z.new_zeros(B, m)
    with torch.no_grad():
        for _ in range(steps):
            err = torch.softmax(torch.baddbmm(b[:, None, :], z, w.transpose(1, 2)), -1) - onehot
            err /= n  # d(mean cross-entropy) / d(logits)
            w.sub_(torch.bmm(err.transpose(1, 2), z), alpha=lr)
            b.sub_(err.sum(1), alpha=lr)
    gates = []
    for i in range(B):
        gate = torch.nn.Linear(k, m).to(dev)
        with torch.no_grad():
            gate.weight.copy_(w[i])
            gate.bias.copy_(b[i])
        gates.append(gate)
    return gates


def group_accuracy(
    model: Any, split: Any, mode: str = "ensemble", *, gate: Any = None, head: int = 0
) -> dict:
    """Accuracy per group, the worst group and the average (over the split's rows).

    See: book/medro/02-water-digits.ipynb
    """
    if not isinstance(split, GroupSplit):
        raise TypeError(f"split must be a GroupSplit, got {type(split).__name__}")
    net = _model_of(model)
    x, y, g = split.tensors(net.weight.device)
    pred = predict(net, x, mode, gate=gate, head=head).argmax(1)
    ok = (pred == y).cpu().numpy()
    gs = g.cpu().numpy()
    per = np.array([ok[gs == j].mean() if (gs == j).any() else np.nan for j in range(4)])
    return {"groups": per, "worst": float(np.nanmin(per)), "average": float(ok.mean())}


def _halves(val: GroupSplit, seed: int) -> tuple[GroupSplit, GroupSplit]:
    """:func:`choose_inference`'s split of ``val``: per group, a random half to fit the gate on
    and the rest to score gate and ensemble on (drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    fit_idx, score_idx = [], []
    for j in np.unique(val.g):
        rows = rng.permutation(np.flatnonzero(val.g == j))
        fit_idx.append(rows[: len(rows) // 2])
        score_idx.append(rows[len(rows) // 2 :])

    def take(idx):
        i = np.concatenate(idx)
        return GroupSplit(val.x[i], val.y[i], val.a[i], val.g[i])

    return take(fit_idx), take(score_idx)


def _choose(model: Any, gate: Any, held: GroupSplit) -> dict:
    scores = {
        "ensemble": group_accuracy(model, held)["worst"],
        "gate": group_accuracy(model, held, "gate", gate=gate)["worst"],
    }
    mode = "gate" if scores["gate"] > scores["ensemble"] else "ensemble"
    return {"mode": mode, "gate": gate, "val_worst": scores}


def choose_inference(model: Any, val: Any, *, seed: int = 0) -> dict:
    """Gate or ensemble, chosen on validation data: the gate is fitted on one half of ``val``,
    both are scored (worst-group accuracy) on the other half, the better one wins (ties: ensemble).

    Returns ``{"mode", "gate", "val_worst": {mode: accuracy}}``.

    See: book/medro/02-water-digits.ipynb
    """
    if not isinstance(val, GroupSplit):
        raise TypeError(f"val must be a GroupSplit, got {type(val).__name__}")
    seed = check_int("seed", seed, 0)
    fit, held = _halves(val, seed)
    return _choose(model, fit_gate(model, fit), held)


def paired_ci(a: Any, b: Any, *, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of the paired differences ``a - b`` over seeds with its Student-t interval:
    ``(mean, lo, hi)``.

    See: book/medro/02-water-digits.ipynb
    """

    try:
        d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"a and b must be arrays of numbers ({err})") from None
    if d.ndim != 1 or d.size < 2 or not np.isfinite(d).all():
        raise ValueError("a and b must be finite 1-D arrays of one length >= 2 (one per seed)")
    level = check_positive("level", level)
    if level >= 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    ci = mean_ci(d, level=level)
    return ci.mean, ci.low, ci.high


def compare(data: Any, methods: Any = METHODS, *, seeds: Any = (0, 1, 2), **kw: Any) -> dict:
    """Test worst-group and average accuracy (ensemble inference) of each method and seed
    (``"medro_code"``: MEDRO with the official code's loss), plus MEDRO's gate and its
    validation-chosen inference (``"medro_gate"``, ``"medro_chosen"``) and, as the gate's
    control, a gate fitted on the skewed training split instead (``"medro_gate_train"``).
    Returns ``{name: {"worst": [...], "average": [...]}}``; extra keywords go to :func:`train`
    (all runs are trained at once by :func:`train_runs`).

    See: book/medro/02-water-digits.ipynb
    """
    data = _check_data(data)
    if isinstance(methods, str):
        raise TypeError("methods must be a sequence of method names")
    methods = [check_choice("methods", mth, (*METHODS, "medro_code")) for mth in methods]
    out: dict = {}

    def add(name, acc):
        out.setdefault(name, {"worst": [], "average": []})
        out[name]["worst"].append(acc["worst"])
        out[name]["average"].append(acc["average"])

    seeds = [int(s) for s in seeds]
    names = list(dict.fromkeys(methods))
    # "medro_code": the official code's loss (gamma = 1, averaged diagonal)
    variant = [("code" if mth == "medro_code" else kw.get("variant", "paper")) for mth in names]
    runs = train_runs(  # every (method, seed) run in two batched loops (one head / m heads)
        data,
        [("medro" if mth == "medro_code" else mth) for mth in names for _ in seeds],
        seeds=[s for _ in names for s in seeds],
        **{**kw, "variant": [v for v in variant for _ in seeds]},
    )
    by_name = {mth: runs[k * len(seeds) : (k + 1) * len(seeds)] for k, mth in enumerate(names)}
    if "medro" in by_name:  # every MEDRO run's two gates, fitted together (_fit_gates)
        nets = [_model_of(res) for res in by_name["medro"]]
        halves = [_halves(data.val, s) for s in seeds]
        on_val = _fit_gates(nets, [h[0] for h in halves])
        # the gate's control: fitted on the (skewed) training split, not on val
        on_train = _fit_gates(nets, [data.train] * len(nets))
    for i, _ in enumerate(seeds):
        for mth in methods:
            res = by_name[mth][i]
            add(mth, group_accuracy(res, data.test))
            if mth == "medro":
                choice = _choose(res, on_val[i], halves[i][1])
                add("medro_gate", group_accuracy(res, data.test, "gate", gate=choice["gate"]))
                add("medro_gate_train", group_accuracy(res, data.test, "gate", gate=on_train[i]))
                add(
                    "medro_chosen",
                    group_accuracy(res, data.test, choice["mode"], gate=choice["gate"]),
                )
    return {k: {kk: np.array(vv) for kk, vv in v.items()} for k, v in out.items()}


def gamma_sweep(data: Any, gammas: Any, *, seeds: Any = (0, 1, 2), **kw: Any) -> dict:
    """MEDRO (paper variant) test worst-group and average accuracy for each ``γ`` and seed.

    See: book/medro/02-water-digits.ipynb
    """
    data = _check_data(data)
    gammas = [check_positive("gammas", gm, allow_zero=True) for gm in gammas]
    seeds = [int(s) for s in seeds]
    worst = np.zeros((len(gammas), len(seeds)))
    avg = np.zeros_like(worst)
    runs = train_runs(  # every (γ, seed) run in one batched loop
        data,
        "medro",
        seeds=[s for _ in gammas for s in seeds],
        gamma=[gm for gm in gammas for _ in seeds],
        **kw,
    )
    for k, res in enumerate(runs):
        acc = group_accuracy(res, data.test)
        worst[k // len(seeds), k % len(seeds)], avg[k // len(seeds), k % len(seeds)] = (
            acc["worst"],
            acc["average"],
        )
    return {"gammas": np.array(gammas), "worst": worst, "average": avg}


def contains_groupdro(
    data: Any, *, steps: int = 10, eta: float = 0.5, lr: float = 0.05, seed: int = 0
) -> dict:
    """Sec. 3.5's "MEDRO contains GroupDRO", checked exactly on ``data.train``.

    A single head is copied into all ``m`` heads (identical experts). Then (i) every EG step on
    the ``m × m`` weights keeps their column sums equal to GroupDRO's group weights; (ii) the
    worst-cell term ``Σ λ ⊙ R`` equals GroupDRO's loss ``Σ_g q_g R_g``, and with the diagonal
    weights ``λ = diag(q)`` so does ``Σ_k λ_kk R_kk``; (iii) training on the worst-cell term moves
    the parameters exactly as GroupDRO does. Returns the largest gaps (float64).

    See: book/medro/01-official-algorithm.ipynb
    """
    import torch

    data = _check_data(data)
    steps = check_int("steps", steps, 1)
    eta = check_positive("eta", eta, allow_zero=True)
    lr = check_positive("lr", lr)
    seed = check_int("seed", seed, 0)
    x, y, g = data.train.tensors()
    x = x.double()
    G = data.n_groups
    nets = []
    for _ in range(2):
        torch.manual_seed(seed)
        nets.append(MultiHeadNet(make_featurizer(x.shape[1], 16, 8), 8, 2, 1).double())
    opts = [torch.optim.SGD(n.parameters(), lr=lr) for n in nets]
    W = torch.full((G, G), 1.0 / G**2, dtype=torch.float64)
    q = torch.full((G,), 1.0 / G, dtype=torch.float64)
    gaps = {"column_sums": 0.0, "worst_cell_term": 0.0, "diagonal_term": 0.0, "parameters": 0.0}
    steps = smoke_steps(steps)  # LAB_SMOKE=1: a few iterations
    for _ in range(steps):
        R_dro = group_risks(nets[0](x), y, g, G)[0][0]
        R_med = group_risks(nets[1](x).expand(G, -1, -1), y, g, G)[0]  # m identical heads
        q = update_pair_weights(q, R_dro, eta)
        W = eg_update(W, R_med, eta)
        loss_dro = (q * R_dro).sum()
        loss_med = (W * R_med).sum()
        diag = (torch.diag(q) * R_med).sum()
        gaps["column_sums"] = max(gaps["column_sums"], float((W.sum(0) - q).abs().max()))
        gap_cell, gap_diag = (loss_med - loss_dro).abs(), (diag - loss_dro).abs()
        gaps["worst_cell_term"] = max(gaps["worst_cell_term"], float(gap_cell.detach()))
        gaps["diagonal_term"] = max(gaps["diagonal_term"], float(gap_diag.detach()))
        for opt, loss in zip(opts, (loss_dro, loss_med), strict=True):
            opt.zero_grad()
            loss.backward()
            opt.step()
    p0 = torch.cat([p.detach().reshape(-1) for p in nets[0].parameters()])
    p1 = torch.cat([p.detach().reshape(-1) for p in nets[1].parameters()])
    gaps["parameters"] = float((p0 - p1).abs().max())
    return gaps
