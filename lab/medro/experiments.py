r"""The chapter's experiments on water digits: the comparison of methods over seeds, the ``γ``
sweep, and Sec. 3.5's "MEDRO contains GroupDRO".

* :func:`compare` trains every (method, seed) run at once (:func:`~lab.medro.training.train_runs`)
  and scores each seed through :func:`lab.core.sweep.sweep` (test worst-group and average
  accuracy; MEDRO's gate, its control and the validation-chosen inference);
* :func:`gamma_sweep` does the same over ``γ``;
* :func:`contains_groupdro` checks the reduction to GroupDRO to round-off;
* :func:`paired_ci` is the paired interval the notebooks read.

The trained comparisons are kept on disk (:func:`lab.core.diskcache.disk_memo`, keyed on the
chapter's code, the data, the settings and the numerics).

See: book/medro/02-water-digits.ipynb
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.core.checks import check_choice, check_int, check_positive
from lab.core.diskcache import disk_memo
from lab.core.rates import mean_ci
from lab.core.runtime import resolve_device, smoke_steps
from lab.core.sweep import sweep

from .fast import group_risks_unchecked
from .inference import choose_on, fit_gates_unchecked, group_accuracy, validation_halves
from .models import MultiHeadNet, make_featurizer
from .reference import eg_update_unchecked
from .settings import as_settings
from .training import METHODS, check_data, train_runs

__all__ = ["compare", "contains_groupdro", "gamma_sweep", "paired_ci"]


def compare(
    data: Any,
    methods: Any = METHODS,
    settings: Any = None,
    *,
    seeds: Any = (0, 1, 2),
    device: Any = "cpu",
    **changes: Any,
) -> dict:
    """Test worst-group and average accuracy (ensemble inference) of each method and seed
    (``"medro_code"``: MEDRO with the official code's loss), plus MEDRO's gate and its
    validation-chosen inference (``"medro_gate"``, ``"medro_chosen"``) and, as the gate's
    control, a gate fitted on the skewed training split instead (``"medro_gate_train"``).

    Parameters
    ----------
    data : WaterDigits
    methods : sequence of {"erm", "groupdro", "groupdro_heads", "medro", "medro_code"}
    settings : TrainSettings, optional
        Shared by every run (``**changes`` replace some of its fields).
    seeds : sequence of distinct int (>= 0)
        The paired seeds: seed ``s`` of one method with seed ``s`` of another.
    device : str or torch.device

    Returns
    -------
    dict
        ``{name: {"worst": array over seeds, "average": array over seeds}}``.

    See: book/medro/02-water-digits.ipynb
    """
    data = check_data(data)
    if isinstance(methods, str):
        raise TypeError("methods must be a sequence of method names")
    methods = [check_choice("methods", mth, (*METHODS, "medro_code")) for mth in methods]
    seeds = _seeds(seeds)
    s = as_settings(settings, changes)
    return _compare(data, tuple(methods), s, seeds, str(resolve_device(device)))


def _seeds(seeds: Any) -> tuple:
    if isinstance(seeds, str | bytes) or not hasattr(seeds, "__iter__"):
        raise TypeError("seeds must be a sequence of integers")
    out = tuple(check_int("seeds", x, 0) for x in seeds)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds must be distinct integers >= 0, at least one, got {out}")
    return out


@disk_memo
def _compare(data, methods: tuple, s, seeds: tuple, device: str) -> dict:
    """:func:`compare` on checked arguments (kept on disk)."""
    names = list(dict.fromkeys(methods))
    # "medro_code": the official code's loss (gamma = 1, averaged diagonal)
    runs = train_runs(  # every (method, seed) run in two batched loops (one head / m heads)
        data,
        [("medro" if mth == "medro_code" else mth) for mth in names for _ in seeds],
        s,
        seeds=[x for _ in names for x in seeds],
        variant=[("code" if mth == "medro_code" else "paper") for mth in names for _ in seeds],
        device=device,
    )
    by_name = {mth: runs[k * len(seeds) : (k + 1) * len(seeds)] for k, mth in enumerate(names)}
    gates = _gates(data, by_name.get("medro"), seeds)
    col = {seed: i for i, seed in enumerate(seeds)}

    def score(name: str, seed: int) -> dict:
        i = col[seed]
        res = by_name[name][i]
        acc = group_accuracy(res, data.test)
        out = {"worst": acc["worst"], "average": acc["average"]}
        if name == "medro":
            out.update(_gate_scores(res, data.test, gates, i))
        return out

    table = sweep(score, {"name": names}, seeds=seeds, desc="medro: scores")
    out: dict = {}
    for name in names:
        keys = ["", "_gate", "_gate_train", "_chosen"] if name == "medro" else [""]
        for key in keys:
            out[name + key] = {
                kk: table.values(kk + key if key else kk, name=name) for kk in ("worst", "average")
            }
    return out


def _gates(data, medro_runs, seeds) -> dict | None:
    """Every MEDRO run's two gates, fitted together: on one half of ``val`` (with the other
    half to choose gate or ensemble on) and, the gate's control, on the skewed training split."""
    if medro_runs is None:
        return None
    nets = [res.model for res in medro_runs]
    halves = [validation_halves(data.val, x) for x in seeds]
    on_val = fit_gates_unchecked(nets, [h[0] for h in halves])
    on_train = fit_gates_unchecked(nets, [data.train] * len(nets))
    return {"halves": halves, "on_val": on_val, "on_train": on_train}


def _gate_scores(res, test, gates: dict, i: int) -> dict:
    choice = choose_on(res, gates["on_val"][i], gates["halves"][i][1])
    out = {}
    for key, acc in (
        ("_gate", group_accuracy(res, test, "gate", gate=choice["gate"])),
        ("_gate_train", group_accuracy(res, test, "gate", gate=gates["on_train"][i])),
        ("_chosen", group_accuracy(res, test, choice["mode"], gate=choice["gate"])),
    ):
        out["worst" + key], out["average" + key] = acc["worst"], acc["average"]
    return out


def gamma_sweep(
    data: Any,
    gammas: Any,
    settings: Any = None,
    *,
    seeds: Any = (0, 1, 2),
    device: Any = "cpu",
    **changes: Any,
) -> dict:
    """MEDRO (paper variant) test worst-group and average accuracy for each ``γ`` and seed.

    Returns ``{"gammas", "worst" [n_gammas, n_seeds], "average" [n_gammas, n_seeds]}``.

    See: book/medro/02-water-digits.ipynb
    """
    data = check_data(data)
    if isinstance(gammas, str | bytes) or not hasattr(gammas, "__iter__"):
        raise TypeError("gammas must be a sequence of numbers >= 0")
    gammas = tuple(check_positive("gammas", gm, allow_zero=True) for gm in gammas)
    if not gammas:
        raise ValueError("gammas must hold at least one value")
    seeds = _seeds(seeds)
    s = as_settings(settings, changes)
    return _gamma_sweep(data, gammas, s, seeds, str(resolve_device(device)))


@disk_memo
def _gamma_sweep(data, gammas: tuple, s, seeds: tuple, device: str) -> dict:
    """:func:`gamma_sweep` on checked arguments (kept on disk)."""
    runs = train_runs(  # every (γ, seed) run in one batched loop
        data,
        "medro",
        s,
        seeds=[x for _ in gammas for x in seeds],
        gamma=[gm for gm in gammas for _ in seeds],
        device=device,
    )
    at = {
        (gm, x): runs[k * len(seeds) + j]
        for k, gm in enumerate(gammas)
        for j, x in enumerate(seeds)
    }

    def score(gamma: float, seed: int) -> dict:
        acc = group_accuracy(at[(gamma, seed)], data.test)
        return {"worst": acc["worst"], "average": acc["average"]}

    table = sweep(score, {"gamma": list(gammas)}, seeds=seeds, desc="medro: γ sweep")
    worst = np.array([table.values("worst", gamma=gm) for gm in gammas])
    avg = np.array([table.values("average", gamma=gm) for gm in gammas])
    return {"gammas": np.array(gammas), "worst": worst, "average": avg}


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

    data = check_data(data)
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
        R_dro = group_risks_unchecked(nets[0](x), y, g, G)[0][0]
        R_med = group_risks_unchecked(nets[1](x).expand(G, -1, -1), y, g, G)[0]  # m equal heads
        q = eg_update_unchecked(q, R_dro, eta)
        W = eg_update_unchecked(W, R_med, eta)
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
