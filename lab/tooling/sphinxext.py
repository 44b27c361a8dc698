"""The book's Sphinx extension: ``sphinx: extra_extensions: [lab.tooling.sphinxext]``.

:func:`setup` only wires the build-time pieces, each in its own module:

* :mod:`lab.tooling.assets`: offline JavaScript (plotly.js, MathJax 3, require.js, the ipywidgets
  html-manager) and ``optlab.css`` copied into ``_static/``, the config pointed at them;
* :mod:`lab.tooling.pagescripts`: per-page fix-ups of the scripts each HTML page loads;
* :mod:`lab.tooling.benchdirective`: the ``{optlab-benchmarks}`` directive of the performance
  page and the ``{bench}`` role (a benchmark number in prose).

The plotly figures of the notebooks are rendered by :class:`lab.tooling.mime.PlotlyRenderer`,
which myst-nb finds through its ``myst_nb.mime_renderers`` entry point (``pyproject.toml``),
not through this extension.
"""

from __future__ import annotations

from typing import Any

from lab.tooling import assets, benchdirective, pagescripts

__all__ = ["setup"]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: ``sphinx: extra_extensions: [lab.tooling.sphinxext]`` in ``_config.yml``."""
    app.setup_extension("myst_nb")
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", assets.configure)
    app.connect("builder-inited", assets.check_assets)
    app.connect("doctree-read", pagescripts.math_for_tex_figures)
    # myst-nb adds the per-page scripts at the default priority 500; run before it.
    app.connect("html-page-context", pagescripts.widget_assets_per_page, priority=400)
    app.connect("html-page-context", pagescripts.dedupe_scripts, priority=900)
    app.connect("build-finished", assets.copy_assets)
    app.add_directive("optlab-benchmarks", benchdirective.BenchmarksDirective)
    app.add_role("bench", benchdirective.bench_role)
    app.connect("html-page-context", benchdirective.plotly_on_benchmark_pages, priority=450)
    app.connect("env-merge-info", benchdirective.merge_plotly_pages)
    app.connect("env-purge-doc", benchdirective.purge_plotly_pages)
    app.add_css_file("optlab.css")  # written into _static/ by assets.copy_assets
    from lab import __version__

    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
