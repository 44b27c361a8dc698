"""The cvrp chapter's registry, the statistics its verdicts read, and the two statements that
are code checks rather than claims (lab/cvrp/claims.py says why)."""

from __future__ import annotations

import numpy as np
import pytest

from lab import cvrp
from lab.cvrp.claims import CLAIMS


def test_registry_names_a_rival_or_why_not_for_every_claim():
    assert set(CLAIMS.notebooks()) == {"02", "03"}
    for spec in CLAIMS.specs.values():
        assert bool(spec.rival) != bool(spec.no_rival), spec.id
    assert "capacity-changes-problem" not in CLAIMS.specs  # a code check now
    assert "training-budget" not in CLAIMS.specs  # a code check now


def test_ratio_interval_is_the_delta_method():
    rng = np.random.default_rng(0)
    b = rng.uniform(1, 3, 400)
    a = 2.0 * b + rng.normal(0, 0.1, 400)
    r = cvrp.ratio_interval(a, b)
    assert r["lo"] < 2.0 < r["hi"] and r["se"] < 0.01 and r["n"] == 400
    exact = cvrp.ratio_interval(3 * b, b)  # a ratio without noise has no width
    assert exact["estimate"] == pytest.approx(3.0) and exact["se"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="denominator"):
        cvrp.ratio_interval([1.0, 2.0], [-1.0, -2.0])
    with pytest.raises(ValueError, match="denominator"):
        cvrp.ratio_interval([1.0, 2.0], [1.0, 2.0, 3.0])


def test_seed_average():
    t = {"gap_instances": {"a-seed0": np.ones((2, 3)), "a-seed1": 3 * np.ones((2, 3))}}
    np.testing.assert_array_equal(cvrp.seed_average(t, "a"), 2 * np.ones((2, 3)))
    with pytest.raises(ValueError, match="name"):
        cvrp.seed_average(t, "b")


def test_capacity_changes_the_problem_by_construction():
    """Formerly the claim ``capacity-changes-problem``: the feasible sets are nested in C, so
    the optimal length cannot grow with C, and one route is optimal once C >= sum q."""
    b = cvrp.generate_cvrp(1, 12, 10, seed=0)
    xy, q = b.xy[0].double().numpy(), b.demand[0].double().numpy()
    routes, lengths = [], []
    for c in (10, 20, 50, int(q.sum())):
        r, length = cvrp.solve_pyvrp(xy, q, c, 0.1)
        routes.append(len(r))
        lengths.append(length)
    assert routes[0] >= np.ceil(q.sum() / 10) and routes[-1] == 1
    assert np.all(np.diff(routes) <= 0)
    assert np.all(np.diff(lengths) <= 1e-3 * np.array(lengths[1:]))


def test_each_checkpoint_trained_in_under_an_hour():
    """Formerly the claim ``training-budget``: the stored training time of every checkpoint."""
    for name, seed in cvrp.checkpoint_keys():
        assert 0 < cvrp.read_checkpoint(name, seed)["meta"]["seconds"] < 3600, (name, seed)
