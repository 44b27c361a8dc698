"""Drivers the notebooks call: the parallel heads of notebook 1, the study over seeds of
notebook 2. Each takes its settings (:mod:`lab.arecho.settings`), computes, caches
(:func:`lab.core.memo.memo`) and returns a small result that :mod:`lab.arecho.figures` draws.

* :func:`parallel_heads`: five parallel predictors (raw MSE, raw L1, standardised L1, 500-bin
  and 32-bin tokens) trained briefly on one encoder (a :class:`HeadErrors`);
* :func:`label_correlations`: the Spearman correlations between the corpus's labels;
* :func:`study_models`: one seed's committed (or retrained) chain, standardised-L1 head,
  UniVERSA and UniVERSA-T (a :class:`SeedModels`);
* :func:`seed_study`: every decoding order, the teacher-forced bound and the baselines for
  every seed on the test split, through :func:`lab.core.sweep.sweep` (a :class:`SeedStudy`).

See: book/arecho/01-degraded-speech-and-tokens.ipynb, book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.core.checks import check_instance
from lab.core.memo import memo
from lab.core.sweep import sweep

from .checkpoint import BASELINES, load_baselines, load_models, train_baselines, train_models
from .corpus import Corpus
from .reference import DEFAULT_BINS
from .scoring import derangement, errors, teacher_forced
from .settings import HeadSettings, StudySettings, TrainSettings
from .views import fitted_tokenizer

__all__ = [
    "HEADS",
    "HeadErrors",
    "parallel_heads",
    "label_correlations",
    "SeedModels",
    "study_models",
    "SeedStudy",
    "seed_study",
    "RidgeChain",
    "ridge_chain",
    "conditioning_gains",
]

#: notebook 1's parallel heads: (label, target, loss, bins of the tokenizer)
HEADS = (
    ("raw MSE", "raw", "mse", DEFAULT_BINS),
    ("raw L1", "raw", "l1", DEFAULT_BINS),
    ("standardised L1", "standardized", "l1", DEFAULT_BINS),
    ("tokens, 500 bins", "tokens", "l1", DEFAULT_BINS),
    ("tokens, 32 bins", "tokens", "l1", 32),
)


@dataclass(frozen=True)
class HeadErrors:
    """Test errors of notebook 1's parallel heads: ``errors[label][metric]`` (:func:`errors`)
    and the wall seconds each head trained, ``seconds[label]``."""

    errors: dict[str, dict[str, float]]
    seconds: dict[str, float]


@memo
def parallel_heads(corpus: Corpus, settings: HeadSettings) -> HeadErrors:
    """Train the five parallel heads of ``HEADS`` (same encoder, same seed, ``settings.steps``
    steps each) and score them on the test split.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    import torch

    from .fast import predict
    from .models import ParallelBaseline, train

    check_instance("corpus", corpus, Corpus)
    check_instance("settings", settings, HeadSettings)
    test, y_train = corpus.test, corpus.labels[corpus.train]
    run = TrainSettings(settings.seconds, settings.steps, seed=settings.seed)
    errs, seconds = {}, {}
    for label, target, loss, bins in HEADS:
        tok = fitted_tokenizer(corpus, bins, "linear")
        with torch.random.fork_rng(devices=[]):  # the head's weights from the settings' seed
            torch.manual_seed(settings.seed)
            model = ParallelBaseline(corpus.features.shape[1], len(corpus.names), target, tok, loss)
        seconds[label] = train(model, corpus, run)["seconds"]
        pred = predict(model, corpus.features[test])
        errs[label] = errors(pred, corpus.labels[test], corpus.types, y_train, corpus.names)
    return HeadErrors(errs, seconds)


@memo
def label_correlations(corpus: Corpus) -> np.ndarray:
    """Spearman correlations between the corpus's labels, ``(M, M)`` in ``corpus.names`` order.

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """
    from scipy.stats import spearmanr

    check_instance("corpus", corpus, Corpus)
    return spearmanr(corpus.labels).statistic


@dataclass(frozen=True)
class SeedModels:
    """One training seed's models: the chain, the standardised-L1 parallel head, their
    ``meta`` (steps and CPU seconds), UniVERSA and UniVERSA-T (``baselines``, name ->
    model) and theirs (``baselines_meta``)."""

    chain: Any
    parallel: Any
    meta: dict[str, Any]
    baselines: dict[str, Any]
    baselines_meta: dict[str, Any]


@memo
def study_models(corpus: Corpus, settings: StudySettings, seed: int) -> SeedModels:
    """The committed models of ``seed`` (``lab artifacts build arecho/checkpoints``), or with
    ``settings.full`` a chain trained for ``settings.steps`` steps and its baselines trained
    for its CPU time.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    check_instance("corpus", corpus, Corpus)
    check_instance("settings", settings, StudySettings)
    if settings.full:
        import lab

        chain, par, meta = train_models(corpus, settings.steps, seed, device=lab.device())
        models, b_meta = train_baselines(corpus, meta["chain_cpu_seconds"], seed)
    else:
        chain, par, meta = load_models(corpus, seed=seed)
        models, b_meta = load_baselines(corpus, seed=seed)
    return SeedModels(chain, par, meta, models, b_meta)


def _mean_num(err: dict[str, float], names: Sequence[str], types: Sequence[str]) -> float:
    return float(np.mean([err[n] for n, t in zip(names, types, strict=True) if t == "num"]))


def _mean_cat(err: dict[str, float], names: Sequence[str], types: Sequence[str]) -> float:
    return float(np.mean([err[n] for n, t in zip(names, types, strict=True) if t == "cat"]))


@dataclass
class SeedStudy:
    """Test errors of the committed seeds (mean normalised error over the numerical metrics).

    ``modes[i]`` -> column ``i`` of ``chain``; rows are ``seeds``. ``per_metric[s][mode]`` is
    the full per-metric dict of seed ``s`` (also for ``"teacher-forced"``, ``"parallel"``,
    ``"independent"`` and each of ``BASELINES``); ``meta[s]`` the training budgets of the seed.
    ``baselines[name]`` / ``baselines_classes[name]``: UniVERSA (``"universa"``) and UniVERSA-T
    (``"tokens"``) trained for the chain's CPU time; ``independent``: the chain's decoder
    writing each metric alone (``<sos> <m>`` prefix, no other metric: the chain without
    chaining); ``shuffled_prefix``: teacher forcing with another test utterance's true labels
    (:func:`derangement`), the rival of the teacher-forced bound.
    """

    seeds: tuple[int, ...]
    modes: tuple[str, ...]
    chain: np.ndarray  # (S, len(modes)) numbers
    chain_classes: np.ndarray  # (S, len(modes)) classes (error rate)
    teacher_forced: np.ndarray  # (S,) numbers, fixed order with the true prefix
    parallel: np.ndarray  # (S,) numbers
    parallel_classes: np.ndarray  # (S,)
    per_metric: list[dict[str, dict[str, float]]] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, np.ndarray] = field(default_factory=dict)  # first seed, per mode
    predictions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # first seed
    baselines: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (S,) numbers
    baselines_classes: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (S,)
    independent: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (S,) numbers
    shuffled_prefix: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (S,) numbers

    def column(self, mode: str) -> np.ndarray:
        """Errors of one decoding mode over the seeds."""
        return self.chain[:, self.modes.index(mode)]


@memo
def _seed_record(corpus: Corpus, settings: StudySettings, seed: int) -> dict[str, Any]:
    """Everything the study measures for one seed: per-metric errors (``per``), the summary
    numbers the sweep reads (``numbers``), tokens and predictions per mode, ``meta``."""
    from .fast import decode, predict

    m = study_models(corpus, settings, seed)
    x, y = corpus.features[corpus.test], corpus.labels[corpus.test]
    y_tr, names, types = corpus.labels[corpus.train], corpus.names, corpus.types

    def score(pred):
        return errors(pred, y, types, y_tr, names)

    per, tokens, preds = {}, {}, {}
    for mode in settings.modes:
        preds[mode], tokens[mode] = decode(m.chain, x, "all", mode, seed=seed, return_tokens=True)
        per[mode] = score(preds[mode])
    per["teacher-forced"] = score(teacher_forced(m.chain, x, y))
    # the rival of teacher forcing: another utterance's true labels as the prefix
    per["shuffled-prefix"] = score(teacher_forced(m.chain, x, y[derangement(len(y), seed)]))
    per["parallel"] = score(predict(m.parallel, x))
    for k, model in m.baselines.items():
        per[k] = score(predict(model, x))
    per["independent"] = {}
    for n in names:  # the chain without chaining: each metric written alone
        per["independent"].update(score(decode(m.chain, x, [n], "fixed")))
    numbers = {f"chain:{mode}": _mean_num(per[mode], names, types) for mode in settings.modes}
    numbers |= {f"cls:{mode}": _mean_cat(per[mode], names, types) for mode in settings.modes}
    numbers["tf"] = _mean_num(per["teacher-forced"], names, types)
    numbers["shuffled"] = _mean_num(per["shuffled-prefix"], names, types)
    numbers["par"] = _mean_num(per["parallel"], names, types)
    numbers["parc"] = _mean_cat(per["parallel"], names, types)
    for k in BASELINES:
        numbers[f"b:{k}"] = _mean_num(per[k], names, types)
        numbers[f"bc:{k}"] = _mean_cat(per[k], names, types)
    numbers["ind"] = _mean_num(per["independent"], names, types)
    meta = {**m.meta, **{f"baseline_{k}": v for k, v in m.baselines_meta.items()}}
    return {"per": per, "numbers": numbers, "tokens": tokens, "preds": preds, "meta": meta}


def seed_study(corpus: Corpus, settings: StudySettings | None = None) -> SeedStudy:
    """Decode the test split with every seed's chain in every mode (see :class:`SeedStudy`);
    the seeds run through :func:`lab.core.sweep.sweep`, each seed's record is memoised.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    settings = StudySettings() if settings is None else settings
    check_instance("corpus", corpus, Corpus)
    check_instance("settings", settings, StudySettings)

    def one(seed: int) -> dict[str, float]:
        return _seed_record(corpus, settings, seed)["numbers"]

    sw = sweep(one, None, seeds=settings.seeds, desc="arecho seeds")
    recs = [_seed_record(corpus, settings, s) for s in sw.seeds]
    modes = settings.modes
    return SeedStudy(
        sw.seeds,
        modes,
        np.stack([sw.values(f"chain:{m}") for m in modes], 1),
        np.stack([sw.values(f"cls:{m}") for m in modes], 1),
        sw.values("tf"),
        sw.values("par"),
        sw.values("parc"),
        [r["per"] for r in recs],
        [r["meta"] for r in recs],
        recs[0]["tokens"],
        recs[0]["preds"],
        {k: sw.values(f"b:{k}") for k in BASELINES},
        {k: sw.values(f"bc:{k}") for k in BASELINES},
        sw.values("ind"),
        sw.values("shuffled"),
    )


@dataclass(frozen=True)
class RidgeChain:
    """scikit-learn's ``RegressorChain(Ridge(alpha=10))`` in the corpus order on standardised
    features and labels: its test ``errors`` per metric, its numerical mean, the CPU seconds it
    took, and ``subset_ratio``: its STOI error when PESQ-NB is skipped (set to its mean) over
    its STOI error in the full chain."""

    errors: dict[str, float]
    mean: float
    seconds: float
    subset_ratio: float


@memo
def ridge_chain(corpus: Corpus) -> RidgeChain:
    """The classic regressor chain on the chapter's features: the prior art of dynamic chains.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import time

    from sklearn.linear_model import Ridge
    from sklearn.multioutput import RegressorChain
    from sklearn.preprocessing import StandardScaler

    check_instance("corpus", corpus, Corpus)
    x_tr, x_te = corpus.features[corpus.train], corpus.features[corpus.test]
    y_tr, y_te = corpus.labels[corpus.train], corpus.labels[corpus.test]
    t0 = time.process_time()
    scaler = StandardScaler().fit(x_tr)
    mu, sd = y_tr.mean(0), y_tr.std(0)
    order = list(range(len(corpus.names)))
    rc = RegressorChain(Ridge(alpha=10.0), order=order).fit(
        scaler.transform(x_tr), (y_tr - mu) / sd
    )
    err = errors(
        rc.predict(scaler.transform(x_te)) * sd + mu, y_te, corpus.types, y_tr, corpus.names
    )
    seconds = time.process_time() - t0
    x_rc = scaler.transform(x_te)  # the STOI link of the chain, PESQ-NB left out (its mean)
    pesq = rc.estimators_[0].predict(x_rc)
    stoi = rc.estimators_[2].predict(np.column_stack([x_rc, pesq, np.zeros(len(x_rc))]))
    j = corpus.index("STOI")
    alone = float(np.mean(np.abs(stoi * sd[j] + mu[j] - y_te[:, j])) / y_tr[:, j].std())
    return RidgeChain(err, _mean_num(err, corpus.names, corpus.types), seconds, alone / err["STOI"])


def conditioning_gains(
    corpus: Corpus, settings: StudySettings, given: Sequence[str], targets: Sequence[str]
) -> np.ndarray:
    """Per seed: the mean over ``targets`` of ``1 - error given / error alone``, fixed order,
    the metrics ``given`` imposed at their true values (a prefix).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    from .fast import decode

    check_instance("corpus", corpus, Corpus)
    check_instance("settings", settings, StudySettings)
    x, y, y_tr = (
        corpus.features[corpus.test],
        corpus.labels[corpus.test],
        corpus.labels[corpus.train],
    )
    out = []
    for seed in settings.seeds:
        chain = study_models(corpus, settings, seed).chain
        alone = _seed_record(corpus, settings, seed)["per"]["fixed"]
        prefix = {n: y[:, corpus.index(n)] for n in given}
        err = errors(
            decode(chain, x, "all", "fixed", given=prefix), y, corpus.types, y_tr, corpus.names
        )
        out.append(np.mean([1 - err[n] / alone[n] for n in targets]))
    return np.array(out)
