"""The project's public addresses, and the Colab install cell of every book notebook.

One place holds the project's public URL: ``repository.url`` (and ``repository.branch``) in
``_config.yml``. Everything else reads it from there (the book's launch buttons, through
Jupyter Book) or is generated from it here:

* :func:`cell_source`: the first code cell of every notebook in ``_toc.yml``. On Colab (the
  module ``google.colab`` is loaded) it installs the package from the repository at the branch
  the book is built from, with its ``[book]`` extra (every package a notebook imports, and
  otter for the exercise pages' self-checks; not the ``[dev]`` tools) and keeping Colab's own
  torch; anywhere else it does nothing. The cell is tagged ``remove-cell`` (the rendered book does not show
  it; myst-nb still runs it, as a no-op) and ``optlab-colab`` (how this module finds it).
* :func:`pages_url`: where GitHub Pages publishes the book (``.github/workflows/book.yml``).

``python -m lab.tooling.colab`` (re)writes the cell into every toc notebook, and
``binder/requirements.txt`` (:func:`binder_requirements`; idempotent: a file already current is
left untouched); ``--check`` only reports the
notebooks that are out of date and exits 1 if there are any. ``python -m lab exercises``
adds the same cell to the generated student pages.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from lab.tooling.paths import ROOT

__all__ = [
    "EXTRA",
    "TAGS",
    "TORCH_CPU_INDEX",
    "apply",
    "binder_requirements",
    "cell_source",
    "colab_cell",
    "github_repo",
    "install_requirement",
    "main",
    "pages_url",
    "repository",
    "toc_notebooks",
]

MARKER_TAG = "optlab-colab"
# remove-cell: installation machinery, not part of the lesson; the book hides the whole cell
# (no "show code" toggle on every page) but still executes it, where it is a no-op.
TAGS = ("remove-cell", MARKER_TAG)
CELL_ID = "optlab-colab"
EXTRA = "book"  # pyproject's extra for readers: what the notebooks import (binder/ uses it too)
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9][\w.-]*)/([\w.-]+?)/?$")


def _config(root: Path) -> dict:
    import yaml

    return yaml.safe_load((Path(root) / "_config.yml").read_text())


def repository(root: Path = ROOT) -> tuple[str, str]:
    """``(url, branch)`` from ``_config.yml``'s ``repository`` section.

    Raises
    ------
    ValueError
        If the URL is not ``https://github.com/<owner>/<name>`` or the branch is missing.
    """
    repo = _config(root).get("repository") or {}
    url, branch = str(repo.get("url") or ""), str(repo.get("branch") or "")
    if not _GITHUB.match(url):
        raise ValueError(
            f"_config.yml repository.url must be https://github.com/<owner>/<name>, got {url!r}"
        )
    if not branch:
        raise ValueError("_config.yml repository.branch is missing (the launch buttons need it)")
    return url.rstrip("/"), branch


def github_repo(url: str) -> tuple[str, str]:
    """``(owner, name)`` of a ``https://github.com/<owner>/<name>`` URL."""
    m = _GITHUB.match(url)
    if not m:
        raise ValueError(f"not a GitHub repository URL: {url!r}")
    return m.group(1), m.group(2)


def pages_url(url: str) -> str:
    """The GitHub Pages address of the repository's book: ``https://<owner>.github.io/<name>/``."""
    owner, name = github_repo(url)
    return f"https://{owner.lower()}.github.io/{name}/"


def _distribution(root: Path) -> str:
    text = (Path(root) / "pyproject.toml").read_text()
    m = re.search(r'^\[project\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S)
    if not m:
        raise ValueError("pyproject.toml has no [project] name")
    return m.group(1)


def install_requirement(root: Path = ROOT) -> str:
    """The pip requirement the Colab cell installs: ``<dist>[book] @ git+<url>@<branch>``."""
    url, branch = repository(root)
    return f"{_distribution(root)}[{EXTRA}] @ git+{url}@{branch}"


def cell_source(root: Path = ROOT) -> str:
    """The source of the Colab cell (ruff-formatted, so ``ruff format`` leaves it alone)."""
    dist = _distribution(root)
    req = install_requirement(root)
    return (
        "# Colab only: install this book's package `lab` with what every notebook imports\n"
        "# (its [book] extra, keeping Colab's torch); anywhere else this cell does nothing.\n"
        "# Generated from _config.yml by `python -m lab.tooling.colab`: do not edit by hand.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import importlib\n"
        "    import subprocess\n"
        "    from importlib import metadata\n"
        "\n"
        "    try:\n"
        f'        metadata.version("{dist}")\n'
        "    except metadata.PackageNotFoundError:\n"
        "        torch = f\"torch=={metadata.version('torch')}\"\n"
        f'        package = "{req}"\n'
        '        pip = [sys.executable, "-m", "pip", "install", "--quiet", package, torch]\n'
        "        subprocess.run(pip, check=True)\n"
        "        importlib.invalidate_caches()"
    )


def colab_cell(root: Path = ROOT) -> dict[str, Any]:
    """The Colab cell as an nbformat 4 code cell dict (without an id)."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": list(TAGS)},
        "outputs": [],
        "source": cell_source(root),
    }


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _is_colab_cell(cell: dict) -> bool:
    return MARKER_TAG in (cell.get("metadata") or {}).get("tags", [])


def apply(nb: dict, cell: dict) -> bool:
    """Make ``cell`` the first code cell of the notebook dict ``nb`` (in place).

    Any earlier copy (a cell tagged ``optlab-colab``) is replaced. Returns ``False`` when the
    notebook already had exactly this cell as its first code cell (nothing changed).
    """
    cells = nb["cells"]
    first_code = next((c for c in cells if c.get("cell_type") == "code"), None)
    olds = [c for c in cells if _is_colab_cell(c)]
    if (
        len(olds) == 1
        and first_code is olds[0]
        and _source(first_code) == cell["source"]
        and first_code.get("metadata") == cell["metadata"]
    ):
        return False
    keep_id = next((c["id"] for c in olds if c.get("id")), None)
    cells[:] = [c for c in cells if not _is_colab_cell(c)]
    new = json.loads(json.dumps(cell))
    if nb.get("nbformat", 4) > 4 or nb.get("nbformat_minor", 0) >= 5:
        ids = {c.get("id") for c in cells}
        new_id = keep_id or CELL_ID
        while new_id in ids:
            new_id += "-0"
        new = {"id": new_id, **new}
    at = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
    cells.insert(at, new)
    return True


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_BINDER_HEAD = """\
# Binder (mybinder.org, repo2docker): generated by `python -m lab.tooling.colab` from
# pyproject.toml (the dependencies and the [book] extra) and constraints.txt (their versions):
# do not edit by hand. tests/test_site.py checks it and builds a venv from it.
#
# repo2docker installs this file before it copies the repository, and caches that layer
# between commits, only while no line refers to a local file (no `.`, no `-c ../...`): so the
# versions are written here, and binder/postBuild installs the package itself (--no-deps).

# torch without CUDA: PyTorch's CPU index (PyPI's Linux wheel pulls several GB of CUDA).
--extra-index-url {index}
"""


def binder_requirements(root: Path = ROOT) -> str:
    """The text of ``binder/requirements.txt``: the package's dependencies and its ``[book]``
    extra, each pinned to the lock's version (torch to its CPU build), no local references.

    Raises
    ------
    TypeError
        If ``root`` is not a path.
    ValueError
        If a dependency has no pin in ``constraints.txt``.
    """
    import tomllib
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    if not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path (got {root!r})")
    root = Path(root)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"][EXTRA]]
    pins = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[canonicalize_name(name.strip())] = version.strip()
    lines = []
    for spec in wanted:
        req = Requirement(spec)
        key = canonicalize_name(req.name)
        if key not in pins:
            raise ValueError(f"constraints.txt pins no version of {req.name} (pyproject.toml)")
        version = pins[key] + ("+cpu" if key == "torch" and "+" not in pins[key] else "")
        marker = f"; {req.marker}" if req.marker else ""
        lines.append(f"{req.name}=={version}{marker}")
    body = "\n".join(sorted(lines, key=str.lower))
    return _BINDER_HEAD.format(index=TORCH_CPU_INDEX) + f"\n# optlab[{EXTRA}]\n{body}\n"


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """Every ``.ipynb`` that ``_toc.yml`` lists (the student pages too), in toc order."""
    from lab.tooling.chapters import toc_notebooks as listed

    return listed(Path(root), executed=False)


def write_all(root: Path = ROOT, *, check: bool = False) -> list[Path]:
    """Bring every toc notebook's Colab cell and ``binder/requirements.txt`` up to date; return
    the files that were (with ``check``: would be) changed."""
    import nbformat

    cell = colab_cell(root)
    changed = []
    binder = Path(root) / "binder" / "requirements.txt"
    text = binder_requirements(root)
    if not binder.is_file() or binder.read_text() != text:
        changed.append(binder)
        if not check:
            binder.write_text(text)
    for path in toc_notebooks(root):
        nb = json.loads(path.read_text())
        if apply(nb, cell):
            changed.append(path)
            if not check:
                nbformat.write(nbformat.from_dict(nb), path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.tooling.colab",
        description="Write the Colab install cell (generated from _config.yml) into every "
        "notebook of _toc.yml.",
    )
    parser.add_argument("--check", action="store_true", help="report stale notebooks, exit 1")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    changed = write_all(args.root, check=args.check)
    for path in changed:
        rel = path.relative_to(args.root)
        print(f"{'stale' if args.check else 'updated'}: {rel}")
    total = len(toc_notebooks(args.root))
    stale = sum(path.suffix == ".ipynb" for path in changed)
    print(f"colab cell: {total - stale} of {total} notebooks current")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
