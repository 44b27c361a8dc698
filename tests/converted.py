"""The chapters converted under the issues "A book that teaches", "Verdicts a statistician
would sign" and "One way to run" (CONTRIBUTING.md, "Converting a chapter"): their lesson
structure (tests/test_lessons.py) and their claims contract (tests/test_contract.py) are
enforced. The list only grows."""

CONVERTED: tuple[str, ...] = ("eos", "ot_dro", "bilevel")
