"""axe-core in Chromium on every page type, served and exported: no violation of any impact.

axe-core is npm's package, pinned in tests/axe/package-lock.json and installed by ``make test``
(``npm ci``); the site never serves it. It is injected into the page under test only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_web_browser import browser  # noqa: F401  (a fixture)

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"

RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ['violations'] });
  return result.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' : ' + n.failureSummary) }));
}"""

SERVED = [
    "/",
    "/claim/claim-871.html",
    "/claim/claim-2574.html",
    "/explore/dev.html",
    "/explore/test.html",
    "/explore/train.html",
    "/live.html",
    "/live.html?text=Greenland+is+gaining+ice",
    "/nowhere.html",
]
EXPORTED = ["index.html", "claim/claim-871.html", "explore/dev.html", "explore/test.html", "live.html", "404.html"]


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: make test installs it (cd tests/axe && npm ci)")
    return AXE.read_text(encoding="utf-8")


def violations(browser, url: str, axe_source: str, width: int) -> list[dict]:  # noqa: F811
    # the site's Content-Security-Policy allows no inline script: axe is injected past it
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        if page.locator("body[data-page=live]").count():
            page.wait_for_selector("body[data-editor=ready], body[data-editor=failed]", timeout=30_000)
        if page.locator(".static-charts").count():
            page.wait_for_selector("body[data-charts=ready]", timeout=30_000)
        page.add_script_tag(content=axe_source)
        return page.evaluate(RUN)
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", SERVED)
def test_axe_finds_nothing_on_served_pages(browser, web_server, axe_source, path, width):  # noqa: F811
    found = violations(browser, web_server + path, axe_source, width)
    assert found == [], found


@pytest.fixture(scope="module")
def exported(web_tracer, tmp_path_factory) -> Path:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, tracer=web_tracer, splits=("dev", "test"), only=("claim-871",))
    return out


@pytest.mark.parametrize("path", EXPORTED)
def test_axe_finds_nothing_on_exported_pages(browser, exported, axe_source, path):  # noqa: F811
    found = violations(browser, (exported / path).as_uri(), axe_source, 1280)
    assert found == [], found
