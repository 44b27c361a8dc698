"""The numbers the arecho lesson page shows (book/arecho/index.md) and the claim builders of
lab.arecho.evidence, checked without the committed models."""

from __future__ import annotations

import numpy as np
import pytest

import lab.arecho as ar
from lab.arecho import evidence


def test_worked_example_of_the_lesson_page():
    tok = ar.MetricTokenizer(4).fit([[1], [2], [3], [4], [5], [6], [7], [8]], ["num"], ["x"])
    np.testing.assert_array_equal(tok.edges[0], [2, 4, 6])
    np.testing.assert_array_equal(tok.values[0], [1, 2.5, 4.5, 7])
    np.testing.assert_array_equal(
        tok.bin_of("x", [1, 2, 3, 4, 5, 6, 7, 8]), [0, 1, 1, 2, 2, 3, 3, 3]
    )
    np.testing.assert_array_equal(tok.bin_of("x", [2.5, 7.9]), [1, 3])
    assert tok.meta_token("x") == 4 and tok.block("x") == (5, 4) and tok.vocab_size == 9
    assert (
        tok.decode("x", tok.encode("x", 2.5)) == 2.5 and tok.decode("x", tok.encode("x", 7.9)) == 7
    )


def test_builders_answer_junk_clearly():
    with pytest.raises(TypeError, match="HeadErrors"):
        evidence.tokens_fix_scales({"errors": {}}, 200)
    with pytest.raises(TypeError, match="SeedStudy"):
        evidence.one_chain(object(), 32, 1500)


def test_subset_query_record_is_the_ratio_with_the_ridge_rival():
    rec = evidence.subset_query({"STOI": 0.2, "PESQ-WB": 0.1}, {"STOI": 0.25, "PESQ-WB": 0.1}, 1.1)
    assert rec["measured"] == pytest.approx(0.8) and rec["control"].measured == 1.1
