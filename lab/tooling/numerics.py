"""The numerics check: every claim's verdict, the same under every numerics mode and seed shift.

``python -m lab.tooling.numerics`` (``make test-numerics``) executes notebooks under several
**configurations**, each a numerics mode of :data:`lab.core.numerics.MODES` (every dispatcher
set together) or the registered seed shift (``LAB_SEED_SHIFT=1000``), two configurations at a
time in separate processes, and fails when a claim's verdict, or one of its controls' verdicts,
differs between configurations or from the verdict its notebook expects. The notebooks run with
``LAB_CLAIMS_MISMATCH=warn`` so that a flip is recorded and reported, not raised mid-notebook.

Selection (``--select``):

- ``all``: every notebook of the chapters named (default: every chapter);
- ``fragile``: from a build's ``claims.json`` (``--build``, default the book's), the notebooks
  that hold a claim decided over seeds (its margin is in standard errors, whatever its size)
  or a claim with no stated margin; this is what ``.ci/run`` checks after ``make test``.

The seed shift runs only the notebooks that take their seeds from :func:`lab.seeds` (the others
compute the same numbers under it). ``--native-from BUILD`` takes the native configuration's records from a build that already ran
(``make test``'s book build) instead of executing it again.

Usage::

    python -m lab.tooling.numerics                     # every notebook, 4 configurations
    python -m lab.tooling.numerics coreset spot        # two chapters
    python -m lab.tooling.numerics --select fragile --native-from _build/html
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lab.core.numerics import DISPATCHERS, SEED_SHIFTS, mode_environment
from lab.tooling.paths import ROOT

__all__ = [
    "CONFIGS",
    "KNOWN_FLIPS",
    "compare_configs",
    "configuration_env",
    "main",
    "select_notebooks",
]

#: the configurations of the check: numerics modes, then the registered seed shift
CONFIGS = ("native", "avx2", "baseline", "seed+1000")

#: claims known to flip under a configuration, each with why; the check reports them without
#: failing, and fails when a listed claim no longer differs (take it off): the list only
#: shrinks. A flip is fixed by the measurement (more seeds, a larger effect), never by seeds
#: chosen to agree.
KNOWN_FLIPS: dict[str, str] = {}


def configuration_env(config: str) -> dict[str, str]:
    """The environment of ``config`` on top of this process's (dispatchers set or removed)."""
    env = dict(os.environ, LAB_CLAIMS_MISMATCH="warn", LAB_PROGRESS="0")
    if config.startswith("seed+"):
        shift = int(config.split("+", 1)[1])
        if shift not in SEED_SHIFTS:
            raise ValueError(f"config {config!r}: the registered seed shifts are {SEED_SHIFTS}")
        mode, env["LAB_SEED_SHIFT"] = "native", str(shift)
    elif config in ("native", "avx2", "baseline"):
        mode, env["LAB_SEED_SHIFT"] = config, "0"
    else:
        raise ValueError(f"config must be one of {', '.join(map(repr, CONFIGS))}, got {config!r}")
    for name, value in mode_environment(mode).items():
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    return env


def select_notebooks(slugs: list[str], select: str, build: Path | None) -> list[Path]:
    """The notebooks to check (see the module docstring)."""
    from lab.tooling.chapters import chapter_notebooks, chapters, check_slug

    picks = [s.split("/", 1) for s in slugs]  # "coreset" or "coreset/02": one notebook
    slugs = list(dict.fromkeys(check_slug(p[0], ROOT) for p in picks)) if picks else chapters(ROOT)
    every = [
        nb
        for s in slugs
        for nb in chapter_notebooks(s, ROOT)
        if not picks or any(p[0] == s and (len(p) == 1 or nb.stem.startswith(p[1])) for p in picks)
    ]
    if select == "all":
        return every
    if select != "fragile":
        raise ValueError(f"select must be 'all' or 'fragile', got {select!r}")
    from lab.tooling.claimsjson import read

    doc = read(build or ROOT / "_build" / "html", slugs)
    wanted = set()
    for rec in doc["claims"]:
        m = rec.get("margin")
        # decided over seeds (a margin in standard errors), or a margin nobody can state
        if not m or m.get("unit") == "se":
            wanted.add((rec["chapter"], Path(rec.get("docname") or rec.get("notebook", "")).stem))
    return [nb for nb in every if (nb.parent.name, nb.stem) in wanted]


def _worker(config: str, notebooks: list[Path], out: Path, timeout: int) -> dict[str, Any]:
    """Execute ``notebooks`` under ``config`` in a child process; its claims document."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{config}.json"
    cmd = [sys.executable, "-m", "lab.tooling.numerics", "--worker", config, "--out", str(out)]
    cmd += ["--timeout", str(timeout), *map(str, notebooks)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=configuration_env(config), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0 or not target.is_file():
        raise RuntimeError(
            f"{config}: the worker failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    doc = json.loads(target.read_text())
    doc["seconds"] = round(seconds, 1)
    return doc


def _run_worker(config: str, paths: list[str], out: Path, timeout: int) -> int:
    """In the child: run each notebook, gather its records and the fingerprint, write JSON."""
    import nbformat
    from nbclient import NotebookClient

    from lab.tooling.claimsjson import document, environment, records_from_notebook
    from lab.tooling.kernels import kernel_manager

    records, errors = [], []
    folder = out / config
    folder.mkdir(parents=True, exist_ok=True)
    for p in map(Path, paths):
        nb = nbformat.read(p, as_version=4)
        client = NotebookClient(
            nb,
            km=kernel_manager("python3"),
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": p.parent}},
        )
        try:
            client.execute()
        except Exception as exc:  # noqa: BLE001 - reported in the document
            errors.append(f"{p.parent.name}/{p.name}: {type(exc).__name__}: {str(exc)[-300:]}")
        finally:  # nbclient leaves a kernel it did not start running: one per notebook
            with contextlib.suppress(Exception):
                client.km.shutdown_kernel(now=True)
        target = folder / f"{p.parent.name}--{p.name}"
        nbformat.write(nb, target)
        records += records_from_notebook(target)
    env = environment(source=f"numerics check, {config}")
    doc = document(records, env)
    doc["errors"] = errors
    (out / f"{config}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return 0


def _verdicts(rec: dict) -> dict[str, str]:
    out = {"": rec["verdict"]}
    for c in rec.get("controls") or []:
        out[f" control {c['name']}"] = c.get("verdict")
    return out


def compare_configs(
    docs: dict[str, dict], partial: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """Rows of verdicts that differ (between configurations or from the expected verdict),
    and the claims checked. Every configuration must hold the same claims, except those in
    ``partial`` (the seed shift runs only the notebooks whose seeds it moves)."""
    by: dict[str, dict[str, dict]] = {
        name: {f"{r['chapter']}/{r['id']}": r for r in doc["claims"]} for name, doc in docs.items()
    }
    keys = sorted(set().union(*[set(v) for v in by.values()]))
    problems = []
    for key in keys:
        recs = {
            name: recs.get(key) for name, recs in by.items() if key in recs or name not in partial
        }
        missing = [n for n, r in recs.items() if r is None]
        if missing:
            problems.append(f"{key}: not recorded under {', '.join(missing)}")
            continue
        expected = next(iter(recs.values()))["expected"]
        parts = {name: _verdicts(r) for name, r in recs.items()}
        for part in next(iter(parts.values())):
            seen = {name: v.get(part) for name, v in parts.items()}
            want = {expected} if part == "" else {next(iter(seen.values()))}
            if set(seen.values()) != want:
                cells = "; ".join(f"{n}: {v}" for n, v in seen.items())
                problems.append(f"{key}{part}: expected {'/'.join(want)}; {cells}")
    return problems, keys


def _fingerprints(docs: dict[str, dict]) -> str:
    lines = []
    for name, doc in docs.items():
        fp = doc.get("environment", {}).get("numerics") or {}
        settings = "/".join(fp.get("settings", {}).get(d, "") or "-" for d in DISPATCHERS)
        kernels = ", ".join(
            f"{b['library']}:{b['kernel']}" for b in fp.get("blas", []) if b["kernel"]
        )
        lines.append(
            f"  {name:10s} key {fp.get('key')}  torch {fp.get('torch_capability')}  {kernels}  "
            f"[{settings}] seed shift {fp.get('seed_shift')}  ({doc.get('seconds', '-')} s)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m lab.tooling.numerics", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "slugs", nargs="*", help="chapters, or slug/NN for one notebook (default: every chapter)"
    )
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configurations")
    p.add_argument("--select", default="all", choices=("all", "fragile"))
    p.add_argument("--build", type=Path, help="the build whose claims.json --select fragile reads")
    p.add_argument("--native-from", type=Path, help="take the native records from this build")
    p.add_argument("--out", type=Path, default=ROOT / "_build" / "numerics")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=int, default=1200)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return _run_worker(args.worker, args.slugs, args.out, args.timeout)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        configuration_env(c)  # validates
    notebooks = select_notebooks(args.slugs, args.select, args.build)
    if not notebooks:
        print("numerics check: no notebook selected")
        return 0
    names = ", ".join(f"{nb.parent.name}/{nb.name}" for nb in notebooks)
    print(f"numerics check: {len(notebooks)} notebooks x {len(configs)} configurations: {names}")
    t0 = time.perf_counter()
    docs: dict[str, dict] = {}
    run = [c for c in configs if not (c == "native" and args.native_from)]
    if "native" in configs and args.native_from:
        from lab.tooling.claimsjson import read

        stems = {(nb.parent.name, nb.stem) for nb in notebooks}
        doc = read(args.native_from)
        doc["claims"] = [
            r
            for r in doc["claims"]
            if (r["chapter"], Path(r.get("docname") or r.get("notebook", "")).stem) in stems
        ]
        docs["native"] = doc
    # the seed shift moves only the seeds of notebooks that take them from lab.seeds()
    shifted = [nb for nb in notebooks if "lab.seeds(" in nb.read_text()]
    lists = {c: shifted if c.startswith("seed+") else notebooks for c in run}
    run = [c for c in run if lists[c]]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {c: pool.submit(_worker, c, lists[c], args.out, args.timeout) for c in run}
        for c, f in futures.items():
            docs[c] = f.result()
    errors = [e for d in docs.values() for e in d.get("errors", [])]
    print(_fingerprints(docs))
    problems, keys = compare_configs(docs, frozenset(c for c in docs if c.startswith("seed+")))
    took = time.perf_counter() - t0
    known, new = split_known(problems, keys)
    for e in errors:
        print(f"  error: {e}")
    for line in known:
        print(f"  known   {line}")
    for line in new:
        print(f"  DIFFERS {line}")
    print(
        f"numerics check: {len(keys)} claims under {len(docs)} configurations, "
        f"{len(new)} differ, {len(known)} known (lab.tooling.numerics.KNOWN_FLIPS), "
        f"{len(errors)} notebook errors, {took:.0f} s"
    )
    return 1 if new or errors else 0


def split_known(problems: list[str], keys: list[str]) -> tuple[list[str], list[str]]:
    """(known flips, the rest); a listed claim that was checked and no longer differs is part
    of the rest ("take it off KNOWN_FLIPS")."""
    known = [p for p in problems if p.split(":")[0].split(" control ")[0] in KNOWN_FLIPS]
    new = [p for p in problems if p not in known]
    for key in KNOWN_FLIPS:
        if key in keys and not any(p.startswith(key) for p in known):
            new.append(f"{key}: listed in KNOWN_FLIPS but no longer differs: take it off")
    return known, new


if __name__ == "__main__":
    raise SystemExit(main())
