"""axe-core in Chromium on every page type, served and exported, in the light and the dark theme
(the system's colour scheme emulated): no violation of any impact.

axe-core is npm's package, pinned in tests/axe/package-lock.json and installed by ``make test``
(``npm ci``); the site never serves it. It is injected into the page under test only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

#: One page of each type, checked at both widths in both themes.
SERVED = [
    "/",
    "/claim/claim-871.html",
    "/explore/dev.html",
    "/live.html",
    "/parity.html",
    "/tour.html",
    "/results.html",
    "/attribution.html",  # not computed on the demo build: the page says how (tests/web/views/ has it computed)
    "/methods.html",
    "/methods/exact-tfidf-tags.html",  # a decision; the statements are the same template (SERVED_AGAIN)
    "/seeds.html",  # the shipped seed-spread file's state (tests/web/test_seeds_page.py draws five seeds)
    "/nowhere.html",
]
#: More pages of a type above, with what differs (another claim's verdicts, a split without
#: gold labels, the largest split, a claim typed in the address): at 1280 px in both themes.
SERVED_AGAIN = [
    "/claim/claim-2574.html",
    "/explore/test.html",
    "/explore/train.html",
    "/live.html?text=Greenland+is+gaining+ice",
    "/methods/language-models.html",
]
EXPORTED = [
    "index.html",
    "claim/claim-871.html",
    "explore/dev.html",
    "explore/test.html",
    "live.html",
    "parity.html",
    "tour.html",
    "results.html",
    "attribution.html",
    "methods.html",
    "methods/exact-tfidf-tags.html",
    "seeds.html",
    "404.html",
]


SCHEMES = ["light", "dark"]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", SERVED)
def test_axe_finds_nothing_on_served_pages(axe, web_server, path, width, scheme):
    found = axe.violations(web_server + path, width, scheme)
    assert found == [], found


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("path", SERVED_AGAIN)
def test_axe_finds_nothing_on_more_served_pages(axe, web_server, path, scheme):
    found = axe.violations(web_server + path, 1280, scheme)
    assert found == [], found


@pytest.fixture(scope="module")
def exported(demo_site_data, tmp_path_factory) -> Path:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev", "test"), only=("claim-871",))
    return out


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("path", EXPORTED)
def test_axe_finds_nothing_on_exported_pages(axe, exported, path, scheme):
    found = axe.violations((exported / path).as_uri(), 1280, scheme)
    assert found == [], found
