"""lab: the library behind the optlab book.

One module per paper (``lab.eos``, ...) plus shared machinery in ``lab.core``.
The names re-exported here are the ones every notebook's parameters cell uses.
"""

from .core.numerics import seeds
from .core.runtime import device, seed, setup, small_problem_threads

__version__ = "0.2.0"
__all__ = ["device", "seed", "seeds", "setup", "small_problem_threads", "__version__"]
