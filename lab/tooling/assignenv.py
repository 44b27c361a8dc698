"""The grading environment of every assignment's autograder zip (otter's container, Gradescope).

``otter assign`` writes an ``environment.yml`` into the autograder zip; otter's container and
Gradescope build the grading image from it (``setup.sh``). By itself it holds only Python and
otter-grader, so every test would fail on ``import lab``. Each solution master's
``# ASSIGNMENT CONFIG`` therefore carries the lines :func:`config_lines` returns:

* ``python_version``: the Python the project tests (``PYTHON_VERSION`` of the CI workflow);
* ``requirements``: PyTorch's CPU index, torch pinned to the lock's CPU build, and this
  package with the ``book`` extra from **the wheel inside the zip**
  (``optlab[book] @ file:///autograder/source/optlab-<version>-py3-none-any.whl``: otter's
  container and Gradescope unpack the zip into ``/autograder/source``). :func:`bundle` adds the
  wheel of the checkout that built the zip (``lab.tooling.grading.assign`` calls it), so the
  grader runs the same ``lab`` as the instructor, offline, and no package index or unpublished
  tag can substitute another.

``python -m lab.tooling.assignenv`` rewrites the config cell of every master (idempotent;
``--check`` reports stale ones and exits 1); ``tests/test_grading_zip.py`` checks that they are
current and builds the environment of a zip from the zip's own files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from lab.tooling.paths import ROOT

__all__ = [
    "CPU_INDEX",
    "ZIP_SOURCE",
    "build_wheel",
    "bundle",
    "config_lines",
    "main",
    "package_requirement",
    "requirements",
    "sync",
    "tested_python",
]

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: where otter's container and Gradescope unpack the autograder zip
ZIP_SOURCE = "/autograder/source"
_KEYS = ("python_version", "requirements")


def _root(root) -> Path:
    if root is None:
        return ROOT
    if not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path (got {root!r})")
    return Path(root)


def tested_python(root: Path | None = None) -> str:
    """``PYTHON_VERSION`` of ``.github/workflows/ci.yml`` (e.g. ``"3.11"``)."""
    text = (_root(root) / ".github" / "workflows" / "ci.yml").read_text()
    m = re.search(r"^\s*PYTHON_VERSION:\s*\"?([0-9.]+)\"?\s*$", text, re.M)
    if not m:
        raise ValueError("ci.yml sets no PYTHON_VERSION")
    return m.group(1)


def _version(root: Path) -> str:
    text = (root / "pyproject.toml").read_text()
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not m:
        raise ValueError("pyproject.toml has no [project] version")
    return m.group(1)


def wheel_name(root: Path | None = None) -> str:
    """``optlab-<version>-py3-none-any.whl`` (the package is pure Python)."""
    return f"optlab-{_version(_root(root))}-py3-none-any.whl"


def package_requirement(root: Path | None = None) -> str:
    """``optlab[book] @ file:///autograder/source/<wheel>``: the wheel :func:`bundle` puts
    into the zip."""
    return f"optlab[book] @ file://{ZIP_SOURCE}/{wheel_name(root)}"


def _source_files(root: Path) -> list[Path]:
    files = [root / n for n in ("pyproject.toml", "README.md", "LICENSE")]
    files += sorted(
        p
        for p in (root / "lab").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    return files


def build_wheel(dest: str | Path | None = None, *, root: Path | None = None) -> Path:
    """The wheel of the checkout at ``root`` (its ``lab/``, ``pyproject.toml``, README and
    LICENSE copied aside: no ``.venv`` or ``_build`` in it), built once per content: it is kept
    in ``dest`` (default ``_build/wheel/``) under the SHA-256 of those files.

    Raises
    ------
    TypeError
        If ``dest`` is not a path.
    RuntimeError
        If pip cannot build it (its output is quoted).
    """
    import hashlib
    import shutil
    import subprocess
    import tempfile

    root = _root(root)
    if dest is not None and not isinstance(dest, (str, Path)):
        raise TypeError(f"dest must be a path (got {dest!r})")
    digest = hashlib.sha256()
    for f in _source_files(root):
        digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    out = Path(dest) if dest is not None else root / "_build" / "wheel"
    out = out / digest.hexdigest()[:16]
    wheel = out / wheel_name(root)
    if wheel.is_file():
        return wheel
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        for f in _source_files(root):
            target = src / f.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
            + ["-w", str(Path(tmp) / "dist"), str(src)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        built = sorted((Path(tmp) / "dist").glob("optlab-*.whl"))
        if done.returncode != 0 or len(built) != 1:
            raise RuntimeError(f"pip wheel failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], wheel)
    return wheel


def bundle(autograder: str | Path, *, root: Path | None = None) -> Path:
    """Add the checkout's wheel (:func:`build_wheel`) to the autograder zip, where its
    ``environment.yml`` installs it from (:func:`package_requirement`); return the wheel.

    Raises
    ------
    ValueError
        If ``autograder`` is not a zip whose ``environment.yml`` installs that wheel.
    """
    import zipfile

    if not isinstance(autograder, (str, Path)):
        raise TypeError(f"autograder must be a path (got {autograder!r})")
    autograder = Path(autograder)
    if not zipfile.is_zipfile(autograder):
        raise ValueError(f"autograder {autograder} is not a zip file")
    wheel = build_wheel(root=root)
    with zipfile.ZipFile(autograder, "a", compression=zipfile.ZIP_DEFLATED) as z:
        env = z.read("environment.yml").decode()
        if package_requirement(root) not in env:
            raise ValueError(
                f"autograder {autograder}: its environment.yml does not install "
                f"{package_requirement(root)} (python -m lab.tooling.assignenv)"
            )
        if wheel.name not in z.namelist():
            z.write(wheel, wheel.name)
    return wheel


def requirements(root: Path | None = None) -> list[str]:
    """The pip lines of the grading environment (after otter's own)."""
    root = _root(root)
    lock = (root / "constraints.txt").read_text()
    m = re.search(r"^torch==([^\s+]+)", lock, re.M)
    if not m:
        raise ValueError("constraints.txt pins no torch")
    return [f"--extra-index-url {CPU_INDEX}", f"torch=={m.group(1)}+cpu", package_requirement(root)]


def config_lines(root: Path | None = None) -> list[str]:
    """The YAML lines each ``# ASSIGNMENT CONFIG`` ends with."""
    lines = [f'python_version: "{tested_python(root)}"', "requirements:"]
    return lines + [f'  - "{r}"' for r in requirements(root)]


def _strip_keys(lines: list[str]) -> list[str]:
    out, skipping = [], False
    for line in lines:
        key = line.split(":", 1)[0].strip()
        if not line.startswith((" ", "-")):
            skipping = key in _KEYS
        if not skipping:
            out.append(line)
    return out


def sync(path: str | Path, *, root: Path | None = None, check: bool = False) -> bool:
    """Make the config cell of the solution master ``path`` end with :func:`config_lines`;
    return whether it changed (with ``check``: would change; the file is left alone).

    Raises
    ------
    TypeError
        If ``path`` is not a path.
    ValueError
        If the notebook has no raw ``# ASSIGNMENT CONFIG`` cell.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path (got {path!r})")
    path = Path(path)
    nb = json.loads(path.read_text())
    cell = next(
        (
            c
            for c in nb["cells"]
            if c["cell_type"] == "raw" and "".join(c["source"]).startswith("# ASSIGNMENT CONFIG")
        ),
        None,
    )
    if cell is None:
        raise ValueError(f"path {path} has no raw '# ASSIGNMENT CONFIG' cell")
    old = "".join(cell["source"])
    lines = _strip_keys(old.rstrip("\n").splitlines()) + config_lines(root)
    new = "\n".join(lines)
    if new == old:
        return False
    if not check:
        cell["source"] = [ln + "\n" for ln in lines[:-1]] + [lines[-1]]
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.tooling.assignenv",
        description="Write the grading environment into every assignment's config cell.",
    )
    parser.add_argument("--check", action="store_true", help="report stale masters, exit 1")
    args = parser.parse_args(argv)
    stale = [
        p for p in sorted((ROOT / "book").glob("*/assignment.ipynb")) if sync(p, check=args.check)
    ]
    for p in stale:
        print(f"{'stale' if args.check else 'updated'}: {p.relative_to(ROOT)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
