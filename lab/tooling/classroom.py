"""Grading a class: every submission in its own process, with a time and a memory limit.

``lab grade <slug> <folder>`` calls :func:`grade_class`. Each submission is copied into a fresh
temporary folder and graded there by a worker process (``python -m lab.tooling.classroom``,
which runs otter's grader; otter runs the notebook in a kernel of its own):

* a **time limit** (``timeout``, seconds): past it the worker and its kernel are killed;
* a **memory limit** (``memory_mb``, ``resource.setrlimit(RLIMIT_AS)``, inherited by the
  kernel) where the operating system enforces one (Linux); elsewhere it is skipped;
* an **output limit** (``max_output_mb``): a notebook that prints more than this scores zero;
* a notebook that calls ``sys.exit``/``exit()``, or whose kernel dies, or that breaks otter's
  grading scores zero.

Every such case costs that student a zero with the reason in the ``error`` column of
``grades.csv``; no student's grade depends on another's, and the class folder is never the
working folder of a submission. This is robustness, not a sandbox: the code still runs with
your permissions (``book/teaching.md`` says when to use otter's containers instead).

The results go to ``out`` (the submissions' folder by default): ``grades.csv`` (one row per
submission, scores rounded with :func:`round_score`), ``feedback/<name>.txt`` for the student
(otter's summary of the **public** tests only) and ``instructor/<name>.txt`` (every test,
hidden ones included, and the worker's log on a failure).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_OUTPUT_MB",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT",
    "Outcome",
    "cli",
    "grade_class",
    "grade_isolated",
    "main",
    "round_score",
    "write_results",
]

DEFAULT_TIMEOUT = 300  # seconds per submission: an assignment runs in 5-30 s on 2 cores
DEFAULT_MEMORY_MB = 8192  # address space per process (worker and kernel each); torch maps ~2 GB
DEFAULT_MAX_OUTPUT_MB = 5.0  # what the executed notebook may print, all cells together


@dataclass
class Outcome:
    """One graded submission."""

    submission: str
    score: float = 0.0
    max: float = 0.0
    questions: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0
    public: str = ""  # otter's summary of the public tests (the student's feedback)
    full: str = ""  # every test, hidden ones included (the instructor's copy)
    log: str = ""  # the worker's own output, kept for the instructor on a failure


def _check_number(name: str, value, *, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number (got {value!r})")
    if not value >= low:
        raise ValueError(f"{name} must be >= {low:g} (got {value!r})")
    return float(value)


def _check_file(name: str, path, suffix: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (got {path!r})")
    path = Path(path)
    if not path.is_file() or path.suffix != suffix:
        raise ValueError(f"{name} must be an existing {suffix} file (got {path})")
    return path.resolve()


def round_score(value: float, points: list[float] | tuple[float, ...] = ()) -> float:
    """``value`` rounded to the precision of the points: two decimals, or as many as the finest
    point value has (``0.125`` points: three). A share of 2 points (``1.3333...``) is written
    ``1.33``.

    Raises
    ------
    TypeError
        If ``value`` is not a number or ``points`` not a sequence of numbers.
    """
    value = _check_number("value", value, low=float("-inf"))
    if not isinstance(points, (list, tuple)):
        raise TypeError(f"points must be a list of numbers (got {points!r})")
    decimals = 2
    for p in points:
        p = _check_number("points", p, low=0)
        text = f"{p:.6f}".rstrip("0")
        decimals = max(decimals, len(text.split(".")[1]) if "." in text else 0)
    return round(value + 0.0, decimals) + 0.0


# -- the worker -------------------------------------------------------------------------------
def _limit_memory(memory_mb: float) -> str:
    """Cap this process's address space (inherited by its children); '' or why it could not."""
    if memory_mb <= 0:
        return "memory limit off"
    try:
        import resource

        limit = int(memory_mb * 2**20)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, AttributeError, ValueError, OSError) as err:
        return f"memory limit not enforced on this system ({type(err).__name__})"
    return ""


def _policy(executed, max_output_mb: float) -> str:
    """Why an executed notebook scores zero whatever its tests said ('' if it does not)."""
    total = 0
    for i, cell in enumerate(getattr(executed, "cells", []) or []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error" and out.get("ename") == "SystemExit":
                return f"the notebook calls sys.exit (cell {i}): scored 0"
            total += len(json.dumps(out))
    if total > max_output_mb * 2**20:
        return f"the notebook printed {total / 2**20:.1f} MB (limit {max_output_mb:g} MB): scored 0"
    return ""


def _grade_here(autograder: Path, notebook: Path, max_output_mb: float) -> dict:
    """Grade ``notebook`` in this process with otter (run by the worker)."""
    from otter import execute as otter_execute
    from otter.api import grade_submission

    from lab.tooling import grading, kernels

    # otter builds its executor from a fresh traitlets Config: give it IPC sockets, so the
    # kernel does not warn about unencrypted TCP (lab.tooling.kernels)
    base = otter_execute.Config
    otter_execute.Config = lambda *a, **k: base(kernels.ipc_config(), *a, **k)
    with grading._grading_env(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The inplace keyword", module="otter")
        results = grade_submission(str(notebook), str(autograder), quiet=True)
    questions = {
        name: (float(results.get_score(name)), float(tf.possible))
        for name, tf in results.results.items()
    }
    error = ""
    if results.catastrophic_error is not None:
        error = (
            "otter could not grade it (did the notebook delete or change the grader's files?): "
            f"{results.catastrophic_error!r}"[:200]
            + ": scored 0"
        )
    error = error or _policy(getattr(results, "notebook", None), max_output_mb)
    return {
        "questions": questions,
        "error": error,
        "public": results.summary(public_only=True),
        "full": results.summary(),
    }


def _worker(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.tooling.classroom")
    parser.add_argument("autograder", type=Path)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--memory-mb", type=float, default=DEFAULT_MEMORY_MB)
    parser.add_argument("--max-output-mb", type=float, default=DEFAULT_MAX_OUTPUT_MB)
    args = parser.parse_args(argv)
    os.set_inheritable(args.fd, False)  # the kernel must not get the result channel
    note = _limit_memory(args.memory_mb)
    try:
        payload = _grade_here(args.autograder, args.notebook, args.max_output_mb)
    except MemoryError:
        payload = {"error": f"ran out of memory (limit {args.memory_mb:g} MB): scored 0"}
    except BaseException as err:  # noqa: BLE001 - the kernel died, otter failed...: a zero
        name = type(err).__name__
        reason = "the kernel died" if name == "DeadKernelError" else f"grading failed: {name}"
        payload = {"error": f"{reason}: {str(err).strip()[:200]}: scored 0"}
    payload["note"] = note
    data = json.dumps(payload).encode()
    with os.fdopen(args.fd, "wb") as channel:
        channel.write(data)
    return 0


# -- the parent -------------------------------------------------------------------------------
def _descendants(pid: int) -> set:
    try:
        import psutil

        return set(psutil.Process(pid).children(recursive=True))
    except Exception:  # noqa: BLE001 - gone already, or no psutil: nothing to add
        return set()


def _kill(procs: set) -> None:
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()


def grade_isolated(
    autograder: str | Path,
    notebook: str | Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: float = DEFAULT_MEMORY_MB,
    max_output_mb: float = DEFAULT_MAX_OUTPUT_MB,
) -> Outcome:
    """Grade one notebook in a worker process, in a temporary copy of it.

    A submission that runs past ``timeout`` seconds, exceeds ``memory_mb`` (address space of
    the worker and of the kernel, where the OS enforces it; ``0`` turns it off), prints more
    than ``max_output_mb``, calls ``sys.exit``, kills its kernel or breaks the grader scores
    zero with the reason in :attr:`Outcome.error`. Never raises for a bad submission.

    Raises
    ------
    TypeError, ValueError
        If an argument is of the wrong type, a file is missing or a limit is out of range.
    """
    autograder = _check_file("autograder", autograder, ".zip")
    notebook = _check_file("notebook", notebook, ".ipynb")
    timeout = _check_number("timeout", timeout, low=1)
    memory_mb = _check_number("memory_mb", memory_mb, low=0)
    max_output_mb = _check_number("max_output_mb", max_output_mb, low=0)
    outcome = Outcome(notebook.name)
    work = Path(tempfile.mkdtemp(prefix="lab-grade-"))
    start = time.monotonic()
    try:
        folder = work / "submission"
        (work / "tmp").mkdir()
        folder.mkdir()
        shutil.copy2(notebook, folder / notebook.name)
        env = {
            **os.environ,
            "TMPDIR": str(work / "tmp"),
            "LAB_PROGRESS": "0",
            "PYTHONUNBUFFERED": "1",
        }
        read_end, write_end = os.pipe()
        chunks: list[bytes] = []

        def drain() -> None:
            with os.fdopen(read_end, "rb") as channel:
                while data := channel.read(65536):
                    chunks.append(data)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        log_path = work / "worker.log"
        with log_path.open("wb") as log:
            cmd = [sys.executable, "-m", "lab.tooling.classroom", str(autograder)]
            cmd += [str(folder / notebook.name), "--fd", str(write_end)]
            cmd += ["--memory-mb", f"{memory_mb:g}", "--max-output-mb", f"{max_output_mb:g}"]
            proc = subprocess.Popen(
                cmd,
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
                start_new_session=True,
            )
            os.close(write_end)
            seen: set = set()
            timed_out = False
            while proc.poll() is None:
                seen |= _descendants(proc.pid)
                if time.monotonic() - start > timeout:
                    timed_out = True
                    _kill(seen | _descendants(proc.pid))
                    proc.kill()
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.5)
            proc.wait()
            _kill(seen)  # a kernel left behind by a worker that died
        reader.join(timeout=10)
        try:  # a submission may have deleted or rewritten the log
            outcome.log = log_path.read_text(errors="replace")[-4000:]
        except OSError:
            outcome.log = "(the grading log was deleted)"
        if timed_out:
            outcome.error = f"timed out after {timeout:g} s (infinite loop?): scored 0"
        elif not chunks:
            outcome.error = (
                f"the grading process died (exit status {proc.returncode}; out of memory?): "
                "scored 0"
            )
        else:
            _read_payload(outcome, b"".join(chunks))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if outcome.error:  # a zero, whatever the tests said; the maximum stays known if it was
        outcome.score = 0.0
        outcome.questions = {q: (0.0, m) for q, (_, m) in outcome.questions.items()}
    outcome.seconds = round(time.monotonic() - start, 1)
    return outcome


def _read_payload(outcome: Outcome, data: bytes) -> None:
    """Fill ``outcome`` from the worker's JSON (a zero if it is not what the worker writes)."""
    try:
        payload = json.loads(data)
        questions = {
            str(q): (float(s), float(m)) for q, (s, m) in payload.get("questions", {}).items()
        }
        outcome.error = str(payload.get("error", ""))
        outcome.public = str(payload.get("public", ""))
        outcome.full = str(payload.get("full", ""))
    except (ValueError, TypeError, AttributeError) as err:
        outcome.error = f"the grader's report was unreadable ({type(err).__name__}): scored 0"
        return
    points = [m for _, m in questions.values()]
    outcome.questions = {q: (round_score(s, points), m) for q, (s, m) in questions.items()}
    outcome.max = round_score(sum(points), points)
    outcome.score = round_score(sum(s for s, _ in outcome.questions.values()), points)


def _safe_name(name: str) -> str:
    stem = Path(name).stem
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) or "submission"


def write_results(outcomes: list[Outcome], out: str | Path) -> Path:
    """Write ``grades.csv``, ``feedback/<name>.txt`` (public tests only) and
    ``instructor/<name>.txt`` (everything) into ``out``; return the csv's path.

    Raises
    ------
    TypeError
        If ``outcomes`` is not a list of :class:`Outcome` or ``out`` not a path.
    """
    if not isinstance(outcomes, list) or not all(isinstance(o, Outcome) for o in outcomes):
        raise TypeError("outcomes must be a list of Outcome")
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (got {out!r})")
    out = Path(out)
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    (out / "instructor").mkdir(parents=True, exist_ok=True)
    questions: list[str] = []
    for o in outcomes:
        questions += [q for q in o.questions if q not in questions]
    maximum = max((o.max for o in outcomes), default=0.0)
    path = out / "grades.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["submission", *questions, "total", "max", "error"])
        writer.writeheader()
        for o in sorted(outcomes, key=lambda o: o.submission):
            row = {"submission": o.submission, "total": f"{o.score:g}", "error": o.error}
            row["max"] = f"{o.max or maximum:g}"
            row.update({q: f"{s:g}" for q, (s, _) in o.questions.items()})
            row.update({q: 0 for q in questions if q not in o.questions})
            writer.writerow(row)
    for o in outcomes:
        head = f"{o.submission}: {o.score:g} / {o.max or maximum:g}\n"
        head += f"{o.error}\n" if o.error else ""
        scores = "".join(f"{q}: {s:g} / {m:g}\n" for q, (s, m) in o.questions.items())
        name = _safe_name(o.submission) + ".txt"
        (out / "feedback" / name).write_text(f"{head}{scores}\n{o.public}\n")
        extra = f"\n--- grading log ---\n{o.log}\n" if o.error else ""
        (out / "instructor" / name).write_text(f"{head}{scores}\n{o.full}\n{extra}")
    return path


def grade_class(
    autograder: str | Path,
    folder: str | Path,
    *,
    out: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: float = DEFAULT_MEMORY_MB,
    max_output_mb: float = DEFAULT_MAX_OUTPUT_MB,
    jobs: int = 1,
    echo: bool = True,
) -> tuple[Path, list[Outcome]]:
    """Grade every ``*.ipynb`` of ``folder`` (:func:`grade_isolated` each, ``jobs`` at a time)
    and write the results into ``out`` (default: ``folder``) with :func:`write_results`.

    Returns ``(path of grades.csv, outcomes)``.

    Raises
    ------
    TypeError, ValueError
        If ``folder`` is not a folder holding notebooks, ``jobs`` is not a positive integer or
        a limit is out of range.
    """
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (got {folder!r})")
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder must be an existing folder (got {folder})")
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"jobs must be an integer (got {jobs!r})")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1 (got {jobs})")
    submissions = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
    if not submissions:
        raise ValueError(f"folder {folder} holds no .ipynb submissions")
    limits = {"timeout": timeout, "memory_mb": memory_mb, "max_output_mb": max_output_mb}
    _check_file("autograder", autograder, ".zip")
    from lab.core.progress import progress

    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(grade_isolated, autograder, nb, **limits) for nb in submissions]
        for future in progress(as_completed(futures), total=len(futures), desc="grading"):
            outcomes.append(future.result())
    path = write_results(outcomes, folder if out is None else out)
    if echo:
        for o in sorted(outcomes, key=lambda o: o.submission):
            total = o.max or max((x.max for x in outcomes), default=0.0)
            print(f"{o.submission}: {o.score:g} / {total:g} ({o.seconds:g} s) {o.error[:90]}")
        print(f"wrote {path}")
    return path, outcomes


def cli(args: argparse.Namespace) -> int:
    """``lab grade <slug> <notebook|folder>`` (options in ``lab/__main__.py``)."""
    from lab.tooling import grading

    autograder = args.autograder
    if autograder is None:
        zips = sorted((grading.ROOT / "_build" / "assign" / args.slug / "autograder").glob("*.zip"))
        autograder = zips[-1] if zips else grading.assign(args.slug).autograder
    limits = {
        "timeout": args.timeout,
        "memory_mb": args.memory_mb,
        "max_output_mb": args.max_output_mb,
    }
    target = Path(args.notebook).resolve()
    if target.is_dir():
        grade_class(autograder, target, out=args.out, jobs=args.jobs, **limits)
        return 0
    outcome = grade_isolated(autograder, target, **limits)
    for q, (s, m) in outcome.questions.items():
        print(f"{q}: {s:g} / {m:g}")
    print(
        f"total: {outcome.score:g} / {outcome.max:g}"
        + (f"  {outcome.error}" if outcome.error else "")
    )
    if args.out is not None:
        print(f"wrote {write_results([outcome], args.out)}")
    else:
        print(outcome.public)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The worker's entry point (``python -m lab.tooling.classroom AUTOGRADER NOTEBOOK --fd N``)."""
    argv = sys.argv[1:] if argv is None else argv
    sink = io.StringIO()  # otter's and the kernel's chatter goes to the worker log, not here
    with contextlib.redirect_stdout(sink):
        code = _worker(argv)
    sys.stdout.write(sink.getvalue()[-20000:])
    return code


if __name__ == "__main__":
    sys.exit(main())
