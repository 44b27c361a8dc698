"""Live-widget latency: the wait after a learner moves a slider, notebook by notebook.

Executes each notebook in a fresh kernel (``LAB_PROGRESS=0``), then, in that kernel, moves
every control of every ``explore`` widget the notebook built to three values (grid values of
the static twin and values between them, the ones a learner's slider hits) and times the live
update: compute function, serialisation and redraw (:mod:`lab.tooling.widgetbench`). Target
(the design's chapter contract): per notebook, median <= 150 ms and slowest <= 1 s on 2 cores.
One case per notebook; the "fast" row is the median move, the metrics hold the maximum, the
slowest move and the memo hits (moves served by the figures the static twin precomputed).

    python benchmarks/bench_widgets.py            # every toc notebook (~20 min on 2 cores)
    python benchmarks/bench_widgets.py --quick    # one small notebook (< 20 s)
    python benchmarks/bench_widgets.py --notebooks book/coreset/03-training-under-noise.ipynb
    python benchmarks/bench_widgets.py --notebooks book/medro/02-water-digits.ipynb \
        --update "after its trainings were batched"

``--update REASON`` measures only ``--notebooks`` and puts their cases into the existing results
file in place of the old ones (the rest of the run and its stamp stay); the summary is computed
again over every notebook and names the ones measured again, with the date and the reason.

``--threads``, ``--reps`` and ``--gpu`` do not apply (each kernel runs the notebook's own
``lab.setup``; every move is timed once, as a learner makes it).
"""

from __future__ import annotations

import datetime as _dt
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.tooling.bench import RESULTS, ROOT, Benchmark, markdown_table  # noqa: E402
from lab.tooling.chapters import toc_notebooks  # noqa: E402
from lab.tooling.widgetbench import TARGET_MAX_S, TARGET_MEDIAN_S, measure_notebook  # noqa: E402

QUICK = ["book/eos/01-three-regimes.ipynb"]
TARGET = f"median <= {TARGET_MEDIAN_S * 1e3:.0f} ms, max <= {TARGET_MAX_S:.0f} s"


def main() -> None:
    bench = Benchmark("widgets", __doc__)
    bench.add_argument(
        "--notebooks", nargs="+", default=None, help="notebooks to measure (default: the toc's)"
    )
    bench.add_argument("--output", default=None, help="results file (default: the usual path)")
    bench.add_argument(
        "--update",
        metavar="REASON",
        default=None,
        help="measure only --notebooks and replace their cases in the existing results file",
    )
    args = bench.args
    if args.update is not None and (not args.notebooks or not args.update.strip()):
        raise SystemExit("--update needs --notebooks and a non-empty reason (why measure again)")
    if args.notebooks:
        paths = [Path(p).resolve() for p in args.notebooks]
    elif bench.quick:
        paths = [ROOT / p for p in QUICK]
    else:
        paths = toc_notebooks(ROOT)
    for path in paths:
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        name = str(rel).removeprefix("book/").removesuffix(".ipynb")
        with bench.case(name, target=TARGET, notebook=str(rel)) as case:
            try:
                res = measure_notebook(path)
            except Exception as err:  # a notebook that fails to execute is reported, not fatal
                case.metric("error", f"{type(err).__name__}: {str(err)[:200]}")
                continue
            case.metric("execute_s", round(res["execute_s"], 1))
            if res["tries"] > 1:  # the harness's kernel stalled and the notebook ran again
                case.metric("tries", res["tries"])
            if not res["moves"]:
                case.metric("moves", 0)
                continue
            case.record(
                "fast",
                "live update, median move",
                res["median_s"],
                moves=res["moves"],
                widgets=res["widgets"],
            )
            case.metric("median_ms", round(res["median_s"] * 1e3, 1))
            case.metric("max_ms", round(res["max_s"] * 1e3, 1))
            case.metric("memo_hits", res["memo_hits"])
            case.metric("slowest", res["slowest"])
            case.metric("meets_target", res["meets_target"])
            print(
                f"   {name}: median {res['median_s'] * 1e3:.0f} ms, max {res['max_s'] * 1e3:.0f} ms"
                f" over {res['moves']} moves ({res['memo_hits']} from the memo);"
                f" executed in {res['execute_s']:.0f} s",
                flush=True,
            )
    if args.update is not None:
        path = Path(args.output) if args.output else RESULTS / f"widgets-{bench.kind}.json"
        merged = update_results(json.loads(path.read_text()), bench.results(), args.update)
        print(markdown_table(merged))
        path.write_text(json.dumps(merged, indent=1) + "\n")
        print(f"updated {path}")
        return
    metrics, median = summarise_cases([c.as_dict() for c in bench.cases])
    with bench.case(SUMMARY, target=TARGET) as case:
        for key, value in metrics.items():
            case.metric(key, value)
        if median is not None:
            case.record("fast", MEDIAN_ROW, median)
    bench.finish(args.output)


SUMMARY = "all notebooks"
MEDIAN_ROW = "median of the notebooks' medians"


def summarise_cases(cases: list[dict]) -> tuple[dict, float | None]:
    """The summary of the notebook cases: ``({"notebooks", "over_target"[, "failed"]}, the
    median of their median moves or None)``."""
    medians = [
        r["seconds"] for c in cases for r in c.get("rows", [])[:1] if "median_ms" in c["metrics"]
    ]
    over = [c["case"] for c in cases if c["metrics"].get("meets_target") is False]
    failed = [c["case"] for c in cases if "error" in c["metrics"]]
    metrics = {"notebooks": len(cases), "over_target": ", ".join(over) or "none"}
    if failed:
        metrics["failed"] = ", ".join(failed)
    return metrics, statistics.median(medians) if medians else None


def update_results(old: dict, new: dict, reason: str) -> dict:
    """``old`` (a full run) with the notebook cases of ``new`` in place of its own, and the
    summary case computed again over every notebook; ``re_measured`` names the new cases, with
    their date and ``reason``, after what it said before. The stamp of ``old`` stays."""
    fresh = {c["case"]: c for c in new["cases"] if c["case"] != SUMMARY}
    unknown = sorted(set(fresh) - {c["case"] for c in old["cases"]})
    if unknown:
        raise SystemExit(f"not in the results file (run the full benchmark instead): {unknown}")
    cases = [fresh.get(c["case"], c) for c in old["cases"] if c["case"] != SUMMARY]
    metrics, median = summarise_cases(cases)
    before = next((c for c in old["cases"] if c["case"] == SUMMARY), {}).get("metrics", {})
    when = _dt.datetime.fromisoformat(new["date"]).strftime("%Y-%m-%d")
    note = f"{', '.join(fresh)} ({when}, {reason.strip()})"
    summary = {
        "case": SUMMARY,
        "target": TARGET,
        "size": {},
        "rows": [] if median is None else [{"role": "fast", "name": MEDIAN_ROW, "seconds": median}],
        "metrics": {
            **metrics,
            "re_measured": "; ".join(x for x in (before.get("re_measured"), note) if x),
        },
        "ratios": {},
    }
    return {**old, "cases": [*cases, summary]}


if __name__ == "__main__":
    main()
