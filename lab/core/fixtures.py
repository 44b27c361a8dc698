"""The official-code fixtures: outputs of a paper's own implementation on a small shared
instance, recorded outside the project with their provenance (``tests/fixtures/official/`` or a
chapter's package data). Every chapter's ``official_parity`` reads them through
:func:`load_fixture`.

See: CONTRIBUTING.md ("Official code") and each chapter page's "Parity with the official code".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["load_fixture"]


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
