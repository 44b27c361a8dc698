"""The benchmark harness shared by every ``benchmarks/bench_<slug>.py``.

A benchmark script compares, case by case, a chapter's **fast path** with its **reference
kernel** and with the **peer** a user would pick instead (another library, a solver, the obvious
numpy code). The harness owns everything that is the same in all of them: the command line
(``--quick``, ``--gpu``, ``--reps``, ``--threads``), seeding and the thread policy, timing
(median of several repetitions after a warm-up, CUDA synchronised), the machine stamp, the
markdown table and the results file that ``book/performance.md`` renders::

    from lab.tooling.bench import Benchmark

    bench = Benchmark("halo", __doc__)
    with bench.case("fwht, n = 4096", target=">= 20x vs dense", n=4096) as case:
        y_ref = case.time("reference", "fwht (numpy)", lambda: fwht_np(x))
        y = case.time("fast", "fwht (torch)", lambda: fwht(xt))
        case.time("peer", "dense Hadamard matmul", lambda: xt @ H)
        case.metric("max_abs_diff", float(abs(y_ref - y.numpy()).max()))
    bench.finish()

Results go to ``benchmarks/results/<slug>-<cpu|gpu>.json`` (one file per chapter and kind,
overwritten by each full run; ``--quick`` runs write ``<slug>-<kind>-quick.json`` so they never
replace the numbers the book shows). ``python -m lab bench`` runs every script and merges the
files into one run record, ``benchmarks/results/run-<cpu|gpu>.json``.

See: book/performance.md
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lab.core.checks import check_choice, check_int
from lab.tooling.paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"
ROLES = ("reference", "fast", "peer")
SCHEMA = 1


def machine() -> dict[str, Any]:
    """Describe the machine and the software versions a benchmark ran on."""
    import numpy as np

    info: dict[str, Any] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        # other work on the machine inflates every time: the stamp says how busy it was
        "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover - torch is a dependency
        info["torch"] = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from lab.core.numerics import fingerprint

    info["numerics"] = fingerprint()  # CPU flags, kernels, dispatchers: what decides numerics
    return info


def _sync(device: str | None) -> None:
    if device and device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class Case:
    """One comparison: several timed (or recorded) rows on the same problem."""

    def __init__(self, bench: Benchmark, name: str, target: str | None, size: dict[str, Any]):
        self.bench, self.name, self.target, self.size = bench, name, target, size
        self.rows: list[dict[str, Any]] = []
        self.metrics: dict[str, Any] = {}

    def time(
        self,
        role: str,
        name: str,
        fn: Callable[[], Any],
        *,
        reps: int | None = None,
        warmup: int = 1,
        device: str | None = None,
        **numbers: Any,
    ) -> Any:
        """Time ``fn()``: ``warmup`` untimed calls, then the median of ``reps`` timed calls.

        ``role`` is ``"reference"``, ``"fast"`` or ``"peer"``; ``device`` (``"cuda"``...) makes
        the timing synchronise the GPU. Extra keyword numbers are stored with the row. Returns
        the value of the last call (for cross-checks).
        """
        check_choice("role", role, ROLES)
        reps = self.bench.reps if reps is None else check_int("reps", reps, low=1)
        check_int("warmup", warmup, low=0)
        out = None
        for _ in range(warmup):
            out = fn()
        _sync(device)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            _sync(device)
            times.append(time.perf_counter() - t0)
        self.rows.append(
            {
                "role": role,
                "name": name,
                "device": device or "cpu",
                "seconds": statistics.median(times),
                "seconds_min": min(times),
                "reps": reps,
                **numbers,
            }
        )
        return out

    def record(self, role: str, name: str, seconds: float | None = None, **numbers: Any) -> None:
        """Store a row measured by the script itself (quality at a budget, rounds to target...)."""
        check_choice("role", role, ROLES)
        self.rows.append({"role": role, "name": name, "seconds": seconds, **numbers})

    def metric(self, name: str, value: Any) -> None:
        """Store a number about the case as a whole (an error, an agreement, a size)."""
        self.metrics[name] = value

    def as_dict(self) -> dict[str, Any]:
        def first(role: str) -> dict | None:
            return next((r for r in self.rows if r["role"] == role and r["seconds"]), None)

        fast, ref = first("fast"), first("reference")
        ratios: dict[str, float] = {}
        if fast and ref:
            ratios["fast_vs_reference"] = ref["seconds"] / fast["seconds"]
        if fast:
            for r in self.rows:
                if r["role"] == "peer" and r["seconds"]:
                    ratios[f"fast_vs_peer:{r['name']}"] = r["seconds"] / fast["seconds"]
        return {
            "case": self.name,
            "target": self.target,
            "size": self.size,
            "rows": self.rows,
            "metrics": self.metrics,
            "ratios": ratios,
        }


class Benchmark:
    """Command line, timing and results file of one chapter's benchmark script.

    Parameters
    ----------
    slug : str
        The chapter (``book/<slug>``); names the results file.
    description : str
        The script's docstring, shown by ``--help``.
    argv : list of str, optional
        Arguments (default: ``sys.argv``); extra options can be added with ``add_argument``
        before the first use of ``args``.
    """

    def __init__(self, slug: str, description: str | None = None, argv: list[str] | None = None):
        if not isinstance(slug, str) or not slug.isidentifier():
            raise ValueError(f"slug must be a chapter slug like 'eos', got {slug!r}")
        self.slug = slug
        self.parser = argparse.ArgumentParser(
            description=description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        self.parser.add_argument("--gpu", action="store_true", help="add the CUDA sizes")
        self.parser.add_argument("--quick", action="store_true", help="small sizes (< 20 s)")
        self.parser.add_argument("--reps", type=int, default=None, help="timed repetitions")
        self.parser.add_argument(
            "--threads",
            type=int,
            default=1,
            help="torch/BLAS CPU threads (default 1: lab's policy)",
        )
        self._argv = argv
        self._args: argparse.Namespace | None = None
        self.cases: list[Case] = []
        self.started = time.perf_counter()

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        """Add a script-specific option (call before reading ``args``)."""
        if self._args is not None:
            raise RuntimeError("add_argument must be called before the arguments are parsed")
        self.parser.add_argument(*args, **kwargs)

    @property
    def args(self) -> argparse.Namespace:
        if self._args is None:
            self._args = self.parser.parse_args(self._argv)
            a = self._args
            if a.threads < 1:
                self.parser.error(f"--threads must be >= 1, got {a.threads}")
            if a.reps is not None and a.reps < 1:
                self.parser.error(f"--reps must be >= 1, got {a.reps}")
            import torch

            if a.gpu and not torch.cuda.is_available():
                self.parser.error("--gpu given but torch sees no CUDA device")
            torch.set_num_threads(a.threads)
            try:
                from threadpoolctl import threadpool_limits

                threadpool_limits(a.threads)
            except ImportError:  # pragma: no cover
                pass
            from lab.core.runtime import seed

            seed(0)
        return self._args

    @property
    def quick(self) -> bool:
        return bool(self.args.quick)

    @property
    def gpu(self) -> bool:
        return bool(self.args.gpu)

    @property
    def reps(self) -> int:
        return self.args.reps or (3 if self.quick else 5)

    @property
    def kind(self) -> str:
        return "gpu" if self.gpu else "cpu"

    @contextmanager
    def case(self, name: str, target: str | None = None, **size: Any):
        """Open a comparison; rows are added with ``case.time`` / ``case.record``."""
        _ = self.args  # parse (and apply the thread policy) before anything is timed
        c = Case(self, name, target, size)
        print(f"-- {name}", flush=True)
        yield c
        self.cases.append(c)

    def results(self) -> dict[str, Any]:
        a = self.args
        return {
            "schema": SCHEMA,
            "slug": self.slug,
            "kind": self.kind,
            "quick": bool(a.quick),
            "threads": a.threads,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(),
            "wall_seconds": time.perf_counter() - self.started,
            "cases": [c.as_dict() for c in self.cases],
        }

    def table(self) -> str:
        """The results as a markdown table (one row per timed or recorded row)."""
        return markdown_table(self.results())

    def finish(self, path: str | Path | None = None) -> Path:
        """Print the table and write the results file; returns its path."""
        res = self.results()
        print(markdown_table(res))
        if path is None:
            stem = f"{self.slug}-{self.kind}" + ("-quick" if self.quick else "")
            path = RESULTS / f"{stem}.json"
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=2, default=_jsonable) + "\n")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return path


def _jsonable(x: Any) -> Any:
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def fmt_number(v: Any, digits: int = 4) -> str:
    """A table cell: a float to ``digits`` significant digits (``digits - 1`` in exponent form,
    outside ``[1e-3, 1e4)``), ``None`` empty, anything else as ``str``."""
    if v is None:
        return ""
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1e4 or abs(v) < 1e-3:
            return f"{v:.{digits - 2}e}"
        return f"{v:.{digits}g}"
    return str(v)


def fmt_seconds(s: float | None) -> str:
    """Seconds in the unit that reads best (µs, ms, s)."""
    if s is None:
        return ""
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def markdown_table(res: dict[str, Any]) -> str:
    """Render one results dictionary as a markdown table."""
    lines = [
        "| case | role | name | time (median) | fast path speed-up | other numbers |",
        "|---|---|---|---|---|---|",
    ]
    for case in res.get("cases", []):
        fast = next((r for r in case["rows"] if r["role"] == "fast" and r.get("seconds")), None)
        for r in case["rows"]:
            rel = ""
            if fast and r.get("seconds") and r is not fast:
                rel = f"{r['seconds'] / fast['seconds']:.3g}x"
            skip = {"role", "name", "device", "seconds", "seconds_min", "reps"}
            extra = ", ".join(f"{k} = {fmt_number(v)}" for k, v in r.items() if k not in skip)
            lines.append(
                f"| {case['case']} | {r['role']} | {r['name']} ({r.get('device', 'cpu')}) | "
                f"{fmt_seconds(r.get('seconds'))} | {rel} | {extra} |"
            )
        if case.get("metrics"):
            m = ", ".join(f"{k} = {fmt_number(v)}" for k, v in case["metrics"].items())
            lines.append(f"| {case['case']} | | checks | | | {m} |")
    return "\n".join(lines)
