"""``lab grade`` over a folder: a run that no submission can stop.

:func:`grade_class` lists **every** entry of the class folder: each ``.ipynb`` file (any case of
the suffix, dot-files included) is graded, everything else is listed as skipped with a reason
(in ``grades.csv`` and ``instructor/_run.txt``). Submissions are graded ``jobs`` at a time, each
in its own sandbox (:mod:`lab.tooling.classroom`); ``grades.csv`` and the feedback files are
rewritten after each one. A file that vanishes or cannot be read becomes a row with the reason.

The autograder zip and the solution are opened read-only and checksummed (SHA-256) before and
after the run; a change is written into ``instructor/_run.txt`` and printed. ``SIGINT`` and
``SIGTERM`` stop the run cleanly: the sandboxes are killed, nothing is left behind, and
``grades.csv`` holds what was graded (``resume=True`` goes on from there). If ``lab grade`` is
killed outright (``SIGKILL``), every sandbox dies with it (``--die-with-parent``); the sandboxes
keep nothing on disk.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from lab.tooling import gradereport, sandbox

__all__ = ["cli", "grade_class", "list_folder"]

_OWN = {"grades.csv", "feedback", "instructor"}


def list_folder(folder: Path, out: Path) -> tuple[list[Path], dict[str, str]]:
    """``(notebooks to grade, {skipped entry: reason})`` of the class folder."""
    graded, skipped = [], {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        name = entry.name
        if out.resolve() == folder.resolve() and (name in _OWN or name.startswith(".grades.csv.")):
            continue  # lab grade's own output
        if entry.is_symlink():
            skipped[name] = "a symbolic link (not followed; copy the file in)"
        elif entry.is_dir():
            skipped[name] = "a folder (submissions are .ipynb files in the folder itself)"
        elif not entry.is_file():
            skipped[name] = "not a regular file"
        elif name.lower().endswith(".ipynb"):
            graded.append(entry)
        elif ".ipynb" in name.lower():
            skipped[name] = "not a .ipynb file (renamed by a browser? rename it to .ipynb)"
        else:
            skipped[name] = "not a notebook (.ipynb)"
    return graded, skipped


def _checksums(paths: list[Path]) -> dict[str, str]:
    from lab.tooling.classroom import _sha256

    out = {}
    for p in paths:
        try:
            out[str(p)] = _sha256(p)
        except OSError as err:
            out[str(p)] = f"unreadable ({type(err).__name__})"
    return out


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event):
    """SIGINT/SIGTERM set ``stop`` and raise KeyboardInterrupt (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        stop.set()
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def grade_class(
    autograder: str | Path,
    folder: str | Path,
    *,
    out: str | Path | None = None,
    timeout: float = 300,
    memory_mb: float = 8192,
    max_output_mb: float = 5.0,
    jobs: int = 1,
    echo: bool = True,
    solution: str | Path | None = None,
    unsandboxed: bool = False,
    resume: bool = False,
    forbidden: dict[str, list[str]] | None = None,
    forbidden_share: float = 0.0,
    rubrics: str | Path | None = None,
) -> tuple[Path, list]:
    """Grade every notebook of ``folder`` and write the results into ``out`` (default:
    ``folder``). ``solution``, ``unsandboxed``, ``forbidden``, ``forbidden_share`` and
    ``rubrics`` go to :func:`lab.tooling.classroom.prepare`; ``resume`` keeps the rows of an earlier
    ``grades.csv`` in ``out`` whose file is unchanged. Returns ``(path of grades.csv, outcomes)``.

    Raises
    ------
    TypeError, ValueError
        If ``folder`` is not a folder holding notebooks, ``jobs`` is not a positive integer, a
        limit is out of range, or the solution fails its own tests.
    RuntimeError
        If the sandbox cannot start and ``unsandboxed`` is false.
    """
    from lab.tooling import classroom as cr

    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (got {folder!r})")
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder must be an existing folder (got {folder})")
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"jobs must be an integer (got {jobs!r})")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1 (got {jobs})")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (got {out!r})")
    out = Path(folder if out is None else out)
    limits = cr._limits(
        cr._check_number("timeout", timeout, low=1),
        cr._check_number("memory_mb", memory_mb, low=0),
        cr._check_number("max_output_mb", max_output_mb, low=0),
    )
    submissions, skipped = list_folder(folder, out)
    if not submissions:
        raise ValueError(f"folder {folder} holds no .ipynb submissions (skipped: {skipped})")
    autograder = cr._check_file("autograder", autograder, ".zip")
    start = time.monotonic()
    assignment = cr.prepare(
        autograder,
        solution,
        timeout=timeout,
        unsandboxed=unsandboxed,
        forbidden=forbidden,
        forbidden_share=forbidden_share,
        rubrics=rubrics,
    )
    inputs = [assignment.autograder, assignment.solution]
    before = _checksums(inputs)
    warning = cr.UNSANDBOXED if unsandboxed else ""
    if unsandboxed and echo:
        print(f"WARNING: {warning}")
    earlier = gradereport.read_rows(out / "grades.csv") if resume else {}
    outcomes: dict[str, cr.Outcome] = {}
    todo = []
    for nb in submissions:
        row = earlier.get(nb.name)
        if row and row.get("sha256") and row["sha256"] == _file_sha(nb):
            outcomes[nb.name] = _from_row(row, assignment, nb)
        else:
            todo.append(nb)
    names, collisions = gradereport.feedback_names([p.name for p in submissions])
    stop = threading.Event()
    lock = threading.Lock()

    def done(outcome) -> None:
        with lock:
            outcomes[outcome.submission] = outcome
            _write(out, outcomes, skipped, warning, assignment.manual)

    from lab.core.progress import progress

    interrupted = False
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        with _stop_on_signals(stop):
            futures = [pool.submit(cr._grade, assignment, nb, limits, stop) for nb in todo]
            for future in progress(as_completed(futures), total=len(futures), desc="grading"):
                done(future.result())
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
    finally:
        stop.set() if interrupted else None
        pool.shutdown(wait=True, cancel_futures=True)
    after = _checksums(inputs)
    changed = [p for p in before if before[p] != after[p]]
    path = _write(out, outcomes, skipped, warning, assignment.manual)
    report = _run_report(
        assignment,
        before,
        changed,
        skipped,
        collisions,
        names,
        len(todo),
        time.monotonic() - start,
        warning,
        interrupted,
    )
    gradereport.write_atomic(out / "instructor" / "_run.txt", report)
    if echo:
        for name in sorted(outcomes):
            o = outcomes[name]
            wait = f" (+{sum(o.pending.values()):g} pending)" if o.pending else ""
            print(f"{o.submission}: {o.score:g} / {o.max:g}{wait} ({o.seconds:g} s) {o.error[:90]}")
        for name, why in skipped.items():
            print(f"skipped {name}: {why}")
        for note in collisions:
            print(f"feedback name collision: {note}")
        for p in changed:
            print(f"WARNING: {p} changed during the run (checksum before/after differ)")
        print(f"wrote {path} ({time.monotonic() - start:.0f} s)")
    if interrupted:
        raise KeyboardInterrupt("lab grade was interrupted; grades.csv holds what was graded")
    return path, [outcomes[n] for n in sorted(outcomes)]


def _file_sha(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""


def _from_row(row: dict, assignment, notebook: Path):
    """The outcome of an earlier run's row; the explain answers are read again from the file."""
    import json

    from lab.tooling import grademanual
    from lab.tooling.classroom import Outcome

    fixed = {"submission", "total", "max", "pending", "error", "feedback", "sha256"}
    qs = {
        k: (float(v or 0), 0.0)
        for k, v in row.items()
        if k and k not in fixed and k not in assignment.manual and v != "pending"
    }
    o = Outcome(row["submission"], float(row["total"] or 0), float(row["max"] or 0), qs)
    o.error, o.sha256 = row.get("error", "").lstrip("'"), row.get("sha256", "")
    o.public = "(graded by an earlier run of lab grade --resume: see its feedback file)"
    o.pending = {q: float(m["points"]) for q, m in assignment.manual.items()}
    try:
        o.manual = grademanual.answers(json.loads(notebook.read_bytes()), assignment.manual)
    except Exception:  # noqa: BLE001 - unreadable now: no answer to show
        o.manual = dict.fromkeys(assignment.manual)
    return o


def _write(out: Path, outcomes: dict, skipped: dict, warning: str, manual: dict) -> Path:
    from lab.tooling.classroom import write_results

    return write_results(
        list(outcomes.values()), out, warning=warning, skipped=skipped, manual=manual
    )


def _run_report(
    a, before, changed, skipped, collisions, names, graded, seconds, warning, stopped
) -> str:
    ok, how = sandbox.check_sandbox()
    lines = [
        f"autograder: {a.autograder}",
        f"solution:   {a.solution}",
        f"sandbox:    {'NONE (--unsandboxed)' if a.unsandboxed else how if ok else why_not(how)}",
        f"graded {graded} submissions in {seconds:.0f} s (reference run {a.seconds:g} s)",
    ]
    lines += [f"WARNING: {warning}"] if warning else []
    lines += list(a.notes)
    lines += (
        ["INTERRUPTED: grades.csv holds the submissions graded before the signal"]
        if stopped
        else []
    )
    lines += [f"checksum {p}: {h}" for p, h in before.items()]
    lines += [f"WARNING: {p} CHANGED during the run" for p in changed] or ["inputs unchanged"]
    lines += [f"skipped {n}: {w}" for n, w in skipped.items()]
    lines += [f"feedback name collision: {c}" for c in collisions]
    lines += [f"feedback file of {s}: {f}" for s, f in sorted(names.items())]
    return "\n".join(lines) + "\n"


def why_not(text: str) -> str:
    return f"unavailable ({text})"


def cli(args: argparse.Namespace) -> int:
    """``lab grade <slug> <notebook|folder>`` (options in ``lab/__main__.py``)."""
    from lab.tooling import classroom as cr
    from lab.tooling import grading

    if getattr(args, "check_sandbox", False):
        ok, how = sandbox.check_sandbox()
        print(f"sandbox: {'available' if ok else 'NOT available'}: {how}")
        return 0 if ok else 1
    if args.notebook is None:
        raise ValueError("notebook: give a submitted .ipynb or a folder of them")
    if not args.unsandboxed:
        ok, how = sandbox.check_sandbox()
        if not ok:
            raise ValueError(f"no sandbox here: {how}; --unsandboxed grades without isolation")
    autograder = args.autograder
    if autograder is None:
        zips = sorted((grading.ROOT / "_build" / "assign" / args.slug / "autograder").glob("*.zip"))
        autograder = zips[-1] if zips else grading.assign(args.slug).autograder
    limits = {
        "timeout": args.timeout,
        "memory_mb": args.memory_mb,
        "max_output_mb": args.max_output_mb,
    }
    common = {"solution": args.solution, "unsandboxed": args.unsandboxed}
    forbidden = None
    for item in args.forbid or []:
        q, sep, symbol = item.partition("=")
        if not sep or not q or not symbol.startswith("lab."):
            raise ValueError(f"--forbid must read QUESTION=lab.module.function (got {item!r})")
        forbidden = forbidden or {}
        forbidden.setdefault(q, []).append(symbol)
    # --rubrics (lab/__main__.py): default, lab assign's instructor/rubrics.json beside the zip
    rubrics = getattr(args, "rubrics", None)
    target = Path(args.notebook).resolve()
    if target.is_dir():
        try:
            grade_class(
                autograder,
                target,
                out=args.out,
                jobs=args.jobs,
                resume=args.resume,
                forbidden=forbidden,
                rubrics=rubrics,
                **limits,
                **common,
            )
        except KeyboardInterrupt as stop:
            print(f"lab grade: {stop}")
            return 130
        return 0
    assignment = cr.prepare(
        autograder,
        args.solution,
        unsandboxed=args.unsandboxed,
        forbidden=forbidden,
        rubrics=rubrics,
    )
    outcome = cr.grade_isolated(autograder, target, **limits, **common, assignment=assignment)
    if args.unsandboxed:
        print(f"WARNING: {cr.UNSANDBOXED}")
    for q, (s, m) in outcome.questions.items():
        print(f"{q}: {s:g} / {m:g}")
    for q, m in outcome.pending.items():
        print(f"{q}: pending ({m:g} point{'' if m == 1 else 's'}, read by the instructor)")
    pending = sum(outcome.pending.values())
    print(
        f"total: {outcome.score:g} / {outcome.max:g}"
        + (f" autograded points, {pending:g} pending" if pending else "")
        + (f"  {outcome.error}" if outcome.error else "")
    )
    if args.out is not None:
        warning = cr.UNSANDBOXED if args.unsandboxed else ""
        path = cr.write_results([outcome], args.out, warning=warning, manual=assignment.manual)
        print(f"wrote {path}")
    else:
        print(outcome.public)
    return 0
