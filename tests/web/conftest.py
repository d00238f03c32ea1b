"""What the page tests in Chromium share: pages at a width, where screenshots go, and axe-core
(the browser itself is the root conftest's ``browser``: one per test process).

Chromium is Debian's /usr/bin/chromium driven by Playwright; axe-core is npm's package, pinned in
tests/axe/package-lock.json and installed by ``make test`` (``npm ci``), injected into the page
under test only.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import pytest

from tests.conftest import REPO

#: Screenshots (gitignored).
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture()
def page_at(browser):
    """A function that opens a page of the shared Chromium at a width (900 px high), its script
    errors gathered in ``page.problems``; its contexts closed after the test."""
    contexts = []

    def make(width: int):
        context = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
        return page

    yield make
    for context in contexts:
        context.close()


AXE = REPO / "tests" / "axe" / "node_modules" / "axe-core" / "axe.min.js"

RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ['violations'] });
  return result.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' : ' + n.failureSummary) }));
}"""


class AxeChecker:
    """axe-core's violations on pages opened one after another in one tab of the shared Chromium
    (the ``axe`` fixture: one per test process).

    A tab that stays open keeps its renderer process and its V8 isolate, so axe-core (about 570 kB
    of script) is compiled once rather than at every check, and no context or process is started
    for each: much of what a check of a small page costs (docs/benchmarks.md, "The test
    suite"). Nothing a page leaves reaches the next. Each check opens a new document at its own
    width and colour scheme; after it, what the page kept (cookies, local and session storage) is
    cleared and the tab is left on a blank page. A check that raises closes the tab, and the next
    opens a new one. Only the hashed, content-addressed static files stay in the tab's HTTP cache
    (HTML and JSON carry no cache headers)."""

    def __init__(self, browser, source: str):
        self.browser = browser
        self.source = source
        self.context = None
        self.page = None

    def _tab(self):
        if self.page is None:
            # the site's Content-Security-Policy allows no inline script: axe is injected past it
            self.context = self.browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
            self.page = self.context.new_page()
        return self.page

    def violations(self, url: str, width: int, scheme: str = "light") -> list[dict]:
        """axe-core's violations on the page at ``url``, at ``width`` px (900 high), with the
        system's colour scheme ``scheme`` ("light" or "dark": Chromium's emulation of
        prefers-color-scheme)."""
        page = self._tab()
        try:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            page.goto(url, wait_until="load")
            # the live page's editor is ready, or has failed (a notebook output runs none)
            if page.locator("body[data-page=live]:not([data-mode=notebook])").count():
                page.wait_for_selector("body[data-editor=ready], body[data-editor=failed]", timeout=30_000)
            if page.locator(".static-charts").count():
                page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
            page.add_script_tag(content=self.source)
            found = page.evaluate(RUN)
            page.evaluate(FORGET)
            self.context.clear_cookies()
            # the checked page unloaded: its timers (a page being built asks again every few
            # seconds, the live page's editor) would otherwise run on beside the later tests
            page.goto("about:blank")
            return found
        except BaseException:
            self.close()
            raise

    def on(self, page) -> list[dict]:
        """axe-core's violations on ``page`` as a test has left it (a dialog open, an answer shown),
        in the test's own tab: its context must be made with ``bypass_csp=True``."""
        page.add_script_tag(content=self.source)
        return page.evaluate(RUN)

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
        self.context = self.page = None


#: What a page may have kept in the browser, forgotten after each check (a file:// page's
#: storage may be refused: nothing to forget then).
FORGET = """() => { for (const name of ['localStorage', 'sessionStorage']) {
  try { window[name].clear(); } catch (e) { /* refused */ } } }"""


@contextmanager
def serving(app):
    """The site ``app`` served by uvicorn on a free loopback port, in a thread: its base URL."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
