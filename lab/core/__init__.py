"""Shared machinery, written once: what notebooks and users import from every chapter.

- :mod:`lab.core.runtime`: ``device()``, ``resolve_device()``, ``seed()``, ``setup()``, the CPU
  thread policy, smoke mode (``LAB_SMOKE=1``: ``smoke()``, ``smoke_steps()``, ``smoke_items()``).
- :mod:`lab.core.numerics`: what decides floating-point results here (``fingerprint()``), the
  numerics modes that emulate other CPUs (``MODES``) and the registered seed shifts (``seeds()``).
- :mod:`lab.core.data`: shared data sets (``digits()``: split, standardised on training rows).
- :mod:`lab.core.rates`: rate fits (``power_law_fit``, ``exponential_fit``, ``exponent_ci``) and the
  t-interval of a mean over seeds (``mean_ci``).
- :mod:`lab.core.checks`: argument validation with messages that name argument, value, range.
- :mod:`lab.core.style`: the book's matplotlib style and plotly template.
- :mod:`lab.core.fixtures`: ``load_fixture``, the official-code fixtures behind every ``official_parity``.
- :mod:`lab.core.memo`: ``memo``, the one cache of the drivers (keyed on arguments, ``clear()``).
- :mod:`lab.core.explore`: the one widget helper (live ipywidgets + kernel-free plotly twin).
- :mod:`lab.core.progress`: the progress-bar convention (``tqdm.auto``).

Build tooling (the Sphinx extension, the execution cache, the benchmark harness, grading) lives
in :mod:`lab.tooling`, which notebooks never import. A change here re-executes every notebook
of the book; a change there re-executes none.
"""

from .checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
    check_tensor,
)
from .data import DigitsSplit, digits
from .memo import clear_all, memo
from .progress import progress
from .rates import (
    ExponentCI,
    ExponentialFit,
    MeanCI,
    PowerLawFit,
    exponent_ci,
    exponential_fit,
    mean_ci,
    power_law_fit,
)
from .runtime import (
    cuda_available,
    device,
    resolve_device,
    seed,
    setup,
    small_problem_threads,
    smoke,
    smoke_items,
    smoke_steps,
)

__all__ = [
    "check_array",
    "check_bool",
    "check_choice",
    "check_int",
    "check_positive",
    "check_range",
    "check_real",
    "check_tensor",
    "clear_all",
    "cuda_available",
    "device",
    "DigitsSplit",
    "digits",
    "ExponentCI",
    "MeanCI",
    "ExponentialFit",
    "exponent_ci",
    "mean_ci",
    "memo",
    "exponential_fit",
    "PowerLawFit",
    "power_law_fit",
    "progress",
    "resolve_device",
    "seed",
    "setup",
    "small_problem_threads",
    "smoke",
    "smoke_items",
    "smoke_steps",
]
