"""The page tests' axe-core checker (tests/web/conftest.py, ``AxeChecker``). One tab kept open
from check to check must answer as a fresh one would: each check gets its own width and colour
scheme, what a page kept in storage is gone by the next check, and a check that fails leaves no
broken tab behind. A test's own page is checked as the test left it. The pages here are written
by the test, with violations put in on purpose."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.web.conftest import FORGET, serving

pytestmark = pytest.mark.browser

#: Text whose contrast fails in the dark scheme only, and an image without a text alternative
#: shown at narrow widths only.
SCHEME_AND_WIDTH = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Scheme and width</title>
<style>
  body { background: #fff; color: #000; }
  @media (prefers-color-scheme: dark) { body { background: #000; } p { color: #111; } }
  .narrow { display: none; }
  @media (max-width: 500px) { .narrow { display: block; } }
</style></head>
<body><main><h1>Scheme and width</h1><p>Readable in the light scheme only.</p>
<div class="narrow"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="40" height="40"></div>
</main></body></html>"""

#: A page that shows an image without a text alternative when storage holds its mark from an
#: earlier visit, and leaves that mark.
REMEMBERS = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Remembers</title></head>
<body><main><h1>Remembers</h1><div id="slot"></div></main>
<script>
  if (localStorage.getItem("seen") || sessionStorage.getItem("seen")) {
    document.getElementById("slot").innerHTML = '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="40" height="40">';
  }
  localStorage.setItem("seen", "1"); sessionStorage.setItem("seen", "1");
</script></body></html>"""


def _ids(found: list[dict]) -> set[str]:
    return {violation["id"] for violation in found}


def test_each_check_takes_its_own_scheme_and_width_in_one_tab(axe, tmp_path):
    page = tmp_path / "scheme-and-width.html"
    page.write_text(SCHEME_AND_WIDTH, encoding="utf-8")
    url = page.as_uri()
    assert axe.violations(url, 1280, "light") == []
    assert _ids(axe.violations(url, 1280, "dark")) == {"color-contrast"}
    assert _ids(axe.violations(url, 390, "light")) == {"image-alt"}
    assert _ids(axe.violations(url, 390, "dark")) == {"color-contrast", "image-alt"}
    assert axe.violations(url, 1280, "light") == []
    assert axe.page.url == "about:blank"  # the checked page unloaded: none of its scripts run on


def test_what_a_page_kept_is_forgotten_before_the_next_check(axe):
    """Checked twice, the page finds no mark either time; visited twice in the same tab without
    the checker (the control), it finds its mark the second time and shows the violation."""
    app = Starlette(routes=[Route("/remembers.html", lambda request: HTMLResponse(REMEMBERS))])
    with serving(app) as base:
        url = base + "/remembers.html"
        assert axe.violations(url, 1280) == []
        assert axe.violations(url, 1280) == []  # the mark was forgotten
        page = axe.page
        page.goto(url, wait_until="load")
        assert page.locator("#slot img").count() == 0
        page.goto(url, wait_until="load")  # the mark of the visit before, not forgotten
        assert page.locator("#slot img").count() == 1
        page.evaluate(FORGET)


def test_a_check_that_fails_leaves_a_tab_that_works(axe, tmp_path):
    page = tmp_path / "scheme-and-width.html"
    page.write_text(SCHEME_AND_WIDTH, encoding="utf-8")
    with pytest.raises(Exception, match="ERR_FILE_NOT_FOUND"):
        axe.violations((tmp_path / "missing.html").as_uri(), 1280)
    assert axe.page is None
    assert _ids(axe.violations(page.as_uri(), 390)) == {"image-alt"}


def test_a_tests_own_page_is_checked_as_the_test_left_it(browser, axe, tmp_path):
    """``axe.on(page)``: in the test's tab, at its width, after what the test did to the page."""
    page_file = tmp_path / "scheme-and-width.html"
    page_file.write_text(SCHEME_AND_WIDTH, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(page_file.as_uri(), wait_until="load")
        assert axe.on(page) == []
        page.evaluate("document.querySelector('.narrow').style.display = 'block'")  # what a test did
        assert _ids(axe.on(page)) == {"image-alt"}
    finally:
        context.close()
