"""Shared machinery, written once and used by every chapter.

- :mod:`lab.core.runtime`: ``device()``, ``seed()``, ``setup()``, the CPU thread policy.
- :mod:`lab.core.checks`: argument validation with messages that name argument, value, range.
- :mod:`lab.core.style`: the book's matplotlib style and plotly template.
- :mod:`lab.core.explore`: the one widget helper (live ipywidgets + kernel-free plotly twin).
- :mod:`lab.core.progress`: the progress-bar convention (``tqdm.auto``).
- :mod:`lab.core.grading`: assignments with otter-grader (assign, grade, round-trip).
- :mod:`lab.core.book`: the book build's plotly renderer and offline assets (Sphinx side).
- :mod:`lab.core.cache`: the execution cache of the book: wiped when ``lab`` changes, prefilled in parallel.
"""

from .checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
)
from .progress import progress
from .runtime import cuda_available, device, seed, setup, small_problem_threads

__all__ = [
    "check_array",
    "check_bool",
    "check_choice",
    "check_int",
    "check_positive",
    "check_range",
    "check_real",
    "cuda_available",
    "device",
    "progress",
    "seed",
    "setup",
    "small_problem_threads",
]
