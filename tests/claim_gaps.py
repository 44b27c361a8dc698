"""What each chapter's claim records still lack (tests/test_claims.py, ``test_controls_and_diagnoses``).

- ``control:<id>``: a claim sourced to the paper whose verdict is "reproduced" shows no control
  (the nearest rival, judged by the same rule) that its rule rejects;
- ``diagnosis:<id>``: a "not reproduced at this size" or "reproduced qualitatively" verdict says
  not why (scale, noise-floor, official-code, deviation or open);
- ``sign-test:<id>``: the rule thresholds one number at 0 or 1 (a sign of a mean, a ratio at
  parity) where a comparison of stochastic methods needs a paired interval over seeds (or the
  condition is declared ``deterministic=True``);
- ``fragile:<id>``: the expected verdict sits within two standard errors (or 1e-6 relative, for
  a deterministic value) of the nearest tier boundary: under another CPU's rounding or another
  seed set it flips too often (issue "Verdicts that hold on every machine");
- ``margin:<id>``: the rule cannot state a margin (a custom condition without a distance).

Generated from the build's records when the contract was introduced; the list only shrinks:
the contract test fails on a gap that is not listed and on a listed gap that is gone. It was
empty after issue 29; the margins of issue 36 ("Verdicts that hold on every machine") listed
the fragile verdicts (2026-12-06, the build of an Intel AVX-512 machine), each fixed since by a
better measurement: the list is empty again.
"""

GAPS: dict[str, set[str]] = {}
