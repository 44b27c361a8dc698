"""Unit tests of lab.core: checks, runtime, memo, data, rates."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lab
from lab.core import checks, style
from lab.core.runtime import device, seed, small_problem_threads


# -- checks ------------------------------------------------------------------------------
def test_check_positive_messages_name_argument_value_and_range():
    assert checks.check_positive("eta", 0.5) == 0.5
    with pytest.raises(ValueError, match=r"eta must be > 0 \(got -0.1\)"):
        checks.check_positive("eta", -0.1)
    with pytest.raises(ValueError, match="eta must be finite"):
        checks.check_positive("eta", math.nan)
    with pytest.raises(TypeError, match="eta must be a real number"):
        checks.check_positive("eta", "0.1")
    with pytest.raises(TypeError):
        checks.check_positive("eta", True)
    assert checks.check_positive("r0", 0, allow_zero=True) == 0.0


def test_check_range_int_choice_bool():
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\] \(got 2\)"):
        checks.check_range("p", 2, 0, 1)
    with pytest.raises(ValueError, match=r"p must lie in \(0, 1\]"):
        checks.check_range("p", 0, 0, 1, low_inclusive=False)
    assert checks.check_int("steps", np.int64(5), 1) == 5
    with pytest.raises(TypeError, match="steps must be an integer"):
        checks.check_int("steps", 2.5)
    with pytest.raises(ValueError, match=r"depth must be an integer in \[2, inf\] \(got 1\)"):
        checks.check_int("depth", 1, 2)
    with pytest.raises(ValueError, match="model must be one of"):
        checks.check_choice("model", "zz", ["xy", "product"])
    with pytest.raises(TypeError):
        checks.check_bool("flag", 1)


def test_check_instance_returns_the_value_or_names_argument_and_kinds():
    x = np.zeros(2)
    assert checks.check_instance("x", x, np.ndarray) is x
    with pytest.raises(TypeError, match=r"settings must be a dict \(got str\)"):
        checks.check_instance("settings", "a", dict)
    with pytest.raises(TypeError, match=r"n must be an int or float \(got NoneType\)"):
        checks.check_instance("n", None, (int, float))


def test_check_array_shape_and_finiteness():
    a = checks.check_array("w0", [1, 2], shape=(2,))
    assert a.dtype == np.float64
    with pytest.raises(ValueError, match=r"w0 must have shape \(\*, 2\)"):
        checks.check_array("w0", np.zeros((3, 3)), shape=(None, 2))
    with pytest.raises(ValueError, match="w0 must contain only finite values"):
        checks.check_array("w0", [1.0, np.inf])
    with pytest.raises(ValueError, match="ndim"):
        checks.check_array("w0", 1.0, ndim=1)
    t = checks.check_array("w0", torch.ones(2, dtype=torch.float64))
    assert isinstance(t, np.ndarray)


# -- runtime -----------------------------------------------------------------------------
def test_device_follows_env(monkeypatch):
    monkeypatch.setenv("LAB_DEVICE", "cpu")
    assert device().type == "cpu"
    monkeypatch.setenv("LAB_DEVICE", "tpu")
    with pytest.raises(ValueError, match="LAB_DEVICE must be 'cpu' or 'cuda"):
        device()
    monkeypatch.delenv("LAB_DEVICE")
    assert device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            device("cuda")


def test_seed_makes_runs_repeat():
    seed(3)
    a = (np.random.rand(3), torch.rand(3))
    seed(3)
    b = (np.random.rand(3), torch.rand(3))
    assert np.array_equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError):
        seed(-1)


def test_small_problem_threads_restores():
    # the session runs single-threaded (tests/conftest.py): start from 2 so a restore shows
    with small_problem_threads(2):
        assert torch.get_num_threads() == 2
        with small_problem_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2


def test_setup_applies_style(monkeypatch):
    import matplotlib as mpl
    import plotly.io as pio

    monkeypatch.setenv("LAB_DEVICE", "cpu")
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # the session runs single-threaded: make setup's change visible
        dev = lab.setup(1, verbose=False)
        assert dev.type == "cpu"
        assert torch.get_num_threads() == 1
        assert pio.templates.default == "optlab"
        assert mpl.rcParams["axes.prop_cycle"].by_key()["color"][0] == style.PALETTE[0]
    finally:
        torch.set_num_threads(old)


# -- runtime.resolve_device ----------------------------------------------------------------
def test_resolve_device_explicit_inputs_default(monkeypatch):
    from lab.core import resolve_device

    monkeypatch.setenv("LAB_DEVICE", "cpu")
    assert resolve_device() == torch.device("cpu")  # falls back to lab.device()
    assert resolve_device(None, None, np.zeros(2)) == torch.device("cpu")
    t = torch.zeros(2, device="meta")  # follows the first tensor, whatever its device
    assert resolve_device(None, np.zeros(2), t, torch.zeros(1)) == torch.device("meta")
    assert resolve_device("CPU ", t) == torch.device("cpu")  # explicit wins over inputs
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


def test_resolve_device_bad_input():
    from lab.core import resolve_device

    with pytest.raises(TypeError, match=r"device must be a str or torch.device .*got int"):
        resolve_device(0)
    for bad in ("tpu", "cuda:x", "", "cpu:"):
        with pytest.raises(ValueError, match=r"device must be 'cpu' or 'cuda\[:index\]'"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda:0")


@pytest.mark.cuda
def test_resolve_device_cuda():
    from lab.core import resolve_device

    assert resolve_device("cuda").type == "cuda"
    assert resolve_device(None, torch.zeros(1, device="cuda")).type == "cuda"


# -- data.digits ---------------------------------------------------------------------------
def test_digits_split_and_standardisation_use_training_rows_only():
    from sklearn.datasets import load_digits

    from lab.core import digits

    X, y = load_digits(return_X_y=True)
    d = digits(test_size=0.25, seed=3)
    Xtr, ytr, Xte, yte = d  # unpacks like the old 4-tuples
    assert Xtr.shape == (1348, 64) and Xte.shape == (449, 64)
    assert Xtr.dtype == np.float32 and ytr.dtype == np.int64
    perm = np.random.default_rng(3).permutation(len(y))  # the split convention: test first
    assert np.array_equal(d.test_index, perm[:449]) and np.array_equal(d.train_index, perm[449:])
    assert np.array_equal(ytr, y[perm[449:]]) and np.array_equal(yte, y[perm[:449]])
    raw_tr = X[d.train_index] / 16.0
    mu, sd = raw_tr.mean(0), raw_tr.std(0) + 1e-3
    np.testing.assert_allclose(d.mean, mu, rtol=0, atol=1e-15)  # training rows only: no leak
    np.testing.assert_allclose(Xtr, (raw_tr - mu) / sd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Xte, (X[d.test_index] / 16.0 - mu) / sd, rtol=1e-6, atol=1e-6)
    assert np.abs(Xtr.mean(0)).max() < 1e-5
    assert np.abs(Xte.mean(0)).max() > 1e-3  # the test rows are not centred on themselves
    # the training features do not depend on what the test rows are
    other = digits(test_size=449, seed=3)
    np.testing.assert_array_equal(other.X_train, Xtr)


def test_digits_rows_are_load_digits_rows(monkeypatch):
    """The loader reads scikit-learn's file itself (no ``import sklearn.datasets``): the same
    rows, bit for bit, as ``load_digits``; and it asks scikit-learn when the file is not found."""
    from sklearn.datasets import load_digits

    from lab.core import data

    X, y = load_digits(return_X_y=True)
    assert data._digits_file() is not None
    data._raw_digits.cache_clear()
    Xd, yd = data._raw_digits()
    np.testing.assert_array_equal(Xd, X / 16.0)
    np.testing.assert_array_equal(yd, y)
    assert Xd.dtype == np.float64 and yd.dtype == np.int64 and not Xd.flags.writeable
    monkeypatch.setattr(data, "_digits_file", lambda: None)
    data._raw_digits.cache_clear()
    try:
        Xs, ys = data._raw_digits()
    finally:
        data._raw_digits.cache_clear()
    np.testing.assert_array_equal(Xs, Xd)
    np.testing.assert_array_equal(ys, yd)


def test_digits_options():
    from lab.core import digits

    plain = digits(test_size=597, seed=0, standardize=False, dtype="float64")
    assert plain.mean is None and plain.X_train.dtype == np.float64
    assert plain.X_train.min() == 0.0 and plain.X_train.max() == 1.0 and len(plain.y_test) == 597
    two = digits((8, 3), test_size=0, shuffle=False, standardize=False)
    assert two.classes == (8, 3) and two.X_test.shape == (0, 64)
    assert set(np.unique(two.y_train)) == {0, 1} and len(two.y_train) == 357
    assert np.all(np.diff(two.train_index) > 0)  # shuffle=False keeps scikit-learn's order
    # a Generator is used as is, so a caller can keep drawing from it after the split
    rng = np.random.default_rng(7)
    a = digits(seed=rng)
    ref = np.random.default_rng(7)
    assert np.array_equal(a.test_index, ref.permutation(1797)[:449])
    assert rng.random() == ref.random()
    tensors = a.tensors("cpu", torch.float64)
    assert tensors[0].dtype == torch.float64 and tensors[1].dtype == torch.int64
    assert torch.equal(tensors[3], torch.as_tensor(a.y_test))


def test_digits_bad_input():
    from lab.core import digits

    cases = [
        (dict(classes="38"), TypeError, "classes must be None or a sequence"),
        (dict(classes=(3,)), ValueError, "at least 2 digits"),
        (dict(classes=(3, 3)), ValueError, "distinct"),
        (dict(classes=(3, 10)), ValueError, r"classes\[1\] must be an integer in \[0, 9\]"),
        (dict(test_size=1.0), ValueError, r"test_size must lie in \[0, 1\)"),
        (dict(test_size=-0.1), ValueError, "test_size"),
        (dict(test_size=True), TypeError, "test_size"),
        (dict(test_size=1797), ValueError, r"test_size must be an integer in \[0, 1796\]"),
        (dict(test_size=float("nan")), ValueError, "test_size must be finite"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(seed=1.5), TypeError, "seed"),
        (dict(dtype="int32"), ValueError, "dtype must be 'float32' or 'float64'"),
        (dict(dtype=None), ValueError, "dtype must be 'float32' or 'float64'"),
        (dict(eps=0.0), ValueError, "eps must be > 0"),
        (dict(standardize="yes"), TypeError, "standardize must be True or False"),
        (dict(shuffle=1), TypeError, "shuffle"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            digits(**kwargs)
    with pytest.raises(TypeError, match="dtype must be a floating torch.dtype"):
        digits().tensors("cpu", torch.int64)


# -- rates ---------------------------------------------------------------------------------
def test_power_law_fit_exact_and_window():
    from lab.core import power_law_fit

    k = np.arange(1.0, 2001.0)
    fit = power_law_fit(k, 3.0 * k**-0.5)
    assert abs(fit.exponent + 0.5) < 1e-12 and abs(fit.prefactor - 3.0) < 1e-10
    assert fit.r2 == pytest.approx(1.0, abs=1e-12) and fit.n == 2000
    np.testing.assert_allclose(fit(k[:5]), 3.0 * k[:5] ** -0.5, rtol=1e-10)
    # a broken power law: the window picks the tail's exponent exactly
    y = np.where(k < 100, k**-1.0, 100.0 ** (-1.0 + 1.5) * k**-1.5)
    tail = power_law_fit(y=y, x=k, window=(100, None))
    assert abs(tail.exponent + 1.5) < 1e-12 and tail.n == 1901
    assert power_law_fit(k, y).r2 < 1.0
    # zeros are skipped by default (a gap that reached exactly 0), refused on request
    y0 = 2.0 * k**0.25
    y0[::7] = 0.0
    assert abs(power_law_fit(k, y0).exponent - 0.25) < 1e-12
    with pytest.raises(ValueError, match="must be > 0"):
        power_law_fit(k, y0, nonpositive="raise")


def test_exponential_fit_exact_rate():
    from lab.core import exponential_fit

    k = np.arange(60.0)
    fit = exponential_fit(k, 2.0 * (-0.8) ** k)  # sign-alternating residual: |.| is fitted
    assert abs(fit.factor - 0.8) < 1e-12 and abs(fit.rate - math.log(0.8)) < 1e-12
    assert abs(fit.prefactor - 2.0) < 1e-10 and fit.r2 == pytest.approx(1.0, abs=1e-12)
    assert abs(exponential_fit(k, np.exp(-0.3 * k), window=(10, 40)).rate + 0.3) < 1e-12


def test_exponent_ci_covers_truth_under_noise():
    from lab.core import exponent_ci

    rng = np.random.default_rng(0)
    T = np.geomspace(10, 1e4, 20)
    ys = 5.0 * T**0.5 * np.exp(0.2 * rng.standard_normal((10, T.size)))  # sqrt(T) regret
    ci = exponent_ci(T, ys, level=0.95)
    assert ci.low < ci.mean < ci.high and ci.covers(0.5)
    assert ci.high - ci.low < 0.1 and ci.exponents.shape == (10,)
    wider = exponent_ci(T, ys, level=0.99)
    assert wider.low < ci.low and wider.high > ci.high
    # exact curves: every seed gives the exponent, the interval collapses onto it
    exact = exponent_ci(T, np.vstack([T**-1.0, 4 * T**-1.0]))
    assert abs(exact.mean + 1.0) < 1e-12 and exact.high - exact.low < 1e-10


def test_rates_bad_input():
    from lab.core import exponent_ci, exponential_fit, power_law_fit

    k = np.arange(1.0, 11.0)
    with pytest.raises(ValueError, match=r"y must have shape \(10\) \(got \(9,\)\)"):
        power_law_fit(k, k[:-1])
    with pytest.raises(ValueError, match="x must have at least 2 elements"):
        power_law_fit([1.0], [1.0])
    with pytest.raises(ValueError, match="y must contain only finite values"):
        power_law_fit(k, np.r_[k[:-1], np.nan])
    with pytest.raises(TypeError, match="x must be array-like"):
        power_law_fit("abc", k)
    with pytest.raises(ValueError, match="at least 2 distinct usable points"):
        power_law_fit(k, k, window=(5, 5))
    with pytest.raises(ValueError, match="at least 2 distinct usable points"):
        power_law_fit(np.ones(5), np.arange(1.0, 6.0))
    with pytest.raises(ValueError, match="window must have low <= high"):
        power_law_fit(k, k, window=(8, 2))
    with pytest.raises(TypeError, match=r"window must be None or a pair"):
        power_law_fit(k, k, window=3)
    with pytest.raises(ValueError, match=r"window\[0\] must be finite"):
        power_law_fit(k, k, window=(float("nan"), 3))
    with pytest.raises(ValueError, match="nonpositive must be one of"):
        power_law_fit(k, k, nonpositive="clip")
    with pytest.raises(ValueError, match="y must be nonzero"):
        exponential_fit(k, np.r_[0.0, k[1:]], nonpositive="raise")
    with pytest.raises(ValueError, match="at least 2 seeds"):
        exponent_ci(k, k[None, :])
    with pytest.raises(ValueError, match=r"ys_per_seed must have shape \(seeds, 10\)"):
        exponent_ci(k, np.ones((3, 9)))
    with pytest.raises(ValueError, match=r"level must lie in \(0, 1\)"):
        exponent_ci(k, np.ones((3, 10)), level=1.0)


def test_mean_ci_is_the_student_t_interval():
    from scipy import stats

    from lab.core.rates import mean_ci

    v = np.array([0.1, -0.3, 0.25, 0.05])
    ci = mean_ci(v, level=0.9)
    lo, hi = stats.t.interval(0.9, v.size - 1, loc=v.mean(), scale=stats.sem(v))
    assert ci.mean == pytest.approx(v.mean()) and ci.n == 4 and ci.level == 0.9
    assert (ci.low, ci.high) == pytest.approx((lo, hi), rel=1e-12)
    assert ci.se == pytest.approx(stats.sem(v), rel=1e-12)
    with pytest.raises(ValueError, match="values"):
        mean_ci([1.0])
    with pytest.raises(ValueError, match="level"):
        mean_ci(v, level=1.0)


# -- memo ----------------------------------------------------------------------------------
def test_memo_keys_on_arguments_after_defaults_and_clears():
    from lab.core import clear_all, memo

    calls = []

    @memo
    def driver(x, n=3):
        calls.append((x, n))
        return np.full(n, x)

    a = driver(2.0)
    assert driver(x=2.0, n=3) is a and len(calls) == 1  # defaults applied: one entry
    driver(2.0, n=4)
    assert len(calls) == 2 and len(driver) == 2
    arr = np.arange(3.0)
    driver(arr)
    driver(arr.copy())  # keyed on bytes, not identity
    assert len(calls) == 3
    driver(torch.arange(3.0))  # a tensor keys apart from an array of the same bytes
    assert len(calls) == 4
    driver.clear()
    driver(2.0)
    assert len(calls) == 5
    assert clear_all() >= 1 and len(driver) == 0


def test_memo_bounds_and_bad_input():
    from lab.core import memo

    @memo(maxsize=2)
    def square(x):
        return x * x

    for v in (1, 2, 3):
        square(v)
    assert len(square) == 2 and square.misses == 3
    with pytest.raises(TypeError, match="cannot key a cache"):
        square(bytearray(b"x"))
    with pytest.raises(ValueError, match="maxsize must be a positive int"):
        memo(maxsize=0)(lambda: 0)
    with pytest.raises(TypeError, match="fn must be callable"):
        memo(3)
    with pytest.raises(TypeError):
        square(1, 2)  # the function's own signature is enforced


def test_check_tensor_converts_and_names_the_argument():
    t = checks.check_tensor("x", [[1.0, 2.0]], ndim=2)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.get_default_dtype()
    src = torch.zeros(2, 3, dtype=torch.float64)
    assert checks.check_tensor("x", src) is src  # a tensor is returned as it is
    assert checks.check_tensor("x", np.arange(3)).dtype == torch.int64
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 2\)"):
        checks.check_tensor("x", src, shape=(None, 2))
    with pytest.raises(ValueError, match="x must contain only finite values"):
        checks.check_tensor("x", [1.0, float("nan")])
    with pytest.raises(ValueError, match="x must have ndim in"):
        checks.check_tensor("x", [1.0], ndim=2)
    with pytest.raises(TypeError, match="x must be"):
        checks.check_tensor("x", ["a", "b"])


def test_memo_put_stores_a_result_computed_elsewhere():
    from lab.core import memo

    calls = []

    @memo(maxsize=2)
    def driver(x, n=1):
        calls.append(x)
        return x * n

    assert driver.put("batched", 5) == "batched"
    assert driver(5) == "batched" and driver(x=5, n=1) == "batched" and not calls
    assert ((5,), {}) in driver and ((6,), {}) not in driver
    driver.put(1, 6)
    driver.put(2, 7)
    assert len(driver) == 2  # the bound holds for stored results too


def test_check_ints_and_set_field():
    """The settings dataclasses' shared pieces: distinct integers, a frozen field stored once."""
    import dataclasses

    from lab.core.checks import check_ints, set_field

    assert check_ints("seeds", [0, 1, 2], 0) == (0, 1, 2)
    with pytest.raises(ValueError, match="seeds must be distinct integers >= 0"):
        check_ints("seeds", [1, 1], 0)
    with pytest.raises(ValueError, match="at least one"):
        check_ints("seeds", [])
    with pytest.raises(TypeError, match="seeds must be a sequence of integers"):
        check_ints("seeds", "012")
    with pytest.raises(ValueError, match=r"horizons must be an integer in \[1, inf\]"):
        check_ints("horizons", [0, 5], 1)

    @dataclasses.dataclass(frozen=True)
    class S:
        n: object

        def __post_init__(self):
            set_field(self, "n", int(self.n))

    assert S(3.0).n == 3 and isinstance(S(3.0).n, int)


def test_replace_fields_validates_again_and_names_unknown_settings():
    """Every settings class's ``replace``: a copy through ``__post_init__``, unknown names refused."""
    import dataclasses

    from lab.core.checks import check_int, replace_fields, set_field

    @dataclasses.dataclass(frozen=True)
    class Run:
        steps: int = 10
        seed: int = 0

        def __post_init__(self):
            set_field(self, "steps", check_int("steps", self.steps, 1))

    r = replace_fields(Run(), {"seed": 3})
    assert (r.steps, r.seed) == (10, 3)
    with pytest.raises(ValueError, match="steps"):
        replace_fields(Run(), {"steps": 0})  # validated again
    with pytest.raises(TypeError, match=r"unknown setting\(s\) \['step'\]: Run's fields are"):
        replace_fields(Run(), {"step": 5})
    with pytest.raises(TypeError, match="obj must be a dataclass instance"):
        replace_fields(Run, {})
