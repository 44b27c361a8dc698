"""Where the project's files are: the optlab checkout the tooling reads and writes.

Every tool (the book's build helpers, ``lab claims``, ``lab bench``, the grader) works on one
checkout: ``$LAB_ROOT`` when it is set; otherwise the checkout that holds this package (an
editable install) or, for a wheel installed elsewhere, the checkout around the current
directory. A checkout is a folder with ``pyproject.toml``, ``lab/`` and ``book/``; no module
finds it by counting parent folders.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ROOT", "find_root", "is_checkout"]


def is_checkout(path: Path) -> bool:
    """Whether ``path`` is an optlab checkout (``pyproject.toml``, ``lab/`` and ``book/``)."""
    path = Path(path)
    return (
        (path / "pyproject.toml").is_file() and (path / "lab").is_dir() and (path / "book").is_dir()
    )


def find_root(start: Path | None = None) -> Path:
    """The checkout the tools work on: ``$LAB_ROOT``, else the nearest checkout above this
    package, else above ``start`` (default: the current directory), else ``start`` itself."""
    env = os.environ.get("LAB_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    start = Path.cwd() if start is None else Path(start).resolve()
    for base in (Path(__file__).resolve(), start):
        for folder in (base, *base.parents):
            if is_checkout(folder):
                return folder
    return start


#: the checkout, resolved once when the tooling is imported
ROOT: Path = find_root()
