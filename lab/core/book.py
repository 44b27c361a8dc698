"""The book build's side of ``lab``: plotly figures and offline assets for Jupyter Book.

Two pieces, both used only when the book is built (nothing here runs in a notebook):

* :class:`PlotlyRenderer`, a myst-nb mime renderer plugin (entry point group
  ``myst_nb.mime_renderers``, declared in ``pyproject.toml``). myst-nb 1.x has no renderer for
  ``application/vnd.plotly.v1+json`` (what plotly 6/7 emits in a kernel), so without it every
  plotly figure silently vanishes from the book. The plugin writes a ``<div>`` plus a
  ``Plotly.newPlot`` call (and ``Plotly.addFrames`` when the figure has frames, which is what
  a precomputed slider needs), for that mime type and for ``application/vnd.optlab.explore+json``,
  the kernel-free twin written by :mod:`lab.core.explore`. Its ``mime_priority_overrides``
  make the HTML builders prefer the twin over the live widget view, and plotly over
  ``text/html`` and images.

* A Sphinx extension (this module's :func:`setup`, listed under ``sphinx: extra_extensions`` in
  ``_config.yml``) that makes the HTML book work with no network at all: it copies
  ``plotly.min.js`` from the installed plotly package, and MathJax 3, require.js and the
  ``@jupyter-widgets/html-manager`` embed bundle from ``node_modules/`` (``npm ci``) into
  ``_build/html/_static/vendor/``, loads plotly.js on the pages that draw figures, and points
  ``mathjax_path`` and myst-nb's ``nb_ipywidgets_js`` (CDN URLs by default) at the local copies.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "EXPLORE_MIME",
    "PLOTLY_MIME",
    "PlotlyRenderer",
    "VENDOR_ASSETS",
    "figure_html",
    "setup",
]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
EXPLORE_MIME = "application/vnd.optlab.explore+json"  # same payload: a plotly figure dict
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

HTML_BUILDERS = ("html", "dirhtml", "singlehtml")

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
# it), and what it loads on demand (TeX extensions via autoload, the menu's accessibility tools). The html-manager: embed-amd.js and the font files its CSS
# references (webpack names them by hash).
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

# The ipywidgets 8 controls typeset labels with the MathJax 2 API (``MathJax.Hub.Queue``) when
# ``window.MathJax`` exists; with MathJax 3 that throws. This maps the call onto MathJax 3, and
# turns a label's $...$ (Jupyter's delimiters, not enabled in the book's MathJax) into \(...\).
_MATHJAX2_SHIM = r"""document.addEventListener("DOMContentLoaded", function () {
  var mj = window.MathJax;
  if (!mj || mj.Hub || String(mj.version || "").charAt(0) !== "3") { return; }
  function delimit(el) {
    if (el && el.childNodes.length === 1 && el.firstChild.nodeType === 3) {
      el.textContent = el.textContent
        .replace(/\$\$([^$]+)\$\$/g, "\\[$1\\]")
        .replace(/\$([^$]+)\$/g, "\\($1\\)");
    }
  }
  mj.Hub = {Queue: function () {
    Array.prototype.forEach.call(arguments, function (job) {
      if (!Array.isArray(job) || job[0] !== "Typeset") { return; }
      var el = job[2];
      mj.startup.promise
        .then(function () { delimit(el); return mj.typesetPromise(el ? [el] : undefined); })
        .catch(function (err) { console.warn("optlab: MathJax typeset of a widget failed", err); });
    });
  }};
});"""

_DEFAULT_HEIGHT_PX = 450  # plotly.js's default layout height


# ----------------------------------------------------------------------------------------
# The mime renderer plugin
# ----------------------------------------------------------------------------------------
def _figure_dict(content: Any) -> dict:
    """The figure dict of a mime payload (nbformat stores JSON mime data parsed, but a
    string is accepted too)."""
    if isinstance(content, bytes):
        content = content.decode("utf-8")
    if isinstance(content, str):
        content = json.loads(content)
    if not isinstance(content, dict) or "data" not in content:
        raise ValueError("a plotly mime payload must be a figure dict with a 'data' key")
    return content


def _finite(obj: Any) -> Any:
    """NaN and infinities become null (a gap), as plotly's own JSON encoder does."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _json_for_script(obj: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` only occur inside JSON strings, where the ``\\uXXXX`` escapes
    decode to the same characters, so no ``</script>`` or ``<!--`` can end the element early.
    NaN/inf (not JSON) become null.
    """
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure_html(figure: dict, div_id: str, *, kind: str = "plotly") -> str:
    """HTML that draws a plotly figure dict with the page's plotly.js.

    The figure fills the width of its column (``layout.width`` is dropped, ``autosize`` and
    ``config.responsive`` are set); its height is ``layout.height`` or plotly's 450 px.
    Frames, when present, are added after the first draw so that slider steps and buttons
    with ``method: "animate"`` find them. A ``note`` under the ``optlab`` key (written by
    :mod:`lab.core.explore`) becomes a caption.
    """
    layout = dict(figure.get("layout") or {})
    layout.pop("width", None)
    layout["autosize"] = True
    height = layout.get("height") or _DEFAULT_HEIGHT_PX
    config = {"responsive": True, "displaylogo": False, **(figure.get("config") or {})}
    config["responsive"] = True
    payload = {"data": figure.get("data") or [], "layout": layout, "config": config}
    if figure.get("frames"):
        payload["frames"] = figure["frames"]
    note = (figure.get("optlab") or {}).get("note")
    caption = ""
    if note:
        from html import escape

        caption = (
            '<p class="optlab-figure-note" style="font-size: 0.9em; '
            f'color: var(--pst-color-text-muted);">{escape(str(note))}</p>\n'
        )
    data_json = _json_for_script(payload)
    uses_tex = "$" in data_json  # plotly typesets $...$ strings with the page's MathJax
    script = (
        "(function () {\n"
        f'  var id = "{div_id}";\n'
        "  function draw() {\n"
        "    var el = document.getElementById(id);\n"
        "    if (!window.Plotly) {\n"
        '      console.error("optlab: plotly.js is not loaded, cannot draw figure " + id);\n'
        "      return;\n"
        "    }\n"
        '    var fig = JSON.parse(document.getElementById(id + "-data").textContent);\n'
        "    window.Plotly.newPlot(el, fig.data, fig.layout, fig.config).then(function (gd) {\n"
        "      if (fig.frames && fig.frames.length) {\n"
        "        return window.Plotly.addFrames(gd, fig.frames);\n"
        "      }\n"
        "    });\n"
        "  }\n"
        "  function start() {\n"
        "    var mj = window.MathJax;\n"
        f"    if ({'true' if uses_tex else 'false'} && mj && mj.startup && mj.startup.promise) {{\n"
        "      mj.startup.promise.then(draw);  // LaTeX labels: wait for MathJax\n"
        "    } else {\n"
        "      draw();\n"
        "    }\n"
        "  }\n"
        '  if (document.readyState === "loading") {\n'
        '    document.addEventListener("DOMContentLoaded", start);\n'
        "  } else {\n"
        "    start();\n"
        "  }\n"
        "})();"
    )
    tex_attr = " data-optlab-tex" if uses_tex else ""
    return (
        f'<div class="optlab-figure optlab-{kind}">\n'
        f'<div id="{div_id}" class="optlab-plotly-div"{tex_attr} '
        f'style="width: 100%; height: {int(height)}px;"></div>\n'
        f'<script type="application/json" id="{div_id}-data">{data_json}</script>\n'
        f"<script>\n{script}\n</script>\n"
        f"{caption}"
        "</div>"
    )


class PlotlyRenderer:
    """myst-nb mime renderer plugin for plotly figures (``myst_nb.mime_renderers`` entry point).

    Renders ``application/vnd.plotly.v1+json`` and ``application/vnd.optlab.explore+json``
    (both a plotly figure dict ``{"data", "layout", "frames"?}``) as raw HTML, and asks for
    plotly.js on the page. Priorities (lower wins, per builder): the explore twin (1) beats the
    live widget view (10), and plotly (25) beats ``text/html`` (30) and every image type.
    """

    mime_priority_overrides: ClassVar[Sequence[tuple[str, str, int | None]]] = tuple(
        (builder, mime, prio)
        for builder in HTML_BUILDERS
        for mime, prio in ((EXPLORE_MIME, 1), (PLOTLY_MIME, 25))
    )

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        """Render ``data`` if it is a plotly mime type, else return None (not ours)."""
        if data.mime_type not in (PLOTLY_MIME, EXPLORE_MIME):
            return None
        from docutils import nodes

        kind = "explore" if data.mime_type == EXPLORE_MIME else "plotly"
        try:
            figure = _figure_dict(data.content)
        except (ValueError, TypeError) as exc:
            renderer.logger.warning(
                f"cannot render {data.mime_type} output: {exc}",
                subtype="plotly",
                line=data.line,
            )
            return []
        digest = hashlib.sha1(
            json.dumps(figure, sort_keys=True, default=str).encode("utf-8")
        ).hexdigest()[:10]
        div_id = f"optlab-{kind}-{data.cell_index}-{data.output_index}-{digest}"
        # Per-page script: myst-nb stores it with the document and adds it when the page
        # is written. Deferred: figures are drawn on DOMContentLoaded, after it has run.
        renderer.add_js_file("optlab_plotly_js", PLOTLY_JS, {"defer": "defer"})
        html = figure_html(figure, div_id, kind=kind)
        return [nodes.raw(text=html, format="html")]


# ----------------------------------------------------------------------------------------
# The Sphinx extension
# ----------------------------------------------------------------------------------------
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


def _configure(app: Any, config: Any) -> None:
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


def _check_assets(app: Any) -> None:
    """builder-inited: fail early, with the fix, when node_modules is missing."""
    if app.builder is None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    try:
        _plotly_min_js()
        _asset_sources(_node_modules(app))
    except MissingNodeModules as exc:
        raise ExtensionError(f"lab.core.book: {exc}") from None


def _widget_assets_per_page(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """html-page-context, on pages with ipywidgets: point the html-manager at local files.

    * ``data-jupyter-widgets-cdn``, where the html-manager looks for widget modules it does not
      bundle, becomes a page-relative local folder (it would be jsdelivr).
    * the html-manager's fonts: its bundle resolves them against the require.js URL of the
      module ``@jupyter-widgets/html-manager/dist/libembed-amd``, which is the page's folder
      unless require.js is told where that package lives (a global ``require`` config, read by
      require.js when it loads); ``window.__jupyter_widgets_assets_path__`` covers the modules
      that read that instead.
    * a ``MathJax.Hub.Queue`` shim: the widgets typeset their labels with the MathJax 2 API.

    Both are relative to the page, so they are set per page; this handler runs before
    myst-nb's, which adds the widget scripts from the document's metadata.
    """
    metadata = getattr(app.env, "nb_metadata", None)
    if not metadata or pagename not in metadata:
        return
    js_files = metadata[pagename].get("js_files", {})
    found = False
    for key, (uri, kwargs) in list(js_files.items()):
        if uri != WIDGETS_JS:
            continue
        found = True
        if kwargs.get("data-jupyter-widgets-cdn") == WIDGETS_CDN:
            kwargs = {**kwargs, "data-jupyter-widgets-cdn": _page_url(context, WIDGETS_CDN)}
            js_files[key] = (uri, kwargs)
    if found:
        assets = _page_url(context, WIDGETS_JS.rsplit("/", 1)[0] + "/")
        body = (
            f"window.__jupyter_widgets_assets_path__ = new URL({json.dumps(assets)}, document.baseURI).href;"
            "\nvar require = {paths: {'@jupyter-widgets/html-manager/dist':"
            " window.__jupyter_widgets_assets_path__.replace(/\\/$/, '')}};\n" + _MATHJAX2_SHIM
        )
        app.add_js_file(None, body=body, priority=450)


def _page_url(context: dict, static_path: str) -> str:
    """A folder under _static/, relative to the page being written, with a trailing slash."""
    url = context["pathto"]("_static/" + static_path.rstrip("/"), 1)
    return url + "/"


def _dedupe_scripts(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """html-page-context, last: drop duplicated inline scripts.

    Sphinx 7.4 registers an inline script added after the builder started (``add_js_file(None,
    body=...)``, as sphinx-thebe does) once as filename ``None`` and once as ``''``; the page
    then declares ``const THEBE_JS_URL`` twice, a JavaScript error.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set = set()
    unique = []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", js) or "", tuple(sorted(attrs.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def _math_for_tex_figures(app: Any, doctree: Any) -> None:
    """doctree-read: a page with a plotly figure whose text has ``$...$`` needs MathJax even
    when its prose has no math (Sphinx loads MathJax only on pages with equations)."""
    from docutils import nodes

    for node in doctree.findall(nodes.raw):
        if "data-optlab-tex" in node.astext():
            app.env.get_domain("math").data["has_equations"][app.env.docname] = True
            return


def _copy_assets(app: Any, exception: Exception | None) -> None:
    """build-finished: copy the vendored files into the HTML output's _static/."""
    if exception is not None or app.builder is None or app.builder.format != "html":
        return
    from sphinx.util import logging

    n = copy_vendor_assets(app.srcdir, Path(app.outdir) / "_static")
    n += _copy(Path(__file__).with_name("optlab.css"), Path(app.outdir) / "_static" / "optlab.css")
    logging.getLogger(__name__).info(f"lab.core.book: vendored offline assets ({n} files copied)")


# ----------------------------------------------------------------------------------------
# The performance page: ``{optlab-benchmarks}`` renders benchmarks/results/*.json at build time


def _benchmarks_directive():
    from docutils import nodes
    from docutils.parsers.rst import directives
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class BenchmarksDirective(SphinxDirective):
        """``{optlab-benchmarks}`` with option ``:kind: cpu|gpu``: tables and a speed-up plot."""

        has_content = False
        option_spec = {"kind": lambda v: directives.choice(v, ("cpu", "gpu"))}

        def run(self) -> list:
            from . import perf

            kind = self.options.get("kind", "cpu")
            root = Path(self.env.srcdir)
            # rebuild this page whenever a results file changes
            for path in sorted((root / "benchmarks" / "results").glob(f"*-{kind}.json")):
                self.env.note_dependency(str(path))
            text, figure = perf.page_markdown(kind, root)
            container = nodes.container(classes=["optlab-benchmarks"])
            if figure is not None:
                html = figure_html(figure, f"optlab-bench-{kind}", kind="plotly")
                container += nodes.raw(text=html, format="html")
                self.env.optlab_plotly_pages = getattr(self.env, "optlab_plotly_pages", set())
                self.env.optlab_plotly_pages.add(self.env.docname)
            self.state.nested_parse(StringList(text.splitlines()), self.content_offset, container)
            return [container]

    return BenchmarksDirective


def _plotly_on_benchmark_pages(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """html-page-context: load plotly.js on the pages that hold ``{optlab-benchmarks}``."""
    if pagename in getattr(app.env, "optlab_plotly_pages", set()):
        app.add_js_file(PLOTLY_JS, defer="defer")


def _merge_plotly_pages(app: Any, env: Any, docnames: Any, other: Any) -> None:
    env.optlab_plotly_pages = getattr(env, "optlab_plotly_pages", set()) | getattr(
        other, "optlab_plotly_pages", set()
    )


def _purge_plotly_pages(app: Any, env: Any, docname: str) -> None:
    getattr(env, "optlab_plotly_pages", set()).discard(docname)


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: ``sphinx: extra_extensions: [lab.core.book]`` in ``_config.yml``."""
    app.setup_extension("myst_nb")
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _configure)
    app.connect("builder-inited", _check_assets)
    app.connect("doctree-read", _math_for_tex_figures)
    # myst-nb adds the per-page scripts at the default priority 500; run before it.
    app.connect("html-page-context", _widget_assets_per_page, priority=400)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("build-finished", _copy_assets)
    app.add_directive("optlab-benchmarks", _benchmarks_directive())
    app.connect("html-page-context", _plotly_on_benchmark_pages, priority=450)
    app.connect("env-merge-info", _merge_plotly_pages)
    app.connect("env-purge-doc", _purge_plotly_pages)
    app.add_css_file("optlab.css")  # written into _static/ by _copy_assets
    from lab import __version__

    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
