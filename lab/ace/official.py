"""Parity with the authors' code: our `ACE` engine replayed on the official-code fixture.

``lab/core/official/ace_official.json`` holds the homotopy coefficients, multipliers and
slacks of the authors' primal-dual loop (``run_epoch`` and ``compute_slacks`` of
``Steerable-E3-GNN/nbody/train_nbody.py`` in ``andreimano/ACE``, run in a scratch folder
outside this project) on a small shared instance: a two-layer homotopy model
``L2(tanh(L1 x))``, ``L_i = eq_i + gamma_i neq_i``, on 20 points, float64, with its provenance.

See: book/ace/01-homotopy-and-duals.ipynb
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lab.core.fixtures import official_fixture

__all__ = ["OFFICIAL_FIXTURE", "official_parity"]

#: the authors' primal-dual loop on a shared instance (``lab/core/official/``)
OFFICIAL_FIXTURE = official_fixture("ace_official.json")


def official_parity(path: str | Path | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Replay the fixture's cases with `ACE` (same model, data, optimizers and settings).

    Equality cases run ``ACE(mode="equality", aug=c, dual_opt=<the primal optimizer's kind>)``,
    as the authors' ``train()`` pairs them (Adam or SGD on the multipliers); the resilient case
    runs ``ACE(mode="resilient", rho=2 rho)`` (their price is ``rho ||u||^2``, ours
    ``rho/2 ||u||^2``).

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).

    Returns
    -------
    dict
        ``case name -> {"gamma": array (epochs,), "lambda": array (epochs,)}``: the largest
        absolute difference from the official values after each step. Case names look like
        ``"equality adam c=0"`` and ``"resilient adam"``.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    import torch
    from torch import nn

    from lab.ace.layer import HomotopyLayer
    from lab.ace.optim import ACE
    from lab.core.fixtures import load_fixture

    data = load_fixture(path, OFFICIAL_FIXTURE)
    inst = data["instance"]
    X = torch.tensor(inst["X"], dtype=torch.float64)
    Y = torch.tensor(inst["Y"], dtype=torch.float64)

    def linear(w):
        layer = nn.Linear(len(w[0]), len(w), bias=False).double()
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(w, dtype=torch.float64))
        return layer

    out = {}
    for case in data["cases"]:
        w = inst["init"]
        model = nn.Sequential(
            HomotopyLayer(linear(w["eq1"]), linear(w["neq1"])),
            nn.Tanh(),
            HomotopyLayer(linear(w["eq2"]), linear(w["neq2"])),
        )
        kind = case["optimizer"]
        opt = (torch.optim.Adam if kind == "adam" else torch.optim.SGD)(
            list(model.parameters()), lr=case["lr"]
        )
        resilient = bool(case["resilience"])
        ace = ACE(
            model,
            [opt],
            mode="resilient" if resilient else "equality",
            dual_lr=case["dual_lr"],
            rho=2 * case["rho"],
            aug=case["auglag_const"],
            dual_opt=kind,
        )
        dg, dl = [], []
        for k in range(inst["epochs"]):
            step = ace.step(((model(X) - Y) ** 2).sum(-1).mean())
            dg.append(float(np.abs(step["gamma"] - case["gamma"][k]).max()))
            dl.append(float(np.abs(step["lam"] - case["lambda"][k]).max()))
        name = f"resilient {kind}" if resilient else f"equality {kind} c={case['auglag_const']:g}"
        out[name] = {"gamma": np.array(dg), "lambda": np.array(dl)}
    return out
