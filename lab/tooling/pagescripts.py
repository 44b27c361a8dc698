"""Per-page scripts of the HTML book: what each written page loads, fixed up page by page.

Three ``html-page-context`` / ``doctree-read`` handlers, wired by :mod:`lab.tooling.sphinxext`:

* :func:`widget_assets_per_page`: on pages with ipywidgets, the html-manager's widget "CDN",
  its fonts and a MathJax 2 API shim point at the vendored, page-relative local copies
  (:mod:`lab.tooling.assets` copies them).
* :func:`dedupe_scripts`: drops inline scripts that Sphinx 7.4 registers twice.
* :func:`math_for_tex_figures`: a page whose plotly figure has ``$...$`` text loads MathJax
  even when its prose has no math.
"""

from __future__ import annotations

import json
from typing import Any

from lab.tooling.assets import WIDGETS_CDN, WIDGETS_JS

__all__ = ["dedupe_scripts", "math_for_tex_figures", "widget_assets_per_page"]

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


def widget_assets_per_page(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """html-page-context, on pages with ipywidgets: point the html-manager at local files.

    * ``data-jupyter-widgets-cdn``, where the html-manager looks for widget modules it does not
      bundle, becomes a page-relative local folder (it would be jsdelivr).
    * the html-manager's fonts: each webpack runtime in its bundle resolves them against the
      require.js URL of the module it defines (``@jupyter-widgets/html-manager/dist/libembed-amd``
      and ``@jupyter-widgets/html-manager``, whose CSS carries FontAwesome 4), which is the
      page's folder unless require.js is told where the package lives (a global ``require``
      config, read by require.js when it loads): every ``@jupyter-widgets/<name>`` maps into the
      vendored folder, so any ``.fa`` icon on the page loads its font from there (without the
      mapping: a 404 from ``book/<slug>/@jupyter-widgets/``). ``window.__jupyter_widgets_assets_path__``
      covers the modules that read that instead.
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
            "\nvar require = {paths: (function (dir) { return {'@jupyter-widgets': dir,"
            " '@jupyter-widgets/html-manager/dist': dir}; })("
            "window.__jupyter_widgets_assets_path__.replace(/\\/$/, ''))};\n" + _MATHJAX2_SHIM
        )
        app.add_js_file(None, body=body, priority=450)


def _page_url(context: dict, static_path: str) -> str:
    """A folder under _static/, relative to the page being written, with a trailing slash."""
    url = context["pathto"]("_static/" + static_path.rstrip("/"), 1)
    return url + "/"


def dedupe_scripts(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
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


def math_for_tex_figures(app: Any, doctree: Any) -> None:
    """doctree-read: a page with a plotly figure whose text has ``$...$`` needs MathJax even
    when its prose has no math (Sphinx loads MathJax only on pages with equations)."""
    from docutils import nodes

    for node in doctree.findall(nodes.raw):
        if "data-optlab-tex" in node.astext():
            app.env.get_domain("math").data["has_equations"][app.env.docname] = True
            return
