"""lab.splitfed over seeds: the seed-batched fast path and the claims read over seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_splitfed import _nets

from lab import splitfed as sf


@pytest.fixture(scope="module")
def digits():
    return sf.load_digits_clients(10, seed=0)


def test_seeds_batched_equals_one_run_per_seed():
    """simulate_digits_seeds (all seeds in one tensor operation) == simulate_digits per seed."""
    run = sf.DigitsRun(sf.MUSplitFedConfig(tau=3, rounds=12, eval_every=4, dtype="float64"))
    by_seed = sf.simulate_digits_seeds(run, (0, 5), "cpu")
    assert list(by_seed) == [0, 5]
    for seed, h in by_seed.items():
        one = sf.simulate_digits(run.replace(seed=seed, model_seed=seed, data_seed=seed), "cpu")
        assert float((one.xc - h.xc).abs().max()) < 1e-10
        assert float((one.xs - h.xs).abs().max()) < 1e-10
        assert np.allclose(one.batch_loss, h.batch_loss, atol=1e-10)
        assert np.allclose(one.loss, h.loss, atol=1e-10) and one.eval_round == h.eval_round
        assert one.participants == h.participants and one.server_steps == h.server_steps
    assert not torch.equal(by_seed[0].xc, by_seed[5].xc)


def test_seeds_batched_bad_inputs(digits):
    run = sf.DigitsRun(sf.MUSplitFedConfig(rounds=2))
    with pytest.raises(TypeError, match="settings"):
        sf.simulate_digits_seeds("run", (0, 1))
    with pytest.raises(ValueError, match="seeds"):
        sf.simulate_digits_seeds(run, (1, 1))
    with pytest.raises(TypeError, match="seeds"):
        sf.simulate_digits_seeds(run, 3)
    c, s = _nets()
    cfg = sf.MUSplitFedConfig(rounds=2)
    with pytest.raises(TypeError, match="runs"):
        sf.fast.simulate_seeds([])
    with pytest.raises(ValueError, match="fixed tau"):
        sf.fast.simulate_seeds([(c, s, digits["clients"], cfg.replace(adaptive_tau=True), None)])
    with pytest.raises(ValueError, match="share"):
        sf.fast.simulate_seeds(
            [
                (c, s, digits["clients"], cfg, None),
                (c, s, digits["clients"], cfg.replace(tau=5), None),
            ]
        )


def test_seed_evidence_reads_intervals():
    """tau-speedup and saturation read the mean over seeds with its 95% interval."""
    from lab.splitfed import evidence

    def hist(losses, every=20):
        h = sf.History()
        h.eval_round = [every * (k + 1) for k in range(len(losses))]
        h.loss, h.acc = list(losses), [0.5] * len(losses)
        return h

    runs = {
        t: {s: hist([2.3] * (k + s) + [2.0] * 3) for s in (0, 1, 2)}
        for k, t in zip((8, 6, 4, 2), (1, 2, 4, 8), strict=True)
    }
    rec = evidence.tau_speedup_evidence(runs, 2.1, 2080, 3466)
    m = rec["measured"]
    assert m["n"] == 3 and m["lo"] < m["estimate"] < m["hi"] < 0
    big = {8: {s: hist([1.0] * 7 + [0.5]) for s in (0, 1, 2)}, 32: {}}
    big[32] = {s: hist([0.8] * 6 + [0.2 + 0.01 * s, float("nan")]) for s in (0, 1, 2)}
    sat = evidence.saturation_evidence(big)["measured"]
    assert abs(sat["estimate"] - 0.42) < 1e-9 and sat["n"] == 3
    with pytest.raises(TypeError, match="runs"):
        evidence.tau_speedup_evidence({1: hist([2.0])}, 2.1, 1, 2)
    with pytest.raises(ValueError, match="same seeds"):
        evidence.saturation_evidence({8: {0: hist([1.0]), 1: hist([1.0])}, 32: {0: hist([1.0])}})
