"""The published site's own pages: the 404 page for GitHub Pages, by ``sphinx-notfound-page``.

A Sphinx extension (``sphinx: extra_extensions: [lab.tooling.site]`` in ``_config.yml``). It
loads ``notfound.extension`` (the ``sphinx-notfound-page`` package, which builds ``404.html``
with the theme's own layout and every stylesheet, script, image and link made absolute) and
gives it what this book needs, so that ``_config.yml`` holds nothing but the extension:

* ``notfound_urls_prefix``: the URL path the site is served under. GitHub Pages answers any
  missing path with the top-level ``404.html`` served *at the missing path*
  (``/optlab/book/nowhere/page.html``), so relative links would point nowhere. The prefix is
  the path of ``html_baseurl`` when the book sets one (a custom domain), else of the GitHub
  Pages address of ``repository.url`` (``https://<owner>.github.io/<name>/``, see
  :func:`lab.tooling.colab.pages_url`). A value set in the book's config wins.
* ``notfound_context``: the page's title and body (links to the first page and the search).
* a ``<base href>`` at the same root and ``noindex`` on the 404 page, for any relative URL a
  theme template writes without Sphinx's ``pathto`` (which notfound cannot rewrite).

Nothing is fetched: the page works offline, served from that path (as GitHub Pages and
``tests/test_browser.py`` serve it), not opened as a file.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlsplit

__all__ = ["NOT_FOUND", "not_found_body", "setup", "site_root_path"]

NOT_FOUND = "404"


def site_root_path(html_baseurl: str, repository_url: str) -> str:
    """The URL path the site is served under, with a trailing slash (``/optlab/``).

    Raises
    ------
    TypeError
        If an argument is not a string.
    ValueError
        If ``html_baseurl`` is empty and ``repository_url`` is not a GitHub repository URL.
    """
    for name, value in (("html_baseurl", html_baseurl), ("repository_url", repository_url)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string (got {value!r})")
    if html_baseurl:
        path = urlsplit(html_baseurl).path or "/"
    else:
        from lab.tooling.colab import pages_url

        path = urlsplit(pages_url(repository_url)).path
    path = path if path.startswith("/") else "/" + path
    return path if path.endswith("/") else path + "/"


def not_found_body(title: str, root: str, home: str = "book/intro.html") -> str:
    """The 404 page's HTML body, its links absolute under ``root``.

    Raises
    ------
    TypeError
        If an argument is not a string.
    ValueError
        If ``root`` does not start and end with ``/``.
    """
    for name, value in (("title", title), ("root", root), ("home", home)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string (got {value!r})")
    if not (root.startswith("/") and root.endswith("/")):
        raise ValueError(f"root must start and end with '/' (got {root!r})")
    return f"""
<section id="page-not-found">
<h1>Page not found</h1>
<p>There is no page at this address in <em>{escape(title)}</em>. It may have moved when the book
was reorganised, or the link may be mistyped.</p>
<ul>
<li>Start again from <a href="{escape(root + home)}">the book's first page</a>, or pick a chapter
in the table of contents.</li>
<li>Search the book: <a href="{escape(root)}search.html">search page</a>.</li>
</ul>
</section>
"""


def _repository_url(app: Any) -> str:
    url = (app.config.html_theme_options or {}).get("repository_url") or ""
    if url:
        return url
    from lab.tooling.colab import repository

    return repository(app.srcdir)[0]


def _configure(app: Any, config: Any) -> None:
    """config-inited: the prefix and the page's content, unless the book's config sets them."""
    raw = getattr(config, "_raw_config", {})
    root = site_root_path(config.html_baseurl or "", _repository_url(app))
    if "notfound_urls_prefix" not in raw:
        config.notfound_urls_prefix = root
    if "notfound_context" not in raw:
        home = config.root_doc + ".html"
        title = config.html_title or config.project or "this book"
        config.notfound_context = {
            "title": "Page not found",
            "body": not_found_body(title, config.notfound_urls_prefix or root, home),
        }


def _base_href(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """html-page-context: the 404 page resolves any relative link against the site's root."""
    if pagename != app.config.notfound_pagename:
        return
    root = app.config.notfound_urls_prefix or "/"
    context["metatags"] = (
        context.get("metatags", "")
        + f'\n    <base href="{escape(root)}" />'
        + '\n    <meta name="robots" content="noindex" />'
    )


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: ``sphinx: extra_extensions: [lab.tooling.site]``."""
    app.setup_extension("notfound.extension")
    app.connect("config-inited", _configure, priority=400)  # before notfound's check (500)
    app.connect("html-page-context", _base_href)
    from lab import __version__

    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
