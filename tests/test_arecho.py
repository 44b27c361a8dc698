"""Tests of lab.arecho: metrics, degradations, the committed corpus, tokenizer, chain, decoding.

Mirrors the "Correctness checks" of the chapter spec (shared/papers/arecho-speech-quality.md).
The metric tests label a handful of utterances (about 0.2 s each); the model tests train a
tiny chain for a few dozen steps on the committed corpus. The CUDA test is skipped without a
GPU; the learning checks at notebook scale are marked ``slow``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from pesq import pesq as pesq_pkg
from pystoi import stoi as stoi_pkg
from scipy.stats import spearmanr

from lab import arecho as ar
from lab.arecho import figures
from lab.arecho.models import _batch_sequences
from lab.core.runtime import small_problem_threads


@pytest.fixture(scope="module")
def corpus():
    return ar.load_corpus()


@pytest.fixture(scope="module")
def clean(corpus):
    return corpus.clean[0]


@pytest.fixture(scope="module")
def tok(corpus):
    return ar.MetricTokenizer(32).fit(corpus.labels[corpus.train], corpus.types, corpus.names)


@pytest.fixture(scope="module")
def chain(corpus, tok):
    with small_problem_threads():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = ar.TinyARECHO(tok, corpus.features.shape[1])
        ar.train(model, corpus, ar.TrainSettings(60, 40, seed=0))
    return model


# ------------------------------------------------------------------------------------------
# metrics
# ------------------------------------------------------------------------------------------
def test_metric_ceilings_on_identical_signals(clean):
    assert ar.pesq_wb(clean, clean) == pytest.approx(4.644, abs=2e-3)
    assert ar.pesq_nb(clean, clean) == pytest.approx(4.549, abs=2e-3)
    assert ar.stoi(clean, clean) == pytest.approx(1.0, abs=1e-9)
    assert ar.si_snr(clean, clean) > 250
    assert ar.lsd(clean, clean) == pytest.approx(0.0, abs=1e-9)


def test_wrappers_agree_with_the_packages(clean):
    y = ar.degrade(clean, 10.0, 0.2, 8000.0, 0.0, seed=3)
    assert ar.pesq_wb(clean, y) == pesq_pkg(16000, clean, y, "wb")
    assert ar.pesq_nb(clean, y) == pesq_pkg(16000, clean, y, "nb")
    assert ar.stoi(clean, y) == pytest.approx(stoi_pkg(clean, y, 16000), abs=1e-12)


def test_si_snr_invariances_and_imposed_snr(clean):
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(clean.size)
    noise *= np.sqrt(np.mean(clean**2) / 10**2 / np.mean(noise**2))  # 20 dB white noise
    est = clean + noise
    base = ar.si_snr(clean, est)
    assert base == pytest.approx(20.0, abs=0.5)
    for c in (1e-3, -2.0, 37.0):
        assert ar.si_snr(clean, c * est) == pytest.approx(base, abs=1e-9)
        assert ar.si_snr(c * clean, est) == pytest.approx(base, abs=1e-9)
    assert ar.snr(clean, est) == pytest.approx(20.0, abs=0.5)


def test_metrics_monotone_in_white_noise_snr(clean):
    rng = np.random.default_rng(1)
    w = rng.standard_normal(clean.size)
    snrs = np.linspace(-5, 35, 8)
    vals = []
    for s in snrs:
        n = w * np.sqrt(np.mean(clean**2) / 10 ** (s / 10) / np.mean(w**2))
        y = clean + n
        vals.append((ar.pesq_wb(clean, y), ar.stoi(clean, y), ar.si_snr(clean, y)))
    vals = np.array(vals)
    for k in range(3):
        assert spearmanr(snrs, vals[:, k]).statistic > 0.95
    np.testing.assert_allclose(vals[:, 2], snrs, atol=0.2)


def test_degrade_is_deterministic_aligned_and_length_preserving(clean):
    a = ar.degrade(clean, 5.0, 0.4, 4000.0, 0.5, seed=7)
    b = ar.degrade(clean, 5.0, 0.4, 4000.0, 0.5, seed=7)
    c = ar.degrade(clean, 5.0, 0.4, 4000.0, 0.5, seed=8)
    assert a.shape == clean.shape and np.array_equal(a, b) and not np.array_equal(a, c)
    h = ar.synthetic_rir(0.4, seed=1)
    assert h[0] == 1.0 and np.argmax(np.abs(h)) == 0  # direct path first: no delay
    np.testing.assert_array_equal(ar.synthetic_rir(0.0), [1.0])
    y = ar.degrade(clean, 60.0, 0.0, 8000.0, 0.0, seed=0)
    assert np.argmax(np.correlate(y[:4000], clean[:4000], "full")) == 3999  # zero lag
    clipped = ar.degrade(clean, 60.0, 0.0, 8000.0, True, seed=0)
    assert np.mean(np.abs(clipped) > 0.8999) > 0.01


def test_formant_fallback_is_deterministic_and_speechlike():
    a = ar.formant_speech(3, 1.5)
    assert a.shape == (24000,) and np.array_equal(a, ar.formant_speech(3, 1.5))
    assert not np.array_equal(a, ar.formant_speech(4, 1.5))
    assert ar.stoi(a, a) == pytest.approx(1.0)
    y = ar.degrade(a, 0.0, 0.0, 8000.0, 0.0, seed=0)
    assert ar.stoi(a, y) < ar.stoi(a, ar.degrade(a, 30.0, 0.0, 8000.0, 0.0, seed=0))


def test_formant_fallback_builds_a_labelled_corpus_without_tts():
    c = ar.build_corpus(8, 3, cache=None, n_base=2, source="formant", rows=[0, 5])
    assert c.source == "formant" and c.labels.shape == (2, 9) and np.isfinite(c.labels).all()
    assert c.features.shape == (2, 256)


@pytest.mark.skipif(not ar.espeak_available(), reason="espeak-ng is not installed")
def test_espeak_renders_a_sentence():
    x = ar.tts("The birch canoe slid on the smooth planks.", voice="en-us")
    assert x.ndim == 1 and x.size > 0.8 * ar.SR and np.abs(x).max() == pytest.approx(0.9)
    with pytest.raises(ValueError, match="voice"):
        ar.tts("hello", voice="en; rm")


def test_mu_law_round_trip():
    x = np.linspace(-1, 1, 1001)
    code = ar.mu_law_encode(x)
    assert code.dtype == np.uint8
    np.testing.assert_array_equal(ar.mu_law_encode(ar.mu_law_decode(code)), code)
    assert np.max(np.abs(ar.mu_law_decode(code) - x)) < 0.025  # the largest step, at the peak


# ------------------------------------------------------------------------------------------
# the committed corpus
# ------------------------------------------------------------------------------------------
def test_committed_corpus_shape_and_ranges(corpus):
    assert len(corpus) == 1000 and corpus.names == ar.METRICS
    assert corpus.features.shape == (1000, 256)
    assert corpus.train.size == 800 and corpus.test.size == 200
    assert np.intersect1d(corpus.train, corpus.test).size == 0
    lab = corpus.labels
    assert np.all((lab[:, 0] >= 1.0) & (lab[:, 0] <= 4.65))
    assert np.all((lab[:, 2] > 0.0) & (lab[:, 2] <= 1.0))
    assert np.all((lab[:, 3] >= -30) & (lab[:, 3] <= 40))
    assert set(np.unique(lab[:, 6])) == {0.0, 1.0, 2.0, 3.0}
    assert ar.DEFAULT_PATH.stat().st_size < 1_000_000


def test_a_slice_of_the_committed_corpus_regenerates(corpus):
    rows = [0, 137, 512, 999]
    fresh = ar.build_corpus(1000, 0, cache=None, clean=corpus.clean, rows=rows)
    np.testing.assert_allclose(fresh.labels, corpus.labels[rows], rtol=1e-5, atol=1e-5)
    scale = (corpus.features.max(0) - corpus.features.min(0)) / 254
    assert np.all(np.abs(fresh.features - corpus.features[rows]) <= scale + 1e-5)
    for key in ("snr_db", "t60", "lowpass_hz", "clip", "seed"):
        np.testing.assert_array_equal(fresh.meta[key], corpus.meta[key][rows])
    np.testing.assert_array_equal(
        corpus.audio(137),
        ar.degrade(
            corpus.clean[int(corpus.meta["base"][137])],
            corpus.meta["snr_db"][137],
            corpus.meta["t60"][137],
            corpus.meta["lowpass_hz"][137],
            corpus.meta["clip"][137],
            int(corpus.meta["seed"][137]),
        ),
    )


# ------------------------------------------------------------------------------------------
# tokenizer
# ------------------------------------------------------------------------------------------
def test_tokenizer_round_trip_within_the_bin(corpus, tok):
    for j, name in enumerate(corpus.names):
        v = corpus.labels[corpus.test, j]
        t = tok.encode(name, v)
        s, n = tok.block(name)
        assert np.all((t >= s) & (t < s + n))
        back = tok.decode(name, t)
        if corpus.types[j] == "cat":
            np.testing.assert_array_equal(back, v)
        else:
            np.testing.assert_array_equal(tok.encode(name, back), t)  # same bin
            edges = np.concatenate([[-np.inf], tok.edges[j], [np.inf]])
            k = t - s
            assert np.all((back >= edges[k]) & (back <= edges[k + 1]))


def test_tokenizer_bins_hold_their_share_and_dedupe():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(3200)
    tok = ar.MetricTokenizer(32).fit(v[:, None], ["num"])
    counts = np.bincount(tok.encode(0, v) - tok.block(0)[0], minlength=32)
    assert np.all((counts >= 0.5 * 100) & (counts <= 1.5 * 100))
    grid = np.repeat([0.0, 0.2, 0.4, 0.8], 250)[:, None]  # percentiles fall between values
    tg = ar.MetricTokenizer(32).fit(grid, ["num"])
    assert tg.sizes[0] == 4 and np.all(np.diff(tg.edges[0]) > 0)
    np.testing.assert_array_equal(tg.decode(0, tg.encode(0, grid[:, 0])), grid[:, 0])
    for spacing in ar.SPACINGS:
        t = ar.MetricTokenizer(16, spacing).fit(v[:, None], ["num"])
        assert np.all(np.diff(t.edges[0]) > 0) and t.sizes[0] <= 16


def test_sequences_are_permutations_with_dropout(corpus, tok):
    meta = np.array([tok.meta_token(j) for j in range(9)])
    vt = tok.encode_matrix(corpus.labels[:50])
    seq = _batch_sequences(vt, meta, np.random.default_rng(0), 0.3)
    assert np.all(seq[:, 0] == 2)
    for r in range(50):
        metas = seq[r, 1::2][seq[r, 1::2] != 0]
        assert metas.size >= 1 and len(set(metas)) == metas.size
        assert set(metas) <= set(meta)
        for m_tok, v_tok in zip(seq[r, 1::2], seq[r, 2::2], strict=True):
            if m_tok:
                j = int(np.nonzero(meta == m_tok)[0][0])
                assert v_tok == vt[r, j]
    s = tok.sequence(corpus.labels[0], order=[8, 7, 6, 5, 4, 3, 2, 1, 0])
    assert s.size == 19 and s[1] == tok.meta_token("clip")


# ------------------------------------------------------------------------------------------
# models and decoding
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ar.MODES)
def test_pair_decode(corpus, chain, mode):
    """reference.decode == fast.decode (batched), token for token, in every mode."""
    x = corpus.features[corpus.test[:12]]
    fast, seq = ar.fast.decode(chain, x, "all", mode, return_tokens=True)
    ref = ar.reference.decode(chain, x, "all", mode)
    for name in corpus.names:
        np.testing.assert_array_equal(fast[name], ref[name])
    assert seq.shape == (12, 1 + 2 * 9)
    for r in range(12):
        assert sorted(seq[r, 1::2].tolist()) == sorted(
            chain.tokenizer.meta_token(j) for j in range(9)
        )


def test_subset_query_and_one_metric_equals_masked_argmax(corpus, chain):
    x = corpus.features[corpus.test[:8]]
    out, seq = ar.fast.decode(chain, x, ["STOI", "PESQ-WB"], "confidence", return_tokens=True)
    assert set(out) == {"STOI", "PESQ-WB"} and seq.shape == (8, 5)
    one, seq1 = ar.fast.decode(chain, x, "SI-SNR", "meta", return_tokens=True)
    tok = chain.tokenizer
    prefix = torch.tensor([[2, tok.meta_token("SI-SNR")]] * 8)
    with torch.no_grad():
        lp = chain(torch.as_tensor(x), prefix)[:, -1]
    s, n = tok.block("SI-SNR")
    np.testing.assert_array_equal(seq1[:, 2], s + lp[:, s : s + n].argmax(1).numpy())
    given, gseq = ar.fast.decode(chain, x, "all", "fixed", given={"SNR": 10.0}, return_tokens=True)
    assert "SNR" not in given and np.all(gseq[:, 1] == tok.meta_token("SNR"))


def test_parallel_baselines_train_and_predict(corpus, tok):
    with small_problem_threads():
        for target in ("raw", "standardized", "universa", "tokens"):
            torch.manual_seed(0)
            m = ar.ParallelBaseline(256, 9, target, tok)
            h = ar.train(m, corpus, ar.TrainSettings(60, 20))
            assert h["steps"] == 20 and np.isfinite(h["loss"]).all()
            p = ar.predict(m, corpus.features[corpus.test[:10]])
            assert p.shape == (10, 9) and np.isfinite(p).all()
    err = ar.errors(
        p, corpus.labels[corpus.test[:10]], corpus.types, corpus.labels[corpus.train], corpus.names
    )
    assert set(err) == set(corpus.names)


def test_training_is_deterministic_in_steps(corpus, tok):
    outs = []
    with small_problem_threads():
        for _ in range(2):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                m = ar.TinyARECHO(tok, 256)
            ar.train(m, corpus, ar.TrainSettings(60, 5, seed=3))
            outs.append(ar.fast.decode(m, corpus.features[:6], "all", "fixed"))
    for name in corpus.names:
        np.testing.assert_array_equal(outs[0][name], outs[1][name])


def test_figures_keep_trace_counts(corpus, chain):
    num = [n for n, t in zip(corpus.names, corpus.types, strict=True) if t == "num"]
    comp = figures.query_compute(ar.query_panel(chain, corpus), num)
    counts = {len(comp(mode, "PESQ-WB, STOI", "nothing").data) for mode in ar.MODES}
    assert counts == {2}
    tcomp = figures.tokenizer_compute(ar.tokenizer_panel(corpus))
    assert {len(tcomp(b, "linear", "STOI").data) for b in (4, 32)} == {4}


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_ridge_oracle_gain_matches_sklearn_and_validates(corpus):
    from sklearn.linear_model import Ridge

    out = ar.ridge_oracle_gain(corpus, ["STOI", "PESQ-NB"], ["SNR", "PESQ-WB"], alpha=10.0)
    tr, te = corpus.train, corpus.test
    x = corpus.features
    x = (x - x[tr].mean(0)) / (x[tr].std(0) + 1e-12)
    j = corpus.index("STOI")
    y = corpus.labels
    pred = Ridge(alpha=10.0).fit(x[tr], y[tr, j]).predict(x[te])
    want = np.mean(np.abs(pred - y[te, j])) / y[tr, j].std()
    # two solves of one ridge problem agree to about cond(A'A + alpha I) x eps of the features'
    # dtype (float32 here: 7e3 x 1.2e-7 = 8e-4), whatever BLAS kernel computes them (the
    # same fit in two memory layouts differed by 1.6e-6 under OpenBLAS's SkylakeX kernel)
    a = x[tr] - x[tr].mean(0)
    rel = np.linalg.cond(a.T @ a + 10.0 * np.eye(a.shape[1])) * np.finfo(x.dtype).eps
    assert out["without"]["STOI"] == pytest.approx(want, rel=rel)  # the same ridge, closed form
    # a target is never given its own true value
    own = ar.ridge_oracle_gain(corpus, ["STOI"], ["STOI", "PESQ-WB"])
    assert own["with"]["STOI"] == pytest.approx(
        ar.ridge_oracle_gain(corpus, ["STOI"], ["PESQ-WB"])["with"]["STOI"], rel=rel
    )
    prev = ar.ridge_oracle_gain(corpus, ["PESQ-WB", "STOI"], "previous")
    # nothing before it: the same fit
    assert prev["with"]["PESQ-WB"] == pytest.approx(prev["without"]["PESQ-WB"], rel=rel)
    assert prev["with"]["STOI"] < prev["without"]["STOI"]
    assert out["gain_of_means"] == pytest.approx(
        1 - np.mean(list(out["with"].values())) / np.mean(list(out["without"].values()))
    )
    with pytest.raises(ValueError, match="targets"):
        ar.ridge_oracle_gain(corpus, ["T60"], "previous")
    with pytest.raises(TypeError, match="targets"):
        ar.ridge_oracle_gain(corpus, "STOI", "previous")
    with pytest.raises(ValueError, match="given"):
        ar.ridge_oracle_gain(corpus, ["STOI"], "next")
    with pytest.raises(ValueError, match="given"):
        ar.ridge_oracle_gain(corpus, ["STOI"], ["nope"])
    with pytest.raises(ValueError, match="alpha"):
        ar.ridge_oracle_gain(corpus, ["STOI"], "previous", alpha=0)
    with pytest.raises(TypeError, match="corpus"):
        ar.ridge_oracle_gain(None, ["STOI"], "previous")


def test_pesq_no_utterances_is_reraised_with_the_utterance_id(clean, monkeypatch):
    import pesq as pesq_module

    def silent(*args, **kwargs):
        raise pesq_module.NoUtterancesError(b"No utterances detected")

    monkeypatch.setattr(pesq_module, "pesq", silent)
    with pytest.raises(ValueError, match="no utterances in utterance 'u7'"):
        ar.pesq_wb(clean, clean, utt_id="u7")


def test_bad_inputs_raise_clear_errors(clean, corpus, chain, tok):
    with pytest.raises(ValueError, match="sr must be 8000 or 16000"):
        ar.pesq_nb(clean, clean, sr=22050)
    with pytest.raises(ValueError, match="wide-band PESQ needs sr = 16000"):
        ar.pesq_wb(clean[:16000], clean[:16000], sr=8000)
    with pytest.raises(ValueError, match="same length"):
        ar.si_snr(clean, clean[:-1])
    with pytest.raises(ValueError, match="all zeros"):
        ar.si_snr(np.zeros(100), np.ones(100))
    with pytest.raises(ValueError, match="est must not be all zeros"):
        ar.pesq_wb(clean, np.zeros_like(clean), utt_id="u7")
    with pytest.raises(ValueError, match="0.25 s"):
        ar.pesq_nb(clean[:1000], clean[:1000])
    with pytest.raises(ValueError, match="snr_db"):
        ar.degrade(clean, 200.0)
    with pytest.raises(ValueError, match="lowpass_hz"):
        ar.degrade(clean, 10.0, lowpass_hz=9000.0)
    with pytest.raises(TypeError, match="seed"):
        ar.degrade(clean, 10.0, seed=1.5)
    with pytest.raises(ValueError, match="n_bins"):
        ar.MetricTokenizer(1)
    with pytest.raises(ValueError, match="spacing"):
        ar.MetricTokenizer(8, "cubic")
    with pytest.raises(ValueError, match="metric must be one of"):
        ar.fast.decode(chain, corpus.features[:2], ["MOS"])
    with pytest.raises(ValueError, match="mode"):
        ar.fast.decode(chain, corpus.features[:2], "all", "beam")
    with pytest.raises(ValueError, match="token must lie in"):
        tok.decode("STOI", tok.block("PESQ-WB")[0])
    with pytest.raises(ValueError, match="not a category"):
        ar.fast.decode(chain, corpus.features[:2], "all", given={"T60": 0.5})
    with pytest.raises(RuntimeError, match="not fitted"):
        ar.MetricTokenizer(8).encode("STOI", 0.5)
    with pytest.raises(TypeError, match="MetricTokenizer"):
        ar.TinyARECHO("tok", 256)
    with pytest.raises(ValueError, match="representative"):
        ar.MetricTokenizer(8, "linear", "mean")
    with pytest.raises(TypeError, match="tokenizer"):
        ar.ParallelBaseline(256, 9, "universa")
    with pytest.raises(TypeError, match="TinyARECHO"):
        ar.fast.decode(ar.ParallelBaseline(256, 9, "tokens", tok), corpus.features[:2])
    t = torch.zeros(3)
    with pytest.raises(ValueError, match="one shape"):
        ar.masked_l1_loss(t, torch.zeros(2), t > 0)
    with pytest.raises(ValueError, match="at least one true"):
        ar.masked_l1_loss(t, t, t > 0)
    with pytest.raises(TypeError, match="pred"):
        ar.masked_l1_loss([0.0], t, t == 0)
    with pytest.raises(ValueError, match="cpu_seconds"):
        ar.train_baselines(corpus, 0.0)


# ------------------------------------------------------------------------------------------
# CUDA and paper-scale
# ------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_greedy_decoding_matches_cpu(corpus, chain):
    import copy

    x = corpus.features[corpus.test[:64]]
    cpu_out, cpu_seq = ar.fast.decode(chain, x, "all", "confidence", return_tokens=True)
    gpu = copy.deepcopy(chain).to("cuda")
    gpu_out, gpu_seq = ar.fast.decode(
        gpu, torch.as_tensor(x).cuda(), "all", "confidence", return_tokens=True
    )
    np.testing.assert_array_equal(cpu_seq, gpu_seq)
    xt = torch.as_tensor(x)
    seq = torch.as_tensor(cpu_seq)
    with torch.no_grad():
        a = chain(xt, seq)
        b = gpu(xt.cuda(), seq.cuda()).cpu()
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("seed", ar.SEEDS)
def test_committed_models_load_with_matched_budgets(corpus, seed):
    from lab.arecho.checkpoint import checkpoint_path, load_models

    assert checkpoint_path(seed).stat().st_size < 1_000_000
    chain, par, meta = load_models(corpus, seed=seed)
    assert meta["seed"] == seed and meta["n_bins"] == ar.CHAIN_BINS == 32
    assert ar.DEFAULT_BINS == 500  # the paper's tokenizer default; the chains are scaled down
    assert chain.tokenizer.n_bins == 32 and max(chain.tokenizer.sizes) <= 32
    assert meta["chain_steps"] == 1500
    assert (
        abs(meta["chain_cpu_seconds"] - meta["parallel_cpu_seconds"])
        < 0.15 * meta["chain_cpu_seconds"]
    )
    # the weights are trained, not fresh: far better than the training median
    x, y = corpus.features[corpus.test], corpus.labels[corpus.test]
    tr = corpus.labels[corpus.train]
    num = [n for n, t in zip(corpus.names, corpus.types, strict=True) if t == "num"]
    base = ar.errors(ar.fast.decode(chain, x, "all", "fixed"), y, corpus.types, tr, corpus.names)
    med = ar.errors(np.tile(np.median(tr, 0), (len(y), 1)), y, corpus.types, tr, corpus.names)
    assert np.mean([base[n] for n in num]) < 0.5 * np.mean([med[n] for n in num])


def test_teacher_forced_equals_decoding_with_the_true_prefix(corpus, chain):
    """The ablation's one-pass prediction = the decoder given the true earlier metrics."""
    x, y = corpus.features[corpus.test[:12]], corpus.labels[corpus.test[:12]]
    tf = ar.teacher_forced(chain, x, y)
    first = ar.fast.decode(chain, x, [corpus.names[0]], "fixed")[corpus.names[0]]
    np.testing.assert_array_equal(tf[:, 0], first)
    for j in (3, 8):
        given = {n: y[:, k] for k, n in enumerate(corpus.names[:j])}
        out = ar.fast.decode(chain, x, [corpus.names[j]], "fixed", given=given)
        np.testing.assert_array_equal(tf[:, j], out[corpus.names[j]])
    with pytest.raises(ValueError, match="labels"):
        ar.teacher_forced(chain, x, y[:, :3])


@pytest.mark.slow
def test_checkpoint_regenerates(corpus):
    """``lab artifacts build arecho/checkpoints`` again: the same chain up to float16 rounding."""
    from lab.arecho.checkpoint import load_models, train_models

    committed, _, meta = load_models(corpus, seed=0)
    with small_problem_threads():
        chain, _, _ = train_models(
            corpus, steps=meta["chain_steps"], seed=meta["seed"], parallel_steps=1
        )
    x = corpus.features[corpus.test]
    _, a = ar.fast.decode(chain, x, "all", "fixed", return_tokens=True)
    _, b = ar.fast.decode(committed, x, "all", "fixed", return_tokens=True)
    assert np.mean(a == b) > 0.95


# ------------------------------------------------------------------------------------------
# the paper's baselines (UniVERSA, UniVERSA-T) and parity with the official code
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", ar.SEEDS)
def test_committed_baselines_have_the_chain_budget(corpus, seed):
    from lab.arecho.checkpoint import baselines_path, load_models

    assert baselines_path(seed).stat().st_size < 1_000_000
    models, meta = ar.load_baselines(corpus, seed=seed)
    _, _, chain_meta = load_models(corpus, seed=seed)
    assert set(models) == set(ar.BASELINES) == {"universa", "tokens"}
    assert meta["budget_cpu_seconds"] == chain_meta["chain_cpu_seconds"]
    for name in ar.BASELINES:
        assert abs(meta[f"{name}_cpu_seconds"] - meta["budget_cpu_seconds"]) < 0.15 * 30
    assert models["universa"].target == "universa" and models["tokens"].target == "tokens"
    # trained, not fresh: the UniVERSA regression is far better than the training median
    x, y = corpus.features[corpus.test], corpus.labels[corpus.test]
    tr = corpus.labels[corpus.train]
    num = [n for n, t in zip(corpus.names, corpus.types, strict=True) if t == "num"]
    err = ar.errors(ar.predict(models["universa"], x), y, corpus.types, tr, corpus.names)
    med = ar.errors(np.tile(np.median(tr, 0), (len(y), 1)), y, corpus.types, tr, corpus.names)
    assert np.mean([err[n] for n in num]) < 0.5 * np.mean([med[n] for n in num])


def test_universa_loss_is_the_masked_l1_per_metric_plus_cross_entropy():
    """Closed form: a one-row batch, where the L1 of each number is |pred - y| and missing
    labels (NaN) drop out of the mean."""
    pred = torch.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, float("nan")], [4.0, 1.0]], dtype=torch.float64)
    mask = ~torch.isnan(y)
    assert float(ar.masked_l1_loss(pred, y, mask)) == pytest.approx((1 + 1 + 4) / 3, abs=1e-15)
    assert float(ar.masked_l1_loss(pred[:, 1], y[:, 1], mask[:, 1])) == pytest.approx(4.0)


def test_tokenizer_lower_representative_is_the_bin_lower_edge(corpus):
    tok = ar.MetricTokenizer(16, representative="lower").fit(
        corpus.labels[corpus.train], corpus.types, corpus.names
    )
    j = corpus.index("STOI")
    v = corpus.labels[corpus.train, j]
    np.testing.assert_array_equal(tok.values[j], np.concatenate([[v.min()], tok.edges[j]]))
    assert tok.state()["representative"] == "lower"


def test_reference_does_not_import_models():
    """The import circle models <-> reference is gone: reference.py imports no sibling."""
    import ast

    from lab.arecho import reference

    tree = ast.parse(Path(reference.__file__).read_text())
    rel = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert rel == [], rel


def test_widget_computations_are_memoised_and_validated(corpus):
    from lab.arecho import views as ex

    a, b = (
        ex.degraded_example(corpus, 0, 10, 0.0, 8000, False),
        ex.degraded_example(corpus, 0, 10.0, 0.0, 8000.0, 0),
    )
    assert a is b and a[2].shape == (9,) and ex.spectrogram(a[0]).shape == (16, 20)
    rows = ex.nearest_test_rows(corpus, 10.0)
    assert 0 < len(rows) <= 8 and all(0 <= r < corpus.test.size for _, r in rows)
    assert ex.quantisation_error(corpus, 500, "linear", "STOI") < ex.quantisation_error(
        corpus, 4, "linear", "STOI"
    )
    with pytest.raises(ValueError, match="base"):
        ex.degraded_example(corpus, 99, 10, 0.0, 8000, False)


def test_settings_are_validated_once_where_typed():
    with pytest.raises(ValueError, match="label_dropout"):
        ar.TrainSettings(label_dropout=0.99)
    with pytest.raises(ValueError, match="clock"):
        ar.TrainSettings(clock="gpu")
    with pytest.raises(TypeError, match="settings"):
        ar.train(ar.TinyARECHO.__new__(ar.TinyARECHO), None, {"seconds": 1})
    with pytest.raises(ValueError, match="steps"):
        ar.HeadSettings(steps=0)
    with pytest.raises(ValueError, match="modes"):
        ar.StudySettings(modes=("fixed", "beam"))
    with pytest.raises(ValueError, match="seeds"):
        ar.StudySettings(seeds=(0, 0))
    assert ar.StudySettings(seeds=[2, 1]).seeds == (2, 1)


def test_figures_draw_what_the_views_return(corpus):
    panel = ar.degradation_panel(corpus, base=0)
    v = panel(10.0, 0.0, 8000.0, False)
    assert v.labels.shape == (9,) and v.spec.shape == v.clean_spec.shape == (16, 20)
    assert len(figures.degradation_compute(panel)(10.0, 0.0, 8000.0, False).data) == 3
    rho = ar.label_correlations(corpus)
    assert rho.shape == (9, 9) and np.allclose(np.diag(rho), 1.0)
    assert len(figures.correlation_figure(rho, corpus.names).data) == 1
    with pytest.raises(TypeError, match="panel"):
        figures.tokenizer_compute(corpus)


def test_derangement_gives_every_row_another_rows_labels():
    for n, seed in ((2, 0), (7, 3), (200, 1)):
        p = ar.derangement(n, seed)
        assert sorted(p.tolist()) == list(range(n)) and not np.any(p == np.arange(n))
    np.testing.assert_array_equal(ar.derangement(50, 4), ar.derangement(50, 4))
    with pytest.raises(ValueError, match="n"):
        ar.derangement(1)


def test_claims_registry_names_rivals_and_registered_deviations():
    from lab.arecho.claims import CLAIMS

    assert CLAIMS.notebooks() == ("01", "02")
    for spec in CLAIMS.specs.values():
        assert bool(spec.rival) != bool(spec.no_rival), spec.id
    assert {"bins", "compute-matched"} <= set(CLAIMS.deviations)
