"""Count what issue "One way to run" measures in ``lab/``: method against scaffolding, long
functions, long parameter lists, figure modules that compute, caches, entry points and
replay arrangements, argument checks, and files located by counting parent folders.

    python tools/labcount.py            # a table
    python tools/labcount.py --json     # the same figures as JSON (before/after comparisons)

Categories of a chapter file (``lab/<slug>/<name>.py``), by its role:

* scaffolding: ``experiments.py`` (drivers, sweeps, training loops), ``figures.py``,
  ``official.py`` (replays), ``store.py``/``artifacts.py``/``checkpoints.py``, ``__main__.py``,
  ``widgets.py``, and any module whose name says it runs or caches (``*run*``, ``*cache*``);
* init: ``__init__.py`` / ``__init__.pyi`` (re-exports);
* method: everything else (``reference.py``, ``fast.py``, the paper's objects).

Counts are of non-blank, non-comment lines. It reads source only (``ast``): it imports nothing.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "lab"
SCAFFOLD = {
    "experiments.py",
    "figures.py",
    "official.py",
    "store.py",
    "artifacts.py",
    "checkpoints.py",
    "__main__.py",
    "widgets.py",
}


def code_lines(text: str) -> int:
    """Lines holding code: not blank, not only a comment (docstrings count as code)."""
    keep = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type not in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            ):
                keep.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return sum(1 for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#"))
    return len(keep)


def category(path: Path) -> str:
    name = path.name
    if name.startswith("__init__"):
        return "init"
    if name in SCAFFOLD or re.search(r"run|cache", path.stem):
        return "scaffolding"
    return "method"


def n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names = [n for n in names if n not in ("self", "cls")]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def count(lab: Path = LAB) -> dict:
    chapters = sorted(p.name for p in lab.iterdir() if (p / "__init__.py").exists())
    chapters = [c for c in chapters if c not in ("core", "tooling")]
    lines = {"method": 0, "scaffolding": 0, "init": 0}
    per_chapter = {}
    functions = []
    figures_compute = []
    caches = []
    entry_points = []
    parents = []
    checks = raises = 0
    for path in sorted(lab.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text()
        rel = str(path.relative_to(lab.parent))
        tree = ast.parse(text)
        top = path.relative_to(lab).parts[0]
        if top in chapters:
            cat = category(path)
            n = code_lines(text)
            lines[cat] += n
            per_chapter.setdefault(top, dict.fromkeys(lines, 0))[cat] += n
            if path.name == "figures.py":
                bad = sorted(
                    {
                        (node.module or "").rsplit(".", 1)[-1]
                        for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom)
                        and (node.module or "").rsplit(".", 1)[-1]
                        in ("experiments", "reference", "fast")
                    }
                    | {
                        a.name.rsplit(".", 1)[-1]
                        for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom) and node.level and not node.module
                        for a in node.names
                        if a.name in ("experiments", "reference", "fast")
                    }
                )
                if bad:
                    figures_compute.append(f"{rel}: {', '.join(bad)}")
            if re.search(r'^if __name__ == "__main__"', text, re.M):
                entry_points.append(rel)
        if re.search(r"parents\[\d\]", text):
            parents.append(rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                functions.append((rel, node.name, length, n_params(node)))
                for d in node.decorator_list:
                    src = ast.unparse(d)
                    if re.search(r"lru_cache|(^|\.)cache$|memo", src) and top in chapters:
                        caches.append(f"{rel}:{node.name} @{src}")
            elif isinstance(node, ast.Call) and top in chapters:
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name.startswith("check_"):
                    checks += 1
            elif isinstance(node, ast.Raise) and top in chapters:
                raises += 1
            elif isinstance(node, ast.Assign) and top in chapters:
                for t in node.targets:
                    if (
                        isinstance(t, ast.Name)
                        and re.search(r"(MEMO|CACHE|RUNS)$", t.id)
                        and isinstance(node.value, ast.Dict)
                    ):
                        caches.append(f"{rel}:{t.id} (dict)")
    chapter_fns = [f for f in functions if f[0].split("/")[1] in chapters]
    long = sorted((f for f in chapter_fns if f[2] > 80), key=lambda f: -f[2])
    wide = sorted((f for f in chapter_fns if f[3] >= 10), key=lambda f: -f[3])
    return {
        "chapter_lines": lines,
        "chapter_total": sum(lines.values()),
        "per_chapter": per_chapter,
        "functions_over_80_lines": len(long),
        "longest": [f"{f[0]}:{f[1]} ({f[2]} lines)" for f in long[:10]],
        "functions_10_or_more_params": len(wide),
        "widest": [f"{f[0]}:{f[1]} ({f[3]} params)" for f in wide[:10]],
        "figure_modules_that_compute": figures_compute,
        "caches": caches,
        "entry_points": entry_points,
        "parents_path_resolution": parents,
        "check_calls": checks,
        "raises": raises,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    c = count()
    if args.json:
        print(json.dumps(c, indent=1))
        return 0
    ln = c["chapter_lines"]
    tot = c["chapter_total"]
    print(
        f"chapter code lines: {tot} (method {ln['method']}, {100 * ln['method'] / tot:.0f}%; "
        f"scaffolding {ln['scaffolding']}, {100 * ln['scaffolding'] / tot:.0f}%; init {ln['init']})"
    )
    print(f"functions over 80 lines: {c['functions_over_80_lines']}; longest: {c['longest'][:3]}")
    print(
        f"functions with >= 10 parameters: {c['functions_10_or_more_params']}; widest: "
        f"{c['widest'][:3]}"
    )
    print(f"figure modules that import drivers or kernels: {len(c['figure_modules_that_compute'])}")
    print(f"caches in chapters: {len(c['caches'])}; entry points: {len(c['entry_points'])}")
    print(f"modules resolving files by parents[N]: {len(c['parents_path_resolution'])}")
    print(f"check_* calls in chapters: {c['check_calls']}; raise statements: {c['raises']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
