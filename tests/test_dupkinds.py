"""tools/dupkinds.py names what a repeated run is made of: a check that it can tell a parameter
list, an import list and a docstring from code whose logic repeats."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("dupkinds", ROOT / "tools" / "dupkinds.py")
dupkinds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dupkinds)

SOURCE = '''"""A module."""

from os.path import (
    basename,
    dirname,
    join,
)


def f(
    a: int,
    b: int,
    c: int,
) -> int:
    """Sum.

    Parameters
    ----------
    a, b, c : int
    """
    x = a + b
    y = x * c
    return y - a
'''


def test_each_line_is_named_by_what_holds_it():
    kinds = dupkinds.line_kinds(SOURCE)
    assert kinds[1] == "docstring"
    assert {kinds[n] for n in range(3, 8)} == {"import"}
    assert {kinds[n] for n in range(10, 15)} == {"signature"}
    assert {kinds[n] for n in range(15, 21)} == {"docstring"}
    assert all(n not in kinds for n in (21, 22, 23)), "the body is logic"


def test_pairs_are_classified_by_both_sides(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "b.py").write_text(SOURCE)
    rows = [
        "D1 a.py:10-14 ~ b.py:10-14",
        "D2 a.py:21-23 ~ b.py:21-23 shape",
        "a.py:3-7 ~ b.py:21-23",  # an import list against logic: logic
        "D1 a.py:10-14 ~ b.py:10-14",  # listed twice: counted once
        "incomplete: nothing",
    ]
    out = dupkinds.classify(rows, tmp_path)
    assert {k: len(v) for k, v in out.items()} == {"signature": 1, "logic": 2}
