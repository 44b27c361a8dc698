"""What ``lab grade`` writes for a class: ``grades.csv``, ``feedback/``, ``instructor/``.

* ``grades.csv`` is rewritten after every graded submission, atomically (a temporary file in the
  same folder, then ``os.replace``): an interrupted run leaves a complete file of the
  submissions graded so far, which ``lab grade --resume`` reads back (its ``sha256`` column says
  which file each row graded). Text cells that a spreadsheet would read as a formula (starting
  with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) are written with a leading ``'``.
  A run with ``--unsandboxed`` starts the file with a ``# WARNING`` line. The cell of a
  question the instructor reads (an explain question) is ``pending``; the ``pending`` column
  holds those points, which ``total`` and ``max`` (the autograded points) leave out.
* ``feedback/<name>.txt`` (for the student) and ``instructor/<name>.txt``: one pair per
  submission. Names are made safe (letters, digits, ``-_.``) and unique: ``alice smith.ipynb``
  and ``alice_smith.ipynb`` get ``alice_smith.txt`` and ``alice_smith-2.txt`` (the ``feedback``
  column of ``grades.csv`` names each one; the collision is listed in ``instructor/_run.txt``).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

__all__ = ["escape_cell", "feedback_names", "read_rows", "write_atomic", "write_csv"]

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet evaluates: a leading ``'`` before ``= + - @``
    (and tab, carriage return) unless the cell is a number."""
    text = str(value)
    if text.startswith(_FORMULA):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def _safe(name: str) -> str:
    stem = name[: -len(".ipynb")] if name.lower().endswith(".ipynb") else name
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem).strip(".") or "submission"


def feedback_names(submissions: list[str]) -> tuple[dict[str, str], list[str]]:
    """``({submission: feedback file name}, [collision notes])``: one file per submission,
    unique also where the file system ignores case.

    Raises
    ------
    TypeError
        If ``submissions`` is not a list of strings.
    """
    if not isinstance(submissions, list) or not all(isinstance(s, str) for s in submissions):
        raise TypeError("submissions must be a list of file names")
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    notes: list[str] = []
    for sub in sorted(submissions):
        base = _safe(sub)
        candidate, n = base, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{base}-{n}"
        if n > 1:
            notes.append(
                f"{sub!r} and {taken[base.lower()]!r} both make {base}.txt: "
                f"{sub!r} gets {candidate}.txt"
            )
        taken[candidate.lower()] = sub
        names[sub] = f"{candidate}.txt"
    return names, notes


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(path: Path, rows: list[dict], questions: list[str], warning: str = "") -> None:
    """Write ``grades.csv`` atomically: one row per dict (keys: submission, the questions, total,
    max, pending, error, feedback, sha256), text cells escaped."""
    buf = io.StringIO()
    if warning:
        buf.write(f"# WARNING: {warning}\n")
    fields = ["submission", *questions, "total", "max", "pending", "error", "feedback", "sha256"]
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: r["submission"]):
        writer.writerow({k: escape_cell(v) for k, v in row.items()})
    write_atomic(path, buf.getvalue())


def read_rows(path: Path) -> dict[str, dict]:
    """The rows of an earlier ``grades.csv`` (for ``--resume``), by submission; {} if none."""
    path = Path(path)
    if not path.is_file():
        return {}
    lines = [ln for ln in path.read_text().splitlines(keepends=True) if not ln.startswith("# ")]
    rows = {}
    for row in csv.DictReader(lines):
        name = row.get("submission", "")
        name = name[1:] if name.startswith("'") and name[1:].startswith(_FORMULA) else name
        rows[name] = row
    return rows
