"""Explore dev's error analysis by gold label and its found/missed filter in Chromium, served and
exported, at 1280 and 390 px: every whisker of the by-label chart against its bounds, the table's
figures the page's data, and the claim list filtered on a gold passage found or missed."""

from __future__ import annotations

import pytest

from tests.web.conftest import ARTIFACTS
from tests.web.test_charts import check_whiskers

pytestmark = pytest.mark.browser

WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def dev_pages(web_server, demo_site_data, tmp_path_factory) -> dict[str, str]:
    from claimtrace.web.site import write_site

    out = tmp_path_factory.mktemp("site")
    write_site(None, out, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    return {"served": f"{web_server}/explore/dev.html", "exported": (out / "explore" / "dev.html").as_uri()}


@pytest.mark.parametrize("width", WIDTHS)
def test_by_label_whiskers_to_scale_and_the_found_filter(page_at, dev_pages, demo_site_data, width):
    dev = demo_site_data.explore("dev")
    analysis = dev["by_label"]
    drawn = sum(1 for row in analysis["chart"] for name in analysis["panels"] if row.get(name))
    found = sum(row["found"] for row in dev["claims"])
    total = len(dev["claims"])
    page = page_at(width)
    for kind, url in dev_pages.items():
        where = f"{kind} Explore dev at {width} px"
        page.goto(url, wait_until="load")
        section = page.locator("#by-label")
        assert f"A gold passage was retrieved for {found} of {total} claims" in section.inner_text(), where
        assert check_whiskers(page, "#by-label", where) == drawn, where
        rows = page.locator("#by-label-table tbody tr")
        assert rows.count() == len(analysis["labels"]), where
        for entry, row in zip(analysis["labels"], rows.all(), strict=True):
            assert row.get_attribute("data-label") == entry["label"], where
            assert f"{entry['found']['successes']}/{entry['claims']}" in row.inner_text(), where
        ARTIFACTS.mkdir(exist_ok=True)
        section.screenshot(path=str(ARTIFACTS / f"explore-by-label-{kind}-{width}.png"))
        page.select_option("#f-found", "no")
        assert page.locator("#f-count").inner_text().startswith(f"{total - found} of {total}"), where
        assert all(r.get_attribute("data-found") == "no" for r in page.locator("#claims-table tbody tr").all())
        assert "found=no" in page.url, where
        page.select_option("#f-found", "yes")
        assert page.locator("#f-count").inner_text().startswith(f"{found} of {total}"), where
        assert all(r.get_attribute("data-found") == "yes" for r in page.locator("#claims-table tbody tr").all())
    assert not page.problems, page.problems
