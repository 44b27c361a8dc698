"""The run layer's shared pieces: the sweep runner (lab.core.sweep) and the disk tier of the
cache (lab.core.diskcache)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from lab.core import claims
from lab.core.diskcache import _package_digest, cache_dir, context_key, disk_memo
from lab.core.sweep import sweep


def _run(method: str, lr: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)  # common random numbers: one draw per seed
    noise = rng.normal()
    return {"loss": lr * (2.0 if method == "rival" else 1.0) + noise, "noise": noise}


def test_a_sweep_pairs_settings_seed_by_seed():
    s = sweep(_run, {"method": ["ours", "rival"], "lr": [0.5, 1.0]}, seeds=[3, 4, 5, 6])
    assert len(s.rows) == 16 and s.seeds == (3, 4, 5, 6)
    ours = s.values("loss", method="ours", lr=1.0)
    rival = s.values("loss", method="rival", lr=1.0)
    # the same seed draws the same noise in both arms: the paired difference has no spread
    d = s.paired("loss", {"method": "ours", "lr": 1.0}, {"method": "rival", "lr": 1.0})
    assert d == claims.paired(ours, rival)
    assert d["estimate"] == pytest.approx(-1.0) and d["se"] == pytest.approx(0.0, abs=1e-12)
    ci = s.mean_ci("noise", method="ours", lr=0.5)
    assert ci.n == 4 and ci.low < ci.mean < ci.high
    table = s.table(["loss"])
    assert [(r["method"], r["lr"]) for r in table] == [
        ("ours", 0.5),
        ("ours", 1.0),
        ("rival", 0.5),
        ("rival", 1.0),
    ]
    assert table[1]["loss"] == pytest.approx(ours.mean())
    assert len(s.frame()) == 16


def test_a_list_of_settings_and_no_grid():
    s = sweep(lambda a, seed: a + seed, [{"a": 1}, {"a": 10}], seeds=[0, 1])
    assert s.values("value", a=10).tolist() == [10.0, 11.0]
    one = sweep(lambda seed: seed * 2.0, seeds=[1])
    assert one.table() == [
        {
            "value": 2.0,
            "value_lo": pytest.approx(np.nan, nan_ok=True),
            "value_hi": pytest.approx(np.nan, nan_ok=True),
        }
    ]


def test_smoke_mode_runs_every_setting_on_two_seeds(monkeypatch):
    monkeypatch.setenv("LAB_SMOKE", "1")
    s = sweep(_run, {"method": ["ours", "rival"], "lr": [1.0]}, seeds=[0, 1, 2, 3])
    assert len(s.rows) == 4 and s.seeds == (0, 1)  # a notebook may index any setting


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"grid": {"lr": 0.1}}, TypeError, r"grid\['lr'\] must be a list"),
        ({"grid": {"lr": []}}, ValueError, "at least one value"),
        ({"grid": {"seed": [1]}}, ValueError, "'seed' is not a setting"),
        ({"grid": "lr"}, TypeError, "grid must be"),
        ({"grid": [3]}, TypeError, r"grid\[0\] must be a dict"),
        ({"seeds": [1, 1]}, ValueError, "distinct"),
        ({"seeds": []}, ValueError, "distinct"),
        ({"seeds": 3}, TypeError, "seeds must be a list"),
        ({"seeds": [1.5]}, TypeError, "seeds"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    args = {"fn": lambda lr=0.1, seed=0: lr, "grid": {"lr": [0.1]}, "seeds": [0]} | kwargs
    with pytest.raises(error, match=match):
        sweep(args["fn"], args["grid"], args["seeds"])


def test_a_sweep_reports_bad_outputs_and_lookups():
    with pytest.raises(TypeError, match="outputs must be numbers"):
        sweep(lambda seed: "x", seeds=[0])
    with pytest.raises(ValueError, match="clash"):
        sweep(lambda a, seed: {"a": 1.0}, {"a": [1]}, seeds=[0])
    s = sweep(_run, {"method": ["ours", "rival"], "lr": [1.0]}, seeds=[0, 1])
    with pytest.raises(ValueError, match="match 2"):
        s.values("loss", lr=1.0)
    with pytest.raises(KeyError, match="recorded"):
        s.values("acc", method="ours")


@pytest.fixture
def demo(monkeypatch, tmp_path):
    """A throwaway module with one function, and a private cache folder."""
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path / "cache"))
    mod = types.ModuleType("optlab_demo_mod")
    mod.calls = []

    def f(x, seed=0):
        mod.calls.append((x, seed))
        return {"v": 2.0 * x + seed}

    f.__module__ = mod.__name__
    mod.f = f
    (tmp_path / "optlab_demo_mod.py").write_text("# stands in for a chapter's source\n")
    mod.__file__ = str(tmp_path / "optlab_demo_mod.py")
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod


def test_the_disk_tier_computes_once_and_lives_outside_the_package(demo, tmp_path):
    g = disk_memo(demo.f)
    assert g(1.0, seed=2) == g(1.0, seed=2) == g(x=1.0, seed=2) == g(1.0, 2) == {"v": 4.0}
    assert demo.calls == [(1.0, 2)]  # one entry, however the call is spelt
    assert cache_dir() == tmp_path / "cache" and any((tmp_path / "cache").rglob("*.pkl"))
    # another process (a fresh decorator) reads the same entry
    assert disk_memo(demo.f)(1.0, seed=2) == {"v": 4.0} and len(demo.calls) == 1
    g.clear()
    g(1.0, seed=2)
    assert len(demo.calls) == 2


def test_the_disk_tier_is_keyed_on_the_numerics_and_can_be_turned_off(demo, monkeypatch):
    g = disk_memo(demo.f)
    g(3.0)
    key = context_key(demo.f)
    assert len(key) == 3 and key[1] == __import__("lab").__version__
    # the shared code every chapter computes with is part of the key (a change there recomputes)
    assert key[0].endswith("+" + _package_digest("lab.core"))
    monkeypatch.setenv("LAB_SEED_SHIFT", "1000")  # another fingerprint: recomputed
    assert context_key(demo.f)[2] != key[2]
    g(3.0)
    assert len(demo.calls) == 2
    monkeypatch.setenv("LAB_DISK_CACHE", "0")
    g(3.0)
    assert len(demo.calls) == 3
    with pytest.raises(TypeError, match="decorates a function"):
        disk_memo(3)


def test_smoke_runs_neither_store_nor_read_the_disk_tier(demo, monkeypatch, tmp_path):
    g = disk_memo(demo.f)
    g(5.0)  # a real run's entry
    monkeypatch.setenv("LAB_SMOKE", "1")
    g(5.0)
    g(6.0)
    assert len(demo.calls) == 3  # the smoke run computes and reads nothing from disk
    monkeypatch.delenv("LAB_SMOKE")
    g(6.0)
    assert len(demo.calls) == 4  # and stored nothing under the real run's key
