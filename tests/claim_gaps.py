"""What each chapter's claim records still lack (tests/test_claims.py, ``test_controls_and_diagnoses``).

- ``control:<id>``: a claim sourced to the paper whose verdict is "reproduced" shows no control
  (the nearest rival, judged by the same rule) that its rule rejects;
- ``diagnosis:<id>``: a "not reproduced at this size" or "reproduced qualitatively" verdict says
  not why (scale, noise-floor, official-code, deviation or open);
- ``sign-test:<id>``: the rule thresholds one number at 0 or 1 (a sign of a mean, a ratio at
  parity) where a comparison of stochastic methods needs a paired interval over seeds (or the
  condition is declared ``deterministic=True``).

Generated from the build's records when the contract was introduced; the list only shrinks:
the contract test fails on a gap that is not listed and on a listed gap that is gone. Empty
since spot's speed claims gained their quality bound and controls (issue 29).
"""

GAPS: dict[str, set[str]] = {}
