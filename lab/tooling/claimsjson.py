"""``claims.json``: the claim records of a run, with the environment that produced them.

The book build publishes ``_build/html/_static/claims.json`` (``lab.tooling.claimsext`` calls
:func:`write_build`) and ``lab claims`` prints, writes and compares the same documents, so that a
researcher can rerun a chapter (on a GPU, at ``FULL`` size) and see what changed:

- :func:`environment`: git commit, Python and key package versions, CPU / GPU model, threads,
  size (default or ``FULL``), date;
- :func:`document` / :func:`validate` / :func:`schema`: the top-level shape
  ``{"schema": 2, "lab": version, "environment": {...}, "claims": [...]}``, checked against
  ``claims.schema.json`` (kept beside this module, published beside ``claims.json``);
- :func:`read` / :func:`records_from_notebook`: a document from a ``claims.json``, a build folder,
  an executed notebook or a folder of them (records are the ``application/vnd.optlab.claim+json``
  outputs, see :class:`lab.core.claims.Record`);
- :func:`compare` / :func:`format_comparison`: a reader's run against a published document,
  verdict changes first, then values (``text``/``measured``), controls' verdicts, diagnoses,
  other fields, then claims missing or added;
- :func:`cli`: the ``lab claims`` command (see ``lab claims --help``).
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.core.claims import CLAIM_MIME, REPRODUCED, format_value
from lab.core.numerics import fingerprint
from lab.tooling.paths import ROOT

__all__ = [
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "Comparison",
    "compare",
    "default_build",
    "document",
    "environment",
    "format_comparison",
    "format_environments",
    "format_records",
    "read",
    "records_from_notebook",
    "schema",
    "validate",
    "write_build",
]

SCHEMA_VERSION = 2
SCHEMA_FILE = Path(__file__).with_name("claims.schema.json")
PACKAGES = ("lab", "torch", "numpy", "scipy")
# bookkeeping that says where a record was found, not what was measured
_LOCATION = frozenset({"docname", "cell_index", "notebook", "key", "schema"})
_VALUE_FIELDS = ("text", "measured")


# ----------------------------------------------------------------------------------------
# Environment and document
# ----------------------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _version(name: str) -> str | None:
    if name == "lab":
        from lab import __version__

        return __version__
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def _size_of(records: list[dict]) -> str:
    sizes = {r.get("size", "default") for r in records}
    if sizes == {"full"}:
        return "FULL"
    return "mixed" if len(sizes) > 1 else "default"


def environment(
    size: str = "default", *, root: Path | str | None = None, source: str | None = None
) -> dict[str, Any]:
    """The environment of this process: what ``claims.json`` publishes beside the records.

    Parameters
    ----------
    size
        ``"default"``, ``"FULL"`` (paper scale) or ``"mixed"``.
    root
        The checkout whose git commit is reported (default: the one ``lab`` lives in).
    source
        What produced the records ("book build", "lab claims eos", ...).
    """
    if size not in ("default", "FULL", "mixed"):
        raise ValueError(f"size must be 'default', 'FULL' or 'mixed', got {size!r}")
    if source is not None and not isinstance(source, str):
        raise TypeError(f"source must be a string, got {type(source).__name__}")
    root = Path(root) if root is not None else ROOT
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    gpu, torch_threads = None, None
    try:
        import torch

        torch_threads = torch.get_num_threads()
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    env: dict[str, Any] = {
        "git_commit": commit,
        "git_dirty": None if status is None else bool(status),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": {name: _version(name) for name in PACKAGES},
        "cpu": _cpu_model(),
        "gpu": gpu,
        "threads": {
            "cpu_count": os.cpu_count(),
            "torch": torch_threads,
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        },
        "numerics": fingerprint(),
        "size": size,
        "smoke": os.environ.get("LAB_SMOKE", "").strip().lower() in ("1", "true", "yes", "on"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if source:
        env["source"] = source
    return env


def document(records: list[dict], env: dict | None = None) -> dict[str, Any]:
    """The ``claims.json`` document of ``records`` (environment of this process by default)."""
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise TypeError("records must be a list of record dicts")
    if env is not None and not isinstance(env, dict):
        raise TypeError(f"env must be a dict or None, got {type(env).__name__}")
    from lab import __version__

    return {
        "schema": SCHEMA_VERSION,
        "lab": __version__,
        "environment": env if env is not None else environment(_size_of(records)),
        "claims": records,
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of ``claims.json`` (``lab/tooling/claims.schema.json``)."""
    return json.loads(SCHEMA_FILE.read_text())


def validate(doc: Any) -> None:
    """Raise ``ValueError`` naming the first place where ``doc`` breaks the schema."""
    import jsonschema

    errors = sorted(
        jsonschema.Draft202012Validator(schema()).iter_errors(doc), key=lambda e: list(e.path)
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise ValueError(f"doc breaks claims.schema.json at {where}: {errors[0].message}")


def write_build(outdir: Path | str, records: list[dict], *, source: str = "book build") -> Path:
    """Write ``<outdir>/_static/claims.json`` and ``claims.schema.json``; return the first."""
    static = Path(outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    doc = document(records, environment(_size_of(records), source=source))
    out = static / "claims.json"
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    (static / "claims.schema.json").write_text(SCHEMA_FILE.read_text())
    return out


# ----------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------
def records_from_notebook(path: Path | str) -> list[dict]:
    """The claim records displayed in an executed notebook, in cell order (one per claim key)."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path must be an existing .ipynb file, got {str(path)!r}")
    nb = json.loads(path.read_text())
    found: dict[str, dict] = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            rec = out.get("data", {}).get(CLAIM_MIME) if isinstance(out, dict) else None
            if isinstance(rec, str):
                rec = json.loads(rec)
            if isinstance(rec, dict) and "chapter" in rec and "id" in rec:
                rec = dict(rec, notebook=path.name)
                found.pop(f"{rec['chapter']}/{rec['id']}", None)  # the last display wins
                found[f"{rec['chapter']}/{rec['id']}"] = rec
    return list(found.values())


def _notebooks(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*.ipynb") if not any(part.startswith(".") for part in p.parts)
    )


def read(path: Path | str, slugs: list[str] | None = None) -> dict[str, Any]:
    """A claims document read from ``path``, keeping the chapters ``slugs`` (all when None).

    ``path`` is a ``claims.json``; a build folder holding ``_static/claims.json`` or
    ``html/_static/claims.json``; an executed notebook; or a folder of executed notebooks
    (searched recursively, e.g. ``_build/run/``). Records read from notebooks get this
    machine's environment, with ``source`` naming the folder.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    if slugs is not None and not (
        isinstance(slugs, (list, tuple)) and all(isinstance(s, str) for s in slugs)
    ):
        raise TypeError("slugs must be a list of chapter slugs or None")
    path = Path(path)
    if path.is_dir():
        for candidate in (path / "_static" / "claims.json", path / "html/_static/claims.json"):
            if candidate.is_file():
                path = candidate
                break
    if path.is_file() and path.suffix == ".json":
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"path {str(path)!r} is not JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
            raise ValueError(f"path {str(path)!r} is not a claims.json (no 'claims' list)")
        doc = dict(doc, environment=doc.get("environment") or {"lab": doc.get("lab")})
    elif path.is_file() and path.suffix == ".ipynb" or path.is_dir():
        notebooks = [path] if path.is_file() else _notebooks(path)
        if not notebooks:
            raise ValueError(f"path {str(path)!r} holds no claims.json and no .ipynb")
        recs = [r for nb in notebooks for r in records_from_notebook(nb)]
        doc = document(recs, environment(_size_of(recs), source=f"executed notebooks in {path}"))
    else:
        raise ValueError(
            f"path {str(path)!r} is not a claims.json, a build folder or executed notebooks"
        )
    if slugs:
        doc["claims"] = [r for r in doc["claims"] if r.get("chapter") in slugs]
    return doc


def default_build(slug: str, root: Path | str | None = None) -> Path:
    """Where ``--from-build`` reads ``slug``: ``_build/run/<slug>/`` (``lab run``/``lab claims``)
    when it holds executed notebooks, else the book's ``_build/html/_static/claims.json``."""
    if not isinstance(slug, str) or not slug:
        raise ValueError(f"slug must be a chapter slug, got {slug!r}")
    build = Path(root or ROOT) / "_build"
    run_dir = build / "run" / slug
    if run_dir.is_dir() and _notebooks(run_dir):
        return run_dir
    book = build / "html" / "_static" / "claims.json"
    if book.is_file():
        return book
    raise ValueError(
        f"slug {slug!r}: no executed build ({run_dir} or {book}); run `lab claims {slug}` "
        "(executes the notebooks) or `make book`"
    )


# ----------------------------------------------------------------------------------------
# Comparing
# ----------------------------------------------------------------------------------------
def _key(rec: dict) -> str:
    return rec.get("key") or f"{rec.get('chapter')}/{rec.get('id')}"


def _same(a: Any, b: Any, rtol: float) -> bool:
    """Equal JSON values, numbers within ``rtol`` (relative)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rtol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b, strict=True))
    return a == b


@dataclass(frozen=True)
class Change:
    """One difference: the claim's key, the field (``controls[<name>].verdict``...), both sides."""

    key: str
    field: str
    published: Any
    mine: Any


@dataclass
class Comparison:
    """The differences between a published document and a reader's run, by kind."""

    published_env: dict
    mine_env: dict
    verdicts: list[Change] = field(default_factory=list)
    values: list[Change] = field(default_factory=list)
    controls: list[Change] = field(default_factory=list)
    diagnoses: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # published, not in this run
    added: list[str] = field(default_factory=list)  # in this run, not published
    compared: int = 0

    @property
    def verdicts_differ(self) -> bool:
        """A claim's verdict, or one of its controls' verdicts, changed (exit status 1)."""
        return bool(self.verdicts) or any(c.field.endswith(".verdict") for c in self.controls)

    @property
    def empty(self) -> bool:
        """No difference of any kind."""
        kinds = (self.verdicts, self.values, self.controls, self.diagnoses, self.other)
        return not any(kinds) and not self.missing and not self.added


def _controls(rec: dict) -> dict[str, dict]:
    return {str(c.get("name")): c for c in rec.get("controls") or [] if isinstance(c, dict)}


def _diff_record(key: str, pub: dict, mine: dict, out: Comparison, rtol: float) -> None:
    for name in ("verdict", *_VALUE_FIELDS):
        if not _same(pub.get(name), mine.get(name), rtol):
            (out.verdicts if name == "verdict" else out.values).append(
                Change(key, name, pub.get(name), mine.get(name))
            )
    pc, mc = _controls(pub), _controls(mine)
    for name in [*pc, *(n for n in mc if n not in pc)]:
        a, b = pc.get(name), mc.get(name)
        if a is None or b is None:
            out.controls.append(Change(key, f"controls[{name}]", a and "present", b and "present"))
            continue
        for f in ("verdict", *_VALUE_FIELDS):
            if not _same(a.get(f), b.get(f), rtol):
                out.controls.append(Change(key, f"controls[{name}].{f}", a.get(f), b.get(f)))
    pd, md = pub.get("diagnosis") or {}, mine.get("diagnosis") or {}
    if pd.get("kind") != md.get("kind"):
        out.diagnoses.append(Change(key, "diagnosis.kind", pd.get("kind"), md.get("kind")))
    elif not _same(pd, md, rtol):
        out.diagnoses.append(Change(key, "diagnosis", pd.get("evidence"), md.get("evidence")))
    done = {"verdict", "controls", "diagnosis", *_VALUE_FIELDS, *_LOCATION}
    for name in sorted((set(pub) | set(mine)) - done):
        if not _same(pub.get(name), mine.get(name), rtol):
            out.other.append(Change(key, name, pub.get(name), mine.get(name)))


def compare(
    published: dict, mine: dict, *, slugs: list[str] | None = None, rtol: float = 1e-9
) -> Comparison:
    """The differences between two claims documents (``mine`` = the reader's run).

    Records are matched by ``<chapter>/<id>``; with ``slugs``, only those chapters are compared
    (so that one chapter's run is not reported as missing every other chapter). Numbers that
    agree within ``rtol`` (relative) are equal; every other field of a record is compared
    as JSON, except where it was found (``docname``, ``notebook``, ``cell_index``).
    """
    for name, doc in (("published", published), ("mine", mine)):
        if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
            raise TypeError(f"{name} must be a claims document (a dict with a 'claims' list)")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not rtol >= 0:
        raise ValueError(f"rtol must be a number >= 0, got {rtol!r}")
    if slugs is not None and not isinstance(slugs, (list, tuple)):
        raise TypeError(f"slugs must be a list of chapter slugs or None, got {slugs!r}")

    def keep(doc: dict) -> dict[str, dict]:
        return {_key(r): r for r in doc["claims"] if not slugs or r.get("chapter") in slugs}

    pub, own = keep(published), keep(mine)
    out = Comparison(published.get("environment") or {}, mine.get("environment") or {})
    out.missing = [k for k in pub if k not in own]
    out.added = [k for k in own if k not in pub]
    for key, rec in own.items():
        if key in pub:
            out.compared += 1
            _diff_record(key, pub[key], rec, out, float(rtol))
    return out


# ----------------------------------------------------------------------------------------
# Printing
# ----------------------------------------------------------------------------------------
def _show(value: Any) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else format_value(value)


def format_records(records: list[dict]) -> str:
    """One block per claim: key, verdict, measured text, controls and their verdicts, diagnosis."""
    if not isinstance(records, list):
        raise TypeError(f"records must be a list of record dicts, got {type(records).__name__}")
    blocks, counts = [], {}
    for r in records:
        verdict = r.get("verdict", "?")
        counts[verdict] = counts.get(verdict, 0) + 1
        expected = r.get("expected")
        flag = "" if expected in (None, verdict) else f"  (expected: {expected})"
        lines = [
            f"{_key(r)}  [{r.get('source', '?')}]  {verdict.upper()}{flag}",
            f"  {r.get('statement', '')}",
            f"  paper: {r.get('paper') or '—'} | measured ({r.get('size', 'default')}): "
            f"{r.get('text', _show(r.get('measured')))}",
        ]
        if r.get("rule"):
            lines.append(f"  rule: {r['rule']}")
        for c in r.get("controls") or []:
            ok = " (the rule cannot tell it apart!)" if c.get("verdict") == REPRODUCED else ""
            lines.append(
                f"  control {c.get('name')}: {c.get('text') or _show(c.get('measured'))}"
                f" -> {c.get('verdict')}{ok}"
            )
        d = r.get("diagnosis")
        if d:
            lines.append(f"  diagnosis: {d.get('kind')}: {d.get('evidence', '')}".rstrip(": "))
        if r.get("flags"):
            lines.append(f"  flags: {', '.join(map(str, r['flags']))}")
        blocks.append("\n".join(lines))
    total = ", ".join(f"{n} {v}" for v, n in counts.items()) or "none"
    blocks.append(f"{len(records)} claims: {total}")
    return "\n\n".join(blocks)


def _env_rows(env: dict) -> dict[str, str]:
    rows = {}
    for k, v in env.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                rows[f"{k}.{k2}"] = _show(v2)
        else:
            rows[k] = _show(v)
    return rows


def format_environments(published: dict, mine: dict) -> str:
    """Both environments, field by field (``*`` marks a field that differs); the numerics
    fingerprint first (:func:`lab.core.numerics.fingerprint`: why two runs' numbers differ)."""
    a, b = _env_rows(published or {}), _env_rows(mine or {})
    names = [*a, *(k for k in b if k not in a)]
    names.sort(key=lambda n: not n.startswith("numerics."))
    width = max([len(n) for n in names] + [11])
    col = max([len(a.get(n, "—")) for n in names] + [9])
    col = min(col, 40)
    lines = [f"  {'environment':<{width}}  {'published':<{col}}  this run"]
    for n in names:
        x, y = a.get(n, "—"), b.get(n, "—")
        mark = "*" if x != y and n != "date" else " "
        lines.append(f"{mark} {n:<{width}}  {x:<{col}}  {y}")
    return "\n".join(lines)


def format_comparison(cmp: Comparison) -> str:
    """The environments, then the differences: verdicts, values, controls, diagnoses, other
    fields, missing and added claims."""
    if not isinstance(cmp, Comparison):
        raise TypeError(f"cmp must be a Comparison, got {type(cmp).__name__}")
    out = [format_environments(cmp.published_env, cmp.mine_env), ""]
    pub_size, my_size = cmp.published_env.get("size"), cmp.mine_env.get("size")
    if pub_size and my_size and pub_size != my_size:
        out += [f"note: sizes differ (published {pub_size}, this run {my_size})", ""]
    sections = (
        ("verdict changes", cmp.verdicts),
        ("value changes", cmp.values),
        ("control changes", cmp.controls),
        ("diagnosis changes", cmp.diagnoses),
        ("other field changes (rule, statement, expected...)", cmp.other),
    )
    for title, changes in sections:
        if not changes:
            continue
        out.append(f"{title} ({len(changes)}):")
        for c in changes:
            a, b = _show(c.published), _show(c.mine)
            if len(a) + len(b) <= 60:
                out.append(f"  {c.key}  {c.field}: {a}  ->  {b}")
            else:
                out += [f"  {c.key}  {c.field}:", f"    published: {a}", f"    this run:  {b}"]
        out.append("")
    for title, keys in (
        ("missing from this run", cmp.missing),
        ("added by this run", cmp.added),
    ):
        if keys:
            out += [f"{title} ({len(keys)}):", *(f"  {k}" for k in keys), ""]
    if cmp.empty:
        out.append(f"no differences ({cmp.compared} claims compared)")
    else:
        out.append(
            f"claims compared: {cmp.compared}; verdict changes: {len(cmp.verdicts)}, value "
            f"changes: {len(cmp.values)}, control changes: {len(cmp.controls)}, missing: "
            f"{len(cmp.missing)}, added: {len(cmp.added)}"
        )
    return "\n".join(out)


# ----------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------
def cli(args: Any, run: Any) -> int:
    """``lab claims``: ``args`` from ``lab.__main__``'s parser, ``run`` its notebook executor.

    Exit status: 0; 1 when a notebook failed to execute or (with ``--compare``) a claim's or a
    control's verdict differs from the published one; ``lab`` turns ValueError into 2.
    """
    from lab.tooling.chapters import chapters, check_slug

    slugs = [check_slug(s, ROOT) for s in args.slugs] if args.slugs else chapters(ROOT)
    if not slugs:
        raise ValueError("slugs: no chapters in this checkout (_toc.yml)")
    published = read(args.compare) if args.compare else None
    status = 0
    if args.build:
        if args.full:
            raise ValueError("--full runs the notebooks: it cannot be combined with --build")
        mine = read(args.build, slugs)
    elif args.from_build:
        paths = {s: default_build(s) for s in slugs}
        recs = [r for s, p in paths.items() for r in read(p, [s])["claims"]]
        where = sorted({str(p) for p in paths.values()})
        source = f"executed builds: {', '.join(where)}"
        mine = document(recs, environment(_size_of(recs), source=source))
    else:
        recs = []
        for slug in slugs:
            out_dir = ROOT / "_build" / "run" / slug
            results = run(slug, full=args.full, out=out_dir)
            status = max(status, int(any(r["error"] for r in results)))
            for r in results:
                recs += records_from_notebook(r["output"])
        size = "FULL" if args.full else "default"
        mine = document(recs, environment(size, source=f"lab claims {' '.join(args.slugs)}"))
    if args.output:
        Path(args.output).write_text(json.dumps(mine, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.output}")
    if published is None:
        print(format_records(mine["claims"]))
        return status
    cmp = compare(published, mine, slugs=slugs)
    print(format_comparison(cmp))
    return max(status, int(cmp.verdicts_differ))


CLI_DESCRIPTION = """\
Execute a chapter's notebooks (every chapter without a slug) into _build/run/<slug>/, exactly as
`lab run` does, and print their claim records: one block per claim with its verdict, the measured
text, its controls and their verdicts, and its diagnosis. The default is to execute, so that the
records describe this checkout's code on this machine; --from-build or --build PATH read records
that already exist instead (a book build's execution cache keys on notebook code only and can be
older than lab/).

--compare PUBLISHED diffs this run against a published claims.json (the book's
_static/claims.json): both environments first, then verdict changes, value changes (text,
measured; numbers equal within 1e-9 relative), controls, diagnoses, other fields, and the claims
missing or added. Only the chapters named (or all) are compared."""

CLI_EPILOG = """\
exit status: 0 = done (with --compare: no verdict differs); 1 = a notebook failed to execute, or
a claim's or a control's verdict differs from the published one; 2 = bad arguments.

examples:
  lab claims eos                                   run eos, print its records
  lab claims eos --full --compare claims.json      paper scale (GPU) against the published run
  lab claims eos --from-build                      _build/run/eos/ or _build/html's claims.json
  lab claims --build _build/html --compare old.json -o new.json"""
