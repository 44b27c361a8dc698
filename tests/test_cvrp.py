"""Tests of lab.cvrp: tiny POMO under varying capacity tightness, VCT, experts, PyVRP peer.

Mirrors the "Correctness checks" of shared/papers/cvrp-constraint-tightness.md. CPU, small
instances; the CUDA test is skipped without a GPU; the trend check on the shipped checkpoints
against PyVRP is marked slow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lab import cvrp
from lab.core.fixtures import official_fixture
from lab.cvrp.settings import GapSettings, TrainSettings
from lab.cvrp.store import CHECKPOINT_DIR, TRAIN_STEPS, checkpoint_file
from lab.cvrp.train import build_and_train


def _model(experts=1, seed=0):
    edges = [] if experts == 1 else [73.0, 137.0][: experts - 1]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cvrp.TinyPOMO(d=32, heads=4, layers=1, ff=64, experts=experts, edges=edges).eval()


# ------------------------------------------------------------------------------------------
# instances, routes, lengths
# ------------------------------------------------------------------------------------------
def test_generate_is_seeded_and_capacity_only_changes_capacity():
    a = cvrp.generate_cvrp(4, 10, 30, seed=5)
    b = cvrp.generate_cvrp(4, 10, 200, seed=5)
    assert torch.equal(a.xy, b.xy) and torch.equal(a.demand, b.demand)
    assert a.demand[:, 0].eq(0).all() and a.demand[:, 1:].ge(1).all() and a.demand.le(9).all()
    assert a.capacity.tolist() == [30.0] * 4 and b.capacity.tolist() == [200.0] * 4


def test_tour_length_and_feasibility_by_hand():
    xy = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    q = np.array([0.0, 2.0, 3.0, 4.0])
    assert cvrp.tour_length([[1, 2, 3]], xy) == pytest.approx(4.0)
    assert cvrp.tour_length([[1], [2], [3]], xy) == pytest.approx(4 + 2 * math.sqrt(2))
    assert cvrp.route_feasible([[1, 2, 3]], q, 9)
    assert not cvrp.route_feasible([[1, 2, 3]], q, 8)  # overloaded
    assert not cvrp.route_feasible([[1, 2]], q, 9)  # customer 3 missing
    assert not cvrp.route_feasible([[1, 2], [2, 3]], q, 9)  # customer 2 twice
    assert not cvrp.route_feasible([[1, 0, 2, 3]], q, 9)  # depot inside a route
    assert cvrp.actions_to_routes([2, 1, 0, 3, 0, 0]) == [[2, 1], [3]]


def test_masking_feasible_and_lengths_recomputed():
    m = _model()
    b = cvrp.generate_cvrp(8, 12, torch.tensor([9.0, 10, 15, 20, 30, 50, 100, 200]), seed=1)
    with torch.no_grad():
        L, lp, A = m(
            b, greedy=False, generator=torch.Generator().manual_seed(0), return_actions=True
        )
    assert torch.isfinite(lp).all()  # an infeasible node was never sampled (log 0 = -inf)
    for i in range(8):
        for p in range(12):
            acts = A[i, p].tolist()
            # the depot is never chosen twice in a row before every customer is served
            seq = [0, *acts]
            served = set()
            for a0, a1 in zip(seq, seq[1:], strict=False):
                if a1:
                    served.add(a1)
                if a0 == 0 and a1 == 0:
                    assert len(served) == 12
            r = cvrp.actions_to_routes(acts)
            assert cvrp.route_feasible(r, b.demand[i].numpy(), float(b.capacity[i]))
            assert cvrp.tour_length(r, b.xy[i].double().numpy()) == pytest.approx(
                float(L[i, p]), abs=1e-5
            )
            assert r[0][0] == p + 1  # POMO: rollout p starts at customer p + 1


def test_pomo_best_of_starts_and_augmentation_never_worse():
    m = _model()
    b = cvrp.generate_cvrp(6, 10, 30, seed=2)
    with torch.no_grad():
        L, _ = m(b, greedy=True)
    best = cvrp.evaluate(m, b)
    assert torch.allclose(best, L.min(1).values)
    single = cvrp.evaluate(m, b, starts="single")
    assert (best <= single + 1e-6).all()
    assert (cvrp.evaluate(m, b, augment=True) <= best + 1e-6).all()
    routes = cvrp.decode_routes(m, b)
    for i, r in enumerate(routes):
        assert cvrp.tour_length(r, b.xy[i].double().numpy()) == pytest.approx(
            float(best[i]), abs=1e-5
        )


def test_scale_invariance_of_features_and_outputs():
    m = _model()
    b = cvrp.generate_cvrp(4, 10, 25, seed=3)
    b3 = cvrp.CVRPBatch(b.xy, 3 * b.demand, 3 * b.capacity)
    assert torch.equal(cvrp.node_features(b), cvrp.node_features(b3))
    f = cvrp.node_features(b)
    assert f[..., 2].min() >= 0 and f[..., 2].max() <= 1
    with torch.no_grad():
        assert torch.equal(m(b, greedy=True)[0], m(b3, greedy=True)[0])


def test_sample_capacity_covers_range():
    g = torch.Generator().manual_seed(0)
    c = cvrp.sample_capacity(10_000, 10, 200, g)
    assert c.min() == 10 and c.max() == 200 and c.eq(c.round()).all()


# ------------------------------------------------------------------------------------------
# reference (numpy float64) vs fast path (torch)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("experts", [1, 3])
def test_pair_greedy_rollout(experts):
    """reference.greedy_rollout (numpy float64, one start) == fast.greedy_rollout (batched)."""
    from lab.cvrp import fast, reference

    m = _model(experts)
    caps = torch.tensor([10.0, 40, 73, 74, 137, 180])
    b = cvrp.generate_cvrp(6, 12, caps, seed=4)
    L, A = fast.greedy_rollout(m, b)
    sd = {k: v.numpy() for k, v in m.state_dict().items()}
    same = 0
    for i in range(6):
        for start in (1, 5, 12):
            acts, ln = reference.greedy_rollout(
                sd, m.config, b.xy[i].numpy(), b.demand[i].numpy(), float(caps[i]), start
            )
            same += acts == A[i, start - 1, : len(acts)].tolist()
            if acts == A[i, start - 1, : len(acts)].tolist():
                assert ln == pytest.approx(float(L[i, start - 1]), rel=1e-5)
    assert same >= 17  # float32 near-ties may flip one argmax


# ------------------------------------------------------------------------------------------
# experts
# ------------------------------------------------------------------------------------------
def test_route_to_expert_intervals():
    c = torch.tensor([1.0, 73.0, 73.5, 137.0, 137.01, 1e6])
    assert cvrp.route_to_expert(c, [73.0, 137.0]).tolist() == [0, 0, 1, 1, 2, 2]
    assert cvrp.route_to_expert(c, None).tolist() == [0] * 6


def test_mixture_forward_scatters_back_and_skips_idle_experts():
    calls = [0, 0, 0]

    def expert(k):
        def f(x):
            calls[k] += 1
            return x * (k + 1) + k

        return f

    x = torch.randn(7, 3)
    c = torch.tensor([200.0, 10, 100, 73, 74, 137, 150])
    y = cvrp.mixture_forward(x, c, [expert(0), expert(1), expert(2)], [73.0, 137.0])
    k = cvrp.route_to_expert(c, [73.0, 137.0])
    for i in range(7):
        assert torch.allclose(y[i], x[i] * (k[i] + 1) + k[i], atol=1e-6)
    calls[:] = [0, 0, 0]
    cvrp.mixture_forward(
        x, torch.full((7,), 20.0), [expert(0), expert(1), expert(2)], [73.0, 137.0]
    )
    assert calls == [1, 0, 0]


def test_mem_model_equals_each_expert_run_alone():
    m = _model(3)
    b = cvrp.generate_cvrp(6, 10, torch.tensor([150.0, 20, 100, 30, 200, 73]), seed=6)
    with torch.no_grad():
        L, _ = m(b, greedy=True)
        k = m.expert_of(b.capacity)
        forced = cvrp.expert_lengths(m, b)  # (experts, B): each expert forced on everyone
        for i in range(6):
            one = b.subset([i])
            alone = m(one, greedy=True, expert=int(k[i]))[0]
            assert torch.allclose(L[i], alone[0], atol=1e-6)
            # the expert's layers run alone: shared layers, its stack, the shared decoder
            h = m.experts[int(k[i])](_shared(m, one))
            assert torch.allclose(L[i], m.decoder(h, one)[0][0], atol=1e-6)
            assert forced[int(k[i]), i] == pytest.approx(float(L[i].min()), abs=1e-5)


def _shared(m, b):
    f = cvrp.node_features(b)
    h = torch.cat([m.embed_depot(f[:, :1, :2]), m.embed_cust(f[:, 1:])], dim=1)
    for layer in m.encoder:
        h = layer(h)
    return h


def test_experts_are_encoder_stacks_before_one_shared_decoder():
    """The official MoE layout (SINGLEModel.py): shared layers, one transformer stack per
    capacity interval, one decoder; a single-expert model has no expert layers."""
    m = cvrp.TinyPOMO(d=32, heads=4, layers=2, ff=64, experts=3, edges=[73.0, 137.0])
    assert len(m.encoder) == 2 and len(m.experts) == 3
    assert all(isinstance(e[0], cvrp.model.EncoderLayer) for e in m.experts)
    assert isinstance(m.decoder, cvrp.model.PomoDecoder) and not hasattr(m, "decoders")
    assert len(cvrp.TinyPOMO(d=32, heads=4, experts=1).experts) == 0
    with pytest.raises(ValueError, match="expert_layers"):
        cvrp.TinyPOMO(experts=3, edges=[73.0, 137.0], expert_layers=0)
    with pytest.raises(ValueError, match="experts > 1"):
        cvrp.expert_lengths(_model(1), cvrp.generate_cvrp(2, 5, 30, seed=0))


def test_legacy_single_expert_state_dict_loads():
    m = _model(1)
    sd = {
        ("decoders.0." + k[8:] if k.startswith("decoder.") else k): v
        for k, v in m.state_dict().items()
    }
    m2 = _model(1, seed=5)
    m2.load_state_dict(sd)
    for a, b in zip(m.state_dict().values(), m2.state_dict().values(), strict=True):
        assert torch.equal(a, b)


# ------------------------------------------------------------------------------------------
# PyVRP peer and limits
# ------------------------------------------------------------------------------------------
def test_pyvrp_limits_star_and_single_route():
    b = cvrp.generate_cvrp(1, 10, 1000, seed=7)
    xy = b.xy[0].double().numpy()
    # all demands equal and C = q: one customer per route, cost 2 sum ||x_i - depot||
    q = np.array([0.0] + [5.0] * 10)
    routes, length = cvrp.solve_pyvrp(xy, q, 5, 0.05)
    assert len(routes) == 10 and cvrp.route_feasible(routes, q, 5)
    star = 2 * np.linalg.norm(xy[1:] - xy[0], axis=1).sum()
    assert length == pytest.approx(star, rel=1e-3)
    # C >= sum q: one route (a TSP tour); no shorter tour among single-start model decodes
    q = b.demand[0].double().numpy()
    routes, length = cvrp.solve_pyvrp(xy, q, 1000, 0.1)
    assert len(routes) == 1 and cvrp.route_feasible(routes, q, 1000)
    assert length == pytest.approx(cvrp.tour_length(routes, xy), abs=1e-12)


def test_pyvrp_feasible_and_index_convention():
    b = cvrp.generate_cvrp(3, 8, 15, seed=8)
    for i in range(3):
        q = b.demand[i].double().numpy()
        routes, length = cvrp.solve_pyvrp(b.xy[i].double().numpy(), q, 15, 0.05)
        assert cvrp.route_feasible(routes, q, 15)
        assert sorted(j for r in routes for j in r) == list(range(1, 9))


# ------------------------------------------------------------------------------------------
# training, determinism, committed checkpoints
# ------------------------------------------------------------------------------------------
def test_training_is_deterministic():
    def run():
        torch.manual_seed(0)
        m = cvrp.TinyPOMO(d=16, heads=2, layers=1, ff=32)
        h = cvrp.train_pomo(
            m, TrainSettings(n=6, capacity=(10, 30), steps=4, batch=8, seed=3, log_every=1)
        )
        return m, h

    (m1, h1), (m2, h2) = run(), run()
    assert h1["loss"] == h2["loss"] and h1["steps"] == 4
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_checkpoint_files_are_the_shipped_ones():
    shipped = {p.name for p in CHECKPOINT_DIR.glob("*.pt")}
    assert shipped == {checkpoint_file(*k).name for k in cvrp.checkpoint_keys()}
    assert cvrp.checkpoint_keys(["cvrp20_vct"]) == [("cvrp20_vct", s) for s in (0, 1, 2)]
    with pytest.raises(ValueError, match="seed must be one of"):
        cvrp.read_checkpoint("cvrp20_fixed10", seed=1)
    with pytest.raises(TypeError, match="names"):
        cvrp.checkpoint_keys("cvrp20_vct")


@pytest.mark.parametrize("name,seed", cvrp.checkpoint_keys())
def test_committed_checkpoint_metadata_and_fingerprint(name, seed):
    path = checkpoint_file(name, seed)
    build = f"lab artifacts build cvrp/checkpoint -- --name {name} --seed {seed}"
    assert path.exists(), f"{path} not built: {build}"
    assert path.stat().st_size < 1_000_000
    ck = cvrp.read_checkpoint(name, seed)
    meta = ck["meta"]
    # the command recorded when the file was made (its name before `lab artifacts`, or after)
    made_by = ("python -m lab.cvrp.train", "lab artifacts build cvrp/checkpoint --")
    assert meta["command"].startswith(tuple(f"{m} --name {name} " for m in made_by))
    assert f"--steps {meta['steps']}" in meta["command"] and f"--seed {seed}" in meta["command"]
    assert meta["seed"] == seed and meta["steps"] == TRAIN_STEPS and meta["seconds"] > 0
    assert meta["capacity_range"] == cvrp.CHECKPOINTS[name]["capacity"]
    assert ck["config"]["experts"] == cvrp.CHECKPOINTS[name]["experts"]
    # rerun the first steps of the recorded command: same losses as the committed run
    _, hist = build_and_train(
        name, TrainSettings(meta["n"], 30, 11, None, meta["batch"], meta["lr"], meta["seed"])
    )
    # step 0 must match tightly; after 10 Adam steps another CPU's float rounding may flip a
    # sampled action, so the mean length of step 10 is compared to 1% (here it matches exactly)
    np.testing.assert_allclose(hist["loss"][0], meta["fingerprint_loss"][0], rtol=1e-4)
    np.testing.assert_allclose(hist["length"][0], meta["fingerprint_length"][0], rtol=1e-5)
    np.testing.assert_allclose(hist["length"][1], meta["fingerprint_length"][1], rtol=1e-2)
    m = cvrp.load_checkpoint(name, seed)
    b = cvrp.generate_cvrp(4, 20, 50, seed=9)
    for i, r in enumerate(cvrp.decode_routes(m, b)):
        assert cvrp.route_feasible(r, b.demand[i].numpy(), 50)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="capacity"):
        cvrp.generate_cvrp(2, 5, 5, seed=0)  # below the largest demand
    with pytest.raises(ValueError, match="capacity"):
        cvrp.generate_cvrp(2, 5, -3, seed=0)
    with pytest.raises(TypeError, match="batch"):
        cvrp.generate_cvrp(2.5, 5, 30)
    b = cvrp.generate_cvrp(2, 5, 30, seed=0)
    with pytest.raises(ValueError, match="exceeds capacity"):
        cvrp.CVRPBatch(b.xy, b.demand, torch.tensor([30.0, 3.0]))
    xy = b.xy.clone()
    xy[0, 1, 0] = float("nan")
    with pytest.raises(ValueError, match="xy must be finite"):
        cvrp.CVRPBatch(xy, b.demand, b.capacity)
    with pytest.raises(ValueError, match="capacity must be > 0"):
        cvrp.CVRPBatch(b.xy, b.demand, torch.tensor([30.0, 0.0]))
    with pytest.raises(ValueError, match="edges must hold"):
        cvrp.TinyPOMO(experts=3, edges=[50.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        cvrp.TinyPOMO(experts=3, edges=[100.0, 50.0])
    with pytest.raises(ValueError, match="divisible"):
        cvrp.TinyPOMO(d=30, heads=4)
    with pytest.raises(ValueError, match="exceeds capacity"):
        cvrp.solve_pyvrp(b.xy[0].numpy(), b.demand[0].numpy() * 10, 30, 0.05)
    with pytest.raises(ValueError, match="seconds"):
        cvrp.solve_pyvrp(b.xy[0].numpy(), b.demand[0].numpy(), 30, 0.0)
    with pytest.raises(ValueError, match="name must be one of"):
        cvrp.load_checkpoint("cvrp20_nope")
    with pytest.raises(ValueError, match="steps or seconds"):
        TrainSettings(steps=None, seconds=None)
    with pytest.raises(TypeError, match="settings must be a TrainSettings"):
        cvrp.train_pomo(_model(), {"steps": 3})
    with pytest.raises(TypeError, match="batch must be a CVRPBatch"):
        cvrp.evaluate(_model(), b.xy)
    with pytest.raises(ValueError, match="starts must be one of"):
        cvrp.evaluate(_model(), b, starts="some")
    with pytest.raises(ValueError, match="xy must have shape"):
        cvrp.tour_length([[1]], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="experts must hold"):
        cvrp.mixture_forward(torch.zeros(2, 1), torch.ones(2), [lambda x: x], [5.0])


# ------------------------------------------------------------------------------------------
# CUDA and slow
# ------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_rollouts_match_cpu():
    m = _model()
    b = cvrp.generate_cvrp(
        64, 20, cvrp.sample_capacity(64, 10, 200, torch.Generator().manual_seed(0)), seed=10
    )
    cpu = cvrp.evaluate(m, b)
    gpu = cvrp.evaluate(m.to("cuda"), b.to("cuda"))
    assert gpu.device.type == "cuda"
    assert torch.allclose(cpu, gpu.cpu(), rtol=1e-4)
    with torch.no_grad():
        _, _, a_cpu = m.to("cpu")(b, greedy=True, return_actions=True)
        _, _, a_gpu = m.to("cuda")(b.to("cuda"), greedy=True, return_actions=True)
    T = min(a_cpu.shape[-1], a_gpu.shape[-1])
    same = (a_cpu[..., :T] == a_gpu.cpu()[..., :T]).all(-1).float().mean()
    assert same >= 0.95


@pytest.mark.slow
def test_shipped_checkpoints_are_feasible_against_pyvrp():
    """Every shipped model decodes feasible solutions, never beats PyVRP beyond noise, and
    the cached PyVRP reference matches a live solve (the claims are in the notebooks)."""
    models = {f"{k}-seed{s}": cvrp.load_checkpoint(k, s) for k, s in cvrp.checkpoint_keys()}
    ref = cvrp.reference_lengths(GapSettings(instances=32))
    t = cvrp.gap_table(models, GapSettings(instances=32), reference=ref)
    assert t["feasible"] and t["max_recompute_error"] < 1e-4
    assert min(np.min(v) for v in t["gap_instances"].values()) > -0.5
    live = cvrp.reference_lengths(GapSettings(instances=32), cache=False, live=4)
    np.testing.assert_allclose(np.array(live), np.array(ref)[:, :4], rtol=5e-3)


def test_seed_helpers():
    t = {"gaps": {"a-seed1": [2.0, 3.0], "a-seed0": [1.0, 2.0], "b-seed0": [5.0, 5.0]}}
    np.testing.assert_array_equal(cvrp.seed_gaps(t, "a"), [[1.0, 2.0], [2.0, 3.0]])
    with pytest.raises(ValueError, match="name"):
        cvrp.seed_gaps(t, "c")
    r = cvrp.seed_rule("new", "old")
    # a paired interval over seeds: a consistent gain reproduces, an ordering of means does not
    assert r.decide(cvrp.seed_comparison([1.0, 2.0, 1.5], [3.0, 4.0, 3.4])) == "reproduced"
    assert r.decide(cvrp.seed_comparison([1.0, 3.5, 3.0], [3.0, 3.0, 3.1])) == (
        "not reproduced at this size"
    )
    assert r.flags(cvrp.seed_comparison([1.0, 2.0], [3.0, 4.0])) == []
    one = cvrp.seed_comparison([7.0], [5.0, 6.0, 5.5])  # one checkpoint against three seeds
    assert one["n"] == 3 and one["estimate"] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="better and worse"):
        cvrp.seed_comparison([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="better"):
        cvrp.seed_comparison([np.nan, 1.0], [1.0, 2.0])
    with pytest.raises(TypeError):
        cvrp.seed_rule(1, "old")


def test_instance_comparison():
    g = {
        "capacities": [10, 20],
        "gap_instances": {
            "s": np.array([[1.0, 1.2, 0.9, 1.1], [5.0, 5.0, 5.0, 5.0]]),
            "a": np.array([[3.0, 3.1, 2.9, 3.3], [1.0, 1.0, 1.0, 1.0]]),
            "b": np.array([[1.5, 1.4, 1.6, 1.5], [1.0, 1.0, 1.0, 1.0]]),
        },
    }
    ci = cvrp.instance_comparison(g, "s", ["a", "b"], 10)
    assert ci["rival"] == "b" and ci["n"] == 4  # the least favourable rival
    assert ci["estimate"] == pytest.approx(np.mean([-0.5, -0.2, -0.7, -0.4]))
    assert cvrp.seed_rule().decide(ci) == "reproduced"
    assert cvrp.seed_rule().decide(cvrp.instance_comparison(g, "b", ["s"], 10)) != "reproduced"
    with pytest.raises(ValueError, match="capacity"):
        cvrp.instance_comparison(g, "s", ["a"], 30)
    with pytest.raises(ValueError, match="rivals"):
        cvrp.instance_comparison(g, "s", ["s"], 10)
    with pytest.raises(ValueError, match="better"):
        cvrp.instance_comparison(g, "z", ["a"], 10)
    with pytest.raises(TypeError, match="rivals"):
        cvrp.instance_comparison(g, "s", "a", 10)
    with pytest.raises(TypeError, match="table"):
        cvrp.instance_comparison([], "s", ["a"], 10)


def test_cached_reference_sets_belong_to_their_instances(tmp_path, monkeypatch):
    """The notebooks' larger test sets (both seed sets of the seed-shift check) are cached, each
    file matches the hash of its instances, and a cache of other instances is refused."""
    import json

    from lab.core.numerics import SEED_SHIFTS
    from lab.cvrp import reference_cache as ex

    for shift in SEED_SHIFTS:  # notebook 2: lab.seeds(2026, 2027)
        assert ex._reference_file(256, 2026 + shift).exists()
        assert ex._reference_file(128, 2027 + shift).exists()
    assert ex._reference_file(16, 1234).exists()  # notebook 2's decoding explorer
    files = sorted(ex.REFERENCE_FILE.parent.glob("pyvrp-reference-*x*.json"))
    assert len(files) >= 5
    for f in files:
        data = json.loads(f.read_text())
        s = data["settings"]
        assert data["fingerprint"] == ex._fingerprint(s["instances"], s["n"], s["seed"])
        assert all(len(v) == s["instances"] for v in data["lengths"].values())
        assert all(min(v) > 0 for v in data["lengths"].values())
    r = cvrp.reference_lengths(GapSettings((10, 200), instances=256, seed=2026))
    assert [a.shape for a in r] == [(256,), (256,)]
    first = cvrp.reference_lengths(GapSettings((200,), instances=256, seed=2026), live=5)[0]
    np.testing.assert_array_equal(first, r[1][:5])  # the first `live` from the cache
    monkeypatch.setattr(ex, "REFERENCE_FILE", tmp_path / "pyvrp-reference.json")
    settings = {"n": 20, "instances": 3, "seed": 7, "seconds": 0.2}
    bad = {"settings": settings, "fingerprint": "0" * 16, "lengths": {"10": [1.0, 2.0, 3.0]}}
    ex._reference_file(3, 7).write_text(json.dumps(bad))
    with pytest.raises(RuntimeError, match="does not belong"):
        cvrp.reference_lengths(GapSettings((10,), instances=3, seed=7))
    with pytest.raises(TypeError, match="cache"):
        cvrp.reference_lengths(GapSettings((10,), instances=3, seed=7), cache=1)


# ------------------------------------------------------------------------------------------
# parity with the authors' code (lab/core/official/cvrp_official.json)
# ------------------------------------------------------------------------------------------
OFFICIAL = official_fixture("cvrp_official.json")


def test_official_fixture_has_its_provenance():
    """The provenance fields every fixture has: tests/test_installed_fixtures.py."""
    import json

    prov = json.loads(OFFICIAL.read_text())["provenance"]
    assert prov["setup"] and "torch" in prov["versions"]


def test_tinypomo_reproduces_the_official_moe_model_and_env():
    """With the official weights loaded, our MoE encoder (shared layer, routed 3-layer expert
    stack), decoder and masked greedy POMO rollout equal the official SINGLE_Encoder,
    SINGLE_Decoder and CVRPEnv in float64 (tolerance 1e-12)."""
    from lab.cvrp.parity import official_parity

    p = official_parity(OFFICIAL)
    assert p["routing"] and p["actions"]
    assert p["encoded"] < 1e-12 and p["distance"] < 1e-12 and p["log_prob"] < 1e-12
    assert p["augment"] == 0.0  # the same 8 symmetries ...
    assert not p["augment_same_order"]  # ... listed in another order (irrelevant to best-of-8)


def test_official_parity_rejects_bad_input(tmp_path):
    from lab.cvrp.parity import official_parity, official_weights

    with pytest.raises(TypeError, match="path"):
        official_parity(3)
    with pytest.raises(FileNotFoundError, match="path"):
        official_parity(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="no counterpart"):
        official_weights({"decoder.Wq_1.weight": [[0.0]], "nothing.weight": [0.0]})
    with pytest.raises(TypeError, match="weights"):
        official_weights([])


def test_capacity_sampler_and_greedy_rollout_inputs():
    from lab.cvrp import fast
    from lab.cvrp.problems import capacity_sampler

    g = torch.Generator().manual_seed(0)
    assert capacity_sampler(30)(4, g).tolist() == [30.0] * 4
    c = capacity_sampler((10, 20))(100, g)
    assert c.min() >= 10 and c.max() <= 20
    with pytest.raises(ValueError, match="capacity"):
        capacity_sampler(5)
    with pytest.raises(ValueError, match="capacity range"):
        capacity_sampler((10, 20, 30))
    with pytest.raises(TypeError, match="batch must be a CVRPBatch"):
        fast.greedy_rollout(_model(), torch.zeros(2, 3, 2))
    with pytest.raises(TypeError, match="model"):
        fast.greedy_rollout("m", cvrp.generate_cvrp(2, 5, 30, seed=0))
    L, A = fast.greedy_rollout(_model(), cvrp.generate_cvrp(2, 5, 30, seed=0))
    assert L.shape == (2, 5) and A.shape[:2] == (2, 5)
    with pytest.raises(TypeError, match="capacity"):
        cvrp.generate_cvrp(2, 5, "30")
