"""Keep the book's execution cache honest.

jupyter-cache (behind ``execute_notebooks: cache``) keys a notebook on its code cells only,
so after a change to ``lab/`` it would happily republish stale outputs. ``guard`` hashes
everything a notebook's results depend on besides its own code (``lab/__init__.py``,
``lab.core`` and the install files for every notebook, ``lab/<slug>`` for the chapter's own
notebooks) and drops the cached executions whose sources changed: all of them after a core
change, one chapter's otherwise. ``lab.tooling`` (this cache, the Sphinx extension, the
benchmark harness, grading) and ``lab/__main__.py`` are not hashed: no notebook imports them, so
editing them never re-executes the book. ``make book`` calls it before every build:
``python -m lab.tooling.cache _build/.jupyter_cache``.

``prefill`` then executes, in parallel worker processes, every notebook of ``_toc.yml`` that
the cache does not hold yet (:func:`lab.tooling.chapters.toc_notebooks`), and stores the results
exactly as myst-nb's ``cache`` mode would. The Sphinx build afterwards only reads the cache
(myst-nb executes serially, so on two cores this halves the execution part of ``make book``).
A notebook that fails here is left out of the cache: the build then executes it itself and
reports the error with its traceback.

In ``make test`` the guard runs first, then nbval executes every notebook and stores each one
that ran through in this cache (``--nbval-cache``, :mod:`lab.tooling.nbcache_plugin`), in the
same form and with the same ``execution_seconds``; the prefill of the ``make book`` that follows
finds them cached and executes only what is missing, so each notebook is executed once.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from lab.tooling.chapters import chapters, toc_notebooks
from lab.tooling.paths import ROOT

STAMP = "lab-sources.json"


def _hash_files(root: Path, files) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        if path.exists() and path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def sources_digest(root: Path = ROOT) -> dict[str, str]:
    """What each chapter's outputs depend on besides its notebooks' code.

    ``"core"``: ``lab/__init__.py``, ``lab/core/**``, ``pyproject.toml`` and ``constraints.txt``,
    which every notebook depends on, and the numerics fingerprint's key
    (:func:`lab.core.numerics.fingerprint`); ``"<slug>"`` for every chapter of ``_toc.yml``:
    ``lab/<slug>.py`` or ``lab/<slug>/**``. A change to the core invalidates every notebook, a
    change to one chapter's module only that chapter's notebooks. ``lab/tooling/**`` and
    ``lab/__main__.py`` are build tooling that no notebook executes: they are not hashed.
    """
    lab = root / "lab"
    core = [
        lab / "__init__.py",
        *(lab / "core").rglob("*"),
        root / "pyproject.toml",
        root / "constraints.txt",
    ]
    from lab.core.numerics import fingerprint

    # the numerics fingerprint is part of the core: a cache filled under one numerics mode
    # (or CPU, or seed shift) never answers for another
    digests = {"core": _hash_files(root, core) + "/numerics:" + fingerprint()["key"]}
    for slug in chapters(root):
        module = (
            [lab / f"{slug}.py", *(lab / slug).rglob("*")]
            if (lab / slug).is_dir()
            else [lab / f"{slug}.py"]
        )
        digests[slug] = _hash_files(root, module)
    return digests


def guard(cache_dir: str | Path, root: Path = ROOT) -> list[str]:
    """Drop cached executions made under other ``lab`` sources.

    Returns what was invalidated: ``["all"]`` when the core changed (the cache is deleted),
    else the slugs whose module changed (their notebooks' records are removed).
    """
    import json

    cache_dir = Path(cache_dir)
    digests = sources_digest(root)
    stamp = cache_dir / STAMP
    old = json.loads(stamp.read_text()) if stamp.exists() else {}
    stale: list[str] = []
    if cache_dir.exists() and old.get("core") != digests["core"]:
        shutil.rmtree(cache_dir)
        stale = ["all"]
    elif cache_dir.exists():
        stale = [slug for slug, d in digests.items() if slug != "core" and old.get(slug) != d]
        if stale:
            from jupyter_cache import get_cache

            cache = get_cache(str(cache_dir))
            for record in cache.list_cache_records():
                parts = Path(record.uri).parts
                if any(
                    parts[i : i + 2] == ("book", slug)
                    for slug in stale
                    for i in range(len(parts) - 1)
                ):
                    cache.remove_cache(record.pk)
    cache_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return stale


#: Kernel starts per notebook. A kernel that dies before its first reply has run no cell: the
#: kernel manager picks five free TCP ports, and a kernel started at the same moment by another
#: process can bind one of them first ("ZMQError: Address already in use"; seen once in a
#: clean-copy make test, in tests/test_core.py's prefill test, crashing the prefill).
KERNEL_START_TRIES = 3
_DIED_AT_START = "before replying to kernel_info"


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _execute(path: str, timeout: int) -> tuple[str, object, dict, str | None]:
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    from lab.tooling.budget import reference_cpu_seconds

    for attempt in range(1, KERNEL_START_TRIES + 1):
        nb = nbformat.read(path, as_version=4)
        reference = reference_cpu_seconds()
        cpu0 = _children_cpu()  # the kernel is this worker's child: its CPU time once reaped
        t0 = time.perf_counter()
        try:
            result = single_nb_execution(
                nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=False
            )
        except RuntimeError as exc:  # the kernel died at start: start another one
            if _DIED_AT_START not in str(exc) or attempt == KERNEL_START_TRIES:
                raise
            print(f"  {path}: the kernel died at start ({exc}); starting another", flush=True)
            continue
        err = None if result.err is None else f"{type(result.err).__name__}: {result.err}"
        timing = {
            "execution_seconds": time.perf_counter() - t0,
            "cpu_seconds": round(_children_cpu() - cpu0, 2),
            "reference_cpu_seconds": round((reference + reference_cpu_seconds()) / 2, 4),
        }
        return path, nb, timing, err
    raise AssertionError("unreachable")  # pragma: no cover


def prefill(
    cache_dir: str | Path, notebooks: list[Path], jobs: int = 2, timeout: int = 120
) -> dict:
    """Execute the notebooks the cache lacks, ``jobs`` at a time, and cache the results.

    Returns ``{path: seconds or error string}`` for the notebooks it executed.
    """
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(cache_dir))
    todo = []
    for path in notebooks:
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(str(path))
    report: dict = {}
    if not todo:
        return report
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_execute, p, timeout) for p in todo]
        for fut in futures:
            path, nb, timing, err = fut.result()
            seconds = timing["execution_seconds"]
            if err is None:
                stage = cache.add_nb_to_project(path)
                cache.cache_notebook_bundle(
                    CacheBundleIn(nb, stage.uri, data=timing),
                    check_validity=False,
                    overwrite=True,
                )
                report[path] = round(seconds, 1)
            else:
                report[path] = err
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="guard (and optionally prefill) the book's execution cache"
    )
    parser.add_argument("cache_dir", nargs="?", default=str(ROOT / "_build" / ".jupyter_cache"))
    parser.add_argument(
        "--prefill", action="store_true", help="execute missing notebooks in parallel"
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    wiped = guard(args.cache_dir)
    if wiped == ["all"]:
        state = "wiped (lab.core, pyproject.toml or constraints.txt changed)"
    elif wiped:
        state = f"dropped the notebooks of {', '.join(wiped)} (their lab module changed)"
    else:
        state = "up to date"
    print(f"execution cache {args.cache_dir}: {state}")
    if args.prefill:
        t0 = time.perf_counter()
        report = prefill(args.cache_dir, toc_notebooks(ROOT), jobs=args.jobs)
        for path, result in report.items():
            rel = Path(path).relative_to(ROOT) if Path(path).is_absolute() else path
            print(f"  executed {rel}: {result if isinstance(result, str) else f'{result} s'}")
        print(
            f"prefilled {len(report)} notebook(s) in {time.perf_counter() - t0:.1f} s with {args.jobs} workers"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
