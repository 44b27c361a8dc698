"""The published site's own pages: a 404 page for GitHub Pages.

A Sphinx extension (``sphinx: extra_extensions: [lab.tooling.site]`` in ``_config.yml``).

GitHub Pages answers any missing path with the site's top-level ``404.html``, served *at the
missing path* (``/optlab/book/nowhere/page.html``). A page built with Sphinx's relative links
would then load its stylesheets and scripts from ``/optlab/book/nowhere/_static/`` and show up
unstyled and broken. This page therefore carries a ``<base href>`` set to the site's root path:
the path of ``html_baseurl`` when the book sets one (a custom domain), else of the GitHub Pages
address of ``repository.url`` (``https://<owner>.github.io/<name>/``, see
:func:`lab.tooling.colab.pages_url`). It only works served from that path, as GitHub Pages
and ``tests/test_browser.py`` serve it, not opened as a file.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlsplit

__all__ = ["NOT_FOUND", "site_root_path", "setup"]

NOT_FOUND = "404"


def site_root_path(html_baseurl: str, repository_url: str) -> str:
    """The URL path the site is served under, with a trailing slash (``/optlab/``)."""
    if html_baseurl:
        path = urlsplit(html_baseurl).path or "/"
    else:
        from lab.tooling.colab import pages_url

        path = urlsplit(pages_url(repository_url)).path
    return path if path.endswith("/") else path + "/"


def _repository_url(app: Any) -> str:
    url = (app.config.html_theme_options or {}).get("repository_url") or ""
    if url:
        return url
    from lab.tooling.colab import repository

    return repository(app.srcdir)[0]


def _not_found_page(app: Any) -> list:
    """html-collect-pages: the 404 page, rendered with the theme's ``page.html``."""
    if app.builder.name != "html":  # dirhtml/singlehtml have other layouts: not published
        return []
    home = app.config.root_doc + app.builder.out_suffix
    title = escape(app.config.html_title or app.config.project or "this book")
    body = f"""
<section id="page-not-found">
<h1>Page not found</h1>
<p>There is no page at this address in <em>{title}</em>. It may have moved when the book was
reorganised, or the link may be mistyped.</p>
<ul>
<li>Start again from <a href="{home}">the book's first page</a>, or pick a chapter in the
table of contents.</li>
<li>Search the book: <a href="search.html">search page</a>.</li>
</ul>
</section>
"""
    return [(NOT_FOUND, {"title": "Page not found", "body": body}, "page.html")]


def _base_href(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """html-page-context: the 404 page resolves its links against the site's root path."""
    if pagename != NOT_FOUND or doctree is not None:
        return
    root = site_root_path(app.config.html_baseurl or "", _repository_url(app))
    context["metatags"] = (
        context.get("metatags", "")
        + f'\n    <base href="{escape(root)}" />'
        + '\n    <meta name="robots" content="noindex" />'
    )


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: ``sphinx: extra_extensions: [lab.tooling.site]``."""
    app.connect("html-collect-pages", _not_found_page)
    app.connect("html-page-context", _base_href)
    from lab import __version__

    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
