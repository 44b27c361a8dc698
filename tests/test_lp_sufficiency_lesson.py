"""The lp_sufficiency lesson's numbers and the drivers, evidence and figures its notebooks call."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lab import lp_sufficiency as L  # noqa: E402
from lab.lp_sufficiency import evidence as ev  # noqa: E402


def test_worked_example():
    """The hexagon and the four-candidate hire of book/lp_sufficiency/index.md, by hand."""
    X = L.regular_polygon(6)
    centre = np.array([np.cos(np.radians(195)), np.sin(np.radians(195))])
    C = L.BoxSet(centre - 0.5, centre + 0.5)
    np.testing.assert_allclose(C.lo, [-1.466, -0.759], atol=1e-3)
    np.testing.assert_allclose(C.hi, [-0.466, 0.241], atol=1e-3)
    assert L.relevant_edges_2d(X, C) == [0]  # only the ray -t e1 meets the box
    D, n_milp = L.minimal_sdd(X, C, rng=0)
    assert n_milp == 2 and L.same_span(D, [[0.0, 1.0]])  # d* = 1: measure c2
    delta, value, c = L.find_direction(X, C, np.array([0.0, 1.0]), return_cost=True)
    assert value == pytest.approx(2 / np.sqrt(3)) and np.allclose(np.abs(delta), [0, 2 / 3**0.5])
    assert abs(c[1]) < 1e-6 and C.lo[0] <= c[0] <= C.hi[0]  # a tie cost on the ray (-t, 0)
    assert L.find_direction(X, C, np.array([1.0, 0.0]))[0] is None  # no width along e1
    lo = np.array([0.0, 1.0, 2.0, 10.0])
    assert L.topk_relevant_pairs(lo, lo + 1.5, 2) == {(1, 2)}
    assert np.array_equal(L.topk_sdd(lo, lo + 1.5, 2), [[0.0, 1.0, -1.0, 0.0]])
    Q, price = L.topk_least_cost(lo, lo + 1.5, 2, 1.0, 0.8)
    assert price == pytest.approx(0.8) and np.array_equal(Q, [[0.0, 1.0, -1.0, 0.0]])
    assert L.topk_least_cost(lo, lo + 1.5, 2, 1.0, 2.5)[1] == pytest.approx(2.0)  # interviews


def test_a_tiny_box_on_a_tie_still_needs_one_measurement():
    """The assignment's prediction: the box centred on the ray of an edge."""
    X = L.regular_polygon(6)
    D, n = L.minimal_sdd(X, L.BoxSet([-1.05, -0.05], [-0.95, 0.05]), rng=0)
    assert D.shape[0] == 1 and n == 2


def test_width_curve_is_the_closed_form_with_the_milp_on_a_stride():
    st = L.WidthSettings(n=8, k=3, widths=(0.2, 1.0, 3.0, 30.0), seed=0, milp_every=2)
    curve = L.width_curve(st)
    for w, d, i in zip(st.widths, curve.d_star, curve.interviews, strict=True):
        lo, hi = L.hiring_instance(8, w, seed=0)
        assert d == L.topk_sdd(lo, hi, 3).shape[0] <= i
    assert curve.milp_widths == (0.2, 3.0) and curve.d_milp == curve.d_star[::2]
    assert curve.d_star[0] == 0 and curve.d_star[-1] == 7
    assert len(L.figures.width_figure(curve).axes[0].lines) == 3
    plt.close("all")
    with pytest.raises(ValueError, match="milp_every"):
        L.WidthSettings(widths=(1.0, 2.0), milp_every=3)
    with pytest.raises(ValueError, match="widths"):
        L.WidthSettings(widths=(1.0, -2.0))


def test_deletion_price_and_margin_drivers():
    lo, hi = L.hiring_instance(8, 2.5, seed=0)
    X, C = L.topk_problem(lo, hi, 3)
    D, _ = L.minimal_sdd(X, C, rng=0)
    ck = L.deletion_check(D, X, C)
    assert ck.full and not any(ck.drops) and ck.plus and ck.d_star == D.shape[0]
    assert len(ck.plus_drops) == D.shape[0] + 1 and any(ck.plus_drops)  # redundancy
    with pytest.raises(ValueError, match="two rows"):
        L.deletion_check(D[:1], X, C)
    price = L.price_check(lo, hi, 3, [0.5, 2.5])
    assert price.queries == 8 + 28 and np.allclose(price.milp, price.closed)
    assert price.milp[0] == pytest.approx(0.5 * D.shape[0])
    with pytest.raises(ValueError, match="kappas"):
        L.price_check(lo, hi, 3, [0.5, -1.0])
    m_full = L.decision_margin(D, X, C, 500, 0)
    m_drop = L.decision_margin(D[1:], X, C, 500, 0)
    assert m_full > 0 > m_drop
    rate = L.violation_rate_mc(D[1:], X, C, 500, rng=0, backend="torch")
    assert rate > 0  # the same pairs: a negative margin means a violation
    with pytest.raises(TypeError, match="trials"):
        L.decision_margin(D, X, C, 1.5, 0)


def test_evidence_builds_one_line_records():
    views = [L.geometry_view(L.GeometrySettings(r, 195.0)) for r in (0.15, 0.5, 1.2)]
    rec = ev.relevant_directions_only_evidence(views, L.regular_polygon(6))
    assert rec["measured"] is True and rec["control"].measured is False
    fig = L.figures.geometry_panels(views)
    assert len(fig.axes) == 6
    rates = {"full D": 0.0, "drop 0": 0.01, "drop 1": 0.02, "no data": 0.05}
    fig = L.figures.violation_figure(rates, 100)
    assert len(fig.axes[0].patches) == 4
    plt.close("all")
    assert ev.dropping_a_direction_shows_evidence(rates)["measured"] == 0.01
    rec = ev.never_wrong_evidence(1e-3, [-0.5, -0.2], rates, 100)
    assert rec["measured"] == 1e-3 and rec["control"].measured == -0.2
    rec = ev.batched_mc_evidence(0.05, 0.05, 2.0, 0.01, 200)
    assert rec["measured"] == pytest.approx(200.0)
    with pytest.raises(TypeError, match="views"):
        ev.relevant_directions_only_evidence(views[:2], L.regular_polygon(6))
    with pytest.raises(TypeError, match="rates"):
        ev.dropping_a_direction_shows_evidence({"drop 0": 0.1})
    with pytest.raises(TypeError, match="sweep"):
        ev.transport_scaling_evidence(None, [1.0, 2.0], [1.5, 1.5])
    with pytest.raises(ValueError, match="margin_drops"):
        ev.never_wrong_evidence(1e-3, [], rates, 100)
