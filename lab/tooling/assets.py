"""The book's offline assets: vendored JavaScript, MathJax and the widget manager, locally served.

The HTML book works with no network at all. At build time this module copies ``plotly.min.js``
from the installed plotly package, and MathJax 3, require.js and the
``@jupyter-widgets/html-manager`` embed bundle from ``node_modules/`` (``npm ci``; pinned by
``package-lock.json``), plus the book's stylesheet ``optlab.css``, into
``_build/html/_static/vendor/`` (:func:`copy_assets`, on ``build-finished``). It points
``mathjax_path`` and myst-nb's ``nb_ipywidgets_js`` (CDN URLs by default) at the local copies
(:func:`configure`, on ``config-inited``) and fails early, with the fix, when ``node_modules``
is missing (:func:`check_assets`, on ``builder-inited``). :mod:`lab.tooling.sphinxext` wires
the handlers.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "MATHJAX_JS",
    "PLOTLY_JS",
    "REQUIRE_JS",
    "VENDOR_ASSETS",
    "WIDGETS_CDN",
    "WIDGETS_JS",
    "MissingNodeModules",
    "check_assets",
    "configure",
    "copy_assets",
    "copy_vendor_assets",
]

# Where the vendored files land, relative to the output's ``_static/`` (Sphinx resolves
# relative ``add_js_file`` paths against ``_static/``).
PLOTLY_JS = "vendor/plotly/plotly.min.js"
MATHJAX_JS = "vendor/mathjax/tex-chtml.js"
REQUIRE_JS = "vendor/requirejs/require.js"
WIDGETS_JS = "vendor/jupyter-widgets/html-manager/embed-amd.js"
# A page-relative "CDN" for widget modules that are not built into the html-manager: they are
# looked up here (and are missing, unless someone vendors them) instead of on jsdelivr.
WIDGETS_CDN = "vendor/jupyter-widgets/cdn/"

# (npm package, folder inside it, files or folders (globs allowed) inside that folder,
# destination under _static/) for every asset taken from node_modules. MathJax: the tex-chtml
# component, its CHTML fonts, the SVG output (plotly.js typesets LaTeX labels into SVG with
# it), and what it loads on demand (TeX extensions via autoload, the menu's accessibility
# tools). The html-manager: embed-amd.js and the font files its CSS references (webpack names
# them by hash).
VENDOR_ASSETS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "mathjax",
        "es5",
        (
            "tex-chtml.js",
            "input/tex",
            "output/chtml",
            "output/svg.js",
            "output/svg",
            "ui",
            "a11y",
            "adaptors",
            "sre",
        ),
        "vendor/mathjax",
    ),
    ("requirejs", "", ("require.js",), "vendor/requirejs"),
    (
        "@jupyter-widgets/html-manager",
        "dist",
        ("embed-amd.js", "*.woff2", "*.woff", "*.ttf", "*.eot", "*.svg"),
        "vendor/jupyter-widgets/html-manager",
    ),
)


class MissingNodeModules(RuntimeError):
    """``node_modules/`` (the vendored JavaScript) is missing or incomplete."""


def _node_modules(app: Any) -> Path:
    return Path(app.srcdir) / "node_modules"


def _plotly_min_js() -> Path:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise MissingNodeModules(f"plotly.min.js not found in the plotly package at {path}")
    return path


def _asset_sources(node_modules: Path) -> Iterable[tuple[Path, str]]:
    """(source file or folder, destination under _static/) for every node_modules asset.

    Raises
    ------
    MissingNodeModules
        If ``node_modules`` or one of the expected files is missing, with the fix.
    """
    fix = (
        f"run `npm ci --no-audit --no-fund` in {node_modules.parent} (package-lock.json pins them)"
    )
    if not node_modules.is_dir():
        raise MissingNodeModules(
            f"{node_modules} is missing: the book vendors MathJax, require.js and the "
            f"ipywidgets html-manager from npm so that it works offline; {fix}"
        )
    out = []
    for package, base, members, dest in VENDOR_ASSETS:
        root = node_modules / package / base
        for member in members:
            matches = sorted(root.glob(member)) if "*" in member else [root / member]
            if not matches or not all(m.exists() for m in matches):
                raise MissingNodeModules(f"{root / member} is missing from node_modules; {fix}")
            out.extend((src, f"{dest}/{src.relative_to(root).as_posix()}") for src in matches)
    return out


def _copy(src: Path, dst: Path) -> int:
    """Copy a file or folder, skipping files whose size and mtime already match."""
    n = 0
    if src.is_dir():
        for f in src.rglob("*"):
            if f.is_file():
                n += _copy(f, dst / f.relative_to(src))
        return n
    if dst.is_file():
        s, d = src.stat(), dst.stat()
        if s.st_size == d.st_size and int(s.st_mtime) == int(d.st_mtime):
            return 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return 1


def copy_vendor_assets(srcdir: str | Path, static_dir: str | Path) -> int:
    """Copy plotly.min.js and the node_modules assets into ``static_dir``; return the count
    of files copied (unchanged files are skipped)."""
    static_dir = Path(static_dir)
    n = _copy(_plotly_min_js(), static_dir / PLOTLY_JS)
    for src, rel in _asset_sources(Path(srcdir) / "node_modules"):
        n += _copy(src, static_dir / rel)
    return n


def _is_cdn(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_is_cdn(k) for k in value)
    return isinstance(value, str) and "://" in value


def configure(app: Any, config: Any) -> None:
    """config-inited: point MathJax and the widget manager at the vendored copies (unless
    the book's config already points them at something local)."""
    if _is_cdn(config.mathjax_path):
        config.mathjax_path = MATHJAX_JS
    if config.mathjax_path == MATHJAX_JS:
        # plotly.js renders $...$ in figure text with MathJax's SVG output, which tex-chtml
        # does not include: load it too (a small component, fetched from the local copy).
        mj = dict(config.mathjax3_config or {})
        loader = dict(mj.get("loader") or {})
        load = list(loader.get("load") or [])
        if "output/svg" not in load:
            load.append("output/svg")
        mj["loader"] = {**loader, "load": load}
        config.mathjax3_config = mj
    if _is_cdn(config.nb_ipywidgets_js):
        config.nb_ipywidgets_js = {
            REQUIRE_JS: {},
            WIDGETS_JS: {"data-jupyter-widgets-cdn": WIDGETS_CDN},
        }


def check_assets(app: Any) -> None:
    """builder-inited: fail early, with the fix, when node_modules is missing."""
    if app.builder is None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    try:
        _plotly_min_js()
        _asset_sources(_node_modules(app))
    except MissingNodeModules as exc:
        raise ExtensionError(f"lab.tooling.assets: {exc}") from None


def copy_assets(app: Any, exception: Exception | None) -> None:
    """build-finished: copy the vendored files into the HTML output's _static/."""
    if exception is not None or app.builder is None or app.builder.format != "html":
        return
    from sphinx.util import logging

    n = copy_vendor_assets(app.srcdir, Path(app.outdir) / "_static")
    n += _copy(Path(__file__).with_name("optlab.css"), Path(app.outdir) / "_static" / "optlab.css")
    logging.getLogger(__name__).info(
        f"lab.tooling.assets: vendored offline assets ({n} files copied)"
    )
