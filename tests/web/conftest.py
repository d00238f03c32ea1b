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


def violations(browser, url: str, axe_source: str, width: int, scheme: str = "light") -> list[dict]:
    """axe-core's violations on the page at ``url``, at ``width`` px, with the system's colour
    scheme ``scheme`` ("light" or "dark": Playwright's emulation of prefers-color-scheme)."""
    # the site's Content-Security-Policy allows no inline script: axe is injected past it
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        if page.locator("body[data-page=live]:not([data-mode=notebook])").count():  # a notebook output runs no editor
            page.wait_for_selector("body[data-editor=ready], body[data-editor=failed]", timeout=30_000)
        if page.locator(".static-charts").count():
            page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
        page.add_script_tag(content=axe_source)
        return page.evaluate(RUN)
    finally:
        context.close()


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
