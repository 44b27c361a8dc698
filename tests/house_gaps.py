"""What the house checks (tests/test_house.py) find missing today, per check: the list only shrinks.

Regenerate the findings with `python tests/test_house.py`; delete an entry when its chapter meets
the check (the test fails on a listed gap that is gone). "apigen" lists the problems
`python -m lab.tooling.apigen --check` may report; "attach-stub" the chapters whose `__init__`
does not use `lazy_loader.attach_stub` yet.

Empty since issue 31: every chapter meets every house check. A check added later may list the
chapters it finds wanting here, and the list then only shrinks.
"""

GAPS: dict[str, tuple[str, ...]] = {}
