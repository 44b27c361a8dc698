"""What the repeated runs of a duplicate-pair listing are made of.

Issue "One way to run" counts the pairs of places in ``lab/`` that share six or more lines, the
same or alike in shape. A pair's lines can be code whose logic repeats (one piece could serve
both places) or a declaration whose shape repeats because the house asks for it: a function's
parameter list (the reference and the fast path share one signature), an import list, an
``__all__`` list, a docstring's numpydoc sections, a settings dataclass's fields, a registered
claim. This script reads such a listing, one pair a line::

    D12 koala/reference.py:257-266 ~ koala/reference.py:367-376 (+1 more run)

(the leading ``D12`` and the trailing words optional; paths relative to ``--root``), parses both
files with ``ast`` and names each line by the innermost construct that holds it. A pair's kind
is the kind most of its lines share on both sides; a pair whose two sides differ is ``logic``
when either side is, else ``<a>|<b>``. It imports nothing from ``lab``.

    python tools/dupkinds.py pairs.txt          # a count per kind, then the logic pairs
    python tools/dupkinds.py --json pairs.txt
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "lab"
PAIR = re.compile(r"(?:D\d+\s+)?(\S+):(\d+)-(\d+)\s+~\s+(\S+):(\d+)-(\d+)")
KINDS = (
    "registry",
    "import",
    "exports",
    "docstring",
    "signature",
    "settings-validation",
    "dataclass-fields",
    "call-arguments",
    "literal",
    "logic",
)


def _mark(kinds: dict[int, str], node: ast.AST, kind: str) -> None:
    for line in range(node.lineno, node.end_lineno + 1):
        kinds.setdefault(line, kind)


def _docstring(node: ast.AST) -> ast.AST | None:
    scopes = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    body = node.body if isinstance(node, scopes) else None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[0] if isinstance(body[0].value.value, str) else None
    return None


def line_kinds(source: str) -> dict[int, str]:
    """``{line number: kind}`` for the lines of ``source`` that some construct holds."""
    tree = ast.parse(source)
    kinds: dict[int, str] = {}
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Spec":
            _mark(kinds, node, "registry")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            _mark(kinds, node, "import")
        elif isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            _mark(kinds, node, "exports")
        doc = _docstring(node)
        if doc is not None:
            _mark(kinds, doc, "docstring")
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            ends = [p.end_lineno for p in params if p is not None]
            if node.returns is not None:
                ends.append(node.returns.end_lineno)
            for line in range(node.lineno, max(ends, default=node.lineno) + 1):
                kinds.setdefault(line, "signature")
            if node.name == "__post_init__":
                _mark(kinds, node, "settings-validation")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign):
                    _mark(kinds, stmt, "dataclass-fields")
    for node in nodes:
        simple = (ast.Name, ast.Constant, ast.Attribute)
        if (
            isinstance(node, ast.Call)
            and len(node.args) + len(node.keywords) >= 5
            and all(isinstance(k.value, simple) for k in node.keywords)
        ):
            _mark(kinds, node, "call-arguments")
        elif (
            isinstance(node, ast.Dict | ast.List | ast.Tuple) and node.end_lineno - node.lineno >= 4
        ):
            _mark(kinds, node, "literal")
    return kinds


def side_kind(root: Path, spec: tuple[str, int, int], cache: dict) -> str:
    """The kind most of the code lines ``first..last`` of one file share."""
    path, first, last = spec
    if path not in cache:
        text = (root / path).read_text(encoding="utf-8")
        cache[path] = (line_kinds(text), text.splitlines())
    kinds, lines = cache[path]
    counts = Counter(
        kinds.get(n, "logic")
        for n in range(first, last + 1)
        if n <= len(lines) and lines[n - 1].strip() and not lines[n - 1].strip().startswith("#")
    )
    return counts.most_common(1)[0][0] if counts else "logic"


def classify(rows: list[str], root: Path = ROOT) -> dict[str, list[str]]:
    """``{kind: [pair, ...]}`` for the pairs in ``rows`` (lines that name no pair are skipped;
    a pair listed twice counts once)."""
    cache: dict = {}
    out: dict[str, list[str]] = {}
    seen = set()
    for row in rows:
        m = PAIR.search(row)
        if m is None:
            continue
        a = (m[1], int(m[2]), int(m[3]))
        b = (m[4], int(m[5]), int(m[6]))
        if (a, b) in seen:
            continue
        seen.add((a, b))
        ka, kb = side_kind(root, a, cache), side_kind(root, b, cache)
        kind = ka if ka == kb else ("logic" if "logic" in (ka, kb) else f"{ka}|{kb}")
        out.setdefault(kind, []).append(f"{m[1]}:{m[2]}-{m[3]} ~ {m[4]}:{m[5]}-{m[6]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", help="the listing (a file, or - for standard input)")
    parser.add_argument("--root", default=str(ROOT), help="what the paths are relative to")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.pairs == "-" else Path(args.pairs).read_text()
    kinds = classify(text.splitlines(), Path(args.root))
    if args.json:
        counts = {k: len(v) for k, v in kinds.items()}
        print(json.dumps(counts | {"logic pairs": kinds.get("logic", [])}, indent=1))
        return 0
    total = sum(len(v) for v in kinds.values())
    print(f"{total} pairs")
    for kind, pairs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(pairs):5d}  {kind}")
    for pair in kinds.get("logic", []):
        print(f"logic: {pair}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
