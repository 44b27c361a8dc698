"""What a release records: each registered chapter's claim snapshot, the reference the
registries are compared with until the next release (``tests/test_registry.py``).

    python -m lab.tooling.release            # write tests/fixtures/registry/<slug>.json
    python -m lab.tooling.release --check    # exit 1 if a snapshot would change

Run it when tagging a release (CHANGELOG's version), after ``make test``; between releases a
registry that differs from its snapshot needs a ``revised`` entry on the changed claim.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

__all__ = ["main", "registered", "snapshots"]

ROOT = Path(__file__).resolve().parents[2]


def registered(root: Path = ROOT) -> list[str]:
    """The chapters with a registry (``lab/<slug>/claims.py``)."""
    found = (p.parent.name for p in (root / "lab").glob("*/claims.py"))
    return sorted(s for s in found if s not in ("core", "tooling"))


def snapshots(root: Path = ROOT) -> dict[str, dict]:
    """Every registry's snapshot, by chapter."""
    return {
        s: importlib.import_module(f"lab.{s}.claims").CLAIMS.snapshot() for s in registered(root)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.tooling.release", description=__doc__)
    parser.add_argument("--check", action="store_true", help="report stale snapshots, exit 1")
    args = parser.parse_args(argv)
    out = ROOT / "tests" / "fixtures" / "registry"
    stale = []
    for slug, snap in snapshots().items():
        path = out / f"{slug}.json"
        text = json.dumps(snap, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        if not path.exists() or path.read_text() != text:
            stale.append(slug)
            if not args.check:
                out.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for slug in stale:
        print(f"{'stale' if args.check else 'written'}: tests/fixtures/registry/{slug}.json")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
