"""Keep the book's execution cache honest.

jupyter-cache (behind ``execute_notebooks: cache``) keys a notebook on its code cells only,
so after a change to ``lab/`` it would happily republish stale outputs. ``guard`` hashes
everything a notebook's results depend on besides its own code (the ``lab`` sources and the
install files) and wipes the cache when that hash changes. ``make book`` calls it before
every build: ``python -m lab.core.cache _build/.jupyter_cache``.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAMP = "lab-sources.sha256"


def sources_digest(root: Path = ROOT) -> str:
    """SHA-256 over ``lab/**/*.py``, ``pyproject.toml`` and ``constraints.txt``."""
    h = hashlib.sha256()
    files = sorted((root / "lab").rglob("*.py")) + [
        root / "pyproject.toml",
        root / "constraints.txt",
    ]
    for path in files:
        if path.exists() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def guard(cache_dir: str | Path, root: Path = ROOT) -> bool:
    """Delete ``cache_dir`` if it was filled under other ``lab`` sources. Returns True if wiped."""
    cache_dir = Path(cache_dir)
    digest = sources_digest(root)
    stamp = cache_dir / STAMP
    wiped = False
    if cache_dir.exists() and (not stamp.exists() or stamp.read_text().strip() != digest):
        shutil.rmtree(cache_dir)
        wiped = True
    cache_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest + "\n")
    return wiped


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "_build" / ".jupyter_cache")
    wiped = guard(target)
    print(f"execution cache {target}: {'wiped (lab sources changed)' if wiped else 'up to date'}")
