"""Tests of lab.coreset, second file: per-class selection (the paper's protocol) and parity
with the official code (lab/core/official/coreset_official.json), the Newton steps of the
alignment study, and the stacked trainer of notebook 3 (tests/test_coreset.py holds the rest).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lab import coreset as cs
from lab.core.fixtures import official_fixture

# ------------------------------------------------------------------------------------------
# per-class selection (the paper's protocol) and parity with the official code
# ------------------------------------------------------------------------------------------
OFFICIAL = official_fixture("coreset_official.json")
TIE = 1e-9  # relative: two marginal gains this close are the same gain (a tie)


def _official_cases():
    return json.loads(OFFICIAL.read_text())["cases"]


def test_official_fixture_has_its_provenance():
    """The provenance fields every fixture has: tests/test_installed_fixtures.py."""
    data = json.loads(OFFICIAL.read_text())
    assert data["provenance"]["repository"] == "YuYang0901/CREST" and data["provenance"]["setup"]
    assert len(data["cases"]) == 3


def _class_blocks(case, key):
    """(class members, the official picks of that class) in the official output order."""
    X = np.asarray(case["instance"]["X"])
    y = np.asarray(case["instance"]["y"])
    order = np.asarray(case["outputs"][key]["order"])
    per = cs.per_class_budget(case["instance"]["budget"], len(np.unique(y)))
    for k, c in enumerate(np.unique(y)):
        yield X, np.flatnonzero(y == c), order[k * per : (k + 1) * per]


def test_per_class_selection_reproduces_crest_submodlib():
    """CREST's default selection (``utils/submodular.get_orders_and_weights(..., equal_num=True)``,
    submodlib's lazy greedy on ``exp(-d / m)``): our ``per_class_facility_location(...,
    similarity="exp")`` returns the same indices, in the same order, and the same weights.
    Tolerance: exact, except at exact ties of the marginal gain (two points that cover only
    each other have the same gain; within ``TIE``), where submodlib's max-heap takes the
    highest index and ours the lowest: there the official pick must be a maximiser of our gain."""
    ties = 0
    for case in _official_cases():
        X, y = np.asarray(case["instance"]["X"]), np.asarray(case["instance"]["y"])
        idx, w = cs.per_class_facility_location(X, y, case["instance"]["budget"], similarity="exp")
        official = case["outputs"]["submodlib"]
        assert np.array_equal(w, np.asarray(official["weights"], dtype=int)), case["name"]
        assert len(idx) == len(official["order"])
        for X_, members, picks in _class_blocks(case, "submodlib"):
            S = cs.similarity_matrix(cs.pairwise_distances(X_[members]), "exp", X_.shape[1])
            ours, _ = cs.greedy_facility_location(
                cs.pairwise_distances(X_[members]), len(picks), similarity="exp", scale=X_.shape[1]
            )
            local = [int(np.flatnonzero(members == p)[0]) for p in picks]
            cover = np.zeros(len(members))
            for t, j in enumerate(local):
                gain = np.maximum(S - cover[:, None], 0).sum(axis=0)
                gain[local[:t]] = -np.inf
                best = gain.max()
                assert gain[j] >= best * (1 - TIE), (case["name"], t)
                if (gain >= best * (1 - TIE)).sum() == 1:
                    assert ours[t] == j, (case["name"], t)  # no tie: the same pick
                else:
                    ties += 1
                    break  # after a tie the two paths may cover differently
                cover = np.maximum(cover, S[:, j])
    assert ties == 6  # the ten-class case: six tied steps (five broken the other way); no others


def test_per_class_selection_exact_on_the_untied_official_cases():
    for case in _official_cases()[:2]:
        X, y = np.asarray(case["instance"]["X"]), np.asarray(case["instance"]["y"])
        idx, w = cs.per_class_facility_location(X, y, case["instance"]["budget"], similarity="exp")
        assert idx.tolist() == case["outputs"]["submodlib"]["order"]
        assert w.tolist() == case["outputs"]["submodlib"]["weights"]


def test_crest_craig_path_is_greedy_with_the_first_member_forced_second():
    """CREST's other path (``utils/craig.py``, CRAIG's python lazy greedy on ``d_max - d``,
    our eq. (2)): its ``FacilityLocation.inc`` tests ``if not ndx`` and so gives local index 0
    a constant gain; the official picks are our greedy with each class's first member forced
    in second place (unless greedy picks it first), exactly."""
    for case in _official_cases():
        for X, members, picks in _class_blocks(case, "craig"):
            D = cs.pairwise_distances(X[members])
            S = cs.similarity_matrix(D)
            first, _ = cs.greedy_facility_location(D, 1)
            chosen = [int(first[0])] + ([0] if first[0] != 0 else [])
            cover = S[:, chosen].max(axis=1)
            while len(chosen) < len(picks):
                gain = np.maximum(S - cover[:, None], 0).sum(axis=0)
                gain[chosen] = -np.inf
                chosen.append(int(np.argmax(gain)))
                cover = np.maximum(cover, S[:, chosen[-1]])
            assert members[chosen[: len(picks)]].tolist() == picks.tolist(), case["name"]


def test_per_class_budget_and_selection_invariants():
    assert cs.per_class_budget(30, 10) == 3 and cs.per_class_budget(32, 10) == 4
    rng = np.random.default_rng(4)
    G = rng.standard_normal((60, 5))
    y = np.repeat(np.arange(3), 20)
    idx, w = cs.per_class_facility_location(G, y, 7)
    assert len(idx) == 9 and w.sum() == 60 and (w >= 1).all() and len(set(idx)) == 9
    assert np.array_equal(np.bincount(y[idx]), [3, 3, 3])  # ceil(7 / 3) per class
    for c in range(3):  # each class block is the plain greedy on that class
        m = np.flatnonzero(y == c)
        i, wc = cs.greedy_facility_location(cs.pairwise_distances(G[m]), 3)
        assert np.array_equal(idx[3 * c : 3 * c + 3], m[i]) and np.array_equal(
            w[3 * c : 3 * c + 3], wc
        )
    # a class smaller than its share is taken whole
    y2 = y.copy()
    y2[:18] = 1
    idx2, w2 = cs.per_class_facility_location(G, y2, 9)
    assert set(np.flatnonzero(y2 == 0)) <= set(idx2.tolist()) and w2.sum() == 60
    # "exp" and eq. (2) are different similarities of the same distances
    S = cs.similarity_matrix(cs.pairwise_distances(G), "exp", 5.0)
    assert np.allclose(np.diag(S), 1.0) and (S > 0).all() and (S <= 1).all()
    with pytest.raises(ValueError, match="scale"):
        cs.similarity_matrix(cs.pairwise_distances(G), "exp")
    with pytest.raises(ValueError, match="similarity"):
        cs.per_class_facility_location(G, y, 3, similarity="cosine")
    with pytest.raises(ValueError, match="y must have shape"):
        cs.per_class_facility_location(G, y[:5], 3)
    with pytest.raises(TypeError, match="integer"):
        cs.per_class_facility_location(G, y.astype(float), 3)
    with pytest.raises(ValueError, match="budget"):
        cs.per_class_facility_location(G, y, 0)


def test_newton_steps_range_and_ridge():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    H = A @ A.T + np.eye(6)
    g = rng.standard_normal(6)
    N, NS, dim = cs.newton_steps(H, g, H, g)
    assert dim == 6 and np.allclose(N, np.linalg.solve(H, g)) and np.allclose(NS, N)
    # a rank-2 coreset Hessian: both steps live in its range, where N_S solves exactly
    B = rng.standard_normal((6, 2))
    HS = B @ B.T
    N, NS, dim = cs.newton_steps(H, g, HS, g)
    assert dim == 2 and np.allclose(HS @ NS, B @ np.linalg.lstsq(B, g, rcond=None)[0])
    U = np.linalg.qr(B)[0]
    assert np.allclose(U @ (U.T @ N), N) and np.allclose(U @ (U.T @ NS), NS)
    N, NS, dim = cs.newton_steps(H, g, HS, g, newton="ridge", l2=0.5)
    assert dim == 6 and np.allclose(NS, np.linalg.solve(HS + 0.5 * np.eye(6), g))
    with pytest.raises(ValueError, match="newton"):
        cs.newton_steps(H, g, HS, g, newton="exact")
    with pytest.raises(ValueError, match="must be"):
        cs.newton_steps(H, g[:3], HS, g)


# ------------------------------------------------------------------------------------------
# the stacked trainer (notebook 3's 36 runs as one computation)
# ------------------------------------------------------------------------------------------
def _specs(methods, seeds=(0,), noise=0.5):
    from lab.coreset.stacked import RunSpec

    out = []
    for m in methods:
        for seed in seeds:
            Xtr, ytr, Xte, yte = cs.digits_split(seed=seed)
            yn, fl = cs.corrupt_labels(ytr, noise, 10, seed)
            out.append(RunSpec(m, seed, Xtr, yn, Xte, yte, fl))
    return out


def test_stacked_equals_coreset_trainer_for_random_and_full():
    """Random and full-data runs draw no features: the stacked trainer's histories equal
    ``CoresetTrainer.fit``'s exactly (same batches, SGD, BatchNorm statistics)."""
    from lab.coreset.stacked import train_stacked

    specs = _specs(("random", "full"), seeds=(0, 1))
    train = cs.TrainSettings(steps=30, eval_every=10)
    hists = train_stacked(specs, train)
    for s, h in zip(specs, hists, strict=True):
        ref = cs.CoresetTrainer(s.method, train=train, seed=s.seed).fit(
            cs.make_mlp(seed=s.seed), s.X, s.y, s.X_test, s.y_test, flipped=s.flipped
        )
        assert h.steps == ref.steps and np.allclose(h.test_acc, ref.test_acc, atol=0)
        assert np.allclose(h.noisy_share, ref.noisy_share, equal_nan=True)


def test_stacked_selection_equals_select_minibatch_coresets():
    """One selection round from the same model: the stacked path's coresets equal the one-run
    path's on most pools. Natively CRAIG's are identical on all 10; float32 features computed by
    other kernels (the AVX2 numerics mode: 9 of 10 for CRAIG) or in another order (posterior's)
    can break a near-tie of the greedy differently."""
    from lab.coreset.stacked import _PARAMS, _select, _Stack

    spec = _specs(("craig",))[0]
    model = cs.make_mlp(seed=0)
    Xt = torch.as_tensor(spec.X, dtype=torch.float32)
    model.train()
    model(Xt[:64])  # BatchNorm statistics away from their initial values
    for method, at_least in (("craig", 8), ("posterior", 7)):
        seq = cs.select_minibatch_coresets(model, Xt, spec.y, steps=10, method=method, seed=5)
        run = spec.__class__(method, 0, spec.X, spec.y, spec.X_test, spec.y_test, spec.flipped)
        st = _Stack.build([run], 128)
        st.P = {
            n: p.detach().clone().unsqueeze(0)
            for n, p in zip(_PARAMS, model.parameters(), strict=True)
        }
        bn = model[1]
        st.stats = {"mean": bn.running_mean.clone()[None], "var": bn.running_var.clone()[None]}
        _select(st, [0], 5, cs.TrainSettings())  # step 5, B = 30, pools of 130, 10 rounds
        same = sum(
            np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
            for a, b in zip(seq, st.queues[0], strict=True)
        )
        assert same >= at_least, (method, same)


def test_stacked_trainer_bad_input():
    from lab.coreset.stacked import RunSpec, train_stacked

    with pytest.raises(TypeError, match="specs"):
        train_stacked([])
    spec = _specs(("random",))[0]
    with pytest.raises(ValueError, match="method"):
        RunSpec("sgd", 0, spec.X, spec.y, spec.X_test, spec.y_test)
    out = cs.PosteriorSettings(where="norm_out")
    with pytest.raises(ValueError, match="where"):
        RunSpec("posterior", 0, spec.X, spec.y, spec.X_test, spec.y_test, posterior=out)
    with pytest.raises(TypeError, match="train"):
        train_stacked([spec], {"steps": 2})
    with pytest.raises(ValueError, match="budget"):
        train_stacked(_specs(("craig",)), cs.TrainSettings(steps=2, budget=32))  # 4 per class


def test_digits_runs_batches_and_memoises():
    cs.experiments._trained.clear()
    train = cs.TrainSettings(steps=20, eval_every=10)
    runs = [cs.RunSettings(m, 0.5, 0, train=train) for m in ("random", "craig")]
    a = cs.digits_runs(runs)
    b = cs.digits_run(cs.RunSettings("craig", 0.5, 0, train=train))
    assert b is a[1] and a[0].steps == [10, 20]
    # a method other than posterior ignores the posterior samples: the same run answers
    other = cs.RunSettings("craig", 0.5, 0, cs.PosteriorSettings(K=8), train)
    assert cs.digits_run(other) is a[1]
    with pytest.raises(TypeError, match="runs"):
        cs.digits_runs("craig")
    with pytest.raises(TypeError, match="RunSettings"):
        cs.digits_runs([{"method": "craig"}])
