"""The lesson's equations in numpy (lab/cvrp/reference.py) against the torch model and by
hand, and the chapter's settings objects (validated once)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lab import cvrp


def _model(experts=1, seed=0):
    torch.manual_seed(seed)
    edges = [73, 137] if experts == 3 else None
    return cvrp.TinyPOMO(d=16, heads=2, layers=1, ff=32, experts=experts, edges=edges)


# ------------------------------------------------------------------------------------------
# the lesson's equations in numpy (reference.py) against the torch model and by hand
# ------------------------------------------------------------------------------------------
def test_reference_equations_match_the_model():
    from lab.cvrp import reference as ref

    caps = [10.0, 73, 73.5, 137, 138, 200]
    G = ref.gate(caps, [73, 137])
    assert G.argmax(1).tolist() == cvrp.route_to_expert(torch.tensor(caps), [73, 137]).tolist()
    assert np.array_equal(G.sum(1), np.ones(6))  # one-hot
    experts = [lambda x, k=k: 10 * x + k for k in range(3)]
    x = np.arange(6.0)[:, None]
    dense = ref.mixture(x, caps, experts, [73, 137])  # eq. (2) as written
    fast = cvrp.mixture_forward(torch.tensor(x), torch.tensor(caps), experts, [73, 137])
    np.testing.assert_allclose(dense, fast.numpy())
    b = cvrp.generate_cvrp(2, 5, 30, seed=1)
    f = ref.normalised_features(b.xy[0].numpy(), b.demand[0].numpy(), 30)
    np.testing.assert_allclose(f, cvrp.node_features(b)[0].numpy(), rtol=1e-6)
    f2 = ref.normalised_features(b.xy[0].numpy(), 2 * b.demand[0].numpy(), 60)
    np.testing.assert_allclose(f, f2)  # scale invariance


def test_reference_mask_loss_gap_and_vct():
    from lab.cvrp import reference as ref

    q = np.array([0, 3, 5, 9])
    assert ref.feasible_mask([0, 1, 0, 0], q, 6, True).tolist() == [False, False, True, False]
    assert ref.feasible_mask([0, 1, 0, 0], q, 9, False).tolist() == [True, False, True, True]
    assert ref.feasible_mask([0, 1, 1, 1], q, 0, True).tolist() == [True, False, False, False]
    L = np.array([[3.0, 5.0], [2.0, 2.0]])
    lp = np.array([[-1.0, -2.0], [-0.5, -0.1]])
    assert ref.pomo_loss(L, lp) == pytest.approx(((-1) * -1.0 + 1 * -2.0) / 4)
    adv = torch.tensor(L) - torch.tensor(L).mean(1, keepdim=True)  # fast._train_step's loss
    assert ref.pomo_loss(L, lp) == pytest.approx(float((adv * torch.tensor(lp)).mean()))
    np.testing.assert_allclose(ref.optimality_gap([11.0, 4.0], [10.0, 4.0]), [10.0, 0.0])
    c = ref.vct_capacities(10_000, 10, 200, rng=0)
    assert c.min() == 10 and c.max() == 200 and c.dtype.kind == "i"
    with pytest.raises(ValueError, match="c_max"):
        ref.vct_capacities(4, 50, 10)
    with pytest.raises(ValueError, match="edges must be strictly increasing"):
        ref.gate([10.0], [137, 73])
    with pytest.raises(ValueError, match="reference"):
        ref.optimality_gap([1.0], [0.0])


def test_settings_validate_once():
    from lab.cvrp.settings import ExpertSettings, GapSettings, TrainSettings

    assert GapSettings().capacities == cvrp.CAPACITIES and GapSettings(seconds=1).seconds == 1.0
    with pytest.raises(ValueError, match="instances"):
        GapSettings(instances=0)
    with pytest.raises(ValueError, match="starts must be one of"):
        GapSettings(starts="some")
    with pytest.raises(TypeError, match="capacities"):
        GapSettings(capacities=10)
    with pytest.raises(ValueError, match="capacity must be >= "):
        TrainSettings(capacity=5)
    with pytest.raises(ValueError, match="capacity range"):
        TrainSettings(capacity=(10, 20, 30))
    with pytest.raises(ValueError, match="seed"):
        ExpertSettings(seed=-1)
    with pytest.raises(TypeError, match="test must be a GapSettings"):
        cvrp.gap_table({"m": _model()}, {"instances": 3})


def test_expert_margins():
    t = {
        "relative": np.array([[0.0, 1.0, 3.0], [0.5, 0.0, 0.2], [2.5, 0.3, 0.0]]),
        "routed": [0, 1, 2],
    }
    m = cvrp.expert_margins(t)
    assert m["routed_excess"] == 0.0 and m["far_tight"] == 3.0 and m["far_loose"] == 2.5
    assert m["slack"] == pytest.approx(0.5)
    with pytest.raises(TypeError, match="expert_table result"):
        cvrp.expert_margins({"relative": []})
