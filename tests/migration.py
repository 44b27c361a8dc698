"""Which chapters follow the new house (generated claims, the layout of CONTRIBUTING.md).

One list, read by the claims contract test (tests/test_claims.py) and the bad-input probe
(tests/test_bad_input.py). A chapter joins it in its second pass; it never leaves it.
"""

MIGRATED: tuple[str, ...] = (
    "eos",
    "actor_critic",
    "splitfed",
    "strategic",
    "halo",
    "traceability",
    "medro",
    "gmm_attention",
    "lp_sufficiency",
    "wflows",
    "bilevel",
    "omiso",
    "koala",
    "ot_dro",
    "coreset",
    "ace",
    "spot",
    "cvrp",
    "arecho",
)
