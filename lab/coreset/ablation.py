"""The perturbation ablation of notebook 2 (the paper's Table 2 at our size): which parameters
the posterior samples perturb, trained with ``digits_runs``.

See: book/coreset/02-label-noise.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lab.core.checks import check_choice
from lab.core.sweep import sweep
from lab.coreset.experiments import digits_run, digits_runs, one_thread
from lab.coreset.settings import AblationSettings, PosteriorSettings, RunSettings

__all__ = ["PerturbationAblation", "perturbation_ablation"]


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


def perturbation_ablation(settings: AblationSettings) -> PerturbationAblation:
    """The paper's Table 2 ablation at our size: which parameters the posterior samples perturb.

    For every perturbed block in ``settings.wheres`` (``"norm"``: the BatchNorm affine
    parameters, the paper's default; ``"all"``: every parameter; ``"last"``: the final linear
    layer), every σ in ``settings.sigmas`` and every seed, trains the chapter's BatchNorm MLP
    on digits with a share ``settings.noise`` of the training labels redrawn, on posterior
    mini-batch coresets (``digits_run`` of a posterior :class:`RunSettings`: the same split,
    noise, initialisation and pools for every variant of a seed, so variants compare seed by
    seed). The runs use one CPU thread (tiny matrices: threads only contend) and are memoised;
    a :func:`lab.core.sweep.sweep` over (block, σ) and the seeds reads them.

    Parameters
    ----------
    settings : AblationSettings

    Returns
    -------
    PerturbationAblation

    See: book/coreset/02-label-noise.ipynb
    """
    s = settings
    if not isinstance(s, AblationSettings):
        raise TypeError(f"settings must be an AblationSettings (got {type(s).__name__})")
    runs = {
        (w, sg, sd): RunSettings("posterior", s.noise, sd, PosteriorSettings(s.K, sg, w), s.train)
        for w in s.wheres
        for sg in s.sigmas
        for sd in s.seeds
    }

    def final(where: str, sigma: float, seed: int) -> dict:
        h = digits_run(runs[(where, sigma, seed)])
        return {"acc": h.final_acc, "share": h.noisy_share[-1]}

    with one_thread():
        digits_runs(list(runs.values()))
        table = sweep(final, {"where": list(s.wheres), "sigma": list(s.sigmas)}, seeds=s.seeds)
    shape = (len(s.wheres), len(s.sigmas), len(table.seeds))
    acc, share = np.zeros(shape), np.full(shape, np.nan)
    for i, w in enumerate(s.wheres):
        for j, sg in enumerate(s.sigmas):
            acc[i, j] = table.values("acc", where=w, sigma=sg)
            share[i, j] = table.values("share", where=w, sigma=sg)
    return PerturbationAblation(s.wheres, s.sigmas, table.seeds, acc, share)
