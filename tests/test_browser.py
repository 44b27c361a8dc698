"""Smoke test of the built HTML book in headless Chromium, with the network cut off.

Serves ``_build/html`` on a loopback port and opens every page of ``_toc.yml``. Any request
that is not to that server is aborted and fails the test: the book must work offline (plotly.js,
MathJax, require.js and the ipywidgets html-manager are vendored by ``lab.core.book``). On every
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
import yaml

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
]
TIMEOUT_MS = 30_000  # generous: CI is idle, but a loaded dev machine is not

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (HTML / "index.html").is_file(),
        reason="no built book at _build/html/index.html (run `make book` first)",
    ),
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason="no /usr/bin/chromium (apt-get update && apt-get install -y chromium)",
    ),
]


def _toc_pages() -> list[str]:
    """The toc's documents, in order, as paths relative to _build/html."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key) or [])
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [f + ".html" for f in files]


PAGES = _toc_pages()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """``_build/html`` over http on 127.0.0.1 and a free port."""
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


class OfflinePage:
    """A page whose requests may only go to the local server; records what went wrong."""

    def __init__(self, browser, server: str):
        self.origin = server
        self.context = browser.new_context(viewport={"width": 1200, "height": 1600})
        self.off_machine: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.origin + "/") or urlsplit(url).scheme in ("data", "blob"):
            route.continue_()
        else:
            self.off_machine.append(url)
            route.abort()

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

    def close(self) -> None:
        self.context.close()


@pytest.fixture
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

    # every plotly figure written by lab.core.book is drawn
    n_figs = page.locator(".optlab-plotly-div").count()
    if n_figs:
        offline.wait_for(
            f"{n_figs} plotly figure(s) not drawn",
            "n => document.querySelectorAll('.optlab-plotly-div .main-svg').length >= n"
            " && document.querySelectorAll('.js-plotly-plot').length >= n",
            n_figs,
        )
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

    page.wait_for_timeout(200)  # let late console errors arrive
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
