"""ARECHO: batched two-step decoding vs the per-utterance reference, a learned evaluator vs
computing the metrics, and the chain vs the parallel baseline and scikit-learn's RegressorChain.

Cases (the committed 1,000-utterance corpus; chain trained once for the whole script):

* decoding 200 test utterances, all nine metrics, confidence-first: ``lab.arecho.fast.decode``
  (batched) vs ``lab.arecho.reference.decode`` (one utterance and one candidate at a time);
* the performance anchor: utterances per second for computing PESQ-WB + PESQ-NB + STOI +
  SI-SNR + LSD directly (needs the clean reference; peer) vs the chain's reference-free
  prediction from features (fast), with the accuracy paid for it;
* quality at equal training compute (CPU time of this process, one thread): the chain, ``ParallelBaseline`` (standardised L1) and
  ``sklearn.multioutput.RegressorChain(Ridge)`` (fit time recorded), mean normalised error
  over the six numerical metrics and the error rate over the three classes.

    python benchmarks/bench_arecho.py            # CPU: 10 CPU-seconds of training per model
    python benchmarks/bench_arecho.py --quick    # CPU, < 20 s idle: 3 CPU-s of training, 40 utterances
    python benchmarks/bench_arecho.py --gpu      # adds the CUDA decoding case (batch 2,000)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import arecho as ar  # noqa: E402
from lab.tooling.bench import Benchmark  # noqa: E402


def summary(err: dict[str, float], types) -> tuple[float, float]:
    num = [err[n] for n, t in zip(ar.METRICS, types, strict=True) if t == "num" and n in err]
    cat = [err[n] for n, t in zip(ar.METRICS, types, strict=True) if t == "cat" and n in err]
    return float(np.mean(num)), float(np.mean(cat)) if cat else float("nan")


def main() -> None:
    bench = Benchmark("arecho", __doc__)
    seconds = 3.0 if bench.quick else 10.0
    n_dec = 40 if bench.quick else 200
    corpus = ar.load_corpus()
    tr, te = corpus.train, corpus.test[:n_dec]
    x, y = corpus.features[te], corpus.labels[te]
    ytr = corpus.labels[tr]
    tok = ar.MetricTokenizer(ar.DEFAULT_BINS).fit(ytr, corpus.types, corpus.names)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        chain = ar.TinyARECHO(tok, x.shape[1])
    h_chain = ar.train(chain, corpus, ar.TrainSettings(seconds, seed=0, clock="cpu"))

    with bench.case(f"decode {n_dec} utterances, 9 metrics, confidence-first", n=n_dec) as case:
        ref = case.time(
            "reference",
            "decode_reference (per utterance)",
            lambda: ar.reference.decode(chain, x, "all", "confidence"),
            reps=1,
            warmup=0,
        )
        fast = case.time(
            "fast", "decode (batched torch)", lambda: ar.fast.decode(chain, x, "all", "confidence")
        )
        case.metric("identical", all(np.array_equal(ref[k], fast[k]) for k in ref))

    n_direct = 10 if bench.quick else 40
    with bench.case(
        f"evaluate {n_direct} utterances: metrics vs learned evaluator", n=n_direct
    ) as case:

        def direct():
            for i in te[:n_direct]:
                b = int(corpus.meta["base"][i])
                ar.label_utterance(
                    corpus.clean[b],
                    corpus.meta["snr_db"][i],
                    corpus.meta["t60"][i],
                    corpus.meta["lowpass_hz"][i],
                    corpus.meta["clip"][i],
                    int(corpus.meta["seed"][i]),
                )

        def learned():
            feats = np.stack([ar.logmel_features(corpus.audio(int(i))) for i in te[:n_direct]])
            return ar.fast.decode(chain, feats, "all", "confidence")

        t_direct = case.time(
            "peer", "pesq + pystoi + SI-SNR + LSD (needs the reference)", direct, reps=1, warmup=0
        )
        case.time(
            "fast",
            "TinyARECHO from audio (features + batched decode, no reference)",
            learned,
            reps=1,
            warmup=0,
        )
        del t_direct
        rows = case.rows
        case.metric("direct_utt_per_s", n_direct / rows[0]["seconds"])
        case.metric("chain_utt_per_s", n_direct / rows[1]["seconds"])

    with bench.case(
        f"quality at {seconds:g} s of training each",
        seconds=seconds,
        n_train=int(tr.size),
        n_test=int(te.size),
    ) as case:
        t0 = time.perf_counter()
        out = ar.fast.decode(chain, x, "all", "confidence")
        e = ar.errors(out, y, corpus.types, ytr, corpus.names)
        num, cat = summary(e, corpus.types)
        case.record(
            "fast",
            "TinyARECHO chain (confidence-first)",
            h_chain["seconds"],
            steps=h_chain["steps"],
            mean_num_error=num,
            mean_class_error=cat,
            decode_seconds=time.perf_counter() - t0,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            par = ar.ParallelBaseline(x.shape[1], 9, "standardized")
        h = ar.train(par, corpus, ar.TrainSettings(seconds, seed=0, clock="cpu"))
        e = ar.errors(ar.predict(par, x), y, corpus.types, ytr, corpus.names)
        num, cat = summary(e, corpus.types)
        case.record(
            "peer",
            "ParallelBaseline (standardised L1)",
            h["seconds"],
            steps=h["steps"],
            mean_num_error=num,
            mean_class_error=cat,
        )
        from sklearn.linear_model import Ridge
        from sklearn.multioutput import RegressorChain
        from sklearn.preprocessing import StandardScaler

        t0 = time.perf_counter()
        sx = StandardScaler().fit(corpus.features[tr])
        mu, sd = ytr.mean(0), ytr.std(0)
        rc = RegressorChain(Ridge(alpha=10.0), order=list(range(9))).fit(
            sx.transform(corpus.features[tr]), (ytr - mu) / sd
        )
        t_fit = time.perf_counter() - t0
        pred = rc.predict(sx.transform(x)) * sd + mu
        e = ar.errors(pred, y, corpus.types, ytr, corpus.names)
        num, cat = summary(e, corpus.types)
        case.record(
            "peer", "sklearn RegressorChain(Ridge)", t_fit, mean_num_error=num, mean_class_error=cat
        )

    if bench.gpu and torch.cuda.is_available():
        import copy

        g = copy.deepcopy(chain).to("cuda")
        xg = torch.as_tensor(np.tile(corpus.features, (2, 1)), device="cuda")
        with bench.case("decode 2,000 utterances on CUDA, confidence-first", n=2000) as case:
            case.time(
                "fast",
                "decode (batched, CUDA)",
                lambda: ar.fast.decode(g, xg, "all", "confidence"),
                device="cuda",
            )
            case.time(
                "reference",
                "decode (batched, CPU)",
                lambda: ar.fast.decode(chain, xg.cpu(), "all", "confidence"),
                reps=1,
            )
    bench.finish()


if __name__ == "__main__":
    main()
