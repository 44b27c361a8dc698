"""Smoke test of the built HTML book in headless Chromium, with the network cut off.

Serves ``_build/html`` on a loopback port and opens every page of ``_toc.yml``. Any request
that is not to that server fails the test (and fails in the browser: every host name but the
loopback address resolves to nothing): the book must work offline (plotly.js,
MathJax, require.js and the ipywidgets html-manager are vendored by ``lab.tooling.assets``). On every
page: no JavaScript console errors, no failed local requests, every plotly figure drawn, every
widget view rendered, LaTeX in plotly labels typeset, and MathJax typeset on pages with math. Then one precomputed plotly
slider is moved and the figure must change.

Needs ``make book`` first and the Debian ``chromium`` package
(``apt-get update && apt-get install -y chromium``); skipped without either.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lab.tooling.chapters import toc_files

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # every host name but the loopback server resolves to nothing: a request that would leave
    # the machine fails at once, in CI as on a machine with a network. The requests are watched,
    # not intercepted (OfflinePage): Playwright's request interception turns off the browser's
    # HTTP cache and sends every request through the Python side (plotly.js and MathJax
    # reloaded on each of ~90 page loads: a third of the module's time).
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
TIMEOUT_MS = 30_000  # generous: CI is idle, but a loaded dev machine is not

pytestmark = [
    pytest.mark.browser,
    pytest.mark.book,  # waits for the built book (tests/conftest.py), skips without one
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason="no /usr/bin/chromium (apt-get update && apt-get install -y chromium)",
    ),
]


# the toc's documents, in order, as paths relative to _build/html
PAGES = [f + ".html" for f in toc_files(ROOT)]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def _serve(handler_class: type, prefix: str = "") -> Iterator[str]:
    """``_build/html`` over http on 127.0.0.1 and a free port, with ``handler_class``."""
    handler = functools.partial(handler_class, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{prefix}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """``_build/html`` over http on 127.0.0.1 and a free port."""
    yield from _serve(_QuietHandler)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


DESKTOP = {"width": 1200, "height": 1600}


class OfflinePage:
    """A page whose requests may only go to the local server; records what went wrong.

    One per test module and worker: the tests of one page run one after the other (see
    ``pytest_collection_modifyitems`` below) and share its load, so every check of a page runs
    on the page as a reader gets it, and the book's heaviest pages are rendered once, not four
    times. ``open`` of another page starts afresh (a new load, empty error lists).
    """

    def __init__(self, browser, server: str):
        self.origin = server
        self.current: str | None = None
        self.context = browser.new_context(viewport=DESKTOP)
        self.off_machine: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", self._request)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)

    def _request(self, request):
        url = request.url
        if not (url.startswith(self.origin + "/") or urlsplit(url).scheme in ("data", "blob")):
            self.off_machine.append(url)

    def _console(self, msg):
        if msg.type == "error":
            self.errors.append(f"console: {msg.text} ({msg.location.get('url', '')})")

    def _request_failed(self, request):
        if request.url.startswith(self.origin + "/"):
            self.failed.append(f"{request.url}: {request.failure}")

    def _response(self, response):
        if response.url.startswith(self.origin + "/") and response.status >= 400:
            self.failed.append(f"{response.url}: HTTP {response.status}")

    def open(self, path: str) -> None:
        """Load ``path`` at desktop width, unless it is the page the previous test loaded
        (then its checks continue on that load)."""
        if path == self.current and self.page.viewport_size == DESKTOP:
            return
        self.off_machine.clear()
        self.failed.clear()
        self.errors.clear()
        self.page.set_viewport_size(DESKTOP)
        self.current = path
        self.page.goto(f"{self.origin}/{path}", wait_until="load")
        # MathJax 3 typesets asynchronously; wait for its startup promise when it is present.
        self.page.evaluate(
            "() => (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)"
            " ? window.MathJax.startup.promise.then(() => true) : true"
        )

    def wait_for(self, what: str, expression: str, arg=None) -> None:
        """Wait until the JS ``expression`` (a function of ``arg``) is truthy, or fail with
        ``what`` and everything that went wrong on the page so far."""
        try:
            self.page.wait_for_function(expression, arg=arg)
        except Exception as exc:  # playwright's TimeoutError
            pytest.fail(
                f"{self.page.url}: {what} ({type(exc).__name__}); failed local requests: "
                f"{self.failed}; off-machine requests: {self.off_machine}; "
                f"JavaScript errors: {self.errors}"
            )

    def wait_for_figures(self) -> int:
        """Wait until every plotly figure written by lab.tooling.mime is drawn; their number."""
        n_figs = self.page.locator(".optlab-plotly-div").count()
        if n_figs:
            self.wait_for(
                f"{n_figs} plotly figure(s) not drawn",
                "n => document.querySelectorAll('.optlab-plotly-div .main-svg').length >= n"
                " && document.querySelectorAll('.js-plotly-plot').length >= n",
                n_figs,
            )
        return n_figs

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def offline(browser, server) -> Iterator[OfflinePage]:
    page = OfflinePage(browser, server)
    try:
        yield page
    finally:
        page.close()


@pytest.mark.parametrize("path", PAGES)
def test_page_works_offline(offline: OfflinePage, path: str) -> None:
    assert (HTML / path).is_file(), f"{path} is in _toc.yml but was not built"
    offline.open(path)
    page = offline.page

    offline.wait_for_figures()
    for i in range(page.locator(".js-plotly-plot").count()):
        fig = page.locator(".js-plotly-plot").nth(i)
        assert fig.locator("svg.main-svg").count() > 0, f"{path}: plotly figure {i} not drawn"
    # figures with $...$ in their text: plotly typeset it with MathJax (a failure is silent:
    # the titles just vanish)
    n_tex = page.locator(".optlab-plotly-div[data-optlab-tex]").count()
    if n_tex:
        offline.wait_for(
            "LaTeX in plotly figure text not typeset",
            "n => Array.from(document.querySelectorAll('.optlab-plotly-div[data-optlab-tex]'))"
            ".filter(el => el.querySelector('g[class$=\"-math-group\"]')).length >= n",
            n_tex,
        )

    # every embedded widget view is rendered by the html-manager
    n_views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    if n_views:
        offline.wait_for(
            f"{n_views} widget view(s) not rendered",
            "n => document.querySelectorAll('.widget-subarea > *').length >= n",
            n_views,
        )

    # math typeset by the local MathJax
    n_math = page.locator(".math").count()
    if n_math:
        offline.wait_for(
            "math not typeset by MathJax",
            "() => document.querySelectorAll('mjx-container').length > 0",
        )

    # images: every <img> loaded
    broken = page.evaluate(
        "() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
        ".map(i => i.getAttribute('src'))"
    )
    assert not broken, f"{path}: images that did not load: {broken}"

    # internal links: every same-site link points at a built file (and an existing anchor
    # when it points into this page)
    hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    dead = []
    for href in set(hrefs):
        if not href.startswith(offline.origin + "/"):
            continue
        parts = urlsplit(href)
        target = HTML / parts.path.lstrip("/")
        if parts.path.endswith("/"):
            target = target / "index.html"
        if not target.exists():
            dead.append(href)
        elif parts.fragment and target == HTML / path:
            if not page.evaluate(
                "id => !!document.getElementById(decodeURIComponent(id))", parts.fragment
            ):
                dead.append(href)
    assert not dead, f"{path}: broken internal links: {sorted(dead)}"

    # notebook pages: a download of the .ipynb and the Binder/Colab launch links
    if (ROOT / (path[: -len(".html")] + ".ipynb")).is_file():
        downloads = page.locator(".dropdown-download-buttons a[href$='.ipynb']").count()
        assert downloads >= 1, f"{path}: no .ipynb download button"
        for host in ("mybinder.org", "colab.research.google.com"):
            n = page.locator(f".dropdown-launch-buttons a[href*='{host}']").count()
            assert n >= 1, f"{path}: no launch button for {host}"

    # pages with the widget html-manager: its FontAwesome 4 (the icons of widgets; any ``.fa``
    # element) loads from the vendored folder, not from a folder under the page's own
    if page.evaluate("() => typeof window.requirejs === 'function'"):
        page.evaluate(
            "() => { const i = document.createElement('i'); i.className = 'fa fa-check';"
            " i.id = 'optlab-test-icon'; document.querySelector('.bd-article, body').prepend(i); }"
        )
    page.wait_for_timeout(200)  # let late console errors and the icon's font requests arrive
    page.evaluate("() => document.getElementById('optlab-test-icon')?.remove()")
    assert not offline.off_machine, f"{path}: requests left the machine: {offline.off_machine}"
    assert not offline.failed, f"{path}: local requests failed: {offline.failed}"
    assert not offline.errors, f"{path}: JavaScript errors: {offline.errors}"


@pytest.mark.parametrize("query", ["edge of stability", "Wasserstein", "Kalman"])
def test_search_works_offline(offline: OfflinePage, query: str) -> None:
    """Sphinx's client-side search (searchindex.js) finds pages with no network."""
    offline.open(f"search.html?q={query.replace(' ', '+')}")
    offline.wait_for(
        f"no search results for {query!r}",
        "() => document.querySelectorAll('#search-results li, ul.search li').length > 0",
    )
    assert not offline.off_machine, f"search: requests left the machine: {offline.off_machine}"
    assert not offline.errors, f"search: JavaScript errors: {offline.errors}"


def _first_notebook_per_chapter() -> list[str]:
    out, seen = [], set()
    for page in PAGES:
        parts = page.split("/")
        if len(parts) == 3 and parts[2][:2].isdigit() and parts[1] not in seen:
            seen.add(parts[1])
            out.append(page)
    return out


SHOTS = ROOT / "_build" / "screenshots"


@pytest.mark.parametrize("path", _first_notebook_per_chapter())
def test_figures_are_readable_in_both_themes(offline: OfflinePage, path: str) -> None:
    """Light and dark theme: every figure is an opaque card (readable on either background).

    Screenshots of both themes land in ``_build/screenshots/`` for a person to look at.
    """
    page = offline.page
    offline.open(path)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for theme in ("light", "dark"):
        page.evaluate(
            "t => { document.documentElement.dataset.theme = t;"
            " document.documentElement.dataset.mode = t; }",
            theme,
        )
        page.wait_for_timeout(150)
        bg = page.evaluate(
            "() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
            ".map(el => el._fullLayout && el._fullLayout.paper_bgcolor)"
        )
        clear = [i for i, c in enumerate(bg) if not c or c.replace(" ", "") == "rgba(0,0,0,0)"]
        assert not clear, f"{path} ({theme}): figures {clear} have a transparent background"
        imgs = page.locator(".cell_output img")
        for i in range(imgs.count()):
            # matplotlib PNGs are drawn on white (lab.core.style): check the corner pixel
            opaque = imgs.nth(i).evaluate(
                """img => { const c = document.createElement('canvas');
                c.width = img.naturalWidth; c.height = img.naturalHeight;
                const g = c.getContext('2d'); g.drawImage(img, 0, 0);
                return g.getImageData(1, 1, 1, 1).data[3] > 200; }"""
            )
            assert opaque, f"{path} ({theme}): image {i} has a transparent background"
        slug = path.split("/")[1]
        figure = page.locator(".js-plotly-plot, .cell_output img")
        if figure.count():
            figure.first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{slug}-{theme}.png"), full_page=False)
    assert not offline.errors, f"{path}: JavaScript errors: {offline.errors}"


_SLIDER_STATE = """el => JSON.stringify({
    title: (el.layout.title && el.layout.title.text) || '',
    data: el.data.map(t => [t.x, t.y]),
})"""


def _explore_pages() -> list[str]:
    """Pages built from notebooks that call ``explore(``: each must carry a working twin."""
    out = []
    for page in PAGES:
        src = ROOT / (page[: -len(".html")] + ".ipynb")
        if src.is_file() and "explore(" in src.read_text():
            out.append(page)
    return out


@pytest.mark.parametrize("path", _explore_pages())
def test_every_precomputed_slider_changes_its_figure(offline: OfflinePage, path: str) -> None:
    """Every kernel-free twin on the page: move its slider to the step farthest from the default
    and back; each move must change the figure (data or title). A page whose notebook calls ``explore`` must have one."""
    page = offline.page
    offline.open(path)
    n = page.locator(".optlab-plotly-div").count()
    if n:
        offline.wait_for(
            "plotly figures not drawn",
            "n => document.querySelectorAll('.optlab-plotly-div .main-svg').length >= n",
            n,
        )
    figs = page.locator(".js-plotly-plot:has(.slider-container)")
    twins = [
        figs.nth(i)
        for i in range(figs.count())
        if figs.nth(i).evaluate(
            "el => !!(el._transitionData && el._transitionData._frames"
            " && el._transitionData._frames.length > 1)"
        )
    ]
    assert twins, f"{path}: the notebook calls explore() but the page has no precomputed slider"
    for fig in twins:
        fig.scroll_into_view_if_needed()
        ticks = fig.locator(".slider-container .slider-tick-rect")
        rail = fig.locator(".slider-container .slider-rail-touch-rect").first.bounding_box()
        assert rail is not None, f"{path}: slider not laid out"
        active = fig.evaluate("el => el.layout.sliders[0].active || 0")
        far = 0 if active > (ticks.count() - 1) / 2 else ticks.count() - 1
        for step in (far, active):  # away from the default and back: both must redraw
            before = fig.evaluate(_SLIDER_STATE)
            box = ticks.nth(step).bounding_box()
            assert box is not None, f"{path}: slider tick {step} not laid out"
            page.mouse.click(box["x"] + box["width"] / 2, rail["y"] + rail["height"] / 2)
            offline.wait_for(
                f"moving the slider to step {step} did not change the figure",
                f"([el, before]) => ({_SLIDER_STATE})(el) !== before",
                [fig.element_handle(), before],
            )
    assert not offline.off_machine, f"{path}: requests left the machine: {offline.off_machine}"
    assert not offline.errors, f"{path}: JavaScript errors: {offline.errors}"


# -- the published site: served as GitHub Pages serves it, a 404 page, a phone-width viewport --
def _site_root() -> str:
    """The URL path GitHub Pages serves the book under (``/optlab/``): lab.tooling.site's rule."""
    import yaml

    from lab.tooling.colab import repository
    from lab.tooling.site import site_root_path

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    baseurl = (config.get("html") or {}).get("baseurl") or ""
    return site_root_path(baseurl, repository(ROOT)[0])


SITE_ROOT = _site_root()


class _PagesHandler(_QuietHandler):
    """``_build/html`` under ``SITE_ROOT``; a missing path gets ``404.html`` with status 404 (what
    GitHub Pages does), and anything outside ``SITE_ROOT`` is missing."""

    def translate_path(self, path: str) -> str:
        if path.startswith(SITE_ROOT):
            path = "/" + path[len(SITE_ROOT) :]
        else:
            path = "/.outside-the-site"
        return super().translate_path(path)

    def send_error(self, code, message=None, explain=None):
        page = HTML / "404.html"
        if code != 404 or not page.is_file():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@pytest.fixture(scope="module")
def pages_server() -> Iterator[str]:
    """The site's root URL (``http://127.0.0.1:<port>/optlab``, no trailing slash)."""
    yield from _serve(_PagesHandler, SITE_ROOT.rstrip("/"))


@pytest.mark.parametrize(
    "missing", ["no-such-page.html", "book/no-such-chapter/01-no-such-notebook.html"]
)
def test_missing_page_gets_a_working_404_page(browser, pages_server: str, missing: str) -> None:
    """A mistyped address, at the top or deep in the book, gets the site's 404 page, styled and
    with working links (its ``<base href>`` points at the site root), like any other page."""
    assert (HTML / "404.html").is_file(), "the build wrote no 404.html (lab.tooling.site)"
    site = OfflinePage(browser, pages_server)  # only requests under the site root are allowed
    try:
        page = site.page
        response = page.goto(f"{pages_server}/{missing}", wait_until="load")
        assert response is not None and response.status == 404
        assert "Page not found" in page.locator("article h1").first.inner_text()
        # the theme's stylesheets applied (the article is laid out in the theme's column)
        assert page.evaluate(
            "() => Array.from(document.styleSheets).some(s => s.href && s.href.includes('_static/'))"
            " && getComputedStyle(document.querySelector('.bd-sidebar-primary')).display !== 'none'"
        ), f"{missing}: the 404 page is not styled"
        broken = page.evaluate(
            "() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
            ".map(i => i.getAttribute('src'))"
        )
        assert not broken, f"{missing}: images that did not load: {broken}"
        assert page.locator("img.logo__image").count() >= 1, "no logo in the header"
        hrefs = page.evaluate(
            "() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
        )
        dead = []
        for href in set(hrefs):
            parts = urlsplit(href)
            if not href.startswith(pages_server + "/") or parts.path.endswith("404.html"):
                continue
            rel = parts.path[len(SITE_ROOT) :]
            target = HTML / rel if rel else HTML / "index.html"
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                dead.append(href)
        assert not dead, f"{missing}: the 404 page links to missing pages: {sorted(dead)}"
        assert any(h.rstrip("/").endswith("book/intro.html") for h in hrefs), (
            "the 404 page has no link to the book's first page"
        )
        page.wait_for_timeout(200)
        failed = [f for f in site.failed if not f.startswith(f"{pages_server}/{missing}:")]
        assert not failed, f"{missing}: local requests failed: {failed}"
        assert not site.off_machine, f"{missing}: requests left the site: {site.off_machine}"
        # the browser logs the document's own 404 status as a console error: that one is expected
        errors = [e for e in site.errors if f"({pages_server}/{missing})" not in e]
        assert not errors, f"{missing}: JavaScript errors: {errors}"
    finally:
        site.close()


PHONE = {"width": 390, "height": 844}

# Elements of the text column that stick out past the viewport's right edge, unless a scroll
# container of their own (a wide table, a code block, display math) holds them.
_ESCAPES_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const article = document.querySelector('.bd-article');
  if (!article) { return ['no .bd-article']; }
  const out = [];
  for (const el of article.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= vw + 1) { continue; }
    let held = false;
    for (let p = el.parentElement; p && p !== article.parentElement; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      if (ox === 'auto' || ox === 'scroll' || ox === 'hidden' || ox === 'clip') {
        held = true;
        break;
      }
    }
    if (!held) { out.push(`${el.tagName.toLowerCase()}.${el.className} (right ${Math.round(r.right)} > ${vw})`); }
  }
  return out.slice(0, 8);
}"""

_FIGURE_WIDTHS_JS = """() => Array.from(document.querySelectorAll('.optlab-plotly-div')).map(el => {
  const svg = el.querySelector('.main-svg');
  return [svg ? svg.getBoundingClientRect().width : -1, el.clientWidth];
})"""


def _phone_pages() -> list[str]:
    """The intro, every chapter page (the claims tables are the widest text) and the first
    notebook of each chapter (figures)."""
    chapters = [p for p in PAGES if p.endswith("/index.html")]
    return [PAGES[0], *chapters, *_first_notebook_per_chapter()]


@pytest.mark.parametrize("path", _phone_pages())
def test_phone_width_no_sideways_scrolling_and_figures_fit(offline: OfflinePage, path: str) -> None:
    """At a phone's width (390 px) the page does not scroll sideways, nothing in the text column
    sticks out of the screen, and the plotly figures, drawn at desktop width first, shrink to
    the column when the window narrows."""
    page = offline.page
    offline.open(path)
    n_figs = offline.wait_for_figures()
    wide = page.evaluate(_FIGURE_WIDTHS_JS)
    page.set_viewport_size(PHONE)
    if n_figs:
        offline.wait_for(
            "plotly figures did not resize to the phone-width column",
            f"() => ({_FIGURE_WIDTHS_JS})().every(([svg, box]) => svg > 0 && svg <= box + 1)",
        )
        narrow = page.evaluate(_FIGURE_WIDTHS_JS)
        assert all(n[0] < w[0] for n, w in zip(narrow, wide, strict=True)), (
            f"{path}: figures did not shrink: {wide} -> {narrow}"
        )
    page.wait_for_timeout(300)  # the theme's layout settles (sidebars become drawers)
    sideways = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert sideways <= 1, f"{path}: the page scrolls sideways by {sideways} px at phone width"
    escaping = page.evaluate(_ESCAPES_JS)
    assert not escaping, f"{path}: text-column elements wider than a phone screen: {escaping}"
    assert not offline.errors, f"{path}: JavaScript errors: {offline.errors}"
