"""Tests for lab.lp_sufficiency: closed form vs MILP, invariants, fast vs reference, bad input."""

import numpy as np
import pytest

from lab import lp_sufficiency as L


def random_topk(rng, n, width=(0.5, 2.5)):
    centre = rng.uniform(0, 10, n)
    w = rng.uniform(*width, n)
    return centre - w / 2, centre + w / 2


def polygon(n_sides=6, radius=1.0):
    ang = 2 * np.pi * np.arange(n_sides) / n_sides
    G = np.c_[np.cos(ang), np.sin(ang)]
    return L.Polytope(G, radius * np.ones(n_sides))


@pytest.mark.parametrize("seed", range(6))
def test_construction_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 11))
    k = int(rng.integers(1, n))
    lo, hi = random_topk(rng, n)
    X, C = L.topk_problem(lo, hi, k)
    D, n_milp = L.minimal_sdd(X, C, rng=seed)
    B = L.topk_sdd(lo, hi, k)
    assert L.same_span(D, B)
    assert D.shape[0] == B.shape[0] == L.span_rank(B)
    assert n_milp == D.shape[0] + 1  # d* + 1 MILPs
    D2, _ = L.minimal_sdd(X, C, directions="basis")
    assert L.same_span(D2, B)


def test_huge_box_gives_dim_X_and_separated_gives_zero():
    n, k = 6, 2
    X, C = L.topk_problem(np.full(n, -50.0), np.full(n, 50.0), k)
    D, _ = L.minimal_sdd(X, C, rng=0)
    assert D.shape[0] == n - 1  # C = R^d limit: span dir(X) = {sum = 0}
    lo = np.arange(n) * 10.0
    X, C = L.topk_problem(lo, lo + 1.0, k)
    D, n_milp = L.minimal_sdd(X, C, rng=0)
    assert D.shape == (0, n) and n_milp == 1
    assert L.topk_sdd(lo, lo + 1.0, k).shape == (0, n)


def test_polygon_geometry():
    X = polygon(6)  # outward normals at 0, 60, ..., 300 degrees
    assert X.vertices().shape == (6, 2)
    # costs around -(cos 30, sin 30): inside one vertex's cone, nothing is relevant
    mid = -np.array([np.cos(np.pi / 6), np.sin(np.pi / 6)])
    D, n_milp = L.minimal_sdd(X, L.BoxSet(mid - 0.1, mid + 0.1), rng=0)
    assert D.shape[0] == 0 and n_milp == 1
    # costs around -(1, 0): the vertical edge with normal (1, 0) ties, direction (0, 1)
    D, n_milp = L.minimal_sdd(X, L.BoxSet([-1.1, -0.1], [-0.9, 0.1]), rng=0)
    assert D.shape[0] == 1 and abs(abs(D[0, 1]) - 1) < 1e-9 and n_milp == 2
    # a box containing the origin meets every cone: d* = 2
    D, _ = L.minimal_sdd(X, L.BoxSet([-5.0, -5.0], [5.0, 5.0]), rng=0)
    assert D.shape[0] == 2


def test_sufficiency_exact_and_monte_carlo():
    rng = np.random.default_rng(3)
    lo, hi = random_topk(rng, 10, width=(1.5, 3.5))
    X, C = L.topk_problem(lo, hi, 3)
    D, _ = L.minimal_sdd(X, C, rng=0)
    assert D.shape[0] >= 2
    ok, witness = L.is_sufficient(D, X, C)
    assert ok and witness is None
    assert L.violation_rate_mc(D, X, C, trials=20_000, rng=0) == 0.0
    for drop in range(D.shape[0]):
        Dm = np.delete(D, drop, axis=0)
        ok, (delta, c) = L.is_sufficient(Dm, X, C)
        assert not ok and np.all(c >= C.lo) and np.all(c <= C.hi)
        assert L.span_rank(np.vstack([Dm, delta])) == Dm.shape[0] + 1  # a missed direction
        assert L.violation_rate_mc(Dm, X, C, trials=20_000, rng=0) > 0.0
    assert L.violation_rate_mc(np.zeros((0, 10)), X, C, trials=2000, rng=0) > 0.0


def test_torch_matches_numpy_reference():
    rng = np.random.default_rng(4)
    lo, hi = random_topk(rng, 7, width=(2.0, 4.0))
    X, C = L.topk_problem(lo, hi, 2)
    D = L.topk_sdd(lo, hi, 2)[:-1]
    a = L.violation_rate_mc(D, X, C, trials=150, rng=5, backend="numpy")
    b = L.violation_rate_mc(D, X, C, trials=150, rng=5, backend="torch")
    assert a == b


def test_pair_decode():
    """reference.decode is optimal on 40 draws, and fast.decode (batched) returns the same."""
    rng = np.random.default_rng(5)
    lo, hi = random_topk(rng, 8)
    X, C = L.topk_problem(lo, hi, 3)
    D = L.topk_sdd(lo, hi, 3, queries="interviews")
    cs = C.sample(40, rng=1)
    for c in cs:  # the reference (cvxpy projection + HiGHS LP) on 40 draws
        x = L.decode(D, D @ c, X, C)
        assert c @ x - X.value(c) <= 1e-8
    xb, _ = L.fast.decode(D, cs @ D.T, X, C, device="cpu")
    assert np.array_equal(xb, np.array([L.decode(D, D @ c, X, C) for c in cs]))


@pytest.mark.parametrize("queries", ["interviews", "comparisons"])
def test_decoder_on_the_specs_1000_draws(queries):
    """The spec's check: 1,000 random true costs, objective gap <= 1e-8 (batched decoder)."""
    rng = np.random.default_rng(5)
    lo, hi = random_topk(rng, 8)
    X, C = L.topk_problem(lo, hi, 3)
    D = L.topk_sdd(lo, hi, 3, queries=queries)
    res = L.decoder_check(D, X, C, L.DecoderSettings(1000, 2), device="cpu")
    assert res.draws == 1000 and res.worst_gap <= 1e-8 and res.wrong == 0
    if D.shape[0]:  # a missing direction is caught on some draw
        res = L.decoder_check(D[:-1], X, C, L.DecoderSettings(1000, 2), device="cpu")
        assert res.wrong > 0


def test_transportation_scaling_reaches_dim_X():
    supply, demand = np.array([3.0, 5.0, 4.0]), np.array([2.0, 4.0, 3.0, 3.0])
    sweep = L.transportation_sweep(L.TransportSettings(supply, demand, (0.01, 100.0), 0))
    assert sweep.dim_X == 6 and sweep.d_star == [0, 6]
    assert sweep.n_milp == [1, 7]  # d* + 1: the ambient space (12) is larger than dim X
    assert max(sweep.last_value) <= 1e-6
    X, _ = L.transportation_problem(supply, demand, np.zeros(12), 1.0)
    assert np.linalg.matrix_rank(X.A) == 3 + 4 - 1  # one redundant balance row
    with pytest.raises(ValueError, match="same total"):
        L.transportation_problem(supply, demand + 1, np.zeros(12), 1.0)


def test_brute_force_interviews_match_the_support_of_the_construction():
    lo, hi = L.random_hiring_instance(5, 0, width=(2.0, 5.0))
    X, C = L.topk_problem(lo, hi, 1)
    best = L.smallest_interview_set(X, C)
    D, _ = L.minimal_sdd(X, C, rng=0)
    support = np.flatnonzero(np.any(np.abs(D) > 1e-6, axis=0))
    assert best.size == support.size and set(best.subset) == set(support.tolist())


def test_find_direction_certificate():
    rng = np.random.default_rng(6)
    lo, hi = random_topk(rng, 8, width=(2.0, 4.0))
    X, C = L.topk_problem(lo, hi, 3)
    B = L.topk_sdd(lo, hi, 3)
    for s in range(3):
        w = np.random.default_rng(s).standard_normal(8)
        delta, val, c = L.find_direction(X, C, w, return_cost=True)
        assert val >= 0
        if delta is not None:
            assert L.span_rank(np.vstack([B, delta])) == L.span_rank(B)  # delta in S*
            assert np.all(c >= C.lo) and np.all(c <= C.hi)


def test_least_cost():
    rng = np.random.default_rng(7)
    lo, hi = random_topk(rng, 8, width=(2.0, 4.0))
    k = 3
    B = L.topk_sdd(lo, hi, k)
    n = 8
    interviews = L.topk_sdd(lo, hi, k, queries="interviews")
    sel, cost = L.least_cost_sdd(B, np.eye(n), np.ones(n))
    assert set(sel) == set(np.flatnonzero(interviews.sum(0)))  # supp(S*)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    Q = np.array([np.eye(n)[i] - np.eye(n)[j] for i, j in pairs])
    sel, cost = L.least_cost_sdd(B, Q, np.ones(len(pairs)))
    assert cost == pytest.approx(B.shape[0])  # spanning forest: #vertices - #components
    assert L.same_span(Q[sel], B)
    # comparisons expensive, interviews cheap: interviews win
    Q2 = np.vstack([np.eye(n), Q])
    sel, cost = L.least_cost_sdd(B, Q2, np.r_[np.ones(n), 5 * np.ones(len(pairs))])
    assert np.all(sel < n) and cost == pytest.approx(interviews.shape[0])


def test_determinism():
    rng = np.random.default_rng(8)
    lo, hi = random_topk(rng, 8)
    X, C = L.topk_problem(lo, hi, 2)
    D1, n1 = L.minimal_sdd(X, C, rng=11)
    D2, n2 = L.minimal_sdd(X, C, rng=11)
    assert n1 == n2 and np.array_equal(D1, D2)
    a = L.sample_equivalent_pairs(D1[:-1], C, 50, rng=2)
    b = L.sample_equivalent_pairs(D1[:-1], C, 50, rng=2)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    # pairs share observations and stay in C
    assert np.allclose(a[0] @ D1[:-1].T, a[1] @ D1[:-1].T)
    assert C.contains(a[0]).all() and C.contains(a[1]).all()


def test_bad_input():
    with pytest.raises(ValueError, match="unbounded"):
        L.Polytope(np.array([[1.0, 0.0]]), np.array([1.0]))
    with pytest.raises(ValueError, match="empty"):
        L.Polytope(np.array([[1.0], [-1.0]]), np.array([0.0, -1.0]))
    with pytest.raises(ValueError, match="lo < hi"):
        L.BoxSet([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        L.BoxSet([0.0, np.nan], [1.0, 1.0])
    X = polygon(4)
    with pytest.raises(ValueError, match="same dimension"):
        L.minimal_sdd(X, L.BoxSet([0.0, 0, 0], [1.0, 1, 1]))
    with pytest.raises(ValueError, match="directions"):
        L.minimal_sdd(X, L.BoxSet([0.0, 0], [1.0, 1]), directions="greedy")
    with pytest.raises(ValueError, match="tol"):
        L.find_direction(X, L.BoxSet([0.0, 0], [1.0, 1]), [1.0, 0.0], tol=0.0)
    with pytest.raises(ValueError, match="k must"):
        L.topk_sdd([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], 3)
    with pytest.raises(ValueError, match="costs"):
        L.least_cost_sdd(np.eye(2)[:1], np.eye(2), [-1.0, 1.0])
    with pytest.raises(TypeError, match="Polytope"):
        L.is_sufficient(np.eye(2), "X", L.BoxSet([0.0, 0], [1.0, 1]))
    with pytest.raises(ValueError, match="backend"):
        L.violation_rate_mc(np.eye(2), X, L.BoxSet([0.0, 0], [1.0, 1]), backend="jax")
    with pytest.raises(TypeError, match="BoxSet"):
        L.sample_equivalent_pairs(np.eye(2)[:1], None, 10)


@pytest.mark.slow
def test_construction_larger_instances():
    rng = np.random.default_rng(99)
    for _ in range(5):
        lo, hi = random_topk(rng, 20)
        X, C = L.topk_problem(lo, hi, 5)
        D, n_milp = L.minimal_sdd(X, C, rng=0)
        assert L.same_span(D, L.topk_sdd(lo, hi, 5)) and n_milp == D.shape[0] + 1


@pytest.mark.cuda
def test_violation_rate_cuda():
    rng = np.random.default_rng(4)
    lo, hi = random_topk(rng, 10, width=(2.0, 4.0))
    X, C = L.topk_problem(lo, hi, 3)
    D = L.topk_sdd(lo, hi, 3)[:-1]
    a = L.violation_rate_mc(D, X, C, trials=5000, rng=5, backend="torch", device="cpu")
    b = L.violation_rate_mc(D, X, C, trials=5000, rng=5, backend="torch", device="cuda")
    assert a == b


@pytest.mark.cuda
def test_fast_decode_cuda():
    rng = np.random.default_rng(6)
    lo, hi = random_topk(rng, 9, width=(2.0, 4.0))
    X, C = L.topk_problem(lo, hi, 3)
    D = L.topk_sdd(lo, hi, 3)
    S = C.sample(500, rng=1) @ D.T
    a, _ = L.fast.decode(D, S, X, C, device="cpu")
    b, _ = L.fast.decode(D, S, X, C, device="cuda")
    assert np.array_equal(a, b)


def test_settings_are_validated_once_where_they_are_typed():
    with pytest.raises(ValueError, match="radius"):
        L.GeometrySettings(radius=0.0)
    with pytest.raises(ValueError, match="n_sides"):
        L.GeometrySettings(n_sides=2)
    with pytest.raises(ValueError, match="same total"):
        L.TransportSettings(supply=(1.0, 2.0), demand=(1.0, 1.0))
    with pytest.raises(ValueError, match="radii"):
        L.TransportSettings(radii=(0.5, -1.0))
    with pytest.raises(ValueError, match="k must"):
        L.HiringSettings(n=5, k=5)
    with pytest.raises(TypeError, match="draws"):
        L.DecoderSettings(draws=1.5)
    with pytest.raises(TypeError, match="TransportSettings"):
        L.transportation_sweep(([3.0, 5.0], [4.0, 4.0]))
    st = L.TransportSettings(supply=[3, 5], demand=np.array([4.0, 4.0]), radii=[1])
    assert st.supply == (3.0, 5.0) and st.radii == (1.0,)  # normalised to tuples (hashable)


def test_span_agreement_is_the_instance_loop_seed_by_seed():
    """One instance per seed, drawn in order from one generator (the notebook's loop)."""
    span = L.span_agreement(L.SpanSettings(trials=2, seed=0))
    rng = np.random.default_rng(0)
    for trial in range(2):
        n = int(rng.integers(6, 13))
        k = int(rng.integers(1, n))
        ctr, wid = rng.uniform(0, 10, n), rng.uniform(1.5, 4.0, n)
        X, C = L.topk_problem(ctr - wid / 2, ctr + wid / 2, k)
        D, n_milp = L.minimal_sdd(X, C, rng=trial)
        assert (span.n[trial], span.k[trial], span.n_milp[trial]) == (n, k, n_milp)
        assert span.d_milp[trial] == D.shape[0] and span.agree[trial]
        assert span.n_milp[trial] == span.d_milp[trial] + 1  # one MILP per direction + 1


def test_views_feed_the_figures():
    pytest.importorskip("plotly")
    view = L.geometry_view(L.GeometrySettings(radius=1.2, angle_deg=195.0))
    assert view.D.shape[0] == 2 and len(view.relevant) == len(view.edges) >= 2
    assert len(L.figures.geometry_figure(view).data) == 5
    hire = L.hiring_view(L.HiringSettings(n=12, k=4, width=2.5, seed=0, comparison_cost=0.8))
    lo, hi = L.hiring_instance(12, 2.5, seed=0)
    assert hire.d_star == L.topk_sdd(lo, hi, 4).shape[0]
    assert hire.total == pytest.approx(L.topk_least_cost(lo, hi, 4, 1.0, 0.8)[1])
    assert len(L.figures.hiring_figure(hire).data) == 4
    with pytest.raises(TypeError, match="view"):
        L.figures.hiring_figure(view)
