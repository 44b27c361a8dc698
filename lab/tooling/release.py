"""What a release records: each registered chapter's claim snapshot, the reference the
registries are compared with until the next release (``tests/test_registry.py``).

    python -m lab.tooling.release            # write tests/fixtures/registry/<slug>.json
    python -m lab.tooling.release --check    # exit 1 if a snapshot would change
    python -m lab.tooling.release --claims _build/html/_static/claims.json   # + released.json

Run it when tagging a release (CHANGELOG's version), after ``make test``; between releases a
registry that differs from its snapshot needs a ``revised`` entry on the changed claim.
``--claims`` also writes ``lab/tooling/released.json`` from the release build's records (each
claim's verdict, rule, measured text and number of revisions, with the version, commit and date):
the scorecard lists what changed since (:func:`changes`), and a chapter registered after the
release is checked against it (``tests/test_registry.py``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from lab.tooling.paths import ROOT

__all__ = ["RELEASED", "changes", "main", "registered", "released", "snapshots", "write_released"]

#: the last release's verdicts (package data: an installed lab renders the same scorecard)
RELEASED = Path(__file__).with_name("released.json")


def write_released(claims_json: Path, out: Path = RELEASED) -> dict:
    """Write the release's compact verdict file from a build's ``claims.json``."""
    data = json.loads(Path(claims_json).read_text())
    env = data.get("environment") or {}
    recs = {
        r["key"]: {
            "verdict": r["verdict"],
            "expected": r.get("expected", r["verdict"]),
            "rule": r.get("rule", ""),
            "text": r.get("text", ""),
            "revisions": len(r.get("revised") or []),
        }
        for r in data["claims"]
        if r.get("size", "default") == "default"
    }
    doc = {
        "version": data.get("lab", ""),
        "commit": env.get("git_commit"),
        "date": str(env.get("date", ""))[:10],
        "claims": dict(sorted(recs.items())),
    }
    Path(out).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def released(path: Path = RELEASED) -> dict | None:
    """The last release's verdict file, or None before the first release."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def changes(recs: list[dict], last: dict | None = None) -> list[dict]:
    """What changed since the last release: one row per claim whose verdict differs, that is new
    or that is gone (``key``, ``old``, ``new``, ``reason``: the revisions made since, or a note
    that there is none: code or numerics moved the value)."""
    last = released() if last is None else last
    if not last:
        return []
    if not isinstance(recs, list):
        raise TypeError(f"recs must be a list of claim records, got {type(recs).__name__}")
    then = last["claims"]
    now = {r["key"]: r for r in recs if r.get("size", "default") == "default"}
    out = []
    for key in sorted(set(then) | set(now)):
        old, new = then.get(key), now.get(key)
        if old and new and old["verdict"] == new["verdict"]:
            continue
        revs = (new or {}).get("revised") or []
        since = revs[(old or {}).get("revisions", 0) :] if old else revs
        reason = (
            "; ".join(f"revised {r['date']}: {r['old']} -> {r['new']}" for r in since)
            if since
            else "no revision: the code or the numerics moved the value"
            if old and new
            else "new claim"
            if new
            else "claim removed"
        )
        out.append(
            {
                "key": key,
                "old": old["verdict"] if old else "",
                "new": new["verdict"] if new else "",
                "reason": reason,
                "record": new,
            }
        )
    return out


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
    parser.add_argument("--claims", type=Path, help="a release build's claims.json")
    args = parser.parse_args(argv)
    if args.claims is not None and not args.check:
        doc = write_released(args.claims)
        print(
            f"written: {RELEASED.relative_to(ROOT)} ({len(doc['claims'])} claims, {doc['version']})"
        )
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
