"""The official-code fixtures: outputs of a paper's own implementation on a small shared
instance, recorded outside the project with their provenance. They ship with the package
(``lab/core/official/<slug>_official.json``, package data), so an installed ``lab`` finds them
wherever it lives: :func:`official_fixture` names one, and every chapter's ``official_parity``
reads it through :func:`load_fixture`.

See: CONTRIBUTING.md ("Official code") and each chapter page's "Parity with the official code".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["OFFICIAL_DIR", "load_fixture", "official_fixture"]

#: the fixtures' folder inside the package
OFFICIAL_DIR = Path(__file__).resolve().parent / "official"


def official_fixture(name: str) -> Path:
    """The path of the official-code fixture ``name`` (``"halo_official.json"``).

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If no fixture of that name ships with ``lab`` (the message lists those that do).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a fixture's file name, got {type(name).__name__}")
    path = OFFICIAL_DIR / Path(name).name
    if not path.is_file():
        known = sorted(p.name for p in OFFICIAL_DIR.glob("*.json"))
        raise ValueError(f"name {name!r}: no official-code fixture of that name; known: {known}")
    return path


def load_fixture(path: Any, default: Path) -> dict:
    """The fixture at ``path`` (``None``: the chapter's ``default``) as a dict with at least
    ``provenance``; ``TypeError`` for a path of the wrong type, ``FileNotFoundError`` when
    there is no file."""
    if path is not None and not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path (got {type(path).__name__})")
    path = Path(default) if path is None else Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no official-code fixture at {path}")
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or "provenance" not in data:
        raise ValueError(f"{path} is not an official-code fixture (no 'provenance')")
    return data
