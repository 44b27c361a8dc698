"""The house shape of every chapter (CONTRIBUTING.md, "lab/<slug>"): what a reader of the tree
can count on, checked file by file.

- the house files, a lazy ``__init__`` with a Deviations list;
- one list of public names: each module's ``__all__``; ``__init__.pyi`` and the API page are
  generated from them (``python -m lab.tooling.apigen``) and must not drift;
- reference and fast paths share names (a ``PAIRS`` table where a batched signature differs), and
  ``tests/test_<slug>.py`` checks each pair in a ``test_pair_<name>``;
- no import circle inside a chapter; imports across packages absolute; no underscore name
  imported from a sibling file; figures only draw (no cache, no memo, no training there);
- the chapter page shows the reference kernel it teaches (``literalinclude`` with
  ``:pyobject:``) and ``reference.py`` carries ``# eq.`` comments;
- no file of ``lab/`` or ``tests/`` over 600 lines; notebook cells stored as lists of lines.

Where a chapter does not meet a check yet, ``tests/house_gaps.py`` lists it; the test fails on a
gap that is not listed and on a listed gap that is gone, so the list only shrinks. Run this file
as a script to print the current gaps.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.tooling import apigen
from lab.tooling.chapters import chapters

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from house_gaps import GAPS  # noqa: E402

SLUGS = tuple(chapters(ROOT))
HOUSE_FILES = ("__init__.py", "reference.py", "fast.py", "experiments.py", "figures.py")
MAX_LINES = 600
#: suffixes that mark a fast path named apart from its reference (one name per method)
SPLIT_SUFFIXES = ("_batched", "_torch", "_batch", "_ref", "_reference")
CACHE_DECORATORS = {"cache", "lru_cache", "memo", "cached_property"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _imports(path: Path, slug: str) -> list[tuple[str, list[str], int]]:
    """(sibling module, names, level) for every import of a sibling of ``lab/<slug>``."""
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names = [a.name for a in node.names]
            if node.level == 1:
                if mod:
                    out.append((mod.split(".")[0], names, 1))
                else:
                    out += [(n, [], 1) for n in names]
            elif node.level == 0 and mod.startswith(f"lab.{slug}."):
                out.append((mod.split(".")[2], names, 0))
            elif node.level == 0 and mod == f"lab.{slug}":
                out += [(n, [], 0) for n in names]
            elif node.level >= 2:
                out.append(("..", names, node.level))
    return out


def house_findings() -> dict[str, set[str]]:
    """Every gap of every check, as ``{check: {item, ...}}``."""
    found: dict[str, set[str]] = {}

    def add(check: str, item: str) -> None:
        found.setdefault(check, set()).add(item)

    for slug in SLUGS:
        folder = ROOT / "lab" / slug
        mods = {p.stem: p for p in folder.glob("*.py")}
        # one list of names, the pairs
        pairs = apigen.chapter_pairs(slug, ROOT)
        if not pairs:
            add("pairs", slug)
        test_src = (ROOT / "tests" / f"test_{slug}.py").read_text()
        for ref in pairs:
            if not re.search(rf"def test_pair_{re.escape(ref)}\b", test_src):
                add("pair-tested", f"{slug}.{ref}")
        for stem in ("reference", "fast"):
            m = apigen.read_module(folder / f"{stem}.py")
            for n in m.names if m else []:
                if n.endswith(SPLIT_SUFFIXES):
                    add("split-names", f"{slug}.{stem}.{n}")
        # circles and imports
        graph: dict[str, set[str]] = {}
        for stem, path in mods.items():
            for mod, names, _level in _imports(path, slug):
                if mod == "..":
                    add("absolute-across-packages", f"{slug}/{path.name}")
                    continue
                if mod in mods and mod != stem:
                    graph.setdefault(stem, set()).add(mod)
                    if any(n.startswith("_") and not n.startswith("__") for n in names):
                        add("private-imports", f"{slug}/{path.name}<-{mod}")
        for a, outs in graph.items():
            for b in outs:
                if a in graph.get(b, set()) and a < b:
                    add("circles", f"{slug}:{a}<->{b}")
        # pure figures
        if "figures" in mods:
            fig = _tree(mods["figures"])
            for node in ast.walk(fig):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for d in node.decorator_list:
                        d = d.func if isinstance(d, ast.Call) else d
                        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")
                        if name in CACHE_DECORATORS:
                            add("pure-figures", f"{slug}:{node.name}@{name}")
                if isinstance(node, ast.Global):
                    add("pure-figures", f"{slug}:global {','.join(node.names)}")
            for node in fig.body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    value = node.value
                    empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
                        getattr(value, "keys", None) or getattr(value, "elts", None)
                    )
                    call = isinstance(value, ast.Call) and getattr(
                        value.func, "id", getattr(value.func, "attr", "")
                    ) in {"dict", "OrderedDict", "defaultdict", "list"}
                    if empty or call:
                        t = node.targets[0] if isinstance(node, ast.Assign) else node.target
                        add("pure-figures", f"{slug}:{getattr(t, 'id', '?')}")
        # the kernel on the page
        index = (ROOT / "book" / slug / "index.md").read_text()
        if not re.search(
            rf"```{{literalinclude}}\s+\.\./\.\./lab/{slug}/reference\.py\s*\n:pyobject:", index
        ):
            add("kernel-on-page", slug)
        if "# eq." not in (folder / "reference.py").read_text():
            add("eq-comments", slug)
    # file lengths
    for path in sorted((ROOT / "lab").rglob("*.py")) + sorted((ROOT / "tests").glob("*.py")):
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            add("file-length", str(path.relative_to(ROOT)))
    # notebook sources as lists of lines (Jupyter Book 2's upgrader needs them)
    for nb in sorted((ROOT / "book").rglob("*.ipynb")):
        if "_build" in nb.parts:
            continue
        cells = json.loads(nb.read_text())["cells"]
        if any(isinstance(c["source"], str) and c["source"] for c in cells):
            add("notebook-lines", str(nb.relative_to(ROOT)))
    return found


FINDINGS = house_findings()
CHECKS = (
    "pairs",
    "pair-tested",
    "split-names",
    "absolute-across-packages",
    "private-imports",
    "circles",
    "pure-figures",
    "kernel-on-page",
    "eq-comments",
    "file-length",
    "notebook-lines",
)


@pytest.mark.parametrize("check", CHECKS)
def test_house_check_has_no_new_gap(check):
    new = FINDINGS.get(check, set()) - set(GAPS.get(check, ()))
    assert not new, f"house check {check!r}: new gaps {sorted(new)} (CONTRIBUTING.md, 'lab/<slug>')"


@pytest.mark.parametrize("check", CHECKS)
def test_house_gap_list_only_shrinks(check):
    gone = set(GAPS.get(check, ())) - FINDINGS.get(check, set())
    assert not gone, f"tests/house_gaps.py lists {sorted(gone)} under {check!r}: fixed, delete them"


def test_gap_checks_are_known():
    assert set(GAPS) <= {*CHECKS, "apigen", "attach-stub"}, sorted(set(GAPS) - set(CHECKS))


@pytest.mark.parametrize("slug", SLUGS)
def test_chapter_has_the_house_shape(slug):
    folder = ROOT / "lab" / slug
    for name in HOUSE_FILES:
        assert (folder / name).is_file(), f"lab/{slug}/{name} is missing (the house shape)"
    init = (folder / "__init__.py").read_text()
    assert "lazy_loader" in init, f"lab/{slug}/__init__.py must re-export its names lazily"
    assert "Deviations" in init, f"lab/{slug}/__init__.py needs a 'Deviations from the paper' list"


def test_stubs_and_api_page_are_generated_from_all():
    """``python -m lab.tooling.apigen --check``: every module has a literal ``__all__``, no name
    is exported twice, and ``__init__.pyi`` / ``book/api.md`` match what they generate."""
    out = subprocess.run(
        [sys.executable, "-m", "lab.tooling.apigen", "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    drift = [line for line in out.stderr.splitlines() if line.strip()]
    allowed = {f"problem: {p}" for p in GAPS.get("apigen", ())}
    unexpected = [line for line in drift if line not in allowed]
    assert not unexpected, "\n".join(unexpected) + "\nrun: python -m lab.tooling.apigen"


@pytest.mark.parametrize("slug", SLUGS)
def test_stub_lists_what_the_package_exports(slug):
    """The package's lazy names are the stub's (``lazy_loader.attach_stub``)."""
    init = (ROOT / "lab" / slug / "__init__.py").read_text()
    if slug in GAPS.get("attach-stub", ()):
        assert "attach_stub" not in init, f"lab.{slug} uses attach_stub: remove it from the gaps"
        return
    assert "attach_stub(__name__, __file__)" in init, f"lab/{slug}/__init__.py: use attach_stub"


def test_importing_a_chapter_is_cheap():
    """``import lab.<slug>`` loads neither torch nor the chapter's submodules."""
    code = (
        "import sys\n"
        f"for slug in {list(SLUGS)!r}:\n"
        "    __import__('lab.' + slug)\n"
        "heavy = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "subs = sorted(m for m in sys.modules if m.count('.') >= 2 and m.split('.')[1] in "
        f"{list(SLUGS)!r} and m.split('.')[2] != 'figures')\n"
        "print(len(heavy), subs)\n"
        "assert not heavy, 'torch imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:] + out.stdout


if __name__ == "__main__":
    print("GAPS = {")
    for check in CHECKS:
        items = sorted(FINDINGS.get(check, set()))
        if items:
            print(f"    {check!r}: (")
            for i in items:
                print(f"        {i!r},")
            print("    ),")
    print("}")


_SPANS = re.compile(r"``.*?``|:math:`[^`]*`|`[^`]*`", re.S)
_SUBSTITUTION = re.compile(r"(?<![|\w])\|(?=\S)[^|\n]*(?<=\S)\|(?![|\w])")


def test_no_docstring_reads_as_an_rst_substitution():
    """A function's or class's docstring goes through autodoc (RST) onto book/api.md, where
    ``|x|`` outside literals and math is a substitution reference: the book build fails on an
    undefined one (it did twice: ``|MILP - prototype|``, ``|γ_i|``). Write ``|x|`` as a literal
    (double backquotes) or in :math:."""
    found = []
    for path in sorted((ROOT / "lab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node, clean=False) or ""
                for m in _SUBSTITUTION.finditer(_SPANS.sub("", doc)):
                    found.append(f"{path.relative_to(ROOT)}:{node.name}: {m.group(0)}")
    assert not found, "write these as ``...`` or :math:`...`:\n" + "\n".join(found)
