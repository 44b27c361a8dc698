"""The numbers of the halo lesson page (book/halo/index.md) that its text states: computed by
lab here, so the page's worked example can be checked by hand and by the code."""

from __future__ import annotations

import pytest
import torch

from lab import halo


def test_worked_example_of_the_lesson():
    """book/halo/index.md, "A worked example": one row (100, 1, 1, 1) in INT8, plain and
    rotated by H_4; the butterflies of eq. (halo-fwht) stage by stage."""
    a = torch.tensor([[100.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    q = halo.quantize(a, "int8")
    assert q.codes.tolist() == [[127, 1, 1, 1]]
    assert float(q.scale) == pytest.approx(100 / 127) and float(q.scale) == pytest.approx(
        0.787, abs=5e-4
    )
    plain = q.dequantize()
    assert abs(float(plain[0, 1]) - 1) == pytest.approx(0.213, abs=1e-3)  # 21% off
    stages = halo.reference.butterfly_stages([100.0, 1.0, 1.0, 1.0])
    assert [s.tolist() for s in stages] == [[100, 1, 1, 1], [101, 99, 2, 0], [103, 99, 99, 99]]
    r = halo.fwht(a)
    assert r.tolist() == [[51.5, 49.5, 49.5, 49.5]]
    qr = halo.quantize(r, "int8")
    assert qr.codes.tolist() == [[127, 122, 122, 122]]
    assert float(qr.scale) == pytest.approx(0.406, abs=5e-4)
    back = halo.fwht(qr.dequantize())
    assert float(back[0, 0]) == pytest.approx(99.96, abs=5e-3)
    assert float(back[0, 1]) == pytest.approx(1.014, abs=5e-4)  # 1.4% off
