"""The book's plotly figures: a myst-nb mime renderer plugin and the HTML that draws a figure.

myst-nb 1.x has no renderer for ``application/vnd.plotly.v1+json`` (what plotly 6/7 emits in a
kernel), so without this plugin every plotly figure silently vanishes from the book.
:class:`PlotlyRenderer` is registered under the entry point group ``myst_nb.mime_renderers``
(``pyproject.toml``); for that mime type and for ``application/vnd.optlab.explore+json`` (the
kernel-free twin written by :mod:`lab.core.explore`) it writes a ``<div>`` plus a
``Plotly.newPlot`` call (and ``Plotly.addFrames`` when the figure has frames, which is what a
precomputed slider needs), and asks for the vendored plotly.js on the page. Its
``mime_priority_overrides`` make the HTML builders prefer the twin over the live widget view,
and plotly over ``text/html`` and images.

:func:`figure_html` is the same drawing code for figures that do not come from a notebook
(the performance page's speed-up plot, :mod:`lab.tooling.benchdirective`). Used only when the
book is built; nothing here runs in a notebook.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from lab.tooling.assets import PLOTLY_JS

__all__ = ["EXPLORE_MIME", "HTML_BUILDERS", "PLOTLY_MIME", "PlotlyRenderer", "figure_html"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
EXPLORE_MIME = "application/vnd.optlab.explore+json"  # same payload: a plotly figure dict
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

HTML_BUILDERS = ("html", "dirhtml", "singlehtml")

_DEFAULT_HEIGHT_PX = 450  # plotly.js's default layout height


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
