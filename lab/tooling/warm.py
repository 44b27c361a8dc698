"""Compile the bytecode of what every notebook kernel and test process imports, once.

``make setup`` runs ``python -m lab.tooling.warm`` after the install (at the same time as
``npm ci``): uv compiles no bytecode, so otherwise the first processes of ``make test`` (two
nbval kernels, three pytest processes) would each compile torch, scipy, plotly and the rest at
the same moment, on a clean clone only. Measured on 2 cores, coreset/03 and halo/03 under nbval
side by side: 52.5 busy core-s from a cold bytecode cache, 41.7 after this warm-up (7 s, one core).

Each module is imported in turn; one that is not installed is skipped (the list holds the
notebooks' optional peers too). Nothing is executed beyond the imports.
"""

from __future__ import annotations

import importlib
import sys
import time

#: what a notebook kernel imports (ipykernel, the widgets, plotly, torch, scipy, matplotlib,
#: lab and its chapters' packages), and the test runner's own stack (pytest, xdist, nbval)
MODULES = (
    "ipykernel.kernelapp",
    "ipywidgets",
    "IPython.display",
    "plotly.graph_objects",
    "plotly.subplots",
    "plotly.io",
    "torch",
    "scipy.optimize",
    "scipy.stats",
    "scipy.special",
    "scipy.signal",
    "scipy.linalg",
    "matplotlib.pyplot",
    "tqdm.auto",
    "nbformat",
    "nbclient",
    "jupyter_client",
    "jupyter_cache",
    "pytest",
    "xdist.plugin",
    "nbval.plugin",
    "lab",
)


def warm(modules: tuple[str, ...] = MODULES, verbose: bool = False) -> dict[str, float]:
    """Import ``modules`` in turn; returns ``{module: seconds}`` (``nan`` when not installed)."""
    if isinstance(modules, str) or not all(isinstance(m, str) for m in modules):
        raise TypeError("modules must be a sequence of module names (str)")
    out: dict[str, float] = {}
    for name in modules:
        t0 = time.perf_counter()
        try:
            importlib.import_module(name)
        except ImportError:
            out[name] = float("nan")
            continue
        out[name] = time.perf_counter() - t0
        if verbose:
            print(f"{name}: {out[name]:.2f} s", file=sys.stderr)
    if "lab" in modules:
        import pkgutil

        import lab

        for info in pkgutil.iter_modules(lab.__path__):
            if info.ispkg and info.name != "tooling":
                importlib.import_module(f"lab.{info.name}")
    return out


if __name__ == "__main__":  # python -m lab.tooling.warm [-v]
    t = time.perf_counter()
    warm(verbose="-v" in sys.argv[1:])
    print(f"bytecode warmed in {time.perf_counter() - t:.1f} s")
