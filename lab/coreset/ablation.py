"""The perturbation ablation of notebook 2 (the paper's Table 2 at our size): which parameters
the posterior samples perturb, trained with ``digits_runs``.

See: book/coreset/02-label-noise.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core.checks import check_choice, check_int, check_positive, check_range
from lab.coreset.experiments import digits_runs
from lab.coreset.models import WHERE

__all__ = ["PerturbationAblation", "perturbation_ablation"]

ABLATION_WHERE = ("norm", "all", "last")


@dataclass
class PerturbationAblation:
    """Clean test accuracy of posterior coresets per perturbed block, σ and seed.

    ``acc[i, j, k]`` and ``share[i, j, k]`` belong to ``wheres[i]``, ``sigmas[j]`` and
    ``seeds[k]`` (``perturbation_ablation``); ``share`` is the weighted share of mislabeled
    examples in the coresets over the last evaluation window.

    See: book/coreset/02-label-noise.ipynb
    """

    wheres: tuple[str, ...]
    sigmas: tuple[float, ...]
    seeds: tuple[int, ...]
    acc: np.ndarray
    share: np.ndarray

    def at(self, where: str, sigma: float) -> np.ndarray:
        """Accuracy per seed of one variant, shape ``(len(seeds),)``.

        See: book/coreset/02-label-noise.ipynb
        """
        i = self.wheres.index(check_choice("where", where, self.wheres))
        matches = [j for j, s in enumerate(self.sigmas) if math.isclose(s, float(sigma))]
        if not matches:
            raise ValueError(f"sigma must be one of {self.sigmas} (got {sigma!r})")
        return self.acc[i, matches[0]]

    def mean(self) -> np.ndarray:
        """Mean accuracy over seeds, shape ``(len(wheres), len(sigmas))``.

        See: book/coreset/02-label-noise.ipynb
        """
        return self.acc.mean(axis=2)


def perturbation_ablation(
    wheres: Any = ABLATION_WHERE,
    sigmas: Any = (0.1, 0.01, 0.001),
    seeds: Any = (0, 1, 2),
    *,
    noise: float = 0.5,
    steps: int = 200,
    K: int = 4,
    budget: int = 30,
    select_every: int = 10,
) -> PerturbationAblation:
    """The paper's Table 2 ablation at our size: which parameters the posterior samples perturb.

    For every perturbed block in ``wheres`` (``"norm"``: the BatchNorm affine parameters,
    the paper's default; ``"all"``: every parameter; ``"last"``: the final linear layer),
    every σ in ``sigmas`` and every seed, trains the chapter's BatchNorm MLP on digits with
    a share ``noise`` of the training labels redrawn, on posterior mini-batch coresets
    (``digits_run(method="posterior", where=...)``: the same split, noise, initialisation
    and pools for every variant of a seed, so variants compare seed by seed). The runs use
    one CPU thread (tiny matrices: threads only contend) and are memoised.

    Parameters
    ----------
    wheres : sequence of {"norm", "all", "last", "norm_out"}
        Distinct perturbed blocks.
    sigmas : sequence of float
        Distinct noise scales (``>= 0``); the paper validates over {0.1, 0.01, 0.001}.
    seeds : sequence of int
        Distinct seeds (``>= 0``).
    noise : float
        Label-noise ratio in [0, 1] (the paper's Table 2 uses 0.5).
    steps, K, budget, select_every : int
        As in ``digits_run``.

    Returns
    -------
    PerturbationAblation

    See: book/coreset/02-label-noise.ipynb
    """
    import torch

    def _distinct(name, values, check):
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"{name} must be a sequence (got {type(values).__name__})")
        out = tuple(check(v) for v in values)
        if not out:
            raise ValueError(f"{name} must not be empty")
        if len(set(out)) != len(out):
            raise ValueError(f"{name} must hold distinct values (got {out})")
        return out

    wheres = _distinct("wheres", wheres, lambda w: check_choice("where", w, WHERE))
    sigmas = _distinct(
        "sigmas", sigmas, lambda s: float(check_positive("sigma", s, allow_zero=True))
    )
    seeds = _distinct("seeds", seeds, lambda s: check_int("seed", s, 0))
    noise = check_range("noise", noise, 0.0, 1.0)
    K = check_int("K", K, 1)
    kw = {
        "steps": check_int("steps", steps, 1),
        "budget": check_int("budget", budget, 1),
        "select_every": check_int("select_every", select_every, 1),
    }
    acc = np.zeros((len(wheres), len(sigmas), len(seeds)))
    share = np.full_like(acc, np.nan)
    jobs = [
        (i, j, k) for i in range(len(wheres)) for j in range(len(sigmas)) for k in range(len(seeds))
    ]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            hists = digits_runs(
                [
                    {
                        "method": "posterior",
                        "noise": noise,
                        "seed": seeds[k],
                        "K": K,
                        "sigma": sigmas[j],
                        "where": wheres[i],
                    }
                    for i, j, k in jobs
                ],
                **kw,
            )
            for (i, j, k), h in zip(jobs, hists, strict=True):
                acc[i, j, k] = h.final_acc
                share[i, j, k] = h.noisy_share[-1]
    finally:
        torch.set_num_threads(threads)
    return PerturbationAblation(wheres, sigmas, seeds, acc, share)
