"""Questions the instructor reads: an assignment's **explain** questions (otter's manual
questions), from the solution master to the instructor's report.

In the solution master an explain question is otter's manual question: a raw
``# BEGIN QUESTION`` cell with ``manual: true`` and its ``points``, the prompt (markdown,
``**Explain (1 point).** ...``), a raw ``# BEGIN SOLUTION`` cell, **one** markdown cell
``**Answer.** ...`` (the model answer) ``**Rubric.** ...`` (how to mark it), a raw
``# END SOLUTION`` and a raw ``# END QUESTION``. ``otter assign`` leaves the solution cell out
of the student notebook (there the prompt cell starts with ``<!-- BEGIN QUESTION -->``, then
comes an empty answer cell, and the next markdown cell starts with ``<!-- END QUESTION -->``) and
out of the autograder zip (which has no test, and no points, for the question).

* :func:`manual_questions` reads them from the master; :func:`write_rubrics` writes them, with the
  model answers and the rubrics, into ``instructor/rubrics.json`` beside the ``autograder/``
  folder (``lab assign``): the instructor's, never in what students get;
* :func:`answers` finds a submission's answer cells (after the prompt, up to the end marker), in
  the grading process, without executing anything;
* :func:`report_html` is ``instructor/manual.html`` of ``lab grade``: per question, the prompt,
  the model answer, the rubric and every student's answer (HTML-escaped; a missing answer says
  so). Their points are **pending** in ``grades.csv`` until the instructor marks them.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

__all__ = [
    "PAGE_BEGIN",
    "PAGE_END",
    "PLACEHOLDER",
    "RUBRICS",
    "answers",
    "load_rubrics",
    "manual_lines",
    "manual_questions",
    "page_cells",
    "report_html",
    "write_rubrics",
]

RUBRICS = "rubrics.json"  # in <lab assign's folder>/instructor/
PLACEHOLDER = "_Type your answer here, replacing this text._"  # otter's empty answer cell
OTTER_BEGIN, OTTER_END = "<!-- BEGIN QUESTION -->", "<!-- END QUESTION -->"
#: the exercise page's markers (its tests forbid otter's "BEGIN QUESTION" on the page)
PAGE_BEGIN = "<!-- explain: your instructor reads the answer below -->"
PAGE_END = "<!-- end of the answer -->"
MAX_ANSWER = 20_000  # characters of an answer kept for the report
MAX_CELLS = 20  # answer cells read after a prompt, at most
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(x for x in src if isinstance(x, str)) if isinstance(src, list) else str(src)


def _config(text: str, what: str) -> dict:
    import yaml

    body = text.split("\n", 1)[1] if "\n" in text else ""
    try:
        data = yaml.safe_load(body) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"{what}: unreadable config ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what}: its config is not a mapping")
    return data


def manual_questions(master: str | Path) -> dict[str, dict]:
    """``{name: {"points", "prompt", "answer", "rubric"}}`` of the master's manual questions,
    in order (see the module docstring for the format).

    Raises
    ------
    TypeError
        If ``master`` is not a path.
    ValueError
        If a manual question has no points, no solution cell or no ``**Rubric.**`` in it.
    """
    if not isinstance(master, (str, Path)):
        raise TypeError(f"master must be a path (got {master!r})")
    cells = json.loads(Path(master).read_text())["cells"]
    out: dict[str, dict] = {}
    current, part = None, None  # the manual question being read, and which part of it
    for cell in cells:
        text, kind = _text(cell), cell.get("cell_type")
        tag = text.strip().splitlines()[0].strip() if kind == "raw" and text.strip() else ""
        if tag == "# BEGIN QUESTION":
            conf = _config(text, f"master {master}: a question")
            name = str(conf.get("name", ""))
            current = None
            if conf.get("manual"):
                points = conf.get("points")
                if isinstance(points, bool) or not isinstance(points, (int, float)):
                    raise ValueError(f"master {master}: manual question {name} has no points")
                current, part = name, "prompt"
                out[name] = {"points": float(points), "prompt": [], "solution": []}
        elif current is None:
            continue
        elif tag == "# BEGIN SOLUTION":
            part = "solution"
        elif tag == "# END SOLUTION":
            part = None
        elif tag == "# END QUESTION":
            current = None
        elif part in ("prompt", "solution") and kind != "raw":
            out[current][part].append(text.strip())
    for name, q in out.items():
        solution = "\n\n".join(q.pop("solution")).strip()
        q["prompt"] = "\n\n".join(q["prompt"]).strip()
        if not solution:
            raise ValueError(f"master {master}: manual question {name} has no solution cell")
        answer, sep, rubric = solution.partition("**Rubric.**")
        if not sep:
            raise ValueError(
                f"master {master}: manual question {name}'s solution has no '**Rubric.**' part"
            )
        q["answer"] = answer.strip().removeprefix("**Answer.**").strip()
        q["rubric"] = rubric.strip()
    return out


def _assignment_name(master: Path) -> str:
    for cell in json.loads(master.read_text())["cells"]:
        text = _text(cell)
        if cell.get("cell_type") == "raw" and text.startswith("# ASSIGNMENT CONFIG"):
            return str(_config(text, f"master {master}").get("name") or "")
    return ""


def write_rubrics(master: str | Path, path: str | Path) -> dict:
    """Write ``{"assignment": name, "questions": manual_questions(master)}`` to ``path`` (JSON);
    return it.

    Raises
    ------
    TypeError, ValueError
        As :func:`manual_questions`; if ``path`` is not a path.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path (got {path!r})")
    data = {
        "assignment": _assignment_name(Path(master)),
        "questions": manual_questions(master),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return data


def load_rubrics(path: str | Path) -> tuple[str, dict[str, dict]]:
    """``(assignment name, questions)`` of a file :func:`write_rubrics` wrote.

    Raises
    ------
    TypeError
        If ``path`` is not a path.
    ValueError
        If the file is missing or not such a file.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"rubrics must be a path (got {path!r})")
    try:
        data = json.loads(Path(path).read_text())
        questions = data["questions"]
        for q in questions.values():
            float(q["points"])
            str(q["prompt"]), str(q["answer"]), str(q["rubric"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"rubrics {path} is not a rubrics.json of lab assign ({err!r})") from None
    return str(data.get("assignment") or ""), questions


def manual_lines(questions: dict[str, dict]) -> list[str]:
    """The lines of the model answers and rubrics (none may reach a student)."""
    lines = []
    for q in questions.values():
        for part in (q["answer"], q["rubric"]):
            lines += [ln.strip() for ln in part.splitlines() if len(ln.strip()) >= 12]
    return lines


def _key(prompt: str) -> str:
    """The first line of a prompt, comments removed and blanks collapsed (how it is found)."""
    text = _COMMENT.sub("", prompt).strip()
    first = text.splitlines()[0] if text else ""
    return re.sub(r"\s+", " ", first).strip()[:80]


def answers(notebook: dict, questions: dict[str, dict]) -> dict[str, str | None]:
    """``{question: answer text, or None}`` of a submitted notebook (parsed JSON): the cells
    after the question's prompt (found by its first line, else by otter's k-th
    ``<!-- BEGIN QUESTION -->`` marker) up to the end marker, otter's placeholder removed."""
    raw = notebook.get("cells") if isinstance(notebook, dict) else None
    cells = [
        (str(c.get("cell_type")), _text(c)) for c in (raw if isinstance(raw, list) else [])
        if isinstance(c, dict)
    ]  # fmt: skip
    keys = {q: _key(info["prompt"]) for q, info in questions.items()}
    prompts = [
        i for i, (kind, text) in enumerate(cells)
        if kind == "markdown" and (OTTER_BEGIN in text or PAGE_BEGIN in text)
    ]  # fmt: skip
    out: dict[str, str | None] = {}
    for k, (q, key) in enumerate(keys.items()):
        start = next(
            (
                i for i, (kind, text) in enumerate(cells)
                if kind == "markdown" and key and _key(text).startswith(key)
            ),
            prompts[k] if len(prompts) == len(keys) else None,
        )  # fmt: skip
        if start is None:
            out[q] = None
            continue
        parts = []
        for kind, text in cells[start + 1 : start + 1 + MAX_CELLS]:
            ends = (OTTER_END, PAGE_END, OTTER_BEGIN, PAGE_BEGIN, "grader.check(")
            if any(m in text for m in ends) or any(
                k2 and _key(text).startswith(k2) for k2 in keys.values()
            ):
                break
            body = text.replace(PLACEHOLDER, "").strip()
            if body:
                parts.append(f"[a code cell]\n{body}" if kind == "code" else body)
        answer = "\n\n".join(parts)
        out[q] = answer[:MAX_ANSWER] + ("\n[cut]" if len(answer) > MAX_ANSWER else "") or None
    return out


def page_cells(cells: list[dict], questions: dict[str, dict]) -> list[dict]:
    """The exercise page's cells: otter's question markers replaced by the page's own, and a
    line under each explain prompt saying the instructor reads the answer."""
    out = []
    for cell in cells:
        text = _text(cell)
        if cell.get("cell_type") == "markdown" and OTTER_BEGIN in text and questions:
            text = text.replace(OTTER_BEGIN, PAGE_BEGIN).rstrip() + (
                "\n\n*Your instructor reads this answer (marked with a rubric); "
                "it has no self-check.*"
            )
        if cell.get("cell_type") == "markdown" and OTTER_END in text:
            text = text.replace(OTTER_END, PAGE_END)
        out.append({**cell, "source": text})
    return out


def _points(value: float) -> str:
    return f"{value:g} point{'' if value == 1 else 's'}"


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def report_html(assignment: str, questions: dict[str, dict], submissions: dict) -> str:
    """``instructor/manual.html``: per question, its prompt, model answer and rubric, then every
    submission's answer (``submissions``: ``{file name: {question: answer or None}}``)."""
    title = "Questions read by the instructor" + (f": {assignment}" if assignment else "")
    out = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}"
        "td{vertical-align:top;border-top:1px solid #ccc;padding:.3em}"
        ".missing{color:#a00}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{len(submissions)} submissions. These points are <b>pending</b> in grades.csv "
        "(its <code>pending</code> column) until you mark them.</p>",
    ]
    for q, info in questions.items():
        out += [
            f"<h2>{html.escape(q)} ({_points(float(info['points']))})</h2>",
            "<h3>Prompt</h3>",
            _pre(info["prompt"]),
            "<h3>Model answer</h3>",
            _pre(info["answer"]),
            "<h3>Rubric</h3>",
            _pre(info["rubric"]),
            "<h3>Answers</h3>",
            "<table>",
        ]
        for name in sorted(submissions):
            answer = (submissions[name] or {}).get(q)
            cell = (
                _pre(answer)
                if answer
                else '<p class="missing">no answer (the answer cell is empty, or was '
                "not found in the notebook)</p>"
            )
            out.append(f"<tr><td>{html.escape(name)}</td><td>{cell}</td></tr>")
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
