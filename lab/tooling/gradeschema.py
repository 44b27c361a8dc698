"""Assignment tests as data: what the sandbox runs, what it returns, how the grader scores it.

An otter autograder zip holds each question's tests as doctest cases (``tests/q1.py``): Python
code that calls the student's functions and checks the results with
:func:`lab.tooling.grading.assert_close` or ``assert``. :func:`load_tests` reads them from the
zip without executing anything (``ast.literal_eval``), and :func:`program` rewrites each case
into one of two programs:

* the **student** program, run in the submission's sandbox: every
  ``assert_close(name, got, expected, ...)`` becomes ``__lab_case__(got)``, so only the
  student's answer is computed and recorded; the expected value, the tolerances and the message
  are left out, and so are the statements whose only use is to compute them (``ref = ...``).
  ``assert test`` becomes ``__lab_check__(test)`` (its message left out);
* the **reference** program, run once per class on the instructor's solution:
  ``__lab_case__(got, expected, name, rtol=..., atol=..., msg=...)`` records the expected values.

The sandbox sends the student's answers back as JSON (:func:`encode`: numbers and arrays, or text,
such as a predict question's choice); :func:`score` compares them with the reference in the
grading process, which never runs student code (text is compared after ``.strip().lower()``). Patching anything inside
the sandbox (``assert_close``, the recorder, ``json``, the result pipe) can then only change what
the student answers, never the expected values, which never enter the sandbox. The verdict of a
bare ``assert`` is still computed inside the sandbox (see ``book/teaching.md``).

Feedback (:func:`score`) shows public cases in full (assert_close's message, computed here) and
hidden ones as "a hidden case failed", with no values; exception text is cut to a short excerpt
with every line of the hidden tests and of the solution redacted (:func:`sanitize`).
"""

from __future__ import annotations

import ast
import builtins
import doctest
import json
import math
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "FORBIDDEN",
    "Case",
    "NonNumeric",
    "QuestionScore",
    "decode",
    "encode",
    "forbidden_questions",
    "load_tests",
    "program",
    "sanitize",
    "score",
]

EXCERPT_CHARS = 200  # of a student's exception text, in the feedback
MAX_TEXT = 2000  # characters of a text answer that travel back from the sandbox
#: the ``lab`` functions an assignment asks the student to write: inside the sandbox they raise
#: when the student's code calls them, and cost the question whose tests call a function of that
#: name (:func:`forbidden_questions`; ``lab grade --forbid`` names others, with their question)
FORBIDDEN: dict[str, list[str]] = {
    "eos": ["lab.eos.fit_power_law"],
}
_ASSERT_CLOSE_DEFAULTS = {"rtol": 1e-9, "atol": 1e-12, "msg": ""}


@dataclass
class Case:
    """One otter test case: ``question``, its index ``index`` in the question, the doctest code
    turned into plain Python (``source``), whether it is ``hidden``, and its share of points."""

    question: str
    index: int
    source: str
    hidden: bool
    points: float


@dataclass
class QuestionScore:
    score: float
    max: float
    lines: list[str] = field(default_factory=list)  # the student's feedback
    full: list[str] = field(default_factory=list)  # the instructor's (hidden cases too)


def load_tests(autograder: str | Path) -> tuple[str, list[Case]]:
    """``(assignment name, cases)`` of an otter autograder zip, read without executing it.

    Raises
    ------
    TypeError
        If ``autograder`` is not a path.
    ValueError
        If it is not a zip with otter tests in doctest format.
    """
    if not isinstance(autograder, (str, Path)):
        raise TypeError(f"autograder must be a path (got {autograder!r})")
    try:
        with zipfile.ZipFile(autograder) as z:
            names = sorted(n for n in z.namelist() if re.fullmatch(r"tests/[^/]+\.py", n))
            texts = {n: z.read(n).decode() for n in names}
            config = (
                json.loads(z.read("otter_config.json"))
                if "otter_config.json" in z.namelist()
                else {}
            )
    except (OSError, zipfile.BadZipFile, ValueError) as err:
        raise ValueError(f"autograder {autograder} is not an otter zip: {err}") from err
    cases: list[Case] = []
    for name in names:
        test = None
        for node in ast.parse(texts[name]).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "test" for t in node.targets
            ):
                test = ast.literal_eval(node.value)
        if not isinstance(test, dict):
            raise ValueError(f"autograder {autograder}: {name} holds no otter test dict")
        found = [c for s in test.get("suites", []) for c in s.get("cases", [])]
        for suite in test.get("suites", []):
            if (
                suite.get("type", "doctest") != "doctest"
                or suite.get("setup")
                or suite.get("teardown")
            ):
                raise ValueError(f"autograder {autograder}: {name} is not a plain doctest suite")
        shares = _case_points(test.get("points"), found, f"autograder {autograder}: {name}")
        for i, (case, share) in enumerate(zip(found, shares, strict=True)):
            examples = doctest.DocTestParser().get_examples(case["code"])
            if any(e.want.strip() for e in examples):
                raise ValueError(f"autograder {autograder}: {name} compares printed output")
            source = "".join(e.source for e in examples)
            cases.append(Case(str(test["name"]), i, source, bool(case.get("hidden")), share))
    if not cases:
        raise ValueError(f"autograder {autograder} holds no tests")
    return str(config.get("assignment_name") or ""), cases


def _case_points(total, cases: list[dict], where: str) -> list[float]:
    """Each case's points, as otter resolves them (``resolve_test_file_points``): a case's own
    ``points`` (a predict question's public check has ``points: 0``), the rest of the
    question's total shared equally by the others."""
    points = [c.get("points") for c in cases]
    if isinstance(total, list):
        if len(total) != len(cases):
            raise ValueError(f"{where}: {len(total)} point values for {len(cases)} cases")
        points, total = list(total), None
    bad = [p for p in [total, *points] if p is not None and not isinstance(p, (int, float))]
    if bad or any(isinstance(p, bool) for p in [total, *points]):
        raise ValueError(f"{where}: points must be numbers (got {bad or [total, *points]})")
    given = sum(p for p in points if p is not None)
    free = sum(p is None for p in points)
    if total is not None:
        if given > total:
            raise ValueError(f"{where}: its cases hold more points than the question")
        share = (total - given) / free if free else 0.0
    elif all(p in (0, None) for p in points):
        share = 1 / free if free else 0.0  # otter: a question without points is worth 1
    else:
        share = 0.0
    return [float(p) if p is not None else float(share) for p in points]


def forbidden_questions(cases: list[Case], symbols: list[str]) -> dict[str, list[str]]:
    """``{question: [symbol, ...]}``: each ``lab.module.name`` under the first question whose
    tests call ``name(...)`` as the student's function (not ``module.name(...)``); a symbol no
    test calls is left out.

    Raises
    ------
    TypeError
        If ``cases`` is not a list of :class:`Case` or ``symbols`` not a list of strings.
    """
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise TypeError("cases must be a list of Case")
    if not isinstance(symbols, list) or not all(isinstance(x, str) for x in symbols):
        raise TypeError(f"symbols must be a list of dotted names (got {symbols!r})")
    out: dict[str, list[str]] = {}
    for symbol in symbols:
        name = symbol.rpartition(".")[2]
        call = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
        question = next((c.question for c in cases if call.search(c.source)), None)
        if question is not None:
            out.setdefault(question, []).append(symbol)
    return out


# -- rewriting ---------------------------------------------------------------------------------
def _is_assert_close(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "assert_close") or (
        isinstance(f, ast.Attribute) and f.attr == "assert_close"
    )


def _names(nodes) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name):
                out.add(sub.id)
    return out


class _Rewrite(ast.NodeTransformer):
    def __init__(self, reference: bool):
        self.reference = reference
        self.expected: list[ast.AST] = []  # what the student program leaves out

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if not _is_assert_close(node):
            return node
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        params = ["name", "got", "expected", "rtol", "atol", "msg"]
        for p, a in zip(params, args, strict=False):
            kw[p] = a
        if "got" not in kw or "expected" not in kw or "name" not in kw:
            raise ValueError(f"cannot read assert_close call: {ast.unparse(node)}")
        rec = ast.Name("__lab_case__", ast.Load())
        if not self.reference:
            self.expected += [v for k, v in kw.items() if k not in ("got",)]
            return ast.Call(rec, [kw["got"]], [])
        extra = [ast.keyword(k, kw[k]) for k in ("rtol", "atol", "msg") if k in kw]
        return ast.Call(rec, [kw["got"], kw["expected"], kw["name"]], extra)

    def visit_Assert(self, node: ast.Assert):
        self.generic_visit(node)
        call = ast.Call(
            ast.Name("__lab_check__", ast.Load()), [node.test, ast.Constant(node.lineno)], []
        )
        if not self.reference and node.msg is not None:
            self.expected.append(node.msg)
        return ast.Expr(call)


def _targets(stmt: ast.stmt) -> set[str] | None:
    """The plain names an assignment binds (None: not a plain-name assignment)."""
    if isinstance(stmt, ast.AugAssign):
        return {stmt.target.id} if isinstance(stmt.target, ast.Name) else None
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return None
    names: set[str] = set()
    for t in targets:
        for sub in ast.walk(t):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif not isinstance(sub, (ast.Tuple, ast.List, ast.Store, ast.Starred)):
                return None
    return names


def _slice(tree: ast.Module, expected_names: set[str]) -> None:
    """Drop the assignments whose names only feed the left-out expected values."""
    while True:
        bodies = [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.For, ast.If, ast.While, ast.With))
        ]
        candidates = []
        for owner in bodies:
            for attr in ("body", "orelse"):
                for stmt in getattr(owner, attr, []) or []:
                    t = _targets(stmt)
                    if t and t <= expected_names:
                        candidates.append((owner, attr, stmt, t))
        removable = []
        for owner, attr, stmt, t in candidates:
            if not (t & _loads_outside(tree, stmt)):
                removable.append((owner, attr, stmt))
        if not removable:
            return
        for owner, attr, stmt in removable:
            body = getattr(owner, attr)
            body[body.index(stmt)] = ast.Pass()


def _loads_outside(tree: ast.AST, skip: ast.stmt) -> set[str]:
    out: set[str] = set()

    def walk(node):
        if node is skip:
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.add(node.id)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)  # x += ... reads x
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(tree)
    return out


def program(case: Case, *, reference: bool) -> str:
    """The Python source the sandbox runs for ``case`` (see the module's docstring).

    Raises
    ------
    TypeError
        If ``case`` is not a :class:`Case`.
    """
    if not isinstance(case, Case):
        raise TypeError(f"case must be a Case (got {case!r})")
    tree = ast.parse(case.source)
    rw = _Rewrite(reference)
    tree = rw.visit(tree)
    if not reference:
        expected_names = _names(rw.expected)
        _slice(tree, expected_names)
    return ast.unparse(ast.fix_missing_locations(tree))


# -- values ------------------------------------------------------------------------------------
def encode(value) -> dict:
    """A number, an array, a nested list or a tensor as JSON data (``{"shape", "data"}``), a
    string as ``{"text": ...}`` (its first :data:`MAX_TEXT` characters); anything else as
    ``{"type": name}``."""
    if isinstance(value, str):
        return {"text": str(value)[:MAX_TEXT]}
    try:
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        arr = np.asarray(value)
        if value is None or arr.dtype.kind not in "biuf":
            raise TypeError
        arr = arr.astype(float)
    except Exception:  # noqa: BLE001 - not numeric: only its type travels
        return {"type": type(value).__name__[:60]}
    data = [x if math.isfinite(x) else repr(x) for x in arr.ravel().tolist()]
    return {"shape": list(arr.shape), "data": data}


@dataclass(frozen=True)
class NonNumeric:
    """What :func:`decode` returns for a value that is neither numbers nor text (its type's
    name, or ``<malformed>``)."""

    label: str

    def __str__(self) -> str:
        return self.label


def decode(data) -> object:
    """The value :func:`encode` wrote: an array, a string (``{"text": ...}``), or a
    :class:`NonNumeric` naming a value of another type (or malformed data)."""
    if not isinstance(data, dict):
        return NonNumeric("<malformed>")
    if "text" in data:
        text = data["text"]
        return text[:MAX_TEXT] if isinstance(text, str) else NonNumeric("<malformed>")
    if "type" in data:
        return NonNumeric(f"<{str(data['type'])[:60]}>")
    try:
        shape = [int(s) for s in data["shape"]]
        flat = [float(x) for x in data["data"]]
    except (KeyError, TypeError, ValueError):
        return NonNumeric("<malformed>")
    if len(shape) > 32 or len(flat) != int(np.prod(shape)):
        return NonNumeric("<malformed>")
    return np.asarray(flat, dtype=float).reshape(shape)


# -- scoring -----------------------------------------------------------------------------------
_BUILTIN_ERRORS = {
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
}


def sanitize(text: object, secrets: list[str], limit: int = EXCERPT_CHARS) -> str:
    """A short, printable, one-paragraph excerpt of ``text`` with every secret line redacted."""
    text = str(text)[: 20 * limit]
    for s in sorted(set(secrets), key=len, reverse=True):
        if len(s) >= 6:
            text = text.replace(s, "[redacted]")
    text = "".join(c if c.isprintable() else " " for c in text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit] + ("..." if len(text) > limit else "")


def error_name(name: object) -> str:
    """A built-in exception's name, or "an exception" (a class name can carry any text)."""
    return str(name) if name in _BUILTIN_ERRORS else "an exception"


def _secret_lines(cases: list[Case], solution: list[str]) -> list[str]:
    out = [ln.strip() for c in cases if c.hidden for ln in c.source.splitlines()]
    return [s for s in out + list(solution) if len(s.strip()) >= 6]


def _check_case(case: Case, ref: dict, got: dict | None, secrets: list[str]):
    """``(passed, student line, instructor line)`` of one case."""
    from lab.tooling.grading import assert_close

    tag = f"{case.question} case {case.index + 1}{' (hidden)' if case.hidden else ''}"
    hidden_fail = f"{tag}: a hidden case failed"

    def fail(detail: str, public_detail: str | None = None):
        shown = hidden_fail if case.hidden else f"{tag}: {public_detail or detail}"
        return False, shown, f"{tag}: FAILED {detail}"

    if not isinstance(got, dict):
        return fail("no answer came back (the notebook stopped before this test)")
    if got.get("error"):
        name = error_name(got.get("error"))
        excerpt = sanitize(got.get("message", ""), secrets)
        if case.hidden:
            return False, f"{hidden_fail} ({name})", f"{tag}: FAILED {name}: {excerpt}"
        return fail(f"{name}: {excerpt}")
    events, expected = got.get("events"), ref["events"]
    if not isinstance(events, list) or len(events) != len(expected):
        return fail(
            f"the test recorded {len(events) if isinstance(events, list) else 'no'} results, "
            f"expected {len(expected)}",
            "the test did not run to its end",
        )
    for mine, want in zip(events, expected, strict=True):
        if not isinstance(mine, dict) or mine.get("kind") != want["kind"]:
            return fail("the answers are not those of this test", "the test did not run as written")
        if want["kind"] == "check":
            if mine.get("ok") is not True:
                line = (
                    case.source.splitlines()[want["line"] - 1].strip() if want.get("line") else ""
                )
                return fail(f"check failed: {line[:160]}")
            continue
        value, wanted = decode(mine.get("got")), decode(want["expected"])
        try:
            if isinstance(value, NonNumeric):
                kind = "a text answer" if isinstance(wanted, str) else "a number or an array"
                raise AssertionError(f"{want['name']}: expected {kind}, found {value}")
            if isinstance(wanted, str) and isinstance(value, np.ndarray):
                value = value.tolist()  # a number where a text answer is expected: say so
            assert_close(
                str(want["name"]),
                value,
                wanted,
                rtol=float(want["rtol"]),
                atol=float(want["atol"]),
                msg=str(want.get("msg", "")),
            )
        except AssertionError as err:
            # a text answer is the student's own, but it can carry text it found in memory
            return fail(sanitize(err, secrets, 400))
    return True, f"{tag}: passed", f"{tag}: passed"


def score(
    cases: list[Case], reference: dict, answers: dict, *, solution: list[str] = ()
) -> dict[str, QuestionScore]:
    """Score the sandbox's ``answers`` against the ``reference`` run, question by question.

    ``reference`` and ``answers`` map ``"q1/0"`` (question/case index) to what the runner
    recorded. A case passes when it raised nothing, recorded as many results as the reference and
    every result matches (assert_close's test, with the reference's expected value and
    tolerances; a check is ``True``). A question scores its points times the share of its cases
    that pass.

    Raises
    ------
    TypeError
        If an argument is of the wrong type.
    ValueError
        If the reference misses a case or fails it (the solution must pass its own tests).
    """
    if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
        raise TypeError("cases must be a list of Case")
    if not isinstance(reference, dict) or not isinstance(answers, dict):
        raise TypeError("reference and answers must be dicts")
    secrets = _secret_lines(cases, list(solution))
    out: dict[str, QuestionScore] = {}
    for case in cases:
        key = f"{case.question}/{case.index}"
        ref = reference.get(key)
        if not isinstance(ref, dict) or ref.get("error") or "events" not in ref:
            detail = ref.get("message", "") if isinstance(ref, dict) else "missing"
            raise ValueError(f"reference: the solution fails {key}: {str(detail)[:300]}")
        q = out.setdefault(case.question, QuestionScore(0.0, 0.0))
        q.max += case.points
        ok, line, full = _check_case(case, ref, answers.get(key), secrets)
        q.score += case.points if ok else 0.0
        q.lines.append(line)
        q.full.append(full)
    return out


def check_reference(cases: list[Case], reference: dict) -> list[str]:
    """The cases the solution itself fails in the reference run (must be empty)."""
    bad = []
    for case in cases:
        key = f"{case.question}/{case.index}"
        ref = reference.get(key)
        if not isinstance(ref, dict) or ref.get("error"):
            bad.append(f"{key}: {str((ref or {}).get('message', 'missing'))[:300]}")
            continue
        got = {
            "events": [
                {"kind": e["kind"], "ok": e.get("ok"), "got": e.get("got")} for e in ref["events"]
            ]
        }
        ok, _, full = _check_case(case, ref, got, [])
        if not ok:
            bad.append(full)
    return bad
