"""The book's scorecard (``{scorecard}`` in ``book/scorecard.md``): every chapter's verdicts
counted, the controls and diagnoses behind them, the claims whose rival does at least as well,
and every claim grouped by verdict. Called by :mod:`lab.tooling.claimsext` when pages are
written, from the build's records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes

from lab.core.claims import NOT_MEASURED, NOT_REPRODUCED, QUALITATIVE, REPRODUCED, VERDICTS
from lab.tooling.claimsext import (
    VERDICT_CLASS,
    VERDICT_SHORT,
    control_text,
    diagnosis_of,
    link_node,
    table_node,
)

__all__ = [
    "DIAGNOSIS_ORDER",
    "changes_nodes",
    "chapter_title",
    "controlled",
    "rival_as_good",
    "scorecard_nodes",
    "without_rival",
]


def chapter_title(env: Any, slug: str) -> str:
    title = env.titles.get(f"book/{slug}/index")
    return title.astext() if title is not None else slug


def controlled(recs: list[dict]) -> tuple[int, int]:
    """(reproduced paper claims whose rule rejects a control, reproduced paper claims)."""
    from lab.core.claims import is_paper_sourced

    paper = [r for r in recs if r["verdict"] == REPRODUCED and is_paper_sourced(r["source"])]
    ok = [
        r
        for r in paper
        if any(c["verdict"] != REPRODUCED or "as_good" in c for c in r.get("controls") or [])
    ]
    return len(ok), len(paper)


def without_rival(recs: list[dict]) -> list[dict]:
    """The records that say why no honest rival exists at our size (``no_rival``)."""
    return [r for r in recs if r.get("no_rival") and not r.get("controls")]


DIAGNOSIS_ORDER = (
    "scale",
    "noise-floor",
    "tight-null",
    "official-code",
    "deviation",
    "open",
    "missing",
)


def rival_as_good(recs: list[dict]) -> list[dict]:
    """The records whose rival's verdict, under the claim's rule, is at least as good."""
    from lab.core.claims import rivals_as_good

    return [r for r in recs if rivals_as_good(r)]


def changes_nodes(app: Any, fromdoc: str, recs: list[dict]) -> list:
    """ "Changed since the last release": every claim whose verdict differs from the release's
    (lab/tooling/released.json), with the disclosed reason."""
    from lab.tooling.release import changes, released

    last = released()
    if not last:
        return [
            nodes.rubric(text="Changed since the last release"),
            nodes.paragraph(text="No release yet."),
        ]
    rows = changes(recs, last)
    out = [
        nodes.rubric(
            text=f"Changed since the last release ({last['version']}, {last['date']}): {len(rows)}"
        )
    ]
    if not rows:
        out.append(nodes.paragraph(text="No verdict changed."))
        return out
    out.append(
        table_node(
            ["claim", "then", "now", "why"],
            [
                [
                    [link_node(app, fromdoc, r["record"], r["key"])] if r["record"] else r["key"],
                    VERDICT_SHORT.get(r["old"], r["old"] or "—"),
                    VERDICT_SHORT.get(r["new"], r["new"] or "—"),
                    r["reason"],
                ]
                for r in rows
            ],
            [30, 12, 12, 46],
            ["optlab-scorecard-summary", "optlab-scorecard-changes"],
        )
    )
    return out


def scorecard_nodes(app: Any, fromdoc: str, recs: list[dict]):
    from lab.core.claims import DIAGNOSES
    from lab.tooling.chapters import chapters

    env = app.env
    container = nodes.container(classes=["optlab-scorecard"])
    by_chapter: dict[str, list[dict]] = {}
    for r in recs:
        by_chapter.setdefault(r["chapter"], []).append(r)
    totals = dict.fromkeys(VERDICTS, 0)
    rows = []
    for slug in chapters(Path(env.srcdir)):
        crecs = by_chapter.get(slug, [])
        counts = {v: sum(r["verdict"] == v for r in crecs) for v in VERDICTS}
        for v in VERDICTS:
            totals[v] += counts[v]
        ref = nodes.reference(
            "",
            "",
            internal=True,
            refuri=app.builder.get_relative_uri(fromdoc, f"book/{slug}/index"),
        )
        ref += nodes.Text(chapter_title(env, slug))
        ok, paper = controlled(crecs)
        negatives = [r for r in crecs if r["verdict"] in (QUALITATIVE, NOT_REPRODUCED)]
        diagnosed = sum(diagnosis_of(r) != "missing" for r in negatives)
        cells = [str(counts[v]) for v in VERDICTS] + [
            str(len(crecs)),
            f"{ok} of {paper}",
            f"{diagnosed} of {len(negatives)}",
            str(len(rival_as_good(crecs))),
            str(len(without_rival(crecs))),
        ]
        rows.append([[ref], *cells])
    ok, paper = controlled(recs)
    negatives = [r for r in recs if r["verdict"] in (QUALITATIVE, NOT_REPRODUCED)]
    diagnosed = sum(diagnosis_of(r) != "missing" for r in negatives)
    rows.append(
        [[nodes.strong(text="all chapters")]]
        + [[nodes.strong(text=str(totals[v]))] for v in VERDICTS]
        + [[nodes.strong(text=str(sum(totals.values())))]]
        + [
            [nodes.strong(text=f"{ok} of {paper}")],
            [nodes.strong(text=f"{diagnosed} of {len(negatives)}")],
            [nodes.strong(text=str(len(rival_as_good(recs))))],
            [nodes.strong(text=str(len(without_rival(recs))))],
        ]
    )
    container += table_node(
        [
            "chapter",
            "reproduced",
            "qualitatively",
            "not reproduced",
            "not measured",
            "claims",
            "controlled",
            "diagnosed",
            "rival as good",
            "no rival at this size",
        ],
        rows,
        [20, 8, 8, 8, 8, 7, 10, 10, 9, 9],
        ["optlab-scorecard-summary"],
    )
    # claims whose rival does as well under the same rule: a finding, listed by name
    rivals = rival_as_good(recs)
    container += nodes.rubric(text=f"Rival at least as good ({len(rivals)})")
    if rivals:
        container += table_node(
            ["chapter", "claim", "verdict", "the rival under the same rule"],
            [
                [
                    chapter_title(env, r["chapter"]),
                    [link_node(app, fromdoc, r, r["statement"])],
                    VERDICT_SHORT.get(r["verdict"], r["verdict"]),
                    control_text(dict(r, diagnosis=None)),
                ]
                for r in rivals
            ],
            [16, 40, 12, 32],
            ["optlab-scorecard-summary", "optlab-scorecard-rivals"],
        )
    else:
        container += nodes.paragraph(text="None in this build.")
    container += changes_nodes(app, fromdoc, recs)
    # why what did not reproduce did not: counts by diagnosis
    container += nodes.rubric(text=f"Why {len(negatives)} claims did not reproduce (in full)")
    kinds = {k: [r for r in negatives if diagnosis_of(r) == k] for k in DIAGNOSIS_ORDER}
    meaning = {**DIAGNOSES, "missing": "no diagnosis recorded"}
    container += table_node(
        ["diagnosis", "meaning", "not reproduced", "qualitatively"],
        [
            [
                [nodes.literal(text=k)],
                meaning[k],
                str(sum(r["verdict"] == NOT_REPRODUCED for r in group)),
                str(sum(r["verdict"] == QUALITATIVE for r in group)),
            ]
            for k, group in kinds.items()
        ],
        [16, 52, 16, 16],
        ["optlab-scorecard-summary", "optlab-scorecard-diagnoses"],
    )
    # every claim, grouped by verdict: what does not reproduce first, by diagnosis
    for verdict in (NOT_REPRODUCED, QUALITATIVE, REPRODUCED, NOT_MEASURED):
        group = [r for r in recs if r["verdict"] == verdict]
        if verdict != REPRODUCED:
            group.sort(key=lambda r: DIAGNOSIS_ORDER.index(diagnosis_of(r)))
        container += nodes.rubric(text=f"{verdict.capitalize()} ({len(group)})")
        if not group:
            container += nodes.paragraph(text="None in this build.")
            continue
        rows = [
            [
                chapter_title(env, r["chapter"]),
                [link_node(app, fromdoc, r, r["statement"])],
                r.get("source", ""),
                r.get("paper") or "—",
                r.get("text", ""),
                control_text(r) or "—",
            ]
            for r in group
        ]
        container += table_node(
            [
                "chapter",
                "claim",
                "source",
                "paper",
                "measured",
                "control" if verdict == REPRODUCED else "why",
            ],
            rows,
            [14, 30, 8, 12, 18, 18],
            ["optlab-claims", f"optlab-scorecard-{VERDICT_CLASS[verdict]}"],
        )
    return container
