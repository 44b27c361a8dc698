"""The chapters converted under the issues "A book that teaches", "Verdicts a statistician
would sign" and "One way to run" (CONTRIBUTING.md, "Converting a chapter"): their lesson
structure (tests/test_lessons.py) and their claims contract (tests/test_contract.py) are
enforced. The list only grows.

While converting a chapter, check it before it joins: ``LAB_CHECK_CHAPTERS=<slug>`` adds it
here for one run, and ``LAB_CLAIMS_JSON=<file>`` (written by ``lab claims <slug> -o <file>``)
stands in for the built book's records in tests/test_contract.py."""

import os

CONVERTED: tuple[str, ...] = (
    "eos",
    "ot_dro",
    "bilevel",
    "traceability",
    "arecho",
    "cvrp",
    "splitfed",
    "strategic",
    "lp_sufficiency",
    "wflows",
    "actor_critic",
    "medro",
    "koala",
    "halo",
    "coreset",
    "omiso",
    "spot",
    "gmm_attention",
    "ace",
)
_EXTRA = [s for s in os.environ.get("LAB_CHECK_CHAPTERS", "").split(",") if s]
CONVERTED = CONVERTED + tuple(s for s in _EXTRA if s not in CONVERTED)
