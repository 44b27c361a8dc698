"""The omiso chapter's claims, registered before the notebooks measure them.

OMiSO (Minai et al., NeurIPS 2025) is read from its abstract: no number of the paper can be
quoted, so its claims are the abstract's qualitative statements ("reached specified activity
states more accurately", "outperformed competing methods that do not incorporate these
advances"), measured on a simulated array with a reconstructed method (the ``deviations``
below). The chapter's own checks are sourced "ours".

Two statements hold by the construction of the simulator and are code checks, not claims:

* **state dependence** (notebook 1's check cell and ``tests/test_omiso.py``): with
  ``kappa = 1`` the patterns' response slopes fan out, with ``kappa = 0`` they all equal the
  autonomous decay 0.6; the simulator is written that way (eq. 6);
* ``control-kappa-zero`` (recorded as a claim until this release; notebook 3's check cell and
  ``tests/test_omiso.py``): in a brain whose response does not depend on the state
  (``kappa = 0``, ``a = 0``) the state-aware and state-agnostic methods tie within 10%; the
  state carries no information about the outcome there, so nothing can be gained from it.

See: book/omiso/reproduction.md
"""

from __future__ import annotations

import math

from lab.core import claims
from lab.core.registry import Spec, registry

__all__ = ["CLAIMS"]

_DATE = "2026-12-06"
_NB3_SEEDS = tuple(range(8))
_SESSION = (
    "96 channels, q = 4, 66 patterns; 600 calibration, 1,500 training, 400 closed-loop trials"
)
#: the revision of notebook 3's sessions (one entry, shared by the three claims it changed)
_SESSIONS_REVISION = claims.revision(
    _DATE,
    old="4 simulated sessions per condition (16 at FULL)",
    new="8 per condition (32 at FULL); OMiSO against the static model on 64 sessions without "
    "drift and 24 at drift 0.02 (128 and 64 at FULL)",
    known="4 sessions, native / registered seed shift: online-gain 0.211 [0.168, 0.253] / "
    "0.157 [0.035, 0.278] (6.4 / 0.9 SE from its 8% margin); omiso-more-accurate 0.398 "
    "[0.086, 0.710] / 0.322 [0.269, 0.374] (0.2 / 10 SE from its 10% margin); "
    "omiso-best-all-drifts 0.022 [-0.037, 0.081] / 0.000 [-0.020, 0.021] (2.0 / 3.1 SE from 0); "
    "16 sessions of each seed set and 64 of OMiSO and the static model, measured to size this",
)
_STATIC_RIVAL = (
    "the static state-aware model: OMiSO without its online update (the same state-aware ridge "
    "fit, never updated), on the same sessions; paired per session, log(static / OMiSO)"
)

_NB1 = (
    Spec(
        "simulator-statistics",
        "The simulator produces the statistics it was designed with: latent variance, variance "
        "of one-trial changes, lag-1 autocorrelation, Poisson counts and the post-stimulation "
        "noise.",
        notebook="01",
        source="ours",
        paper="the design values of the simulator (no paper number)",
        rule=claims.rule(reproduced=claims.at_most(0.1), qualitatively=claims.at_most(0.25)),
        expect="reproduced",
        seeds=tuple(range(100, 108)) + (1,),
        size="8 sessions of 2,000 no-stimulation windows (seeds 100-107); 2,000 windows and 500 "
        "stimulation trials of seed 1",
        no_rival="a check of the simulator's code against the values it was designed with: there "
        "is no other simulator of this array to compare, and a wrong design value is what the "
        "rule itself rejects",
    ),
    Spec(
        "fa-matches-sklearn",
        "fit_fa is maximum-likelihood factor analysis: its log-likelihood equals scikit-learn's "
        "FactorAnalysis on the same counts.",
        notebook="01",
        source="ours",
        paper="relative log-likelihood gap below 1e-5 (spec check)",
        rule=claims.rule(reproduced=claims.at_most(1e-5), qualitatively=claims.at_most(1e-3)),
        expect="reproduced",
        seeds=(0,),
        size="600 calibration windows of 96 channels, q = 4",
        no_rival="a parity check of our iteration against the library that implements the same "
        "estimator; any other estimator (PCA, fewer iterations) maximises another objective, "
        "so its likelihood gap says nothing about ours",
    ),
    Spec(
        "fa-recovers-latent-space",
        "FA on no-stimulation windows recovers the simulator's latent space (largest principal "
        "angle to the true loadings).",
        notebook="01",
        source="ours",
        paper="below 15° with 600 windows, q = 4 (spec check; MiSO's design uses FA)",
        rule=claims.rule(reproduced=claims.at_most(15.0), qualitatively=claims.at_most(30.0)),
        expect="reproduced",
        seeds=(0,),
        size="600 calibration windows of 96 channels, q = 4",
        rival="PCA on the same counts: the latent space without FA's per-channel noise model, "
        "the estimator FA is chosen over",
    ),
)

_NB2 = (
    Spec(
        "state-explains-outcome",
        "The pre-stimulation state explains a large share of the outcome: the state-aware "
        "model's held-out R² of z_post in the target dimensions is at least 0.2.",
        notebook="02",
        source="abstract",
        paper="the state just before stimulation shapes the response",
        rule=claims.rule(reproduced=claims.at_least(0.2), qualitatively=claims.at_least(0.05)),
        expect="reproduced",
        seeds=(0,),
        size="96 channels, q = 4, 66 patterns; 1,000 training trials fitted, 500 held out (seed 0)",
        rival="the state-agnostic model (per-pattern means, the same ridge prior) fitted on the "
        "same training trials and scored on the same held-out trials: the response model "
        "without its state term; paired per held-out trial (its squared-error excess)",
        revised=(
            claims.revision(
                _DATE,
                old="measured the difference of held-out R² (state-aware minus state-agnostic) "
                "against 0.2 / 0.05; control: the same difference in a brain without state "
                "dependence (kappa = 0, a = 0)",
                new="measures the state-aware model's held-out R² against the same 0.2 / 0.05; "
                "the rival, the state-agnostic model on the same trials, is judged by the same "
                "rule and paired per held-out trial",
                known="state-aware 0.761, state-agnostic 0.021, difference 0.740 (seed 0); the "
                "null brain's difference, the old control, was -0.194",
            ),
        ),
    ),
    Spec(
        "inverse-and-kalman",
        "Inverting the model by enumeration picks the best predicted pattern, and sequential "
        "Kalman updates with Q = 0 equal the batch ridge fit.",
        notebook="02",
        source="ours",
        paper="eqs. (3)-(4) of our reconstruction",
        rule=claims.rule(
            reproduced=claims.holds("0 mismatches in 100 cases and max |ΔW|, |ΔP| below 1e-8")
        ),
        expect="reproduced",
        seeds=(0,),
        size="100 random states and targets; the 1,000 training trials of seed 0",
        no_rival="two identities of our implementation (the argmin against a brute-force loop, "
        "recursive least squares against the batch solve): nothing rivals an identity",
    ),
    Spec(
        "omiso-beats-miso-targets",
        "OMiSO reaches specified states more accurately than the MiSO-like method, whatever the "
        "target: the log-ratio of the MiSO-like method's mean distance to OMiSO's, paired over "
        "12 target locations (radius 1.5).",
        notebook="02",
        source="abstract",
        paper="reached specified activity states more accurately (qualitative)",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=(0,),
        size="12 targets on a circle of radius 1.5; 1,000 training and 200 closed-loop trials, "
        "one session (seed 0) per target",
        rival=f"{_STATIC_RIVAL.replace('per session', 'per target')} (its own log-ratio to the "
        "MiSO-like method judged by the same rule)",
        revised=(
            claims.revision(
                _DATE,
                old="control: the same targets in a brain without state dependence (kappa = 0, "
                "a = 0)",
                new="rival: the static state-aware model on the same targets and sessions, "
                "paired per target against OMiSO (rule, seeds and size unchanged)",
                known="log-ratio 0.392 [0.306, 0.478] over 12 targets; the null brain's "
                "log-ratio, the old control, was -0.057 [-0.088, -0.026]",
            ),
        ),
    ),
)

_NB3 = (
    Spec(
        "fast-equals-reference",
        "The batched torch path equals the numpy reference on the same seeds (per-trial errors, "
        "with drift, adaptation and a common-mode ramp on).",
        notebook="03",
        source="ours",
        paper="per-trial errors within 1e-6 on 3 sessions (spec check)",
        rule=claims.rule(reproduced=claims.at_most(1e-6), qualitatively=claims.at_most(1e-3)),
        expect="reproduced",
        seeds=(0, 1),
        size="3 sessions (seeds 0, 0, 1), 300 training and 100 closed-loop trials",
        no_rival="a parity check of two implementations of one program on the same random "
        "streams: nothing rivals an identity",
    ),
    Spec(
        "omiso-best-all-drifts",
        "OMiSO has the lowest mean distance to the target of the four controllers at every drift "
        "level: the weakest of its paired comparisons (log-ratio of a rival's mean distance to "
        "OMiSO's, over the sessions) is above zero.",
        notebook="03",
        source="abstract",
        paper="outperformed competing methods that do not incorporate these advances",
        rule=claims.rule(reproduced=claims.ci_above(0.0)),
        expect="reproduced",
        seeds=tuple(range(64)),
        size=f"{_SESSION}; 8 sessions per method and drift 0, 0.01, 0.02, 0.03; OMiSO and the "
        "static model on 64 sessions at drift 0 and 24 at drift 0.02",
        rival="the static state-aware model (OMiSO without its online update) against the "
        "MiSO-like and random controllers at every drift: the method with one of its two "
        "advances, judged by the same rule",
        revised=(_SESSIONS_REVISION,),
    ),
    Spec(
        "state-gain",
        "Using the state gives a large gain: without drift the static state-aware model's mean "
        "distance is lower than the MiSO-like method's by a relative margin of at least 20%.",
        notebook="03",
        source="ours",
        paper="about 30% in the spec's prototype; at least 20% (spec check)",
        rule=claims.rule(reproduced=claims.at_least(0.2), qualitatively=claims.at_least(0.05)),
        expect="reproduced",
        seeds=_NB3_SEEDS,
        size=f"{_SESSION}; 8 sessions per method, drift 0",
        rival="the same comparison at drift 0.03, the neighbouring regime where the static model "
        "goes stale (its effects have drifted away from the training block); the same seeds",
    ),
    Spec(
        "online-gain",
        "The online update adds a gain that grows with drift: at drift 0.02 OMiSO is at least 8% "
        "below the static state-aware model.",
        notebook="03",
        source="ours",
        paper="about 15% at drift 0.02 in the spec's prototype; at least 8% (spec check)",
        rule=claims.rule(
            reproduced=claims.ci_above(-math.log(1 - 0.08)), qualitatively=claims.ci_above(0.0)
        ),
        expect="reproduced",
        seeds=tuple(range(24)),
        size=f"{_SESSION}; drift 0.02, 24 sessions",
        rival="OMiSO with a near-zero process noise Q = 1e-5 (recursive least squares: updated "
        "online, but without the random-walk model that lets it follow drift), on the 8 drift "
        "sessions the drift widget runs; paired per session, log(OMiSO at Q = 1e-5 / OMiSO)",
        revised=(_SESSIONS_REVISION,),
    ),
    Spec(
        "omiso-more-accurate",
        "OMiSO reaches the target more accurately than the MiSO-like and random controllers "
        "(default drift): log-ratio of the rival's mean distance to OMiSO's, paired over "
        "sessions, against the nearer of the two.",
        notebook="03",
        source="abstract",
        paper="reached specified activity states more accurately (qualitative, no number "
        "available)",
        rule=claims.rule(
            reproduced=claims.ci_above(-math.log(1 - 0.1)), qualitatively=claims.ci_above(0.0)
        ),
        expect="reproduced",
        seeds=_NB3_SEEDS,
        size=f"{_SESSION}; drift 0.002, 8 sessions per method",
        rival=f"{_STATIC_RIVAL} (its own log-ratio to the nearer of MiSO-like and random judged "
        "by the same rule)",
        revised=(
            _SESSIONS_REVISION,
            claims.revision(
                _DATE,
                old="control: OMiSO against the MiSO-like method in a brain without state "
                "dependence (kappa = 0, a = 0)",
                new="rival: the static state-aware model on the same sessions, judged by the same "
                "rule and paired per session against OMiSO (rule, seeds and size unchanged)",
                known="0.427 [0.308, 0.547] over 8 sessions; the null brain's log-ratio, the old "
                "control, was -0.037 [-0.057, -0.016]",
            ),
        ),
    ),
)

CLAIMS = registry(
    "omiso",
    *_NB1,
    *_NB2,
    *_NB3,
    deviations={
        "reconstructed-method": "The per-pattern linear-Gaussian response model, its inversion "
        "by enumeration and its Kalman update (eqs. 2-4) are our reading of the OMiSO abstract, "
        "not the paper's model: no OMiSO code is public.",
        "simulated-array": "Every session runs on a simulated Utah array designed for this "
        "book (latent factors, state-dependent responses, Poisson counts, drift), not on the "
        "paper's recordings, which cannot be downloaded; no number of the paper is quoted.",
        "l2-distance": "The distance to the target is Euclidean (L2) for the choice of eq. (3) "
        "and for the reported error; MiSO's public code uses L1 in the two target dimensions.",
        "poisson-caps": "Poisson rates are capped at 40 spikes per window and counts at 100 "
        "(never reached at the defaults).",
    },
)
