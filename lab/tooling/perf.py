"""The book's performance page, built from the benchmark results files.

``book/performance.md`` holds one directive, ``{optlab-benchmarks}``
(:mod:`lab.tooling.benchdirective`); at build time it reads
``benchmarks/results/<slug>-<cpu|gpu>.json`` (written by :mod:`lab.tooling.bench`) for every
chapter in ``_toc.yml`` order and renders, per chapter, the machine stamp, a table (case, target,
reference, fast path, peers, speed-ups, checks) and one plot of the fast path's speed-up over the
reference and the peers. Nothing on the page is typed by hand: a rerun of ``make bench`` and a
rebuild change every number.

See: book/performance.md
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.tooling.bench import SCHEMA, fmt_number, fmt_seconds
from lab.tooling.chapters import chapters
from lab.tooling.paths import ROOT


def load_results(kind: str = "cpu", root: Path = ROOT) -> dict[str, dict | None]:
    """``{slug: results or None}`` for every toc chapter (None: no results file in the schema)."""
    out: dict[str, dict | None] = {}
    results = root / "benchmarks" / "results"
    for slug in chapters(root):
        path = results / f"{slug}-{kind}.json"
        data = None
        if path.exists():
            data = json.loads(path.read_text())
            if data.get("schema") != SCHEMA:
                data = None
        out[slug] = data
    return out


def _num(v: Any) -> str:
    return "None" if v is None else fmt_number(v, 3)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def stamp(res: dict) -> str:
    """One line: where and when the numbers were measured."""
    m = res.get("machine", {})
    where = m.get("gpu") or m.get("cpu") or m.get("processor", "?")
    return (
        f"Measured {res.get('date', '?')[:16].replace('T', ' ')} UTC on {where} "
        f"({m.get('cpu_count', '?')} CPU cores, {res.get('threads', '?')} thread(s) for the CPU "
        f"rows), Python {m.get('python', '?')}, torch {m.get('torch', '?')}, "
        f"numpy {m.get('numpy', '?')}; median of the timed repetitions; script wall time "
        f"{res.get('wall_seconds', 0):.0f} s"
        + (
            f"; load average {m['load_avg_1min']:.1f} when it finished"
            f"{' (a busy machine: times inflated)' if m['load_avg_1min'] > 1.5 * m.get('cpu_count', 1) else ''}."
            if m.get("load_avg_1min") is not None
            else "."
        )
    )


def table_markdown(res: dict) -> str:
    """A four-column markdown table: each case, then one line per implementation timed.

    The case's first line carries its size, the chapter's target and the cross-checks; the
    last column is how many times faster the fast path was than that line's implementation.
    """
    skip = {"role", "name", "device", "seconds", "seconds_min", "reps"}
    lines = [
        "| case | implementation | time (median) | fast path speed-up |",
        "|---|---|---|---|",
    ]
    for case in res.get("cases", []):
        rows = case.get("rows", [])
        fast = next((r for r in rows if r["role"] == "fast" and r.get("seconds")), None)
        head = f"**{case['case']}**"
        if case.get("target"):
            head += f"<br>target: {case['target']}"
        checks = ", ".join(f"{k} {_num(v)}" for k, v in (case.get("metrics") or {}).items())
        if checks:
            head += f"<br>checks: {checks}"
        order = {"fast": 0, "reference": 1, "peer": 2}
        for k, r in enumerate(sorted(rows, key=lambda r: order[r["role"]])):
            name = f"{r['role']}: {r['name']}"
            if r.get("device", "cpu") != "cpu":
                name += f" [{r['device']}]"
            extra = {key: v for key, v in r.items() if key not in skip}
            if extra:
                name += " (" + ", ".join(f"{key} {_num(v)}" for key, v in extra.items()) + ")"
            speed = ""
            if fast and r is not fast and r.get("seconds"):
                speed = f"{r['seconds'] / fast['seconds']:.3g}x"
            cells = [head if k == 0 else "", name, fmt_seconds(r.get("seconds")), speed]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def speedup_figure(results: dict[str, dict | None]) -> dict | None:
    """Plotly figure dict: the fast path's speed-up per case, against reference and peers."""
    xs_ref, ys_ref, xs_peer, ys_peer, text_peer = [], [], [], [], []
    for slug, res in results.items():
        if not res:
            continue
        for case in res.get("cases", []):
            label = f"{slug}: {case['case']}"
            if len(label) > 60:
                label = label[:57] + "..."
            r = case.get("ratios", {})
            if "fast_vs_reference" in r:
                xs_ref.append(r["fast_vs_reference"])
                ys_ref.append(label)
            for k, v in r.items():
                if k.startswith("fast_vs_peer:"):
                    xs_peer.append(v)
                    ys_peer.append(label)
                    text_peer.append(k.split(":", 1)[1])
    if not xs_ref and not xs_peer:
        return None
    n = len(set(ys_ref) | set(ys_peer))
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "fast path vs reference",
                "x": xs_ref,
                "y": ys_ref,
                "marker": {"size": 10, "symbol": "circle"},
            },
            {
                "type": "scatter",
                "mode": "markers",
                "name": "fast path vs peer",
                "x": xs_peer,
                "y": ys_peer,
                "text": text_peer,
                "hovertemplate": "%{y}<br>vs %{text}: %{x:.3g}x<extra></extra>",
                "marker": {"size": 9, "symbol": "diamond"},
            },
        ],
        "layout": {
            "height": max(320, 22 * n + 140),
            "xaxis": {"type": "log", "title": {"text": "speed-up of the fast path (x, log scale)"}},
            "yaxis": {"automargin": True, "autorange": "reversed"},
            "shapes": [
                {
                    "type": "line",
                    "x0": 1,
                    "x1": 1,
                    "yref": "paper",
                    "y0": 0,
                    "y1": 1,
                    "line": {"dash": "dot", "width": 1},
                }
            ],
            "legend": {"orientation": "h", "y": -0.12, "yanchor": "top"},
            "margin": {"l": 10, "r": 10, "t": 20, "b": 90},
        },
    }


def widgets_markdown(res: dict) -> str:
    """The live-widget latency table (``benchmarks/results/widgets-<kind>.json``, written by
    ``benchmarks/bench_widgets.py``): one row per notebook, median and slowest live update."""
    lines = [
        "| notebook | median move | slowest move | moves (from the memo) | slowest control | "
        "target met |",
        "|---|---|---|---|---|---|",
    ]
    target, summary = None, ""
    for case in res.get("cases", []):
        m = case.get("metrics") or {}
        target = target or case.get("target")
        if case["case"] == "all notebooks":
            if "notebooks" not in m:
                continue
            over = m.get("over_target", "")
            summary = f"\n\n{m.get('notebooks', '')} notebooks; over the target: {over or 'none'}"
            summary += "".join(
                f"; median of the notebooks' medians {r['seconds'] * 1e3:.0f} ms"
                for r in case.get("rows", [])[:1]
            )
            if m.get("re_measured"):
                summary += f". Measured again after a change: {m['re_measured']}"
            summary += "."
            continue
        if "error" in m:
            cells = [case["case"], "", "", "", f"failed: {m['error']}", "no"]
        elif "median_ms" not in m:
            cells = [case["case"], "", "", "0", "no widget", ""]
        else:
            moves = next((r.get("moves") for r in case.get("rows", []) if r.get("moves")), "")
            cells = [
                case["case"],
                f"{m['median_ms']:.0f} ms",
                f"{m['max_ms']:.0f} ms",
                f"{moves} ({m.get('memo_hits', 0)})",
                m.get("slowest", ""),
                "yes" if m.get("meets_target") else "**no**",
            ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    head = f"Target per notebook: {target}.\n\n" if target else ""
    return head + "\n".join(lines) + summary


def page_markdown(kind: str = "cpu", root: Path = ROOT) -> tuple[str, dict | None]:
    """The generated part of the performance page: markdown and the speed-up figure."""
    results = load_results(kind, root)
    parts = []
    missing = [s for s, r in results.items() if r is None]
    for slug, res in results.items():
        if res is None:
            continue
        parts.append(f"**{slug}** ({{doc}}`chapter <{slug}/index>`)\n\n{stamp(res)}\n")
        parts.append(table_markdown(res) + "\n")
    if missing:
        parts.append(
            "No results file in the current schema for: "
            + ", ".join(f"`{s}`" for s in missing)
            + f" (run `make bench{' GPU=1' if kind == 'gpu' else ''}`)."
        )
    if not any(results.values()):
        parts = [
            f"No {kind.upper()} benchmark has been run yet "
            f"(`make bench{' GPU=1' if kind == 'gpu' else ''}` writes the results files)."
        ]
    widgets = root / "benchmarks" / "results" / f"widgets-{kind}.json"
    if widgets.exists():
        res = json.loads(widgets.read_text())
        if res.get("schema") == SCHEMA:
            parts.append(
                "\n**Live widgets** (`benchmarks/bench_widgets.py`): the wait after moving a "
                "control of a notebook's `explore` widget in a kernel (compute, serialisation "
                "and redraw), three values per control, grid values of the static twin and "
                "values between them.\n\n" + stamp(res) + "\n\n" + widgets_markdown(res) + "\n"
            )
    return "\n".join(parts), speedup_figure(results)
