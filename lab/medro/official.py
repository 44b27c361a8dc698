"""Parity with the authors' code: our MEDRO kernels replayed on the official-code fixture.

``lab/core/official/medro_official.json`` holds what the authors' SubpopBench classes
(``MEDRO``, ``GroupDRO`` and ``MEDRO_gate`` of ``SubpopBench/subpopbench/learning/algorithms.py``
in ``jyjeongku/MEDRO``, run in a scratch folder outside this project) computed on a small shared
tabular instance: the adversary's weights and the loss after each of 12 SGD steps, the final
parameters, and the ensemble and gate predictions, float64, with its provenance.

:func:`official_parity` trains the same network from the same initial weights on the same
minibatches with our kernels (:func:`~lab.medro.fast.group_risks`,
:func:`~lab.medro.reference.eg_update`, :func:`~lab.medro.reference.update_pair_weights`,
:func:`~lab.medro.reference.medro_objective` with ``variant="code"``) and ``torch.optim.SGD``
as the authors build it, and returns the differences.

See: book/medro/01-official-algorithm.ipynb
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lab.core.fixtures import official_fixture

__all__ = ["OFFICIAL_FIXTURE", "official_parity"]

#: the authors' MEDRO / GroupDRO / gate on a shared instance (``lab/core/official/``)
OFFICIAL_FIXTURE = official_fixture("medro_official.json")


def _network(init: dict, n_heads: int):
    """Our ``MultiHeadNet`` holding the authors' initial weights (their tabular MLP featurizer
    ``input -> ReLU -> output`` and one ``nn.Linear`` head per group)."""
    import torch
    from torch import nn

    from lab.medro.models import MultiHeadNet

    def t(key):
        return torch.tensor(init[key], dtype=torch.float64)

    w_in, w_out = t("featurizer.input.weight"), t("featurizer.output.weight")
    feat = nn.Sequential(
        nn.Linear(w_in.shape[1], w_in.shape[0]),
        nn.ReLU(),
        nn.Linear(w_out.shape[1], w_out.shape[0]),
    ).double()
    net = MultiHeadNet(feat, w_out.shape[0], t("heads.0.weight").shape[0], n_heads).double()
    with torch.no_grad():
        feat[0].weight.copy_(w_in)
        feat[0].bias.copy_(t("featurizer.input.bias"))
        feat[2].weight.copy_(w_out)
        feat[2].bias.copy_(t("featurizer.output.bias"))
        net.weight.copy_(torch.stack([t(f"heads.{h}.weight") for h in range(n_heads)]))
        net.bias.copy_(torch.stack([t(f"heads.{h}.bias") for h in range(n_heads)]))
    return net


def _official_net(init: dict):
    """The authors' ``nn.Sequential(featurizer, classifier)`` (GroupDRO: one head)."""
    return {
        "featurizer.input.weight": init["0.input.weight"],
        "featurizer.input.bias": init["0.input.bias"],
        "featurizer.output.weight": init["0.output.weight"],
        "featurizer.output.bias": init["0.output.bias"],
        "heads.0.weight": init["1.weight"],
        "heads.0.bias": init["1.bias"],
    }


def _params(net) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in net.parameters()])


def _official_params(final: dict, n_heads: int) -> np.ndarray:
    """The authors' final parameters in our ``MultiHeadNet.parameters()`` order."""
    keys = ["featurizer.input.weight", "featurizer.input.bias"]
    keys += ["featurizer.output.weight", "featurizer.output.bias"]
    flat = [np.ravel(final[k]) for k in keys]
    flat.append(np.ravel([final[f"heads.{h}.weight"] for h in range(n_heads)]))
    flat.append(np.ravel([final[f"heads.{h}.bias"] for h in range(n_heads)]))
    # MultiHeadNet.parameters(): its own weight and bias (the heads), then the featurizer's
    return np.concatenate(flat[4:] + flat[:4])


def official_parity(
    path: str | Path | None = None, *, variant: str = "code", gamma: float = 0.5
) -> dict[str, dict[str, float]]:
    """Replay the fixture with our kernels and return the largest differences.

    MEDRO: each step computes ``R = group_risks(logits, y, 2 y + a, 4)``, the weights
    ``eg_update(W, R, groupdro_eta)`` and the loss ``medro_objective(R, W, variant="code")``,
    then one ``torch.optim.SGD`` step (momentum 0.9, the fixture's learning rate and weight
    decay). GroupDRO: one head, ``q = update_pair_weights(q, R[0], groupdro_eta)``, loss
    ``Σ q R``. Gate: :func:`lab.medro.inference.predict` with ``mode="gate"`` and the
    fixture's gate layer on the trained MEDRO network.

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).
    variant : {"code", "paper"}
        MEDRO's loss in our replay: the official code's (the parity check) or the paper's Eq. 6
        with ``gamma`` (which the official code does not run: the differences then show it).
    gamma : float
        ``>= 0``, Eq. 6's weight of the worst-cell term (``variant="paper"`` only).

    Returns
    -------
    dict
        ``{"medro": {...}, "groupdro": {...}, "gate": {...}}``: for each, the largest absolute
        difference from the official values of ``weights`` (every step), ``loss`` (every step),
        ``params`` (after the last step) and ``predict`` (logits on the test rows).

    See: book/medro/01-official-algorithm.ipynb
    """
    from lab.core.checks import check_choice, check_positive
    from lab.core.runtime import small_problem_threads

    variant = check_choice("variant", variant, ("code", "paper"))
    gamma = check_positive("gamma", gamma, allow_zero=True)
    from lab.core.fixtures import load_fixture

    data = load_fixture(path, OFFICIAL_FIXTURE)
    with small_problem_threads(1):  # a few hundred tiny ops: one thread is fastest
        return _replay(data, variant, gamma)


def _replay(data: dict, variant: str, gamma: float) -> dict[str, dict[str, float]]:
    import torch

    from lab.medro.fast import group_risks_unchecked
    from lab.medro.inference import predict
    from lab.medro.reference import eg_update_unchecked, medro_objective_unchecked

    inst, hp = data["instance"], data["instance"]["hparams"]
    n_groups = len(data["medro"]["weights"][0])  # classes x attributes, one head each
    n_attr = n_groups // 2
    batches = [
        (
            torch.tensor(b["x"], dtype=torch.float64),
            torch.tensor(b["y"]),
            torch.tensor(b["y"]) * n_attr + torch.tensor(b["a"]),
        )
        for b in inst["minibatches"]
    ]
    x_test = torch.tensor(inst["x_test"], dtype=torch.float64)
    eta = float(hp["groupdro_eta"])
    out = {}
    for method, heads in (("medro", n_groups), ("groupdro", 1)):
        ref = data[method]
        init = ref["init"] if method == "medro" else _official_net(ref["init"])
        net = _network(init, heads)
        opt = torch.optim.SGD(
            net.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"], momentum=0.9
        )
        shape = (n_groups, n_groups) if heads > 1 else (n_groups,)
        W = torch.full(shape, 1.0 / int(np.prod(shape)), dtype=torch.float64)  # uniform start
        dw, dl = [], []
        for t, (x, y, g) in enumerate(batches):
            R, present = group_risks_unchecked(net(x), y, g, n_groups)
            if heads > 1:
                W = eg_update_unchecked(W, R, eta)  # λ ← λ exp(η R), / Σ over the m² cells
                loss = medro_objective_unchecked(R, W, gamma, variant, present)
            else:
                W = eg_update_unchecked(W, R[0], eta)  # q ← q exp(η R), / Σ
                loss = (W * R[0]).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            dw.append(float(np.abs(W.numpy() - np.asarray(ref["weights"][t])).max()))
            dl.append(abs(float(loss.detach()) - ref["losses"][t]))
        final = ref["final"] if method == "medro" else _official_net(ref["final"])
        pred = predict(net, x_test, "ensemble").numpy()
        out[method] = {
            "weights": max(dw),
            "loss": max(dl),
            "params": float(np.abs(_params(net) - _official_params(final, heads)).max()),
            "predict": float(np.abs(pred - np.asarray(ref["predict"])).max()),
        }
        if method == "medro":
            medro_net = net
    gate = torch.nn.Linear(medro_net.feat_dim, n_groups).double()
    with torch.no_grad():
        gate.weight.copy_(torch.tensor(data["gate"]["gate_weight"], dtype=torch.float64))
        gate.bias.copy_(torch.tensor(data["gate"]["gate_bias"], dtype=torch.float64))
    pred = predict(medro_net, x_test, "gate", gate=gate).numpy()
    out["gate"] = {"predict": float(np.abs(pred - np.asarray(data["gate"]["predict"])).max())}
    return out
