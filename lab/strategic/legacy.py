r"""The chapter's first reconstruction, kept as a labelled extra baseline.

Before the paper's full text could be read, the chapter reconstructed a learner from the
abstract: *explore-fit-shift in doubling epochs* (rounds that accept everyone give clean
labelled data, a 0-1 empirical risk minimiser is fitted on it and announced shifted by the
manipulation radius). It is **not** the paper's algorithm (that one lives in
:mod:`lab.strategic.reference` and :mod:`lab.strategic.fast`); it stays here as an extra
baseline, together with the game simulator it runs on. Its pieces live in two modules:
:mod:`lab.strategic.offset_game` (the simulator) and :mod:`lab.strategic.doubling_epochs`
(the learner, its fitters and baselines); this module gathers their public names.

The simulator is more general than the paper's model: an offset ``b*`` (the paper has
``b* = 0``), a rule "accept iff ``<w, x> >= tau``" (the paper's ``sgn(<w, r> + m)`` with
``tau = -m``) and a radius ``r`` (the paper's ``gamma``). With ``b_star=0`` and ``r=gamma`` it
is the paper's game.

Equations (numbered as in the first version of the chapter): (1) best response, (2) expected
loss given ``x``, (3) clairvoyant rule ``(w*, b* + r)``, (4) regret, (5) the unshifted rule's
loss gap, (6) the doubling-epoch schedule.

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb
"""

from lab.strategic.doubling_epochs import (
    epoch_schedule,
    erm01_1d,
    erm01_halfspace,
    explore_fit_shift,
    logistic_halfspace,
    naive_unshifted,
    regret_slope,
)
from lab.strategic.offset_game import (
    NOISE_PROFILES,
    TIE,
    StrategicEnv,
    accepts,
    best_response,
    clairvoyant,
    closed_form_unshifted_gap,
)

__all__ = [
    "NOISE_PROFILES",
    "TIE",
    "StrategicEnv",
    "accepts",
    "best_response",
    "clairvoyant",
    "closed_form_unshifted_gap",
    "epoch_schedule",
    "erm01_1d",
    "erm01_halfspace",
    "explore_fit_shift",
    "logistic_halfspace",
    "naive_unshifted",
    "regret_slope",
]
