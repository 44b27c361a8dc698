"""Parity with the authors' code: our AdaDRO kernels replayed on the official-code fixture.

``lab/core/official/ot_dro_official.json`` holds what the authors' loss and filters
(``AdaDROLoss`` in ``losses/adadro_loss.py``, ``ReferenceDistributionFilter`` in
``utils/filtering_o1.py`` and ``utils/filtering.py`` of ``h305142/AdaDRO``, run in a scratch
folder outside this project) computed on small shared instances, float64, with its provenance.
:func:`official_parity` computes the same quantities with :func:`~lab.ot_dro.semantic_cost`,
:func:`~lab.ot_dro.worst_case_weights` and :func:`~lab.ot_dro.refine_reference` and returns
the differences.

See: book/ot_dro/02-calibration-and-shift.ipynb
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lab.core.fixtures import official_fixture

__all__ = ["OFFICIAL_FIXTURE", "OFFICIAL_GUARD", "official_parity"]

#: the authors' loss and filters on shared instances (``lab/core/official/``)
OFFICIAL_FIXTURE = official_fixture("ot_dro_official.json")
#: the constant the official ``compute_worst_case_distribution`` adds to ``lam * eps`` (and to
#: the normalisers): ``exponent / (lam * eps + 1e-8)``
OFFICIAL_GUARD = 1e-8


def _max_abs(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


def official_parity(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """Replay the fixture's loss and filter cases with our kernels.

    Loss cases: the cost ``semantic_cost(zp, yp, zq, yq, W)`` (``alpha_x = alpha_y = 1``, as the
    official loss sums its two terms unweighted) and each term alone; the candidate losses
    (cross-entropy, soft labels as probabilities); ``Q`` from ``worst_case_weights`` at the
    nominal ``(lam, eps)`` and at the official code's temperature ``lam * eps + 1e-8``; the
    DRO loss ``Σ Q_j l_j``; and the gradient of that loss in the candidate logits, ours (``Q``
    held fixed, as ``adadro_step`` does: the Sinkhorn-DRO gradient) and with ``Q`` differentiated
    (what the official ``dro_loss.backward()`` computes). Filter cases: the masks of
    ``refine_reference(rule="unpaired")`` and ``rule="paired"`` against the official unpaired
    (``filtering_o1``, the trainer's) and paired (``filtering``) filters.

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).

    Returns
    -------
    dict
        ``{"loss": {...}, "filter": {...}}``. ``loss`` holds the largest absolute differences
        over the cases: ``cost``, ``cost_x``, ``cost_y``, ``nu_losses``, ``Q_nominal``,
        ``Q_guarded``, ``dro_loss``, ``grad_fixed_Q`` (ours), ``grad_through_Q``, and
        ``grad_scale`` (the largest official gradient entry). ``filter`` holds the number of
        candidates on which the masks disagree, ``unpaired`` and ``paired``, and ``candidates``
        (the total).

    See: book/ot_dro/02-calibration-and-shift.ipynb
    """
    from lab.core.fixtures import load_fixture
    from lab.core.runtime import small_problem_threads

    data = load_fixture(path, OFFICIAL_FIXTURE)
    with small_problem_threads(1):  # tiny problems: one thread is fastest
        return _replay(data)


def _replay(data: dict) -> dict[str, dict[str, float]]:
    import torch
    import torch.nn.functional as F

    from lab.ot_dro.calibration import refine_reference, semantic_cost
    from lab.ot_dro.fast import worst_case_weights

    def t(x, **kw):
        return torch.tensor(x, dtype=torch.float64, **kw)

    diffs: dict[str, list[float]] = {}

    def add(key, value):
        diffs.setdefault(key, []).append(value)

    for case in data["loss_cases"]:
        ref = case["outputs"]
        lam, eps = case["lam"], case["eps"]
        zp, zq, W = t(case["zp"]), t(case["zq"]), t(case["W"])
        yp = torch.tensor(case["yp"])
        yq = t(case["yq"]) if case["soft_labels"] else torch.tensor(case["yq"])
        logits = t(case["logits_q"], requires_grad=True)
        add("cost", _max_abs(semantic_cost(zp, yp, zq, yq, W), ref["C_total"]))
        add("cost_x", _max_abs(semantic_cost(zp, yp, zq, yq, W, 1.0, 0.0), ref["C_X"]))
        add("cost_y", _max_abs(semantic_cost(zp, yp, zq, yq, W, 0.0, 1.0), ref["C_Y"]))
        C = semantic_cost(zp, yp, zq, yq, W)
        loss_q = F.cross_entropy(logits, yq, reduction="none")
        add("nu_losses", _max_abs(loss_q.detach(), ref["nu_losses"]))
        _, Q = worst_case_weights(loss_q.detach(), C, lam, eps)
        add("Q_nominal", _max_abs(Q, ref["Q"]))
        _, Qg = worst_case_weights(loss_q.detach(), C, lam, eps + OFFICIAL_GUARD / lam)
        add("Q_guarded", _max_abs(Qg, ref["Q"]))
        add("dro_loss", abs(float((Q * loss_q.detach()).sum()) - ref["dro_loss"]))
        official = np.asarray(ref["grad_dro_loss"]["logits_q"])
        (g_fixed,) = torch.autograd.grad((Q * loss_q).sum(), logits, retain_graph=True)  # ours
        _, Q_live = worst_case_weights(loss_q, C, lam, eps + OFFICIAL_GUARD / lam)
        (g_live,) = torch.autograd.grad((Q_live * loss_q).sum(), logits)  # Q differentiated
        add("grad_fixed_Q", _max_abs(g_fixed, official))
        add("grad_through_Q", _max_abs(g_live, official))
        add("grad_scale", float(np.abs(official).max()))
    out = {"loss": {k: max(v) for k, v in diffs.items()}}
    disagree = {"unpaired": 0, "paired": 0, "candidates": 0}
    for case in data["filter_cases"]:
        zp, zq = t(case["zp"]), t(case["zq"])
        for rule in ("unpaired", "paired"):
            ours = refine_reference(zp, zq, omega=case["omega"], rule=rule).numpy()
            theirs = np.asarray(case["outputs"][f"{rule}_keep"], dtype=bool)
            disagree[rule] += int((ours != theirs).sum())
        disagree["candidates"] += zq.shape[0]
    out["filter"] = disagree
    return out
