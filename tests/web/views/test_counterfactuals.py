"""The section "What would change this verdict" (web.views.counterfactuals): a dev claim's page and
its JSON twin from the build's record (equal to what the command prints), Explore (dev)'s shares
with their intervals, a typed claim's section computed on a second request (202, then 200), and,
in Chromium, axe clean served and exported with every bar measured against its value."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from claimtrace.explain.counterfactuals.report import counterfactuals
from claimtrace.web.app import create_app
from claimtrace.web.pages import CLAIM, EXPLORE
from claimtrace.web.render import Renderer
from claimtrace.web.site_data import SiteData
from tests.conftest import COUNTERFACTUAL_WORDS
from tests.web.conftest import ARTIFACTS, serving
from tests.web.test_charts import MEASURE, check_bars

TYPED = "Greenland is gaining ice"


@pytest.fixture(scope="module")
def site_data(demo_counterfactuals) -> SiteData:
    return SiteData(demo_counterfactuals)


@pytest.fixture(scope="module")
def client(site_data):
    with TestClient(create_app(site_data=site_data)) as answering:
        yield answering


def _claim_ids(site_data, split: str = "dev") -> list[str]:
    return list(site_data.build.counterfactuals(split))


def test_a_claim_page_and_its_twin_show_the_builds_record(site_data, client):
    for split in ("dev", "test"):
        claim_id = _claim_ids(site_data, split)[0]
        twin = client.get(f"/claim/{claim_id}.json").json()["counterfactuals"]
        assert twin["status"] == "ok"
        assert twin["result"] == counterfactuals(site_data.build, claim_id=claim_id, max_words=COUNTERFACTUAL_WORDS)
        html = client.get(f"/claim/{claim_id}.html").text
        assert "What would change this verdict" in html and 'href="#counterfactuals"' in html
        assert "every set of up to 2" in html.lower() or "Every set of up to 2" in html


def test_without_the_command_the_section_names_it(demo_build):
    site_data = SiteData(demo_build)
    section = site_data.trace("claim-752")["counterfactuals"]
    assert section["status"] == "missing" and "claimtrace counterfactual --all" in section["reason"]
    assert "claimtrace counterfactual --all" in CLAIM.render(
        Renderer(site_data), site_data.trace("claim-752"), "claim-752"
    )
    train = next(iter(demo_build.claims("train")))
    assert site_data.trace(train)["counterfactuals"]["status"] == "none"


def test_explore_dev_shows_the_four_shares_with_intervals(site_data, client):
    box = client.get("/explore/dev.json").json()["counterfactuals"]
    assert box["status"] == "ok" and len(box["shares"]) == 4
    html = EXPLORE.render(Renderer(site_data), EXPLORE.data(site_data, "dev"), "dev")
    assert "How fragile the verdicts are" in html
    for share in box["shares"].values():
        assert share["name"] in html and "Wilson" in share["method"]
    assert client.get("/explore/test.json").json()["counterfactuals"] is None


def _typed(client, path: str):
    deadline = time.monotonic() + 300
    while True:
        answer = client.get(path, params={"text": TYPED})
        if answer.status_code != 202 or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def test_a_typed_claim_is_computed_on_a_second_request(site_data, client):
    live = client.get("/live.json", params={"text": TYPED}).json()["counterfactuals"]
    assert live["status"] == "deferred" and live["link"].startswith("counterfactuals.html?text=")
    first = client.get("/counterfactuals.html", params={"text": TYPED + "!"})
    assert first.status_code in (200, 202) and "What would change" in first.text
    answer = _typed(client, "/counterfactuals.json")
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["kind"] == "text" and result["batch"] is None and result["words"]["max_words"] == 3
    for edit in result["words"]["edits"]:
        assert edit["verified_verdict"] == edit["verdict_after"] != result["verdict"]
    assert client.get("/counterfactuals.json").status_code == 400


@pytest.fixture(scope="module")
def served(site_data):
    with serving(create_app(site_data=site_data)) as base:
        yield base


#: The bars of the section's and Explore's charts, measured as tests/web/test_charts.py measures any.
MEASURE_HERE = MEASURE.replace(
    "document.querySelectorAll('.bar')", "document.querySelectorAll('#counterfactuals .bar')"
)


@pytest.fixture(scope="module")
def exported(site_data, tmp_path_factory):
    """The static export of one dev claim's page (its scripts and style beside it)."""
    from claimtrace.web.site import _Export, _write_claims

    out = tmp_path_factory.mktemp("site")
    export = _Export(out, site_data, Renderer(site_data, mode="static"), set())
    export.copy_static()
    export.put_table_script()
    claim_id = _claim_ids(site_data)[0]
    _write_claims(export, "dev", [claim_id], json_twins=False, progress=False, shared=True)
    export.put_editors()
    return out / "claim" / f"{claim_id}.html"


@pytest.mark.browser
def test_the_pages_are_axe_clean(axe, served, site_data, exported):
    claim_id = _claim_ids(site_data)[0]
    _typed_ready(site_data)
    assert "What would change this verdict" in exported.read_text(encoding="utf-8")
    checked = [
        (f"{served}/claim/{claim_id}.html", 1280, "light"),
        (f"{served}/claim/{claim_id}.html", 390, "dark"),
        (f"{served}/explore/dev.html", 1280, "dark"),
        (f"{served}/counterfactuals.html?text={TYPED.replace(' ', '+')}", 1280, "light"),
        (f"{served}/counterfactuals.html?text={TYPED.replace(' ', '+')}", 390, "dark"),
        (exported.as_uri(), 1280, "light"),
    ]
    for url, width, scheme in checked:
        assert axe.violations(url, width, scheme) == [], (url, width, scheme)


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_every_bar_measures_its_value(browser, served, site_data, width):
    claim_id = _claim_ids(site_data)[0]
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        for name, url in (("claim", f"{served}/claim/{claim_id}.html"), ("explore", f"{served}/explore/dev.html")):
            page.goto(url, wait_until="load")
            section = page.locator("#counterfactuals")
            section.scroll_into_view_if_needed()
            assert check_bars(page.evaluate(MEASURE_HERE), f"{name} at {width}") >= 4
            ARTIFACTS.mkdir(exist_ok=True)
            section.screenshot(path=str(ARTIFACTS / f"counterfactuals-{name}-{width}.png"))
    finally:
        context.close()


def _typed_ready(site_data) -> None:
    deadline = time.monotonic() + 300
    while site_data.text_counterfactuals(TYPED) is None and time.monotonic() < deadline:
        time.sleep(0.5)
