"""The ``lab`` command line (also ``python -m lab``).

``info``                      versions, device, CUDA and triton availability, thread settings
``run <slug> [--full]``       execute a chapter's notebooks headless into ``_build/run/<slug>/``
``assign <slug> [--out DIR]`` student notebook + autograder into ``_build/assign/<slug>/`` (or DIR)
``grade <slug> <nb|folder>``  grade a notebook, or a folder of them, each in its own sandbox
                              (bubblewrap) with ``--timeout``/``--memory-mb``, ``--jobs N`` at a
                              time (grades.csv, feedback/ for students, instructor/ for you);
                              ``--check-sandbox`` says whether the sandbox runs here
``exercises <slug>``          regenerate ``book/<slug>/exercises.ipynb`` (the book's student page)
``bench [<slug>...] [--gpu]`` run the benchmarks and merge one run record
``claims [<slug>...]``        print chapters' claim records (run or read); ``--compare`` a published one
``artifacts list|build NAME`` list, or rebuild, a chapter's stored checkpoints, corpora and runs
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from lab.tooling.chapters import chapter_notebooks as _chapter_notebooks
from lab.tooling.chapters import chapters, check_slug
from lab.tooling.paths import ROOT

__all__ = ["bench", "chapter_notebooks", "chapters", "check_slug", "info", "main", "run"]


def info() -> dict:
    """What this installation can do: versions, device, CUDA, triton and thread settings."""
    import platform

    import numpy as np
    import torch

    from lab import __version__
    from lab.core.runtime import device

    out = {
        "lab": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "device": str(device()),
        "cuda_available": torch.cuda.is_available(),
        "cuda_version": torch.version.cuda,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "LAB_DEVICE": os.environ.get("LAB_DEVICE"),
        "LAB_PROGRESS": os.environ.get("LAB_PROGRESS"),
    }
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = None
    try:
        from threadpoolctl import threadpool_info

        out["blas"] = [
            f"{p.get('internal_api')} ({p.get('num_threads')} threads)" for p in threadpool_info()
        ]
    except ImportError:  # pragma: no cover
        out["blas"] = []
    return out


def chapter_notebooks(slug: str, root: Path | None = None) -> list[Path]:
    """The chapter's numbered notebooks (``01-*.ipynb`` ...), in order (of this checkout)."""
    return _chapter_notebooks(slug, root or ROOT)


def set_full(nb, full: bool) -> bool:
    """Switch the parameters cell's ``FULL = False`` to ``FULL = True`` (returns whether found)."""
    import re

    for cell in nb.cells:
        if cell.cell_type == "code" and re.search(r"^FULL\s*=\s*False", cell.source, re.M):
            if full:
                cell.source = re.sub(r"^FULL\s*=\s*False", "FULL = True", cell.source, flags=re.M)
            return True
    return False


def run(slug: str, full: bool = False, out: Path | None = None, timeout: int = 3600) -> list[dict]:
    """Execute a chapter's notebooks headless; save executed copies; return per-notebook timings."""
    import nbformat
    from nbclient import NotebookClient

    from lab.core.progress import progress
    from lab.tooling.kernels import kernel_manager

    notebooks = chapter_notebooks(slug)
    out = Path(out) if out else ROOT / "_build" / "run" / slug
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for path in progress(notebooks, desc=f"{slug}{' (FULL)' if full else ''}", unit="nb"):
        nb = nbformat.read(path, as_version=4)
        if not set_full(nb, full):
            raise ValueError(f"{path.name}: no parameters cell with `FULL = False`")
        t0 = time.perf_counter()
        client = NotebookClient(
            nb,
            km=kernel_manager("python3"),  # IPC sockets: no "TCP without encryption" warning
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": path.parent}},
        )
        error = None
        try:
            client.execute()
        except Exception as exc:  # noqa: BLE001 - reported, then re-raised after saving
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}"
        finally:  # nbclient leaves running a kernel it did not start (km=): shut it down
            try:
                client.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        seconds = time.perf_counter() - t0
        target = out / path.name
        nbformat.write(nb, target)
        results.append(
            {
                "notebook": path.name,
                "seconds": round(seconds, 1),
                "output": str(target),
                "error": error,
            }
        )
        print(f"  {path.name}: {seconds:.1f} s{'  FAILED: ' + error if error else ''}", flush=True)
    return results


def bench(slugs: list[str] | None = None, gpu: bool = False, quick: bool = False) -> Path:
    """Run ``benchmarks/bench_<slug>.py`` for each slug (all by default) and merge a run record."""
    from lab.tooling.bench import RESULTS, machine

    scripts_dir = ROOT / "benchmarks"
    if not scripts_dir.is_dir():
        raise ValueError(f"no benchmarks/ folder at {ROOT}: run from a checkout of optlab")
    available = sorted(p.stem.removeprefix("bench_") for p in scripts_dir.glob("bench_*.py"))
    slugs = slugs or available
    for s in slugs:
        if s not in available:
            raise ValueError(f"no benchmark for {s!r}; valid: {', '.join(available)}")
    kind = "gpu" if gpu else "cpu"
    run_record = {
        "kind": kind,
        "quick": quick,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "benchmarks": {},
        "failed": {},
    }
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    for s in slugs:
        cmd = [sys.executable, str(scripts_dir / f"bench_{s}.py")]
        cmd += ["--gpu"] if gpu else []
        cmd += ["--quick"] if quick else []
        print(f"== {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env)
        result_file = RESULTS / f"{s}-{kind}{'-quick' if quick else ''}.json"
        if proc.returncode != 0 or not result_file.exists():
            run_record["failed"][s] = f"exit status {proc.returncode}"
            continue
        data = json.loads(result_file.read_text())
        data["script_seconds"] = round(time.perf_counter() - t0, 1)
        run_record["benchmarks"][s] = data
    path = RESULTS / f"run-{kind}{'-quick' if quick else ''}.json"
    if not quick and len(slugs) < len(available) and path.exists():
        # a partial run updates the record of the last full run
        old = json.loads(path.read_text())
        old["benchmarks"].update(run_record["benchmarks"])
        kept = {k: v for k, v in old.get("failed", {}).items() if k not in slugs}
        old["failed"] = kept | run_record["failed"]
        old["date"], old["machine"] = run_record["date"], run_record["machine"]
        run_record = old
    path.write_text(json.dumps(run_record, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}; failed: {sorted(run_record['failed']) or 'none'}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lab",
        description="optlab: the book's command line",
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, device, CUDA/triton availability, threads")
    p = sub.add_parser("run", help="execute a chapter's notebooks into _build/run/<slug>/")
    p.add_argument("slug")
    p.add_argument("--full", action="store_true", help="FULL = True (paper scale; for a GPU)")
    p = sub.add_parser(
        "assign", help="write the student notebook and autograder into _build/assign/<slug>/"
    )
    p.add_argument("slug")
    p.add_argument("--out", type=Path, help="write here instead of _build/assign/<slug>/")
    p = sub.add_parser(
        "grade", help="grade a notebook (or a folder of them: grades.csv) with the autograder"
    )
    p.add_argument("slug")
    p.add_argument("notebook", nargs="?", help="a submitted .ipynb, or a folder of them")
    _grade_options(p)
    p = sub.add_parser(
        "exercises", help="regenerate book/<slug>/exercises.ipynb (the book's student page)"
    )
    p.add_argument("slug")
    p = sub.add_parser("bench", help="run benchmarks (all, or the slugs given) and merge results")
    p.add_argument("slugs", nargs="*")
    p.add_argument("--gpu", action="store_true", help="the GPU sizes (needs CUDA)")
    p.add_argument("--quick", action="store_true", help="small sizes (< 20 s each)")
    from lab.tooling.claimsjson import CLI_DESCRIPTION, CLI_EPILOG

    p = sub.add_parser(
        "claims",
        help="run chapters' notebooks (or read a build), print or --compare their claim records",
        description=CLI_DESCRIPTION,
        epilog=CLI_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("slugs", nargs="*", metavar="slug", help="chapters (default: every chapter)")
    p.add_argument("--full", action="store_true", help="FULL = True (paper scale; for a GPU)")
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--from-build",
        action="store_true",
        help="do not execute: read _build/run/<slug>/, else _build/html/_static/claims.json",
    )
    source.add_argument(
        "--build",
        metavar="PATH",
        help="do not execute: read a claims.json, a build folder or executed notebooks",
    )
    p.add_argument("--compare", metavar="PUBLISHED", help="a published claims.json to diff against")
    p.add_argument("-o", "--output", metavar="FILE", help="also write this run as a claims.json")
    p = sub.add_parser(
        "artifacts",
        help="list or rebuild the chapters' stored artifacts (checkpoints, corpora, runs)",
    )
    p.add_argument("action", choices=["list", "build"])
    p.add_argument("name", nargs="?", help="<slug>/<name> (see `lab artifacts list`)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="after --: the builder's arguments")
    args = parser.parse_args(argv)

    try:
        return _dispatch(args)
    except ValueError as exc:
        print(f"lab {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "info":
        for key, value in info().items():
            print(f"{key:>15}: {value}")
        return 0
    if args.cmd == "run":
        results = run(args.slug, full=args.full)
        return 1 if any(r["error"] for r in results) else 0
    if args.cmd == "bench":
        path = bench(args.slugs, gpu=args.gpu, quick=args.quick)
        return 1 if json.loads(path.read_text())["failed"] else 0
    if args.cmd == "artifacts":
        from lab.tooling import artifacts

        args.args = args.args[1:] if args.args[:1] == ["--"] else args.args
        return artifacts.cli(args)
    if args.cmd == "claims":
        from lab.tooling import claimsjson

        return claimsjson.cli(args, run=run)

    from lab.tooling import grading

    check_slug(args.slug, ROOT)
    if args.cmd == "assign":
        build = grading.assign(args.slug, args.out)
        print(f"student notebook: {build.student}\nautograder:       {build.autograder}")
        if getattr(build, "rubrics", None):
            print(f"rubrics:          {build.rubrics} (yours only)")
    elif args.cmd == "grade":
        from lab.tooling import classroom

        return classroom.cli(args)
    elif args.cmd == "exercises":
        print(grading.exercise_page(args.slug))
    return 0


def _grade_options(p: argparse.ArgumentParser) -> None:
    from lab.tooling.classroom import DEFAULT_MAX_OUTPUT_MB, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT

    p.add_argument("--autograder", type=Path, help="the autograder zip (default: lab assign's)")
    p.add_argument(
        "--out", type=Path, help="where grades.csv and feedback go (default: the folder)"
    )
    p.add_argument("--jobs", "-j", type=int, default=1, help="submissions graded at once")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per submission")
    p.add_argument(
        "--memory-mb",
        type=float,
        default=DEFAULT_MEMORY_MB,
        help="all of a submission's processes together (and each one's address space); 0: off",
    )
    p.add_argument(
        "--max-output-mb", type=float, default=DEFAULT_MAX_OUTPUT_MB, help="printed output"
    )
    p.add_argument(
        "--solution", type=Path, help="the solution notebook (default: the one beside the zip)"
    )
    p.add_argument(
        "--rubrics",
        type=Path,
        help="the explain questions' rubrics.json (default: lab assign's instructor/, beside "
        "autograder/)",
    )
    p.add_argument(
        "--check-sandbox", action="store_true", help="say whether the sandbox can run here; exit"
    )
    p.add_argument(
        "--unsandboxed",
        action="store_true",
        help="grade without the sandbox (no isolation: a warning goes into grades.csv)",
    )
    p.add_argument(
        "--resume", action="store_true", help="keep grades.csv rows whose file is unchanged"
    )
    p.add_argument(
        "--forbid",
        action="append",
        metavar="Q=lab.mod.func",
        help="a lab function question Q asks students to write (raises in their code; repeatable)",
    )


if __name__ == "__main__":
    sys.exit(main())
